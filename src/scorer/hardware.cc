#include "scorer/hardware.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "scorer/error.h"
#include "scorer/json_util.h"

namespace cwm {
namespace {

// Python's float(t.get(key, 0) or 0).
double Field(const Json& t, const char* key) {
  const Json* v = Find(t, key);
  if (!v || v->is_null()) return 0.0;
  if (v->is_bool()) return v->b ? 1.0 : 0.0;
  if (v->is_number()) return v->number();
  if (v->is_string()) {
    if (v->s.empty()) return 0.0;
    char* end = nullptr;
    errno = 0;
    double x = std::strtod(v->s.c_str(), &end);
    while (end && (*end == ' ' || *end == '\t' || *end == '\n')) ++end;
    if (end && *end == '\0' && errno == 0) return x;
  } else if (v->items.empty() && v->fields.empty()) {
    return 0.0;  // an empty list or object is falsy
  }
  throw ScorerError(std::string("target field '") + key + "' is not a number");
}

}  // namespace

HardwareFeatures HardwareFeaturesOf(const Json& target) {
  if (target.is_string()) return HardwareFeaturesOf(target.s);
  if (target.type != Json::Type::kObject) throw ScorerError("target must be a JSON object or its JSON text");
  const Json* kind = Find(target, "kind");
  const std::string k = kind && kind->is_string() ? kind->s : "";
  return {static_cast<float>(Field(target, "num-cores")), k == "llvm" ? 1.0f : 0.0f,
          (k == "cuda" || k == "rocm") ? 1.0f : 0.0f,
          static_cast<float>(std::log2(1.0 + Field(target, "max_threads_per_block"))),
          static_cast<float>(std::log2(1.0 + Field(target, "l2_cache_size_bytes")))};
}

HardwareFeatures HardwareFeaturesOf(const std::string& target_json) {
  Json t = ParseJsonIn(target_json, "target");
  if (t.is_string()) throw ScorerError("target must be a JSON object or its JSON text");
  return HardwareFeaturesOf(t);
}

}  // namespace cwm
