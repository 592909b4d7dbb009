// Expected failures as values. Public kplab APIs that can fail on user input return Result<T> or Status;
// the message is complete and user-facing, e.g. "data/x.txt:12: invalid UTF-8 (expected UTF-8 text)".
//
// Threads: Result, Status and Error are plain values: no shared state.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace kplab {

// What kind of failure an Error is, so that callers branch on it (the CLI's exit code, the Python
// exception class) instead of on message text (leveldb's Status::IsNotFound() style).
enum class ErrorKind {
  kInput,     // bad input data or files: "FILE:LINE: what (expected ...)"
  kUsage,     // a request that cannot mean anything: unknown metric, profile or parameter, bad value
  kScript,    // a Lua script or plugin failed
  kStore,     // the run store (SQLite) failed
  kLimit,     // a limit was reached: memory cap, instruction budget, deadline
  kInternal,  // a bug
};

// An Error is made with its kind, always: Error::Input("data/x.txt:12: ..."), Error::Usage(...), or
// Error(other.kind, "context: " + other.message) to pass a kind on. There is no default kind and no
// one-argument constructor, so an error whose kind was not chosen does not compile (design note 49).
struct Error {
  Error(ErrorKind kind, std::string message) : message(std::move(message)), kind(kind) {}
  static Error Input(std::string message) { return {ErrorKind::kInput, std::move(message)}; }
  static Error Usage(std::string message) { return {ErrorKind::kUsage, std::move(message)}; }
  static Error Script(std::string message) { return {ErrorKind::kScript, std::move(message)}; }
  static Error Store(std::string message) { return {ErrorKind::kStore, std::move(message)}; }
  static Error Limit(std::string message) { return {ErrorKind::kLimit, std::move(message)}; }
  static Error Internal(std::string message) { return {ErrorKind::kInternal, std::move(message)}; }

  std::string message;
  ErrorKind kind;
  bool IsInput() const { return kind == ErrorKind::kInput; }
  bool IsUsage() const { return kind == ErrorKind::kUsage; }
  bool IsScript() const { return kind == ErrorKind::kScript; }
  bool IsStore() const { return kind == ErrorKind::kStore; }
  bool IsLimit() const { return kind == ErrorKind::kLimit; }
  bool IsInternal() const { return kind == ErrorKind::kInternal; }
};

inline const char* ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInput: return "input";
    case ErrorKind::kUsage: return "usage";
    case ErrorKind::kScript: return "script";
    case ErrorKind::kStore: return "store";
    case ErrorKind::kLimit: return "limit";
    case ErrorKind::kInternal: return "internal";
  }
  return "internal";
}

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error.message)), kind_(error.kind), ok_(false) {}  // NOLINT
  static Status Ok() { return Status(); }
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const std::string& message() const { return error_; }
  ErrorKind kind() const { return kind_; }  // meaningful when !ok()
  Error error() const { return Error(kind_, error_); }

 private:
  std::string error_;
  ErrorKind kind_ = ErrorKind::kInternal;  // an ok Status has no kind: asking for one is a bug
  bool ok_ = true;
};

}  // namespace kplab
