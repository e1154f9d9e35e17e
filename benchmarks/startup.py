"""How long do `specprobe --help` and `specprobe check` take, whole process, beside `python -c pass`?

Writes the static demo (a target and an EAGLE-3 drafter, no torch) to a temporary folder, then runs,
interleaved so that machine load hits all three alike, `python -c pass`, `specprobe --help` and
`specprobe check DEMO/draft --target DEMO/target` as subprocesses (interpreter start included), and
prints each median with its ratio to `python -c pass`, the load average, and the slowest imports of
each command (`python -X importtime`, cumulative, specprobe and its direct dependencies). It fails
if either command imports torch, transformers or an engine.

    python benchmarks/startup.py [--runs 10]

Goals on two cores: --help <= 0.15 s and check <= 0.25 s (medians).
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

GOALS = {"--help": 0.15, "check": 0.25}
HEAVY = ("torch", "transformers", "vllm", "sglang")


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one whole-process run of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    completed = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if completed.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} could not run (exit {completed.returncode})")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def import_costs(command: list[str], env: dict[str, str]) -> list[tuple[int, str]]:
    """(cumulative microseconds, module) for every module ``command`` imports, from -X importtime."""
    python, *rest = command
    completed = subprocess.run(
        [python, "-X", "importtime", *rest], capture_output=True, text=True, env=env, check=False
    )
    costs = []
    for line in completed.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cumulative, name = line.split("|")
            if cumulative.strip().isdigit():
                costs.append((int(cumulative), name.strip()))
    return costs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="specprobe-startup-"))
    try:
        write_demo(root)
        env = {k: v for k, v in os.environ.items() if not k.startswith("SPECPROBE_")}
        env["HF_HUB_OFFLINE"] = "1"
        specprobe = [sys.executable, "-m", "specprobe"]
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "--help": [*specprobe, "--help"],
            "check": [*specprobe, "check", str(root / "draft"), "--target", str(root / "target")],
        }
        for name in ("--help", "check"):
            costs = import_costs(commands[name], env)
            heavy = sorted({module.split(".")[0] for _, module in costs} & set(HEAVY))
            if heavy:
                raise SystemExit(f"specprobe {name} imported {', '.join(heavy)}")
            top = sorted((c for c in costs if c[1].count(".") <= 1 and c[1] != "specprobe"), reverse=True)[:6]
            print(f"slowest imports of {name}: " + ", ".join(f"{module} {us / 1000:.0f} ms" for us, module in top))
        for command in commands.values():
            timed(command, env)  # warm the file cache and the bytecode
        walls: dict[str, list[float]] = {name: [] for name in commands}
        cpus: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, command in commands.items():
                wall, cpu = timed(command, env)
                walls[name].append(wall)
                cpus[name].append(cpu)
        base, base_cpu = statistics.median(walls["python -c pass"]), statistics.median(cpus["python -c pass"])
        load = os.getloadavg()[0]
        # On a shared machine the CPU time a run used moves less with the load than its wall time does.
        print(f"{args.runs} runs each, interleaved; load average {load:.2f} on {os.cpu_count()} cores")
        failed = False
        for name in commands:
            median, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
            goal = GOALS.get(name)
            verdict = "" if goal is None else f"  goal <= {goal:.2f} s: {'met' if median <= goal else 'MISSED'}"
            failed |= goal is not None and median > goal
            print(
                f"{name:<16} median {median:.3f} s ({median / base:4.1f}x python -c pass), "
                f"CPU {cpu:.3f} s ({cpu / base_cpu:4.1f}x){verdict}"
            )
        return 1 if failed else 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
