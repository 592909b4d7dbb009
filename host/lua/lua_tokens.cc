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
#include "kplab/embedding_plan.h"
#include "kplab/emd.h"
#include "kplab/file_gate.h"
#include "kplab/io.h"
#include "kplab/sim.h"
#include "kplab/text.h"
#include "lua_util.h"

namespace kplab::host {

namespace {

constexpr const char* kTokensMeta = "kplab.TokenEmbeddings";

// Rows are L2-normalized when made (a zero row stays zero), so a cosine is a dot product; rows made by
// pooling layers, ngrams or select (MoverScore) are not (unit = false) and cosine divides by the norms.
// space names the model the tokens came from (T:tokens).
struct TokensUd {
  TokenBatch batch;
  HeldMemory held;
  bool unit = true;
  std::shared_ptr<const EmbeddingSpace> space;
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
  const bool unit = CheckTokens(L, 1)->unit && CheckTokens(L, 3)->unit;
  for (int r = 0; r < rows; ++r) {
    const float* x = a.vecs.data() + (a.offsets[i] + r) * d;
    for (int c = 0; c < cols; ++c) {
      const float* y = b.vecs.data() + (b.offsets[j] + c) * d;
      double s = 0, nx = 0, ny = 0;
      for (std::size_t k = 0; k < d; ++k) s += static_cast<double>(x[k]) * y[k];
      if (!unit) {
        for (std::size_t k = 0; k < d; ++k) {
          nx += static_cast<double>(x[k]) * x[k];
          ny += static_cast<double>(y[k]) * y[k];
        }
        s = nx > 0 && ny > 0 ? s / std::sqrt(nx * ny) : 0.0;
      }
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

// MoverScore's pieces (T:tokens, T:ngrams, T:select, kp.token_distances, kp.emd) are below.
int TTokens(lua_State* L);
int TNgrams(lua_State* L);
int TSelect(lua_State* L);

const luaL_Reg kTokensMethods[] = {
    {"__len", Safe<TLen>},       {"__tostring", Safe<TToString>}, {"ids", Safe<TIds>},
    {"special", Safe<TSpecial>}, {"truncated", Safe<TTruncated>}, {"cosine", Safe<TCosine>},
    {"tokens", Safe<TTokens>},   {"ngrams", Safe<TNgrams>},       {"select", Safe<TSelect>},
    {nullptr, nullptr},
};

const char kSpaceKey = 0;  // registry key of the VM's EmbeddingSpace for this file's functions

struct SpaceRef {
  std::shared_ptr<const EmbeddingSpace> space;
};

std::shared_ptr<const EmbeddingSpace> TokenSpaceShared(lua_State* L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &kSpaceKey);
  auto* h = static_cast<SpaceRef*>(lua_touserdata(L, -1));
  lua_pop(L, 1);
  return h != nullptr ? h->space : nullptr;
}

const EmbeddingSpace* TokenSpace(lua_State* L) { return TokenSpaceShared(L).get(); }

// The layers argument of ctx.token_embeddings when it is an array (several layers pooled), and its
// pool argument: "min", "mean", "max" reductions, concatenated in the order given.
std::vector<int> CheckLayerList(lua_State* L, int arg, int layers, const std::string& model) {
  const lua_Integer n = luaL_len(L, arg);
  if (n < 1 || n > 64) luaL_error(L, "ctx.token_embeddings: the layer list has %I entries (expected 1 to 64)", n);
  std::vector<int> out;
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_rawgeti(L, arg, i);
    int isnum = 0;
    const lua_Integer l = lua_tointegerx(L, -1, &isnum);
    lua_pop(L, 1);
    if (!isnum || l < 0 || l > layers) {
      luaL_error(L, "ctx.token_embeddings: layer list entry %I is not a layer in 0..%d (model '%s' has %d layers)", i,
                 layers, model.c_str(), layers);
    }
    out.push_back(static_cast<int>(l));
  }
  return out;
}

std::vector<std::string> CheckPools(lua_State* L, int arg) {
  if (!lua_istable(L, arg)) {
    luaL_error(L, "ctx.token_embeddings: a layer list needs a pool list as argument #3 ({\"min\", \"mean\", "
                  "\"max\"} or some of them)");
  }
  const lua_Integer n = luaL_len(L, arg);
  if (n < 1 || n > 3) luaL_error(L, "ctx.token_embeddings: the pool list has %I entries (expected 1 to 3)", n);
  std::vector<std::string> out;
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_rawgeti(L, arg, i);
    const char* p = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "";
    const std::string pool(p);
    lua_pop(L, 1);
    if (pool != "min" && pool != "mean" && pool != "max") {
      luaL_error(L, "ctx.token_embeddings: pool list entry %I must be \"min\", \"mean\" or \"max\"", i);
    }
    out.push_back(pool);
  }
  return out;
}

// MoverScore v1 (moverscore.py word_mover_score): each layer's vector divided by its norm (float32, as
// torch's div_ by torch.norm), then per pool the element-wise min / mean (sum in layer order, / k) / max
// over the layers, the pools' vectors one after another. A zero vector stays zero.
void PoolLayers(TokenBatch& b, std::size_t k, const std::vector<std::string>& pools) {
  const std::size_t H = static_cast<std::size_t>(b.dims) / k, rows = b.ids.size(), np = pools.size();
  std::vector<float> out(rows * H * np);
  std::vector<float> unit(H * k);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* src = b.vecs.data() + r * H * k;
    for (std::size_t l = 0; l < k; ++l) {
      double n2 = 0;
      for (std::size_t e = 0; e < H; ++e) n2 += static_cast<double>(src[l * H + e]) * src[l * H + e];
      const float norm = static_cast<float>(std::sqrt(n2));
      for (std::size_t e = 0; e < H; ++e) unit[l * H + e] = norm > 0 ? src[l * H + e] / norm : 0.0f;
    }
    for (std::size_t p = 0; p < np; ++p) {
      float* dst = out.data() + (r * np + p) * H;
      for (std::size_t e = 0; e < H; ++e) {
        float v = unit[e];
        for (std::size_t l = 1; l < k; ++l) {
          const float u = unit[l * H + e];
          if (pools[p] == "min") {
            v = std::min(v, u);
          } else if (pools[p] == "max") {
            v = std::max(v, u);
          } else {
            v += u;
          }
        }
        dst[e] = pools[p] == "mean" ? v / static_cast<float>(k) : v;
      }
    }
  }
  b.vecs = std::move(out);
  b.dims = static_cast<int>(H * np);
}

// ctx.token_layers() -> L: the model's number of layers (ctx.token_embeddings takes 0 .. L); loads the
// model, which a plugin that needs tokens does anyway.
int CtxTokenLayers(lua_State* L) {
  const EmbeddingSpace* s = TokenSpace(L);
  if (s == nullptr) return luaL_error(L, "ctx.token_layers needs the model: declare needs = {\"tokens\"}");
  const int layers = s->embedder->token_layers();
  if (layers < 0) return luaL_error(L, "%s", NoTokenEmbeddingsMessage(*s, "").c_str());
  lua_pushinteger(L, layers);
  return 1;
}

// A TokenEmbeddings userdata over batch, its memory counted in the VM's cap while it lives.
int PushTokens(lua_State* L, TokenBatch batch, bool unit, std::shared_ptr<const EmbeddingSpace> space) {
  const std::size_t bytes = batch.vecs.capacity() * sizeof(float) + batch.ids.capacity() * sizeof(int) +
                            batch.offsets.capacity() * sizeof(std::size_t) + batch.special.capacity() +
                            batch.truncated.capacity();
  HeldMemory held = HoldNative(L, bytes, "ctx.token_embeddings");
  NewUserdata<TokensUd>(L, kTokensMeta, TokensUd{std::move(batch), std::move(held), unit, std::move(space)});
  return 1;
}

// ctx.token_embeddings(list, layer) -> TokenEmbeddings of every string of list (a KeyphraseList: its
// surfaces; or an array of strings) at hidden layer `layer` (0 = the embedding layer's output).
int CtxTokenEmbeddings(lua_State* L) {
  const std::shared_ptr<const EmbeddingSpace> shared = TokenSpaceShared(L);
  const EmbeddingSpace* s = shared.get();
  if (s == nullptr) return luaL_error(L, "ctx.token_embeddings needs the model: declare needs = {\"tokens\"}");
  const bool pooled = lua_istable(L, 2);
  const int layers = s->embedder->token_layers();
  if (layers < 0) return luaL_error(L, "%s", NoTokenEmbeddingsMessage(*s, "").c_str());
  std::vector<int> layer_list;
  std::vector<std::string> pools;
  if (pooled) {
    layer_list = CheckLayerList(L, 2, layers, s->model.name);
    pools = CheckPools(L, 3);
  }
  const lua_Integer layer = pooled ? layer_list[0] : luaL_checkinteger(L, 2);
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
    const double per_row = pooled ? static_cast<double>(layer_list.size() + pools.size()) : 1.0;
    ReserveNative(L, rows * (static_cast<double>(s->dims) * sizeof(float) * per_row + sizeof(int) + 1),
                  "ctx.token_embeddings");
  }
  TokenBatch batch;
  const Status st = pooled ? s->embedder->EmbedTokenLayers(texts, layer_list, batch)
                           : s->embedder->EmbedTokens(texts, static_cast<int>(layer), batch);
  if (!st.ok()) return luaL_error(L, "ctx.token_embeddings: %s", st.message().c_str());
  if (batch.offsets.size() != texts.size() + 1 || batch.ids.size() != batch.offsets.back() ||
      batch.special.size() != batch.ids.size() || batch.truncated.size() != texts.size() ||
      batch.vecs.size() != batch.ids.size() * static_cast<std::size_t>(batch.dims)) {
    return luaL_error(L, "ctx.token_embeddings: model '%s' returned an inconsistent token batch",
                      s->model.name.c_str());
  }
  if (pooled) {
    PoolLayers(batch, layer_list.size(), pools);
    return PushTokens(L, std::move(batch), false, shared);
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
  return PushTokens(L, std::move(batch), true, shared);
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

// ---------------------------------------------------------------------------------------------
// MoverScore (plugins/mover.lua): token strings, n-gram vectors, distance matrices, earth mover's
// distance. Each charges its loops to the budget before running them (sandbox.h).

// A string's flags (keep) or weights: an array of exactly n entries.
std::vector<char> CheckKeep(lua_State* L, int arg, std::size_t n, const char* fn) {
  luaL_checktype(L, arg, LUA_TTABLE);
  const lua_Integer len = luaL_len(L, arg);
  if (len != static_cast<lua_Integer>(n)) {
    luaL_error(L, "%s: keep has %I entries (expected %d, one per token)", fn, len, static_cast<int>(n));
  }
  std::vector<char> keep(n);
  for (std::size_t k = 0; k < n; ++k) {
    lua_rawgeti(L, arg, static_cast<lua_Integer>(k + 1));
    if (!lua_isboolean(L, -1)) luaL_error(L, "%s: keep[%d] must be true or false", fn, static_cast<int>(k + 1));
    keep[k] = static_cast<char>(lua_toboolean(L, -1));
    lua_pop(L, 1);
  }
  return keep;
}

std::vector<double> CheckNumbers(lua_State* L, int arg, std::size_t n, const char* fn, const char* what) {
  luaL_checktype(L, arg, LUA_TTABLE);
  const lua_Integer len = luaL_len(L, arg);
  if (len != static_cast<lua_Integer>(n)) {
    luaL_error(L, "%s: %s has %I entries (expected %d)", fn, what, len, static_cast<int>(n));
  }
  std::vector<double> v(n);
  for (std::size_t k = 0; k < n; ++k) {
    lua_rawgeti(L, arg, static_cast<lua_Integer>(k + 1));
    int isnum = 0;
    v[k] = lua_tonumberx(L, -1, &isnum);
    lua_pop(L, 1);
    if (!isnum || !std::isfinite(v[k]) || v[k] < 0) {
      luaL_error(L, "%s: %s[%d] must be a finite number >= 0", fn, what, static_cast<int>(k + 1));
    }
  }
  return v;
}

// T:tokens(i) -> the vocabulary strings of string i's tokens ("[CLS]", "neural", "##s", ...).
int TTokens(lua_State* L) {
  const TokensUd* t = CheckTokens(L, 1);
  const TokenBatch& b = t->batch;
  const int i = CheckString(L, 2, b);
  if (!t->space) return luaL_error(L, "tokens: these token embeddings name no model");
  ChargeNative(L, static_cast<double>(b.offsets[i + 1] - b.offsets[i]));
  lua_createtable(L, static_cast<int>(b.offsets[i + 1] - b.offsets[i]), 0);
  for (std::size_t r = b.offsets[i]; r < b.offsets[i + 1]; ++r) {
    const std::string text = t->space->embedder->TokenText(b.ids[r]);
    lua_pushlstring(L, text.data(), text.size());
    lua_rawseti(L, -2, static_cast<lua_Integer>(r - b.offsets[i] + 1));
  }
  return 1;
}

// One-string token embeddings built from rows of vecs (dims each).
int PushRows(lua_State* L, const TokensUd& from, std::vector<float> vecs, std::size_t rows, int dims) {
  TokenBatch out;
  out.dims = dims;
  out.vecs = std::move(vecs);
  out.offsets = {0, rows};
  out.ids.assign(rows, -1);
  out.special.assign(rows, 0);
  out.truncated.assign(1, 0);
  return PushTokens(L, std::move(out), false, from.space);
}

// T:ngrams(i, keep, weights, n, eps) -> G, masses: MoverScore v1's load_ngram over string i. The kept
// tokens (keep[k] true), in order, are cut into windows of n consecutive ones, one step apart (fewer
// than n kept: one window of them all; none: one empty window). A window's mass is the float32 sum of
// its weights; its vector sum_k (w_k / (mass + eps)) e_k, in float32 as torch computes it. G has one
// string whose rows are the windows' vectors; masses the windows' masses (numbers).
int TNgrams(lua_State* L) {
  const TokensUd* t = CheckTokens(L, 1);
  const TokenBatch& b = t->batch;
  const int i = CheckString(L, 2, b);
  const std::size_t len = b.offsets[i + 1] - b.offsets[i];
  const std::vector<char> keep = CheckKeep(L, 3, len, "ngrams");
  const std::vector<double> w = CheckNumbers(L, 4, len, "ngrams", "weights");
  const lua_Integer n = luaL_checkinteger(L, 5);
  if (n < 1 || n > 512) luaL_error(L, "ngrams: n is %I (expected 1 to 512)", n);
  const double eps = luaL_checknumber(L, 6);
  if (!std::isfinite(eps) || eps < 0) luaL_error(L, "ngrams: eps must be a finite number >= 0");
  std::vector<std::size_t> ids;
  for (std::size_t k = 0; k < len; ++k) {
    if (keep[k]) ids.push_back(k);
  }
  // numpy's slide_window: width min(n, #ids) (0 when none), windows at every start.
  const std::size_t width = std::min<std::size_t>(static_cast<std::size_t>(n), ids.size());
  const std::size_t windows = ids.size() - width + 1;
  const std::size_t d = static_cast<std::size_t>(b.dims);
  ChargeNative(L, static_cast<double>(windows) * static_cast<double>(std::max<std::size_t>(width, 1)) * d);
  ReserveNative(L, static_cast<double>(windows) * d * sizeof(float), "T:ngrams");
  std::vector<float> vecs(windows * d, 0.0f);
  lua_createtable(L, static_cast<int>(windows), 0);  // masses, pushed after G
  for (std::size_t s = 0; s < windows; ++s) {
    float mass = 0;
    for (std::size_t k = 0; k < width; ++k) mass += static_cast<float>(w[ids[s + k]]);
    const float denom = mass + static_cast<float>(eps);
    float* dst = vecs.data() + s * d;
    for (std::size_t k = 0; k < width; ++k) {
      const float scale = static_cast<float>(w[ids[s + k]]) / denom;
      const float* e = b.vecs.data() + (b.offsets[i] + ids[s + k]) * d;
      for (std::size_t x = 0; x < d; ++x) dst[x] += scale * e[x];
    }
    lua_pushnumber(L, static_cast<double>(mass));
    lua_rawseti(L, -2, static_cast<lua_Integer>(s + 1));
  }
  PushRows(L, *t, std::move(vecs), windows, b.dims);
  lua_insert(L, -2);  // [G, masses]
  return 2;
}

// T:select(i, keep) -> G: string i's rows, those whose keep is false set to zero (moverscore_v2 zeroes
// the embeddings of the tokens it drops and keeps them as rows).
int TSelect(lua_State* L) {
  const TokensUd* t = CheckTokens(L, 1);
  const TokenBatch& b = t->batch;
  const int i = CheckString(L, 2, b);
  const std::size_t len = b.offsets[i + 1] - b.offsets[i], d = static_cast<std::size_t>(b.dims);
  const std::vector<char> keep = CheckKeep(L, 3, len, "select");
  ChargeNative(L, static_cast<double>(len) * d);
  ReserveNative(L, static_cast<double>(len) * d * sizeof(float), "T:select");
  std::vector<float> vecs(len * d, 0.0f);
  for (std::size_t k = 0; k < len; ++k) {
    if (!keep[k]) continue;
    const float* e = b.vecs.data() + (b.offsets[i] + k) * d;
    std::copy(e, e + d, vecs.begin() + static_cast<std::ptrdiff_t>(k * d));
  }
  return PushRows(L, *t, std::move(vecs), len, b.dims);
}

// kp.token_distances(A, B, kind, eps) -> Matrix: the rows of every string of A, then of B (token
// embeddings of one model), each divided by (its norm + eps) in float32, as MoverScore normalizes
// them; entry (r, c) = |x_r|^2 + |x_c|^2 - 2 x_r . x_c in double, "sqeuclidean" clamped at 0
// (moverscore.py's pairwise_distances), "euclidean" clamped at 1e-30 then square-rooted
// (moverscore_v2.py's batched_cdist_l2). A square matrix over all the rows.
int KpTokenDistances(lua_State* L) {
  const TokenBatch& a = CheckTokens(L, 1)->batch;
  const TokenBatch& b = CheckTokens(L, 2)->batch;
  const std::string kind = luaL_checkstring(L, 3);
  if (kind != "sqeuclidean" && kind != "euclidean") {
    return luaL_error(L, "kp.token_distances: kind must be \"sqeuclidean\" or \"euclidean\" (got '%s')", kind.c_str());
  }
  const double eps = luaL_checknumber(L, 4);
  if (!std::isfinite(eps) || eps < 0) return luaL_error(L, "kp.token_distances: eps must be a finite number >= 0");
  if (a.dims != b.dims) {
    return luaL_error(L, "kp.token_distances needs token embeddings of the same size (got %d and %d dimensions)",
                      a.dims, b.dims);
  }
  const std::size_t d = static_cast<std::size_t>(a.dims), na = a.ids.size(), n = na + b.ids.size();
  if (n > 46340) return luaL_error(L, "kp.token_distances: %d rows (at most 46340)", static_cast<int>(n));
  ChargeNative(L, static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(d));
  ReserveNative(L, static_cast<double>(n) * n * sizeof(double) + static_cast<double>(n) * d * sizeof(float),
                "kp.token_distances");
  std::vector<float> x(n * d);
  std::vector<double> sq(n);
  for (std::size_t r = 0; r < n; ++r) {
    const float* src = r < na ? a.vecs.data() + r * d : b.vecs.data() + (r - na) * d;
    double n2 = 0;
    for (std::size_t k = 0; k < d; ++k) n2 += static_cast<double>(src[k]) * src[k];
    const float denom = static_cast<float>(std::sqrt(n2)) + static_cast<float>(eps);
    double s2 = 0;
    for (std::size_t k = 0; k < d; ++k) {
      const float v = denom > 0 ? src[k] / denom : 0.0f;  // 0 / 0 (a zero row, eps 0) stays 0
      x[r * d + k] = v;
      s2 += static_cast<double>(v) * v;
    }
    sq[r] = s2;
  }
  Matrix m(static_cast<int>(n), static_cast<int>(n));
  const bool euclid = kind == "euclidean";
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t c = r; c < n; ++c) {
      double dot = 0;
      for (std::size_t k = 0; k < d; ++k) dot += static_cast<double>(x[r * d + k]) * x[c * d + k];
      double v = sq[r] + sq[c] - 2 * dot;
      v = euclid ? std::sqrt(std::max(v, 1e-30)) : std::max(v, 0.0);
      m.at(static_cast<int>(r), static_cast<int>(c)) = v;
      m.at(static_cast<int>(c), static_cast<int>(r)) = v;
    }
  }
  PushMatrix(L, std::move(m));
  return 1;
}

// kp.emd(p, q, D) -> distance, flow_cost: pyemd's emd(p, q, D) (kplab/emd.h: FastEMD's arithmetic,
// exact), and the cost of its flow, sum_ij float32(flow_ij) * D_ij (moverscore_v2 scores with it).
int KpEmd(lua_State* L) {
  const Matrix& m = CheckMatrixArg(L, 3);
  if (m.rows != m.cols) return luaL_error(L, "kp.emd: D is %d x %d (expected a square matrix)", m.rows, m.cols);
  const std::size_t n = static_cast<std::size_t>(m.rows);
  const std::vector<double> p = CheckNumbers(L, 1, n, "kp.emd", "p");
  const std::vector<double> q = CheckNumbers(L, 2, n, "kp.emd", "q");
  ChargeNative(L, static_cast<double>(n) * static_cast<double>(n));
  ReserveNative(L, static_cast<double>(n) * n * 8 * sizeof(double), "kp.emd");
  EmdOptions opt;
  opt.flow = true;
  opt.checkpoint = [L](double steps) { ChargeNative(L, steps); };
  auto r = EarthMoversDistance(p, q, m.v, opt);
  if (!r.ok()) return luaL_error(L, "kp.%s", r.error().message.c_str());
  double cost = 0;
  for (std::size_t k = 0; k < n * n; ++k) cost += static_cast<double>(static_cast<float>(r->flow[k])) * m.v[k];
  lua_pushnumber(L, r->distance);
  lua_pushnumber(L, cost);
  return 2;
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
  lua_pushcfunction(L, Safe<CtxTokenLayers>);
  lua_setfield(L, -2, "token_layers");
}

void InstallTokens(lua_State* L) {
  DefineType<TokensUd>(L, kTokensMeta, kTokensMethods, nullptr, KeptAtLoad::kImmutable);
  static const luaL_Reg kNone[] = {{nullptr, nullptr}};
  DefineType<SpaceRef>(L, "kplab.TokenSpaceHolder", kNone);
  // [kp]
  lua_pushcfunction(L, Safe<KpGreedyMatch>);
  lua_setfield(L, -2, "greedy_match");
  lua_pushcfunction(L, Safe<KpBertscoreBaseline>);
  lua_setfield(L, -2, "bertscore_baseline");
  lua_pushcfunction(L, Safe<KpTokenDistances>);
  lua_setfield(L, -2, "token_distances");
  lua_pushcfunction(L, Safe<KpEmd>);
  lua_setfield(L, -2, "emd");
}

}  // namespace kplab::host
