// SPDX-License-Identifier: Apache-2.0
// `deepflow saved_model convert`: the serving optimizer (deepflow/quantize/
// serving_optimizer.h) from the command line, as saved_model_cli's `convert ... tensorrt`
// runs TF-TRT:
//
//   deepflow saved_model convert --dir /models/resnet/1 --output_dir /models/resnet_int8/1
//       --precision_mode INT8 --calibration_inputs 'input_1=calib.npy' --calibration_batch_size 8
//
// Calibration inputs are .npy files, one per signature input, whose first dim is split
// into batches of --calibration_batch_size.
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>

#include "cli.h"
#include "deepflow/io/npy.h"
#include "deepflow/ops/ops.h"
#include "deepflow/quantize/serving_optimizer.h"

namespace deepflow::cli {

namespace {

struct ConvertOptions {
  std::string dir, output_dir, tag_set = "serve", signature_def, precision_mode = "FP32", calibration_inputs;
  std::string calibration_method = "min_max";
  int64_t calibration_batch_size = 8, max_batch_size = 0;
  int minimum_segment_size = 3;
  bool overwrite = false;
};

std::vector<std::string> split_on(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= s.size()) {
    const size_t next = std::min(s.find(sep, at), s.size());
    if (next > at) out.push_back(s.substr(at, next - at));
    at = next + 1;
  }
  return out;
}

void convert(const ConvertOptions& o) {
  quantize::ServingOptimizerOptions so;
  so.input_saved_model_dir = o.dir;
  so.input_saved_model_tags = split_on(o.tag_set, ',');
  if (!o.signature_def.empty()) so.signature_keys = split_on(o.signature_def, ',');
  so.precision_mode = quantize::parse_precision(o.precision_mode);
  so.minimum_segment_size = o.minimum_segment_size;
  so.max_batch_size = o.max_batch_size;
  so.calibration = quantize::parse_calibration(o.calibration_method, "[saved_model convert] --calibration_method:");
  quantize::ServingOptimizer opt(so);
  // key=file.npy pairs, in the signature's key order once sorted (std::map).
  std::map<std::string, Tensor> files;
  for (const std::string& item : split_on(o.calibration_inputs, ';')) {
    const size_t eq = item.find('=');
    DF_CHECK(eq != std::string::npos && eq > 0, "[saved_model convert] --calibration_inputs \"", item,
             "\" format is incorrect. Please follow \"<input_key>=<filename.npy>;...\"");
    files[item.substr(0, eq)] = io::read_npy(item.substr(eq + 1));
  }
  DF_CHECK(o.calibration_batch_size > 0, "[saved_model convert] --calibration_batch_size must be positive, got ",
           o.calibration_batch_size);
  int64_t rows = -1;
  for (const auto& [k, t] : files) {
    DF_CHECK(t.rank() >= 1, "[saved_model convert] calibration input '", k, "' is a scalar; need a batch dim");
    DF_CHECK(rows < 0 || t.dim(0) == rows, "[saved_model convert] calibration inputs differ in their first dim (",
             rows, " and ", t.dim(0), " for '", k, "')");
    rows = t.dim(0);
  }
  quantize::InputFn calibration;
  if (!files.empty())
    calibration = [&, at = int64_t(0)]() mutable -> std::optional<TensorList> {
      if (at >= rows) return std::nullopt;
      const int64_t n = std::min(o.calibration_batch_size, rows - at);
      TensorList batch;
      for (const auto& [k, t] : files) {
        Axes begin(size_t(t.rank()), 0), size(t.shape().begin(), t.shape().end());
        begin[0] = at, size[0] = n;
        batch.push_back(slice(t, begin, size));
      }
      at += n;
      return batch;
    };
  opt.convert(calibration);
  for (const quantize::SignatureSummary& s : opt.summary()) std::cout << s.to_string() << "\n";
  opt.save(o.output_dir, o.overwrite);
  std::cout << quantize::precision_name(so.precision_mode) << " SavedModel written to " << o.output_dir << "\n";
}

}  // namespace

void setup_saved_model_convert(CLI::App& saved_model) {
  auto co = std::make_shared<ConvertOptions>();
  CLI::App* c = saved_model.add_subcommand(
      "convert", "Optimize a SavedModel for serving: frozen, fused, int8 from calibration (TF-TRT's convert)");
  c->add_option("--dir", co->dir, "Directory containing the SavedModel (TensorFlow's or deepflow's)")->required();
  c->add_option("--output_dir", co->output_dir, "Where to write the converted SavedModel")->required();
  c->add_option("--tag_set", co->tag_set, "Comma-separated tags of the MetaGraph to convert")->capture_default_str();
  c->add_option("--signature_def", co->signature_def, "Comma-separated signature keys (default: all)");
  c->add_option("--precision_mode", co->precision_mode, "FP32 or INT8")->capture_default_str();
  c->add_option("--calibration_inputs", co->calibration_inputs,
                "'<key>=<file.npy>;...': INT8 calibration data, one file per input");
  c->add_option("--calibration_batch_size", co->calibration_batch_size, "Rows per calibration batch")
      ->capture_default_str();
  c->add_option("--calibration_method", co->calibration_method, "min_max, moving_average, percentile or entropy")
      ->capture_default_str();
  c->add_option("--minimum_segment_size", co->minimum_segment_size,
                "Fewest convolutions a chain needs to run in int8")->capture_default_str();
  c->add_option("--max_batch_size", co->max_batch_size, "Refuse calibration batches larger than this (0: any)")
      ->capture_default_str();
  c->add_flag("--overwrite", co->overwrite, "Replace an existing --output_dir");
  c->callback([co] { convert(*co); });
}

}  // namespace deepflow::cli
