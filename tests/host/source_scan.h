// A rough reader of the host's C++ sources for the rules that must hold over the whole code base
// (tests/host/sandbox_rules_test.cc): the functions of a file with their bodies, and which of them call
// which. It is not a C++ parser: comments and literals are blanked out, and a function is a name, a
// parenthesised parameter list and a brace-enclosed body. Good enough for the project's own style
// (.clang-format); a construct it misreads makes a rule test fail loudly, never pass silently, because
// the tests also check that the known cases are found.
#pragma once

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace kplab::test {

struct SourceFunction {
  std::string name;       // unqualified: "Render", "Help" (of Repl::Help)
  std::string signature;  // the text from the name to the body's '{'
  std::size_t begin = 0;  // body, offsets into the blanked text
  std::size_t end = 0;
  int line = 0;  // of the name
};

struct SourceFile {
  std::string path;      // relative to the source root: "host/lua/sandbox.cc"
  std::string text;      // as read
  std::string blank;     // comments and string/char literals replaced by spaces (newlines kept)
  std::vector<SourceFunction> functions;

  int LineOf(std::size_t offset) const {
    int line = 1;
    for (std::size_t i = 0; i < offset && i < text.size(); ++i) line += text[i] == '\n';
    return line;
  }
  // The innermost function whose body holds `offset`, or nullptr.
  const SourceFunction* FunctionAt(std::size_t offset) const {
    const SourceFunction* best = nullptr;
    for (const auto& f : functions) {
      if (f.begin <= offset && offset < f.end && (best == nullptr || f.begin > best->begin)) best = &f;
    }
    return best;
  }
};

// Comments and literals blanked (raw strings R"d(...)d" included), so that braces and calls inside them
// are not read as code.
inline std::string BlankCommentsAndLiterals(const std::string& s) {
  std::string out = s;
  auto blank = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to && i < out.size(); ++i) {
      if (out[i] != '\n') out[i] = ' ';
    }
  };
  std::size_t i = 0;
  while (i < s.size()) {
    if (s.compare(i, 2, "//") == 0) {
      const std::size_t e = s.find('\n', i);
      blank(i, e == std::string::npos ? s.size() : e);
      i = e == std::string::npos ? s.size() : e;
    } else if (s.compare(i, 2, "/*") == 0) {
      const std::size_t e = s.find("*/", i + 2);
      const std::size_t end = e == std::string::npos ? s.size() : e + 2;
      blank(i, end);
      i = end;
    } else if (s[i] == 'R' && i + 1 < s.size() && s[i + 1] == '"' &&
               (i == 0 || !(std::isalnum(static_cast<unsigned char>(s[i - 1])) || s[i - 1] == '_'))) {
      const std::size_t open = s.find('(', i + 2);
      const std::string delim = ")" + s.substr(i + 2, open - i - 2) + "\"";
      const std::size_t e = s.find(delim, open);
      const std::size_t end = e == std::string::npos ? s.size() : e + delim.size();
      blank(i + 2, end - 1);
      i = end;
    } else if (s[i] == '"' || (s[i] == '\'' && !(i > 0 && std::isxdigit(static_cast<unsigned char>(s[i - 1]))))) {
      const char q = s[i];
      std::size_t j = i + 1;
      while (j < s.size() && s[j] != q && s[j] != '\n') j += s[j] == '\\' ? 2 : 1;
      blank(i + 1, j);
      i = j + 1;
    } else {
      ++i;
    }
  }
  return out;
}

inline bool IsKeyword(const std::string& w) {
  static const std::set<std::string> k = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype",
                                          "alignof", "static_assert", "noexcept", "requires", "defined"};
  return k.count(w) > 0;
}

// The functions defined in the blanked text: NAME(...) [const] [noexcept] [override] [-> T] { body }.
// Lambdas ([..](..) {) and initializer braces are not functions; a lambda's body belongs to the
// function around it.
inline std::vector<SourceFunction> FindFunctions(const std::string& blank) {
  std::vector<SourceFunction> out;
  static const std::regex tail(R"(\)\s*(const\s*)?(noexcept\s*)?(override\s*)?(final\s*)?(->\s*[\w:<>,\s\*&]+?\s*)?$)");
  for (std::size_t i = 0; i < blank.size(); ++i) {
    if (blank[i] != '{') continue;
    // The text before the brace, back to the previous ';', '{' or '}'.
    std::size_t start = i;
    while (start > 0 && blank[start - 1] != ';' && blank[start - 1] != '{' && blank[start - 1] != '}') --start;
    std::string head = blank.substr(start, i - start);
    // A constructor's member initializers (") : a_(x), b_(y) {"): the function is before the ':'.
    static const std::regex init(R"(\)\s*:(?!:)\s*[A-Za-z_])");
    if (std::smatch mi; std::regex_search(head, mi, init)) head = head.substr(0, static_cast<std::size_t>(mi.position(0)) + 1);
    std::smatch m;
    if (!std::regex_search(head, m, tail)) continue;
    // The '(' matching the ')' the tail starts with.
    std::size_t close = start + static_cast<std::size_t>(m.position(0));
    int depth = 0;
    std::size_t open = std::string::npos;
    for (std::size_t j = close + 1; j-- > start;) {
      if (blank[j] == ')') ++depth;
      if (blank[j] == '(' && --depth == 0) {
        open = j;
        break;
      }
    }
    if (open == std::string::npos) continue;
    std::size_t name_end = open;
    while (name_end > start && std::isspace(static_cast<unsigned char>(blank[name_end - 1]))) --name_end;
    std::size_t name_begin = name_end;
    while (name_begin > start &&
           (std::isalnum(static_cast<unsigned char>(blank[name_begin - 1])) || blank[name_begin - 1] == '_')) {
      --name_begin;
    }
    std::string name = blank.substr(name_begin, name_end - name_begin);
    // A call operator, "operator()(...)": its name is "operator()".
    if (name.empty() && name_end >= start + 10 && blank.compare(name_end - 10, 10, "operator()") == 0) {
      name_begin = name_end - 10;
      name = "operator()";
    }
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) || IsKeyword(name)) continue;
    // A call followed by a brace is an initializer (Foo x(a) {...} does not occur); a lambda has ']'.
    // The body: up to the matching '}'.
    int braces = 0;
    std::size_t end = i;
    for (; end < blank.size(); ++end) {
      if (blank[end] == '{') ++braces;
      if (blank[end] == '}' && --braces == 0) break;
    }
    SourceFunction f;
    f.name = name;
    f.signature = blank.substr(name_begin, i - name_begin);
    f.begin = i;
    f.end = end;
    out.push_back(std::move(f));
  }
  return out;
}

inline SourceFile ReadSource(const std::filesystem::path& root, const std::filesystem::path& file) {
  SourceFile f;
  f.path = std::filesystem::relative(file, root).generic_string();
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  f.text = ss.str();
  f.blank = BlankCommentsAndLiterals(f.text);
  f.functions = FindFunctions(f.blank);
  for (auto& fn : f.functions) fn.line = f.LineOf(fn.begin);
  return f;
}

// Every .cc and .h under root/dir, sorted.
inline std::vector<SourceFile> ReadSources(const std::filesystem::path& root, const std::string& dir) {
  std::vector<std::filesystem::path> paths;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root / dir)) {
    const std::string ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".cc" || ext == ".h")) paths.push_back(e.path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<SourceFile> out;
  for (const auto& p : paths) out.push_back(ReadSource(root, p));
  return out;
}

// Whether `body` calls `name` (a word followed by '(' or '<...>(').
// The regex runs only where the name occurs at all, and each name's regex is built once: building and
// running one std::regex per pair of functions was most of the whole-code rules' time.
inline bool Calls(const std::string& body, const std::string& name) {
  if (body.find(name) == std::string::npos) return false;
  thread_local std::map<std::string, std::regex> compiled;
  auto it = compiled.find(name);
  if (it == compiled.end()) {
    it = compiled.emplace(name, std::regex("(^|[^\\w.>:])" + name + "\\s*(<[^;{}()]*>)?\\s*\\(")).first;
  }
  return std::regex_search(body, it->second);
}

}  // namespace kplab::test
