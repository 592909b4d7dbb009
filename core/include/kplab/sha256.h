// SHA-256 (FIPS 180-4): content hashes of datasets, predictions and plugins, model fingerprints, the
// checksums of cached indexes. A leaf of the core (util/): it depends on nothing else in kplab.
//
// Threads: one Sha256 per thread (Update changes it); the one-call helpers are safe from several threads at
// once.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kplab {

// Incremental SHA-256. Uses the x86 SHA extensions when the CPU has them.
class Sha256 {
 public:
  Sha256();
  void Update(std::string_view bytes);
  std::array<std::uint8_t, 32> Finish();  // the object must not be used afterwards
  std::string FinishHex();

 private:
  std::array<std::uint32_t, 8> state_;
  std::array<std::uint8_t, 64> buffer_;
  std::size_t buffered_ = 0;
  std::uint64_t total_ = 0;
};

// Hex SHA-256 of bytes (used for content hashes and plugin hashes).
std::string Sha256Hex(std::string_view bytes);

}  // namespace kplab
