/* kplab C ABI (library kplab_c, CMake target kplab::c). See docs/library.md.
 *
 * Conventions (as LevelDB's C API):
 *  - Handles are opaque; each *_open / kplab_load result is released by its *_close / *_free.
 *  - A function that can fail takes `char** errptr` last. On failure it returns NULL (or 0) and sets
 *    *errptr to a malloc'd message (freeing a message already there); on success *errptr is left
 *    unchanged. Messages name FILE:LINE for bad input, as the kplab command does. errptr may be NULL
 *    when the caller does not want the message.
 *  - Strings returned by kplab are malloc'd: release them with kplab_free.
 *  - A handle may be used by one thread at a time; different handles are independent.
 */
#ifndef KPLAB_C_H_
#define KPLAB_C_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define KPLAB_C_EXPORT __attribute__((visibility("default")))
#else
#define KPLAB_C_EXPORT
#endif

typedef struct kplab_store kplab_store; /* a run store (SQLite file) */
typedef struct kplab_data kplab_data;   /* a dataset with a system's predictions, normalized */

/* The library's version, "MAJOR.MINOR.PATCH" (static storage; do not free). */
KPLAB_C_EXPORT const char* kplab_version(void);

/* The kind of the calling thread's last failure, as the number `kplab` exits with for it: 1 usage (an
 * unknown metric or profile, a bad or repeated parameter, a bad option), 2 input (a file that is missing
 * or wrong), 3 a metric script failed or reached a limit, 4 the run store, 5 internal; 0 before any
 * failure. Only meaningful right after a call that failed (a success leaves it unchanged, as errno). */
KPLAB_C_EXPORT int kplab_error_kind(void);

/* Frees a string returned by kplab (NULL is allowed). */
KPLAB_C_EXPORT void kplab_free(void* p);

/* Opens or creates the run store at `path` (":memory:" for a temporary one; NULL for the default,
 * $KPLAB_DB or kplab.db). */
KPLAB_C_EXPORT kplab_store* kplab_store_open(const char* path, char** errptr);
KPLAB_C_EXPORT void kplab_store_close(kplab_store* store);

/* Imports a dataset (format detected from the path, as `kplab eval --dataset`) and a predictions file
 * aligned with it, normalized under `profile` (NULL = "kplab"). */
KPLAB_C_EXPORT kplab_data* kplab_load(const char* dataset_path, const char* predictions_path,
                                      const char* profile, char** errptr);
/* As kplab_load, with `options` NULL or a ';'-separated list of NAME or NAME=VALUE, as the same
 * options of `kplab eval`: "refs_stemmed" (references released Porter-stemmed, matched as given),
 * "dataset_format=F", "predictions_format=F", "source=PATH", "split=NAME", "references=PATH",
 * "hulth_keys=K", "semeval_answers=A" (docs/formats.md, "Dataset options in every front-end"). An
 * unknown name is an error naming the valid ones. */
KPLAB_C_EXPORT kplab_data* kplab_load_ex(const char* dataset_path, const char* predictions_path,
                                         const char* profile, const char* options, char** errptr);
KPLAB_C_EXPORT size_t kplab_data_num_docs(const kplab_data* data);
KPLAB_C_EXPORT void kplab_data_free(kplab_data* data);

/* Scores `data` with the comma-separated metric plugins in `metrics` (NULL = "exact,rank,rprec").
 * `params` is NULL or a ';'-separated list of METRIC.NAME=VALUE (as --param). `system` names the
 * system (NULL = derived from the predictions path). A parameter given twice is an error, as on the
 * command line. When `store` is not NULL the run is stored there (a run whose metric script fails is
 * recorded as failed, NULL is returned and *errptr ends "run N recorded as failed in PATH").
 * Returns the JSON object `kplab eval --output json` prints:
 *   {"run_id": N (0 when not stored), "dataset": ..., "system": ..., "profile": ..., "n_docs": N,
 *    "aggregates": {"all.f1@5.micro": 0.4, ...}}   (NaN as null)
 * to be freed with kplab_free. */
KPLAB_C_EXPORT char* kplab_evaluate(const kplab_data* data, const char* metrics, const char* params,
                                    const char* system, kplab_store* store, char** errptr);

/* As kplab_evaluate, with `options` NULL or a ';'-separated list of NAME=VALUE, as the same options of
 * `kplab eval`: "verify_docs=N" (--verify-docs: re-score the first document of each thread and N more with
 * each plugin loaded afresh, and fail unless the values are the same bit for bit; default 16, 0 = off),
 * "random_seed=S" (--random-seed: the run seed of the plugins' math.random), "threads=N" (--threads). An
 * unknown name or a bad value is an error before anything is scored. */
KPLAB_C_EXPORT char* kplab_evaluate_ex(const kplab_data* data, const char* metrics, const char* params,
                                       const char* system, kplab_store* store, const char* options, char** errptr);

/* As kplab_evaluate, scoring only shard `shard_index` (from 0) of `shard_count` contiguous document
 * ranges of `data` (documents [n*I/N, n*(I+1)/N) in dataset order), stored in `store` (required) as a
 * partial run for `kplab runs merge` / kplab_merge. The JSON also holds
 * "shard": {"index": I, "count": N, "begin": B, "end": E}; its aggregates are over the shard's documents.
 * A bad index or count, or a metric that cannot be merged, is an error before anything is scored. */
KPLAB_C_EXPORT char* kplab_evaluate_shard(const kplab_data* data, const char* metrics, const char* params,
                                          const char* system, kplab_store* store, int64_t shard_index,
                                          int64_t shard_count, char** errptr);

/* Merges the shards of one evaluation found in the stores `from` (`n_from` paths) into one run stored
 * in `out`, as `kplab runs merge --from ... --db OUT` without run ids. Returns the JSON object
 * kplab_evaluate returns, for the merged run (its "run_id" in `out`; its aggregates equal those of the
 * single-process run bit for bit), to be freed with kplab_free; NULL with *errptr set on failure
 * (`out` is then unchanged). */
KPLAB_C_EXPORT char* kplab_merge(const char* const* from, size_t n_from, kplab_store* out, char** errptr);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KPLAB_C_H_ */
