// Importer entry points: format detection, file reading and UTF-8 checks, content hashes,
// prediction files and their alignment with a dataset. The format parsers live in io_text.cc and
// io_json.cc.
#include "kplab/io.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "io/file_bytes.h"
#include "io/io_internal.h"
#include "kplab/file_gate.h"
#include "kplab/sha256.h"
#include "kplab/utf8.h"

namespace kplab {
namespace io_internal {
namespace {

namespace fs = std::filesystem;

// "a FIFO", "a directory", ...: what a path is when it is not a regular file.
std::string KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}

// What stat or open failing with err means to a user: "no such file", "symbolic link loop", ...
std::string OpenProblem(int err, std::string_view missing) {
  switch (err) {
    case ENOENT:
    case ENOTDIR: return std::string(missing);
    case ELOOP: return "symbolic link loop";
    default: return fmt::format("cannot open ({})", std::strerror(err));
  }
}

std::string FormatList() {
  std::string out;
  for (const auto& f : DatasetFormats()) {
    if (!out.empty()) out += ", ";
    out += f;
  }
  return out;
}

[[noreturn]] void FailUndetected(const std::string& path) {
  Fail(path, 0, "cannot detect dataset format", "one of: " + FormatList());
}

}  // namespace

std::string DetectOrThrow(const std::string& path) {
  RequireFileOrDirectory(path, "a dataset file or directory");
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (fs::is_regular_file(st)) {
    const std::string name = fs::path(path).filename().string();
    if (EndsWith(name, "_context.txt") || EndsWith(name, "_allkeywords.txt")) return "meng";
    if (EndsWith(name, "src.txt") || EndsWith(name, "trg.txt")) return "one2set";
    if (EndsWith(name, ".source") || EndsWith(name, ".target")) return "deepkpg";
    if (EndsWith(name, ".jsonl") || EndsWith(name, ".json")) {
      std::string f = DetectJsonlFormat(path);
      if (!f.empty()) return f;
    }
    FailUndetected(path);
  }
  bool meng = false, one2set = false, hulth = false, semeval = false, deepkpg = false;
  std::vector<std::string> jsonl;
  for (const auto& entry : ListDirectory(path)) {
    // Not is_regular_file(): a FIFO or link loop under a dataset's name must reach the importer and be
    // refused there, not be skipped.
    if (entry.is_directory(ec)) continue;
    const std::string name = entry.path().filename().string();
    meng |= EndsWith(name, "_context.txt") || EndsWith(name, "_allkeywords.txt");
    one2set |= EndsWith(name, "src.txt") || EndsWith(name, "trg.txt");
    hulth |= EndsWith(name, ".abstr");
    semeval |= EndsWith(name, ".txt.final");
    deepkpg |= EndsWith(name, ".source") || EndsWith(name, ".target");
    if (EndsWith(name, ".jsonl") || EndsWith(name, ".json")) jsonl.push_back(entry.path().string());
  }
  if (meng) return "meng";
  if (one2set) return "one2set";
  if (hulth) return "hulth";
  if (semeval) return "semeval";
  if (deepkpg) return "deepkpg";
  if (jsonl.size() == 1) {
    std::string f = DetectJsonlFormat(jsonl[0]);
    if (!f.empty()) return f;
  }
  FailUndetected(path);
}

namespace {

// Split folder names that say which part of a corpus a directory holds rather than which corpus.
bool IsSplitName(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return name == "test" || name == "train" || name == "training" || name == "validation" ||
         name == "valid" || name == "dev" || name == "trial";
}

}  // namespace

std::string DatasetName(const std::string& path) {
  fs::path p = fs::absolute(fs::path(path)).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  if (fs::is_regular_file(p)) {
    const std::string name = p.filename().string();
    if (EndsWith(name, ".jsonl") || EndsWith(name, ".json")) return p.stem().string();
    p = p.parent_path();
  }
  std::string name = p.filename().string();
  if (IsSplitName(name) && !p.parent_path().filename().empty()) {
    name = p.parent_path().filename().string() + "/" + name;
  }
  return name;
}

namespace {

std::string Plural(std::size_t n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

}  // namespace

void Fail(std::string_view file, int line, std::string_view what, std::string_view expected) {
  if (line > 0) throw ImportFailure{Error::Input(fmt::format("{}:{}: {} (expected {})", file, line, what, expected))};
  throw ImportFailure{Error::Input(fmt::format("{}: {} (expected {})", file, what, expected))};
}

void FailCount(std::string_view file, std::size_t got, int line, std::size_t expected,
               std::string_view per) {
  const std::string want = fmt::format("{}, one per {}", Plural(expected, "line"), per);
  if (got > expected) Fail(file, line, "extra line", want);
  if (got == 0) Fail(file, 0, "no lines", want);
  Fail(file, line, "only " + Plural(got, "line"), want);
}

constexpr std::string_view kTextFile = "a UTF-8 text file";

std::optional<Error> ChangedWhileRead(std::span<const FileData> files) {
  for (const FileData& f : files) {
    if (f.source && f.source->Changed()) {
      return Error::Input(
          fmt::format("{}: changed while kplab read it (expected a file that stays as it is until "
                      "kplab has read it)",
                      f.path));
    }
  }
  return std::nullopt;
}

void CheckUnchanged(const FileData& file) {
  if (std::optional<Error> e = ChangedWhileRead(std::span(&file, 1))) throw ImportFailure{*e};
}

FileData ReadTextFile(const std::string& path, const std::string& rel_name) {
  FileData file;
  file.path = path;
  file.rel_name = rel_name;
  Result<std::shared_ptr<const FileBytes>> bytes = FileBytes::Open(path, kTextFile);
  if (!bytes) throw ImportFailure{bytes.error()};
  file.source = std::move(*bytes);
  file.bytes = file.source->view();
  // Windows editors start UTF-8 files with U+FEFF; glued to the first reference or id it would make
  // that one silently different (docs/formats.md).
  if (file.bytes.starts_with("\xEF\xBB\xBF")) {
    file.bytes.remove_prefix(3);
    file.bom = true;
  }
  if (!simdjson::validate_utf8(file.bytes.data(), file.bytes.size())) {
    // simdjson's check is the fast one; the codec names the first bad byte.
    std::size_t bad = file.bytes.size();
    ValidUtf8(file.bytes, &bad);
    const auto line = 1 + std::count(file.bytes.begin(), file.bytes.begin() + bad, '\n');
    CheckUnchanged(file);  // a file cut mid-character meanwhile: the change is the error, not the bytes
    Fail(path, static_cast<int>(line), "invalid UTF-8", "UTF-8 text");
  }
  for (std::size_t cr = file.bytes.find('\r'); cr != std::string::npos; cr = file.bytes.find('\r', cr + 1)) {
    if (cr + 1 < file.bytes.size() && file.bytes[cr + 1] == '\n') continue;
    const auto line = 1 + std::count(file.bytes.begin(), file.bytes.begin() + static_cast<std::ptrdiff_t>(cr), '\n');
    CheckUnchanged(file);
    Fail(path, static_cast<int>(line), "carriage return (CR) without a line feed after it",
         "LF or CRLF line ends; convert CR-only files with `tr '\\r' '\\n'`");
  }
  return file;
}

bool Present(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

std::filesystem::directory_iterator ListDirectory(const std::string& path) {
  if (Status st = GateFile(path, FileAccess::kRead); !st.ok()) throw ImportFailure{st.error()};
  return std::filesystem::directory_iterator(path);
}

void RequireFileOrDirectory(const std::string& path, std::string_view expected) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) Fail(path, 0, OpenProblem(errno, "no such file or directory"), expected);
  if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    Fail(path, 0, KindOf(st.st_mode) + ", not a regular file or directory", expected);
  }
}

LineIndex::LineIndex(std::string_view text) {
  // One pass, sixteen bytes at a time where SSE2 is there: a count of the lines first (to size the
  // list) and a library search per line cost 2.7 instructions a byte, a tenth of the instructions
  // of `kplab eval` on a million documents' 330 MB of lines. Each '\n' starts the line after it; a
  // text that ends with one has no empty line after it.
  const char* p = text.data();
  const std::size_t n = text.size();
  if (n == 0) return;
  starts_.reserve(n / 64 + 16);  // a hint (Meng-2017 lines are hundreds of bytes); the list grows as needed
  starts_.push_back(0);
  std::size_t i = 0;
#if defined(__SSE2__)
  const __m128i newline = _mm_set1_epi8('\n');
  for (; i + 16 <= n; i += 16) {
    const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    for (auto marks = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(w, newline))); marks != 0;
         marks &= marks - 1) {
      starts_.push_back(i + static_cast<std::size_t>(__builtin_ctz(marks)) + 1);
    }
  }
#endif
  for (; i < n; ++i) {
    if (p[i] == '\n') starts_.push_back(i + 1);
  }
  if (starts_.back() == n) starts_.pop_back();  // the final '\n' starts no line
}

void ParsePredictionLine(std::size_t i, std::string_view line, RawPrediction& pred,
                         std::vector<std::string_view>& pieces) {
  pieces.clear();
  SplitChar(line, ';', pieces);
  pred.phrases.assign(pieces.begin(), pieces.end());
  pred.from_line = true;
  pred.loc.line = static_cast<int>(i + 1);
}

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  lines.reserve(std::count(text.begin(), text.end(), '\n') + 1);
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    const std::size_t next = end == std::string_view::npos ? text.size() : end + 1;
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (end < text.size() && !line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = next;
  }
  return lines;
}

void SplitChar(std::string_view s, char sep, std::vector<std::string_view>& out) {
  // Keyphrase pieces are short: a library search per piece (memchr) cost more in its call than in its
  // search, so the line is scanned once, sixteen bytes at a time where SSE2 is there (every x86-64),
  // else eight at a time (the separator's bytes are the zero bytes of w ^ pattern, which the borrow
  // trick marks: the lowest mark exactly, a higher one maybe falsely after it, so each is checked).
  const char* p = s.data();
  const std::size_t n = s.size();
  std::size_t start = 0, i = 0;
  auto cut = [&](std::size_t k) {  // start <= k <= n: no bounds check (substr's) needed
    out.emplace_back(p + start, k - start);
    start = k + 1;
  };
#if defined(__SSE2__)
  const __m128i pattern = _mm_set1_epi8(sep);
  for (; i + 16 <= n; i += 16) {
    const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    for (auto marks = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(w, pattern))); marks != 0;
         marks &= marks - 1) {
      cut(i + static_cast<std::size_t>(__builtin_ctz(marks)));
    }
  }
#endif
  constexpr std::uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
  const std::uint64_t pattern8 = kOnes * static_cast<unsigned char>(sep);
  for (; i + 8 <= n; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    w ^= pattern8;
    for (std::uint64_t marks = (w - kOnes) & ~w & kHigh; marks != 0; marks &= marks - 1) {
      const std::size_t k = i + static_cast<std::size_t>(__builtin_ctzll(marks)) / 8;
      if (p[k] == sep) cut(k);
    }
  }
  for (; i < n; ++i) {
    if (p[i] == sep) cut(i);
  }
  out.emplace_back(p + start, n - start);
}

std::string ContentHash(std::vector<const FileData*> files) {
  std::sort(files.begin(), files.end(),
            [](const FileData* a, const FileData* b) { return a->rel_name < b->rel_name; });
  Sha256 hasher;
  for (const FileData* f : files) {
    // The file as it is on disk: a stripped byte order mark still counts.
    const std::string_view bom = f->bom ? "\xEF\xBB\xBF" : "";
    hasher.Update(f->rel_name);
    hasher.Update(std::string_view("\0", 1));
    hasher.Update(std::to_string(bom.size() + f->bytes.size()));
    hasher.Update(std::string_view("\0", 1));
    hasher.Update(bom);
    hasher.Update(f->bytes);
  }
  return hasher.FinishHex();
}

}  // namespace io_internal

using io_internal::Fail;
using io_internal::ImportFailure;

const std::vector<std::string>& DatasetFormats() {
  static const std::vector<std::string> kFormats = {"meng",    "one2set", "kpeval", "hulth", "semeval",
                                                    "kptimes", "midas",   "taln",   "deepkpg"};
  return kFormats;
}

Status CheckRegularFile(const std::string& path, std::string_view expected) {
  // The gate first: a file the caller may not read is not even looked at.
  if (Status gate = GateFile(path, FileAccess::kRead); !gate.ok()) return gate;
  // A NUL would cut the name for the system anyway; the message shows what comes before it.
  const std::string_view shown = std::string_view(path).substr(0, path.find('\0'));
  auto fail = [&](std::string_view what) {
    return Error::Input(fmt::format("{}: {} (expected {})", shown, what, expected));
  };
  if (path.find('\0') != std::string::npos) return fail("path contains a NUL byte");
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return fail(io_internal::OpenProblem(errno, "no such file"));
  if (!S_ISREG(st.st_mode)) return fail(io_internal::KindOf(st.st_mode) + ", not a regular file");
  return Status::Ok();
}

namespace io_internal {

Result<OpenedFile> OpenRegularFile(const std::string& path, std::string_view expected) {
  if (Status st = CheckRegularFile(path, expected); !st.ok()) return st.error();
  auto fail = [&](std::string_view what) {
    return Error::Input(fmt::format("{}: {} (expected {})", path, what, expected));
  };
  // O_NONBLOCK: should the path have become a FIFO since the stat, open returns instead of waiting
  // for a writer, and fstat below refuses it.
  OpenedFile f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (f.fd < 0) return fail(io_internal::OpenProblem(errno, "no such file"));
  if (::fstat(f.fd, &f.st) != 0 || !S_ISREG(f.st.st_mode)) {
    ::close(f.fd);
    return fail("not a regular file");
  }
  return f;
}

Result<std::string> ReadOpenedFile(OpenedFile file, const std::string& path, std::string_view expected) {
  const int fd = file.fd;
  std::string bytes;
  int read_errno = 0;
  // The size is a hint: a file may grow or shrink while being read (and /proc files report 0). Once
  // the buffer is full, whether more follows is asked with a small read, so that a file of the size
  // stat gave is read into exactly its size (doubling the buffer there held twice the file: 0.3 GB for
  // a million documents' predictions).
  bytes.resize(static_cast<std::size_t>(file.st.st_size));
  std::size_t got = 0;
  while (true) {
    if (got == bytes.size()) {
      char probe[4096];
      ssize_t r;
      do r = ::read(fd, probe, sizeof probe);
      while (r < 0 && errno == EINTR);
      if (r < 0) read_errno = errno;
      if (r <= 0) break;
      bytes.resize(std::max<std::size_t>(bytes.size() * 2, 4096));
      std::memcpy(bytes.data() + got, probe, static_cast<std::size_t>(r));
      got += static_cast<std::size_t>(r);
      continue;
    }
    const ssize_t r = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) read_errno = errno;
    if (r <= 0) break;
    got += static_cast<std::size_t>(r);
  }
  ::close(fd);
  if (read_errno != 0) {
    return Error::Input(fmt::format("{}: cannot read ({}) (expected {})", path, std::strerror(read_errno), expected));
  }
  bytes.resize(got);
  return bytes;
}

}  // namespace io_internal

Result<std::string> ReadRegularFile(const std::string& path, std::string_view expected) {
  Result<io_internal::OpenedFile> opened = io_internal::OpenRegularFile(path, expected);
  if (!opened) return opened.error();
  return io_internal::ReadOpenedFile(*opened, path, expected);
}

Result<std::string> DetectDatasetFormat(const std::string& path) {
  try {
    return io_internal::DetectOrThrow(path);
  } catch (const ImportFailure& e) {
    return e.error;
  } catch (const std::filesystem::filesystem_error& e) {
    return Error::Input(path + ": " + e.what());
  }
}

Result<RawDataset> ImportDataset(const std::string& path, const DatasetOptions& options) {
  std::vector<io_internal::FileData> files;
  try {
    RawDataset out;
    out.path = path;
    io_internal::RequireFileOrDirectory(path, "a dataset file or directory");
    out.format = options.format.empty() ? io_internal::DetectOrThrow(path) : options.format;
    const auto& formats = DatasetFormats();
    if (std::find(formats.begin(), formats.end(), out.format) == formats.end()) {
      Fail(path, 0, fmt::format("unknown dataset format \"{}\"", out.format),
           "one of: " + io_internal::FormatList());
    }
    if (options.refs_stemmed && out.format == "semeval") {
      Fail(path, 0,
           "--refs-stemmed given for format \"semeval\", which reads it from the answer file's name "
           "(*.stem.final answers are stemmed)",
           "--refs-stemmed only with meng, one2set, kpeval, hulth or kptimes");
    }
    if (!options.references.empty() && out.format != "hulth" && out.format != "semeval") {
      Fail(path, 0,
           fmt::format("references file given for format \"{}\", whose files hold their own references",
                       out.format),
           "--references only with a text-file dataset: hulth or semeval");
    }
    if (!options.split.empty() && out.format != "midas" && out.format != "taln" && out.format != "deepkpg") {
      Fail(path, 0, fmt::format("split \"{}\" asked for, but format \"{}\" has no splits", options.split, out.format),
           "--split only with midas, taln or deepkpg");
    }
    if (out.format == "meng") {
      io_internal::ImportMeng(path, out, files);
    } else if (out.format == "one2set") {
      io_internal::ImportOne2Set(path, out, files);
    } else if (out.format == "hulth") {
      io_internal::ImportHulth(path, options, out, files);
    } else if (out.format == "semeval") {
      io_internal::ImportSemEval(path, options, out, files);
    } else if (out.format == "kpeval") {
      io_internal::ImportKpEval(path, out, files);
    } else if (out.format == "midas") {
      io_internal::ImportMidas(path, options, out, files);
    } else if (out.format == "taln") {
      io_internal::ImportTaln(path, options, out, files);
    } else if (out.format == "deepkpg") {
      io_internal::ImportDeepKpg(path, options, out, files);
    } else {
      io_internal::ImportKpTimes(path, out, files);
    }
    // A run over no documents would be stored with every aggregate undefined.
    if (out.docs.empty()) Fail(path, 0, "no documents", "a dataset with at least one document");
    if (!options.references.empty()) io_internal::ApplyPkeReferences(path, options.references, out, files);
    out.name = io_internal::DatasetName(path);
    if (options.refs_stemmed) {
      for (auto& d : out.docs) d.refs_stemmed = true;
    }
    std::vector<const io_internal::FileData*> read;
    for (const auto& f : files) {
      read.push_back(&f);
      out.files.push_back(f.path);
    }
    out.content_hash = io_internal::ContentHash(std::move(read));
    for (const auto& f : files) io_internal::CheckUnchanged(f);
    return out;
  } catch (const ImportFailure& e) {
    return io_internal::ChangedWhileRead(files).value_or(e.error);
  } catch (const std::filesystem::filesystem_error& e) {
    return io_internal::ChangedWhileRead(files).value_or(Error::Input(path + ": " + e.what()));
  }
}

Result<RawPredictions> ImportPredictions(const std::string& path, const std::string& format) {
  io_internal::FileData file;
  try {
    namespace fs = std::filesystem;
    RawPredictions out;
    out.path = path;
    std::string f = format;
    if (f.empty()) {
      f = io_internal::EndsWith(path, ".jsonl") || io_internal::EndsWith(path, ".json") ? "jsonl"
                                                                                        : "lines";
    }
    if (f != "lines" && f != "jsonl" && f != "kpeval" && f != "tokens" && f != "hf" && f != "opennmt-kpg") {
      Fail(path, 0, fmt::format("unknown prediction format \"{}\"", f),
           "one of: lines, jsonl, kpeval, tokens, hf, opennmt-kpg");
    }
    file = io_internal::ReadTextFile(path, fs::path(path).filename().string());
    // A detected JSONL file whose first object has "logprobs" holds generated tokens
    // (docs/calibration.md).
    if (format.empty() && f == "jsonl" && io_internal::IsTokenPredictionFile(file)) f = "tokens";
    // Records with "pred_sents" are OpenNMT-kpg output; records with "keyphrases" (and no
    // "predictions") Hugging Face-style predictions keyed by id.
    if (format.empty() && f == "jsonl") {
      if (std::string r = io_internal::DetectPredictionRecords(file); !r.empty()) f = r;
    }
    if (f == "hf") {
      out.format = "hf";
      io_internal::ParseHfPredictions(file, out);
    } else if (f == "opennmt-kpg") {
      out.format = "opennmt-kpg";
      io_internal::ParseOpenNmtKpgPredictions(file, out);
    } else if (f == "tokens") {
      out.format = "tokens";
      io_internal::ParseTokenPredictions(file, out);
    } else if (f == "lines") {
      out.format = "lines";
      const io_internal::LineIndex lines(file.bytes);
      out.docs.resize(lines.size());
      std::vector<std::string_view> pieces;
      const SharedPath loc_file(path);  // one copy of the name for every line
      for (std::size_t i = 0; i < lines.size(); ++i) {
        io_internal::ParsePredictionLine(i, lines.At(file.bytes, i), out.docs[i], pieces);
        out.docs[i].loc.file = loc_file;
      }
    } else {
      out.format = "jsonl";
      io_internal::ParseJsonlPredictions(file, out);
    }
    if (out.docs.empty()) Fail(path, 0, "no prediction lines", "one line per document");
    out.content_hash = io_internal::ContentHash({&file});
    io_internal::CheckUnchanged(file);
    return out;
  } catch (const ImportFailure& e) {
    return io_internal::ChangedWhileRead(std::span(&file, 1)).value_or(e.error);
  }
}

Result<RawPredictions> AlignPredictions(const RawDataset& dataset, RawPredictions predictions) {
  try {
    const std::size_t n = predictions.docs.size(), m = dataset.docs.size();
    const std::string per = "document of " + dataset.path;
    // Ids on some lines only: aligning by line order would pair the rest with the wrong documents.
    for (std::size_t i = 1; i < n; ++i) {
      const RawPrediction& first = predictions.docs[0];
      const RawPrediction& p = predictions.docs[i];
      if (first.doc_id.empty() == p.doc_id.empty()) continue;
      const std::string what = first.doc_id.empty() ? "an \"id\" field, but line {} has none"
                                                     : "no \"id\" field, but line {} has one";
      Fail(p.loc.file, p.loc.line, fmt::format(fmt::runtime(what), first.loc.line),
           "\"id\" on every line or on none");
    }
    const bool by_id = (predictions.format == "jsonl" || predictions.format == "tokens" ||
                        predictions.format == "hf") &&
                       n > 0 &&
                       std::all_of(predictions.docs.begin(), predictions.docs.end(),
                                   [](const RawPrediction& p) { return !p.doc_id.empty(); });
    if (!by_id) {
      if (n != m) {
        const int line =
            n < m ? (n == 0 ? 0 : predictions.docs.back().loc.line) : predictions.docs[m].loc.line;
        io_internal::FailCount(predictions.path, n, line, m, per);
      }
      return predictions;
    }
    std::unordered_map<std::string_view, std::size_t> index;
    index.reserve(m);
    for (std::size_t j = 0; j < m; ++j) {
      const RawDoc& d = dataset.docs[j];
      if (!index.emplace(d.id, j).second) {
        Fail(d.loc.file, d.loc.line, fmt::format("second document with id \"{}\"", d.id),
             "unique document ids to align predictions by id");
      }
    }
    constexpr std::size_t kNone = static_cast<std::size_t>(-1);
    std::vector<std::size_t> slot(m, kNone);
    for (std::size_t i = 0; i < n; ++i) {
      const RawPrediction& p = predictions.docs[i];
      const auto it = index.find(p.doc_id);
      if (it == index.end()) {
        Fail(p.loc.file, p.loc.line, fmt::format("unknown document id \"{}\"", p.doc_id),
             "an id of a document of " + dataset.path);
      }
      if (slot[it->second] != kNone) {
        Fail(p.loc.file, p.loc.line, fmt::format("second prediction line for \"{}\"", p.doc_id),
             "one line per " + per);
      }
      slot[it->second] = i;
    }
    for (std::size_t j = 0; j < m; ++j) {
      if (slot[j] == kNone) {
        Fail(predictions.path, 0,
             fmt::format("no prediction line for document \"{}\"", dataset.docs[j].id),
             "one line per " + per);
      }
    }
    std::vector<RawPrediction> ordered;
    ordered.reserve(m);
    for (std::size_t j = 0; j < m; ++j) ordered.push_back(std::move(predictions.docs[slot[j]]));
    predictions.docs = std::move(ordered);
    return predictions;
  } catch (const ImportFailure& e) {
    return e.error;
  }
}

}  // namespace kplab
