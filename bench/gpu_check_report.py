"""The JSON result of ``bench/gpu_check.py``, built step by step (a module of its own, so the
modes import it without importing the entry script)."""
from __future__ import annotations

import datetime
import json
import os
import platform
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
RESULT = os.path.join(HERE, "results", "gpu_check.json")
START = time.monotonic()


class Report:
    """The JSON result, built step by step; each step records ok/error/seconds."""

    def __init__(self, mode: str, budget_s: float):
        self.data = {"script": "bench/gpu_check.py", "mode": mode, "date": datetime.datetime.now().isoformat(),
                     "host": platform.node(), "python": platform.python_version(), "steps": {}, "ok": False}
        self.budget_s = budget_s

    def over_budget(self) -> bool:
        return time.monotonic() - START > self.budget_s

    def step(self, name: str, fn, *args, optional: bool = False, **kwargs):
        """Run ``fn``; store its dict result (or the error) under ``steps[name]``."""
        if optional and self.over_budget():
            self.data["steps"][name] = {"ok": False, "skipped": "time budget spent"}
            return None
        start = time.monotonic()
        try:
            value = fn(*args, **kwargs)
            entry = {"ok": True, **(value if isinstance(value, dict) else {})}
        except Exception as error:  # noqa: BLE001 - record and go on
            value = None
            entry = {"ok": False, "error": f"{type(error).__name__}: {error}"[:4000],
                     "traceback": traceback.format_exc()[-4000:]}
        entry["seconds"] = round(time.monotonic() - start, 3)
        self.data["steps"][name] = entry
        print(f"[gpu_check] {name}: {'ok' if entry['ok'] else 'FAILED'} ({entry['seconds']} s)"
              + ("" if entry["ok"] else f" {entry['error'][:300]}"), flush=True)
        return value

    def write(self, path: str = RESULT) -> list:
        self.data["total_s"] = round(time.monotonic() - START, 3)
        paths = [path] + ([os.path.join(os.environ["OUT"], "gpu_check.json")] if os.environ.get("OUT") else [])
        for p in paths:
            os.makedirs(os.path.dirname(os.path.abspath(p)), exist_ok=True)
            with open(p + ".tmp", "w") as f:
                json.dump(self.data, f, indent=2, default=str)
                f.write("\n")
            os.replace(p + ".tmp", p)
        return paths
