// SPDX-License-Identifier: Apache-2.0
// The graph text form: print -> parse -> print round trips, exact values, functions,
// and the error messages of malformed text.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "deepflow/deepflow.h"
#include "deepflow/graph/builder.h"
#include "deepflow/graph/executor.h"
#include "deepflow/graph/text.h"
#include "graph_test_util.h"
#if __has_include("deepflow/function/control_flow.h")
#include "deepflow/function/control_flow.h"
#define DF_HAVE_CONTROL_FLOW 1
#endif

namespace deepflow {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

void expect_parse_error(const std::string& text, const std::string& message);

// Prints, parses (with the same variables), prints again: same text, equal graph.
std::shared_ptr<Graph> round_trip(const Graph& g) {
  std::string text = print_graph(g);
  std::shared_ptr<Graph> back;
  try {
    back = parse_graph(text, {.variables = graph_variables(g)});
  } catch (const Error& e) {
    ADD_FAILURE() << e.what() << "\n" << text;
    return nullptr;
  }
  EXPECT_EQ(print_graph(*back), text);
  std::string why;
  EXPECT_TRUE(graph_equal(g, *back, &why)) << why << "\n" << text;
  return back;
}

TEST(GraphText, RoundTripsAModelWithManyOps) {
  auto g = testing_util::many_ops_graph();
  auto back = round_trip(*g);
  ASSERT_TRUE(back);
  EXPECT_EQ(g->to_string(), print_graph(*g));
  // Without the variables, new zero variables of the same names and types are made.
  auto fresh = parse_graph(print_graph(*g));
  EXPECT_EQ(print_graph(*fresh), print_graph(*g));
  EXPECT_FALSE(graph_equal(*g, *fresh));  // variables differ by identity
}

TEST(GraphText, PrintsTheDocumentedForm) {
  auto g = std::make_shared<Graph>();
  Variable w(constant({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {2, 3}), "w");
  {
    GraphScope scope(g);
    Tensor x = placeholder(DType::Float32, {-1, 3}, "x");
    Tensor y;
    {
      DeviceScope dev("/cpu:1");
      y = matmul(x, w.value(), false, true);
    }
    auto [values, indices] = top_k(y, 1);
    ControlDependencies deps({values});
    cast(indices, DType::Int64);
  }
  EXPECT_EQ(print_graph(*g),
            "%x = placeholder() {dtype=f32, shape=[-1, 3]} : f32[?,3]\n"
            "%read_variable = read_variable() {variable=var<\"w\", f32[2,3]>} : f32[2,3] @\"/cpu:1\"\n"
            "%matmul = matmul(%x, %read_variable) {transpose_a=false, transpose_b=true} : f32[?,2] @\"/cpu:1\"\n"
            "%top_k = top_k(%matmul) {k=1, sorted=true} : f32[?,1], i32[?,1]\n"
            "%cast = cast(%top_k:1) ^%top_k {dtype=i64} : i64[?,1]\n");
  round_trip(*g);
}

TEST(GraphText, ValuesAreExact) {
  const float f32s[] = {0.1f, -0.0f, 1e-45f, std::numeric_limits<float>::max(), std::numeric_limits<float>::min(),
                        std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(), 3.0f,
                        16777217.0f, 1.17549421e-38f};
  const double f64s[] = {0.1, 1.0 / 3, 5e-324, std::numeric_limits<double>::max(), -2.5e-300, 1e22, 123456789012345678.0};
  auto g = std::make_shared<Graph>();
  {
    GraphScope scope(g);
    identity(constant(std::vector<float>(std::begin(f32s), std::end(f32s))));
    identity(constant(std::vector<double>(std::begin(f64s), std::end(f64s))));
    std::vector<double> wide = {0.1, 65504, -6.1035156e-05, 5.9604645e-08, 1.0 / 3, 0.0};
    identity(constant(wide, {2, 3}, DType::Float16));
    identity(constant(wide, {3, 2}, DType::BFloat16));
    identity(constant(std::vector<int64_t>{std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), 0}));
    identity(constant(std::vector<int32_t>{std::numeric_limits<int32_t>::min(), 7}));
    identity(constant(std::vector<double>{-128, 127}, {2}, DType::Int8));
    identity(constant(std::vector<double>{0, 255}, {1, 2}, DType::UInt8));
    identity(constant(std::vector<double>{1, 0, 1}, {3}, DType::Bool));
    identity(constant(std::vector<double>{}, {0, 3}, DType::Float32));
    identity(scalar(2.5, DType::Float64));
    pad(placeholder(DType::Float32, {2}, "p"), {{1, 1}}, "CONSTANT", 0.1);
  }
  auto back = round_trip(*g);
  ASSERT_TRUE(back);
  std::string text = print_graph(*g);
  EXPECT_THAT(text, HasSubstr("tensor<f32[10]>[0.1, -0, 1e-45, 3.4028235e+38, 1.1754944e-38, inf, -inf, 3, 16777216, "));
  EXPECT_THAT(text, HasSubstr("tensor<bool[3]>[true, false, true]"));
  EXPECT_THAT(text, HasSubstr("tensor<f32[0,3]>[]"));
  EXPECT_THAT(text, HasSubstr("tensor<f64[]>[2.5]"));
  EXPECT_THAT(text, HasSubstr("{paddings=[1, 1], constant_value=0.1} : f32[4]"));
}

TEST(GraphText, NansKeepTheirBits) {
  auto bits_f32 = [](uint32_t b) { float f; std::memcpy(&f, &b, 4); return f; };
  auto bits_f64 = [](uint64_t b) { double d; std::memcpy(&d, &b, 8); return d; };
  Tensor h(Shape{3}, DType::Float16), bf(Shape{2}, DType::BFloat16);
  h.data<Half>()[0].bits = 0x7e00;  // the quiet NaN: "nan"
  h.data<Half>()[1].bits = 0xfc01;  // a signalling NaN with a payload
  h.data<Half>()[2].bits = 0x3c00;
  bf.data<BFloat16>()[0].bits = 0xffc0;
  bf.data<BFloat16>()[1].bits = 0x7f81;
  auto g = std::make_shared<Graph>();
  {
    GraphScope scope(g);
    identity(constant({std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                       bits_f32(0x7fc00001u), 1.f}));
    identity(constant(std::vector<double>{bits_f64(0xfff0000000000001ull)}));
    identity(h);
    identity(bf);
    pad(placeholder(DType::Float32, {2}, "p"), {{1, 1}}, "CONSTANT", bits_f64(0x7ff8000000000123ull));
  }
  std::string text = print_graph(*g);
  EXPECT_THAT(text, HasSubstr("[nan, -nan, nan(0x7fc00001), 1]"));
  EXPECT_THAT(text, HasSubstr("[nan(0xfff0000000000001)]"));
  EXPECT_THAT(text, HasSubstr("tensor<f16[3]>[nan, nan(0xfc01), 1]"));
  EXPECT_THAT(text, HasSubstr("tensor<bf16[2]>[-nan, nan(0x7f81)]"));
  EXPECT_THAT(text, HasSubstr("constant_value=nan(0x7ff8000000000123)"));
  round_trip(*g);
  expect_parse_error("%c = const() {value=tensor<f32[1]>[nan(0x3f800000)]} : f32[1]\n", "line 1: bad NaN 'nan(0x3f800000)'");
}

TEST(GraphText, NamesAndStringsNeedingQuotes) {
  auto g = std::make_shared<Graph>();
  {
    GraphScope scope(g);
    Tensor x = placeholder(DType::Float32, {1, 4, 4, 1}, "odd name:1 \"q\"");
    NameScope ns("block-1/conv.2");
    conv2d(x, ones({3, 3, 1, 2}), {1, 1}, "SAME");
  }
  std::string text = print_graph(*g);
  EXPECT_THAT(text, HasSubstr("%\"odd name:1 \\\"q\\\"\" = placeholder()"));
  EXPECT_THAT(text, HasSubstr("%block-1/conv.2/conv2d = conv2d(%\"odd name:1 \\\"q\\\"\", %block-1/conv.2/const)"));
  EXPECT_THAT(text, HasSubstr("padding=\"SAME\""));
  round_trip(*g);
}

TEST(GraphText, FunctionsArePrintedBeforeUse) {
  auto g = testing_util::graph_with_functions();
  auto back = round_trip(*g);
  ASSERT_TRUE(back);
  std::string text = print_graph(*g);
  // The shared body is printed once; the nested one comes before the function using it.
  EXPECT_EQ(text.find("func @call.body("), text.rfind("func @call.body("));
  EXPECT_LT(text.find("func @outer/call.body("), text.find("func @call.body(")) << text;
  EXPECT_THAT(text, HasSubstr("func @call.body(%a, %b) -> (%sum, %b) {\n  %a = placeholder()"));
  EXPECT_THAT(text, HasSubstr("body=@call.body"));
  EXPECT_THAT(text, HasSubstr("inputs(%x)\noutputs(%call, %call:1)\n"));
  // The parsed functions are shared the same way.
  const Node& c1 = back->node(back->find("call"));
  const Node& c2 = back->node(back->find("call_again"));
  EXPECT_EQ(std::get<GraphRef>(*c1.attrs.find("body")), std::get<GraphRef>(*c2.attrs.find("body")));
}

TEST(GraphText, ParsesHandWrittenTextWithForwardReferencesAndComments) {
  const char* text = R"(
    # y = relu(x @ w + b), written out of order
    %y = relu(%sum) : f32[2,2]
    %sum = add(%mm, %b) : f32[2,2]
    %mm = matmul(%x, %w) {transpose_b=true} : f32[2,2]
    %x = placeholder() {dtype=f32, shape=[2, 2]} : f32[2,2]
    %w = const() {value=tensor<f32[2,2]>[1, 0, 0, -1]} : f32[2,2]
    %b = const() {value=tensor<f32[2]>[0.5, 0.5]} : f32[2]
    inputs(%x)
    outputs(%y)
  )";
  auto g = parse_graph(text);
  EXPECT_EQ(g->num_nodes(), 6);
  EXPECT_EQ(g->inputs, std::vector<int>{3});
  ASSERT_EQ(g->outputs.size(), 1u);
  TensorList out = execute(*g, {{ValueRef{3, 0}, constant({1.f, 2.f, 3.f, -4.f}, {2, 2})}}, {g->outputs[0]});
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{1.5f, 0.f, 3.5f, 4.5f}));
}

TEST(GraphText, VariablesResolveByNameOrAreCreated) {
  Variable v(constant({1.f, 2.f}), "v");
  const char* text =
      "%r = read_variable() {variable=var<\"v\", f32[2]>} : f32[2]\n"
      "%s = read_variable() {variable=var<\"v\", f32[2]>} : f32[2]\n"
      "%a = assign_variable(%r) {variable=var<\"v\", f32[2]>} : ()\n";
  auto g = parse_graph(text, {.variables = {{"v", v}}});
  EXPECT_EQ(std::get<Variable>(*g->node(0).attrs.find("variable")).id(), v.id());
  auto fresh = parse_graph(text);
  Variable made = std::get<Variable>(*fresh->node(0).attrs.find("variable"));
  EXPECT_NE(made.id(), v.id());
  EXPECT_EQ(std::get<Variable>(*fresh->node(2).attrs.find("variable")).id(), made.id());  // one per name
  EXPECT_EQ(made.name(), "v");
  EXPECT_EQ(made.value().to_vector<float>(), (std::vector<float>{0, 0}));
  EXPECT_THAT([&] { parse_graph(text, {.variables = {{"v", Variable(ones({3}), "v")}}}); },
              ThrowsMessage<Error>(HasSubstr("line 1: variable 'v' is f32[2] here but f32[3] in ParseOptions::variables")));
  EXPECT_THAT([&] { parse_graph("%r = read_variable() {variable=var<\"big\", f32[65536,65536]>} : f32[65536,65536]"); },
              ThrowsMessage<Error>(HasSubstr("is too large to create")));
  // Distinct variables with one name get distinct printed names.
  Variable a(ones({1}), "w"), b(ones({1}), "w");
  auto g2 = std::make_shared<Graph>();
  {
    GraphScope scope(g2);
    Tensor s = a.value() + b.value();
  }
  EXPECT_THAT(print_graph(*g2), HasSubstr("var<\"w_1\", f32[1]>"));
  round_trip(*g2);
}

// The example of docs/graph_text.md.
TEST(GraphText, TheDocumentedExampleParsesAndRoundTrips) {
  try {
    op_id_from_name("cond");
  } catch (const Error&) {
    GTEST_SKIP() << "cond is not registered yet";
  }
  const std::string text = R"(func @pick.then_branch(%x) -> (%square) {
  %x = placeholder() {dtype=f32, shape=[-1, 8]} : f32[?,8]
  %square = square(%x) : f32[?,8]
}
func @pick.else_branch(%x) -> (%neg) {
  %x = placeholder() {dtype=f32, shape=[-1, 8]} : f32[?,8]
  %neg = neg(%x) : f32[?,8]
}
%input = placeholder() {dtype=f32, shape=[-1, 16]} : f32[?,16]
%dense/read_variable = read_variable() {variable=var<"dense/w", f32[16,8]>} : f32[16,8]
%dense/matmul = matmul(%input, %dense/read_variable) {transpose_a=false, transpose_b=false} : f32[?,8] @"/cpu:1"
%top = top_k(%dense/matmul) {k=2, sorted=true} : f32[?,2], i32[?,2]
%flag = const() {value=tensor<bool[]>[true]} : bool[]
%pick = cond(%flag, %dense/matmul) ^%top {then_branch=@pick.then_branch, else_branch=@pick.else_branch} : f32[?,8]
%indices = cast(%top:1) {dtype=i64} : i64[?,2]
inputs(%input)
outputs(%pick, %indices)
)";
  auto g = parse_graph(text);
  EXPECT_EQ(print_graph(*g), text);
}

#ifdef DF_HAVE_CONTROL_FLOW
TEST(GraphText, CondAndWhileBuiltByTheirHelpersRoundTrip) {
  auto g = std::make_shared<Graph>();
  {
    GraphScope scope(g);
    Tensor x = placeholder(DType::Float32, {3}, "x");
    TensorList y = cond(greater(reduce_sum(x), scalar(0.0)), [&] { return TensorList{x * x}; }, [&] { return TensorList{-x}; });
    TensorList r = while_loop([](const TensorList& v) { return less(v[0], scalar(5, DType::Int64)); },
                              [&](const TensorList& v) { return TensorList{v[0] + int64_t(1), v[1] * y[0]}; },
                              {scalar(0, DType::Int64), x}, 10);
    g->outputs = {g->value_of(r[1])};
  }
  auto back = round_trip(*g);
  ASSERT_TRUE(back);
  EXPECT_THAT(print_graph(*g), HasSubstr("func @cond.then_branch("));
  Tensor in = constant({1.f, -2.f, 3.f});
  EXPECT_EQ(execute(*back, {{ValueRef{0, 0}, in}}, {back->outputs[0]})[0].to_vector<float>(),
            execute(*g, {{ValueRef{0, 0}, in}}, {g->outputs[0]})[0].to_vector<float>());
}
#endif

void expect_parse_error(const std::string& text, const std::string& message) {
  EXPECT_THAT([&] { parse_graph(text); }, ThrowsMessage<Error>(HasSubstr(message))) << text;
}

TEST(GraphText, ErrorsNameTheLineAndTheProblem) {
  const std::string x = "%x = placeholder() {dtype=f32, shape=[2]} : f32[2]\n";
  expect_parse_error(x + "%y = exp(%x) : f32[2]\n%z = matmal(%x, %y) : f32[2]\n",
                     "[parse_graph] line 3: unknown op 'matmal'");
  expect_parse_error(x + "%y = exp(%nope) : f32[2]\n", "[parse_graph] line 2: undefined value '%nope'");
  expect_parse_error(x + "%y = exp(%x) ^%ghost : f32[2]\n", "line 2: undefined value '%ghost'");
  expect_parse_error(x + "%y = exp(%x:1) : f32[2]\n", "line 2: '%x' has 1 outputs, there is no '%x:1'");
  expect_parse_error(x + "%y = matmul(%x, %x) {transpose_a=3} : f32[2]\n",
                     "line 2: [matmul] attribute 'transpose_a' must be bool, got int 3");
  expect_parse_error(x + "%y = matmul(%x, %x) {bogus=true} : f32[2]\n", "line 2: [matmul] unknown attribute 'bogus'");
  expect_parse_error("%x = placeholder() {shape=[2]} : f32[2]\n", "line 1: [placeholder] missing required attribute 'dtype'");
  expect_parse_error(x + "%y = exp(%x, %x) : f32[2]\n", "line 2: 'exp' takes 1 inputs, got 2");
  expect_parse_error(x + "%y = exp(%x : f32[2]\n", "line 2: expected ')' to close the inputs, got ':");
  expect_parse_error(x + "%y = exp(%x) f32[2]\n", "line 2: expected ':' before the output types, got 'f32[2]");
  expect_parse_error(x + "%y = exp(%x) : f33[2]\n", "line 2: unknown dtype 'f33'");
  expect_parse_error(x + "%y = exp(%x) : f32[-2]\n", "line 2: a dimension must be >= 0 or '?', got -2");
  expect_parse_error(x + x, "line 2: node '%x' is defined twice");
  expect_parse_error("%\"^a\" = no_op() : ()\n", "line 1: node name '^a' starts with '^'");
  expect_parse_error("%c = const() {value=tensor<f32[2,2]>[1, 2, 3]} : f32[2,2]\n",
                     "line 1: tensor<f32[2,2]> needs 4 elements, got 3");
  expect_parse_error("%c = const() {value=tensor<i8[1]>[300]} : i8[1]\n", "element 300 is out of range [-128, 127]");
  expect_parse_error("%c = const() {value=tensor<f32[1]>[1e99]} : f32[1]\n", "number '1e99' is out of range");
  expect_parse_error("%c = const() {value=tensor<bool[1]>[1]} : bool[1]\n", "must be true or false, got '1'");
  expect_parse_error("%s = identity(%s) : f32[]\n", "[graph] cycle through node 's'");
  expect_parse_error("%s = const() {value=\"abc} : f32[]\n", "line 1: unterminated string");
  expect_parse_error("%s = no_op() {} : () @\"/cpu:0\" garbage\n", "line 1: expected a node");
  expect_parse_error("%f = no_op() {g=@nowhere} : ()\n", "line 1: undefined function '@nowhere'");
  expect_parse_error("func @f(%a) -> (%a) {\n  %a = exp(%a) : f32[2]\n}\n",
                     "line 1: input '%a' is a exp node, not a placeholder");
  expect_parse_error("func @f() -> () {\n  %a = no_op() : ()\n", "line 1: function '@f' has no closing '}'");
  // After parsing, validate() catches what needs the whole graph.
  expect_parse_error(x + "%a = exp(%b) : f32[2]\n%b = exp(%a) : f32[2]\n", "[parse_graph] [graph] cycle through node 'a'");
  expect_parse_error(x + "%a = exp(%x) : f32[3]\n", "[parse_graph] [graph] node 'a' output 0 is recorded as [3], its op gives [2]");
  expect_parse_error(x + "%a = cast(%x) {dtype=i32} : f32[2]\n", "node 'a' output 0 is recorded as float32, its op gives int32");
  expect_parse_error("func @f(%a) -> (%a) {\n  %a = placeholder() {dtype=f32} : f32[2]\n}\n",
                     "[parse_graph] in func @f: [graph] node 'a' output 0 is recorded as [2], its op gives []");
}

TEST(GraphText, UnknownCustomOpsAndAttrKindsAreChecked) {
  testing_util::register_test_ops();
  expect_parse_error("%a = text_test_op() {f=\"no\"} : f32[]\n",
                     "line 1: [text_test_op] attribute 'f' must be float, got string \"no\"");
  // An int literal is accepted where the schema wants a float, and [] where it wants floats.
  auto g = parse_graph("%a = text_test_op() {f=2, fs=[]} : f32[], i32[2]\n");
  EXPECT_EQ(std::get<double>(*g->node(0).attrs.find("f")), 2.0);
  EXPECT_EQ(print_graph(*g), "%a = text_test_op() {f=2.0, fs=[]} : f32[], i32[2]\n");
}

}  // namespace
}  // namespace deepflow
