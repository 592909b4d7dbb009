// Native kp modules. One binding file per core module (lua_text.cc, lua_corpus.cc, ...); each exposes an
// installer registered in AllModules(). A binding checks its arguments, calls core, pushes results.
//
// Threads: an installer fills the kp table of one LuaVm, on that VM's thread; the tables (AllModules,
// KernelParams) are constant and may be read from any thread.
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kplab/corpus.h"
#include "kplab/match.h"
#include "kplab/sim.h"
#include "params.h"
#include "sandbox.h"

struct lua_State;

namespace kplab {
struct EmbeddingSpace;  // kplab/embedding_plan.h
}  // namespace kplab

namespace kplab::host {

// Every installer, in registration order.
const std::vector<ModuleInstaller>& AllModules();

// Installers (one per binding file).
void InstallText(lua_State* L);    // lua_text.cc: kp.lower, kp.split, kp.stem, kp.word_tokenize
void InstallCorpus(lua_State* L);  // lua_corpus.cc: Document, KeyphraseList, Match; kp.ideal_dcg, ...

// Pushes {5, 10, "M"} for parsed cut-offs (kp.cutoffs' result). [-0, +1]
void PushCutoffs(lua_State* L, const std::vector<Cutoff>& ks);
// Pushes the predictions and references of subset `view` (0 all, 1 present, 2 absent) of the Document
// at `doc`, as doc:subset does; returns 2, or 0 (nothing pushed) for present/absent of a document
// without text.
int PushDocSubset(lua_State* L, int doc, int view);
// Pushes a Document userdata for corpus->docs[index] (keeps corpus alive).
void PushDocument(lua_State* L, std::shared_ptr<const Corpus> corpus, std::size_t index);
// If the value at idx is a KeyphraseList, sets *items (and *corpus) and returns true.
bool ToKeyphraseList(lua_State* L, int idx, KeyphraseList* items,
                     const Corpus** corpus);
// The same, also giving the document the list belongs to.
bool ToKeyphraseListDoc(lua_State* L, int idx, KeyphraseList* items,
                        const Corpus** corpus, const Document** doc);

// lua_params.cc: kp.int, kp.number, kp.bool, kp.string{...} (and kp.cutoffs{...} through lua_corpus.cc's
// kp.cutoffs): parameter declarations of plugin API 2.
void InstallParams(lua_State* L);
int DeclareCutoffsParam(lua_State* L);
// Pushes the description table kp.int{...} etc. return. [-0, +1]
void PushParamSpec(lua_State* L, const ParamSpec& spec);
// Reads a description table at idx with raw accesses (no plugin code runs); "" or the error text
// ("must be declared with kp.int, ...", "field 'default' must be an integer >= 1 (got 0)").
std::string ReadParamSpec(lua_State* L, int idx, ParamSpec* spec);

void InstallEmbed(lua_State* L);   // lua_embed.cc: Matrix; kp.neighbors, kp.matrix
void InstallPlot(lua_State* L);    // lua_plot.cc: kp.plot.boxplot, histogram, heatmap, bars, lines (SVG)
void InstallStats(lua_State* L);   // lua_stats.cc: kp.stats (tests, correlations, bootstrap, factor analysis)
void InstallCalib(lua_State* L);   // lua_calib.cc: kp.calib (keyphrase perplexity, ECE, positions)
void InstallHomog(lua_State* L);
// lua_kernel.cc: kp.kernel.exact / rank / rprec / semrp, the native kernels a plugin may use as its score.
void InstallKernels(lua_State* L);
// The kernel's name ("exact", ...) when f is one of kp.kernel's functions, else nullptr.
const char* KernelOf(int (*f)(lua_State*));
// A parameter a kernel reads, with the type the plugin must declare it with.
struct KernelParam {
  std::string name;
  ParamType type;
  bool optional = false;  // the kernel has a default when the plugin does not declare it
};
const std::vector<KernelParam>& KernelParams(std::string_view kernel);   // lua_homog.cc: kp.homog (consistency of a pair, pair mining, reformulations)
// The pairs of a run (pair_index.h; built by the engine's MineCorpusPairs, engine/pairs.h).
struct PairIndex;
// Adds ctx.partners(doc) and ctx.pairs = {theta, n [, normalize]} to the table on top of the stack.
// [-0, +0]
void AddPairsCtx(lua_State* L, const std::shared_ptr<const Corpus>& corpus,
                 const std::shared_ptr<const PairIndex>& pairs);
// Makes `space` the one kp.neighbors and the ctx functions of this VM use (nullptr: none).
void SetEmbeddingSpace(lua_State* L, std::shared_ptr<const EmbeddingSpace> space);
// The VM's space (the run's model and planned vectors), or nullptr without one. [-0, +0]
const EmbeddingSpace* RunEmbeddingSpace(lua_State* L);
// Adds ctx.cosine, ctx.embedding and ctx.model to the table on top of the stack when the VM has a
// space. [-0, +0]
void AddEmbeddingCtx(lua_State* L);

// lua_tokens.cc: the TokenEmbeddings userdata and ctx.token_embeddings (plugins that declare
// needs = {"tokens"}; docs/embeddings.md).
void InstallTokens(lua_State* L);
// Makes `space`'s model the one ctx.token_embeddings uses in this VM (nullptr: none); SetEmbeddingSpace
// calls it.
void SetTokenSpace(lua_State* L, std::shared_ptr<const EmbeddingSpace> space);
// Adds ctx.token_embeddings to the table on top of the stack when the VM has a space. [-0, +0]
void AddTokensCtx(lua_State* L);
// The error for a model without token embeddings (token_layers() < 0): names the metric (when not
// empty), the model and its backend, and says how to import a transformer.
std::string NoTokenEmbeddingsMessage(const EmbeddingSpace& s, std::string_view metric);

// lua_textmetrics.cc: kp.textmetrics (ROUGE, METEOR, Self-BLEU and Indel counting; kplab/textmetrics.h).
void InstallTextMetrics(lua_State* L);
// lua_retrieval.cc: kp.retrieval (the utility metric's collection, BM25 and dense search).
void InstallRetrieval(lua_State* L);

// Pushes a Matrix userdata (lua_embed.cc) holding `m`.
void PushMatrix(lua_State* L, Matrix m);
// The Matrix of the Matrix userdata at idx (a Lua argument error otherwise).
const Matrix& CheckMatrixArg(lua_State* L, int idx);

// Pushes a Corpus userdata.
void PushCorpus(lua_State* L, std::shared_ptr<const Corpus> corpus);
// The corpus of the Corpus userdata at idx (a Lua argument error otherwise).
std::shared_ptr<const Corpus> CheckCorpusArg(lua_State* L, int idx);
// The corpus of the Corpus userdata at idx, or nullptr when the value is not one (luaL_testudata's
// contract; the userdata owns the corpus). For bindings that take a Corpus argument (lua_homog.cc).
const Corpus* TestCorpus(lua_State* L, int idx);

}  // namespace kplab::host
