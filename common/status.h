// Status and Result<T>: how errors cross module boundaries in dracpu.
//
// A Status is a code (the gRPC canonical codes, so adapters map them 1:1) plus a message that
// names the object and the reason ("cpu list \"1,,2\": empty item at offset 2"). Result<T> holds
// either a value or a non-OK Status, shaped like std::expected. Both are [[nodiscard]].
//
// Thread safety: plain values; distinct objects may be used from distinct threads.
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace dracpu {

enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// The canonical upper-case name of a code ("INVALID_ARGUMENT").
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "INVALID_ARGUMENT: message" (or "OK").
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>", same code.
  Status WithContext(std::string_view context) const;

  // Marks a status as deliberately ignored.
  void IgnoreError() const {}

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

Status InvalidArgumentError(std::string message);
Status NotFoundError(std::string message);
Status AlreadyExistsError(std::string message);
Status FailedPreconditionError(std::string message);
Status OutOfRangeError(std::string message);
Status ResourceExhaustedError(std::string message);
Status UnavailableError(std::string message);
Status InternalError(std::string message);
Status DataLossError(std::string message);
Status PermissionDeniedError(std::string message);
Status UnimplementedError(std::string message);
Status AbortedError(std::string message);
Status DeadlineExceededError(std::string message);

// Converts an errno value into a Status whose message is "<context>: <strerror>". ENOENT becomes
// NOT_FOUND, EACCES/EPERM PERMISSION_DENIED, EEXIST ALREADY_EXISTS, EINVAL INVALID_ARGUMENT,
// EAGAIN/EBUSY/EWOULDBLOCK UNAVAILABLE, ENOSPC/ENOMEM RESOURCE_EXHAUSTED, anything else INTERNAL.
// This is the one place errno becomes a Status.
Status ErrnoStatus(std::string_view context, int error_number);

// Either a T or a non-OK Status. Constructing from an OK Status is a programming error.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(const T& value) : v_(value) {}            // NOLINT: implicit by design
  Result(T&& value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(v_).ok() && "Result constructed from an OK Status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }

  // The error; OK when a value is held.
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }

  T& value() & {
    assert(ok());
    return std::get<T>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<T>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<T>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  template <typename U>
  T value_or(U&& fallback) const& {
    return ok() ? std::get<T>(v_) : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  std::variant<T, Status> v_;
};

}  // namespace dracpu

#define DRACPU_CONCAT_INNER_(a, b) a##b
#define DRACPU_CONCAT_(a, b) DRACPU_CONCAT_INNER_(a, b)

// Returns the Status from the enclosing function when `expr` (a Status) is not OK.
#define RETURN_IF_ERROR(expr)                        \
  do {                                               \
    ::dracpu::Status dracpu_status_ = (expr);        \
    if (!dracpu_status_.ok()) return dracpu_status_; \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, ResultExpr());` declares/assigns x from the value or returns the error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(DRACPU_CONCAT_(dracpu_result_, __LINE__), lhs, expr)
// `tmp` and `lhs` are a name and a declaration: they cannot be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return tmp.status();          \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)
