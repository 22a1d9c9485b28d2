// SPDX-License-Identifier: Apache-2.0
// The built-in callbacks (tf.keras.callbacks), following Keras 3's logic and messages:
// keras/src/callbacks/{model_checkpoint,early_stopping,reduce_lr_on_plateau,
// learning_rate_scheduler,csv_logger,terminate_on_nan,lambda_callback}.py.
#include "deepflow/keras/callbacks.h"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "deepflow/keras/model.h"

namespace deepflow::keras {
namespace callbacks {
namespace {

Model& model_of(const Callback& cb, const char* who) {
  DF_CHECK(cb.model() != nullptr, "[", who, "] has no model: fit() sets it (or call set_model first)");
  return *cb.model();
}

Optimizer& optimizer_of(const Callback& cb, const char* who) {
  OptimizerPtr opt = model_of(cb, who).optimizer();
  DF_CHECK(opt != nullptr, "[", who, "] model '", cb.model()->name(), "' has no optimizer: compile() it first");
  return *opt;
}

std::string log_names(const Logs& logs) {
  std::string s;
  for (const auto& [k, v] : logs) s += (s.empty() ? "" : ", ") + k;
  return s.empty() ? "none" : s;
}

// Which way `monitor` improves, with Keras's min_delta rule (the value must beat the
// best by more than min_delta). Unknown modes are errors here, where Keras warns and
// falls back to "auto": a typo should not silently flip the direction.
class Monitor {
 public:
  Monitor(const char* who, std::string monitor, const std::string& mode, double min_delta)
      : who_(who), monitor_(std::move(monitor)), min_delta_(std::abs(min_delta)) {
    DF_CHECK(mode == "auto" || mode == "min" || mode == "max", "[", who, "] mode must be 'auto', 'min' or 'max', got '",
             mode, "'");
    if (mode == "auto") {
      maximize_ = false;
      for (const char* up : {"acc", "auc", "precision", "recall"})
        maximize_ = maximize_ || monitor_.find(up) != std::string::npos;
    } else {
      maximize_ = mode == "max";
    }
    reset();
  }
  void reset() {
    best_ = maximize_ ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    warned_ = false;
  }
  bool improves(double v) const { return maximize_ ? v - min_delta_ > best_ : v + min_delta_ < best_; }
  /// The monitored value, or nullopt (with one warning per training) when absent.
  std::optional<double> value(const Logs& logs) {
    auto it = logs.find(monitor_);
    if (it != logs.end()) return it->second;
    if (!warned_) {
      std::cerr << "[" << who_ << "] warning: '" << monitor_ << "' is not in the logs (" << log_names(logs)
                << "); skipping\n";
      warned_ = true;
    }
    return std::nullopt;
  }
  const std::string& name() const { return monitor_; }
  double best() const { return best_; }
  void set_best(double b) { best_ = b; }

 private:
  const char* who_;
  std::string monitor_;
  double min_delta_;
  bool maximize_ = false;
  double best_ = 0;
  bool warned_ = false;
};

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// --- ModelCheckpoint ---

// Python's str.format for the placeholders a checkpoint path uses: "{epoch}",
// "{val_loss}", and format specs like "{epoch:03d}" or "{val_loss:.2f}".
std::string format_path(const std::string& pattern, int epoch, const Logs& logs) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if ((c == '{' || c == '}') && i + 1 < pattern.size() && pattern[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    DF_CHECK(c != '}', "[ModelCheckpoint] filepath '", pattern, "' has an unmatched '}'");
    if (c != '{') {
      out += c;
      continue;
    }
    const size_t close = pattern.find('}', i);
    DF_CHECK(close != std::string::npos, "[ModelCheckpoint] filepath '", pattern, "' has an unmatched '{'");
    const std::string field = pattern.substr(i + 1, close - i - 1);
    const size_t colon = field.find(':');
    const std::string key = field.substr(0, colon);
    std::string spec = colon == std::string::npos ? "" : field.substr(colon + 1);
    double value;
    if (key == "epoch") {
      value = epoch + 1;
      if (spec.empty()) spec = "02d";
    } else {
      auto it = logs.find(key);
      DF_CHECK(it != logs.end(), "[ModelCheckpoint] filepath '", pattern, "' refers to '{", key,
               "}', which is neither 'epoch' nor in the logs (", log_names(logs), ")");
      value = it->second;
      if (spec.empty()) spec = ".4f";
    }
    // Specs of the form [0][width][.precision](d|f|e|g).
    size_t k = 0;
    while (k + 1 < spec.size() && (std::isdigit(static_cast<unsigned char>(spec[k])) || spec[k] == '.')) ++k;
    const char conv = spec.empty() ? '\0' : spec.back();
    DF_CHECK(k + 1 == spec.size() && std::string("dfeg").find(conv) != std::string::npos && conv != '\0',
             "[ModelCheckpoint] filepath '", pattern, "': unsupported format spec '", spec, "' for '", key,
             "' (use forms like 02d or .4f)");
    std::string fmt = "%";
    fmt.append(spec, 0, k);
    fmt.append(conv == 'd' ? "lld" : "f");
    if (conv != 'd') fmt.back() = conv;
    char buf[128];
    if (conv == 'd') {
      DF_CHECK(std::abs(value) < 9e18, "[ModelCheckpoint] filepath '", pattern, "': '", key, "' is ", value,
               ", not an integer for '", spec, "'");
      std::snprintf(buf, sizeof buf, fmt.c_str(), static_cast<long long>(value));
    } else {
      std::snprintf(buf, sizeof buf, fmt.c_str(), value);
    }
    out += buf;
    i = close;
  }
  return out;
}

class ModelCheckpointCb : public Callback {
 public:
  explicit ModelCheckpointCb(ModelCheckpointOptions o)
      : o_(std::move(o)), monitor_("ModelCheckpoint", o_.monitor, o_.mode, 0.0) {
    DF_CHECK(!o_.filepath.empty(), "[ModelCheckpoint] filepath is empty");
  }
  void on_epoch_end(int epoch, Logs& logs) override {
    Model& m = model_of(*this, "ModelCheckpoint");
    const std::string path = format_path(o_.filepath, epoch, logs);
    if (o_.save_best_only) {
      // Keras: without the monitored value it saves anyway (after a warning).
      if (std::optional<double> current = monitor_.value(logs)) {
        const std::string best = std::isinf(monitor_.best()) ? "inf" : fixed(monitor_.best(), 5);
        if (!monitor_.improves(*current)) {
          if (o_.verbose > 0)
            std::cout << "Epoch " << epoch + 1 << ": " << monitor_.name() << " did not improve from " << best
                      << std::endl;
          return;
        }
        if (o_.verbose > 0)
          std::cout << "Epoch " << epoch + 1 << ": " << monitor_.name() << " improved from " << best << " to "
                    << fixed(*current, 5) << ", saving model to " << path << std::endl;
        monitor_.set_best(*current);
      }
    } else if (o_.verbose > 0) {
      std::cout << "Epoch " << epoch + 1 << ": saving model to " << path << std::endl;
    }
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!dir.empty()) std::filesystem::create_directories(dir, ec);
    DF_CHECK(!ec, "[ModelCheckpoint] cannot create directory '", dir.string(), "': ", ec.message());
    m.save_weights(path);
  }

 private:
  ModelCheckpointOptions o_;
  Monitor monitor_;
};

// --- EarlyStopping ---

class EarlyStoppingCb : public Callback {
 public:
  explicit EarlyStoppingCb(EarlyStoppingOptions o)
      : o_(std::move(o)), monitor_("EarlyStopping", o_.monitor, o_.mode, o_.min_delta) {
    DF_CHECK(o_.patience >= 0, "[EarlyStopping] patience must be >= 0, got ", o_.patience);
  }
  void on_train_begin(const Logs&) override {
    wait_ = 0;
    stopped_epoch_ = 0;
    best_epoch_ = 0;
    best_weights_.clear();
    monitor_.reset();
  }
  void on_epoch_end(int epoch, Logs& logs) override {
    Model& m = model_of(*this, "EarlyStopping");
    std::optional<double> current = monitor_.value(logs);
    if (!current || epoch < o_.start_from_epoch) return;
    // Until something improves, the current weights are the best known.
    if (o_.restore_best_weights && best_weights_.empty()) {
      best_weights_ = m.get_weights();
      best_epoch_ = epoch;
    }
    ++wait_;
    if (monitor_.improves(*current)) {
      monitor_.set_best(*current);
      best_epoch_ = epoch;
      if (o_.restore_best_weights) best_weights_ = m.get_weights();
      wait_ = 0;
      return;
    }
    if (wait_ >= o_.patience && epoch > 0) {
      stopped_epoch_ = epoch;
      m.stop_training = true;
    }
  }
  void on_train_end(const Logs&) override {
    if (stopped_epoch_ > 0 && o_.verbose > 0) std::cout << "Epoch " << stopped_epoch_ + 1 << ": early stopping" << std::endl;
    if (o_.restore_best_weights && !best_weights_.empty()) {
      if (o_.verbose > 0)
        std::cout << "Restoring model weights from the end of the best epoch: " << best_epoch_ + 1 << "." << std::endl;
      model_of(*this, "EarlyStopping").set_weights(best_weights_);
    }
  }

 private:
  EarlyStoppingOptions o_;
  Monitor monitor_;
  int wait_ = 0, stopped_epoch_ = 0, best_epoch_ = 0;
  TensorList best_weights_;
};

// --- learning rates ---

class LearningRateSchedulerCb : public Callback {
 public:
  LearningRateSchedulerCb(std::function<double(int, double)> schedule, int verbose)
      : schedule_(std::move(schedule)), verbose_(verbose) {
    DF_CHECK(schedule_ != nullptr, "[LearningRateScheduler] the schedule is empty");
  }
  void on_epoch_begin(int epoch, const Logs&) override {
    Optimizer& opt = optimizer_of(*this, "LearningRateScheduler");
    const double lr = schedule_(epoch, opt.current_learning_rate());
    DF_CHECK(std::isfinite(lr), "[LearningRateScheduler] the schedule returned ", lr, " for epoch ", epoch);
    opt.set_learning_rate(lr);
    if (verbose_ > 0)
      std::cout << "Epoch " << epoch + 1 << ": LearningRateScheduler setting learning rate to " << lr << "."
                << std::endl;
  }
  void on_epoch_end(int, Logs& logs) override {
    logs["learning_rate"] = optimizer_of(*this, "LearningRateScheduler").current_learning_rate();
  }

 private:
  std::function<double(int, double)> schedule_;
  int verbose_;
};

class ReduceLROnPlateauCb : public Callback {
 public:
  explicit ReduceLROnPlateauCb(ReduceLROnPlateauOptions o)
      : o_(std::move(o)), monitor_("ReduceLROnPlateau", o_.monitor, o_.mode, o_.min_delta) {
    DF_CHECK(o_.factor < 1.0, "[ReduceLROnPlateau] does not support a factor >= 1.0, got ", o_.factor);
  }
  void on_train_begin(const Logs&) override {
    monitor_.reset();
    cooldown_counter_ = 0;
    wait_ = 0;
  }
  void on_epoch_end(int epoch, Logs& logs) override {
    Optimizer& opt = optimizer_of(*this, "ReduceLROnPlateau");
    logs["learning_rate"] = opt.current_learning_rate();
    std::optional<double> current = monitor_.value(logs);
    if (!current) return;
    if (cooldown_counter_ > 0) {
      --cooldown_counter_;
      wait_ = 0;
    }
    if (monitor_.improves(*current)) {
      monitor_.set_best(*current);
      wait_ = 0;
      return;
    }
    if (cooldown_counter_ > 0 || ++wait_ < o_.patience) return;
    const double old_lr = opt.current_learning_rate();
    // Keras compares with the float32 min_lr: the variable holds float32.
    if (old_lr > double(float(o_.min_lr))) {
      const double new_lr = std::max(old_lr * o_.factor, o_.min_lr);
      opt.set_learning_rate(new_lr);
      if (o_.verbose > 0)
        std::cout << "Epoch " << epoch + 1 << ": ReduceLROnPlateau reducing learning rate to " << new_lr << "."
                  << std::endl;
      cooldown_counter_ = o_.cooldown;
      wait_ = 0;
    }
  }

 private:
  ReduceLROnPlateauOptions o_;
  Monitor monitor_;
  int cooldown_counter_ = 0, wait_ = 0;
};

// --- CSVLogger ---

// Python's str(float): the shortest text that reads back the same, with ".0" on
// integral values ("1.0", "0.25", "1e-05", "nan").
std::string py_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

class CSVLoggerCb : public Callback {
 public:
  CSVLoggerCb(std::string filename, char sep, bool append) : filename_(std::move(filename)), sep_(sep), append_(append) {
    DF_CHECK(!filename_.empty(), "[CSVLogger] filename is empty");
  }
  void on_train_begin(const Logs&) override { open(); }
  void on_epoch_end(int epoch, Logs& logs) override {
    if (!out_.is_open()) open();
    if (!keys_) {
      keys_.emplace();
      for (const auto& [k, v] : logs) keys_->push_back(k);  // a std::map: sorted
      if (write_header_) {
        out_ << field("epoch");
        for (const std::string& k : *keys_) out_ << sep_ << field(k);
        out_ << '\n';
      }
    }
    out_ << epoch;
    for (const std::string& k : *keys_) {
      auto it = logs.find(k);
      out_ << sep_ << (it == logs.end() ? "NA" : py_float(it->second));
    }
    out_ << '\n';
    out_.flush();
    DF_CHECK(out_.good(), "[CSVLogger] cannot write '", filename_, "'");
  }
  void on_train_end(const Logs&) override {
    out_.close();
    keys_.reset();
  }

 private:
  void open() {
    write_header_ = true;
    if (append_) {
      std::ifstream in(filename_);
      std::string first;
      if (in && std::getline(in, first) && !first.empty()) write_header_ = false;
    }
    out_.close();
    out_.open(filename_, append_ ? std::ios::app : std::ios::trunc);
    DF_CHECK(out_.is_open(), "[CSVLogger] cannot open '", filename_, "': ", std::strerror(errno));
    keys_.reset();
  }
  // Quotes a field holding the separator, a quote or a newline (as Python's csv module).
  std::string field(const std::string& s) const {
    if (s.find_first_of(std::string{sep_, '"', '\n', '\r'}) == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  }

  std::string filename_;
  char sep_;
  bool append_;
  bool write_header_ = true;
  std::ofstream out_;
  std::optional<std::vector<std::string>> keys_;
};

// --- TerminateOnNaN, LambdaCallback ---

class TerminateOnNaNCb : public Callback {
 public:
  void on_epoch_begin(int epoch, const Logs&) override { epoch_ = epoch; }
  void on_train_batch_end(int64_t batch, const Logs& logs) override {
    auto it = logs.find("loss");
    if (it == logs.end() || std::isfinite(it->second)) return;
    std::cout << "Batch " << batch << " (epoch " << epoch_ + 1 << "): invalid loss, terminating training"
              << std::endl;
    model_of(*this, "TerminateOnNaN").stop_training = true;
  }

 private:
  int epoch_ = 0;
};

class LambdaCb : public Callback {
 public:
  explicit LambdaCb(LambdaCallbackOptions o) : o_(std::move(o)) {}
  void on_epoch_end(int epoch, Logs& logs) override {
    if (o_.on_epoch_end) o_.on_epoch_end(epoch, logs);
  }
  void on_train_batch_end(int64_t batch, const Logs& logs) override {
    if (o_.on_train_batch_end) o_.on_train_batch_end(batch, logs);
  }
  void on_train_begin(const Logs& logs) override {
    if (o_.on_train_begin) o_.on_train_begin(logs);
  }
  void on_train_end(const Logs& logs) override {
    if (o_.on_train_end) o_.on_train_end(logs);
  }

 private:
  LambdaCallbackOptions o_;
};

}  // namespace

CallbackPtr ModelCheckpoint(ModelCheckpointOptions options) {
  return std::make_shared<ModelCheckpointCb>(std::move(options));
}
CallbackPtr EarlyStopping(EarlyStoppingOptions options) { return std::make_shared<EarlyStoppingCb>(std::move(options)); }
CallbackPtr LearningRateScheduler(std::function<double(int, double)> schedule, int verbose) {
  return std::make_shared<LearningRateSchedulerCb>(std::move(schedule), verbose);
}
CallbackPtr ReduceLROnPlateau(ReduceLROnPlateauOptions options) {
  return std::make_shared<ReduceLROnPlateauCb>(std::move(options));
}
CallbackPtr CSVLogger(std::string filename, char separator, bool append) {
  return std::make_shared<CSVLoggerCb>(std::move(filename), separator, append);
}
CallbackPtr TerminateOnNaN() { return std::make_shared<TerminateOnNaNCb>(); }
CallbackPtr LambdaCallback(LambdaCallbackOptions options) { return std::make_shared<LambdaCb>(std::move(options)); }

}  // namespace callbacks
}  // namespace deepflow::keras
