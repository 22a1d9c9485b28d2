// SPDX-License-Identifier: Apache-2.0
// TF1 control flow in frozen graphs (convert_variables_to_constants_v2 lowers If and While
// by default), put back together while the graph is evaluated:
// - a cond: Switch(data, pred) sends data to output 1 (true) or 0 (false); the branches'
//   results meet in a Merge. At a Merge the predicate is the one whose Switch outputs its
//   two inputs depend on, one each way; the Merge becomes cond(pred) whose branches are
//   fresh walks of the graph (Body::fork) with those Switch outputs bound to their data.
// - a loop frame: Enter(init) -> Merge(enter, NextIteration) -> Switch(merge, LoopCond)
//   -> output 1 into the body, output 0 to Exit; constant Enters carry invariants. The
//   frame becomes one while_loop over the Merges: the condition is LoopCond's input, the
//   body the NextIterations' inputs, each evaluated on a fork with the Merges (and the
//   Switches) bound to the loop variables.
// Both walk only what the outputs need, so a branch's nodes run inside its branch.
#include <string>
#include <vector>

#include "deepflow/core/error.h"
#include "deepflow/function/control_flow.h"
#include "deepflow/tf/graph_body.h"
#include "tensorflow/node_def.pb.h"

namespace deepflow::tf::detail {
namespace {

using tensorflow::NodeDef;

bool is_op(const NodeDef& n, const std::string& op) { return n.op() == op || n.op() == "Ref" + op; }

std::vector<std::string> data_inputs(const NodeDef& n) {
  std::vector<std::string> out;
  for (const std::string& in : n.input()) {
    if (in[0] != '^') out.push_back(in);
  }
  return out;
}

const tensorflow::AttrValue* find_attr(const NodeDef& n, const char* name) {
  auto it = n.attr().find(name);
  return it == n.attr().end() ? nullptr : &it->second;
}

}  // namespace

bool Body::takes_inputs_itself(const std::string& op) {
  return op == "Merge" || op == "RefMerge" || op == "Exit" || op == "RefExit" || op == "NextIteration" ||
         op == "RefNextIteration";
}

Body Body::fork() const {
  Body b(shared_, nodes_, path_, function_body_);
  b.bound_ = bound_;
  return b;
}

std::map<std::string, std::set<int>> Body::branch_conditions(const std::string& ref) {
  std::map<std::string, std::set<int>> out;
  std::set<int> seen;
  std::vector<std::pair<int, int>> todo;  // (node, output it is reached by; -1: a control input)
  auto push = [&](const std::string& in) {
    const bool control = in[0] == '^';
    auto [node, k] = parse(control ? in.substr(1) : in);
    if (node >= 0) todo.emplace_back(node, control ? -1 : k);
  };
  push(ref);
  while (!todo.empty()) {
    auto [i, k] = todo.back();
    todo.pop_back();
    const NodeDef& n = *nodes_->list[size_t(i)];
    if (is_op(n, "Switch")) {
      const std::vector<std::string> in = data_inputs(n);
      if (in.size() == 2 && k >= 0) {
        // A loop's Switches (on a LoopCond) are no cond's; the walk goes on through the
        // loop to its initial values, which a branch may have given it.
        auto [p, pk] = parse(in[1]);
        if (!(p >= 0 && is_op(*nodes_->list[size_t(p)], "LoopCond"))) out[ref_key(in[1])].insert(k);
      }
    }
    if (!seen.insert(i).second) continue;
    for (const std::string& in : n.input()) push(in);
  }
  return out;
}

Values Body::tf1_merge(const NodeDef& n) {
  const std::string what = "node '" + path_ + n.name() + "' (" + n.op() + ")";
  const std::vector<std::string> in = data_inputs(n);
  for (const std::string& ref : in) {
    auto [p, k] = parse(ref);
    DF_CHECK(p < 0 || !(is_op(*nodes_->list[size_t(p)], "Enter") || is_op(*nodes_->list[size_t(p)], "NextIteration")),
             "[tf::import] ", shared_.source, ": ", what, " merges a TF1 loop's variable and is reached outside ",
             "its loop (only through its Exit)");
  }
  DF_CHECK(in.size() == 2, "[tf::import] ", shared_.source, ": ", what, " has ", in.size(),
           " inputs; a TF1 cond's Merge has 2");
  const auto a = branch_conditions(in[0]), b = branch_conditions(in[1]);
  std::string pred;
  int a_side = -1;
  for (const auto& [p, sides] : a) {
    auto it = b.find(p);
    if (sides.size() == 1 && it != b.end() && it->second.size() == 1 && *it->second.begin() != *sides.begin()) {
      pred = p;
      a_side = *sides.begin();
      break;
    }
  }
  DF_CHECK(!pred.empty(), "[tf::import] ", shared_.source, ": ", what, ": its inputs do not come from the two ",
           "sides of one Switch predicate (not a TF1 cond)");
  // The cond's Switches: their data comes from outside the branches, evaluated here first.
  std::vector<std::string> switches;
  Values data;
  for (const NodeDef* s : nodes_->list) {
    const std::vector<std::string> s_in = data_inputs(*s);
    if (!is_op(*s, "Switch") || s_in.size() != 2 || ref_key(s_in[1]) != pred) continue;
    switches.push_back(s->name());
    data.push_back(value(s_in[0]));
  }
  const Value& p = value(pred);
  DF_CHECK(p.tensor.defined(), "[tf::import] ", shared_.source, ": ", what, ": predicate '", pred,
           "' is not a tensor");
  const Tensor predicate = as_predicate(p.tensor);
  auto branch = [&](int side) {
    Body walk = fork();
    for (size_t i = 0; i < switches.size(); ++i) walk.bind(switches[i] + ":" + std::to_string(side), data[i]);
    const Value v = walk.value(side == a_side ? in[0] : in[1]);
    DF_CHECK(v.tensor.defined(), "[tf::import] ", shared_.source, ": ", what, ": a branch gives no tensor");
    return v.tensor;
  };
  // value_index: which input the value came from.
  const bool first_is_true = a_side == 1;
  if (!predicate.is_symbolic()) {
    const bool t = predicate.item<bool>();
    return {branch(t ? 1 : 0), scalar(t == first_is_true ? 0 : 1, DType::Int32)};
  }
  Tensor out = cond(predicate, [&] { return TensorList{branch(1)}; }, [&] { return TensorList{branch(0)}; })[0];
  return {out, cast(first_is_true ? logical_not(predicate) : predicate, DType::Int32)};
}

Values Body::tf1_exit(const NodeDef& n) {
  const std::string what = "node '" + path_ + n.name() + "' (" + n.op() + ")";
  const std::vector<std::string> in = data_inputs(n);
  DF_CHECK(in.size() == 1, "[tf::import] ", shared_.source, ": ", what, " has ", in.size(), " inputs, not 1");
  auto [sw, k] = parse(in[0]);
  DF_CHECK(sw >= 0 && k == 0 && is_op(*nodes_->list[size_t(sw)], "Switch"), "[tf::import] ", shared_.source, ": ",
           what, " does not take output 0 of a loop's Switch");
  const std::vector<std::string> sw_in = data_inputs(*nodes_->list[size_t(sw)]);
  auto [lc, lk] = sw_in.size() == 2 ? parse(sw_in[1]) : std::pair<int, int>{-1, 0};
  DF_CHECK(lc >= 0 && is_op(*nodes_->list[size_t(lc)], "LoopCond"), "[tf::import] ", shared_.source, ": ", what,
           ": its Switch's predicate is not a LoopCond");
  if (!loops_.count(lc)) tf1_loop(lc);
  return {loops_.at(lc).at(sw)};
}

void Body::tf1_loop(int loop_cond) {
  const NodeDef& lc = *nodes_->list[size_t(loop_cond)];
  const std::string what = "the TF1 loop of node '" + path_ + lc.name() + "' (LoopCond)";
  struct Var {
    int sw;
    std::string merge, next_input, init;
  };
  std::vector<Var> vars;
  std::string frame;
  const auto& list = nodes_->list;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::vector<std::string> s_in = data_inputs(*list[i]);
    if (!is_op(*list[i], "Switch") || s_in.size() != 2 || parse(s_in[1]).first != loop_cond) continue;
    auto [m, mk] = parse(s_in[0]);
    DF_CHECK(m >= 0 && is_op(*list[size_t(m)], "Merge"), "[tf::import] ", shared_.source, ": ", what, ": Switch '",
             list[i]->name(), "' does not take a Merge");
    int enter = -1, next = -1;
    for (const std::string& ref : data_inputs(*list[size_t(m)])) {
      const int j = parse(ref).first;
      if (j >= 0 && is_op(*list[size_t(j)], "Enter")) enter = j;
      if (j >= 0 && is_op(*list[size_t(j)], "NextIteration")) next = j;
    }
    DF_CHECK(enter >= 0 && next >= 0, "[tf::import] ", shared_.source, ": ", what, ": Merge '", list[size_t(m)]->name(),
             "' does not merge an Enter and a NextIteration");
    const std::vector<std::string> e_in = data_inputs(*list[size_t(enter)]), n_in = data_inputs(*list[size_t(next)]);
    DF_CHECK(e_in.size() == 1 && n_in.size() == 1, "[tf::import] ", shared_.source, ": ", what,
             ": an Enter or NextIteration without its one input");
    if (const auto* f = find_attr(*list[size_t(enter)], "frame_name")) frame = f->s();
    vars.push_back({int(i), list[size_t(m)]->name(), n_in[0], e_in[0]});
  }
  DF_CHECK(!vars.empty(), "[tf::import] ", shared_.source, ": ", what, " has no loop variables");
  // Loop invariants: the frame's constant Enters.
  std::vector<std::string> invariants;
  Values invariant_values;
  for (const NodeDef* e : list) {
    const auto* f = find_attr(*e, "frame_name");
    const auto* c = find_attr(*e, "is_constant");
    if (!is_op(*e, "Enter") || !f || f->s() != frame || !c || !c->b()) continue;
    const std::vector<std::string> e_in = data_inputs(*e);
    DF_CHECK(e_in.size() == 1, "[tf::import] ", shared_.source, ": ", what, ": Enter '", e->name(), "' has ",
             e_in.size(), " inputs");
    invariants.push_back(e->name());
    invariant_values.push_back(value(e_in[0]));
  }
  TensorList init;
  for (const Var& v : vars) {
    const Value& x = value(v.init);
    DF_CHECK(x.tensor.defined(), "[tf::import] ", shared_.source, ": ", what, ": loop variable '", v.init,
             "' is not a tensor");
    init.push_back(x.tensor);
  }
  auto walk = [&](const TensorList& ts, bool in_body) {
    Body w = fork();
    for (size_t j = 0; j < invariants.size(); ++j) w.bind(invariants[j] + ":0", invariant_values[j]);
    for (size_t j = 0; j < vars.size(); ++j) {
      w.bind(vars[j].merge + ":0", ts[j]);
      if (!in_body) continue;
      // In the body the Switches let the variables through (output 1); output 0, the
      // Exit's side, is bound too so that control inputs on a Switch need no condition.
      const std::string& sw = list[size_t(vars[j].sw)]->name();
      w.bind(sw + ":0", ts[j]);
      w.bind(sw + ":1", ts[j]);
    }
    return w;
  };
  auto tensor = [&](const Value& v, const std::string& ref) {
    DF_CHECK(v.tensor.defined(), "[tf::import] ", shared_.source, ": ", what, ": '", ref, "' is not a tensor");
    return v.tensor;
  };
  const std::vector<std::string> lc_in = data_inputs(lc);
  DF_CHECK(lc_in.size() == 1, "[tf::import] ", shared_.source, ": ", what, ": LoopCond has ", lc_in.size(), " inputs");
  TensorList out = while_loop(
      [&](const TensorList& ts) {
        Body w = walk(ts, false);
        return as_predicate(tensor(w.value(lc_in[0]), lc_in[0]));
      },
      [&](const TensorList& ts) {
        Body w = walk(ts, true);
        TensorList next;
        for (const Var& v : vars) next.push_back(tensor(w.value(v.next_input), v.next_input));
        return next;
      },
      init);
  auto& done = loops_[loop_cond];
  for (size_t j = 0; j < vars.size(); ++j) done[vars[j].sw] = out[j];
}

}  // namespace deepflow::tf::detail
