// The C ABI (include/kplab/c.h) over the C++ host: kplab::host::LoadCorpus / EvaluateCorpus and
// kplab::RunStore. Every entry point catches everything, so no C++ exception reaches a C caller.
#include "kplab/c.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "eval_store.h"
#include "evaluate.h"
#include "exit_code.h"
#include "merge.h"
#include "kplab/json.h"
#include "kplab/store.h"
#include "kplab/suggest.h"

struct kplab_store {
  std::string path;
  kplab::RunStore store;
};

struct kplab_data {
  kplab::host::EvalRequest request;  // dataset, predictions and profile it was loaded with
  std::shared_ptr<const kplab::Corpus> corpus;
};

namespace {

char* CopyString(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (p != nullptr) std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

// The kind of this thread's last failure, as kplab_error_kind() returns it (exit_code.h's table).
thread_local int g_error_kind = 0;

void SetError(char** errptr, const std::string& message, kplab::ErrorKind kind) {
  g_error_kind = kplab::host::ExitCodeFor(kind);
  if (errptr == nullptr) return;
  std::free(*errptr);
  *errptr = CopyString(message);
}

// Runs f, turning any C++ exception into an error message; returns `failed` then.
template <class F, class R>
R Guard(char** errptr, R failed, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    SetError(errptr, std::string("kplab: internal error: ") + e.what(), kplab::ErrorKind::kInternal);
  } catch (...) {
    SetError(errptr, "kplab: internal error", kplab::ErrorKind::kInternal);
  }
  return failed;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, sep);) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

}  // namespace

extern "C" {

const char* kplab_version(void) { return KPLAB_VERSION; }

int kplab_error_kind(void) { return g_error_kind; }

void kplab_free(void* p) { std::free(p); }

kplab_store* kplab_store_open(const char* path, char** errptr) {
  return Guard(errptr, static_cast<kplab_store*>(nullptr), [&]() -> kplab_store* {
    const std::string p = path != nullptr ? path : kplab::RunStore::DefaultPath();
    auto store = kplab::RunStore::Open(p);
    if (!store) {
      SetError(errptr, store.error().message, store.error().kind);
      return nullptr;
    }
    return new kplab_store{p, std::move(*store)};
  });
}

void kplab_store_close(kplab_store* store) { delete store; }

kplab_data* kplab_load(const char* dataset_path, const char* predictions_path, const char* profile,
                       char** errptr) {
  return kplab_load_ex(dataset_path, predictions_path, profile, nullptr, errptr);
}

kplab_data* kplab_load_ex(const char* dataset_path, const char* predictions_path, const char* profile,
                          const char* options, char** errptr) {
  return Guard(errptr, static_cast<kplab_data*>(nullptr), [&]() -> kplab_data* {
    if (dataset_path == nullptr || predictions_path == nullptr) {
      SetError(errptr, "kplab_load: dataset_path and predictions_path are required", kplab::ErrorKind::kUsage);
      return nullptr;
    }
    auto data = std::make_unique<kplab_data>();
    data->request.dataset_path = dataset_path;
    data->request.predictions_path = predictions_path;
    if (profile != nullptr) data->request.profile = profile;
    for (const std::string& opt : Split(options != nullptr ? options : "", ';')) {
      const auto eq = opt.find('=');
      const std::string name = opt.substr(0, eq), value = eq == std::string::npos ? "" : opt.substr(eq + 1);
      auto& req = data->request;
      auto& dopt = req.dataset_options;
      // The dataset options of every front-end (docs/formats.md, "Dataset options in every front-end").
      static const std::vector<std::string> kNames = {"refs_stemmed", "dataset_format", "predictions_format",
                                                      "source", "split", "references", "hulth_keys",
                                                      "semeval_answers"};
      std::string* text = name == "dataset_format"       ? &dopt.format
                          : name == "predictions_format" ? &req.predictions_format
                          : name == "split"              ? &dopt.split
                          : name == "references"         ? &dopt.references
                          : name == "hulth_keys"         ? &dopt.hulth_keys
                          : name == "semeval_answers"    ? &dopt.semeval_answers
                                                         : nullptr;
      if (name == "refs_stemmed" && (eq == std::string::npos || value == "1" || value == "true")) {
        dopt.refs_stemmed = true;
      } else if (name == "refs_stemmed" && (value == "0" || value == "false")) {
        dopt.refs_stemmed = false;
      } else if (text != nullptr && eq != std::string::npos) {
        *text = value;
      } else if (name == "source" && eq != std::string::npos) {
        req.source_path = value;
      } else if (std::find(kNames.begin(), kNames.end(), name) != kNames.end()) {
        SetError(errptr,
                 "kplab_load_ex: option '" + opt + "' needs " +
                     (name == "refs_stemmed" ? "no value, 1, 0, true or false" : "a value (" + name + "=...)"),
                 kplab::ErrorKind::kUsage);
        return nullptr;
      } else {
        SetError(errptr,
                 "kplab_load_ex: unknown option '" + opt + "' (" + kplab::DidYouMean(name, kNames) +
                     "expected one of: refs_stemmed[=true|false], dataset_format=F, predictions_format=F, "
                     "source=PATH, split=NAME, references=PATH, hulth_keys=K, semeval_answers=A)",
                 kplab::ErrorKind::kUsage);
        return nullptr;
      }
    }
    auto corpus = kplab::host::LoadCorpus(data->request);
    if (!corpus) {
      SetError(errptr, corpus.error().message, corpus.error().kind);
      return nullptr;
    }
    data->corpus = std::make_shared<const kplab::Corpus>(std::move(*corpus));
    return data.release();
  });
}

size_t kplab_data_num_docs(const kplab_data* data) { return data != nullptr ? data->corpus->docs.size() : 0; }

void kplab_data_free(kplab_data* data) { delete data; }

}  // extern "C"

namespace {

// The object `kplab eval --output json` prints (host/cli/cli.cc PrintAggregates).
std::string RunJson(const kplab::RunRecord& run, const std::vector<kplab::AggregateValue>& aggregates, int64_t run_id) {
  std::string out = "{\"run_id\": " + std::to_string(run_id) + ", \"dataset\": " +
                    kplab::JsonString(run.dataset_name) + ", \"system\": " + kplab::JsonString(run.system) +
                    ", \"profile\": " + kplab::JsonString(run.profile) +
                    ", \"n_docs\": " + std::to_string(run.doc_ids.size());
  if (run.shard) {
    out += ", \"shard\": {\"index\": " + std::to_string(run.shard->index) + ", \"count\": " +
           std::to_string(run.shard->count) + ", \"begin\": " + std::to_string(run.shard->begin) +
           ", \"end\": " + std::to_string(run.shard->end) + "}";
  }
  out += ", \"aggregates\": {";
  for (std::size_t i = 0; i < aggregates.size(); ++i) {
    out += (i ? ", " : "") + kplab::JsonString(aggregates[i].metric) + ": " +
           kplab::JsonNumber(aggregates[i].value);
  }
  out += "}}";
  return out;
}

// Reads kplab_evaluate_ex's options into `req`; "" or the error.
std::string ApplyEvaluateOptions(const char* options, kplab::host::EvalRequest& req) {
  for (const std::string& opt : Split(options != nullptr ? options : "", ';')) {
    const auto eq = opt.find('=');
    const std::string name = opt.substr(0, eq), value = eq == std::string::npos ? "" : opt.substr(eq + 1);
    struct Knob {
      const char* name;
      std::uint64_t hi;
    };
    static constexpr Knob kKnobs[] = {{"verify_docs", kplab::host::kMaxVerifyDocs},
                                      {"random_seed", static_cast<std::uint64_t>(INT64_MAX)},
                                      {"threads", kplab::host::kMaxThreads}};
    const Knob* knob = nullptr;
    for (const Knob& k : kKnobs) {
      if (name == k.name) knob = &k;
    }
    if (knob == nullptr || eq == std::string::npos) {
      return "kplab_evaluate_ex: unknown option '" + opt + "' (expected verify_docs=N, random_seed=S or threads=N)";
    }
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (value.empty() || ec != std::errc() || end != value.data() + value.size() || v > knob->hi ||
        (name == "threads" && v == 0)) {
      return "kplab_evaluate_ex: option " + name + " must be an integer from " + (name == "threads" ? "1" : "0") +
             " to " + std::to_string(knob->hi) + " (got '" + value + "')";
    }
    if (name == "verify_docs") req.verify_docs = static_cast<int>(v);
    if (name == "random_seed") req.random_seed = v;
    if (name == "threads") req.threads = static_cast<int>(v);
  }
  return "";
}

char* Evaluate(const kplab_data* data, const char* metrics, const char* params, const char* system, kplab_store* store,
               std::optional<kplab::host::EvalRequest::Shard> shard, const char* options, char** errptr) {
  return Guard(errptr, static_cast<char*>(nullptr), [&]() -> char* {
    if (data == nullptr) {
      SetError(errptr, "kplab_evaluate: data is NULL", kplab::ErrorKind::kUsage);
      return nullptr;
    }
    kplab::host::EvalRequest req = data->request;
    req.metrics = Split(metrics != nullptr ? metrics : kplab::host::kDefaultMetrics, ',');
    if (req.metrics.empty()) {
      SetError(errptr, "kplab_evaluate: metrics names no metric", kplab::ErrorKind::kUsage);
      return nullptr;
    }
    for (const std::string& p : Split(params != nullptr ? params : "", ';')) {
      if (kplab::Status st = kplab::host::ParseParam(p, req.params); !st.ok()) {
        SetError(errptr, st.message(), st.kind());
        return nullptr;
      }
    }
    if (system != nullptr) req.system = system;
    req.shard = shard;
    if (std::string bad = ApplyEvaluateOptions(options, req); !bad.empty()) {
      SetError(errptr, bad, kplab::ErrorKind::kUsage);
      return nullptr;
    }
    req.cache_db = store != nullptr ? store->path : kplab::RunStore::DefaultPath();

    std::optional<kplab::host::OpenSink> sink;
    if (store != nullptr) sink.emplace(store->store, store->path);
    auto stored = kplab::host::EvaluateAndStore(req, data->corpus, sink ? &*sink : nullptr);
    if (!stored) {
      SetError(errptr, stored.error().message, stored.error().kind);
      return nullptr;
    }
    const kplab::RunRecord& run = stored->result.run;
    const kplab::host::EvalResult* res = &stored->result;
    const int64_t run_id = stored->run_id;
    std::string out = RunJson(run, res->aggregates, run_id);
    char* result = CopyString(out);
    if (result == nullptr) SetError(errptr, "kplab_evaluate: out of memory", kplab::ErrorKind::kLimit);
    return result;
  });
}

}  // namespace

extern "C" {

char* kplab_evaluate(const kplab_data* data, const char* metrics, const char* params, const char* system,
                     kplab_store* store, char** errptr) {
  return Evaluate(data, metrics, params, system, store, std::nullopt, nullptr, errptr);
}

char* kplab_evaluate_ex(const kplab_data* data, const char* metrics, const char* params, const char* system,
                        kplab_store* store, const char* options, char** errptr) {
  return Evaluate(data, metrics, params, system, store, std::nullopt, options, errptr);
}

char* kplab_evaluate_shard(const kplab_data* data, const char* metrics, const char* params, const char* system,
                           kplab_store* store, int64_t shard_index, int64_t shard_count, char** errptr) {
  if (store == nullptr) {
    SetError(errptr, "kplab_evaluate_shard: store is NULL (a shard is a partial run kept for kplab_merge)",
             kplab::ErrorKind::kUsage);
    return nullptr;
  }
  if (shard_count < 1 || shard_index < 0 || shard_index >= shard_count) {
    SetError(errptr,
             "kplab_evaluate_shard: shard " + std::to_string(shard_index) + "/" + std::to_string(shard_count) +
                 " (expected 0 <= shard_index < shard_count)",
             kplab::ErrorKind::kUsage);
    return nullptr;
  }
  return Evaluate(data, metrics, params, system, store, kplab::host::EvalRequest::Shard{shard_index, shard_count},
                  nullptr, errptr);
}

char* kplab_merge(const char* const* from, size_t n_from, kplab_store* out, char** errptr) {
  return Guard(errptr, static_cast<char*>(nullptr), [&]() -> char* {
    if (out == nullptr || (from == nullptr && n_from > 0)) {
      SetError(errptr, "kplab_merge: out and from are required", kplab::ErrorKind::kUsage);
      return nullptr;
    }
    kplab::host::MergeRequest req;
    for (size_t i = 0; i < n_from; ++i) {
      if (from[i] == nullptr) {
        SetError(errptr, "kplab_merge: from[" + std::to_string(i) + "] is NULL", kplab::ErrorKind::kUsage);
        return nullptr;
      }
      req.from.emplace_back(from[i]);
    }
    auto merged = kplab::host::MergeShards(req);
    if (!merged) {
      SetError(errptr, merged.error().message, merged.error().kind);
      return nullptr;
    }
    auto id = out->store.SaveRun(merged->run, merged->scores, merged->aggregates);
    if (!id) {
      SetError(errptr, id.error().message, id.error().kind);
      return nullptr;
    }
    char* result = CopyString(RunJson(merged->run, merged->aggregates, *id));
    if (result == nullptr) SetError(errptr, "kplab_merge: out of memory", kplab::ErrorKind::kLimit);
    return result;
  });
}

}  // extern "C"
