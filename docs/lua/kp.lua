---@meta kp
-- LuaLS definitions of the kplab Lua API (https://luals.github.io/wiki/definition-files/).
-- Point your editor's Lua language server at docs/lua/ ("workspace.library") to get completion and
-- type checks for plugins and scripts. This file is also the one source of the REPL's help(x): it is
-- embedded into the kplab binary at build time, and tests/host/stubs_test.cc fails when a kp function
-- or userdata method has no entry here, or an entry names something that no longer exists.
-- Functions marked "(scripts)" exist in `kplab run` scripts and the REPL, not in metric plugins.

---The kplab API table. Read-only in the sandbox: assigning to it or its sub-tables is an error.
---@class kp
---@field stats kp.stats Statistics (scripts and plugins).
---@field plot kp.plot SVG charts.
---@field runs kp.runs The run store (scripts).
---@field calib kp.calib Keyphrase perplexity and calibration.
---@field homog kp.homog Homogeneity across similar documents.
---@field textmetrics kp.textmetrics ROUGE, METEOR, Self-BLEU and Indel counting.
kp = {}

-- ---- text -----------------------------------------------------------------------------------------

---Lower-cases a string the way Python's str.lower() does (Unicode-aware), as the peers' scripts do
---before matching.
---@param s string UTF-8 text
---@return string
function kp.lower(s) end

---Splits a string into words: "whitespace" (default) is Python's s.split() (runs of any whitespace,
---no empty pieces); "space" is s.split(' ') (single spaces, empty pieces kept).
---@param s string
---@param how? "whitespace"|"space"
---@return string[]
function kp.split(s, how) end

---Tokenizes text exactly as nltk.word_tokenize (Treebank rules with the Punkt-free sentence split the
---peers use), e.g. "don't stop." -> {"do", "n't", "stop", "."}.
---@param s string UTF-8 text
---@return string[]
function kp.word_tokenize(s) end

---Porter stem of one word. mode "nltk" (default) is nltk's PorterStemmer in NLTK_EXTENSIONS mode (what
---the evaluation scripts use), "original" Porter's 1980 algorithm, "martin" Martin Porter's own
---revised C version.
---@param word string
---@param mode? "nltk"|"original"|"martin"
---@return string
function kp.stem(word, mode) end

-- ---- plugins --------------------------------------------------------------------------------------

---Declares a metric plugin; a plugin file returns its result. The host checks the table after the chunk
---returns. API 2 (header `-- kplab-api: 2`): name (= file stem), version, columns and score are
---required; doc, params (declared with kp.int, kp.number, kp.bool, kp.string, kp.cutoffs), needs,
---check, subsets and prepare are optional. prepare(corpus, params, ctx) runs once per run before any
---document is scored and returns plain data that score reads as ctx.prepared. With subsets, score(preds, refs, doc, params, ctx, out) is called
---once per subset of a document (ctx.subset names it); without, score(doc, params, ctx, out). score
---writes numbers into out by slot (out[slot] = v) or by declared name; its return value is ignored.
---API 1 plugins (score returns a table of named numbers, optional aggregate) keep working.
---See docs/plugins.md.
---@param decl {name: string, version: string, doc?: string, params?: table<string, table>, needs?: string[]|fun(profile: table, params: table): string[], check?: fun(params: table, profile: table): string|nil, subsets?: ("all"|"present"|"absent")[], prepare?: fun(corpus: Corpus, params: table, ctx: Ctx): any, columns: string[]|fun(c: ColumnBuilder, params: table): any, score: function}
---@return table decl the same table
function kp.metric(decl) end

---Declares an integer parameter (plugin API 2): `params = { k = kp.int{default = 3, min = 1} }`. The
---value (--param plugin.k=V, or the library's params) is checked against the type and the inclusive
---bounds once per run, before any document is scored.
---@param spec {default: integer, min?: number, max?: number, doc?: string}
---@return table spec
function kp.int(spec) end

---Declares a number parameter (plugin API 2) with optional inclusive bounds.
---@param spec {default: number, min?: number, max?: number, doc?: string}
---@return table spec
function kp.number(spec) end

---Declares a boolean parameter (plugin API 2); on the command line true, false, 1 or 0.
---@param spec {default: boolean, doc?: string}
---@return table spec
function kp.bool(spec) end

---Declares a string parameter (plugin API 2), optionally restricted to the values of one_of.
---@param spec {default: string, one_of?: string[], doc?: string}
---@return table spec
function kp.string(spec) end

---Writes its arguments, converted like print's and separated by spaces, to stderr as "[label] ...",
---where label is the plugin's name (or the script's). Use it instead of print in plugins.
---@param ... any
function kp.log(...) end

---Ideal DCG with n_relevant relevant items: sum over i = 1..min(n_relevant, k) of 1/log2(i+1). One
---value per cut-off given.
---@param n_relevant integer
---@param k integer
---@param ... integer more cut-offs
---@return number ...
function kp.ideal_dcg(n_relevant, k, ...) end

---Native kernels of the shipped exact, rank, rprec and semrp metrics (docs/plugins.md, "Native kernels"):
---assign one to a plugin's `score` (`score = kp.kernel.exact`); calling one from Lua is an error.
---@class kp.kernel
kp.kernel = {}

---Exact matching: writes p@k, r@k, f1@k, hits@k, pden@k, rden@k for each k of params.ks.
function kp.kernel.exact(...) end

---Rank metrics: writes mrr and ap@k, ndcg@k, alpha_ndcg@k for each k of params.ks (params.alpha).
function kp.kernel.rank(...) end

---Approximate matching: writes rprec_substr, rprec_zg, substr_precision, substr_recall, substr_f1.
function kp.kernel.rprec(...) end

---SemR-p over the run's embeddings: writes semrp, semrp_div, semrp_ak, semrp_dk and semrp_k<j> for each j
---of params.ks (params.k, clamp, alpha).
function kp.kernel.semrp(...) end

---Parses a cut-off list such as "1,3,5,10,M,O": integers from 1 to 100000, "M" (the number of
---predictions) or "O" (the number of references), each once, in the order given. Returns nil and a
---message naming the bad item otherwise (plugins' check() returns that message). Given a table
---{default = "5,10,M", doc = "..."}, declares a cut-off list parameter instead (plugin API 2): the
---plugin then reads params.ks as the parsed, read-only list.
---@param spec string|{default: string, doc?: string}
---@return (integer|string)[]|nil cutoffs
---@return string? message
function kp.cutoffs(spec) end

-- ---- embeddings -----------------------------------------------------------------------------------

---Nearest cached phrases of the run's embedding model (HNSW index), best first, the phrase itself left
---out. Plugins must declare needs = {"neighbors"}; scripts need a model with a cache.
---@param phrase string
---@param k integer
---@return {phrase: string, cosine: number}[]
function kp.neighbors(phrase, k) end

---Builds a Matrix from an array of rows (arrays of numbers, all the same length); for tests and
---hand-made examples.
---@param rows number[][]
---@return Matrix
function kp.matrix(rows) end

---BERTScore's greedy matching (Zhang et al., 2020, Eq. 1-3 with importance weights) over a cosine
---matrix S (rows = candidate tokens, columns = reference tokens): P = sum_i w_i max_j S_ij / sum_i w_i
---over the rows, R likewise over the columns, F = 2PR/(P+R). A side whose weights sum to 0 (an empty
---string: specials only) gives 0, 0, 0; F is 0 when P + R = 0. Weights: finite numbers >= 0, one per
---row / column.
---@param S Matrix
---@param row_weights number[]
---@param col_weights number[]
---@return number P
---@return number R
---@return number F
function kp.greedy_match(S, row_weights, col_weights) end

---The row of `layer` of a bert_score baseline file (CSV: header LAYER,P,R,F, one row per layer) as
---{p =, r =, f =}, for rescaling (x - b) / (1 - b). Reads only a path the user set as one of the
---plugin's string parameters for the run, and only inside prepare. Errors name the file and line (a missing file,
---directory, FIFO, wrong header, a field that is not a finite number, no row for the layer, a
---baseline of 1).
---@param path string
---@param layer integer
---@return {p: number, r: number, f: number}
function kp.bertscore_baseline(path, layer) end

---Ad-hoc retrieval for the utility metric (plugins/utility.lua; docs/metrics.md, Utility): the collection
---of documents, BM25 as rank_bm25's BM25Okapi and exact cosine search run in C++; each returns, per
---query i, where document i (the one the query was written for) stands.
---@class kp.retrieval
kp.retrieval = {}

---The lines of a query file, each stripped as Python's str.strip() (line i: the query for document i).
---Reads only a path the user set as one of the plugin's string parameters, inside prepare (and, in a
---run started by a confined script, only inside its read grants). Errors: "PATH:LINE: invalid UTF-8
---(...)", an empty file, a FIFO or directory, a missing file.
---@param path string
---@return string[]
function kp.retrieval.read_queries(path) end

---An empty RetrievalCollection.
---@return RetrievalCollection
function kp.retrieval.collection() end

---MoverScore's cost matrix: every row of A, then of B (token embeddings of one model), divided by
---(its norm + eps) in float32; entry = |x|^2 + |y|^2 - 2 x.y in double, "sqeuclidean" clamped at 0
---(moverscore.py), "euclidean" clamped at 1e-30 and square-rooted (moverscore_v2.py). Square.
---@param A TokenEmbeddings
---@param B TokenEmbeddings
---@param kind "sqeuclidean"|"euclidean"
---@param eps number
---@return Matrix
function kp.token_distances(A, B, kind, eps) end

---Earth mover's distance between histograms p and q (n masses >= 0) over costs D (n x n, >= 0),
---exactly as pyemd's emd computes it (FastEMD: masses and costs rounded to millionths of their
---largest, an exact integer transportation problem, the surplus paid at the largest cost), and the
---cost sum_ij float32(flow_ij) D_ij of its optimal flow. Charged to the budget as the solver goes.
---@param p number[]
---@param q number[]
---@param D Matrix
---@return number distance
---@return number flow_cost
function kp.emd(p, q, D) end

-- ---- script API -----------------------------------------------------------------------------------

---(scripts) Imports a dataset (and optionally a system's predictions) and normalizes it under a profile,
---returning a Corpus whose documents are what plugins see. Bad files raise "FILE:LINE: ...".
---@param opts {dataset: string, predictions?: string, profile?: string, dataset_format?: string, predictions_format?: string, source?: string}
---@return Corpus
function kp.load(opts) end

---Scores a Corpus (kp.load) with metric plugins, as `kplab eval` does: returns the run-level values
---(`aggregates`), the per-document columns (`columns[name][i]`, NaN where undefined) and the documents'
---ids; with opts.db the run is also stored there and `run_id` set. metrics: a list or "exact,rprec";
---params: {metric = {name = value}}; opts: system (default "lua"), db, model, plugins (directories),
---threads, verify_docs (documents re-scored alone, as --verify-docs; 0 = off, default 16), random_seed (the
---plugins' math.random, as --random-seed). A plugin error is raised with its file:line. (scripts, REPL, Lua
---module)
---@param corpus Corpus
---@param metrics string|string[]
---@param params? table<string, table<string, number|string|boolean>>
---@param opts? {system?: string, db?: string, model?: string, plugins?: string[], threads?: integer, verify_docs?: integer, random_seed?: integer}
---@return {aggregates: table<string, number>, columns: table<string, number[]>, doc_ids: string[], run_id?: integer}
function kp.evaluate(corpus, metrics, params, opts) end

---(scripts) Writes the whole text to path through a temporary file and a rename, so a reader never
---sees half a file; missing parent directories are created.
---@param path string
---@param text string
function kp.write(path, text) end

---(scripts) Reads a whole file.
---@param path string
---@return string|nil bytes the file's bytes, or nil
---@return string? message why it could not be read
function kp.read(path) end

---(scripts) Runs another Lua file (relative to the running script's directory) in the script's own
---environment and returns what it returns; errors name "dir/name.lua:LINE".
---@param name string
---@return any
function kp.include(name) end

---(scripts) The run store: runs written by `kplab eval`.
---@class kp.runs
kp.runs = {}

---(scripts) The stored runs, newest first. db defaults to $KPLAB_DB, else kplab.db; a missing store
---is an error naming the path.
---@param db? string
---@return {id: integer, created_at: string, status: string, dataset: string, system: string, profile: string, n_docs: integer}[]
function kp.runs.list(db) end

---(scripts) One stored run: id, status, dataset, dataset_path, dataset_format, system,
---predictions_path, profile, params_json, embedder, created_at, doc_ids, aggregates (name -> value)
---and scores (name -> one number per document, NaN where undefined; only the names in `metrics` when
---given).
---@param id integer
---@param db? string
---@param metrics? string[]
---@return table
function kp.runs.get(id, db, metrics) end

---A leaderboard of stored runs (docs/tables.md): rows are systems, runs of one system and dataset with
---different seeds grouped (mean, sample sd, n); columns are datasets x the aggregates matching
---`metrics` (glob patterns, a list or a comma-separated string). With `baseline`, each other cell has
---p and p_holm from a paired randomization over documents of the seed means, and `significant`.
---Filters: system, dataset, profile (globs) or runs = {ids}; db as kp.runs.get. With format ("table",
---"markdown", "latex", "csv", "json") also `text`, as `kplab runs table` prints it, shaped by the
---command's options under the same names: decimals (0..9), fraction, labels ({[metric, dataset or
---subset] = text}, the command's --label), layout ("datasets" or "metrics"), and for LaTeX fit, float
---("table", "table*", "none") and caption. An unknown key is an error naming the valid ones.
---A cell without runs is false. (scripts)
---@param opts {metrics: string|string[], baseline?: string, system?: string, dataset?: string, profile?: string, runs?: integer[], resamples?: integer, seed?: integer, db?: string, format?: string, decimals?: integer, fraction?: boolean, labels?: table<string, string>, layout?: string, fit?: boolean, float?: string, caption?: string}
---@return {columns: {dataset: string, metric: string}[], rows: {system: string, cells: table[]}[], family: integer, text?: string}
function kp.runs.table(opts) end

-- ---- statistics -----------------------------------------------------------------------------------

---Statistics on Lua arrays of numbers (NaN is an error naming the argument and index). Each routine
---reproduces a named reference (numpy, scipy 1.10, statsmodels, R psych); see docs/scripts.md.
---@class kp.stats
kp.stats = {}

---Arithmetic mean.
---@param x number[]
---@return number
function kp.stats.mean(x) end

---The correctly rounded sum, as Python's math.fsum (Shewchuk's exact partials): independent of the
---order of x, so equal multisets give bit-identical sums. 0 for an empty array; an error for +inf with
----inf, or for a finite sum that overflows.
---@param x number[]
---@return number
function kp.stats.fsum(x) end

---Median (numpy.median).
---@param x number[]
---@return number
function kp.stats.median(x) end

---Quantiles with numpy's linear interpolation; one number for a number q, an array for an array.
---@param x number[]
---@param q number|number[] in [0, 1]
---@return number|number[]
function kp.stats.quantile(x, q) end

---Variance with ddof degrees of freedom removed (default 1, the sample variance).
---@param x number[]
---@param ddof? integer
---@return number
function kp.stats.var(x, ddof) end

---Standard deviation with ddof degrees of freedom removed (default 1).
---@param x number[]
---@param ddof? integer
---@return number
function kp.stats.sd(x, ddof) end

---Pearson correlation and its two-sided p-value (scipy.stats.pearsonr).
---@param x number[]
---@param y number[]
---@return number r
---@return number p
function kp.stats.pearson(x, y) end

---Spearman rank correlation (average ranks for ties) and its two-sided p-value (scipy.stats.spearmanr).
---@param x number[]
---@param y number[]
---@return number rho
---@return number p
function kp.stats.spearman(x, y) end

---Kendall's tau-b and its p-value (scipy 1.10's rule for the exact p).
---@param x number[]
---@param y number[]
---@param method? "auto"|"exact"|"asymptotic"
---@return number tau
---@return number p
function kp.stats.kendall(x, y, method) end

---Wilcoxon signed-rank test of x - y (or of x when y is nil), as scipy 1.10: W = min(W+, W-), the
---p-value and, when the normal approximation was used, z.
---@param x number[]
---@param y number[]|nil
---@param opts? {zero_method?: "wilcox"|"pratt", correction?: boolean, method?: "auto"|"exact"|"approx"}
---@return number w
---@return number p
---@return number? z
function kp.stats.wilcoxon(x, y, opts) end

---Cliff's delta: (#(x > y) - #(x < y)) / (n m) over all pairs.
---@param x number[]
---@param y number[]
---@return number
function kp.stats.cliffs_delta(x, y) end

---Two-way ANOVA with interaction, Type II sums of squares (statsmodels anova_lm(typ=2)); rows for A,
---B, A:B and Residual with ss, df, ms, f, p, eta2 and partial_eta2. Levels are integers or strings.
---@param y number[]
---@param a (integer|string)[]
---@param b (integer|string)[]
---@return {source: string, ss: number, df: number, ms: number, f: number, p: number, eta2: number, partial_eta2: number}[]
function kp.stats.anova2(y, a, b) end

---Percentile bootstrap confidence interval of the mean (xoshiro256** stream seeded by splitmix64).
---@param x number[]
---@param opts? {n?: integer, confidence?: number, seed?: integer}
---@return number low
---@return number high
function kp.stats.bootstrap_ci(x, opts) end

---Percentile bootstrap confidence interval of the mean of x - y (paired).
---@param x number[]
---@param y number[]
---@param opts? {n?: integer, confidence?: number, seed?: integer}
---@return number low
---@return number high
function kp.stats.paired_bootstrap_ci(x, y, opts) end

---Approximate randomization test of mean(x - y) = 0 by random sign flips: two-sided p =
---(1 + hits) / (1 + n).
---@param x number[]
---@param y number[]
---@param opts? {n?: integer, seed?: integer}
---@return number p
function kp.stats.approx_randomization(x, y, opts) end

---Holm's step-down adjustment of p-values (same order as given).
---@param ps number[]
---@return number[]
function kp.stats.holm(ps) end

---Williams' test (Williams 1959, Steiger 1980's T2) of corr(h, a) = corr(h, b) for two correlations
---sharing the variable h, from r12 = corr(h, a), r13 = corr(h, b), r23 = corr(a, b) over the same n
---observations: t with n - 3 degrees of freedom and its two-sided p (NaN, NaN when a and b are
---perfectly correlated).
---@param r12 number
---@param r13 number
---@param r23 number
---@param n integer
---@return number t
---@return number p
---@return number df
function kp.stats.williams(r12, r13, r23, n) end

---`count` integers drawn uniformly from 1..n by the Rng of stats.h (`Rng(seed).Below(n) + 1` in
---order), for resampling done in Lua that other languages must replay.
---@param n integer
---@param count integer
---@param opts? {seed?: integer}
---@return integer[]
function kp.stats.draw_indices(n, count, opts) end

---Exploratory factor analysis of a rows x variables table (R psych::fa): minres or principal axis,
---varimax or no rotation.
---@param rows number[][]
---@param opts? {factors?: integer, method?: "minres"|"pa", rotate?: "varimax"|"none"}
---@return {loadings: number[][], communalities: number[], uniquenesses: number[], ss_loadings: number[], proportion: number[]}
function kp.stats.factor_analysis(rows, opts) end

---Horn's parallel analysis: how many factors have observed eigenvalues above those of random data
---(mean and 95th percentile).
---@param rows number[][]
---@param opts? {iter?: integer, seed?: integer}
---@return {factors: integer, factors_p95: integer, observed: number[], random_mean: number[], random_p95: number[]}
function kp.stats.parallel_analysis(rows, opts) end

-- ---- plots ----------------------------------------------------------------------------------------

---SVG charts returned as strings (write them with kp.write). Common fields: title, xlabel, ylabel,
---width, height. See docs/plots.md for every field.
---@class kp.plot
kp.plot = {}

---Box plot, one box per group: groups = {{label=, values={...}}, ...}; range, mark_median, digits,
---max_outliers, show_n.
---@param spec table
---@return string svg
function kp.plot.boxplot(spec) end

---Histogram of one or more groups: groups, bins (20), range, layout ("overlay"|"side"), density,
---mark_median, digits.
---@param spec table
---@return string svg
function kp.plot.histogram(spec) end

---Annotated heat map: rows, cols (labels), values (one row of numbers per row label; NaN = no value),
---min, max, palette ("diverging"|"sequential"), digits, annotate, cell, legend.
---@param spec table
---@return string svg
function kp.plot.heatmap(spec) end

---Grouped bar chart: categories (labels) and series = {{label=, values={...}}, ...}, one value per
---category.
---@param spec table
---@return string svg
function kp.plot.bars(spec) end

---Line chart: series of x/y points with optional xrange, yrange and a diagonal reference line.
---@param spec table
---@return string svg
function kp.plot.lines(spec) end

-- ---- calibration ----------------------------------------------------------------------------------

---Keyphrase perplexity, expected calibration error and positional analysis (docs/calibration.md).
---Functions taking a KeyphraseList read its token probabilities and source positions in C++ and return
---one entry per keyphrase.
---@class kp.calib
kp.calib = {}

---Keyphrase perplexity of one keyphrase from its token log-probabilities (natural log): KPP = exp(-sum /
---m) over its m tokens (Eq. 2/3), or KPP-s = exp(-sum / words) with the number of words of the
---detokenized keyphrase (Eq. 7). NaN without tokens (or words <= 0).
---@param logprobs number[]
---@param words? integer
---@return number
function kp.calib.kpp(logprobs, words) end

---KPP-s (default, "words") or KPP ("tokens") of every keyphrase of the list; NaN without token data.
---@param list KeyphraseList
---@param level? "words"|"tokens"
---@return number[]
function kp.calib.kpps(list, level) end

---Per keyphrase, the probability of each of its tokens ({} without token data).
---@param list KeyphraseList
---@return number[][]
function kp.calib.token_probs(list) end

---Per keyphrase, the probability of each of its words.
---@param list KeyphraseList
---@return number[][]
function kp.calib.word_probs(list) end

---How many keyphrases of the list carry token probabilities.
---@param list KeyphraseList
---@return integer
function kp.calib.count_probs(list) end

---The 1-based equal-width bin (lo, hi] of a confidence in [0, 1].
---@param confidence number
---@param bins integer
---@return integer
function kp.calib.bin(confidence, bins) end

---Reliability table, expected and maximum calibration error of confidences against 0/1 correctness:
---{ece=, mce=, n=, binning=, bins={{lo=, hi=, count=, correct=, accuracy=, confidence=}, ...}}
---(accuracy and confidence NaN for empty bins). binning "width" (default): equal-width bins (lo, hi]
---of [0, 1]; "mass": equal-mass bins of the confidences sorted ascending (ties in input order), lo/hi
---the smallest and largest confidence of the bin.
---@param conf number[]
---@param correct (boolean|integer)[]
---@param bins integer
---@param binning? "width"|"mass"
---@return {ece: number, mce: number, n: integer, binning: string, bins: {lo: number, hi: number, count: integer, correct: integer, accuracy: number, confidence: number}[]}
function kp.calib.reliability(conf, correct, bins, binning) end

---Brier score: the mean of (confidence - correct)^2; NaN for no keyphrase. Confidences must be
---probabilities (up to the importer's 1e-6 rounding excess above 1).
---@param conf number[]
---@param correct (boolean|integer)[]
---@return number
function kp.calib.brier(conf, correct) end

---Risk-coverage curve of selective prediction: keyphrases sorted by confidence, highest first (ties in
---input order); keeping the first i gives coverage i/n and risk = errors among them / i. AURC = the
---mean of the n risks; order = the input indices, most confident first.
---@param conf number[]
---@param correct (boolean|integer)[]
---@return {aurc: number, coverage: number[], risk: number[], threshold: number[], order: integer[]}
function kp.calib.risk_coverage(conf, correct) end

---The log-probabilities of every token of the generated sequence of the list's document (delimiters
---and end tokens included, declared padding left out): whole-sequence perplexity, seed 001 Eq. 1.
---{} without token data.
---@param list KeyphraseList
---@return number[]
function kp.calib.sequence_logprobs(list) end

---How many predictions the profile dropped from the list's document: duplicates, then those with an
---invalid token such as <unk>.
---@param list KeyphraseList
---@return integer dups
---@return integer invalid
function kp.calib.excluded(list) end

---The relative character position of each keyphrase's first occurrence in its document's source (NaN
---when absent) and its 1-based section out of `bins` (default 10; false when absent).
---@param list KeyphraseList
---@param bins? integer
---@return number[] relative
---@return (integer|false)[] section
function kp.calib.positions(list, bins) end

---The 1-based section of a relative position in [0, 1] out of `bins`.
---@param relative number
---@param bins integer
---@return integer
function kp.calib.position_bin(relative, bins) end

-- ---- homogeneity ----------------------------------------------------------------------------------

---Homogeneity of keyphrase predictors across similar documents (docs/homogeneity.md). Pure functions:
---plugins may use them too.
---@class kp.homog
kp.homog = {}

---Hooper's and Rodgers' consistency of two keyphrase sets (KeyphraseLists or arrays of phrase strings,
---lower-cased, split on whitespace and Porter-stemmed when stem is true).
---@param a KeyphraseList|string[]
---@param b KeyphraseList|string[]
---@param opts? {stem?: boolean, denominator?: "union"|"max"|"mean"}
---@return number hooper
---@return number rodgers
function kp.homog.cp(a, b, opts) end

---The pairs of documents whose gold sets have a Jaccard similarity of at least theta: {{a=, b=,
---shared=, union=, jaccard=}, ...} (1-based, a < b, sorted) and counts {sets=, candidates=, pairs=}.
---partition = {p, n} (1 <= p <= n) returns only partition p's pairs: the n partitions are disjoint and
---their union is the whole result (docs/homogeneity.md, Partitioned mining).
---@param corpus_or_sets Corpus|string[][]
---@param opts? {theta?: number, method?: "join"|"naive", stem?: boolean, partition?: integer[]}
---@return {a: integer, b: integer, shared: integer, union: integer, jaccard: number}[] pairs
---@return {sets: integer, candidates: integer, pairs: integer} counts
function kp.homog.mine_pairs(corpus_or_sets, opts) end

---How generic the shared keyphrases of the pairs are: {collection={distinct=, mean_df=, mean_words=},
---shared={...}, pair_docs=, pairs=}.
---@param corpus Corpus
---@param pairs {a: integer, b: integer}[]
---@return table
function kp.homog.genericity(corpus, pairs) end

---Word error rate of hyp against ref (strings split on whitespace, or arrays of words).
---@param hyp string|string[]
---@param ref string|string[]
---@return number
function kp.homog.wer(hyp, ref) end

---ROUGE-1 recall of hyp against ref: shared unigrams (clipped counts) / words of ref (strings split
---on whitespace, or arrays of words).
---@param hyp string|string[]
---@param ref string|string[]
---@return number
function kp.homog.rouge1(hyp, ref) end

---A system's prediction statistics over the corpus (or the given documents): {docs=, docs_with_text=,
---preds=, absent=, absent_share=, prmu={P=, R=, M=, U=} (shares), prmu_counts={...}}. top_k (>= 1)
---counts only each document's first top_k predictions, as a capped system's CP sees them.
---@param corpus Corpus
---@param docs? integer[]
---@param opts? {top_k?: integer}
---@return table
function kp.homog.system_stats(corpus, docs, opts) end

---Reads a reformulation file (text, named `name` in messages) into two corpora, original and
---reformulation, with per-pair word error rate, ROUGE-1 and the keep/keyphrases_ok/length_ok checks:
---{original=Corpus, reformulation=Corpus, pairs={{id=, method=, line=, words_original=,
---words_reformulation=, wer=, rouge1=, keep=, keyphrases_ok=, length_ok=, lost=}, ...}}.
---@param text string
---@param name string
---@param opts? {profile?: string, predictions_original?: string[], predictions_reformulation?: string[], tolerance?: number}
---@return table
function kp.homog.reformulations(text, name, opts) end

-- ---- text overlap ---------------------------------------------------------------------------------

---The counting behind ROUGE, METEOR, Self-BLEU and the Indel similarity (plugins rouge.lua, meteor.lua,
---diversity.lua; docs/metrics.md gives the formulas). Pure functions: plugins may use them too.
---@class kp.textmetrics
kp.textmetrics = {}

---ROUGE-N counts: shared n-grams and the n-grams of each side. style "lin" (default): n-grams inside
---each unit (a KeyphraseList's keyphrases, an array's strings split on whitespace, a string as one
---unit), counted with multiplicity, hits clipped (Lin 2004). "pltrdy": strings read as pltrdy/rouge
---1.0.1 reads them (cut at '.', words between spaces), distinct n-grams across the whole text.
---@param hyp KeyphraseList|string[]|string
---@param ref KeyphraseList|string[]|string
---@param n integer 1 to 100
---@param style? "lin"|"pltrdy"
---@return integer hits
---@return integer hyp_count
---@return integer ref_count
function kp.textmetrics.rouge_n(hyp, ref, n, style) end

---Summary-level ROUGE-L counts: "lin" = ROUGE-1.5.5's union-LCS hits over each reference unit (clipped
---by the words' counts) and the token counts; "pltrdy" = the distinct words on the traced LCSs and
---each side's distinct words.
---@param hyp KeyphraseList|string[]|string
---@param ref KeyphraseList|string[]|string
---@param style? "lin"|"pltrdy"
---@return integer hits
---@return integer hyp_count
---@return integer ref_count
function kp.textmetrics.rouge_l(hyp, ref, style) end

---METEOR's alignment as nltk 3.8's single_meteor_score computes it (exact, Porter stem, WordNet
---synonym of the stems): {matches=, chunks=, hyp_len=, ref_len=, exact=, stem=, synonym=}. A string is
---tokenized with kp.word_tokenize; a KeyphraseList gives its keyphrases' tokens in order. synonyms =
---false skips WordNet; otherwise a missing WordNet is an error saying what to install.
---@param hyp string|string[]|KeyphraseList
---@param ref string|string[]|KeyphraseList
---@param opts? {synonyms?: boolean}
---@return {matches: integer, chunks: integer, hyp_len: integer, ref_len: integer, exact: integer, stem: integer, synonym: integer}
function kp.textmetrics.meteor(hyp, ref, opts) end

---Whether WordNet (Debian's wordnet-base, or $KPLAB_WORDNET) can be read: true, or nil and the reason
---with the command that installs it.
---@return boolean|nil ok
---@return string? why
function kp.textmetrics.wordnet() end

---Self-BLEU's counts: each item against all the others as references (nltk 3.8 modified_precision
---and closest_ref_length): {{num={...}, den={...}, hyp_len=, ref_len=}, ...}, one num/den per order 1..n.
---split "words" (default) tokenizes each item with kp.word_tokenize, "whitespace" splits on whitespace.
---@param items string[]
---@param n integer 1 to 100
---@param split? "words"|"whitespace"
---@return {num: integer[], den: integer[], hyp_len: integer, ref_len: integer}[]
function kp.textmetrics.self_bleu(items, n, split) end

---For each item, the mean over the other items of the normalized Indel similarity
---1 - (insertions + deletions) / (len_i + len_j) in code points (rapidfuzz's fuzz.ratio / 100; 1 for two
---empty strings). Fewer than two items: {}.
---@param items string[]
---@return number[]
function kp.textmetrics.self_indel(items) end

-- ---- userdata -------------------------------------------------------------------------------------

---A loaded dataset (kp.load): #corpus documents.
---@class Corpus
local Corpus = {}

---The i-th document (1-based); an error outside 1..#corpus.
---@param i integer
---@return Document
function Corpus:doc(i) end

---One document as a metric sees it, after the profile's filtering and dedup.
---@class Document
---@field id string the document's id
---@field index integer the document's position in its corpus (1-based): corpus:doc(doc.index) is doc
---@field has_text boolean whether the source text is known (present/absent need it)
---@field preds KeyphraseList predictions in rank order
---@field refs KeyphraseList references in file order
---@field preds_with_duplicates KeyphraseList predictions after every filter but dedup
---@field refs_with_duplicates KeyphraseList references before dedup, each repeat with its own surface and presence
---@field source string[]|nil the source tokens
---@field n_pred_pieces integer pieces on the prediction line before any filtering
---@field title string[]|nil the title's tokens as the profile tokenized them ({} where the format has no title; nil without text)
---@field body string[]|nil the body's tokens (nil without text)
---@field title_stems string[]|nil the title's stems, one per token
---@field body_stems string[]|nil the body's stems, one per token
local Document = {}

---The predictions and references of a subset: "all", "present" or "absent" (nothing for present and
---absent when the document has no source text). Views, no copies.
---@param s "all"|"present"|"absent"
---@return KeyphraseList preds
---@return KeyphraseList refs
function Document:subset(s) end

---KPEval's reference lists (its ROUGE lists, its BERTScore and MoverScore strings): the references
---before dedup (refs_with_duplicates) zipped with the presence flags of the deduplicated ones (refs), so
---a line that repeats a reference has its flags shifted from the repeat on and loses one last reference
---a repeat; every reference is absent without source text.
---@return KeyphraseList present
---@return KeyphraseList absent
function Document:kpeval_references() end

---A ranked list of keyphrases: a view into the corpus. #list, and list[i] is list:get(i).
---@class KeyphraseList
local KeyphraseList = {}

---The first k phrases.
---@param k integer
---@return KeyphraseList
function KeyphraseList:top(k) end

---The phrases that occur in the document's source (an error without source text).
---@return KeyphraseList
function KeyphraseList:present() end

---The phrases that do not occur in the document's source (an error without source text).
---@return KeyphraseList
function KeyphraseList:absent() end

---The list itself ("all"), or its present or absent phrases.
---@param s "all"|"present"|"absent"
---@return KeyphraseList
function KeyphraseList:subset(s) end

---The same phrases with the present ones first (stable).
---@return KeyphraseList
function KeyphraseList:present_first() end

---The same phrases without repeats, first wins, by the profile's dedup key (what a deduplicating
---profile builds; for a list that kept its repeats, e.g. doc.preds_with_duplicates).
---@return KeyphraseList
function KeyphraseList:unique() end

---The i-th phrase as a table, or nil outside 1..#list.
---@param i integer
---@return {surface: string, key: string, tokens: string[], stems: string[], present: boolean, after_peos: boolean}|nil
function KeyphraseList:get(i) end

---The phrases' surface forms.
---@return string[]
function KeyphraseList:surfaces() end

---The phrases' stem keys (the stems joined by spaces: what exact matching compares).
---@return string[]
function KeyphraseList:keys() end

---PRMU category of each phrase (Boudin & Gallina 2021): "P" present, "R" reordered, "M" mixed, "U"
---unseen. Needs the source text.
---@return string[]
function KeyphraseList:prmu() end

---Matches this list against references: "exact" (stem keys, reference alternatives included; default),
---"substr" (KPEval's character-substring matching) or "zg" (Zesch & Gurevych's word-level matching).
---@param refs KeyphraseList
---@param how? "exact"|"substr"|"zg"
---@return Match
function KeyphraseList:match(refs, how) end

---A #list x #refs 0/1 Matrix: 1 where phrase i's key equals reference j's key or one of its
---alternatives.
---@param refs KeyphraseList
---@return Matrix
function KeyphraseList:match_pairs(refs) end

---alpha-NDCG at each cut-off: kind "word_pool" (kplab, default) or "substring" (KPEval).
---@param refs KeyphraseList
---@param ks integer|integer[]
---@param alpha? number default 0.5
---@param kind? "word_pool"|"substring"
---@return number ...
function KeyphraseList:alpha_ndcg(refs, ks, alpha, kind) end

---The result of list:match(refs): one hit flag per prediction. #m is the number of predictions. The
---methods take any number of cut-offs and return one value per cut-off (the whole list without one).
---@class Match
local Match = {}

---Hits among the first k predictions.
---@param k? integer
---@return integer ...
function Match:hits(k) end

---Sum of precision@i over the hits at ranks i <= k (the numerator of average precision).
---@param k? integer
---@return number ...
function Match:precision_sum(k) end

---DCG of the hit flags: sum over hits at rank i <= k of 1/log2(i+1).
---@param k? integer
---@return number ...
function Match:dcg(k) end

---Ideal DCG of the own hit flags sorted (KPEval's NDCG ideal): all hits at the top, cut at k.
---@param k? integer
---@return number ...
function Match:own_ideal_dcg(k) end

---Rank (1-based) of the first hit, or nil when there is none.
---@return integer|nil
function Match:first_hit() end

---The hit flags as booleans.
---@return boolean[]
function Match:flags() end

---Documents for retrieval, kept in C++ memory (counted in the plugin's memory cap). Each document has
---two parts, its keyphrases and its text, tokenized apart for BM25. #col is the number of documents.
---A placement is {better = {...}, ties = {...}, before = {...}}: for query i, how many documents
---score higher than document i, how many the same, and how many of those come before it (a target a
---re-ranker never saw: better = math.huge).
---@class RetrievalCollection
local RetrievalCollection = {}

---Adds one document; returns its index. Both strings must be valid UTF-8.
---@param keyphrases string
---@param text string
---@return integer
function RetrievalCollection:add(keyphrases, text) end

---Adds every document of a dataset (any format kplab reads; a path the user named, as read_queries):
---keyphrases = its references joined by keyphrase_sep, text = its title (title_only) or title, a space
---and body. Returns the number added.
---@param path string
---@param opts? {title_only?: boolean, keyphrase_sep?: string, strip_keyphrases?: boolean, lowercase?: boolean, format?: string}
---@return integer
function RetrievalCollection:add_dataset(path, opts) end

---BM25 (rank_bm25 0.2.2's BM25Okapi; KPEval's tokenizer: lower-case, strip punctuation, drop
---scikit-learn's English stop words) of query i against every document: document i's placement.
---@param queries string[]
---@param opts? {k1?: number, b?: number, epsilon?: number}
---@return {better: number[], ties: number[], before: number[]}
function RetrievalCollection:bm25(queries, opts) end

---Exact cosine search with the run's embedding model (needs = {"model"}): documents embedded as
---keyphrases .. join .. text, both sides cut to max_seq_length tokens; with cross_encoder (a snapshot
---directory the user named), the first `rerank` documents by cosine re-scored by it, on (query, text)
---or, with rerank_keyphrases, (query, keyphrases .. join .. text).
---@param queries string[]
---@param opts? {max_seq_length?: integer, join?: string, cross_encoder?: string, rerank?: integer, rerank_keyphrases?: boolean, rerank_max_length?: integer}
---@return {dense: table, rerank: table|nil}
function RetrievalCollection:dense(queries, opts) end

---A dense matrix of numbers kept in C++ memory (similarities from ctx.cosine, list:match_pairs,
---kp.matrix). #M is the number of rows. Indices are 1-based.
---@class Matrix
local Matrix = {}

---Number of rows.
---@return integer
function Matrix:rows() end

---Number of columns.
---@return integer
function Matrix:cols() end

---Rows and columns.
---@return integer rows
---@return integer cols
function Matrix:size() end

---Entry (r, c).
---@param r integer
---@param c integer
---@return number
function Matrix:get(r, c) end

---Sets entry (r, c) to v.
---@param r integer
---@param c integer
---@param v number
function Matrix:set(r, c, v) end

---Largest entry of row r and its column (nil, nil for a matrix without columns).
---@param r integer
---@return number|nil value
---@return integer|nil col
function Matrix:row_max(r) end

---Largest entry of column c and its row (nil, nil when there is none).
---@param c integer
---@return number|nil value
---@return integer|nil row
function Matrix:col_max(c) end

---Every row's maximum and its column (0 for an empty row).
---@return number[] values
---@return integer[] cols
function Matrix:row_maxes() end

---Every column's maximum and its row (0 for an empty column).
---@return number[] values
---@return integer[] rows
function Matrix:col_maxes() end

---The k largest entries of row r, best first, and their columns.
---@param r integer
---@param k integer
---@return number[] values
---@return integer[] cols
function Matrix:row_topk(r, k) end

---Mean of the min(k, cols) largest entries of row r.
---@param r integer
---@param k integer
---@return number
function Matrix:row_topk_mean(r, k) end

---Row topk means for every row.
---@param k integer
---@return number[]
function Matrix:row_topk_means(k) end

---Maximum-weight one-to-one assignment of rows to columns: the total weight and
---each row's column (0 when unassigned).
---@return number total
---@return integer[] row_to_col
function Matrix:assign() end

---Sum of all entries.
---@return number
function Matrix:sum() end

---Mean of the entries above the diagonal of a square matrix (mean pairwise similarity of a list with
---itself); nil with fewer than two rows.
---@return number|nil
function Matrix:mean_upper() end

---The transposed matrix (a new one).
---@return Matrix
function Matrix:t() end

---Element-wise maximum with a matrix of the same shape (a new one); with a 0/1 match matrix, exact
---matches weigh 1 and the rest keep their cosine.
---@param other Matrix
---@return Matrix
function Matrix:maximum(other) end

---Every entry clamped to [lo, hi] (a new matrix; NaN stays NaN).
---@param lo number
---@param hi number
---@return Matrix
function Matrix:clamp(lo, hi) end

---Frobenius norm (of the off-diagonal entries when skip_diagonal is true).
---@param skip_diagonal? boolean
---@return number
function Matrix:norm(skip_diagonal) end

---What columns(c, params) receives (plugin API 2): it declares the plugin's per-document columns
---(slots) and how each run-level value is computed. Column and aggregate names are relative to the
---subset ("p@5" becomes "all.p@5", ...) when the plugin declares subsets. Usable only while columns runs.
---@class ColumnBuilder
local ColumnBuilder = {}

---Declares a per-document column and returns its slot (out[slot] = value in score). With "mean" or
---"sum", also the run-level value of the same name: the mean (or sum) over the documents with a value.
---@param name string
---@param aggregate? "mean"|"sum"
---@return integer slot
function ColumnBuilder:column(name, aggregate) end

---Declares a per-document quantity that is not shown as a column, for run-level sums and ratios
---(micro averages: hits and denominators). Returns its slot.
---@param name string
---@return integer slot
function ColumnBuilder:hidden(name) end

---Run-level value `name` = mean over documents of the slot's values (absent when no document has one).
---@param name string
---@param slot integer
function ColumnBuilder:mean(name, slot) end

---Run-level value `name` = sum over documents of the slot's values.
---@param name string
---@param slot integer
function ColumnBuilder:sum(name, slot) end

---Run-level value `name` = sum of numerator slot / sum of denominator slot (a micro average); when the
---denominator sums to 0 the value is if_zero, or absent without it.
---@param name string
---@param numerator integer
---@param denominator integer
---@param if_zero? number
function ColumnBuilder:ratio(name, numerator, denominator, if_zero) end

---Run-level value `name` = fn(a, cols, params, ctx), called after the values declared before it: a holds
---this subset's run-level values so far by name, cols its columns (Column) by name, hidden ones too.
---fn returns a number, or nil for no value.
---@param name string
---@param fn fun(a: table<string, number>, cols: table<string, Column>, params: table, ctx: Ctx): number|nil
function ColumnBuilder:custom(name, fn) end

---The run-level values are over units finer than documents (homogeneity: "pairs"), each reported by
---score with ctx.unit; `kplab eval --ci` and `kplab runs compare` resample the units instead of the
---documents. A document's slots must be the sums of its units'. Once per plugin. opts.fixed lists
---aggregates (declared before) that count the run, not its units: not checked, not resampled.
---@param name string
---@param opts? {fixed: string[]}
function ColumnBuilder:units(name, opts) end

---One per-document score column in aggregate(cols, ...) (API 1) and custom aggregates (API 2): #col
---documents; NaN entries are undefined scores.
---@class Column
local Column = {}

---Sum of the defined values.
---@return number
function Column:sum() end

---Number of defined values.
---@return integer
function Column:count() end

---Mean of the defined values (NaN when there are none).
---@return number
function Column:mean() end

---The i-th value (nil outside 1..#col).
---@param i integer
---@return number|nil
function Column:get(i) end

---The run context passed to score and aggregate (read-only under plugin API 2).
---@class Ctx
---@field subset "all"|"present"|"absent"|nil API 2 with subsets: the subset being scored
---@field slots any API 2: what columns(c, params) returned (read-only)
---@field prepared any API 2: what prepare(corpus, params, ctx) returned (read-only), for a plugin that declares prepare
---@field profile table the profile's name and knobs (docs/profiles.md)
---@field n_docs integer documents in the run
---@field dataset string dataset name
---@field system string system name
---@field model {name: string, backend: string, fingerprint: string, dims: integer}|nil the embedding model (plugins with needs = {"embeddings"})
---@field pairs {theta: number, n: integer, identical: integer, vocabulary_size: integer|nil, normalize: (fun(list: KeyphraseList): string[])|nil}|nil plugins with needs = {"pairs"}: n pairs listed by partners, identical = mined pairs with identical gold sets (in n only under keep_identical); normalize (vocabulary = "gold") replaces each keyphrase by its nearest gold keyphrase of the run
local Ctx = {}

---Cosine similarities between the phrases of a and b (KeyphraseLists or arrays of strings) as a Matrix
---(rows a, columns b; b defaults to a). form "surface" (default) or "stems". Needs embeddings.
---@param a KeyphraseList|string[]
---@param b? KeyphraseList|string[]
---@param form? "surface"|"stems"
---@return Matrix
function Ctx.cosine(a, b, form) end

---The model's vector of a phrase (a string or a one-phrase KeyphraseList), or nil without a vector.
---@param phrase string|KeyphraseList
---@param form? "surface"|"stems"
---@return number[]|nil
function Ctx.embedding(phrase, form) end

---Contextual token embeddings of every string of list (a KeyphraseList: its surfaces; or an array of
---strings) at hidden layer `layer` of the run's transformer model (0 = the embedding layer's output,
---as Hugging Face's hidden_states[layer]; an error outside 0..L). Plugins declare needs = {"tokens"};
---a model without token embeddings (wordvec, model2vec, precomputed) fails the run before scoring.
---With an array of layers and an array of pools ("min", "mean", "max"), one run of the network gives
---each token, per pool, the element-wise reduction over those layers of each layer's vector divided by
---its norm, the pools' vectors concatenated (MoverScore v1); such rows are not unit vectors.
---@param list KeyphraseList|string[]
---@param layer integer|integer[]
---@param pools? string[]
---@return TokenEmbeddings
function Ctx.token_embeddings(list, layer, pools) end

---The run's transformer's number of layers L (ctx.token_embeddings takes 0 .. L).
---@return integer
function Ctx.token_layers() end

---Token embeddings of several strings (ctx.token_embeddings), kept in C++ memory (counted in the
---plugin's memory cap while it lives). #T is the number of strings.
---@class TokenEmbeddings
local TokenEmbeddings = {}

---The token ids of string i, the special tokens the tokenizer adds ([CLS] ... [SEP], <s> ... </s>)
---included.
---@param i integer
---@return integer[]
function TokenEmbeddings:ids(i) end

---Per token of string i: 1 for a special token the post-processor added, else 0.
---@param i integer
---@return integer[]
function TokenEmbeddings:special(i) end

---Whether string i was cut to the model's limit (model_max_length of tokenizer_config.json, else the
---position table).
---@param i integer
---@return boolean
function TokenEmbeddings:truncated(i) end

---Cosines of the tokens of string i of T (rows) with those of string j of U (columns); U may be T.
---@param i integer
---@param U TokenEmbeddings
---@param j integer
---@return Matrix
function TokenEmbeddings:cosine(i, U, j) end

---The vocabulary strings of string i's tokens ("[CLS]", "neural", "##s").
---@param i integer
---@return string[]
function TokenEmbeddings:tokens(i) end

---MoverScore v1's n-grams of string i: the tokens whose keep is true, in order, in windows of n
---consecutive ones one step apart (fewer than n: one window of all; none: one empty window); a
---window's mass is the float32 sum of its weights, its vector sum (w / (mass + eps)) e in float32.
---Returns token embeddings with one string (a row per window) and the masses.
---@param i integer
---@param keep boolean[]
---@param weights number[]
---@param n integer
---@param eps number
---@return TokenEmbeddings G
---@return number[] masses
function TokenEmbeddings:ngrams(i, keep, weights, n, eps) end

---String i's rows as token embeddings of one string, those whose keep is false set to zero
---(MoverScore v2).
---@param i integer
---@param keep boolean[]
---@return TokenEmbeddings
function TokenEmbeddings:select(i, keep) end

---The documents paired with doc (plugins with needs = {"pairs"}) whose index is higher, so each pair
---is seen once, in index order; second, how many of the pairs doc opens have identical gold sets
---(listed only when the plugin's keep_identical is true; counted either way).
---@param doc Document
---@return {doc: Document, jaccard: number, index: integer}[] partners
---@return integer identical
function Ctx.partners(doc) end

---One unit of the document being scored, in the current subset (plugins that declare c:units): values
---maps slots (or declared names) to numbers, as `out`; key (a finite number, homogeneity: the partner's
---index) identifies the unit within its document, the same in every run of the dataset.
---@param key number
---@param values table<integer|string, number>
function Ctx.unit(key, values) end
