// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "deepflow/serving/status.h"

namespace deepflow::serving {
namespace {

TEST(ServingStatus, HttpMappingFollowsTfServing) {
  EXPECT_EQ(http_status(Code::Ok), 200);
  EXPECT_EQ(http_status(Code::InvalidArgument), 400);
  EXPECT_EQ(http_status(Code::FailedPrecondition), 400);
  EXPECT_EQ(http_status(Code::NotFound), 404);
  EXPECT_EQ(http_status(Code::Unavailable), 503);
  EXPECT_EQ(http_status(Code::Unimplemented), 501);
  EXPECT_EQ(http_status(Code::ResourceExhausted), 429);
  EXPECT_EQ(http_status(Code::Internal), 500);
  EXPECT_STREQ(code_name(Code::InvalidArgument), "INVALID_ARGUMENT");
}

TEST(ServingStatus, CodeOfExceptions) {
  EXPECT_EQ(code_of(ServingError(Code::NotFound, "x")), Code::NotFound);
  EXPECT_EQ(code_of(Error("[matmul] bad")), Code::InvalidArgument);
  EXPECT_EQ(code_of(std::runtime_error("boom")), Code::Internal);
}

}  // namespace
}  // namespace deepflow::serving
