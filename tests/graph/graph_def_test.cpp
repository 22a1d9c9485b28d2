// SPDX-License-Identifier: Apache-2.0
// GraphDef: round trips through the protobuf, and clear errors on malformed messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "deepflow/deepflow.h"
#include "deepflow/graph/graph_def.h"
#include "deepflow/graph/text.h"
#include "graph.pb.h"
#include "graph_test_util.h"

namespace deepflow {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

void expect_round_trip(const Graph& g) {
  std::string bytes = serialize_graph(g);
  auto back = parse_graph_def(bytes, {.variables = graph_variables(g)});
  std::string why;
  EXPECT_TRUE(graph_equal(g, *back, &why)) << why;
  EXPECT_EQ(print_graph(*back), print_graph(g));
  EXPECT_EQ(serialize_graph(*back), bytes);  // deterministic
}

TEST(GraphDef, RoundTripsAModelWithManyOps) { expect_round_trip(*testing_util::many_ops_graph()); }

TEST(GraphDef, RoundTripsFunctionsAndQuotedNames) {
  expect_round_trip(*testing_util::graph_with_functions());
  auto g = parse_graph(
      "%\"a:1\" = placeholder() {dtype=f32, shape=[2]} : f32[2]\n"
      "%t = top_k(%\"a:1\") {k=1} : f32[1], i32[1]\n"
      "%u = cast(%t:1) ^%\"a:1\" {dtype=f32} : f32[1]\n"
      "outputs(%t:1, %\"a:1\")\n");
  expect_round_trip(*g);
  // Names are bytes, not necessarily UTF-8.
  expect_round_trip(*parse_graph("%\"\\xff\\xfe\" = placeholder() {dtype=f32} : f32[] @\"/cpu:\\x80\"\n"));
}

TEST(GraphDef, FunctionsGoToTheLibrary) {
  proto::GraphDef def;
  graph_to_proto(*testing_util::graph_with_functions(), &def);
  ASSERT_EQ(def.library_size(), 2);
  EXPECT_EQ(def.library(0).name(), "outer/call.body");
  EXPECT_EQ(def.library(1).name(), "call.body");
  EXPECT_EQ(def.library(1).outputs(0), "sum");
  EXPECT_EQ(def.node(1).attr().at("body").func(), "call.body");
  EXPECT_EQ(def.version(), kGraphDefVersion);
}

// A small valid GraphDef to break in different ways.
proto::GraphDef small_def() {
  auto h = parse_graph(
      "%x = placeholder() {dtype=f32, shape=[2]} : f32[2]\n"
      "%c = const() {value=tensor<f32[2]>[1, 2]} : f32[2]\n"
      "%y = add(%x, %c) : f32[2]\n");
  proto::GraphDef def;
  graph_to_proto(*h, &def);
  return def;
}

void expect_error(const proto::GraphDef& def, const std::string& message) {
  EXPECT_THAT([&] { graph_from_proto(def); }, ThrowsMessage<Error>(HasSubstr(message))) << def.DebugString();
}

TEST(GraphDef, MalformedMessagesAreClearErrors) {
  EXPECT_NO_THROW(graph_from_proto(small_def()));
  proto::GraphDef d = small_def();
  d.mutable_node(2)->set_op("matmal");
  expect_error(d, "[parse_graph_def] node 'y': unknown op 'matmal'");
  d = small_def();
  (*d.mutable_node(2)->mutable_attr())["transpose_a"].set_i(3);
  expect_error(d, "node 'y': [add] unknown attribute 'transpose_a'");
  d = small_def();
  (*d.mutable_node(0)->mutable_attr())["dtype"].set_s("f32");
  expect_error(d, "node 'x': [placeholder] attribute 'dtype' must be dtype, got string \"f32\"");
  d = small_def();
  d.mutable_node(2)->set_input(1, "nowhere");
  expect_error(d, "node 'y': input 'nowhere' names no node");
  d = small_def();
  d.mutable_node(2)->set_input(1, "c:3");
  expect_error(d, "node 'y': input 'c:3': node 'c' has 1 outputs");
  d = small_def();
  d.mutable_node(2)->add_input("x");
  expect_error(d, "node 'y': 'add' takes 2 inputs, got 3");
  d = small_def();
  d.mutable_node(1)->add_input("^y");  // c after y, y after c
  expect_error(d, "[parse_graph_def] [graph] cycle through node 'c'");
  d = small_def();
  (*d.mutable_node(1)->mutable_attr())["value"].mutable_tensor()->add_dims(3);
  expect_error(d, "node 'c': attribute 'value': tensor float32[2,3] needs 6 x 4 content bytes, got 8");
  d = small_def();
  (*d.mutable_node(1)->mutable_attr())["value"].mutable_tensor()->set_dtype(proto::DataType(42));
  expect_error(d, "node 'c': attribute 'value': invalid dtype 42");
  d = small_def();
  (*d.mutable_node(1)->mutable_attr())["value"].mutable_tensor()->set_dims(0, -4);
  expect_error(d, "invalid dimension -4");
  d = small_def();
  d.mutable_node(2)->mutable_output_types(0)->add_dims(2);
  expect_error(d, "[graph] node 'y' output 0 is recorded as [2,2], its op gives [2]");
  d = small_def();
  *d.add_node() = d.node(0);
  expect_error(d, "node 'x' is defined twice");
  d = small_def();
  d.set_version(99);
  expect_error(d, "version 99 is newer than this reader's 1");
  d = small_def();
  (*d.mutable_node(2)->mutable_attr())["k"];  // an attribute with no value
  expect_error(d, "node 'y': attribute 'k': no value");
  d = small_def();
  d.mutable_node(0)->set_name("^x");
  expect_error(d, "node name '^x' starts with '^'");
  d = small_def();
  d.add_inputs("y");
  expect_error(d, "input 'y' is not a placeholder");
}

TEST(GraphDef, RoundTripsStringTensors) {
  auto g = parse_graph(
      "%s = placeholder() {dtype=str, shape=[-1]} : str[?]\n"
      "%c = const() {value=tensor<str[3]>[\"a\", \"\\x00\\xff\", \"\"]} : str[3]\n"
      "%j = concat(%s, %c) {axis=0} : str[?]\n"
      "%e = const() {value=tensor<str[0]>[]} : str[0]\n"
      "outputs(%j, %e)\n");
  expect_round_trip(*g);
  proto::GraphDef d;
  graph_to_proto(*g, &d);
  const proto::TensorProto& t = d.node(1).attr().at("value").tensor();
  EXPECT_EQ(t.dtype(), proto::DT_STRING);
  EXPECT_TRUE(t.content().empty());
  ASSERT_EQ(t.string_val_size(), 3);
  EXPECT_EQ(t.string_val(1), std::string("\0\xff", 2));
  Tensor v = std::get<Tensor>(*graph_from_proto(d)->node(1).attrs.find("value"));
  EXPECT_EQ(v.to_vector<std::string>(), (std::vector<std::string>{"a", std::string("\0\xff", 2), ""}));

  proto::GraphDef bad = d;
  bad.mutable_node(1)->mutable_attr()->at("value").mutable_tensor()->add_string_val("extra");
  expect_error(bad, "node 'c': attribute 'value': tensor string[3] needs 3 string_val entries, got 4");
  bad = d;
  bad.mutable_node(1)->mutable_attr()->at("value").mutable_tensor()->set_content("xx");
  expect_error(bad, "string tensor[3] must have no content bytes");
  d = small_def();
  (*d.mutable_node(1)->mutable_attr())["value"].mutable_tensor()->add_string_val("a");
  expect_error(d, "tensor float32[2] has string_val entries");
}

TEST(GraphDef, FunctionLibraryErrors) {
  proto::GraphDef d;
  graph_to_proto(*testing_util::graph_with_functions(), &d);
  proto::GraphDef self = d;
  (*self.mutable_library(0)->mutable_node(0)->mutable_attr())["body"].set_func("outer/call.body");
  expect_error(self, "function 'outer/call.body' refers to itself");
  proto::GraphDef missing = d;
  (*missing.mutable_node(1)->mutable_attr())["body"].set_func("nope");
  expect_error(missing, "unknown function 'nope'");
  proto::GraphDef bad_body = d;
  bad_body.mutable_library(1)->set_outputs(0, "ghost");
  expect_error(bad_body, "function 'call.body': graph outputs: input 'ghost' names no node");
}

TEST(GraphDef, TruncatedBytesAreErrors) {
  std::string bytes = serialize_graph(*testing_util::many_ops_graph());
  ParseOptions options;
  for (size_t n = 0; n < bytes.size(); n += 7)
    EXPECT_THROW(parse_graph_def(bytes.substr(0, n), options), Error) << n << " of " << bytes.size() << " bytes";
  EXPECT_THAT([&] { parse_graph_def(bytes.substr(0, bytes.size() / 2)); },
              ThrowsMessage<Error>(HasSubstr("[parse_graph_def]")));
  EXPECT_THAT([&] { parse_graph_def("\xff\xff\xff garbage"); },
              ThrowsMessage<Error>(HasSubstr("[parse_graph_def] the bytes are not a valid GraphDef")));
}

}  // namespace
}  // namespace deepflow
