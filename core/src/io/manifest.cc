// Run manifests (docs/formats.md, "Manifests"): the systems, seeds, datasets and predictions files of
// a batch of evaluations, as JSON.
#include <filesystem>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "kplab/io.h"
#include "kplab/json.h"
#include "kplab/suggest.h"
#include "util/json_internal.h"

namespace kplab {

namespace {
const std::vector<std::string> kFields = {"predictions",  "dataset",        "system",
                                          "seed",         "profile",        "split",
                                          "references",   "refs_stemmed",   "source",
                                          "dataset_format", "predictions_format", "hulth_keys",
                                          "semeval_answers"};

// The entry's string-valued dataset option named `key`, or null.
std::optional<std::string>* StringOption(ManifestEntry& m, std::string_view key) {
  if (key == "split") return &m.split;
  if (key == "references") return &m.references;
  if (key == "source") return &m.source;
  if (key == "dataset_format") return &m.dataset_format;
  if (key == "predictions_format") return &m.predictions_format;
  if (key == "hulth_keys") return &m.hulth_keys;
  if (key == "semeval_answers") return &m.semeval_answers;
  return nullptr;
}
}  // namespace

Result<std::vector<ManifestEntry>> ReadManifest(const std::string& path) {
  namespace fs = std::filesystem;
  Result<std::string> text = ReadRegularFile(path, "a run manifest (JSON)");
  if (!text) return text.error();
  constexpr const char* kShape =
      "expected {\"runs\": [{\"predictions\": PATH, \"dataset\": PATH, \"system\"?: NAME, \"seed\"?: INTEGER, "
      "\"profile\"?: NAME, \"split\"?: NAME, \"references\"?: PATH, \"refs_stemmed\"?: BOOLEAN, \"source\"?: PATH, "
      "\"dataset_format\"?, \"predictions_format\"?, \"hulth_keys\"?, \"semeval_answers\"?: NAME}, "
      "...]} or the list alone";
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto err = parser.parse(*text).get(root); err) {
    return Error::Input(fmt::format("{}: {} ({})", path, json_internal::JsonProblem(*text, err), kShape));
  }
  simdjson::dom::array runs;
  if (root.is_object()) {
    const simdjson::dom::object obj = root.get_object().value_unsafe();
    for (auto [key, value] : obj) {
      if (key != "runs") {
        return Error::Input(fmt::format("{}: unknown field '{}' ({})", path, std::string(key), kShape));
      }
    }
    simdjson::dom::element r;
    if (obj["runs"].get(r) || !r.is_array()) {
      return Error::Input(fmt::format("{}: field 'runs' must be a list ({})", path, kShape));
    }
    runs = r.get_array().value_unsafe();
  } else if (root.is_array()) {
    runs = root.get_array().value_unsafe();
  } else {
    return Error::Input(fmt::format("{}: the top level is {} ({})", path, json_internal::TypeName(root), kShape));
  }
  // Relative paths are relative to the manifest's directory, so a manifest travels with its outputs.
  const fs::path base = fs::path(path).parent_path();
  auto resolve = [&](std::string_view p) {
    const fs::path q(p);
    return (q.is_absolute() || base.empty() ? q : base / q).lexically_normal().string();
  };
  std::vector<ManifestEntry> out;
  std::set<std::string> seen;  // entries, as JSON strings of their fields (two may differ in options only)
  std::size_t i = 0;
  for (simdjson::dom::element e : runs) {
    const std::string where = fmt::format("{}: runs[{}]", path, i++);
    if (!e.is_object()) {
      return Error::Input(fmt::format("{} is {} (expected an object with \"predictions\" and \"dataset\")", where,
                                      json_internal::TypeName(e)));
    }
    ManifestEntry m;
    bool has_pred = false, has_ds = false;
    std::set<std::string> keys_seen;
    // By value: iterating e.get_object().value() directly would bind to a temporary's member.
    const simdjson::dom::object fields = e.get_object().value_unsafe();
    for (auto [key, bound] : fields) {
      const std::string k(key);
      const simdjson::dom::element value = bound;  // a plain variable: clang's lambdas cannot capture bindings
      if (!keys_seen.insert(k).second) {
        return Error::Input(fmt::format("{}: field '{}' is given twice", where, k));
      }
      auto need_string = [&](std::string* dst) -> std::optional<Error> {
        if (!value.is_string()) {
          return Error::Input(
              fmt::format("{}: field '{}' must be a string (got {})", where, k, json_internal::TypeName(value)));
        }
        *dst = std::string(value.get_string().value());
        if (dst->empty()) return Error::Input(fmt::format("{}: field '{}' is empty", where, k));
        return std::nullopt;
      };
      std::optional<Error> err;
      if (k == "predictions") {
        err = need_string(&m.predictions_path);
        has_pred = true;
      } else if (k == "dataset") {
        err = need_string(&m.dataset_path);
        has_ds = true;
      } else if (k == "system") {
        err = need_string(&m.system);
      } else if (k == "profile") {
        err = need_string(&m.profile);
      } else if (k == "seed") {
        if (!value.is_int64()) {
          return Error::Input(
              fmt::format("{}: field 'seed' must be an integer (got {})", where, json_internal::TypeName(value)));
        }
        m.seed = value.get_int64().value();
        if (*m.seed < 0) {
          return Error::Input(fmt::format("{}: field 'seed' is {} (expected an integer >= 0)", where, *m.seed));
        }
      } else if (auto* opt = StringOption(m, k)) {
        std::string v;
        err = need_string(&v);
        *opt = v;
      } else if (k == "refs_stemmed") {
        if (!value.is_bool()) {
          return Error::Input(fmt::format("{}: field 'refs_stemmed' must be true or false (got {})", where,
                                          json_internal::TypeName(value)));
        }
        m.refs_stemmed = value.get_bool().value();
      } else {
        return Error::Input(fmt::format("{}: unknown field '{}' ({}expected one of: {})", where, k,
                                        DidYouMean(k, kFields), JoinNames(kFields)));
      }
      if (err) return *err;
    }
    if (!has_pred || !has_ds) {
      return Error::Input(fmt::format("{}: missing field '{}'", where, has_pred ? "dataset" : "predictions"));
    }
    m.predictions_path = resolve(m.predictions_path);
    m.dataset_path = resolve(m.dataset_path);
    if (m.references) m.references = resolve(*m.references);
    if (m.source) m.source = resolve(*m.source);
    m.origin = where;
    const std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}", JsonString(m.predictions_path), JsonString(m.dataset_path),
                                        JsonString(m.system), JsonString(m.profile), m.seed ? std::to_string(*m.seed) : "-",
                                        m.refs_stemmed ? (*m.refs_stemmed ? "1" : "0") : "-",
                                        m.split ? JsonString(*m.split) : "-", m.references ? JsonString(*m.references) : "-",
                                        m.source ? JsonString(*m.source) : "-") +
                            fmt::format("|{}|{}|{}|{}", m.dataset_format ? JsonString(*m.dataset_format) : "-",
                                        m.predictions_format ? JsonString(*m.predictions_format) : "-",
                                        m.hulth_keys ? JsonString(*m.hulth_keys) : "-",
                                        m.semeval_answers ? JsonString(*m.semeval_answers) : "-");
    if (!seen.insert(key).second) {
      return Error::Input(
          fmt::format("{}: the same predictions, dataset, system, seed, profile and dataset options as an "
                      "earlier entry ({})",
                      where, m.predictions_path));
    }
    out.push_back(std::move(m));
  }
  if (out.empty()) return Error::Input(fmt::format("{}: no runs ({})", path, kShape));
  return out;
}

}  // namespace kplab
