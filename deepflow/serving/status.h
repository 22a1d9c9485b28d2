// SPDX-License-Identifier: Apache-2.0
// Status codes of the serving APIs: one error type that carries the canonical code
// (gRPC's numbering), so a handler can answer REST with TF Serving's HTTP status and
// gRPC with the same code.
//
//   throw ServingError(Code::NotFound, "Servable not found for request: Latest(half)");
//   ...
//   catch (const ServingError& e) { reply(http_status(e.code()), error_json(e.what())); }
//
// A plain deepflow::Error (bad shapes, dtypes, values from the core or the loader) is
// an INVALID_ARGUMENT when it escapes a request; see code_of().
#pragma once

#include <exception>
#include <string>

#include "deepflow/core/error.h"

namespace deepflow::serving {

/// The canonical codes, numbered as in gRPC and absl (tensorflow::error::Code).
enum class Code : int {
  Ok = 0,
  Cancelled = 1,
  Unknown = 2,
  InvalidArgument = 3,
  DeadlineExceeded = 4,
  NotFound = 5,
  AlreadyExists = 6,
  PermissionDenied = 7,
  ResourceExhausted = 8,
  FailedPrecondition = 9,
  Aborted = 10,
  OutOfRange = 11,
  Unimplemented = 12,
  Internal = 13,
  Unavailable = 14,
  DataLoss = 15,
  Unauthenticated = 16,
};

/// "OK", "INVALID_ARGUMENT", ... (the names TF Serving prints in model status JSON).
const char* code_name(Code code);

/// TF Serving's mapping to HTTP (specs.md 1.7): OK 200, INVALID_ARGUMENT /
/// FAILED_PRECONDITION / OUT_OF_RANGE 400, NOT_FOUND 404, UNAVAILABLE 503, ...
int http_status(Code code);

/// A deepflow::Error with a code. Messages follow the project rule (start with
/// "[function]") except where TF Serving's exact text is the contract.
class ServingError : public Error {
 public:
  ServingError(Code code, const std::string& what) : Error(what), code_(code) {}
  Code code() const { return code_; }

 private:
  Code code_;
};

/// The code of an exception escaping a request: a ServingError's own code, a
/// deepflow::Error is INVALID_ARGUMENT (bad input), anything else INTERNAL.
Code code_of(const std::exception& e);

}  // namespace deepflow::serving
