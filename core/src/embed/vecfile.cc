#include "kplab/vecfile.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "kplab/file_gate.h"
#include "kplab/sha256.h"

namespace kplab {
namespace {

constexpr char kMagic[8] = {'K', 'P', 'L', 'A', 'B', 'V', 'E', 'C'};
constexpr std::uint32_t kVersion = 1;
constexpr std::size_t kHeaderSize = 256;

// The header as stored (256 bytes, little-endian; x86-64 and aarch64 only, checked below).
struct Header {
  char magic[8];
  std::uint32_t version;
  std::uint32_t kind;
  std::uint32_t dims;
  std::uint32_t reserved0;
  std::uint64_t count;
  std::uint64_t nslots;
  std::uint64_t offsets_off, strings_off, strings_len, slots_off, matrix_off, file_size;
  std::uint64_t checksum;  // FastChecksum of bytes [kHeaderSize, file_size)
  char sha256[64];         // SHA-256 of the same bytes, hex
  std::uint8_t pad[256 - 24 - 8 * 9 - 64];
};
static_assert(sizeof(Header) == kHeaderSize);
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, ".kvec files are little-endian");

std::size_t Align(std::size_t x, std::size_t a) { return (x + a - 1) / a * a; }

std::size_t SlotCount(std::size_t n) {
  std::size_t s = 16;
  while (s < 2 * n) s <<= 1;
  return s;
}

std::uint64_t Mix(std::uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}

}  // namespace

std::uint64_t Fnv1a64(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::uint64_t FastChecksum(const std::uint8_t* data, std::size_t n) {
  constexpr std::uint64_t kP = 0x9e3779b97f4a7c15ULL;
  std::uint64_t lane[4] = {1, 2, 3, 4};
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int j = 0; j < 4; ++j) {
      std::uint64_t w;
      std::memcpy(&w, data + i + 8 * j, 8);
      lane[j] = (lane[j] ^ w) * kP;
      lane[j] ^= lane[j] >> 29;
    }
  }
  std::uint64_t h = n;
  for (int j = 0; j < 4; ++j) h = Mix(h ^ lane[j]) * kP;
  for (; i < n; ++i) h = (h ^ data[i]) * kP;
  return Mix(h);
}

// ---- writer ---------------------------------------------------------------------------------------

VecFileWriter::VecFileWriter(int dims, VecKind kind) : dims_(dims), kind_(kind) {
  slots_.assign(SlotCount(0), 0);
}

std::int64_t VecFileWriter::Find(std::string_view s, std::uint64_t h) const {
  std::size_t mask = slots_.size() - 1;
  for (std::size_t i = h & mask;; i = (i + 1) & mask) {
    std::uint32_t v = slots_[i];
    if (v == 0) return -(static_cast<std::int64_t>(i) + 1);
    std::size_t r = v - 1;
    if (std::string_view(strings_).substr(offsets_[r], offsets_[r + 1] - offsets_[r]) == s) {
      return static_cast<std::int64_t>(r);
    }
  }
}

void VecFileWriter::Grow() {
  slots_.assign(slots_.size() * 2, 0);
  std::size_t mask = slots_.size() - 1;
  for (std::size_t r = 0; r < count_; ++r) {
    std::string_view s = std::string_view(strings_).substr(offsets_[r], offsets_[r + 1] - offsets_[r]);
    std::size_t i = Fnv1a64(s) & mask;
    while (slots_[i] != 0) i = (i + 1) & mask;
    slots_[i] = static_cast<std::uint32_t>(r + 1);
  }
}

Status VecFileWriter::Add(std::string_view text, const float* values, std::string_view where) {
  if (dims_ < 1 || dims_ > 65536) {
    return Error::Input(fmt::format("{}: {} dimensions (expected 1..65536)", where, dims_));
  }
  for (int j = 0; j < dims_; ++j) {
    if (!std::isfinite(values[j])) {
      return Error::Input(
          fmt::format("{}: value {} of the vector for '{}' is not finite (expected a finite "
                      "number)",
                      where, j + 1, text));
    }
  }
  if (2 * (count_ + 1) > slots_.size()) Grow();
  std::uint64_t h = Fnv1a64(text);
  std::int64_t f = Find(text, h);
  if (f >= 0) {
    ++duplicates_;
    return Status::Ok();
  }
  if (strings_.size() + text.size() > 0xffffffffULL || count_ >= 0xfffffffeULL) {
    return Error::Limit(fmt::format("{}: vocabulary too large for the .kvec format (4 GiB of strings)", where));
  }
  slots_[static_cast<std::size_t>(-f - 1)] = static_cast<std::uint32_t>(count_ + 1);
  strings_.append(text);
  offsets_.push_back(static_cast<std::uint32_t>(strings_.size()));
  matrix_.insert(matrix_.end(), values, values + dims_);
  ++count_;
  return Status::Ok();
}

Result<std::string> VecFileWriter::Write(const std::string& path) const {
  Header h{};
  std::memcpy(h.magic, kMagic, 8);
  h.version = kVersion;
  h.kind = static_cast<std::uint32_t>(kind_);
  h.dims = static_cast<std::uint32_t>(dims_);
  h.count = count_;
  std::size_t nslots = SlotCount(count_);
  h.nslots = nslots;
  h.offsets_off = kHeaderSize;
  h.strings_off = h.offsets_off + 4 * (count_ + 1);
  h.strings_len = strings_.size();
  h.slots_off = Align(h.strings_off + h.strings_len, 8);
  h.matrix_off = Align(h.slots_off + 4 * nslots, 64);
  h.file_size = h.matrix_off + 4 * matrix_.size();

  std::vector<std::uint8_t> buf(h.file_size, 0);
  std::memcpy(buf.data() + h.offsets_off, offsets_.data(), 4 * offsets_.size());
  std::memcpy(buf.data() + h.strings_off, strings_.data(), strings_.size());
  std::vector<std::uint32_t> slots(nslots, 0);
  std::size_t mask = nslots - 1;
  for (std::size_t r = 0; r < count_; ++r) {
    std::string_view s = std::string_view(strings_).substr(offsets_[r], offsets_[r + 1] - offsets_[r]);
    std::size_t i = Fnv1a64(s) & mask;
    while (slots[i] != 0) i = (i + 1) & mask;
    slots[i] = static_cast<std::uint32_t>(r + 1);
  }
  std::memcpy(buf.data() + h.slots_off, slots.data(), 4 * nslots);
  if (!matrix_.empty()) std::memcpy(buf.data() + h.matrix_off, matrix_.data(), 4 * matrix_.size());

  const std::uint8_t* payload = buf.data() + kHeaderSize;
  std::size_t payload_len = h.file_size - kHeaderSize;
  h.checksum = FastChecksum(payload, payload_len);
  Sha256 sha;
  sha.Update(std::string_view(reinterpret_cast<const char*>(payload), payload_len));
  std::string hex = sha.FinishHex();
  std::memcpy(h.sha256, hex.data(), 64);
  std::memcpy(buf.data(), &h, kHeaderSize);

  std::string tmp = path + ".tmp";
  if (Status st = GateFile(path, FileAccess::kWrite); !st.ok()) return st.error();
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    return Error::Input(fmt::format("{}: cannot write: {}", tmp, std::strerror(errno)));
  }
  bool ok = std::fwrite(buf.data(), 1, buf.size(), f) == buf.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return Error::Input(fmt::format("{}: cannot write: {}", path, why));
  }
  return hex;
}

Result<ImportStats> VecFileWriter::Finish(const std::string& path) const {
  auto sha = Write(path);
  if (!sha.ok()) return sha.error();
  ImportStats stats;
  stats.rows = count_;
  stats.duplicates = duplicates_;
  stats.dims = dims_;
  stats.weights_sha256 = *sha;
  return stats;
}

// ---- reader ---------------------------------------------------------------------------------------

VecFile::VecFile(VecFile&& o) noexcept { *this = std::move(o); }

VecFile& VecFile::operator=(VecFile&& o) noexcept {
  if (this != &o) {
    if (base_ != nullptr) munmap(const_cast<std::uint8_t*>(base_), map_size_);
    path_ = std::move(o.path_);
    kind_ = o.kind_;
    dims_ = o.dims_;
    count_ = o.count_;
    sha256_ = std::move(o.sha256_);
    base_ = o.base_;
    map_size_ = o.map_size_;
    offsets_ = o.offsets_;
    strings_ = o.strings_;
    slots_ = o.slots_;
    nslots_ = o.nslots_;
    matrix_ = o.matrix_;
    payload_off_ = o.payload_off_;
    payload_len_ = o.payload_len_;
    o.base_ = nullptr;
    o.map_size_ = 0;
  }
  return *this;
}

VecFile::~VecFile() {
  if (base_ != nullptr) munmap(const_cast<std::uint8_t*>(base_), map_size_);
}

Result<VecFile> VecFile::Open(const std::string& path) {
  if (Status st = GateFile(path, FileAccess::kRead); !st.ok()) return st.error();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error::Input(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    std::string why = std::strerror(errno);
    ::close(fd);
    return Error::Input(fmt::format("{}: cannot stat: {}", path, why));
  }
  std::size_t size = static_cast<std::size_t>(st.st_size);
  if (size < kHeaderSize) {
    ::close(fd);
    return Error::Input(
        fmt::format("{}: truncated vector file ({} bytes; expected a {}-byte .kvec header)", path, size, kHeaderSize));
  }
  void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return Error::Input(fmt::format("{}: cannot map: {}", path, std::strerror(errno)));
  VecFile v;
  v.path_ = path;
  v.base_ = static_cast<const std::uint8_t*>(p);
  v.map_size_ = size;
  Header h;
  std::memcpy(&h, v.base_, kHeaderSize);
  auto bad = [&](const std::string& what) { return Error::Input(fmt::format("{}: {}", path, what)); };
  if (std::memcmp(h.magic, kMagic, 8) != 0) {
    return bad("not a kplab vector file (expected the magic \"KPLABVEC\")");
  }
  if (h.version != kVersion) {
    return bad(fmt::format("unsupported .kvec format version {} (expected {})", h.version, kVersion));
  }
  if (h.kind != static_cast<std::uint32_t>(VecKind::kWords) &&
      h.kind != static_cast<std::uint32_t>(VecKind::kPhrases)) {
    return bad(fmt::format("unknown vector file kind {} (expected 1 or 2)", h.kind));
  }
  if (h.file_size != size) {
    return bad(fmt::format("truncated or padded vector file: {} bytes, header says {}", size,
                           h.file_size));
  }
  // Section bounds, checked without overflow before anything is read through them.
  const std::uint64_t kMaxCount = 1ULL << 32;
  bool layout_ok = h.dims >= 1 && h.dims <= 65536 && h.count < kMaxCount &&
                   h.nslots == SlotCount(h.count) && h.offsets_off == kHeaderSize &&
                   h.strings_off == h.offsets_off + 4 * (h.count + 1) &&
                   h.slots_off == Align(h.strings_off + h.strings_len, 8) &&
                   h.matrix_off == Align(h.slots_off + 4 * h.nslots, 64) &&
                   h.strings_len < size && h.matrix_off <= size &&
                   (size - h.matrix_off) == 4ULL * h.count * h.dims;
  if (!layout_ok) return bad("corrupt vector file header (section sizes do not add up)");
  v.payload_off_ = kHeaderSize;
  v.payload_len_ = size - kHeaderSize;
  if (FastChecksum(v.base_ + kHeaderSize, v.payload_len_) != h.checksum) {
    return bad("corrupt vector file (checksum mismatch; reinstall or re-import the model)");
  }
  v.kind_ = static_cast<VecKind>(h.kind);
  v.dims_ = static_cast<int>(h.dims);
  v.count_ = h.count;
  v.sha256_.assign(h.sha256, 64);
  v.offsets_ = reinterpret_cast<const std::uint32_t*>(v.base_ + h.offsets_off);
  v.strings_ = reinterpret_cast<const char*>(v.base_ + h.strings_off);
  v.slots_ = reinterpret_cast<const std::uint32_t*>(v.base_ + h.slots_off);
  v.nslots_ = h.nslots;
  v.matrix_ = reinterpret_cast<const float*>(v.base_ + h.matrix_off);
  for (std::size_t i = 0; i < h.count; ++i) {
    if (v.offsets_[i] > v.offsets_[i + 1]) return bad("corrupt vector file (string offsets)");
  }
  if (v.offsets_[0] != 0 || v.offsets_[h.count] != h.strings_len) {
    return bad("corrupt vector file (string offsets)");
  }
  return v;
}

std::string_view VecFile::str(std::size_t i) const {
  return std::string_view(strings_ + offsets_[i], offsets_[i + 1] - offsets_[i]);
}

std::int64_t VecFile::Find(std::string_view s) const {
  std::size_t mask = nslots_ - 1;
  for (std::size_t i = Fnv1a64(s) & mask, probes = 0; probes < nslots_; i = (i + 1) & mask, ++probes) {
    std::uint32_t r = slots_[i];
    if (r == 0) return -1;
    if (r - 1 < count_ && str(r - 1) == s) return static_cast<std::int64_t>(r - 1);
  }
  return -1;
}

Status VecFile::VerifySha256() const {
  Sha256 sha;
  sha.Update(std::string_view(reinterpret_cast<const char*>(base_ + payload_off_), payload_len_));
  std::string got = sha.FinishHex();
  if (got != sha256_) {
    return Error::Input(
        fmt::format("{}: contents do not match the file's SHA-256 (header {}, computed {})", path_, sha256_, got));
  }
  return Status::Ok();
}

}  // namespace kplab
