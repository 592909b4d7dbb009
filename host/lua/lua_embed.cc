// Semantic primitives for plugins: the Matrix userdata (similarities kept in C++ memory) and the
// functions that reach the run's EmbeddingSpace: ctx.cosine, ctx.embedding, ctx.model, kp.neighbors.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>

#include <fmt/format.h>

#include "bindings.h"
#include "kplab/embedding_plan.h"
#include "kplab/sim.h"
#include "lua_util.h"

namespace kplab::host {

namespace {

constexpr const char* kMatrixMeta = "kplab.Matrix";
constexpr const char* kSpaceMeta = "kplab.EmbeddingSpaceHolder";
const char kSpaceKey = 0;  // registry key (by address) of the VM's space holder

struct MatrixUd {
  Matrix m;
  HeldMemory held;  // m's cells, counted in the VM's memory cap while the Matrix lives
  // Set by the freeze of plugin API 2 on a Matrix a plugin made at load (__freeze): M:set then raises,
  // so a Matrix cannot carry values from one document to the next.
  bool read_only = false;
};
struct SpaceHolder {
  std::shared_ptr<const EmbeddingSpace> space;
};

MatrixUd* CheckMatrix(lua_State* L, int i) { return Check<MatrixUd>(L, i, kMatrixMeta); }

const EmbeddingSpace* GetSpace(lua_State* L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &kSpaceKey);
  auto* h = static_cast<SpaceHolder*>(lua_touserdata(L, -1));
  lua_pop(L, 1);
  return h != nullptr ? h->space.get() : nullptr;
}

const EmbeddingSpace& NeedSpace(lua_State* L, const char* fn) {
  const EmbeddingSpace* s = GetSpace(L);
  if (s == nullptr) {
    luaL_error(L, "%s needs embeddings: declare needs = {\"embeddings\"} in the plugin", fn);
  }
  return *s;
}

int CheckIndex(lua_State* L, int arg, int n, const char* what) {
  const lua_Integer i = luaL_checkinteger(L, arg);
  if (i < 1 || i > n) luaL_error(L, "%s index %d out of range 1..%d", what, static_cast<int>(i), n);
  return static_cast<int>(i - 1);
}

void PushNumbers(lua_State* L, const std::vector<double>& v) {
  lua_createtable(L, static_cast<int>(v.size()), 0);
  for (std::size_t i = 0; i < v.size(); ++i) {
    lua_pushnumber(L, v[i]);
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
}

// 0-based indices -> 1-based, -1 -> 0.
void PushIndices(lua_State* L, const std::vector<int>& v) {
  lua_createtable(L, static_cast<int>(v.size()), 0);
  for (std::size_t i = 0; i < v.size(); ++i) {
    lua_pushinteger(L, v[i] + 1);
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
}

// ---- Matrix ---------------------------------------------------------------------------------------

int MRows(lua_State* L) {
  lua_pushinteger(L, CheckMatrix(L, 1)->m.rows);
  return 1;
}
int MCols(lua_State* L) {
  lua_pushinteger(L, CheckMatrix(L, 1)->m.cols);
  return 1;
}
int MSize(lua_State* L) {
  const Matrix& m = CheckMatrix(L, 1)->m;
  lua_pushinteger(L, m.rows);
  lua_pushinteger(L, m.cols);
  return 2;
}
int MGet(lua_State* L) {
  const Matrix& m = CheckMatrix(L, 1)->m;
  const int r = CheckIndex(L, 2, m.rows, "row");
  const int c = CheckIndex(L, 3, m.cols, "column");
  lua_pushnumber(L, m.at(r, c));
  return 1;
}
int MSet(lua_State* L) {
  MatrixUd* ud = CheckMatrix(L, 1);
  if (ud->read_only) {
    return luaL_error(L,
                      "attempt to modify a read-only Matrix (it was made at load: plugin API 2 keeps no state "
                      "across documents; make the Matrix inside the call)");
  }
  Matrix& m = ud->m;
  const int r = CheckIndex(L, 2, m.rows, "row");
  const int c = CheckIndex(L, 3, m.cols, "column");
  m.at(r, c) = luaL_checknumber(L, 4);
  return 0;
}
int MRowMax(lua_State* L) {
  const Matrix& m = CheckMatrix(L, 1)->m;
  const int r = CheckIndex(L, 2, m.rows, "row");
  if (m.cols == 0) {
    lua_pushnil(L);
    lua_pushnil(L);
    return 2;
  }
  const std::vector<int> top = RowTopK(m, r, 1);
  lua_pushnumber(L, m.at(r, top[0]));
  lua_pushinteger(L, top[0] + 1);
  return 2;
}
int MColMax(lua_State* L) {
  const Matrix& m = CheckMatrix(L, 1)->m;
  const int c = CheckIndex(L, 2, m.cols, "column");
  const int best = ColArgmax(m)[c];  // same tie and NaN rules as RowTopK / RowArgmax
  if (best < 0) {
    lua_pushnil(L);
    lua_pushnil(L);
    return 2;
  }
  lua_pushnumber(L, m.at(best, c));
  lua_pushinteger(L, best + 1);
  return 2;
}
int MRowMaxes(lua_State* L) {
  const Matrix& m = CheckMatrix(L, 1)->m;
  PushNumbers(L, RowMax(m));
  PushIndices(L, RowArgmax(m));
  return 2;
}
int MColMaxes(lua_State* L) {
  const Matrix& m = CheckMatrix(L, 1)->m;
  PushNumbers(L, ColMax(m));
  PushIndices(L, ColArgmax(m));
  return 2;
}
int MRowTopK(lua_State* L) {
  const Matrix& m = CheckMatrix(L, 1)->m;
  const int r = CheckIndex(L, 2, m.rows, "row");
  const lua_Integer k = luaL_checkinteger(L, 3);
  luaL_argcheck(L, k >= 0, 3, "k must be >= 0");
  const std::vector<int> cols = RowTopK(m, r, static_cast<int>(std::min<lua_Integer>(k, m.cols)));
  std::vector<double> vals;
  for (int c : cols) vals.push_back(m.at(r, c));
  PushNumbers(L, vals);
  PushIndices(L, cols);
  return 2;
}
int MRowTopKMean(lua_State* L) {
  const Matrix& m = CheckMatrix(L, 1)->m;
  const int r = CheckIndex(L, 2, m.rows, "row");
  const lua_Integer k = luaL_checkinteger(L, 3);
  luaL_argcheck(L, k >= 1, 3, "k must be >= 1");
  lua_pushnumber(L, RowTopKMean(m, r, static_cast<int>(std::min<lua_Integer>(k, m.cols + 1))));
  return 1;
}
int MAssign(lua_State* L) {
  const Matrix& m = CheckMatrix(L, 1)->m;
  // The Hungarian algorithm: O(rows x cols x min(rows, cols)), charged before it runs.
  ChargeNative(L, static_cast<double>(m.rows) * m.cols * std::min(m.rows, m.cols));
  auto a = MaxWeightAssignment(m);
  if (!a.ok()) return luaL_error(L, "%s", a.error().message.c_str());
  lua_pushnumber(L, a->total);
  PushIndices(L, a->row_to_col);
  return 2;
}
int MSum(lua_State* L) {
  const Matrix& m = CheckMatrix(L, 1)->m;
  double s = 0;
  for (double x : m.v) s += x;
  lua_pushnumber(L, s);
  return 1;
}
// Mean of the entries above the diagonal of a square matrix (mean pairwise similarity of a list with
// itself); nil when there is no such entry (fewer than two rows).
int MMeanUpper(lua_State* L) {
  const Matrix& m = CheckMatrix(L, 1)->m;
  if (m.rows != m.cols) return luaL_error(L, "mean_upper needs a square matrix (got %dx%d)", m.rows, m.cols);
  double s = 0;
  std::size_t n = 0;
  for (int r = 0; r < m.rows; ++r) {
    for (int c = r + 1; c < m.cols; ++c) {
      s += m.at(r, c);
      ++n;
    }
  }
  if (n == 0) {
    lua_pushnil(L);
  } else {
    lua_pushnumber(L, s / static_cast<double>(n));
  }
  return 1;
}
int MTransposed(lua_State* L) {
  const Matrix& m = CheckMatrix(L, 1)->m;
  PushMatrix(L, Transposed(m));
  return 1;
}
// S:maximum(T) -> a new matrix, the element-wise maximum (same shape). With T a 0/1 match matrix
// (list:match_pairs), exact matches weigh 1 and the rest keep their cosine.
int MMaximum(lua_State* L) {
  const Matrix& a = CheckMatrix(L, 1)->m;
  const Matrix& b = CheckMatrix(L, 2)->m;
  if (a.rows != b.rows || a.cols != b.cols) {
    return luaL_error(L, "maximum needs matrices of the same shape (got %dx%d and %dx%d)", a.rows, a.cols,
                      b.rows, b.cols);
  }
  Matrix out = a;
  for (std::size_t i = 0; i < out.v.size(); ++i) out.v[i] = std::fmax(a.v[i], b.v[i]);
  PushMatrix(L, std::move(out));
  return 1;
}
// S:clamp(lo, hi) -> a new matrix with every entry clamped to [lo, hi] (NaN stays NaN).
int MClamp(lua_State* L) {
  const Matrix& a = CheckMatrix(L, 1)->m;
  const double lo = luaL_checknumber(L, 2), hi = luaL_checknumber(L, 3);
  luaL_argcheck(L, lo <= hi, 3, "hi must be >= lo");
  Matrix out = a;
  for (double& x : out.v) {
    if (!std::isnan(x)) x = std::clamp(x, lo, hi);
  }
  PushMatrix(L, std::move(out));
  return 1;
}
// S:row_topk_means(k) -> {mean of row 1's min(k, cols) largest entries, ...} (nil entries never: an
// empty row gives NaN).
int MRowTopKMeans(lua_State* L) {
  const Matrix& m = CheckMatrix(L, 1)->m;
  const lua_Integer k = luaL_checkinteger(L, 2);
  luaL_argcheck(L, k >= 1, 2, "k must be >= 1");
  const int kk = static_cast<int>(std::min<lua_Integer>(k, m.cols + 1));
  lua_createtable(L, m.rows, 0);
  for (int r = 0; r < m.rows; ++r) {
    lua_pushnumber(L, RowTopKMean(m, r, kk));
    lua_rawseti(L, -2, r + 1);
  }
  return 1;
}
// S:norm([skip_diagonal]) -> Frobenius norm (of the off-diagonal entries when skip_diagonal is true).
int MNorm(lua_State* L) {
  const Matrix& m = CheckMatrix(L, 1)->m;
  const bool skip = lua_toboolean(L, 2) != 0;
  double s = 0;
  for (int r = 0; r < m.rows; ++r) {
    for (int c = 0; c < m.cols; ++c) {
      if (skip && r == c) continue;
      s += m.at(r, c) * m.at(r, c);
    }
  }
  lua_pushnumber(L, std::sqrt(s));
  return 1;
}
int MToString(lua_State* L) {
  const Matrix& m = CheckMatrix(L, 1)->m;
  std::string s = fmt::format("Matrix {}x{}", m.rows, m.cols);
  const int rmax = std::min(m.rows, 8), cmax = std::min(m.cols, 8);
  for (int r = 0; r < rmax; ++r) {
    s += "\n ";
    for (int c = 0; c < cmax; ++c) s += fmt::format(" {:7.4f}", m.at(r, c));
    if (cmax < m.cols) s += " ...";
  }
  if (rmax < m.rows) s += "\n  ...";
  lua_pushlstring(L, s.data(), s.size());
  return 1;
}
int MLen(lua_State* L) { return MRows(L); }

// __freeze (KeptAtLoad::kReadOnly): called by the freeze of plugin API 2, never by scripts.
int MFreeze(lua_State* L) {
  CheckMatrix(L, 1)->read_only = true;
  return 0;
}

const luaL_Reg kMatrixMethods[] = {
    {"__len", Safe<MLen>},
    {"__tostring", Safe<MToString>},
    {"rows", Safe<MRows>},
    {"cols", Safe<MCols>},
    {"size", Safe<MSize>},
    {"get", Safe<MGet>},
    {"set", Safe<MSet>},
    {"row_max", Safe<MRowMax>},
    {"col_max", Safe<MColMax>},
    {"row_maxes", Safe<MRowMaxes>},
    {"col_maxes", Safe<MColMaxes>},
    {"row_topk", Safe<MRowTopK>},
    {"row_topk_mean", Safe<MRowTopKMean>},
    {"assign", Safe<MAssign>},
    {"sum", Safe<MSum>},
    {"mean_upper", Safe<MMeanUpper>},
    {"t", Safe<MTransposed>},
    {"maximum", Safe<MMaximum>},
    {"clamp", Safe<MClamp>},
    {"row_topk_means", Safe<MRowTopKMeans>},
    {"norm", Safe<MNorm>},
    {"__freeze", Safe<MFreeze>},
    {nullptr, nullptr},
};

// ---- vectors of lists and strings -------------------------------------------------------------------

EmbedForm CheckForm(lua_State* L, int arg) {
  const char* f = luaL_optstring(L, arg, "surface");
  if (std::strcmp(f, "surface") == 0) return EmbedForm::kSurface;
  if (std::strcmp(f, "stems") == 0) return EmbedForm::kStems;
  luaL_argerror(L, arg, "form must be \"surface\" or \"stems\"");
  return EmbedForm::kSurface;
}

// Gathers the vectors of argument `arg`: a KeyphraseList (rows planned for the corpus) or an array
// of strings (planned rows when known, else embedded now).
void Gather(lua_State* L, const EmbeddingSpace& s, int arg, EmbedForm form, std::vector<float>& vecs,
            std::vector<std::uint8_t>& has) {
  const int d = s.dims;
  KeyphraseList items;
  const Corpus* corpus = nullptr;
  if (ToKeyphraseList(L, arg, &items, &corpus)) {
    vecs.resize(items.size() * d);
    has.resize(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      const std::int32_t row = s.Row(*items[i]->phrase, form);
      if (row < 0) {
        const std::string surface(items[i]->surface());
        luaL_error(L, "the %s form of phrase '%s' was not embedded in the plan: declare needs = "
                   "{\"embeddings%s\"}",
                   form == EmbedForm::kStems ? "stems" : "surface", surface.c_str(),
                   form == EmbedForm::kStems ? ":stems" : "");
      }
      std::memcpy(vecs.data() + i * d, s.vecs.data() + static_cast<std::size_t>(row) * d,
                  sizeof(float) * d);
      has[i] = s.has[row];
    }
    return;
  }
  luaL_argexpected(L, lua_istable(L, arg), arg, "KeyphraseList or array of strings");
  const lua_Integer n = luaL_len(L, arg);  // __len may lie: size checked before allocating
  luaL_argcheck(L, n >= 0, arg, "negative length");
  ReserveNative(L, static_cast<double>(n) * static_cast<double>(d) * sizeof(float), "the phrase vectors");
  vecs.resize(static_cast<std::size_t>(n) * d);
  has.resize(static_cast<std::size_t>(n));
  std::vector<float> v;
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_rawgeti(L, arg, i);
    std::size_t len = 0;
    const char* str = lua_tolstring(L, -1, &len);
    if (str == nullptr || lua_type(L, -1) != LUA_TSTRING) {
      luaL_error(L, "bad argument #%d: element %d is not a string", arg, static_cast<int>(i));
    }
    bool hv = false;
    Status st = s.Lookup(std::string_view(str, len), v, hv);
    lua_pop(L, 1);
    if (!st.ok()) luaL_error(L, "%s", st.message().c_str());
    std::memcpy(vecs.data() + (i - 1) * d, v.data(), sizeof(float) * d);
    has[i - 1] = hv;
  }
}

// ctx.cosine(a, b [, form]) -> Matrix of cosines (rows a, columns b); b defaults to a.
int CtxCosine(lua_State* L) {
  const EmbeddingSpace& s = NeedSpace(L, "ctx.cosine");
  const bool self = lua_isnoneornil(L, 2);
  const EmbedForm form = CheckForm(L, 3);
  std::vector<float> va, vb;
  std::vector<std::uint8_t> ha, hb;
  Gather(L, s, 1, form, va, ha);
  if (!self) Gather(L, s, 2, form, vb, hb);
  const int na = static_cast<int>(ha.size());
  Matrix m = self ? CosineMatrix(va.data(), ha.data(), na, va.data(), ha.data(), na, s.dims)
                  : CosineMatrix(va.data(), ha.data(), na, vb.data(), hb.data(),
                                 static_cast<int>(hb.size()), s.dims);
  PushMatrix(L, std::move(m));
  return 1;
}

// ctx.embedding(phrase [, form]) -> array of numbers as the model embeds it, or nil without a vector.
// phrase: a string, or a KeyphraseList of one element.
int CtxEmbedding(lua_State* L) {
  const EmbeddingSpace& s = NeedSpace(L, "ctx.embedding");
  const EmbedForm form = CheckForm(L, 2);
  std::vector<float> v;
  std::vector<std::uint8_t> h;
  if (lua_type(L, 1) == LUA_TSTRING) {
    bool hv = false;
    Status st = s.Lookup(lua_tostring(L, 1), v, hv);
    if (!st.ok()) return luaL_error(L, "%s", st.message().c_str());
    h.push_back(hv);
  } else {
    Gather(L, s, 1, form, v, h);
    if (h.size() != 1) return luaL_error(L, "ctx.embedding takes one phrase (got a list of %d)", static_cast<int>(h.size()));
  }
  if (!h[0]) {
    lua_pushnil(L);
    return 1;
  }
  lua_createtable(L, s.dims, 0);
  for (int j = 0; j < s.dims; ++j) {
    lua_pushnumber(L, v[j]);
    lua_rawseti(L, -2, j + 1);
  }
  return 1;
}

// kp.neighbors(phrase, k) -> array of {phrase = ..., cosine = ...}, best first, the phrase itself left
// out. Searches every cached phrase of the run's model (plugins declare needs = {"neighbors"}).
int KpNeighbors(lua_State* L) {
  const EmbeddingSpace& s = NeedSpace(L, "kp.neighbors");
  std::size_t len = 0;
  const char* text = luaL_checklstring(L, 1, &len);
  const lua_Integer k = luaL_optinteger(L, 2, 10);
  luaL_argcheck(L, k >= 1 && k <= 10000, 2, "k must be in 1..10000");
  if (!s.index) return luaL_error(L, "kp.neighbors needs the index: declare needs = {\"neighbors\"}");
  std::vector<float> v;
  bool hv = false;
  Status st = s.Lookup(std::string_view(text, len), v, hv);
  if (!st.ok()) return luaL_error(L, "%s", st.message().c_str());
  lua_newtable(L);
  if (!hv) return 1;
  auto result = Neighbors(s, v.data(), static_cast<int>(k), std::string_view(text, len));
  for (std::size_t i = 0; i < result.size(); ++i) {
    lua_createtable(L, 0, 2);
    SetString(L, "phrase", result[i].first);
    SetNumber(L, "cosine", result[i].second);
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  return 1;
}

// kp.matrix(rows) -> Matrix from an array of arrays of numbers (tests, hand-made examples).
int KpMatrix(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  const lua_Integer nr = luaL_len(L, 1);
  // __len may lie (a table with __len returning 3e9): sizes are checked before the allocation.
  if (nr < 0 || nr > INT_MAX) return luaL_error(L, "kp.matrix: %I rows (expected 0 to %d)", nr, INT_MAX);
  Matrix m;
  for (lua_Integer r = 1; r <= nr; ++r) {
    lua_rawgeti(L, 1, r);
    if (!lua_istable(L, -1)) return luaL_error(L, "kp.matrix: row %d is not a table", static_cast<int>(r));
    const lua_Integer nc = luaL_len(L, -1);
    if (r == 1) {
      if (nc < 0 || nc > INT_MAX) return luaL_error(L, "kp.matrix: %I columns (expected 0 to %d)", nc, INT_MAX);
      ReserveNative(L, static_cast<double>(nr) * static_cast<double>(nc) * sizeof(double), "kp.matrix");
      m = Matrix(static_cast<int>(nr), static_cast<int>(nc));
    }
    if (nc != m.cols) return luaL_error(L, "kp.matrix: row %d has %d columns (expected %d)", static_cast<int>(r), static_cast<int>(nc), m.cols);
    for (lua_Integer c = 1; c <= nc; ++c) {
      lua_rawgeti(L, -1, c);
      int isnum = 0;
      const double x = lua_tonumberx(L, -1, &isnum);
      if (!isnum) return luaL_error(L, "kp.matrix: entry (%d, %d) is not a number", static_cast<int>(r), static_cast<int>(c));
      m.at(static_cast<int>(r - 1), static_cast<int>(c - 1)) = x;
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  PushMatrix(L, std::move(m));
  return 1;
}

}  // namespace

const Matrix& CheckMatrixArg(lua_State* L, int idx) { return CheckMatrix(L, idx)->m; }

const EmbeddingSpace* RunEmbeddingSpace(lua_State* L) { return GetSpace(L); }

void PushMatrix(lua_State* L, Matrix m) {
  HeldMemory held = HoldNative(L, m.v.capacity() * sizeof(double), "the Matrix");
  NewUserdata<MatrixUd>(L, kMatrixMeta, MatrixUd{std::move(m), std::move(held)});
}

void SetEmbeddingSpace(lua_State* L, std::shared_ptr<const EmbeddingSpace> space) {
  SetTokenSpace(L, space);
  if (!space) {
    lua_pushnil(L);
  } else {
    NewUserdata<SpaceHolder>(L, kSpaceMeta, SpaceHolder{std::move(space)});
  }
  lua_rawsetp(L, LUA_REGISTRYINDEX, &kSpaceKey);
}

void AddEmbeddingCtx(lua_State* L) {
  const EmbeddingSpace* s = GetSpace(L);
  if (s == nullptr) return;
  lua_pushcfunction(L, Safe<CtxCosine>);
  lua_setfield(L, -2, "cosine");
  lua_pushcfunction(L, Safe<CtxEmbedding>);
  lua_setfield(L, -2, "embedding");
  AddTokensCtx(L);
  lua_createtable(L, 0, 4);
  SetString(L, "name", s->model.name);
  SetString(L, "backend", s->model.backend);
  SetString(L, "fingerprint", s->model.fingerprint);
  lua_pushinteger(L, s->dims);
  lua_setfield(L, -2, "dims");
  lua_setfield(L, -2, "model");
}

void InstallEmbed(lua_State* L) {
  DefineType<MatrixUd>(L, kMatrixMeta, kMatrixMethods, nullptr, KeptAtLoad::kReadOnly);
  static const luaL_Reg kNone[] = {{nullptr, nullptr}};
  DefineType<SpaceHolder>(L, kSpaceMeta, kNone);
  // [kp]
  lua_pushcfunction(L, Safe<KpNeighbors>);
  lua_setfield(L, -2, "neighbors");
  lua_pushcfunction(L, Safe<KpMatrix>);
  lua_setfield(L, -2, "matrix");
}

}  // namespace kplab::host
