// SPDX-License-Identifier: Apache-2.0
// ONNX signal ops (opset 17): HannWindow, HammingWindow, BlackmanWindow, STFT, MelWeightMatrix.
//
// Window sizes and STFT's frame step/length shape the output, so they must be known at
// import (the importer folds small integer graph inputs); windows are then constants and
// STFT is a gather of frames followed by matmuls with cos/sin matrices.
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "deepflow/core/error.h"
#include "deepflow/onnx/op_importer.h"
#include "deepflow/ops/op.h"

namespace deepflow::onnx {
namespace {

constexpr const char* kPrefix = "[onnx::import] ";

enum class Window { kHann, kHamming, kBlackman };

TensorList import_window(NodeContext& c, Window kind) {
  const int64_t size = c.constant_input(0).to_vector<int64_t>().at(0);
  DF_CHECK(size >= 0, kPrefix, c.describe(), ": window size ", size, " is negative");
  const bool periodic = c.attr_int("periodic", 1) != 0;
  const DType out = dtype_from_onnx(int32_t(c.attr_int("output_datatype", 1)));
  const double n = periodic ? double(size) : double(size - 1);
  std::vector<double> v(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) {
    const double a = 2 * std::numbers::pi * double(i) / n;
    switch (kind) {
      case Window::kHann: v[size_t(i)] = 0.5 - 0.5 * std::cos(a); break;
      case Window::kHamming: v[size_t(i)] = 25.0 / 46.0 - (21.0 / 46.0) * std::cos(a); break;
      case Window::kBlackman: v[size_t(i)] = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a); break;
    }
  }
  return {constant(v, Shape{size}, out)};
}
TensorList import_hann(NodeContext& c) { return import_window(c, Window::kHann); }
TensorList import_hamming(NodeContext& c) { return import_window(c, Window::kHamming); }
TensorList import_blackman(NodeContext& c) { return import_window(c, Window::kBlackman); }

// signal [batch, length, 1|2], frame_step, window?, frame_length? ->
// [batch, frames, bins, 2].
TensorList import_stft(NodeContext& c) {
  const Tensor sig = c.input(0);
  DF_CHECK(sig.rank() == 3 && sig.shape()[1] >= 0 && (sig.shape()[2] == 1 || sig.shape()[2] == 2), kPrefix,
           c.describe(), ": signal must be [batch, length, 1 or 2] with a known length, got ", sig.shape().to_string());
  const int64_t step = c.constant_input(1).to_vector<int64_t>().at(0);
  const Tensor window = c.num_inputs() > 2 ? c.input(2) : Tensor();
  int64_t flen = -1;
  if (c.num_inputs() > 3 && c.has_input(3)) flen = c.constant_input(3).to_vector<int64_t>().at(0);
  if (flen < 0 && window.defined()) flen = window.shape()[0];
  DF_CHECK(flen > 0 && step > 0, kPrefix, c.describe(), ": needs a frame length (or window) and a positive step");
  const bool onesided = c.attr_int("onesided", 1) != 0;
  const int64_t length = sig.shape()[1];
  const int64_t frames = (length - flen) / step + 1;
  DF_CHECK(frames > 0, kPrefix, c.describe(), ": frame length ", flen, " exceeds the signal length ", length);
  std::vector<int64_t> idx;
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t k = 0; k < flen; ++k) idx.push_back(f * step + k);
  const Tensor index = constant(idx, Shape{frames, flen});
  auto frames_of = [&](int64_t comp) {
    Tensor part = squeeze(slice(sig, {0, 0, comp}, {-1, -1, 1}), {2});  // [batch, length]
    Tensor fr = gather(part, index, 1);                                  // [batch, frames, flen]
    if (window.defined()) fr = fr * cast(window, sig.dtype());
    return fr;
  };
  const Tensor xr = frames_of(0);
  const Tensor xi = sig.shape()[2] == 2 ? frames_of(1) : Tensor();
  const int64_t m = onesided ? flen / 2 + 1 : flen;
  std::vector<double> cs(size_t(flen * m)), sn(size_t(flen * m));
  for (int64_t j = 0; j < flen; ++j)
    for (int64_t k = 0; k < m; ++k) {
      const double ang = 2 * std::numbers::pi * double((j * k) % flen) / double(flen);
      cs[size_t(j * m + k)] = std::cos(ang);
      sn[size_t(j * m + k)] = std::sin(ang);
    }
  const Tensor C = constant(cs, Shape{flen, m}, sig.dtype()), S = constant(sn, Shape{flen, m}, sig.dtype());
  Tensor yr = matmul(xr, C), yi = -matmul(xr, S);
  if (xi.defined()) {
    yr = yr + matmul(xi, S);
    yi = yi + matmul(xi, C);
  }
  return {stack({yr, yi}, -1)};
}

// MelWeightMatrix: ONNX's reference triangle filters over integer FFT bins.
TensorList import_mel_weight_matrix(NodeContext& c) {
  const int64_t mel_bins = c.constant_input(0).to_vector<int64_t>().at(0);
  const int64_t dft_length = c.constant_input(1).to_vector<int64_t>().at(0);
  const int64_t sample_rate = c.constant_input(2).to_vector<int64_t>().at(0);
  const double lower = c.constant_input(3).to_vector<double>().at(0);
  const double upper = c.constant_input(4).to_vector<double>().at(0);
  DF_CHECK(mel_bins > 0 && dft_length > 0 && sample_rate > 0, kPrefix, c.describe(),
           ": num_mel_bins, dft_length and sample_rate must be positive");
  const DType out = dtype_from_onnx(int32_t(c.attr_int("output_datatype", 1)));
  const int64_t spec_bins = dft_length / 2 + 1;
  const double low_mel = 2595 * std::log10(1 + lower / 700), high_mel = 2595 * std::log10(1 + upper / 700);
  const double step = (high_mel - low_mel) / double(mel_bins + 2);
  std::vector<int64_t> bins;
  for (int64_t i = 0; i < mel_bins + 2; ++i) {
    const double hz = 700 * (std::pow(10.0, (double(i) * step + low_mel) / 2595) - 1);
    bins.push_back(int64_t(std::floor(double(dft_length + 1) * hz / double(sample_rate))));
  }
  std::vector<double> w(static_cast<size_t>(spec_bins * mel_bins), 0.0);
  auto set = [&](int64_t j, int64_t i, double v) {
    DF_CHECK(j >= 0 && j < spec_bins, kPrefix, c.describe(), ": mel filter bin ", j, " outside ", spec_bins, " bins");
    w[size_t(j * mel_bins + i)] = v;
  };
  for (int64_t i = 0; i < mel_bins; ++i) {
    const int64_t lo = bins[size_t(i)], mid = bins[size_t(i + 1)], hi = bins[size_t(i + 2)];
    if (mid == lo) set(mid, i, 1);
    else
      for (int64_t j = lo; j <= mid; ++j) set(j, i, double(j - lo) / double(mid - lo));
    if (hi > mid)
      for (int64_t j = mid; j < hi; ++j) set(j, i, double(hi - j) / double(hi - mid));
  }
  return {constant(w, Shape{spec_bins, mel_bins}, out)};
}

}  // namespace

DF_ONNX_OP("HannWindow", 17, import_hann)
DF_ONNX_OP("HammingWindow", 17, import_hamming)
DF_ONNX_OP("BlackmanWindow", 17, import_blackman)
DF_ONNX_OP("STFT", 17, import_stft)
DF_ONNX_OP("MelWeightMatrix", 17, import_mel_weight_matrix)

}  // namespace deepflow::onnx
