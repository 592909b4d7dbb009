// A list of strings in one buffer: the bytes of every item back to back and where each ends. An
// imported prediction line is some ten short pieces; as std::vector<std::string> that is a heap block
// per piece plus the vector's, and a million lines held 0.6 GB more than their text.
// Reads like a vector of std::string_view (size, [], at, iteration, ==); items are appended only.
//
// Threads: a StringList is a plain value: const use from several threads at once, appends by one thread with
// no reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kplab/index_iterator.h"

namespace kplab {

class StringList {
 public:
  using const_iterator = IndexIterator<StringList, std::string_view>;
  using iterator = const_iterator;
  using value_type = std::string_view;
  using size_type = std::size_t;

  StringList() = default;
  StringList(std::initializer_list<std::string_view> items) {
    for (auto s : items) push_back(s);
  }
  template <typename It>
  StringList(It first, It last) {
    assign(first, last);
  }

  std::size_t size() const { return ends_.size(); }
  bool empty() const { return ends_.empty(); }
  std::string_view operator[](std::size_t i) const {
    const std::size_t begin = i == 0 ? 0 : ends_[i - 1];
    return std::string_view(bytes_).substr(begin, ends_[i] - begin);
  }
  std::string_view at(std::size_t i) const {
    if (i >= size()) throw std::out_of_range("StringList::at");
    return (*this)[i];
  }
  std::string_view front() const { return (*this)[0]; }
  std::string_view back() const { return (*this)[size() - 1]; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size()}; }

  void push_back(std::string_view s) {
    bytes_.append(s);
    ends_.push_back(bytes_.size());
  }
  void emplace_back(std::string_view s) { push_back(s); }
  template <typename It>
  void assign(It first, It last) {
    clear();
    for (; first != last; ++first) push_back(std::string_view(*first));
  }
  void clear() {
    bytes_.clear();
    ends_.clear();
  }
  // Drops spare capacity (an importer's list is built by appending, then kept).
  void shrink_to_fit() {
    bytes_.shrink_to_fit();
    ends_.shrink_to_fit();
  }
  std::vector<std::string> ToVector() const { return {begin(), end()}; }

  friend bool operator==(const StringList& a, const StringList& b) { return a.ends_ == b.ends_ && a.bytes_ == b.bytes_; }
  friend bool operator==(const StringList& a, const std::vector<std::string>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < b.size(); ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  }
  friend std::ostream& operator<<(std::ostream& os, const StringList& l) {
    os << '{';
    for (std::size_t i = 0; i < l.size(); ++i) os << (i ? ", \"" : "\"") << l[i] << '"';
    return os << '}';
  }

 private:
  std::string bytes_;
  std::vector<std::size_t> ends_;
};

}  // namespace kplab
