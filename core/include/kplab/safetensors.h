// Reader for the safetensors format (Hugging Face): an 8-byte little-endian header length N, N
// bytes of JSON {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__"?: {...}},
// then the tensor data, offsets relative to its start. Model2Vec stores its embedding table this
// way.
//
// Open() checks the whole layout as the reference reader does (header inside the file, well-formed
// JSON, known dtypes, byte size = product(shape) * dtype size, tensors tiling the data region with
// no gap or overlap), so a truncated or corrupt file is an Error naming the file, never a crash.
// The conversions check values too: a NaN or infinite weight is an error naming the tensor.
//
// Threads: a Safetensors is read-only after Open/Parse: its const members are safe from several threads at
// once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kplab/result.h"

namespace kplab {

struct SafetensorInfo {
  std::string name;
  std::string dtype;                // "F32", "F16", "BF16", "F64", "I8", "I32", "I64", ...
  std::vector<std::int64_t> shape;  // [] for a scalar
  std::size_t begin = 0;            // byte range in the data region
  std::size_t end = 0;

  std::int64_t elements() const;
};

class Safetensors {
 public:
  // Reads the whole file. path is used in messages.
  static Result<Safetensors> Open(const std::string& path);
  // Parses bytes already in memory (the file's content).
  static Result<Safetensors> Parse(std::string bytes, std::string path);

  const std::string& path() const { return path_; }
  const std::vector<SafetensorInfo>& tensors() const { return tensors_; }
  // nullptr when there is no such tensor.
  const SafetensorInfo* Find(std::string_view name) const;

  // Values as float32, from F32, F16, BF16, F64 or I8 (integers as their value, no scale). Errors
  // for another dtype or a NaN / infinite value (also one that overflows float32).
  Result<std::vector<float>> ToFloat(const SafetensorInfo& t) const;
  // Values as float64, from F64, F32, F16 or BF16; non-finite values are errors.
  Result<std::vector<double>> ToDouble(const SafetensorInfo& t) const;
  // Values from I8, I16, I32, I64, U8, U16, U32 (U64 values above INT64_MAX are errors).
  Result<std::vector<std::int64_t>> ToInt(const SafetensorInfo& t) const;

  // The whole file as read (for hashing).
  const std::string& bytes() const { return bytes_; }

 private:
  std::string path_;
  std::string bytes_;
  std::size_t data_start_ = 0;
  std::vector<SafetensorInfo> tensors_;
};

// IEEE 754 half (binary16) bits to float, including subnormals, infinities and NaN.
float HalfToFloat(std::uint16_t h);

}  // namespace kplab
