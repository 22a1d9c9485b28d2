// SPDX-License-Identifier: Apache-2.0
#include "deepflow/ops/fused_program.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <unordered_map>

namespace deepflow::fused {

int arity(OpId op) {
  switch (op) {
    case OpId::Neg: case OpId::Abs: case OpId::Sign: case OpId::Exp: case OpId::Log: case OpId::Log1p:
    case OpId::Expm1: case OpId::Sqrt: case OpId::Rsqrt: case OpId::Square: case OpId::Sin: case OpId::Cos:
    case OpId::Tanh: case OpId::Sigmoid: case OpId::Relu: case OpId::Erf: case OpId::Floor: case OpId::Ceil:
    case OpId::Round:
      return 1;
    case OpId::Add: case OpId::Sub: case OpId::Mul: case OpId::Div: case OpId::Pow: case OpId::Maximum:
    case OpId::Minimum:
      return 2;
    default:
      return 0;
  }
}

Program parse(const std::string& text, int num_inputs) {
  Program p;
  std::istringstream in(text);
  std::string tok;
  int depth = 0;
  while (in >> tok) {
    Instr ins;
    if (tok[0] == '$') {
      char* end = nullptr;
      long k = std::strtol(tok.c_str() + 1, &end, 10);
      DF_CHECK(tok.size() > 1 && *end == 0 && k >= 0 && k < num_inputs, "[fused_elementwise] bad input token '", tok,
               "' in program \"", text, "\" (", num_inputs, " inputs)");
      ins.kind = Instr::Input;
      ins.index = int(k);
      ++depth;
    } else if (tok[0] == '#') {
      char* end = nullptr;
      ins.value = std::strtod(tok.c_str() + 1, &end);
      DF_CHECK(tok.size() > 1 && *end == 0, "[fused_elementwise] bad immediate '", tok, "' in program \"", text, "\"");
      ins.kind = Instr::Immediate;
      ++depth;
    } else {
      OpId op = OpId::kNumPrimitives;
      try {
        op = op_id_from_name(tok);
      } catch (const Error&) {
      }
      ins.kind = Instr::Op;
      ins.op = op;
      ins.arity = op == OpId::kNumPrimitives ? 0 : arity(op);
      DF_CHECK(ins.arity > 0, "[fused_elementwise] '", tok, "' is not an elementwise op a program may use (program \"",
               text, "\")");
      DF_CHECK(depth >= ins.arity, "[fused_elementwise] '", tok, "' needs ", ins.arity, " operands, the stack has ",
               depth, " (program \"", text, "\")");
      depth -= ins.arity - 1;
    }
    p.max_depth = std::max(p.max_depth, depth);
    p.code.push_back(ins);
  }
  DF_CHECK(depth == 1, "[fused_elementwise] program \"", text, "\" leaves ", depth, " values, expected 1");
  return p;
}

const Program& parse_cached(const std::string& text, int num_inputs) {
  constexpr size_t kMaxCached = 256;
  thread_local std::unordered_map<std::string, Program> cache;
  std::string key = text;
  key += '/';
  key += std::to_string(num_inputs);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  Program p = parse(text, num_inputs);  // throws before anything is cached
  if (cache.size() >= kMaxCached) cache.clear();
  return cache.emplace(std::move(key), std::move(p)).first->second;
}

std::string input_token(int k) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "$%d", k);
  return buf;
}

std::string immediate_token(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "#%.17g", v);
  return buf;
}

Shape output_shape(const std::vector<Shape>& inputs) {
  DF_CHECK(!inputs.empty(), "[fused_elementwise] needs at least one input");
  size_t best = 0;
  for (size_t i = 1; i < inputs.size(); ++i)
    if (inputs[i].rank() > inputs[best].rank()) best = i;
  const Shape& s = inputs[best];
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Shape& t = inputs[i];
    const bool ok = t.compatible_with(s) || t.rank() == 0 ||
                    (t.rank() == 1 && s.rank() >= 1 && t.compatible_with(Shape{s[s.rank() - 1]}));
    DF_CHECK(ok, "[fused_elementwise] input ", i, " has shape ", t, "; inputs must be ", s,
             ", scalars or rows [", s.rank() ? s[s.rank() - 1] : 1, "]");
  }
  return s;
}

Broadcast broadcast_of(const Shape& in, const Shape& out) {
  if (in == out) return Broadcast::Full;
  if (in.rank() == 0) return Broadcast::Scalar;
  return Broadcast::Row;
}

}  // namespace deepflow::fused
