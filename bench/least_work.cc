// The least work that gives the P/R/F1 @5/@M part of `kplab eval --metrics exact` on a keyphrase-only
// Meng-2017 dataset (KP20k's gold lines, no source text) and its ';'-line predictions: the yardstick
// of the speed targets ("kplab within 2x of it in wall time, 3x in CPU time"). Every cycle it wastes
// flatters kplab, so it does nothing it does not need:
//   - each file is mapped once (mmap, MAP_POPULATE: no copy), over a zeroed tail so that a 16-byte
//     load at any byte of the file stays inside the mapping;
//   - a token is found with one 16-byte compare at its first byte (the separators' bit mask: Python's
//     str.split() whitespace and ';'), read as two 64-bit words, and ASCII-lower-cased in registers
//     (SWAR); tokens over 16 bytes (0.2% of KP20k's) are lower-cased into one reused buffer;
//   - a stem memo keyed by the token's bytes (open addressing, the key inline in the slot) gives the
//     token's stem id; the stems are interned once per distinct token (nltk's Porter rules, kplab's
//     PorterStemmer: the one part of kplab used here);
//   - a keyphrase is its stem-id sequence and a 64-bit hash of it, in a per-line flat array (no
//     allocation per piece or token: every buffer is reused). Matching needs only equality of keys
//     within one document, so keys are compared by hash and then by their ids, not interned in a
//     corpus-wide table (what that costs is the --intern run below);
//   - the kplab profile's filters: empty pieces dropped, a prediction that is "<peos>" or has a token
//     whose stem is "<unk>" dropped (references keep theirs, as kplab's do), the first of equal keys
//     kept; then the hits and the 12 sums, in the order kplab's exact kernel adds them.
// One thread. Input must be ASCII (all of the shared data is); a non-ASCII byte is refused with its
// file and line, as are line counts that differ (kplab refuses both too, or handles Unicode).
//
// Usage: least_work [--intern] KEYWORDS_FILE PREDICTIONS_FILE
// --intern also gives every kept keyphrase a corpus-wide id (KeyTable below), the one thing kplab's
// design adds to this job that the job itself does not need: kplab interns every phrase corpus-wide,
// since its other metrics, the run store and the embedding cache name phrases across documents.
// bench/least_work_ratio.py times both; kplab's ratio to the interning run separates that structural
// cost from the rest (bench/README.md, "The least-work yardstick").
// Prints the 12 aggregates as "name value" lines, each value the shortest text that reads back as the
// same double (kplab's CSV prints the same text); its own time on stderr.
#include <emmintrin.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kplab/stem.h"

namespace {

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "least_work: %s\n", message.c_str());
  std::exit(1);
}

// The file's bytes, mapped, followed by at least 16 zero bytes (a separate anonymous mapping under
// the file's: a page past a file's end would fault).
struct File {
  const char* name = nullptr;
  const char* data = nullptr;
  std::size_t size = 0;
};

File Map(const char* path) {
  File f;
  f.name = path;
  // O_NONBLOCK: opening a FIFO with no writer would wait forever; opened this way it is refused below.
  const int fd = ::open(path, O_RDONLY | O_NONBLOCK);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) Die(std::string(path) + ": cannot open");
  if (!S_ISREG(st.st_mode)) Die(std::string(path) + ": not a regular file");
  f.size = static_cast<std::size_t>(st.st_size);
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t mapped = (f.size + page - 1) / page * page;
  void* region = ::mmap(nullptr, mapped + page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) Die(std::string(path) + ": out of address space");
  if (f.size > 0 && ::mmap(region, f.size, PROT_READ, MAP_PRIVATE | MAP_FIXED | MAP_POPULATE, fd, 0) == MAP_FAILED) {
    Die(std::string(path) + ": cannot map");
  }
  ::close(fd);
  f.data = static_cast<const char*>(region);
  return f;
}

std::uint64_t Mix(std::uint64_t h) {
  h ^= h >> 32;
  h *= 0xD6E8FEB86659FD93ull;
  h ^= h >> 32;
  return h;
}

// A token's stem id with two flags of the token itself in its top bits: the token is "<peos>" (the
// generator's end marker, dropped as a whole piece), its stem is "<unk>" (the piece is dropped).
constexpr std::uint32_t kPeosBit = 1u << 31, kUnkBit = 1u << 30, kIdMask = kUnkBit - 1;

// bytes of zeroed memory, 2 MiB-aligned and advised as huge pages (anonymous memory reads as zero; a
// page is only backed once touched, so a generous reservation costs nothing until used).
// reserve_only: MAP_NORESERVE, for a reservation much larger than what is used (--intern's store).
void* HugeZeroed(std::size_t bytes, bool reserve_only = false) {
  constexpr std::size_t kHuge = std::size_t{2} << 20;
  char* p = static_cast<char*>(::mmap(nullptr, bytes + kHuge, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS | (reserve_only ? MAP_NORESERVE : 0), -1, 0));
  if (p == MAP_FAILED) Die("out of memory");
  char* aligned = p + (kHuge - reinterpret_cast<std::uintptr_t>(p) % kHuge) % kHuge;
  ::madvise(aligned, bytes, MADV_HUGEPAGE);  // advice only
  return aligned;
}

// Short strings (1..16 bytes, as 16 zero-padded bytes) -> a 32-bit value, open addressing with the
// key in the slot: a hit reads one slot. Multiplicative hashing (the top bits of a product depend on
// every bit of the key). 64K slots of 32 bytes, one 2 MiB page (transparent huge pages where the kernel
// gives them: one page fault rather than 512); KP20k has 22,500 distinct tokens. Grows at 70% full.
class ShortTable {
 public:
  ShortTable() { Resize(1 << 16); }
  // The value of the key, or null (then Insert(value) fills the slot the probe ended on).
  const std::uint32_t* Find(__m128i key, unsigned len) {
    std::uint64_t w[2];
    _mm_storeu_si128(reinterpret_cast<__m128i*>(w), key);
    for (std::size_t i = ((w[0] * 0x9E3779B97F4A7C15ull) ^ (w[1] + len) * 0xC2B2AE3D27D4EB4Full) >> shift_;;
         i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.len == len && s.w[0] == w[0] && s.w[1] == w[1]) return &s.value;
      if (s.len == 0) {
        last_ = &s;
        return nullptr;
      }
    }
  }
  void Insert(__m128i key, unsigned len, std::uint32_t value) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(last_->w), key);
    last_->len = len;
    last_->value = value;
    if (++used_ * 10 > (mask_ + 1) * 7) Resize((mask_ + 1) * 2);
  }

 private:
  struct Slot {
    std::uint64_t w[2];
    std::uint32_t len, value;  // len 0: empty
    std::uint64_t unused;      // 32 bytes: a slot never straddles two cache lines
  };
  static_assert(sizeof(Slot) == 32);
  static Slot* Allocate(std::size_t n) { return static_cast<Slot*>(HugeZeroed(n * sizeof(Slot))); }
  void Resize(std::size_t n) {
    Slot* old = slots_;
    const std::size_t old_n = slots_ ? mask_ + 1 : 0;
    slots_ = Allocate(n);
    mask_ = n - 1;
    shift_ = 64 - std::countr_zero(n);
    used_ = 0;
    for (std::size_t k = 0; k < old_n; ++k) {
      if (old[k].len == 0) continue;
      Find(_mm_loadu_si128(reinterpret_cast<const __m128i*>(old[k].w)), old[k].len);
      *last_ = old[k];
      ++used_;
    }
    // The old slots are left mapped: the process ends soon and gives them back (as kplab's).
  }
  Slot* slots_ = nullptr;
  std::size_t mask_ = 0, used_ = 0;
  int shift_ = 0;
  Slot* last_ = nullptr;
};

// Keys -> corpus-wide ids (--intern): open addressing over 16-byte slots (the key's hash, the offset
// of its ids in one store, their count; count 0: empty), a probe comparing the ids only on an equal
// hash. An id is the key's offset in the store. The slots start at 256K (4 MiB; KP20k has 104k
// distinct keys) and double at 70% full; the store is reserved at once for every id the input could
// hold (max_ids, a bound from the files' sizes), so it never moves. Both are huge pages where the
// kernel gives them, as the token table's: the same allocation kplab makes (mimalloc's 2 MiB pages).
// A line's keys are interned together once it is read, their slots requested first (LineReader::
// InternLine): at a million documents that took the run from 3.3x to 1.9x the plain mode's time
// (bench/least_work_ratio.py, 3 runs each). Sizing the slots once from
// the files' piece count instead of growing them was slower on KP20k (a count pass, twice the
// slots) and no faster at a million (measured with perf stat -r 20 and -r 2).
class KeyTable {
 public:
  // max_ids: at most this many ids in all keys (an id is their offset: 32 bits).
  explicit KeyTable(std::size_t max_ids) : store_(Store(max_ids)) { Resize(1 << 18); }
  std::size_t size() const { return used_; }  // distinct keys
  void Prefetch(std::uint64_t hash) const { __builtin_prefetch(&slots_[hash >> shift_]); }
  std::uint32_t Intern(std::uint64_t hash, const std::uint32_t* ids, std::uint32_t n) {
    std::size_t i = hash >> shift_;
    for (;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.n == 0) break;
      if (s.hash == hash && s.n == n && std::memcmp(store_ + s.begin, ids, n * sizeof(std::uint32_t)) == 0) {
        return s.begin;
      }
    }
    const std::uint32_t begin = stored_;
    std::memcpy(store_ + begin, ids, n * sizeof(std::uint32_t));
    stored_ += n;
    slots_[i] = {hash, begin, n};
    if (++used_ * 10 > (mask_ + 1) * 7) Resize((mask_ + 1) * 2);
    return begin;
  }

 private:
  struct Slot {
    std::uint64_t hash;
    std::uint32_t begin, n;
  };
  static std::uint32_t* Store(std::size_t max_ids) {
    if (max_ids > std::numeric_limits<std::uint32_t>::max()) Die("--intern: the files are too large for 32-bit ids");
    return static_cast<std::uint32_t*>(HugeZeroed(max_ids * sizeof(std::uint32_t), /*reserve_only=*/true));
  }
  void Resize(std::size_t n) {
    Slot* old = slots_;
    const std::size_t old_n = slots_ ? mask_ + 1 : 0;
    slots_ = static_cast<Slot*>(HugeZeroed(n * sizeof(Slot)));
    mask_ = n - 1;
    shift_ = 64 - std::countr_zero(n);
    for (std::size_t k = 0; k < old_n; ++k) {
      if (old[k].n == 0) continue;
      std::size_t i = old[k].hash >> shift_;
      while (slots_[i].n != 0) i = (i + 1) & mask_;
      slots_[i] = old[k];
    }
    // The old slots are left mapped, as the token table's.
  }
  Slot* slots_ = nullptr;
  std::uint32_t* store_;
  std::uint32_t stored_ = 0;
  std::size_t mask_ = 0, used_ = 0;
  int shift_ = 0;
};

// Tokens -> stem ids with the token's flags (kPeosBit, kUnkBit). A stem id names a distinct stem
// string; tokens with the same stem share it.
class Stems {
 public:
  std::uint32_t Short(__m128i token, unsigned len) {
    if (const std::uint32_t* v = tokens_.Find(token, len)) return *v;
    char bytes[16];
    _mm_storeu_si128(reinterpret_cast<__m128i*>(bytes), token);
    const std::string_view t(bytes, len);
    const std::uint32_t id = Intern(stemmer_.Stem(t)) | (t == "<peos>" ? kPeosBit : 0);
    tokens_.Insert(token, len, id);
    return id;
  }
  std::uint32_t Long(std::string_view token) {  // a lower-cased token of more than 16 bytes
    if (auto it = long_tokens_.find(token); it != long_tokens_.end()) return it->second;
    const std::uint32_t id = Intern(stemmer_.Stem(token));
    long_tokens_.emplace(std::string(token), id);
    return id;
  }

 private:
  std::uint32_t Intern(const std::string& stem) {
    const auto [it, added] = stem_ids_.emplace(stem, static_cast<std::uint32_t>(stem_ids_.size()));
    return it->second | (stem == "<unk>" ? kUnkBit : 0);
  }
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  kplab::PorterStemmer stemmer_{kplab::PorterMode::kNltk};
  ShortTable tokens_;
  // Misses of the token table only: once per distinct token.
  std::unordered_map<std::string, std::uint32_t, Hash, std::equal_to<>> long_tokens_, stem_ids_;
};

// One line's keyphrases after the profile's filters and dedup: each a hash and a run of stem ids. The
// arrays are sized for the line before it is read (a line of n bytes has at most n + 1 pieces and
// tokens), so appending is a store, not a capacity check.
struct Keys {
  struct Key {
    std::uint64_t hash;
    std::uint32_t begin, n;
  };
  explicit Keys(bool interned) : interned(interned) {}
  const bool interned;  // --intern: corpus_ids[k] is key k's corpus-wide id
  std::vector<Key> keys;
  std::vector<std::uint32_t> ids;
  std::vector<std::uint32_t> corpus_ids;
  std::uint32_t n_keys = 0, n_ids = 0;
  std::size_t size() const { return n_keys; }
  void Clear(std::size_t line_bytes) {
    if (ids.size() < line_bytes + 1) {
      ids.resize(2 * line_bytes + 1);
      keys.resize(2 * line_bytes + 1);
      if (interned) corpus_ids.resize(2 * line_bytes + 1);
    }
    n_keys = n_ids = 0;
  }
  bool Same(const Keys& other, std::size_t i, std::size_t j) const {
    const Key& a = keys[i];
    const Key& b = other.keys[j];
    return a.hash == b.hash && a.n == b.n &&
           std::memcmp(&ids[a.begin], &other.ids[b.begin], a.n * sizeof(std::uint32_t)) == 0;
  }
};

// Python's str.split() whitespace among ASCII bytes, ';' (pieces) and '\n' (lines) end tokens.
unsigned Separators(__m128i v) {
  const __m128i tab_cr = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(8)), _mm_cmplt_epi8(v, _mm_set1_epi8(14)));
  const __m128i fs_sp = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(0x1B)), _mm_cmplt_epi8(v, _mm_set1_epi8(0x21)));
  const __m128i sep = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(';')), _mm_or_si128(tab_cr, fs_sp));
  return static_cast<unsigned>(_mm_movemask_epi8(sep));  // \t \n \v \f \r, \x1c-\x1f, ' ', ';'
}

// The first len bytes of v, ASCII upper case lowered, the rest zero.
__m128i LowerPrefix(__m128i v, unsigned len) {
  alignas(16) static constexpr std::uint8_t kKeep[32] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                                                         0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
  v = _mm_and_si128(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(kKeep + 16 - len)));
  const __m128i upper = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('A' - 1)), _mm_cmplt_epi8(v, _mm_set1_epi8('Z' + 1)));
  return _mm_or_si128(v, _mm_and_si128(upper, _mm_set1_epi8(0x20)));
}

enum Class : std::uint8_t { kToken, kBlank, kPieceEnd, kLineEnd, kNonAscii };
struct ClassTable {
  Class c[256];
  constexpr ClassTable() : c() {
    for (int i = 0; i < 256; ++i) {
      const bool blank = (i >= 9 && i <= 13) || (i >= 0x1C && i <= 0x20);
      c[i] = i >= 0x80 ? kNonAscii : i == '\n' ? kLineEnd : i == ';' ? kPieceEnd : blank ? kBlank : kToken;
    }
  }
};
constexpr ClassTable kClass;

// Reads f a line at a time (predictions: the "<peos>" and "<unk>" filters apply).
class LineReader {
 public:
  LineReader(const File& f, bool predictions, KeyTable* keys)
      : f_(f), predictions_(predictions), p_(f.data), keys_(keys) {}
  // The next line's keyphrases into out; false at the end of the file.
  bool Next(Stems& stems, Keys& out);
  // --intern: the line's keys' corpus-wide ids, their slots requested first (the misses overlap).
  void InternLine(Keys& out) const;

 private:
  std::uint32_t LongToken(Stems& stems);
  void EndPiece(Keys& out);
  [[noreturn]] void NonAscii(const char* at) const;
  const File& f_;
  bool predictions_;
  const char* p_;
  KeyTable* keys_;    // --intern: every kept key's corpus-wide id; else null
  std::string long_;  // a long token, lower-cased
  // The piece being read: its first id in out.ids, the hash of its stem ids, its first token's flags
  // and the union of every token's.
  std::uint32_t begin_ = 0, first_ = 0, flags_ = 0;
  std::uint64_t hash_ = 0;
};

void LineReader::NonAscii(const char* at) const {
  std::size_t line = 1;
  for (const char* q = f_.data; q < at; ++q) line += *q == '\n';
  Die(std::string(f_.name) + ":" + std::to_string(line) + ": a non-ASCII byte (this program reads ASCII only)");
}

// The piece's keyphrase, unless the profile drops it or it repeats an earlier one of the line.
void LineReader::EndPiece(Keys& out) {
  const std::uint32_t n = out.n_ids - begin_;
  const bool drop = n == 0 || (predictions_ && ((flags_ & kUnkBit) || (n == 1 && (first_ & kPeosBit))));
  bool keep = !drop;
  if (keep) {
    const std::uint64_t h = Mix(hash_ + n);
    const std::uint32_t* ids = out.ids.data();
    for (std::uint32_t k = 0; k < out.n_keys; ++k) {
      const Keys::Key& key = out.keys[k];
      if (key.hash == h && key.n == n && std::memcmp(ids + key.begin, ids + begin_, n * sizeof(std::uint32_t)) == 0) {
        keep = false;  // a repeat: the first one stays
        break;
      }
    }
    if (keep) out.keys[out.n_keys++] = {h, begin_, n};
  }
  if (!keep) out.n_ids = begin_;
  begin_ = out.n_ids;
  hash_ = 0;
  flags_ = 0;
}

void LineReader::InternLine(Keys& out) const {
  if (!keys_) return;
  for (std::uint32_t k = 0; k < out.n_keys; ++k) keys_->Prefetch(out.keys[k].hash);
  for (std::uint32_t k = 0; k < out.n_keys; ++k) {
    const Keys::Key& key = out.keys[k];
    out.corpus_ids[k] = keys_->Intern(key.hash, out.ids.data() + key.begin, key.n);
  }
}

std::uint32_t LineReader::LongToken(Stems& stems) {
  const char* const end = f_.data + f_.size;
  long_.clear();
  for (; p_ < end && kClass.c[static_cast<unsigned char>(*p_)] == kToken; ++p_) {
    const char c = *p_;
    long_.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c);
  }
  if (p_ < end && kClass.c[static_cast<unsigned char>(*p_)] == kNonAscii) NonAscii(p_);
  return stems.Long(long_);
}

bool LineReader::Next(Stems& stems, Keys& out) {
  const char* const end = f_.data + f_.size;
  if (p_ >= end) return false;
  const void* nl = std::memchr(p_, '\n', static_cast<std::size_t>(end - p_));
  out.Clear(static_cast<std::size_t>((nl ? static_cast<const char*>(nl) : end) - p_));
  begin_ = 0;
  hash_ = 0;
  flags_ = 0;
  while (true) {
    if (p_ >= end) {
      EndPiece(out);
      InternLine(out);
      return true;
    }
    switch (kClass.c[static_cast<unsigned char>(*p_)]) {
      case kBlank: ++p_; continue;
      case kPieceEnd: EndPiece(out); ++p_; continue;
      case kLineEnd:
        EndPiece(out);
        InternLine(out);
        ++p_;
        return true;
      case kNonAscii: NonAscii(p_);
      case kToken: break;
    }
    // Tokens from p_, each found with one compare of the 16 bytes at its start (bytes past the
    // file's end count as separators); a single space between two tokens is stepped over here.
    while (true) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p_));
      unsigned sep = Separators(v) | 0x10000;
      if (end - p_ < 16) sep |= ~0u << (end - p_);
      const unsigned len = static_cast<unsigned>(std::countr_zero(sep));
      std::uint32_t value;
      if (len < 16) {
        if ((static_cast<unsigned>(_mm_movemask_epi8(v)) & ((1u << len) - 1)) != 0) NonAscii(p_);
        value = stems.Short(LowerPrefix(v, len), len);
        p_ += len;
      } else {
        value = LongToken(stems);
      }
      if (out.n_ids == begin_) first_ = value;
      flags_ |= value;
      value &= kIdMask;
      out.ids[out.n_ids++] = value;
      hash_ = (hash_ ^ value) * 0x9E3779B97F4A7C15ull;
      if (p_ + 1 < end && p_[0] == ' ' && kClass.c[static_cast<unsigned char>(p_[1])] == kToken) {
        ++p_;
        continue;
      }
      break;
    }
  }
}

// The 12 sums at 5 and M, added per document in the order and with the operations of kplab's exact
// kernel (kernels.cc) and its aggregation (plugins/exact.lua): a micro value is a ratio of sums, a macro
// one a mean of per-document values, f1 the harmonic mean.
struct Sums {
  double hits[2] = {0, 0}, pden[2] = {0, 0}, rden = 0, p[2] = {0, 0}, r[2] = {0, 0}, f1[2] = {0, 0};
  std::size_t docs = 0;

  static double F1(double p, double r) { return p + r > 0 ? 2 * p * r / (p + r) : 0; }

  // With --intern, a prediction matches a reference when their corpus-wide ids are equal (what a
  // design built on such ids compares); otherwise by hash, then ids.
  void Add(const Keys& refs, const Keys& preds) {
    if (preds.interned) {
      Add(refs, preds, [&](std::size_t i, std::size_t j) { return preds.corpus_ids[i] == refs.corpus_ids[j]; });
    } else {
      Add(refs, preds, [&](std::size_t i, std::size_t j) { return preds.Same(refs, i, j); });
    }
  }
  template <typename Equal>
  void Add(const Keys& refs, const Keys& preds, Equal same) {
    const std::size_t n = preds.size(), n_refs = refs.size();
    std::size_t h5 = 0, hm = 0;
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n_refs; ++j) {
        if (same(i, j)) {
          hm += 1;
          h5 += i < 5;
          break;
        }
      }
    }
    const std::size_t h[2] = {h5, hm}, k[2] = {5, n};
    for (int m = 0; m < 2; ++m) {
      const double den = n > 0 ? static_cast<double>(k[m]) : 0;
      const double P = den > 0 ? static_cast<double>(h[m]) / den : 0;
      const double R = n_refs > 0 ? static_cast<double>(h[m]) / static_cast<double>(n_refs) : 0;
      hits[m] += static_cast<double>(h[m]);
      pden[m] += den;
      p[m] += P;
      r[m] += R;
      f1[m] += F1(P, R);
    }
    rden += static_cast<double>(n_refs);
    ++docs;
  }

  void Print() const {
    const char* at[2] = {"5", "M"};
    auto line = [](std::string name, double v) {
      char buf[64];
      const auto res = std::to_chars(buf, buf + sizeof buf, v);
      std::printf("%s %.*s\n", name.c_str(), static_cast<int>(res.ptr - buf), buf);
    };
    const double nd = static_cast<double>(docs);
    for (int m = 0; m < 2; ++m) {
      const std::string s = at[m];
      const double up = pden[m] > 0 ? hits[m] / pden[m] : 0, ur = rden > 0 ? hits[m] / rden : 0;
      line("all.p@" + s + ".micro", up);
      line("all.r@" + s + ".micro", ur);
      line("all.f1@" + s + ".micro", F1(up, ur));
      line("all.p@" + s + ".macro", p[m] / nd);
      line("all.r@" + s + ".macro", r[m] / nd);
      line("all.f1@" + s + ".macro_doc", f1[m] / nd);
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  // An argument that starts with "--" is an option: --intern, or a usage error (never a file name).
  const bool intern = argc > 1 && std::strcmp(argv[1], "--intern") == 0;
  argc -= intern;
  argv += intern;
  if (argc != 3 || std::strncmp(argv[1], "--", 2) == 0 || std::strncmp(argv[2], "--", 2) == 0) {
    std::fprintf(stderr, "usage: least_work [--intern] KEYWORDS_FILE PREDICTIONS_FILE\n");
    return 2;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const File gold = Map(argv[1]), pred = Map(argv[2]);
  if (gold.size == 0) Die(std::string(argv[1]) + ": no documents");
  std::optional<KeyTable> key_table;
  // A key has at most one id per token, and a token takes at least two bytes with its separator.
  if (intern) key_table.emplace(gold.size / 2 + pred.size / 2 + 2);
  Stems stems;
  Keys refs(intern), preds(intern);
  Sums sums;
  KeyTable* const table = key_table ? &*key_table : nullptr;
  LineReader gold_lines(gold, false, table), pred_lines(pred, true, table);
  while (true) {
    const bool g = gold_lines.Next(stems, refs), p = pred_lines.Next(stems, preds);
    if (g != p) {
      Die(std::string(argv[2]) + ": " + (g ? "fewer" : "more") + " lines than " + argv[1] + " has (" +
          std::to_string(sums.docs) + " read; expected one prediction line per document)");
    }
    if (!g) break;
    sums.Add(refs, preds);
  }
  sums.Print();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "least_work: %zu documents in %.4f s\n", sums.docs, secs);
  if (key_table) std::fprintf(stderr, "least_work: %zu distinct keys interned\n", key_table->size());
  std::fflush(stdout);
  std::_Exit(0);  // as kplab eval, the process leaves its memory to the operating system
}
