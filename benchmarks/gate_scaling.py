"""Does `specprobe gate` cost grow linearly with the number of deployments in one manifest?

Builds, in one run, the demo target and drafter, then multi-document Kubernetes manifests of 1, 100
and 1,000 EAGLE-3 Deployments: once all naming the same drafter (a fleet of replicas), once each
naming a drafter folder of its own (hard links to the demo drafter's files, so every drafter is
read and checked, without writing gigabytes). Each manifest is gated as a subprocess (interpreter
start included, as CI runs it), runs interleaved, and the medians and ratios are printed side by
side.

    python benchmarks/gate_scaling.py [--runs 3] [--sizes 1,100,1000] [--format json]

Goals (2 CPU cores): 1,000 deployments <= 3 s and <= 10x one deployment, identical and distinct
drafters alike; per-deployment cost from 100 to 1,000 within 1.5x (linear, not quadratic).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from specprobe.demo.example import write_demo

GOALS = {"big_s": 3.0, "ratio": 10.0, "linearity": 1.5}

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llama-eagle3-{index}
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.33.0
          args:
            - demo/target
            - --port
            - "8000"
            - --speculative-config
            - '{{"method": "eagle3", "model": "{draft}", "num_speculative_tokens": 3}}'
"""


def specprobe_command() -> list[str]:
    """The console script of this interpreter's install (not a version manager's shim on PATH)."""
    script = Path(sys.executable).parent / "specprobe"
    if script.is_file():
        return [str(script)]
    found = shutil.which("specprobe")
    return [found] if found else [sys.executable, "-m", "specprobe"]


def distinct_draft(root: Path, index: int) -> str:
    """A drafter folder of its own for deployment ``index``: hard links to the demo drafter's files
    (a copy where the file system has none)."""
    folder = root / "drafts" / f"draft-{index}"
    if not folder.exists():
        folder.mkdir(parents=True)
        for source in (root / "demo" / "draft").iterdir():
            try:
                os.link(source, folder / source.name)
            except OSError:
                shutil.copy2(source, folder / source.name)
    return f"drafts/draft-{index}"


def write_manifest(root: Path, count: int, *, distinct: bool) -> Path:
    documents = [
        DEPLOYMENT.format(index=i, draft=distinct_draft(root, i) if distinct else "demo/draft") for i in range(count)
    ]
    path = root / f"fleet-{count}-{'distinct' if distinct else 'same'}.yaml"
    path.write_text("---\n".join(documents), encoding="utf-8")
    return path


CPU_SECONDS: dict[str, list[float]] = {}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], cwd: Path, label: str = "") -> float:
    """Wall seconds of one run; its CPU seconds (user + system, unaffected by other load on a shared
    machine) are kept under ``label``."""
    cpu_before = _children_cpu()
    start = time.perf_counter()
    completed = subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - start
    CPU_SECONDS.setdefault(label, []).append(_children_cpu() - cpu_before)
    if completed.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {completed.returncode}: {completed.stderr.decode()[-500:]}")
    return elapsed


def mark(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs per manifest (median reported)")
    parser.add_argument("--sizes", default="1,100,1000", help="deployment counts, comma-separated")
    parser.add_argument("--format", default="json", help="gate's --format (json, text, sarif, ...)")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    env_note = f"{os.cpu_count()} CPU(s), {sys.executable}"
    with tempfile.TemporaryDirectory(prefix="specprobe-gate-scaling-") as tmp:
        root = Path(tmp)
        write_demo(root / "demo")
        manifests = {
            (kind, size): write_manifest(root, size, distinct=kind == "distinct")
            for kind in ("same", "distinct")
            for size in sizes
        }
        command = [*specprobe_command(), "gate", "--format", args.format]
        times: dict[tuple[str, int], list[float]] = {key: [] for key in manifests}
        timed([*command, str(manifests["same", sizes[0]])], root)  # warm the file cache and bytecode
        for _ in range(args.runs):
            for key, path in manifests.items():
                times[key].append(timed([*command, str(path)], root, f"{key[0]}/{key[1]}"))
    medians = {key: statistics.median(values) for key, values in times.items()}
    print(f"specprobe gate --format {args.format}, median of {args.runs} run(s); {env_note}")
    header = f"{'deployments':>12} {'same drafter':>14} {'ratio':>7} {'distinct':>10} {'ratio':>7}"
    print(header + "   cpu s (same/distinct)")
    for size in sizes:
        cells = []
        for kind in ("same", "distinct"):
            seconds = medians[kind, size]
            cells.append(f"{seconds:>{14 if kind == 'same' else 10}.2f} {seconds / medians[kind, sizes[0]]:>6.1f}x")
        cpu = [statistics.median(CPU_SECONDS[f"{kind}/{size}"]) for kind in ("same", "distinct")]
        print(f"{size:>12} " + " ".join(cells) + f"   {cpu[0]:.2f} / {cpu[1]:.2f}")
    failures = 0
    if len(sizes) >= 2:
        big, small = sizes[-1], sizes[0]
        for kind in ("same", "distinct"):
            seconds, ratio = medians[kind, big], medians[kind, big] / medians[kind, small]
            ok_time, ok_ratio = seconds <= GOALS["big_s"], ratio <= GOALS["ratio"]
            print(f"{kind}: {big} deployments {seconds:.2f} s (goal <= {GOALS['big_s']} s: {mark(ok_time)}), "
                  f"{ratio:.1f}x of {small} (goal <= {GOALS['ratio']}x: {mark(ok_ratio)})")
            failures += (not ok_time) + (not ok_ratio)
        if len(sizes) >= 3:
            middle = sizes[-2]
            for kind in ("same", "distinct"):
                # Per-deployment cost above start-up: flat when cost is linear in deployments.
                base = medians[kind, small]
                per_mid = (medians[kind, middle] - base) / (middle - small)
                per_big = (medians[kind, big] - base) / (big - small)
                growth = per_big / per_mid if per_mid > 0 else float("inf")
                # Below ~50 ms of work over start-up the slope is timer noise, not a trend.
                ok = growth <= GOALS["linearity"] or medians[kind, middle] - base < 0.05
                print(f"{kind}: {per_mid * 1000:.2f} ms/deployment at {middle}, {per_big * 1000:.2f} at {big} "
                      f"({growth:.2f}x; goal <= {GOALS['linearity']}x: {mark(ok)})")
                failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
