// SPDX-License-Identifier: Apache-2.0
// The ONNX backend conformance runner: every case of libonnx-testdata (node/, simple/,
// pytorch-converted/, pytorch-operator/) imported, run and compared with ONNX's runner
// tolerances (rtol 1e-3, atol 1e-7). Each case runs in a forked child with a time budget,
// so a crash or a hang is one failed case, not the end of the run.
//
//   onnx_conformance --data /usr/share/libonnx-testdata/data
//                    --expected tests/onnx_conformance/expected_failures.txt [--filter relu] [--verbose]
//
// Exits 1 only when a case missing from the expected-failures list fails or is skipped;
// listed cases that now pass are printed so the list can be trimmed.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "deepflow/core/error.h"
#include "deepflow/onnx/onnx.h"

namespace fs = std::filesystem;
using namespace deepflow;

namespace {

constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-7;
const char* const kSuites[] = {"node", "simple", "pytorch-converted", "pytorch-operator"};

enum class Status { Passed, Failed, Skipped };

struct Result {
  Status status = Status::Failed;
  std::string reason;
};

// --- the op types of a model, read straight off the protobuf wire format ---
// (ModelProto.graph = 7, GraphProto.node = 1, NodeProto.op_type = 4), so the runner needs
// no generated ONNX classes of its own.

bool read_varint(const std::string& b, size_t& p, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && p < b.size(); shift += 7) {
    uint8_t c = uint8_t(b[p++]);
    v |= uint64_t(c & 0x7f) << shift;
    if (!(c & 0x80)) return true;
  }
  return false;
}

// Calls fn(field, bytes) for each length-delimited field of message b; false on bad bytes.
template <class F>
bool for_each_bytes_field(const std::string& b, F fn) {
  size_t p = 0;
  while (p < b.size()) {
    uint64_t key, v;
    if (!read_varint(b, p, key)) return false;
    switch (key & 7) {
      case 0: if (!read_varint(b, p, v)) return false; break;
      case 1: p += 8; break;
      case 5: p += 4; break;
      case 2:
        if (!read_varint(b, p, v) || v > b.size() - p) return false;
        fn(int(key >> 3), b.substr(p, v));
        p += v;
        break;
      default: return false;
    }
    if (p > b.size()) return false;
  }
  return true;
}

std::vector<std::string> model_op_types(const fs::path& model) {
  std::ifstream f(model, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::string> ops;
  for_each_bytes_field(bytes, [&](int field, const std::string& graph) {
    if (field != 7) return;
    for_each_bytes_field(graph, [&](int gf, const std::string& node) {
      if (gf != 1) return;
      for_each_bytes_field(node, [&](int nf, const std::string& s) {
        if (nf == 4) ops.push_back(s);
      });
    });
  });
  return ops;
}

// The op a case tests: the first node that is not mere plumbing.
std::string case_op(const fs::path& model) {
  auto ops = model_op_types(model);
  for (const auto& op : ops) {
    if (op != "Constant" && op != "Identity") return op;
  }
  return ops.empty() ? "?" : ops[0];
}

// --- comparison ---

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\t', ' ');
  if (s.size() > 300) s = s.substr(0, 297) + "...";
  return s;
}

std::string compare(const Tensor& got, const Tensor& want, size_t k) {
  std::ostringstream os;
  if (got.dtype() != want.dtype()) {
    os << "output " << k << ": dtype " << got.dtype() << ", expected " << want.dtype();
    return os.str();
  }
  if (got.shape() != want.shape()) {
    os << "output " << k << ": shape " << got.shape() << ", expected " << want.shape();
    return os.str();
  }
  const int64_t n = want.size();
  if (want.dtype() == DType::String) {
    auto a = got.to_vector<std::string>(), b = want.to_vector<std::string>();
    for (int64_t i = 0; i < n; ++i) {
      if (a[size_t(i)] != b[size_t(i)]) {
        os << "output " << k << "[" << i << "]: \"" << a[size_t(i)] << "\", expected \"" << b[size_t(i)] << "\"";
        return os.str();
      }
    }
    return "";
  }
  if (want.dtype() == DType::Int64) {
    auto a = got.to_vector<int64_t>(), b = want.to_vector<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      if (a[size_t(i)] != b[size_t(i)]) {
        os << "output " << k << "[" << i << "]: " << a[size_t(i)] << ", expected " << b[size_t(i)];
        return os.str();
      }
    }
    return "";
  }
  const bool exact = !is_floating(want.dtype());
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    double a = got.flat(i), b = want.flat(i);
    bool ok;
    if (exact) {
      ok = a == b;
    } else if (std::isnan(a) || std::isnan(b)) {
      ok = std::isnan(a) && std::isnan(b);
    } else if (std::isinf(a) || std::isinf(b)) {
      ok = a == b;
    } else {
      ok = std::abs(a - b) <= kAtol + kRtol * std::abs(b);
    }
    if (!ok) {
      if (first < 0) first = i;
      ++bad;
      if (!std::isnan(a - b)) worst = std::max(worst, std::abs(a - b));
    }
  }
  if (bad == 0) return "";
  os.precision(7);
  os << "output " << k << ": " << bad << " of " << n << " values differ; first [" << first << "] " << got.flat(first)
     << " vs expected " << want.flat(first) << " (max abs diff " << worst << ")";
  return os.str();
}

// --- one case (in the child) ---

// Import errors that mean "not supported by design" rather than "wrong": ops without an
// importer, element types deepflow has no dtype for (or kernels refuse), non-tensor values,
// opsets outside 7..17 and models of other domains only (the training ops).
const char* const kUnsupportedMarks[] = {"unsupported ops:", "unsupported tensor element type",
                                         "has unsupported type", "unsupported dtype", "is not supported (ai.onnx opsets",
                                         "imports no default-domain"};

bool is_unsupported(const std::string& what) {
  for (const char* mark : kUnsupportedMarks) {
    if (what.find(mark) != std::string::npos) return true;
  }
  return false;
}

std::string skip_reason(const std::string& what) {
  auto p = what.find("unsupported ops:");
  if (p != std::string::npos) return what.substr(p);
  p = what.find("unsupported tensor element type");
  if (p != std::string::npos) return "unsupported dtype: " + what.substr(p + 32);
  p = what.find("has unsupported type");
  if (p != std::string::npos) return "unsupported input type: " + what.substr(p + 21);
  p = what.find("opset ");
  if (what.find("is not supported (ai.onnx opsets") != std::string::npos && p != std::string::npos) {
    return "unsupported " + what.substr(p);
  }
  return what;
}

// "[onnx::import] /long/path/model.onnx: X" -> "X": the case names the file already.
std::string strip_path(std::string what, const fs::path& dir) {
  for (const std::string prefix : {"[onnx::import] ", "[onnx::run] "}) {
    std::string full = prefix + (dir / "model.onnx").string() + ": ";
    size_t p;
    while ((p = what.find(full)) != std::string::npos) what = what.substr(0, p) + prefix + what.substr(p + full.size());
  }
  return what;
}

std::vector<fs::path> numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> files;
  for (int i = 0;; ++i) {
    fs::path p = dir / (prefix + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    files.push_back(p);
  }
  return files;
}

Result run_case(const fs::path& dir) {
  onnx::OnnxModel model = [&]() -> onnx::OnnxModel {
    try {
      return onnx::import_model((dir / "model.onnx").string());
    } catch (const Error& e) {
      if (is_unsupported(e.what())) throw Result{Status::Skipped, skip_reason(e.what())};
      throw Result{Status::Failed, std::string("import: ") + e.what()};
    }
  }();
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  }
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return {Status::Failed, "no test_data_set_*"};
  for (const auto& set : sets) {
    std::map<std::string, Tensor> feeds;
    std::vector<Tensor> want;
    try {
      auto ins = numbered(set, "input_");
      if (ins.size() != model.inputs().size()) {
        return {Status::Failed, "the data set has " + std::to_string(ins.size()) + " inputs, the model " +
                                    std::to_string(model.inputs().size())};
      }
      for (size_t i = 0; i < ins.size(); ++i) feeds[model.inputs()[i].name] = onnx::read_tensor_file(ins[i].string());
      for (const auto& p : numbered(set, "output_")) want.push_back(onnx::read_tensor_file(p.string()));
    } catch (const Error& e) {
      if (is_unsupported(e.what())) return {Status::Skipped, skip_reason(e.what())};
      return {Status::Failed, std::string("test data: ") + e.what()};
    }
    std::map<std::string, Tensor> got;
    try {
      got = model.run(feeds);
    } catch (const Error& e) {
      return {Status::Failed, std::string("run: ") + e.what()};
    }
    if (want.size() != model.outputs().size()) {
      return {Status::Failed, "the data set has " + std::to_string(want.size()) + " outputs, the model " +
                                  std::to_string(model.outputs().size())};
    }
    for (size_t k = 0; k < want.size(); ++k) {
      std::string diff = compare(got.at(model.outputs()[k].name), want[k], k);
      if (!diff.empty()) return {Status::Failed, set.filename().string() + " " + diff};
    }
  }
  return {Status::Passed, ""};
}

Result run_case_guarded(const fs::path& dir) {
  Result r = [&]() -> Result {
    try {
      return run_case(dir);
    } catch (const Result& r) {
      return r;
    } catch (const std::exception& e) {
      return {Status::Failed, std::string("exception: ") + e.what()};
    } catch (...) {
      return {Status::Failed, "unknown exception"};
    }
  }();
  r.reason = strip_path(r.reason, dir);
  return r;
}

// --- the parent: forks one child per case, with a time budget ---

struct Child {
  pid_t pid;
  int fd;
  size_t index;
  std::string out;
  std::chrono::steady_clock::time_point start;
};

Result decode(const std::string& s, int wstatus, bool timed_out, int timeout_s) {
  if (timed_out) return {Status::Failed, "timed out after " + std::to_string(timeout_s) + " s"};
  if (WIFSIGNALED(wstatus)) return {Status::Failed, "crashed (signal " + std::to_string(WTERMSIG(wstatus)) + ")"};
  if (s.empty()) return {Status::Failed, "the child exited without a result (status " + std::to_string(wstatus) + ")"};
  Result r;
  r.status = s[0] == 'P' ? Status::Passed : s[0] == 'S' ? Status::Skipped : Status::Failed;
  r.reason = s.size() > 2 ? s.substr(2) : "";
  return r;
}

std::vector<Result> run_all(const std::vector<fs::path>& cases, int jobs, int timeout_s, bool fork_cases) {
  std::vector<Result> results(cases.size());
  if (!fork_cases) {
    for (size_t i = 0; i < cases.size(); ++i) results[i] = run_case_guarded(cases[i]);
    return results;
  }
  std::vector<Child> running;
  size_t next = 0;
  while (next < cases.size() || !running.empty()) {
    while (next < cases.size() && int(running.size()) < jobs) {
      int fds[2];
      if (pipe(fds) != 0) {
        results[next++] = {Status::Failed, "pipe() failed"};
        continue;
      }
      std::cout.flush();
      pid_t pid = fork();
      if (pid == 0) {
        close(fds[0]);
        Result r = run_case_guarded(cases[next]);
        std::string msg = std::string(1, r.status == Status::Passed ? 'P' : r.status == Status::Skipped ? 'S' : 'F') +
                          "\t" + one_line(r.reason);
        size_t off = 0;
        while (off < msg.size()) {
          ssize_t w = write(fds[1], msg.data() + off, msg.size() - off);
          if (w <= 0) break;
          off += size_t(w);
        }
        _exit(0);  // no static destructors: the child only reports
      }
      close(fds[1]);
      if (pid < 0) {
        close(fds[0]);
        results[next++] = {Status::Failed, "fork() failed"};
        continue;
      }
      running.push_back({pid, fds[0], next++, "", std::chrono::steady_clock::now()});
    }
    std::vector<pollfd> pfds;
    for (const auto& c : running) pfds.push_back({c.fd, POLLIN, 0});
    poll(pfds.data(), pfds.size(), 200);
    for (size_t i = 0; i < running.size();) {
      Child& c = running[i];
      bool done = false, timed_out = false;
      if (pfds.size() > i && (pfds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
        char buf[4096];
        ssize_t n = read(c.fd, buf, sizeof buf);
        if (n > 0) {
          c.out.append(buf, size_t(n));
        } else {
          done = true;
        }
      }
      if (!done && std::chrono::steady_clock::now() - c.start > std::chrono::seconds(timeout_s)) {
        kill(c.pid, SIGKILL);
        done = timed_out = true;
      }
      if (!done) {
        ++i;
        continue;
      }
      int wstatus = 0;
      waitpid(c.pid, &wstatus, 0);
      close(c.fd);
      results[c.index] = decode(c.out, wstatus, timed_out, timeout_s);
      running.erase(running.begin() + long(i));
      pfds.erase(pfds.begin() + long(i));
    }
  }
  return results;
}

std::map<std::string, std::string> read_expected(const std::string& path) {
  std::map<std::string, std::string> out;
  if (path.empty()) return out;
  std::ifstream f(path);
  if (!f) {
    std::cerr << "onnx_conformance: cannot open " << path << "\n";
    std::exit(2);
  }
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto sp = line.find_first_of(" \t");
    std::string key = line.substr(0, sp);
    std::string reason = sp == std::string::npos ? "" : line.substr(line.find_first_not_of(" \t", sp));
    out[key] = reason;
  }
  return out;
}

void usage() {
  std::cerr << "usage: onnx_conformance --data DIR [--expected FILE] [--filter SUBSTR] [--verbose]\n"
               "                        [--jobs N] [--timeout SECONDS] [--no-fork] [--write-expected FILE]\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::string data, expected_path, filter, write_expected;
  bool verbose = false, fork_cases = true;
  int jobs = 1, timeout_s = 120;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        usage();
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--data") data = value();
    else if (a == "--expected") expected_path = value();
    else if (a == "--filter") filter = value();
    else if (a == "--write-expected") write_expected = value();
    else if (a == "--jobs") jobs = std::max(1, std::atoi(value().c_str()));
    else if (a == "--timeout") timeout_s = std::max(1, std::atoi(value().c_str()));
    else if (a == "--verbose") verbose = true;
    else if (a == "--no-fork") fork_cases = false;
    else {
      usage();
      return 2;
    }
  }
  if (data.empty()) {
    usage();
    return 2;
  }

  struct Case {
    std::string suite, name, op;
    fs::path dir;
  };
  std::vector<Case> cases;
  for (const char* suite : kSuites) {
    fs::path sdir = fs::path(data) / suite;
    if (!fs::is_directory(sdir)) continue;
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(sdir)) {
      if (e.is_directory() && fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
    }
    std::sort(dirs.begin(), dirs.end());
    for (const auto& d : dirs) {
      std::string key = std::string(suite) + "/" + d.filename().string();
      if (!filter.empty() && key.find(filter) == std::string::npos) continue;
      cases.push_back({suite, d.filename().string(), case_op(d / "model.onnx"), d});
    }
  }
  if (cases.empty()) {
    std::cerr << "onnx_conformance: no cases under " << data << (filter.empty() ? "" : " matching " + filter) << "\n";
    return 2;
  }
  std::map<std::string, std::string> expected = read_expected(expected_path);

  std::vector<fs::path> dirs;
  for (const auto& c : cases) dirs.push_back(c.dir);
  std::vector<Result> results = run_all(dirs, jobs, timeout_s, fork_cases);

  struct Counts {
    int passed = 0, failed = 0, skipped = 0;
    void add(Status s) { (s == Status::Passed ? passed : s == Status::Failed ? failed : skipped)++; }
    int total() const { return passed + failed + skipped; }
  };
  std::map<std::string, Counts> per_op, per_suite;
  Counts all;
  std::vector<std::string> regressions, now_passing;
  std::ofstream out_expected;
  if (!write_expected.empty()) {
    out_expected.open(write_expected);
    out_expected << "# ONNX conformance cases expected to fail or be skipped: <suite>/<case>  <reason>.\n"
                    "# Generated by onnx_conformance --write-expected; trim entries that pass.\n";
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const Result& r = results[i];
    std::string key = c.suite + "/" + c.name;
    if (c.suite == "node") per_op[c.op].add(r.status);
    per_suite[c.suite].add(r.status);
    all.add(r.status);
    const char* tag = r.status == Status::Passed ? "PASS" : r.status == Status::Failed ? "FAIL" : "SKIP";
    if (verbose) std::cout << tag << "  " << key << (r.reason.empty() ? "" : "  " + r.reason) << "\n";
    bool listed = expected.count(key) > 0;
    if (r.status != Status::Passed && !listed) regressions.push_back(std::string(tag) + "  " + key + "  " + r.reason);
    if (r.status == Status::Passed && listed) now_passing.push_back(key);
    if (out_expected.is_open() && r.status != Status::Passed) {
      std::string reason = (r.status == Status::Skipped ? "skipped: " : "") + r.reason;
      if (reason.size() > 160) reason = reason.substr(0, 157) + "...";
      out_expected << key << "  " << reason << "\n";
    }
  }

  std::printf("\n%-28s %7s %7s %7s\n", "op (node cases)", "passed", "failed", "skipped");
  for (const auto& [op, n] : per_op) std::printf("%-28s %7d %7d %7d\n", op.c_str(), n.passed, n.failed, n.skipped);
  std::printf("\n");
  for (const auto& [suite, n] : per_suite) {
    std::printf("%-18s %d passed, %d failed, %d skipped (of %d)\n", suite.c_str(), n.passed, n.failed, n.skipped,
                n.total());
  }
  std::printf("%-18s %d passed, %d failed, %d skipped (of %d)\n", "overall", all.passed, all.failed, all.skipped,
              all.total());
  if (!now_passing.empty()) {
    std::printf("\n%zu cases in the expected-failures list now pass (trim the list):\n", now_passing.size());
    for (const auto& k : now_passing) std::printf("  %s\n", k.c_str());
  }
  if (!regressions.empty() && !expected_path.empty()) {
    std::printf("\n%zu regressions (failed or skipped, not in %s):\n", regressions.size(), expected_path.c_str());
    for (const auto& k : regressions) std::printf("  %s\n", k.c_str());
    return 1;
  }
  return 0;
}
