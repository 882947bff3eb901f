// Status and Result<T>: how every fallible kiln call reports failure.
//
// A Status is either OK or an error code plus a message. Context is prepended as the
// error travels up ("node conv_12 (Conv): input 1: expected rank 4, got 3"), so the final
// message names where the problem is. Status never aborts; broken internal invariants use
// KILN_CHECK (src/core/check.h) instead.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace kiln {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad input from the user: model, tensor, request, option
  kNotFound,         // missing file, unknown input/output/model name
  kUnsupported,      // valid ONNX that kiln cannot run (op, dtype, attribute value)
  kOutOfRange,       // request too large, index out of bounds
  kResourceExhausted,
  kInternal,  // a library call failed or kiln has a bug
  // Not available now. From a run: the device failed (a GPU faulted, reported an
  // uncorrectable memory error, or was taken away) and nothing more runs on it in this
  // process; a Pipeline retires its Contexts there. From Pipeline::try_submit: the queue is
  // full; try again later (a server answers 503).
  kUnavailable,
  kCancelled,  // the caller cancelled the request before it ran (Pipeline::cancel)
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prepends "context: " to the message of an error; OK stays OK.
  Status with_context(const std::string& context) const& {
    if (is_ok()) return *this;
    return Status(code_, context + ": " + message_);
  }
  Status with_context(const std::string& context) && {
    if (is_ok()) return std::move(*this);
    message_ = context + ": " + message_;
    return std::move(*this);
  }

  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
inline Status out_of_range(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status internal_error(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }

// A value or an error Status.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!status_.is_ok() && "Result constructed from an OK Status without a value");
    if (status_.is_ok()) status_ = internal_error("Result built from OK status without value");
  }

  bool is_ok() const { return value_.has_value(); }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const { return status_; }

  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

  Result with_context(const std::string& context) && {
    if (is_ok()) return std::move(*this);
    return Result(std::move(status_).with_context(context));
  }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace kiln

#define KILN_CONCAT_INNER_(a, b) a##b
#define KILN_CONCAT_(a, b) KILN_CONCAT_INNER_(a, b)

// Returns the Status from the enclosing function if `expr` is an error.
#define KILN_RETURN_IF_ERROR(expr)                  \
  do {                                              \
    ::kiln::Status kiln_status_ = (expr);           \
    if (!kiln_status_.is_ok()) return kiln_status_; \
  } while (0)

// Same, with context prepended to the message.
#define KILN_RETURN_IF_ERROR_CTX(expr, ctx)                                      \
  do {                                                                           \
    ::kiln::Status kiln_status_ = (expr);                                        \
    if (!kiln_status_.is_ok()) return std::move(kiln_status_).with_context(ctx); \
  } while (0)

// `KILN_ASSIGN_OR_RETURN(auto x, make_x());` binds the value or returns the error.
#define KILN_ASSIGN_OR_RETURN(lhs, expr) \
  KILN_ASSIGN_OR_RETURN_IMPL_(KILN_CONCAT_(kiln_result_, __LINE__), lhs, expr)
#define KILN_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.is_ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
