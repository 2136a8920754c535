#include "common/status.h"

#include <cstring>

namespace baton {

const char* CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "OK";
    case Code::kInvalidArgument: return "InvalidArgument";
    case Code::kSystemError: return "SystemError";
    case Code::kInternalError: return "InternalError";
    case Code::kRemoteError: return "RemoteError";
    case Code::kTimeout: return "Timeout";
    case Code::kMismatch: return "Mismatch";
    case Code::kAborted: return "Aborted";
    case Code::kInProgress: return "InProgress";
    case Code::kResourceExhausted: return "ResourceExhausted";
    case Code::kUnavailable: return "Unavailable";
    case Code::kPermissionDenied: return "PermissionDenied";
  }
  return "Unknown";
}

Status Status::Errno(const std::string& what, int err) {
  return {Code::kSystemError, what + ": " + std::strerror(err)};
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(CodeName(code_)) + ": " + message_;
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  return {code_, context + message_};
}

}  // namespace baton
