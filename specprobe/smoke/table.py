"""Markdown tables of smoke results, regenerated from the JSON reports that the runs wrote.

    python -m specprobe.smoke.table gpu RESULTS_DIR        (docs/smoke: scripts/gpu-smoke.sh's files)
    python -m specprobe.smoke.table serve RESULTS_DIR      (docs/real-engine: smoke --serve reports)

No torch is imported: the reports are plain JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from specprobe.smoke.plot import plot_pairings

GPU_HEADER = (
    "| drafter | K | mean acceptance length (95% CI over prompts) | acceptance rate | per position | lossless "
    "| spec tok/s | target-only tok/s | speed-up | GPU s / 1k tokens (spec / target-only) |\n"
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
)
SERVE_HEADER = (
    "| pairing | engine result | engine mean acceptance length | reference | engine vs reference "
    "| per position, engine / reference | engine start (s) | exit |\n"
    "| --- | --- | --- | --- | --- | --- | --- | --- |"
)


def _load(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a JSON object")
    return data


def _num(value: Any, digits: int = 3) -> str:
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"


def _positions(values: Any) -> str:
    if not isinstance(values, list) or not values:
        return "-"
    return ", ".join(_num(v, 2) for v in values)


def _lossless(report: dict[str, Any]) -> str:
    exact = str(report.get("lossless_prompts") or "-")
    ties = report.get("near_tie_divergences") or []
    if ties:
        return f"{exact} ({len(ties)} near-tie{'s' if len(ties) > 1 else ''})"
    return exact if report.get("lossless") is not False else f"{exact} NOT lossless"


def gpu_row(report: dict[str, Any]) -> str:
    draft = Path(str(report.get("subject", {}).get("draft") or "-")).name
    ci = report.get("ci95") or []
    interval = f" ({_num(ci[0])}-{_num(ci[1])})" if len(ci) == 2 else ""
    speedup = report.get("speedup")
    speed = f"{speedup:.2f}x" if isinstance(speedup, float) else "noise" if report.get("timing_noise_speedup") else "-"
    spec_ms = report.get("seconds_per_1k_tokens")
    tokens = report.get("tokens") or 0
    base = report.get("seconds_target_only")
    base_per_1k = 1000.0 * base / tokens if isinstance(base, (int, float)) and tokens else None
    return (
        f"| {draft} | {report.get('num_speculative_tokens')} | {_num(report.get('mean_acceptance_length'))}{interval} "
        f"| {_num(report.get('acceptance_rate'), 4)} | {_positions(report.get('per_position'))} | {_lossless(report)} "
        f"| {_num(report.get('tokens_per_s'), 0)} | {_num(report.get('target_only_tokens_per_s'), 0)} | {speed} "
        f"| {_num(spec_ms, 2)} / {_num(base_per_1k, 2)} |"
    )


def serve_row(name: str, report: dict[str, Any], exit_code: str) -> str:
    findings = report.get("findings") or []
    failed = next((f for f in findings if f.get("rule") in ("SMOKE-SERVE-START-FAILED", "SMOKE-SERVE-FAILED")), None)
    gap = next((f for f in findings if f.get("rule") == "SMOKE-ENGINE-GAP"), None)
    engine = report.get("mean_acceptance_length")
    reference = report.get("reference_mean_acceptance_length")
    if failed is not None:
        result = f"{failed['rule']}: `{report.get('engine_cause') or failed['message']}`"
    elif gap is not None:
        result = "SMOKE-ENGINE-GAP"
    elif isinstance(reference, float) and isinstance(engine, float):
        result = "reaches the reference" if abs(engine - reference) <= 0.01 * reference else "differs"
    else:
        result = "measured (no reference)"
    relative = "-"
    if isinstance(engine, float) and isinstance(reference, float):
        relative = f"{(engine - reference) / reference:+.1%}"
    positions = _positions(report.get("per_position"))
    if report.get("reference_per_position"):
        positions += " / " + _positions(report.get("reference_per_position"))
    return (
        f"| {name} | {result} | {_num(engine, 4)} | {_num(reference, 4)} | {relative} | {positions} "
        f"| {_num(report.get('engine_start_seconds'), 0)} | {exit_code} |"
    )


def gpu_table(folder: Path) -> str:
    names = ["smoke-k1.json", "smoke-k3.json", "smoke-k5.json", "smoke-broken-k3.json"]
    rows = [gpu_row(_load(folder / name)) for name in names if (folder / name).is_file()]
    return "\n".join([GPU_HEADER, *rows])


def serve_table(folder: Path) -> str:
    exits: dict[str, str] = {}
    runs = folder / "runs.tsv"
    if runs.is_file():
        for line in runs.read_text(encoding="utf-8").splitlines()[1:]:
            parts = line.split("\t")
            if len(parts) >= 2:
                exits[parts[0]] = parts[1]
    rows = [serve_row(path.stem, _load(path), exits.get(path.stem, "-")) for path in sorted(folder.glob("*.json"))]
    return "\n".join([SERVE_HEADER, *rows])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Render the docs tables from smoke JSON reports.")
    parser.add_argument("kind", choices=("gpu", "serve"))
    parser.add_argument("folder", type=Path)
    parser.add_argument("--plot", type=Path, help="serve: per-position chart of every measured pairing (PNG).")
    args = parser.parse_args(argv)
    try:
        table = gpu_table(args.folder) if args.kind == "gpu" else serve_table(args.folder)
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"specprobe: error: {exc}\n")
        return 2
    sys.stdout.write(table + "\n")
    if args.plot is not None and args.kind == "serve":
        measured = []
        for path in sorted(args.folder.glob("*.json")):
            report = _load(path)
            if report.get("per_position"):
                measured.append((path.stem, report["per_position"], report.get("reference_per_position")))
        plot_pairings(args.plot, measured)
    return 0


if __name__ == "__main__":
    sys.exit(main())
