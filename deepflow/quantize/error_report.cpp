// SPDX-License-Identifier: Apache-2.0
// The per-op int8 error report: the float and the int8 model run side by side in
// deepflow_lite (every tensor preserved) on a few representative samples, and each int8 op
// output, dequantized, is compared with the same tensor of the float model.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "deepflow/core/error.h"
#include "deepflow/lite/interpreter.h"
#include "deepflow/quantize/quantize_internal.h"

namespace deepflow::quantize {
namespace detail {

namespace {

// Writes a float sample into an input of type float32, int8 or uint8 (quantized).
void feed(lite::Interpreter& interp, const LiteModel& m, const TensorList& sample) {
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    const Tensor& x = sample[i];
    interp.resize_input_tensor(interp.inputs()[i], std::vector<int>(x.shape().begin(), x.shape().end()));
  }
  interp.allocate_tensors();
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    Tensor x = sample[i];
    lite::Tensor& t = interp.tensor(interp.inputs()[i]);
    const LiteTensor& lt = m.tensors[size_t(m.inputs[i])];
    const float* f = x.data<float>();
    const int64_t n = x.size();
    if (lt.type == fb::TensorType::FLOAT32) {
      std::memcpy(t.data_ptr, f, size_t(n) * 4);
      continue;
    }
    const double s = lt.quant.scale[0], zp = double(lt.quant.zero_point[0]);
    const bool u8 = lt.type == fb::TensorType::UINT8;
    for (int64_t k = 0; k < n; ++k) {
      const double q = std::clamp(std::round(double(f[k]) / s) + zp, u8 ? 0.0 : -128.0, u8 ? 255.0 : 127.0);
      if (u8) t.data<uint8_t>()[k] = uint8_t(q);
      else t.data<int8_t>()[k] = int8_t(q);
    }
  }
}

struct Accumulator {
  double sq = 0, ref_sq = 0, max_abs = 0;
  int64_t n = 0;
};

}  // namespace

std::vector<LayerError> int8_error_report(const LiteModel& float_model, const LiteModel& int8_model,
                                          const std::vector<TensorList>& samples) {
  lite::Interpreter f(lite::Model::from_buffer(serialize_lite_model(float_model), "float model"));
  lite::Interpreter q(lite::Model::from_buffer(serialize_lite_model(int8_model), "int8 model"));
  f.set_preserve_all_tensors(true);
  q.set_preserve_all_tensors(true);
  std::vector<Accumulator> acc(int8_model.ops.size());
  for (const TensorList& sample : samples) {
    feed(f, float_model, sample);
    feed(q, int8_model, sample);
    f.invoke();
    q.invoke();
    for (size_t i = 0; i < int8_model.ops.size(); ++i) {
      const int32_t t = int8_model.ops[i].outputs[0];
      const LiteTensor& lt = int8_model.tensors[size_t(t)];
      if (size_t(t) >= float_model.tensors.size() || lt.type != fb::TensorType::INT8) continue;
      const lite::Tensor& a = q.tensor(t);
      const lite::Tensor& b = f.tensor(t);
      if (!a.data_ptr || !b.data_ptr || a.num_elements() != b.num_elements()) continue;
      const double s = lt.quant.scale[0], zp = double(lt.quant.zero_point[0]);
      Accumulator& r = acc[i];
      for (int64_t k = 0; k < a.num_elements(); ++k) {
        const double want = b.data<float>()[k];
        const double err = (double(a.data<int8_t>()[k]) - zp) * s - want;
        r.sq += err * err, r.ref_sq += want * want, r.max_abs = std::max(r.max_abs, std::fabs(err));
      }
      r.n += a.num_elements();
    }
  }
  std::vector<LayerError> out;
  for (size_t i = 0; i < int8_model.ops.size(); ++i) {
    if (!acc[i].n) continue;
    const LiteOp& op = int8_model.ops[i];
    const LiteTensor& lt = int8_model.tensors[size_t(op.outputs[0])];
    out.push_back({.op = fb::EnumNameBuiltinOperator(op.code), .tensor = lt.name, .source = op.source,
                   .scale = lt.quant.scale[0], .rmse = std::sqrt(acc[i].sq / double(acc[i].n)),
                   .max_abs = acc[i].max_abs, .float_rms = std::sqrt(acc[i].ref_sq / double(acc[i].n))});
  }
  return out;
}

}  // namespace detail

std::string format_report(const std::vector<LayerError>& report) {
  std::string s = "int8 error against float, per op (rmse / rms: relative error; scale: the output's step)\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-4s %-18s %-40s %11s %11s %11s %9s\n", "#", "op", "tensor", "scale", "rmse",
                "max |err|", "rmse/rms");
  s += line;
  for (size_t i = 0; i < report.size(); ++i) {
    const LayerError& e = report[i];
    std::string name = e.tensor.size() > 40 ? "..." + e.tensor.substr(e.tensor.size() - 37) : e.tensor;
    std::snprintf(line, sizeof line, "%-4zu %-18s %-40s %11.4g %11.4g %11.4g %9.4f\n", i, e.op.c_str(), name.c_str(),
                  e.scale, e.rmse, e.max_abs, e.float_rms > 0 ? e.rmse / e.float_rms : 0.0);
    s += line;
  }
  return s;
}

}  // namespace deepflow::quantize
