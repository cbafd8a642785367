// Reader of the safetensors format: an 8-byte little-endian header length N, N bytes of
// JSON header {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}},
// then the raw little-endian tensor data (offsets relative to the end of the header).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cwm {

struct TensorF32 {
  std::vector<int64_t> shape;
  std::vector<float> data;  // row-major
};

// All tensors of a file; only dtype F32 is supported. Throws ScorerError naming the file.
std::map<std::string, TensorF32> ReadSafetensors(const std::string& path);
// The same from the file's bytes; `name` is used in error messages.
std::map<std::string, TensorF32> ParseSafetensors(const std::string& bytes, const std::string& name);

}  // namespace cwm
