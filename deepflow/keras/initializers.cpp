// SPDX-License-Identifier: Apache-2.0
// Weight initializers (tf.keras.initializers), following Keras 3's formulas and configs.
//
// Initializers run eagerly (add_weight makes its values outside any trace), so they may
// compute on the host. Unseeded draws go through the random ops and the global
// generator (set_random_seed makes them reproducible). A seeded initializer must give
// the same values on every call (Keras 3), while the random ops advance a counter per
// seed; so seeded draws use their own Philox stream keyed by the seed alone, counter 0.
#include "deepflow/keras/initializers.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <functional>
#include <map>
#include <numbers>
#include <vector>

#include "deepflow/core/random.h"
#include "deepflow/ops/ops.h"

namespace deepflow::keras {

Config Initializer::get_config() const { return Config::object(); }

namespace initializers {
namespace {

// Keras's truncation correction: the stddev of a standard normal truncated to [-2, 2].
constexpr double kTruncatedStddev = .87962566103423978;

enum class Dist { Uniform, Normal, Truncated };

Config seed_json(const std::optional<int64_t>& seed) { return seed ? Config(*seed) : Config(nullptr); }

void check_shape(const char* who, const Shape& shape, DType dtype, bool floating_only) {
  DF_CHECK(shape.is_fully_defined(), "[", who, "] needs a fully defined shape, got ", shape);
  DF_CHECK(!floating_only || is_floating(dtype), "[", who, "] expects a floating dtype, got ", dtype_name(dtype));
}

// The seeded Philox stream: element values depend only on the seed and position.
class SeededStream {
 public:
  explicit SeededStream(int64_t seed) : key_(mix(uint64_t(seed) ^ 0x6B657261735F696Eull)) {}
  double uniform() {
    if (lane_ == 2) refill();
    const double u = detail::uints_to_double(words_[2 * lane_], words_[2 * lane_ + 1]);
    ++lane_;
    return u;
  }
  double normal() {
    // Box-Muller on two uniforms; 1 - u lies in (0, 1], so the log is finite.
    const double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2 * std::log(1 - u1)) * std::cos(2 * std::numbers::pi * u2);
  }

 private:
  static uint64_t mix(uint64_t z) {  // splitmix64's finalizer
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  void refill() {
    words_ = detail::philox(counter_++, 0, key_);
    lane_ = 0;
  }
  uint64_t key_;
  uint64_t counter_ = 0;
  std::array<uint32_t, 4> words_{};
  int lane_ = 2;
};

// Uniform in [a, b) or normal (truncated to 2 stddevs) with mean a and stddev b.
Tensor draw(Dist dist, const Shape& shape, DType dtype, double a, double b, const std::optional<int64_t>& seed) {
  if (!seed) {
    switch (dist) {
      case Dist::Uniform: return random_uniform(shape, a, b, dtype);
      case Dist::Normal: return random_normal(shape, a, b, dtype);
      case Dist::Truncated: return truncated_normal(shape, a, b, dtype);
    }
  }
  SeededStream rng(*seed);
  std::vector<double> v(size_t(shape.num_elements()));
  for (double& x : v) {
    if (dist == Dist::Uniform) {
      x = a + (b - a) * rng.uniform();
      continue;
    }
    double z = rng.normal();
    while (dist == Dist::Truncated && !(std::abs(z) < 2.0)) z = rng.normal();
    x = a + b * z;
  }
  return constant(v, shape, dtype);
}

// Keras's compute_fans: the receptive field is the product of the leading dims.
std::pair<double, double> compute_fans(const Shape& s) {
  if (s.rank() == 0) return {1, 1};
  if (s.rank() == 1) return {double(s[0]), double(s[0])};
  double receptive = 1;
  for (int i = 0; i + 2 < s.rank(); ++i) receptive *= double(s[i]);
  return {receptive * double(s[s.rank() - 2]), receptive * double(s[s.rank() - 1])};
}

class ConstantInit : public Initializer {
 public:
  ConstantInit(std::string cls, double value) : cls_(std::move(cls)), value_(value) {}
  Tensor operator()(const Shape& shape, DType dtype) const override {
    check_shape(cls_.c_str(), shape, dtype, false);
    return fill(shape, value_, dtype);
  }
  std::string class_name() const override { return cls_; }
  Config get_config() const override {
    return cls_ == "Constant" ? Config{{"value", value_}} : Config::object();
  }

 private:
  std::string cls_;
  double value_;
};

class RandomInit : public Initializer {
 public:
  RandomInit(std::string cls, Dist dist, double a, double b, std::optional<int64_t> seed)
      : cls_(std::move(cls)), dist_(dist), a_(a), b_(b), seed_(seed) {}
  Tensor operator()(const Shape& shape, DType dtype) const override {
    check_shape(cls_.c_str(), shape, dtype, true);
    return draw(dist_, shape, dtype, a_, b_, seed_);
  }
  std::string class_name() const override { return cls_; }
  Config get_config() const override {
    if (dist_ == Dist::Uniform) return {{"minval", a_}, {"maxval", b_}, {"seed", seed_json(seed_)}};
    return {{"mean", a_}, {"stddev", b_}, {"seed", seed_json(seed_)}};
  }

 private:
  std::string cls_;
  Dist dist_;
  double a_, b_;
  std::optional<int64_t> seed_;
};

enum class FanMode { In, Avg };

// Keras's VarianceScaling behind the Glorot, He and Lecun initializers.
class VarianceScalingInit : public Initializer {
 public:
  VarianceScalingInit(std::string cls, double scale, FanMode mode, bool uniform, std::optional<int64_t> seed)
      : cls_(std::move(cls)), scale_(scale), mode_(mode), uniform_(uniform), seed_(seed) {}
  Tensor operator()(const Shape& shape, DType dtype) const override {
    check_shape(cls_.c_str(), shape, dtype, true);
    auto [fan_in, fan_out] = compute_fans(shape);
    const double fan = mode_ == FanMode::In ? fan_in : (fan_in + fan_out) / 2;
    const double scale = scale_ / std::max(1.0, fan);
    if (uniform_) {
      const double limit = std::sqrt(3 * scale);
      return draw(Dist::Uniform, shape, dtype, -limit, limit, seed_);
    }
    return draw(Dist::Truncated, shape, dtype, 0, std::sqrt(scale) / kTruncatedStddev, seed_);
  }
  std::string class_name() const override { return cls_; }
  Config get_config() const override { return {{"seed", seed_json(seed_)}}; }

 private:
  std::string cls_;
  double scale_;
  FanMode mode_;
  bool uniform_;
  std::optional<int64_t> seed_;
};

// Householder QR of the row-major m x n matrix `a` (m >= n): returns the thin Q (m x n)
// with its columns' signs flipped so that diag(R) >= 0, which makes Q unique (Keras
// multiplies q by sign(diag(r)) for the same reason).
std::vector<double> orthonormal_columns(std::vector<double> a, int64_t m, int64_t n) {
  std::vector<std::vector<double>> vs(static_cast<size_t>(n));
  std::vector<double> rdiag(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    std::vector<double> v(static_cast<size_t>(m - k));
    double norm = 0;
    for (int64_t i = k; i < m; ++i) norm += a[i * n + k] * a[i * n + k];
    norm = std::sqrt(norm);
    const double alpha = a[k * n + k] > 0 ? -norm : norm;  // avoids cancellation in x0 - alpha
    for (int64_t i = k; i < m; ++i) v[i - k] = a[i * n + k];
    v[0] -= alpha;
    double vnorm = 0;
    for (double x : v) vnorm += x * x;
    vnorm = std::sqrt(vnorm);
    if (vnorm > 0) {
      for (double& x : v) x /= vnorm;
      for (int64_t j = k; j < n; ++j) {
        double dot = 0;
        for (int64_t i = k; i < m; ++i) dot += v[i - k] * a[i * n + j];
        for (int64_t i = k; i < m; ++i) a[i * n + j] -= 2 * v[i - k] * dot;
      }
    }
    rdiag[k] = a[k * n + k];
    vs[k] = std::move(v);
  }
  // Q = H_0 ... H_{n-1} [I_n; 0], applied right to left.
  std::vector<double> q(static_cast<size_t>(m * n), 0.0);
  for (int64_t j = 0; j < n; ++j) q[j * n + j] = 1;
  for (int64_t k = n - 1; k >= 0; --k) {
    const std::vector<double>& v = vs[k];
    for (int64_t j = 0; j < n; ++j) {
      double dot = 0;
      for (int64_t i = k; i < m; ++i) dot += v[i - k] * q[i * n + j];
      for (int64_t i = k; i < m; ++i) q[i * n + j] -= 2 * v[i - k] * dot;
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    if (rdiag[j] >= 0) continue;
    for (int64_t i = 0; i < m; ++i) q[i * n + j] = -q[i * n + j];
  }
  return q;
}

class OrthogonalInit : public Initializer {
 public:
  OrthogonalInit(double gain, std::optional<int64_t> seed) : gain_(gain), seed_(seed) {}
  Tensor operator()(const Shape& shape, DType dtype) const override {
    check_shape("Orthogonal", shape, dtype, true);
    DF_CHECK(shape.rank() >= 2, "[Orthogonal] the tensor to initialize must be at least two-dimensional, got shape ",
             shape);
    int64_t rows = 1;
    for (int i = 0; i + 1 < shape.rank(); ++i) rows *= shape[i];
    const int64_t cols = shape[shape.rank() - 1];
    const int64_t m = std::max(rows, cols), n = std::min(rows, cols);
    if (m * n == 0) return zeros(shape, dtype);
    std::vector<double> a = draw(Dist::Normal, Shape{m, n}, DType::Float64, 0, 1, seed_).to_vector<double>();
    std::vector<double> q = orthonormal_columns(std::move(a), m, n);
    std::vector<double> out(size_t(rows * cols));
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        // Fewer rows than columns: the rows are orthonormal (q transposed).
        out[i * cols + j] = gain_ * (rows >= cols ? q[i * n + j] : q[j * n + i]);
      }
    }
    return constant(out, shape, dtype);
  }
  std::string class_name() const override { return "Orthogonal"; }
  Config get_config() const override { return {{"gain", gain_}, {"seed", seed_json(seed_)}}; }

 private:
  double gain_;
  std::optional<int64_t> seed_;
};

using Factory = std::function<InitializerPtr(const Config&)>;

std::optional<int64_t> seed_of(const Config& c) {
  if (!c.contains("seed") || c["seed"].is_null()) return std::nullopt;
  return c["seed"].get<int64_t>();
}
double num_of(const Config& c, const char* key, double def) {
  return c.contains(key) && !c[key].is_null() ? c[key].get<double>() : def;
}

// Keras's snake_case names and class names, each with the factory taking its config.
const std::vector<std::pair<std::string, std::string>>& names() {
  static const std::vector<std::pair<std::string, std::string>> n = {
      {"glorot_uniform", "GlorotUniform"},   {"glorot_normal", "GlorotNormal"},
      {"he_uniform", "HeUniform"},           {"he_normal", "HeNormal"},
      {"lecun_uniform", "LecunUniform"},     {"lecun_normal", "LecunNormal"},
      {"zeros", "Zeros"},                    {"ones", "Ones"},
      {"constant", "Constant"},              {"orthogonal", "Orthogonal"},
      {"random_normal", "RandomNormal"},     {"random_uniform", "RandomUniform"},
      {"truncated_normal", "TruncatedNormal"},
      // Keras's short aliases (Embedding's default is "uniform").
      {"uniform", "RandomUniform"},          {"normal", "RandomNormal"}};
  return n;
}

const std::map<std::string, Factory>& factories() {
  static const std::map<std::string, Factory> f = {
      {"GlorotUniform", [](const Config& c) { return GlorotUniform(seed_of(c)); }},
      {"GlorotNormal", [](const Config& c) { return GlorotNormal(seed_of(c)); }},
      {"HeUniform", [](const Config& c) { return HeUniform(seed_of(c)); }},
      {"HeNormal", [](const Config& c) { return HeNormal(seed_of(c)); }},
      {"LecunUniform", [](const Config& c) { return LecunUniform(seed_of(c)); }},
      {"LecunNormal", [](const Config& c) { return LecunNormal(seed_of(c)); }},
      {"Zeros", [](const Config&) { return Zeros(); }},
      {"Ones", [](const Config&) { return Ones(); }},
      {"Constant", [](const Config& c) { return Constant(num_of(c, "value", 0.0)); }},
      {"Orthogonal", [](const Config& c) { return Orthogonal(num_of(c, "gain", 1.0), seed_of(c)); }},
      {"RandomNormal",
       [](const Config& c) { return RandomNormal(num_of(c, "mean", 0), num_of(c, "stddev", 0.05), seed_of(c)); }},
      {"RandomUniform",
       [](const Config& c) { return RandomUniform(num_of(c, "minval", -0.05), num_of(c, "maxval", 0.05), seed_of(c)); }},
      {"TruncatedNormal",
       [](const Config& c) { return TruncatedNormal(num_of(c, "mean", 0), num_of(c, "stddev", 0.05), seed_of(c)); }},
  };
  return f;
}

[[noreturn]] void unknown(const std::string& name) {
  std::string known;
  for (const auto& [snake, cls] : names()) known += (known.empty() ? "" : ", ") + snake;
  fail("[initializers] unknown initializer '", name, "'; known: ", known, " (or their class names)");
}

const Factory& factory_of(const std::string& name) {
  std::string cls = name;
  for (const auto& [snake, c] : names()) {
    if (snake == name) cls = c;
  }
  auto it = factories().find(cls);
  if (it == factories().end()) unknown(name);
  return it->second;
}

}  // namespace

InitializerPtr Zeros() { return std::make_shared<ConstantInit>("Zeros", 0.0); }
InitializerPtr Ones() { return std::make_shared<ConstantInit>("Ones", 1.0); }
InitializerPtr Constant(double value) { return std::make_shared<ConstantInit>("Constant", value); }
InitializerPtr RandomNormal(double mean, double stddev, std::optional<int64_t> seed) {
  return std::make_shared<RandomInit>("RandomNormal", Dist::Normal, mean, stddev, seed);
}
InitializerPtr RandomUniform(double minval, double maxval, std::optional<int64_t> seed) {
  return std::make_shared<RandomInit>("RandomUniform", Dist::Uniform, minval, maxval, seed);
}
InitializerPtr TruncatedNormal(double mean, double stddev, std::optional<int64_t> seed) {
  return std::make_shared<RandomInit>("TruncatedNormal", Dist::Truncated, mean, stddev, seed);
}
InitializerPtr GlorotUniform(std::optional<int64_t> seed) {
  return std::make_shared<VarianceScalingInit>("GlorotUniform", 1.0, FanMode::Avg, true, seed);
}
InitializerPtr GlorotNormal(std::optional<int64_t> seed) {
  return std::make_shared<VarianceScalingInit>("GlorotNormal", 1.0, FanMode::Avg, false, seed);
}
InitializerPtr HeUniform(std::optional<int64_t> seed) {
  return std::make_shared<VarianceScalingInit>("HeUniform", 2.0, FanMode::In, true, seed);
}
InitializerPtr HeNormal(std::optional<int64_t> seed) {
  return std::make_shared<VarianceScalingInit>("HeNormal", 2.0, FanMode::In, false, seed);
}
InitializerPtr LecunUniform(std::optional<int64_t> seed) {
  return std::make_shared<VarianceScalingInit>("LecunUniform", 1.0, FanMode::In, true, seed);
}
InitializerPtr LecunNormal(std::optional<int64_t> seed) {
  return std::make_shared<VarianceScalingInit>("LecunNormal", 1.0, FanMode::In, false, seed);
}
InitializerPtr Orthogonal(double gain, std::optional<int64_t> seed) {
  return std::make_shared<OrthogonalInit>(gain, seed);
}

InitializerPtr get(const std::string& name) { return factory_of(name)(Config::object()); }

Config serialize(const Initializer& init) {
  return {{"class_name", init.class_name()}, {"config", init.get_config()}};
}

InitializerPtr deserialize(const Config& config) {
  if (config.is_string()) return get(config.get<std::string>());
  DF_CHECK(config.is_object() && config.contains("class_name") && config["class_name"].is_string(),
           "[initializers.deserialize] expects {\"class_name\": ..., \"config\": {...}}, got ", config.dump());
  const Config args = config.contains("config") && config["config"].is_object() ? config["config"] : Config::object();
  try {
    return factory_of(config["class_name"].get<std::string>())(args);
  } catch (const nlohmann::json::exception& e) {
    fail("[initializers.deserialize] bad config ", config.dump(), ": ", e.what());
  }
}

Config serialize(const InitializerPtr& init, const char* default_class) {
  return init ? serialize(*init) : Config{{"class_name", default_class}, {"config", Config::object()}};
}

}  // namespace initializers
}  // namespace deepflow::keras
