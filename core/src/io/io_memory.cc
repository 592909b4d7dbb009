#include "kplab/io_memory.h"

#include <cmath>
#include <string_view>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "io/io_internal.h"
#include "kplab/sha256.h"
#include "kplab/text.h"

namespace kplab {
namespace {

using io_internal::Fail;
using io_internal::ImportFailure;

// Canonical serialization for the content hash: every field length-prefixed, so that no two different
// record lists serialize to the same bytes.
class Hasher {
 public:
  void Field(std::string_view s) {
    const std::string n = fmt::format("{}:", s.size());
    sha_.Update(n);
    sha_.Update(s);
  }
  void Tag(std::string_view t) { sha_.Update(t); }
  std::string Hex() { return sha_.FinishHex(); }

 private:
  Sha256 sha_;
};

void CheckUtf8(const std::string& where, std::string_view field, std::string_view s) {
  std::size_t bad = 0;
  if (!ValidUtf8(s, &bad)) {
    Fail(where, 0, fmt::format("field \"{}\" has invalid UTF-8 at byte {}", field, bad + 1), "UTF-8 text");
  }
}

}  // namespace

Result<RawDataset> DatasetFromRecords(const std::string& name, std::vector<RawDoc> docs,
                                      const std::string& what) {
  try {
    RawDataset out;
    out.name = name;
    out.path = name;
    out.format = "memory";
    Hasher h;
    h.Tag("kplab-memory-dataset/1\n");
    std::unordered_map<std::string, std::size_t> seen;
    seen.reserve(docs.size());
    for (std::size_t i = 0; i < docs.size(); ++i) {
      RawDoc& d = docs[i];
      if (d.loc.file.empty()) d.loc = {fmt::format("{}[{}]", what, i), 0};
      const std::string where = d.loc.file;
      if (d.id.empty()) d.id = std::to_string(i + 1);
      CheckUtf8(where, "id", d.id);
      CheckUtf8(where, "title", d.title);
      CheckUtf8(where, "text", d.body);
      const auto [it, inserted] = seen.emplace(d.id, i);
      if (!inserted) {
        Fail(where, 0, fmt::format("second document with id \"{}\" (the first is {})", d.id, docs[it->second].loc.file),
             "unique document ids");
      }
      if (!d.has_text && (!d.title.empty() || !d.body.empty())) {
        Fail(where, 0, "text given for a document marked as having none", "has_text or no text");
      }
      h.Tag("D");
      h.Field(d.id);
      h.Field(d.title);
      h.Field(d.body);
      h.Field(d.separator);
      h.Tag(d.pretokenized ? "p" : "r");
      h.Tag(d.has_text ? "t" : "n");
      h.Tag(d.refs_stemmed ? "s" : "u");
      for (std::size_t r = 0; r < d.refs.size(); ++r) {
        if (d.refs[r].empty()) {
          Fail(where, 0, fmt::format("reference {} is an empty list", r), "a non-empty list of alternatives");
        }
        h.Tag("R");
        for (const std::string& alt : d.refs[r]) {
          CheckUtf8(where, fmt::format("references[{}]", r), alt);
          h.Field(alt);
        }
      }
    }
    out.docs = std::move(docs);
    out.content_hash = h.Hex();
    return out;
  } catch (const ImportFailure& e) {
    return e.error;
  }
}

Result<RawPredictions> PredictionsFromRecords(const RawDataset& dataset, const std::string& name,
                                              std::vector<RawPrediction> preds, bool by_id,
                                              const std::string& what) {
  try {
    RawPredictions out;
    out.path = name;
    out.format = "memory";
    for (std::size_t i = 0; i < preds.size(); ++i) {
      RawPrediction& p = preds[i];
      if (p.loc.file.empty()) p.loc = {fmt::format("{}[{}]", what, i), 0};
      const std::string where = p.loc.file;
      for (std::size_t k = 0; k < p.phrases.size(); ++k) CheckUtf8(where, fmt::format("[{}]", k), p.phrases[k]);
      if (!p.scores.empty() && p.scores.size() != p.phrases.size()) {
        Fail(where, 0, fmt::format("{} scores for {} phrases", p.scores.size(), p.phrases.size()),
             "one score per phrase or none");
      }
      for (std::size_t k = 0; k < p.scores.size(); ++k) {
        if (!std::isfinite(p.scores[k])) {
          Fail(where, 0, fmt::format("score {} of \"{}\" is not finite", k, p.phrases[k]), "a finite number");
        }
      }
    }
    if (by_id) {
      std::unordered_map<std::string_view, std::size_t> index;
      for (std::size_t j = 0; j < dataset.docs.size(); ++j) index.emplace(dataset.docs[j].id, j);
      constexpr std::size_t kNone = static_cast<std::size_t>(-1);
      std::vector<std::size_t> slot(dataset.docs.size(), kNone);
      for (std::size_t i = 0; i < preds.size(); ++i) {
        const auto it = index.find(preds[i].doc_id);
        if (it == index.end()) {
          Fail(preds[i].loc.file, 0, fmt::format("unknown document id \"{}\"", preds[i].doc_id),
               "the id of a document");
        }
        if (slot[it->second] != kNone) {
          Fail(preds[i].loc.file, 0, fmt::format("second prediction list for document \"{}\"", preds[i].doc_id),
               "one list per document");
        }
        slot[it->second] = i;
      }
      std::vector<RawPrediction> ordered;
      ordered.reserve(slot.size());
      for (std::size_t j = 0; j < slot.size(); ++j) {
        if (slot[j] == kNone) {
          Fail(what, 0, fmt::format("no predictions for document \"{}\"", dataset.docs[j].id),
               "one list per document (an empty list for none)");
        }
        ordered.push_back(std::move(preds[slot[j]]));
      }
      preds = std::move(ordered);
    } else if (preds.size() != dataset.docs.size()) {
      Fail(what, 0, fmt::format("{} prediction lists for {} documents", preds.size(), dataset.docs.size()),
           "one list per document, in document order");
    }
    Hasher h;
    h.Tag("kplab-memory-predictions/1\n");
    for (std::size_t j = 0; j < preds.size(); ++j) {
      preds[j].doc_id = dataset.docs[j].id;
      h.Tag("P");
      h.Field(preds[j].doc_id);
      for (std::string_view p : preds[j].phrases) h.Field(p);
      h.Tag("S");
      for (double s : preds[j].scores) h.Field(fmt::format("{}", s));
    }
    out.docs = std::move(preds);
    out.content_hash = h.Hex();
    return out;
  } catch (const ImportFailure& e) {
    return e.error;
  }
}

}  // namespace kplab
