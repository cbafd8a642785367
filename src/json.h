// A small JSON reader for TVM's trace JSON: values, arrays, objects, no writer.
// Numbers keep Python's distinction: a token with '.', 'e' or 'E' is a double,
// anything else an integer (as json.loads does).
#pragma once
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cwm {

struct Json {
  enum class Type { kNull, kBool, kInt, kDouble, kString, kArray, kObject };
  Type type = Type::kNull;
  bool b = false;
  int64_t i = 0;
  double d = 0.0;
  std::string s;
  std::vector<Json> items;                            // array elements
  std::vector<std::pair<std::string, Json>> fields;  // object members, in order

  bool is_null() const { return type == Type::kNull; }
  bool is_bool() const { return type == Type::kBool; }
  bool is_int() const { return type == Type::kInt; }
  bool is_number() const { return type == Type::kInt || type == Type::kDouble; }
  bool is_string() const { return type == Type::kString; }
  bool is_array() const { return type == Type::kArray; }
  double number() const { return type == Type::kInt ? static_cast<double>(i) : d; }
};

class JsonError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Parses a whole document; throws JsonError with the byte offset on bad input.
Json ParseJson(const std::string& text);
// The member `key` of an object; nullptr if absent or `object` is not an object.
const Json* Find(const Json& object, const std::string& key);

}  // namespace cwm
