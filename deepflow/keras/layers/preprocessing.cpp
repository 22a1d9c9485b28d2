// SPDX-License-Identifier: Apache-2.0
#include "deepflow/keras/layers/preprocessing.h"

#include <algorithm>
#include <cmath>

#include "deepflow/core/error.h"
#include "deepflow/keras/initializers.h"
#include "deepflow/keras/serialization.h"
#include "deepflow/ops/ops.h"

namespace deepflow::keras::layers {

namespace ser = serialization;

// Keras's backend.epsilon(): the floor of the standard deviation Normalization divides by.
constexpr double kEpsilon = 1e-7;

// --- ZeroPadding2D ---

ZeroPadding2DImpl::ZeroPadding2DImpl(std::pair<int64_t, int64_t> rows, std::pair<int64_t, int64_t> cols,
                                     std::string name)
    : Layer(std::move(name)), rows_(rows), cols_(cols) {
  DF_CHECK(rows.first >= 0 && rows.second >= 0 && cols.first >= 0 && cols.second >= 0,
           "[ZeroPadding2D] paddings must be >= 0, got ((", rows.first, ", ", rows.second, "), (", cols.first, ", ",
           cols.second, "))");
}

Tensor ZeroPadding2DImpl::call(const Tensor& x, bool) {
  DF_CHECK(x.rank() == 4, "[", name(), "] expects [batch, height, width, channels], got ", x.shape());
  return pad(x, {{0, 0}, rows_, cols_, {0, 0}});
}

Config ZeroPadding2DImpl::get_config() const {
  Config c = Layer::get_config();
  c["padding"] = {{rows_.first, rows_.second}, {cols_.first, cols_.second}};
  c["data_format"] = "channels_last";
  return c;
}

// --- Rescaling ---

RescalingImpl::RescalingImpl(double scale, double offset, std::string name)
    : Layer(std::move(name)), scale_(scale), offset_(offset) {}

Tensor RescalingImpl::call(const Tensor& x, bool) {
  const Tensor f = x.dtype() == DType::Float32 ? x : cast(x, DType::Float32);
  return f * scale_ + offset_;
}

Config RescalingImpl::get_config() const {
  Config c = Layer::get_config();
  c["scale"] = scale_;
  c["offset"] = offset_;
  return c;
}

// --- Normalization ---

NormalizationImpl::NormalizationImpl(NormalizationOptions options)
    : Layer(options.name), options_(std::move(options)) {
  DF_CHECK(options_.mean.has_value() == options_.variance.has_value(), "[Normalization] give both mean and variance, or "
           "neither (then they are weights)");
}

void NormalizationImpl::build(const Shape& input_shape) {
  DF_CHECK(input_shape.rank() >= 1 && input_shape[input_shape.rank() - 1] > 0, "[", name(),
           "] needs the last dim known, got ", input_shape);
  const int64_t c = input_shape[input_shape.rank() - 1];
  if (options_.mean) {
    for (const auto* v : {&*options_.mean, &*options_.variance})
      DF_CHECK(v->size() == 1 || int64_t(v->size()) == c, "[", name(), "] mean and variance need 1 or ", c,
               " values, got ", v->size());
    return;
  }
  mean_ = add_weight("mean", {c}, initializers::Zeros(), false);
  variance_ = add_weight("variance", {c}, initializers::Ones(), false);
  count_ = add_weight("count", Shape{}, initializers::Zeros(), false, nullptr, DType::Int64);
}

Tensor NormalizationImpl::call(const Tensor& x, bool) {
  const Tensor f = x.dtype() == DType::Float32 ? x : cast(x, DType::Float32);
  const int64_t c = f.shape()[f.rank() - 1];
  auto given = [&](const std::vector<double>& v) {
    return constant(v.size() == 1 ? std::vector<double>(size_t(c), v[0]) : v, Shape{c}, DType::Float32);
  };
  const Tensor mean = options_.mean ? given(*options_.mean) : mean_.value();
  const Tensor variance = options_.mean ? given(*options_.variance) : variance_.value();
  const Tensor stddev = maximum(sqrt(variance), scalar(kEpsilon));
  return options_.invert ? mean + f * stddev : (f - mean) / stddev;
}

Config NormalizationImpl::get_config() const {
  Config c = Layer::get_config();
  c["axis"] = std::vector<int64_t>{-1};
  c["invert"] = options_.invert;
  c["mean"] = options_.mean ? Config(*options_.mean) : Config(nullptr);
  c["variance"] = options_.variance ? Config(*options_.variance) : Config(nullptr);
  return c;
}

namespace {

// One value or a list of them (Keras keeps a given mean as written).
std::optional<std::vector<double>> values_of(const Config& c, const char* key) {
  if (!c.contains(key) || c[key].is_null()) return std::nullopt;
  if (c[key].is_number()) return std::vector<double>{c[key].get<double>()};
  return c[key].get<std::vector<double>>();
}

// An int, a pair or a pair of pairs, as Keras takes ZeroPadding2D's padding.
std::pair<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>> paddings_of(const Config& c) {
  const Config& p = c.at("padding");
  if (p.is_number()) return {{p.get<int64_t>(), p.get<int64_t>()}, {p.get<int64_t>(), p.get<int64_t>()}};
  DF_CHECK(p.is_array() && p.size() == 2, "[keras.layers.deserialize] ZeroPadding2D '", ser::name_of(c),
           "': padding must be an int, 2 ints or 2 pairs, got ", p.dump());
  auto side = [&](const Config& s) -> std::pair<int64_t, int64_t> {
    if (s.is_number()) return {s.get<int64_t>(), s.get<int64_t>()};
    DF_CHECK(s.is_array() && s.size() == 2, "[keras.layers.deserialize] ZeroPadding2D '", ser::name_of(c),
             "': padding must be an int, 2 ints or 2 pairs, got ", p.dump());
    return {s[0].get<int64_t>(), s[1].get<int64_t>()};
  };
  return {side(p[0]), side(p[1])};
}

void check_channels_last(const Config& c, const char* cls) {
  const std::string f = ser::value_or<std::string>(c, "data_format", "channels_last");
  DF_CHECK(f == "channels_last", "[keras.layers.deserialize] ", cls, " '", ser::name_of(c),
           "': only data_format channels_last is supported, got ", f);
}

const bool kRegistered = [] {
  register_layer("ZeroPadding2D", [](const Config& c) -> LayerPtr {
    check_channels_last(c, "ZeroPadding2D");
    const auto [rows, cols] = paddings_of(c);
    return ZeroPadding2D(rows, cols, ser::name_of(c));
  });
  register_layer("Rescaling", [](const Config& c) -> LayerPtr {
    DF_CHECK(c.at("scale").is_number() && (!c.contains("offset") || c["offset"].is_number()),
             "[keras.layers.deserialize] Rescaling '", ser::name_of(c), "': only scalar scale and offset are "
             "supported, got ", c.dump());
    return Rescaling(c.at("scale").get<double>(), ser::value_or(c, "offset", 0.0), ser::name_of(c));
  });
  register_layer("Normalization", [](const Config& c) -> LayerPtr {
    if (c.contains("axis") && !c["axis"].is_null()) {
      const Config& a = c["axis"];
      const bool last = (a.is_number() && a.get<int64_t>() == -1) || (a.is_array() && a.size() == 1 && a[0] == -1);
      DF_CHECK(last, "[keras.layers.deserialize] Normalization '", ser::name_of(c),
               "': only axis -1 is supported, got ", a.dump());
    }
    return Normalization({.mean = values_of(c, "mean"), .variance = values_of(c, "variance"),
                          .invert = ser::value_or(c, "invert", false), .name = ser::name_of(c)});
  });
  return true;
}();

}  // namespace
}  // namespace deepflow::keras::layers
