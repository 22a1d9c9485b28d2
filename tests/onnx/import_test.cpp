// SPDX-License-Identifier: Apache-2.0
// ONNX import: small ModelProtos built in code, imported from bytes.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "deepflow/core/error.h"
#include "deepflow/function/control_flow.h"
#include "deepflow/onnx/onnx.h"
#include "deepflow/onnx/op_importer.h"

using namespace deepflow;
namespace op = ::onnx;
namespace dfo = deepflow::onnx;

namespace {

constexpr int kFloat = op::TensorProto::FLOAT;
constexpr int kInt64 = op::TensorProto::INT64;
constexpr int kBool = op::TensorProto::BOOL;

op::ModelProto make_model(int64_t opset = 13, int64_t ir = 8) {
  op::ModelProto m;
  m.set_ir_version(ir);
  m.set_producer_name("test");
  m.set_producer_version("1");
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

// dims: -1 writes a dim_param ("N").
void set_type(op::ValueInfoProto* v, const std::string& name, int elem, const std::vector<int64_t>& dims) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d < 0) dim->set_dim_param("N");
    else dim->set_dim_value(d);
  }
}
void add_input(op::GraphProto* g, const std::string& name, int elem, const std::vector<int64_t>& dims) {
  set_type(g->add_input(), name, elem, dims);
}
void add_output(op::GraphProto* g, const std::string& name, int elem, const std::vector<int64_t>& dims) {
  set_type(g->add_output(), name, elem, dims);
}
op::NodeProto* add_node(op::GraphProto* g, const std::string& type, const std::vector<std::string>& ins,
                        const std::vector<std::string>& outs, const std::string& name = "") {
  auto* n = g->add_node();
  n->set_op_type(type);
  n->set_name(name);
  for (const auto& i : ins) n->add_input(i);
  for (const auto& o : outs) n->add_output(o);
  return n;
}
op::TensorProto float_tensor(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v,
                             bool raw = false) {
  op::TensorProto t;
  t.set_name(name);
  t.set_data_type(kFloat);
  for (int64_t d : dims) t.add_dims(d);
  if (raw) {
    t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
  } else {
    for (float x : v) t.add_float_data(x);
  }
  return t;
}
op::TensorProto int64_tensor(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& v) {
  op::TensorProto t;
  t.set_name(name);
  t.set_data_type(kInt64);
  for (int64_t d : dims) t.add_dims(d);
  for (int64_t x : v) t.add_int64_data(x);
  return t;
}
op::TensorProto bool_tensor(const std::string& name, bool v) {
  op::TensorProto t;
  t.set_name(name);
  t.set_data_type(kBool);
  t.add_int32_data(v ? 1 : 0);
  return t;
}
void add_graph_attr(op::NodeProto* n, const std::string& name, const op::GraphProto& g) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(op::AttributeProto::GRAPH);
  *a->mutable_g() = g;
}
void add_int_attr(op::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(op::AttributeProto::INT);
  a->set_i(v);
}

dfo::OnnxModel import(const op::ModelProto& m, const dfo::ImportOptions& o = {}) {
  return dfo::import_model_from_bytes(m.SerializeAsString(), o, "test.onnx");
}

std::string import_error(const op::ModelProto& m) {
  try {
    import(m);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// y = Relu(x + w), w an initializer.
op::ModelProto add_relu_model(const std::vector<int64_t>& x_dims = {2, 3}) {
  op::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", kFloat, x_dims);
  *g->add_initializer() = float_tensor("w", {3}, {1, -2, 3});
  add_node(g, "Add", {"x", "w"}, {"s"}, "add");
  add_node(g, "Relu", {"s"}, {"y"}, "relu");
  add_output(g, "y", kFloat, {x_dims[0], 3});
  return m;
}

void expect_values(const Tensor& t, const std::vector<float>& want) {
  ASSERT_EQ(t.size(), int64_t(want.size())) << t;
  auto got = t.to_vector<float>();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]) << "at " << i;
}

}  // namespace

TEST(OnnxImport, TwoNodeGraph) {
  dfo::OnnxModel m = import(add_relu_model());
  ASSERT_EQ(m.inputs().size(), 1u);
  EXPECT_EQ(m.inputs()[0].name, "x");
  EXPECT_EQ(m.inputs()[0].type.shape, Shape({2, 3}));
  EXPECT_EQ(m.outputs()[0].name, "y");
  EXPECT_EQ(m.opset(), 13);
  EXPECT_EQ(m.ir_version(), 8);
  EXPECT_EQ(m.producer(), "test 1");
  auto out = m.run({{"x", constant({0, 0, 0, -5, 5, -5}, {2, 3})}});
  expect_values(out.at("y"), {1, 0, 3, 0, 3, 0});
  // The initializer is a constant in the traced graph, not an input.
  EXPECT_EQ(m.concrete_function().inputs().size(), 1u);
}

TEST(OnnxImport, InitializersAsVariables) {
  dfo::ImportOptions o;
  o.variables = true;
  dfo::OnnxModel m = import(add_relu_model(), o);
  ASSERT_EQ(m.variables().count("w"), 1u);
  Tensor x = zeros({2, 3});
  expect_values(m.run({{"x", x}}).at("y"), {1, 0, 3, 1, 0, 3});
  Variable w = m.variables().at("w");
  w.assign(constant({5, 5, 5}));
  expect_values(m.run({{"x", x}}).at("y"), {5, 5, 5, 5, 5, 5});
}

TEST(OnnxImport, DynamicDimsStayUnknown) {
  dfo::OnnxModel m = import(add_relu_model({-1, 3}));
  EXPECT_EQ(m.inputs()[0].type.shape, Shape({-1, 3}));
  ConcreteFunction f = m.concrete_function();
  ASSERT_EQ(f.inputs().size(), 1u);
  EXPECT_EQ(f.inputs()[0].shape, Shape({-1, 3}));
  EXPECT_EQ(m.run({{"x", zeros({5, 3})}}).at("y").shape(), Shape({5, 3}));
  EXPECT_EQ(m.run({{"x", zeros({1, 3})}}).at("y").shape(), Shape({1, 3}));
  EXPECT_EQ(m.function().trace_count(), 1);
}

TEST(OnnxImport, IdentityAndConstant) {
  op::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", kFloat, {2});
  auto* c = add_node(g, "Constant", {}, {"c"}, "c");
  auto* a = c->add_attribute();
  a->set_name("value_floats");
  a->set_type(op::AttributeProto::FLOATS);
  a->add_floats(10);
  a->add_floats(20);
  add_node(g, "Identity", {"x"}, {"xi"});
  add_node(g, "Add", {"xi", "c"}, {"y"});
  add_output(g, "y", kFloat, {2});
  add_output(g, "c", kFloat, {2});
  auto out = import(m).run({{"x", constant({1, 2})}});
  expect_values(out.at("y"), {11, 22});
  expect_values(out.at("c"), {10, 20});
}

TEST(OnnxImport, AttributeOfTheWrongTypeIsNamed) {
  op::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  auto* c = add_node(g, "Constant", {}, {"c"}, "k");
  add_int_attr(c, "value_float", 3);  // INT where FLOAT is expected
  c->mutable_attribute(0)->set_type(op::AttributeProto::INT);
  add_output(g, "c", kFloat, {});
  std::string err = import_error(m);
  EXPECT_NE(err.find("value_float"), std::string::npos) << err;
  EXPECT_NE(err.find("k (Constant)"), std::string::npos) << err;
}

TEST(OnnxImport, TensorEncodings) {
  op::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  *g->add_initializer() = float_tensor("raw", {2}, {1.5f, -2.5f}, true);
  *g->add_initializer() = int64_tensor("i", {3}, {1, -2, 1LL << 40});
  *g->add_initializer() = bool_tensor("b", true);
  op::TensorProto h;
  h.set_name("h");
  h.set_data_type(op::TensorProto::FLOAT16);
  h.add_dims(1);
  h.add_int32_data(0x3C00);  // 1.0 in half precision
  *g->add_initializer() = h;
  op::TensorProto s;
  s.set_name("s");
  s.set_data_type(op::TensorProto::STRING);
  s.add_dims(2);
  s.add_string_data("ab");
  s.add_string_data("");
  *g->add_initializer() = s;
  for (const char* n : {"raw", "i", "b", "h", "s"}) add_output(g, n, kFloat, {});
  auto out = import(m).run({});
  expect_values(out.at("raw"), {1.5f, -2.5f});
  EXPECT_EQ(out.at("i").to_vector<int64_t>(), (std::vector<int64_t>{1, -2, 1LL << 40}));
  EXPECT_EQ(out.at("b").dtype(), DType::Bool);
  EXPECT_TRUE(out.at("b").item<bool>());
  EXPECT_EQ(out.at("h").dtype(), DType::Float16);
  EXPECT_FLOAT_EQ(out.at("h").flat(0), 1.0);
  EXPECT_EQ(out.at("s").to_vector<std::string>(), (std::vector<std::string>{"ab", ""}));
}

TEST(OnnxImport, BadTensorDataIsAnError) {
  op::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  op::TensorProto t = float_tensor("w", {4}, {1, 2, 3}, true);  // 12 bytes for 4 floats
  *g->add_initializer() = t;
  add_output(g, "w", kFloat, {4});
  std::string err = import_error(m);
  EXPECT_NE(err.find("raw_data has 12 bytes"), std::string::npos) << err;
  op::TensorProto u;
  u.set_name("u");
  u.set_data_type(op::TensorProto::COMPLEX64);
  *m.mutable_graph()->mutable_initializer(0) = u;
  err = import_error(m);
  EXPECT_NE(err.find("COMPLEX64"), std::string::npos) << err;
}

TEST(OnnxImport, VersionChecks) {
  op::ModelProto m = add_relu_model();
  m.mutable_opset_import(0)->set_version(0);
  EXPECT_NE(import_error(m).find("opset 0 is not supported"), std::string::npos) << import_error(m);
  m.mutable_opset_import(0)->set_version(18);
  EXPECT_NE(import_error(m).find("opset 18 is not supported"), std::string::npos);
  m.mutable_opset_import(0)->set_version(13);
  m.set_ir_version(9);
  EXPECT_NE(import_error(m).find("IR version 9 is not supported"), std::string::npos) << import_error(m);
  m.set_ir_version(7);
  m.mutable_opset_import(0)->set_domain("ai.onnx.ml");
  EXPECT_NE(import_error(m).find("no default-domain"), std::string::npos) << import_error(m);
}

TEST(OnnxImport, EveryTruncationIsAClearError) {
  std::string bytes = add_relu_model().SerializeAsString();
  ASSERT_NO_THROW(dfo::import_model_from_bytes(bytes));
  for (size_t n = 0; n < bytes.size(); ++n) {
    try {
      dfo::import_model_from_bytes(std::string_view(bytes).substr(0, n), {}, "cut.onnx");
      ADD_FAILURE() << "truncated to " << n << " bytes imported";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("[onnx::import] cut.onnx: ", 0), 0u) << e.what();
    }
  }
  try {
    dfo::import_model_from_bytes("\xff\xff\xff\xff garbage", {}, "junk.onnx");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[onnx::import] junk.onnx: not a valid ONNX model (protobuf parse failed)");
  }
}

TEST(OnnxImport, UnsupportedOpsAreListed) {
  op::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", kFloat, {2});
  add_node(g, "Foo", {"x"}, {"a"});
  add_node(g, "Foo", {"a"}, {"b"});
  add_node(g, "Bar", {"b"}, {"c"});
  add_node(g, "Relu", {"c"}, {"d"})->set_domain("com.example");
  // Inside a subgraph too.
  op::GraphProto then_g;
  then_g.set_name("then");
  add_node(&then_g, "Baz", {"x"}, {"t"});
  add_output(&then_g, "t", kFloat, {2});
  auto* iff = add_node(g, "If", {"cond"}, {"y"});
  add_graph_attr(iff, "then_branch", then_g);
  add_graph_attr(iff, "else_branch", then_g);
  add_output(g, "y", kFloat, {2});
  std::string err = import_error(m);
  EXPECT_NE(err.find("unsupported ops: Foo (2 nodes), Bar, com.example.Relu, Baz (2 nodes)"), std::string::npos)
      << err;
  std::string path = (std::filesystem::temp_directory_path() / "df_onnx_unsupported.onnx").string();
  {
    std::ofstream f(path, std::ios::binary);
    f << m.SerializeAsString();
  }
  EXPECT_EQ(dfo::unsupported_ops(path),
            (std::vector<std::string>{"Foo (2 nodes)", "Bar", "com.example.Relu", "Baz (2 nodes)"}));
  std::remove(path.c_str());
}

TEST(OnnxImport, NotTopologicallySorted) {
  op::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", kFloat, {2});
  add_node(g, "Relu", {"s"}, {"y"}, "second");
  add_node(g, "Relu", {"x"}, {"s"}, "first");
  add_output(g, "y", kFloat, {2});
  std::string err = import_error(m);
  EXPECT_NE(err.find("not topologically sorted"), std::string::npos) << err;
  EXPECT_NE(err.find("second (Relu)"), std::string::npos) << err;
  g->mutable_node(0)->set_input(0, "nowhere");
  err = import_error(m);
  EXPECT_NE(err.find("input 'nowhere'"), std::string::npos) << err;
}

namespace {
// If(cond) then: x + one, else: x - one; both branches read x and `one` from the outer scope.
op::ModelProto if_model(bool cond_known, bool cond_value = true) {
  op::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", kFloat, {2});
  if (cond_known) {
    *g->add_initializer() = bool_tensor("cond", cond_value);
  } else {
    add_input(g, "cond", kBool, {});
  }
  *g->add_initializer() = float_tensor("one", {1}, {1});
  op::GraphProto then_g, else_g;
  then_g.set_name("then");
  add_node(&then_g, "Add", {"x", "one"}, {"t"});
  add_output(&then_g, "t", kFloat, {2});
  else_g.set_name("else");
  add_node(&else_g, "Sub", {"x", "one"}, {"e"});
  add_output(&else_g, "e", kFloat, {2});
  auto* iff = add_node(g, "If", {"cond"}, {"y"}, "if");
  add_graph_attr(iff, "then_branch", then_g);
  add_graph_attr(iff, "else_branch", else_g);
  add_output(g, "y", kFloat, {2});
  return m;
}
}  // namespace

TEST(OnnxImport, IfWithKnownCondition) {
  for (bool c : {true, false}) {
    dfo::OnnxModel m = import(if_model(true, c));
    expect_values(m.run({{"x", constant({1, 2})}}).at("y"), c ? std::vector<float>{2, 3} : std::vector<float>{0, 1});
    // Only the taken branch is in the graph: no cond node.
    EXPECT_EQ(m.concrete_function().graph().to_string().find("cond"), std::string::npos);
  }
}

TEST(OnnxImport, IfWithUnknownCondition) {
  dfo::OnnxModel m = import(if_model(false));
  Tensor x = constant({1, 2});
  expect_values(m.run({{"x", x}, {"cond", scalar(1, DType::Bool)}}).at("y"), {2, 3});
  expect_values(m.run({{"x", x}, {"cond", scalar(0, DType::Bool)}}).at("y"), {0, 1});
  EXPECT_EQ(m.function().trace_count(), 1);
}

namespace {
// Loop M times: acc = acc + x (x from the outer scope); scan output: acc after each step.
op::ModelProto loop_model(bool trip_known, bool scan_output) {
  op::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", kFloat, {2});
  if (trip_known) {
    *g->add_initializer() = int64_tensor("M", {}, {3});
  } else {
    add_input(g, "M", kInt64, {});
  }
  *g->add_initializer() = float_tensor("acc0", {2}, {0, 0});
  op::GraphProto body;
  body.set_name("body");
  add_input(&body, "i", kInt64, {});
  add_input(&body, "c_in", kBool, {});
  add_input(&body, "acc", kFloat, {2});
  add_node(&body, "Identity", {"c_in"}, {"c_out"});
  add_node(&body, "Add", {"acc", "x"}, {"acc_out"});
  add_output(&body, "c_out", kBool, {});
  add_output(&body, "acc_out", kFloat, {2});
  if (scan_output) {
    add_node(&body, "Identity", {"acc_out"}, {"scan"});
    add_output(&body, "scan", kFloat, {2});
  }
  auto* loop = add_node(g, "Loop", {"M", "", "acc0"}, scan_output ? std::vector<std::string>{"acc_final", "accs"}
                                                                  : std::vector<std::string>{"acc_final"}, "loop");
  add_graph_attr(loop, "body", body);
  add_output(g, "acc_final", kFloat, {2});
  if (scan_output) add_output(g, "accs", kFloat, {3, 2});
  return m;
}
}  // namespace

TEST(OnnxImport, LoopWithRuntimeTripCount) {
  dfo::OnnxModel m = import(loop_model(false, false));
  Tensor x = constant({1, 2});
  expect_values(m.run({{"x", x}, {"M", scalar(3, DType::Int64)}}).at("acc_final"), {3, 6});
  expect_values(m.run({{"x", x}, {"M", scalar(0, DType::Int64)}}).at("acc_final"), {0, 0});
}

TEST(OnnxImport, LoopWithScanOutputs) {
  dfo::OnnxModel m = import(loop_model(true, true));
  auto out = m.run({{"x", constant({1, 2})}});
  expect_values(out.at("acc_final"), {3, 6});
  EXPECT_EQ(out.at("accs").shape(), Shape({3, 2}));
  expect_values(out.at("accs"), {1, 2, 2, 4, 3, 6});
}

TEST(OnnxImport, ScanCumulativeSum) {
  op::ModelProto m = make_model(11);
  auto* g = m.mutable_graph();
  add_input(g, "s0", kFloat, {2});
  add_input(g, "xs", kFloat, {3, 2});
  op::GraphProto body;
  body.set_name("body");
  add_input(&body, "s", kFloat, {2});
  add_input(&body, "x", kFloat, {2});
  add_node(&body, "Add", {"s", "x"}, {"s_out"});
  add_node(&body, "Identity", {"s_out"}, {"y"});
  add_output(&body, "s_out", kFloat, {2});
  add_output(&body, "y", kFloat, {2});
  auto* scan = add_node(g, "Scan", {"s0", "xs"}, {"s_final", "ys"}, "scan");
  add_graph_attr(scan, "body", body);
  add_int_attr(scan, "num_scan_inputs", 1);
  add_output(g, "s_final", kFloat, {2});
  add_output(g, "ys", kFloat, {3, 2});
  auto out = import(m).run({{"s0", zeros({2})}, {"xs", constant({1, 2, 3, 4, 5, 6}, {3, 2})}});
  expect_values(out.at("s_final"), {9, 12});
  expect_values(out.at("ys"), {1, 2, 4, 6, 9, 12});
}

TEST(OnnxImport, RunChecksInputs) {
  dfo::OnnxModel m = import(add_relu_model());
  auto err = [&](const std::map<std::string, Tensor>& in) -> std::string {
    try {
      m.run(in);
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_NE(err({}).find("[onnx::run] test.onnx: missing input 'x'"), std::string::npos) << err({});
  EXPECT_NE(err({{"x", zeros({2, 3})}, {"z", zeros({1})}}).find("unknown input 'z'"), std::string::npos);
  EXPECT_NE(err({{"x", zeros({2, 3}, DType::Int32)}}).find("must be float32, got int32"), std::string::npos)
      << err({{"x", zeros({2, 3}, DType::Int32)}});
  EXPECT_NE(err({{"x", zeros({3, 3})}}).find("must have shape [2,3], got [3,3]"), std::string::npos)
      << err({{"x", zeros({3, 3})}});
}

TEST(OnnxImport, ReadTensorFile) {
  std::string path = (std::filesystem::temp_directory_path() / "df_onnx_tensor.pb").string();
  {
    std::ofstream f(path, std::ios::binary);
    f << float_tensor("t", {2, 2}, {1, 2, 3, 4}, true).SerializeAsString();
  }
  Tensor t = dfo::read_tensor_file(path);
  EXPECT_EQ(t.shape(), Shape({2, 2}));
  expect_values(t, {1, 2, 3, 4});
  {
    std::ofstream f(path, std::ios::binary);
    f << "\xff\xff\xff";
  }
  EXPECT_THROW(dfo::read_tensor_file(path), Error);
  std::remove(path.c_str());
}

TEST(OnnxImport, RegistryPicksTheHighestSinceAtOrBelowTheOpset) {
  static dfo::OpImporterRegistrar r1("DfTestOp", 7, [](dfo::NodeContext&) { return TensorList{scalar(7)}; });
  static dfo::OpImporterRegistrar r2("DfTestOp", 13, [](dfo::NodeContext&) { return TensorList{scalar(13)}; });
  EXPECT_EQ(dfo::find_op_importer("DfTestOp", 6), nullptr);
  EXPECT_NE(dfo::find_op_importer("DfTestOp", 12), nullptr);
  auto types = dfo::registered_op_types();
  EXPECT_TRUE(std::is_sorted(types.begin(), types.end()));
  EXPECT_TRUE(std::find(types.begin(), types.end(), "Loop") != types.end());
  op::ModelProto m = make_model(12);
  add_node(m.mutable_graph(), "DfTestOp", {}, {"y"});
  add_output(m.mutable_graph(), "y", kFloat, {});
  EXPECT_FLOAT_EQ(import(m).run({}).at("y").item<float>(), 7);
  m.mutable_opset_import(0)->set_version(13);
  EXPECT_FLOAT_EQ(import(m).run({}).at("y").item<float>(), 13);
}

// torch's x.view(x.size(0), ...): Shape -> Gather -> Unsqueeze -> Concat -> Reshape with a
// dynamic batch, then a channel shuffle and x.view(b, -1) (a -1 next to the unknown batch).
op::ModelProto partial_shape_model() {
  op::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", kFloat, {-1, 6, 2});
  add_output(g, "z", kFloat, {-1, 12});
  *g->add_initializer() = int64_tensor("i0", {}, {0});
  *g->add_initializer() = int64_tensor("ax0", {1}, {0});
  *g->add_initializer() = int64_tensor("rest", {3}, {3, 2, 2});
  *g->add_initializer() = int64_tensor("minus1", {1}, {-1});
  add_node(g, "Shape", {"x"}, {"s"}, "shape");
  add_node(g, "Gather", {"s", "i0"}, {"b"}, "gather");
  add_node(g, "Unsqueeze", {"b", "ax0"}, {"bu"}, "unsqueeze");
  add_int_attr(add_node(g, "Concat", {"bu", "rest"}, {"target"}, "concat"), "axis", 0);
  add_node(g, "Reshape", {"x", "target"}, {"y"}, "reshape");
  auto* t = add_node(g, "Transpose", {"y"}, {"yt"}, "transpose");
  auto* perm = t->add_attribute();
  perm->set_name("perm");
  perm->set_type(op::AttributeProto::INTS);
  for (int64_t p : {0, 2, 1, 3}) perm->add_ints(p);
  add_int_attr(add_node(g, "Concat", {"bu", "minus1"}, {"flat"}, "concat2"), "axis", 0);
  add_node(g, "Reshape", {"yt", "flat"}, {"z"}, "reshape2");
  return m;
}

TEST(OnnxImport, PartlyKnownShapeChainWithDynamicBatch) {
  dfo::OnnxModel m = import(partial_shape_model());
  for (int64_t batch : {1, 4}) {
    std::vector<float> xv(size_t(batch * 12));
    for (size_t i = 0; i < xv.size(); ++i) xv[i] = float(i);
    Tensor z = m.run({{"x", constant(xv, Shape{batch, 6, 2})}}).at("z");
    ASSERT_EQ(z.shape(), Shape({batch, 12}));
    // z[b] = x[b] viewed [3,2,2], dims 0 and 1 swapped, flattened.
    std::vector<float> want;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t j = 0; j < 2; ++j)
        for (int64_t i = 0; i < 3; ++i)
          for (int64_t k = 0; k < 2; ++k) want.push_back(float(b * 12 + i * 4 + j * 2 + k));
    expect_values(z, want);
  }
  EXPECT_EQ(m.function().trace_count(), 1);
}

TEST(OnnxImport, PartlyKnownShapeWhereAFullValueIsNeeded) {
  // Shape of a dynamic batch as a graph output: no run-time Shape to compute it.
  op::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", kFloat, {-1, 3});
  add_output(g, "s", kInt64, {2});
  add_node(g, "Shape", {"x"}, {"s"}, "shape");
  EXPECT_NE(import_error(m).find("output 's' is a shape value only partly known at import time ([?,3])"), std::string::npos) << import_error(m);
  // ... and as a float operand: named, with the partial value.
  op::ModelProto m3 = make_model(13);
  auto* g3 = m3.mutable_graph();
  add_input(g3, "x", kFloat, {-1, 3});
  add_output(g3, "y", kFloat, {2});
  add_node(g3, "Shape", {"x"}, {"s"}, "shape");
  add_node(g3, "Cast", {"s"}, {"y"}, "cast");
  add_int_attr(g3->mutable_node(1), "to", 1);
  EXPECT_NE(import_error(m3).find("input 0 (s) is a shape value only partly known at import time ([?,3])"), std::string::npos) << import_error(m3);
}
