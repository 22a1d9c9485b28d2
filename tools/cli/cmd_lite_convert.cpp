// SPDX-License-Identifier: Apache-2.0
// `deepflow lite convert`: a SavedModel directory (deepflow's or TensorFlow's) or a Keras
// file (.keras / .h5) to a .tflite file, in any of the converter's modes:
//
//   deepflow lite convert /models/m/1 -o m.tflite                                # float32
//   deepflow lite convert m.keras -o m_f16.tflite --mode float16
//   deepflow lite convert m.keras -o m_dr.tflite --mode dynamic_range
//   deepflow lite convert m.keras -o m_int8.tflite --mode int8 --calibration-data x.npy \
//       --calibration-samples 200 --input-type int8 --output-type int8 --report
//
// int8 calibrates on the rows of the .npy files (one per input, NAME=FILE.npy with
// several inputs): each row is one sample of batch 1.
#include <iostream>
#include <map>

#include "cli.h"
#include "deepflow/core/error.h"
#include "deepflow/io/atomic_file.h"
#include "deepflow/io/keras_file.h"
#include "deepflow/io/npy.h"
#include "deepflow/ops/ops.h"
#include "deepflow/quantize/converter.h"

namespace deepflow::cli {

namespace {

namespace q = deepflow::quantize;

struct ConvertOptions {
  std::string source, output, mode = "float32", signature = "serving_default", calibration = "min_max";
  std::vector<std::string> data;
  int samples = 100;
  std::string input_type = "float32", output_type = "float32";
  bool report = false;
};

DType interface_type(const std::string& s) {
  if (s == "float32") return DType::Float32;
  if (s == "int8") return DType::Int8;
  if (s == "uint8") return DType::UInt8;
  fail("[lite convert] --input-type / --output-type must be float32, int8 or uint8, got \"", s, "\"");
}

// The calibration samples: row k of each input's array, as a batch of 1.
q::RepresentativeDataset dataset_of(const std::vector<std::string>& files, int limit) {
  std::vector<Tensor> arrays;
  for (const std::string& f : files) {
    const size_t eq = f.find('=');
    arrays.push_back(io::read_npy(eq == std::string::npos ? f : f.substr(eq + 1)));
    DF_CHECK(arrays.back().shape().rank() >= 1, "[lite convert] ", f, ": calibration data needs a leading sample dim");
  }
  const int64_t rows = arrays.front().shape()[0];
  for (size_t i = 0; i < arrays.size(); ++i)
    DF_CHECK(arrays[i].shape()[0] == rows, "[lite convert] ", files[i], " has ", arrays[i].shape()[0],
             " samples, ", files[0], " has ", rows);
  const int64_t n = std::min<int64_t>(rows, limit);
  return [arrays, n, k = int64_t(0)]() mutable -> std::optional<TensorList> {
    if (k == n) return std::nullopt;
    TensorList sample;
    for (const Tensor& a : arrays) {
      Shape s = a.shape();
      std::vector<int64_t> begin(size_t(s.rank()), 0), size(s.begin(), s.end());
      begin[0] = k, size[0] = 1;
      sample.push_back(cast(slice(a, begin, size), DType::Float32));
    }
    ++k;
    return sample;
  };
}

void convert(const ConvertOptions& o) {
  q::ConverterOptions c;
  if (o.mode == "float16") {
    c.optimizations = {q::Optimize::kDefault};
    c.supported_types = {DType::Float16};
  } else if (o.mode == "dynamic_range") {
    c.optimizations = {q::Optimize::kDefault};
  } else if (o.mode == "int8") {
    DF_CHECK(!o.data.empty(), "[lite convert] --mode int8 needs --calibration-data (a .npy file of input samples)");
    c.optimizations = {q::Optimize::kDefault};
    c.representative_dataset = dataset_of(o.data, o.samples);
    c.inference_input_type = interface_type(o.input_type);
    c.inference_output_type = interface_type(o.output_type);
    c.calibration = q::parse_calibration(o.calibration, "[lite convert] --calibration:");
  } else {
    DF_CHECK(o.mode == "float32", "[lite convert] --mode must be float32, float16, dynamic_range or int8, got \"",
             o.mode, "\"");
  }
  q::Conversion r = keras::is_keras_file_path(o.source) ? q::convert_keras_model(*keras::load_keras_file(o.source), c)
                                                     : q::convert_saved_model(o.source, c, o.signature);
  io::detail::write_file_atomic(o.output, r.bytes, "[lite convert] ");
  std::cout << o.output << ": " << r.bytes.size() << " bytes, " << r.mode << "\n";
  if (o.report && !r.report.empty()) std::cout << q::format_report(r.report);
}

}  // namespace

void setup_lite_convert(CLI::App* lite) {
  auto o = std::make_shared<ConvertOptions>();
  CLI::App* c = lite->add_subcommand("convert", "Convert a SavedModel or Keras file to .tflite (float or quantized)");
  c->add_option("source", o->source, "a SavedModel directory or a .keras / .h5 file")->required();
  c->add_option("-o,--output", o->output, "the .tflite file to write")->required();
  c->add_option("--mode", o->mode, "float32, float16, dynamic_range or int8");
  c->add_option("--signature", o->signature, "the SavedModel signature to convert");
  c->add_option("--calibration-data", o->data, "int8: .npy file(s) of samples (NAME=FILE.npy for several inputs)");
  c->add_option("--calibration-samples", o->samples, "int8: at most this many samples")->check(CLI::PositiveNumber);
  c->add_option("--calibration", o->calibration, "int8: min_max, moving_average, percentile or entropy");
  c->add_option("--input-type", o->input_type, "int8: the model input type (float32, int8, uint8)");
  c->add_option("--output-type", o->output_type, "int8: the model output type (float32, int8, uint8)");
  c->add_flag("--report", o->report, "int8: print the per-op error against float");
  c->callback([o] { convert(*o); });
}

}  // namespace deepflow::cli
