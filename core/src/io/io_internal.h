// Internals shared by the importers (io/*.cc) and the reformulation-pair reader (homog/homog_io.cc).
// Not installed; tests include it by relative path.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kplab/io.h"

namespace kplab::io_internal {

// Importers report a failure by throwing this; the public entry points return its error. It never
// leaves the io*.cc files. It carries the error's kind: Fail throws input, and an error of another kind
// thrown as it (a path the file gate refuses, usage) comes out with that kind (design note 52).
struct ImportFailure {
  Error error;
};

// "FILE:LINE: what (expected ...)"; LINE is left out when line == 0 (a whole-file problem).
[[noreturn]] void Fail(std::string_view file, int line, std::string_view what,
                       std::string_view expected);

// One file that an importer read. rel_name is the name that goes into the content hash.
struct FileData;
class FileBytes;
const SharedPath& LocPath(const FileData& file);

struct FileData {
  std::string path;                         // as shown in messages (the user's path joined with the file name)
  std::string rel_name;                     // relative to the dataset root, '/'-separated
  std::string_view bytes;                   // without a leading UTF-8 byte order mark: in `source`
  bool bom = false;                         // the file started with one (it still counts in the content hash)
  std::shared_ptr<const FileBytes> source;  // the file's bytes, mapped or read (io/file_bytes.h)
  // The path, shared by the SourceLoc of every record read from the file (LocPath).
  mutable SharedPath loc_path;
  mutable bool loc_path_set = false;
};

// FileData::path as one SharedPath for all of the file's records (made on first use).
inline const SharedPath& LocPath(const FileData& file) {
  if (!file.loc_path_set) {
    file.loc_path = SharedPath(file.path);
    file.loc_path_set = true;
  }
  return file.loc_path;
}

// Reads a whole regular file (ReadRegularFile: directories, FIFOs and devices are refused before they
// are opened), strips a UTF-8 byte order mark at its start and checks that it is UTF-8 (the error
// names the line of the first bad byte) with LF or CRLF line ends: a CR not followed by LF (classic
// Mac OS line ends) is an error naming its line, since every reader splits lines at LF only.
// A file of 64 KiB or more may be mapped rather than read (kplab/io.h, SetMappedFileReads): a reader
// that has finished with its bytes calls CheckUnchanged before it trusts what it read.
FileData ReadTextFile(const std::string& path, const std::string& rel_name);

// Throws "PATH: changed while kplab read it (expected ...)" when a mapped file was cut shorter, or its
// size, modification time or change time moved, since ReadTextFile mapped it (FileBytes::Changed). Nothing for a
// file read into memory: its bytes are kplab's own copy.
void CheckUnchanged(const FileData& file);
// The error CheckUnchanged would throw for the first of files that changed. An import that failed asks
// this first: a file cut shorter reads as zeros at its end, and the failure they caused is not the
// file's own.
std::optional<Error> ChangedWhileRead(std::span<const FileData> files);

// The entries of a directory, once the caller's context may read it (kplab/file_gate.h); throws
// the gate's usage error "PATH: outside the directories scripts may read (...)" otherwise. Every listing of the
// importers goes through it, so a script lists no directory it was not granted.
std::filesystem::directory_iterator ListDirectory(const std::string& path);

// Whether anything (even a dangling symbolic link) is at path. Listing code uses it rather than
// fs::is_regular_file so that a FIFO, device or link loop under an expected name is read, and
// refused with its own message, instead of being skipped without a word.
bool Present(const std::string& path);

// Throws an input error unless path names a regular file or a directory: "PATH: no such file or
// directory", "PATH: symbolic link loop", "PATH: a FIFO, not a regular file or directory".
void RequireFileOrDirectory(const std::string& path, std::string_view expected);

// Lines as Python's readlines() sees them, without the trailing "\n" or "\r\n". A final newline
// does not start a further (empty) line, so "" has 0 lines and "a\n\n" has 2. Views point into
// text.
std::vector<std::string_view> SplitLines(std::string_view text);

// Where each line of a text starts (8 bytes a line rather than a view's 16): At(text, i) is line i as
// SplitLines gives it, without "\n" or "\r\n".
class LineIndex {
 public:
  LineIndex() = default;
  explicit LineIndex(std::string_view text);
  std::size_t size() const { return starts_.size(); }
  std::string_view At(std::string_view text, std::size_t i) const {
    const std::size_t start = starts_[i];
    const std::size_t next = i + 1 < starts_.size() ? starts_[i + 1] : text.size();
    // A line ends at its "\n" (the next line's start - 1), or at the end of a text without a final one.
    const bool newline = next > start && text[next - 1] == '\n';
    std::string_view line = text.substr(start, next - start - (newline ? 1 : 0));
    if (newline && !line.empty() && line.back() == '\r') line.remove_suffix(1);
    return line;
  }
  std::size_t Start(std::size_t i) const { return starts_[i]; }

 private:
  std::vector<std::uint64_t> starts_;
};

// Python s.split(sep) for a one-character separator; appends views into s to out.
void SplitChar(std::string_view s, char sep, std::vector<std::string_view>& out);

// SHA-256 hex over (rel_name, size, bytes) of each file, in rel_name order.
std::string ContentHash(std::vector<const FileData*> files);

// "FILE:N: only N lines (expected M lines, one per <per>)" or "FILE:M+1: extra line (...)".
[[noreturn]] void FailCount(std::string_view file, std::size_t got, int last_line,
                            std::size_t expected, std::string_view per);

inline bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Order of file stems as a person numbers them: digit runs compare as numbers ("C-3" < "C-14",
// "193" < "1930"); ties fall back to plain string order so the order is total.
bool NaturalLess(std::string_view a, std::string_view b);

// Splits a pre-tokenized source at the separator found at pos (sep_len bytes) into doc.title and
// doc.body, dropping one space on each side of it ("title . <eos> abstract"), and records
// separator.
void SplitTitleBody(std::string_view src, std::size_t pos, std::size_t sep_len,
                    std::string_view separator, RawDoc& doc);
// The title and body SplitTitleBody assigns, as views into src.
std::pair<std::string_view, std::string_view> TitleAndBody(std::string_view src, std::size_t pos, std::size_t sep_len);

// Format parsers (io_text.cc, io_json.cc). root is the directory that rel names are relative to.
// The dataset format at path (DetectDatasetFormat), or throws ImportFailure.
std::string DetectOrThrow(const std::string& path);
// RawDataset::name for path ("inspec", "kp20k/test").
std::string DatasetName(const std::string& path);

// The line-aligned file pair of Meng-2017 / kg_one2set, read and checked (same line counts): files
// gets the keys file, then the text file if there is one.
struct PairLines {
  LineIndex keys;
  std::optional<LineIndex> text;  // none: the dataset ships references only
};
PairLines ReadLinePair(const std::string& path, std::string_view text_suffix, std::string_view keys_suffix,
                       std::vector<FileData>& files);
// A line pair's document as views into its lines (text_line null without a text file): title, body
// and separator as SplitTitleBody cuts them at the first "<eos>", the references as the key line's
// split(';'). Every field but predictions is assigned.
void SplitLinePairDoc(std::string_view key_line, const std::string_view* text_line, LineDocuments::Lines& out);
// Document i of a line pair: SplitLinePairDoc copied into doc. Every field but loc.file is assigned, so
// one RawDoc can be read into again and again. lines is scratch.
void ParseLinePairDoc(std::size_t i, std::string_view key_line, const std::string_view* text_line, RawDoc& doc,
                      LineDocuments::Lines& lines);
// Line i of a "lines" predictions file, as ImportPredictions reads it (every field but loc.file).
void ParsePredictionLine(std::size_t i, std::string_view line, RawPrediction& pred,
                         std::vector<std::string_view>& pieces);

void ImportMeng(const std::string& path, RawDataset& out, std::vector<FileData>& files);
void ImportOne2Set(const std::string& path, RawDataset& out, std::vector<FileData>& files);
void ImportHulth(const std::string& path, const DatasetOptions& options, RawDataset& out,
                 std::vector<FileData>& files);
void ImportSemEval(const std::string& path, const DatasetOptions& options, RawDataset& out,
                   std::vector<FileData>& files);
void ImportKpEval(const std::string& path, RawDataset& out, std::vector<FileData>& files);
void ImportKpTimes(const std::string& path, RawDataset& out, std::vector<FileData>& files);
void ParseJsonlPredictions(const FileData& file, RawPredictions& out);
// The "tokens" prediction format (io_tokens.cc, docs/calibration.md).
void ParseTokenPredictions(const FileData& file, RawPredictions& out);
// Whether the first non-blank line of a JSONL file is an object with "logprobs" (the "tokens" format).
bool IsTokenPredictionFile(const FileData& file);

// Returns "kpeval", "kptimes", "midas", "taln" or "" from the first record of a JSONL file or JSON array.
std::string DetectJsonlFormat(const std::string& path);
std::string DetectRecordFormat(const FileData& file);
// "opennmt-kpg", "hf" or "" from the first record of a predictions file (io_records.cc).
std::string DetectPredictionRecords(const FileData& file);

// Record formats (io_records.cc, docs/formats.md).
void ImportMidas(const std::string& path, const DatasetOptions& options, RawDataset& out,
                 std::vector<FileData>& files);
void ImportTaln(const std::string& path, const DatasetOptions& options, RawDataset& out,
                std::vector<FileData>& files);
void ImportDeepKpg(const std::string& path, const DatasetOptions& options, RawDataset& out,
                   std::vector<FileData>& files);
// Replaces the references of out's documents by those of pke's reference JSON at ref_path.
void ApplyPkeReferences(const std::string& dataset_path, const std::string& ref_path, RawDataset& out,
                        std::vector<FileData>& files);
void ParseHfPredictions(const FileData& file, RawPredictions& out);
void ParseOpenNmtKpgPredictions(const FileData& file, RawPredictions& out);

}  // namespace kplab::io_internal
