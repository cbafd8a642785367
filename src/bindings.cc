// pybind11 binding of the C++ core as cwm._native. No logic here: convert, check
// shapes, release the GIL, call the core, wrap the result.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <mutex>

#include "action_stats.h"
#include "canonical.h"
#include "compute_locations.h"
#include "featurize.h"
#include "forest.h"
#include "sequence.h"
#include "trace_structure.h"
#include "loop_tiles.h"
#include "tile_footprint.h"
#include "vector_alignment.h"
#include "transition.h"
#include "version.h"
#include "vocab.h"

#ifndef CWM_SOURCES_HASH
#define CWM_SOURCES_HASH "unknown"
#endif

namespace py = pybind11;

namespace {

template <typename T>
py::array_t<T> ToArray(std::vector<T>&& v, std::vector<py::ssize_t> shape) {
  auto* heap = new std::vector<T>(std::move(v));
  py::capsule owner(heap, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(shape, heap->data(), owner);
}

// Each trace's tiled nest (tile_footprint.h), read in the featuriser's parse; opaque to Python.
struct TiledNests {
  std::vector<cwm::TiledNest> nests;
};

py::tuple FeaturizeBatch(const std::vector<std::string>& traces, int num_threads, bool nests) {
  cwm::FeatureBatch fb;
  TiledNests read;
  {
    py::gil_scoped_release release;
    fb = cwm::FeaturizeBatchWithNests(traces, num_threads, nests ? &read.nests : nullptr);
  }
  py::ssize_t b = fb.batch, t = fb.max_len;
  py::object tiled = nests ? py::cast(std::move(read)) : py::none();
  return py::make_tuple(ToArray(std::move(fb.ints), {b, t, cwm::kIntColumns}),
                        ToArray(std::move(fb.numbers), {b, t, cwm::kNumNumbers}), ToArray(std::move(fb.lengths), {b}),
                        ToArray(std::move(fb.unknown), {b}), tiled);
}

py::tuple CanonicalActions(const std::string& trace) {
  cwm::CanonicalTrace ct;
  {
    py::gil_scoped_release release;
    ct = cwm::Canonicalize(trace);
  }
  py::list actions;
  for (const auto& a : ct.actions) {
    py::list ops;
    for (const auto& o : a.operands) ops.append(py::make_tuple(o.text, o.base, o.axis, o.part, o.depth));
    actions.append(py::make_tuple(a.kind, a.raw_kind, ops, a.numbers, a.strings, a.phase, a.inst_index));
  }
  return py::make_tuple(actions, ct.unknown_kinds, ct.num_insts);
}

using F32 = py::array_t<float, py::array::c_style | py::array::forcecast>;
using I32 = py::array_t<int32_t, py::array::c_style | py::array::forcecast>;

std::string ShapeOf(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

template <typename A>
std::vector<float> Flat(const A& a, std::vector<py::ssize_t> shape, const char* name) {
  bool ok = a.ndim() == static_cast<py::ssize_t>(shape.size());
  for (size_t i = 0; ok && i < shape.size(); ++i) ok = a.shape(i) == shape[i];
  if (!ok) {
    std::string want = "(";
    for (size_t i = 0; i < shape.size(); ++i) want += (i ? ", " : "") + std::to_string(shape[i]);
    throw py::value_error(std::string(name) + " must have shape " + want + "), got " + ShapeOf(a));
  }
  return std::vector<float>(a.data(), a.data() + a.size());
}

// Checks ints [B, T, kIntColumns] and numbers [B, T, kNumNumbers]; returns T.
py::ssize_t CheckActionArrays(const I32& ints, const F32& nums) {
  if (ints.ndim() != 3 || ints.shape(2) != cwm::kIntColumns)
    throw py::value_error("ints must have shape (batch, steps, " + std::to_string(cwm::kIntColumns) + "), got " +
                          ShapeOf(ints));
  py::ssize_t B = ints.shape(0), T = ints.shape(1);
  if (nums.ndim() != 3 || nums.shape(0) != B || nums.shape(1) != T || nums.shape(2) != cwm::kNumNumbers)
    throw py::value_error("numbers must have shape (" + std::to_string(B) + ", " + std::to_string(T) + ", " +
                          std::to_string(cwm::kNumNumbers) + "), got " + ShapeOf(nums));
  return T;
}

F32 Weight(const py::dict& weights, const char* key, const char* what) {
  if (!weights.contains(key)) throw py::value_error(std::string(what) + " weights lack '" + key + "'");
  return F32::ensure(weights[key]);
}

// The action embedding's weights (kind [num_kinds, H], hashed, small, numbers_w, numbers_b) into
// `w`, with its hidden width H and vocabulary sizes.
void LoadActionEmbedding(const py::dict& weights, int hash_buckets, int small_vocab, const char* what,
                         cwm::TransitionWeights& w) {
  F32 kind = Weight(weights, "kind", what);
  if (kind.ndim() != 2) throw py::value_error("kind must be 2-D");
  w.hash_buckets = hash_buckets, w.small_vocab = small_vocab;
  w.num_kinds = static_cast<int>(kind.shape(0)), w.hidden = static_cast<int>(kind.shape(1));
  const py::ssize_t H = w.hidden;
  w.kind = Flat(kind, {w.num_kinds, H}, "kind");
  w.hashed = Flat(Weight(weights, "hashed", what), {cwm::kHashColumns, hash_buckets, H}, "hashed");
  w.small = Flat(Weight(weights, "small", what), {cwm::kSmallColumns, small_vocab, H}, "small");
  w.numbers_w = Flat(Weight(weights, "numbers_w", what), {H, cwm::kNumNumbers}, "numbers_w");
  w.numbers_b = Flat(Weight(weights, "numbers_b", what), {H}, "numbers_b");
}

class TransitionCore {
 public:
  TransitionCore(py::dict weights, int dim, int hash_buckets, int small_vocab, bool normalize_state,
                 bool state_dependent, double translation_bound) {
    auto get = [&](const char* k) { return Weight(weights, k, "transition"); };
    LoadActionEmbedding(weights, hash_buckets, small_vocab, "transition", w_);
    F32 out_w = get("out_w");
    if (out_w.ndim() != 2) throw py::value_error("out_w must be 2-D");
    w_.dim = dim, w_.normalize_state = normalize_state, w_.translation_bound = translation_bound;
    py::ssize_t H = w_.hidden;
    w_.out_w = Flat(out_w, {2 * dim, H}, "out_w");
    w_.out_b = Flat(get("out_b"), {2 * dim}, "out_b");
    w_.state_dependent = state_dependent;
    if (state_dependent) w_.state_w = Flat(get("state_w"), {H, dim}, "state_w");
    else if (weights.contains("state_w")) throw py::value_error("state_w given for a transition that does not read the state");
    try {
      w_.Prepare();
    } catch (const std::invalid_argument& e) {
      throw py::value_error(e.what());
    }
  }

  py::array_t<float> Rollout(const py::array& z0_in, const py::array& ints_in, const py::array& nums_in,
                             bool all_states, int num_threads) {
    if (!py::isinstance<py::array_t<float>>(z0_in) || !py::isinstance<py::array_t<float>>(nums_in))
      throw py::value_error("z0 and numbers must be float32 arrays");
    if (!py::isinstance<py::array_t<int32_t>>(ints_in)) throw py::value_error("ints must be an int32 array");
    F32 z0 = F32::ensure(z0_in), nums = F32::ensure(nums_in);
    I32 ints = I32::ensure(ints_in);
    py::ssize_t B = ints.ndim() == 3 ? ints.shape(0) : 0, D = w_.dim;
    if (z0.ndim() != 2 || z0.shape(0) != B || z0.shape(1) != D) {
      CheckActionArrays(ints, nums);  // a bad ints array is named first
      throw py::value_error("z0 must have shape (" + std::to_string(B) + ", " + std::to_string(D) + "), got " +
                            ShapeOf(z0));
    }
    py::ssize_t T = CheckActionArrays(ints, nums);
    std::vector<py::ssize_t> shape = all_states ? std::vector<py::ssize_t>{B, T + 1, D} : std::vector<py::ssize_t>{B, D};
    py::array_t<float> out(shape);
    const float *zp = z0.data(), *np_ = nums.data();
    const int32_t* ip = ints.data();
    float* op = out.mutable_data();
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mu_);  // the action cache is shared by calls
      cwm::Rollout(w_, zp, ip, np_, static_cast<int>(B), static_cast<int>(T), all_states, op, num_threads, &cache_);
    }
    return out;
  }

 size_t cache_size() const { return cache_.size(); }

 private:
  cwm::TransitionWeights w_;
  cwm::ActionParamCache cache_;
  std::mutex mu_;
};

// The sequence head's scorer (cwm.model.sequence_head): weights by name, as
// cwm.model.sequence_head.numpy_weights gives them.
class SequenceCore {
 public:
  SequenceCore(py::dict weights, int hash_buckets, int small_vocab) {
    auto get = [&](const char* k) { return Weight(weights, k, "sequence"); };
    cwm::TransitionWeights& e = w_.embed;
    LoadActionEmbedding(weights, hash_buckets, small_vocab, "sequence", e);
    const py::ssize_t D = e.hidden;
    e.dim = w_.dim = e.hidden;
    w_.ln_w = Flat(get("ln_w"), {D}, "ln_w");
    w_.ln_b = Flat(get("ln_b"), {D}, "ln_b");
    w_.w_ih = Flat(get("w_ih"), {3 * D, D}, "w_ih");
    w_.w_hh = Flat(get("w_hh"), {3 * D, D}, "w_hh");
    w_.b_ih = Flat(get("b_ih"), {3 * D}, "b_ih");
    w_.b_hh = Flat(get("b_hh"), {3 * D}, "b_hh");
    w_.head_w = Flat(get("head_w"), {D, 2 * D}, "head_w");
    w_.head_b = Flat(get("head_b"), {D}, "head_b");
    w_.out_w = Flat(get("out_w"), {D}, "out_w");
    w_.out_b = Flat(get("out_b"), {1}, "out_b")[0];
    try {
      w_.Prepare();
    } catch (const std::invalid_argument& e) {
      throw py::value_error(e.what());
    }
  }

  py::array_t<double> Scores(const py::array& ints_in, const py::array& nums_in, const py::array& lengths_in) {
    if (!py::isinstance<py::array_t<float>>(nums_in)) throw py::value_error("numbers must be a float32 array");
    if (!py::isinstance<py::array_t<int32_t>>(ints_in) || !py::isinstance<py::array_t<int32_t>>(lengths_in))
      throw py::value_error("ints and lengths must be int32 arrays");
    F32 nums = F32::ensure(nums_in);
    I32 ints = I32::ensure(ints_in), lengths = I32::ensure(lengths_in);
    py::ssize_t T = CheckActionArrays(ints, nums), B = ints.shape(0);
    if (lengths.ndim() != 1 || lengths.shape(0) != B)
      throw py::value_error("lengths must have shape (" + std::to_string(B) + ",), got " + ShapeOf(lengths));
    py::array_t<double> out(std::vector<py::ssize_t>{B});
    const int32_t *ip = ints.data(), *lp = lengths.data();
    const float* np_ = nums.data();
    double* op = out.mutable_data();
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mu_);  // the input cache is shared by calls
      cwm::SequenceScores(w_, ip, np_, lp, static_cast<int>(B), static_cast<int>(T), op, &cache_);
    }
    return out;
  }

  size_t cache_size() const { return cache_.size(); }

 private:
  cwm::SequenceWeights w_;
  cwm::ActionParamCache cache_;
  std::mutex mu_;
};

// Per-trace features of a padded batch: `width` floats a trace from `fn` (a *Stats function).
template <typename Fn>
py::array_t<float> PerTraceStats(const py::array& ints_in, const py::array& nums_in, const py::array& len_in,
                                 int width, Fn fn) {
  if (!py::isinstance<py::array_t<int32_t>>(ints_in) || !py::isinstance<py::array_t<int32_t>>(len_in))
    throw py::value_error("ints and lengths must be int32 arrays");
  if (!py::isinstance<py::array_t<float>>(nums_in)) throw py::value_error("numbers must be a float32 array");
  I32 ints = I32::ensure(ints_in), lengths = I32::ensure(len_in);
  F32 nums = F32::ensure(nums_in);
  py::ssize_t T = CheckActionArrays(ints, nums), B = ints.shape(0);
  if (lengths.ndim() != 1 || lengths.shape(0) != B)
    throw py::value_error("lengths must have shape (" + std::to_string(B) + ",), got " + ShapeOf(lengths));
  py::array_t<float> out({B, static_cast<py::ssize_t>(width)});
  const int32_t *ip = ints.data(), *lp = lengths.data();
  const float* np_ = nums.data();
  float* op = out.mutable_data();
  {
    py::gil_scoped_release release;
    fn(ip, np_, lp, static_cast<int>(B), static_cast<int>(T), op);
  }
  return out;
}

py::array_t<float> SequenceStatsPy(const py::array& ints, const py::array& nums, const py::array& lengths) {
  return PerTraceStats(ints, nums, lengths, cwm::NumSequenceStats(), cwm::SequenceStats);
}

py::array_t<float> StructureStatsPy(const py::array& ints, const py::array& nums, const py::array& lengths) {
  return PerTraceStats(ints, nums, lengths, cwm::NumStructureStats(), cwm::StructureStats);
}

py::array_t<float> VectorAlignmentPy(const py::array& ints, const py::array& nums, const py::array& lengths) {
  return PerTraceStats(ints, nums, lengths, cwm::NumVectorAlignment(), cwm::VectorAlignment);
}

py::array_t<float> ComputeLocationsPy(const py::array& ints, const py::array& nums, const py::array& lengths) {
  return PerTraceStats(ints, nums, lengths, cwm::NumComputeLocations(), cwm::ComputeLocations);
}

py::array_t<float> LoopTilesPy(const py::array& ints, const py::array& nums, const py::array& lengths) {
  return PerTraceStats(ints, nums, lengths, cwm::NumLoopTiles(), cwm::LoopTiles);
}

// [n, NumTileFootprint()] columns, written by fill(out) with the GIL released.
template <typename Fill>
py::array_t<float> TileFootprintRows(size_t n, Fill&& fill) {
  py::array_t<float> out(std::vector<py::ssize_t>{static_cast<py::ssize_t>(n), cwm::NumTileFootprint()});
  float* o = out.mutable_data();
  {
    py::gil_scoped_release release;
    fill(o);
  }
  return out;
}

// Trace JSON texts of one task and its parsed facts -> [B, NumTileFootprint()] float32.
py::array_t<float> TileFootprintPy(const std::vector<std::string>& traces, const cwm::TaskFacts& facts, int cores) {
  return TileFootprintRows(traces.size(), [&](float* o) { cwm::TileFootprint(traces, facts, cores, o); });
}

// The same from the nests featurize_batch(..., nests=True) read.
py::array_t<float> TileFootprintOfNestsPy(const TiledNests& nests, const cwm::TaskFacts& facts, int cores) {
  return TileFootprintRows(nests.nests.size(), [&](float* o) { cwm::TileFootprintOfNests(nests.nests, facts, cores, o); });
}

// The ranker's trees (forest.h); predict releases the GIL.
class ForestPy {
 public:
  explicit ForestPy(const py::bytes& model_json) : f_(cwm::Forest::FromJson(std::string(model_json))) {}

  py::array_t<float> Predict(const py::array& rows_in, int num_threads) const {
    if (!py::isinstance<py::array_t<float>>(rows_in)) throw py::value_error("rows must be a float32 array");
    F32 rows = F32::ensure(rows_in);
    if (rows.ndim() != 2 || rows.shape(1) != f_.num_features())
      throw py::value_error("rows must have shape (n, " + std::to_string(f_.num_features()) + "), got " +
                            ShapeOf(rows));
    py::array_t<float> out(rows.shape(0));
    const float* rp = rows.data();
    float* op = out.mutable_data();
    size_t n = static_cast<size_t>(rows.shape(0)), cols = static_cast<size_t>(rows.shape(1));
    {
      py::gil_scoped_release release;
      f_.Predict(rp, n, cols, op, num_threads);
    }
    return out;
  }
  int num_features() const { return f_.num_features(); }
  int num_trees() const { return f_.num_trees(); }

 private:
  cwm::Forest f_;
};

}  // namespace

PYBIND11_MODULE(_native, m) {
  m.doc() = "CWM native core: trace canonicalisation and featurisation (private; use cwm.native)";
  py::register_exception<cwm::TraceFormatError>(m, "TraceFormatError", PyExc_ValueError);
  py::register_exception<cwm::JsonError>(m, "JsonError", PyExc_ValueError);
  py::register_exception<cwm::ForestError>(m, "ForestError", PyExc_ValueError);
  m.def("api_version", [] { return CWM_NATIVE_API_VERSION; });
  m.def("sources_hash", [] { return std::string(CWM_SOURCES_HASH); });
  m.def("action_kinds", [] { return cwm::ActionKinds(); });
  m.def("int_columns", [] { return cwm::kIntColumns; });
  m.def("num_numbers", [] { return cwm::kNumNumbers; });
  py::class_<TiledNests>(m, "TiledNests").def("__len__", [](const TiledNests& n) { return n.nests.size(); });
  m.def("featurize_batch", &FeaturizeBatch, py::arg("traces"), py::arg("num_threads") = 1, py::arg("nests") = false,
        "Trace JSON texts -> (ints[B,T,C] int32, numbers[B,T,N] float32, lengths[B], unknown[B], TiledNests or "
        "None): with nests, each trace's tiled nest read in the same parse (for tile_footprint_of_nests)");
  py::class_<TransitionCore>(m, "TransitionCore")
      .def(py::init<py::dict, int, int, int, bool, bool, double>(), py::arg("weights"), py::arg("dim"),
           py::arg("hash_buckets"), py::arg("small_vocab"), py::arg("normalize_state"),
           py::arg("state_dependent") = false, py::arg("translation_bound") = 0.0)
      .def("rollout", &TransitionCore::Rollout, py::arg("z0"), py::arg("ints"), py::arg("numbers"),
           py::arg("all_states") = false, py::arg("num_threads") = 1,
           "z0 [B,D] f32, ints [B,T,14] i32, numbers [B,T,10] f32 -> z_T [B,D] (or all states [B,T+1,D])")
      .def_property_readonly("cache_size", &TransitionCore::cache_size);
  py::class_<SequenceCore>(m, "SequenceCore")
      .def(py::init<py::dict, int, int>(), py::arg("weights"), py::arg("hash_buckets"), py::arg("small_vocab"))
      .def("scores", &SequenceCore::Scores, py::arg("ints"), py::arg("numbers"), py::arg("lengths"),
           "ints [B,T,14] i32, numbers [B,T,10] f32, lengths [B] i32 -> the sequence head's scores [B] f64")
      .def_property_readonly("cache_size", &SequenceCore::cache_size);
  m.def("sequence_stats", &SequenceStatsPy, py::arg("ints"), py::arg("numbers"), py::arg("lengths"),
        "Ranker features of action sequences (twin of cwm.model.action_stats.sequence_stats)");
  m.def("structure_stats", &StructureStatsPy, py::arg("ints"), py::arg("numbers"), py::arg("lengths"),
        "Loop-nest structure of action sequences (twin of cwm.model.trace_structure.structure_stats)");
  m.def("vector_alignment", &VectorAlignmentPy, py::arg("ints"), py::arg("numbers"), py::arg("lengths"),
        "Vector-register fill of action sequences (twin of cwm.model.vector_alignment.vector_alignment)");
  m.def("compute_locations", &ComputeLocationsPy, py::arg("ints"), py::arg("numbers"), py::arg("lengths"),
        "Compute-at locations of action sequences (twin of cwm.model.compute_locations.compute_locations)");
  m.def("loop_tiles", &LoopTilesPy, py::arg("ints"), py::arg("numbers"), py::arg("lengths"),
        "Tile factors of each loop of the tiled nest (twin of cwm.model.loop_tiles.loop_tiles)");
  py::class_<cwm::TaskFacts>(m, "TaskFacts");
  m.def("parse_task_facts", py::overload_cast<const std::string&>(&cwm::ParseTaskFacts), py::arg("facts"),
        "cwm.model.tile_footprint.task_facts's JSON text -> its parsed form, for tile_footprint");
  m.def("tile_footprint", &TileFootprintPy, py::arg("traces"), py::arg("facts"), py::arg("cores"),
        "The tiled block's parallel grain and cache footprints (twin of cwm.model.tile_footprint.tile_footprint)");
  m.def("tile_footprint_of_nests", &TileFootprintOfNestsPy, py::arg("nests"), py::arg("facts"), py::arg("cores"),
        "tile_footprint of the nests featurize_batch(..., nests=True) read");
  py::class_<ForestPy>(m, "Forest")
      .def(py::init<py::bytes>(), py::arg("model_json"), "an XGBoost gbtree model as JSON bytes (save_raw('json'))")
      .def("predict", &ForestPy::Predict, py::arg("rows"), py::arg("num_threads") = 1,
           "rows [n, num_features] f32 -> scores [n] f32 (the bits of Booster.predict)")
      .def_property_readonly("num_features", &ForestPy::num_features)
      .def_property_readonly("num_trees", &ForestPy::num_trees);
  m.def("canonical_actions", &CanonicalActions, py::arg("trace"),
        "Trace JSON text -> (actions, unknown_kinds, num_insts); for parity tests and debugging");
}
