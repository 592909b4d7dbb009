#include "kplab/suggest.h"

#include <algorithm>
#include <cstddef>

namespace kplab {

namespace {

char Fold(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// Optimal string alignment distance (Damerau-Levenshtein without repeated edits of one substring).
std::size_t Distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = Fold(a[i - 1]) == Fold(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && Fold(a[i - 1]) == Fold(b[j - 2]) && Fold(a[i - 2]) == Fold(b[j - 1])) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

std::size_t Allowed(std::size_t length) { return length <= 4 ? 1 : length <= 8 ? 2 : length / 4; }

}  // namespace

std::string NearestName(std::string_view name, const std::vector<std::string>& candidates) {
  // Names of any length: the table is quadratic, and what a user types is short; a long one is no typo.
  if (name.empty() || name.size() > 256) return "";
  std::string best;
  std::size_t best_d = static_cast<std::size_t>(-1);
  for (const std::string& c : candidates) {
    if (c == name) return "";
    if (c.size() > 256) continue;
    // In half edits: a truncated long name ('all.f1@5.macro' for 'all.f1@5.macro_hm') counts as half
    // an edit, before a one-letter change ('all.f1@5.micro').
    std::size_t d = 2 * Distance(name, c);
    if (name.size() >= 6 && c.size() > name.size() && c.compare(0, name.size(), name) == 0) {
      d = std::min(d, std::size_t{1});
    }
    if (d < best_d) best_d = d, best = c;
  }
  return best_d <= 2 * Allowed(name.size()) ? best : "";
}

std::string DidYouMean(std::string_view name, const std::vector<std::string>& candidates) {
  const std::string n = NearestName(name, candidates);
  return n.empty() ? "" : "did you mean '" + n + "'? ";
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace kplab
