// SPDX-License-Identifier: Apache-2.0
#include "deepflow/serving/status.h"

namespace deepflow::serving {

const char* code_name(Code code) {
  switch (code) {
    case Code::Ok: return "OK";
    case Code::Cancelled: return "CANCELLED";
    case Code::Unknown: return "UNKNOWN";
    case Code::InvalidArgument: return "INVALID_ARGUMENT";
    case Code::DeadlineExceeded: return "DEADLINE_EXCEEDED";
    case Code::NotFound: return "NOT_FOUND";
    case Code::AlreadyExists: return "ALREADY_EXISTS";
    case Code::PermissionDenied: return "PERMISSION_DENIED";
    case Code::ResourceExhausted: return "RESOURCE_EXHAUSTED";
    case Code::FailedPrecondition: return "FAILED_PRECONDITION";
    case Code::Aborted: return "ABORTED";
    case Code::OutOfRange: return "OUT_OF_RANGE";
    case Code::Unimplemented: return "UNIMPLEMENTED";
    case Code::Internal: return "INTERNAL";
    case Code::Unavailable: return "UNAVAILABLE";
    case Code::DataLoss: return "DATA_LOSS";
    case Code::Unauthenticated: return "UNAUTHENTICATED";
  }
  return "UNKNOWN";
}

int http_status(Code code) {
  switch (code) {
    case Code::Ok: return 200;
    case Code::Cancelled: return 499;  // nginx's "client closed request", as TF Serving
    case Code::InvalidArgument:
    case Code::FailedPrecondition:
    case Code::OutOfRange: return 400;
    case Code::DeadlineExceeded: return 504;
    case Code::NotFound: return 404;
    case Code::AlreadyExists:
    case Code::Aborted: return 409;
    case Code::PermissionDenied: return 403;
    case Code::ResourceExhausted: return 429;
    case Code::Unimplemented: return 501;
    case Code::Unavailable: return 503;
    case Code::Unauthenticated: return 401;
    default: return 500;
  }
}

Code code_of(const std::exception& e) {
  if (auto* s = dynamic_cast<const ServingError*>(&e)) return s->code();
  if (dynamic_cast<const Error*>(&e)) return Code::InvalidArgument;
  return Code::Internal;
}

}  // namespace deepflow::serving
