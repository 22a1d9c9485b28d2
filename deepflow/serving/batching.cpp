// SPDX-License-Identifier: Apache-2.0
#include "deepflow/serving/batching.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string_view>
#include <thread>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#endif

#include <omp.h>

#include "serving_config.pb.h"

namespace deepflow::serving {

// --- parameters ---

namespace {

std::string join(const std::vector<int64_t>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out;
}

// Shared by the parser (where = the file) and the Batcher (where = "options"), so options
// built in code are held to the same rules as a file.
void validate(const BatchingOptions& o, const std::string& where) {
  auto fail = [&](const std::string& what) {
    throw ServingError(Code::InvalidArgument, "[batching] " + where + ": " + what);
  };
  if (o.max_batch_size < 1) fail("max_batch_size must be >= 1, got " + std::to_string(o.max_batch_size));
  if (o.batch_timeout_micros < 0)
    fail("batch_timeout_micros must be >= 0, got " + std::to_string(o.batch_timeout_micros));
  if (o.max_enqueued_batches < 1)
    fail("max_enqueued_batches must be >= 1, got " + std::to_string(o.max_enqueued_batches));
  if (o.num_batch_threads < 0)
    fail("num_batch_threads must be >= 0 (0: one per core), got " + std::to_string(o.num_batch_threads));
  if (o.pad_variable_length_inputs)
    fail("pad_variable_length_inputs is not supported (requests merge only when every dim but the first agrees)");
  if (o.enable_large_batch_splitting)
    fail("enable_large_batch_splitting is not supported (a request larger than max_batch_size is rejected)");
  const auto& a = o.allowed_batch_sizes;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] < 1) fail("allowed_batch_sizes must be >= 1, got [" + join(a) + "]");
    if (i > 0 && a[i] <= a[i - 1]) fail("allowed_batch_sizes must be strictly increasing, got [" + join(a) + "]");
  }
  if (!a.empty() && a.back() != o.max_batch_size)
    fail("the last entry of allowed_batch_sizes (" + std::to_string(a.back()) + ") must equal max_batch_size (" +
         std::to_string(o.max_batch_size) + ")");
}

// TextFormat reports 0-based positions; people count from 1. Keeps the first error only:
// the later ones are usually consequences of it.
class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (!message_.empty()) return;
    line_ = line + 1;
    column_ = column + 1;
    message_ = message;
  }
  std::string describe(const std::string& source) const {
    return source + ":" + std::to_string(line_) + ":" + std::to_string(column_) + ": " + message_;
  }
  bool empty() const { return message_.empty(); }

 private:
  int line_ = 0;
  int column_ = 0;
  std::string message_;
};

}  // namespace

BatchingOptions parse_batching_parameters_text(const std::string& text, const std::string& source) {
  tensorflow::serving::BatchingParameters p;
  FirstError errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &p)) {
    throw ServingError(Code::InvalidArgument, "[batching] cannot parse batching parameters " +
                                                  (errors.empty() ? source : errors.describe(source)));
  }
  BatchingOptions o;
  if (p.has_max_batch_size()) o.max_batch_size = p.max_batch_size().value();
  if (p.has_batch_timeout_micros()) o.batch_timeout_micros = p.batch_timeout_micros().value();
  if (p.has_max_enqueued_batches()) o.max_enqueued_batches = p.max_enqueued_batches().value();
  if (p.has_num_batch_threads()) o.num_batch_threads = p.num_batch_threads().value();
  if (p.has_pad_variable_length_inputs()) o.pad_variable_length_inputs = p.pad_variable_length_inputs().value();
  if (p.has_enable_large_batch_splitting()) o.enable_large_batch_splitting = p.enable_large_batch_splitting().value();
  o.allowed_batch_sizes.assign(p.allowed_batch_sizes().begin(), p.allowed_batch_sizes().end());
  validate(o, source);
  return o;
}

BatchingOptions parse_batching_parameters_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ServingError(Code::NotFound,
                       "[batching] cannot read batching parameters file '" + path + "': " + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse_batching_parameters_text(text.str(), path);
}

// --- the batcher ---

namespace {

using Clock = std::chrono::steady_clock;
using TensorMap = std::map<std::string, Tensor>;
using Listener = std::function<void(const BatchStats&)>;

// Lives on the caller's stack: the batch thread writes `outputs` before it marks the batch
// done, and never touches the request afterwards.
struct Request {
  const TensorMap* inputs = nullptr;
  int64_t rows = 0;
  TensorMap outputs;
  std::exception_ptr error;
};

// Shared by its requests and the thread that runs it, so that whoever finishes last
// frees it. Its requests sleep on `done` (wait_done / set_done), no mutex involved.
struct Batch {
  ServableHandle servable;
  std::string signature;
  std::vector<Request*> requests;
  int64_t rows = 0;
  Clock::time_point deadline;
  bool closed = false;  // full, or a request did not fit and started the next batch
  std::shared_ptr<const Listener> listener;
  std::atomic<int> done{0};
};

struct QueueKey {
  const Servable* servable;
  std::string signature;
};
struct QueueKeyView {
  const Servable* servable;
  std::string_view signature;
};
struct QueueKeyLess {
  using is_transparent = void;
  template <class A, class B> bool operator()(const A& a, const B& b) const {
    if (a.servable != b.servable) return std::less<const Servable*>()(a.servable, b.servable);
    return std::string_view(a.signature) < std::string_view(b.signature);
  }
};

// Batches waiting for a thread, oldest first. A queue exists only while it has batches,
// and every batch holds its servable, so a queue never outlives its servable and the
// pointer key cannot be reused by another servable while the queue exists.
struct Queue {
  std::deque<std::shared_ptr<Batch>> batches;
};

std::string describe(const Tensor& t) { return std::string(dtype_name(t.dtype())) + " " + t.shape().to_string(); }

std::string where(const Servable& s, const std::string& signature) {
  return "model '" + s.name + "' version " + std::to_string(s.version) + ", signature '" + signature + "'";
}

// Rows along dim 0 shared by every input, or -1 when the request cannot be batched (no
// inputs, a scalar input, inputs that disagree on dim 0, or no rows at all).
int64_t batch_rows(const TensorMap& inputs) {
  int64_t rows = -1;
  for (const auto& [name, t] : inputs) {
    if (t.rank() == 0) return -1;
    if (rows >= 0 && t.dim(0) != rows) return -1;
    rows = t.dim(0);
  }
  return rows > 0 ? rows : -1;
}

// Requests merge only when they have the same keys, dtypes and dims but the first.
bool compatible(const TensorMap& a, const TensorMap& b) {
  if (a.size() != b.size()) return false;
  for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j) {
    if (i->first != j->first) return false;
    const Tensor& x = i->second;
    const Tensor& y = j->second;
    if (x.dtype() != y.dtype() || x.rank() != y.rank()) return false;
    for (int d = 1; d < x.rank(); ++d)
      if (x.shape()[d] != y.shape()[d]) return false;
  }
  return true;
}

// One input of the batch: every request's rows in order, then copies of row 0 up to
// run_rows. Numbers are memcpy'd a request at a time; strings are copied element-wise.
Tensor concat_rows(const std::vector<const Tensor*>& parts, int64_t run_rows) {
  const Tensor& first = *parts[0];
  Shape shape = first.shape();
  shape[0] = run_rows;
  Tensor out(shape, first.dtype());
  int64_t row_elems = 1;
  for (int d = 1; d < shape.rank(); ++d) row_elems *= shape[d];
  if (first.dtype() == DType::String) {
    auto* dst = static_cast<std::string*>(out.raw_data());
    auto* row0 = dst;
    for (const Tensor* t : parts) {
      const auto* src = static_cast<const std::string*>(t->raw_data());
      dst = std::copy(src, src + t->size(), dst);
    }
    for (auto* end = row0 + out.size(); dst < end;) dst = std::copy(row0, row0 + row_elems, dst);
    return out;
  }
  const size_t row_bytes = size_t(row_elems) * dtype_size(first.dtype());
  auto* dst = static_cast<char*>(out.raw_data());
  auto* row0 = dst;
  for (const Tensor* t : parts) {
    if (t->nbytes()) std::memcpy(dst, t->raw_data(), t->nbytes());
    dst += t->nbytes();
  }
  for (auto* end = row0 + out.nbytes(); dst < end; dst += row_bytes) std::memcpy(dst, row0, row_bytes);
  return out;
}

// Each request of a failed batch gets its own copy of the error: one exception object
// rethrown in several threads is freed by whichever finishes last, through a refcount
// inside libstdc++ that thread sanitizers cannot see. The copy keeps text and code_of().
std::exception_ptr copy_error(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const ServingError& e) {
    return std::make_exception_ptr(ServingError(e.code(), e.what()));
  } catch (const Error& e) {
    return std::make_exception_ptr(Error(e.what()));
  } catch (const std::exception& e) {
    return std::make_exception_ptr(ServingError(code_of(e), e.what()));
  } catch (...) {
    return std::make_exception_ptr(
        ServingError(Code::Internal, "[batching] the model run threw a non-standard exception"));
  }
}

// libstdc++'s atomic::wait spins with sched_yield before it sleeps; with dozens of
// clients waiting that spinning cost more CPU than the batching saved (perf: ~30% of
// the batched run in sched_yield). On Linux sleep on the futex directly.
void wait_done(const std::atomic<int>& done) {
#if defined(__linux__)
  while (done.load(std::memory_order_acquire) == 0)
    ::syscall(SYS_futex, &done, FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0);
#else
  done.wait(0, std::memory_order_acquire);
#endif
}

void set_done(std::atomic<int>& done) {
  done.store(1, std::memory_order_release);
#if defined(__linux__)
  ::syscall(SYS_futex, &done, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
#else
  done.notify_all();
#endif
}

}  // namespace

struct Batcher::Impl {
  BatchingOptions options;
  std::mutex mu;
  std::condition_variable cv;  // batch threads: a batch was added, closed, or the batcher stops
  std::map<QueueKey, Queue, QueueKeyLess> queues;
  size_t pending_requests = 0;
  bool stopping = false;
  std::shared_ptr<const Listener> listener;
  std::vector<std::thread> threads;
  int intra_op_threads = 1;  // each batch thread's OpenMP team

  std::shared_ptr<Batch> enqueue(const ServableHandle& servable, const std::string& signature, Request& r);
  void thread_main();
  void run_batch(Batch& b) const;
};

std::shared_ptr<Batch> Batcher::Impl::enqueue(const ServableHandle& servable, const std::string& signature,
                                              Request& r) {
  const auto deadline = Clock::now() + std::chrono::microseconds(options.batch_timeout_micros);
  std::unique_lock lock(mu);
  if (stopping) throw ServingError(Code::Unavailable, "[batching] the batcher is shutting down");
  auto it = queues.find(QueueKeyView{servable.get(), signature});
  if (it != queues.end()) {
    // Newest first: the open batch is usually the last one. An older batch with room
    // also takes the request, which then runs sooner.
    auto& batches = it->second.batches;
    for (auto b = batches.rbegin(); b != batches.rend(); ++b) {
      Batch& batch = **b;
      if (batch.closed || batch.rows + r.rows > options.max_batch_size) continue;
      if (!compatible(*batch.requests[0]->inputs, *r.inputs)) continue;
      batch.requests.push_back(&r);
      batch.rows += r.rows;
      ++pending_requests;
      if (batch.rows == options.max_batch_size) {
        batch.closed = true;
        cv.notify_one();
      }
      return *b;
    }
    if (int64_t(batches.size()) >= options.max_enqueued_batches) {
      throw ServingError(Code::Unavailable, "[batching] the batch queue is full (max_enqueued_batches " +
                                                std::to_string(options.max_enqueued_batches) + ") for " +
                                                where(*servable, signature) + "; retry later");
    }
    // As TF Serving: a request that does not fit closes the open batch of its shape, which
    // then runs without waiting for its timeout.
    for (auto b = batches.rbegin(); b != batches.rend(); ++b)
      if (!(*b)->closed && compatible(*(*b)->requests[0]->inputs, *r.inputs)) (*b)->closed = true;
  } else {
    it = queues.emplace(QueueKey{servable.get(), signature}, Queue{}).first;
  }
  auto batch = std::make_shared<Batch>();
  batch->servable = servable;
  batch->signature = signature;
  batch->requests.push_back(&r);
  batch->rows = r.rows;
  batch->deadline = deadline;
  batch->closed = r.rows == options.max_batch_size;
  it->second.batches.push_back(batch);
  ++pending_requests;
  cv.notify_one();
  return batch;
}

void Batcher::Impl::thread_main() {
  // Concurrent batches share the cores instead of each starting a full OpenMP team: with
  // N batch threads x a team per core, the spinning members of one batch's team steal
  // the cores another batch runs on (measured on 2 cores: 10-30% more server CPU per
  // batched request on the demo CNN over REST, ~50% on a dense layer in process).
  omp_set_num_threads(intra_op_threads);
  std::unique_lock lock(mu);
  for (;;) {
    // The ready batch whose first request is oldest, across all queues (FIFO, so no
    // servable starves another); otherwise sleep until the earliest deadline.
    const auto now = Clock::now();
    decltype(queues)::iterator best_queue;
    size_t best_index = 0;
    Batch* best = nullptr;
    auto next_deadline = Clock::time_point::max();
    for (auto q = queues.begin(); q != queues.end(); ++q) {
      for (size_t i = 0; i < q->second.batches.size(); ++i) {
        Batch* b = q->second.batches[i].get();
        if (b->closed || b->deadline <= now || stopping) {
          if (!best || b->deadline < best->deadline) {
            best = b;
            best_queue = q;
            best_index = i;
          }
        } else {
          next_deadline = std::min(next_deadline, b->deadline);
        }
      }
    }
    if (best) {
      auto& batches = best_queue->second.batches;
      std::shared_ptr<Batch> batch = std::move(batches[best_index]);
      batches.erase(batches.begin() + std::ptrdiff_t(best_index));
      if (batches.empty()) queues.erase(best_queue);
      pending_requests -= batch->requests.size();
      batch->listener = listener;
      // Hand the watch over the remaining deadlines to an idle thread.
      if (!queues.empty()) cv.notify_one();
      lock.unlock();
      run_batch(*batch);
      // Let go of the servable before the callers wake: once the last request returns,
      // nothing here keeps an unloaded version alive.
      batch->servable.reset();
      batch->listener.reset();
      set_done(batch->done);
      batch.reset();
      lock.lock();
      continue;
    }
    if (stopping) return;
    if (next_deadline == Clock::time_point::max()) cv.wait(lock);
    else cv.wait_until(lock, next_deadline);
  }
}

void Batcher::Impl::run_batch(Batch& b) const {
  const int64_t rows = b.rows;
  int64_t run_rows = rows;
  for (int64_t size : options.allowed_batch_sizes) {
    if (size >= rows) {
      run_rows = size;
      break;
    }
  }
  try {
    const auto& signature = b.servable->model.signature(b.signature);
    // A lone request without padding runs on its own tensors: no copy at all.
    const bool alone = b.requests.size() == 1 && run_rows == rows;
    TensorMap merged;
    if (!alone) {
      std::vector<const Tensor*> parts(b.requests.size());
      for (const auto& [name, t] : *b.requests[0]->inputs) {
        for (size_t i = 0; i < b.requests.size(); ++i) parts[i] = &b.requests[i]->inputs->find(name)->second;
        merged.emplace_hint(merged.end(), name, concat_rows(parts, run_rows));
      }
    }
    TensorMap outputs = signature(alone ? *b.requests[0]->inputs : merged);
    for (const auto& [name, t] : outputs) {
      if (t.rank() == 0 || t.dim(0) != run_rows) {
        throw ServingError(Code::Internal, "[batching] output '" + name + "' of " + where(*b.servable, b.signature) +
                                               " is " + describe(t) + " for a batch of " + std::to_string(run_rows) +
                                               " rows; batching needs every output to have dim 0 == the batch's "
                                               "rows (run this model without --enable_batching)");
      }
    }
    if (alone) {
      b.requests[0]->outputs = std::move(outputs);
    } else {
      int64_t begin = 0;
      for (Request* r : b.requests) {
        for (const auto& [name, t] : outputs)
          r->outputs.emplace_hint(r->outputs.end(), name, t.slice0(begin, begin + r->rows));
        begin += r->rows;
      }
    }
  } catch (...) {
    std::exception_ptr error = std::current_exception();
    for (Request* r : b.requests) {
      r->outputs.clear();
      r->error = b.requests.size() == 1 ? error : copy_error(error);
    }
  }
  if (b.listener && *b.listener) {
    try {
      (*b.listener)(BatchStats{.model = b.servable->name, .version = b.servable->version, .rows = run_rows, .padded_rows = run_rows - rows,
                               .requests = int64_t(b.requests.size())});
    } catch (...) {
      // A metrics hook must not fail the requests it describes.
    }
  }
}

Batcher::Batcher(BatchingOptions options) : impl_(std::make_unique<Impl>()) {
  validate(options, "options");
  if (options.num_batch_threads == 0) options.num_batch_threads = std::max(1u, std::thread::hardware_concurrency());
  impl_->options = std::move(options);
  // Read on the constructing thread (a new thread sees only OpenMP's initial value), so
  // OMP_NUM_THREADS or the caller's omp_set_num_threads bound the cores batching uses.
  impl_->intra_op_threads = std::max(1, omp_get_max_threads() / int(impl_->options.num_batch_threads));
  for (int64_t i = 0; i < impl_->options.num_batch_threads; ++i)
    impl_->threads.emplace_back([impl = impl_.get()] { impl->thread_main(); });
}

Batcher::~Batcher() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  for (auto& t : impl_->threads) t.join();
}

std::map<std::string, Tensor> Batcher::run(const ServableHandle& servable, const std::string& signature_key,
                                           const std::map<std::string, Tensor>& inputs) {
  const int64_t rows = batch_rows(inputs);
  // Nothing to merge along dim 0: run it as it is, as the model would without batching.
  if (rows < 0) return servable->model.signature(signature_key)(inputs);
  if (rows > impl_->options.max_batch_size) {
    std::string shapes;
    for (const auto& [name, t] : inputs) shapes += (shapes.empty() ? "" : ", ") + name + ": " + describe(t);
    throw ServingError(Code::InvalidArgument,
                       "[batching] the request has " + std::to_string(rows) + " rows (dim 0 of its inputs " + shapes +
                           "), more than max_batch_size " + std::to_string(impl_->options.max_batch_size) + " (" +
                           where(*servable, signature_key) + "); send smaller requests");
  }
  Request request{.inputs = &inputs, .rows = rows, .outputs = {}};
  std::shared_ptr<Batch> batch = impl_->enqueue(servable, signature_key, request);
  wait_done(batch->done);
  if (request.error) std::rethrow_exception(request.error);
  return std::move(request.outputs);
}

SignatureRunner Batcher::runner() {
  return [this](const ServableHandle& servable, const std::string& key, const std::map<std::string, Tensor>& inputs) {
    return run(servable, key, inputs);
  };
}

void Batcher::set_batch_listener(std::function<void(const BatchStats&)> listener) {
  auto shared = std::make_shared<const Listener>(std::move(listener));
  std::lock_guard lock(impl_->mu);
  impl_->listener = std::move(shared);
}

const BatchingOptions& Batcher::options() const { return impl_->options; }

size_t Batcher::pending_requests() const {
  std::lock_guard lock(impl_->mu);
  return impl_->pending_requests;
}

}  // namespace deepflow::serving
