// SPDX-License-Identifier: Apache-2.0
// TF Serving's text-format ModelServerConfig -> ServerConfig, and the checks every
// config passes (also the ones built in code and given to ModelManager).
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "deepflow/serving/model_manager.h"
#include "serving_config.pb.h"

namespace deepflow::serving {
namespace detail {

/// Where a field of the i-th model config was written ("models.config:7:5"), or "" when
/// unknown; used to point validation errors at the line at fault.
using LocateFn = std::function<std::string(size_t model, const std::string& field)>;

/// Throws INVALID_ARGUMENT naming `source`, the model and the field when the config is
/// not servable (see parse_model_config_text).
void validate_config(const ServerConfig& config, const std::string& source, const std::string& fn,
                     const LocateFn& locate);

}  // namespace detail

namespace {

namespace pb = google::protobuf;
using tensorflow::serving::ModelServerConfig;

// Protobuf reports every syntax error through this; we keep them all so the message
// shows each line at fault, not just "parse failed".
class Collector : public pb::io::ErrorCollector {
 public:
  explicit Collector(std::string source) : source_(std::move(source)) {}
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    errors_.push_back(source_ + ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " +
                      message);
  }
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  std::string source_;
  std::vector<std::string> errors_;
};

[[noreturn]] void invalid(const std::string& fn, const std::string& where, const std::string& what) {
  throw ServingError(Code::InvalidArgument, "[" + fn + "] " + where + ": " + what);
}

}  // namespace

namespace detail {

void validate_config(const ServerConfig& config, const std::string& source, const std::string& fn,
                     const LocateFn& locate) {
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < config.models.size(); ++i) {
    const ModelConfig& m = config.models[i];
    auto where = [&](const std::string& field) {
      std::string at = locate ? locate(i, field) : std::string();
      if (at.empty()) at = source + ": model config #" + std::to_string(i + 1);
      return at;
    };
    if (m.name.empty()) invalid(fn, where("name"), "model config #" + std::to_string(i + 1) + " has no name");
    if (auto [it, fresh] = seen.emplace(m.name, i); !fresh) {
      invalid(fn, where("name"),
              "Illegal to list model " + m.name + " multiple times in config list (first at " +
                  (locate ? locate(it->second, "name") : "model config #" + std::to_string(it->second + 1)) + ")");
    }
    if (m.base_path.empty()) invalid(fn, where("name"), "model " + m.name + " has no base_path");
    if (m.base_path.front() != '/') {
      invalid(fn, where("base_path"), "Expected model " + m.name + " to have an absolute path; got base_path: \"" +
                                          m.base_path + "\"");
    }
    if (m.model_platform != "tensorflow" && m.model_platform != "deepflow") {
      invalid(fn, where("model_platform"), "model " + m.name + " requests unsupported platform \"" +
                                               m.model_platform + "\" (supported: tensorflow, deepflow)");
    }
    const VersionPolicy& p = m.policy;
    if (p.kind == VersionPolicy::Kind::Latest && p.num_versions < 1) {
      invalid(fn, where("model_version_policy"),
              "model " + m.name + ": latest.num_versions must be >= 1, got " + std::to_string(p.num_versions));
    }
    if (p.kind == VersionPolicy::Kind::Specific) {
      if (p.versions.empty()) {
        invalid(fn, where("model_version_policy"), "model " + m.name + ": specific policy lists no versions");
      }
      for (int64_t v : p.versions) {
        if (v < 0) {
          invalid(fn, where("model_version_policy"),
                  "model " + m.name + ": specific version " + std::to_string(v) + " is negative");
        }
      }
    }
    for (const auto& [label, version] : m.version_labels) {
      // TF Serving's REST paths split on '/' and ':' (/labels/<label>:predict).
      if (label.empty() || label.find_first_of("/:") != std::string::npos) {
        invalid(fn, where("version_labels"),
                "model " + m.name + ": invalid version label \"" + label + "\" (empty, or contains '/' or ':')");
      }
      if (version < 0) {
        invalid(fn, where("version_labels"), "model " + m.name + ": label " + label + " points at negative version " +
                                                 std::to_string(version));
      }
    }
  }
}

}  // namespace detail

ServerConfig server_config_from_proto(const ModelServerConfig& proto) {
  ServerConfig out;
  for (const auto& c : proto.model_config_list().config()) {
    ModelConfig m;
    m.name = c.name();
    m.base_path = c.base_path();
    if (!c.model_platform().empty()) m.model_platform = c.model_platform();
    using Policy = tensorflow::serving::FileSystemStoragePathSourceConfig::ServableVersionPolicy;
    const Policy& p = c.model_version_policy();
    switch (p.policy_choice_case()) {
      case Policy::kAll: m.policy.kind = VersionPolicy::Kind::All; break;
      case Policy::kSpecific: {
        m.policy.kind = VersionPolicy::Kind::Specific;
        std::set<int64_t> unique(p.specific().versions().begin(), p.specific().versions().end());
        m.policy.versions.assign(unique.begin(), unique.end());
        break;
      }
      case Policy::kLatest:
        // TF Serving treats num_versions 0 (also `latest {}`) as 1.
        m.policy.num_versions = std::max<int64_t>(1, p.latest().num_versions());
        break;
      default: break;  // no policy: latest 1
    }
    for (const auto& [label, version] : c.version_labels()) m.version_labels[label] = version;
    out.models.push_back(std::move(m));
  }
  return out;
}

ServerConfig parse_model_config_text(const std::string& text, const std::string& source) {
  const std::string fn = "parse_model_config";
  ModelServerConfig proto;
  pb::TextFormat::Parser parser;
  Collector errors(source);
  pb::TextFormat::ParseInfoTree tree;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(&tree);
  if (!parser.ParseFromString(text, &proto)) {
    std::string msg = "[" + fn + "] cannot parse ModelServerConfig: ";
    for (size_t i = 0; i < errors.errors().size(); ++i) msg += (i ? "; " : "") + errors.errors()[i];
    if (errors.errors().empty()) msg += source + ": malformed text format";
    throw ServingError(Code::InvalidArgument, msg);
  }
  if (proto.config_case() == ModelServerConfig::kCustomModelConfig) {
    invalid(fn, source, "custom_model_config is not supported; use model_config_list");
  }

  const auto* list_field = ModelServerConfig::descriptor()->FindFieldByName("model_config_list");
  const auto* config_field = tensorflow::serving::ModelConfigList::descriptor()->FindFieldByName("config");
  const pb::TextFormat::ParseInfoTree* list_tree = tree.GetTreeForNested(list_field, -1);
  auto locate = [&](size_t i, const std::string& field) -> std::string {
    if (!list_tree) return "";
    pb::TextFormat::ParseLocation at = list_tree->GetLocation(config_field, int(i));
    if (const auto* model_tree = list_tree->GetTreeForNested(config_field, int(i))) {
      const auto* f = tensorflow::serving::ModelConfig::descriptor()->FindFieldByName(field);
      // A map field's location is recorded per entry; the first one is close enough.
      if (f) {
        pb::TextFormat::ParseLocation fl = model_tree->GetLocation(f, f->is_repeated() ? 0 : -1);
        if (fl.line >= 0) at = fl;
      }
    }
    if (at.line < 0) return "";
    return source + ":" + std::to_string(at.line + 1) + ":" + std::to_string(at.column + 1);
  };

  ServerConfig out = server_config_from_proto(proto);
  detail::validate_config(out, source, fn, locate);
  return out;
}

ServerConfig parse_model_config_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ServingError(Code::NotFound, "[parse_model_config_file] cannot open model config file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ServingError(Code::DataLoss, "[parse_model_config_file] cannot read " + path);
  return parse_model_config_text(text.str(), path);
}

ServerConfig single_model(const std::string& name, const std::string& base_path) {
  ServerConfig config;
  config.models.push_back({.name = name, .base_path = base_path});
  detail::validate_config(config, "--model_name/--model_base_path", "single_model", {});
  return config;
}

const char* state_name(VersionState state) {
  switch (state) {
    case VersionState::Start: return "START";
    case VersionState::Loading: return "LOADING";
    case VersionState::Available: return "AVAILABLE";
    case VersionState::Unloading: return "UNLOADING";
    case VersionState::End: return "END";
  }
  return "UNKNOWN";
}

}  // namespace deepflow::serving
