"""Does `specprobe gate` on a file with three deployments cost about what one `specprobe check` costs?

Builds, in one run, a target and three local EAGLE-3 drafters (the demo writer), a Kubernetes file with
three deployments (two vLLM containers, one SGLang container, each naming its own drafter), then
times, as interleaved subprocesses (interpreter start included), `specprobe gate FILE` against
`specprobe check DRAFT --target TARGET` on one of the drafters. It also asserts, from
`python -X importtime`, that gate imports neither torch, transformers nor an engine.

    python benchmarks/gate_vs_check.py [--runs 7]

Goal: gate <= 1.5x one check (wall-time medians).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from specprobe.demo.example import write_demo

GOAL_RATIO = 1.5
HEAVY = ("torch", "transformers", "vllm", "sglang")


def specprobe_command() -> list[str]:
    """This interpreter running specprobe (the package importable here, e.g. a checkout on PYTHONPATH)."""
    return [sys.executable, "-m", "specprobe"]


def deployment_file(root: Path) -> Path:
    """A Kubernetes file with three deployments, each with a local drafter next to the target."""
    containers = []
    for name, draft in (("vllm-a", "draft-a"), ("vllm-b", "draft-b")):
        containers.append(
            f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.33.0
          args:
            - target
            - --speculative-config
            - '{{"method": "eagle3", "model": "{draft}", "num_speculative_tokens": 3}}'
"""
        )
    containers.append(
        """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: sglang}
spec:
  template:
    spec:
      containers:
        - name: sglang
          image: lmsysorg/sglang:v0.5.23-cu129
          command: ["/bin/sh", "-c"]
          args:
            - |
              python3 -m sglang.launch_server --model-path target \\
                --speculative-algorithm EAGLE3 --speculative-draft-model-path draft-c
"""
    )
    path = root / "deployments.yaml"
    path.write_text("---\n".join(containers), encoding="utf-8")
    return path


def timed(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    completed = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    elapsed = time.perf_counter() - start
    if completed.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} could not run (exit {completed.returncode})")
    return elapsed


def heavy_imports(command: list[str], env: dict[str, str]) -> list[str]:
    """Top-level modules among HEAVY that ``command`` imports, from -X importtime's log."""
    python, *rest = command
    completed = subprocess.run(
        [python, "-X", "importtime", *rest], capture_output=True, text=True, env=env, check=False
    )
    imported = {line.split("|")[-1].strip().split(".")[0] for line in completed.stderr.splitlines() if "|" in line}
    return sorted(imported & set(HEAVY))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="specprobe-gate-bench-"))
    try:
        write_demo(root)
        for copy in ("draft-a", "draft-b", "draft-c"):
            shutil.copytree(root / "draft", root / copy)
        manifest = deployment_file(root)
        env = {k: v for k, v in os.environ.items() if not k.startswith("SPECPROBE_")}
        env["HF_HUB_OFFLINE"] = "1"
        gate = [*specprobe_command(), "gate", str(manifest)]
        check = [*specprobe_command(), "check", str(root / "draft-a"), "--target", str(root / "target")]
        heavy = heavy_imports(gate, env)
        if heavy:
            raise SystemExit(f"gate imported {', '.join(heavy)}")
        timed(gate, env), timed(check, env)  # warm the file cache and the bytecode
        gate_s, check_s = [], []
        for _ in range(args.runs):
            gate_s.append(timed(gate, env))
            check_s.append(timed(check, env))
        ratio = statistics.median(gate_s) / statistics.median(check_s)
        print(f"gate, 3 deployments (2 vLLM, 1 SGLang), 3 local drafters: median {statistics.median(gate_s):.3f} s")
        print(f"check, 1 drafter with its target:                          median {statistics.median(check_s):.3f} s")
        print(f"ratio gate / check: {ratio:.2f} (goal <= {GOAL_RATIO}); imported torch/transformers/engines: none")
        return 0 if ratio <= GOAL_RATIO else 1
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
