// SPDX-License-Identifier: Apache-2.0
// Server-side batching: merged runs give the direct results, batches really merge, close
// on size or timeout, pad to allowed sizes, reject when full, keep incompatible shapes
// apart, deliver errors to their own batch, and drain on destruction. A custom "gate" op
// holds a batch thread inside a model run so that queues can be filled deterministically.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <latch>
#include <map>
#include <mutex>
#include <thread>

#include "deepflow/ops/kernel.h"
#include "deepflow/serving/batching.h"
#include "serving/serving_test_util.h"

namespace deepflow {
namespace {

using serving::BatchingOptions;
using serving::Batcher;
using serving::BatchStats;
using serving::Code;
using serving::Servable;
using serving::ServableHandle;
using serving::ServingError;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;
using TensorMap = std::map<std::string, Tensor>;

// Closed, it holds every model run that reaches the gate op until release().
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = true;
  int entered = 0;

  void close() {
    std::lock_guard lock(mu);
    open = false;
    entered = 0;
  }
  void release() {
    std::lock_guard lock(mu);
    open = true;
    cv.notify_all();
  }
  void wait_entered(int n) {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return entered >= n; });
  }
};
Gate& gate() {
  static Gate g;
  return g;
}

// y = x after the gate; a negative element is an error (the error-path test).
OpId gate_op() {
  static const OpId id = [] {
    OpId op = register_custom_op(OpDef{
        .name = "batching_test_gate",
        .num_inputs = 1,
        .infer = [](const OpCall& c, TypeList& out) { out.push_back({c.in(0).dtype(), c.in(0).shape()}); },
        .non_differentiable = true,
        .stateful = true,
    });
    register_kernel(op, KernelDef{.run = [](const OpCall& c, TensorList& out) {
                      Gate& g = gate();
                      {
                        std::unique_lock lock(g.mu);
                        ++g.entered;
                        g.cv.notify_all();
                        g.cv.wait(lock, [&] { return g.open; });
                      }
                      const float* x = c.in(0).data<float>();
                      for (int64_t i = 0; i < c.in(0).size(); ++i)
                        DF_CHECK(x[i] >= 0, "[batching_test_gate] negative input ", x[i]);
                      out[0] = c.in(0).clone();
                    }});
    return op;
  }();
  return id;
}

// y = the byte length of each string of x (a string input, to exercise string rows).
OpId strlen_op() {
  static const OpId id = [] {
    OpId op = register_custom_op(OpDef{
        .name = "batching_test_strlen",
        .num_inputs = 1,
        .infer = [](const OpCall& c, TypeList& out) { out.push_back({DType::Int64, c.in(0).shape()}); },
        .non_differentiable = true,
        .strings = true,
    });
    register_kernel(op, KernelDef{.run = [](const OpCall& c, TensorList& out) {
                      const auto* x = static_cast<const std::string*>(c.in(0).raw_data());
                      int64_t* y = out[0].data<int64_t>();
                      for (int64_t i = 0; i < c.in(0).size(); ++i) y[i] = int64_t(x[i].size());
                    }});
    return op;
  }();
  return id;
}

// x float [-1, -1] -> y = gate(x) + 1.
std::string save_gate_model(const std::string& base) {
  std::string dir = base + "/1";
  Function f = function([](const Tensor& x) { return dispatch1(gate_op(), {x}) + 1.0; },
                        {.name = "gated", .input_signature = Signature{{DType::Float32, Shape({-1, -1})}}});
  io::save_saved_model(dir, {{.fn = f.get_concrete_function(), .input_names = {"x"}, .output_names = {"y"}}});
  return dir;
}

std::string save_strlen_model(const std::string& base) {
  std::string dir = base + "/1";
  Function f = function([](const Tensor& x) { return dispatch1(strlen_op(), {x}); },
                        {.name = "strlen", .input_signature = Signature{{DType::String, Shape({-1})}}});
  io::save_saved_model(dir, {{.fn = f.get_concrete_function(), .input_names = {"x"}, .output_names = {"y"}}});
  return dir;
}

// y [1, 2] = the column sums of x [-1, 2]: dim 0 is not the batch's.
std::string save_column_sum_model(const std::string& base) {
  std::string dir = base + "/1";
  Function f = function([](const Tensor& x) { return reduce_sum(x, {0}, true); },
                        {.name = "colsum", .input_signature = Signature{{DType::Float32, Shape({-1, 2})}}});
  io::save_saved_model(dir, {{.fn = f.get_concrete_function(), .input_names = {"x"}, .output_names = {"y"}}});
  return dir;
}

// The fixtures write <base>/<version>; the base must exist.
std::string base(const testing::TempDir& tmp, const std::string& name) {
  std::filesystem::create_directories(tmp / name);
  return tmp / name;
}

ServableHandle load(const std::string& dir, const std::string& name = "m", int64_t version = 1) {
  return std::make_shared<Servable>(Servable{name, version, dir, io::load_saved_model(dir)});
}

Tensor rows_of(int64_t rows, int64_t cols, float start) {
  std::vector<float> v(size_t(rows * cols));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + float(i);
  return constant(v, Shape({rows, cols}));
}

// Collects every batch's figures.
struct Recorder {
  std::mutex mu;
  std::vector<BatchStats> stats;
  void attach(Batcher& b) {
    b.set_batch_listener([this](const BatchStats& s) {
      std::lock_guard lock(mu);
      stats.push_back(s);
    });
  }
  std::vector<std::pair<int64_t, int64_t>> rows_and_requests() {
    std::lock_guard lock(mu);
    std::vector<std::pair<int64_t, int64_t>> out;
    for (const auto& s : stats) out.emplace_back(s.rows, s.requests);
    std::sort(out.begin(), out.end());
    return out;
  }
};

void wait_pending(const Batcher& b, size_t n) {
  while (b.pending_requests() < n) std::this_thread::yield();
}

Code code_of_call(const std::function<void()>& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const std::exception& e) {
    if (message) *message = e.what();
    return serving::code_of(e);
  }
  return Code::Ok;
}

TEST(ServingBatching, MatchesDirectRunsForConcurrentRequests) {
  testing::TempDir tmp;
  ServableHandle v1 = load(testing::save_half_plus(base(tmp, "half"), 1, 2.f), "half", 1);
  ServableHandle v2 = load(testing::save_half_plus(base(tmp, "half"), 2, 3.f), "half", 2);
  ServableHandle dense = load(testing::save_dense(base(tmp, "dense"), 1, 16, 8), "dense", 1);
  Batcher batcher({.max_batch_size = 32, .batch_timeout_micros = 2000, .num_batch_threads = 2});
  serving::SignatureRunner runner = batcher.runner();
  for (int n : {1, 4, 16}) {
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int i = 0; i < n; ++i) {
      threads.emplace_back([&, i] {
        const int64_t rows = i % 5 + 1;
        // Alternate the two versions of half_plus and the dense model.
        const ServableHandle& s = i % 3 == 0 ? v1 : i % 3 == 1 ? v2 : dense;
        TensorMap in{{"x", s == dense ? rows_of(rows, 16, float(i)) : rows_of(rows, 1, float(i)).view(Shape({rows}))}};
        TensorMap want = s->model.signature("serving_default")(in);
        TensorMap got = runner(s, "serving_default", in);
        const Tensor& y = got.at("y");
        const Tensor& w = want.at("y");
        if (y.shape() != w.shape()) {
          ++failures;
          return;
        }
        auto a = y.to_vector<float>();
        auto b = w.to_vector<float>();
        for (size_t k = 0; k < a.size(); ++k)
          if (std::abs(a[k] - b[k]) > 1e-5f * (1 + std::abs(b[k]))) ++failures;
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(failures.load(), 0) << n << " concurrent requests";
  }
}

TEST(ServingBatching, ConcurrentRequestsMerge) {
  testing::TempDir tmp;
  ServableHandle s = load(testing::save_half_plus(tmp.path(), 1));
  Batcher batcher({.max_batch_size = 32, .batch_timeout_micros = 5000, .num_batch_threads = 2});
  Recorder rec;
  rec.attach(batcher);
  // Startup jitter may split one round; several rounds must show merging.
  int64_t most = 0;
  for (int round = 0; round < 10 && most < 2; ++round) {
    std::latch start(16);
    std::vector<std::thread> threads;
    for (int i = 0; i < 16; ++i) {
      threads.emplace_back([&, i] {
        start.arrive_and_wait();
        auto out = batcher.run(s, "serving_default", {{"x", constant({float(i)})}});
        EXPECT_EQ(out.at("y").to_vector<float>(), std::vector<float>{0.5f * float(i) + 2.f});
      });
    }
    for (auto& t : threads) t.join();
    std::lock_guard lock(rec.mu);
    int64_t total = 0;
    for (const auto& st : rec.stats) most = std::max(most, st.requests), total += st.requests;
    EXPECT_EQ(total, 16 * (round + 1));
  }
  EXPECT_GT(most, 1) << "16 simultaneous requests never shared a batch";
}

TEST(ServingBatching, TimeoutClosesPartialBatch) {
  testing::TempDir tmp;
  ServableHandle s = load(testing::save_half_plus(tmp.path(), 1));
  Batcher batcher({.max_batch_size = 64, .batch_timeout_micros = 20000, .num_batch_threads = 1});
  Recorder rec;
  rec.attach(batcher);
  auto t0 = Clock::now();
  auto out = batcher.run(s, "serving_default", {{"x", constant({4.f, 6.f})}});
  auto elapsed = Clock::now() - t0;
  EXPECT_EQ(out.at("y").to_vector<float>(), (std::vector<float>{4.f, 5.f}));
  EXPECT_GE(elapsed, std::chrono::milliseconds(19));
  EXPECT_EQ(rec.rows_and_requests(), (std::vector<std::pair<int64_t, int64_t>>{{2, 1}}));
  // A full batch does not wait for the timeout.
  Batcher full({.max_batch_size = 2, .batch_timeout_micros = 10'000'000, .num_batch_threads = 1});
  t0 = Clock::now();
  full.run(s, "serving_default", {{"x", constant({1.f, 2.f})}});
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
}

TEST(ServingBatching, PadsToAllowedBatchSizes) {
  testing::TempDir tmp;
  ServableHandle s = load(testing::save_half_plus(base(tmp, "half"), 1));
  Batcher batcher({.max_batch_size = 8, .batch_timeout_micros = 0, .num_batch_threads = 1,
                   .allowed_batch_sizes = {2, 4, 8}});
  Recorder rec;
  rec.attach(batcher);
  for (int64_t rows : {3, 5, 8, 1}) {
    std::vector<float> x(static_cast<size_t>(rows)), want(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) x[size_t(i)] = float(i + 10), want[size_t(i)] = 0.5f * float(i + 10) + 2.f;
    auto out = batcher.run(s, "serving_default", {{"x", constant(x)}});
    EXPECT_EQ(out.at("y").shape(), Shape({rows}));
    EXPECT_EQ(out.at("y").to_vector<float>(), want) << rows << " rows";
  }
  std::lock_guard lock(rec.mu);
  ASSERT_EQ(rec.stats.size(), 4u);
  EXPECT_EQ(rec.stats[0].rows, 4);
  EXPECT_EQ(rec.stats[0].padded_rows, 1);
  EXPECT_EQ(rec.stats[1].rows, 8);
  EXPECT_EQ(rec.stats[1].padded_rows, 3);
  EXPECT_EQ(rec.stats[2].padded_rows, 0);
  EXPECT_EQ(rec.stats[3].rows, 2);
  EXPECT_EQ(rec.stats[3].padded_rows, 1);

  // Strings are copied element by element, padding included.
  ServableHandle strlen = load(save_strlen_model(base(tmp, "strlen")), "strlen");
  Batcher padded({.max_batch_size = 4, .batch_timeout_micros = 0, .num_batch_threads = 1, .allowed_batch_sizes = {4}});
  auto out = padded.run(strlen, "serving_default",
                        {{"x", constant(std::vector<std::string>{"a", std::string(100, 'x'), "abc"})}});
  EXPECT_EQ(out.at("y").to_vector<int64_t>(), (std::vector<int64_t>{1, 100, 3}));
}

TEST(ServingBatching, StringRequestsMerge) {
  testing::TempDir tmp;
  ServableHandle s = load(save_strlen_model(tmp.path()), "strlen");
  Batcher batcher({.max_batch_size = 64, .batch_timeout_micros = 2000, .num_batch_threads = 1});
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      std::vector<std::string> x{std::string(size_t(i), 'a'), std::string(size_t(40 + i), 'b')};
      auto out = batcher.run(s, "serving_default", {{"x", constant(x)}});
      EXPECT_EQ(out.at("y").to_vector<int64_t>(), (std::vector<int64_t>{i, 40 + i}));
    });
  }
  for (auto& t : threads) t.join();
}

TEST(ServingBatching, OversizedRequestIsInvalidArgument) {
  testing::TempDir tmp;
  ServableHandle s = load(testing::save_half_plus(tmp.path(), 1), "half", 7);
  Batcher batcher({.max_batch_size = 4, .num_batch_threads = 1});
  std::string message;
  EXPECT_EQ(code_of_call([&] { batcher.run(s, "serving_default", {{"x", zeros({5})}}); }, &message),
            Code::InvalidArgument);
  EXPECT_THAT(message, HasSubstr("[batching] the request has 5 rows"));
  EXPECT_THAT(message, HasSubstr("x: float32 [5]"));
  EXPECT_THAT(message, HasSubstr("more than max_batch_size 4"));
  EXPECT_THAT(message, HasSubstr("model 'half' version 7"));
  // The batcher still serves.
  EXPECT_EQ(batcher.run(s, "serving_default", {{"x", zeros({4})}}).at("y").to_vector<float>(),
            (std::vector<float>(4, 2.f)));
}

TEST(ServingBatching, FullQueueIsUnavailableAtOnce) {
  testing::TempDir tmp;
  ServableHandle s = load(save_gate_model(tmp.path()), "gated");
  Batcher batcher({.max_batch_size = 4, .batch_timeout_micros = 100, .num_batch_threads = 1,
                   .max_enqueued_batches = 1});
  gate().close();
  // A holds the only batch thread inside the model; B's batch then fills the queue.
  std::thread a([&] {
    EXPECT_EQ(batcher.run(s, "serving_default", {{"x", rows_of(1, 2, 0)}}).at("y").to_vector<float>(),
              (std::vector<float>{1, 2}));
  });
  gate().wait_entered(1);
  std::thread b([&] {
    EXPECT_EQ(batcher.run(s, "serving_default", {{"x", rows_of(3, 2, 0)}}).at("y").to_vector<float>(),
              (std::vector<float>{1, 2, 3, 4, 5, 6}));
  });
  wait_pending(batcher, 1);
  // Two more rows do not fit B's batch and no second batch may wait: every such request
  // fails while the gate is still shut, i.e. without waiting for the model.
  std::atomic<int> unavailable{0};
  std::vector<std::thread> rejected;
  for (int i = 0; i < 8; ++i) {
    rejected.emplace_back([&] {
      std::string message;
      Code code = code_of_call([&] { batcher.run(s, "serving_default", {{"x", rows_of(2, 2, 0)}}); }, &message);
      EXPECT_EQ(code, Code::Unavailable);
      EXPECT_THAT(message, HasSubstr("[batching] the batch queue is full (max_enqueued_batches 1)"));
      EXPECT_EQ(serving::http_status(code), 503);
      unavailable += code == Code::Unavailable;
    });
  }
  for (auto& t : rejected) t.join();
  EXPECT_EQ(unavailable.load(), 8);
  gate().release();
  a.join();
  b.join();

  // Under load with an open gate: every request either succeeds with the right values or
  // is refused at once; none hangs.
  std::atomic<int> ok{0}, refused{0}, other{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 16; ++i) {
    clients.emplace_back([&, i] {
      for (int k = 0; k < 10; ++k) {
        try {
          auto y = batcher.run(s, "serving_default", {{"x", rows_of(i % 3 + 1, 2, float(k))}}).at("y");
          y.to_vector<float>()[0] == float(k) + 1 ? ++ok : ++other;
        } catch (const ServingError& e) {
          e.code() == Code::Unavailable ? ++refused : ++other;
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(ok + refused, 160);
  EXPECT_GT(ok.load(), 0);
}

TEST(ServingBatching, IncompatibleShapesRunInSeparateBatches) {
  testing::TempDir tmp;
  ServableHandle s = load(save_gate_model(tmp.path()), "gated");
  Batcher batcher({.max_batch_size = 8, .batch_timeout_micros = 1000, .num_batch_threads = 1});
  Recorder rec;
  rec.attach(batcher);
  gate().close();
  auto client = [&](int64_t rows, int64_t cols, float start) {
    return std::thread([&batcher, &s, rows, cols, start] {
      Tensor x = rows_of(rows, cols, start);
      auto y = batcher.run(s, "serving_default", {{"x", x}}).at("y");
      EXPECT_EQ(y.shape(), Shape({rows, cols}));
      std::vector<float> want = x.to_vector<float>();
      for (float& v : want) v += 1;
      EXPECT_EQ(y.to_vector<float>(), want);
    });
  };
  std::thread blocker = client(1, 1, 0);
  gate().wait_entered(1);
  std::thread p = client(2, 3, 10);
  wait_pending(batcher, 1);
  std::thread q = client(1, 4, 20);
  wait_pending(batcher, 2);
  std::thread r = client(1, 3, 30);
  wait_pending(batcher, 3);
  gate().release();
  for (auto* t : {&blocker, &p, &q, &r}) t->join();
  // [1,1] alone, [1,4] alone, and [2,3] + [1,3] together.
  EXPECT_EQ(rec.rows_and_requests(), (std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {1, 1}, {3, 2}}));
}

TEST(ServingBatching, RunErrorReachesEveryRequestOfItsBatchOnly) {
  testing::TempDir tmp;
  ServableHandle s = load(save_gate_model(tmp.path()), "gated");
  Batcher batcher({.max_batch_size = 8, .batch_timeout_micros = 1000, .num_batch_threads = 1});
  Recorder rec;
  rec.attach(batcher);
  gate().close();
  std::thread blocker([&] { batcher.run(s, "serving_default", {{"x", rows_of(1, 1, 0)}}); });
  gate().wait_entered(1);
  std::string bad_message, good_message;
  Code bad_code = Code::Ok, good_code = Code::Ok;
  std::thread bad([&] {
    bad_code = code_of_call([&] { batcher.run(s, "serving_default", {{"x", rows_of(1, 2, -1)}}); }, &bad_message);
  });
  wait_pending(batcher, 1);
  std::thread good([&] {
    good_code = code_of_call([&] { batcher.run(s, "serving_default", {{"x", rows_of(2, 2, 5)}}); }, &good_message);
  });
  wait_pending(batcher, 2);
  gate().release();
  for (auto* t : {&blocker, &bad, &good}) t->join();
  EXPECT_EQ(bad_code, Code::InvalidArgument);
  EXPECT_EQ(good_code, Code::InvalidArgument);
  EXPECT_THAT(bad_message, HasSubstr("[batching_test_gate] negative input -1"));
  EXPECT_EQ(good_message, bad_message);
  EXPECT_EQ(rec.rows_and_requests(), (std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 2}}));
  // The next batch is not affected.
  EXPECT_EQ(batcher.run(s, "serving_default", {{"x", rows_of(1, 2, 5)}}).at("y").to_vector<float>(),
            (std::vector<float>{6, 7}));
}

TEST(ServingBatching, OutputWithoutBatchDimIsInternal) {
  testing::TempDir tmp;
  ServableHandle s = load(save_column_sum_model(tmp.path()), "colsum", 3);
  Batcher batcher({.max_batch_size = 8, .batch_timeout_micros = 0, .num_batch_threads = 1});
  std::string message;
  EXPECT_EQ(code_of_call([&] { batcher.run(s, "serving_default", {{"x", rows_of(3, 2, 0)}}); }, &message),
            Code::Internal);
  EXPECT_THAT(message, HasSubstr("[batching] output 'y' of model 'colsum' version 3, signature 'serving_default' "
                                 "is float32 [1,2] for a batch of 3 rows"));
}

TEST(ServingBatching, UnbatchableRequestsRunDirectly) {
  testing::TempDir tmp;
  ServableHandle s = load(testing::save_half_plus(tmp.path(), 1));
  Batcher batcher({.max_batch_size = 2, .num_batch_threads = 1});
  // No rows: nothing to merge, and no first row to pad with.
  EXPECT_EQ(batcher.run(s, "serving_default", {{"x", zeros({0})}}).at("y").shape(), Shape({0}));
  // Errors of the signature itself keep their text and code.
  std::string message;
  EXPECT_EQ(code_of_call([&] { batcher.run(s, "nope", {{"x", zeros({1})}}); }, &message), Code::InvalidArgument);
  EXPECT_THAT(message, HasSubstr("no signature 'nope'"));
}

TEST(ServingBatching, ReleasesUnloadedServables) {
  testing::TempDir tmp;
  ServableHandle s = load(testing::save_half_plus(tmp.path(), 1));
  std::weak_ptr<const Servable> weak = s;
  Batcher batcher({.max_batch_size = 8, .batch_timeout_micros = 0, .num_batch_threads = 2});
  batcher.run(s, "serving_default", {{"x", zeros({2})}});
  s.reset();
  EXPECT_TRUE(weak.expired());
  EXPECT_EQ(batcher.pending_requests(), 0u);
}

TEST(ServingBatching, DestructionCompletesRequestsInFlight) {
  testing::TempDir tmp;
  ServableHandle s = load(testing::save_half_plus(tmp.path(), 1));
  auto batcher = std::make_unique<Batcher>(
      BatchingOptions{.max_batch_size = 64, .batch_timeout_micros = 60'000'000, .num_batch_threads = 1});
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      auto y = batcher->run(s, "serving_default", {{"x", constant({float(i)})}}).at("y");
      ok += y.to_vector<float>() == std::vector<float>{0.5f * float(i) + 2.f};
    });
  }
  wait_pending(*batcher, 8);
  auto t0 = Clock::now();
  batcher.reset();  // flushes the one-minute batch now
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(10));
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 8);
}

// y = x * 0 + the OpenMP team size the kernel saw.
OpId team_op() {
  static const OpId id = [] {
    OpId op = register_custom_op(OpDef{
        .name = "batching_test_team",
        .num_inputs = 1,
        .infer = [](const OpCall& c, TypeList& out) { out.push_back({c.in(0).dtype(), c.in(0).shape()}); },
        .non_differentiable = true,
        .stateful = true,
    });
    register_kernel(op, KernelDef{.run = [](const OpCall& c, TensorList& out) {
                      float* y = out[0].data<float>();
                      for (int64_t i = 0; i < c.in(0).size(); ++i) y[i] = float(omp_get_max_threads());
                    }});
    return op;
  }();
  return id;
}

TEST(ServingBatching, BatchThreadsShareTheCores) {
  testing::TempDir tmp;
  std::string dir = base(tmp, "team") + "/1";
  Function f = function([](const Tensor& x) { return dispatch1(team_op(), {x}); },
                        {.name = "team", .input_signature = Signature{{DType::Float32, Shape({-1})}}});
  io::save_saved_model(dir, {{.fn = f.get_concrete_function(), .input_names = {"x"}, .output_names = {"y"}}});
  ServableHandle s = load(dir, "team");
  const int saved = omp_get_max_threads();
  omp_set_num_threads(4);  // the threads batching may use, read when a Batcher is built
  Batcher two({.max_batch_size = 8, .batch_timeout_micros = 0, .num_batch_threads = 2});
  Batcher three({.max_batch_size = 8, .batch_timeout_micros = 0, .num_batch_threads = 3});
  omp_set_num_threads(saved);
  EXPECT_EQ(two.run(s, "serving_default", {{"x", zeros({2})}}).at("y").to_vector<float>(),
            (std::vector<float>{2, 2}));
  EXPECT_EQ(three.run(s, "serving_default", {{"x", zeros({1})}}).at("y").to_vector<float>(),
            (std::vector<float>{1}));
  EXPECT_EQ(omp_get_max_threads(), saved);
}

TEST(ServingBatching, ParsesTfServingParameterFiles) {
  testing::TempDir tmp;
  std::string path = tmp / "batching.config";
  testing::write_bytes(path,
                       "max_batch_size { value: 128 }\n"
                       "batch_timeout_micros { value: 0 }\n"
                       "max_enqueued_batches { value: 1000000 }\n"
                       "num_batch_threads { value: 8 }\n"
                       "thread_pool_name { value: \"model_server_batch_threads\" }\n"
                       "allowed_batch_sizes: 32 allowed_batch_sizes: 64\n"
                       "allowed_batch_sizes: 128\n");
  BatchingOptions o = serving::parse_batching_parameters_file(path);
  EXPECT_EQ(o.max_batch_size, 128);
  EXPECT_EQ(o.batch_timeout_micros, 0);
  EXPECT_EQ(o.max_enqueued_batches, 1000000);
  EXPECT_EQ(o.num_batch_threads, 8);
  EXPECT_EQ(o.allowed_batch_sizes, (std::vector<int64_t>{32, 64, 128}));
  EXPECT_FALSE(o.pad_variable_length_inputs);

  BatchingOptions defaults = serving::parse_batching_parameters_text("# nothing set\n");
  EXPECT_EQ(defaults.max_batch_size, BatchingOptions{}.max_batch_size);
  EXPECT_EQ(defaults.batch_timeout_micros, BatchingOptions{}.batch_timeout_micros);
  EXPECT_EQ(serving::parse_batching_parameters_text("num_batch_threads: { value: 3 }").num_batch_threads, 3);
}

TEST(ServingBatching, RejectsBadParameterFiles) {
  auto message_of = [](const std::string& text) {
    std::string message;
    EXPECT_EQ(code_of_call([&] { serving::parse_batching_parameters_text(text, "b.cfg"); }, &message),
              Code::InvalidArgument)
        << text;
    return message;
  };
  EXPECT_THAT(message_of("max_batch_size { value: 8 }\nbatch_timeout_micros { valu: 3 }"),
              HasSubstr("b.cfg:2:"));
  EXPECT_THAT(message_of("max_batch_size { value: 8 }\nbatch_timeout_micros { valu: 3 }"), HasSubstr("valu"));
  EXPECT_THAT(message_of("max_batch_sise { value: 8 }"), HasSubstr("b.cfg:1:"));
  EXPECT_THAT(message_of("max_batch_size { value: \"x\" }"), HasSubstr("b.cfg:1:"));
  EXPECT_THAT(message_of("max_batch_size { value: 0 }"), HasSubstr("b.cfg: max_batch_size must be >= 1, got 0"));
  EXPECT_THAT(message_of("max_enqueued_batches { value: 0 }"), HasSubstr("max_enqueued_batches must be >= 1"));
  EXPECT_THAT(message_of("batch_timeout_micros { value: -1 }"), HasSubstr("batch_timeout_micros must be >= 0"));
  EXPECT_THAT(message_of("max_batch_size { value: 64 } allowed_batch_sizes: 32 allowed_batch_sizes: 16 "
                         "allowed_batch_sizes: 64"),
              HasSubstr("allowed_batch_sizes must be strictly increasing, got [32, 16, 64]"));
  EXPECT_THAT(message_of("max_batch_size { value: 64 } allowed_batch_sizes: 16 allowed_batch_sizes: 32"),
              HasSubstr("the last entry of allowed_batch_sizes (32) must equal max_batch_size (64)"));
  EXPECT_THAT(message_of("pad_variable_length_inputs { value: true }"),
              HasSubstr("pad_variable_length_inputs is not supported"));

  testing::TempDir tmp;
  std::string bad = tmp / "bad.config";
  testing::write_bytes(bad, "max_batch_size { value: 8 }\n\nnum_batch_threads: eight\n");
  std::string message;
  EXPECT_EQ(code_of_call([&] { serving::parse_batching_parameters_file(bad); }, &message), Code::InvalidArgument);
  EXPECT_THAT(message, HasSubstr(bad + ":3:"));
  EXPECT_EQ(code_of_call([&] { serving::parse_batching_parameters_file(tmp / "missing.config"); }, &message),
            Code::NotFound);
  EXPECT_THAT(message, HasSubstr("missing.config"));
  // Options built in code obey the same rules.
  EXPECT_THROW({ Batcher b({.max_batch_size = 4, .allowed_batch_sizes = {2, 3}}); }, ServingError);
}

// Not a pass/fail check: a first figure for the lead (64 synchronous clients at batch 1).
TEST(ServingBatching, PrintsThroughputAgainstDirectCalls) {
#ifdef NDEBUG
  const int per_thread = 200;
#else
  const int per_thread = 5;  // sanitizer and debug builds: only exercise the path
#endif
  const int clients = 64;
  testing::TempDir tmp;
  ServableHandle s = load(testing::save_dense(tmp.path(), 1, 784, 512), "dense");
  Tensor x = rows_of(1, 784, 0);
  // Requests per second of wall time, and CPU microseconds (all threads, user + system)
  // per request: the second stays meaningful on a machine shared with other jobs.
  struct Rate {
    double per_second;
    double cpu_us;
  };
  auto cpu_seconds = [] {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  };
  auto measure = [&](const serving::SignatureRunner& run) {
    std::latch start(clients + 1);
    std::vector<std::thread> threads;
    for (int i = 0; i < clients; ++i) {
      threads.emplace_back([&] {
        TensorMap in{{"x", x}};
        start.arrive_and_wait();
        for (int k = 0; k < per_thread; ++k) run(s, "serving_default", in);
      });
    }
    start.arrive_and_wait();
    auto t0 = Clock::now();
    double c0 = cpu_seconds();
    for (auto& t : threads) t.join();
    const double n = clients * per_thread;
    return Rate{n / std::chrono::duration<double>(Clock::now() - t0).count(), (cpu_seconds() - c0) * 1e6 / n};
  };
  // predict.cpp's run_signature_directly does the same; not used so this test needs only batching.cpp.
  Rate direct = measure([](const ServableHandle& sv, const std::string& key, const TensorMap& in) {
    return sv->model.signature(key)(in);
  });
  // DEEPFLOW_BATCH_THREADS=n tries another thread count (0: one per core).
  const char* env = std::getenv("DEEPFLOW_BATCH_THREADS");
  const int64_t batch_threads = env ? std::atoll(env) : 2;
  Batcher batcher({.max_batch_size = 64, .batch_timeout_micros = 1000, .num_batch_threads = batch_threads});
  Recorder rec;
  rec.attach(batcher);
  Rate batched = measure(batcher.runner());
  double mean_rows = 0;
  {
    std::lock_guard lock(rec.mu);
    for (const auto& st : rec.stats) mean_rows += double(st.rows);
    mean_rows /= double(std::max<size_t>(1, rec.stats.size()));
  }
  std::printf("[batching throughput] dense 784->512, %d clients x %d batch-1 requests, %u cores: direct %.0f req/s "
              "(%.0f cpu-us/req), batched (max 64, 1 ms, %ld threads) %.0f req/s (%.0f cpu-us/req), ratio %.2fx, "
              "mean batch %.1f rows\n",
              clients, per_thread, std::thread::hardware_concurrency(), direct.per_second, direct.cpu_us,
              long(batcher.options().num_batch_threads), batched.per_second, batched.cpu_us,
              batched.per_second / direct.per_second, mean_rows);
}

}  // namespace
}  // namespace deepflow
