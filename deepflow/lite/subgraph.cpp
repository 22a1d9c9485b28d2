// SPDX-License-Identifier: Apache-2.0
#include "deepflow/lite/subgraph.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "deepflow/lite/interpreter.h"
#include "deepflow/lite/kernel.h"
#include "deepflow/lite/model.h"

namespace deepflow::lite {

namespace {

// Every arena tensor starts on a cache line, so kernels may use aligned vector loads.
constexpr size_t kAlignment = 64;

size_t align_up(size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

std::unique_ptr<std::byte[]> aligned_block(size_t bytes, std::byte** aligned) {
  auto block = std::make_unique<std::byte[]>(bytes + kAlignment);
  auto addr = reinterpret_cast<uintptr_t>(block.get());
  *aligned = block.get() + (align_up(addr) - addr);
  return block;
}

std::vector<int> to_vector(const flatbuffers::Vector<int32_t>* v) {
  return v ? std::vector<int>(v->begin(), v->end()) : std::vector<int>();
}

// The operator's code: the larger of the two fields (schema 3a's rule; see lite.md §1.2).
fb::BuiltinOperator builtin_code(const fb::OperatorCode& c) {
  return static_cast<fb::BuiltinOperator>(
      std::max(static_cast<int32_t>(c.builtin_code()), static_cast<int32_t>(c.deprecated_builtin_code())));
}

}  // namespace

struct Subgraph::Node {
  const fb::Operator* op = nullptr;
  std::unique_ptr<OpContext> ctx;
  std::unique_ptr<Kernel> kernel;
  bool reprepare = false;  // an input is shaped in eval: prepare again before each eval
  bool folded = false;     // run at allocate_tensors(): its outputs are constants
  bool custom = false;
};

Subgraph::Subgraph(Interpreter& interpreter, const Model& model, int index, const OpResolver& resolver)
    : interpreter_(&interpreter), model_(&model), index_(index) {
  const fb::SubGraph& sg = *model.fb()->subgraphs()->Get(static_cast<uint32_t>(index));
  if (sg.name()) name_ = sg.name()->str();
  inputs_ = to_vector(sg.inputs());
  outputs_ = to_vector(sg.outputs());
  const uint32_t n = sg.tensors() ? sg.tensors()->size() : 0;
  tensors_.resize(n);
  dynamic_.assign(n, 0);
  persistent_.assign(n, 0);
  folded_.assign(n, 0);
  for (uint32_t i = 0; i < n; ++i) {
    const fb::Tensor& src = *sg.tensors()->Get(i);
    Tensor& t = tensors_[i];
    if (src.name()) t.name = src.name()->str();
    t.type = static_cast<DType>(src.type());
    t.shape = to_vector(src.shape());
    t.shape_signature = src.shape_signature() ? to_vector(src.shape_signature()) : t.shape;
    if (const auto* q = src.quantization(); q && q->scale() && q->scale()->size() > 0) {
      t.quant.scale.assign(q->scale()->begin(), q->scale()->end());
      if (const auto* zp = q->zero_point()) {
        // Copied as bytes: a file's int64 vector need not be 8-byte aligned in memory.
        t.quant.zero_point.resize(zp->size());
        if (zp->size()) std::memcpy(t.quant.zero_point.data(), zp->Data(), zp->size() * sizeof(int64_t));
      }
      t.quant.zero_point.resize(t.quant.scale.size(), 0);
      t.quant.dim = q->quantized_dimension();
    }
    t.is_variable = src.is_variable();
    t.sparsity = src.sparsity();
    const std::string_view data = model.buffer(src.buffer());
    if (t.is_variable) {
      // A variable keeps its value across invokes: memory of its own, allocated (and
      // initialised from the file) by the first allocate_tensors().
      persistent_[i] = 1;
    } else if (!data.empty()) {
      t.storage = Storage::kConstant;
      t.bytes = data.size();
      // Real files do not always align buffers (lite.md §6 b): copy the ones that are not.
      if (reinterpret_cast<uintptr_t>(data.data()) % 16 != 0) {
        allocate_owned(t);
        std::memcpy(t.data_ptr, data.data(), t.bytes);
        t.storage = Storage::kConstant;
      } else {
        t.data_ptr = reinterpret_cast<std::byte*>(const_cast<char*>(data.data()));
      }
    }
  }
  if (!sg.operators()) return;
  const auto* codes = model.fb()->operator_codes();
  for (uint32_t o = 0; o < sg.operators()->size(); ++o) {
    const fb::Operator* op = sg.operators()->Get(o);
    const fb::OperatorCode& code = *codes->Get(op->opcode_index());
    const fb::BuiltinOperator builtin = builtin_code(code);
    const KernelFactory* factory = nullptr;
    std::string op_name;
    if (builtin == fb::BuiltinOperator::CUSTOM) {
      op_name = code.custom_code() ? code.custom_code()->str() : "";
      factory = resolver.find_custom(op_name);
      DF_LITE_CHECK(factory, "[lite.Interpreter] '", model.name(), "': operator ", o, " of subgraph ", index,
                    " is the custom op '", op_name, "', which is not registered (OpResolver::add_custom)");
    } else {
      const char* name = fb::EnumNameBuiltinOperator(builtin);
      op_name = (name && *name) ? name : "BUILTIN(" + std::to_string(static_cast<int>(builtin)) + ")";
      factory = resolver.find_builtin(builtin, code.version());
      if (!factory) {
        const auto [lo, hi] = resolver.version_range(builtin);
        if (hi == 0)
          fail("[lite.Interpreter] '", model.name(), "': operator ", o, " of subgraph ", index, " is ", op_name,
               ", which deepflow_lite has no kernel for");
        fail("[lite.Interpreter] '", model.name(), "': operator ", o, " of subgraph ", index, " is ", op_name,
             " version ", code.version(), "; deepflow_lite runs versions ", lo, " to ", hi,
             code.version() > hi ? " (the file needs a newer runtime)" : "");
      }
    }
    auto node = std::make_unique<Node>();
    node->op = op;
    node->ctx = std::make_unique<OpContext>(*this, static_cast<int>(o), op, op_name, code.version());
    node->kernel = (*factory)(*node->ctx);
    node->custom = builtin == fb::BuiltinOperator::CUSTOM;
    nodes_.push_back(std::move(node));
  }
}

Subgraph::~Subgraph() = default;

Tensor& Subgraph::tensor(int i) {
  DF_LITE_CHECK(i >= 0 && i < static_cast<int>(tensors_.size()), "[lite.Interpreter] tensor index ", i,
                " is out of range: subgraph ", index_, " has ", tensors_.size(), " tensors");
  return tensors_[static_cast<size_t>(i)];
}

int Subgraph::num_nodes() const { return static_cast<int>(nodes_.size()); }

const std::string& Subgraph::node_name(int i) const { return nodes_.at(static_cast<size_t>(i))->ctx->op_name(); }

ThreadPool& Subgraph::pool() { return interpreter_->pool(); }

namespace {

// Shapes from files, users and kernels (TILE's multiples, FILL's dims) are checked before
// anything multiplies them out.
void check_shape(const Tensor& t, const std::vector<int>& shape, const char* who) {
  int64_t n = 1;
  for (int d : shape) {
    DF_LITE_CHECK(d >= 0, "[", who, "] tensor '", t.name, "': shape ", shape_string(shape), " has a negative dimension");
    n *= d;
    DF_LITE_CHECK(n <= (int64_t{1} << 40), "[", who, "] tensor '", t.name, "': shape ", shape_string(shape),
                  " is too large");
  }
}

}  // namespace

void Subgraph::resize_input(int tensor_index, const std::vector<int>& shape, bool strict) {
  Tensor& t = tensor(tensor_index);
  DF_LITE_CHECK(std::find(inputs_.begin(), inputs_.end(), tensor_index) != inputs_.end() || t.is_variable,
                "[lite.resize_tensor_input] tensor ", tensor_index, " '", t.name, "' is not an input");
  check_shape(t, shape, "lite.resize_tensor_input");
  if (strict) {
    bool ok = shape.size() == t.shape_signature.size();
    for (size_t i = 0; ok && i < shape.size(); ++i)
      ok = t.shape_signature[i] == -1 || t.shape_signature[i] == shape[i];
    DF_LITE_CHECK(ok, "[lite.resize_tensor_input] input '", t.name, "' has shape_signature ",
                  shape_string(t.shape_signature), ": strict resizing to ", shape_string(shape),
                  " may change only its -1 dimensions");
  }
  if (t.shape == shape) return;
  t.shape = shape;
  needs_allocation_ = true;
}

void Subgraph::resize_tensor(int tensor_index, const std::vector<int>& shape) {
  Tensor& t = tensors_[static_cast<size_t>(tensor_index)];
  check_shape(t, shape, "lite.Interpreter");
  DF_LITE_CHECK(!t.is_constant() || folded_[static_cast<size_t>(tensor_index)],
                "[lite.Interpreter] an operator resized constant tensor ", tensor_index, " '", t.name, "'");
  t.shape = shape;
  t.bytes = static_cast<size_t>(t.num_elements()) * dtype_size(t.type);
  if (dynamic_[static_cast<size_t>(tensor_index)] || persistent_[static_cast<size_t>(tensor_index)]) {
    allocate_owned(t);
  } else if (in_eval_) {
    // An arena tensor's size was fixed by the plan; a kernel resizing it in eval is a bug.
    DF_LITE_CHECK(t.storage == Storage::kArena && t.bytes <= t.owned_capacity, "[lite.Interpreter] tensor ",
                  tensor_index, " '", t.name, "' was resized while running without being marked dynamic");
  }
}

void Subgraph::mark_dynamic(int tensor_index) { dynamic_[static_cast<size_t>(tensor_index)] = 1; }

void Subgraph::allocate_owned(Tensor& t) {
  if (t.owned && t.owned_capacity >= t.bytes && t.storage != Storage::kArena) {
    t.storage = t.storage == Storage::kConstant ? Storage::kConstant : Storage::kDynamic;
    return;
  }
  DF_LITE_CHECK(t.bytes <= interpreter_->memory_limit(), "[lite.allocate_tensors] tensor '", t.name, "' ",
                shape_string(t.shape), " needs ", t.bytes, " bytes; the interpreter's memory limit is ",
                interpreter_->memory_limit());
  std::byte* aligned = nullptr;
  t.owned = aligned_block(std::max<size_t>(t.bytes, 1), &aligned);
  t.owned_capacity = t.bytes;
  t.data_ptr = aligned;
  if (t.storage != Storage::kConstant) t.storage = Storage::kDynamic;
}

void Subgraph::allocate_tensors() {
  for (const int i : inputs_) {
    Tensor& t = tensors_[static_cast<size_t>(i)];
    if (!t.is_constant() && !t.is_variable) t.bytes = static_cast<size_t>(t.num_elements()) * dtype_size(t.type);
  }
  const fb::SubGraph& sg = *model_->fb()->subgraphs()->Get(static_cast<uint32_t>(index_));
  for (size_t i = 0; i < tensors_.size(); ++i) {
    Tensor& t = tensors_[i];
    if (!t.is_variable || t.data_ptr) continue;
    t.bytes = static_cast<size_t>(t.num_elements()) * dtype_size(t.type);
    allocate_owned(t);
    std::memset(t.data_ptr, 0, t.bytes);
    const std::string_view data = model_->buffer(sg.tensors()->Get(static_cast<uint32_t>(i))->buffer());
    if (data.size() == t.bytes && t.bytes > 0) std::memcpy(t.data_ptr, data.data(), t.bytes);
  }
  // Folded values are recomputed: an input's new shape may change them.
  for (size_t t = 0; t < tensors_.size(); ++t)
    if (folded_[t]) {
      tensors_[t].storage = Storage::kDynamic;
      folded_[t] = 0;
    }
  for (auto& node : nodes_) {
    node->reprepare = false;
    node->folded = false;
    if (const auto* in = node->op->inputs()) {
      for (int t : *in)
        if (t >= 0 && dynamic_[static_cast<size_t>(t)]) node->reprepare = true;
    }
    if (node->reprepare) {
      // Its input's shape is known only while running: so are its outputs'.
      for (int t : *node->op->outputs()) dynamic_[static_cast<size_t>(t)] = 1;
      continue;
    }
    node->kernel->prepare(*node->ctx);
    node->folded = try_fold(*node);
  }
  plan_arena();
  needs_allocation_ = false;
}

bool Subgraph::try_fold(Node& node) {
  if (node.custom || !node.kernel->foldable()) return false;
  const bool shape_only = node.kernel->shape_only();
  if (const auto* in = node.op->inputs()) {
    for (int t : *in) {
      if (t < 0) continue;
      const Tensor& x = tensors_[static_cast<size_t>(t)];
      if (shape_only ? dynamic_[static_cast<size_t>(t)] != 0 : !x.is_constant()) return false;
    }
  }
  const auto* out = node.op->outputs();
  if (!out || out->size() == 0) return false;
  for (int t : *out) {
    if (dynamic_[static_cast<size_t>(t)] || tensors_[static_cast<size_t>(t)].is_variable) return false;
  }
  for (int t : *out) {
    persistent_[static_cast<size_t>(t)] = 1;
    allocate_owned(tensors_[static_cast<size_t>(t)]);
  }
  check_memory(node);
  node.kernel->eval(*node.ctx);
  for (int t : *out) {
    tensors_[static_cast<size_t>(t)].storage = Storage::kConstant;
    folded_[static_cast<size_t>(t)] = 1;
  }
  return true;
}

void Subgraph::plan_arena() {
  // Greedy by size (TFLite's planner): the largest tensor first, each at the lowest offset
  // that no tensor alive at the same time occupies.
  const int n = static_cast<int>(nodes_.size());
  const size_t count = tensors_.size();
  std::vector<int> first(count, -1), last(count, -1);
  auto use = [&](int t, int when) {
    if (t < 0) return;
    auto& f = first[static_cast<size_t>(t)];
    auto& l = last[static_cast<size_t>(t)];
    f = f < 0 ? when : std::min(f, when);
    l = std::max(l, when);
  };
  for (const int t : inputs_) {
    use(t, 0);
    use(t, n);  // inputs stay readable after invoke, as in TFLite
  }
  for (int i = 0; i < n; ++i) {
    if (const auto* in = nodes_[static_cast<size_t>(i)]->op->inputs())
      for (int t : *in) use(t, i);
    if (const auto* out = nodes_[static_cast<size_t>(i)]->op->outputs())
      for (int t : *out) use(t, i);
  }
  for (const int t : outputs_) use(t, n);
  if (interpreter_->preserve_all_tensors())
    for (size_t t = 0; t < count; ++t)
      if (first[t] >= 0) first[t] = 0, last[t] = n;
  struct Block {
    int tensor;
    size_t size;
    size_t offset;
  };
  std::vector<Block> blocks;
  for (size_t t = 0; t < count; ++t) {
    Tensor& tensor = tensors_[t];
    if (first[t] < 0 || tensor.is_constant() || tensor.is_variable || dynamic_[t] || persistent_[t]) continue;
    tensor.bytes = static_cast<size_t>(tensor.num_elements()) * dtype_size(tensor.type);
    blocks.push_back({static_cast<int>(t), align_up(std::max<size_t>(tensor.bytes, 1)), 0});
  }
  std::stable_sort(blocks.begin(), blocks.end(), [](const Block& a, const Block& b) { return a.size > b.size; });
  std::vector<const Block*> placed;
  size_t total = 0;
  for (Block& b : blocks) {
    const auto bt = static_cast<size_t>(b.tensor);
    std::vector<const Block*> live;
    for (const Block* p : placed) {
      const auto pt = static_cast<size_t>(p->tensor);
      if (first[pt] <= last[bt] && first[bt] <= last[pt]) live.push_back(p);
    }
    std::sort(live.begin(), live.end(), [](const Block* a, const Block* c) { return a->offset < c->offset; });
    size_t offset = 0;
    for (const Block* p : live) {
      if (p->offset >= offset + b.size) break;
      offset = std::max(offset, p->offset + p->size);
    }
    b.offset = offset;
    total = std::max(total, offset + b.size);
    placed.push_back(&b);
  }
  DF_LITE_CHECK(total <= interpreter_->memory_limit(), "[lite.allocate_tensors] subgraph ", index_,
                "'s activations need ", total, " bytes; the interpreter's memory limit is ",
                interpreter_->memory_limit());
  if (total > arena_size_ || !arena_storage_) {
    arena_storage_ = aligned_block(std::max<size_t>(total, 1), &arena_);
    arena_size_ = total;
  }
  for (const Block& b : blocks) {
    Tensor& t = tensors_[static_cast<size_t>(b.tensor)];
    t.owned.reset();
    t.storage = Storage::kArena;
    t.data_ptr = arena_ + b.offset;
    t.owned_capacity = b.size;
  }
}

// Every tensor an operator reads or writes has memory for its shape: a hostile file can
// name a tensor nothing produces or give one a type without a size.
// (Outputs shaped while the op runs get their memory then; SHAPE reads no input data.)
void Subgraph::check_memory(const Node& node) const {
  const bool reads_data = !node.kernel->shape_only();
  for (const auto* list : {reads_data ? node.op->inputs() : nullptr, node.op->outputs()}) {
    if (!list) continue;
    for (int t : *list) {
      if (t < 0 || (list == node.op->outputs() && dynamic_[static_cast<size_t>(t)])) continue;
      const Tensor& x = tensors_[static_cast<size_t>(t)];
      const int64_t n = x.num_elements();
      if (n == 0 || x.sparsity) continue;
      DF_LITE_CHECK(x.data_ptr != nullptr && dtype_size(x.type) > 0 && x.bytes >= static_cast<size_t>(n) * dtype_size(x.type),
                    "[lite.", node.ctx->op_name(), " node ", node.ctx->node_index(), "] tensor ", t, " '", x.name, "' (",
                    dtype_name(x.type), " ", shape_string(x.shape), ") has ", x.data_ptr ? x.bytes : 0,
                    " bytes of memory");
    }
  }
}

void Subgraph::invoke() {
  if (needs_allocation_) allocate_tensors();
  for (const int i : inputs_) {
    const Tensor& t = tensors_[static_cast<size_t>(i)];
    DF_LITE_CHECK(t.data_ptr != nullptr || t.bytes == 0, "[lite.invoke] input '", t.name, "' has no memory");
  }
  in_eval_ = true;
  struct Reset {
    bool* flag;
    ~Reset() { *flag = false; }
  } reset{&in_eval_};
  const bool profiling = interpreter_->profiling();
  if (profiling) node_times_.resize(nodes_.size(), 0.0);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Node& node = *nodes_[i];
    if (node.folded) continue;
    const auto t0 = profiling ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    if (node.reprepare) node.kernel->prepare(*node.ctx);
    // A dynamic output that a kernel shapes in prepare (an op before the one that marked the
    // tensor dynamic) gets its memory now; kernels shaping theirs in eval allocate there.
    if (const auto* outs = node.op->outputs())
      for (int t : *outs) {
        if (t < 0 || !dynamic_[static_cast<size_t>(t)]) continue;
        Tensor& x = tensors_[static_cast<size_t>(t)];
        if (x.data_ptr == nullptr && x.num_elements() > 0 && dtype_size(x.type) > 0) {
          x.bytes = static_cast<size_t>(x.num_elements()) * dtype_size(x.type);
          allocate_owned(x);
        }
      }
    check_memory(node);
    node.kernel->eval(*node.ctx);
    if (profiling) node_times_[i] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
}

// OpContext: the operator's view of its subgraph.

int OpContext::num_inputs() const { return op_->inputs() ? static_cast<int>(op_->inputs()->size()) : 0; }
int OpContext::num_outputs() const { return op_->outputs() ? static_cast<int>(op_->outputs()->size()) : 0; }

int OpContext::input_index(int i) const {
  return i >= 0 && i < num_inputs() ? op_->inputs()->Get(static_cast<uint32_t>(i)) : -1;
}

bool OpContext::has_input(int i) const { return input_index(i) >= 0; }

Tensor& OpContext::input(int i) const {
  const int t = input_index(i);
  if (t < 0) fail("needs input ", i, " but has ", num_inputs(), (i < num_inputs() ? " (that one is left out)" : ""));
  return subgraph_->tensors()[static_cast<size_t>(t)];
}

Tensor& OpContext::output(int i) const {
  if (i < 0 || i >= num_outputs()) fail("needs output ", i, " but has ", num_outputs());
  return subgraph_->tensors()[static_cast<size_t>(op_->outputs()->Get(static_cast<uint32_t>(i)))];
}

const uint8_t* OpContext::custom_options() const {
  return op_->custom_options() ? op_->custom_options()->data() : nullptr;
}

size_t OpContext::custom_options_size() const { return op_->custom_options() ? op_->custom_options()->size() : 0; }

void OpContext::resize_output(int i, const std::vector<int>& shape) const {
  output(i);  // range check
  subgraph_->resize_tensor(op_->outputs()->Get(static_cast<uint32_t>(i)), shape);
}

void OpContext::mark_dynamic(int i) const {
  output(i);
  subgraph_->mark_dynamic(op_->outputs()->Get(static_cast<uint32_t>(i)));
}

ThreadPool& OpContext::pool() const { return subgraph_->pool(); }

}  // namespace deepflow::lite
