// SPDX-License-Identifier: Apache-2.0
// Devices, placement and partitioning: a model split across /cpu:0 and /cpu:1 gives
// bit-identical results, and a failing part never leaves the other one waiting.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "deepflow/deepflow.h"
#include "deepflow/graph/builder.h"
#include "deepflow/graph/executor.h"
#include "deepflow/graph/partition.h"
#include "deepflow/graph/placement.h"
#include "deepflow/graph/session.h"
#include "deepflow/ops/kernel.h"

namespace deepflow {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// Throws after a short sleep (so the other device is already waiting in recv).
OpId slow_failing_op() {
  static const OpId id = [] {
    OpId op = register_custom_op(OpDef{
        .name = "partition_test_fail",
        .num_inputs = 1,
        .infer = [](const OpCall& c, TypeList& out) { out.push_back({c.in(0).dtype(), c.in(0).shape()}); },
        .non_differentiable = true,
    });
    register_kernel(op, KernelDef{.run = [](const OpCall&, TensorList&) {
                      std::this_thread::sleep_for(std::chrono::milliseconds(20));
                      fail("[partition_test_fail] broken on purpose");
                    }});
    return op;
  }();
  return id;
}

TEST(Placement, DevicesAreCanonicalAndChecked) {
  EXPECT_EQ(canonical_device("/cpu:1", 2), "/cpu:1");
  EXPECT_EQ(canonical_device("CPU:0", 2), "/cpu:0");
  EXPECT_EQ(canonical_device("/job:localhost/replica:0/task:0/device:CPU:1", 2), "/cpu:1");
  EXPECT_EQ(canonical_device("/cpu:2", 2), "");
  EXPECT_EQ(canonical_device("/gpu:0", 2), "");
  EXPECT_EQ(logical_devices(3), (std::vector<std::string>{"/cpu:0", "/cpu:1", "/cpu:2"}));
}

TEST(Placement, NodesFollowTheirInputsAndScopes) {
  auto g = std::make_shared<Graph>();
  Tensor x, a, b, c;
  {
    GraphScope scope(g);
    x = placeholder(DType::Float32, {2}, "x");
    {
      DeviceScope d("/cpu:1");
      a = exp(x);
    }
    b = a + 1.0;  // no device: follows its input a
    c = x * 2.0;  // no device anywhere upstream: the default
  }
  std::vector<int> order = g->topological_order();
  auto dev = place_nodes(*g, order, 2);
  EXPECT_EQ(dev[size_t(g->value_of(a).node)], "/cpu:1");
  EXPECT_EQ(dev[size_t(g->value_of(b).node)], "/cpu:1");
  EXPECT_EQ(dev[size_t(g->value_of(c).node)], "/cpu:0");
  EXPECT_EQ(dev[size_t(g->value_of(x).node)], "/cpu:1");  // a source sits with its first consumer
}

TEST(Placement, AnUnknownDeviceIsAnError) {
  auto g = std::make_shared<Graph>();
  Tensor y;
  {
    GraphScope scope(g);
    DeviceScope d("/cpu:5");
    y = exp(constant({1.f}));
  }
  EXPECT_THAT([&] { Session(g).run(y); },
              ThrowsMessage<Error>(HasSubstr("asks for device '/cpu:5', which is not one of /cpu:0 .. /cpu:1")));
  EXPECT_NO_THROW(Session(g, {.num_devices = 6}).run(y));
}

// A two-layer model with its layers on different devices, and the same model unplaced.
std::shared_ptr<Graph> two_layers(const TensorList& w, bool split, Tensor* x, Tensor* y) {
  auto g = std::make_shared<Graph>();
  GraphScope scope(g);
  *x = placeholder(DType::Float32, {-1, 32}, "x");
  Tensor h;
  {
    DeviceScope d(split ? "/cpu:0" : "");
    h = relu(matmul(*x, w[0]) + w[1]);
  }
  {
    DeviceScope d(split ? "/cpu:1" : "");
    *y = tanh(matmul(h, w[2]) + w[3]) * reduce_sum(h);
  }
  return g;
}

TEST(Partition, ASplitModelIsBitIdentical) {
  TensorList w = {random_uniform({32, 64}, -0.3, 0.3, DType::Float32, 1), random_uniform({64}, -0.1, 0.1, DType::Float32, 2),
                  random_uniform({64, 16}, -0.3, 0.3, DType::Float32, 3), random_uniform({16}, -0.1, 0.1, DType::Float32, 4)};
  Tensor x1, y1, x2, y2;
  auto whole = two_layers(w, false, &x1, &y1);
  auto split = two_layers(w, true, &x2, &y2);
  Executor one(whole, {whole->value_of(x1)}, {whole->value_of(y1)});
  Executor two(split, {split->value_of(x2)}, {split->value_of(y2)});
  EXPECT_EQ(one.devices(), (std::vector<std::string>{"/cpu:0"}));
  EXPECT_EQ(two.devices(), (std::vector<std::string>{"/cpu:0", "/cpu:1"}));
  int sends = 0, recvs = 0;
  for (const Node& n : two.executed_graph().nodes()) {
    sends += n.op == OpId::Send;
    recvs += n.op == OpId::Recv;
  }
  EXPECT_EQ(sends, 1);  // h crosses once, shared by its two consumers on /cpu:1
  EXPECT_EQ(recvs, 1);
  for (int i = 0; i < 10; ++i) {
    Tensor batch = random_uniform({8, 32}, -1, 1, DType::Float32, uint64_t(10 + i));
    EXPECT_EQ(one.run({batch})[0].to_vector<float>(), two.run({batch})[0].to_vector<float>()) << "batch " << i;
  }
  // Through a session too.
  Tensor batch = random_uniform({8, 32}, -1, 1, DType::Float32, 99);
  EXPECT_EQ(Session(split).run({{x2, batch}}, {y2})[0].to_vector<float>(),
            Session(whole).run({{x1, batch}}, {y1})[0].to_vector<float>());
}

TEST(Partition, CrossDeviceControlEdgesAreHonoured) {
  Variable v(constant({1.f}), "partition_test/v");
  auto g = std::make_shared<Graph>();
  Tensor before, after;
  int assign = -1;
  {
    GraphScope scope(g);
    {
      DeviceScope d("/cpu:1");
      before = v.value() + 0.0;
      ControlDependencies deps({before});
      v.assign(constant({7.f}));
      assign = g->num_nodes() - 1;
    }
    DeviceScope d("/cpu:0");
    after = v.value() * 1.0;
  }
  const int read = g->node(g->value_of(after).node).inputs[0].node;
  g->mutable_node(read).control_inputs.push_back(assign);
  Executor ex(g, {}, {g->value_of(before), g->value_of(after)});
  EXPECT_EQ(ex.devices().size(), 2u);
  for (int i = 0; i < 5; ++i) {
    v.assign(constant({1.f}));
    TensorList out = ex.run({});
    EXPECT_EQ(out[0].item<float>(), 1.f);
    EXPECT_EQ(out[1].item<float>(), 7.f);
  }
}

TEST(Partition, AFailingDeviceUnblocksTheOther) {
  auto g = std::make_shared<Graph>();
  Tensor x, y;
  {
    GraphScope scope(g);
    x = placeholder(DType::Float32, {4}, "x");
    Tensor h;
    {
      DeviceScope d("/cpu:0");
      h = dispatch1(slow_failing_op(), {exp(x)});
    }
    DeviceScope d("/cpu:1");
    y = h + exp(x);  // /cpu:1 waits in recv for h
  }
  Executor ex(g, {g->value_of(x)}, {g->value_of(y)});
  ASSERT_EQ(ex.devices().size(), 2u);
  for (int i = 0; i < 3; ++i)
    EXPECT_THAT([&] { ex.run({ones({4})}); },
                ThrowsMessage<Error>(HasSubstr("[graph] node 'partition_test_fail': [partition_test_fail] broken on purpose")));
}

TEST(Partition, TheReceivingSideFailingStopsTheRun) {
  auto g = std::make_shared<Graph>();
  Tensor x, y;
  {
    GraphScope scope(g);
    x = placeholder(DType::Float32, {4}, "x");
    Tensor h;
    {
      DeviceScope d("/cpu:1");
      h = dispatch1(slow_failing_op(), {x});
    }
    DeviceScope d("/cpu:0");
    y = exp(x) + h;
  }
  Executor ex(g, {g->value_of(x)}, {g->value_of(y)});
  EXPECT_THAT([&] { ex.run({ones({4})}); }, ThrowsMessage<Error>(HasSubstr("broken on purpose")));
}

TEST(Rendezvous, AbortWakesAWaitingRecv) {
  Rendezvous r;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    r.abort("[x] went wrong");
  });
  EXPECT_THAT([&] { r.recv("k"); }, ThrowsMessage<Error>(HasSubstr("[recv] waiting for 'k', the run was aborted: [x] went wrong")));
  t.join();
  Rendezvous ok;
  ok.send("a", constant({1.f}));
  EXPECT_THAT([&] { ok.send("a", constant({1.f})); }, ThrowsMessage<Error>(HasSubstr("[send] key 'a' was already sent")));
  EXPECT_EQ(ok.recv("a").item<float>(), 1.f);
}

}  // namespace
}  // namespace deepflow
