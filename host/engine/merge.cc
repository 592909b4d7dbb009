#include "merge.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "columns.h"
#include "evaluate.h"
#include "kplab/profile.h"
#include "lua_util.h"
#include "plugin.h"
#include "runner.h"

namespace kplab::host {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Error UsageFail(std::string message) { return Error::Usage(std::move(message)); }
// A shard whose stored data contradicts itself or the other shards: what the stores hold is wrong.
Error StoreFail(std::string message) { return Error::Store(std::move(message)); }

// A minimal reader for the JSON a run's params_json holds: objects of strings, numbers, booleans and
// null (what ParamsJson in evaluate.cc writes). Numbers keep their text, which ApplyParams parses back.
// Nesting is bounded (kMaxDepth), so that a tampered store cannot take the stack.
class JsonReader {
 public:
  static constexpr int kMaxDepth = 64;
  explicit JsonReader(std::string_view s) : s_(s) {}
  bool Done() {
    Space();
    return i_ == s_.size();
  }
  // An object, each member's value read by `on_key`.
  bool Object(const std::function<bool(const std::string& key, JsonReader& r)>& on_key) {
    Space();
    if (!Eat('{')) return false;
    if (++depth_ > kMaxDepth) return false;
    Space();
    if (Eat('}')) return Leave();
    for (;;) {
      std::string key;
      Space();
      if (!String(key)) return false;
      Space();
      if (!Eat(':')) return false;
      if (!on_key(key, *this)) return false;
      Space();
      if (Eat('}')) return Leave();
      if (!Eat(',')) return false;
    }
  }
  // A string (unescaped), number, true, false or null, as text.
  bool Scalar(std::string& out) {
    Space();
    if (i_ < s_.size() && s_[i_] == '"') return String(out);
    const std::size_t start = i_;
    while (i_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '-' || s_[i_] == '+' || s_[i_] == '.')) {
      ++i_;
    }
    out = std::string(s_.substr(start, i_ - start));
    return !out.empty();
  }
  bool Skip() {  // any value
    Space();
    if (i_ < s_.size() && s_[i_] == '{') return Object([](const std::string&, JsonReader& r) { return r.Skip(); });
    if (i_ < s_.size() && s_[i_] == '[') {
      ++i_;
      if (++depth_ > kMaxDepth) return false;
      Space();
      if (Eat(']')) return Leave();
      for (;;) {
        if (!Skip()) return false;
        Space();
        if (Eat(']')) return Leave();
        if (!Eat(',')) return false;
      }
    }
    std::string ignored;
    return Scalar(ignored);
  }

 private:
  // The end of an object or array: one level up.
  bool Leave() {
    --depth_;
    return true;
  }
  void Space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  bool Eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool Hex4(unsigned& v) {
    if (i_ + 4 > s_.size()) return false;
    const auto [p, ec] = std::from_chars(s_.data() + i_, s_.data() + i_ + 4, v, 16);
    if (ec != std::errc() || p != s_.data() + i_ + 4) return false;
    i_ += 4;
    return true;
  }
  // \uXXXX (a surrogate pair for code points above the BMP) as UTF-8; a lone surrogate is refused.
  bool Unicode(std::string& out) {
    unsigned v = 0;
    if (!Hex4(v)) return false;
    if (v >= 0xDC00 && v < 0xE000) return false;
    if (v >= 0xD800 && v < 0xDC00) {
      unsigned lo = 0;
      if (!Eat('\\') || !Eat('u') || !Hex4(lo) || lo < 0xDC00 || lo >= 0xE000) return false;
      v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
    }
    auto put = [&](unsigned b) { out += static_cast<char>(b); };
    if (v < 0x80) {
      put(v);
    } else if (v < 0x800) {
      put(0xC0 | (v >> 6)), put(0x80 | (v & 0x3F));
    } else if (v < 0x10000) {
      put(0xE0 | (v >> 12)), put(0x80 | ((v >> 6) & 0x3F)), put(0x80 | (v & 0x3F));
    } else {
      put(0xF0 | (v >> 18)), put(0x80 | ((v >> 12) & 0x3F)), put(0x80 | ((v >> 6) & 0x3F)), put(0x80 | (v & 0x3F));
    }
    return true;
  }
  bool String(std::string& out) {
    if (!Eat('"')) return false;
    out.clear();
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c == '\\') {
        if (i_ >= s_.size()) return false;
        const char e = s_[i_++];
        switch (e) {
          case 'n':
            out += '\n';
            break;
          case 't':
            out += '\t';
            break;
          case 'r':
            out += '\r';
            break;
          case 'b':
            out += '\b';
            break;
          case 'f':
            out += '\f';
            break;
          case 'u':
            if (!Unicode(out)) return false;
            break;
          default:
            out += e;
        }
      } else {
        out += c;
      }
    }
    return Eat('"');
  }
  std::string_view s_;
  std::size_t i_ = 0;
  int depth_ = 0;
};

std::string Label(const std::string& db, const RunRecord& run) {
  return fmt::format("run {} in {} (shard {}/{})", run.id, db, run.shard->index, run.shard->count);
}

struct Shard {
  std::string db;
  RunRecord run;
  std::vector<SlotColumn> slots;
  std::map<std::string, double> aggregates;  // as the shard stored them, over its own documents
  std::string label;
};

using Columns3 = std::vector<std::vector<std::vector<double>>>;  // [subset][slot][document]

bool Same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// Plugin `pi`'s slots as one shard stored them, laid out as the run's columns: n values per slot, the
// shard's documents in place and NaN elsewhere, as the shard itself had them when it aggregated; a
// subset the shard stored nothing of stays empty. Refused: a slot that columns(c, params) does not
// declare so, a subset the plugin does not have, a subset stored in part.
Result<Columns3> ShardSlots(const Shard& sh, std::size_t pi, const std::string& plugin, const DeclaredColumns& decl,
                            const std::vector<std::string>& subsets, std::size_t n) {
  const auto begin = static_cast<std::size_t>(sh.run.shard->begin);
  const auto len = static_cast<std::size_t>(sh.run.shard->end - sh.run.shard->begin);
  Columns3 out(subsets.size(), std::vector<std::vector<double>>(decl.slots.size()));
  std::vector<std::size_t> found(subsets.size(), 0);
  for (const SlotColumn& c : sh.slots) {
    if (c.plugin != static_cast<int64_t>(pi) || c.subset.starts_with("#")) continue;
    const auto at = std::find(subsets.begin(), subsets.end(), c.subset);
    if (at == subsets.end()) {
      return StoreFail(fmt::format("{} stored slots of plugin '{}' in subset '{}', which the plugin does not have",
                                   sh.label, plugin, c.subset));
    }
    const auto s = static_cast<std::size_t>(at - subsets.begin());
    const auto j = static_cast<std::size_t>(c.slot - 1);
    if (c.slot < 1 || j >= decl.slots.size() || decl.slots[j].name != c.name || decl.slots[j].hidden != c.hidden ||
        c.values.size() != len) {
      return UsageFail(fmt::format("{} stored slot {} '{}' of plugin '{}' (subset '{}'), which its columns(c, "
                                   "params) does not declare so",
                                   sh.label, c.slot, c.name, plugin, c.subset));
    }
    out[s][j].assign(n, kNaN);
    std::copy(c.values.begin(), c.values.end(), out[s][j].begin() + static_cast<std::ptrdiff_t>(begin));
    ++found[s];
  }
  for (std::size_t s = 0; s < subsets.size(); ++s) {
    if (found[s] != 0 && found[s] != decl.slots.size()) {
      return UsageFail(fmt::format("{} stored {} of the {} slots of plugin '{}' (subset '{}')", sh.label, found[s],
                                   decl.slots.size(), plugin, subsets[s]));
    }
  }
  return out;
}

// Which subsets a shard stored slots for is a property of the whole corpus (a corpus without source
// text has no present/absent values), so every shard stores the same ones, and every run stores "all"
// (or the single subset of a plugin without subsets): anything else means slots were deleted.
Status SameSubsets(const Shard& sh, const Shard& first, const Columns3& own, std::vector<bool>& stored, bool is_first,
                   const std::string& plugin, const std::vector<std::string>& subsets) {
  for (std::size_t s = 0; s < subsets.size(); ++s) {
    const bool has = std::any_of(own[s].begin(), own[s].end(), [](const auto& c) { return !c.empty(); });
    if (!has && (subsets[s].empty() || subsets[s] == "all")) {
      return StoreFail(fmt::format("{} stored no slots of plugin '{}'{}, which every run stores (its slots were "
                                   "deleted)",
                                   sh.label, plugin, subsets[s].empty() ? "" : " in subset '" + subsets[s] + "'"));
    }
    if (is_first) {
      stored[s] = has;
    } else if (has != stored[s]) {
      return StoreFail(fmt::format("{} stored the slots of plugin '{}' in subset '{}' but {} did not (every shard of a "
                                   "run stores the same subsets: slots were deleted)",
                                   has ? sh.label : first.label, plugin, subsets[s], has ? first.label : sh.label));
    }
  }
  return Status::Ok();
}

// The shard's own aggregates, recomputed from its slots, against the ones it stored: what the shard
// stored beside its slots must be what they give (a hidden slot changed on disk is found here).
Status OwnAggregatesMatch(Shard& sh, const std::vector<AggregateValue>& recomputed, const std::string& plugin) {
  for (const AggregateValue& a : recomputed) {
    const auto it = sh.aggregates.find(a.metric);
    if (it == sh.aggregates.end()) {
      return StoreFail(fmt::format("{} stored no aggregate '{}', which its slots of plugin '{}' give (its aggregates "
                                   "were changed or deleted)",
                                   sh.label, a.metric, plugin));
    }
    if (!Same(it->second, a.value)) {
      return StoreFail(fmt::format("{} stored aggregate '{}' = {}, but its slots give {} (its slots or aggregates "
                                   "were changed)",
                                   sh.label, a.metric, it->second, a.value));
    }
    sh.aggregates.erase(it);
  }
  return Status::Ok();
}

std::string Short(const std::string& hash) { return hash.size() > 12 ? hash.substr(0, 12) : hash; }

// The documents [begin, end) as the message shows them: 1-based positions and ids.
std::string DocRange(const DocIds& ids, int64_t begin, int64_t end) {
  return fmt::format("documents {}-{} ('{}' to '{}')", begin + 1, end, ids[static_cast<std::size_t>(begin)],
                     ids[static_cast<std::size_t>(end - 1)]);
}

// First difference between two shards that would make their numbers belong to different evaluations.
std::optional<std::string> Difference(const Shard& a, const Shard& b) {
  const RunRecord &x = a.run, &y = b.run;
  if (x.dataset_hash != y.dataset_hash || x.doc_ids != y.doc_ids || x.dataset_format != y.dataset_format) {
    return fmt::format(
        "shards of different datasets: {} is on '{}' (sha256 {}, {} documents) but {} is on '{}' "
        "(sha256 {}, {} documents)",
        b.label, y.dataset_name, Short(y.dataset_hash), y.doc_ids.size(), a.label, x.dataset_name,
        Short(x.dataset_hash), x.doc_ids.size());
  }
  if (x.predictions_hash != y.predictions_hash) {
    return fmt::format("shards of different predictions: {} scored {} (sha256 {}) but {} scored {} (sha256 {})",
                       b.label, y.predictions_path, Short(y.predictions_hash), a.label, x.predictions_path,
                       Short(x.predictions_hash));
  }
  if (x.system != y.system || x.seed != y.seed) {
    auto show = [](const RunRecord& r) {
      return r.seed ? fmt::format("'{}' seed {}", r.system, *r.seed) : fmt::format("'{}'", r.system);
    };
    return fmt::format("shards of different systems: {} is {} but {} is {}", b.label, show(y), a.label, show(x));
  }
  if (x.profile != y.profile) {
    return fmt::format("shards of different profiles: {} used profile '{}' but {} used '{}'", b.label, y.profile,
                       a.label, x.profile);
  }
  auto names = [](const RunRecord& r) {
    std::string s;
    for (const auto& p : r.plugins) s += (s.empty() ? "" : ",") + p.name;
    return s;
  };
  if (names(x) != names(y)) {
    return fmt::format("shards of different metrics: {} ran {} but {} ran {}", b.label, names(y), a.label, names(x));
  }
  for (std::size_t i = 0; i < x.plugins.size(); ++i) {
    if (x.plugins[i].sha256 != y.plugins[i].sha256 || x.plugins[i].version != y.plugins[i].version) {
      return fmt::format(
          "shards of different plugin files: plugin '{}' is {} (sha256 {}) in {} but {} (sha256 {}) "
          "in {}",
          x.plugins[i].name, y.plugins[i].version, Short(y.plugins[i].sha256), b.label, x.plugins[i].version,
          Short(x.plugins[i].sha256), a.label);
    }
  }
  if (x.params_json != y.params_json) {
    auto px = ParsePluginParams(x.params_json), py = ParsePluginParams(y.params_json);
    if (px && py) {
      for (const auto& [plugin, params] : *px) {
        for (const auto& [name, value] : params) {
          const auto it = py->find(plugin);
          const std::string other =
              it == py->end() || !it->second.count(name) ? std::string("(none)") : "'" + it->second.at(name) + "'";
          if (other != "'" + value + "'") {
            return fmt::format("shards with different parameters: {}.{} is {} in {} but '{}' in {}", plugin, name,
                               other, b.label, value, a.label);
          }
        }
      }
    }
    return fmt::format("shards with different parameters or dataset options: {} has {} but {} has {}", b.label,
                       y.params_json, a.label, x.params_json);
  }
  if (x.embedder_fingerprint != y.embedder_fingerprint) {
    return fmt::format("shards of different embedding models: {} used {} but {} used {}", b.label,
                       y.embedder_fingerprint.empty() ? "none" : y.embedder_fingerprint, a.label,
                       x.embedder_fingerprint.empty() ? "none" : x.embedder_fingerprint);
  }
  if (x.kplab_version != y.kplab_version) {
    return fmt::format(
        "shards of different kplab versions: {} was scored by kplab {} but {} by kplab {} (native "
        "kernels are not hashed: their numbers may differ)",
        b.label, y.kplab_version, a.label, x.kplab_version);
  }
  return std::nullopt;
}

}  // namespace

Result<PluginFile> FindPluginFile(const PluginRecord& rec, const std::vector<std::string>& dirs,
                                  const std::string& who) {
  std::vector<std::string> seen;
  std::vector<std::tuple<std::string, std::string, bool>> candidates;  // path, display name, configured
  if (!rec.file.empty()) candidates.emplace_back(rec.file, rec.file, false);
  if (auto listed = ListPlugins(ShippedPluginDir(), dirs); listed) {
    for (const PluginFile& f : *listed) {
      if (f.name == rec.name && f.path != rec.file) candidates.emplace_back(f.path, f.display_name, f.configured);
    }
  }
  for (const auto& [path, display, configured] : candidates) {
    auto file = ReadPluginFile(path, display, configured);
    if (!file) {
      seen.push_back(fmt::format("{}: cannot be read", display));
      continue;
    }
    if (file->sha256 == rec.sha256) return file;
    seen.push_back(fmt::format("{} has sha256 {}", display, Short(file->sha256)));
  }
  return UsageFail(
      fmt::format("plugin '{}' as {} ran it (sha256 {}) is not found{}{} (give its directory with "
                  "--plugins DIR)",
                  rec.name, who, Short(rec.sha256), seen.empty() ? "" : ": ", fmt::format("{}", [&] {
                    std::string s;
                    for (const auto& x : seen) s += (s.empty() ? "" : ", ") + x;
                    return s;
                  }())));
}

Result<RunParams> ParseRunParams(const std::string& params_json) {
  RunParams out;
  if (params_json.empty()) return out;
  JsonReader r(params_json);
  // An object of scalars into `into`.
  const auto scalars = [](JsonReader& inner, std::map<std::string, std::string>& into) {
    return inner.Object([&](const std::string& name, JsonReader& v) {
      std::string value;
      if (!v.Scalar(value)) return false;
      into[name] = value;
      return true;
    });
  };
  const bool ok = r.Object([&](const std::string& key, JsonReader& inner) {
    // Keys starting with '_' are the run's own records ("_dataset", "_ci"), the others plugins.
    return scalars(inner, key.starts_with("_") ? out.records[key] : out.plugins[key]);
  });
  if (!ok || !r.Done()) {
    return UsageFail(fmt::format("cannot read the run's parameters (params_json is not an object of objects of "
                                 "numbers, strings and booleans, nested at most {} deep): {}{}",
                                 JsonReader::kMaxDepth, params_json.substr(0, 120),
                                 params_json.size() > 120 ? "..." : ""));
  }
  return out;
}

Result<std::map<std::string, std::map<std::string, std::string>>> ParsePluginParams(const std::string& params_json) {
  auto params = ParseRunParams(params_json);
  if (!params) return params.error();
  return std::move(params->plugins);
}

using Stores = std::vector<std::pair<std::string, RunStore>>;

// Every --from store, read only; a store named twice is an error.
Result<Stores> OpenStores(const MergeRequest& req) {
  Stores stores;
  for (const std::string& path : req.from) {
    for (const auto& [p, _] : stores) {
      if (p == path) return UsageFail(fmt::format("--from {} is given twice", path));
    }
    auto store = RunStore::Open(path, RunStore::Mode::kReadOnly);
    if (!store) return store.error();
    stores.emplace_back(path, std::move(*store));
  }
  return stores;
}

// The runs to merge as (store index, run id): those named (ID, or FILE:ID when two stores hold the id),
// or every shard of every store, oldest first.
Result<std::vector<std::pair<std::size_t, int64_t>>> PickRuns(const MergeRequest& req, Stores& stores) {
  std::vector<std::pair<std::size_t, int64_t>> picked;  // store index, run id
  if (req.runs.empty()) {
    for (std::size_t s = 0; s < stores.size(); ++s) {
      auto runs = stores[s].second.ListRuns();
      if (!runs) return runs.error();
      for (auto it = runs->rbegin(); it != runs->rend(); ++it) {
        if (it->shard) picked.emplace_back(s, it->id);
      }
    }
    if (picked.empty()) {
      std::string files;
      for (const auto& f : req.from) files += (files.empty() ? "" : ", ") + f;
      return UsageFail(fmt::format("no shards in {} (expected runs of `kplab eval --shard I/N`)", files));
    }
  } else {
    for (const std::string& text : req.runs) {
      std::string file;
      std::string id_text = text;
      if (const auto colon = text.rfind(':'); colon != std::string::npos) {
        file = text.substr(0, colon);
        id_text = text.substr(colon + 1);
      }
      int64_t id = 0;
      const auto [p, ec] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
      if (id_text.empty() || ec != std::errc() || p != id_text.data() + id_text.size() || id < 1) {
        return UsageFail(
            fmt::format("'{}' is not a run (expected ID or FILE:ID, FILE one of the --from stores)", text));
      }
      std::vector<std::size_t> holders;
      for (std::size_t s = 0; s < stores.size(); ++s) {
        if (!file.empty() && stores[s].first != file) continue;
        auto has = stores[s].second.HasRun(id);
        if (!has) return has.error();
        if (*has) holders.push_back(s);
      }
      if (!file.empty() &&
          std::none_of(stores.begin(), stores.end(), [&](const auto& st) { return st.first == file; })) {
        return UsageFail(fmt::format("run '{}': {} is not one of the --from stores", text, file));
      }
      if (holders.empty()) return UsageFail(fmt::format("run {} is in none of the --from stores", text));
      if (holders.size() > 1) {
        return UsageFail(fmt::format("run {} is in {} and {} (name it FILE:ID)", id, stores[holders[0]].first,
                                     stores[holders[1]].first));
      }
      if (std::find(picked.begin(), picked.end(), std::pair{holders[0], id}) != picked.end()) {
        return UsageFail(fmt::format("run {} in {} is named twice", id, stores[holders[0]].first));
      }
      picked.emplace_back(holders[0], id);
    }
  }
  return picked;
}

// The picked runs' records; each must be a shard that ran to the end.
Result<std::vector<Shard>> ReadShards(Stores& stores, const std::vector<std::pair<std::size_t, int64_t>>& picked) {
  std::vector<Shard> shards;
  for (const auto& [s, id] : picked) {
    Shard sh;
    sh.db = stores[s].first;
    auto run = stores[s].second.GetRun(id);
    if (!run) return run.error();
    sh.run = std::move(*run);
    if (!sh.run.shard) {
      return UsageFail(
          fmt::format("run {} in {} is not a shard (a whole run; shards are written by `kplab eval "
                      "--shard I/N`)",
                      id, sh.db));
    }
    sh.label = Label(sh.db, sh.run);
    if (sh.run.status != "ok") {
      std::string first_line = sh.run.error.substr(0, sh.run.error.find('\n'));
      return UsageFail(
          fmt::format("{} failed ({}): only shards that ran to the end can be merged", sh.label, first_line));
    }
    shards.push_back(std::move(sh));
  }
  return shards;
}

// The ranges: each where its I/N puts it, no shard twice, no overlap, no gap. Sorts the shards by range.
Status CheckCoverage(std::vector<Shard>& shards, const DocIds& doc_ids) {
  const auto n = static_cast<int64_t>(doc_ids.size());
  for (const Shard& sh : shards) {
    const ShardInfo& r = *sh.run.shard;
    if (r.count < 1 || r.index < 0 || r.index >= r.count || r.count > std::max<int64_t>(n, 1) ||
        r.begin != ShardRange(n, r.index, r.count).begin || r.end != ShardRange(n, r.index, r.count).end) {
      return UsageFail(fmt::format("{} records documents [{}, {}), not those of shard {}/{} of {} documents", sh.label,
                                   r.begin, r.end, r.index, r.count, n));
    }
  }
  for (std::size_t i = 0; i < shards.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      const ShardInfo &a = *shards[j].run.shard, &b = *shards[i].run.shard;
      if (a.index == b.index && a.count == b.count) {
        return UsageFail(
            fmt::format("shard {}/{} is given twice: {} and {}", a.index, a.count, shards[j].label, shards[i].label));
      }
    }
  }
  std::sort(shards.begin(), shards.end(), [](const Shard& a, const Shard& b) {
    return std::pair(a.run.shard->begin, a.run.shard->end) < std::pair(b.run.shard->begin, b.run.shard->end);
  });
  const bool one_count = std::all_of(shards.begin(), shards.end(),
                                     [&](const Shard& s) { return s.run.shard->count == shards[0].run.shard->count; });
  auto missing = [&](int64_t from, int64_t to) {
    std::string which;
    if (one_count) {
      const int64_t count = shards[0].run.shard->count;
      for (int64_t i = 0; i < count; ++i) {
        const ShardInfo r = ShardRange(n, i, count);
        if (r.begin >= from && r.end <= to)
          which += fmt::format("{}{}/{}", which.empty() ? "" : ", ", i, count);
      }
    }
    return UsageFail(fmt::format("missing shard{}: {} are in no shard given{}",
                                 which.find(',') == std::string::npos ? "" : "s", DocRange(doc_ids, from, to),
                                 which.empty() ? "" : " (shard " + which + ")"));
  };
  int64_t covered = 0;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const ShardInfo& r = *shards[i].run.shard;
    if (r.begin < covered) {
      const Shard& prev = shards[i - 1];
      return UsageFail(fmt::format("shards overlap: {} has {} and {} has {}", prev.label,
                                   DocRange(doc_ids, prev.run.shard->begin, prev.run.shard->end), shards[i].label,
                                   DocRange(doc_ids, r.begin, r.end)));
    }
    if (r.begin > covered) return missing(covered, r.begin);
    covered = r.end;
  }
  if (covered < n) return missing(covered, n);
  return Status::Ok();
}

// Each shard's slots and stored aggregates.
Status ReadSlots(Stores& stores, std::vector<Shard>& shards) {
  for (std::size_t i = 0; i < shards.size(); ++i) {
    for (const auto& [path, store] : stores) {
      if (path != shards[i].db) continue;
      auto slots = const_cast<RunStore&>(store).GetSlots(shards[i].run.id);
      if (!slots) return slots.error();
      shards[i].slots = std::move(*slots);
      auto aggregates = const_cast<RunStore&>(store).GetAggregates(shards[i].run.id);
      if (!aggregates) return aggregates.error();
      for (const AggregateValue& a : *aggregates) shards[i].aggregates[a.metric] = a.value;
    }
  }
  return Status::Ok();
}

Result<MergeResult> MergeShards(const MergeRequest& req) {
  if (req.from.empty()) return UsageFail("runs merge needs at least one --from STORE");
  auto stores_read = OpenStores(req);
  if (!stores_read) return stores_read.error();
  Stores& stores = *stores_read;
  auto picked = PickRuns(req, stores);
  if (!picked) return picked.error();
  auto shards_read = ReadShards(stores, *picked);
  if (!shards_read) return shards_read.error();
  std::vector<Shard>& shards = *shards_read;
  // One evaluation: the same dataset, predictions, system, profile, metrics, plugin files, parameters.
  for (std::size_t i = 1; i < shards.size(); ++i) {
    if (auto diff = Difference(shards[0], shards[i])) return UsageFail(*diff);
  }
  const DocIds& doc_ids = shards[0].run.doc_ids;
  const auto n = static_cast<int64_t>(doc_ids.size());
  if (Status st = CheckCoverage(shards, doc_ids); !st.ok()) return st.error();

  if (Status st = ReadSlots(stores, shards); !st.ok()) return st.error();

  // The plugins as the shards ran them, with their parameters, in one VM.
  const RunRecord& first = shards[0].run;
  auto profile = FindProfile(first.profile);
  if (!profile)
    return UsageFail(
        fmt::format("{} used profile '{}', which this kplab does not know", shards[0].label, first.profile));
  auto params = ParsePluginParams(first.params_json);
  if (!params) return params.error();
  LuaVm vm(req.limits);
  InstallAll(vm);
  lua_State* L = vm.state();
  DefineColumnTypes(L);
  const std::shared_ptr<RunBudget> budget = LuaVm::NewRunBudget(req.limits);
  vm.BeginRun(budget);
  struct EndRun {
    LuaVm& vm;
    ~EndRun() { vm.EndRun(); }
  } end_run{vm};

  MergeResult out;
  out.run = first;
  out.run.id = 0;
  out.run.shard.reset();
  out.run.created_at.clear();
  out.run.elapsed_seconds = 0;
  for (const Shard& sh : shards) {
    out.run.elapsed_seconds += sh.run.elapsed_seconds;
    out.shards.push_back(sh.label);
  }
  for (std::size_t pi = 0; pi < first.plugins.size(); ++pi) {
    const PluginRecord& rec = first.plugins[pi];
    auto file = FindPluginFile(rec, req.plugin_dirs, "the shards");
    if (!file) return file.error();
    auto plugin = LoadMetricPlugin(vm, *file);
    if (!plugin) return plugin.error();
    if (plugin->api < 2 || !plugin->unmergeable.empty()) {
      return UsageFail(fmt::format("metric '{}' cannot be merged ({})", rec.name,
                                   plugin->api < 2 ? "plugin API 1" : "unmergeable = \"" + plugin->unmergeable + "\""));
    }
    if (auto p = params->find(rec.name); p != params->end()) {
      if (auto st = ApplyParams(*plugin, p->second); !st) return st.error();
    }
    DeclaredColumns decl;
    if (Status st = DeclareColumns(vm, *plugin, decl); !st.ok()) return st.error();
    lua_pop(L, 1);  // ctx.slots: nothing is scored here
    struct Unref {
      lua_State* L;
      int ref;
      ~Unref() { luaL_unref(L, LUA_REGISTRYINDEX, ref); }
    } unref{L, decl.customs_ref};
    const std::vector<std::string> subsets = plugin->subsets.empty() ? std::vector<std::string>{""} : plugin->subsets;
    const std::string dataset = first.dataset_name, system = first.system;
    const auto ctx = [&](lua_State* Ls) { PushMergeCtx(Ls, *profile, doc_ids.size(), dataset, system); };
    Columns3 values(subsets.size(), std::vector<std::vector<double>>(decl.slots.size()));
    std::vector<bool> stored(subsets.size(), false);
    for (std::size_t k = 0; k < shards.size(); ++k) {
      Shard& sh = shards[k];
      auto own = ShardSlots(sh, pi, rec.name, decl, subsets, static_cast<std::size_t>(n));
      if (!own) return own.error();
      if (Status st = SameSubsets(sh, shards[0], *own, stored, k == 0, rec.name, subsets); !st.ok()) return st.error();
      for (std::size_t s = 0; s < subsets.size(); ++s) {
        for (std::size_t j = 0; j < decl.slots.size(); ++j) {
          if ((*own)[s][j].empty()) continue;
          if (values[s][j].empty()) values[s][j].assign(static_cast<std::size_t>(n), kNaN);
          std::copy((*own)[s][j].begin() + sh.run.shard->begin, (*own)[s][j].begin() + sh.run.shard->end,
                    values[s][j].begin() + sh.run.shard->begin);
        }
      }
      PluginOutcome alone;
      if (Status st = FinishSlots(vm, *plugin, decl, std::move(*own), ctx, alone); !st.ok()) return st.error();
      if (Status st = OwnAggregatesMatch(sh, alone.aggregates, rec.name); !st.ok()) return st.error();
    }
    PluginOutcome o;
    o.plugin = rec.name;
    Status st = FinishSlots(vm, *plugin, decl, std::move(values), ctx, o);
    if (!st.ok()) return st.error();
    for (const auto& [subset, docs] : SubsetDocCounts(o.columns)) {
      out.subset_docs[subset] = std::max(out.subset_docs[subset], docs);
    }
    for (std::size_t c = 0; c < o.columns.metrics.size(); ++c) {
      out.scores.metrics.push_back(std::move(o.columns.metrics[c]));
      out.scores.columns.push_back(std::move(o.columns.columns[c]));
    }
    for (auto& a : o.aggregates) out.aggregates.push_back(std::move(a));
    ReleaseMetricPlugin(vm, *plugin);
  }
  for (const Shard& sh : shards) {
    if (!sh.aggregates.empty()) {
      return StoreFail(fmt::format("{} stored aggregate '{}', which none of its plugins gives (its aggregates were "
                                   "changed)",
                                   sh.label, sh.aggregates.begin()->first));
    }
  }
  return out;
}

}  // namespace kplab::host
