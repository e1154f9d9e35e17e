"""Static check vs exact check, side by side in one run; and static vs exact verdicts over the corpus.

    python benchmarks/exact_vs_static.py [--engine vllm|sglang] [--release 0.32.0] [--cores 2]
        wall time of `check` (static) and `check --exact` on a small drafter and on a Kimi-K2.5-sized
        drafter (hidden 7168, vocab 163840, sparse file: headers only), their ratio, and the peak memory
        of any process of the run (the engine probe's); ``--cores`` pins the runs to that many CPUs.
    python benchmarks/exact_vs_static.py --corpus [--engine sglang] --release 0.5.23
        every tests/cases drafter with a target: static verdict (ok or not, for ENGINE==RELEASE) next to
        the exact verdict (an EXACT-* error or not), all cases in one probe process; disagreements listed.

The release must be in the engine cache (`specprobe engines install ENGINE==RELEASE`).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from specprobe.checkpoint.folder import load_checkpoint  # noqa: E402
from specprobe.demo.fixtures import DraftSpec, build_draft, build_target  # noqa: E402
from specprobe.engines import exact  # noqa: E402
from specprobe.findings import Severity  # noqa: E402
from specprobe.rules import exact as exact_rules  # noqa: E402


def _check(draft: Path, target: Path, engine: str, *, with_exact: bool,
           cores: int | None = None) -> tuple[float, int, dict[str, Any], float]:
    pin = ["taskset", "-c", ",".join(str(i) for i in range(cores))] if cores else []
    args = [*pin, sys.executable, "-m", "specprobe", "check", str(draft), "--target", str(target),
            "--engine", engine, "--format", "json"]
    if with_exact:
        args.append("--exact")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    completed = subprocess.run(args, capture_output=True, text=True, check=False, cwd=draft.parent)
    seconds = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU seconds of the run's processes: on cores shared with other work, wall time includes the waits.
    cpu = (after.ru_utime - usage.ru_utime) + (after.ru_stime - usage.ru_stime)
    report = json.loads(completed.stdout) if completed.stdout.strip() else {"error": completed.stderr[-300:]}
    return seconds, max(after.ru_maxrss, usage.ru_maxrss), report, cpu


def timing(engine: str, cores: int | None) -> None:
    with tempfile.TemporaryDirectory(prefix="specprobe-bench-") as folder:
        root = Path(folder)
        subjects = {
            "small drafter (hidden 256)": (
                DraftSpec(hidden_size=256, num_attention_heads=4, num_key_value_heads=2, intermediate_size=512),
                {"hidden_size": 256, "vocab_size": 512},
            ),
            "Kimi-K2.5-sized (hidden 7168, vocab 163840, sparse)": (
                DraftSpec(hidden_size=7168, num_attention_heads=64, num_key_value_heads=8, intermediate_size=18432,
                          vocab_size=163840, draft_vocab_size=32000, dtype="BF16", sparse=True),
                {"hidden_size": 7168, "vocab_size": 163840, "num_hidden_layers": 61},
            ),
        }
        load = " ".join(Path("/proc/loadavg").read_text(encoding="utf-8").split()[:3])
        print(f"{engine}, {cores or 'all'} core(s), load average {load}")
        print(f"{'subject':<52} {'static s':>9} {'exact s':>9} {'ratio':>6} {'exact CPU s':>12} "
              f"{'peak RSS':>10}  verdicts")
        for label, (spec, target_kwargs) in subjects.items():
            draft = build_draft(root / f"d{len(label)}", spec)
            target = root / f"t{len(label)}"
            build_target(target, **target_kwargs)
            static_s, _, static_report, _ = _check(draft, target, engine, with_exact=False, cores=cores)
            exact_s, peak_kib, exact_report, exact_cpu = _check(draft, target, engine, with_exact=True, cores=cores)
            verdicts = f"static ok={static_report.get('ok')} exact ok={exact_report.get('ok')}"
            verdicts += f" exact verdict={[e.get('verdict') for e in exact_report.get('exact', [])]}"
            exact_rules = sorted({f["rule"] for f in exact_report.get("findings", []) if f["rule"].startswith("EXACT")})
            print(f"{label:<52} {static_s:9.1f} {exact_s:9.1f} {exact_s / static_s:6.0f} {exact_cpu:12.1f} "
                  f"{peak_kib / 1024:6.0f} MiB  {verdicts} {exact_rules}")


def corpus(engine_name: str, release: str) -> None:
    from check.casebuild import build_case, case_names

    from specprobe.findings import SpecprobeError
    from specprobe.pipeline.check import run_check

    interpreters = exact.exact_interpreters(engine_name, release)
    if not interpreters:
        raise SystemExit(f"{engine_name} {release} is not in the engine cache")
    with tempfile.TemporaryDirectory(prefix="specprobe-corpus-") as folder:
        cases, static = [], {}
        for name in case_names():
            root = Path(folder) / name
            root.mkdir()
            draft, kwargs, _expected = build_case(name, root)
            target = kwargs.get("target")
            if not target:
                continue
            try:
                report = run_check(draft, target=target, engine=f"{engine_name}=={release}",
                                   method=kwargs.get("method"))
                checkpoint = load_checkpoint(draft)
                target_config = json.loads(Path(target, "config.json").read_text(encoding="utf-8"))
                cases.append(exact.case_from_checkpoint(name, checkpoint, target_config, method=kwargs.get("method")))
            except (SpecprobeError, ValueError, OSError):
                continue
            static[name] = sorted({f.rule for f in report.findings if f.severity is Severity.ERROR})
        started = time.monotonic()
        run = exact.run_cases(cases, interpreters[0], timeout_s=3000, engine=engine_name)
        print(f"{engine_name} {run.version}: {len(cases)} cases in one probe process, "
              f"{time.monotonic() - started:.0f} s")
        disagree = 0
        for case in cases:
            found = exact_rules.findings_for_engine(engine_name, case, run.cases[case.id], run.version)
            exact_errors = sorted({f.rule for f in found if f.severity is Severity.ERROR})
            if any(f.rule == "EXACT-UNAVAILABLE" for f in found):
                print(f"UNAVAILABLE {case.id}: {found[0].message[:200]}")
                continue
            warned = [f for f in found if f.severity is Severity.WARNING]
            if case.id.startswith("valid") and warned:
                print(f"VALID-WARNED {case.id}: " + "; ".join(f"{f.rule}: {f.message[:160]}" for f in warned))
            if bool(static[case.id]) != bool(exact_errors):
                disagree += 1
                detail = "; ".join(f.message[:220] for f in found if f.severity is Severity.ERROR) or "exact: clean"
                print(f"DISAGREE {case.id}: static {static[case.id] or 'ok'} | exact {exact_errors or 'ok'} | {detail}")
        print(f"{disagree} disagreement(s) of {len(cases)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engine", default="vllm", choices=("vllm", "sglang"))
    parser.add_argument("--release", default="0.32.0")
    parser.add_argument("--corpus", action="store_true")
    parser.add_argument("--cores", type=int, default=None)
    args = parser.parse_args()
    if args.corpus:
        corpus(args.engine, args.release)
    else:
        timing(f"{args.engine}=={args.release}", args.cores)


if __name__ == "__main__":
    main()
