#include "tile_footprint.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <unordered_map>

namespace cwm {
namespace {

constexpr int kFootprintLevels = 5;  // FOOTPRINT_LEVELS
constexpr int kWidth = 2 + kFootprintLevels;
constexpr float kAbsent = -1.0f;  // ABSENT

[[noreturn]] void Bad(const std::string& what) { throw JsonError("tile_footprint: " + what); }

struct SplitOut {
  int source, position, arity;
  const Json* factor;  // the sampled variable (a string) or a literal
};

bool IsInstruction(const Json& x) {
  return x.is_array() && x.items.size() == 4 && x.items[0].is_string() && x.items[1].is_array() &&
         x.items[2].is_array() && x.items[3].is_array();
}

// Python's `fuse_inputs == outputs[:len(fuse_inputs)]` for lists of loop names.
bool IsPrefix(const Json& fuse_inputs, const Json& outputs) {
  if (fuse_inputs.items.size() > outputs.items.size()) return false;
  for (size_t k = 0; k < fuse_inputs.items.size(); ++k) {
    const Json &a = fuse_inputs.items[k], &b = outputs.items[k];
    if (!a.is_string() || !b.is_string() || a.s != b.s) return false;
  }
  return true;
}

// The spec's parallel_loops.
int ParallelLoops(int n_nest, int outer, const std::vector<std::pair<int, int>>& events) {
  const std::pair<int, int>* best = nullptr;
  for (const auto& e : events)
    if (n_nest - outer + 1 <= e.first && e.first <= n_nest && (!best || e.first > best->first)) best = &e;
  if (!best) return 0;
  return best->first == n_nest ? best->second : n_nest - best->first + 1;
}

// The spec's tiled_nest; false where it returns None.
bool FindTiledNest(const Json& trace, TiledNest* out) {
  if (!trace.is_array() || trace.items.size() != 2 || !trace.items[0].is_array() || !trace.items[1].is_array())
    Bad("trace JSON must be [instructions, decisions]");
  const std::vector<Json>& insts = trace.items[0].items;
  std::unordered_map<int64_t, const Json*> decided;
  for (const Json& d : trace.items[1].items) {
    if (!d.is_array() || d.items.size() != 2 || !d.items[0].is_int()) Bad("a decision must be [instruction index, value]");
    decided[d.items[0].i] = &d.items[1];
  }
  std::unordered_map<std::string, std::string> names;
  std::unordered_map<std::string, const Json*> loops_of;  // the first GetLoops of each block before post-processing
  std::unordered_map<std::string, int64_t> factor_of;
  std::unordered_map<std::string, SplitOut> split_of;
  std::string block;
  bool have_block = false, have_nest = false, postproc = false;
  std::vector<int> arity;
  std::vector<std::pair<int, int>> events;  // (loops, fused for Parallel) of each post-processing GetLoops
  for (size_t i = 0; i < insts.size(); ++i) {
    const Json& inst = insts[i];
    if (!IsInstruction(inst)) Bad("an instruction must be [kind, inputs, attrs, outputs]");
    const std::string& kind = inst.items[0].s;
    const Json &inputs = inst.items[1], &attrs = inst.items[2], &outputs = inst.items[3];
    const bool first_input = !inputs.items.empty() && inputs.items[0].is_string();
    if (kind == "GetSBlock") {
      if (!outputs.items.empty() && outputs.items[0].is_string() && !attrs.items.empty() && attrs.items[0].is_string())
        names[outputs.items[0].s] = attrs.items[0].s;
    } else if (kind == "Annotate" && attrs.items.size() == 1 && attrs.items[0].is_string() &&
               attrs.items[0].s == "meta_schedule.tiling_structure" && !have_block) {
      if (!first_input) Bad("an Annotate without its block");
      block = inputs.items[0].s;
      have_block = true;
    } else if (kind == "GetLoops" && !postproc) {
      if (first_input) loops_of.emplace(inputs.items[0].s, &outputs);
    } else if (kind == "SamplePerfectTile" && decided.count(static_cast<int64_t>(i))) {
      const Json& values = *decided[static_cast<int64_t>(i)];
      for (size_t k = 0; k < std::min(outputs.items.size(), values.items.size()); ++k)
        if (outputs.items[k].is_string() && values.items[k].is_number())
          factor_of[outputs.items[k].s] = values.items[k].is_int() ? values.items[k].i
                                                                   : static_cast<int64_t>(values.items[k].d);
    } else if (kind == "Split" && have_block && first_input && loops_of.count(block)) {
      const std::vector<Json>& loops = loops_of[block]->items;
      auto it = std::find_if(loops.begin(), loops.end(),
                             [&](const Json& l) { return l.is_string() && l.s == inputs.items[0].s; });
      if (it == loops.end()) continue;
      const int source = static_cast<int>(it - loops.begin());
      const size_t n = std::min(inputs.items.size() - 1, outputs.items.size());
      for (size_t p = 0; p < n; ++p)
        if (outputs.items[p].is_string())
          split_of[outputs.items[p].s] = {source, static_cast<int>(p), static_cast<int>(outputs.items.size()),
                                          &inputs.items[p + 1]};
    } else if (kind == "Reorder" && !have_nest && !inputs.items.empty() &&
               std::all_of(inputs.items.begin(), inputs.items.end(),
                           [&](const Json& v) { return v.is_string() && split_of.count(v.s); })) {
      have_nest = true;
      for (const Json& v : inputs.items) {
        const SplitOut& s = split_of[v.s];
        if (!s.factor->is_string() || !factor_of.count(s.factor->s)) return false;
        out->loops.push_back({s.source, s.position, factor_of[s.factor->s]});
        arity.push_back(s.arity);
      }
    } else if (kind == "EnterPostproc") {
      postproc = true;
    } else if (postproc && kind == "GetLoops") {
      int fused = 0;
      if (i + 2 < insts.size() && IsInstruction(insts[i + 1]) && IsInstruction(insts[i + 2]) &&
          insts[i + 1].items[0].s == "Fuse" && insts[i + 2].items[0].s == "Parallel" &&
          IsPrefix(insts[i + 1].items[1], outputs))
        fused = static_cast<int>(insts[i + 1].items[1].items.size());
      events.emplace_back(static_cast<int>(outputs.items.size()), fused);
    }
  }
  if (!have_block || out->loops.empty()) return false;
  const int n_nest = static_cast<int>(out->loops.size());
  int outer = n_nest;
  for (int k = 0; k < n_nest; ++k)
    if (arity[k] != arity[0]) {
      outer = k;
      break;
    }
  out->parallel = ParallelLoops(n_nest, outer, events);
  auto name = names.find(block);
  out->named = name != names.end();
  if (out->named) out->name = name->second;
  return true;
}

// The spec's footprint_bytes.
double FootprintBytes(const std::vector<int64_t>& below, const std::vector<std::vector<TileAccess>>& buffers) {
  double total = 0.0;
  for (const std::vector<TileAccess>& accesses : buffers) {
    double best = 0.0;
    for (const TileAccess& a : accesses) {
      double size = a.elem_bytes;
      const size_t dims = std::min(a.affine.size(), a.shape.size());
      for (size_t d = 0; d < dims; ++d) {
        const int64_t full = a.shape[d];
        if (!a.affine[d] || a.coefs[d].size() != below.size()) {
          size *= static_cast<double>(full);
        } else {
          int64_t span = a.extents[d];
          for (size_t v = 0; v < below.size(); ++v) span += std::llabs(a.coefs[d][v]) * (below[v] - 1);
          size *= static_cast<double>(std::min(full, span));
        }
      }
      best = std::max(best, size);
    }
    total += best;
  }
  return total;
}

// The spec's columns.
void Columns(const TiledNest& nest, const TaskFacts& facts, int cores, float* out) {
  std::fill_n(out, kWidth, kAbsent);
  if (!nest.found || !nest.named) return;
  int64_t extent = 1;
  for (int k = 0; k < nest.parallel; ++k) extent *= nest.loops[k].factor;
  cores = std::max(1, cores);
  const int64_t waves = (extent + cores - 1) / cores;
  out[0] = static_cast<float>(std::log2(static_cast<double>(extent)));  // libm double log2, as the spec
  out[1] = static_cast<float>(1.0 - static_cast<double>(extent) / static_cast<double>(waves * cores));
  const TileBlockFacts* block = facts.Find(nest.name);
  if (!block) return;
  const size_t n_vars = block->extents.size();
  for (const NestLoop& l : nest.loops)
    if (l.source < 0 || static_cast<size_t>(l.source) >= n_vars) return;
  std::vector<size_t> cuts;  // after each group but the last (the spec's groups)
  for (size_t k = 1; k < nest.loops.size(); ++k) {
    const NestLoop &prev = nest.loops[k - 1], &cur = nest.loops[k];
    if (!(prev.position == cur.position && prev.source < cur.source)) cuts.push_back(k);
  }
  for (size_t g = 0; g < cuts.size() && g < static_cast<size_t>(kFootprintLevels); ++g) {
    std::vector<int64_t> below(n_vars, 1);
    for (size_t k = cuts[g]; k < nest.loops.size(); ++k) below[nest.loops[k].source] *= nest.loops[k].factor;
    out[2 + g] = static_cast<float>(std::log2(std::max(1.0, FootprintBytes(below, block->buffers))));
  }
}

std::vector<int64_t> Ints(const Json& x, const char* what) {
  if (!x.is_array()) Bad(std::string(what) + " must be a list of integers");
  std::vector<int64_t> out;
  for (const Json& v : x.items) {
    if (!v.is_int()) Bad(std::string(what) + " must be a list of integers");
    out.push_back(v.i);
  }
  return out;
}

}  // namespace

const TileBlockFacts* TaskFacts::Find(const std::string& name) const {
  for (const auto& b : blocks)
    if (b.first == name) return &b.second;
  return nullptr;
}

TaskFacts ParseTaskFacts(const Json& facts) {
  const Json* blocks = cwm::Find(facts, "blocks");
  if (!blocks || blocks->type != Json::Type::kObject) Bad("task facts must be {\"blocks\": {name: ...}}");
  TaskFacts out;
  for (const auto& [name, b] : blocks->fields) {
    TileBlockFacts block;
    const Json* extents = cwm::Find(b, "extents");
    const Json* buffers = cwm::Find(b, "buffers");
    if (!extents || !buffers || !buffers->is_array()) Bad("block " + name + " needs 'extents' and 'buffers'");
    block.extents = Ints(*extents, "extents");
    for (const Json& buffer : buffers->items) {
      if (!buffer.is_array()) Bad("a buffer must be a list of accesses");
      std::vector<TileAccess> accesses;
      for (const Json& access : buffer.items) {
        if (!access.is_array() || access.items.size() != 3 || !access.items[0].is_number() || !access.items[2].is_array())
          Bad("an access must be [bytes per element, shape, dims]");
        TileAccess a;
        a.elem_bytes = access.items[0].number();
        a.shape = Ints(access.items[1], "shape");
        for (const Json& dim : access.items[2].items) {
          if (!dim.is_array() || dim.items.size() != 2 || !dim.items[1].is_int())
            Bad("a dim must be [coefficients or null, extent]");
          a.affine.push_back(!dim.items[0].is_null());
          a.coefs.push_back(dim.items[0].is_null() ? std::vector<int64_t>{} : Ints(dim.items[0], "coefficients"));
          a.extents.push_back(dim.items[1].i);
        }
        accesses.push_back(std::move(a));
      }
      block.buffers.push_back(std::move(accesses));
    }
    out.blocks.emplace_back(name, std::move(block));
  }
  return out;
}

TaskFacts ParseTaskFacts(const std::string& text) { return ParseTaskFacts(ParseJson(text)); }

TiledNest ReadTiledNest(const Json& trace) {
  TiledNest nest;
  nest.found = FindTiledNest(trace, &nest);
  return nest;
}

FeatureBatch FeaturizeBatchWithNests(const std::vector<std::string>& traces, int num_threads,
                                     std::vector<TiledNest>* nests) {
  if (!nests) return FeaturizeBatch(traces, num_threads);
  nests->assign(traces.size(), TiledNest{});
  return FeaturizeBatch(traces, num_threads,
                        [nests](int i, const Json& trace) { (*nests)[static_cast<size_t>(i)] = ReadTiledNest(trace); });
}

int NumTileFootprint() { return kWidth; }

void TileFootprintOfNests(const std::vector<TiledNest>& nests, const TaskFacts& facts, int cores, float* out) {
  for (size_t b = 0; b < nests.size(); ++b) Columns(nests[b], facts, cores, out + b * kWidth);
}

void TileFootprint(const std::vector<std::string>& traces, const TaskFacts& facts, int cores, float* out) {
  for (size_t b = 0; b < traces.size(); ++b) {
    try {
      Columns(ReadTiledNest(ParseJson(traces[b])), facts, cores, out + b * kWidth);
    } catch (const JsonError& e) {
      throw JsonError("trace " + std::to_string(b) + ": " + e.what());
    }
  }
}

}  // namespace cwm
