// scikit-learn's English stop-word list, the one KPEval's BM25 tokenizer drops
// (`from sklearn.feature_extraction import _stop_words`; `_stop_words.ENGLISH_STOP_WORDS`).
//
// Provenance: scikit-learn, sklearn/feature_extraction/_stop_words.py, as shipped by Debian's
// python3-sklearn 1.2.1+dfsg-1 (BSD-3-Clause; the list itself is the Glasgow Information Retrieval
// Group's stop list, as that file says). The words are data, sorted here by byte order; the file's
// own frozenset has no order. tests/data/utility/sklearn_stop_words.txt holds the list as Debian's
// sklearn printed it, and the test RetrievalTokens.StopWordsAreScikitLearns compares the two.
// The list holds words that are content words in keyphrase data ("system", "interest", "fire", "bill"):
// KPEval drops them from queries and documents alike, and so does kplab under every profile.
#include <algorithm>
#include <string_view>
#include <vector>

#include "kplab/retrieval.h"

namespace kplab::retrieval {

namespace {

constexpr std::string_view kWords[] = {
    "a", "about", "above", "across", "after", "afterwards", "again", "against", "all", "almost", "alone",
    "along", "already", "also", "although", "always", "am", "among", "amongst", "amoungst", "amount", "an",
    "and", "another", "any", "anyhow", "anyone", "anything", "anyway", "anywhere", "are", "around", "as",
    "at", "back", "be", "became", "because", "become", "becomes", "becoming", "been", "before", "beforehand",
    "behind", "being", "below", "beside", "besides", "between", "beyond", "bill", "both", "bottom", "but",
    "by", "call", "can", "cannot", "cant", "co", "con", "could", "couldnt", "cry", "de", "describe", "detail",
    "do", "done", "down", "due", "during", "each", "eg", "eight", "either", "eleven", "else", "elsewhere",
    "empty", "enough", "etc", "even", "ever", "every", "everyone", "everything", "everywhere", "except",
    "few", "fifteen", "fifty", "fill", "find", "fire", "first", "five", "for", "former", "formerly", "forty",
    "found", "four", "from", "front", "full", "further", "get", "give", "go", "had", "has", "hasnt", "have",
    "he", "hence", "her", "here", "hereafter", "hereby", "herein", "hereupon", "hers", "herself", "him",
    "himself", "his", "how", "however", "hundred", "i", "ie", "if", "in", "inc", "indeed", "interest", "into",
    "is", "it", "its", "itself", "keep", "last", "latter", "latterly", "least", "less", "ltd", "made", "many",
    "may", "me", "meanwhile", "might", "mill", "mine", "more", "moreover", "most", "mostly", "move", "much",
    "must", "my", "myself", "name", "namely", "neither", "never", "nevertheless", "next", "nine", "no",
    "nobody", "none", "noone", "nor", "not", "nothing", "now", "nowhere", "of", "off", "often", "on", "once",
    "one", "only", "onto", "or", "other", "others", "otherwise", "our", "ours", "ourselves", "out", "over",
    "own", "part", "per", "perhaps", "please", "put", "rather", "re", "same", "see", "seem", "seemed",
    "seeming", "seems", "serious", "several", "she", "should", "show", "side", "since", "sincere", "six",
    "sixty", "so", "some", "somehow", "someone", "something", "sometime", "sometimes", "somewhere", "still",
    "such", "system", "take", "ten", "than", "that", "the", "their", "them", "themselves", "then", "thence",
    "there", "thereafter", "thereby", "therefore", "therein", "thereupon", "these", "they", "thick", "thin",
    "third", "this", "those", "though", "three", "through", "throughout", "thru", "thus", "to", "together",
    "too", "top", "toward", "towards", "twelve", "twenty", "two", "un", "under", "until", "up", "upon", "us",
    "very", "via", "was", "we", "well", "were", "what", "whatever", "when", "whence", "whenever", "where",
    "whereafter", "whereas", "whereby", "wherein", "whereupon", "wherever", "whether", "which", "while",
    "whither", "who", "whoever", "whole", "whom", "whose", "why", "will", "with", "within", "without",
    "would", "yet", "you", "your", "yours", "yourself", "yourselves",
};

}  // namespace

const std::vector<std::string_view>& SklearnEnglishStopWords() {
  static const std::vector<std::string_view> words(std::begin(kWords), std::end(kWords));
  return words;
}

bool IsSklearnStopWord(std::string_view word) {
  return std::binary_search(std::begin(kWords), std::end(kWords), word);
}

}  // namespace kplab::retrieval
