"""The unmeasured-trajectory corpus: generated workloads, sampled schedules, prefix-state targets."""
