#include "canonical.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>

#include "vocab.h"

namespace cwm {
namespace {

[[noreturn]] void Fail(const std::string& what) { throw TraceFormatError(what); }

// A random variable's name in a trace (b3, l12, v0). Quoted strings are literals, and other text
// (the JSON of an IndexMap that TransformLayout takes) is a literal as written.
bool IsRvName(const std::string& s) {
  if (s.empty() || s == "None" || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

bool IsRv(const Json& x) { return x.is_string() && IsRvName(x.s); }

std::string Literal(const std::string& x) {
  if (x.empty() || x[0] != '"') return x;  // an object written as text (an IndexMap's JSON)
  if (x.size() >= 2 && x.back() == '"') return x.substr(1, x.size() - 2);
  return x.substr(1);
}

void FlattenNumbers(const Json& x, std::vector<double>* out) {
  if (x.is_bool()) {
    out->push_back(x.b ? 1.0 : 0.0);
  } else if (x.is_number()) {
    out->push_back(x.number());
  } else if (x.is_array()) {
    for (const Json& y : x.items) FlattenNumbers(y, out);
  }
}

class Env {
 public:
  const Ident& Get(const std::string& name) const {
    auto it = ident.find(name);
    if (it == ident.end()) Fail("random variable '" + name + "' is used before it is defined");
    return it->second;
  }
  std::unordered_map<std::string, Ident> ident;
  std::unordered_map<std::string, std::vector<double>> value;
};

void ReadInputs(const Env& env, const Json& x, Action* a) {
  if (x.is_null() || (x.is_string() && x.s == "None")) {
    a->numbers.push_back(0.0);
  } else if (x.is_array()) {
    for (const Json& y : x.items) ReadInputs(env, y, a);
  } else if (IsRv(x)) {
    auto v = env.value.find(x.s);
    if (v != env.value.end()) a->numbers.insert(a->numbers.end(), v->second.begin(), v->second.end());
    auto d = env.ident.find(x.s);
    if (d != env.ident.end()) {
      a->operands.push_back(d->second);
    } else if (v == env.value.end()) {
      Fail("random variable '" + x.s + "' is used before it is defined");
    }
  } else if (x.is_string()) {
    a->strings.push_back(Literal(x.s));
  } else {
    FlattenNumbers(x, &a->numbers);
  }
}

void RvInputs(const Env& env, const Json& x, std::vector<Ident>* found) {
  if (x.is_array()) {
    for (const Json& y : x.items) RvInputs(env, y, found);
  } else if (IsRv(x)) {
    auto d = env.ident.find(x.s);
    if (d != env.ident.end()) found->push_back(d->second);
  }
}

std::vector<Ident> RvInputs(const Env& env, const Json& inputs) {
  std::vector<Ident> found;
  RvInputs(env, inputs, &found);
  return found;
}

int MaxDepth(const std::vector<Ident>& parents) {
  int d = -1;
  for (const Ident& p : parents) d = std::max(d, p.depth);
  return d;
}

void Generic(Env* env, const std::string& kind, const Json& inputs, const Json& attrs, const Json& outputs) {
  std::vector<Ident> parents = RvInputs(*env, inputs);
  std::string head = kind + "(";
  bool first_arg = true;
  auto add = [&](const std::string& s) {
    if (!first_arg) head += ",";
    head += s;
    first_arg = false;
  };
  for (const Ident& p : parents) add(p.text);
  for (const Json& a : attrs.items) {
    if (a.is_bool()) add(a.b ? "1" : "0");
    else if (a.is_int()) add(std::to_string(a.i));
  }
  head += ")";
  Ident first = parents.empty() ? Ident{} : parents[0];
  int depth = MaxDepth(parents) + 1;
  for (size_t k = 0; k < outputs.items.size(); ++k) {
    env->ident[outputs.items[k].s] = Ident{head + "#" + std::to_string(k), first.base, first.axis, first.part, depth};
  }
}

const std::string& FirstInput(const std::string& kind, const Json& inputs) {
  if (inputs.items.empty() || !IsRv(inputs.items[0])) Fail(kind + " needs a random variable as its first input");
  return inputs.items[0].s;
}

void DefinePure(Env* env, const std::string& kind, const Json& inputs, const Json& attrs, const Json& outputs,
                const Json* decision) {
  const auto& outs = outputs.items;
  if (kind == "GetSBlock") {
    if (attrs.items.empty() || !attrs.items[0].is_string() || outs.empty())
      Fail("GetSBlock needs a block name attribute and one output");
    const std::string& name = attrs.items[0].s;
    env->ident[outs[0].s] = Ident{name, name, -1, -1, 0};
  } else if (kind == "GetLoops") {
    Ident b = env->Get(FirstInput(kind, inputs));
    for (size_t i = 0; i < outs.size(); ++i)
      env->ident[outs[i].s] = Ident{b.text + "/" + std::to_string(i), b.base, static_cast<int>(i), -1, b.depth + 1};
  } else if (kind == "SamplePerfectTile" || kind == "SamplePartitionedTile") {
    bool is_list = decision && decision->is_array();
    for (size_t i = 0; i < outs.size(); ++i) {
      double v = 0.0;
      if (is_list && i < decision->items.size()) v = decision->items[i].number();
      env->value[outs[i].s] = {v};
    }
  } else if (kind == "SampleCategorical") {
    std::vector<double> v;
    bool has_candidates = !attrs.items.empty() && attrs.items[0].is_array();
    if (has_candidates && decision && decision->is_int() && decision->i >= 0 &&
        decision->i < static_cast<int64_t>(attrs.items[0].items.size())) {
      FlattenNumbers(attrs.items[0].items[decision->i], &v);
    }
    if (v.empty()) v.push_back(0.0);
    if (!outs.empty()) env->value[outs[0].s] = v;
  } else if (kind == "SampleComputeLocation") {
    Ident b = env->Get(FirstInput(kind, inputs));
    if (!outs.empty()) {
      env->ident[outs[0].s] = Ident{"loc(" + b.text + ")", b.base, -1, -1, b.depth + 1};
      double v = 0.0;
      if (decision && decision->is_bool()) v = decision->b ? 1.0 : 0.0;
      else if (decision && decision->is_number()) v = decision->number();
      env->value[outs[0].s] = {v};
    }
  } else {
    Generic(env, kind, inputs, attrs, outputs);
  }
}

void DefineOutputs(Env* env, const std::string& kind, const Json& inputs, const Json& attrs, const Json& outputs) {
  const auto& outs = outputs.items;
  if (outs.empty()) return;
  if (kind == "Split") {
    Ident loop = env->Get(FirstInput(kind, inputs));
    for (size_t j = 0; j < outs.size(); ++j)
      env->ident[outs[j].s] =
          Ident{loop.text + ".s" + std::to_string(j), loop.base, loop.axis, static_cast<int>(j), loop.depth + 1};
  } else if (kind == "Fuse") {
    std::vector<Ident> parts = RvInputs(*env, inputs);
    std::string text = "fuse(";
    for (size_t i = 0; i < parts.size(); ++i) text += (i ? "," : "") + parts[i].text;
    text += ")";
    Ident first = parts.empty() ? Ident{} : parts[0];
    env->ident[outs[0].s] = Ident{text, first.base, first.axis, -1, MaxDepth(parts) + 1};
  } else {
    Generic(env, kind, inputs, attrs, outputs);
  }
}

bool IsInstruction(const Json& inst) {
  if (!inst.is_array() || inst.items.size() != 4 || !inst.items[0].is_string()) return false;
  for (int k = 1; k < 4; ++k)
    if (!inst.items[k].is_array()) return false;
  for (const Json& o : inst.items[3].items)
    if (!o.is_string()) return false;
  return true;
}

}  // namespace

CanonicalTrace Canonicalize(const Json& trace) {
  if (!trace.is_array() || trace.items.size() != 2 || !trace.items[0].is_array())
    Fail("trace JSON must be [instructions, decisions]");
  const Json& insts = trace.items[0];
  for (const Json& inst : insts.items)
    if (!IsInstruction(inst)) Fail("bad instruction: expected [kind, inputs, attrs, outputs]");
  if (!trace.items[1].is_array()) Fail("trace decisions must be a list");
  std::unordered_map<int64_t, const Json*> decisions;
  for (const Json& d : trace.items[1].items) {
    if (!d.is_array() || d.items.size() != 2 || !d.items[0].is_number())
      Fail("decisions must be [inst_index, value] pairs");
    decisions[static_cast<int64_t>(d.items[0].number())] = &d.items[1];
  }
  CanonicalTrace out;
  out.num_insts = static_cast<int>(insts.items.size());
  Env env;
  int phase = 0;
  for (size_t idx = 0; idx < insts.items.size(); ++idx) {
    const Json& inst = insts.items[idx];
    const std::string& kind = inst.items[0].s;
    const Json &inputs = inst.items[1], &attrs = inst.items[2], &outputs = inst.items[3];
    if (kind == "EnterPostproc") phase = 1;
    if (IsPureKind(kind)) {
      auto d = decisions.find(static_cast<int64_t>(idx));
      DefinePure(&env, kind, inputs, attrs, outputs, d == decisions.end() ? nullptr : d->second);
      continue;
    }
    Action a;
    bool known = KindId(kind) != kUnkId || kind == "<unk>";
    a.kind = known ? kind : "<unk>";
    a.raw_kind = kind;
    a.phase = phase;
    a.inst_index = static_cast<int>(idx);
    FlattenNumbers(attrs, &a.numbers);
    for (const Json& s : attrs.items)
      if (s.is_string()) a.strings.push_back(s.s);
    Action in;
    for (const Json& x : inputs.items) ReadInputs(env, x, &in);
    a.operands = std::move(in.operands);
    a.numbers.insert(a.numbers.end(), in.numbers.begin(), in.numbers.end());
    a.strings.insert(a.strings.end(), in.strings.begin(), in.strings.end());
    if (!known) out.unknown_kinds[kind] += 1;
    out.actions.push_back(std::move(a));
    DefineOutputs(&env, kind, inputs, attrs, outputs);
  }
  return out;
}

CanonicalTrace Canonicalize(const std::string& trace_json) { return Canonicalize(ParseJson(trace_json)); }

}  // namespace cwm
