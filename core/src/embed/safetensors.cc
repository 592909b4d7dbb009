// safetensors reader: layout checks on open, checked conversions to float / double / int64.
#include "kplab/safetensors.h"
#include "kplab/io.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <simdjson.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <utility>

#include "util/json_internal.h"

namespace kplab {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host needs byte swaps");

using simdjson::dom::element;
using simdjson::dom::element_type;

constexpr std::string_view kLayout =
    "a safetensors file: 8-byte little-endian header length, JSON header, tensor data";

struct Failure {
  std::string message;
};

[[noreturn]] void Fail(const std::string& path, std::string_view what, std::string_view expected) {
  throw Failure{fmt::format("{}: {} (expected {})", path, what, expected)};
}

// Bytes per element, 0 for an unknown dtype.
std::size_t DtypeSize(std::string_view d) {
  if (d == "F64" || d == "I64" || d == "U64") return 8;
  if (d == "F32" || d == "I32" || d == "U32") return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
  if (d == "I8" || d == "U8" || d == "BOOL" || d == "F8_E5M2" || d == "F8_E4M3") return 1;
  return 0;
}

std::uint64_t Uint(const std::string& path, const element& e, std::string_view what) {
  std::uint64_t v = 0;
  if (e.type() == element_type::INT64) {
    const std::int64_t i = e.get_int64().value_unsafe();
    if (i < 0) Fail(path, fmt::format("{} is negative ({})", what, i), "a non-negative integer");
    v = static_cast<std::uint64_t>(i);
  } else if (e.type() == element_type::UINT64) {
    v = e.get_uint64().value_unsafe();
  } else {
    Fail(path, fmt::format("{} is not an integer", what), "a non-negative integer");
  }
  return v;
}

template <class T>
T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

float Bf16ToFloat(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

[[noreturn]] void FailNonFinite(const std::string& path, const SafetensorInfo& t, std::size_t i,
                                double v) {
  Fail(path, fmt::format("tensor \"{}\" element {} is {}", t.name, i, v),
       "finite values (no NaN or infinity)");
}

}  // namespace

float HalfToFloat(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu;
  std::uint32_t mant = h & 0x3FFu;
  std::uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);  // inf or NaN (payload kept)
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);  // rebias 15 -> 127
  } else if (mant == 0) {
    bits = sign;  // +-0
  } else {
    // Subnormal: value = mant * 2^-24. Shift the mantissa up to an implicit leading 1.
    int shift = 0;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      ++shift;
    }
    bits = sign | (static_cast<std::uint32_t>(113 - shift) << 23) | ((mant & 0x3FFu) << 13);
  }
  return std::bit_cast<float>(bits);
}

std::int64_t SafetensorInfo::elements() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

Result<Safetensors> Safetensors::Open(const std::string& path) {
  if (Status st = CheckRegularFile(path, kLayout); !st.ok()) return st.error();
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return Error::Input(fmt::format("{}: cannot open (expected {})", path, kLayout));
  const std::streamoff size = in.tellg();
  if (size < 0) return Error::Input(fmt::format("{}: read error", path));
  // The header says how long the data is: a file longer than that (a sparse terabyte, a padded
  // download) or whose header is not one is refused from its first bytes, without reading the rest.
  // A shorter (truncated) file is read, for Parse's detailed message.
  if (size >= 8) {
    char len[8];
    in.seekg(0);
    if (!in.read(len, 8)) return Error::Input(fmt::format("{}: read error", path));
    const std::uint64_t n = Load<std::uint64_t>(len);
    if (n > static_cast<std::uint64_t>(size) - 8) {
      return Error::Input(
          fmt::format("{}: header length {} runs past the end of the {}-byte file (truncated?) (expected {})", path, n,
                      size, kLayout));
    }
    constexpr std::uint64_t kMaxHeader = 100'000'000;  // the reference reader's HeaderTooLarge limit
    if (n > kMaxHeader) {
      return Error::Input(fmt::format("{}: header length {} is over the format's limit of {} bytes (expected {})", path,
                                      n, kMaxHeader, kLayout));
    }
    std::string head(8 + n, '\0');
    std::memcpy(head.data(), len, 8);
    if (!in.read(head.data() + 8, static_cast<std::streamsize>(n)))
      return Error::Input(fmt::format("{}: read error", path));
    simdjson::dom::parser parser;
    element root;
    if (parser.parse(head.data() + 8, n).get(root) != simdjson::SUCCESS || root.type() != element_type::OBJECT) {
      return Parse(std::move(head), path);  // the header's own error
    }
    std::uint64_t data_end = 0;
    const simdjson::dom::object fields = root.get_object().value_unsafe();  // a copy, not the temporary's
    for (auto field : fields) {
      simdjson::dom::array off;
      std::uint64_t end = 0;
      if (field.value.type() == element_type::OBJECT &&
          field.value.at_key("data_offsets").get_array().get(off) == simdjson::SUCCESS && off.size() == 2 &&
          off.at(1).get_uint64().get(end) == simdjson::SUCCESS) {
        data_end = std::max(data_end, end);
      }
    }
    if (data_end < static_cast<std::uint64_t>(size) - 8 - n) {
      return Error::Input(
          fmt::format("{}: the file is {} bytes but its header describes {} (padded, or not a safetensors "
                      "file?) (expected {})",
                      path, size, 8 + n + data_end, kLayout));
    }
  }
  std::string bytes(static_cast<std::size_t>(size), '\0');
  in.seekg(0);
  if (!in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()))) {
    return Error::Input(fmt::format("{}: read error", path));
  }
  return Parse(std::move(bytes), path);
}

Result<Safetensors> Safetensors::Parse(std::string bytes, std::string path) {
  try {
    Safetensors st;
    st.path_ = std::move(path);
    st.bytes_ = std::move(bytes);
    const std::string& p = st.path_;
    const std::string& b = st.bytes_;
    if (b.size() < 8) {
      Fail(p, fmt::format("file is {} bytes, too short for the header length", b.size()), kLayout);
    }
    const std::uint64_t n = Load<std::uint64_t>(b.data());
    if (n > b.size() - 8) {
      Fail(p,
           fmt::format("header length {} runs past the end of the {}-byte file (truncated?)", n,
                       b.size()),
           kLayout);
    }
    const std::string_view header(b.data() + 8, n);
    if (header.empty() || header.front() != '{') {
      Fail(p, "header does not start with '{'", "a JSON object header");
    }
    simdjson::dom::parser parser;
    element root;
    if (auto err = parser.parse(header.data(), header.size()).get(root); err != simdjson::SUCCESS) {
      Fail(p, "header: " + json_internal::JsonProblem(header, err), "a JSON object header");
    }
    if (root.type() != element_type::OBJECT) Fail(p, "header is not a JSON object", "a JSON object header");
    st.data_start_ = 8 + n;
    const std::size_t data_size = b.size() - st.data_start_;
    const simdjson::dom::object fields = root.get_object().value_unsafe();
    for (auto field : fields) {
      const std::string name(field.key);
      if (name == "__metadata__") continue;
      if (field.value.type() != element_type::OBJECT) {
        Fail(p, fmt::format("header entry \"{}\" is not an object", name),
             "{\"dtype\", \"shape\", \"data_offsets\"} per tensor");
      }
      const auto obj = field.value.get_object().value_unsafe();
      SafetensorInfo t;
      t.name = name;
      element e;
      std::string_view dtype;
      if (obj.at_key("dtype").get(e) != simdjson::SUCCESS || e.get_string().get(dtype)) {
        Fail(p, fmt::format("tensor \"{}\" has no dtype string", name), "a \"dtype\" string");
      }
      t.dtype = std::string(dtype);
      const std::size_t esize = DtypeSize(t.dtype);
      if (esize == 0) {
        Fail(p, fmt::format("tensor \"{}\" has unsupported dtype \"{}\"", name, t.dtype),
             "one of F64, F32, F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8, BOOL");
      }
      simdjson::dom::array arr;
      if (obj.at_key("shape").get(e) != simdjson::SUCCESS || e.get_array().get(arr)) {
        Fail(p, fmt::format("tensor \"{}\" has no shape array", name), "a \"shape\" array");
      }
      std::uint64_t count = 1;
      for (element d : arr) {
        const std::uint64_t v = Uint(p, d, fmt::format("a dimension of tensor \"{}\"", name));
        if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ||
            __builtin_mul_overflow(count, v, &count)) {
          Fail(p, fmt::format("tensor \"{}\" shape is too large", name),
               "a shape that fits the file");
        }
        t.shape.push_back(static_cast<std::int64_t>(v));
      }
      if (obj.at_key("data_offsets").get(e) != simdjson::SUCCESS || e.get_array().get(arr) ||
          arr.size() != 2) {
        Fail(p, fmt::format("tensor \"{}\" has no data_offsets pair", name),
             "\"data_offsets\": [begin, end]");
      }
      element b0, b1;
      if (arr.at(0).get(b0) || arr.at(1).get(b1)) {
        Fail(p, fmt::format("tensor \"{}\" has no data_offsets pair", name),
             "\"data_offsets\": [begin, end]");
      }
      const std::uint64_t begin = Uint(p, b0, "a data offset");
      const std::uint64_t end = Uint(p, b1, "a data offset");
      if (begin > end || end > data_size) {
        Fail(p,
             fmt::format("tensor \"{}\" data_offsets [{}, {}] are outside the {}-byte data region",
                         name, begin, end, data_size),
             "begin <= end <= data size");
      }
      std::uint64_t nbytes = 0;
      if (__builtin_mul_overflow(count, static_cast<std::uint64_t>(esize), &nbytes) ||
          nbytes != end - begin) {
        Fail(p,
             fmt::format("tensor \"{}\" {} {} needs {} bytes but data_offsets give {}", name,
                         t.dtype, fmt::join(t.shape, "x"), count * esize, end - begin),
             "data_offsets span = product(shape) * dtype size");
      }
      t.begin = begin;
      t.end = end;
      for (const auto& other : st.tensors_) {
        if (other.name == t.name) {
          Fail(p, fmt::format("tensor \"{}\" is listed twice", name), "unique tensor names");
        }
      }
      st.tensors_.push_back(std::move(t));
    }
    // The tensors must tile the data region exactly, as the reference reader requires.
    std::vector<const SafetensorInfo*> order;
    for (const auto& t : st.tensors_) order.push_back(&t);
    std::sort(order.begin(), order.end(), [](const SafetensorInfo* a, const SafetensorInfo* c) {
      return a->begin != c->begin ? a->begin < c->begin : a->end < c->end;
    });
    std::size_t pos = 0;
    for (const SafetensorInfo* t : order) {
      if (t->begin != pos) {
        Fail(p,
             fmt::format("tensor \"{}\" starts at data byte {}, but the previous tensor ends at {}",
                         t->name, t->begin, pos),
             "tensors packed back to back, without gaps or overlaps");
      }
      pos = t->end;
    }
    if (pos != data_size) {
      Fail(p, fmt::format("the tensors cover {} data bytes but the file has {}", pos, data_size),
           "the data region to end with the last tensor");
    }
    return st;
  } catch (const Failure& f) {
    return Error::Input(f.message);
  }
}

const SafetensorInfo* Safetensors::Find(std::string_view name) const {
  for (const auto& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

Result<std::vector<float>> Safetensors::ToFloat(const SafetensorInfo& t) const {
  try {
    const char* p = bytes_.data() + data_start_ + t.begin;
    const std::size_t n = static_cast<std::size_t>(t.elements());
    std::vector<float> out(n);
    if (t.dtype == "F32") {
      std::memcpy(out.data(), p, n * 4);
    } else if (t.dtype == "F16") {
      for (std::size_t i = 0; i < n; ++i) out[i] = HalfToFloat(Load<std::uint16_t>(p + 2 * i));
    } else if (t.dtype == "BF16") {
      for (std::size_t i = 0; i < n; ++i) out[i] = Bf16ToFloat(Load<std::uint16_t>(p + 2 * i));
    } else if (t.dtype == "F64") {
      for (std::size_t i = 0; i < n; ++i) {
        const double v = Load<double>(p + 8 * i);
        if (!std::isfinite(v)) FailNonFinite(path_, t, i, v);
        out[i] = static_cast<float>(v);
      }
    } else if (t.dtype == "I8") {
      for (std::size_t i = 0; i < n; ++i)
        out[i] = static_cast<float>(static_cast<std::int8_t>(p[i]));
    } else {
      Fail(path_, fmt::format("tensor \"{}\" has dtype {}", t.name, t.dtype),
           "F32, F16, BF16, F64 or I8 for a float tensor");
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (!std::isfinite(out[i])) FailNonFinite(path_, t, i, out[i]);
    }
    return out;
  } catch (const Failure& f) {
    return Error::Input(f.message);
  }
}

Result<std::vector<double>> Safetensors::ToDouble(const SafetensorInfo& t) const {
  if (t.dtype != "F64") {
    if (t.dtype == "I8") {
      return Error::Input(
          fmt::format("{}: tensor \"{}\" has dtype I8 (expected F64, F32, F16 or BF16)", path_, t.name));
    }
    auto f = ToFloat(t);
    if (!f.ok()) return f.error();
    return std::vector<double>(f->begin(), f->end());
  }
  const char* p = bytes_.data() + data_start_ + t.begin;
  const std::size_t n = static_cast<std::size_t>(t.elements());
  std::vector<double> out(n);
  std::memcpy(out.data(), p, n * 8);
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(out[i])) {
      return Error::Input(
          fmt::format("{}: tensor \"{}\" element {} is {} (expected finite values (no NaN "
                      "or infinity))",
                      path_, t.name, i, out[i]));
    }
  }
  return out;
}

Result<std::vector<std::int64_t>> Safetensors::ToInt(const SafetensorInfo& t) const {
  const char* p = bytes_.data() + data_start_ + t.begin;
  const std::size_t n = static_cast<std::size_t>(t.elements());
  std::vector<std::int64_t> out(n);
  const std::string& d = t.dtype;
  for (std::size_t i = 0; i < n; ++i) {
    if (d == "I64") {
      out[i] = Load<std::int64_t>(p + 8 * i);
    } else if (d == "I32") {
      out[i] = Load<std::int32_t>(p + 4 * i);
    } else if (d == "I16") {
      out[i] = Load<std::int16_t>(p + 2 * i);
    } else if (d == "I8") {
      out[i] = static_cast<std::int8_t>(p[i]);
    } else if (d == "U32") {
      out[i] = Load<std::uint32_t>(p + 4 * i);
    } else if (d == "U16") {
      out[i] = Load<std::uint16_t>(p + 2 * i);
    } else if (d == "U8") {
      out[i] = static_cast<std::uint8_t>(p[i]);
    } else if (d == "U64") {
      const std::uint64_t v = Load<std::uint64_t>(p + 8 * i);
      if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        return Error::Input(
            fmt::format("{}: tensor \"{}\" element {} is {} (expected a value below 2^63)", path_, t.name, i, v));
      }
      out[i] = static_cast<std::int64_t>(v);
    } else {
      return Error::Input(
          fmt::format("{}: tensor \"{}\" has dtype {} (expected an integer dtype: I64, I32, "
                      "I16, I8, U64, U32, U16 or U8)",
                      path_, t.name, d));
    }
  }
  return out;
}

}  // namespace kplab
