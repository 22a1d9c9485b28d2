// SPDX-License-Identifier: Apache-2.0
// FULLY_CONNECTED and BATCH_MATMUL on float32, both on the lite GEMM. A constant weight
// (an FC's [out, in] filter, a BATCH_MATMUL's constant right operand) is packed once at
// prepare. The int8 form is in int8_ops.cpp, the hybrid one (float input, int8 weights)
// in hybrid.cpp; other weight types fail with "not supported yet".
#include "deepflow/lite/kernels/gemm.h"
#include "deepflow/lite/kernels/kernel_util.h"

namespace deepflow::lite {

namespace {

constexpr int kFewRows = 4;  // up to this many rows, a non-constant B is multiplied unpacked

class FullyConnected final : public Kernel {
 public:
  explicit FullyConnected(const OpContext& ctx) {
    // No options table: TFLite's defaults (no activation, flattened output).
    if (const auto* o = ctx.options<fb::FullyConnectedOptions>()) {
      act_ = o->fused_activation_function();
      keep_num_dims_ = o->keep_num_dims();
      DF_LITE_OP_CHECK(ctx, o->weights_format() == fb::FullyConnectedOptionsWeightsFormat::DEFAULT,
                       "has weights_format ", fb::EnumNameFullyConnectedOptionsWeightsFormat(o->weights_format()),
                       ": only DEFAULT is supported");
    }
  }

  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    require_float(ctx, x, w, "weights");
    check_rank(ctx, w, 2, "weights");
    check_activation(ctx, act_);
    out_ = w.dim(0), in_ = w.dim(1);
    DF_LITE_OP_CHECK(ctx, in_ > 0 && x.num_elements() % in_ == 0, "input ", shape_string(x.shape),
                     " does not flatten into rows of weights ", shape_string(w.shape), "'s ", in_, " inputs");
    batches_ = static_cast<int>(x.num_elements() / in_);
    if (ctx.has_input(2)) {
      const Tensor& b = ctx.input(2);
      check_type(ctx, b, DType::kFloat32, "bias");
      DF_LITE_OP_CHECK(ctx, b.num_elements() == out_, "bias ", shape_string(b.shape), " does not match weights ",
                       shape_string(w.shape), "'s ", out_, " outputs");
    }
    if (keep_num_dims_) {
      DF_LITE_OP_CHECK(ctx, x.rank() >= 1 && x.dim(-1) == in_, "keep_num_dims needs input ", shape_string(x.shape),
                       "'s last dimension to be weights ", shape_string(w.shape), "'s ", in_, " inputs");
      std::vector<int> shape = x.shape;
      shape.back() = out_;
      ctx.resize_output(0, shape);
    } else {
      ctx.resize_output(0, {batches_, out_});
    }
    packed_ok_ = w.is_constant() && w.data_ptr != nullptr;
    if (packed_ok_) packed_.pack(w.data<float>(), in_, out_, in_, Layout::kTransposed, &ctx.pool());
  }

  void eval(OpContext& ctx) override {
    const float* x = ctx.input(0).data<float>();
    const float* w = ctx.input(1).data<float>();
    float* y = ctx.output(0).data<float>();
    if (batches_ == 0 || out_ == 0) return;
    GemmEpilogue e;
    if (ctx.has_input(2)) e.bias = ctx.input(2).data<float>();
    const bool clamp = act_ != fb::ActivationFunctionType::TANH && act_ != fb::ActivationFunctionType::SIGN_BIT;
    if (clamp) {
      const FloatRange r = activation_range(act_);
      e.lo = r.lo;
      e.hi = r.hi;
    }
    ThreadPool& pool = ctx.pool();
    if (packed_ok_) {
      sgemm(&pool, batches_, x, in_, Layout::kRowMajor, packed_, y, out_, e);
    } else if (batches_ <= kFewRows) {
      sgemm(&pool, batches_, out_, in_, x, in_, Layout::kRowMajor, w, in_, Layout::kTransposed, y, out_, e);
    } else {
      packed_.pack(w, in_, out_, in_, Layout::kTransposed, &pool);  // reuses the storage of the last eval
      sgemm(&pool, batches_, x, in_, Layout::kRowMajor, packed_, y, out_, e);
    }
    if (!clamp) apply_activation(act_, y, static_cast<int64_t>(batches_) * out_);
  }

 private:
  fb::ActivationFunctionType act_ = fb::ActivationFunctionType::NONE;
  bool keep_num_dims_ = false;
  int in_ = 0, out_ = 0, batches_ = 0;
  PackedB packed_;
  bool packed_ok_ = false;
};

// BATCH_MATMUL: out[..., M, N] = x[..., M, K] * y[..., K, N] (adj_x / adj_y: the operand's
// last two dimensions swapped), the batch dimensions broadcast as NumPy does.
class BatchMatMul final : public Kernel {
 public:
  explicit BatchMatMul(const OpContext& ctx) {
    if (const auto* o = ctx.options<fb::BatchMatMulOptions>()) {
      adj_x_ = o->adj_x();
      adj_y_ = o->adj_y();
    }
  }

  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& y = ctx.input(1);
    require_float(ctx, x, y, "right operand");
    shape_ = matmul_shape(ctx, x, y, adj_x_, adj_y_);
    m_ = shape_.m, k_ = shape_.k, n_ = shape_.n;
    batches_ = shape_.batches;
    y_batches_ = shape_.y_batches;
    ctx.resize_output(0, shape_.output_shape());
    slots_ = ctx.pool().size();
    packed_ok_ = y.is_constant() && y.data_ptr != nullptr;
    if (packed_ok_) {
      // A constant right operand (a weight): every batch of it packed once.
      packed_.resize(static_cast<size_t>(y_batches_));
      for (int64_t b = 0; b < y_batches_; ++b) pack(ctx, b, packed_[static_cast<size_t>(b)], &ctx.pool());
    } else {
      packed_.resize(static_cast<size_t>(slots_));  // one scratch per thread
    }
  }

  void eval(OpContext& ctx) override {
    if (batches_ == 0 || m_ == 0 || n_ == 0) return;
    ThreadPool& pool = ctx.pool();
    const int64_t batch_flops = 2LL * m_ * n_ * k_;
    // Many small products: a thread per slot of batches, each GEMM on its thread alone.
    if (slots_ > 1 && batches_ >= slots_ && batch_flops < (1LL << 24)) {
      pool.parallel_for(slots_, 1, [&](int64_t lo, int64_t hi) {
        for (int64_t s = lo; s < hi; ++s)
          for (int64_t b = batches_ * s / slots_; b < batches_ * (s + 1) / slots_; ++b)
            multiply(ctx, b, static_cast<int>(s), nullptr);
      });
    } else {
      for (int64_t b = 0; b < batches_; ++b) multiply(ctx, b, 0, &pool);
    }
  }

 private:
  // Packs batch b of y (b counts y's own batches) into dst.
  void pack(const OpContext& ctx, int64_t b, PackedB& dst, ThreadPool* pool) const {
    const float* y = ctx.input(1).data<float>() + b * k_ * n_;
    dst.pack(y, k_, n_, adj_y_ ? k_ : n_, adj_y_ ? Layout::kTransposed : Layout::kRowMajor, pool);
  }

  // Output batch b: its x and y batches from the broadcast strides.
  void multiply(const OpContext& ctx, int64_t b, int slot, ThreadPool* pool) {
    const auto [xb, yb] = shape_.operand_batches(b);
    const float* x = ctx.input(0).data<float>() + xb * m_ * k_;
    float* out = ctx.output(0).data<float>() + b * m_ * n_;
    const int lda = adj_x_ ? m_ : k_;
    const Layout a_layout = adj_x_ ? Layout::kTransposed : Layout::kRowMajor;
    if (packed_ok_) {
      sgemm(pool, m_, x, lda, a_layout, packed_[static_cast<size_t>(yb)], out, n_);
    } else if (m_ <= kFewRows) {
      const float* y = ctx.input(1).data<float>() + yb * k_ * n_;
      sgemm(pool, m_, n_, k_, x, lda, a_layout, y, adj_y_ ? k_ : n_,
            adj_y_ ? Layout::kTransposed : Layout::kRowMajor, out, n_);
    } else {
      PackedB& scratch = packed_[static_cast<size_t>(slot)];
      pack(ctx, yb, scratch, pool);
      sgemm(pool, m_, x, lda, a_layout, scratch, out, n_);
    }
  }

  bool adj_x_ = false, adj_y_ = false;
  int m_ = 0, n_ = 0, k_ = 0;
  MatMulShape shape_;
  int64_t batches_ = 0, y_batches_ = 0;
  int slots_ = 1;
  std::vector<PackedB> packed_;  // y's batches when constant, else per-thread scratch
  bool packed_ok_ = false;
};

}  // namespace

void register_fully_connected_kernels(OpResolver& r) {
  r.add_builtin(fb::BuiltinOperator::FULLY_CONNECTED, make_factory<FullyConnected>(), 1, 12);
  r.add_builtin(fb::BuiltinOperator::BATCH_MATMUL, make_factory<BatchMatMul>(), 1, 4);
}

}  // namespace deepflow::lite
