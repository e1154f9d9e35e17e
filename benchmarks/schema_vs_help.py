"""`help(SpeculativeConfig)` (how the field report got vLLM's schema) vs `specprobe schema vllm`, in one run.

Measures, against the same vLLM interpreter:
  import    python -c "import vllm.config"                 (the floor a live extraction cannot beat)
  help      PAGER=cat python -c "from vllm.config import SpeculativeConfig; help(SpeculativeConfig)"
  uncached  specprobe schema vllm --python PY        (fresh cache folder: a live probe)
  cached    the same command again                   (median of --repeat runs)
  library   specprobe.schema.live.resolve_schema(...) in-process, cached (median)
and prints the times, output sizes and the ratios. `import` and `uncached` run alternately, --rounds
times each, so that load from other work on the machine falls on both alike; wall time and CPU time
(user + system of the child) are reported, CPU time being the steadier figure on a shared machine.

Usage: python benchmarks/schema_vs_help.py [--python PATH] [--repeat 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def default_python() -> Path:
    from_env = os.environ.get("SPECPROBE_VLLM_PYTHON")
    if from_env:
        return Path(from_env)
    root = Path(os.environ.get("SPECPROBE_ENGINES_DIR", Path.home() / ".cache" / "specprobe" / "engines"))
    return root / "vllm-0.33.0" / "bin" / "python"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the child and its children, stdout)."""
    cpu_before = _children_cpu()
    started = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        sys.exit(f"failed ({completed.returncode}): {' '.join(command)}\n{completed.stderr[-2000:]}")
    return elapsed, _children_cpu() - cpu_before, completed.stdout


def timed(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    elapsed, _, out = run(command, env)
    return elapsed, out


def timed_cpu(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    elapsed, cpu, _ = run(command, env)
    return elapsed, cpu


def import_vs_uncached(python: Path, rounds: int) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """Alternate `import vllm.config` and an uncached `specprobe schema vllm` (a fresh cache each time)."""
    imports, probes = [], []
    for _ in range(rounds):
        imports.append(timed_cpu([str(python), "-c", "import vllm.config"], dict(os.environ)))
        with tempfile.TemporaryDirectory(prefix="specprobe-bench-") as fresh:
            env = {**os.environ, "SPECPROBE_CACHE_DIR": fresh, "NO_COLOR": "1"}
            probes.append(
                timed_cpu([sys.executable, "-m", "specprobe", "schema", "vllm", "--python", str(python)], env)
            )
    return imports, probes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", type=Path, default=default_python())
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3, help="alternating import/uncached pairs")
    args = parser.parse_args()
    if not args.python.is_file():
        sys.exit(f"no vLLM interpreter at {args.python}; run scripts/provision-engine.sh vllm 0.33.0")

    with tempfile.TemporaryDirectory(prefix="specprobe-bench-") as cache_dir:
        env = {**os.environ, "PAGER": "cat", "SPECPROBE_CACHE_DIR": cache_dir, "NO_COLOR": "1"}
        help_s, help_out = timed(
            [str(args.python), "-c", "from vllm.config import SpeculativeConfig; help(SpeculativeConfig)"], env
        )
        command = [sys.executable, "-m", "specprobe", "schema", "vllm", "--python", str(args.python)]
        uncached_s, table_out = timed(command, env)
        cached_runs = [timed(command, env)[0] for _ in range(args.repeat)]
        cached_s = statistics.median(cached_runs)

        os.environ["SPECPROBE_CACHE_DIR"] = cache_dir
        from specprobe.schema.live import resolve_schema

        library_runs = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            resolution = resolve_schema("vllm", python=args.python)
            library_runs.append(time.perf_counter() - started)
        assert resolution.cached
        library_s = statistics.median(library_runs)

    rows = [
        ("help(SpeculativeConfig)", help_s, help_out),
        ("specprobe schema vllm (uncached)", uncached_s, table_out),
        (f"specprobe schema vllm (cached, median of {args.repeat})", cached_s, table_out),
    ]
    print(f"vLLM interpreter: {args.python}")
    print(f"{'command':<48} {'seconds':>8} {'lines':>7} {'bytes':>8}")
    for label, seconds, out in rows:
        print(f"{label:<48} {seconds:>8.2f} {len(out.splitlines()):>7} {len(out.encode()):>8}")
    print(f"{'resolve_schema() in-process (cached, median)':<48} {library_s:>8.3f}")
    print()
    print(f"help / uncached specprobe: {help_s / uncached_s:.2f}x")
    print(f"help / cached specprobe:   {help_s / cached_s:.1f}x")
    print(f"uncached / cached:         {uncached_s / cached_s:.1f}x")
    ratio = len(help_out.splitlines()) / max(1, len(table_out.splitlines()))
    print(f"help output is {ratio:.1f}x the lines of the table")
    print()
    imports, probes = import_vs_uncached(args.python, args.rounds)
    for label, runs in (("import vllm.config", imports), ("specprobe schema vllm (uncached)", probes)):
        walls = ", ".join(f"{wall:.1f}" for wall, _ in runs)
        cpus = ", ".join(f"{cpu:.1f}" for _, cpu in runs)
        print(f"{label:<34} wall s: {walls:<24} cpu s: {cpus}")
    wall_ratio = statistics.median(w for w, _ in probes) / statistics.median(w for w, _ in imports)
    cpu_ratio = statistics.median(c for _, c in probes) / statistics.median(c for _, c in imports)
    print(f"uncached schema / import vllm.config: {wall_ratio:.2f}x wall, {cpu_ratio:.2f}x CPU (medians)")


if __name__ == "__main__":
    main()
