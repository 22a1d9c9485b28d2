// SPDX-License-Identifier: Apache-2.0
#include "deepflow/serving/metrics.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <span>
#include <sstream>
#include <string_view>
#include <vector>

#include "serving_config.pb.h"

namespace deepflow::serving {

namespace {

// Label sets are looked up with string_views (no allocation once a series exists) and
// stored as strings; the transparent comparator lets both meet in one std::map.
using Labels = std::vector<std::string>;
struct LabelsLess {
  using is_transparent = void;
  template <class A, class B>
  bool operator()(const A& a, const B& b) const {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(),
                                        [](std::string_view x, std::string_view y) { return x < y; });
  }
};

// TF Serving's latency sampler: ExponentialBuckets(10, 1.8, 33), in microseconds.
std::vector<double> latency_bounds() {
  std::vector<double> b;
  double v = 10;
  for (int k = 0; k < 33; ++k, v *= 1.8) b.push_back(std::round(v * 1000) / 1000);
  return b;
}
std::vector<double> batch_bounds() {
  std::vector<double> b;
  for (double v = 1; v <= 8192; v *= 2) b.push_back(v);
  return b;
}

std::string format_number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, res.ptr);
}

// Prometheus label values escape backslash, double quote and newline.
void append_escaped(std::string& out, std::string_view v) {
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
}

std::string label_text(const std::vector<std::string>& names, const Labels& values, std::string_view extra = {}) {
  std::string out = "{";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) out += ',';
    out += names[i];
    out += "=\"";
    append_escaped(out, values[i]);
    out += '"';
  }
  if (!extra.empty()) {
    if (!names.empty()) out += ',';
    out += extra;
  }
  out += '}';
  return out;
}

struct Counter {
  std::string name;
  std::vector<std::string> label_names;
  mutable std::mutex mu;
  std::map<Labels, double, LabelsLess> series;

  void add(std::span<const std::string_view> labels, double v) {
    std::lock_guard lock(mu);
    auto it = series.find(labels);
    if (it == series.end()) it = series.emplace(Labels(labels.begin(), labels.end()), 0.0).first;
    it->second += v;
  }
  void render(std::string& out, const char* type) const {
    std::lock_guard lock(mu);
    if (series.empty()) return;
    out += "# TYPE " + name + " " + type + "\n";
    for (const auto& [labels, v] : series) out += name + label_text(label_names, labels) + " " + format_number(v) + "\n";
  }
};

struct Histogram {
  std::string name;
  std::vector<std::string> label_names;
  std::vector<double> bounds;
  struct Series {
    std::vector<uint64_t> buckets;  // per bucket, not cumulative; last is +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  mutable std::mutex mu;
  std::map<Labels, Series, LabelsLess> series;

  void observe(std::span<const std::string_view> labels, double v) {
    size_t bucket = std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin();
    std::lock_guard lock(mu);
    auto it = series.find(labels);
    if (it == series.end()) {
      it = series.emplace(Labels(labels.begin(), labels.end()), Series{}).first;
      it->second.buckets.assign(bounds.size() + 1, 0);
    }
    ++it->second.buckets[bucket];
    it->second.sum += v;
    ++it->second.count;
  }
  void render(std::string& out) const {
    std::lock_guard lock(mu);
    if (series.empty()) return;
    out += "# TYPE " + name + " histogram\n";
    for (const auto& [labels, s] : series) {
      uint64_t cumulative = 0;
      for (size_t i = 0; i <= bounds.size(); ++i) {
        cumulative += s.buckets[i];
        std::string le = "le=\"" + (i < bounds.size() ? format_number(bounds[i]) : std::string("+Inf")) + "\"";
        out += name + "_bucket" + label_text(label_names, labels, le) + " " + std::to_string(cumulative) + "\n";
      }
      out += name + "_sum" + label_text(label_names, labels) + " " + format_number(s.sum) + "\n";
      out += name + "_count" + label_text(label_names, labels) + " " + std::to_string(s.count) + "\n";
    }
  }
};

constexpr std::string_view kPrefix = ":tensorflow:serving:";

}  // namespace

struct Metrics::Impl {
  Counter request_count{std::string(kPrefix) + "request_count",
                        {"model_name", "version", "API", "entrypoint", "status"}, {}, {}};
  Histogram request_latency{std::string(kPrefix) + "request_latency",
                            {"model_name", "API", "entrypoint"}, latency_bounds(), {}, {}};
  Histogram runtime_latency{std::string(kPrefix) + "runtime_latency",
                            {"model_name", "API", "runtime"}, latency_bounds(), {}, {}};
  Histogram batch_size{std::string(kPrefix) + "batching_session:processed_batch_size", {"model_name"},
                       batch_bounds(), {}, {}};
  Histogram padding_size{std::string(kPrefix) + "batching_session:padding_size", {"model_name"}, batch_bounds(),
                         {}, {}};
  Counter load_count{std::string(kPrefix) + "model_load_count", {"model_name", "status"}, {}, {}};
  Counter unload_count{std::string(kPrefix) + "model_unload_count", {"model_name"}, {}, {}};
  Histogram load_latency{std::string(kPrefix) + "model_load_latency", {"model_name"}, latency_bounds(), {}, {}};
  // model -> version -> state name; a version leaves the gauge once unloaded.
  mutable std::mutex state_mu;
  std::map<std::string, std::map<int64_t, const char*>> states;
};

Metrics::Metrics() : impl_(std::make_unique<Impl>()) {}
Metrics::~Metrics() = default;

void Metrics::record_request(const std::string& model, int64_t version, const std::string& api,
                             const std::string& entrypoint, Code code, double latency_us) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof(buf), version);
  std::array<std::string_view, 5> count_labels{model, std::string_view(buf, res.ptr - buf), api, entrypoint,
                                               code_name(code)};
  impl_->request_count.add(count_labels, 1);
  std::array<std::string_view, 3> latency_labels{model, api, entrypoint};
  impl_->request_latency.observe(latency_labels, latency_us);
}

void Metrics::record_runtime(const std::string& model, const std::string& api, double latency_us) {
  std::array<std::string_view, 3> labels{model, api, "deepflow"};
  impl_->runtime_latency.observe(labels, latency_us);
}

void Metrics::record_batch(const std::string& model, int64_t rows, int64_t padded_rows) {
  std::array<std::string_view, 1> labels{model};
  impl_->batch_size.observe(labels, static_cast<double>(rows));
  impl_->padding_size.observe(labels, static_cast<double>(padded_rows));
}

void Metrics::record_event(const ManagerEvent& event) {
  std::array<std::string_view, 1> model{event.model};
  switch (event.kind) {
    case ManagerEvent::Kind::LoadStarted: break;
    case ManagerEvent::Kind::Loaded: {
      std::array<std::string_view, 2> labels{event.model, "OK"};
      impl_->load_count.add(labels, 1);
      impl_->load_latency.observe(model, event.seconds * 1e6);
      break;
    }
    case ManagerEvent::Kind::LoadFailed: {
      std::array<std::string_view, 2> labels{event.model, "ERROR"};
      impl_->load_count.add(labels, 1);
      break;
    }
    case ManagerEvent::Kind::Unloaded: impl_->unload_count.add(model, 1); break;
  }
  std::lock_guard lock(impl_->state_mu);
  auto& versions = impl_->states[event.model];
  switch (event.kind) {
    case ManagerEvent::Kind::LoadStarted: versions[event.version] = "LOADING"; break;
    case ManagerEvent::Kind::Loaded: versions[event.version] = "AVAILABLE"; break;
    case ManagerEvent::Kind::LoadFailed: versions[event.version] = "END"; break;
    case ManagerEvent::Kind::Unloaded: versions.erase(event.version); break;
  }
}

std::string Metrics::prometheus_text() const {
  std::string out;
  impl_->request_count.render(out, "counter");
  impl_->request_latency.render(out);
  impl_->runtime_latency.render(out);
  impl_->batch_size.render(out);
  impl_->padding_size.render(out);
  impl_->load_count.render(out, "counter");
  impl_->unload_count.render(out, "counter");
  impl_->load_latency.render(out);
  std::lock_guard lock(impl_->state_mu);
  bool any = false;
  for (const auto& [model, versions] : impl_->states) any = any || !versions.empty();
  if (any) {
    out += "# TYPE deepflow_serving_model_version_state gauge\n";
    for (const auto& [model, versions] : impl_->states) {
      for (const auto& [version, state] : versions) {
        std::string line = "deepflow_serving_model_version_state{model_name=\"";
        append_escaped(line, model);
        line += "\",version=\"" + std::to_string(version) + "\",state=\"" + state + "\"} 1\n";
        out += line;
      }
    }
  }
  return out;
}

namespace {
class CollectErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (text.empty()) text = "line " + std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " + message;
  }
  std::string text;
};
}  // namespace

MonitoringOptions parse_monitoring_config_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw ServingError(Code::InvalidArgument, "[parse_monitoring_config_file] cannot open '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  tensorflow::serving::MonitoringConfig config;
  google::protobuf::TextFormat::Parser parser;
  CollectErrors errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(ss.str(), &config))
    throw ServingError(Code::InvalidArgument, "[parse_monitoring_config_file] " + path + ": " + errors.text);
  MonitoringOptions options;
  options.enable = config.prometheus_config().enable();
  if (!config.prometheus_config().path().empty()) options.path = config.prometheus_config().path();
  if (options.path.empty() || options.path[0] != '/')
    throw ServingError(Code::InvalidArgument,
                       "[parse_monitoring_config_file] " + path + ": prometheus_config.path must start with '/', got '" +
                           options.path + "'");
  return options;
}

}  // namespace deepflow::serving
