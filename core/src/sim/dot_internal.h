// The float32 dot product in double that every cosine in kplab goes through, exposed so that a test can
// check the AVX2 path against the portable one bit for bit (tests/core/sim_test.cc includes this file by
// relative path). Not installed.
#pragma once

namespace kplab::sim_internal {

// Four accumulators, lane i summing the products of elements i, i + 4, i + 8, ... in order, then
// (s0 + s1) + (s2 + s3), the remainder (n % 4 elements) added to s0 first.
double DotPortable(const float* x, const float* y, int n);
// The same sums with the four accumulators in one AVX2 register: each float * float product is exact
// in double, so each lane adds the same values in the same order and the result is the same bits.
// Returns false (and leaves *out alone) when the CPU has no AVX2.
bool DotAvx2(const float* x, const float* y, int n, double* out);
// The one the CPU can run (AVX2 when it has it), chosen once.
double Dot(const float* x, const float* y, int n);

}  // namespace kplab::sim_internal
