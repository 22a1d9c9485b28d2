// SPDX-License-Identifier: Apache-2.0
// Weight regularizers (tf.keras.regularizers): penalties built from ops, so they run
// eagerly, in traced train steps and under GradientTape alike.
#include "deepflow/keras/regularizers.h"

#include <nlohmann/json.hpp>

#include "deepflow/ops/ops.h"

namespace deepflow::keras {
namespace regularizers {
namespace {

// One class for the three: Keras's L1 and L2 are L1L2 with one factor zero, differing
// only in their class name and config keys.
class L1L2Reg : public Regularizer {
 public:
  L1L2Reg(std::string cls, double l1, double l2) : cls_(std::move(cls)), l1_(l1), l2_(l2) {}
  Tensor operator()(const Tensor& w) const override {
    DF_CHECK(is_floating(w.dtype()), "[", cls_, "] expects a floating weight, got ", dtype_name(w.dtype()));
    Tensor penalty;
    if (l1_ != 0) penalty = reduce_sum(abs(w)) * l1_;
    if (l2_ != 0) {
      Tensor p2 = reduce_sum(square(w)) * l2_;
      penalty = penalty.defined() ? penalty + p2 : p2;
    }
    // Both factors zero: a zero of the weight's dtype (a node when w is symbolic).
    return penalty.defined() ? penalty : zeros_like(reduce_sum(w));
  }
  std::string class_name() const override { return cls_; }
  Config get_config() const override {
    if (cls_ == "L1") return {{"l1", l1_}};
    if (cls_ == "L2") return {{"l2", l2_}};
    return {{"l1", l1_}, {"l2", l2_}};
  }

 private:
  std::string cls_;
  double l1_, l2_;
};

double num_of(const Config& c, const char* key, double def) {
  return c.contains(key) && !c[key].is_null() ? c[key].get<double>() : def;
}

RegularizerPtr from(const std::string& cls, const Config& c, const std::string& asked) {
  if (cls == "L1" || cls == "l1") return L1(num_of(c, "l1", 0.01));
  if (cls == "L2" || cls == "l2") return L2(num_of(c, "l2", 0.01));
  // Keras's l1_l2() defaults both factors to 0.01; the L1L2 class defaults them to 0.
  if (cls == "l1_l2") return L1L2(num_of(c, "l1", 0.01), num_of(c, "l2", 0.01));
  if (cls == "L1L2") return L1L2(num_of(c, "l1", 0.0), num_of(c, "l2", 0.0));
  fail("[regularizers] unknown regularizer '", asked, "'; known: l1, l2, l1_l2 (or L1, L2, L1L2)");
}

}  // namespace

RegularizerPtr L1(double l1) { return std::make_shared<L1L2Reg>("L1", l1, 0.0); }
RegularizerPtr L2(double l2) { return std::make_shared<L1L2Reg>("L2", 0.0, l2); }
RegularizerPtr L1L2(double l1, double l2) { return std::make_shared<L1L2Reg>("L1L2", l1, l2); }

RegularizerPtr get(const std::string& name) { return from(name, Config::object(), name); }

Config serialize(const Regularizer& r) { return {{"class_name", r.class_name()}, {"config", r.get_config()}}; }

RegularizerPtr deserialize(const Config& config) {
  if (config.is_string()) return get(config.get<std::string>());
  DF_CHECK(config.is_object() && config.contains("class_name") && config["class_name"].is_string(),
           "[regularizers.deserialize] expects {\"class_name\": ..., \"config\": {...}}, got ", config.dump());
  const std::string cls = config["class_name"].get<std::string>();
  const Config args = config.contains("config") && config["config"].is_object() ? config["config"] : Config::object();
  try {
    return from(cls, args, cls);
  } catch (const nlohmann::json::exception& e) {
    fail("[regularizers.deserialize] bad config ", config.dump(), ": ", e.what());
  }
}

Config serialize(const RegularizerPtr& r) { return r ? serialize(*r) : Config(nullptr); }

}  // namespace regularizers
}  // namespace deepflow::keras
