// Status: an error as a value (code + human-readable message), in the spirit
// of LevelDB's Status. Codes mirror baton_result_t in client/include/baton/baton.h.
#pragma once

#include <string>
#include <utility>

namespace baton {

enum class Code : int {
  kOk = 0,
  kInvalidArgument = 1,  // the caller passed something wrong; fix the call
  kSystemError = 2,      // an OS call failed (errno text in the message)
  kInternalError = 3,    // a bug in Baton; please report
  kRemoteError = 4,      // a peer daemon or rank failed or disconnected
  kTimeout = 5,          // an operation did not complete in time
  kMismatch = 6,         // ranks called different collectives at one sequence number
  kAborted = 7,          // the communicator was aborted
  kInProgress = 8,       // not done yet (baton_test)
  kResourceExhausted = 9,  // a limit (memory, slots) was reached
  kUnavailable = 10,     // the daemon or a service cannot be reached
  kPermissionDenied = 11,  // the caller's user may not do this (another user's job)
};

const char* CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  static Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
  static Status System(std::string m) { return {Code::kSystemError, std::move(m)}; }
  // Builds "what: strerror(errno)".
  static Status Errno(const std::string& what, int err);
  static Status Internal(std::string m) { return {Code::kInternalError, std::move(m)}; }
  static Status Remote(std::string m) { return {Code::kRemoteError, std::move(m)}; }
  static Status Timeout(std::string m) { return {Code::kTimeout, std::move(m)}; }
  static Status Mismatch(std::string m) { return {Code::kMismatch, std::move(m)}; }
  static Status Aborted(std::string m) { return {Code::kAborted, std::move(m)}; }
  static Status Exhausted(std::string m) { return {Code::kResourceExhausted, std::move(m)}; }
  static Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
  static Status PermissionDenied(std::string m) { return {Code::kPermissionDenied, std::move(m)}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "Timeout: allreduce seq 3 ..." (or "OK").
  std::string ToString() const;

  // Prefixes context ("comm dp rank 3: ") to the message, keeping the code.
  Status WithContext(const std::string& context) const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

// Returns from the enclosing function when `expr` is not OK.
#define BATON_RETURN_IF_ERROR(expr)        \
  do {                                     \
    ::baton::Status _st = (expr);          \
    if (!_st.ok()) return _st;             \
  } while (0)

}  // namespace baton
