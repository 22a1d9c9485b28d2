// SPDX-License-Identifier: Apache-2.0
// TF1 control flow in frozen GraphDefs (tf1_control_flow.cpp): a function with a cond
// inside a while loop, a while loop inside a cond and a cond inside a cond, frozen by
// TensorFlow 2.21 with its control flow lowered to Switch / Merge / Enter / Exit /
// NextIteration / LoopCond (tests/tf/tf_frozen_control_flow.py), imported with
// tf::import_graph_def and traced once for all cases: the cases take every branch and
// loop 0 to 4 times, against TensorFlow's outputs within 1e-4 (relative). Hand-written
// graphs check a cond whose predicate is fed or known at import time, Merge's value_index,
// and the errors for a Merge or Exit that no cond or loop explains.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <google/protobuf/text_format.h>
#include <nlohmann/json.hpp>

#include "deepflow/io/npy.h"
#include "deepflow/tf/graph_def.h"
#include "oracle.h"
#include "tensorflow/graph.pb.h"

namespace deepflow {
namespace {

namespace fs = std::filesystem;

const std::string& frozen_dir() {
  static const std::string dir =
      testing::oracle_output_dir("tests/tf/tf_frozen_control_flow.py", DEEPFLOW_TF_TEST_CACHE, "tf1_flow_", "cases.json");
  return dir;
}

TEST(Tf1ControlFlow, NestedCondsAndLoopsMatchTensorFlow) {
  const std::string& root = frozen_dir();
  if (root.empty()) DEEPFLOW_ORACLE_MISSING("TensorFlow 2.21 (make peers) could not write the frozen graphs");
  nlohmann::json index;
  std::ifstream(fs::path(root) / "cases.json") >> index;
  const auto& entry = index.at("nested");
  const fs::path dir = fs::path(root) / "nested";
  tf::GraphDefModel m = tf::import_graph_def((dir / "frozen.pb").string(), entry.at("inputs"), entry.at("outputs"));
  for (int k = 0; k < entry.at("cases").get<int>(); ++k) {
    const std::string c = "case" + std::to_string(k);
    TensorList out = m.function({io::read_npy((dir / (c + ".in.0.npy")).string()),
                                 io::read_npy((dir / (c + ".in.1.npy")).string())});
    ASSERT_EQ(out.size(), 2u);
    for (size_t j = 0; j < out.size(); ++j) {
      Tensor want = io::read_npy((dir / (c + ".out." + std::to_string(j) + ".npy")).string());
      ASSERT_EQ(out[j].shape(), want.shape()) << c << " output " << j;
      ASSERT_EQ(out[j].dtype(), want.dtype()) << c << " output " << j;
      for (int64_t i = 0; i < want.size(); ++i) {
        EXPECT_LE(std::abs(out[j].flat(i) - want.flat(i)), 1e-4 * std::max(1.0, std::abs(want.flat(i))))
            << c << " output " << j << " element " << i;
      }
    }
  }
  // Traced once: the loop counts and branches are decided when it runs.
  EXPECT_EQ(m.function.trace_count(), 1);
}

// x [2] float; Switch(x, pred): true -> Neg, false -> Abs; Merge(false side, true side).
constexpr const char* kCond = R"pb(
  node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim { size: 2 } } } } }
  node { name: "s" op: "Switch" input: "x" input: "PRED" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "t" op: "Neg" input: "s:1" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "f" op: "Abs" input: "s" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "m" op: "Merge" input: "f" input: "t" attr { key: "T" value { type: DT_FLOAT } }
         attr { key: "N" value { i: 2 } } }
  node { name: "known" op: "Const" attr { key: "dtype" value { type: DT_BOOL } }
         attr { key: "value" value { tensor { dtype: DT_BOOL tensor_shape {} bool_val: true } } } }
  node { name: "fed" op: "Placeholder" attr { key: "dtype" value { type: DT_BOOL } }
         attr { key: "shape" value { shape {} } } }
)pb";

std::string graph_bytes(std::string text, const std::string& pred) {
  text.replace(text.find("PRED"), 4, pred);
  tensorflow::GraphDef g;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &g));
  return g.SerializeAsString();
}

TEST(Tf1ControlFlow, CondOnAFedOrKnownPredicate) {
  const Tensor x = constant({1.0f, -2.0f});
  tf::GraphDefModel fed = tf::import_graph_def_from_bytes(graph_bytes(kCond, "fed"), "cond.pb", {"x", "fed"},
                                                          {"m:0", "m:1"});
  TensorList yes = fed.function({x, scalar(1, DType::Bool)}), no = fed.function({x, scalar(0, DType::Bool)});
  EXPECT_EQ(yes[0].to_vector<float>(), (std::vector<float>{-1, 2}));
  EXPECT_EQ(yes[1].to_vector<int32_t>(), std::vector<int32_t>{1});  // value_index: t is input 1
  EXPECT_EQ(no[0].to_vector<float>(), (std::vector<float>{1, 2}));
  EXPECT_EQ(no[1].to_vector<int32_t>(), std::vector<int32_t>{0});
  EXPECT_EQ(fed.function.trace_count(), 1);
  tf::GraphDefModel known = tf::import_graph_def_from_bytes(graph_bytes(kCond, "known"), "cond.pb", {"x"}, {"m:0"});
  EXPECT_EQ(known.function({x})[0].to_vector<float>(), (std::vector<float>{-1, 2}));
}

TEST(Tf1ControlFlow, MergeOrExitWithoutACondOrLoopIsNamed) {
  auto error = [](const std::string& extra, const std::string& output) {
    try {
      tf::import_graph_def_from_bytes(graph_bytes(std::string(kCond) + extra, "known"), "bad.pb", {"x"}, {output})
          .function({constant({1.0f, 2.0f})});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string merge = error(R"pb(node { name: "plain" op: "Merge" input: "x" input: "t"
                                         attr { key: "T" value { type: DT_FLOAT } } })pb", "plain:0");
  EXPECT_NE(merge.find("node 'plain' (Merge)"), std::string::npos) << merge;
  EXPECT_NE(merge.find("not a TF1 cond"), std::string::npos) << merge;
  const std::string exit = error(R"pb(node { name: "out" op: "Exit" input: "t"
                                        attr { key: "T" value { type: DT_FLOAT } } })pb", "out:0");
  EXPECT_NE(exit.find("node 'out' (Exit) does not take output 0 of a loop's Switch"), std::string::npos) << exit;
}

}  // namespace
}  // namespace deepflow
