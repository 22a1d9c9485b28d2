// SPDX-License-Identifier: Apache-2.0
// lite::Model's checks on outside bytes: every truncation of a real file, a wrong file
// identifier, an opcode the resolver lacks and an op version past ours are clean
// lite::Errors naming the file or the operator, never a crash.
#include <gtest/gtest.h>

#include "deepflow/lite/interpreter.h"
#include "deepflow/lite/kernel.h"
#include "lite_test_util.h"

namespace deepflow::lite {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(LiteModel, EveryTruncationIsACleanError) {
  DEEPFLOW_NEED_LITERT_CASES();
  const std::string bytes = testing::read_file(testing::litert_cases_dir() + "/mlp_float32.tflite");
  ASSERT_GT(bytes.size(), 1000u);
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::string msg = error_of([&] {
      auto m = Model::from_buffer(std::string_view(bytes).substr(0, n), "mlp.tflite");
      Interpreter interp(m);
      interp.allocate_tensors();
      interp.invoke();
    });
    ASSERT_NE(msg, "") << "truncated to " << n << " bytes and no error";
    ASSERT_EQ(msg.rfind("[lite.", 0), 0u) << msg;
  }
}

TEST(LiteModel, NamesTheFileAndWhatIsWrong) {
  EXPECT_NE(error_of([] { Model::from_file("/nonexistent/x.tflite"); }).find("cannot open '/nonexistent/x.tflite'"),
            std::string::npos);
  std::string junk(64, '\0');
  junk.replace(4, 4, "ONNX");
  EXPECT_NE(error_of([&] { Model::from_buffer(junk, "junk.tflite"); }).find("'junk.tflite' is not a .tflite file"),
            std::string::npos);
}

TEST(LiteModel, MissingKernelAndNewerVersionAreNamed) {
  DEEPFLOW_NEED_LITERT_CASES();
  auto model = Model::from_file(testing::litert_cases_dir() + "/mlp_float32.tflite");
  OpResolver empty;
  const std::string none = error_of([&] { Interpreter interp(model, empty); });
  EXPECT_NE(none.find("is FULLY_CONNECTED, which deepflow_lite has no kernel for"), std::string::npos) << none;
  OpResolver old = OpResolver::builtins();
  OpResolver only_v2;
  only_v2.add_builtin(fb::BuiltinOperator::FULLY_CONNECTED, *old.find_builtin(fb::BuiltinOperator::FULLY_CONNECTED, 1),
                      2, 3);
  const std::string other = error_of([&] { Interpreter interp(model, only_v2); });
  EXPECT_NE(other.find("operator 0 of subgraph 0 is FULLY_CONNECTED version 1; deepflow_lite runs versions 2 to 3"),
            std::string::npos) << other;
}

}  // namespace
}  // namespace deepflow::lite
