// kplab's binary vector file (.kvec): a vocabulary of strings (words for word-vector models, whole
// phrases for precomputed tables) and one float32 row per string, memory-mapped at run time so that
// loading GloVe's 341k x 100 matrix is a header check, not a parse.
//
// Layout (little-endian; docs/embeddings.md):
//   header (256 bytes): magic "KPLABVEC", format version, kind, dims, count, section offsets, the
//                       SHA-256 of the payload (vocabulary + matrix, the "weights hash" that model
//                       fingerprints are made from) and a fast 64-bit checksum of the payload
//   offsets  u32[count + 1]   byte offset of each string in the string section
//   strings  bytes            UTF-8, no terminators
//   slots    u32[nslots]      open-addressing hash table (FNV-1a 64, linear probing), row + 1 or 0
//   matrix   f32[count*dims]  64-byte aligned, row i = string i
// The checksum is verified on every Open (a corrupt byte anywhere is an error naming the file); the
// SHA-256 only by VerifySha256 (`kplab model info --verify`), since it costs ~70 ms for GloVe.
//
// Threads: a VecFile is a read-only mapping: its const members are safe from several threads at once; a
// VecFileWriter belongs to one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kplab/result.h"

namespace kplab {

enum class VecKind : std::uint32_t { kWords = 1, kPhrases = 2 };

struct ImportStats {
  std::size_t rows = 0;        // vectors written
  std::size_t duplicates = 0;  // repeated words skipped (first kept)
  int dims = 0;
  std::string weights_sha256;
};

// Collects rows in memory, then writes the file atomically (temp file + rename).
class VecFileWriter {
 public:
  VecFileWriter(int dims, VecKind kind);
  // Adds a row. Non-finite values are an error (message says where: `where` is e.g. "file:line").
  // A string already added is skipped and counted (word2vec/GloVe dumps sometimes repeat one).
  Status Add(std::string_view text, const float* values, std::string_view where);
  std::size_t size() const { return count_; }
  std::size_t duplicates() const { return duplicates_; }
  int dims() const { return dims_; }
  // Writes the file; returns the payload SHA-256 (hex).
  Result<std::string> Write(const std::string& path) const;
  // Writes the file and describes what was written (what importers report).
  Result<ImportStats> Finish(const std::string& path) const;

 private:
  int dims_;
  VecKind kind_;
  std::size_t count_ = 0, duplicates_ = 0;
  std::string strings_;
  std::vector<std::uint32_t> offsets_{0};
  std::vector<float> matrix_;
  std::vector<std::uint32_t> slots_;  // grows as rows are added (dedup while adding)
  void Grow();
  std::int64_t Find(std::string_view s, std::uint64_t h) const;
};

// A read-only, memory-mapped .kvec file. Movable; rows stay valid while the object lives.
class VecFile {
 public:
  static Result<VecFile> Open(const std::string& path);
  VecFile(VecFile&&) noexcept;
  VecFile& operator=(VecFile&&) noexcept;
  ~VecFile();

  const std::string& path() const { return path_; }
  VecKind kind() const { return kind_; }
  int dims() const { return dims_; }
  std::size_t size() const { return count_; }
  std::string_view str(std::size_t i) const;
  const float* row(std::size_t i) const { return matrix_ + i * static_cast<std::size_t>(dims_); }
  // Row index of s, or -1.
  std::int64_t Find(std::string_view s) const;
  const std::string& weights_sha256() const { return sha256_; }
  // Recomputes the payload SHA-256 and compares it with the header's.
  Status VerifySha256() const;

 private:
  VecFile() = default;
  std::string path_;
  VecKind kind_ = VecKind::kWords;
  int dims_ = 0;
  std::size_t count_ = 0;
  std::string sha256_;
  const std::uint8_t* base_ = nullptr;
  std::size_t map_size_ = 0;
  const std::uint32_t* offsets_ = nullptr;
  const char* strings_ = nullptr;
  const std::uint32_t* slots_ = nullptr;
  std::size_t nslots_ = 0;
  const float* matrix_ = nullptr;
  std::size_t payload_off_ = 0, payload_len_ = 0;
};

// FNV-1a 64 (the vocabulary hash of .kvec files).
std::uint64_t Fnv1a64(std::string_view s);
// Fast 64-bit checksum of a byte range (four independent multiply-xor lanes over 8-byte words).
std::uint64_t FastChecksum(const std::uint8_t* data, std::size_t n);

}  // namespace kplab
