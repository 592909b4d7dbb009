#include "runner.h"

#include <cstdio>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "bindings.h"
#include "columns.h"
#include "kplab/kernels.h"
#include "kplab/safe_text.h"
#include "kplab/semrp_kernel.h"
#include "lanes.h"
#include "lua_util.h"
#include "pairs.h"

namespace kplab::host {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Canonical order of metric names: subset (all, present, absent, other), then the order the plugin
// first produced them in.
int SubsetRank(std::string_view name) {
  if (name.starts_with("all.")) return 0;
  if (name.starts_with("present.")) return 1;
  if (name.starts_with("absent.")) return 2;
  return 3;
}

// Display order of metric names "subset.measure@k.avg": subset (all, present, absent, other), then
// segments compared naturally (numbers numerically and before words), with p, r, f1 first among
// measures and micro before macro.
int SegmentRank(std::string_view seg) {
  static const char* kFirst[] = {"p", "r", "f1", "micro", "macro", "macro_hm", "macro_doc"};
  for (int i = 0; i < 7; ++i) {
    if (seg == kFirst[i]) return i;
  }
  return 100;
}

// Compares digit strings by value without converting (any length): fewer significant digits first.
int CompareDigits(std::string_view x, std::string_view y) {
  while (x.size() > 1 && x[0] == '0') x.remove_prefix(1);
  while (y.size() > 1 && y[0] == '0') y.remove_prefix(1);
  if (x.size() != y.size()) return x.size() < y.size() ? -1 : 1;
  return x.compare(y);
}

bool IsDigits(std::string_view x) {
  return !x.empty() && std::all_of(x.begin(), x.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

bool MetricNameLess(std::string_view a, std::string_view b) {
  const int ra = SubsetRank(a), rb = SubsetRank(b);
  if (ra != rb) return ra < rb;
  const std::string_view full_a = a, full_b = b;
  auto next = [](std::string_view& s) {
    const auto pos = s.find_first_of(".@");
    std::string_view seg = s.substr(0, pos);
    s = pos == std::string_view::npos ? std::string_view() : s.substr(pos + 1);
    return seg;
  };
  while (!a.empty() && !b.empty()) {
    const std::string_view x = next(a), y = next(b);
    if (x == y) continue;
    const bool nx = IsDigits(x), ny = IsDigits(y);
    if (nx && ny) {
      if (const int c = CompareDigits(x, y); c != 0) return c < 0;
      break;  // "5" vs "05": equal values, fall back to the plain order below
    }
    if (nx != ny) return nx;
    const int sx = SegmentRank(x), sy = SegmentRank(y);
    if (sx != sy) return sx < sy;
    return x < y;
  }
  return full_a < full_b;  // a total order: names that compare equal above are ordered as strings
}

namespace {

struct Columns {
  std::vector<std::string> names;
  std::vector<std::vector<double>> values;
  std::unordered_map<std::string, std::size_t> index;
  // Cache of Lua string pointers -> column; verified against the content on every hit because a
  // collected string's address can be reused by another.
  std::unordered_map<const char*, std::size_t> by_ptr;

  std::size_t Find(const char* s, std::size_t len, std::size_t n_docs) {
    auto it = by_ptr.find(s);
    if (it != by_ptr.end() && names[it->second].size() == len &&
        std::memcmp(names[it->second].data(), s, len) == 0) {
      return it->second;
    }
    std::string name(s, len);
    auto jt = index.find(name);
    std::size_t col;
    if (jt == index.end()) {
      col = names.size();
      names.push_back(name);
      values.emplace_back(n_docs, kNaN);
      index.emplace(std::move(name), col);
    } else {
      col = jt->second;
    }
    by_ptr[s] = col;
    return col;
  }
};

}  // namespace

// Where ctx.unit writes: the lane's rows and the document being scored.
struct UnitSink {
  const DeclaredColumns* decl = nullptr;
  std::vector<UnitRow>* rows = nullptr;  // null: checked, not kept
  std::size_t doc = 0, subset = 0;
};

struct MetricRunner::Partial {
  Columns cols;
  std::optional<ScriptError> error;
  std::vector<UnitRow> units;  // ctx.unit's rows, in the lane's document order
};

namespace {

// ctx.unit's upvalue: the sink of the lane that handed out this ctx, valid while its scoring runs.
constexpr const char* kUnitSinkMeta = "kplab.UnitSink";
struct UnitSinkUd {
  UnitSink* sink;
  std::weak_ptr<const void> lease;
};

// ctx.unit(key, values): one unit of the document being scored (c:units). key: a number identifying the
// unit within its document (the same unit in another run of the dataset has the same key); values: slot
// or declared name -> number, as `out`.
int CtxUnit(lua_State* L) {
  auto* ud = static_cast<UnitSinkUd*>(lua_touserdata(L, lua_upvalueindex(1)));
  if (ud->lease.expired()) return luaL_error(L, "ctx.unit used after the scoring it was given to ended");
  UnitSink* sink = ud->sink;
  const double key = luaL_checknumber(L, 1);
  if (!std::isfinite(key)) {
    throw std::runtime_error(fmt::format("ctx.unit: the key must be a finite number (got {})",
                                         std::isnan(key) ? "NaN" : key > 0 ? "inf" : "-inf"));
  }
  luaL_checktype(L, 2, LUA_TTABLE);
  UnitRow row;
  row.doc = sink->doc;
  row.subset = sink->subset;
  row.key = key;
  const auto n_slots = static_cast<lua_Integer>(sink->decl->slots.size());
  lua_pushnil(L);
  while (lua_next(L, 2) != 0) {
    int slot = 0;
    if (lua_isinteger(L, -2) && lua_tointeger(L, -2) >= 1 && lua_tointeger(L, -2) <= n_slots) {
      slot = static_cast<int>(lua_tointeger(L, -2));
    } else if (lua_type(L, -2) == LUA_TSTRING) {
      auto it = sink->decl->slot_of.find(lua_tostring(L, -2));
      if (it != sink->decl->slot_of.end()) slot = it->second;
    }
    if (slot == 0) {
      throw std::runtime_error(fmt::format("ctx.unit: key {} of the values is not a declared column (expected a slot "
                                           "from c:column / c:hidden or a declared name)",
                                           RawText(L, -2)));
    }
    if (lua_type(L, -1) != LUA_TNUMBER) {
      throw std::runtime_error(fmt::format("ctx.unit: column '{}' = a {} (expected a number)",
                                           sink->decl->slots[static_cast<std::size_t>(slot - 1)].name,
                                           luaL_typename(L, -1)));
    }
    row.values.emplace_back(slot, lua_tonumber(L, -1));
    lua_pop(L, 1);
  }
  if (sink->rows) sink->rows->push_back(std::move(row));
  return 0;
}

// The userdata types the runner hands to plugins (ctx.unit's sink), defined in each VM that scores.
void DefineRunnerTypes(lua_State* L) {
  if (luaL_getmetatable(L, kUnitSinkMeta) == LUA_TNIL) {
    static const luaL_Reg kNone[] = {{nullptr, nullptr}};
    DefineType<UnitSinkUd>(L, kUnitSinkMeta, kNone);
  }
  lua_pop(L, 1);
}

}  // namespace

MetricRunner::MetricRunner(std::vector<Lane> lanes, std::shared_ptr<const Corpus> corpus, RunContext ctx,
                           LaneFactory more)
    : lanes_(std::move(lanes)), more_lanes_(std::move(more)), corpus_(std::move(corpus)), rc_(std::move(ctx)) {
  n_docs_ = rc_.streamed_docs ? *rc_.streamed_docs : corpus_->docs.size();
  const std::size_t first = std::min(rc_.begin, n_docs_);
  const std::size_t last = rc_.end == 0 ? n_docs_ : std::clamp(rc_.end, first, n_docs_);
  offset_ = first;
  n_scored_ = last - first;
  max_lanes_ = std::max<std::size_t>(1, rc_.max_lanes > 0 ? rc_.max_lanes : lanes_.size());
  bounds_ = {first, last};
  for (const Lane& lane : lanes_) SetUpVm(lane.vm->state());
}

void MetricRunner::SetUpVm(lua_State* L) const {
  DefineColumnTypes(L);
  DefineRunnerTypes(L);
  SetEmbeddingSpace(L, rc_.space);
}

std::size_t MetricRunner::VmLanes(const MetricPlugin& plugin) const {
  return plugin.api >= 2 && !plugin.kernel.empty() ? 1 : n_lanes_;
}

void MetricRunner::ChooseLanes(const MetricPlugin& plugin) {
  const std::size_t most = std::max<std::size_t>(1, std::min(max_lanes_, n_scored_));
  n_lanes_ = rc_.lanes_by_cost ? LanesFor(plugin, n_scored_, most) : most;
  while (lanes_.size() < VmLanes(plugin)) {
    Result<Lane> lane = more_lanes_ ? more_lanes_() : Result<Lane>(Error::Limit("no more lanes"));
    if (!lane) {
      // The numbers do not depend on the lanes: a plugin scores on the VMs there are.
      n_lanes_ = lanes_.size();
      break;
    }
    SetUpVm(lane->vm->state());
    lanes_.push_back(std::move(*lane));
  }
  bounds_.clear();
  for (std::size_t l = 0; l <= n_lanes_; ++l) bounds_.push_back(offset_ + n_scored_ * l / n_lanes_);
}

void MetricRunner::PushCtx(lua_State* L) {
  lua_createtable(L, 0, 4);
  PushProfile(L, corpus_->profile);
  lua_setfield(L, -2, "profile");
  lua_pushinteger(L, static_cast<lua_Integer>(n_docs_));
  lua_setfield(L, -2, "n_docs");
  SetString(L, "dataset", rc_.dataset_name);
  SetString(L, "system", rc_.system);
  AddEmbeddingCtx(L);
  if (pairs_) AddPairsCtx(L, corpus_, pairs_);
}

namespace {

// Between documents, a VM past half its memory limit collects in full. The garbage of a call is mostly
// userdata with finalizers (lists, matches), which Lua's emergency collection on a failed allocation
// does not free; left to the incremental pace they piled up to the limit over a few hundred thousand
// documents (a plugin calling one list method per document failed at ~145k documents under 4 MiB, the
// Lua rprec at ~840k under the default 256 MiB). After a collection the next one waits until the heap has
// grown by an eighth of the limit, so live data above half the limit does not mean a collection a call.
class DocumentCollector {
 public:
  explicit DocumentCollector(LuaVm& vm) : vm_(vm), limit_(vm.limits().memory_bytes), at_(limit_ / 2) {}
  void AfterDocument() {
    if (limit_ == 0 || vm_.memory_in_use() <= at_) return;
    lua_gc(vm_.state(), LUA_GCCOLLECT, 0);
    at_ = std::max(limit_ / 2, vm_.memory_in_use() + limit_ / 8);
  }

 private:
  LuaVm& vm_;
  std::size_t limit_, at_;
};

ScriptError PluginError(const MetricPlugin& plugin, std::string message) {
  ScriptError e;
  e.plugin = plugin.name;
  e.file = plugin.file.display_name;
  e.message = std::move(message);
  return e;
}

}  // namespace

namespace {

// API 1: score(doc, params, ctx, out) for document `d`; the numbers it returns go to row `row` of `cols`
// (columns of n_rows values). Returns false with `error` set.
bool ScoreDocumentV1(LuaVm& vm, const MetricPlugin& plugin, const std::shared_ptr<const Corpus>& corpus,
                     std::uint64_t random_seed, int params_idx, int ctx_idx, int out_idx, std::size_t d, Columns& cols,
                     std::size_t row, std::size_t n_rows, std::optional<ScriptError>& error) {
  lua_State* L = vm.state();
  lua_rawgeti(L, LUA_REGISTRYINDEX, plugin.score_ref);
  PushDocument(L, corpus, d);
  lua_pushvalue(L, params_idx);
  lua_pushvalue(L, ctx_idx);
  lua_pushvalue(L, out_idx);
  const std::string& doc_id = corpus->docs[d].id;
  SeedForDocument(L, plugin, random_seed, doc_id);
  if (auto err = vm.Call(4, 1, plugin.name)) {
    err->message += fmt::format(" (while scoring document '{}')", doc_id);
    error = std::move(*err);
    return false;
  }
  if (!lua_istable(L, -1)) {
    error = PluginError(plugin, fmt::format("{}: score must return a table of numbers (got {}) for document '{}'",
                                            plugin.file.display_name, luaL_typename(L, -1), doc_id));
    lua_pop(L, 1);
    return false;
  }
  const bool reused = lua_rawequal(L, -1, out_idx);
  lua_pushnil(L);
  while (lua_next(L, -2)) {  // [.., result, key, value]
    if (lua_type(L, -2) != LUA_TSTRING) {
      error = PluginError(plugin, fmt::format("{}: score result for document '{}' must map metric names (strings) to "
                                              "numbers (got a {} key)",
                                              plugin.file.display_name, doc_id, luaL_typename(L, -2)));
      break;
    }
    if (lua_type(L, -1) != LUA_TNUMBER) {
      std::string name = lua_tostring(L, -2);
      if (name.size() > 80) name = name.substr(0, 77) + "...";
      error = PluginError(plugin, fmt::format("{}: score result for document '{}': metric '{}' is a {} (expected a "
                                              "number)",
                                              plugin.file.display_name, doc_id, name, luaL_typename(L, -1)));
      break;
    }
    std::size_t len = 0;
    const char* key = lua_tolstring(L, -2, &len);
    if (len == 0 || std::memchr(key, '\0', len) != nullptr) {
      error = PluginError(plugin, fmt::format("{}: score result for document '{}' has an empty metric name or one "
                                              "containing a NUL byte",
                                              plugin.file.display_name, doc_id));
      break;
    }
    if (Status st = CheckName("metric name", std::string_view(key, len)); !st.ok()) {
      error = PluginError(plugin, fmt::format("{}: score result for document '{}': {}", plugin.file.display_name,
                                              doc_id, st.message()));
      break;
    }
    cols.values[cols.Find(key, len, n_rows)][row] = lua_tonumber(L, -1);
    lua_pop(L, 1);
    if (reused) {  // clear the entry: assigning nil to an existing field is allowed during traversal
      lua_pushvalue(L, -1);
      lua_pushnil(L);
      lua_rawset(L, -4);
    }
  }
  lua_settop(L, out_idx);
  return !error;
}

}  // namespace

// Scores the lane's documents: score(doc, params, ctx, out) where `out` is one table reused for every
// document (cleared after each is read), so a plugin that fills and returns it allocates nothing.
void MetricRunner::Score(std::size_t lane, std::size_t index, Partial& part, const Progress* progress) {
  LuaVm& vm = *lanes_[lane].vm;
  const MetricPlugin& plugin = *lanes_[lane].plugins[index];
  lua_State* L = vm.state();
  const int base = lua_gettop(L);
  const std::size_t begin = bounds_[lane], end = bounds_[lane + 1], n = end - begin;
  // A document's userdata is made when its call comes (a table of them all held ~100 bytes a document in
  // the VM for the whole run, against the plugin's memory limit).
  PushParams(L, plugin);      // [params]
  PushCtx(L);                 // [params, ctx]
  lua_createtable(L, 0, 64);  // [params, ctx, out]
  const int params_idx = base + 1, ctx_idx = base + 2, out_idx = base + 3;
  std::size_t next_report = 0;
  DocumentCollector collector(vm);
  for (std::size_t i = 0; i < n; ++i) {
    collector.AfterDocument();
    if (!ScoreDocumentV1(vm, plugin, corpus_, rc_.random_seed, params_idx, ctx_idx, out_idx, begin + i, part.cols, i, n,
                         part.error)) {
      break;
    }
    if (progress && *progress && i >= next_report) {
      (*progress)(plugin.name, (i + 1) * n_lanes_, n_scored_);
      next_report = i + std::max<std::size_t>(n / 100, 1);
    }
  }
  lua_settop(L, base);
}

namespace {

// MemAvailable of /proc/meminfo (free memory plus what the kernel can reclaim), 0 when unknown.
double AvailableMemoryBytes() {
  // file-gate: the system's free memory, a fixed /proc path no one else names
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (f == nullptr) return 0;
  char line[256];
  double kib = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::sscanf(line, "MemAvailable: %lf kB", &kib) == 1) break;
  }
  std::fclose(f);
  return kib * 1024;
}

int SubsetView(const std::string& name) { return name == "all" ? 0 : name == "present" ? 1 : 2; }

}  // namespace

// The native kernel of a plugin whose score is kp.kernel.NAME, with the run's parameters: built once per
// run and shared by the lanes (a kernel is read-only while it scores).
Result<std::unique_ptr<MetricKernel>> MetricRunner::MakeKernel(const MetricPlugin& plugin) const {
  auto fail = [&](const std::string& message) -> Result<std::unique_ptr<MetricKernel>> {
    return Error::Script(fmt::format("{}: {}", plugin.file.display_name, message));
  };
  auto param = [&](const char* name) -> const ParamValue* {
    auto it = plugin.params.find(name);
    return it == plugin.params.end() ? nullptr : &it->second;
  };
  if (plugin.kernel == "semrp") {
    if (!rc_.space) return fail("score = kp.kernel.semrp needs the run's embeddings (needs = {\"embeddings\"})");
    SemrpParams sp;
    sp.k = static_cast<int>(std::get<double>(*param("k")));
    sp.clamp = std::get<bool>(*param("clamp"));
    sp.alpha = std::get<double>(*param("alpha"));
    if (const ParamValue* dedup = param("dedup")) sp.dedup = std::get<std::string>(*dedup);
    if (sp.dedup != "profile" && sp.dedup != "true" && sp.dedup != "false") {
      return fail(fmt::format("parameter 'dedup' must be one of: profile, true, false (got '{}')", sp.dedup));
    }
    if (const std::string& ks = std::get<std::string>(*param("ks")); !ks.empty()) {
      Result<std::vector<Cutoff>> parsed = ParseCutoffs(ks);
      if (!parsed) return fail("parameter 'ks': " + parsed.error().message);
      for (const Cutoff& c : *parsed) {
        if (c.k == 0) return fail(fmt::format("parameter 'ks' must list integers >= 1 (got '{}')", c.Text()));
        sp.ks.push_back(c.k);
      }
    }
    return MakeSemrpKernel(rc_.space, sp, corpus_->profile);
  }
  kplab::KernelParams kp;
  if (const ParamValue* ks = param("ks")) {
    Result<std::vector<Cutoff>> parsed = ParseCutoffs(std::get<std::string>(*ks));
    if (!parsed) return fail("parameter 'ks': " + parsed.error().message);
    kp.ks = std::move(*parsed);
  }
  if (const ParamValue* alpha = param("alpha")) kp.alpha = std::get<double>(*alpha);
  Result<std::unique_ptr<MetricKernel>> kernel = MakeMetricKernel(plugin.kernel, kp, corpus_->profile);
  if (!kernel) return fail(kernel.error().message);
  return kernel;
}

namespace {

// Asks the memory system for what a kernel reads of a document it will score soon: stage 0 its
// keyphrase lists and their views (the document's record must be in), stage 1 (once the lists are in)
// their phrases. In a large corpus each is a cache miss;
// requested a few documents ahead, they arrive while the documents before are scored instead of being
// waited for one after another. Changes nothing.
void PrefetchDocument(const Document& doc, int stage) {
  for (const std::span<const Keyphrase> list : {doc.preds, doc.refs}) {
    if (stage == 0) {  // the whole list's view is the list itself (KeyphraseList in place)
      const char* p = reinterpret_cast<const char*>(list.data());
      for (std::size_t off = 0; off < list.size_bytes(); off += 64) __builtin_prefetch(p + off);
    } else {
      for (const Keyphrase& kp : list) __builtin_prefetch(&kp.phrase->key);
    }
  }
}

// Asks for what the kernels will read of docs[i + k] (docs[0, n) being scored in order): the records
// 16 documents ahead, their lists 8 ahead, their phrases 4 ahead.
void PrefetchAhead(const Document* docs, std::size_t i, std::size_t n) {
  constexpr std::size_t kDocAhead = 16, kListsAhead = 8, kPhrasesAhead = 4;
  if (i + kDocAhead < n) {
    const char* rec = reinterpret_cast<const char*>(&docs[i + kDocAhead]);
    for (std::size_t off = 0; off < sizeof(Document); off += 64) __builtin_prefetch(rec + off);
  }
  if (i + kListsAhead < n) PrefetchDocument(docs[i + kListsAhead], 0);
  if (i + kPhrasesAhead < n) PrefetchDocument(docs[i + kPhrasesAhead], 1);
}

}  // namespace

namespace {

// How a kernel's values land in a plugin's declared slots, and the subsets a document has: all of them
// with source text, only "all" (and subset-less) without.
struct KernelLayout {
  std::vector<int> slot_of_value;  // kernel value i -> declared slot (0-based) or -1
  std::vector<KernelSubset> with_text, without_text;
  std::vector<std::size_t> with_index, without_index;  // row -> subset index
  std::string error;                                   // a declared column the kernel does not write
};

KernelLayout LayOutKernel(const MetricKernel& kernel, const MetricPlugin& plugin, const DeclaredColumns& decl) {
  KernelLayout out;
  const std::vector<std::string>& names = kernel.names();
  out.slot_of_value.assign(names.size(), -1);
  std::vector<bool> written(decl.slots.size(), false);
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (auto it = decl.slot_of.find(names[i]); it != decl.slot_of.end()) {
      out.slot_of_value[i] = it->second - 1;
      written[static_cast<std::size_t>(it->second - 1)] = true;
    }
  }
  for (std::size_t j = 0; j < decl.slots.size(); ++j) {
    if (written[j]) continue;
    std::string list;
    for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
    out.error = fmt::format("{}: column '{}' is declared, but score = kp.kernel.{} does not write it (it writes: {})",
                            plugin.file.display_name, decl.slots[j].name, plugin.kernel, list);
    return out;
  }
  const std::size_t n_sub = plugin.subsets.empty() ? 1 : plugin.subsets.size();
  for (std::size_t s = 0; s < n_sub; ++s) {
    KernelSubset ks;
    if (!plugin.subsets.empty()) ks = {SubsetView(plugin.subsets[s]), plugin.subsets[s]};
    out.with_text.push_back(ks);
    out.with_index.push_back(s);
    if (ks.view == 0) {
      out.without_text.push_back(ks);
      out.without_index.push_back(s);
    }
  }
  return out;
}

// Where a kernel's values of a document go: per subset of a document with text (layout.with_text),
// and of one without, then per value, the first element of its slot column in dest (null: a value the
// plugin does not declare, dropped). Resolved once for a range of documents, not per value: dest's
// columns are sized before the range is scored and keep their place.
struct KernelTargets {
  std::vector<double*> with_text, without_text;
};

KernelTargets TargetsOf(const KernelLayout& layout, std::size_t n_names,
                        std::vector<std::vector<std::vector<double>>>& dest) {
  auto targets = [&](const std::vector<KernelSubset>& subsets, const std::vector<std::size_t>& index_of) {
    std::vector<double*> out(subsets.size() * n_names, nullptr);
    for (std::size_t r = 0; r < subsets.size(); ++r) {
      for (std::size_t k = 0; k < n_names; ++k) {
        if (const int slot = layout.slot_of_value[k]; slot >= 0) {
          out[r * n_names + k] = dest[index_of[r]][static_cast<std::size_t>(slot)].data();
        }
      }
    }
    return out;
  };
  return {targets(layout.with_text, layout.with_index), targets(layout.without_text, layout.without_index)};
}

// Scores `doc` with the kernel into its targets' columns at `row`; `values` is scratch space of
// kernel.names().size() * layout.with_text.size() values.
void ScoreWithKernel(const MetricKernel& kernel, const KernelLayout& layout, const KernelTargets& targets,
                     const Corpus& corpus, const Document& doc, std::vector<double>& values, std::size_t row) {
  const auto& subsets = doc.has_text ? layout.with_text : layout.without_text;
  const std::vector<double*>& to = doc.has_text ? targets.with_text : targets.without_text;
  kernel.Score(corpus, doc, subsets, values);
  for (std::size_t j = 0; j < to.size(); ++j) {
    if (to[j] != nullptr) to[j][row] = values[j];
  }
}

}  // namespace

// A plugin whose score is kp.kernel.NAME: the native kernel scores every document and subset of the
// lane straight into the declared slots; no Lua runs per document. Every declared column must be one the
// kernel writes (a misspelt name would otherwise stay empty); columns it writes that the plugin did not
// declare are dropped.
void MetricRunner::ScoreKernel(std::size_t lane, std::size_t index, const DeclaredColumns& decl, Partial& part,
                               const Progress* progress) {
  const MetricPlugin& plugin = *lanes_[0].plugins[index];  // a kernel's lanes past the first have no VM
  const std::size_t begin = bounds_[lane], end = bounds_[lane + 1], n = end - begin;
  const MetricKernel& kernel = *kernel_;
  const KernelLayout layout = LayOutKernel(kernel, plugin, decl);
  if (!layout.error.empty()) {
    part.error = PluginError(plugin, layout.error);
    return;
  }
  std::vector<double> values(kernel.names().size() * layout.with_text.size());
  const KernelTargets targets = TargetsOf(layout, kernel.names().size(), v2_);
  std::size_t next_report = 0;
  for (std::size_t i = 0; i < n; ++i) {
    PrefetchAhead(corpus_->docs.data() + begin, i, n);
    ScoreWithKernel(kernel, layout, targets, *corpus_, corpus_->docs[begin + i], values, begin + i - offset_);
    if (progress && *progress && i >= next_report) {
      (*progress)(plugin.name, (i + 1) * n_lanes_, n_scored_);
      next_report = i + std::max<std::size_t>(n / 100, 1);
    }
  }
}

void MetricRunner::ScoreV2(std::size_t lane, std::size_t index, const DeclaredColumns& decl, int slots_ref,
                           Partial& part, const Progress* progress) {
  if (!lanes_[0].plugins[index]->kernel.empty()) {
    ScoreKernel(lane, index, decl, part, progress);
    return;
  }
  const MetricPlugin& plugin = *lanes_[lane].plugins[index];
  LuaVm& vm = *lanes_[lane].vm;
  lua_State* L = vm.state();
  const int base = lua_gettop(L);
  const std::size_t begin = bounds_[lane], end = bounds_[lane + 1], n = end - begin;
  // Units are kept only when the run keeps its slots (--ci); otherwise ctx.unit checks and drops them.
  UnitSink sink{&decl, rc_.keep_slots ? &part.units : nullptr};
  const BorrowScope unit_scope;
  const V2Frame frame = PushV2Frame(L, plugin, decl, slots_ref, sink, unit_scope);
  std::size_t next_report = 0;
  DocumentCollector collector(vm);
  for (std::size_t i = 0; i < n && !part.error; ++i) {
    if (!ScoreDocumentV2(vm, plugin, decl, frame, sink, begin + i, v2_, begin + i - offset_, part.error)) break;
    collector.AfterDocument();
    // After every document: a value flipped back and forth would pass a check at the lane's end only.
    if (std::string state = vm.CheckState(plugin.state_ref); !state.empty()) {
      part.error = PluginError(plugin, state + fmt::format(" (after document '{}')", corpus_->docs[begin + i].id));
    }
    if (progress && *progress && i >= next_report) {
      (*progress)(plugin.name, (i + 1) * n_lanes_, n_scored_);
      next_report = i + std::max<std::size_t>(n / 100, 1);
    }
  }
  lua_settop(L, base);
}

MetricRunner::V2Frame MetricRunner::PushV2Frame(lua_State* L, const MetricPlugin& plugin, const DeclaredColumns& decl,
                                                int slots_ref, UnitSink& sink, const BorrowScope& unit_scope) {
  const int base = lua_gettop(L);
  PushParams(L, plugin);  // [params]
  PushCtx(L);             // [params, ctxdata]
  lua_rawgeti(L, LUA_REGISTRYINDEX, slots_ref);
  lua_setfield(L, -2, "slots");
  if (decl.prepared_ref >= 0) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, decl.prepared_ref);
    lua_setfield(L, -2, "prepared");
  }
  if (!decl.units.empty()) {
    NewUserdata<UnitSinkUd>(L, kUnitSinkMeta, UnitSinkUd{&sink, unit_scope.Lease()});
    lua_pushcclosure(L, Safe<CtxUnit>, 1);
    lua_setfield(L, -2, "unit");
  }
  // Deep read-only (ctx.pairs, ctx.model, ...): nothing written to ctx can reach the next document.
  FreezeTableFields(L, -1, "ctx");
  PushReadOnlyProxy(L, -1, "ctx");                             // [params, ctxdata, ctx]
  lua_createtable(L, static_cast<int>(decl.slots.size()), 0);  // [params, ctxdata, ctx, out]
  return V2Frame{base + 1, base + 2, base + 3, base + 4};
}

// API 2: score(preds, refs, doc, params, ctx, out) once per declared subset of a document (ctx.subset
// names it; a document without text has no present/absent subset), or score(doc, params, ctx, out)
// without subsets. `out` is one table reused for every call; the plugin writes numbers by slot
// (out[slot] = v) or by declared name; whatever it does not write has no value.
bool MetricRunner::ScoreDocumentV2(LuaVm& vm, const MetricPlugin& plugin, const DeclaredColumns& decl, const V2Frame& f,
                                   UnitSink& sink, std::size_t d, SlotArrays& dest, std::size_t row,
                                   std::optional<ScriptError>& error) {
  lua_State* L = vm.state();
  const std::size_t n_sub = plugin.subsets.empty() ? 1 : plugin.subsets.size();
  const std::size_t n_slots = decl.slots.size();
  auto fail = [&](std::string message) { error = PluginError(plugin, std::move(message)); };
  PushDocument(L, corpus_, d);  // [.., doc]
  const int doc_idx = lua_gettop(L);
  const std::string& doc_id = corpus_->docs[d].id;
  // The plugin's math.random, seeded for this document: its numbers do not depend on the lane.
  SeedForDocument(L, plugin, rc_.random_seed, doc_id);
  for (std::size_t s = 0; s < n_sub && !error; ++s) {
    sink.doc = d;
    sink.subset = s;
    lua_rawgeti(L, LUA_REGISTRYINDEX, plugin.score_ref);
    int nargs = 4;
    std::string where = fmt::format("document '{}'", doc_id);
    if (!plugin.subsets.empty()) {
      lua_pushstring(L, plugin.subsets[s].c_str());
      lua_setfield(L, f.data, "subset");
      if (PushDocSubset(L, doc_idx, SubsetView(plugin.subsets[s])) == 0) {
        lua_pop(L, 1);
        continue;
      }
      nargs = 6;
      where += fmt::format(", subset '{}'", plugin.subsets[s]);
    }
    lua_pushvalue(L, doc_idx);
    lua_pushvalue(L, f.params);
    lua_pushvalue(L, f.ctx);
    lua_pushvalue(L, f.out);
    if (auto err = vm.Call(nargs, 0, plugin.name)) {
      err->message += fmt::format(" (while scoring {})", where);
      error = std::move(*err);
      break;
    }
    // A metatable set on `out` would survive into the next call: cleared with the contents below.
    lua_pushnil(L);
    lua_setmetatable(L, f.out);
    auto& cols = dest[s];
    auto store = [&](std::size_t slot0, const std::string& shown) {
      if (lua_type(L, -1) != LUA_TNUMBER) {
        fail(fmt::format("{}: score wrote column '{}' = a {} for {} (expected a number)", plugin.file.display_name,
                         shown, luaL_typename(L, -1), where));
        return;
      }
      if (!cols[slot0].empty()) cols[slot0][row] = lua_tonumber(L, -1);
    };
    for (std::size_t j = 1; j <= n_slots && !error; ++j) {
      if (lua_rawgeti(L, f.out, static_cast<lua_Integer>(j)) != LUA_TNIL) {
        store(j - 1, decl.slots[j - 1].name);
        lua_pushnil(L);
        lua_rawseti(L, f.out, static_cast<lua_Integer>(j));
      }
      lua_pop(L, 1);
    }
    // Anything else in out: a declared name, or the plugin's mistake.
    lua_pushnil(L);
    while (!error && lua_next(L, f.out) != 0) {  // [.., key, value]
      std::size_t len = 0;
      const char* key = lua_type(L, -2) == LUA_TSTRING ? lua_tolstring(L, -2, &len) : nullptr;
      auto it = key ? decl.slot_of.find(std::string(key, len)) : decl.slot_of.end();
      if (it == decl.slot_of.end()) {
        // Raw: the scoring call is over, and a key's __tostring is the plugin's code.
        std::string shown = key ? std::string(key, len) : RawText(L, -2);
        if (shown.size() > 80) shown = shown.substr(0, 77) + "...";
        fail(
            fmt::format("{}: score wrote out[{}] for {}, which is not a declared column (write out[slot] with a "
                        "slot from c:column / c:hidden, or a declared name)",
                        plugin.file.display_name, key ? "'" + shown + "'" : shown, where));
        lua_pop(L, 2);
        break;
      }
      store(static_cast<std::size_t>(it->second - 1), it->first);
      lua_pop(L, 1);
      lua_pushvalue(L, -1);
      lua_pushnil(L);
      lua_rawset(L, f.out);  // clearing an existing field is allowed during traversal
    }
  }
  lua_settop(L, f.out);
  return !error;
}

// prepare(corpus, params, ctx) in one lane's VM: the whole corpus (a shard's run sees every document, so
// every shard prepares the same value and shards stay mergeable). The value must be plain data; it is
// kept deep read-only in decl.prepared_ref. Each lane prepares its own copy (values do not cross VMs).
std::optional<ScriptError> MetricRunner::Prepare(LuaVm& vm, const MetricPlugin& plugin, DeclaredColumns& decl) {
  if (plugin.prepare_ref < 0) return std::nullopt;
  lua_State* L = vm.state();
  const int top = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, plugin.prepare_ref);
  PushCorpus(L, corpus_);
  PushParams(L, plugin);
  PushCtx(L);
  FreezeTableFields(L, -1, "ctx");
  PushReadOnlyProxy(L, -1, "ctx");
  lua_remove(L, -2);
  SeedForCall(L, plugin, "prepare");
  // Files the user named in this plugin's parameters may be read while prepare runs, and only then.
  struct Grant {
    LuaVm& vm;
    std::shared_ptr<const FileGrants> saved;
    ~Grant() { vm.SetFileGrants(saved); }
  } grant{vm, vm.file_grants()};
  vm.SetFileGrants(std::make_shared<const FileGrants>(FileGrants::Plugin(plugin.readable_files)));
  if (std::optional<ScriptError> err = vm.Call(3, 1, plugin.name)) {
    lua_settop(L, top);
    err->plugin = plugin.name;
    return err;
  }
  std::string problem = CheckPlainData(L, -1, "the value prepare(corpus, params, ctx) returned");
  if (!problem.empty()) problem += " (expected plain data: strings, numbers, booleans and tables of them)";
  if (std::string state = vm.CheckState(plugin.state_ref); problem.empty() && !state.empty()) problem = state;
  if (!problem.empty()) {
    lua_settop(L, top);
    return PluginError(plugin, fmt::format("{}: {}", plugin.file.display_name, problem));
  }
  if (std::string e = PushDeepReadOnly(L, -1, "ctx.prepared"); !e.empty()) {  // CheckPlainData refused it first
    lua_settop(L, top);
    return PluginError(plugin, fmt::format("{}: {}", plugin.file.display_name, e));
  }
  decl.prepared_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_settop(L, top);
  return std::nullopt;
}

std::vector<std::size_t> MetricRunner::VerifySample(const std::vector<std::size_t>& lanes) const {
  std::vector<std::size_t> out;
  if (rc_.verify_docs <= 0 || n_scored_ == 0) return out;
  // The first document of a lane is where state from load (or from the plugins before, in that VM) shows;
  // the others are where state from earlier documents shows.
  std::vector<bool> chosen(n_scored_, false);
  for (std::size_t l = 0; l + 1 < lanes.size(); ++l) {
    if (lanes[l] < lanes[l + 1]) chosen[lanes[l] - offset_] = true;
  }
  const auto extra = static_cast<std::size_t>(rc_.verify_docs);
  for (std::size_t k = 0; k < extra; ++k) {
    // The k-th of `extra` evenly spread positions, or the next one not chosen yet (wrapping around).
    const std::size_t at =
        static_cast<std::size_t>((2 * static_cast<unsigned __int128>(k) + 1) * n_scored_ / (2 * extra));
    std::size_t i = at;
    while (chosen[i]) {
      i = (i + 1) % n_scored_;
      if (i == at) break;
    }
    if (chosen[i]) break;  // every document is chosen
    chosen[i] = true;
  }
  for (std::size_t i = 0; i < n_scored_; ++i) {
    if (chosen[i]) out.push_back(offset_ + i);
  }
  return out;
}

namespace {

// A value as the verification's message shows it: the shortest text that reads back to the same double.
std::string Shown(double v) { return std::isnan(v) ? "no value" : fmt::format("{}", v); }

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// The verification's failure for document `id` (what: how it showed, after the document's id).
ScriptError CarriedState(const MetricPlugin& plugin, std::string_view id, const std::string& what) {
  return PluginError(plugin, fmt::format("{}: plugin '{}' carried state across documents (document '{}'{})",
                                         plugin.file.display_name, plugin.name, id, what));
}

// The verification's failure for a slot whose value in the run and alone differ in bits, or nothing when
// none does: run[s][j][row] against alone[s][j][0] (an empty column in alone: one the run has none of).
std::optional<ScriptError> CompareSlots(const MetricPlugin& plugin, const DeclaredColumns& decl,
                                        const std::vector<std::vector<std::vector<double>>>& run, std::size_t row,
                                        const std::vector<std::vector<std::vector<double>>>& alone,
                                        std::string_view id) {
  for (std::size_t s = 0; s < alone.size(); ++s) {
    for (std::size_t j = 0; j < alone[s].size(); ++j) {
      if (alone[s][j].empty()) continue;
      const double in_run = run[s][j][row], by_itself = alone[s][j][0];
      if (SameBits(in_run, by_itself)) continue;
      const std::string column =
          plugin.subsets.empty() ? decl.slots[j].name : plugin.subsets[s] + "." + decl.slots[j].name;
      return CarriedState(
          plugin, id, fmt::format(", column '{}': {} in the run, {} alone", column, Shown(in_run), Shown(by_itself)));
    }
  }
  return std::nullopt;
}

// One document's slots laid out as `run` (an empty column where the run has none), each NaN.
std::vector<std::vector<std::vector<double>>> OneDocumentSlots(
    const std::vector<std::vector<std::vector<double>>>& run) {
  std::vector<std::vector<std::vector<double>>> one(run.size());
  for (std::size_t s = 0; s < run.size(); ++s) {
    for (const auto& col : run[s]) one[s].emplace_back(col.empty() ? 0 : 1, kNaN);
  }
  return one;
}

// The plugin loaded again from its file into `vm`, with the run's parameters and needs.
Result<MetricPlugin> LoadAgain(LuaVm& vm, const MetricPlugin& plugin) {
  Result<MetricPlugin> p = LoadMetricPlugin(vm, plugin.file);
  if (!p) return p;
  p->params = plugin.params;
  p->readable_files = plugin.readable_files;
  p->needs = plugin.needs;
  return p;
}

}  // namespace

std::optional<ScriptError> MetricRunner::Verify(
    const MetricPlugin& plugin, const DeclaredColumns* decl, const std::vector<UnitRow>* units,
    const std::vector<std::pair<std::string, const std::vector<double>*>>* cols,
    const std::shared_ptr<RunBudget>& budget) {
  const std::vector<std::size_t> sample = VerifySample(bounds_);
  if (sample.empty()) return std::nullopt;
  auto carried = [&](std::size_t d, const std::string& what) {
    return CarriedState(plugin, corpus_->docs[d].id, what);
  };
  auto differ = [&](std::size_t d, const std::string& column, double in_run, double alone) {
    return carried(d, fmt::format(", column '{}': {} in the run, {} alone", column, Shown(in_run), Shown(alone)));
  };
  // One document's slots, laid out as v2_, compared with v2_; made once, emptied (NaN) for each document.
  SlotArrays one = decl != nullptr ? OneDocumentSlots(v2_) : SlotArrays{};
  auto fresh_slots = [&]() -> SlotArrays& {
    for (auto& sub : one) {
      for (auto& col : sub) std::fill(col.begin(), col.end(), kNaN);
    }
    return one;
  };
  auto compare_slots = [&](std::size_t d, const SlotArrays& one) -> std::optional<ScriptError> {
    return CompareSlots(plugin, *decl, v2_, d - offset_, one, corpus_->docs[d].id);
  };
  if (!plugin.kernel.empty()) {
    // No Lua runs per document: a fresh kernel with the run's parameters scores the sample again.
    Result<std::unique_ptr<MetricKernel>> kernel = MakeKernel(plugin);
    if (!kernel) return PluginError(plugin, kernel.error().message);
    const KernelLayout layout = LayOutKernel(**kernel, plugin, *decl);
    std::vector<double> values((*kernel)->names().size() * layout.with_text.size());
    const KernelTargets targets = TargetsOf(layout, (*kernel)->names().size(), one);  // fresh_slots() refills one
    for (std::size_t d : sample) {
      fresh_slots();
      ScoreWithKernel(**kernel, layout, targets, *corpus_, corpus_->docs[d], values, 0);
      if (auto e = compare_slots(d, one)) return e;
    }
    return std::nullopt;
  }
  // A Lua state of its own, set up as a lane's. Each sampled document is scored by the plugin loaded
  // afresh, so nothing an earlier call kept in its upvalues, environment or generator is there; the rest of
  // the state is read-only to plugins (the sandbox's promise), so this is the document scored alone.
  LuaVm vm(lanes_[0].vm->limits());
  for (const ModuleInstaller& m : AllModules()) vm.Install(m);
  lua_State* L = vm.state();
  DefineColumnTypes(L);
  DefineRunnerTypes(L);
  SetEmbeddingSpace(L, rc_.space);
  vm.BeginRun(budget);  // the verification is charged to the plugin's run budget
  struct EndRun {
    LuaVm& vm;
    ~EndRun() { vm.EndRun(); }
  } end_run{vm};
  auto load = [&]() -> Result<MetricPlugin> {
    Result<MetricPlugin> p = LoadAgain(vm, plugin);
    if (!p) return Error(p.error().kind, fmt::format("{} (loading it again to re-score documents)", p.error().message));
    return p;
  };
  if (plugin.api < 2) {
    std::unordered_set<std::string_view> run_names;
    for (const auto& [name, col] : *cols) run_names.insert(name);
    for (std::size_t d : sample) {
      Result<MetricPlugin> p = load();
      if (!p) return PluginError(plugin, p.error().message);
      const int base = lua_gettop(L);
      PushParams(L, *p);
      PushCtx(L);
      lua_createtable(L, 0, 64);
      Columns alone;
      std::optional<ScriptError> err;
      const bool ok =
          ScoreDocumentV1(vm, *p, corpus_, rc_.random_seed, base + 1, base + 2, base + 3, d, alone, 0, 1, err);
      lua_settop(L, base);
      if (!ok) return carried(d, " fails when scored alone: " + err->message);
      for (const auto& [name, col] : *cols) {
        auto it = alone.index.find(name);
        const double in_run = (*col)[d - offset_], a = it == alone.index.end() ? kNaN : alone.values[it->second][0];
        if (!SameBits(in_run, a)) return differ(d, name, in_run, a);
      }
      for (std::size_t c = 0; c < alone.names.size(); ++c) {
        if (!run_names.count(alone.names[c])) return differ(d, alone.names[c], kNaN, alone.values[c][0]);
      }
    }
    return std::nullopt;
  }
  // Once, as every lane: the columns and the prepared value (read-only plain data, shared by the loads below).
  Result<MetricPlugin> first = load();
  if (!first) return PluginError(plugin, first.error().message);
  DeclaredColumns d0;
  if (Status st = DeclareColumns(vm, *first, d0); !st.ok()) return PluginError(plugin, st.error().message);
  const int slots_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  if (std::optional<ScriptError> err = Prepare(vm, *first, d0)) return err;
  for (std::size_t d : sample) {
    Result<MetricPlugin> p = load();
    if (!p) return PluginError(plugin, p.error().message);
    std::vector<UnitRow> rows;
    UnitSink sink{&d0, &rows};
    const BorrowScope unit_scope;
    const int base = lua_gettop(L);
    const V2Frame frame = PushV2Frame(L, *p, d0, slots_ref, sink, unit_scope);
    std::optional<ScriptError> err;
    const bool ok = ScoreDocumentV2(vm, *p, d0, frame, sink, d, fresh_slots(), 0, err);
    lua_settop(L, base);
    if (!ok) return carried(d, " fails when scored alone: " + err->message);
    if (auto e = compare_slots(d, one)) return e;
    if (units == nullptr || d0.units.empty()) continue;
    // The units the run kept for d (in document order), against those reported alone.
    std::vector<const UnitRow*> in_run;
    for (const UnitRow& u : *units) {
      if (u.doc == d) in_run.push_back(&u);
    }
    const std::string what = fmt::format("its {} (ctx.unit)", d0.units);
    if (in_run.size() != rows.size()) {
      return carried(d, fmt::format(", {}: {} in the run, {} alone", what, in_run.size(), rows.size()));
    }
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const UnitRow& a = *in_run[r];
      const UnitRow& b = rows[r];
      bool same = a.subset == b.subset && SameBits(a.key, b.key) && a.values.size() == b.values.size();
      for (std::size_t k = 0; same && k < a.values.size(); ++k) {
        same = a.values[k].first == b.values[k].first && SameBits(a.values[k].second, b.values[k].second);
      }
      if (!same) return carried(d, fmt::format(", {}: unit {} differs between the run and alone", what, r + 1));
    }
  }
  return std::nullopt;
}

// The registry references one plugin's run holds in each lane (API 2: its slots table, and columns()'s
// customs and prepare()'s value inside the declaration), released when that run ends, however it ends.
class MetricRunner::LaneDecls {
 public:
  LaneDecls() = default;
  LaneDecls(const LaneDecls&) = delete;
  LaneDecls& operator=(const LaneDecls&) = delete;
  ~LaneDecls() {
    for (std::size_t l = 0; l < slots_refs_.size(); ++l) luaL_unref(states_[l], LUA_REGISTRYINDEX, slots_refs_[l]);
    for (std::size_t l = 0; l < decls_.size(); ++l) {
      luaL_unref(states_[l], LUA_REGISTRYINDEX, decls_[l].customs_ref);
      luaL_unref(states_[l], LUA_REGISTRYINDEX, decls_[l].prepared_ref);
    }
  }
  // Takes the declaration of the next lane and the reference to the slots table on top of L's stack.
  void Add(lua_State* L, DeclaredColumns decl) {
    states_.push_back(L);
    slots_refs_.push_back(luaL_ref(L, LUA_REGISTRYINDEX));
    decls_.push_back(std::move(decl));
  }
  std::size_t size() const { return decls_.size(); }
  DeclaredColumns& operator[](std::size_t l) { return decls_[l]; }
  int slots_ref(std::size_t l) const { return slots_refs_[l]; }

 private:
  std::vector<lua_State*> states_;
  std::vector<DeclaredColumns> decls_;
  std::vector<int> slots_refs_;
};

namespace {

// One entry of what an API 1 aggregate returned ([..., name, value] on L's stack) into `a`; false with
// out.error set when it is not a name and a number or {value, ci_low, ci_high}.
bool ReadAggregateEntry(lua_State* L, const MetricPlugin& plugin, AggregateValue& a, PluginOutcome& out) {
  if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) != LUA_TNUMBER && lua_type(L, -1) != LUA_TTABLE) {
    // Named, so that the plugin's author finds the line ({["all.x"] = "0.5"} used to be stored as NaN).
    out.error = PluginError(plugin, fmt::format("{}: aggregate '{}' must be a number or {{value, ci_low, ci_high}} "
                                                "(got {})",
                                                plugin.file.display_name, lua_tostring(L, -2), luaL_typename(L, -1)));
    return false;
  }
  if (lua_type(L, -2) != LUA_TSTRING || (lua_type(L, -1) != LUA_TNUMBER && lua_type(L, -1) != LUA_TTABLE)) {
    out.error = PluginError(
        plugin, fmt::format("{}: aggregate result must map metric names to numbers or {{value, ci_low, ci_high}} "
                            "(got {} -> {})",
                            plugin.file.display_name, luaL_typename(L, -2), luaL_typename(L, -1)));
    return false;
  }
  std::size_t len = 0;
  const char* name = lua_tolstring(L, -2, &len);
  a.metric.assign(name, len);
  if (len == 0 || a.metric.find('\0') != std::string::npos) {
    out.error = PluginError(plugin, fmt::format("{}: aggregate result has an empty metric name or one "
                                                "containing a NUL byte",
                                                plugin.file.display_name));
    return false;
  }
  if (lua_type(L, -1) == LUA_TNUMBER) {
    a.value = lua_tonumber(L, -1);
    return true;
  }
  // Raw reads: the host is outside the protected call here, so no metamethod may run.
  auto raw = [&](const char* field, int table) {
    lua_pushstring(L, field);
    lua_rawget(L, table);
  };
  raw("value", -2);
  raw("ci_low", -3);
  raw("ci_high", -4);  // [..., name, t, value, ci_low, ci_high]
  // Absent is undefined (NaN, no bound); anything but a number is the plugin's bug, not a NaN to store.
  const char* fields[] = {"value", "ci_low", "ci_high"};
  for (int f = 0; f < 3; ++f) {
    const int type = lua_type(L, -3 + f);
    if (type == LUA_TNIL || type == LUA_TNUMBER) continue;
    out.error = PluginError(plugin, fmt::format("{}: aggregate '{}': field '{}' must be a number (got {})",
                                                plugin.file.display_name, a.metric, fields[f], lua_typename(L, type)));
    return false;
  }
  a.value = lua_type(L, -3) == LUA_TNUMBER ? lua_tonumber(L, -3) : kNaN;
  if (lua_type(L, -2) == LUA_TNUMBER) a.ci_low = lua_tonumber(L, -2);
  if (lua_type(L, -1) == LUA_TNUMBER) a.ci_high = lua_tonumber(L, -1);
  lua_pop(L, 3);
  return true;
}

// aggregate(cols, params, ctx) of an API 1 plugin, in the first lane: cols maps every column name
// (internal '_' ones too) to a Column, valid during this call (an API 1 plugin may keep one in an
// upvalue). Fills out.aggregates (sorted) or out.error.
void CallAggregateV1(LuaVm& vm, const MetricPlugin& plugin, Columns& cols,
                     const std::function<void(lua_State*)>& push_ctx, PluginOutcome& out) {
  lua_State* L = vm.state();
  const int base = lua_gettop(L);
  const BorrowScope scope;
  lua_rawgeti(L, LUA_REGISTRYINDEX, plugin.aggregate_ref);
  lua_createtable(L, 0, static_cast<int>(cols.names.size()));
  for (std::size_t c = 0; c < cols.names.size(); ++c) {
    PushColumn(L, &cols.values[c], cols.names[c], scope);
    lua_setfield(L, -2, cols.names[c].c_str());
  }
  PushParams(L, plugin);
  push_ctx(L);
  SeedForCall(L, plugin, "aggregate");
  if (auto err = vm.Call(3, 1, plugin.name)) {
    out.error = std::move(*err);
    lua_settop(L, base);
    return;
  }
  if (!lua_istable(L, -1)) {
    out.error = PluginError(plugin, fmt::format("{}: aggregate must return a table of numbers (got {})",
                                                plugin.file.display_name, luaL_typename(L, -1)));
    lua_settop(L, base);
    return;
  }
  std::vector<AggregateValue> aggs;
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    AggregateValue a;
    if (!ReadAggregateEntry(L, plugin, a, out)) {
      lua_settop(L, base);
      return;
    }
    aggs.push_back(std::move(a));
    lua_pop(L, 1);
  }
  lua_settop(L, base);
  std::sort(aggs.begin(), aggs.end(),
            [](const AggregateValue& a, const AggregateValue& b) { return MetricNameLess(a.metric, b.metric); });
  out.aggregates = std::move(aggs);
}

}  // namespace

std::optional<ScriptError> MetricRunner::DeclareLanes(std::size_t index, LaneDecls& decls) {
  const MetricPlugin& plugin = *lanes_[0].plugins[index];
  for (std::size_t l = 0; l < VmLanes(plugin); ++l) {
    Lane& ln = lanes_[l];
    DeclaredColumns d;
    Status st = DeclareColumns(*ln.vm, *ln.plugins[index], d);
    if (!st.ok()) return PluginError(plugin, st.error().message);
    decls.Add(ln.vm->state(), std::move(d));
    if (std::optional<ScriptError> err = Prepare(*ln.vm, *ln.plugins[index], decls[decls.size() - 1])) return err;
    if (decls.size() == 1) {
      // The values are kept in native arrays (documents x slots x subsets doubles, written in place by
      // the lanes): refuse a declaration the machine cannot hold rather than be killed.
      const double subsets = plugin.subsets.empty() ? 1.0 : static_cast<double>(plugin.subsets.size());
      const double need = static_cast<double>(n_scored_) * static_cast<double>(decls[0].slots.size()) * subsets * 8.0;
      const double avail = AvailableMemoryBytes();
      if (avail > 0 && need > avail) {
        return PluginError(plugin, fmt::format("{}: {} columns x {} subsets for {} documents need {:.1f} GiB, more "
                                               "than the {:.1f} GiB of memory available (declare fewer columns)",
                                               plugin.file.display_name, decls[0].slots.size(), subsets, n_scored_,
                                               need / (1u << 30), avail / (1u << 30)));
      }
    }
    if (!SameDeclaration(decls[0], decls[decls.size() - 1])) {
      return PluginError(plugin, fmt::format("{}: columns(c, params) declared different columns in two lanes "
                                             "(it may depend on params only)",
                                             plugin.file.display_name));
    }
  }
  return std::nullopt;
}

std::pair<std::uintptr_t, std::uintptr_t> WholeHugePages(std::uintptr_t at, std::size_t bytes) {
  constexpr std::uintptr_t kHuge = kHugePageBytes;
  const std::uintptr_t lo = (at + kHuge - 1) & ~(kHuge - 1), hi = (at + bytes) & ~(kHuge - 1);
  return hi > lo ? std::pair{lo, hi} : std::pair{at, at};
}

void AdviseSmallPages(const void* p, std::size_t bytes) {
#if defined(__linux__)
  if (bytes < kSmallPagesFrom) return;
  const auto [lo, hi] = WholeHugePages(reinterpret_cast<std::uintptr_t>(p), bytes);
  if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_NOHUGEPAGE);  // advice: no error to act on
#else
  (void)p;
  (void)bytes;
#endif
}

std::vector<double> NewSlotColumn(std::size_t n) {
  std::vector<double> column;
  column.reserve(n);
  AdviseSmallPages(column.data(), n * sizeof(double));  // before the first touch
  column.assign(n, std::numeric_limits<double>::quiet_NaN());
  return column;
}

void MetricRunner::AllocateSlots(const MetricPlugin& plugin, const DeclaredColumns& decl, SlotArrays& slots,
                                 bool any_text) const {
  // One array per subset and slot for the whole corpus; each lane writes its own document range, so
  // nothing is merged or copied afterwards.
  // A corpus without source text has no present/absent values: those subsets stay empty (no values,
  // so no aggregates, as when every document's are NaN).
  const std::size_t n_sub = plugin.subsets.empty() ? 1 : plugin.subsets.size();
  slots.assign(n_sub, std::vector<std::vector<double>>(decl.slots.size()));
  for (std::size_t s = 0; s < n_sub; ++s) {
    if (plugin.subsets.empty() || any_text || SubsetView(plugin.subsets[s]) == 0) {
      for (auto& col : slots[s]) col = NewSlotColumn(n_scored_);
    }
  }
}

std::optional<ScriptError> MetricRunner::SetUpKernel(const MetricPlugin& plugin, const DeclaredColumns* decl) {
  kernel_.reset();
  if (plugin.kernel.empty()) return std::nullopt;
  if (plugin.api >= 2 && !decl->units.empty()) {
    // A native kernel writes document slots only: the units c:units promises would never come.
    return PluginError(plugin, fmt::format("{}: c:units(\"{}\") needs a Lua score function that reports them "
                                           "with ctx.unit (score = kp.kernel.{} reports none)",
                                           plugin.file.display_name, decl->units, plugin.kernel));
  }
  Result<std::unique_ptr<MetricKernel>> kernel = MakeKernel(plugin);
  if (!kernel) return PluginError(plugin, kernel.error().message);
  kernel_ = std::move(*kernel);
  return std::nullopt;
}

std::vector<MetricRunner::Partial> MetricRunner::ScoreLanes(std::size_t index, LaneDecls& decls,
                                                            const Progress& progress) {
  const MetricPlugin& plugin = *lanes_[0].plugins[index];
  std::vector<Partial> parts(n_lanes_);
  // A lane that throws (e.g. std::bad_alloc) reports it as its error; every started thread is joined
  // before anything else happens, and a lane whose thread cannot be started runs on this one.
  auto lane = [&](std::size_t l, const Progress* pr) {
    try {
      if (plugin.api >= 2) {
        const std::size_t d = std::min(l, decls.size() - 1);  // a kernel declares in the first lane only
        ScoreV2(l, index, decls[d], decls.slots_ref(d), parts[l], pr);
      } else {
        Score(l, index, parts[l], pr);
      }
    } catch (const LuaPanicError& e) {
      // A Lua error the host ran into between calls (a metamethod of what score returned): the plugin's
      // own message, position included.
      parts[l].error = PluginError(plugin, fmt::format("{} (while the host read what score returned)", e.what()));
    } catch (const std::exception& e) {
      parts[l].error = PluginError(plugin, fmt::format("{}: internal error while scoring: {}",
                                                       plugin.file.display_name, e.what()));
    }
  };
  std::vector<std::jthread> threads;
  std::vector<std::size_t> inline_lanes;
  for (std::size_t l = 1; l < n_lanes_; ++l) {
    try {
      threads.emplace_back(lane, l, nullptr);
    } catch (const std::system_error&) {
      inline_lanes.push_back(l);
    }
  }
  lane(0, &progress);
  for (std::size_t l : inline_lanes) lane(l, nullptr);
  threads.clear();  // the jthreads join here
  return parts;
}

PluginOutcome MetricRunner::FinishV1(const MetricPlugin& plugin, std::vector<Partial>& parts,
                                     const std::shared_ptr<RunBudget>& run_budget, PluginOutcome out) {
  // Merge the lanes' columns in document order.
  Columns cols;
  for (std::size_t l = 0; l < n_lanes_; ++l) {
    const Columns& pc = parts[l].cols;
    for (std::size_t c = 0; c < pc.names.size(); ++c) {
      const std::size_t col = cols.Find(pc.names[c].data(), pc.names[c].size(), n_scored_);
      std::copy(pc.values[c].begin(), pc.values[c].end(),
                cols.values[col].begin() + static_cast<std::ptrdiff_t>(bounds_[l] - offset_));
    }
  }
  {
    std::vector<std::pair<std::string, const std::vector<double>*>> by_name;
    for (std::size_t c = 0; c < cols.names.size(); ++c) by_name.emplace_back(cols.names[c], &cols.values[c]);
    const auto t0 = std::chrono::steady_clock::now();
    auto err = Verify(plugin, nullptr, nullptr, &by_name, run_budget);
    out.verify_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (err) {
      out.error = std::move(*err);
      return out;
    }
  }
  std::vector<std::size_t> order(cols.names.size());
  for (std::size_t c = 0; c < order.size(); ++c) order[c] = c;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return MetricNameLess(cols.names[a], cols.names[b]); });
  if (plugin.aggregate_ref >= 0) {
    CallAggregateV1(*lanes_[0].vm, plugin, cols, [this](lua_State* L) { PushCtx(L); }, out);
    if (out.error) return out;
  } else {
    for (std::size_t c : order) {
      if (cols.names[c].starts_with("_")) continue;
      double s = 0;
      std::size_t cnt = 0;
      for (double v : cols.values[c]) {
        if (std::isnan(v)) continue;
        s += v;
        ++cnt;
      }
      out.aggregates.push_back({cols.names[c], cnt ? s / static_cast<double>(cnt) : kNaN, {}, {}});
    }
  }
  for (std::size_t c : order) {
    if (cols.names[c].starts_with("_")) continue;
    out.columns.metrics.push_back(cols.names[c]);
    out.columns.columns.push_back(std::move(cols.values[c]));
  }
  return out;
}

PluginOutcome MetricRunner::Run(std::size_t index, const Progress& progress) {
  const MetricPlugin& plugin = *lanes_[0].plugins[index];
  PluginOutcome out;
  out.plugin = plugin.name;
  const std::size_t n = n_scored_;  // the documents scored: every one, or a shard's
  ChooseLanes(plugin);
  out.lanes = n_lanes_;
  pairs_.reset();
  if (std::find(plugin.needs.begin(), plugin.needs.end(), "pairs") != plugin.needs.end()) {
    auto mined = MineCorpusPairs(*corpus_, plugin, rc_.space);
    if (!mined.ok()) {
      out.error = PluginError(plugin, fmt::format("{}: {}", plugin.file.display_name, mined.error().message));
      return out;
    }
    pairs_ = *mined;
  }
  // One account for all of this plugin's calls in every lane (docs/plugins.md, Limits: per run).
  const std::shared_ptr<RunBudget> run_budget = LuaVm::NewRunBudget(lanes_[0].vm->limits());
  for (Lane& ln : lanes_) ln.vm->BeginRun(run_budget);
  struct EndRuns {
    std::vector<Lane>& lanes;
    ~EndRuns() {
      for (Lane& ln : lanes) ln.vm->EndRun();
    }
  } end_runs{lanes_};
  // API 2: every lane declares its columns (the same ones: columns() sees params only).
  LaneDecls decls;
  auto fail = [&](ScriptError e) {
    out.error = std::move(e);
    v2_.clear();
    return std::move(out);
  };
  if (plugin.api >= 2) {
    if (auto err = DeclareLanes(index, decls)) return fail(std::move(*err));
    const bool any_text =
        std::any_of(corpus_->docs.begin(), corpus_->docs.end(), [](const Document& d) { return d.has_text; });
    AllocateSlots(plugin, decls[0], v2_, any_text);
  }
  if (auto err = SetUpKernel(plugin, plugin.api >= 2 ? &decls[0] : nullptr)) return fail(std::move(*err));
  std::vector<Partial> parts = ScoreLanes(index, decls, progress);
  for (auto& p : parts) {
    if (p.error) return fail(std::move(*p.error));
  }
  if (progress) progress(plugin.name, n, n);
  if (plugin.api < 2) return FinishV1(plugin, parts, run_budget, std::move(out));
  if (rc_.keep_slots) {
    for (auto& p : parts) {
      for (auto& u : p.units) out.units.push_back(std::move(u));
    }
  }
  // Numbers that depend on the lane (state carried across documents, a generator shared with others)
  // fail the run here, before anything is aggregated or stored.
  const auto t0 = std::chrono::steady_clock::now();
  auto err = Verify(plugin, &decls[0], rc_.keep_slots ? &out.units : nullptr, nullptr, run_budget);
  out.verify_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (err) return fail(std::move(*err));
  return FinishV2(plugin, decls[0], std::move(out));
}

PluginOutcome MetricRunner::FinishV2(const MetricPlugin& plugin, const DeclaredColumns& decl, PluginOutcome out) {
  std::vector<std::vector<std::vector<double>>> values = std::move(v2_);
  v2_.clear();
  if (rc_.keep_slots) {
    out.slots = values;
    for (std::size_t s = 0; s < values.size(); ++s) out.slot_subsets.push_back(plugin.subsets.empty() ? "" : plugin.subsets[s]);
    for (const auto& slot : decl.slots) out.slot_names.emplace_back(slot.name, slot.hidden);
  }
  Status st = FinishSlots(*lanes_[0].vm, plugin, decl, std::move(values), [this](lua_State* L) { PushCtx(L); }, out);
  if (!st.ok()) out.error = PluginError(plugin, st.error().message);
  return out;
}

// A streamed run's state for one plugin, from BeginStream to FinishStream.
struct MetricRunner::StreamState {
  LaneDecls decls;                    // the first lane's declaration, held until the aggregates are made
  std::shared_ptr<RunBudget> budget;  // the plugin's run budget: its declaration and aggregation
  std::unique_ptr<const MetricKernel> kernel, fresh;  // fresh: re-scores the verification sample
  KernelLayout layout;
  SlotArrays slots;
  bool scoring = false;  // set up without error (read by the build's threads, written before they start)
  // The plugin's failure: BeginStream's, or its verification's (the lowest document's, whichever thread
  // met it), and the verification's time; both guarded by `mutex` while the build runs.
  std::optional<ScriptError> error;
  std::size_t error_doc = SIZE_MAX;
  double verify_seconds = 0;
  std::mutex mutex;
};

MetricRunner::~MetricRunner() = default;

void MetricRunner::BeginStream(const StreamPlan& plan) {
  // The lanes of a streamed run are the build's ranges, cut to the documents scored: the verification
  // re-scores the first document of each, as it does a lane's.
  std::vector<std::size_t> lanes{offset_};
  for (std::size_t start : plan.starts) {
    if (start > offset_ && start < offset_ + n_scored_) lanes.push_back(start);
  }
  lanes.push_back(offset_ + n_scored_);
  stream_ranges_ = lanes.size() - 1;
  stream_sample_ = VerifySample(lanes);
  n_lanes_ = 1;  // a kernel declares in the first lane only (VmLanes)
  streams_.clear();
  for (std::size_t index = 0; index < lanes_[0].plugins.size(); ++index) {
    const MetricPlugin& plugin = *lanes_[0].plugins[index];
    auto st = std::make_unique<StreamState>();
    auto set_up = [&]() -> std::optional<ScriptError> {
      if (plugin.api < 2 || !ComparesWithinDocuments(plugin)) {
        return PluginError(plugin, fmt::format("{}: internal error: a streamed run scores native kernels that compare "
                                               "within a document only",
                                               plugin.file.display_name));
      }
      if (auto err = DeclareLanes(index, st->decls)) return err;
      const DeclaredColumns& decl = st->decls[0];
      AllocateSlots(plugin, decl, st->slots, plan.any_text);
      if (!decl.units.empty()) {
        return PluginError(plugin, fmt::format("{}: c:units(\"{}\") needs a Lua score function that reports them "
                                               "with ctx.unit (score = kp.kernel.{} reports none)",
                                               plugin.file.display_name, decl.units, plugin.kernel));
      }
      for (auto* k : {&st->kernel, &st->fresh}) {
        Result<std::unique_ptr<MetricKernel>> made = MakeKernel(plugin);
        if (!made) return PluginError(plugin, made.error().message);
        *k = std::move(*made);
      }
      st->layout = LayOutKernel(*st->kernel, plugin, decl);
      if (!st->layout.error.empty()) return PluginError(plugin, st->layout.error);
      return std::nullopt;
    };
    st->budget = LuaVm::NewRunBudget(lanes_[0].vm->limits());
    lanes_[0].vm->BeginRun(st->budget);
    st->error = set_up();
    lanes_[0].vm->EndRun();
    LuaVm::RestartRunClock(*st->budget);  // the build to come is not the plugin's time
    st->scoring = !st->error;
    if (st->error) st->slots.clear();
    streams_.push_back(std::move(st));
  }
}

void MetricRunner::ScoreRange(const Corpus& range, std::size_t begin) {
  const std::size_t lo = std::max(begin, offset_), hi = std::min(begin + range.docs.size(), offset_ + n_scored_);
  if (lo >= hi) return;
  // A plugin's failure at document d, kept when it is the lowest document's (the threads' ranges come
  // in any order). An exception while scoring (std::bad_alloc) fails the plugin, as in ScoreLanes.
  auto fail = [&](std::size_t index, std::size_t d, ScriptError error) {
    StreamState& st = *streams_[index];
    const std::lock_guard<std::mutex> lock(st.mutex);
    if (d < st.error_doc) {
      st.error = std::move(error);
      st.error_doc = d;
    }
  };
  auto internal = [&](std::size_t index, const std::exception& e) {
    const MetricPlugin& plugin = *lanes_[0].plugins[index];
    return PluginError(plugin, fmt::format("{}: internal error while scoring: {}", plugin.file.display_name, e.what()));
  };
  std::vector<std::size_t> live;
  for (std::size_t index = 0; index < streams_.size(); ++index) {
    if (streams_[index]->scoring) live.push_back(index);
  }
  // Each document with every plugin in turn, while it is in the cache.
  std::vector<double> values;
  std::vector<KernelTargets> targets;  // per live plugin, in live's order
  for (std::size_t index : live) {
    StreamState& st = *streams_[index];
    values.resize(std::max(values.size(), st.kernel->names().size() * st.layout.with_text.size()));
    targets.push_back(TargetsOf(st.layout, st.kernel->names().size(), st.slots));
  }
  const Document* docs = range.docs.data() + (lo - begin);
  const std::size_t n = hi - lo;
  for (std::size_t i = 0; i < n; ++i) {
    PrefetchAhead(docs, i, n);
    std::optional<KernelDocumentScope> shared;  // two kernels or more read the document's items once
    if (live.size() > 1) shared.emplace(docs[i]);
    for (std::size_t k = 0; k < live.size(); ++k) {
      StreamState& st = *streams_[live[k]];
      try {
        ScoreWithKernel(*st.kernel, st.layout, targets[k], range, docs[i], values, lo + i - offset_);
      } catch (const std::exception& e) {
        fail(live[k], lo + i, internal(live[k], e));
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
        targets.erase(targets.begin() + static_cast<std::ptrdiff_t>(k--));
      }
    }
  }
  // The verification sample's documents in this range, scored again by each plugin's fresh kernel.
  const auto first = std::lower_bound(stream_sample_.begin(), stream_sample_.end(), lo);
  const auto last = std::lower_bound(stream_sample_.begin(), stream_sample_.end(), hi);
  if (first == last) return;
  for (std::size_t index : live) {
    StreamState& st = *streams_[index];
    const auto t0 = std::chrono::steady_clock::now();
    const MetricPlugin& plugin = *lanes_[0].plugins[index];
    try {
      SlotArrays one = OneDocumentSlots(st.slots);
      const KernelTargets to_one = TargetsOf(st.layout, st.fresh->names().size(), one);
      values.resize(std::max(values.size(), st.fresh->names().size() * st.layout.with_text.size()));
      for (auto it = first; it != last; ++it) {
        const Document& doc = range.docs[*it - begin];
        ScoreWithKernel(*st.fresh, st.layout, to_one, range, doc, values, 0);
        if (auto error = CompareSlots(plugin, st.decls[0], st.slots, *it - offset_, one, doc.id)) {
          fail(index, *it, std::move(*error));
          break;
        }
        for (auto& sub : one) {
          for (auto& col : sub) std::fill(col.begin(), col.end(), kNaN);
        }
      }
    } catch (const std::exception& e) {
      fail(index, lo, internal(index, e));
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::lock_guard<std::mutex> lock(st.mutex);
    st.verify_seconds += seconds;
  }
}

PluginOutcome MetricRunner::FinishStream(std::size_t index) {
  const MetricPlugin& plugin = *lanes_[0].plugins[index];
  StreamState& st = *streams_[index];
  PluginOutcome out;
  out.plugin = plugin.name;
  out.lanes = stream_ranges_;
  out.verify_seconds = st.verify_seconds;
  if (st.error) {
    out.error = std::move(st.error);
  } else {
    v2_ = std::move(st.slots);
    lanes_[0].vm->BeginRun(st.budget);
    out = FinishV2(plugin, st.decls[0], std::move(out));
    lanes_[0].vm->EndRun();
  }
  streams_[index].reset();  // its declaration's references released, its kernels and slots freed
  return out;
}

Status FinishSlots(LuaVm& vm, const MetricPlugin& plugin, const DeclaredColumns& decl,
                   std::vector<std::vector<std::vector<double>>> values,
                   const std::function<void(lua_State*)>& push_ctx, PluginOutcome& out) {
  const std::size_t n_sub = plugin.subsets.empty() ? 1 : plugin.subsets.size();
  Status st = ComputeAggregates(vm, plugin, decl, values, push_ctx, &out.aggregates);
  if (!st.ok()) return st;
  std::sort(out.aggregates.begin(), out.aggregates.end(),
            [](const AggregateValue& a, const AggregateValue& b) { return MetricNameLess(a.metric, b.metric); });
  // Public columns a document wrote, in display order.
  std::vector<std::pair<std::string, std::vector<double>*>> cols;
  for (std::size_t s = 0; s < n_sub; ++s) {
    for (std::size_t j = 0; j < decl.slots.size(); ++j) {
      if (decl.slots[j].hidden) continue;
      auto& col = values[s][j];
      if (std::all_of(col.begin(), col.end(), [](double v) { return std::isnan(v); })) continue;
      cols.emplace_back(plugin.subsets.empty() ? decl.slots[j].name : plugin.subsets[s] + "." + decl.slots[j].name, &col);
    }
  }
  std::sort(cols.begin(), cols.end(), [](const auto& a, const auto& b) { return MetricNameLess(a.first, b.first); });
  for (auto& [name, col] : cols) {
    out.columns.metrics.push_back(name);
    out.columns.columns.push_back(std::move(*col));
  }
  return Status::Ok();
}

void PushMergeCtx(lua_State* L, const Profile& profile, std::size_t n_docs, const std::string& dataset,
                  const std::string& system) {
  lua_createtable(L, 0, 4);
  PushProfile(L, profile);
  lua_setfield(L, -2, "profile");
  lua_pushinteger(L, static_cast<lua_Integer>(n_docs));
  lua_setfield(L, -2, "n_docs");
  SetString(L, "dataset", dataset);
  SetString(L, "system", system);
}

}  // namespace kplab::host
