#include "scorer/safetensors.h"

#include <cstring>

#include "scorer/error.h"
#include "scorer/json_util.h"

namespace cwm {

std::map<std::string, TensorF32> ParseSafetensors(const std::string& bytes, const std::string& name) {
  auto fail = [&](const std::string& what) { throw ScorerError(name + ": not a safetensors file: " + what); };
  const uint16_t probe = 1;
  if (*reinterpret_cast<const uint8_t*>(&probe) != 1) fail("this reader needs a little-endian host");
  if (bytes.size() < 8) fail("shorter than its 8-byte header length");
  uint64_t n = 0;
  for (int k = 7; k >= 0; --k) n = (n << 8) | static_cast<uint8_t>(bytes[k]);
  if (n > bytes.size() - 8) fail("header length " + std::to_string(n) + " exceeds the file");
  const Json header = ParseJsonIn(bytes.substr(8, n), name + " header");
  if (header.type != Json::Type::kObject) fail("header is not a JSON object");
  const size_t data_start = 8 + n, data_size = bytes.size() - data_start;
  std::map<std::string, TensorF32> out;
  for (const auto& kv : header.fields) {
    if (kv.first == "__metadata__") continue;
    const Json* dtype = Find(kv.second, "dtype");
    const Json* shape = Find(kv.second, "shape");
    const Json* offsets = Find(kv.second, "data_offsets");
    if (!dtype || !dtype->is_string() || !shape || !shape->is_array() || !offsets || !offsets->is_array() ||
        offsets->items.size() != 2 || !offsets->items[0].is_int() || !offsets->items[1].is_int())
      fail("bad entry for tensor '" + kv.first + "'");
    if (dtype->s != "F32")
      throw ScorerError(name + ": tensor '" + kv.first + "' has dtype " + dtype->s + ", only F32 is supported");
    TensorF32 t;
    int64_t count = 1;
    for (const Json& d : shape->items) {
      if (!d.is_int() || d.i < 0) fail("bad shape for tensor '" + kv.first + "'");
      t.shape.push_back(d.i);
      count *= d.i;
    }
    const int64_t begin = offsets->items[0].i, end = offsets->items[1].i;
    if (begin < 0 || end < begin || static_cast<uint64_t>(end) > data_size ||
        end - begin != count * static_cast<int64_t>(sizeof(float)))
      fail("bad data_offsets for tensor '" + kv.first + "'");
    t.data.resize(static_cast<size_t>(count));
    if (count) std::memcpy(t.data.data(), bytes.data() + data_start + begin, static_cast<size_t>(end - begin));
    out.emplace(kv.first, std::move(t));
  }
  return out;
}

std::map<std::string, TensorF32> ReadSafetensors(const std::string& path) {
  return ParseSafetensors(ReadFile(path), path);
}

}  // namespace cwm
