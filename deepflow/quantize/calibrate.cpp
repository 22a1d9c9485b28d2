// SPDX-License-Identifier: Apache-2.0
// Calibration: the float model runs in deepflow_lite with every tensor preserved, once per
// representative sample, and each float tensor's values feed its range (TFLite calibrates
// the float .tflite model the same way, so the ranges are those of the ops that will run).
#include <cstring>
#include <random>

#include "deepflow/core/error.h"
#include "deepflow/lite/interpreter.h"
#include "deepflow/quantize/quantize_internal.h"
#include "deepflow/quantize/range_observer.h"

namespace deepflow::quantize::detail {

namespace {

lite::Tensor& input_for(lite::Interpreter& interp, size_t i) { return interp.tensor(interp.inputs()[i]); }

}  // namespace

std::vector<Range> calibrate(const LiteModel& m, const ConverterOptions& options, int keep,
                             std::vector<TensorList>* kept) {
  auto model = lite::Model::from_buffer(serialize_lite_model(m), "calibration model");
  lite::Interpreter interp(model);
  interp.set_preserve_all_tensors(true);
  const bool values = options.calibration == Calibration::kPercentile || options.calibration == Calibration::kEntropy;
  std::vector<RangeObserver> obs(m.tensors.size(), RangeObserver("[lite::convert]"));
  std::mt19937_64 rng(0);
  int count = 0;
  while (std::optional<TensorList> sample = options.representative_dataset()) {
    DF_CHECK(sample->size() == m.inputs.size(), "[lite::convert] representative dataset sample ", count, " has ",
             sample->size(), " tensors; the model has ", m.inputs.size(), " inputs");
    for (size_t i = 0; i < m.inputs.size(); ++i) {
      const LiteTensor& want = m.tensors[size_t(m.inputs[i])];
      const Tensor& x = (*sample)[i];
      const std::vector<int32_t>& sig = want.shape_signature.empty() ? want.shape : want.shape_signature;
      bool ok = x.dtype() == DType::Float32 && x.shape().rank() == int(sig.size());
      for (size_t d = 0; ok && d < sig.size(); ++d) ok = sig[d] < 0 || sig[d] == x.shape()[int(d)];
      std::string expected = "[";
      for (size_t d = 0; d < sig.size(); ++d) expected += (d ? ", " : "") + (sig[d] < 0 ? std::string("?") : std::to_string(sig[d]));
      DF_CHECK(ok, "[lite::convert] representative dataset sample ", count, ", input ", i, " ('", m.input_names[i],
               "'): ", dtype_name(x.dtype()), x.shape(), " does not fit the model's float32", expected, "]");
      std::vector<int> shape(x.shape().begin(), x.shape().end());
      interp.resize_input_tensor(interp.inputs()[i], shape);
    }
    interp.allocate_tensors();
    for (size_t i = 0; i < m.inputs.size(); ++i) {
      Tensor x = (*sample)[i];
      std::memcpy(input_for(interp, i).data_ptr, x.raw_data(), x.nbytes());
    }
    interp.invoke();
    for (size_t t = 0; t < m.tensors.size(); ++t) {
      const LiteTensor& lt = m.tensors[t];
      if (lt.constant || lt.type != fb::TensorType::FLOAT32) continue;
      const lite::Tensor& got = interp.tensor(int(t));
      if (!got.data_ptr) continue;
      obs[t].add(got.data<float>(), got.num_elements(), values, rng);
    }
    if (kept && count < keep) kept->push_back(*sample);
    ++count;
  }
  DF_CHECK(count > 0, "[lite::convert] the representative dataset yielded no samples");
  std::vector<Range> out(m.tensors.size());
  for (size_t t = 0; t < m.tensors.size(); ++t) {
    if (obs[t].samples()) out[t] = obs[t].range(options.calibration, options.percentile);
  }
  return out;
}

}  // namespace deepflow::quantize::detail
