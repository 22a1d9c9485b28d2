// SPDX-License-Identifier: Apache-2.0
#include "deepflow/serving/rest_api.h"

#include <charconv>
#include <chrono>
#include <optional>
#include <string>

#include "deepflow/serving/binary_tensor.h"
#include "deepflow/serving/json_tensor.h"

namespace deepflow::serving {

namespace {

// The routes as TF Serving's RE2 patterns, matched by hand (case-insensitive literals,
// segments of [^/:]+, versions of \d+) so no regex runs per request:
//   POST (?i)/v1/models/([^/:]+)(?:(?:/versions/(\d+))|(?:/labels/([^/:]+)))?:(classify|regress|predict)
//        and deepflow's model management verbs :load and :unload (no version or label)
//   GET  (?i)/v1/models(?:/([^/:]+))?(?:(?:/versions/(\d+))|(?:/labels/([^/:]+)))?(?:\/(metadata))?
struct Route {
  std::string_view name, version, label, verb;  // raw (still percent-encoded)
};

bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

bool consume_literal(std::string_view& s, std::string_view lit) {
  if (s.size() < lit.size() || !iequal(s.substr(0, lit.size()), lit)) return false;
  s.remove_prefix(lit.size());
  return true;
}

// A maximal run of characters other than '/' and ':' (RE2's [^/:]+ is greedy and the
// next token always starts with '/' or ':', so maximal is the only match).
std::string_view consume_segment(std::string_view& s) {
  size_t n = 0;
  while (n < s.size() && s[n] != '/' && s[n] != ':') ++n;
  std::string_view seg = s.substr(0, n);
  s.remove_prefix(n);
  return seg;
}

std::string_view consume_digits(std::string_view& s) {
  size_t n = 0;
  while (n < s.size() && s[n] >= '0' && s[n] <= '9') ++n;
  std::string_view d = s.substr(0, n);
  s.remove_prefix(n);
  return d;
}

// (?:(?:/versions/(\d+))|(?:/labels/([^/:]+)))? : consumes the group when it matches.
void consume_version_or_label(std::string_view& s, Route& r) {
  std::string_view t = s;
  if (consume_literal(t, "/versions/")) {
    std::string_view d = consume_digits(t);
    if (!d.empty()) {
      r.version = d;
      s = t;
      return;
    }
  }
  t = s;
  if (consume_literal(t, "/labels/")) {
    std::string_view l = consume_segment(t);
    if (!l.empty()) {
      r.label = l;
      s = t;
    }
  }
}

std::optional<Route> match_post(std::string_view path) {
  Route r;
  if (!consume_literal(path, "/v1/models/")) return std::nullopt;
  r.name = consume_segment(path);
  if (r.name.empty()) return std::nullopt;
  consume_version_or_label(path, r);
  if (!consume_literal(path, ":")) return std::nullopt;
  for (std::string_view verb : {"classify", "regress", "predict", "load", "unload"})
    if (iequal(path, verb)) {
      r.verb = path;
      return r;
    }
  return std::nullopt;
}

// The optional tail after the name: version/label group, then "/metadata", then end.
// Greedy first as RE2 (group taken when possible), falling back to not taking it.
bool match_get_tail(std::string_view s, Route& r) {
  Route with = r;
  std::string_view t = s;
  consume_version_or_label(t, with);
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string_view u = attempt == 0 ? t : s;
    Route cur = attempt == 0 ? with : r;
    if (u.empty()) {
      r = cur;
      return true;
    }
    if (u.size() == 9 && iequal(u, "/metadata")) {
      cur.verb = u.substr(1);
      r = cur;
      return true;
    }
  }
  return false;
}

std::optional<Route> match_get(std::string_view path) {
  if (!consume_literal(path, "/v1/models")) return std::nullopt;
  std::string_view t = path;
  if (consume_literal(t, "/")) {
    Route r;
    r.name = consume_segment(t);
    if (!r.name.empty() && match_get_tail(t, r)) return r;
  }
  Route r;  // no model name: GET /v1/models[...]
  if (match_get_tail(path, r)) return r;
  return std::nullopt;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX only: '+' is a literal plus in a path, and a bad escape stays as written.
std::string percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

struct Request {
  std::string api = "status";
  std::string model;
  int64_t version = 0;  // the resolved version, for metrics
};

ModelSpec make_spec(const Route& r, Request& req) {
  ModelSpec spec;
  spec.name = percent_decode(r.name);
  req.model = spec.name;
  if (!r.version.empty()) {
    int64_t v = 0;
    auto res = std::from_chars(r.version.data(), r.version.data() + r.version.size(), v);
    if (res.ec != std::errc() || res.ptr != r.version.data() + r.version.size())
      throw ServingError(Code::InvalidArgument,
                         "Failed to convert version: " + std::string(r.version) + " to numeric.");
    spec.version = v;
  }
  if (!r.label.empty()) spec.label = percent_decode(r.label);
  if (spec.version && !spec.label.empty())
    throw ServingError(Code::InvalidArgument,
                       "[rest] a request may name a version or a label, not both (model '" + spec.name +
                           "', version " + std::to_string(*spec.version) + ", label '" + spec.label + "')");
  return spec;
}

}  // namespace

RestHandler::RestHandler(const ModelManager& manager, SignatureRunner runner, Metrics* metrics, ModelAdmin* admin)
    : manager_(manager), runner_(std::move(runner)), metrics_(metrics), admin_(admin) {}

RestResponse RestHandler::handle(std::string_view method, std::string_view path, std::string_view body,
                                 const RestHeaders& headers) const {
  auto start = std::chrono::steady_clock::now();
  Request req;
  RestResponse response;
  Code code = Code::Ok;
  bool routed = false;
  try {
    if (path.size() < 4 || !iequal(path.substr(0, 4), "/v1/")) {
      // TF Serving only dispatches /v1/ paths; everything else is the HTTP server's 404.
      throw ServingError(Code::NotFound, "Not found: " + std::string(method) + " " + std::string(path) +
                                             " (the REST API is under /v1/models/)");
    }
    std::optional<Route> route;
    if (method == "POST") route = match_post(path);
    else if (method == "GET") route = match_get(path);
    // TF Serving compares the captured verb exactly: only the path literals ignore case.
    if (!route || (method == "POST" && route->verb != "classify" && route->verb != "regress" &&
                   route->verb != "predict" && route->verb != "load" && route->verb != "unload"))
      throw ServingError(Code::InvalidArgument, "Malformed request: " + std::string(method) + " " + std::string(path));
    if (route->name.empty()) throw ServingError(Code::InvalidArgument, "Missing model name in request.");
    routed = true;
    if (method == "GET") req.api = route->verb == "metadata" ? "metadata" : "status";
    else req.api = std::string(route->verb);
    ModelSpec spec = make_spec(*route, req);

    if (req.api == "load" || req.api == "unload") {
      if (!admin_)
        throw ServingError(Code::Unimplemented, "[rest :" + req.api + "] this server does not accept model management calls");
      if (spec.version || !spec.label.empty())
        throw ServingError(Code::InvalidArgument, "[rest :" + req.api + "] takes the model's name only, not a version or "
                                                  "label: POST /v1/models/<name>:" + req.api);
      if (req.api == "load") {
        response.body = write_status_response(admin_->load(parse_load_request(body, spec.name)));
      } else {
        admin_->unload(spec.name);
        response.body = "{}";
      }
    } else if (req.api == "status") {
      response.body = write_status_response(manager_.status(spec));
    } else {
      ServableHandle servable = manager_.get(spec);
      req.version = servable->version;
      if (req.api == "metadata") {
        response.body = write_metadata_response(*servable);
      } else if (req.api == "predict") {
        PredictRequestJson parsed;
        if (names_binary_media_type(headers.content_type)) {
          PredictRequestBinary binary = parse_binary_predict_request(body);
          parsed.signature_name = std::move(binary.signature_name);
          parsed.inputs = std::move(binary.inputs);
        } else {
          parsed = parse_predict_request(body, [&](const std::string& signature) {
            return find_signature(*servable, signature).inputs();
          });
        }
        auto run_start = std::chrono::steady_clock::now();
        auto outputs = run_predict(servable, parsed.signature_name, parsed.inputs, {}, runner_);
        if (metrics_)
          metrics_->record_runtime(req.model, req.api,
                                   std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - run_start)
                                       .count());
        if (names_binary_media_type(headers.accept)) {
          const std::string& key = parsed.signature_name;
          response.body = write_binary_predict_response(
              servable->name, servable->version, key.empty() ? std::string(io::kDefaultServingSignatureKey) : key, outputs);
          response.content_type = std::string(kBinaryTensorMediaType);
        } else {
          response.body = write_predict_response(outputs, parsed.row_format);
        }
      } else {
        ExamplesRequestJson parsed = parse_examples_request(body);
        auto run_start = std::chrono::steady_clock::now();
        if (req.api == "classify")
          response.body =
              write_classify_response(run_classify(servable, parsed.signature_name, parsed.examples, parsed.context, runner_));
        else
          response.body =
              write_regress_response(run_regress(servable, parsed.signature_name, parsed.examples, parsed.context, runner_));
        if (metrics_)
          metrics_->record_runtime(req.model, req.api,
                                   std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - run_start)
                                       .count());
      }
    }
  } catch (const std::exception& e) {
    code = code_of(e);
    response.status = http_status(code);
    response.body = write_error(e.what());
    response.content_type = "application/json";
  } catch (...) {
    code = Code::Internal;
    response.status = 500;
    response.body = write_error("[rest] unknown exception");
    response.content_type = "application/json";
  }
  if (metrics_ && routed && !req.model.empty()) {
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    metrics_->record_request(req.model, req.version, req.api, "REST", code, us);
  }
  return response;
}

}  // namespace deepflow::serving
