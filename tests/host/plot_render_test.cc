// Renders one chart of each kind, made through kp.plot, in a real browser: headless Chromium (the Debian
// package chromium, which scripts/test.sh installs). For every chart the SVG file must parse (the
// dumped DOM has no <parsererror> and keeps the title text, escaped characters and non-ASCII included)
// and paint something: its screenshot is a PNG of the chart's size, much larger than the screenshot of a
// blank page of the same size, and different from every other chart's. Without chromium on the PATH the
// test fails and says how to install it.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <lua.hpp>

#include "bindings.h"
#include "chromium.h"
#include "sandbox.h"

namespace kplab::host {
namespace {

namespace fs = std::filesystem;

// The title of every chart (kScript's `title`) has markup characters, an en dash and a Greek letter, so
// the browser has to read escaped text and UTF-8. How that title appears in Chromium's serialization of the DOM.
constexpr const char* kTitleInDom = "SemR-p &amp; &lt;F1&gt; \xE2\x80\x93 \xCF\x81";

// One chart per kind, as analysis scripts make them; returns {name = svg, ...}.
constexpr const char* kScript = R"lua(
local title = "SemR-p & <F1> \u{2013} \u{3C1}"
local a, b, c = {}, {}, {}
for i = 1, 2000 do
  local x = (i * 7919 % 1000) / 1000
  a[#a + 1] = x * x
  b[#b + 1] = x
  c[#c + 1] = math.sqrt(x)
end
a[#a + 1] = 1.6  -- an outlier
local groups = {{label = "k=1", values = a}, {label = "k=2", values = b}, {label = "k=3", values = c}}
return {
  boxplot = kp.plot.boxplot{title = title, xlabel = "k", ylabel = "SemR-p", groups = groups, mark_median = true},
  histogram = kp.plot.histogram{title = title, xlabel = "SemR-p", groups = groups, bins = 20, range = {0, 1},
                                mark_median = true},
  heatmap = kp.plot.heatmap{title = title, rows = {"F1@5", "F1@M", "SemR-p"},
                            cols = {"present.f1@5.macro", "absent.r@10.macro", "all.ndcg@5"},
                            values = {{1, 0.81, -0.12}, {0.81, 1, 0/0}, {-0.12, 0.3, 1}}, legend = "Spearman ρ"},
  bars = kp.plot.bars{title = title, ylabel = "F1@5", categories = {"Inspec", "KP20k", "SemEval"},
                      series = {{label = "catSeq", values = {0.262, 0.291, 0.228}},
                                {label = "ExHiRD", values = {0.253, 0.311, -0.05}}}, annotate = true},
  lines = kp.plot.lines{title = title, xlabel = "confidence", ylabel = "accuracy", diagonal = true,
                        xrange = {0, 1}, yrange = {0, 1},
                        series = {{label = "share", x = {0.1, 0.3, 0.5, 0.7, 0.9}, y = {0.05, 0.1, 0.2, 0.3, 0.35},
                                   bars = true},
                                  {label = "model", x = {0.1, 0.3, 0.5, 0.7, 0.9}, y = {0.2, 0.35, 0.45, 0.6, 0.8}}}},
}
)lua";

std::string SlurpRendered(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Chart {
  std::string name;
  std::string svg;
  int width = 0, height = 0;
  fs::path file, dom, png, log;
  int dom_status = -1, png_status = -1;
};

int SvgSize(const std::string& svg, const char* attr) {
  std::smatch m;
  if (!std::regex_search(svg, m, std::regex(std::string("<svg [^>]*?\\b") + attr + "=\"([0-9]+)\""))) return 0;
  return std::stoi(m[1]);
}

// Width and height from a PNG's IHDR chunk, or {0, 0}.
std::pair<int, int> PngSize(const std::string& png) {
  if (png.size() < 24 || png.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0 || png.compare(12, 4, "IHDR") != 0) return {0, 0};
  auto be = [&](std::size_t at) {
    return (static_cast<unsigned char>(png[at]) << 24) | (static_cast<unsigned char>(png[at + 1]) << 16) |
           (static_cast<unsigned char>(png[at + 2]) << 8) | static_cast<unsigned char>(png[at + 3]);
  };
  return {be(16), be(20)};
}

class PlotRender : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = kplab::test::FindChromium();
    if (chromium_.empty()) GTEST_FAIL() << kplab::test::kChromiumMissing;
    std::string tmpl = (fs::temp_directory_path() / "kplab-plot-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (dir_.empty()) return;
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // The charts of kScript, written to files.
  std::vector<Chart> MakeCharts() {
    LuaVm vm;
    for (const auto& m : AllModules()) vm.Install(m);
    vm.PushSandboxEnv("render.lua");
    const auto err = vm.RunChunk(kScript, "render.lua", 1);
    EXPECT_FALSE(err) << err->message;
    std::vector<Chart> charts;
    if (err) return charts;
    lua_State* L = vm.state();
    for (const char* name : {"boxplot", "histogram", "heatmap", "bars", "lines"}) {
      lua_getfield(L, -1, name);
      Chart c;
      c.name = name;
      std::size_t n = 0;
      const char* s = lua_tolstring(L, -1, &n);
      c.svg.assign(s ? s : "", s ? n : 0);
      lua_pop(L, 1);
      charts.push_back(std::move(c));
    }
    lua_pop(L, 1);
    // A blank page of the same size as the first chart: the reference for "paints something".
    Chart blank;
    blank.name = "blank";
    blank.svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"640\" height=\"400\" viewBox=\"0 0 640 400\">"
                "<rect width=\"640\" height=\"400\" fill=\"#ffffff\"/></svg>\n";
    charts.push_back(std::move(blank));
    for (Chart& c : charts) {
      c.width = SvgSize(c.svg, "width");
      c.height = SvgSize(c.svg, "height");
      c.file = dir_ / (c.name + ".svg");
      c.dom = dir_ / (c.name + ".dom");
      c.png = dir_ / (c.name + ".png");
      c.log = dir_ / (c.name + ".log");
      std::ofstream(c.file, std::ios::binary) << c.svg;
    }
    return charts;
  }

  // Two invocations per file (--dump-dom and --screenshot in one run race: the screenshot can be taken
  // before the page is painted); two files at a time, each worker with its own browser profile.
  void Render(std::vector<Chart>& charts) {
    auto run = [&](int worker, Chart& c, const std::string& what, const fs::path& out, int* status) {
      const std::string cmd = "timeout 60 " + chromium_ +
                              " --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run"
                              " --user-data-dir=" + (dir_ / ("profile-" + std::to_string(worker))).string() + " " + what +
                              " file://" + c.file.string() + (out.empty() ? "" : " >" + out.string()) + " 2>>" +
                              c.log.string();
      const int st = std::system(cmd.c_str());
      *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    };
    std::atomic<std::size_t> next{0};
    auto worker = [&](int w) {
      for (std::size_t i; (i = next++) < charts.size();) {
        Chart& c = charts[i];
        if (c.name != "blank") run(w, c, "--dump-dom", c.dom, &c.dom_status);
        run(w, c, "--window-size=" + std::to_string(c.width) + "," + std::to_string(c.height) +
                      " --screenshot=" + c.png.string(),
            "", &c.png_status);
      }
    };
    std::thread t1(worker, 1), t2(worker, 2);
    t1.join();
    t2.join();
  }

  std::string chromium_;
  fs::path dir_;
};

TEST_F(PlotRender, EveryChartParsesAndPaintsInChromium) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<Chart> charts = MakeCharts();
  ASSERT_EQ(charts.size(), 6u);
  Render(charts);
  const Chart& blank = charts.back();
  const std::string blank_png = SlurpRendered(blank.png);
  ASSERT_EQ(blank.png_status, 0) << SlurpRendered(blank.log);
  ASSERT_EQ(PngSize(blank_png), std::make_pair(640, 400)) << blank.png;

  std::map<std::string, std::string> pngs;
  for (std::size_t i = 0; i + 1 < charts.size(); ++i) {
    const Chart& c = charts[i];
    SCOPED_TRACE(c.name);
    ASSERT_GT(c.width, 0);
    ASSERT_GT(c.height, 0);
    EXPECT_EQ(c.dom_status, 0) << SlurpRendered(c.log);
    const std::string dom = SlurpRendered(c.dom);
    EXPECT_EQ(dom.find("parsererror"), std::string::npos) << dom.substr(0, 2000);
    EXPECT_EQ(dom.rfind("<svg", 0), 0u) << dom.substr(0, 200);  // the document element is the chart
    EXPECT_NE(dom.find(std::string(">") + kTitleInDom + "</text>"), std::string::npos) << dom.substr(0, 2000);
    EXPECT_NE(dom.find("</svg>"), std::string::npos);
    if (c.name == "heatmap") {
      EXPECT_NE(dom.find("class=\"cell nan\""), std::string::npos);
      EXPECT_NE(dom.find("Spearman \xCF\x81"), std::string::npos);
    } else {
      EXPECT_NE(dom.find("class=\"plot\""), std::string::npos);
    }

    EXPECT_EQ(c.png_status, 0) << SlurpRendered(c.log);
    const std::string png = SlurpRendered(c.png);
    EXPECT_EQ(PngSize(png), std::make_pair(c.width, c.height)) << c.png;
    // A blank 640x400 screenshot compresses to a few hundred bytes; a chart's text and lines to many KB.
    EXPECT_GT(png.size(), 4 * blank_png.size()) << "blank: " << blank_png.size() << " bytes";
    for (const auto& [other, other_png] : pngs) EXPECT_NE(png, other_png) << "same screenshot as " << other;
    pngs[c.name] = png;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[ rendered ] " << charts.size() << " SVG files in Chromium in " << secs << " s\n";
  RecordProperty("render_seconds", std::to_string(secs));
}

}  // namespace
}  // namespace kplab::host
