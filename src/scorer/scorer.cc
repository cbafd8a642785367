#include "scorer/scorer.h"

#include <algorithm>

#include "action_stats.h"
#include "featurize.h"
#include "scorer/error.h"
#include "scorer/trace_columns.h"
#include "trace_structure.h"

namespace cwm {

Scorer::Scorer(const std::string& model_dir, int num_threads)
    : model_(ReadModelDir(model_dir)), ranker_(model_.ranker_path, num_threads), num_threads_(num_threads) {
  if (ranker_.num_features() != num_features())
    throw ScorerError(model_.ranker_path + ": the ranker takes " + std::to_string(ranker_.num_features()) +
                      " features, the manifest names " + std::to_string(num_features()));
}

Scorer::Featurized Scorer::Featurize(const std::vector<std::string>& traces) const {
  Featurized out;
  try {
    out.fb = FeaturizeBatchWithNests(traces, num_threads_, model_.needs_facts ? &out.nests : nullptr);
    return out;
  } catch (const std::invalid_argument& e) {  // TraceFormatError / JsonError, naming the trace
    throw ScorerError(e.what());
  }
}

std::vector<float> Scorer::Features(const std::vector<float>& z0, const HardwareFeatures& hw,
                                    const std::vector<std::string>& traces, const std::vector<float>& reference,
                                    const TaskFacts* facts) {
  return Rows(z0, hw, Featurize(traces), reference, facts);
}

std::vector<float> Scorer::Rows(const std::vector<float>& z0, const HardwareFeatures& hw, const Featurized& featurized,
                                const std::vector<float>& reference, const TaskFacts* facts) {
  const FeatureBatch& fb = featurized.fb;
  const int D = dim();
  if (static_cast<int>(z0.size()) != D)
    throw ScorerError("z0 has " + std::to_string(z0.size()) + " values, the model's latent size is " +
                      std::to_string(D));
  const int W = model_.centred ? num_features() / 2 : num_features();  // the uncentred row
  if (model_.centred && static_cast<int>(reference.size()) != W)
    throw ScorerError("this model centres its rows: the task needs a 'reference' of " + std::to_string(W) +
                      " values, not " + std::to_string(reference.size()));
  if (!model_.centred && !reference.empty())
    throw ScorerError("this model does not centre its rows: the task's 'reference' would be ignored");
  if (model_.needs_facts && !facts)
    throw ScorerError("this model reads the tiled block's buffer accesses: the task needs its 'facts' "
                      "(python -m cwm.model.scorer_input writes them)");
  const int B = fb.batch, T = fb.max_len, S = NumSequenceStats(), F = num_features();
  const int P = model_.structure ? NumStructureStats() : 0;
  std::vector<float> z(static_cast<size_t>(B) * D), zt(static_cast<size_t>(B) * D);
  for (int b = 0; b < B; ++b) std::copy(z0.begin(), z0.end(), z.begin() + static_cast<size_t>(b) * D);
  {
    std::lock_guard<std::mutex> lock(mu_);
    Rollout(model_.transition, z.data(), fb.ints.data(), fb.numbers.data(), B, T, false, zt.data(), num_threads_,
            &cache_);
  }
  std::vector<float> stats(static_cast<size_t>(B) * S);
  SequenceStats(fb.ints.data(), fb.numbers.data(), fb.lengths.data(), B, T, stats.data());
  std::vector<float> structure(static_cast<size_t>(B) * P);
  if (P) StructureStats(fb.ints.data(), fb.numbers.data(), fb.lengths.data(), B, T, structure.data());
  std::vector<std::vector<float>> columns;  // one [B, width] block per family the model takes
  for (const TraceColumnFamily* family : model_.columns) {
    columns.emplace_back(static_cast<size_t>(B) * family->width());
    if (family->fill) {
      family->fill(fb.ints.data(), fb.numbers.data(), fb.lengths.data(), B, T, columns.back().data());
      continue;
    }
    try {  // a task family: int(hardware[0]) cores, as WorldModel.raw_features
      family->fill_task(featurized.nests, *facts, static_cast<int>(hw[0]), columns.back().data());
    } catch (const std::invalid_argument& e) {
      throw ScorerError(e.what());
    }
  }
  std::vector<float> x(static_cast<size_t>(B) * F);
  for (int b = 0; b < B; ++b) {
    float* row = &x[static_cast<size_t>(b) * F];
    const float* zt_b = &zt[static_cast<size_t>(b) * D];
    for (int i = 0; i < D; ++i) row[i] = zt_b[i] - z0[i];  // the ranker sees ẑ_T - z_0 (model v3)
    std::copy_n(&stats[static_cast<size_t>(b) * S], S, row + D);
    std::copy_n(structure.data() + static_cast<size_t>(b) * P, P, row + D + S);
    float* at = row + D + S + P;
    for (size_t f = 0; f < columns.size(); ++f) {
      const int width = model_.columns[f]->width();
      at = std::copy_n(columns[f].data() + static_cast<size_t>(b) * width, width, at);
    }
    std::copy(hw.begin(), hw.end(), at);
    for (int i = 0; model_.centred && i < W; ++i) row[W + i] = row[i] - reference[i];  // float32, as NumPy
  }
  return x;
}

std::vector<float> Scorer::Score(const std::vector<float>& z0, const HardwareFeatures& hw,
                                 const std::vector<std::string>& traces, const std::vector<float>& reference,
                                 const TaskFacts* facts) {
  const Featurized featurized = Featurize(traces);
  const FeatureBatch& fb = featurized.fb;
  std::vector<float> x = Rows(z0, hw, featurized, reference, facts);
  std::vector<float> margin = ranker_.Predict(x.data(), traces.size(), static_cast<size_t>(num_features()));
  if (!model_.has_sequence_head || traces.empty()) return margin;
  std::vector<double> sequence(static_cast<size_t>(fb.batch));
  {
    std::lock_guard<std::mutex> lock(mu_);
    SequenceScores(model_.sequence_head.weights, fb.ints.data(), fb.numbers.data(), fb.lengths.data(), fb.batch,
                   fb.max_len, sequence.data(), &sequence_cache_);
  }
  for (size_t b = 0; b < margin.size(); ++b)
    margin[b] = static_cast<float>(model_.sequence_head.Blend(margin[b], sequence[b]));
  return margin;
}

std::vector<float> Scorer::Score(const std::vector<float>& z0, const Json& target,
                                 const std::vector<std::string>& traces, const std::vector<float>& reference,
                                 const TaskFacts* facts) {
  return Score(z0, HardwareFeaturesOf(target), traces, reference, facts);
}

}  // namespace cwm
