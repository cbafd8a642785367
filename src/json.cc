#include "json.h"

#include <cerrno>
#include <cstdlib>

namespace cwm {
namespace {

class Parser {
 public:
  explicit Parser(const std::string& text) : t_(text) {}

  Json Document() {
    Json v = Value(0);
    Space();
    if (p_ != t_.size()) Fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    throw JsonError("trace is not valid JSON: " + what + " at offset " + std::to_string(p_));
  }
  void Space() {
    while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\n' || t_[p_] == '\t' || t_[p_] == '\r')) ++p_;
  }
  bool Eat(char c) {
    Space();
    if (p_ < t_.size() && t_[p_] == c) {
      ++p_;
      return true;
    }
    return false;
  }
  void Expect(char c) {
    if (!Eat(c)) Fail(std::string("expected '") + c + "'");
  }
  void Word(const char* w) {
    for (const char* c = w; *c; ++c, ++p_)
      if (p_ >= t_.size() || t_[p_] != *c) Fail("bad literal");
  }

  Json Value(int depth) {
    if (depth > 256) Fail("nesting too deep");
    Space();
    if (p_ >= t_.size()) Fail("unexpected end");
    Json v;
    char c = t_[p_];
    if (c == '[') {
      ++p_;
      v.type = Json::Type::kArray;
      if (Eat(']')) return v;
      do v.items.push_back(Value(depth + 1));
      while (Eat(','));
      Expect(']');
    } else if (c == '{') {
      ++p_;
      v.type = Json::Type::kObject;
      if (Eat('}')) return v;
      do {
        Space();
        if (p_ >= t_.size() || t_[p_] != '"') Fail("expected a key");
        std::string key = String();
        Expect(':');
        v.fields.emplace_back(std::move(key), Value(depth + 1));
      } while (Eat(','));
      Expect('}');
    } else if (c == '"') {
      v.type = Json::Type::kString;
      v.s = String();
    } else if (c == 't') {
      Word("true");
      v.type = Json::Type::kBool;
      v.b = true;
    } else if (c == 'f') {
      Word("false");
      v.type = Json::Type::kBool;
    } else if (c == 'n') {
      Word("null");
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      Number(&v);
    } else {
      Fail("unexpected character");
    }
    return v;
  }

  void Number(Json* v) {
    size_t start = p_;
    bool is_double = false;
    if (t_[p_] == '-') ++p_;
    while (p_ < t_.size()) {
      char c = t_[p_];
      if (c >= '0' && c <= '9') {
        ++p_;
      } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
        is_double = true;
        ++p_;
      } else {
        break;
      }
    }
    std::string tok = t_.substr(start, p_ - start);
    char* end = nullptr;
    errno = 0;
    if (!is_double) {
      long long x = std::strtoll(tok.c_str(), &end, 10);
      if (errno == 0 && end && *end == '\0' && tok != "-") {
        v->type = Json::Type::kInt;
        v->i = x;
        return;
      }
      errno = 0;  // out of int64 range: Python keeps a big int; a double is close enough here
    }
    double x = std::strtod(tok.c_str(), &end);
    if (!end || *end != '\0') Fail("bad number");
    v->type = Json::Type::kDouble;
    v->d = x;
  }

  static void AppendUtf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  uint32_t Hex4() {
    if (p_ + 4 > t_.size()) Fail("bad \\u escape");
    uint32_t cp = 0;
    for (int k = 0; k < 4; ++k) {
      char c = t_[p_++];
      cp <<= 4;
      if (c >= '0' && c <= '9') cp |= c - '0';
      else if (c >= 'a' && c <= 'f') cp |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') cp |= c - 'A' + 10;
      else Fail("bad \\u escape");
    }
    return cp;
  }

  std::string String() {
    ++p_;  // opening quote
    std::string out;
    while (true) {
      if (p_ >= t_.size()) Fail("unterminated string");
      char c = t_[p_++];
      if (c == '"') return out;
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (p_ >= t_.size()) Fail("unterminated escape");
      char e = t_[p_++];
      switch (e) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          uint32_t cp = Hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && p_ + 1 < t_.size() && t_[p_] == '\\' && t_[p_ + 1] == 'u') {
            p_ += 2;
            uint32_t lo = Hex4();
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          AppendUtf8(cp, &out);
          break;
        }
        default: Fail("bad escape");
      }
    }
  }

  const std::string& t_;
  size_t p_ = 0;
};

}  // namespace

Json ParseJson(const std::string& text) { return Parser(text).Document(); }

const Json* Find(const Json& object, const std::string& key) {
  if (object.type != Json::Type::kObject) return nullptr;
  for (const auto& kv : object.fields)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

}  // namespace cwm
