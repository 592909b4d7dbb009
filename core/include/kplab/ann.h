// Approximate nearest-neighbour index for cosine search over phrase vectors: hnswlib's HNSW graph
// (Debian libhnswlib-dev 0.6.2) on unit vectors with the inner-product space, so cosine =
// 1 - hnswlib distance. Labels are int64 ids (the phrase cache uses SQLite rowids).
//
// File format (.kann, little-endian): a 136-byte kplab header, then hnswlib's own serialized index
// as the payload, as HierarchicalNSW::saveIndex writes it (its capacity field set to the count, so
// that equal indexes give equal files):
//   0   magic "KPLBHNSW"            8 bytes
//   8   format version              u32 (1)
//   12  dims                        u32
//   16  model fingerprint           64 ASCII hex digits (the embedder's SHA-256)
//   80  count                       u64 (vectors in the index)
//   88  max_label                   i64 (largest label; INT64_MIN when empty)
//   96  payload length              u64 (bytes after the header; the file ends there)
//   104 payload SHA-256             32 bytes (raw digest)
// hnswlib's files carry no magic, dims or checksum and its loader trusts them, so Load checks the
// header, the checksum and then the payload's structure (layout fields, neighbour ids, levels)
// before any of it is used: no file, hostile or corrupt, crashes the process.
//
// Threads: Search is const and may run on several threads at once; Add, AddBatch and Load
// must not run concurrently with anything else on the same index.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kplab/result.h"

namespace kplab {

class AnnIndex {
 public:
  struct Options {
    int M = 16;                 // graph degree (level 0 keeps 2*M links)
    int ef_construction = 200;  // candidate list size while inserting
    // Candidate list size while searching (hnswlib raises it to k per query). 800 keeps recall@10
    // >= 0.99 on 20k random 100-d unit vectors, the hard case (tests/core/ann_test.cc); phrase
    // vectors have structure and need less, so callers after speed may lower it.
    int ef_search = 800;
    std::uint64_t seed = 100;  // level generator seed (single-threaded builds are reproducible)
  };

  // An empty index. dims > 0; fingerprint is the model's lower-case hex SHA-256 (Save rejects
  // anything else). Throws std::invalid_argument for dims <= 0 or options out of range (M in
  // [2, 1024], ef_construction and ef_search >= 1): those are programming errors.
  // (Overloads rather than a default argument: a nested struct with member initializers cannot
  // be a default argument inside its own class.)
  static AnnIndex Create(int dims, std::string fingerprint);
  static AnnIndex Create(int dims, std::string fingerprint, Options options);

  AnnIndex(AnnIndex&&) noexcept;
  AnnIndex& operator=(AnnIndex&&) noexcept;
  ~AnnIndex();

  // Adds a copy of vec (dims floats), normalized to unit length. Errors: a zero or non-finite
  // vector, a label already in the index. Capacity grows as needed.
  Status Add(std::int64_t label, const float* vec);
  // Adds labels.size() rows (row-major, labels.size() x dims), row i with labels[i]. All rows are
  // checked before any is added, so a bad vector or label adds nothing. threads > 1 inserts in
  // parallel (the graph, though not its quality, then depends on thread timing).
  Status AddBatch(std::span<const std::int64_t> labels, const float* rows, int threads = 2);

  // The k nearest labels to query (normalized internally) as (label, cosine), cosine descending,
  // equal cosines by label. Fewer than k when the index holds fewer; empty for k <= 0 or a zero or
  // non-finite query.
  std::vector<std::pair<std::int64_t, float>> Search(const float* query, int k) const;

  std::size_t size() const;
  int dims() const { return dims_; }
  const std::string& fingerprint() const { return fingerprint_; }
  // Largest label added, INT64_MIN when empty: "rowid > max_label()" selects rows still to add.
  std::int64_t max_label() const { return max_label_; }
  int ef_search() const { return ef_search_; }
  void set_ef_search(int ef);  // clamped to >= 1

  // Writes the index atomically (a temp file beside path, then rename).
  Status Save(const std::string& path) const;
  // Reads an index written by Save. Errors name the path and what was expected: missing or
  // unreadable file, wrong magic, unsupported version, truncated file, dims or model fingerprint
  // other than expected, checksum mismatch, inconsistent payload. options.ef_search applies to the
  // loaded index (M and ef_construction come from the file; the seed drives later insertions).
  static Result<AnnIndex> Load(const std::string& path, int expected_dims,
                               const std::string& expected_fingerprint);
  static Result<AnnIndex> Load(const std::string& path, int expected_dims,
                               const std::string& expected_fingerprint, Options options);

 private:
  struct Impl;
  AnnIndex(int dims, std::string fingerprint, int ef_search, std::unique_ptr<Impl> impl);
  Status Reserve(std::size_t n);

  int dims_ = 0;
  std::string fingerprint_;
  int ef_search_ = 800;
  std::int64_t max_label_;
  std::unique_ptr<Impl> impl_;
};

// Exact k nearest neighbours by cosine, for recall measurement and small sets: unit_rows is n x
// dims (row-major, already unit length), labels[i] labels row i; query is normalized here. Same
// output order and edge cases as AnnIndex::Search.
std::vector<std::pair<std::int64_t, float>> BruteForceSearch(const float* unit_rows,
                                                             const std::int64_t* labels,
                                                             std::size_t n, int dims,
                                                             const float* query, int k);

}  // namespace kplab
