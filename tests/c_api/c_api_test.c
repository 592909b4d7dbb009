/* The C ABI (kplab/c.h) from C: open a store, load examples/tiny with its predictions, evaluate
 * "exact,rank" into JSON, check values against a hand calculation, and check error messages.
 * Usage: c_api_test DATASET_DIR [MARKER_METRIC]
 *   MARKER_METRIC: a plugin installed only in the install tree (tests/install/run_consumer.sh), whose
 *   all.n_refs is the mean number of references per document; it proves the library found its plugins.
 *
 * Hand calculation on examples/tiny (Porter stems, exact matching, <peos> dropped):
 *   hits in the top 5 predictions per document: 3, 3, 2, 2, 2 = 12 (tests/lua_module/api.lua lists
 *   each prediction); every document has at least 5 predictions, so 5 * 5 = 25 are counted;
 *   references: 5 + 4 + 4 + 4 + 4 = 21.
 *   all.p@5.micro  = 12 / 25 = 0.48
 *   all.r@5.micro  = 12 / 21 = 0.571428...
 *   all.f1@5.micro = 2PR / (P + R) = 2 * 12 / (25 + 21) = 24 / 46 = 0.521739...
 *   all.mrr: first correct prediction at ranks 1, 2 ("patient information leaflets" misses), 1, 1, 1
 *            -> (1 + 1/2 + 1 + 1 + 1) / 5 = 0.9
 *   all.n_refs (marker) = 21 / 5 = 4.2
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, setenv, strdup */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <unistd.h>

#include <kplab/c.h>

static int failures = 0;

/* The "aggregates": {...} object of a run's JSON (a malloc'd copy), or NULL. */
static char* Aggregates(const char* json) {
  const char* p = json != NULL ? strstr(json, "\"aggregates\": {") : NULL;
  if (p == NULL) return NULL;
  const char* end = strchr(p, '}');
  char* out = malloc((size_t)(end - p) + 2);
  memcpy(out, p, (size_t)(end - p) + 1);
  out[end - p + 1] = '\0';
  return out;
}

#define CHECK(cond, ...)                                     \
  do {                                                       \
    if (!(cond)) {                                           \
      fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);  \
      fprintf(stderr, __VA_ARGS__);                          \
      fprintf(stderr, "\n");                                 \
      ++failures;                                            \
    }                                                        \
  } while (0)

/* The number after "KEY": in json, or NAN. */
static double JsonValue(const char* json, const char* key) {
  char pattern[128];
  snprintf(pattern, sizeof pattern, "\"%s\": ", key);
  const char* p = strstr(json, pattern);
  return p != NULL ? strtod(p + strlen(pattern), NULL) : NAN;
}

static void CheckValue(const char* json, const char* key, double expected) {
  const double v = JsonValue(json, key);
  CHECK(fabs(v - expected) < 1e-12, "%s = %.17g, expected %.17g", key, v, expected);
}

/* Bounded walks through the C ABI (docs/plugins.md, Limits: nesting): a plugin whose constant upvalue is
 * a table nested DEPTH deep, found through $KPLAB_PLUGIN_PATH. Up to 200 levels it scores (x = 1 on every
 * document); deeper it is refused with a message. At depths 8 to 10 this used to corrupt the heap. */
static void DeepPlugins(const kplab_data* data) {
  char tmp[] = "/tmp/kplab_c_deep_XXXXXX";
  CHECK(mkdtemp(tmp) != NULL, "mkdtemp");
  const char* old = getenv("KPLAB_PLUGIN_PATH");
  char* saved = old != NULL ? strdup(old) : NULL;
  setenv("KPLAB_PLUGIN_PATH", tmp, 1);
  const int depths[] = {1, 8, 10, 50, 200, 201, 10000};
  for (size_t i = 0; i < sizeof depths / sizeof *depths; ++i) {
    char name[64], path[600];
    snprintf(name, sizeof name, "deep%d", depths[i]);
    snprintf(path, sizeof path, "%s/%s.lua", tmp, name);
    FILE* f = fopen(path, "w");
    CHECK(f != NULL, "cannot write %s", path);
    if (f == NULL) continue;
    fprintf(f,
            "-- kplab-api: 2\n"
            "local DEEP = {} do local c = DEEP for _ = 2, %d do local n = {} c.k = n c = n end end\n"
            "return kp.metric { name = '%s', version = '1', columns = function(c) c:column('x', 'mean') end,\n"
            "  score = function(_, _, _, out) out.x = DEEP and 1 end }\n",
            depths[i], name);
    fclose(f);
    char* err = NULL;
    char* json = kplab_evaluate(data, name, NULL, NULL, NULL, &err);
    if (depths[i] <= 200) {
      CHECK(json != NULL && strstr(json, "\"x\": 1") != NULL, "%s: %s", name, json ? json : (err ? err : "?"));
    } else {
      CHECK(json == NULL && err != NULL && strstr(err, "upvalue 'DEEP' is nested more than 200 levels deep") != NULL,
            "%s: %s", name, err ? err : (json ? json : "?"));
    }
    kplab_free(json);
    kplab_free(err);
    unlink(path);
  }
  if (saved != NULL) {
    setenv("KPLAB_PLUGIN_PATH", saved, 1);
    free(saved);
  } else {
    unsetenv("KPLAB_PLUGIN_PATH");
  }
  rmdir(tmp);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s DATASET_DIR [MARKER_METRIC]\n", argv[0]);
    return 2;
  }
  const char* dir = argv[1];
  char preds[4096], readme[4096];
  snprintf(preds, sizeof preds, "%s/predictions.txt", dir);
  snprintf(readme, sizeof readme, "%s/README.md", dir);
  char* err = NULL;

  printf("kplab %s\n", kplab_version());
  kplab_store* store = kplab_store_open(":memory:", &err);
  CHECK(store != NULL && err == NULL, "store_open: %s", err ? err : "?");

  kplab_data* data = kplab_load(dir, preds, NULL, &err);
  CHECK(data != NULL && err == NULL, "load: %s", err ? err : "?");
  if (data == NULL) return 1;
  CHECK(kplab_data_num_docs(data) == 5, "num_docs = %zu", kplab_data_num_docs(data));

  char* json = kplab_evaluate(data, "exact,rank", NULL, "tiny-system", store, &err);
  CHECK(json != NULL && err == NULL, "evaluate: %s", err ? err : "?");
  if (json != NULL) {
    printf("%.160s ...\n", json);
    CheckValue(json, "run_id", 1); /* the first run of a fresh store */
    CheckValue(json, "n_docs", 5);
    CHECK(strstr(json, "\"system\": \"tiny-system\"") != NULL, "system name not in %s", json);
    CheckValue(json, "all.p@5.micro", 12.0 / 25.0);
    CheckValue(json, "all.r@5.micro", 12.0 / 21.0);
    CheckValue(json, "all.f1@5.micro", 24.0 / 46.0);
    CheckValue(json, "all.mrr", 0.9);
    kplab_free(json);
  }
  /* Not stored: run_id 0. */
  json = kplab_evaluate(data, "exact", NULL, NULL, NULL, &err);
  CHECK(json != NULL && err == NULL, "evaluate without store: %s", err ? err : "?");
  if (json != NULL) {
    CheckValue(json, "run_id", 0);
    CheckValue(json, "all.p@5.micro", 12.0 / 25.0);
    kplab_free(json);
  }

  /* Shards (docs/store.md): tiny's 5 documents as shards 2/3, 0/3, 1/3 (documents [3,5), [0,1), [1,3))
   * in two stores, merged into a third: the merged aggregates are the unsharded run's, as text (the
   * shortest round-trip decimals of the doubles, so bit for bit). */
  {
    char tmp[] = "/tmp/kplab_c_shard_XXXXXX";
    CHECK(mkdtemp(tmp) != NULL, "mkdtemp");
    char path_a[512], path_b[512], path_out[512];
    snprintf(path_a, sizeof path_a, "%s/a.db", tmp);
    snprintf(path_b, sizeof path_b, "%s/b.db", tmp);
    snprintf(path_out, sizeof path_out, "%s/out.db", tmp);
    kplab_store* a = kplab_store_open(path_a, &err);
    kplab_store* b = kplab_store_open(path_b, &err);
    kplab_store* out = kplab_store_open(path_out, &err);
    CHECK(a != NULL && b != NULL && out != NULL, "shard stores: %s", err ? err : "?");
    char* whole = kplab_evaluate(data, "exact,rank", NULL, "tiny-system", NULL, &err);
    const int order[3] = {2, 0, 1};
    for (int k = 0; k < 3; ++k) {
      char* part = kplab_evaluate_shard(data, "exact,rank", NULL, "tiny-system", k == 1 ? b : a, order[k], 3, &err);
      CHECK(part != NULL, "shard %d/3: %s", order[k], err ? err : "?");
      char want[64];
      snprintf(want, sizeof want, "\"shard\": {\"index\": %d, \"count\": 3", order[k]);
      CHECK(part != NULL && strstr(part, want) != NULL, "shard %d/3: %s", order[k], part ? part : "");
      kplab_free(part);
    }
    const char* from[2] = {path_b, path_a};
    char* merged = kplab_merge(from, 2, out, &err);
    CHECK(merged != NULL, "merge: %s", err ? err : "?");
    char *want = Aggregates(whole), *got = Aggregates(merged);
    CHECK(want != NULL && got != NULL && strcmp(want, got) == 0, "merged %s\n   whole %s", got ? got : "",
          want ? want : "");
    CheckValue(merged, "all.p@5.micro", 12.0 / 25.0);
    CheckValue(merged, "all.mrr", 0.9);
    free(want);
    free(got);
    kplab_free(merged);
    /* A second merge of a only (shards 2/3 and 1/3): shard 0/3 is missing; out keeps its one run. */
    merged = kplab_merge(from + 1, 1, out, &err);
    CHECK(merged == NULL && err != NULL &&
              strcmp(err, "missing shard: documents 1-1 ('1' to '1') are in no shard given (shard 0/3)") == 0,
          "merge without shard 0: %s", err ? err : "(none)");
    /* Store paths are regular files (docs/store.md, "Store paths"): a FIFO, which blocked the open for
     * ever, is refused by kplab_store_open and as a kplab_merge source, with the importers' message. */
    char fifo[600], want_fifo[700];
    snprintf(fifo, sizeof fifo, "%s/fifo.db", tmp);
    snprintf(want_fifo, sizeof want_fifo, "%s: a FIFO, not a regular file (expected a kplab database)", fifo);
    CHECK(mkfifo(fifo, 0644) == 0, "mkfifo");
    kplab_store* on_fifo = kplab_store_open(fifo, &err);
    CHECK(on_fifo == NULL && err != NULL && strcmp(err, want_fifo) == 0, "store_open(FIFO): %s", err ? err : "(none)");
    const char* from_fifo[1] = {fifo};
    merged = kplab_merge(from_fifo, 1, out, &err);
    CHECK(merged == NULL && err != NULL && strcmp(err, want_fifo) == 0, "merge(FIFO): %s", err ? err : "(none)");
    unlink(fifo);
    char* bad = kplab_evaluate_shard(data, "exact", NULL, NULL, a, 3, 3, &err);
    CHECK(bad == NULL && err != NULL &&
              strcmp(err, "kplab_evaluate_shard: shard 3/3 (expected 0 <= shard_index < shard_count)") == 0,
          "shard 3/3: %s", err ? err : "(none)");
    kplab_free(whole);
    kplab_store_close(a);
    kplab_store_close(b);
    kplab_store_close(out);
    for (const char* f = "a.db\0a.db-wal\0a.db-shm\0b.db\0b.db-wal\0b.db-shm\0out.db\0out.db-wal\0out.db-shm\0";
         *f != '\0'; f += strlen(f) + 1) {
      char file[600];
      snprintf(file, sizeof file, "%s/%s", tmp, f);
      unlink(file);
    }
    rmdir(tmp);
  }

  /* Errors: NULL result, *errptr set; a second error replaces (and frees) the first. */
  kplab_data* missing = kplab_load("/nonexistent/kplab-dataset", preds, NULL, &err);
  CHECK(missing == NULL, "loading a missing dataset succeeded");
  CHECK(err != NULL && strstr(err, "/nonexistent/kplab-dataset") != NULL, "missing file: '%s'", err ? err : "(none)");
  /* kplab_error_kind: the number `kplab` exits with for the failure (2: bad input). */
  CHECK(kplab_error_kind() == 2, "missing file: kind %d (expected 2, input)", kplab_error_kind());
  if (err) printf("error: %s\n", err);
  kplab_data* bad = kplab_load(dir, readme, NULL, &err);
  CHECK(bad == NULL, "loading README.md as predictions succeeded");
  CHECK(err != NULL && strstr(err, "README.md:6:") != NULL, "bad predictions: '%s'", err ? err : "(none)");
  if (err) printf("error: %s\n", err);
  json = kplab_evaluate(data, "exact,no_such_metric", NULL, NULL, store, &err);
  CHECK(json == NULL, "an unknown metric evaluated");
  CHECK(err != NULL && strstr(err, "unknown metric 'no_such_metric'") != NULL, "unknown metric: '%s'",
        err ? err : "(none)");
  CHECK(kplab_error_kind() == 1, "unknown metric: kind %d (expected 1, usage)", kplab_error_kind());
  if (err) printf("error: %s\n", err);
  json = kplab_evaluate(data, "rank", "rank.alpha", NULL, NULL, &err);
  CHECK(json == NULL && err != NULL && strstr(err, "METRIC.NAME=VALUE") != NULL, "bad param: '%s'",
        err ? err : "(none)");
  /* A parameter given twice is refused, as by `kplab eval --param` (the C ABI used to keep the last). */
  json = kplab_evaluate(data, "rank", "rank.alpha=0.5;rank.alpha=0.7", NULL, NULL, &err);
  CHECK(json == NULL && err != NULL &&
            strcmp(err, "parameter rank.alpha is given twice (expected one value per parameter)") == 0,
        "repeated param: '%s'", err ? err : "(none)");
  CHECK(kplab_error_kind() == 1, "repeated param: kind %d (expected 1, usage)", kplab_error_kind());
  kplab_free(err);
  err = NULL;
  CHECK(kplab_load(dir, readme, NULL, NULL) == NULL, "errptr NULL: load succeeded");

  /* kplab_load_ex: options as `kplab eval` flags. examples/tiny's references are plain text, so
   * matching them as given (refs_stemmed) loses the hits that need stemming ("scheduling" vs the
   * prediction "scheduler": stem "schedul"): P@5 falls below the 0.48 of the stemmed run. */
  kplab_data* given = kplab_load_ex(dir, preds, NULL, "refs_stemmed", &err);
  CHECK(given != NULL && err == NULL, "load_ex: %s", err ? err : "?");
  if (given != NULL) {
    json = kplab_evaluate(given, "exact", NULL, NULL, NULL, &err);
    CHECK(json != NULL, "evaluate refs_stemmed: %s", err ? err : "?");
    if (json != NULL) {
      const char* at = strstr(json, "\"all.p@5.micro\": ");
      CHECK(at != NULL && strtod(at + strlen("\"all.p@5.micro\": "), NULL) < 0.48, "refs_stemmed: %s", json);
      kplab_free(json);
    }
    kplab_data_free(given);
  }
  CHECK(kplab_load_ex(dir, preds, NULL, "refs_stemed", &err) == NULL, "load_ex accepted an unknown option");
  CHECK(err != NULL && strcmp(err, "kplab_load_ex: unknown option 'refs_stemed' (did you mean 'refs_stemmed'? "
                                   "expected one of: refs_stemmed[=true|false], dataset_format=F, predictions_format=F, "
                                   "source=PATH, split=NAME, references=PATH, hulth_keys=K, semeval_answers=A)") == 0,
        "unknown option: '%s'", err ? err : "(none)");
  kplab_free(err);
  err = NULL;
  /* Every dataset option of `kplab eval` is one here (docs/formats.md, "Dataset options in every
   * front-end"): a split the tiny dataset does not have is the importer's error, not an unknown option. */
  CHECK(kplab_load_ex(dir, preds, NULL, "split=dev", &err) == NULL, "load_ex accepted split=dev on tiny");
  CHECK(err != NULL && strstr(err, "unknown option") == NULL, "split: '%s'", err ? err : "(none)");
  kplab_free(err);
  err = NULL;
  CHECK(kplab_load_ex(dir, preds, NULL, "references", &err) == NULL, "load_ex accepted references without a value");
  CHECK(err != NULL && strcmp(err, "kplab_load_ex: option 'references' needs a value (references=...)") == 0,
        "references: '%s'", err ? err : "(none)");
  kplab_free(err);
  err = NULL;

  DeepPlugins(data);
  /* kplab_evaluate_ex (docs/plugins.md, "What a plugin may keep"): an API 1 plugin counting documents in
   * an upvalue gives document 2 the value 2 in one lane but 1 scored alone, so the run fails naming it;
   * with verify_docs=0 it goes through with the mean count (1 + 2 + 3 + 4 + 5) / 5 = 3. */
  {
    char tmp[] = "/tmp/kplab_c_verify_XXXXXX";
    CHECK(mkdtemp(tmp) != NULL, "mkdtemp");
    char path[600];
    snprintf(path, sizeof path, "%s/counter.lua", tmp);
    FILE* f = fopen(path, "w");
    CHECK(f != NULL, "cannot write %s", path);
    if (f != NULL) {
      fputs(
          "-- kplab-api: 1\nlocal n = 0\nreturn kp.metric { name = \"counter\", version = \"1\",\n"
          "  score = function(doc, p, ctx) n = n + 1 return { [\"all.x\"] = n } end }\n",
          f);
      fclose(f);
    }
    setenv("KPLAB_PLUGIN_PATH", tmp, 1);
    json = kplab_evaluate_ex(data, "counter", NULL, NULL, NULL, "threads=1", &err);
    CHECK(json == NULL && err != NULL &&
              strstr(err,
                     "plugin 'counter' carried state across documents (document '2', column 'all.x': 2 in "
                     "the run, 1 alone)") != NULL,
          "counter verified: %s", err ? err : "(no error)");
    json = kplab_evaluate_ex(data, "counter", NULL, NULL, NULL, "threads=1;verify_docs=0", &err);
    CHECK(json != NULL, "counter not verified: %s", err ? err : "?");
    if (json != NULL) {
      CheckValue(json, "all.x", 3.0);
      kplab_free(json);
    }
    json = kplab_evaluate_ex(data, "exact", NULL, NULL, NULL, "verify_docs=-1", &err);
    CHECK(json == NULL && err != NULL &&
              strcmp(err, "kplab_evaluate_ex: option verify_docs must be an integer from 0 to 1000000 (got '-1')") == 0,
          "bad verify_docs: %s", err ? err : "(none)");
    json = kplab_evaluate_ex(data, "exact", NULL, NULL, NULL, "verify=3", &err);
    CHECK(json == NULL && err != NULL &&
              strcmp(err,
                     "kplab_evaluate_ex: unknown option 'verify=3' (expected verify_docs=N, random_seed=S or "
                     "threads=N)") == 0,
          "unknown option: %s", err ? err : "(none)");
    unsetenv("KPLAB_PLUGIN_PATH");
    unlink(path);
    rmdir(tmp);
  }

  if (argc > 2) {
    json = kplab_evaluate(data, argv[2], NULL, NULL, NULL, &err);
    CHECK(json != NULL, "marker metric %s: %s", argv[2], err ? err : "?");
    if (json != NULL) {
      printf("%s\n", json);
      CheckValue(json, "all.n_refs", 21.0 / 5.0);
      kplab_free(json);
    }
  }

  kplab_data_free(data);
  kplab_store_close(store);
  kplab_free(err);
  if (failures != 0) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("ok\n");
  return 0;
}
