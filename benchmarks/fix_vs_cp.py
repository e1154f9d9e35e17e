"""Does a rename-only `specprobe fix` of a 4 GB drafter run at disk-copy speed, in little memory?

Builds, in one run, a Kimi-K2-sized EAGLE-3 drafter (hidden 7168, vocab 163840, draft vocab 32000,
embed_tokens included: 4.3 GB apparent) in vLLM-native naming, "sparse-ish": every weight except the
2.35 GB embedding holds real bytes (~2 GB written), the embedding is a hole. Fixing it for SGLang 0.5.11
renames the decoder layer to midlayer.* (a header rewrite; every byte streamed). Side by side, runs
interleaved, each a subprocess:

- ``cp -r`` of the folder (GNU cp keeps holes with its default --sparse=auto);
- ``specprobe fix`` (write phase from its own timings, and the whole command including the proof,
  which reads every tensor of source and copy again to compare sha256).

Prints median times, the fix/cp ratio of the write phase and of the whole command, and the peak RSS
of the fix runs.

    python benchmarks/fix_vs_cp.py [--runs 3] [--keep DIR]

Goals: write phase <= 1.5 x cp; peak RSS <= 100 MiB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from specprobe.checkpoint.safetensors_header import read_header
from specprobe.demo.fixtures import build_draft, build_target, kimi_k25_sized

DRAFT = kimi_k25_sized("vllm-native")
TARGET = {
    "hidden_size": 7168,
    "vocab_size": 163840,
    "num_hidden_layers": 61,
    "max_position_embeddings": 262144,
}
CHUNK = 8 * 1024 * 1024


def fill(path: Path, *, skip: str = "embed_tokens.weight") -> int:
    """Write pseudo-random bytes into every tensor of ``path`` but ``skip``; returns the bytes written."""
    header = read_header(path)
    pattern = os.urandom(CHUNK)
    written = 0
    fd = os.open(path, os.O_WRONLY)
    try:
        for name, entry in header.tensors.items():
            if name == skip or name in ("d2t", "t2d"):
                continue
            position = entry.begin
            while position < entry.end:
                step = min(CHUNK, entry.end - position)
                # Vary the chunk so that no file system could deduplicate it.
                os.pwrite(fd, position.to_bytes(8, "little") + pattern[8:step], position)
                position += step
                written += step
        os.fsync(fd)
    finally:
        os.close(fd)
    return written


def timed(command: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(f"{' '.join(command[:3])} failed ({result.returncode}): {result.stderr.strip()[-400:]}")
    return elapsed, result.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="build into this folder and keep it")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="specprobe-fix-bench-"))
    try:
        draft = build_draft(root / "draft", DRAFT)
        build_target(root / "target", **TARGET)
        data = fill(draft / "model.safetensors")
        apparent = (draft / "model.safetensors").stat().st_size
        print(f"drafter: {apparent / 1e9:.2f} GB apparent, {data / 1e9:.2f} GB of real data, rest a hole")
        cp_times, fix_write, fix_total = [], [], []
        for run in range(args.runs):
            out_cp, out_fix = root / f"cp-{run}", root / f"fix-{run}"
            elapsed, _ = timed(["cp", "-r", str(draft), str(out_cp)])
            cp_times.append(elapsed)
            elapsed, stdout = timed(
                [sys.executable, "-m", "specprobe", "fix", str(draft), "--target", str(root / "target"),
                 "--engine", "sglang==0.5.11", "--out", str(out_fix), "--format", "json"]
            )
            report = json.loads(stdout)
            assert report["ok"] and report["proof"]["tensors"], report["findings"]
            assert all(t["identical"] for t in report["proof"]["tensors"])
            fix_total.append(elapsed)
            fix_write.append(report["timings_s"]["write"])
            shutil.rmtree(out_cp)
            shutil.rmtree(out_fix)
        rss_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        cp, write, total = (statistics.median(v) for v in (cp_times, fix_write, fix_total))
        print(f"cp -r:                    {cp:.2f} s (median of {args.runs})")
        print(f"specprobe fix, write:     {write:.2f} s  -> {write / cp:.2f} x cp")
        print(f"specprobe fix, whole run: {total:.2f} s  -> {total / cp:.2f} x cp (proof re-reads source and copy)")
        print(f"peak RSS of the runs:     {rss_mib:.0f} MiB")
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
