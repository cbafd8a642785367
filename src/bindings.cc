// pybind11 binding of the C++ core as cwm._native. No logic here: convert, check
// shapes, release the GIL, call the core, wrap the result.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "canonical.h"
#include "featurize.h"
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

py::tuple FeaturizeBatch(const std::vector<std::string>& traces, int num_threads) {
  cwm::FeatureBatch fb;
  {
    py::gil_scoped_release release;
    fb = cwm::FeaturizeBatch(traces, num_threads);
  }
  py::ssize_t b = fb.batch, t = fb.max_len;
  return py::make_tuple(ToArray(std::move(fb.ints), {b, t, cwm::kIntColumns}),
                        ToArray(std::move(fb.numbers), {b, t, cwm::kNumNumbers}), ToArray(std::move(fb.lengths), {b}),
                        ToArray(std::move(fb.unknown), {b}));
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

}  // namespace

PYBIND11_MODULE(_native, m) {
  m.doc() = "CWM native core: trace canonicalisation and featurisation (private; use cwm.native)";
  py::register_exception<cwm::TraceFormatError>(m, "TraceFormatError", PyExc_ValueError);
  py::register_exception<cwm::JsonError>(m, "JsonError", PyExc_ValueError);
  m.def("api_version", [] { return CWM_NATIVE_API_VERSION; });
  m.def("sources_hash", [] { return std::string(CWM_SOURCES_HASH); });
  m.def("action_kinds", [] { return cwm::ActionKinds(); });
  m.def("int_columns", [] { return cwm::kIntColumns; });
  m.def("num_numbers", [] { return cwm::kNumNumbers; });
  m.def("featurize_batch", &FeaturizeBatch, py::arg("traces"), py::arg("num_threads") = 1,
        "Trace JSON texts -> (ints[B,T,C] int32, numbers[B,T,N] float32, lengths[B], unknown[B])");
  m.def("canonical_actions", &CanonicalActions, py::arg("trace"),
        "Trace JSON text -> (actions, unknown_kinds, num_insts); for parity tests and debugging");
}
