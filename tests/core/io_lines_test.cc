// LineDocuments (kplab/io.h): Meng-2017 lines and "lines" predictions read for a build a line at a time.
// Its promise is "same errors in the same order as ImportDataset + ImportPredictions + AlignPredictions";
// each hostile input below is given to both, and the message is also written out by hand once.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "kplab/corpus.h"
#include "kplab/io.h"
#include "temp_dir.h"

namespace kplab {
namespace {

using test::TempDir;

std::string WriteLinesFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// The general path's first error for this pair, or "" when it reads them.
std::string GeneralError(const std::string& dataset, const std::string& predictions) {
  auto ds = ImportDataset(dataset);
  if (!ds) return ds.error().message;
  auto p = ImportPredictions(predictions);
  if (!p) return p.error().message;
  auto a = AlignPredictions(*ds, std::move(*p));
  return a ? "" : a.error().message;
}

std::string LinesError(const std::string& dataset, const std::string& predictions, int threads, bool hash = true) {
  auto docs = LineDocuments::Open(dataset, {}, predictions, threads, hash);
  return docs ? "" : docs.error().message;
}

struct Case {
  std::string keys, context, predictions;  // context "-": no context file
  std::string expected;                    // the message, written out ({DIR}: the directory, {P}: the predictions)
};

TEST(LineDocuments, SameErrorsAsTheImporters) {
  const std::vector<Case> cases = {
      {"a;b\nc\n", "-", "x\n", "{P}:1: only 1 line (expected 2 lines, one per document of {DIR})"},
      {"a;b\n", "-", "x\ny\n", "{P}:2: extra line (expected 1 line, one per document of {DIR})"},
      {"a;b\n", "-", "", "{P}: no prediction lines (expected one line per document)"},
      {"a;b\n", "-", "x\ry\n", "{P}:1: carriage return (CR) without a line feed after it (expected LF or CRLF line ends; "
                               "convert CR-only files with `tr '\\r' '\\n'`)"},
      {"a;b\n", "-", "ok\n\xff\n", "{P}:2: invalid UTF-8 (expected UTF-8 text)"},
      // A dataset error comes first, even with the predictions also wrong.
      {"a\n\xc3\n", "-", "", "{DIR}/x_allkeywords.txt:2: invalid UTF-8 (expected UTF-8 text)"},
      {"", "-", "x\n", "{DIR}: no documents (expected a dataset with at least one document)"},
      {"a\nb\n", "t1\n", "x\ny\n",
       "{DIR}/x_allkeywords.txt:2: extra line (expected 1 line, one per line of {DIR}/x_context.txt)"},
      {"a\n", "t1 <eos> b\n", "x\n", ""},
      {"a\r\nb\r\n", "-", "x;y\r\n\r\n", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.keys + "|" + c.context + "|" + c.predictions);
    TempDir dir;
    WriteLinesFile(dir / "x_allkeywords.txt", c.keys);
    if (c.context != "-") WriteLinesFile(dir / "x_context.txt", c.context);
    const std::string p = WriteLinesFile(dir / "p.txt", c.predictions);
    ASSERT_TRUE(LineDocuments::Handles(dir.path(), {}, p, ""));
    std::string expected = c.expected;
    for (auto [from, to] : {std::pair<std::string, std::string>{"{DIR}", dir.path()}, {"{P}", p}}) {
      for (std::size_t at = expected.find(from); at != std::string::npos; at = expected.find(from, at + to.size())) {
        expected.replace(at, from.size(), to);
      }
    }
    EXPECT_EQ(GeneralError(dir.path(), p), expected);
    for (int threads : {1, 2}) {
      EXPECT_EQ(LinesError(dir.path(), p, threads), expected) << threads;
      EXPECT_EQ(LinesError(dir.path(), p, threads, false), expected) << threads << " without hashing";
    }
  }
}

// The content hashes are the importers' when asked for, and empty when not (kplab eval --no-store);
// the documents are the same either way.
TEST(LineDocuments, HashesOnlyWhenAsked) {
  TempDir dir;
  WriteLinesFile(dir / "x_allkeywords.txt", "a;b c\nd\n");
  WriteLinesFile(dir / "x_context.txt", "t1 <eos> a b\nt2 <eos> d\n");
  const std::string p = WriteLinesFile(dir / "p.txt", "a;x\nd\n");
  auto ds = ImportDataset(dir.path());
  auto preds = ImportPredictions(p);
  ASSERT_TRUE(ds && preds);
  for (int threads : {1, 2}) {
    auto hashed = LineDocuments::Open(dir.path(), {}, p, threads);
    auto plain = LineDocuments::Open(dir.path(), {}, p, threads, false);
    ASSERT_TRUE(hashed && plain);
    EXPECT_EQ(hashed->dataset().content_hash, ds->content_hash);
    EXPECT_EQ(hashed->predictions().content_hash, preds->content_hash);
    EXPECT_EQ(hashed->dataset().content_hash.size(), 64u);
    EXPECT_EQ(plain->dataset().content_hash, "");
    EXPECT_EQ(plain->predictions().content_hash, "");
    ASSERT_EQ(plain->size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
      RawDoc a, b;
      RawPrediction pa, pb;
      hashed->Read(i, a, pa);
      plain->Read(i, b, pb);
      EXPECT_EQ(a.refs, b.refs);
      EXPECT_EQ(a.title, b.title);
      EXPECT_EQ(a.body, b.body);
      EXPECT_EQ(pa.phrases, pb.phrases);
    }
  }
}

// Paths that are not files: the general importers' messages, through Handles (false: the general path
// reports them) or Open.
TEST(LineDocuments, HostilePaths) {
  TempDir dir;
  WriteLinesFile(dir / "x_allkeywords.txt", "a\n");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0644), 0);
  EXPECT_TRUE(LineDocuments::Handles(dir.path(), {}, dir / "fifo", ""));
  EXPECT_EQ(LinesError(dir.path(), dir / "fifo", 2), GeneralError(dir.path(), dir / "fifo"));
  EXPECT_EQ(LinesError(dir.path(), dir / "fifo", 2),
            dir / "fifo" + ": a FIFO, not a regular file (expected a UTF-8 text file)");
  EXPECT_EQ(LinesError(dir.path(), dir.path(), 1), GeneralError(dir.path(), dir.path()));
  EXPECT_EQ(LinesError(dir.path(), dir / "none.txt", 1), GeneralError(dir.path(), dir / "none.txt"));
  // Not handled: other formats, JSONL predictions, missing datasets, options the importer refuses.
  EXPECT_FALSE(LineDocuments::Handles(dir / "missing", {}, dir / "p.txt", ""));
  EXPECT_FALSE(LineDocuments::Handles(dir.path(), {}, dir / "p.jsonl", ""));
  EXPECT_FALSE(LineDocuments::Handles(dir.path(), {}, dir / "p.txt", "jsonl"));
  EXPECT_FALSE(LineDocuments::Handles(dir.path(), {}, "", ""));
  DatasetOptions split;
  split.split = "test";
  EXPECT_FALSE(LineDocuments::Handles(dir.path(), split, dir / "p.txt", ""));
  DatasetOptions hulth;
  hulth.format = "hulth";
  EXPECT_FALSE(LineDocuments::Handles(dir.path(), hulth, dir / "p.txt", ""));
}

// Documents read by hand from a two-line pair with context: what Read fills, and that a RawDoc read
// into again keeps nothing of the document before (a title left over would change the source).
TEST(LineDocuments, ReadFillsEveryField) {
  TempDir dir;
  WriteLinesFile(dir / "x_allkeywords.txt", "neural nets;deep learning\ngraphs\n");
  WriteLinesFile(dir / "x_context.txt", "a title <eos> the body\nno separator here\n");
  const std::string p = WriteLinesFile(dir / "p.txt", "nets;<peos>;x\n\n");
  auto docs = LineDocuments::Open(dir.path(), {}, p);
  ASSERT_TRUE(docs.ok()) << docs.error().message;
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_EQ(docs->dataset().format, "meng");
  EXPECT_EQ(docs->predictions().format, "lines");
  RawDoc d;
  RawPrediction r;
  docs->Read(0, d, r);
  EXPECT_EQ(d.id, "1");
  EXPECT_EQ(d.title, "a title");
  EXPECT_EQ(d.body, "the body");
  EXPECT_EQ(d.separator, "<eos>");
  EXPECT_TRUE(d.has_text);
  EXPECT_TRUE(d.pretokenized);
  ASSERT_EQ(d.refs.size(), 2u);
  EXPECT_EQ(d.refs[1], std::vector<std::string>{"deep learning"});
  EXPECT_EQ(r.phrases, (StringList{"nets", "<peos>", "x"}));
  EXPECT_TRUE(r.from_line);
  EXPECT_EQ(r.loc.line, 1);
  EXPECT_EQ(d.loc.file.str(), dir / "x_context.txt");
  docs->Read(1, d, r);
  EXPECT_EQ(d.id, "2");
  EXPECT_EQ(d.title, "");
  EXPECT_EQ(d.body, "no separator here");
  EXPECT_EQ(d.separator, "");
  ASSERT_EQ(d.refs.size(), 1u);
  EXPECT_EQ(d.refs[0], std::vector<std::string>{"graphs"});
  EXPECT_EQ(r.phrases, (StringList{""}));  // an empty line is one empty piece, as split(';') gives
  EXPECT_EQ(r.loc.line, 2);
  // The same documents as the importers give.
  auto ds = ImportDataset(dir.path());
  ASSERT_TRUE(ds.ok());
  EXPECT_EQ(ds->content_hash, docs->dataset().content_hash);
  EXPECT_EQ(ds->files, docs->dataset().files);
  EXPECT_EQ(ds->name, docs->dataset().name);
}

// What Release gives back: the whole 2 MiB extents (huge-page aligned) inside the documents' lines, and
// nothing else. Giving back 4 KiB pages inside an extent would split the huge page behind it, and
// whatever reuses that memory after the buffer is freed would be faulted in 4 KiB at a time (design note
// 62): so the pages of a partly covered extent stay resident, and those of a covered one go (mincore,
// page by page, on a file of ~15 MB: several extents).
TEST(LineDocuments, ReleaseGivesBackWholeHugePageExtentsOnly) {
  test::TempDir dir;
  std::string keys, preds;
  std::size_t last_line = 0;  // the last line's bytes, its newline included
  for (int i = 0; i < 4000; ++i) {
    const std::string line =
        std::string(3000 + i % 1000, static_cast<char>('a' + i % 26)) + ";k" + std::to_string(i) + "\n";
    keys += line;
    last_line = line.size();
    preds += "p" + std::to_string(i) + "\n";
  }
  std::ofstream(dir / "x_allkeywords.txt", std::ios::binary) << keys;
  std::ofstream(dir / "p.txt", std::ios::binary) << preds;
  auto docs = LineDocuments::Open(dir.path(), {}, dir / "p.txt");
  ASSERT_TRUE(docs.ok()) << docs.error().message;
  // Each document's line start (its first reference's first byte), every byte read once: resident.
  std::vector<std::uintptr_t> start(4001);
  LineDocuments::Lines lines;
  std::size_t sum = 0;
  for (std::size_t i = 0; i < 4000; ++i) {
    docs->View(i, lines);
    start[i] = reinterpret_cast<std::uintptr_t>(lines.refs[0].data());
    for (std::string_view r : lines.refs) {
      for (char c : r) sum += static_cast<unsigned char>(c);
    }
  }
  ASSERT_GT(sum, 0u);
  start[4000] = start[3999] + last_line;  // the end of the buffer's bytes (no page past it is looked at)
  const std::uintptr_t page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE)), extent = std::uintptr_t{2} << 20;
  auto resident = [&](std::uintptr_t addr) {
    unsigned char v = 0;
    EXPECT_EQ(::mincore(reinterpret_cast<void*>(addr / page * page), page, &v), 0);
    return (v & 1) != 0;
  };
  // Documents [100, 3000): by hand, the extents wholly inside [start[100], start[3000]).
  const std::uintptr_t lo = (start[100] + extent - 1) / extent * extent, hi = start[3000] / extent * extent;
  ASSERT_GE(hi - lo, 2 * extent) << "the test needs at least two whole extents inside the range";
  docs->Release(100, 3000);
  std::size_t kept_inside = 0, gone_outside = 0;
  for (std::uintptr_t a = start[0] / page * page; a < start[4000]; a += page) {
    const bool inside = a >= lo && a + page <= hi;
    if (inside && resident(a)) ++kept_inside;
    if (!inside && !resident(a)) ++gone_outside;
  }
  EXPECT_EQ(kept_inside, 0u) << "pages of whole extents inside the released documents were kept";
  EXPECT_EQ(gone_outside, 0u) << "pages outside the whole extents were given back";
  // The documents on either side of the range still read as before.
  docs->View(99, lines);
  EXPECT_EQ(lines.refs[0], std::string(3000 + 99 % 1000, static_cast<char>('a' + 99 % 26)));
  docs->View(3000, lines);
  EXPECT_EQ(lines.refs[0], std::string(3000 + 3000 % 1000, static_cast<char>('a' + 3000 % 26)));
}

}  // namespace
}  // namespace kplab

namespace kplab {
namespace {

// Release gives back only whole pages inside the released documents' lines: every other document
// still reads as the importers read it, whatever the line lengths and the page boundaries (lines of
// 1 to ~9,000 bytes, so some ranges hold no whole page and some lines span several).
TEST(LineDocuments, ReleaseKeepsTheNeighbours) {
  test::TempDir dir;
  std::string keys, preds;
  for (int i = 0; i < 3000; ++i) {
    const int len = (i * 7919) % 9000 + 1;
    std::string kp(static_cast<std::size_t>(len), static_cast<char>('a' + i % 26));
    keys += kp + ";k" + std::to_string(i) + "\n";
    preds += "p" + std::to_string(i) + ";" + kp.substr(0, static_cast<std::size_t>(len / 2)) + "\n";
  }
  std::ofstream(dir / "x_allkeywords.txt", std::ios::binary) << keys;
  std::ofstream(dir / "p.txt", std::ios::binary) << preds;
  auto ds = ImportDataset(dir.path());
  auto p = ImportPredictions(dir / "p.txt");
  ASSERT_TRUE(ds.ok() && p.ok());
  auto docs = LineDocuments::Open(dir.path(), {}, dir / "p.txt");
  ASSERT_TRUE(docs.ok()) << docs.error().message;
  RawDoc d;
  RawPrediction r;
  auto same = [&](std::size_t i) {
    docs->Read(i, d, r);
    return d.refs == ds->docs[i].refs && r.phrases == p->docs[i].phrases;
  };
  // Released ranges next to, around and between the documents still to read.
  docs->Release(0, 1000);
  for (std::size_t i = 1000; i < 3000; ++i) ASSERT_TRUE(same(i)) << i;
  docs->Release(1001, 1002);  // one document, its neighbours on both sides kept
  EXPECT_TRUE(same(1000));
  EXPECT_TRUE(same(1002));
  docs->Release(1500, 2999);
  EXPECT_TRUE(same(1499));
  EXPECT_TRUE(same(2999));
  docs->Release(2999, 2999);  // empty
  EXPECT_TRUE(same(2999));
  docs->Release(2999, 3000);  // the last line, up to the end of the file
  EXPECT_TRUE(same(1499));
}

}  // namespace
}  // namespace kplab
