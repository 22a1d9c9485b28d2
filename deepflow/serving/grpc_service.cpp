// SPDX-License-Identifier: Apache-2.0
#include "deepflow/serving/grpc_service.h"

#include <chrono>
#include <limits>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "deepflow/serving/h2_server.h"
#include "deepflow/serving/tensor_proto.h"
#include "serving_apis.pb.h"

namespace deepflow::serving {
namespace {

namespace pb = tensorflow::serving;
using Clock = std::chrono::steady_clock;

// A handler's outcome (grpc::Status under grpc++'s server): OK, or a code and a message.
struct Status {
  Code code = Code::Ok;
  std::string message;
  bool ok() const { return code == Code::Ok; }
};

using RunFn = std::map<std::string, Tensor>(const ServableHandle&, const std::string&,
                                              const std::map<std::string, Tensor>&);

// The direct runner never waits for other calls, so a call may run on its connection's
// I/O thread; any other runner (the batcher's) may, so calls go to workers.
bool runner_never_blocks(const SignatureRunner& runner) {
  RunFn* const* fn = runner.target<RunFn*>();
  return fn && *fn == &run_signature_directly;
}

ModelSpec spec_from_proto(const pb::ModelSpec& proto) {
  ModelSpec spec;
  spec.name = proto.name();
  if (proto.version_choice_case() == pb::ModelSpec::kVersion) spec.version = proto.version().value();
  if (proto.version_choice_case() == pb::ModelSpec::kVersionLabel) spec.label = proto.version_label();
  return spec;
}

// TF Serving's MakeModelSpec: the resolved version, and the signature actually run.
void fill_spec(const Servable& servable, const std::string& signature, pb::ModelSpec* out) {
  out->set_name(servable.name);
  out->mutable_version()->set_value(servable.version);
  if (!signature.empty()) out->set_signature_name(signature);
}

std::string signature_or_default(const std::string& name) {
  return name.empty() ? std::string(io::kDefaultServingSignatureKey) : name;
}

// Examples arrive parsed inside Input; predict.h takes them serialized (as TF Serving's
// classifier feeds them to the graph).
void examples_from_input(const pb::Input& input, std::vector<std::string>* examples, std::string* context) {
  if (input.kind_case() == pb::Input::kExampleList) {
    for (const auto& e : input.example_list().examples()) examples->push_back(e.SerializeAsString());
  } else if (input.kind_case() == pb::Input::kExampleListWithContext) {
    const auto& list = input.example_list_with_context();
    for (const auto& e : list.examples()) examples->push_back(e.SerializeAsString());
    if (list.has_context()) *context = list.context().SerializeAsString();
  }
  if (examples->empty()) throw ServingError(Code::InvalidArgument, "Input is empty.");
}

// HandleReloadConfigRequest takes only a model list (TF Serving's text);
// ModelManager::reload_config validates it with the same checks as the text parser.
ServerConfig reload_config_from_proto(const pb::ModelServerConfig& proto) {
  if (proto.config_case() != pb::ModelServerConfig::kModelConfigList) {
    throw ServingError(Code::InvalidArgument,
                       "ServerModelConfig type not supported by HandleReloadConfigRequest. Only ModelConfigList is "
                       "currently supported");
  }
  return server_config_from_proto(proto);
}

}  // namespace

// One object serves both services; every handler runs through serve() so each call
// is counted once with its code and latency. The methods are found by their HTTP/2
// path in `methods`.
struct GrpcServer::Impl {
  ModelManager& manager;
  SignatureRunner runner;
  Metrics* metrics;
  GrpcOptions options;
  std::function<void(const ServerConfig&)> reload;
  std::unordered_map<std::string, std::function<GrpcReply(std::string_view)>> methods;
  std::unique_ptr<H2Server> server;
  int port = 0;
  std::mutex mutex;  // start/shutdown

  Impl(ModelManager& m, SignatureRunner r, Metrics* met, GrpcOptions o, std::function<void(const ServerConfig&)> rl)
      : manager(m), runner(std::move(r)), metrics(met), options(std::move(o)), reload(std::move(rl)) {
    if (!runner) runner = run_signature_directly;
    const std::string prediction = "/tensorflow.serving.PredictionService/";
    const std::string model_service = "/tensorflow.serving.ModelService/";
    add(prediction + "Predict", &Impl::Predict);
    add(prediction + "Classify", &Impl::Classify);
    add(prediction + "Regress", &Impl::Regress);
    add(prediction + "MultiInference", &Impl::MultiInference);
    add(prediction + "GetModelMetadata", &Impl::GetModelMetadata);
    add(model_service + "GetModelStatus", &Impl::GetModelStatus);
    add(model_service + "HandleReloadConfigRequest", &Impl::HandleReloadConfigRequest);
  }

  // A unary method: parse the request (INTERNAL if it does not parse, as grpc++ answers),
  // run, and frame the response; an error status sends no message.
  template <class Request, class Response>
  void add(const std::string& path, Status (Impl::*method)(const Request*, Response*)) {
    methods[path] = [this, method](std::string_view bytes) -> GrpcReply {
      Request request;
      if (!request.ParseFromArray(bytes.data(), int(bytes.size()))) {
        return {Code::Internal, "[grpc] cannot parse the request as " + request.GetTypeName(), {}};
      }
      Response response;
      Status status = (this->*method)(&request, &response);
      if (!status.ok()) return {status.code, std::move(status.message), {}};
      const size_t size = response.ByteSizeLong();
      if (options.max_message_bytes > 0 && size > size_t(options.max_message_bytes)) {  // grpc++'s send limit
        return {Code::ResourceExhausted,
                "[grpc] response larger than max (" + std::to_string(size) + " vs. " +
                    std::to_string(options.max_message_bytes) + ")",
                {}};
      }
      std::string body = grpc_frame(size);
      response.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(body.data() + 5));
      return {Code::Ok, {}, std::move(body)};
    };
  }

  GrpcReply handle(const GrpcCall& call) {
    auto it = methods.find(call.path);
    if (it == methods.end()) return {Code::Unimplemented, "[grpc] unknown method " + call.path, {}};
    return it->second(call.message());
  }

  // Runs `body` (which returns the version it resolved, 0 if none), mapping exceptions to
  // the same code and message as ServingError, and records the call (unless api is null).
  template <class Body>
  Status serve(const char* api, const std::string& model, Body&& body) {
    auto start = Clock::now();
    int64_t version = 0;
    Code code = Code::Ok;
    std::string message;
    try {
      version = body();
    } catch (const std::exception& e) {
      code = code_of(e);
      message = e.what();
    } catch (...) {
      code = Code::Internal;
      message = "[grpc] unknown exception";
    }
    if (metrics && api) {
      double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
      metrics->record_request(model, version, api, "GRPC", code, us);
    }
    return {code, message};
  }

  // The runner, timed for runtime_latency.
  SignatureRunner timed_runner(const std::string& model, const char* api) {
    if (!metrics) return runner;
    return [this, &model, api](const ServableHandle& s, const std::string& key,
                               const std::map<std::string, Tensor>& inputs) {
      auto start = Clock::now();
      auto out = runner(s, key, inputs);
      metrics->record_runtime(model, api, std::chrono::duration<double, std::micro>(Clock::now() - start).count());
      return out;
    };
  }

  static void require_spec(bool has_spec) {
    if (!has_spec) throw ServingError(Code::InvalidArgument, "Missing ModelSpec");
  }

  Status Predict(const pb::PredictRequest* request, pb::PredictResponse* response) {
    const std::string& model = request->model_spec().name();
    return serve("predict", model, [&]() -> int64_t {
      require_spec(request->has_model_spec());
      ServableHandle servable = manager.get(spec_from_proto(request->model_spec()));
      std::map<std::string, Tensor> inputs;
      for (const auto& [key, proto] : request->inputs()) {
        try {
          inputs.emplace(key, tensor_from_proto(proto, /*borrow=*/true));  // `request` outlives the run
        } catch (const std::exception& e) {
          throw ServingError(code_of(e), "[Predict] model '" + servable->name + "' version " +
                                             std::to_string(servable->version) + ", input '" + key + "': " + e.what());
        }
      }
      std::vector<std::string> filter(request->output_filter().begin(), request->output_filter().end());
      const std::string& signature = request->model_spec().signature_name();
      auto outputs = run_predict(servable, signature, inputs, filter, timed_runner(model, "predict"));
      auto* out = response->mutable_outputs();
      for (const auto& [key, tensor] : outputs) tensor_to_proto(tensor, &(*out)[key]);
      fill_spec(*servable, signature_or_default(signature), response->mutable_model_spec());
      return servable->version;
    });
  }

  // Classify and Regress: resolve the servable, read the request's examples, run, and
  // fill the response's model spec; `run` writes the result.
  template <class Request, class Response, class Run>
  Status serve_examples(const char* api, const Request* request, Response* response, Run run) {
    const std::string& model = request->model_spec().name();
    return serve(api, model, [&]() -> int64_t {
      require_spec(request->has_model_spec());
      ServableHandle servable = manager.get(spec_from_proto(request->model_spec()));
      std::vector<std::string> examples;
      std::string context;
      examples_from_input(request->input(), &examples, &context);
      const std::string& signature = request->model_spec().signature_name();
      run(servable, signature, examples, context, timed_runner(model, api), response->mutable_result());
      fill_spec(*servable, signature_or_default(signature), response->mutable_model_spec());
      return servable->version;
    });
  }

  Status Classify(const pb::ClassificationRequest* request, pb::ClassificationResponse* response) {
    return serve_examples("classify", request, response,
                          [](const ServableHandle& servable, const std::string& signature,
                             const std::vector<std::string>& examples, const std::string& context,
                             const SignatureRunner& run, pb::ClassificationResult* result) {
                            for (const auto& row : run_classify(servable, signature, examples, context, run)) {
                              auto* c = result->add_classifications();
                              for (const auto& cs : row) {
                                auto* cls = c->add_classes();
                                cls->set_label(cs.label);
                                cls->set_score(cs.score);
                              }
                            }
                          });
  }

  Status Regress(const pb::RegressionRequest* request, pb::RegressionResponse* response) {
    return serve_examples("regress", request, response,
                          [](const ServableHandle& servable, const std::string& signature,
                             const std::vector<std::string>& examples, const std::string& context,
                             const SignatureRunner& run, pb::RegressionResult* result) {
                            for (float v : run_regress(servable, signature, examples, context, run))
                              result->add_regressions()->set_value(v);
                          });
  }

  Status MultiInference(const pb::MultiInferenceRequest*, pb::MultiInferenceResponse*) {
    return Status{Code::Unimplemented, "[MultiInference] not implemented by deepflow serve; use Classify or Regress"};
  }

  Status GetModelMetadata(const pb::GetModelMetadataRequest* request, pb::GetModelMetadataResponse* response) {
    return serve("metadata", request->model_spec().name(), [&]() -> int64_t {
      require_spec(request->has_model_spec());
      // TF Serving's checks and texts (get_model_metadata_impl.cc).
      if (request->metadata_field_size() == 0) {
        throw ServingError(Code::InvalidArgument, "GetModelMetadataRequest must specify at least one metadata_field");
      }
      for (const auto& field : request->metadata_field()) {
        if (field != "signature_def") {
          throw ServingError(Code::InvalidArgument, "Metadata field " + field + " is not supported");
        }
      }
      ServableHandle servable = manager.get(spec_from_proto(request->model_spec()));
      pb::SignatureDefMap map;
      auto tensor_info = [](const io::TensorInfo& info, tensorflow::TensorInfo* out) {
        out->set_name(info.name);
        out->set_dtype(static_cast<tensorflow::DataType>(tf_dtype_enum(info.type.dtype)));
        shape_to_proto(info.type.shape, out->mutable_tensor_shape());
      };
      for (const auto& [key, sig] : servable->model.info().signatures) {
        tensorflow::SignatureDef& def = (*map.mutable_signature_def())[key];
        for (const auto& [name, info] : sig.inputs) tensor_info(info, &(*def.mutable_inputs())[name]);
        for (const auto& [name, info] : sig.outputs) tensor_info(info, &(*def.mutable_outputs())[name]);
        def.set_method_name(sig.method_name);
      }
      (*response->mutable_metadata())["signature_def"].PackFrom(map);
      fill_spec(*servable, "", response->mutable_model_spec());
      return servable->version;
    });
  }

  Status GetModelStatus(const pb::GetModelStatusRequest* request, pb::GetModelStatusResponse* response) {
    return serve("status", request->model_spec().name(), [&]() -> int64_t {
      require_spec(request->has_model_spec());
      for (const VersionStatus& s : manager.status(spec_from_proto(request->model_spec()))) {
        auto* v = response->add_model_version_status();
        v->set_version(s.version);
        // START=10 ... END=50: the enum's order times ten.
        v->set_state(static_cast<pb::ModelVersionStatus::State>(10 * (static_cast<int>(s.state) + 1)));
        v->mutable_status()->set_error_code(static_cast<int>(s.error_code));
        v->mutable_status()->set_error_message(s.error_message);
      }
      return 0;
    });
  }

  Status HandleReloadConfigRequest(const pb::ReloadConfigRequest* request, pb::ReloadConfigResponse* response) {
    if (!reload) {
      return Status{Code::Unimplemented, "[HandleReloadConfigRequest] this server does not accept config reloads"};
    }
    Status status = serve(nullptr, "", [&]() -> int64_t {
      reload(reload_config_from_proto(request->config()));
      return 0;
    });
    response->mutable_status()->set_error_code(static_cast<int>(status.code));
    response->mutable_status()->set_error_message(status.message);
    return status;
  }
};

GrpcServer::GrpcServer(ModelManager& manager, SignatureRunner runner, Metrics* metrics, GrpcOptions options,
                       std::function<void(const ServerConfig&)> reload)
    : impl_(std::make_unique<Impl>(manager, std::move(runner), metrics, std::move(options), std::move(reload))) {}

GrpcServer::~GrpcServer() { shutdown(); }

void GrpcServer::start() {
  std::lock_guard lock(impl_->mutex);
  if (impl_->server) throw ServingError(Code::FailedPrecondition, "[GrpcServer::start] already started");
  // Our own HTTP/2 transport (h2_server.h) rather than grpc++'s server: grpc++ 1.51 spent
  // about 88 us of server CPU per empty unary call, this one 12-33 us (bench/serving/grpc_bench).
  H2ServerOptions options{.address = impl_->options.address,
                          .max_message_bytes = impl_->options.max_message_bytes > 0
                                                   ? size_t(impl_->options.max_message_bytes)
                                                   : size_t(std::numeric_limits<int32_t>::max()),
                          .inline_calls = runner_never_blocks(impl_->runner)};
  auto server = std::make_unique<H2Server>(options, [impl = impl_.get()](const GrpcCall& call) {
    return impl->handle(call);
  });
  server->start();
  impl_->port = server->port();
  impl_->server = std::move(server);
}

int GrpcServer::port() const { return impl_->port; }

void GrpcServer::shutdown() {
  std::lock_guard lock(impl_->mutex);
  if (!impl_->server) return;
  impl_->server->shutdown();  // no new calls; returns once the calls in flight finished
  impl_->server.reset();
}

}  // namespace deepflow::serving
