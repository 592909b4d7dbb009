#include "evaluate.h"
#include "plan.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include <sys/resource.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bindings.h"
#include "bootstrap.h"
#include "kplab/embedding_plan.h"
#include "kplab/file_gate.h"
#include "kplab/json.h"
#include "kplab/profile.h"
#include "kplab/safe_text.h"
#include "kplab/sha256.h"
#include "kplab/suggest.h"
#include "kplab/text.h"
#include "lanes.h"

namespace kplab::host {

namespace {

std::string NowIso() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// KPLAB_TIMING=1 prints the wall time of each phase of an evaluation on stderr, and the process's CPU
// time in it (user + system, all threads): on a busy machine the wall time says little. Beside them the
// resident set size at the phase's end and the peak so far (the kernel's high-water mark): a phase whose
// peak is above both neighbours' resident sizes held that memory only while it ran.
class PhaseTimer {
 public:
  PhaseTimer()
      : on_(std::getenv("KPLAB_TIMING") != nullptr), start_(std::chrono::steady_clock::now()), cpu_(Now().cpu_ms) {}
  void Done(const std::string& phase) {
    if (!on_) return;
    const auto now = std::chrono::steady_clock::now();
    const Usage u = Now();
    const double cpu = u.cpu_ms, rss = RssMb();
    std::fprintf(stderr, "[timing] %-12s %8.1f ms  cpu %8.1f ms  rss %7.1f MB  peak %7.1f MB\n",
                 TerminalText(phase).c_str(), std::chrono::duration<double, std::milli>(now - start_).count(),
                 cpu - cpu_, rss, std::max(rss, u.peak_mb));
    start_ = now;
    cpu_ = cpu;
  }
  // A line about the phase just done ("[timing]   TEXT"), escaped: it may name a plugin.
  void Note(const std::string& text) const {
    if (on_) std::fprintf(stderr, "[timing]   %s\n", TerminalText(text).c_str());
  }

 private:
  // Resident set size now (not the peak): where between the phases the memory is held.
  static double RssMb() {
    long pages = 0, resident = 0;
    // file-gate: kplab's own process statistics, a fixed /proc path no one else names
    if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
      std::fclose(f);
    }
    return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
  }
  // The process's CPU time (user + system, all threads) and its peak resident size, from one getrusage.
  // The peak is in KiB on Linux. The kernel updates it when the resident set shrinks or the process
  // exits, so a set that has only grown since is above it: Done prints the larger of the two, as VmHWM
  // does.
  struct Usage {
    double cpu_ms, peak_mb;
  };
  static Usage Now() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return {
        (static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 + u.ru_utime.tv_usec + u.ru_stime.tv_usec) /
            1e3,
        static_cast<double>(u.ru_maxrss) / 1024.0};
  }
  bool on_;
  std::chrono::steady_clock::time_point start_;
  double cpu_;
};

std::string ParamsJson(const std::vector<MetricPlugin>& plugins) {
  std::string out = "{";
  bool first_plugin = true;
  for (const auto& p : plugins) {
    out += (first_plugin ? "" : ", ") + JsonString(p.name) + ": {";
    first_plugin = false;
    bool first = true;
    for (const auto& [k, v] : p.params) {
      out += (first ? "" : ", ") + JsonString(k) + ": ";
      first = false;
      std::visit(
          [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, double>) {
              out += JsonNumber(x);
            } else if constexpr (std::is_same_v<T, bool>) {
              out += x ? "true" : "false";
            } else {
              out += JsonString(x);
            }
          },
          v);
    }
    out += "}";
  }
  return out + "}";
}

}  // namespace

namespace {

// "seed1234", "run_seed42", "x-seed7" -> the number.
std::optional<std::int64_t> SeedIn(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto pos = lower.rfind("seed");
  if (pos == std::string::npos) return std::nullopt;
  if (pos > 0 && lower[pos - 1] != '_' && lower[pos - 1] != '-' && lower[pos - 1] != '.') return std::nullopt;
  std::string_view digits = std::string_view(lower).substr(pos + 4);
  if (!digits.empty() && (digits[0] == '_' || digits[0] == '-' || digits[0] == '=')) digits.remove_prefix(1);
  if (digits.empty() || digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return std::stoll(std::string(digits));
}

bool GenericName(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const char* kGeneric[] = {"predictions", "prediction", "preds", "pred", "output", "outputs", "out",
                                   "results", "result", "test", "tests", "generated", "hyp", "hyps", "runs"};
  for (const char* g : kGeneric) {
    if (lower == g || (lower.starts_with(g) && lower.size() > std::strlen(g) &&
                       (lower[std::strlen(g)] == '_' || lower[std::strlen(g)] == '-' || lower[std::strlen(g)] == '.'))) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::string RunDatasetHash(const std::string& content_hash, const DatasetOptions& options) {
  if (options.split.empty() && options.references.empty()) return content_hash;
  return Sha256Hex(content_hash + "\x1fsplit=" + options.split + "\x1freferences=" + AbsolutePath(options.references));
}

std::string AbsolutePath(const std::string& path) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) return path;
  const auto abs = std::filesystem::absolute(path, ec);
  return ec ? path : abs.lexically_normal().string();
}

SystemSeed SystemAndSeedFromPath(const std::string& path, const std::string& dataset_name) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  SystemSeed out;
  const std::string stem = p.stem().string();
  std::vector<std::string> dirs;  // nearest first
  for (fs::path d = p.parent_path(); !d.empty() && d.has_filename(); d = d.parent_path()) {
    dirs.push_back(d.filename().string());
    if (d == d.parent_path()) break;
  }
  out.seed = SeedIn(stem);
  for (std::size_t i = 0; !out.seed && i < dirs.size() && i < 3; ++i) out.seed = SeedIn(dirs[i]);
  // The dataset's own name ("semeval", or the last part of "inspec_hulth2003/Test") is not a system.
  std::string ds = dataset_name.substr(dataset_name.rfind('/') == std::string::npos ? 0 : dataset_name.rfind('/') + 1);
  auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  auto usable = [&](const std::string& name) {
    return !name.empty() && name != "." && name != ".." && !SeedIn(name) && !GenericName(name) &&
           lower(name) != lower(ds) && lower(name) != lower(dataset_name);
  };
  if (usable(stem)) {
    // A seed written into the stem ("catSeq_seed1234") leaves the rest as the system.
    out.system = stem;
    return out;
  }
  if (out.seed) {
    // "catSeq_seed1234": the stem minus its seed part.
    const std::string l = lower(stem);
    const auto pos = l.rfind("seed");
    if (pos != std::string::npos && pos > 1) {
      std::string head = stem.substr(0, pos - 1);
      if (usable(head)) {
        out.system = head;
        return out;
      }
    }
  }
  for (const std::string& d : dirs) {
    if (usable(d)) {
      out.system = d;
      return out;
    }
  }
  out.system = stem.empty() ? "system" : stem;
  return out;
}

void InstallAll(LuaVm& vm) {
  for (const auto& m : AllModules()) vm.Install(m);
}

Result<std::vector<MetricPlugin>> LoadMetrics(
    LuaVm& vm, const std::vector<std::string>& names, const std::vector<std::string>& user_dirs,
    const std::map<std::string, std::map<std::string, std::string>>& params) {
  // Listed, not read: only the selected plugins' files are opened.
  // A plugin that cannot be listed, read or loaded is a script failure (exit 3), as a bad one is: the two
  // relabels below are on purpose (tests/layout/error_relabels.py). The directory lister and the file
  // reader call a missing directory or file input (or usage, when the gate refuses it), but what failed
  // is the plugin, named by --metrics. LoadMetricPlugin's errors are script errors already.
  auto files = ListPlugins(ShippedPluginDir(), user_dirs);
  if (!files) return Error::Script(files.error().message);
  for (const auto& [name, _] : params) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      return Error::Usage(fmt::format("--param for metric '{}' which is not selected by --metrics", name));
    }
  }
  std::vector<MetricPlugin> out;
  for (const auto& name : names) {
    auto it = std::find_if(files->begin(), files->end(),
                           [&](const PluginFile& f) { return f.name == name; });
    if (it == files->end()) {
      std::vector<std::string> known;
      for (const auto& f : *files) known.push_back(f.name);
      return Error::Usage(
          fmt::format("unknown metric '{}' ({}expected one of: {})", name, DidYouMean(name, known), JoinNames(known)));
    }
    auto file = ReadPluginFile(it->path, it->display_name, it->configured);
    if (!file) return Error::Script(file.error().message);
    auto plugin = LoadMetricPlugin(vm, *file);
    if (!plugin) return plugin.error();
    if (auto p = params.find(name); p != params.end()) {
      if (auto st = ApplyParams(*plugin, p->second); !st) return st.error();
    }
    out.push_back(std::move(*plugin));
  }
  return out;
}

// One rule for every front-end: the profile's name with its knobs (kenchan+max_pieces=50), an unknown
// profile, knob or value a usage error with a did-you-mean (ResolveProfile).
Result<Profile> ProfileNamed(const std::string& name) { return ResolveProfile(name); }

Result<EvalRequest::Shard> ParseShard(const std::string& text) {
  const auto slash = text.find('/');
  auto number = [](std::string_view v, int64_t& out) {
    if (v.empty() || v.size() > 9 || !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return false;
    }
    out = std::stoll(std::string(v));
    return true;
  };
  EvalRequest::Shard shard;
  if (slash == std::string::npos || !number(std::string_view(text).substr(0, slash), shard.index) ||
      !number(std::string_view(text).substr(slash + 1), shard.count)) {
    return Error::Usage(fmt::format("--shard must be I/N, shard I (from 0) of N (got '{}')", text));
  }
  if (shard.count < 1) return Error::Usage(fmt::format("--shard {}: N must be at least 1", text));
  if (shard.index >= shard.count) {
    return Error::Usage(
        fmt::format("--shard {}: I must be from 0 to {} (shards are numbered from 0)", text, shard.count - 1));
  }
  return shard;
}

Result<std::vector<std::string>> SelectedMetrics(const EvalRequest& req) {
  std::vector<std::string> metrics = req.metrics;
  if (metrics.empty()) {
    for (auto m : SplitOn(kDefaultMetrics, ",")) metrics.emplace_back(m);
  }
  for (std::size_t i = 0; i < metrics.size(); ++i) {
    if (std::find(metrics.begin(), metrics.begin() + static_cast<std::ptrdiff_t>(i), metrics[i]) !=
        metrics.begin() + static_cast<std::ptrdiff_t>(i)) {
      return Error::Usage(fmt::format("metric '{}' is listed twice", metrics[i]));
    }
  }
  return metrics;
}

Status PreparePlugins(LuaVm& vm, std::vector<MetricPlugin>& plugins, const Profile& profile) {
  // check(params, profile): parameter values the declaration's types cannot express (e.g. exact.ks).
  for (auto& p : plugins) {
    if (Status st = CheckParams(vm, p, profile); !st.ok()) return st;
  }
  for (auto& p : plugins) {
    if (Status st = ResolveNeeds(vm, p, profile); !st.ok()) return st;
  }
  return Status::Ok();
}

bool PlanNeeds(const std::vector<MetricPlugin>& plugins, PlanRequest& plan) {
  plan.forms[0] = plan.forms[1] = false;  // only the forms some plugin declared
  plan.neighbors = plan.tokens = false;
  bool any = false;
  for (const auto& p : plugins) {
    for (const auto& need : p.needs) {
      if (need == "embeddings") plan.forms[0] = any = true;
      if (need == "embeddings:stems") plan.forms[1] = any = true;
      if (need == "neighbors") plan.neighbors = plan.forms[0] = any = true;
      // Token embeddings are computed per call (contextual: no phrase cache), but the run loads the
      // model, so a model without them fails here, before any document is scored.
      if (need == "tokens") plan.tokens = any = true;
      // The model itself (the utility metric's bi-encoder embeds documents and queries while preparing).
      if (need == "model") any = true;
    }
  }
  return any;
}

Result<PhrasePlan> PlannedPhrases(const Corpus& corpus, const EvalRequest& req) {
  auto metrics = SelectedMetrics(req);
  if (!metrics) return metrics.error();
  LuaVm vm(req.limits);
  InstallAll(vm);
  auto plugins = LoadMetrics(vm, *metrics, req.plugin_dirs, req.params);
  if (!plugins) return plugins.error();
  if (Status st = PreparePlugins(vm, *plugins, corpus.profile); !st.ok()) return st.error();
  PlanRequest plan;
  if (!PlanNeeds(*plugins, plan)) return PhrasePlan{};
  return CollectPhrases(corpus, plan.forms);
}

namespace {

Result<Profile> RequestProfile(const EvalRequest& req) { return ProfileNamed(req.profile); }

// The corpus of a dataset import shared by other evaluations (a batch's entries, the REPL's kp.load):
// its predictions imported and aligned here, its documents kept.
Result<Corpus> CorpusFor(const RawDataset& dataset, const EvalRequest& req, PhaseTimer& timer) {
  auto profile = RequestProfile(req);
  if (!profile) return profile.error();
  std::optional<RawPredictions> aligned;
  if (!req.predictions_path.empty()) {
    Result<RawPredictions> preds = ImportPredictions(req.predictions_path, req.predictions_format);
    if (!preds) return preds.error();
    auto a = AlignPredictions(dataset, std::move(*preds));
    if (!a) return a.error();
    aligned = std::move(*a);
    timer.Done("predictions");
  }
  const int threads = std::min(req.threads, kMaxThreads);  // checked by EvaluateCorpus too
  auto corpus = BuildCorpus(dataset, aligned ? &*aligned : nullptr, *profile, threads);
  if (!corpus) return corpus.error();
  timer.Done("corpus");
  return corpus;
}

// The request's files read and handed to `build`, which BuildCorpus and StreamCorpus both are: Meng-2017
// lines and prediction lines as LineDocuments (parsed by the threads that build them, never held as an
// import; kplab/io.h), anything else as an import given up to it, the dataset and its aligned
// predictions (each document's raw text freed as it is built). Unless the request asks for one thread,
// the predictions are imported on a second thread while the dataset is; a dataset error still comes
// first, as when they were read one after the other.
template <typename Build>
auto ReadForBuild(const EvalRequest& req, PhaseTimer& timer, const Build& build)
    -> decltype(build(std::declval<LineDocuments>())) {
  if (!req.source_path &&
      LineDocuments::Handles(req.dataset_path, req.dataset_options, req.predictions_path, req.predictions_format)) {
    auto docs =
        LineDocuments::Open(req.dataset_path, req.dataset_options, req.predictions_path, req.threads, req.hash_inputs);
    if (!docs) return docs.error();
    timer.Done("dataset");
    return build(std::move(*docs));
  }
  std::optional<Result<RawPredictions>> predictions;
  std::jthread reader;
  if (!req.predictions_path.empty() && req.threads != 1) {
    try {
      reader = std::jthread([&] {
        try {
          predictions.emplace(ImportPredictions(req.predictions_path, req.predictions_format));
        } catch (const std::bad_alloc&) {
          predictions.emplace(Error::Limit(req.predictions_path + ": out of memory while reading the predictions"));
        }
      });
    } catch (const std::system_error&) {
      // No thread: the predictions are read after the dataset.
    }
  }
  auto dataset = ImportRequestDataset(req);
  if (reader.joinable()) reader.join();
  timer.Done("dataset");
  if (!dataset) return dataset.error();
  std::optional<RawPredictions> aligned;
  if (!req.predictions_path.empty()) {
    Result<RawPredictions> preds =
        predictions ? std::move(*predictions) : ImportPredictions(req.predictions_path, req.predictions_format);
    if (!preds) return preds.error();
    auto a = AlignPredictions(*dataset, std::move(*preds));
    if (!a) return a.error();
    aligned = std::move(*a);
    timer.Done("predictions");
  }
  return build(std::move(*dataset), std::move(aligned));
}

// Running out of memory while reading the request's files and building from them (a line of a hundred
// megabytes, a dataset too big for the machine) is a limit, naming the files, as docs/cli.md says (exit
// 3 at the command line), not an internal error.
Error OutOfMemoryReading(const EvalRequest& req) {
  return Error::Limit(req.dataset_path + (req.predictions_path.empty() ? "" : " and " + req.predictions_path) +
                      ": out of memory while reading the files and building the corpus");
}

// The corpus of the request's files.
Result<Corpus> LoadCorpusTimed(const EvalRequest& req, PhaseTimer& timer) {
  auto profile = RequestProfile(req);
  if (!profile) return profile.error();
  const int threads = std::min(req.threads, kMaxThreads);
  try {
    auto corpus = ReadForBuild(req, timer, [&](auto&&... documents) {
      return BuildCorpus(std::forward<decltype(documents)>(documents)..., *profile, threads);
    });
    if (!corpus) return corpus.error();
    timer.Done("corpus");
    return corpus;
  } catch (const std::bad_alloc&) {
    return OutOfMemoryReading(req);
  }
}

}  // namespace

Result<Corpus> LoadCorpus(const EvalRequest& req) {
  PhaseTimer timer;
  return LoadCorpusTimed(req, timer);
}

Result<RawDataset> ImportRequestDataset(const EvalRequest& req) {
  auto dataset = ImportDataset(req.dataset_path, req.dataset_options);
  if (!dataset) return dataset.error();
  if (req.source_path) {
    if (auto st = AttachSources(*dataset, *req.source_path); !st) return st.error();
  }
  return dataset;
}

Result<Corpus> LoadCorpusFor(const RawDataset& dataset, const EvalRequest& req) {
  PhaseTimer timer;
  return CorpusFor(dataset, req, timer);
}

std::map<std::string, std::size_t> SubsetDocCounts(const ScoreColumns& scores) {
  std::map<std::string, std::size_t> n;
  for (std::size_t c = 0; c < scores.metrics.size(); ++c) {
    const auto dot = scores.metrics[c].find('.');
    if (dot == std::string::npos) continue;
    const std::string subset = scores.metrics[c].substr(0, dot);
    if (subset != "all" && subset != "present" && subset != "absent") continue;
    std::size_t& most = n[subset];
    if (most >= scores.columns[c].size()) continue;  // no more defined values than it has rows
    std::size_t defined = 0;
    for (double v : scores.columns[c]) defined += !std::isnan(v);
    most = std::max(most, defined);
  }
  return n;
}

namespace {

// `kplab eval --ci`: the CIs of one plugin's aggregates, from the slots the runner kept. The resampled
// aggregation sees the context `kplab runs merge` gives (profile, n_docs, dataset, system), so a CI is
// what re-aggregating a stored run's resampled slots gives too.
Status BootstrapRun(LuaVm& vm, const MetricPlugin& plugin, const Profile& profile, std::size_t n_docs,
                    const RunRecord& run, const CiOptions& ci, PluginOutcome& o) {
  auto re = Reaggregation::Open(vm, plugin);
  if (!re) return re.error();
  const DeclaredColumns& decl = (*re)->decl();
  auto ctx = [&](lua_State* L) { PushMergeCtx(L, profile, n_docs, run.dataset_name, run.system); };
  const stats::BootstrapOptions boot{ci.resamples, ci.confidence, ci.seed};
  if (decl.units.empty()) {
    return BootstrapAggregates(vm, plugin, decl, o.slots, RowCount(o.slots), ctx, boot, o.aggregates);
  }
  // Units (c:units): their rows must give the run's values, or resampling them means nothing.
  if (o.units.empty()) return Status::Ok();  // nothing to resample (no pair, say): no CI
  const SlotValues units = UnitSlotValues(plugin, decl, o.units);
  std::vector<std::string> names;
  for (const auto& a : o.aggregates) names.push_back(a.metric);
  std::vector<double> got;
  if (Status st = AggregateByName(vm, plugin, decl, units, ctx, names, got); !st.ok()) return st;
  auto fixed = [&](const std::string& name) { return decl.UnitFixed(name); };
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (fixed(names[i])) continue;  // a count of the run, not of its units
    const double x = o.aggregates[i].value, y = got[i];
    if ((std::isnan(x) && std::isnan(y)) || std::abs(x - y) <= 1e-9 * std::max(1.0, std::abs(x))) continue;
    return Error::Script(
        fmt::format("{}: its {} (ctx.unit) do not add up to its documents: aggregate '{}' is {} over the "
                    "documents but {} over the {} {} (a document's slots must be the sums of its units')",
                    plugin.file.display_name, decl.units, names[i], x, y, o.units.size(), decl.units));
  }
  if (Status st = BootstrapAggregates(vm, plugin, decl, units, o.units.size(), ctx, boot, o.aggregates); !st.ok()) {
    return st;
  }
  for (auto& a : o.aggregates) {
    if (fixed(a.metric)) a.ci_low = a.ci_high = std::nullopt;
  }
  return Status::Ok();
}

// EvaluateCorpus's phases (DESIGN.md: resolve -> validate -> plan -> score -> aggregate -> record), each a
// function of its own below; they run in this order and share the run's plugins through Lanes.

// Resolve: the plugins of the first scoring lane (a Lua VM with its own copy of the plugins), where
// check(params, profile) and needs(profile, params) run (only the plan reads needs); the runner asks
// for more lanes (AddLane) when a plugin scored in Lua is to use them (lanes.h).
struct LanePlugins {
  std::vector<std::unique_ptr<LuaVm>> vms;
  std::vector<std::vector<MetricPlugin>> plugins;  // per lane
  std::vector<std::string> selected;               // the metrics, as every lane loads them
  std::size_t max_lanes = 1;                       // the run's thread count for scoring
  bool lanes_by_cost = true;                       // KPLAB_LANES
  const std::vector<MetricPlugin>& first() const { return plugins[0]; }
};

// One more lane: a VM with the run's plugins loaded as in the first. The first lane's plugins are
// referred to while more are made: lp.plugins never grows past the room made for max_lanes.
Result<Lane> AddLane(LanePlugins& lp, const EvalRequest& req) {
  if (lp.plugins.size() == lp.plugins.capacity()) return Error::Limit("no room for another lane");
  auto vm = std::make_unique<LuaVm>(req.limits);
  InstallAll(*vm);
  auto loaded = LoadMetrics(*vm, lp.selected, req.plugin_dirs, req.params);
  if (!loaded) return loaded.error();
  lp.vms.push_back(std::move(vm));
  lp.plugins.push_back(std::move(*loaded));
  Lane lane{lp.vms.back().get(), {}};
  for (const auto& p : lp.plugins.back()) lane.plugins.push_back(&p);
  return lane;
}

Result<LanePlugins> ResolvePlugins(const Profile& profile, const EvalRequest& req) {
  // Every front-end's thread count (the command line's --threads, Python's threads=, kp.evaluate's
  // opts.threads) means the same: a negative or too large one is refused, not clamped.
  if (req.threads < 0 || req.threads > kMaxThreads) {
    return Error::Usage(fmt::format("threads must be from 0 (one per core) to {} (got {})", kMaxThreads, req.threads));
  }
  auto selected = SelectedMetrics(req);
  if (!selected) return selected.error();
  LanePlugins out;
  const char* lanes_env = std::getenv("KPLAB_LANES");
  if (!ParseLanesSetting(lanes_env ? lanes_env : "", out.lanes_by_cost)) {
    return Error::Usage(
        fmt::format("KPLAB_LANES='{}': expected auto (each metric on the lanes its work pays for) "
                    "or max (every metric on all --threads lanes)",
                    lanes_env));
  }
  out.selected = std::move(*selected);
  out.max_lanes = req.threads > 0 ? static_cast<std::size_t>(req.threads)
                                  : std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 8);
  out.plugins.reserve(out.max_lanes);
  out.vms.reserve(out.max_lanes);
  auto first = AddLane(out, req);
  if (!first) return first.error();  // usage: a misspelt metric or parameter; script: a bad file
  if (Status st = PreparePlugins(*out.vms[0], out.plugins[0], profile); !st.ok()) return st.error();
  return out;
}

// Whether every plugin of the run compares keys only within a document (ComparesWithinDocuments): the
// run can be streamed (EvaluateStreamed), and a corpus given to it may have PhraseIds::kPerRange.
bool KernelsOnly(const LanePlugins& lanes) {
  const auto& plugins = lanes.first();
  return !plugins.empty() && std::all_of(plugins.begin(), plugins.end(), ComparesWithinDocuments);
}

// Validate: what the request asks of the plugins, refused before any document is scored or phrase
// embedded (n: the corpus's documents). Returns the shard's documents [begin, end) ({0, 0}: every document).
Result<std::pair<std::size_t, std::size_t>> ValidateRequest(std::size_t n, const std::vector<MetricPlugin>& plugins,
                                                            const EvalRequest& req) {
  auto usage = [](std::string message) { return Error::Usage(std::move(message)); };
  std::pair<std::size_t, std::size_t> range{0, 0};
  // A shard is worth running only if `kplab runs merge` can rebuild the run from it.
  if (req.shard) {
    const auto count = static_cast<std::size_t>(req.shard->count), index = static_cast<std::size_t>(req.shard->index);
    if (req.shard->index < 0 || index >= count) {
      return usage(fmt::format("shard {}/{}: I must be from 0 to {} (shards are numbered from 0)", req.shard->index,
                               req.shard->count, req.shard->count - 1));
    }
    if (count > n) {
      return usage(fmt::format("shard {}/{}: {} shards for {} documents (expected at most one shard per document)",
                               index, count, count, n));
    }
    for (const auto& p : plugins) {
      if (p.api < 2) {
        return usage(fmt::format("metric '{}' cannot be sharded: {} is plugin API 1, whose aggregate(cols) `kplab "
                                 "runs merge` cannot re-run (plugin API 2 declares its aggregation in columns(c, "
                                 "params))",
                                 p.name, p.file.display_name));
      }
      if (!p.unmergeable.empty()) {
        return usage(fmt::format("metric '{}' cannot be sharded: {} declares unmergeable = \"{}\"", p.name,
                                 p.file.display_name, p.unmergeable));
      }
    }
    range = {n * index / count, n * (index + 1) / count};
  }
  if (req.ci) {
    if (req.shard) {
      return usage("--ci resamples the whole run: it cannot be combined with --shard (merge the shards with `kplab "
                   "runs merge`, then compare runs with `kplab runs compare`)");
    }
    if (req.ci->resamples < 1 || req.ci->resamples > kMaxCiResamples) {
      return usage(fmt::format("--ci-resamples must be from 1 to {} (got {})", kMaxCiResamples, req.ci->resamples));
    }
    for (const auto& p : plugins) {
      if (std::string why = NotResampleable(p); !why.empty()) {
        return usage(fmt::format("metric '{}' has no bootstrap CI (--ci): {}", p.name, why));
      }
    }
  }
  return range;
}

// params_json gains `"key": value` (its closing brace kept).
void AppendParamsJson(std::string& params_json, const std::string& key, const std::string& value) {
  params_json.pop_back();
  params_json += fmt::format("{}{}: {}}}", params_json.size() > 1 ? ", " : "", JsonString(key), value);
}

// How the dataset was read, when not by default: part of what the numbers mean (refs_stemmed), and what
// `runs doc` and `kplab report` need to read the same documents again (ReloadRunCorpus). "" by default.
std::string DatasetJson(const Corpus& corpus, const EvalRequest& req) {
  std::vector<std::string> ds;
  if (corpus.refs_stemmed) ds.push_back("\"refs_stemmed\": true");
  const DatasetOptions& o = req.dataset_options;
  for (const auto& [key, value] : {std::pair{"hulth_keys", &o.hulth_keys}, {"semeval_answers", &o.semeval_answers},
                                   {"split", &o.split}, {"references", &o.references}}) {
    if (!value->empty()) {
      const bool is_path = std::string_view(key) == "references" ||
                           (std::string_view(key) == "semeval_answers" && value->find('/') != std::string::npos);
      ds.push_back(JsonString(key) + ": " + JsonString(is_path ? AbsolutePath(*value) : *value));
    }
  }
  if (req.source_path) ds.push_back("\"source\": " + JsonString(AbsolutePath(*req.source_path)));
  return ds.empty() ? "" : fmt::format("{{{}}}", fmt::join(ds, ", "));
}

// The run record's description of what is evaluated and how (the record phase's first half: names,
// hashes, parameters); names are checked here, where they are made.
Result<RunRecord> DescribeRun(const Corpus& corpus, const std::vector<MetricPlugin>& plugins, const EvalRequest& req) {
  RunRecord run;
  run.dataset_name = corpus.dataset_name;
  run.dataset_path = AbsolutePath(corpus.dataset_path);
  run.dataset_format = corpus.dataset_format;
  run.dataset_hash = RunDatasetHash(corpus.dataset_hash, req.dataset_options);
  const SystemSeed named = SystemAndSeedFromPath(corpus.predictions_path, corpus.dataset_name);
  run.system = req.system.empty() ? named.system : req.system;
  // Names end up in tables, JSON, LaTeX, CSV, HTML and terminals: valid UTF-8 without control
  // characters (a newline would split a CSV row, ESC[2J clear the screen), checked where they are made.
  if (Status st = CheckName("system name", run.system); !st.ok()) return st.error();
  if (Status st = CheckName("dataset name", run.dataset_name); !st.ok()) return st.error();
  run.seed = req.seed ? req.seed : named.seed;
  run.predictions_path = AbsolutePath(corpus.predictions_path);
  run.predictions_hash = corpus.predictions_hash;
  run.profile = corpus.profile.name;
  run.params_json = ParamsJson(plugins);
  if (req.verify_docs < 0 || req.verify_docs > kMaxVerifyDocs) {
    return Error::Usage(fmt::format("--verify-docs must be from 0 to {} (got {})", kMaxVerifyDocs, req.verify_docs));
  }
  // How the run checked that its numbers do not depend on the lanes, and the seed its plugins drew from.
  AppendParamsJson(run.params_json, "_verify", fmt::format("{{\"docs\": {}}}", req.verify_docs));
  if (req.random_seed != 0) AppendParamsJson(run.params_json, "_random_seed", std::to_string(req.random_seed));
  if (req.ci) {
    // How the stored CIs were drawn: part of what they mean, and what reproduces them.
    AppendParamsJson(run.params_json, "_ci",
                     fmt::format("{{\"resamples\": {}, \"seed\": {}, \"confidence\": {}}}", req.ci->resamples,
                                 req.ci->seed, req.ci->confidence));
  }
  if (std::string ds = DatasetJson(corpus, req); !ds.empty()) AppendParamsJson(run.params_json, "_dataset", ds);
  return run;
}

// Plan: embed every distinct phrase once (cache first) before any document is scored. Null when no
// plugin needs embeddings; fills res.embeddings and the run's embedder fields otherwise.
Result<std::shared_ptr<const EmbeddingSpace>> PlanRun(const Corpus& corpus, const std::vector<MetricPlugin>& plugins,
                                                      const EvalRequest& req, EvalResult& res) {
  PlanRequest plan;
  plan.threads = req.threads;
  if (!PlanNeeds(plugins, plan)) return std::shared_ptr<const EmbeddingSpace>();
  plan.model_name = req.model;
  plan.db_path = req.cache_db.empty() ? RunStore::DefaultPath() : req.cache_db;
  const auto t0 = std::chrono::steady_clock::now();
  // The default store is the user's ($KPLAB_DB or ./kplab.db): kplab keeps its phrase cache there
  // whoever asked for the run (a cache is keyed by model fingerprint, so what goes in changes no
  // number); a cache the request names is opened in the request's context.
  std::optional<UserFileScope> user;
  if (req.cache_db.empty()) user.emplace();
  auto planned = PlanEmbeddings(corpus, plan);
  user.reset();
  // The plan's own kind: a store path that cannot be used (the phrase cache's file) stays a store error,
  // a model that is not installed a usage error, a model's bad files input, running out of memory a limit.
  if (!planned.ok()) return planned.error();
  std::shared_ptr<const EmbeddingSpace> space = *planned;
  for (const auto& p : plugins) {
    if (std::find(p.needs.begin(), p.needs.end(), "tokens") != p.needs.end() && space->embedder->token_layers() < 0) {
      return Error::Input(NoTokenEmbeddingsMessage(*space, p.name));
    }
  }
  EmbeddingReport rep;
  rep.model = space->model.name;
  rep.fingerprint = space->model.fingerprint;
  rep.phrases = space->cache.requested;
  rep.hits = space->cache.hits;
  rep.embedded = space->cache.embedded;
  rep.no_vector = space->no_vector;
  rep.phrase_vectors = plan.forms[0] || plan.forms[1];
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.embeddings = rep;
  res.run.embedder_fingerprint = rep.fingerprint;
  // The run records which model scored it and how many phrases had no vector.
  AppendParamsJson(res.run.params_json, "_embeddings",
                   fmt::format("{{\"model\": {}, \"fingerprint\": {}, \"backend\": {}, \"phrases\": {}, "
                               "\"no_vector\": {}}}",
                               JsonString(rep.model), JsonString(rep.fingerprint), JsonString(space->model.backend),
                               rep.phrases, rep.no_vector));
  return space;
}

// Aggregate: one plugin's outcome into the run (its aggregates, kept columns and slots, and --ci's
// intervals), or a ScriptError when it failed or produced a name another plugin produced. `owner` maps
// each metric name (aggregates prefixed '=') to the plugin that produced it. profile, n_docs: the corpus's.
void AddOutcome(std::size_t pi, PluginOutcome& o, LanePlugins& lp, const Profile& profile, std::size_t n_docs,
                const EvalRequest& req, std::map<std::string, std::string>& owner, EvalResult& res) {
  const MetricPlugin& plugin = lp.first()[pi];
  auto script_error = [&](std::string message) {
    ScriptError e;
    e.plugin = o.plugin;
    e.file = plugin.file.display_name;
    e.message = std::move(message);
    res.errors.push_back(std::move(e));
  };
  if (o.error) {
    res.errors.push_back(*o.error);
    return;
  }
  // Two plugins may not produce the same name: the run could not say which value is which.
  std::string clash;
  for (const auto& m : o.columns.metrics) {
    if (owner.count(m)) clash = m;
  }
  for (const auto& a : o.aggregates) {
    if (owner.count("=" + a.metric)) clash = a.metric;
  }
  if (!clash.empty()) {
    const auto it = owner.count(clash) ? owner.find(clash) : owner.find("=" + clash);
    return script_error(fmt::format("{}: metric '{}' is also produced by plugin '{}' (expected distinct names)",
                                    plugin.file.display_name, clash, it->second));
  }
  for (const auto& m : o.columns.metrics) owner[m] = o.plugin;
  for (const auto& a : o.aggregates) owner["=" + a.metric] = o.plugin;
  for (const auto& [subset, docs] : SubsetDocCounts(o.columns)) {
    res.subset_docs[subset] = std::max(res.subset_docs[subset], docs);
  }
  for (std::size_t c = 0; req.keep_columns && c < o.columns.metrics.size(); ++c) {
    res.scores.metrics.push_back(std::move(o.columns.metrics[c]));
    res.scores.columns.push_back(std::move(o.columns.columns[c]));
  }
  if (req.ci) {
    if (Status st = BootstrapRun(*lp.vms[0], plugin, profile, n_docs, res.run, *req.ci, o); !st.ok()) {
      return script_error(fmt::format("{} (while resampling for --ci)", st.error().message));
    }
  }
  for (auto& ag : o.aggregates) res.aggregates.push_back(std::move(ag));
  if (!o.units.empty()) {
    for (auto& c : UnitSlotColumns(plugin, o.slot_names, o.units)) {
      c.plugin = static_cast<int64_t>(pi);
      res.slots.push_back(std::move(c));
    }
  }
  for (std::size_t s = 0; s < o.slots.size(); ++s) {
    for (std::size_t j = 0; j < o.slots[s].size(); ++j) {
      if (o.slots[s][j].empty()) continue;  // a subset the run allocated none for
      res.slots.push_back(SlotColumn{static_cast<int64_t>(pi), o.slot_subsets[s], static_cast<int64_t>(j + 1),
                                     o.slot_names[j].first, o.slot_names[j].second, std::move(o.slots[s][j])});
    }
  }
}

// The scoring lanes of the run's plugins: every VM made so far, each with its copy of the plugins.
std::vector<Lane> LaneList(const LanePlugins& lp) {
  std::vector<Lane> lane_list;
  for (std::size_t l = 0; l < lp.vms.size(); ++l) {
    Lane lane{lp.vms[l].get(), {}};
    for (const auto& p : lp.plugins[l]) lane.plugins.push_back(&p);
    lane_list.push_back(std::move(lane));
  }
  return lane_list;
}

// What the runner needs of the run: its names, the documents scored (the shard's, or {0, 0} for all),
// what it keeps, and the embeddings planned (null without).
RunContext RunContextFor(const std::string& dataset_name, const EvalResult& res, const LanePlugins& lp,
                         std::pair<std::size_t, std::size_t> range, std::shared_ptr<const EmbeddingSpace> space,
                         const EvalRequest& req) {
  const std::vector<MetricPlugin>& plugins = lp.first();
  RunContext rctx;
  rctx.dataset_name = dataset_name;
  rctx.system = res.run.system;
  rctx.space = std::move(space);
  rctx.begin = range.first;
  rctx.end = range.second;
  // Every stored run keeps its slots (hidden ones too): `runs compare` and `runs table` re-aggregate
  // corpus-level values (micro averages, ECE) from them (host/engine/testable.h). Not when a plugin of
  // API 1 takes part: its columns are no declared slots, and a stored run's score columns are its public
  // slots exactly (the read-back checks it), so such a run keeps none and its micro values are untested.
  const bool all_declared = std::all_of(plugins.begin(), plugins.end(), [](const auto& p) { return p.api >= 2; });
  rctx.keep_slots = req.shard.has_value() || req.ci.has_value() || (req.keep_columns && all_declared);
  rctx.verify_docs = req.verify_docs;
  rctx.random_seed = req.random_seed;
  rctx.max_lanes = lp.max_lanes;
  rctx.lanes_by_cost = lp.lanes_by_cost;
  return rctx;
}

// The run record's second half, known before any document is scored: versions, time, plugins, shard.
void StampRun(EvalResult& res, const std::vector<MetricPlugin>& plugins, const EvalRequest& req,
              std::pair<std::size_t, std::size_t> range) {
  res.run.kplab_version = KPLAB_VERSION;
  res.run.created_at = NowIso();
  for (const auto& p : plugins) res.run.plugins.push_back({p.name, p.version, p.file.sha256, p.file.path});
  if (req.shard) {
    res.run.shard = ShardInfo{req.shard->index, req.shard->count, static_cast<int64_t>(range.first),
                              static_cast<int64_t>(range.second)};
  }
}

// A plugin's outcome into the run, with KPLAB_TIMING's lines about it (streamed: its lanes were the
// ranges of the build).
void TakeOutcome(std::size_t pi, PluginOutcome& o, LanePlugins& lp, const Profile& profile, std::size_t n_docs,
                 const EvalRequest& req, bool streamed, PhaseTimer& timer, std::map<std::string, std::string>& owner,
                 EvalResult& res) {
  const std::string& name = lp.first()[pi].name;
  timer.Done(name);
  timer.Note(streamed
                 ? fmt::format("{} scored in {} range{} as they were built", name, o.lanes, o.lanes == 1 ? "" : "s")
                 : fmt::format("{} scored on {} lane{}", name, o.lanes, o.lanes == 1 ? "" : "s"));
  if (req.verify_docs > 0) {
    timer.Note(fmt::format("of which re-scoring {} (--verify-docs): {:.1f} ms", name, o.verify_seconds * 1e3));
  }
  AddOutcome(pi, o, lp, profile, n_docs, req, owner, res);
}

// Score: every plugin over the documents (or the shard's), in the lanes; each outcome aggregated into
// `res` as it comes.
void ScoreAll(std::shared_ptr<const Corpus> shared, LanePlugins& lp, std::pair<std::size_t, std::size_t> range,
              std::shared_ptr<const EmbeddingSpace> space, const EvalRequest& req, const Progress& progress,
              PhaseTimer& timer, EvalResult& res) {
  MetricRunner runner(LaneList(lp), shared, RunContextFor(shared->dataset_name, res, lp, range, std::move(space), req),
                      [&lp, &req] { return AddLane(lp, req); });
  std::map<std::string, std::string> owner;
  for (std::size_t pi = 0; pi < lp.first().size(); ++pi) {
    PluginOutcome o = runner.Run(pi, progress);
    TakeOutcome(pi, o, lp, shared->profile, shared->docs.size(), req, /*streamed=*/false, timer, owner, res);
  }
}

// Record: the run's status, and what the result keeps alive (EvalResult::resources): the corpus (null
// for a streamed run, which keeps none) and the Lua VMs.
void Conclude(EvalResult& res, LanePlugins& lanes, std::shared_ptr<const Corpus> corpus,
              std::chrono::steady_clock::time_point start) {
  struct Resources {
    std::shared_ptr<const Corpus> corpus;
    std::vector<std::vector<MetricPlugin>> plugins;
    std::vector<std::unique_ptr<LuaVm>> vms;
  };
  auto resources = std::make_shared<Resources>();
  resources->corpus = std::move(corpus);
  resources->vms = std::move(lanes.vms);
  resources->plugins = std::move(lanes.plugins);
  res.resources = resources;
  if (!res.errors.empty()) {
    res.run.status = "failed";
    for (const auto& e : res.errors) res.run.error += e.Format() + "\n";
  }
  res.run.elapsed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// EvaluateCorpus with the run's plugins resolved (ResolvePlugins).
Result<EvalResult> EvaluateResolved(std::shared_ptr<const Corpus> shared, const EvalRequest& req, LanePlugins lanes_in,
                                    const Progress& progress, std::chrono::steady_clock::time_point start,
                                    PhaseTimer& timer) {
  const Corpus& corpus = *shared;
  if (corpus.phrase_ids != PhraseIds::kCorpus && !KernelsOnly(lanes_in)) {
    return Error::Internal("a corpus with per-range phrase ids given to metrics that read phrases across documents");
  }
  LanePlugins& lanes = lanes_in;
  const std::vector<MetricPlugin>& plugins = lanes.first();
  auto range = ValidateRequest(corpus.docs.size(), plugins, req);
  if (!range) return range.error();
  timer.Done("validate");

  EvalResult res;
  auto run = DescribeRun(corpus, plugins, req);
  if (!run) return run.error();
  res.run = std::move(*run);
  // The documents' ids as the corpus holds them, not a copy (a million ids: 32 MB; design note 68).
  res.run.doc_ids = DocIds::Of(shared, std::span<const Document>(corpus.docs), &Document::id);
  timer.Done("run record");
  res.warnings = corpus.warnings;
  auto space = PlanRun(corpus, plugins, req, res);
  if (!space) return space.error();
  if (*space) timer.Done("embed plan");
  StampRun(res, plugins, req, *range);
  ScoreAll(shared, lanes, *range, *space, req, progress, timer, res);
  Conclude(res, lanes, shared, start);
  return res;
}

// Evaluate for a run whose every plugin compares keys only within a document (KernelsOnly): the corpus
// is streamed (StreamCorpus), each range of documents scored by the thread that built it as soon as it
// is built, then freed; no corpus is kept (design note 72). The run is the one EvaluateResolved gives on
// the built corpus, value for value, and its checks come in the same order (the files', then the
// request's, then the plugins').
Result<EvalResult> EvaluateStreamed(const EvalRequest& req, const Profile& profile, LanePlugins& lanes,
                                    const Progress& progress, std::chrono::steady_clock::time_point start,
                                    PhaseTimer& timer) {
  const std::vector<MetricPlugin>& plugins = lanes.first();
  EvalResult res;
  std::optional<MetricRunner> runner;
  std::size_t n_docs = 0, n_ranges = 0, done = 0;
  std::pair<std::size_t, std::size_t> to_score{0, 0};  // the documents scored (a shard's, or all)
  std::mutex progress_mutex;                           // the ranges are scored on the build's threads at once
  CorpusSinks sinks;
  sinks.start = [&](std::shared_ptr<const Corpus> header, const StreamPlan& plan) -> Status {
    n_docs = plan.starts.back();
    n_ranges = plan.starts.size() - 1;
    auto range = ValidateRequest(n_docs, plugins, req);
    if (!range) return range.error();
    timer.Done("validate");
    auto run = DescribeRun(*header, plugins, req);
    if (!run) return run.error();
    res.run = std::move(*run);
    StampRun(res, plugins, req, *range);
    timer.Done("run record");
    RunContext rctx = RunContextFor(header->dataset_name, res, lanes, *range, nullptr, req);
    rctx.streamed_docs = n_docs;
    to_score = req.shard ? *range : std::pair<std::size_t, std::size_t>{0, n_docs};
    runner.emplace(LaneList(lanes), std::move(header), std::move(rctx), [&lanes, &req] { return AddLane(lanes, req); });
    runner->BeginStream(plan);
    timer.Done("plugins set up");
    return Status::Ok();
  };
  sinks.range = [&](const Corpus& range, std::size_t begin) {
    runner->ScoreRange(range, begin);
    if (!progress) return;
    const std::size_t lo = std::max(begin, to_score.first), hi = std::min(begin + range.docs.size(), to_score.second);
    const std::lock_guard<std::mutex> lock(progress_mutex);
    done += hi > lo ? hi - lo : 0;
    progress("scoring", done, to_score.second - to_score.first);
  };
  const int threads = std::min(req.threads, kMaxThreads);
  Result<StreamedCorpus> streamed = [&]() -> Result<StreamedCorpus> {
    try {
      return ReadForBuild(req, timer, [&](auto&&... documents) {
        return StreamCorpus(std::forward<decltype(documents)>(documents)..., profile, threads, sinks);
      });
    } catch (const std::bad_alloc&) {
      return OutOfMemoryReading(req);
    }
  }();
  if (!streamed) return streamed.error();
  timer.Done("corpus");
  timer.Note(
      fmt::format("streamed: each of {} range{} scored as built, no corpus kept", n_ranges, n_ranges == 1 ? "" : "s"));
  res.run.doc_ids =
      streamed->numbered_ids > 0 ? DocIds::Numbered(streamed->numbered_ids) : DocIds(std::move(streamed->doc_ids));
  res.warnings = std::move(streamed->warnings);
  std::map<std::string, std::string> owner;
  for (std::size_t pi = 0; pi < plugins.size(); ++pi) {
    PluginOutcome o = runner->FinishStream(pi);
    TakeOutcome(pi, o, lanes, profile, n_docs, req, /*streamed=*/true, timer, owner, res);
  }
  runner.reset();  // before the VMs its plugins' declarations are held in move to the result
  Conclude(res, lanes, nullptr, start);
  return res;
}

}  // namespace

Result<EvalResult> EvaluateCorpus(std::shared_ptr<const Corpus> shared, const EvalRequest& req,
                                  const Progress& progress) {
  const auto start = std::chrono::steady_clock::now();
  PhaseTimer timer;
  auto lanes = ResolvePlugins(shared->profile, req);
  if (!lanes) return lanes.error();
  timer.Done("lua setup");
  return EvaluateResolved(std::move(shared), req, std::move(*lanes), progress, start, timer);
}

Result<EvalResult> Evaluate(const EvalRequest& req, const Progress& progress) {
  const auto start = std::chrono::steady_clock::now();
  if (req.predictions_path.empty()) {
    return Error::Usage("no predictions file to evaluate");
  }
  PhaseTimer timer;
  // The plugins are resolved before the files are read: a run whose metrics all compare keys within a
  // document is scored as its corpus is built, which is not kept (KernelsOnly, design note 72). When they
  // cannot be resolved here, the corpus is built and EvaluateCorpus reports the same error: a dataset's
  // error still comes before a plugin's.
  std::optional<LanePlugins> lanes;
  auto profile = RequestProfile(req);
  if (profile) {
    if (auto resolved = ResolvePlugins(*profile, req)) lanes = std::move(*resolved);
  }
  timer.Done("lua setup");
  Result<EvalResult> res = [&]() -> Result<EvalResult> {
    if (lanes && KernelsOnly(*lanes)) return EvaluateStreamed(req, *profile, *lanes, progress, start, timer);
    auto corpus = LoadCorpusTimed(req, timer);
    if (!corpus) return corpus.error();
    timer.Note("phrase ids: corpus-wide");
    timer.Done("import freed");  // the raw dataset and predictions are destroyed on the way out
    auto shared = std::make_shared<const Corpus>(std::move(*corpus));
    return lanes ? EvaluateResolved(shared, req, std::move(*lanes), progress, start, timer)
                 : EvaluateCorpus(shared, req, progress);
  }();
  if (res) {
    res->run.dataset_path = AbsolutePath(req.dataset_path);
    res->run.predictions_path = AbsolutePath(req.predictions_path);
    res->run.elapsed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return res;
}

}  // namespace kplab::host
