// SPDX-License-Identifier: Apache-2.0
// The `checkpoint` state file next to training checkpoints: TensorFlow's
// CheckpointState in protobuf text format, read and written by hand (four fields do
// not need a text-format parser, and a file TF wrote parses here).
//
//   model_checkpoint_path: "ckpt-3"
//   all_model_checkpoint_paths: "ckpt-2"
//   all_model_checkpoint_paths: "ckpt-3"
//   all_model_checkpoint_timestamps: 1718000000.25
//   all_model_checkpoint_timestamps: 1718000100.5
//   last_preserved_timestamp: 1717999990.0
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "deepflow/io/atomic_file.h"
#include "deepflow/io/checkpoint.h"

namespace deepflow::io {
namespace {

constexpr const char* kStateName = "checkpoint";

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

// A quoted string with C escapes (what protobuf's text format writes); "" on success,
// else what is wrong.
std::string unquote(const std::string& v, std::string* out) {
  if (v.size() < 2 || (v.front() != '"' && v.front() != '\'') || v.back() != v.front())
    return "expected a quoted string";
  out->clear();
  for (size_t i = 1; i + 1 < v.size(); ++i) {
    char c = v[i];
    if (c != '\\') {
      *out += c;
      continue;
    }
    if (++i + 1 >= v.size()) return "a dangling backslash";
    c = v[i];
    switch (c) {
      case 'n': *out += '\n'; break;
      case 't': *out += '\t'; break;
      case 'r': *out += '\r'; break;
      case '"': case '\'': case '\\': *out += c; break;
      case 'x': {
        int n = 0, val = 0;
        while (n < 2 && i + 2 < v.size() && std::isxdigit(static_cast<unsigned char>(v[i + 1]))) {
          val = val * 16 + std::stoi(std::string(1, v[++i]), nullptr, 16);
          ++n;
        }
        if (n == 0) return "a \\x escape without digits";
        *out += char(val);
        break;
      }
      default: {
        if (c < '0' || c > '7') return std::string("an unknown escape \\") + c;
        int val = c - '0', n = 1;
        while (n < 3 && i + 2 < v.size() && v[i + 1] >= '0' && v[i + 1] <= '7') val = val * 8 + (v[++i] - '0'), ++n;
        *out += char(val & 0xff);
      }
    }
  }
  return "";
}

}  // namespace

bool read_checkpoint_state(const std::string& directory, CheckpointState* out) {
  const std::string path = directory + "/" + kStateName;
  if (!detail::file_exists(path)) return false;
  const std::string text = detail::read_file(path, "[latest_checkpoint] ");
  *out = CheckpointState();
  std::istringstream in(text);
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const size_t colon = line.find(':', first);
    DF_CHECK(colon != std::string::npos, "[latest_checkpoint] ", path, ":", lineno, ": expected 'field: value', got '",
             line, "'");
    const std::string key = line.substr(first, colon - first);
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    value.erase(value.find_last_not_of(" \t\r") + 1);
    auto string_value = [&] {
      std::string s;
      const std::string problem = unquote(value, &s);
      DF_CHECK(problem.empty(), "[latest_checkpoint] ", path, ":", lineno, ": ", key, ": ", problem);
      return s;
    };
    auto number_value = [&] {
      char* end = nullptr;
      const double d = std::strtod(value.c_str(), &end);
      DF_CHECK(!value.empty() && end == value.c_str() + value.size(), "[latest_checkpoint] ", path, ":", lineno, ": ",
               key, ": expected a number, got '", value, "'");
      return d;
    };
    if (key == "model_checkpoint_path") out->model_checkpoint_path = string_value();
    else if (key == "all_model_checkpoint_paths") out->all_model_checkpoint_paths.push_back(string_value());
    else if (key == "all_model_checkpoint_timestamps") out->all_model_checkpoint_timestamps.push_back(number_value());
    else if (key == "last_preserved_timestamp") out->last_preserved_timestamp = number_value();
    else fail("[latest_checkpoint] ", path, ":", lineno, ": unknown field '", key, "'");
  }
  return true;
}

void write_checkpoint_state(const std::string& directory, const CheckpointState& state) {
  std::ostringstream os;
  os.precision(17);
  os << "model_checkpoint_path: " << quote(state.model_checkpoint_path) << "\n";
  for (const std::string& p : state.all_model_checkpoint_paths)
    os << "all_model_checkpoint_paths: " << quote(p) << "\n";
  for (double t : state.all_model_checkpoint_timestamps) os << "all_model_checkpoint_timestamps: " << t << "\n";
  if (state.last_preserved_timestamp != 0) os << "last_preserved_timestamp: " << state.last_preserved_timestamp << "\n";
  detail::write_file_atomic(directory + "/" + kStateName, os.str(), "[checkpoint state] ");
}

std::string latest_checkpoint(const std::string& directory) {
  CheckpointState state;
  if (!read_checkpoint_state(directory, &state) || state.model_checkpoint_path.empty()) return "";
  std::string p = state.model_checkpoint_path;
  if (p.front() != '/') p = directory + "/" + p;
  return detail::file_exists(p + ".index") ? p : "";
}

}  // namespace deepflow::io
