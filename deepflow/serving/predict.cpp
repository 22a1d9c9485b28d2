// SPDX-License-Identifier: Apache-2.0
#include "deepflow/serving/predict.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "deepflow/core/parallel.h"
#include "deepflow/serving/tensor_proto.h"
#include "example.pb.h"

namespace deepflow::serving {
namespace {

// TF's SignatureDef notation: -1 for an unknown dim (Shape::to_string writes "?").
std::string dims_text(const Shape& s) {
  std::string out = "[";
  for (int i = 0; i < s.rank(); ++i) {
    if (i) out += ',';
    out += std::to_string(s[i] < 0 ? -1 : s[i]);
  }
  return out + "]";
}

std::string type_text(const TensorType& t) { return std::string(tf_dtype_name(t.dtype)) + " " + dims_text(t.shape); }

template <class Map>
std::string key_set(const Map& m) {
  std::string out = "{";
  bool first = true;
  for (const auto& kv : m) {
    if (!first) out += ',';
    out += kv.first;
    first = false;
  }
  return out + "}";
}

std::string join_set(const std::set<std::string>& s) {
  std::string out = "{";
  for (auto it = s.begin(); it != s.end(); ++it) {
    if (it != s.begin()) out += ',';
    out += *it;
  }
  return out + "}";
}

// Appended to every input error, so that the client sees what to send.
std::string expected_inputs(const io::LoadedSignature& sig, const std::map<std::string, TensorType>& expected) {
  std::string out = " Signature \"" + sig.key() + "\" expects inputs: ";
  bool first = true;
  for (const auto& [k, t] : expected) {
    if (!first) out += ", ";
    out += k + " (" + type_text(t) + ")";
    first = false;
  }
  return out + ".";
}

[[noreturn]] void invalid(const std::string& msg) { throw ServingError(Code::InvalidArgument, msg); }

// TF Serving's checks (predict_util.cc), with its wording after the bracket, plus the
// dtype and shape checks TensorFlow's session would make later with a vaguer message.
void check_inputs(const char* where, const io::LoadedSignature& sig, const std::map<std::string, Tensor>& inputs) {
  std::map<std::string, TensorType> expected = sig.inputs();
  if (inputs.size() != expected.size()) {
    std::set<std::string> extra, missing;
    for (const auto& kv : inputs)
      if (!expected.count(kv.first)) extra.insert(kv.first);
    for (const auto& kv : expected)
      if (!inputs.count(kv.first)) missing.insert(kv.first);
    std::ostringstream os;
    os << where << " input size does not match signature: " << inputs.size() << "!=" << expected.size() << " len("
       << key_set(inputs) << ") != len(" << key_set(expected) << "). Sent extra: " << join_set(extra)
       << ". Missing but required: " << join_set(missing) << ".";
    invalid(os.str() + expected_inputs(sig, expected));
  }
  for (const auto& [key, tensor] : inputs) {
    auto it = expected.find(key);
    if (it == expected.end())
      invalid(std::string(where) + " input tensor alias not found in signature: " + key +
              ". Inputs expected to be in the set " + key_set(expected) + "." + expected_inputs(sig, expected));
    if (!tensor.defined() || tensor.is_symbolic())
      invalid(std::string(where) + " input '" + key + "' has no value." + expected_inputs(sig, expected));
    const TensorType& want = it->second;
    if (tensor.dtype() != want.dtype)
      invalid(std::string(where) + " input '" + key + "' is " + tf_dtype_name(tensor.dtype()) +
              " but the signature expects " + tf_dtype_name(want.dtype) + "." + expected_inputs(sig, expected));
    if (!tensor.shape().compatible_with(want.shape))
      invalid(std::string(where) + " input '" + key + "' has shape " + dims_text(tensor.shape()) +
              ", not compatible with the signature's " + dims_text(want.shape) + " (-1: any size)." +
              expected_inputs(sig, expected));
  }
}

ServableHandle require(const ServableHandle& servable, const char* where) {
  if (!servable) throw ServingError(Code::Internal, std::string(where) + " no servable");
  return servable;
}

// --- tf.Example requests ---

tensorflow::Example parse_one(const char* where, const std::string& bytes, const std::string& what) {
  tensorflow::Example ex;
  if (!ex.ParseFromString(bytes))
    invalid(std::string(where) + " " + what + " is not a valid tf.train.Example (" + std::to_string(bytes.size()) +
            " bytes)");
  return ex;
}

const char* kind_name(const tensorflow::Feature& f) {
  switch (f.kind_case()) {
    case tensorflow::Feature::kBytesList: return "bytes_list";
    case tensorflow::Feature::kFloatList: return "float_list";
    case tensorflow::Feature::kInt64List: return "int64_list";
    default: return "empty Feature";
  }
}

// One signature input filled from a feature of every example (the documented choice in
// predict.h): [n] + the input's shape without its batch dim.
Tensor feature_tensor(const char* where, const std::string& key, const TensorType& type,
                      const std::vector<tensorflow::Example>& examples) {
  std::string sig_text = "signature input '" + key + "' (" + type_text(type) + ")";
  if (type.dtype != DType::Float32 && type.dtype != DType::Int64 && type.dtype != DType::String)
    invalid(std::string(where) + " " + sig_text +
            ": tf.Example features can feed only DT_FLOAT, DT_INT64 and DT_STRING inputs");
  if (type.shape.rank() < 1) invalid(std::string(where) + " " + sig_text + " has no batch dimension");
  Shape elem;
  int unknown = -1;
  int64_t known = 1;
  for (int i = 1; i < type.shape.rank(); ++i) {
    int64_t d = type.shape[i];
    if (d < 0) {
      if (unknown >= 0) invalid(std::string(where) + " " + sig_text + ": more than one unknown dimension per example");
      unknown = i - 1;
    } else {
      known *= d;
    }
    elem.push_back(d);
  }
  const int64_t n = int64_t(examples.size());
  int64_t per = unknown < 0 ? known : -1;
  Tensor out;
  for (int64_t i = 0; i < n; ++i) {
    const auto& fmap = examples[size_t(i)].features().feature();
    auto it = fmap.find(key);
    std::string at = std::string(where) + " feature '" + key + "' of example " + std::to_string(i);
    if (it == fmap.end())
      invalid(std::string(where) + " example " + std::to_string(i) + " has no feature '" + key + "', needed by " +
              sig_text);
    const tensorflow::Feature& f = it->second;
    int64_t count = 0;
    bool ok = false;
    switch (type.dtype) {
      // A float input also takes an int64_list: REST's JSON `1` arrives as one
      // (specs.md section 8.1), and small integers convert exactly.
      case DType::Float32:
        ok = f.has_float_list() || f.has_int64_list();
        count = f.has_float_list() ? f.float_list().value_size() : f.int64_list().value_size();
        break;
      case DType::Int64:
        ok = f.has_int64_list();
        count = f.int64_list().value_size();
        break;
      default:
        ok = f.has_bytes_list();
        count = f.bytes_list().value_size();
        break;
    }
    if (!ok)
      invalid(at + " is a " + kind_name(f) + "; " + sig_text + " needs a " +
              (type.dtype == DType::Int64    ? "int64_list"
               : type.dtype == DType::String ? "bytes_list"
                                             : "float_list"));
    if (per < 0) {
      // The one unknown dim takes its size from the first example; the others must agree.
      if (known == 0 || count % known != 0)
        invalid(at + " has " + std::to_string(count) + " values, not a multiple of " + std::to_string(known) + " as " +
                sig_text + " needs");
      elem[unknown] = count / known;
      per = count;
    }
    if (count != per)
      invalid(at + " has " + std::to_string(count) + " values; " + sig_text + " needs " + std::to_string(per) +
              " per example (shape " + dims_text(elem) + ")");
    if (!out.defined()) {
      Shape shape = elem;
      shape.insert(0, n);
      out = Tensor(shape, type.dtype);
    }
    int64_t base = i * per;
    if (type.dtype == DType::Float32) {
      float* dst = out.data<float>() + base;
      if (f.has_float_list())
        for (int64_t j = 0; j < per; ++j) dst[j] = f.float_list().value(int(j));
      else
        for (int64_t j = 0; j < per; ++j) dst[j] = float(f.int64_list().value(int(j)));
    } else if (type.dtype == DType::Int64) {
      int64_t* dst = out.data<int64_t>() + base;
      for (int64_t j = 0; j < per; ++j) dst[j] = f.int64_list().value(int(j));
    } else {
      std::string* dst = out.data<std::string>() + base;
      for (int64_t j = 0; j < per; ++j) dst[j] = f.bytes_list().value(int(j));
    }
  }
  return out;
}

// Parses the examples, merges the context into each, and builds the signature's
// inputs (see predict.h for the two ways).
std::map<std::string, Tensor> example_inputs(const char* where, const io::LoadedSignature& sig,
                                             const std::vector<std::string>& examples, const std::string& context) {
  if (examples.empty()) invalid(std::string(where) + " Input is empty.");
  std::vector<tensorflow::Example> parsed;
  parsed.reserve(examples.size());
  for (size_t i = 0; i < examples.size(); ++i)
    parsed.push_back(parse_one(where, examples[i], "example " + std::to_string(i)));
  if (!context.empty()) {
    tensorflow::Example ctx = parse_one(where, context, "the context");
    for (size_t i = 0; i < parsed.size(); ++i) {
      auto* fmap = parsed[i].mutable_features()->mutable_feature();
      for (const auto& [name, feature] : ctx.features().feature()) {
        if (fmap->count(name))
          invalid(std::string(where) + " feature '" + name + "' is in both the context and example " +
                  std::to_string(i) + "; a context feature must not appear in the examples");
        (*fmap)[name] = feature;
      }
    }
  }
  std::map<std::string, TensorType> expected = sig.inputs();
  std::map<std::string, Tensor> inputs;
  if (expected.size() == 1 && expected.begin()->second.dtype == DType::String) {
    Tensor t(Shape{int64_t(examples.size())}, DType::String);
    std::string* dst = t.data<std::string>();
    for (size_t i = 0; i < examples.size(); ++i) dst[i] = context.empty() ? examples[i] : parsed[i].SerializeAsString();
    inputs.emplace(expected.begin()->first, t);
  } else {
    for (const auto& [key, type] : expected) inputs.emplace(key, feature_tensor(where, key, type, parsed));
  }
  check_inputs(where, sig, inputs);
  return inputs;
}

// The output of a signature by key, checked to have one row per example.
const Tensor& batch_output(const char* where, const std::map<std::string, Tensor>& out, const std::string& key,
                           int64_t n) {
  auto it = out.find(key);
  if (it == out.end()) throw ServingError(Code::Internal, std::string(where) + " the model returned no '" + key + "'");
  const Tensor& t = it->second;
  if (t.rank() < 1 || t.dim(0) != n)
    invalid(std::string(where) + " output '" + key + "' has shape " + dims_text(t.shape()) + "; expected " +
            std::to_string(n) + " rows, one per example");
  return t;
}

}  // namespace

std::map<std::string, Tensor> run_signature_directly(const ServableHandle& servable, const std::string& key,
                                                     const std::map<std::string, Tensor>& inputs) {
  const Servable& s = *require(servable, "[predict]");
  if (request_rows(inputs) > 1 || !s.threads->single_thread_signatures.count(key))
    return s.model.signature(key)(inputs);
  // warm_up found this signature's one-row run short or no slower alone: a team's other
  // members would spin after each parallel region on cores the server needs.
  ScopedIntraOpThreads alone(1);
  return s.model.signature(key)(inputs);
}

int64_t request_rows(const std::map<std::string, Tensor>& inputs) {
  int64_t rows = 1;
  for (const auto& [name, t] : inputs)
    if (t.rank() > 0) rows = std::max(rows, t.dim(0));
  return rows;
}

const io::LoadedSignature& find_signature(const Servable& servable, const std::string& name) {
  const std::string key = name.empty() ? io::kDefaultServingSignatureKey : name;
  if (!servable.model.has_signature(key))
    invalid("[predict] Serving signature name: \"" + key + "\" not found in signature def");
  return servable.model.signature(key);
}

std::map<std::string, Tensor> run_predict(const ServableHandle& servable, const std::string& signature_name,
                                          const std::map<std::string, Tensor>& inputs,
                                          const std::vector<std::string>& output_filter,
                                          const SignatureRunner& runner) {
  const io::LoadedSignature& sig = find_signature(*require(servable, "[predict]"), signature_name);
  check_inputs("[predict]", sig, inputs);
  std::map<std::string, TensorType> outputs = sig.outputs();
  std::set<std::string> wanted;
  for (const std::string& alias : output_filter) {
    if (!outputs.count(alias))
      invalid("[predict] output tensor alias not found in signature: " + alias + " Outputs expected to be in the set " +
              key_set(outputs) + ".");
    if (!wanted.insert(alias).second) invalid("[predict] duplicate output tensor alias: " + alias);
  }
  std::map<std::string, Tensor> out = runner(servable, sig.key(), inputs);
  if (wanted.empty()) return out;
  std::map<std::string, Tensor> filtered;
  for (const std::string& alias : wanted) {
    auto it = out.find(alias);
    if (it == out.end()) throw ServingError(Code::Internal, "[predict] the model returned no output '" + alias + "'");
    filtered.emplace(alias, it->second);
  }
  return filtered;
}

std::vector<std::vector<ClassScore>> run_classify(const ServableHandle& servable, const std::string& signature_name,
                                                  const std::vector<std::string>& examples, const std::string& context,
                                                  const SignatureRunner& runner) {
  const char* where = "[classify]";
  const io::LoadedSignature& sig = find_signature(*require(servable, where), signature_name);
  // Which outputs to read is decided before running, so a wrong signature costs nothing.
  std::map<std::string, TensorType> outs = sig.outputs();
  std::string scores_key, classes_key;
  if (outs.count("scores") || outs.count("classes")) {
    if (outs.count("scores")) scores_key = "scores";
    if (outs.count("classes")) classes_key = "classes";
  } else if (outs.size() == 1 && outs.begin()->second.dtype == DType::Float32) {
    scores_key = outs.begin()->first;
  } else {
    invalid(std::string(where) + " signature \"" + sig.key() +
            "\" is not a classification signature: it needs outputs 'scores' (DT_FLOAT [n,k]) and/or 'classes' "
            "(DT_STRING [n,k]), or a single DT_FLOAT output; it has " +
            key_set(outs));
  }
  if (!scores_key.empty() && outs.at(scores_key).dtype != DType::Float32)
    invalid(std::string(where) +
            " Expected scores Tensor of DT_FLOAT. Got: " + tf_dtype_name(outs.at(scores_key).dtype));
  if (!classes_key.empty() && outs.at(classes_key).dtype != DType::String)
    invalid(std::string(where) +
            " Expected classes Tensor of DT_STRING. Got: " + tf_dtype_name(outs.at(classes_key).dtype));

  std::map<std::string, Tensor> inputs = example_inputs(where, sig, examples, context);
  std::map<std::string, Tensor> out = runner(servable, sig.key(), inputs);
  const int64_t n = int64_t(examples.size());
  Tensor scores, classes;
  int64_t k = -1;
  for (const auto& [key, dst] : {std::pair{scores_key, &scores}, std::pair{classes_key, &classes}}) {
    if (key.empty()) continue;
    *dst = batch_output(where, out, key, n);
    if (dst->rank() != 2)
      invalid(std::string(where) + " Expected output Tensor shape to be [batch_size, num_classes] but got " +
              dims_text(dst->shape()) + " for '" + key + "'");
    if (k >= 0 && dst->dim(1) != k)
      invalid(std::string(where) + " Tensors class and score should match in shape: classes " +
              dims_text(classes.shape()) + ", scores " + dims_text(scores.shape()));
    k = dst->dim(1);
  }
  std::vector<std::vector<ClassScore>> result(static_cast<size_t>(n), std::vector<ClassScore>(static_cast<size_t>(k)));
  const float* s = scores.defined() ? scores.data<float>() : nullptr;
  const std::string* c = classes.defined() ? classes.data<std::string>() : nullptr;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j) {
      if (s) result[size_t(i)][size_t(j)].score = s[i * k + j];
      if (c) result[size_t(i)][size_t(j)].label = c[i * k + j];
    }
  return result;
}

std::vector<float> run_regress(const ServableHandle& servable, const std::string& signature_name,
                               const std::vector<std::string>& examples, const std::string& context,
                               const SignatureRunner& runner) {
  const char* where = "[regress]";
  const io::LoadedSignature& sig = find_signature(*require(servable, where), signature_name);
  std::map<std::string, TensorType> outs = sig.outputs();
  std::string key;
  if (outs.count("outputs"))
    key = "outputs";
  else if (outs.size() == 1)
    key = outs.begin()->first;
  else
    invalid(std::string(where) + " signature \"" + sig.key() +
            "\" is not a regression signature: it needs an output 'outputs' (DT_FLOAT [n] or [n,1]) or a single "
            "DT_FLOAT output; it has " +
            key_set(outs));
  if (outs.at(key).dtype != DType::Float32)
    invalid(std::string(where) + " Expected output Tensor of DT_FLOAT. Got: " + tf_dtype_name(outs.at(key).dtype));

  std::map<std::string, Tensor> inputs = example_inputs(where, sig, examples, context);
  std::map<std::string, Tensor> out = runner(servable, sig.key(), inputs);
  const int64_t n = int64_t(examples.size());
  const Tensor& t = batch_output(where, out, key, n);
  if (t.rank() > 2 || (t.rank() == 2 && t.dim(1) != 1))
    invalid(std::string(where) + " Expected output Tensor shape to be either [batch_size] or [batch_size, 1] but got " +
            dims_text(t.shape()));
  const float* v = t.data<float>();
  return std::vector<float>(v, v + n);
}

}  // namespace deepflow::serving
