// Contextual token embeddings for plugins (BERTScore): ctx.token_embeddings and the TokenEmbeddings
// userdata. The vectors stay in C++ memory, counted in the VM's memory cap while the userdata lives;
// scripts get token ids, special-token flags and cosine matrices, never the vectors themselves.
#include <array>
#include <charconv>
#include <climits>
#include <cmath>
#include <filesystem>
#include <optional>
#include <set>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bindings.h"
#include "embedding.h"
#include "kplab/file_gate.h"
#include "kplab/io.h"
#include "kplab/sim.h"
#include "kplab/text.h"
#include "lua_util.h"

namespace kplab::host {

namespace {

constexpr const char* kTokensMeta = "kplab.TokenEmbeddings";

// Rows are L2-normalized when made (a zero row stays zero), so a cosine is a dot product.
struct TokensUd {
  TokenBatch batch;
  HeldMemory held;
};

TokensUd* CheckTokens(lua_State* L, int i) { return Check<TokensUd>(L, i, kTokensMeta); }

int StringCount(const TokenBatch& b) { return static_cast<int>(b.offsets.empty() ? 0 : b.offsets.size() - 1); }

int CheckString(lua_State* L, int arg, const TokenBatch& b) {
  const lua_Integer i = luaL_checkinteger(L, arg);
  const int n = StringCount(b);
  if (i < 1 || i > n) luaL_error(L, "string index %I out of range 1..%d", static_cast<LUAI_UACINT>(i), n);
  return static_cast<int>(i - 1);
}

int TLen(lua_State* L) {
  lua_pushinteger(L, StringCount(CheckTokens(L, 1)->batch));
  return 1;
}

int TIds(lua_State* L) {
  const TokenBatch& b = CheckTokens(L, 1)->batch;
  const int i = CheckString(L, 2, b);
  lua_createtable(L, static_cast<int>(b.offsets[i + 1] - b.offsets[i]), 0);
  for (std::size_t r = b.offsets[i]; r < b.offsets[i + 1]; ++r) {
    lua_pushinteger(L, b.ids[r]);
    lua_rawseti(L, -2, static_cast<lua_Integer>(r - b.offsets[i] + 1));
  }
  return 1;
}

int TSpecial(lua_State* L) {
  const TokenBatch& b = CheckTokens(L, 1)->batch;
  const int i = CheckString(L, 2, b);
  lua_createtable(L, static_cast<int>(b.offsets[i + 1] - b.offsets[i]), 0);
  for (std::size_t r = b.offsets[i]; r < b.offsets[i + 1]; ++r) {
    lua_pushinteger(L, b.special[r] ? 1 : 0);
    lua_rawseti(L, -2, static_cast<lua_Integer>(r - b.offsets[i] + 1));
  }
  return 1;
}

int TTruncated(lua_State* L) {
  const TokenBatch& b = CheckTokens(L, 1)->batch;
  const int i = CheckString(L, 2, b);
  lua_pushboolean(L, b.truncated[i] != 0);
  return 1;
}

// T:cosine(i, U, j) -> Matrix: rows = the tokens of T's string i, columns = those of U's string j.
int TCosine(lua_State* L) {
  const TokenBatch& a = CheckTokens(L, 1)->batch;
  const int i = CheckString(L, 2, a);
  const TokenBatch& b = CheckTokens(L, 3)->batch;
  const int j = CheckString(L, 4, b);
  if (a.dims != b.dims) {
    return luaL_error(L, "cosine needs token embeddings of the same model (got %d and %d dimensions)", a.dims,
                      b.dims);
  }
  const int rows = static_cast<int>(a.offsets[i + 1] - a.offsets[i]);
  const int cols = static_cast<int>(b.offsets[j + 1] - b.offsets[j]);
  ReserveNative(L, static_cast<double>(rows) * cols * sizeof(double), "the token cosine Matrix");
  Matrix m(rows, cols);
  const std::size_t d = static_cast<std::size_t>(a.dims);
  for (int r = 0; r < rows; ++r) {
    const float* x = a.vecs.data() + (a.offsets[i] + r) * d;
    for (int c = 0; c < cols; ++c) {
      const float* y = b.vecs.data() + (b.offsets[j] + c) * d;
      double s = 0;
      for (std::size_t k = 0; k < d; ++k) s += static_cast<double>(x[k]) * y[k];
      m.at(r, c) = s;
    }
  }
  PushMatrix(L, std::move(m));
  return 1;
}

int TToString(lua_State* L) {
  const TokenBatch& b = CheckTokens(L, 1)->batch;
  const std::string s = fmt::format("TokenEmbeddings: {} strings, {} tokens, {} dims", StringCount(b), b.ids.size(),
                                    b.dims);
  lua_pushlstring(L, s.data(), s.size());
  return 1;
}

const luaL_Reg kTokensMethods[] = {
    {"__len", Safe<TLen>},       {"__tostring", Safe<TToString>}, {"ids", Safe<TIds>},
    {"special", Safe<TSpecial>}, {"truncated", Safe<TTruncated>}, {"cosine", Safe<TCosine>},
    {nullptr, nullptr},
};

const char kSpaceKey = 0;  // registry key of the VM's EmbeddingSpace for this file's functions

struct SpaceRef {
  std::shared_ptr<const EmbeddingSpace> space;
};

const EmbeddingSpace* TokenSpace(lua_State* L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &kSpaceKey);
  auto* h = static_cast<SpaceRef*>(lua_touserdata(L, -1));
  lua_pop(L, 1);
  return h != nullptr ? h->space.get() : nullptr;
}

// ctx.token_embeddings(list, layer) -> TokenEmbeddings of every string of list (a KeyphraseList: its
// surfaces; or an array of strings) at hidden layer `layer` (0 = the embedding layer's output).
int CtxTokenEmbeddings(lua_State* L) {
  const EmbeddingSpace* s = TokenSpace(L);
  if (s == nullptr) return luaL_error(L, "ctx.token_embeddings needs the model: declare needs = {\"tokens\"}");
  const lua_Integer layer = luaL_checkinteger(L, 2);
  const int layers = s->embedder->token_layers();
  if (layers < 0) return luaL_error(L, "%s", NoTokenEmbeddingsMessage(*s, "").c_str());
  if (layer < 0 || layer > layers) {
    return luaL_error(L, "ctx.token_embeddings: layer %I is outside 0..%d (model '%s' has %d layers; 0 is the "
                      "embedding layer's output)",
                      layer, layers, s->model.name.c_str(), layers);
  }
  std::vector<std::string> owned;
  std::vector<std::string_view> texts;
  KeyphraseList items;
  const Corpus* corpus = nullptr;
  if (ToKeyphraseList(L, 1, &items, &corpus)) {
    texts.reserve(items.size());
    for (const auto* kp : items) texts.push_back(kp->surface());
  } else {
    luaL_argexpected(L, lua_istable(L, 1), 1, "KeyphraseList or array of strings");
    const lua_Integer n = luaL_len(L, 1);  // __len may lie: counted before the strings are copied
    luaL_argcheck(L, n >= 0 && n <= INT_MAX, 1, "bad length");
    ReserveNative(L, static_cast<double>(n) * sizeof(std::string), "the token strings");
    owned.reserve(static_cast<std::size_t>(n));
    for (lua_Integer i = 1; i <= n; ++i) {
      lua_rawgeti(L, 1, i);
      std::size_t len = 0;
      const char* str = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : nullptr;
      if (str == nullptr) luaL_error(L, "bad argument #1: element %d is not a string", static_cast<int>(i));
      owned.emplace_back(str, len);
      lua_pop(L, 1);
    }
    texts.assign(owned.begin(), owned.end());
  }
  // The vectors are counted against the plugin's memory cap before the network runs: each text gives at
  // most its bytes + 4 tokens (special ones included), and at most the model's own limit.
  {
    const int cap = s->embedder->token_max_length();
    double rows = 0;
    for (std::string_view t : texts) {
      const double most = static_cast<double>(t.size()) + 4;
      rows += cap > 0 ? std::min(most, static_cast<double>(cap)) : most;
    }
    ReserveNative(L, rows * (static_cast<double>(s->dims) * sizeof(float) + sizeof(int) + 1), "ctx.token_embeddings");
  }
  TokenBatch batch;
  if (Status st = s->embedder->EmbedTokens(texts, static_cast<int>(layer), batch); !st.ok()) {
    return luaL_error(L, "ctx.token_embeddings: %s", st.message().c_str());
  }
  if (batch.offsets.size() != texts.size() + 1 || batch.ids.size() != batch.offsets.back() ||
      batch.special.size() != batch.ids.size() || batch.truncated.size() != texts.size() ||
      batch.vecs.size() != batch.ids.size() * static_cast<std::size_t>(batch.dims)) {
    return luaL_error(L, "ctx.token_embeddings: model '%s' returned an inconsistent token batch",
                      s->model.name.c_str());
  }
  const std::size_t d = static_cast<std::size_t>(batch.dims);
  for (std::size_t r = 0; r < batch.ids.size(); ++r) {
    float* v = batch.vecs.data() + r * d;
    double n2 = 0;
    for (std::size_t k = 0; k < d; ++k) n2 += static_cast<double>(v[k]) * v[k];
    if (n2 > 0 && std::isfinite(n2)) {
      const double inv = 1.0 / std::sqrt(n2);
      for (std::size_t k = 0; k < d; ++k) v[k] = static_cast<float>(v[k] * inv);
    }
  }
  const std::size_t bytes = batch.vecs.capacity() * sizeof(float) + batch.ids.capacity() * sizeof(int) +
                            batch.offsets.capacity() * sizeof(std::size_t) + batch.special.capacity() +
                            batch.truncated.capacity();
  HeldMemory held = HoldNative(L, bytes, "ctx.token_embeddings");
  NewUserdata<TokensUd>(L, kTokensMeta, TokensUd{std::move(batch), std::move(held)});
  return 1;
}

// Reads array `arg` of n finite numbers >= 0 (token weights).
std::vector<double> CheckWeights(lua_State* L, int arg, int n, const char* what) {
  luaL_checktype(L, arg, LUA_TTABLE);
  const lua_Integer len = luaL_len(L, arg);
  if (len != n) luaL_error(L, "kp.greedy_match: %s has %I weights (expected %d, one per %s)", what, len, n,
                           arg == 2 ? "row" : "column");
  std::vector<double> w(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    lua_rawgeti(L, arg, i + 1);
    int isnum = 0;
    const double x = lua_tonumberx(L, -1, &isnum);
    lua_pop(L, 1);
    if (!isnum || !std::isfinite(x) || x < 0) {
      luaL_error(L, "kp.greedy_match: %s[%d] must be a finite number >= 0", what, i + 1);
    }
    w[static_cast<std::size_t>(i)] = x;
  }
  return w;
}

// kp.greedy_match(S, row_weights, col_weights) -> P, R, F: BERTScore's greedy matching (Zhang et al.,
// 2020, Eq. 1-3 with importance weights) over a cosine matrix S, rows = candidate tokens, columns =
// reference tokens. P = sum_i w_i max_j S_ij / sum_i w_i, R likewise over columns, F = 2PR/(P+R). A side
// whose weights sum to 0 (no token but specials: an empty string) gives 0, 0, 0; F is 0 when P + R = 0.
int KpGreedyMatch(lua_State* L) {
  const Matrix& m = CheckMatrixArg(L, 1);
  const std::vector<double> wr = CheckWeights(L, 2, m.rows, "row_weights");
  const std::vector<double> wc = CheckWeights(L, 3, m.cols, "col_weights");
  double sr = 0, sc = 0;
  for (double x : wr) sr += x;
  for (double x : wc) sc += x;
  double p = 0, r = 0, f = 0;
  if (sr > 0 && sc > 0) {
    const std::vector<double> row_max = RowMax(m), col_max = ColMax(m);
    for (int i = 0; i < m.rows; ++i) p += wr[static_cast<std::size_t>(i)] / sr * row_max[static_cast<std::size_t>(i)];
    for (int j = 0; j < m.cols; ++j) r += wc[static_cast<std::size_t>(j)] / sc * col_max[static_cast<std::size_t>(j)];
    f = p + r == 0 ? 0 : 2 * p * r / (p + r);
  }
  lua_pushnumber(L, p);
  lua_pushnumber(L, r);
  lua_pushnumber(L, f);
  return 3;
}

// kp.bertscore_baseline(path, layer) -> {p =, r =, f =}: the row of `layer` in a bert_score baseline file
// (CSV with the header LAYER,P,R,F, one row per layer), for rescaling (x - b) / (1 - b).
// Plugins have no file access (docs/plugins.md, Sandbox): the gate lets a plugin read only a path the user
// set as one of its string parameters, and only while its prepare runs (the runner's file grants). The
// plugin is given the row's numbers, never the file's text: no error quotes a line of it.
int KpBertscoreBaseline(lua_State* L) {
  std::size_t n = 0;
  const char* arg = luaL_checklstring(L, 1, &n);
  const std::string path(arg, n);
  const lua_Integer layer = luaL_checkinteger(L, 2);
  if (Status st = GateFile(path, FileAccess::kRead); !st.ok()) {
    return luaL_error(L, "kp.bertscore_baseline: %s", st.message().c_str());
  }
  constexpr const char* kExpected = "a BERTScore baseline CSV with the header LAYER,P,R,F";
  constexpr const char* kNotShown = "the line is not shown: a plugin is given a baseline's numbers, not its text";
  {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec && size > (1u << 20)) {  // refused by its size, before it is read (a sparse terabyte)
      return luaL_error(L, "%s: %d bytes (expected %s, one row per layer: at most 1 MiB)", path.c_str(),
                        static_cast<int>(std::min<std::uintmax_t>(size, INT_MAX)), kExpected);
    }
  }
  Result<std::string> text = ReadRegularFile(path, kExpected);
  if (!text) return luaL_error(L, "%s", text.error().message.c_str());
  if (text->size() > (1u << 20)) {
    return luaL_error(L, "%s: %d bytes (expected %s, one row per layer: at most 1 MiB)", path.c_str(),
                      static_cast<int>(std::min<std::size_t>(text->size(), INT_MAX)), kExpected);
  }
  std::vector<std::string_view> lines = SplitOn(*text, "\n");
  std::string found_rows;
  std::optional<std::array<double, 3>> row;
  int row_line = 0;
  bool header = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const int no = static_cast<int>(i + 1);
    if (!header) {
      if (line != "LAYER,P,R,F") {
        return luaL_error(L, "%s:%d: expected the header LAYER,P,R,F (%s)", path.c_str(), no, kNotShown);
      }
      header = true;
      continue;
    }
    if (line.empty()) continue;
    const std::vector<std::string_view> f = SplitOn(line, ",");
    if (f.size() != 4) {
      return luaL_error(L, "%s:%d: expected 4 comma-separated fields LAYER,P,R,F (got %d)", path.c_str(), no,
                        static_cast<int>(f.size()));
    }
    int l = 0;
    const auto [end, ec] = std::from_chars(f[0].data(), f[0].data() + f[0].size(), l);
    if (f[0].empty() || ec != std::errc() || end != f[0].data() + f[0].size() || l < 0) {
      return luaL_error(L, "%s:%d: LAYER must be an integer >= 0 (%s)", path.c_str(), no, kNotShown);
    }
    std::array<double, 3> b{};
    for (int k = 0; k < 3; ++k) {
      const std::string_view t = f[static_cast<std::size_t>(k + 1)];
      const char* name = k == 0 ? "P" : k == 1 ? "R" : "F";
      double x = 0;
      const auto [e2, ec2] = std::from_chars(t.data(), t.data() + t.size(), x);
      if (t.empty() || ec2 != std::errc() || e2 != t.data() + t.size() || !std::isfinite(x)) {
        return luaL_error(L, "%s:%d: %s must be a finite number (%s)", path.c_str(), no, name, kNotShown);
      }
      if (l == layer && x == 1) {
        return luaL_error(L, "%s:%d: the %s baseline of layer %d is 1 (rescaling divides by 1 - b)", path.c_str(),
                          no, name, l);
      }
      b[static_cast<std::size_t>(k)] = x;
    }
    if (l == layer) {
      if (row) {
        return luaL_error(L, "%s:%d: layer %d is listed twice (first on line %d)", path.c_str(), no, l, row_line);
      }
      row = b;
      row_line = no;
    }
    found_rows += (found_rows.empty() ? "" : ", ") + std::to_string(l);
  }
  if (!header) return luaL_error(L, "%s: empty file (expected %s)", path.c_str(), kExpected);
  if (!row) {
    return luaL_error(L, "%s: no row for layer %I (rows for layers: %s)", path.c_str(), layer,
                      found_rows.empty() ? "none" : found_rows.c_str());
  }
  lua_createtable(L, 0, 3);
  SetNumber(L, "p", (*row)[0]);
  SetNumber(L, "r", (*row)[1]);
  SetNumber(L, "f", (*row)[2]);
  return 1;
}

}  // namespace

std::string NoTokenEmbeddingsMessage(const EmbeddingSpace& s, std::string_view metric) {
  const std::string prefix = metric.empty() ? std::string("ctx.token_embeddings: ")
                                            : fmt::format("metric '{}' needs token embeddings, but ", metric);
  if (s.model.backend == "transformer") {
    // token_layers() < 0 from a transformer: its files did not load; EmbedTokens says why.
    TokenBatch none;
    const Status st = s.embedder->EmbedTokens({}, 0, none);
    if (!st.ok()) return fmt::format("{}model '{}' (backend transformer) did not load: {}", prefix, s.model.name,
                                     st.message());
  }
  return fmt::format("{}model '{}' (backend {}) has no token embeddings: BERTScore-like metrics need a transformer "
                     "encoder; import one with `kplab model import NAME --backend transformer DIR` and run with "
                     "--model NAME",
                     prefix, s.model.name, s.model.backend);
}

void SetTokenSpace(lua_State* L, std::shared_ptr<const EmbeddingSpace> space) {
  if (!space) {
    lua_pushnil(L);
  } else {
    NewUserdata<SpaceRef>(L, "kplab.TokenSpaceHolder", SpaceRef{std::move(space)});
  }
  lua_rawsetp(L, LUA_REGISTRYINDEX, &kSpaceKey);
}

void AddTokensCtx(lua_State* L) {
  if (TokenSpace(L) == nullptr) return;
  lua_pushcfunction(L, Safe<CtxTokenEmbeddings>);
  lua_setfield(L, -2, "token_embeddings");
}

void InstallTokens(lua_State* L) {
  DefineType<TokensUd>(L, kTokensMeta, kTokensMethods);
  static const luaL_Reg kNone[] = {{nullptr, nullptr}};
  DefineType<SpaceRef>(L, "kplab.TokenSpaceHolder", kNone);
  // [kp]
  lua_pushcfunction(L, Safe<KpGreedyMatch>);
  lua_setfield(L, -2, "greedy_match");
  lua_pushcfunction(L, Safe<KpBertscoreBaseline>);
  lua_setfield(L, -2, "bertscore_baseline");
}

}  // namespace kplab::host
