// Helpers over cwm::Json (src/json.h) for the scorer: parse with context, dump.
#pragma once
#include <string>

#include "json.h"

namespace cwm {

// Find (object lookup) is in json.h: the core reads objects too (forest.cc).
// Parses `text`; a JsonError becomes a ScorerError "<where>: not valid JSON: ...".
Json ParseJsonIn(const std::string& text, const std::string& where);
// Python's json.dumps writes NaN, Infinity and -Infinity (e.g. metrics in manifest.json);
// strict JSON has no such tokens. Returns `text` with them (outside strings) replaced by null.
std::string NonFiniteToNull(const std::string& text);
// Compact JSON text of a value (doubles with 17 significant digits: they round-trip).
std::string DumpJson(const Json& value);
std::string ReadFile(const std::string& path);  // throws ScorerError naming the path

}  // namespace cwm
