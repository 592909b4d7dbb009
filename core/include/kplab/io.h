// Importers for the dataset and prediction formats keyphrase researchers have (shared/data/README.md).
// Importers only parse: they keep strings as the file has them (no lower-casing, stripping or stemming)
// so that each profile can apply its own conventions (see profile.h). A file that is wrong in any way
// yields an Error "FILE:LINE: what is wrong (expected ...)" and nothing is imported.
//
// Threads: no shared state but one switch (SetMappedFileReads, an atomic flag, and the SIGBUS handler
// that mapping installs): the importers may run on several threads at once on different files; a
// LineDocuments is built by the threads of one BuildCorpus, each document by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kplab/result.h"
#include "kplab/string_list.h"
#include "kplab/sha256.h"  // Sha256Hex, declared here before sha256.h existed

namespace kplab {

// A file name shared by every record read from that file: a copy is a reference count, not a heap
// block per document (a million documents from one file held a million copies of its path).
class SharedPath {
 public:
  SharedPath() = default;
  SharedPath(std::string s) : p_(std::make_shared<const std::string>(std::move(s))) {}  // NOLINT: implicit
  SharedPath(const char* s) : SharedPath(std::string(s)) {}                            // NOLINT: implicit
  const std::string& str() const { return p_ ? *p_ : Empty(); }
  operator const std::string&() const { return str(); }  // NOLINT: reads as the std::string it was
  operator std::string_view() const { return str(); }    // NOLINT
  bool empty() const { return str().empty(); }
  friend bool operator==(const SharedPath& a, const std::string& b) { return a.str() == b; }
  friend std::ostream& operator<<(std::ostream& os, const SharedPath& p) { return os << p.str(); }

 private:
  static const std::string& Empty() {
    static const std::string empty;
    return empty;
  }
  std::shared_ptr<const std::string> p_;
};

struct SourceLoc {
  SharedPath file;
  int line = 0;  // 1-based; 0 = whole file
};

struct RawDoc {
  std::string id;     // from the file where it has one, else "1", "2", ... (line order)
  std::string title;  // raw text before the title/body separator ("" if the format has none)
  std::string body;   // raw text after it (abstract or full text)
  // The separator found in a pre-tokenized source line ("<eos>", "[sep]"), or "" if none.
  std::string separator;
  bool pretokenized = false;  // Meng-2017, kg_one2set, KPEval: lower-cased, space-tokenized text
  // False when the dataset ships references only (Meng-2017 kp20k has no *_context.txt): title and
  // body are then empty and not the document's text, so presence cannot be decided.
  bool has_text = true;
  // Reference keyphrases in file order. For ';'-line formats, exactly the pieces of line.split(';')
  // (unstripped, so profiles can apply their own strip/empty rules). Each reference is a list of
  // alternatives; the first is the primary form (SemEval '+', KPTimes variant lists).
  std::vector<std::vector<std::string>> refs;
  bool refs_stemmed = false;  // references are released Porter-stemmed (SemEval *.stem.final)
  SourceLoc loc;
};

struct RawDataset {
  std::string path;    // as given by the user
  std::string format;  // one of DatasetFormats()
  std::string name;    // short name derived from the path (e.g. "inspec")
  std::vector<RawDoc> docs;
  // SHA-256 (hex) over the bytes of every file read, in a fixed order, with their relative names.
  std::string content_hash;
  std::vector<std::string> files;  // paths of the files read, as shown in messages
};

// Token-level probabilities of one generated keyphrase (prediction format "tokens",
// docs/calibration.md): the tokens between two delimiters, without the delimiter or end tokens.
struct TokenProbs {
  std::vector<std::string> tokens;        // as generated, subword markers kept
  std::vector<double> logprobs;           // ln p(token | source, everything generated before it)
  std::vector<std::uint8_t> word_start;   // 1 where a token begins a word (from the subword markers)
  int words = 0;                          // words of the detokenized keyphrase, split on spaces
};

struct RawPrediction {
  // Keyphrases in rank order. For ';'-line files, exactly the pieces of line.split(';'), including a
  // "<peos>" piece if the line has one and the pieces of an empty line ({""}).
  StringList phrases;
  std::vector<double> scores;  // optional per-phrase scores (JSONL), empty if none
  std::string doc_id;          // JSONL "id" if present, else ""
  SourceLoc loc;
  // The phrases are the pieces of a ';'-joined prediction line (format "lines", or a line given to a
  // library entry point), as opposed to a list the user wrote out (JSONL). Profiles whose peer never
  // reads such lines itself drop their "<peos>" marker (docs/profiles.md, peos "piece_in_lines").
  bool from_line = false;
  // Format "tokens" only: one entry per phrase (same order), and whether the decoder was set-style
  // (One2Set: each keyphrase decoded from its own control code, conditioned on no other keyphrase).
  std::vector<TokenProbs> token_probs;
  bool one2set = false;
  // Format "tokens" only: the log-probability of every generated token of the line in order (One2Set:
  // slot after slot), delimiters and end tokens included, the tokens of the optional "padding" list
  // left out: what whole-sequence perplexity (seed 001 Eq. 1) is taken over.
  std::vector<double> sequence_logprobs;
};

struct RawPredictions {
  std::string path;
  std::string format;  // "lines", "jsonl" or "tokens"
  std::vector<RawPrediction> docs;
  std::string content_hash;
};

// Dataset formats: "meng" (dir with *_context.txt + *_allkeywords.txt, or either file),
// "one2set" (dir with *src.txt + *trg.txt), "kpeval" (JSONL source/target[/predictions]),
// "hulth" (dir of <id>.abstr + <id>.uncontr / .contr), "semeval" (dir with <id>.txt.final texts + an
// answer file), "kptimes" (JSONL title/abstract/keyword), "midas" (Hugging Face midas/* records: id,
// document tokens, extractive/abstractive keyphrases), "taln" (Hugging Face taln-ls2n/* records: id,
// title, abstract or text, keyphrases), "deepkpg" (DeepKPG/KPEval test.source + test.target lines).
// The Hugging Face formats read JSON Lines or a JSON array of records (datasets' to_json).
const std::vector<std::string>& DatasetFormats();

struct DatasetOptions {
  std::string format;      // "" = auto-detect from the path
  std::string hulth_keys;  // "uncontr" (default) or "contr" or "both"
  // SemEval references: "combined" (default), "author" or "reader" (<split>_answer/<split>.<name>
  // [.stem].final beside the text directory, the stemmed file preferred), "liaad" (liaad_keys/<id>.key
  // beside it), or the path of an answer file or of a directory of <id>.key files. See docs/formats.md.
  std::string semeval_answers;
  // The references are released Porter-stemmed (Meng-2017's SemEval gold): match them as given, stem
  // only predictions and source (kenchan0226's -target_already_stemmed). Sets RawDoc::refs_stemmed on
  // every document; an error for "semeval", whose importer knows it from the answer file's name.
  bool refs_stemmed = false;
  // Which split to import: records whose "split" field equals it (midas, taln), or the file pair
  // <split>.source/<split>.target of a DeepKPG directory. "" = the only one there is; several are an
  // error listing them rather than a mix.
  std::string split;
  // pke's reference JSON ({id: [[keyphrase, variant...], ...]}) to use as the references of a text-file
  // dataset (hulth, semeval), whose documents' ids are their file stems; its own key files are then
  // not read. References are stemmed when the file name contains ".stem.".
  std::string references;
};

// Detects the dataset format from the path (directory contents, file names, first JSON line).
Result<std::string> DetectDatasetFormat(const std::string& path);

Result<RawDataset> ImportDataset(const std::string& path, const DatasetOptions& options = {});

// Prediction formats: "lines" (one document a line, ';'-separated, aligned with the dataset),
// "jsonl" (one JSON object a line: {"id"?: str, "predictions": [str | [str, score] | {"phrase","score"}]}),
// "kpeval" (KPEval JSONL with a "predictions" field), "tokens" (JSONL with generated tokens and their
// log-probabilities, docs/calibration.md; detected from a *.jsonl file whose first object has "logprobs"),
// "hf" (records keyed by "id" with a "keyphrases" list, JSON Lines or a JSON array), "opennmt-kpg"
// (OpenNMT-kpg's JSONL output: "pred_sents" token lists in the model's order, "pred_scores").
Result<RawPredictions> ImportPredictions(const std::string& path, const std::string& format = "");

// Checks that predictions line up with the dataset (same count, or same ids for JSONL with ids) and
// reorders them to dataset order. Error names the prediction file and line.
Result<RawPredictions> AlignPredictions(const RawDataset& dataset, RawPredictions predictions);

// A one-document-a-line dataset (Meng-2017: keywords, optional context) with its "lines" predictions,
// read and checked as ImportDataset + ImportPredictions + AlignPredictions do (same errors in the same
// order, same content hashes) but not parsed into RawDocs: document i is parsed from its lines by the
// thread that builds it (BuildCorpus of a LineDocuments), into a RawDoc that thread reuses, and the
// bytes of documents already built are given back to the system as the build goes. A million
// documents' import is then never in memory beside their corpus (docs/design-notes.md, note 33). Other
// formats keep the general path.
class LineDocuments {
 public:
  // Can Open read this pair? A Meng-2017 dataset (given or detected) without --references/--split,
  // and a "lines" predictions file (given or detected). Any problem with the paths is left for the
  // general importers to report: this is false then.
  static bool Handles(const std::string& dataset_path, const DatasetOptions& options,
                      const std::string& predictions_path, const std::string& predictions_format);
  // Errors: every message ImportDataset, ImportPredictions and AlignPredictions give for these files.
  // The predictions are read on a second thread meanwhile unless threads == 1. hash = false leaves both
  // content hashes empty (a run that is not stored needs neither): the same checks, the same documents.
  static Result<LineDocuments> Open(const std::string& dataset_path, const DatasetOptions& options,
                                    const std::string& predictions_path, int threads = 0, bool hash = true);

  LineDocuments(LineDocuments&&) noexcept;
  LineDocuments& operator=(LineDocuments&&) noexcept;
  ~LineDocuments();

  std::size_t size() const;
  // Every field but docs, as the importers would have filled them.
  const RawDataset& dataset() const;
  const RawPredictions& predictions() const;
  // Every document's RawDoc::refs_stemmed (DatasetOptions::refs_stemmed).
  bool refs_stemmed() const;
  // Document i into doc and pred (every field assigned; their buffers are reused). Safe to call from
  // several threads at once for different documents.
  void Read(std::size_t i, RawDoc& doc, RawPrediction& pred) const;
  // Document i's lines split as Read splits them, but not copied: views into the files' bytes (Read is
  // these views copied). Valid while this object lives and until a Release of a range holding i, after
  // which they are not to be read. Every field is assigned; the vectors' buffers are reused.
  struct Lines {
    bool has_text = false;                      // the dataset has a text file (RawDoc::has_text)
    std::string_view title, body, separator;    // as RawDoc's ("" without text)
    std::vector<std::string_view> refs;         // the keyphrase line's split(';'): one form a reference
    std::vector<std::string_view> predictions;  // the prediction line's split(';') (RawPrediction::phrases)
  };
  void View(std::size_t i, Lines& out) const;
  // Documents [begin, end) are built: the whole 2 MiB extents (huge-page aligned) inside their lines go
  // back to the system (a file's own copy, or its mapped pages); the partial extents at the range's two
  // edges stay, so a range under 4 MiB may keep all its bytes. A caller releasing a range piece by piece
  // names it from its start each time ([first, end)), or an extent that straddles two pieces is never
  // given back. Safe from several threads at once for ranges that do not overlap.
  void Release(std::size_t begin, std::size_t end);
  // An input error "PATH: changed while kplab read it (...)" when a file mapped in place
  // (SetMappedFileReads) was cut shorter, or its size or modification time changed, since Open. Whoever
  // builds the documents asks once they are built, and before reporting an error of its own: a file cut
  // shorter reads as zero bytes past its new end.
  Status CheckUnchanged() const;

 private:
  struct Files;
  explicit LineDocuments(std::unique_ptr<Files> files);
  std::unique_ptr<Files> f_;
};

// The bytes of a regular file (symbolic links followed). Anything else (a directory, FIFO, socket, or a
// device such as /dev/zero) is refused from its status before it is opened for reading, so that no
// reader can block on a FIFO or read without end: "PATH: a FIFO, not a regular file (expected
// EXPECTED)". Other failures: "PATH: no such file (expected ...)", "PATH: symbolic link loop
// (expected ...)", "PATH: cannot open (Permission denied) (expected ...)", "PATH: path contains a NUL
// byte (expected ...)".
Result<std::string> ReadRegularFile(const std::string& path, std::string_view expected);

// Whether the importers map a dataset's or a predictions file's bytes in place of reading a copy into
// fresh memory (files of 64 KiB or more; default: no). A copy is fresh memory, which a virtual machine
// may hand out only at a cost (docs/design-notes.md, note 66). A mapped file cut shorter while it is read
// would kill the process with SIGBUS: mapping takes that signal over, and reads past the file's new end
// give zero bytes, after which the import fails with "PATH: changed while kplab read it" (so does a file
// whose size, modification or change time moved meanwhile). A library does not take over a signal in
// its host's process unasked: the kplab executable turns mapping on as it starts. The handler passes
// every other SIGBUS on to the handler it found (one ignored stays ignored). When another handler has
// taken its place since, it is left there, and files are read rather than mapped from then on.
void SetMappedFileReads(bool on);
bool MappedFileReads();

// One evaluation of a batch (`kplab eval --manifest FILE`, docs/formats.md "Manifests").
struct ManifestEntry {
  std::string predictions_path, dataset_path;  // resolved against the manifest's directory
  std::string system;                          // "" = from the predictions path
  std::optional<std::int64_t> seed;            // nullopt = from the predictions path
  std::string profile;                         // "" = the command's --profile
  std::string origin;                          // "FILE: runs[3]", for messages
  // This entry's dataset options (docs/formats.md, "Dataset options in every front-end"); unset = the
  // command's. references and source are resolved against the manifest's directory.
  std::optional<bool> refs_stemmed;
  std::optional<std::string> split, references, source, dataset_format, predictions_format, hulth_keys,
      semeval_answers;
};
// Reads a JSON manifest: {"runs": [{"predictions", "dataset", "system"?, "seed"?, "profile"?, and the dataset
// options "split"?, "references"?, "refs_stemmed"?, "source"?, "dataset_format"?, "predictions_format"?,
// "hulth_keys"?, "semeval_answers"?}, ...]} or the list alone. Errors name the file and entry
// ("m.json: runs[2]: field 'seed' must be an integer (got a string)"); unknown fields (named with the valid
// ones and the nearest), an empty list and a repeated entry are errors.
Result<std::vector<ManifestEntry>> ReadManifest(const std::string& path);

// The same checks without reading, for readers that stream a large file themselves (embedding models):
// a directory, FIFO, device, socket, link loop or missing file is refused with ReadRegularFile's
// messages before anything opens it (a FIFO would block the open, /dev/zero never end).
Status CheckRegularFile(const std::string& path, std::string_view expected);

}  // namespace kplab
