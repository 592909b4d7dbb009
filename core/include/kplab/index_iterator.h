// A random-access iterator over a list whose items are computed when read (StringList's views into one
// buffer, KeyphraseList's addresses): it holds the list and a position and reads (*list)[i].
//
// Threads: an iterator reads its list like a const reference: as thread-safe as reading that list.
#pragma once

#include <compare>
#include <cstddef>
#include <iterator>

namespace kplab {

template <typename List, typename Value>
class IndexIterator {
 public:
  using iterator_category = std::random_access_iterator_tag;
  using value_type = Value;
  using difference_type = std::ptrdiff_t;
  using pointer = void;
  using reference = Value;

  IndexIterator() = default;
  IndexIterator(const List* list, std::size_t i) : list_(list), i_(i) {}
  Value operator*() const { return (*list_)[i_]; }
  Value operator[](difference_type n) const { return (*list_)[i_ + static_cast<std::size_t>(n)]; }
  IndexIterator& operator++() { ++i_; return *this; }
  IndexIterator operator++(int) { auto t = *this; ++i_; return t; }
  IndexIterator& operator--() { --i_; return *this; }
  IndexIterator operator--(int) { auto t = *this; --i_; return t; }
  IndexIterator& operator+=(difference_type n) { i_ += static_cast<std::size_t>(n); return *this; }
  IndexIterator& operator-=(difference_type n) { i_ -= static_cast<std::size_t>(n); return *this; }
  friend IndexIterator operator+(IndexIterator it, difference_type n) { return it += n; }
  friend IndexIterator operator+(difference_type n, IndexIterator it) { return it += n; }
  friend IndexIterator operator-(IndexIterator it, difference_type n) { return it -= n; }
  friend difference_type operator-(IndexIterator a, IndexIterator b) {
    return static_cast<difference_type>(a.i_) - static_cast<difference_type>(b.i_);
  }
  friend bool operator==(IndexIterator a, IndexIterator b) { return a.i_ == b.i_; }
  friend auto operator<=>(IndexIterator a, IndexIterator b) { return a.i_ <=> b.i_; }

 private:
  const List* list_ = nullptr;
  std::size_t i_ = 0;
};

}  // namespace kplab
