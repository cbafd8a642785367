#include "featurize.h"

#include <algorithm>
#include <exception>
#include <thread>

#include "vocab.h"

namespace cwm {

uint32_t Fnv1a(const std::string& text) {
  uint32_t h = 0x811C9DC5u;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x01000193u;
  }
  return h & 0x7FFFFFFFu;
}

void ActionRows(const CanonicalTrace& ct, std::vector<int32_t>* ints, std::vector<float>* numbers) {
  for (const Action& a : ct.actions) {
    const auto& ops = a.operands;
    const auto& strs = a.strings;
    std::string joined;
    for (size_t i = 0; i < ops.size(); ++i) joined += (i ? "|" : "") + ops[i].text;
    int32_t row[kIntColumns] = {
        KindId(a.kind),
        a.phase,
        static_cast<int32_t>(ops.size()),
        ops.empty() ? 0 : static_cast<int32_t>(Fnv1a(ops[0].text)),
        ops.size() > 1 ? static_cast<int32_t>(Fnv1a(ops[1].text)) : 0,
        ops.empty() ? 0 : static_cast<int32_t>(Fnv1a(joined)),
        (ops.empty() || ops[0].base.empty()) ? 0 : static_cast<int32_t>(Fnv1a(ops[0].base)),
        ops.empty() ? -1 : ops[0].axis,
        ops.empty() ? -1 : ops[0].part,
        ops.empty() ? -1 : ops[0].depth,
        strs.empty() ? 0 : static_cast<int32_t>(Fnv1a(strs[0])),
        strs.size() > 1 ? static_cast<int32_t>(Fnv1a(strs[1])) : 0,
        static_cast<int32_t>(a.numbers.size()),
        static_cast<int32_t>(strs.size()),
    };
    ints->insert(ints->end(), row, row + kIntColumns);
    for (int k = 0; k < kNumNumbers; ++k)
      numbers->push_back(k < static_cast<int>(a.numbers.size()) ? static_cast<float>(a.numbers[k]) : 0.0f);
  }
}

FeatureBatch FeaturizeBatch(const std::vector<std::string>& traces, int num_threads, const ParsedTraceHook& on_parsed) {
  const int n = static_cast<int>(traces.size());
  std::vector<std::vector<int32_t>> ints(n);
  std::vector<std::vector<float>> nums(n);
  std::vector<int32_t> unknown(n, 0);
  std::vector<std::string> errors(n);

  auto work = [&](int begin, int end) {
    for (int i = begin; i < end; ++i) {
      try {
        const Json trace = ParseJson(traces[i]);
        CanonicalTrace ct = Canonicalize(trace);
        ActionRows(ct, &ints[i], &nums[i]);
        unknown[i] = ct.num_unknown();
        if (on_parsed) on_parsed(i, trace);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    }
  };
  int threads = std::max(1, std::min(num_threads, n / 16));
  if (threads <= 1) {
    work(0, n);
  } else {
    std::vector<std::thread> pool;
    int chunk = (n + threads - 1) / threads;
    for (int t = 0; t < threads; ++t) pool.emplace_back(work, t * chunk, std::min(n, (t + 1) * chunk));
    for (auto& th : pool) th.join();
  }
  for (int i = 0; i < n; ++i)
    if (!errors[i].empty()) throw TraceFormatError("trace " + std::to_string(i) + ": " + errors[i]);

  FeatureBatch fb;
  fb.batch = n;
  fb.lengths.resize(n);
  for (int i = 0; i < n; ++i) {
    fb.lengths[i] = static_cast<int32_t>(ints[i].size() / kIntColumns);
    fb.max_len = std::max(fb.max_len, fb.lengths[i]);
  }
  fb.ints.assign(static_cast<size_t>(n) * fb.max_len * kIntColumns, 0);
  fb.numbers.assign(static_cast<size_t>(n) * fb.max_len * kNumNumbers, 0.0f);
  for (int i = 0; i < n; ++i) {
    std::copy(ints[i].begin(), ints[i].end(), fb.ints.begin() + static_cast<size_t>(i) * fb.max_len * kIntColumns);
    std::copy(nums[i].begin(), nums[i].end(), fb.numbers.begin() + static_cast<size_t>(i) * fb.max_len * kNumNumbers);
  }
  fb.unknown = std::move(unknown);
  return fb;
}

}  // namespace cwm
