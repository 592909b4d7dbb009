// The cost of every C function a sandboxed script can reach (costs.h). When a function's bound needs a
// check or a charge, the function does it (the file named): this table states the bound, the code keeps it.
#include "costs.h"

namespace kplab::host {
namespace {

using enum CostKind;

constexpr std::string_view kMemory = "O(size of its arguments), which live in the VM (the memory cap bounds them)";
constexpr std::string_view kData =
    "O(size of the loaded data it reads: a corpus, a run store), not of anything the script chooses; the deadline "
    "is checked when it returns";

// The table is laid out by hand (a bound's continuation lines under its first): clang-format would re-wrap
// the whole initializer whenever one entry changes, so every edit here failed scripts/format_check.sh.
// clang-format off
constexpr CostEntry kCosts[] = {
    // ---- base functions (sandbox.cc: kAllowedBase) -----------------------------------------------------
    {"assert", kConstant, "O(number of arguments)"},
    {"error", kConstant, "O(1): adds a position"},
    {"getmetatable", kConstant, "O(1): reads __metatable raw"},
    {"ipairs", kConstant, "O(1)"},
    {"ipairs()", kScript, "O(1) per step; t[i] may call the script's __index"},
    {"next", kSize, "O(1) amortized; one call is O(capacity of the table), which the memory cap bounds"},
    {"pairs", kScript, "O(1); may call the script's __pairs"},
    {"pcall", kScript, "O(1) besides the function it calls; kills cannot be caught (the hook re-arms)"},
    {"xpcall", kScript, "as pcall; the handler is skipped once a limit has fired (sandbox.cc: GuardedHandler)"},
    {"rawequal", kConstant, "O(1)"},
    {"rawlen", kConstant, "O(1)"},
    {"select", kConstant, "O(number of arguments)"},
    {"setmetatable", kConstant, "O(1); refuses __gc (sandbox.cc: SandboxSetmetatable)"},
    {"tonumber", kSize, kMemory},
    {"tostring", kScript, "O(size of the result); may call the script's __tostring"},
    {"type", kConstant, "O(1)"},
    {"print", kScript, "O(size of its arguments' text); tostring may call __tostring (scripts and the REPL)"},
    {"help", kSize, "O(size of the kp API's documentation and of the registry); help(name) loads the plugin "
                    "through a nested LuaVm::Call, under the REPL line's budget (REPL only)"},
    // ---- the environments' own metatables ------------------------------------------------------------------
    {"(globals).__index", kConstant, "O(1): raises \"undefined global\", naming the key raw"},
    {"(globals).__newindex", kConstant, "O(1): raises \"assignment to undeclared global\", naming the key raw"},
    {"(proxy).__newindex", kConstant, "O(1): raises \"attempt to modify read-only table\""},
    {"(proxy).__pairs", kConstant, "O(1)"},
    {"(proxy).__pairs^1", kSize, "as next, over the proxy's hidden table"},
    {"(proxy).__len", kConstant, "O(1): rawlen of the hidden table"},
    {"params(metatable).__index", kSize,
     "O(1) for a known name; an unknown one lists the known names, O(number of parameters)"},
    {"params(metatable).__newindex", kConstant, "O(1): raises \"attempt to modify read-only table\""},
    {"params(metatable).__pairs", kConstant, "O(1)"},
    {"params(metatable).__pairs()", kSize, "as next, over the parameters"},
    // ---- string (lua_pattern.cc, lua_stdlib.cc; the rest is Lua's) ---------------------------------------
    {"string.byte", kSize, "O(j - i), at most #s and the Lua stack's 1,000,000 slots (\"string slice too long\")"},
    {"string.char", kConstant, "O(number of arguments)"},
    {"string.find", kCharged, "every step of the matcher charged (lua_pattern.cc); a plain find charged by #s"},
    {"string.format", kSize, "O(#format + size of the arguments); %s may call __tostring; a result of 1 MiB or "
                             "more is charged by the allocator"},
    {"string.gmatch", kConstant, "O(1): makes the iterator"},
    {"string.gmatch()", kCharged, "every step of the matcher charged (lua_pattern.cc)"},
    {"string.gsub", kCharged, "every step of the matcher charged (lua_pattern.cc); a function or table replacement "
                              "is the script's code"},
    {"string.len", kConstant, "O(1)"},
    {"string.lower", kSize, kMemory},
    {"string.match", kCharged, "every step of the matcher charged (lua_pattern.cc)"},
    {"string.pack", kSize, "O(#format + size of the arguments)"},
    {"string.packsize", kSize, "O(#format)"},
    {"string.rep", kSize, "O(size of the result), which the memory cap bounds and the allocator charges (1 MiB "
                          "and more); an empty result is made without a loop (lua_stdlib.cc)"},
    {"string.reverse", kSize, kMemory},
    {"string.sub", kSize, "O(size of the result)"},
    {"string.unpack", kSize, "O(#format + #s)"},
    {"string.upper", kSize, kMemory},
    // ---- table (lua_stdlib.cc) --------------------------------------------------------------------------
    {"table.concat", kCharged, "each element charged as it is added, whatever __len says (lua_stdlib.cc)"},
    {"table.insert", kCharged, "each element moved charged, whatever __len says (lua_stdlib.cc)"},
    {"table.move", kCharged, "each element moved charged (lua_stdlib.cc)"},
    {"table.pack", kConstant, "O(number of arguments)"},
    {"table.remove", kCharged, "each element moved charged, whatever __len says (lua_stdlib.cc)"},
    {"table.sort", kCharged, "a merge sort of a plain copy: every move and comparison of its ceil(log2 n) + 2 passes "
                             "charged before it copies anything, whatever __len says; the comparator and __lt are "
                             "the script's code (lua_stdlib.cc)"},
    {"table.unpack", kCharged, "each element charged; at most the Lua stack's 1,000,000 slots (lua_stdlib.cc)"},
    // ---- math (Lua's; math.atan2, cosh, ... are Lua 5.4's compatibility functions) -------------------------
    {"math.abs", kConstant, "O(1)"},
    {"math.acos", kConstant, "O(1)"},
    {"math.asin", kConstant, "O(1)"},
    {"math.atan", kConstant, "O(1)"},
    {"math.ceil", kConstant, "O(1)"},
    {"math.cos", kConstant, "O(1)"},
    {"math.cosh", kConstant, "O(1)"},
    {"math.deg", kConstant, "O(1)"},
    {"math.exp", kConstant, "O(1)"},
    {"math.floor", kConstant, "O(1)"},
    {"math.fmod", kConstant, "O(1)"},
    {"math.frexp", kConstant, "O(1)"},
    {"math.ldexp", kConstant, "O(1)"},
    {"math.log", kConstant, "O(1)"},
    {"math.log10", kConstant, "O(1)"},
    {"math.max", kConstant, "O(number of arguments)"},
    {"math.min", kConstant, "O(number of arguments)"},
    {"math.modf", kConstant, "O(1)"},
    {"math.pow", kConstant, "O(1)"},
    {"math.rad", kConstant, "O(1)"},
    {"math.random", kConstant, "O(1)"},
    {"math.randomseed", kConstant, "O(1)"},
    {"math.sin", kConstant, "O(1)"},
    {"math.sinh", kConstant, "O(1)"},
    {"math.sqrt", kConstant, "O(1)"},
    {"math.tan", kConstant, "O(1)"},
    {"math.tanh", kConstant, "O(1)"},
    {"math.tointeger", kConstant, "O(1)"},
    {"math.type", kConstant, "O(1)"},
    {"math.ult", kConstant, "O(1)"},
    // ---- utf8 (Lua's) -----------------------------------------------------------------------------------------
    {"utf8.char", kConstant, "O(number of arguments)"},
    {"utf8.codepoint", kSize, "O(j - i), at most #s and the Lua stack's slots"},
    {"utf8.codes", kConstant, "O(1): makes the iterator"},
    {"utf8.codes()", kConstant, "O(1) per character"},
    {"utf8.len", kSize, kMemory},
    {"utf8.offset", kSize, kMemory},
    // ---- coroutine (sandbox.cc charges resumes) ----------------------------------------------------------------
    {"coroutine.close", kScript, "O(1); runs the coroutine's pending __close handlers, metered"},
    {"coroutine.create", kConstant, "O(1)"},
    {"coroutine.isyieldable", kConstant, "O(1)"},
    {"coroutine.resume", kCharged, "200 steps charged per resume (a switch costs ~130 instructions' time); the "
                                   "coroutine's code is metered"},
    {"coroutine.resume^1", kScript, "Lua's resume, reachable only through the charged one"},
    {"coroutine.running", kConstant, "O(1)"},
    {"coroutine.status", kConstant, "O(1)"},
    {"coroutine.wrap", kConstant, "O(1): wraps Lua's function in the charged resume"},
    {"coroutine.wrap^1", kConstant, "Lua's wrap, reachable only through the charged one"},
    {"coroutine.wrap()^1", kScript, "Lua's resume of the wrapped coroutine, reachable only through the charged one"},
    {"coroutine.yield", kConstant, "O(1)"},
    // ---- kp: text, corpus (lua_text.cc, lua_corpus.cc) -------------------------------------------------------
    {"kp.log", kScript, "O(size of its arguments' text); tostring may call __tostring"},
    {"kp.metric", kConstant, "O(1): the host checks the declaration after the chunk returns"},
    {"kp.lower", kCharged, "one step per byte charged, output reserved first (lua_text.cc)"},
    {"kp.split", kCharged, "one step per byte charged, output reserved first (lua_text.cc)"},
    {"kp.stem", kCharged, "one step per byte charged, output reserved first (lua_text.cc)"},
    {"kp.word_tokenize", kCharged, "one step per byte charged, output reserved first (lua_text.cc)"},
    {"kp.ideal_dcg", kConstant, "O(number of cut-offs); n_relevant at most 2^24 (one table lookup below that)"},
    {"kp.cutoffs", kSize, "O(#text)"},
    {"kp.int", kSize, "O(size of the declaration table)"},
    {"kp.number", kSize, "O(size of the declaration table)"},
    {"kp.bool", kSize, "O(size of the declaration table)"},
    {"kp.string", kSize, "O(size of the declaration table and its one_of list)"},
    {"Corpus.__gc", kConstant, "O(1) (the collector's; releases a shared corpus)"},
    {"Corpus.__len", kConstant, "O(1)"},
    {"Corpus.__tostring", kConstant, "O(1)"},
    {"Corpus:doc", kConstant, "O(1)"},
    {"Document.__gc", kConstant, "O(1)"},
    {"Document.__index", kSize, "O(size of the field read: a list view, the source's tokens)"},
    {"Document.__tostring", kSize, "O(size of the document's lists)"},
    {"Document:subset", kSize, "O(size of the document's lists)"},
    {"Document:kpeval_references", kSize, "O(size of the document's reference lists)"},
    {"KeyphraseList.__gc", kConstant, "O(1)"},
    {"KeyphraseList.__index", kConstant, "O(1): a method, or a field of the list"},
    {"KeyphraseList.__len", kConstant, "O(1)"},
    {"KeyphraseList.__tostring", kSize, "O(size of the list)"},
    {"KeyphraseList:absent", kSize, "O(size of the list)"},
    {"KeyphraseList:alpha_ndcg", kSize, "O(number of cut-offs x sizes of the two lists and their words)"},
    {"KeyphraseList:get", kSize, "O(size of one keyphrase)"},
    {"KeyphraseList:keys", kSize, "O(size of the list)"},
    {"KeyphraseList:match", kSize, "O(size of the two lists): hashed keys"},
    {"KeyphraseList:match_pairs", kSize, "O(product of the two lists' sizes); the Matrix held in the memory cap"},
    {"KeyphraseList:present", kSize, "O(size of the list)"},
    {"KeyphraseList:present_first", kSize, "O(size of the list)"},
    {"KeyphraseList:unique", kSize, "O(size of the list), one hash set"},
    {"KeyphraseList:prmu", kSize, "O(size of the list and the document's source)"},
    {"KeyphraseList:subset", kSize, "O(size of the list)"},
    {"KeyphraseList:surfaces", kSize, "O(size of the list)"},
    {"KeyphraseList:top", kSize, "O(min(k, size of the list))"},
    {"Match.__gc", kConstant, "O(1)"},
    {"Match.__len", kConstant, "O(1)"},
    {"Match.__tostring", kSize, "O(size of the match)"},
    {"Match:dcg", kSize, "O(number of cut-offs x size of the match)"},
    {"Match:first_hit", kSize, "O(size of the match)"},
    {"Match:flags", kSize, "O(size of the match)"},
    {"Match:hits", kSize, "O(number of cut-offs x size of the match)"},
    {"Match:own_ideal_dcg", kSize, "O(number of cut-offs x size of the match)"},
    {"Match:precision_sum", kSize, "O(number of cut-offs x size of the match)"},
    // ---- kp: embeddings, matrices, token embeddings (lua_embed.cc, lua_tokens.cc) ----------------------------
    {"kp.matrix", kCharged, "rows x columns cells reserved in the memory cap before they are read (a __len that "
                            "lies is refused first)"},
    {"kp.neighbors", kSize, "O(k log n) on the run's index, k at most 10,000"},
    {"ctx.cosine", kCharged, "the phrase vectors reserved first; O(rows x columns x dims) on phrases of the run"},
    {"ctx.embedding", kSize, "O(dims)"},
    {"ctx.token_embeddings", kCharged, "the token vectors reserved and held in the memory cap before the model "
                                       "runs: rows x dims x 4 bytes, times (layers + pools) when a layer list is "
                                       "pooled (lua_tokens.cc); the layer list at most 64, the pool list at most 3"},
    {"ctx.token_layers", kConstant, "O(1): the model's number of layers"},
    {"kp.greedy_match", kSize, "O(cells of the Matrix)"},
    {"kp.bertscore_baseline", kSize, "O(size of the baseline file, read only when granted, in prepare)"},
    {"kp.token_distances", kCharged, "N^2 x dims charged and the N x N Matrix reserved before it is made (N rows of "
                                     "the two token embeddings together); N above 46,340 refused (lua_tokens.cc)"},
    {"kp.emd", kCharged, "n^2 charged and 8 n^2 numbers reserved before the solver starts; each augmenting path (a "
                         "dense O(n^2) Dijkstra) charged as it is found, so at most one path's work runs uncharged; "
                         "about 2n paths in practice (~n^3), never more than the ~10^6 integer units of mass "
                         "FastEMD's rounding leaves (kplab/emd.h)"},
    {"EmbeddingSpaceHolder.__gc", kConstant, "O(1)"},
    {"TokenSpaceHolder.__gc", kConstant, "O(1)"},
    {"Matrix.__gc", kConstant, "O(1): gives its cells back to the memory cap"},
    {"Matrix.__freeze", kConstant, "O(1): marks the Matrix read-only when a plugin keeps it from load"},
    {"Matrix.__len", kConstant, "O(1)"},
    {"Matrix.__tostring", kConstant, "O(1): at most 8 x 8 cells"},
    {"Matrix:assign", kCharged, "rows x columns x min(rows, columns) charged before the Hungarian algorithm runs"},
    {"Matrix:clamp", kSize, "O(cells); the new Matrix is held in the memory cap"},
    {"Matrix:col_max", kSize, "O(rows)"},
    {"Matrix:col_maxes", kSize, "O(cells)"},
    {"Matrix:cols", kConstant, "O(1)"},
    {"Matrix:get", kConstant, "O(1)"},
    {"Matrix:maximum", kSize, "O(cells); the new Matrix is held in the memory cap"},
    {"Matrix:mean_upper", kSize, "O(cells)"},
    {"Matrix:norm", kSize, "O(cells)"},
    {"Matrix:row_max", kSize, "O(columns)"},
    {"Matrix:row_maxes", kSize, "O(cells)"},
    {"Matrix:row_topk", kSize, "O(columns log k)"},
    {"Matrix:row_topk_mean", kSize, "O(columns log k)"},
    {"Matrix:row_topk_means", kSize, "O(cells log k)"},
    {"Matrix:rows", kConstant, "O(1)"},
    {"Matrix:set", kConstant, "O(1)"},
    {"Matrix:size", kConstant, "O(1)"},
    {"Matrix:sum", kSize, "O(cells)"},
    {"Matrix:t", kSize, "O(cells); the new Matrix is held in the memory cap"},
    {"TokenEmbeddings.__gc", kConstant, "O(1): gives its vectors back to the memory cap"},
    {"TokenEmbeddings.__len", kConstant, "O(1)"},
    {"TokenEmbeddings.__tostring", kConstant, "O(1)"},
    {"TokenEmbeddings:cosine", kCharged, "the Matrix reserved before it is made; O(tokens x tokens x dims)"},
    {"TokenEmbeddings:ids", kSize, "O(tokens of one string)"},
    {"TokenEmbeddings:ngrams", kCharged, "windows x width x dims charged and the windows' vectors reserved first "
                                         "(lua_tokens.cc); keep and weights read raw, their lengths checked "
                                         "against the string's tokens first"},
    {"TokenEmbeddings:select", kCharged, "tokens x dims charged and the vectors reserved first (lua_tokens.cc)"},
    {"TokenEmbeddings:special", kSize, "O(tokens of one string)"},
    {"TokenEmbeddings:tokens", kCharged, "tokens of one string charged first; O(their text)"},
    {"TokenEmbeddings:truncated", kConstant, "O(1)"},
    // ---- kp.stats (lua_stats.cc): samples are read raw (1..#t) ------------------------------------------------
    {"kp.stats.mean", kSize, kMemory},
    {"kp.stats.fsum", kSize, "O(n): at most ~40 partials (the exponent range) per value"},
    {"kp.stats.median", kSize, "O(n log n) in the sample's size"},
    {"kp.stats.quantile", kSize, "O(n log n + number of quantiles)"},
    {"kp.stats.var", kSize, kMemory},
    {"kp.stats.sd", kSize, kMemory},
    {"kp.stats.pearson", kSize, kMemory},
    {"kp.stats.spearman", kSize, "O(n log n)"},
    {"kp.stats.kendall", kCharged, "O(n log n); the exact method, when asked for, charged n^3/4 and its "
                                   "distribution reserved first"},
    {"kp.stats.wilcoxon", kCharged, "O(n log n); the exact method, when asked for, charged n^3/2 and its "
                                    "distribution reserved first"},
    {"kp.stats.cliffs_delta", kSize, "O((n + m) log m)"},
    {"kp.stats.anova2", kCharged, "O(n); cells (levels of a x levels of b) and the normal equations charged and "
                                  "reserved first"},
    {"kp.stats.bootstrap_ci", kCharged, "n x (#x + 1) charged and the resamples reserved first; checked while it runs"},
    {"kp.stats.paired_bootstrap_ci", kCharged, "as bootstrap_ci"},
    {"kp.stats.approx_randomization", kCharged, "n x (#x + 1) charged first; checked while it runs"},
    {"kp.stats.holm", kSize, "O(n log n)"},
    {"kp.stats.williams", kConstant, "O(1)"},
    {"kp.stats.draw_indices", kCharged, "count charged and reserved first"},
    {"kp.stats.factor_analysis", kCharged, "rows x cols^2 + 100 cols^3 charged first"},
    {"kp.stats.parallel_analysis", kCharged, "(iter + 1) x (rows x cols^2 + cols^3) charged and reserved first; "
                                             "checked while it runs"},
    // ---- kp.textmetrics (lua_textmetrics.cc): each charges its loop and reserves its buffers before it runs ------
    {"kp.textmetrics.rouge_n", kCharged, "tokens x n charged, 64 bytes a token and order reserved first"},
    {"kp.textmetrics.rouge_l", kCharged, "the LCS table's cells charged and reserved first; checked while it runs"},
    {"kp.textmetrics.meteor", kCharged, "16 steps a byte + 64 a unit charged, its buffers reserved first; the first "
                                        "call also reads WordNet once per process (kData)"},
    {"kp.textmetrics.wordnet", kSize, "O(1) once WordNet is read; the first call reads it once per process, O(size "
                                      "of Debian's WordNet files), nothing the script chooses"},
    {"kp.textmetrics.self_bleu", kCharged, "bytes + tokens x n charged, the n-gram tables reserved first"},
    {"kp.textmetrics.self_indel", kCharged, "bytes, then the pairs' LCS cells charged and reserved first; checked "
                                            "while it runs"},
    // ---- kp.retrieval (lua_retrieval.cc): the utility metric's collection; bytes are held in the memory cap ----
    {"kp.retrieval.read_queries", kCharged, "a file the user named (its read grant checked): refused by size before it "
                                           "is read, then one step a byte charged"},
    {"kp.retrieval.collection", kConstant, "O(1)"},
    {"RetrievalCollection:add", kCharged, "one step a byte charged; the bytes held in the memory cap"},
    {"RetrievalCollection:add_dataset", kCharged, "a dataset the user named (its read grant checked): reserved by size "
                                                  "first, one step a byte charged"},
    {"RetrievalCollection:bm25", kCharged, "the index's bytes, then each query's terms and touched documents charged "
                                           "and the index reserved first; checked while it runs"},
    {"RetrievalCollection:dense", kCharged, "one step a byte embedded (the deadline checked between batches of 32), "
                                            "documents x (dims / 16 + 1) a query; vectors reserved first"},
    {"RetrievalCollection.__len", kConstant, "O(1)"},
    {"RetrievalCollection.__gc", kConstant, "O(size of the collection): gives its bytes back to the memory cap"},
    // ---- kp.calib (lua_calib.cc): arrays read through __len are reserved first ---------------------------------
    {"kp.calib.bin", kConstant, "O(1)"},
    {"kp.calib.brier", kSize, "O(n), the arrays reserved first"},
    {"kp.calib.count_probs", kSize, "O(size of the list)"},
    {"kp.calib.excluded", kSize, "O(size of the list)"},
    {"kp.calib.kpp", kSize, "O(n), the array reserved first"},
    {"kp.calib.kpps", kSize, "O(tokens of the list's keyphrases)"},
    {"kp.calib.position_bin", kConstant, "O(1)"},
    {"kp.calib.positions", kSize, "O(size of the list and the document's source)"},
    {"kp.calib.reliability", kSize, "O(n + bins), the arrays reserved first; bins at most 100,000"},
    {"kp.calib.risk_coverage", kSize, "O(n log n), the arrays reserved first"},
    {"kp.calib.sequence_logprobs", kSize, "O(tokens of the list's keyphrases)"},
    {"kp.calib.token_probs", kSize, "O(tokens of the list's keyphrases)"},
    {"kp.calib.word_probs", kSize, "O(tokens of the list's keyphrases)"},
    // ---- kp.homog (lua_homog.cc) -------------------------------------------------------------------------------
    {"kp.homog.cp", kSize, "O(words of the two lists)"},
    {"kp.homog.genericity", kCharged, "one step per byte of the phrases charged, their words reserved first"},
    {"kp.homog.mine_pairs", kSize, kData},
    {"kp.homog.reformulations", kSize, kData},
    {"kp.homog.rouge1", kCharged, "#hyp + #ref words charged first"},
    {"kp.homog.system_stats", kSize, kData},
    {"kp.homog.wer", kCharged, "(#hyp + 1) x (#ref + 1) charged first"},
    {"ctx.partners", kSize, "O(partners of the document)"},
    {"PairIndex.__gc", kConstant, "O(1)"},
    // ---- kp.kernel (lua_kernel.cc) -------------------------------------------------------------------------------
    {"kp.kernel.exact", kConstant, "O(1): a marker the loader recognises as score (the native kernel runs no Lua); "
                                   "called, it raises"},
    {"kp.kernel.rank", kConstant, "as kp.kernel.exact"},
    {"kp.kernel.rprec", kConstant, "as kp.kernel.exact"},
    {"kp.kernel.semrp", kConstant, "as kp.kernel.exact"},
    // ---- kp.plot (lua_plot.cc) --------------------------------------------------------------------------------------
    {"kp.plot.bars", kSize, "O(data points); the SVG text is linear in them"},
    {"kp.plot.boxplot", kSize, "O(data points log data points); at most max_outliers dots drawn"},
    {"kp.plot.heatmap", kSize, "O(cells)"},
    {"kp.plot.histogram", kSize, "O(data points + bins), bins at most 10,000"},
    {"kp.plot.lines", kSize, "O(data points)"},
    // ---- columns (engine/columns.cc, engine/runner.cc) ---------------------------------------------------------------
    {"Column.__gc", kConstant, "O(1): drops its lease on the aggregation's rows (it owns no rows)"},
    {"Column.__len", kConstant, "O(1)"},
    {"Column:count", kSize, "O(documents)"},
    {"Column:get", kConstant, "O(1)"},
    {"Column:mean", kSize, "O(documents)"},
    {"Column:sum", kSize, "O(documents)"},
    {"ColumnBuilder.__gc", kConstant, "O(1)"},
    {"ColumnBuilder:column", kConstant, "O(1); at most 100,000 columns"},
    {"ColumnBuilder:custom", kConstant, "O(1); at most 100,000 aggregates"},
    {"ColumnBuilder:hidden", kConstant, "O(1); at most 100,000 columns"},
    {"ColumnBuilder:mean", kConstant, "O(1)"},
    {"ColumnBuilder:ratio", kConstant, "O(1)"},
    {"ColumnBuilder:sum", kConstant, "O(1)"},
    {"ColumnBuilder:units", kSize, "O(size of the fixed list)"},
    {"ctx.unit", kSize, "O(size of the values table), read raw", /*run_only=*/true},
    // ---- the script API (engine/lua_script.cc; `kplab run` and the REPL) ------------------------------------------------
    {"kp.load", kSize, kData},
    {"kp.read", kSize, "O(size of the file), a regular file under the grants"},
    {"kp.write", kSize, "O(#text)"},
    {"kp.include", kScript, "O(size of the file); runs it, metered"},
    {"kp.evaluate", kSize, "runs the plugins in VMs of their own, each under its own limits (docs/plugins.md); O(the "
                           "corpus) besides"},
    {"kp.runs.get", kSize, kData},
    {"kp.runs.list", kSize, kData},
    {"kp.runs.table", kSize, "O(the runs it reads); resamples at most 10,000,000, run natively"},
};
// clang-format on

}  // namespace

std::span<const CostEntry> CostTable() { return kCosts; }

}  // namespace kplab::host
