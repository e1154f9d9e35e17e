"""What does checking the WHOLE launch command cost, beside the speculative-only check it extends?

1. `specprobe lint --engine vllm==0.33.0 -- vllm serve ...` (a real command: 20 flags, a JSON config) as a
   subprocess, interpreter start included, beside `python -c pass`; it fails if lint imports torch,
   transformers or an engine.
2. In one process, interleaved: lint of that command with the whole-command check, and with it switched
   off (`cli_args.check_deployment` replaced by a no-op: the speculative-only check of before).
3. `gate` over manifests of 1, 100 and 1,000 such Deployments (each with its own port, so no two
   commands are alike), whole vs speculative-only, in process: the per-deployment cost from 100 to
   1,000 (linear) and the whole/speculative-only ratio.

    python benchmarks/whole_command.py [--runs 5] [--sizes 1,100,1000]

Goals (2 cores): lint as a process <= 0.5 s and within 4x `python -c pass`; the whole check adds at most
2x to the in-process lint; gate per-deployment cost from 100 to 1,000 within 1.5x.
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from specprobe.pipeline import gate as gate_module
from specprobe.rules import cli_args

COMMAND = (
    "vllm serve meta-llama/Llama-3.1-8B-Instruct --host 0.0.0.0 --port 8000 --tensor-parallel-size 2 "
    "--max-model-len 8192 --gpu-memory-utilization 0.9 --max-num-seqs 64 --max-num-batched-tokens 8192 "
    "--enable-prefix-caching --dtype bfloat16 --kv-cache-dtype fp8 --trust-remote-code "
    "--served-model-name llama --enable-chunked-prefill --disable-log-stats --seed 0 "
    "--compilation-config '{\"cudagraph_capture_sizes\": [1, 2, 4, 8]}' --load-format auto "
    "--speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 3, \"prompt_lookup_max\": 4}'"
)
HEAVY = ("torch", "transformers", "vllm", "sglang")
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llama-{index}
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.33.0
          command: {command}
"""


def median_of(call: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def speculative_only() -> Callable[..., list[object]]:
    """Switch the whole-command check off; returns the original to restore."""
    original = cli_args.check_deployment
    cli_args.check_deployment = lambda *a, **k: []  # type: ignore[assignment]
    return original


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default="1,100,1000")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPECPROBE_")} | {"HF_HUB_OFFLINE": "1"}
    lint = [sys.executable, "-m", "specprobe", "lint", "--engine", "vllm==0.33.0", "--", *shlex.split(COMMAND)]
    imports = subprocess.run(
        [sys.executable, "-X", "importtime", *lint[1:]], capture_output=True, text=True, env=env, check=False
    )
    loaded = {line.split("|")[-1].strip().split(".")[0] for line in imports.stderr.splitlines() if "|" in line}
    if loaded & set(HEAVY):
        raise SystemExit(f"lint imported {', '.join(sorted(loaded & set(HEAVY)))}")

    def run(command: list[str]) -> tuple[float, float]:
        """Wall and CPU (user + system) seconds of one whole-process run: on a loaded machine the CPU
        time is the figure that does not depend on the neighbours."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    bare = [run([sys.executable, "-c", "pass"]) for _ in range(args.runs)]
    whole_process = [run(lint) for _ in range(args.runs)]
    for name, runs in (("python -c pass", bare), ("lint (whole command)", whole_process)):
        wall, cpu = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
        print(f"{name:<22} wall {wall:.3f} s, cpu {cpu:.3f} s")
    ratio = statistics.median(r[1] for r in whole_process) / statistics.median(r[1] for r in bare)
    print(f"lint / python -c pass (cpu): {ratio:.1f}x; no engine, torch or transformers imported; "
          f"load average {os.getloadavg()[0]:.1f}")

    argv = shlex.split(COMMAND)
    gate_module.lint_command(argv, engine="vllm==0.33.0")  # warm: snapshots and matrix read once
    def whole_uncached() -> None:
        cli_args._VERDICTS.clear()  # a repeated command's verdict is remembered: measure it computed
        gate_module.lint_command(argv, engine="vllm==0.33.0")

    whole_times, spec_times = [], []
    for _ in range(args.runs):
        whole_times.append(median_of(whole_uncached, 5))
        original = speculative_only()
        try:
            spec_times.append(median_of(lambda: gate_module.lint_command(argv, engine="vllm==0.33.0"), 5))
        finally:
            cli_args.check_deployment = original  # type: ignore[assignment]
    whole, spec = statistics.median(whole_times), statistics.median(spec_times)
    print(f"lint in process: speculative-only {spec * 1000:.1f} ms, whole command {whole * 1000:.1f} ms "
          f"(ratio {whole / spec:.2f})")

    sizes = [int(size) for size in args.sizes.split(",")]
    def words(index: int) -> str:
        """The command of deployment ``index``: its own port, so that no two commands are alike (the
        verdict of a repeated command is computed once; this measures the cost without that)."""
        pairs = zip(["", *argv[:-1]], argv, strict=True)
        own = [str(8000 + index) if previous == "--port" else word for previous, word in pairs]
        return "[" + ", ".join(f'"{w}"' if '"' not in w else "'" + w + "'" for w in own) + "]"

    with tempfile.TemporaryDirectory(prefix="specprobe-whole-") as folder:
        per: dict[tuple[str, int], float] = {}
        for size in sizes:
            manifest = Path(folder) / f"fleet-{size}.yaml"
            manifest.write_text("---\n".join(DEPLOYMENT.format(index=i, command=words(i)) for i in range(size)))
            for mode in ("whole", "speculative-only"):
                original = speculative_only() if mode != "whole" else None
                try:
                    path = str(manifest)
                    seconds = median_of(lambda path=path: gate_module.gate_paths([path]), max(1, args.runs // 2))
                finally:
                    if original is not None:
                        cli_args.check_deployment = original  # type: ignore[assignment]
                per[(mode, size)] = seconds
                print(f"gate {size:>5} deployments, {mode:<16} {seconds:.3f} s ({seconds / size * 1000:.2f} ms each)")
        for mode in ("whole", "speculative-only"):
            if 100 in sizes and 1000 in sizes:
                linear = (per[(mode, 1000)] / 1000) / (per[(mode, 100)] / 100)
                print(f"{mode}: per-deployment cost 1,000 vs 100 deployments: {linear:.2f}x")
        biggest = max(sizes)
        print(f"gate of {biggest}: whole / speculative-only = "
              f"{per[('whole', biggest)] / per[('speculative-only', biggest)]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
