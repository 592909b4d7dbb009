// WordNet 3.0's database files read natively (Debian's wordnet-base: /usr/share/wordnet), for METEOR's
// synonym stage (kplab/textmetrics.h). Only what nltk 3.8's meteor_score asks of its WordNet reader is
// implemented: synsets(word) with nltk's morphy (exception lists, then the detachment rules) and the
// lemma names of those synsets. nltk's own reader also wants a `lexnames` file, which Debian's package
// does not have; this reader needs index.{noun,verb,adj,adv}, data.{noun,verb,adj,adv} and
// {noun,verb,adj,adv}.exc only.
//
// Threads: a WordNet is read-only and shared (Shared() is thread-safe); its lookups are safe from several
// threads at once.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kplab/result.h"

namespace kplab {

class WordNet {
 public:
  ~WordNet();
  WordNet(const WordNet&) = delete;
  WordNet& operator=(const WordNet&) = delete;

  // Reads the database in dir. Errors (kind input) name the file and line, and for a missing file say
  // how to install it (scripts/setup.sh --extra wordnet).
  static Result<std::shared_ptr<const WordNet>> Open(const std::string& dir);
  // The database of dir, read once per process and shared (thread-safe). A failure is not cached.
  static Result<std::shared_ptr<const WordNet>> Shared(const std::string& dir);
  // $KPLAB_WORDNET when set and not empty, else Debian's /usr/share/wordnet.
  static std::string DefaultDir();

  // The lemma names without '_' of every synset of nltk's wordnet.synsets(word) (the word lower-cased,
  // each part of speech with its own morphy forms), adjective markers such as "(a)" removed, case kept;
  // sorted, without repeats. Views into the database (valid while it lives). Thread-safe; memoized.
  std::vector<std::string_view> Synonyms(std::string_view word) const;
  // nltk's _morphy(form, pos) as a set: the base forms of `form` in the index under pos ('n', 'v', 'a',
  // 'r'), sorted. Bounded: forms are deduplicated level by level.
  std::vector<std::string> Morphy(std::string_view form, char pos) const;
  // Lemmas in the four indexes, counting a lemma once per part of speech.
  std::size_t index_size() const;

 private:
  struct Impl;
  explicit WordNet(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kplab
