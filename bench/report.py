"""Regenerate the benchmark tables in README.md from bench/results/*.json.

The README holds them between ``<!-- bench:begin -->`` and ``<!-- bench:end -->``.
"""
from __future__ import annotations

import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
README = os.path.join(HERE, "..", "README.md")


def _load(name):
    path = os.path.join(HERE, "results", name)
    return json.load(open(path)) if os.path.exists(path) else None


def trace_features_table(r) -> list[str]:
    t = r["traces_per_s"]
    imp = r.get("import_tensor_intrin_s") or {}
    return [
        f"**Trace featurisation** (`bench/trace_features.py`; {r['machine']}; {r['date']}): traces/s, one thread each",
        "",
        "| batch | native (C++) | reference (Python) | native ÷ reference |",
        "|---|---|---|---|",
        *[f"| {b} | {t['native'][b]:,.0f} | {t['reference'][b]:,.0f} | {t['native'][b] / t['reference'][b]:.1f}× |"
          for b in ("1", "1024")],
        "",
        f"`import tvm.s_tir.tensor_intrin` in a fresh process: {imp.get('before')} s stock → "
        f"{imp.get('after')} s with `cwm.tvm_patch`.",
        "",
    ]


def fast_tuning_table(r) -> list[str]:
    rows = r.get("tuning", [])
    if not rows:
        return []
    m = r.get("machine", {})
    mach = m if isinstance(m, str) else m.get("description") or f"{m.get('cpu')}, {m.get('cores')} cores"
    out = [f"**Tuning on this machine** (`bench/fast_tuning.py`; {mach}; {r.get('date')}): wall time of "
           "MetaSchedule tuning per configuration",
           "", "| workload | config | trials | tuning wall s | valid / records | best µs | cut off |",
           "|---|---|---|---|---|---|---|"]
    for x in rows:
        wall = x.get("tune_s") if x.get("tune_s") is not None else x.get("process_s")
        out.append(f"| {x['workload']} | {x['config']} | {x['trials']} | {wall} | {x['n_valid']} / {x['n_records']} "
                   f"| {x['best_us']} | {'yes, at ' + str(x['timeout_s']) + ' s' if x.get('cut_off') else 'no'} |")
    return out + [""]


def main():
    lines: list[str] = []
    for name, fn in (("fast_tuning.json", fast_tuning_table), ("trace_features.json", trace_features_table)):
        r = _load(name)
        if r:
            lines += fn(r)
    text = open(README).read()
    block = "<!-- bench:begin -->\n" + "\n".join(lines) + "\n<!-- bench:end -->"
    text = re.sub(r"<!-- bench:begin -->.*<!-- bench:end -->", lambda _: block, text, flags=re.S)
    open(README, "w").write(text)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
