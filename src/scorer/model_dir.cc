#include "scorer/model_dir.h"

#include <cmath>
#include <filesystem>

#include "action_stats.h"
#include "featurize.h"
#include "scorer/error.h"
#include "scorer/hardware.h"
#include "scorer/json_util.h"
#include "scorer/safetensors.h"
#include "scorer/trace_columns.h"
#include "trace_structure.h"
#include "vocab.h"

namespace cwm {
namespace {

const char* const kHardwareNames[kNumHardwareFeatures] = {"num_cores", "is_cpu", "is_gpu",
                                                          "log2_max_threads_per_block", "log2_l2_cache_bytes"};

// cfg[key], a positive integer; `section` names cfg in messages ("transition", "sequence_head.config").
int IntField(const Json& cfg, const char* key, const std::string& where, const char* section = "transition") {
  const Json* v = Find(cfg, key);
  if (!v || !v->is_int() || v->i <= 0 || v->i > (1 << 24))
    throw ScorerError(where + ": " + section + "." + key + " must be a positive integer");
  return static_cast<int>(v->i);
}

std::vector<float> Take(std::map<std::string, TensorF32>& t, const std::string& name, std::vector<int64_t> shape,
                        const std::string& where) {
  auto it = t.find(name);
  if (it == t.end()) throw ScorerError(where + ": missing tensor '" + name + "'");
  if (it->second.shape != shape) {
    std::string want, got;
    for (int64_t d : shape) want += (want.empty() ? "" : ", ") + std::to_string(d);
    for (int64_t d : it->second.shape) got += (got.empty() ? "" : ", ") + std::to_string(d);
    throw ScorerError(where + ": tensor '" + name + "' has shape (" + got + "), the manifest implies (" + want + ")");
  }
  return std::move(it->second.data);
}

// The tensors of an ActionEmbedding module at `prefix` ("embed": the TransH's, "actions": the
// sequence head's) into w, whose hidden, hash_buckets and small_vocab are set.
void TakeActionEmbedding(std::map<std::string, TensorF32>& t, const std::string& prefix, TransitionWeights& w,
                         const std::string& where) {
  const int64_t H = w.hidden;
  w.num_kinds = static_cast<int>(ActionKinds().size());
  w.kind = Take(t, prefix + ".kind.weight", {w.num_kinds, H}, where);
  w.hashed.clear(), w.small.clear();
  for (int j = 0; j < kHashColumns; ++j) {
    auto part = Take(t, prefix + ".hashed." + std::to_string(j) + ".weight", {w.hash_buckets, H}, where);
    w.hashed.insert(w.hashed.end(), part.begin(), part.end());
  }
  for (int j = 0; j < kSmallColumns; ++j) {
    auto part = Take(t, prefix + ".small." + std::to_string(j) + ".weight", {w.small_vocab, H}, where);
    w.small.insert(w.small.end(), part.begin(), part.end());
  }
  w.numbers_w = Take(t, prefix + ".numbers.weight", {H, kNumNumbers}, where);
  w.numbers_b = Take(t, prefix + ".numbers.bias", {H}, where);
}

double PositiveNumber(const Json& entry, const char* key, const std::string& where) {
  const Json* v = Find(entry, key);
  if (!v || !v->is_number() || !(v->number() > 0) || !std::isfinite(v->number()))
    throw ScorerError(where + ": sequence_head." + key + " must be a positive number");
  return v->number();
}

// The v6 head: the manifest's "sequence_head" entry and sequence.safetensors (the PyTorch module
// of cwm.model.baselines.sequence_model, a one-layer GRU: the only kind the native core scores).
SequenceHeadDir ReadSequenceHead(const std::string& dir, const Json& m, const std::string& manifest_path) {
  namespace fs = std::filesystem;
  const Json* entry = Find(m, "sequence_head");
  if (!entry || entry->type != Json::Type::kObject)
    throw ScorerError(manifest_path + ": a v6 model without its manifest's sequence_head");
  const Json* cfg = Find(*entry, "config");
  if (!cfg || cfg->type != Json::Type::kObject) throw ScorerError(manifest_path + ": no sequence_head.config");
  const Json* encoder = Find(*cfg, "encoder");
  const Json* layers = Find(*cfg, "layers");
  if (!encoder || !encoder->is_string() || encoder->s != "gru" || !layers || !layers->is_int() || layers->i != 1)
    throw ScorerError(manifest_path + ": this scorer scores a one-layer GRU sequence head, not " +
                      (layers ? DumpJson(*layers) : "?") + " x " + (encoder ? DumpJson(*encoder) : "?"));
  SequenceHeadDir head;
  head.weight = PositiveNumber(*entry, "weight", manifest_path);
  if (!(head.weight < 1)) throw ScorerError(manifest_path + ": sequence_head.weight must be in (0, 1)");
  head.ranker_spread = PositiveNumber(*entry, "ranker_spread", manifest_path);
  head.sequence_spread = PositiveNumber(*entry, "sequence_spread", manifest_path);
  SequenceWeights& w = head.weights;
  TransitionWeights& e = w.embed;
  w.dim = e.dim = e.hidden = IntField(*cfg, "dim", manifest_path, "sequence_head.config");
  e.hash_buckets = IntField(*cfg, "hash_buckets", manifest_path, "sequence_head.config");
  e.small_vocab = IntField(*cfg, "small_vocab", manifest_path, "sequence_head.config");

  const std::string path = (fs::path(dir) / "sequence.safetensors").string();
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw ScorerError(dir + ": the manifest names a sequence head but sequence.safetensors is missing");
  auto t = ReadSafetensors(path);
  const int64_t D = w.dim;
  TakeActionEmbedding(t, "actions", e, path);
  w.ln_w = Take(t, "norm.weight", {D}, path);
  w.ln_b = Take(t, "norm.bias", {D}, path);
  w.w_ih = Take(t, "seq.weight_ih_l0", {3 * D, D}, path);
  w.w_hh = Take(t, "seq.weight_hh_l0", {3 * D, D}, path);
  w.b_ih = Take(t, "seq.bias_ih_l0", {3 * D}, path);
  w.b_hh = Take(t, "seq.bias_hh_l0", {3 * D}, path);
  w.head_w = Take(t, "head.0.weight", {D, 2 * D}, path);
  w.head_b = Take(t, "head.0.bias", {D}, path);
  w.out_w = Take(t, "head.3.weight", {1, D}, path);
  w.out_b = Take(t, "head.3.bias", {1}, path)[0];
  try {
    w.Prepare();
  } catch (const std::invalid_argument& err) {
    throw ScorerError(path + ": " + err.what());
  }
  return head;
}

}  // namespace

double SequenceHeadDir::Blend(double ranker_margin, double sequence_score) const {
  const double ratio = ranker_spread / sequence_spread;  // SequenceBlend.__call__'s order of operations
  return (1.0 - weight) * ranker_margin + weight * ratio * sequence_score;
}

ModelDir ReadModelDir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw ScorerError(dir + ": no such model directory");
  const std::string manifest_path = (fs::path(dir) / "manifest.json").string();
  if (!fs::is_regular_file(manifest_path, ec))
    throw ScorerError(dir + " is not a CWM model directory (no manifest.json)");
  const Json m = ParseJsonIn(NonFiniteToNull(ReadFile(manifest_path)), manifest_path);  // metrics can be NaN
  const Json* format = Find(m, "format");
  const Json* version = Find(m, "version");
  if (!format || !format->is_string() || format->s != kModelFormat || !version || !version->is_int() ||
      version->i < kOldestModelVersion || version->i > kModelVersion) {
    std::string reads;  // "v3/v4/v5/v6", as world_model.py says it
    for (int v = kOldestModelVersion; v <= kModelVersion; ++v) reads += (reads.empty() ? "v" : "/v") + std::to_string(v);
    throw ScorerError(dir + ": model format " + (format ? DumpJson(*format) : "?") + " v" +
                      (version ? DumpJson(*version) : "?") + ", this scorer reads " + kModelFormat + " " + reads);
  }
  const Json* kinds = Find(m, "action_kinds");
  bool same_kinds = kinds && kinds->is_array() && kinds->items.size() == ActionKinds().size();
  for (size_t k = 0; same_kinds && k < kinds->items.size(); ++k)
    same_kinds = kinds->items[k].is_string() && kinds->items[k].s == ActionKinds()[k];
  if (!same_kinds) throw ScorerError(dir + ": the model was trained with another action vocabulary; retrain it");

  ModelDir out;
  out.path = dir;
  out.version = static_cast<int>(version->i);
  const Json* cfg = Find(m, "transition");
  if (!cfg || cfg->type != Json::Type::kObject) throw ScorerError(manifest_path + ": no transition config");
  TransitionWeights& w = out.transition;
  w.dim = IntField(*cfg, "dim", manifest_path);
  w.hidden = IntField(*cfg, "hidden", manifest_path);
  w.hash_buckets = IntField(*cfg, "hash_buckets", manifest_path);
  w.small_vocab = IntField(*cfg, "small_vocab", manifest_path);
  const Json* norm = Find(*cfg, "normalize_state");
  if (!norm || !norm->is_bool()) throw ScorerError(manifest_path + ": transition.normalize_state must be a boolean");
  w.normalize_state = norm->b;
  const Json* reads_state = Find(*cfg, "state_dependent");  // absent in models saved before it existed
  if (reads_state && !reads_state->is_bool())
    throw ScorerError(manifest_path + ": transition.state_dependent must be a boolean");
  w.state_dependent = reads_state && reads_state->b;
  const Json* bound = Find(*cfg, "translation_bound");  // absent in models saved before it existed
  if (bound && !bound->is_number())
    throw ScorerError(manifest_path + ": transition.translation_bound must be a number");
  w.translation_bound = bound ? bound->number() : 0.0;
  if (w.state_dependent != (version->i == kStateReadVersion))  // v5 = v4 + a transition that reads the state
    throw ScorerError(manifest_path + ": a v" + std::to_string(version->i) + " model " +
                      (w.state_dependent ? "cannot have" : "must have") + " transition.state_dependent = true");

  const Json* names = Find(m, "feature_names");
  if (names && names->is_array())
    for (const Json& n : names->items) out.feature_names.push_back(n.is_string() ? n.s : "");
  out.structure = version->i >= 4;
  auto flag = [&](const char* name) {  // absent in models saved before the flag existed
    const Json* f = Find(m, name);
    if (f && !f->is_bool()) throw ScorerError(manifest_path + ": " + name + " must be a boolean");
    return f && f->b;
  };
  size_t width = static_cast<size_t>(w.dim) + NumSequenceStats() + (out.structure ? NumStructureStats() : 0) +
                 kNumHardwareFeatures;
  std::string families;
  for (const TraceColumnFamily& family : TraceColumnFamilies()) {
    if (!flag(family.flag)) continue;
    if (!out.structure)
      throw ScorerError(manifest_path + ": " + family.flag +
                        " comes after the trace structure (model v4 and later)");
    out.columns.push_back(&family);
    out.needs_facts = out.needs_facts || family.fill_task != nullptr;
    width += static_cast<size_t>(family.width());
    families += std::string(family.flag) + ", ";
  }
  const Json* centring = Find(m, "centring");  // absent or null: the rows as they are
  out.centred = centring && centring->type == Json::Type::kObject;
  bool names_ok = out.feature_names.size() == (out.centred ? 2 : 1) * width;
  for (size_t i = 0; names_ok && out.centred && i < width; ++i)  // centred_names(): "c_" + each name
    names_ok = out.feature_names[width + i] == "c_" + out.feature_names[i];
  for (int i = 0; names_ok && i < w.dim; ++i) names_ok = out.feature_names[i] == "dz" + std::to_string(i);
  for (int j = 0; names_ok && j < kNumHardwareFeatures; ++j)
    names_ok = out.feature_names[width - kNumHardwareFeatures + j] == kHardwareNames[j];
  if (!names_ok)
    throw ScorerError(manifest_path + ": feature_names do not match this scorer's features (" + std::to_string(width) +
                      " = dz0..dz" + std::to_string(w.dim - 1) + ", sequence stats, " +
                      (out.structure ? "trace structure, " : "") + families + "hardware" +
                      (out.centred ? "; twice, the copy centred" : "") + ")");

  const std::string st_path = (fs::path(dir) / "transition.safetensors").string();
  auto tensors = ReadSafetensors(st_path);
  const int64_t H = w.hidden, D = w.dim;
  TakeActionEmbedding(tensors, "embed", w, st_path);
  w.out_w = Take(tensors, "out.weight", {2 * D, H}, st_path);
  w.out_b = Take(tensors, "out.bias", {2 * D}, st_path);
  if (w.state_dependent) w.state_w = Take(tensors, "state.weight", {H, D}, st_path);
  try {
    w.Prepare();
  } catch (const std::invalid_argument& e) {
    throw ScorerError(st_path + ": " + e.what());
  }

  out.ranker_path = (fs::path(dir) / "ranker.json").string();
  if (!fs::is_regular_file(out.ranker_path, ec)) throw ScorerError(dir + ": no ranker.json");
  out.has_sequence_head = version->i == kSequenceHeadVersion;
  if (out.has_sequence_head) out.sequence_head = ReadSequenceHead(dir, m, manifest_path);
  return out;
}

}  // namespace cwm
