// The least work that gives the P/R/F1 @5/@M part of `kplab eval --metrics exact` on a keyphrase-only
// dataset (KP20k's 20,000 gold lines, no source text): read the two files, keep the kplab profile's
// rules (lower-case, split on whitespace, nltk Porter stems through a memo table, drop the <peos> piece,
// empty phrases and phrases with an <unk> token, deduplicate by stem key), count hits, sum. Single
// thread, no corpus, no store, no plugins: the yardstick of issue 16 ("kplab within 2x of it").
// Usage: least_work KEYWORDS_FILE PREDICTIONS_FILE   (prints the 12 numbers as "name value" lines)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "kplab/stem.h"
#include "kplab/text.h"

namespace {

std::string Slurp(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The stem keys of a ';'-separated line, in order, after the profile's filters and dedup: each piece is
// lower-cased (ASCII in place; kplab::Lower for the rest), split on whitespace and its tokens stemmed
// through the memo. No per-piece memo: hashing the piece costs about what splitting it does.
void Keys(std::string_view line, bool predictions, kplab::StemCache& stems, std::vector<std::string>& out,
          std::size_t& n_out, std::string& lower) {
  n_out = 0;
  std::size_t start = 0;
  while (start <= line.size()) {
    std::size_t end = line.find(';', start);
    if (end == std::string_view::npos) end = line.size();
    const std::string_view piece = line.substr(start, end - start);
    start = end + 1;
    bool ascii = true;
    for (char c : piece) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
    if (ascii) {
      lower.assign(piece);
      for (char& c : lower) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
    } else {
      lower = kplab::Lower(piece);
    }
    if (n_out == out.size()) out.emplace_back();
    std::string& key = out[n_out];
    key.clear();
    bool unk = false;
    std::size_t n_tokens = 0;
    std::string_view first;
    for (std::string_view t : kplab::SplitWhitespace(lower)) {
      if (n_tokens++ == 0) first = t;
      unk = unk || t == "<unk>";
      if (!key.empty()) key += ' ';
      key += stems.Stem(t);
    }
    // The profile's filters: empty pieces, phrases with an <unk> token, the generator's <peos> marker.
    const bool ok = n_tokens > 0 && !unk && !(predictions && n_tokens == 1 && first == "<peos>");
    if (!ok) continue;
    bool dup = false;
    for (std::size_t i = 0; i < n_out && !dup; ++i) dup = out[i] == key;
    if (!dup) ++n_out;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: least_work KEYWORDS_FILE PREDICTIONS_FILE\n");
    return 1;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::string refs_text = Slurp(argv[1]), preds_text = Slurp(argv[2]);
  kplab::StemCache stems;
  std::vector<std::string> refs, preds;
  std::size_t n_refs = 0, n_preds = 0;
  std::string lower;
  // Sums for micro averages and per-document values for macro ones, at 5 and M.
  double hits[2] = {0, 0}, pden[2] = {0, 0}, rden = 0, p_sum[2] = {0, 0}, r_sum[2] = {0, 0}, f_sum[2] = {0, 0};
  std::size_t docs = 0, a = 0, b = 0;
  while (a < refs_text.size() || b < preds_text.size()) {
    std::size_t ea = refs_text.find('\n', a), eb = preds_text.find('\n', b);
    if (ea == std::string::npos) ea = refs_text.size();
    if (eb == std::string::npos) eb = preds_text.size();
    std::string_view rl(refs_text.data() + a, ea - a), pl(preds_text.data() + b, eb - b);
    if (!rl.empty() && rl.back() == '\r') rl.remove_suffix(1);
    if (!pl.empty() && pl.back() == '\r') pl.remove_suffix(1);
    a = ea + 1;
    b = eb + 1;
    Keys(rl, false, stems, refs, n_refs, lower);
    Keys(pl, true, stems, preds, n_preds, lower);
    const std::size_t n = n_preds, r = n_refs;
    for (int m = 0; m < 2; ++m) {
      const std::size_t k = m == 0 ? 5 : n;
      std::size_t h = 0;
      for (std::size_t i = 0; i < n && i < k; ++i) {
        for (std::size_t j = 0; j < r; ++j) {
          if (preds[i] == refs[j]) {
            ++h;
            break;
          }
        }
      }
      const double den = n > 0 ? static_cast<double>(k) : 0;
      const double P = den > 0 ? h / den : 0, R = r > 0 ? static_cast<double>(h) / static_cast<double>(r) : 0;
      hits[m] += static_cast<double>(h);
      pden[m] += den;
      p_sum[m] += P;
      r_sum[m] += R;
      f_sum[m] += P + R > 0 ? 2 * P * R / (P + R) : 0;
    }
    rden += static_cast<double>(r);
    ++docs;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto f1 = [](double p, double r) { return p + r > 0 ? 2 * p * r / (p + r) : 0; };
  const char* at[2] = {"5", "M"};
  for (int m = 0; m < 2; ++m) {
    const double up = pden[m] > 0 ? hits[m] / pden[m] : 0, ur = rden > 0 ? hits[m] / rden : 0;
    const double mp = p_sum[m] / static_cast<double>(docs), mr = r_sum[m] / static_cast<double>(docs);
    std::printf("all.p@%s.micro %.17g\nall.r@%s.micro %.17g\nall.f1@%s.micro %.17g\n", at[m], up, at[m], ur, at[m],
                f1(up, ur));
    std::printf("all.p@%s.macro %.17g\nall.r@%s.macro %.17g\nall.f1@%s.macro_doc %.17g\n", at[m], mp, at[m], mr, at[m],
                f_sum[m] / static_cast<double>(docs));
  }
  std::fprintf(stderr, "least_work: %zu documents in %.3f s\n", docs, secs);
  std::fflush(stdout);
  std::_Exit(0);  // as kplab eval, the process leaves its memory to the operating system
}
