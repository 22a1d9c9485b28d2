// SPDX-License-Identifier: Apache-2.0
// TensorFlow's string ops that serving signatures use, as custom ops of deepflow_tf (the
// core has no string kernels): StringLength (bytes or UTF-8 characters) and StringJoin
// (elementwise, scalars broadcast), AsString.
#include <cstdio>

#include "deepflow/core/error.h"
#include "deepflow/ops/kernel.h"
#include "deepflow/tf/op_importer.h"

namespace deepflow::tf {
namespace {

int64_t utf8_length(const std::string& s) {
  int64_t n = 0;
  for (unsigned char ch : s) n += (ch & 0xC0) != 0x80;  // count every byte but continuations
  return n;
}

OpId length_op() {
  static const OpId id = [] {
    OpId op = register_custom_op(OpDef{
        .name = "tf_string_length",
        .num_inputs = 1,
        .attrs = {{"utf8", false}},
        .infer = [](const OpCall& c, TypeList& out) {
          DF_CHECK(c.in(0).dtype() == DType::String, "[tf_string_length] expects strings, got ",
                   dtype_name(c.in(0).dtype()));
          out.push_back({DType::Int32, c.in(0).shape()});
        },
        .non_differentiable = true,
        .strings = true,
    });
    register_kernel(op, KernelDef{.name = "ref", .run = [](const OpCall& c, TensorList& out) {
                      const bool utf8 = c.attr_bool("utf8");
                      const std::string* x = c.in(0).data<std::string>();
                      int32_t* y = out[0].data<int32_t>();
                      for (int64_t i = 0; i < c.in(0).size(); ++i) y[i] = int32_t(utf8 ? utf8_length(x[i]) : int64_t(x[i].size()));
                    }});
    return op;
  }();
  return id;
}

// The shape every non-scalar input shares (TF's StringJoin does not broadcast otherwise).
Shape join_shape(const OpCall& c) {
  Shape s;
  for (int i = 0; i < c.num_inputs(); ++i) {
    DF_CHECK(c.in(i).dtype() == DType::String, "[tf_string_join] input ", i, " is ", dtype_name(c.in(i).dtype()));
    if (c.in(i).rank() == 0) continue;
    DF_CHECK(s.rank() == 0 || s == c.in(i).shape(), "[tf_string_join] inputs of shapes ", s, " and ", c.in(i).shape());
    s = c.in(i).shape();
  }
  return s;
}

OpId join_op() {
  static const OpId id = [] {
    OpId op = register_custom_op(OpDef{
        .name = "tf_string_join",
        .num_inputs = -1,
        .attrs = {{"separator", ""}},
        .infer = [](const OpCall& c, TypeList& out) { out.push_back({DType::String, join_shape(c)}); },
        .non_differentiable = true,
        .strings = true,
    });
    register_kernel(op, KernelDef{.name = "ref", .run = [](const OpCall& c, TensorList& out) {
                      const std::string& sep = c.attr_string("separator");
                      std::string* y = out[0].data<std::string>();
                      for (int64_t k = 0; k < out[0].size(); ++k) {
                        std::string s;
                        for (int i = 0; i < c.num_inputs(); ++i) {
                          if (i) s += sep;
                          s += c.in(i).data<std::string>()[c.in(i).rank() == 0 ? 0 : k];
                        }
                        y[k] = std::move(s);
                      }
                    }});
    return op;
  }();
  return id;
}

// AsString with TF's default formatting: integers in decimal, floats as printf's "%f",
// bools as "true" / "false" (precision, width and fill attrs other than the defaults are
// refused by the importer).
OpId as_string_op() {
  static const OpId id = [] {
    OpId op = register_custom_op(OpDef{
        .name = "tf_as_string",
        .num_inputs = 1,
        .infer = [](const OpCall& c, TypeList& out) { out.push_back({DType::String, c.in(0).shape()}); },
        .non_differentiable = true,
        .strings = true,
    });
    register_kernel(op, KernelDef{.name = "ref", .run = [](const OpCall& c, TensorList& out) {
                      const Tensor& x = c.in(0);
                      std::string* y = out[0].data<std::string>();
                      char buf[64];
                      for (int64_t i = 0; i < x.size(); ++i) {
                        if (x.dtype() == DType::Bool) {
                          y[i] = x.data<bool>()[i] ? "true" : "false";
                        } else if (is_integer(x.dtype())) {
                          std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(x.flat(i)));
                          y[i] = buf;
                        } else {
                          std::snprintf(buf, sizeof buf, "%f", x.flat(i));
                          y[i] = buf;
                        }
                      }
                    }});
    return op;
  }();
  return id;
}

Values import_as_string(NodeContext& c) {
  DF_CHECK(c.attr_int("precision") < 0 && !c.attr_bool("scientific") && !c.attr_bool("shortest") &&
               c.attr_int("width") < 0 && c.attr_string("fill").empty(),
           "[tf::import] ", c.describe(), ": AsString with precision, width, fill or scientific is not supported");
  return {dispatch1(as_string_op(), {c.input(0)})};
}

Values import_string_length(NodeContext& c) {
  return {dispatch1(length_op(), {c.input(0)}, {{"utf8", c.attr_string("unit") == "UTF8_CHAR"}})};
}

Values import_string_join(NodeContext& c) {
  TensorList in;
  for (size_t i = 0; i < c.num_inputs(); ++i) in.push_back(c.input(i));
  return {dispatch1(join_op(), in, {{"separator", c.attr_string("separator")}})};
}

}  // namespace

DF_TF_OP("StringLength", import_string_length)
DF_TF_OP("StringJoin", import_string_join)
DF_TF_OP("AsString", import_as_string)

}  // namespace deepflow::tf
