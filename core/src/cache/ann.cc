// AnnIndex: hnswlib 0.6.2 behind kplab's file header (format in kplab/ann.h).
//
// Save: hnswlib's saveIndex only writes to a path, so it writes to a scratch file (an anonymous
// memfd reached as /proc/self/fd/N, or a temp file where memfd or /proc is missing); the header and
// those bytes then go to a temp file beside the destination, which is renamed over it.
// Load: the file is mapped, its checksum and structure are checked in place, and hnswlib's state is
// rebuilt from it in memory (see Load for why not through loadIndex).
//
// hnswlib.h defines non-inline functions (cpuid, AVXCapable, ...), so only this file may include
// it.
#include "kplab/ann.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <unordered_set>

// Included after the standard headers it relies on without including them.
#include <hnswlib/hnswlib.h>

// Sanitized builds must take hnswlib's portable path (core/CMakeLists.txt defines
// NO_MANUAL_VECTORIZATION for this file under KPLAB_SANITIZE/KPLAB_FUZZ): its SSE path prefetches one
// entry past a full link list, which ASan reports. The workaround once named a path this file had left
// and silently did nothing; this makes a stale path a build error instead.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KPLAB_ANN_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define KPLAB_ANN_ASAN 1
#endif
#if defined(KPLAB_ANN_ASAN) && defined(USE_SSE)
#error "ASan build of ann.cc with hnswlib's SSE path: core/CMakeLists.txt's NO_MANUAL_VECTORIZATION misses this file"
#endif

#include "kplab/file_gate.h"
#include "kplab/sha256.h"

namespace kplab {
namespace {

using Hnsw = hnswlib::HierarchicalNSW<float>;

constexpr char kMagic[8] = {'K', 'P', 'L', 'B', 'H', 'N', 'S', 'W'};
constexpr std::uint32_t kVersion = 1;
constexpr std::int64_t kNoLabel = std::numeric_limits<std::int64_t>::min();
constexpr std::size_t kInitialCapacity = 1024;
constexpr int kMaxM = 1024;
constexpr std::size_t kMaxEf = 1 << 24;
// hnswlib's internal ids are 32-bit and 0xFFFFFFFF marks "no entry point".
constexpr std::uint64_t kMaxCount = 0xFFFFFFFEULL;

// The header as stored: 136 bytes, no padding, little-endian (the hnswlib payload is
// native-endian anyway, so the format is only defined for little-endian hosts).
struct Header {
  char magic[8];
  std::uint32_t version;
  std::uint32_t dims;
  char fingerprint[64];
  std::uint64_t count;
  std::int64_t max_label;
  std::uint64_t payload_len;
  std::uint8_t sha256[32];
};
static_assert(sizeof(Header) == 136);
static_assert(offsetof(Header, sha256) == 104);
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "ann index files are little-endian");

// hnswlib's payload starts with these fields (HierarchicalNSW::saveIndex), 96 bytes.
constexpr std::size_t kHnswHeaderSize = 6 * 8 + 4 + 4 + 3 * 8 + 8 + 8;

bool IsLowerHex64(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string Hex(const std::uint8_t* p, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (std::size_t i = 0; i < n; ++i) {
    s[2 * i] = kDigits[p[i] >> 4];
    s[2 * i + 1] = kDigits[p[i] & 15];
  }
  return s;
}

// A fingerprint as it may be shown in a message (the header's bytes can be anything).
std::string Printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  return out;
}

// Writes a unit-length copy of v to out; false for a zero or non-finite vector. The norm is
// accumulated in double so that large finite components do not overflow.
bool Normalize(const float* v, int dims, float* out) {
  double sum = 0;
  for (int i = 0; i < dims; ++i) sum += static_cast<double>(v[i]) * v[i];
  if (!std::isfinite(sum) || sum <= 0) return false;
  const double inv = 1.0 / std::sqrt(sum);
  for (int i = 0; i < dims; ++i) out[i] = static_cast<float>(v[i] * inv);
  return true;
}

// (label, cosine) by cosine descending, then label ascending.
bool Better(const std::pair<std::int64_t, float>& a, const std::pair<std::int64_t, float>& b) {
  return a.second != b.second ? a.second > b.second : a.first < b.first;
}

// A file that hnswlib can open by path: a memfd as /proc/self/fd/N, else a temp file in $TMPDIR
// (removed by the destructor).
class ScratchFile {
 public:
  ScratchFile() = default;
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  ~ScratchFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!unlink_.empty()) ::unlink(unlink_.c_str());
  }

  // On failure returns false and sets *error to the reason.
  bool Open(std::string* error) {
    fd_ = ::memfd_create("kplab-ann", MFD_CLOEXEC);  // file-gate: anonymous scratch memory, no name
    if (fd_ >= 0) {
      path_ = fmt::format("/proc/self/fd/{}", fd_);
      if (::access(path_.c_str(), R_OK | W_OK) == 0) return true;
      ::close(fd_);
      fd_ = -1;
    }
    const char* dir = std::getenv("TMPDIR");
    std::string templ =
        std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/kplab-ann-XXXXXX";
    // file-gate: a new scratch file of kplab's own in the user's $TMPDIR, removed when done
    fd_ = ::mkostemp(templ.data(), O_CLOEXEC);
    if (fd_ < 0) {
      *error = fmt::format("cannot create a scratch file in {}: {}", templ, std::strerror(errno));
      return false;
    }
    path_ = unlink_ = templ;
    return true;
  }

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
  std::string unlink_;
};

// A read-only mapping of a whole file descriptor.
class Mapping {
 public:
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (data_ != nullptr) ::munmap(const_cast<std::uint8_t*>(data_), size_);
  }
  // size > 0. On failure data() is null and errno is set.
  Mapping(int fd, std::size_t size) : size_(size) {
    // file-gate: maps a descriptor its caller opened (AnnIndex::Load, after GateFile)
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (p != MAP_FAILED) data_ = static_cast<const std::uint8_t*>(p);
  }
  const std::uint8_t* data() const { return data_; }

 private:
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

// write() until done; false with errno set on failure.
bool WriteAll(int fd, const void* data, std::size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, std::min<std::size_t>(n, 1 << 30));
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

template <class T>
T ReadAt(const std::uint8_t* p, std::size_t off) {
  T v;
  std::memcpy(&v, p + off, sizeof(T));
  return v;
}

// Checks that p[0, n) is an hnswlib 0.6.2 payload that hnswlib can load and search without reading
// out of bounds: layout fields equal those of an index of `dims` float dimensions, every neighbour
// id names an element that has the level it is linked on, the entry point is on the top level, no
// element is marked deleted, and count / max_label agree with the header. Returns "" or what is
// wrong.
std::string CheckPayload(const std::uint8_t* p, std::size_t n, std::uint32_t dims,
                         std::uint64_t count, std::int64_t max_label) {
  if (n < kHnswHeaderSize) return fmt::format("{} bytes, too short for hnswlib's header", n);
  const auto offset_level0 = ReadAt<std::uint64_t>(p, 0);
  const auto max_elements = ReadAt<std::uint64_t>(p, 8);
  const auto cur_count = ReadAt<std::uint64_t>(p, 16);
  const auto size_per_element = ReadAt<std::uint64_t>(p, 24);
  const auto label_offset = ReadAt<std::uint64_t>(p, 32);
  const auto offset_data = ReadAt<std::uint64_t>(p, 40);
  const auto max_level = ReadAt<std::int32_t>(p, 48);
  const auto entry_point = ReadAt<std::uint32_t>(p, 52);
  const auto max_m = ReadAt<std::uint64_t>(p, 56);
  const auto max_m0 = ReadAt<std::uint64_t>(p, 64);
  const auto m = ReadAt<std::uint64_t>(p, 72);
  const auto mult = ReadAt<double>(p, 80);
  const auto ef_construction = ReadAt<std::uint64_t>(p, 88);

  if (cur_count != count) {
    return fmt::format("hnswlib holds {} elements, header says {}", cur_count, count);
  }
  if (m < 2 || m > kMaxM || max_m != m || max_m0 != 2 * m) {
    return fmt::format(
        "graph degree M={} maxM={} maxM0={} (expected 2 <= M <= {}, maxM = M, "
        "maxM0 = 2M)",
        m, max_m, max_m0, kMaxM);
  }
  const double want_mult = 1 / std::log(1.0 * static_cast<double>(m));
  if (!(std::fabs(mult - want_mult) <= 1e-12 * want_mult)) {
    return fmt::format("level multiplier {} (expected 1/ln(M) = {})", mult, want_mult);
  }
  if (ef_construction < m || ef_construction > kMaxEf) {
    return fmt::format("ef_construction {} (expected {}..{})", ef_construction, m, kMaxEf);
  }
  const std::uint64_t links0 = max_m0 * 4 + 4;  // count word + maxM0 neighbour ids
  const std::uint64_t links = max_m * 4 + 4;
  const std::uint64_t data_size = 4ULL * dims;
  if (offset_level0 != 0 || offset_data != links0 || label_offset != links0 + data_size ||
      size_per_element != links0 + data_size + 8) {
    return fmt::format(
        "element layout ({}, {}, {}, {}) is not that of {}-d float vectors with "
        "M={}",
        offset_level0, offset_data, label_offset, size_per_element, dims, m);
  }
  if (max_elements < count) {
    return fmt::format("capacity {} is below the element count {}", max_elements, count);
  }
  if (count > (n - kHnswHeaderSize) / size_per_element) {
    return fmt::format("{} elements of {} bytes do not fit in {} bytes", count, size_per_element,
                       n);
  }
  if (count == 0) {
    if (max_level != -1 || entry_point != 0xFFFFFFFFu) {
      return fmt::format("empty graph with entry point {} on level {}", entry_point, max_level);
    }
  } else if (entry_point >= count || max_level < 0) {
    return fmt::format("entry point {} on level {} (expected < {} on level >= 0)", entry_point,
                       max_level, count);
  }

  // Level 0: neighbour lists (count word, then ids) and labels.
  const std::uint8_t* level0 = p + kHnswHeaderSize;
  std::int64_t seen_max = kNoLabel;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint8_t* e = level0 + i * size_per_element;
    // The whole word must be <= maxM0: its third byte is hnswlib's "deleted" mark, which kplab
    // never sets.
    const auto k = ReadAt<std::uint32_t>(e, 0);
    if (k > max_m0) {
      return fmt::format("element {} has {} level-0 links (expected <= {}, none deleted)", i, k,
                         max_m0);
    }
    for (std::uint32_t j = 0; j < k; ++j) {
      const auto id = ReadAt<std::uint32_t>(e, 4 + 4 * j);
      if (id >= count) return fmt::format("element {} links to element {} of {}", i, id, count);
    }
    seen_max = std::max(seen_max, ReadAt<std::int64_t>(e, label_offset));
  }
  if (seen_max != max_label) {
    return fmt::format("largest label is {}, header says {}", seen_max, max_label);
  }

  // Upper levels: per element a u32 byte size, then that many bytes of maxM-link lists.
  std::vector<std::uint32_t> level(count, 0);
  std::vector<std::pair<std::uint32_t, std::uint64_t>> upper;  // (element, offset of its lists)
  std::uint64_t pos = kHnswHeaderSize + count * size_per_element;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (n - pos < 4) return fmt::format("payload ends inside the links of element {}", i);
    const auto bytes = ReadAt<std::uint32_t>(p, pos);
    pos += 4;
    if (bytes % links != 0) {
      return fmt::format("element {} has {} bytes of upper-level links (expected a multiple of {})",
                         i, bytes, links);
    }
    if (n - pos < bytes) return fmt::format("payload ends inside the links of element {}", i);
    level[i] = static_cast<std::uint32_t>(bytes / links);
    if (level[i] > static_cast<std::uint32_t>(max_level)) {
      return fmt::format("element {} is on level {}, above the top level {}", i, level[i],
                         max_level);
    }
    if (bytes > 0) upper.emplace_back(static_cast<std::uint32_t>(i), pos);
    pos += bytes;
  }
  if (pos != n) return fmt::format("{} bytes after the last element", n - pos);
  if (count > 0 && level[entry_point] != static_cast<std::uint32_t>(max_level)) {
    return fmt::format("entry point {} is on level {}, not on the top level {}", entry_point,
                       level[entry_point], max_level);
  }
  for (const auto& [i, off] : upper) {
    for (std::uint32_t l = 1; l <= level[i]; ++l) {
      const std::uint64_t list = off + (l - 1) * links;
      const auto k = ReadAt<std::uint32_t>(p, list);
      if (k > max_m) {
        return fmt::format("element {} has {} links on level {} (expected <= {})", i, k, l, max_m);
      }
      for (std::uint32_t j = 0; j < k; ++j) {
        const auto id = ReadAt<std::uint32_t>(p, list + 4 + 4 * j);
        if (id >= count || level[id] < l) {
          return fmt::format("element {} links on level {} to element {}, which is not on it", i, l,
                             id);
        }
      }
    }
  }
  return "";
}

}  // namespace

struct AnnIndex::Impl {
  explicit Impl(int dims) : space(static_cast<std::size_t>(dims)) {}
  hnswlib::InnerProductSpace space;  // hnsw keeps a pointer into it
  std::unique_ptr<Hnsw> hnsw;
};

AnnIndex::AnnIndex(int dims, std::string fingerprint, int ef_search, std::unique_ptr<Impl> impl)
    : dims_(dims),
      fingerprint_(std::move(fingerprint)),
      ef_search_(ef_search),
      max_label_(kNoLabel),
      impl_(std::move(impl)) {}

AnnIndex::AnnIndex(AnnIndex&&) noexcept = default;
AnnIndex& AnnIndex::operator=(AnnIndex&&) noexcept = default;
AnnIndex::~AnnIndex() = default;

AnnIndex AnnIndex::Create(int dims, std::string fingerprint) {
  return Create(dims, std::move(fingerprint), Options());
}

AnnIndex AnnIndex::Create(int dims, std::string fingerprint, Options options) {
  if (dims <= 0) throw std::invalid_argument(fmt::format("AnnIndex: dims {} (expected > 0)", dims));
  if (options.M < 2 || options.M > kMaxM || options.ef_construction < 1 ||
      static_cast<std::size_t>(options.ef_construction) > kMaxEf || options.ef_search < 1) {
    throw std::invalid_argument(
        fmt::format("AnnIndex: M={} ef_construction={} ef_search={} (expected M in 2..{}, ef >= 1)",
                    options.M, options.ef_construction, options.ef_search, kMaxM));
  }
  auto impl = std::make_unique<Impl>(dims);
  impl->hnsw = std::make_unique<Hnsw>(&impl->space, kInitialCapacity, options.M,
                                      options.ef_construction, options.seed);
  impl->hnsw->setEf(options.ef_search);
  return AnnIndex(dims, std::move(fingerprint), options.ef_search, std::move(impl));
}

std::size_t AnnIndex::size() const { return impl_->hnsw->cur_element_count; }

void AnnIndex::set_ef_search(int ef) {
  ef_search_ = std::max(ef, 1);
  impl_->hnsw->setEf(ef_search_);
}

Status AnnIndex::Reserve(std::size_t n) {
  Hnsw& h = *impl_->hnsw;
  if (n <= h.max_elements_) return Status::Ok();
  if (n > kMaxCount) {
    return Error::Limit(fmt::format("ann index: {} vectors (expected at most {})", n, kMaxCount));
  }
  const std::size_t capacity = std::min<std::size_t>(std::max(n, 2 * h.max_elements_), kMaxCount);
  try {
    h.resizeIndex(capacity);
  } catch (const std::exception& e) {
    return Error::Limit(fmt::format("ann index: cannot grow to {} vectors: {}", capacity, e.what()));
  }
  return Status::Ok();
}

Status AnnIndex::Add(std::int64_t label, const float* vec) {
  std::vector<float> unit(static_cast<std::size_t>(dims_));
  if (!Normalize(vec, dims_, unit.data())) {
    return Error::Input(
        fmt::format("ann index: vector for label {} is zero or not finite (expected a "
                    "non-zero finite vector)",
                    label));
  }
  Hnsw& h = *impl_->hnsw;
  const auto key = static_cast<hnswlib::labeltype>(label);
  if (h.label_lookup_.count(key) != 0) {
    return Error::Usage(fmt::format("ann index: label {} is already in the index", label));
  }
  if (Status s = Reserve(size() + 1); !s.ok()) return s;
  try {
    h.addPoint(unit.data(), key);
  } catch (const std::exception& e) {
    return Error::Input(fmt::format("ann index: cannot add label {}: {}", label, e.what()));
  }
  max_label_ = std::max(max_label_, label);
  return Status::Ok();
}

Status AnnIndex::AddBatch(std::span<const std::int64_t> labels, const float* rows, int threads) {
  const std::size_t n = labels.size();
  if (n == 0) return Status::Ok();
  Hnsw& h = *impl_->hnsw;
  const auto dims = static_cast<std::size_t>(dims_);
  std::vector<float> unit(n * dims);
  std::unordered_set<std::int64_t> batch;
  batch.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (!Normalize(rows + i * dims, dims_, unit.data() + i * dims)) {
      return Error::Input(
          fmt::format("ann index: vector for label {} (row {}) is zero or not finite "
                      "(expected a non-zero finite vector)",
                      labels[i], i));
    }
    if (!batch.insert(labels[i]).second ||
        h.label_lookup_.count(static_cast<hnswlib::labeltype>(labels[i])) != 0) {
      return Error::Usage(
          fmt::format("ann index: label {} (row {}) is already in the index or the batch", labels[i], i));
    }
  }
  if (Status s = Reserve(size() + n); !s.ok()) return s;

  // Workers take rows in order; hnswlib's addPoint is thread-safe for distinct labels.
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::vector<std::uint8_t> added(n, 0);
  std::mutex error_mu;
  std::string error;
  auto work = [&] {
    while (!failed.load(std::memory_order_relaxed)) {
      const std::size_t i = next++;
      if (i >= n) break;
      try {
        h.addPoint(unit.data() + i * dims, static_cast<hnswlib::labeltype>(labels[i]));
        added[i] = 1;
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (error.empty()) error = fmt::format("cannot add label {}: {}", labels[i], e.what());
        failed = true;
      }
    }
  };
  const std::size_t nthreads =
      std::min<std::size_t>(static_cast<std::size_t>(std::max(threads, 1)), n);
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < nthreads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (std::size_t i = 0; i < n; ++i) {
    if (added[i]) max_label_ = std::max(max_label_, labels[i]);
  }
  if (failed) return Error::Input("ann index: " + error);
  return Status::Ok();
}

std::vector<std::pair<std::int64_t, float>> AnnIndex::Search(const float* query, int k) const {
  std::vector<std::pair<std::int64_t, float>> out;
  if (k <= 0 || size() == 0) return out;
  std::vector<float> q(static_cast<std::size_t>(dims_));
  if (!Normalize(query, dims_, q.data())) return out;
  // hnswlib searches with max(ef, k) candidates.
  auto heap = impl_->hnsw->searchKnn(q.data(), static_cast<std::size_t>(k));
  out.reserve(heap.size());
  for (; !heap.empty(); heap.pop()) {
    out.emplace_back(static_cast<std::int64_t>(heap.top().second), 1.0f - heap.top().first);
  }
  std::sort(out.begin(), out.end(), Better);
  return out;
}

Status AnnIndex::Save(const std::string& path) const {
  auto fail = [&](const std::string& why) {
    return Error::Input(fmt::format("{}: cannot write ann index: {}", path, why));
  };
  if (!IsLowerHex64(fingerprint_)) {
    return fail(fmt::format("model fingerprint '{}' is not 64 lower-case hex digits",
                            Printable(fingerprint_)));
  }
  const Hnsw& h = *impl_->hnsw;
  std::uint64_t payload_len = kHnswHeaderSize + h.cur_element_count * h.size_data_per_element_;
  for (std::size_t i = 0; i < h.cur_element_count; ++i) {
    payload_len += 4 + h.size_links_per_element_ * static_cast<std::size_t>(h.element_levels_[i]);
  }

  std::string error;
  ScratchFile scratch;
  if (!scratch.Open(&error)) return fail(error);
  try {
    // saveIndex is not const in hnswlib 0.6.2 but does not modify the index.
    const_cast<Hnsw&>(h).saveIndex(scratch.path());
  } catch (const std::exception& e) {
    return fail(fmt::format("hnswlib: {}", e.what()));
  }
  struct stat st {};
  if (::fstat(scratch.fd(), &st) != 0) return fail(std::strerror(errno));
  // hnswlib does not check its writes; a short scratch file means the scratch space ran out.
  if (static_cast<std::uint64_t>(st.st_size) != payload_len) {
    return fail(
        fmt::format("hnswlib wrote {} bytes to the scratch file, expected {} (out of "
                    "memory or temp space?)",
                    st.st_size, payload_len));
  }
  // The capacity hnswlib records is an allocation detail (Load sizes the index itself); recording
  // the count instead makes equal indexes give equal files.
  const std::uint64_t capacity = h.cur_element_count;
  if (::pwrite(scratch.fd(), &capacity, 8, 8) != 8) return fail(std::strerror(errno));
  Mapping payload(scratch.fd(), payload_len);
  if (payload.data() == nullptr) return fail(std::strerror(errno));

  Header header{};
  std::memcpy(header.magic, kMagic, 8);
  header.version = kVersion;
  header.dims = static_cast<std::uint32_t>(dims_);
  std::memcpy(header.fingerprint, fingerprint_.data(), 64);
  header.count = h.cur_element_count;
  header.max_label = max_label_;
  header.payload_len = payload_len;
  Sha256 sha;
  sha.Update(std::string_view(reinterpret_cast<const char*>(payload.data()), payload_len));
  const auto digest = sha.Finish();
  std::memcpy(header.sha256, digest.data(), 32);

  // Temp file beside the destination (same file system, so rename is atomic). O_EXCL and a
  // per-process counter keep concurrent savers apart.
  static std::atomic<unsigned> counter{0};
  const std::string tmp = fmt::format("{}.tmp.{}.{}", path, ::getpid(), counter++);
  if (Status st = GateFile(path, FileAccess::kWrite); !st.ok()) return st;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return fail(fmt::format("cannot create {}: {}", tmp, std::strerror(errno)));
  bool ok = WriteAll(fd, &header, sizeof(header)) && WriteAll(fd, payload.data(), payload_len) &&
            ::fsync(fd) == 0;
  std::string why = ok ? "" : std::strerror(errno);
  if (::close(fd) != 0 && ok) {
    ok = false;
    why = std::strerror(errno);
  }
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    why = std::strerror(errno);
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    return fail(why);
  }
  return Status::Ok();
}

Result<AnnIndex> AnnIndex::Load(const std::string& path, int expected_dims,
                                const std::string& expected_fingerprint) {
  return Load(path, expected_dims, expected_fingerprint, Options());
}

Result<AnnIndex> AnnIndex::Load(const std::string& path, int expected_dims,
                                const std::string& expected_fingerprint, Options options) {
  auto bad = [&](const std::string& what) { return Error::Input(fmt::format("{}: {}", path, what)); };
  const std::string kExpectedFile = "a kplab ann index written by AnnIndex::Save";

  if (Status st = GateFile(path, FileAccess::kRead); !st.ok()) return st.error();
  // O_NONBLOCK so that a FIFO does not hang the open; it is rejected below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return bad(fmt::format("no such file (expected {})", kExpectedFile));
    return bad(fmt::format("cannot open: {} (expected {})", std::strerror(errno), kExpectedFile));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return bad(fmt::format("cannot stat: {}", std::strerror(errno)));
  if (!S_ISREG(st.st_mode))
    return bad(fmt::format("not a regular file (expected {})", kExpectedFile));
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size == 0) return bad(fmt::format("empty file (expected {})", kExpectedFile));

  Header header{};
  const ssize_t got = ::pread(fd, &header, sizeof(header), 0);
  if (got < 0) return bad(fmt::format("cannot read: {}", std::strerror(errno)));
  const auto header_bytes = static_cast<std::size_t>(got);
  if (std::memcmp(header.magic, kMagic, std::min<std::size_t>(header_bytes, 8)) != 0) {
    return bad("not a kplab ann index (expected the magic \"KPLBHNSW\"; rebuild the index)");
  }
  if (header_bytes < sizeof(header)) {
    return bad(
        fmt::format("truncated ann index: {} bytes (expected a {}-byte header and a payload)", size,
                    sizeof(header)));
  }
  if (header.version != kVersion) {
    return bad(
        fmt::format("unsupported ann index format version {} (expected {}; rebuild the index)",
                    header.version, kVersion));
  }
  const std::string_view fingerprint(header.fingerprint, 64);
  if (!IsLowerHex64(fingerprint)) {
    return bad(
        fmt::format("corrupt ann index header: model fingerprint '{}' (expected 64 lower-case "
                    "hex digits)",
                    Printable(fingerprint)));
  }
  if (fingerprint != expected_fingerprint) {
    return bad(
        fmt::format("index was built for model {}, expected {} (rebuild the index for this model)",
                    fingerprint, Printable(expected_fingerprint)));
  }
  if (header.dims == 0) return bad("corrupt ann index header: 0 dimensions (expected >= 1)");
  if (header.dims != static_cast<std::uint64_t>(expected_dims)) {
    return bad(fmt::format("index has {} dimensions, expected {} (rebuild the index)", header.dims,
                           expected_dims));
  }
  if (header.payload_len > size - sizeof(header)) {
    return bad(
        fmt::format("truncated ann index: {} bytes (expected the {}-byte header and the {}-byte "
                    "payload it announces)",
                    size, sizeof(header), header.payload_len));
  }
  if (header.payload_len < size - sizeof(header)) {
    return bad(fmt::format("{} unexpected bytes after the payload (expected {} bytes in all)",
                           size - sizeof(header) - header.payload_len,
                           sizeof(header) + header.payload_len));
  }
  if (header.count > kMaxCount) {
    return bad(fmt::format("corrupt ann index header: count {} (expected at most {})", header.count,
                           kMaxCount));
  }
  if (header.payload_len < kHnswHeaderSize) {
    return bad(fmt::format("corrupt ann index: payload of {} bytes (expected at least {})",
                           header.payload_len, kHnswHeaderSize));
  }

  // A read-only mapping: checked in place, then copied into hnswlib's own allocations. (kplab
  // replaces index files by rename, never truncates one in place, so the mapping stays valid.)
  Mapping file(fd, size);
  if (file.data() == nullptr) return bad(fmt::format("cannot map: {}", std::strerror(errno)));
  const std::uint8_t* payload = file.data() + sizeof(header);
  Sha256 sha;
  sha.Update(std::string_view(reinterpret_cast<const char*>(payload), header.payload_len));
  const auto digest = sha.Finish();
  if (std::memcmp(digest.data(), header.sha256, 32) != 0) {
    return bad(
        fmt::format("corrupt ann index: payload SHA-256 is {}, header says {} (checksum mismatch; "
                    "rebuild the index)",
                    Hex(digest.data(), 32), Hex(header.sha256, 32)));
  }
  const std::string error =
      CheckPayload(payload, header.payload_len, header.dims, header.count, header.max_label);
  if (!error.empty()) return bad(fmt::format("corrupt ann index payload: {}", error));

  // Rebuild hnswlib's state as HierarchicalNSW::loadIndex would, but from memory: loadIndex only
  // reads from a path, re-reads the file with a seek per element, and leaves members such as
  // num_deleted_ unset. The constructor sets up everything that depends on M and dims (validated
  // equal to the file's); what remains is the graph itself.
  const auto m = ReadAt<std::uint64_t>(payload, 72);
  const auto ef_construction = ReadAt<std::uint64_t>(payload, 88);
  const auto count = static_cast<std::size_t>(header.count);
  auto impl = std::make_unique<Impl>(expected_dims);
  try {
    impl->hnsw = std::make_unique<Hnsw>(&impl->space, std::max(count, kInitialCapacity), m,
                                        ef_construction, options.seed);
  } catch (const std::exception& e) {
    return bad(fmt::format("cannot load ann index: hnswlib: {}", e.what()));
  }
  Hnsw& h = *impl->hnsw;
  const std::size_t level0_bytes = count * h.size_data_per_element_;
  if (count > 0) std::memcpy(h.data_level0_memory_, payload + kHnswHeaderSize, level0_bytes);
  std::uint64_t pos = kHnswHeaderSize + level0_bytes;
  for (std::size_t i = 0; i < count; ++i) {
    const auto bytes = ReadAt<std::uint32_t>(payload, pos);
    pos += 4;
    if (bytes == 0) continue;
    // 8 spare bytes: with SSE, hnswlib's searchBaseLayer reads one neighbour id past the end of
    // an upper-level list to prefetch it (nmslib/hnswlib#107; addPoint allocates 1 spare byte).
    auto* links = static_cast<char*>(std::malloc(bytes + 8));
    if (links == nullptr) {
      // The destructor frees the lists of elements [0, i) that have levels.
      h.cur_element_count = i;
      return bad("cannot load ann index: out of memory");
    }
    std::memcpy(links, payload + pos, bytes);
    std::memset(links + bytes, 0, 8);
    h.linkLists_[i] = links;
    h.element_levels_[i] = static_cast<int>(bytes / h.size_links_per_element_);
    pos += bytes;
  }
  h.cur_element_count = count;
  h.label_lookup_.reserve(count);
  for (std::size_t i = 0; i < count; ++i) h.label_lookup_.emplace(h.getExternalLabel(i), i);
  if (h.label_lookup_.size() != count) {
    return bad(fmt::format("corrupt ann index payload: {} distinct labels for {} elements",
                           h.label_lookup_.size(), count));
  }
  h.maxlevel_ = ReadAt<std::int32_t>(payload, 48);
  h.enterpoint_node_ = ReadAt<std::uint32_t>(payload, 52);
  const int ef_search = std::max(options.ef_search, 1);
  h.setEf(ef_search);
  AnnIndex index(expected_dims, std::string(fingerprint), ef_search, std::move(impl));
  index.max_label_ = header.max_label;
  return index;
}

std::vector<std::pair<std::int64_t, float>> BruteForceSearch(const float* unit_rows,
                                                             const std::int64_t* labels,
                                                             std::size_t n, int dims,
                                                             const float* query, int k) {
  std::vector<std::pair<std::int64_t, float>> all;
  if (k <= 0 || n == 0 || dims <= 0) return all;
  const auto d = static_cast<std::size_t>(dims);
  std::vector<float> q(d);
  if (!Normalize(query, dims, q.data())) return all;
  all.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const float* row = unit_rows + i * d;
    // Four partial sums: independent chains run in parallel.
    float s[4] = {0, 0, 0, 0};
    std::size_t j = 0;
    for (; j + 4 <= d; j += 4) {
      for (int t = 0; t < 4; ++t) s[t] += row[j + t] * q[j + t];
    }
    for (; j < d; ++j) s[0] += row[j] * q[j];
    const float cosine = (s[0] + s[1]) + (s[2] + s[3]);
    if (!std::isnan(cosine)) all.emplace_back(labels[i], cosine);  // NaN would break the sort
  }
  const std::size_t keep = std::min(all.size(), static_cast<std::size_t>(k));
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(keep), all.end(),
                    Better);
  all.resize(keep);
  return all;
}

}  // namespace kplab
