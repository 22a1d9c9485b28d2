// SPDX-License-Identifier: Apache-2.0
// The program of a fused_elementwise node: a postfix (RPN) list of space-separated tokens.
//
//   $k      push input k (0-based)
//   #v      push the immediate v (a double written with %.17g: "#0.5", "#-inf", "#nan")
//   name    pop the operands of the unary or binary primitive `name` (its serialized name:
//           "relu", "add", ...), apply it, push the result; binary ops pop b, then a: "$0 $1 sub" is x0 - x1
//
// The program must leave exactly one value. "$0 $1 add relu" is relu(x0 + x1);
// "$0 $0 mul #0.5 mul" is 0.5 * x0^2. Inputs are tensors of the output's shape S, scalars
// (rank 0), or rows [S[-1]] broadcast along the last dim (a bias).
#pragma once

#include <string>
#include <vector>

#include "deepflow/ops/op.h"

namespace deepflow::fused {

struct Instr {
  enum Kind { Input, Immediate, Op } kind = Input;
  int index = 0;      ///< Input: which input
  double value = 0;   ///< Immediate
  OpId op = OpId::kNumPrimitives;
  int arity = 0;      ///< Op: 1 or 2
};

struct Program {
  std::vector<Instr> code;
  int max_depth = 0;  ///< the deepest the stack gets
};

/// The primitives a program may use: 1 or 2 for the float unary and binary ones, 0 otherwise.
int arity(OpId op);
/// Parses and checks a program for `num_inputs` inputs; throws "[fused_elementwise] ..." when malformed.
Program parse(const std::string& text, int num_inputs);
/// parse() through a per-thread cache: the kernel, infer and vjp run it on every call,
/// and parsing costs as much as running a small program. The reference stays valid
/// until this thread's next call.
const Program& parse_cached(const std::string& text, int num_inputs);
/// "$k" and "#v" tokens.
std::string input_token(int k);
std::string immediate_token(double v);

/// The output shape S of inputs: the first input of the highest rank; every other input
/// must be S, a scalar, or [S[-1]]. Throws "[fused_elementwise] ..." otherwise.
Shape output_shape(const std::vector<Shape>& inputs);
/// How an input of shape `in` is read for an output of shape `out` (checked shapes).
enum class Broadcast { Full, Scalar, Row };
Broadcast broadcast_of(const Shape& in, const Shape& out);

}  // namespace deepflow::fused
