// The digest of a run's slots (store_internal.h, SlotsDigest).
#include <sqlite3.h>

#include <bit>
#include <cstring>

#include "store/store_internal.h"

namespace kplab::store_internal {
namespace {

// Eight bytes, little-endian, whatever the host.
std::string_view Le64(uint64_t v, char (&buf)[8]) {
  for (int b = 0; b < 8; ++b) buf[b] = static_cast<char>(v >> (8 * b));
  return {buf, 8};
}

}  // namespace

// Each value is its type's letter, then 8 bytes (an integer, a real's bits) or a length of 8 bytes and the
// bytes (text, blob): self-delimiting, so that no two sequences of rows give the same bytes.
void SlotsDigest::Tagged(char type, std::string_view bytes) {
  sha_.Update(std::string_view(&type, 1));
  sha_.Update(bytes);
}

void SlotsDigest::Int(int64_t v) {
  char buf[8];
  Tagged('i', Le64(static_cast<uint64_t>(v), buf));
}

void SlotsDigest::Real(double v) {
  char buf[8];
  Tagged('r', Le64(std::bit_cast<uint64_t>(v), buf));
}

void SlotsDigest::Text(std::string_view s) {
  char buf[8];
  Tagged('t', Le64(s.size(), buf));
  sha_.Update(s);
}

void SlotsDigest::Blob(std::string_view b) {
  char buf[8];
  Tagged('b', Le64(b.size(), buf));
  sha_.Update(b);
}

void SlotsDigest::Null() { Tagged('n', {}); }

void SlotsDigest::Column(const SQLite::Column& c) {
  switch (c.getType()) {
    case SQLITE_INTEGER:
      Int(c.getInt64());
      break;
    case SQLITE_FLOAT:
      Real(c.getDouble());
      break;
    case SQLITE_TEXT:
      Text(std::string_view(c.getText(), static_cast<std::size_t>(c.getBytes())));
      break;
    case SQLITE_BLOB: {
      const void* p = c.getBlob();
      const auto n = static_cast<std::size_t>(c.getBytes());
      Blob(n == 0 ? std::string_view() : std::string_view(static_cast<const char*>(p), n));
      break;
    }
    default:
      Null();
  }
}

}  // namespace kplab::store_internal
