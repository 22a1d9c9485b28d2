// SPDX-License-Identifier: Apache-2.0
// Every op-table row three ways, with equal results (ARCHITECTURE: "eager, graph and
// traced results equal"):
//   eager    the row's ops run directly;
//   graph    the same calls inside a GraphScope on placeholders of the row's input
//            shapes, run by the executor on the same input values;
//   unknown  the same with the leading dim of every input of rank >= 1 unknown (-1),
//            the "generalized batch" a traced function falls back to.
// Forward outputs must be exactly equal (the executor runs the same kernels). For rows
// with gradcheck, the gradient of gradcheck's projected loss, built by a GradientTape
// inside the graph (symbolic), must equal the eager tape's exactly as well.
//
// Skipped, each with its reason: error rows, rows whose eager results differ from run to
// run (random ops, by design), and the unknown mode for rows that set
// graph_unknown_dims = false or have no input of rank >= 1. A summary is printed at
// the end of the run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <random>

#include "deepflow/graph/builder.h"
#include "deepflow/graph/executor.h"
#include "op_cases.h"

namespace deepflow::testing {
namespace {


// Which inputs get gradients: grad_inputs, or every floating input (as gradcheck).
std::vector<int> grad_indices(const OpCase& c, const TensorList& xs) {
  if (!c.grad_inputs.empty()) return c.grad_inputs;
  std::vector<int> idx;
  for (int i = 0; i < int(xs.size()); ++i)
    if (is_floating(xs[size_t(i)].dtype())) idx.push_back(i);
  return idx;
}

// gradcheck's projection: sum_k sum(out_k * w_k) with fixed weights in [0.5, 1.5) of the
// eager output shapes (they broadcast against symbolic outputs with unknown dims).
Tensor projected_loss(const TensorList& outs, const TensorList& eager_outs) {
  uint64_t state = 0x9E3779B97F4A7C15ull;
  Tensor loss;
  for (size_t k = 0; k < outs.size(); ++k) {
    const Tensor& e = eager_outs[k];
    if (!is_floating(e.dtype())) continue;
    std::vector<double> w(size_t(e.size()));
    for (double& v : w) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      v = 0.5 + double(state >> 11) * (1.0 / 9007199254740992.0);
    }
    Tensor term = reduce_sum(mul(outs[k], constant(w, e.shape(), e.dtype())));
    loss = loss.defined() ? add(loss, term) : term;
  }
  return loss;
}

struct Result {
  TensorList outs, grads;
};

Result run_eager(const OpCase& c, const TensorList& inputs, bool with_grads) {
  TensorList xs;
  for (const Tensor& t : inputs) xs.push_back(t.clone());
  Result r;
  if (!with_grads) {
    r.outs = run_row(c, xs);
    return r;
  }
  GradientTape tape;
  TensorList sources;
  for (int i : grad_indices(c, xs)) {
    tape.watch(xs[size_t(i)]);
    sources.push_back(xs[size_t(i)]);
  }
  r.outs = run_row(c, xs);
  Tensor loss = projected_loss(r.outs, r.outs);
  if (loss.defined()) r.grads = tape.gradient({loss}, sources, UnconnectedGradients::Zero);
  return r;
}

// Builds the row (and its gradient) on placeholders, then executes it.
Result run_graph(const OpCase& c, const TensorList& xs, const std::vector<bool>& unknown_lead, const Result& eager,
                 bool with_grads) {
  auto g = std::make_shared<Graph>();
  TensorList phs, outs, grads;
  {
    GraphScope scope(g);
    for (size_t i = 0; i < xs.size(); ++i) {
      Shape s = xs[i].shape();
      if (unknown_lead[i] && s.rank() >= 1) s[0] = kUnknownDim;
      phs.push_back(placeholder(xs[i].dtype(), s, "x" + std::to_string(i)));
    }
    if (with_grads) {
      GradientTape tape;
      TensorList sources;
      for (int i : grad_indices(c, phs)) {
        tape.watch(phs[size_t(i)]);
        sources.push_back(phs[size_t(i)]);
      }
      outs = run_row(c, phs);
      Tensor loss = projected_loss(outs, eager.outs);
      if (loss.defined()) grads = tape.gradient({loss}, sources, UnconnectedGradients::Zero);
    } else {
      outs = run_row(c, phs);
    }
  }
  Feeds feeds;
  for (size_t i = 0; i < xs.size(); ++i) feeds.emplace_back(g->value_of(phs[i]), xs[i]);
  // Outputs not built in the graph (a composite returning a constant) are compared as they are.
  std::vector<ValueRef> fetches;
  TensorList all = outs;
  all.insert(all.end(), grads.begin(), grads.end());
  for (const Tensor& t : all)
    if (g->owns(t)) fetches.push_back(g->value_of(t));
  TensorList fetched = execute(*g, feeds, fetches);
  size_t next = 0;
  for (Tensor& t : all)
    if (g->owns(t)) t = fetched[next++];
  Result r;
  r.outs.assign(all.begin(), all.begin() + std::ptrdiff_t(outs.size()));
  r.grads.assign(all.begin() + std::ptrdiff_t(outs.size()), all.end());
  return r;
}

// Exact (tol 0) or close; returns false (with failures added) on a mismatch.
bool same(const Tensor& want, const Tensor& got, double rtol, const std::string& what) {
  if (!want.defined() || !got.defined()) {
    EXPECT_EQ(want.defined(), got.defined()) << what;
    return want.defined() == got.defined();
  }
  EXPECT_EQ(want.dtype(), got.dtype()) << what;
  EXPECT_EQ(want.shape(), got.shape()) << what;
  if (want.dtype() != got.dtype() || want.shape() != got.shape()) return false;
  int bad = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    const double a = want.flat(i), b = got.flat(i);
    const bool ok = (std::isnan(a) && std::isnan(b)) || a == b ||
                    std::fabs(a - b) <= rtol * std::max({1.0, std::fabs(a), std::fabs(b)});
    if (!ok && bad++ < 3) ADD_FAILURE() << what << ": element " << i << " eager " << a << " graph " << b;
  }
  return bad == 0;
}

bool same_lists(const TensorList& want, const TensorList& got, double rtol, const std::string& what) {
  EXPECT_EQ(want.size(), got.size()) << what;
  if (want.size() != got.size()) return false;
  bool ok = true;
  for (size_t i = 0; i < want.size(); ++i) ok &= same(want[i], got[i], rtol, what + " " + std::to_string(i));
  return ok;
}

// Exact equality without reporting (NaN equals NaN).
bool same_lists_quiet(const TensorList& a, const TensorList& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k].dtype() != b[k].dtype() || a[k].shape() != b[k].shape()) return false;
    for (int64_t i = 0; i < a[k].size(); ++i) {
      const double x = a[k].flat(i), y = b[k].flat(i);
      if (!(x == y || (std::isnan(x) && std::isnan(y)))) return false;
    }
  }
  return true;
}

// Gradients are exactly equal too: the run-time shape ops run the kernels of the static
// ops they stand for (sum_to_like: reduce_sum's, broadcast_like: broadcast_to's).
constexpr double kGradRtol = 0;

// --- the summary ---

struct Tally {
  int rows = 0;
  std::map<std::string, int> passed;  // "graph", "graph grad", "unknown", "unknown grad"
  std::map<std::string, int> ran;
  std::vector<std::string> skips;
};
Tally& tally() {
  static Tally t;
  return t;
}

class SummaryPrinter : public ::testing::Environment {
 public:
  void TearDown() override {
    const Tally& t = tally();
    if (t.rows == 0) return;
    std::printf("op_graph: %d rows\n", t.rows);
    for (const char* k : {"graph", "graph grad", "unknown", "unknown grad", "unknown batch", "unknown batch grad"})
      std::printf("  %-19s %4d of %4d pass\n", k, t.passed.count(k) ? t.passed.at(k) : 0,
                  t.ran.count(k) ? t.ran.at(k) : 0);
    std::printf("  skipped (%zu):\n", t.skips.size());
    for (const std::string& s : t.skips) std::printf("    %s\n", s.c_str());
  }
};
[[maybe_unused]] ::testing::Environment* const kSummary = ::testing::AddGlobalTestEnvironment(new SummaryPrinter);

void count(const std::string& mode, bool ok) {
  ++tally().ran[mode];
  tally().passed[mode] += ok;
}

// Runs one mode; an error anywhere is a failure of that mode. unknown_lead: the inputs whose
// leading dim the graph leaves unknown.
void check_mode(const OpCase& c, const char* mode, const std::vector<bool>& unknown_lead) {
  const DType fwd_dtype = c.dtypes.empty() ? DType::Float32 : c.dtypes[0];
  try {
    TensorList xs = make_inputs(c, fwd_dtype);
    Result want = run_eager(c, xs, false);
    // Random ops differ from call to call by design: nothing to compare.
    if (!same_lists_quiet(want.outs, run_eager(c, xs, false).outs)) {
      tally().skips.push_back(c.name + " (" + mode + "): eager results differ from run to run (random)");
      return;
    }
    Result got = run_graph(c, xs, unknown_lead, want, false);
    count(mode, same_lists(want.outs, got.outs, 0, c.name + " " + mode + " output"));
    if (!c.gradcheck) return;
    const std::string gmode = std::string(mode) + " grad";
    TensorList xd = make_inputs(c, DType::Float64);
    Result gwant = run_eager(c, xd, true);
    Result ggot = run_graph(c, xd, unknown_lead, gwant, true);
    count(gmode, same_lists(gwant.grads, ggot.grads, kGradRtol, c.name + " " + gmode));
  } catch (const std::exception& e) {
    ADD_FAILURE() << c.name << " " << mode << ": " << e.what();
    count(mode, false);
  }
}

// Ops whose rows cannot run in a plain graph.
const std::map<std::string, std::string> kNotInGraph = {
    {"send", "send/recv run only inside a partitioned graph run (tests/graph covers them)"},
    {"recv", "send/recv run only inside a partitioned graph run (tests/graph covers them)"},
};

class OpGraph : public ::testing::TestWithParam<OpCase> {};

TEST_P(OpGraph, EagerGraphAndUnknownDimsAgree) {
  const OpCase& c = GetParam();
  ++tally().rows;
  if (!c.error.empty()) {
    tally().skips.push_back(c.name + ": error row");
    GTEST_SKIP() << "error row";
  }
  if (auto it = kNotInGraph.find(c.op); it != kNotInGraph.end()) {
    tally().skips.push_back(c.name + ": " + it->second);
    GTEST_SKIP() << it->second;
  }
  check_mode(c, "graph", std::vector<bool>(c.inputs.size(), false));
  bool any_ranked = false;
  std::vector<bool> ranked;
  for (const InputSpec& s : c.inputs) {
    ranked.push_back(s.shape.rank() >= 1);
    any_ranked |= ranked.back();
  }
  if (!c.graph_unknown_dims) {
    tally().skips.push_back(c.name + " (unknown): graph_unknown_dims = false");
  } else if (!any_ranked) {
    tally().skips.push_back(c.name + " (unknown): no input of rank >= 1");
  } else {
    check_mode(c, "unknown", ranked);
  }
}

std::string row_label(const ::testing::TestParamInfo<OpCase>& info) {
  std::string s = info.param.name;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s + "_" + std::to_string(info.index);
}

INSTANTIATE_TEST_SUITE_P(Rows, OpGraph, ::testing::ValuesIn(all_op_cases()), row_label);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OpGraph);

// Convolution and pooling with only the batch unknown (the filters keep their static shape,
// which the filter gradient's filter_sizes needs): input_sizes carry -1 for the batch.
TEST(OpGraphUnknownBatch, ConvolutionAndPooling) {
  auto conv = [](Axes strides, const char* padding, Axes dilations = {1, 1}) {
    return Attrs{{"strides", strides}, {"padding", std::string(padding)}, {"dilations", dilations}};
  };
  auto pool = [](const char* padding) {
    return Attrs{{"ksize", Axes{2, 2}}, {"strides", Axes{2, 2}}, {"padding", std::string(padding)}};
  };
  const std::vector<OpCase> rows = {
      {.name = "conv2d/valid", .op = "conv2d", .inputs = {in({2, 6, 7, 3}), in({3, 2, 3, 4})}, .attrs = conv({1, 1}, "VALID")},
      {.name = "conv2d/strides2-same", .op = "conv2d", .inputs = {in({3, 7, 8, 2}), in({3, 3, 2, 3})},
       .attrs = conv({2, 2}, "SAME")},
      {.name = "conv2d/groups-dilation", .op = "conv2d", .inputs = {in({2, 7, 7, 4}), in({2, 2, 2, 6})},
       .attrs = conv({1, 1}, "SAME", {2, 2})},
      {.name = "depthwise_conv2d", .inputs = {in({2, 5, 5, 3}), in({3, 3, 3, 2})},
       .fn = [](const TensorList& x) { return TensorList{depthwise_conv2d(x[0], x[1], {1, 1}, "SAME")}; }},
      {.name = "conv2d/second-order", .inputs = {in({2, 5, 5, 2}), in({3, 3, 2, 2})},
       .fn = [](const TensorList& x) {
         GradientTape t;
         t.watch(x[0]);
         Tensor y = reduce_sum(square(conv2d(x[0], x[1], {1, 1}, "SAME")));
         return TensorList{t.gradient(y, x[0])};
       }},
      {.name = "max_pool", .op = "max_pool", .inputs = {in({3, 6, 5, 2})}, .attrs = pool("SAME")},
      {.name = "avg_pool", .op = "avg_pool", .inputs = {in({3, 6, 5, 2})}, .attrs = pool("SAME")},
      {.name = "avg_pool/valid", .op = "avg_pool", .inputs = {in({2, 6, 6, 3})}, .attrs = pool("VALID")},
  };
  for (const OpCase& c : rows) {
    SCOPED_TRACE(c.name);
    std::vector<bool> batch_only(c.inputs.size(), false);
    batch_only[0] = true;
    check_mode(c, "unknown batch", batch_only);
  }
}

}  // namespace
}  // namespace deepflow::testing
