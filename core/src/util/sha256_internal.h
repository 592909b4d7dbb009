// The SHA-256 block functions, exposed so that tests can check the portable and the SHA-NI path
// against each other (tests/core/io_test.cc includes this file by relative path). Not installed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kplab::sha256_internal {

void Sha256BlocksPortable(std::uint32_t state[8], const std::uint8_t* data, std::size_t blocks);
// Returns false (and does nothing) when the CPU has no SHA extensions.
bool Sha256BlocksShaNi(std::uint32_t state[8], const std::uint8_t* data, std::size_t blocks);

}  // namespace kplab::sha256_internal
