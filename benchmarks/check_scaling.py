"""Does `specprobe check` cost the same on a 4.3 GB drafter as on a tiny one?

Builds, in one run, a Kimi-K2-sized EAGLE-3 drafter as a sparse file (hidden 7168, vocab 163840,
draft vocab 32000, embed_tokens included; only the header and d2t/t2d are really written) and a tiny
drafter, then times `specprobe check` on both as subprocesses (interpreter start included, runs
interleaved), records the peak RSS of the big runs, and times `specprobe --help`.

    python benchmarks/check_scaling.py [--runs 7] [--keep DIR]

Goals: big/tiny wall-time ratio <= 1.15; check on the big drafter <= 0.5 s and <= 150 MiB peak RSS;
--help <= 0.3 s.
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

from specprobe.demo.fixtures import DraftSpec, build_draft, build_target, kimi_k25_sized

KIMI_DRAFT = kimi_k25_sized("specforge")
KIMI_TARGET = {
    "hidden_size": 7168,
    "vocab_size": 163840,
    "num_hidden_layers": 61,
    "max_position_embeddings": 262144,
    "model_type": "kimi_k2",
    "architecture": "DeepseekV3ForCausalLM",
    "extra": {"kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64},
}
GOALS = {"ratio": 1.15, "big_s": 0.5, "rss_mib": 150.0, "help_s": 0.3}


def specprobe_command() -> list[str]:
    """The console script of this interpreter's install, as a user's venv runs it.

    Not `shutil.which`: a version manager's shim (pyenv) found first on PATH is a shell script that
    adds ~0.15 s of its own to every call and would be timed instead of specprobe.
    """
    script = Path(sys.executable).parent / "specprobe"
    if script.is_file():
        return [str(script)]
    found = shutil.which("specprobe")
    return [found] if found else [sys.executable, "-m", "specprobe"]


CPU_SECONDS: dict[str, list[float]] = {}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], label: str = "") -> float:
    """Wall seconds of one run; its CPU seconds (user + system) are kept under ``label``."""
    cpu_before = _children_cpu()
    start = time.perf_counter()
    completed = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    elapsed = time.perf_counter() - start
    CPU_SECONDS.setdefault(label, []).append(_children_cpu() - cpu_before)
    if completed.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} exited {completed.returncode}")
    return elapsed


def children_peak_rss_mib() -> float:
    # ru_maxrss is in KiB on Linux: the largest resident set of any child waited for so far.
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def mark(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs per command (median reported)")
    parser.add_argument("--keep", type=Path, help="build the drafters here and keep them")
    args = parser.parse_args()

    root = args.keep or Path(tempfile.mkdtemp(prefix="specprobe-scaling-"))
    try:
        build_target(root / "target", **KIMI_TARGET)  # type: ignore[arg-type]
        build_draft(root / "big", KIMI_DRAFT)
        build_target(root / "tiny-target")
        build_draft(root / "tiny", DraftSpec(draft_format="specforge"))
        big_file = root / "big" / "model.safetensors"
        apparent = big_file.stat().st_size
        on_disk = big_file.stat().st_blocks * 512

        cli = specprobe_command()
        big_cmd = [*cli, "check", str(root / "big"), "--target", str(root / "target")]
        tiny_cmd = [*cli, "check", str(root / "tiny"), "--target", str(root / "tiny-target")]
        help_cmd = [*cli, "--help"]

        for command in (big_cmd, tiny_cmd, help_cmd):  # warm the page cache and .pyc files
            timed(command)
        big_times: list[float] = []
        tiny_times: list[float] = []
        for _ in range(args.runs):
            big_times.append(timed(big_cmd, "big"))
            tiny_times.append(timed(tiny_cmd, "tiny"))
        # Every child so far ran check on one of the two drafters; the big one dominates.
        peak_rss = children_peak_rss_mib()
        help_times = [timed(help_cmd, "help") for _ in range(args.runs)]
        # The check's own work, imports excluded: run_check in this process.
        from specprobe.pipeline.check import run_check

        in_process: dict[str, list[float]] = {"big": [], "tiny": []}
        for _ in range(args.runs):
            for name, target in (("big", "target"), ("tiny", "tiny-target")):
                start = time.perf_counter()
                run_check(root / name, target=str(root / target))
                in_process[name].append(time.perf_counter() - start)
        # The floor on this machine: a bare interpreter start, and one that only imports the CLI stack.
        bare_times = [timed([sys.executable, "-c", "pass"]) for _ in range(args.runs)]
        stack_times = [timed([sys.executable, "-c", "import typer.main"]) for _ in range(args.runs)]
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)

    big, tiny, help_s = statistics.median(big_times), statistics.median(tiny_times), statistics.median(help_times)
    ratio = big / tiny
    bare, stack = statistics.median(bare_times), statistics.median(stack_times)
    print(f"big drafter: {apparent / 1e9:.2f} GB apparent, {on_disk / 2**20:.1f} MiB on disk (sparse)")
    print(f"runs per command: {args.runs} (median), command: {' '.join(cli)}")
    print()
    print(f"{'measure':<34}{'value':>12}  {'goal':>10}  verdict")
    rows = [
        ("check big (Kimi-sized, 4.3 GB)", f"{big:.3f} s", f"<= {GOALS['big_s']} s", big <= GOALS["big_s"]),
        ("check tiny", f"{tiny:.3f} s", "", True),
        ("big / tiny wall-time ratio", f"{ratio:.3f}", f"<= {GOALS['ratio']}", ratio <= GOALS["ratio"]),
        ("peak RSS of check", f"{peak_rss:.1f} MiB", f"<= {GOALS['rss_mib']:.0f} MiB", peak_rss <= GOALS["rss_mib"]),
        ("specprobe --help", f"{help_s:.3f} s", f"<= {GOALS['help_s']} s", help_s <= GOALS["help_s"]),
    ]
    cpu = {label: statistics.median(values) for label, values in CPU_SECONDS.items() if label}
    work_big, work_tiny = statistics.median(in_process["big"]), statistics.median(in_process["tiny"])
    floors = [
        ("run_check in-process big / tiny", f"{work_big * 1000:.1f} / {work_tiny * 1000:.1f} ms"),
        ("CPU time: check big / tiny / --help", f"{cpu['big']:.3f} / {cpu['tiny']:.3f} / {cpu['help']:.3f} s"),
        ("python -c pass (floor)", f"{bare:.3f} s"),
        ("import typer.main (floor)", f"{stack:.3f} s"),
    ]
    for name, value, goal, ok in rows:
        print(f"{name:<34}{value:>12}  {goal:>10}  {mark(ok) if goal else ''}")
    print()
    for name, value in floors:
        print(f"{name:<38}{value:>24}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    return 0 if all(ok for *_, ok in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
