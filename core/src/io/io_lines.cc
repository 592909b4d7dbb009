// LineDocuments: a Meng-2017 dataset and its "lines" predictions, checked as the importers check them but
// parsed a document at a time by whoever builds the corpus (kplab/io.h).
#include <sys/mman.h>

#include <exception>
#include <filesystem>
#include <system_error>
#include <thread>

#include "io/io_internal.h"
#include "kplab/file_gate.h"
#include "kplab/io.h"

namespace kplab {

using io_internal::Fail;
using io_internal::FileData;
using io_internal::ImportFailure;
using io_internal::LineIndex;

struct LineDocuments::Files {
  RawDataset dataset;         // without docs
  RawPredictions predictions;  // without docs
  std::vector<FileData> data;  // the keys file, then the text file if any
  FileData pred;
  io_internal::PairLines lines;
  LineIndex pred_lines;
  SharedPath doc_loc, pred_loc;
  bool refs_stemmed = false;
};

LineDocuments::LineDocuments(std::unique_ptr<Files> files) : f_(std::move(files)) {}
LineDocuments::LineDocuments(LineDocuments&&) noexcept = default;
LineDocuments& LineDocuments::operator=(LineDocuments&&) noexcept = default;
LineDocuments::~LineDocuments() = default;

namespace {

// The first of the files (the dataset's, then the predictions) that changed while read, as an error.
std::optional<Error> ChangedWhileRead(std::span<const FileData> data, const FileData& pred) {
  if (auto e = io_internal::ChangedWhileRead(data)) return e;
  return io_internal::ChangedWhileRead(std::span(&pred, 1));
}

bool PredictionsAreLines(const std::string& path, const std::string& format) {
  if (!format.empty()) return format == "lines";
  return !io_internal::EndsWith(path, ".jsonl") && !io_internal::EndsWith(path, ".json");
}

}  // namespace

bool LineDocuments::Handles(const std::string& dataset_path, const DatasetOptions& options,
                            const std::string& predictions_path, const std::string& predictions_format) {
  if (predictions_path.empty() || !PredictionsAreLines(predictions_path, predictions_format)) return false;
  if (!options.references.empty() || !options.split.empty()) return false;  // errors for meng: the importer's
  try {
    io_internal::RequireFileOrDirectory(dataset_path, "a dataset file or directory");
    const std::string format = options.format.empty() ? io_internal::DetectOrThrow(dataset_path) : options.format;
    return format == "meng";
  } catch (const ImportFailure&) {
    return false;
  } catch (const std::filesystem::filesystem_error&) {
    return false;
  }
}

Result<LineDocuments> LineDocuments::Open(const std::string& dataset_path, const DatasetOptions& options,
                                          const std::string& predictions_path, int threads, bool hash) {
  namespace fs = std::filesystem;
  auto f = std::make_unique<Files>();
  // The predictions file is read and checked meanwhile, as `kplab eval` reads it beside an import; a
  // dataset error still comes first.
  std::exception_ptr pred_error;
  // On the reader thread too, the file is opened in the caller's context (kplab/file_gate.h).
  auto read_predictions = [&, grants = CurrentFileGrants()] {
    FileScope scope(grants);
    try {
      // mapped-read: LineDocuments::CheckUnchanged checks it (BuildCorpus, once the documents are built)
      f->pred = io_internal::ReadTextFile(predictions_path, fs::path(predictions_path).filename().string());
      f->pred_lines = LineIndex(f->pred.bytes);
      // Hashed here, beside the dataset's hashing (a 179 MB file takes a tenth of a second).
      if (hash && f->pred_lines.size() > 0) f->predictions.content_hash = io_internal::ContentHash({&f->pred});
    } catch (...) {
      pred_error = std::current_exception();
    }
  };
  std::jthread reader;
  if (threads != 1) {
    try {
      reader = std::jthread(read_predictions);
    } catch (const std::system_error&) {
      // No thread: read after the dataset.
    }
  }
  try {
    RawDataset& ds = f->dataset;
    ds.path = dataset_path;
    io_internal::RequireFileOrDirectory(dataset_path, "a dataset file or directory");
    ds.format = "meng";
    f->lines = io_internal::ReadLinePair(dataset_path, "_context.txt", "_allkeywords.txt", f->data);
    if (f->lines.keys.size() == 0) Fail(dataset_path, 0, "no documents", "a dataset with at least one document");
    ds.name = io_internal::DatasetName(dataset_path);
    f->refs_stemmed = options.refs_stemmed;
    std::vector<const FileData*> read;
    for (const auto& file : f->data) {
      read.push_back(&file);
      ds.files.push_back(file.path);
    }
    if (hash) ds.content_hash = io_internal::ContentHash(std::move(read));
    f->doc_loc = SharedPath(f->lines.text ? f->data[1].path : f->data[0].path);
  } catch (const ImportFailure& e) {
    return io_internal::ChangedWhileRead(f->data).value_or(e.error);
  } catch (const fs::filesystem_error& e) {
    return io_internal::ChangedWhileRead(f->data).value_or(Error::Input(dataset_path + ": " + e.what()));
  }
  if (reader.joinable()) {
    reader.join();
  } else {
    read_predictions();
  }
  try {
    if (pred_error) std::rethrow_exception(pred_error);
  } catch (const std::bad_alloc&) {
    // As `kplab eval` reports it for an import (evaluate.cc), not as an internal error.
    return Error::Limit(predictions_path + ": out of memory while reading the predictions");
  } catch (const ImportFailure& e) {
    return io_internal::ChangedWhileRead(std::span(&f->pred, 1)).value_or(e.error);
  }
  try {
    RawPredictions& p = f->predictions;
    p.path = predictions_path;
    p.format = "lines";
    if (f->pred_lines.size() == 0) Fail(predictions_path, 0, "no prediction lines", "one line per document");
    f->pred_loc = SharedPath(predictions_path);
    // AlignPredictions of lines without ids: one line per document, in order.
    const std::size_t n = f->pred_lines.size(), m = f->lines.keys.size();
    if (n != m) {
      io_internal::FailCount(predictions_path, n, static_cast<int>(n < m ? n : m + 1), m,
                             "document of " + dataset_path);
    }
  } catch (const ImportFailure& e) {
    // Counts of lines made from zeros (a file cut meanwhile) are the change's, not the files'.
    return ChangedWhileRead(f->data, f->pred).value_or(e.error);
  }
  return LineDocuments(std::move(f));
}

std::size_t LineDocuments::size() const { return f_->lines.keys.size(); }
const RawDataset& LineDocuments::dataset() const { return f_->dataset; }
const RawPredictions& LineDocuments::predictions() const { return f_->predictions; }
bool LineDocuments::refs_stemmed() const { return f_->refs_stemmed; }

void LineDocuments::View(std::size_t i, Lines& out) const {
  const Files& f = *f_;
  const std::string_view text_line = f.lines.text ? f.lines.text->At(f.data[1].bytes, i) : std::string_view();
  io_internal::SplitLinePairDoc(f.lines.keys.At(f.data[0].bytes, i), f.lines.text ? &text_line : nullptr, out);
  out.predictions.clear();
  io_internal::SplitChar(f.pred_lines.At(f.pred.bytes, i), ';', out.predictions);
}

void LineDocuments::Read(std::size_t i, RawDoc& doc, RawPrediction& pred) const {
  thread_local Lines lines;
  const Files& f = *f_;
  const std::string_view text_line = f.lines.text ? f.lines.text->At(f.data[1].bytes, i) : std::string_view();
  io_internal::ParseLinePairDoc(i, f.lines.keys.At(f.data[0].bytes, i), f.lines.text ? &text_line : nullptr, doc,
                                lines);
  doc.refs_stemmed = f.refs_stemmed;
  // The path's one shared copy: assigned once to an object that is read into again and again.
  if (&doc.loc.file.str() != &f.doc_loc.str()) doc.loc.file = f.doc_loc;
  io_internal::ParsePredictionLine(i, f.pred_lines.At(f.pred.bytes, i), pred, lines.predictions);
  if (&pred.loc.file.str() != &f.pred_loc.str()) pred.loc.file = f.pred_loc;
}

Status LineDocuments::CheckUnchanged() const {
  if (auto e = ChangedWhileRead(f_->data, f_->pred)) return *e;
  return Status::Ok();
}

void LineDocuments::Release(std::size_t begin, std::size_t end) {
  if (begin >= end) return;
  // Whole 2 MiB extents only, aligned as the system's huge pages are: a file's buffer of a few MB is
  // backed by huge pages (mimalloc asks for them), and giving back 4 KiB pages inside one splits it, so
  // that whatever reuses that memory after the buffer is freed (the metrics' slot columns) is faulted in
  // 4 KiB at a time (design note 62). Files under 2 MiB, and the edges of a range, are kept.
  constexpr std::uintptr_t kExtent = std::uintptr_t{2} << 20;
  auto release = [&](std::string_view bytes, const LineIndex& lines) {
    const std::size_t from = lines.Start(begin);
    const std::size_t to = end < lines.size() ? lines.Start(end) : bytes.size();
    // Only the extents wholly inside these documents' lines: the neighbours' bytes stay. The bytes are
    // never read again once their documents are built. A copy read into memory is the string's own heap
    // block (freeing it later returns the block as usual); a mapped file's pages stay in the page cache,
    // and leave only this process's resident memory.
    const auto base = reinterpret_cast<std::uintptr_t>(bytes.data());
    const std::uintptr_t lo = (base + from + kExtent - 1) / kExtent * kExtent;
    const std::uintptr_t hi = (base + to) / kExtent * kExtent;
    if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
  };
  release(f_->data[0].bytes, f_->lines.keys);
  if (f_->lines.text) release(f_->data[1].bytes, *f_->lines.text);
  release(f_->pred.bytes, f_->pred_lines);
}

}  // namespace kplab
