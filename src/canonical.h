// Canonical action sequences from trace JSON. The specification is
// python/cwm/actions/canonical.py; this is a line-by-line port of its rules.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "json.h"

namespace cwm {

struct Ident {
  std::string text;
  std::string base;
  int axis = -1;
  int part = -1;
  int depth = 0;
};

struct Action {
  std::string kind;      // vocabulary kind or "<unk>"
  std::string raw_kind;  // as written in the trace
  std::vector<Ident> operands;
  std::vector<double> numbers;
  std::vector<std::string> strings;
  int phase = 0;
  int inst_index = 0;
};

struct CanonicalTrace {
  std::vector<Action> actions;
  std::map<std::string, int> unknown_kinds;
  int num_insts = 0;
  int num_unknown() const {
    int n = 0;
    for (const auto& kv : unknown_kinds) n += kv.second;
    return n;
  }
};

class TraceFormatError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

CanonicalTrace Canonicalize(const Json& trace);
CanonicalTrace Canonicalize(const std::string& trace_json);

}  // namespace cwm
