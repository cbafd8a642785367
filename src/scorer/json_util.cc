#include "json_util.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "scorer/error.h"

namespace cwm {
namespace {

void DumpString(const std::string& s, std::string* out) {
  out->push_back('"');
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out->push_back('\\'), out->push_back(static_cast<char>(c));
    } else if (c == '\n') {
      *out += "\\n";
    } else if (c == '\t') {
      *out += "\\t";
    } else if (c == '\r') {
      *out += "\\r";
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      *out += buf;
    } else {
      out->push_back(static_cast<char>(c));  // UTF-8 passes through
    }
  }
  out->push_back('"');
}

void Dump(const Json& v, std::string* out) {
  switch (v.type) {
    case Json::Type::kNull: *out += "null"; break;
    case Json::Type::kBool: *out += v.b ? "true" : "false"; break;
    case Json::Type::kInt: *out += std::to_string(v.i); break;
    case Json::Type::kDouble: {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.17g", v.d);
      std::string s = buf;
      if (s.find_first_of(".eEni") == std::string::npos) s += ".0";  // stays a double when re-read
      *out += s;
      break;
    }
    case Json::Type::kString: DumpString(v.s, out); break;
    case Json::Type::kArray:
      out->push_back('[');
      for (size_t k = 0; k < v.items.size(); ++k) {
        if (k) out->push_back(',');
        Dump(v.items[k], out);
      }
      out->push_back(']');
      break;
    case Json::Type::kObject:
      out->push_back('{');
      for (size_t k = 0; k < v.fields.size(); ++k) {
        if (k) out->push_back(',');
        DumpString(v.fields[k].first, out);
        out->push_back(':');
        Dump(v.fields[k].second, out);
      }
      out->push_back('}');
      break;
  }
}

}  // namespace

Json ParseJsonIn(const std::string& text, const std::string& where) {
  try {
    return ParseJson(text);
  } catch (const JsonError& e) {
    std::string msg = e.what();
    const std::string prefix = "trace is not valid JSON: ";  // json.cc's wording, written for traces
    if (msg.compare(0, prefix.size(), prefix) == 0) msg = msg.substr(prefix.size());
    throw ScorerError(where + ": not valid JSON: " + msg);
  }
}

std::string NonFiniteToNull(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (size_t p = 0; p < text.size(); ++p) {
    const char c = text[p];
    if (in_string) {
      out.push_back(c);
      if (c == '\\' && p + 1 < text.size()) out.push_back(text[++p]);
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    bool replaced = false;
    for (const char* token : {"NaN", "Infinity", "-Infinity"}) {
      const size_t n = std::char_traits<char>::length(token);
      if (text.compare(p, n, token) == 0) {
        out += "null";
        p += n - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out.push_back(c);
  }
  return out;
}

std::string DumpJson(const Json& value) {
  std::string out;
  Dump(value, &out);
  return out;
}

std::string ReadFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw ScorerError(path + ": no such file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ScorerError(path + ": cannot open file");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace cwm
