"""The engine's measured acceptance beside the acceptance the drafter's own training data predicts.

No torch here: ``smoke --serve`` and ``--backend server`` import this for the comparison, and the replay
(specprobe.smoke.offline, torch) is imported only when a dump is given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specprobe.findings import Finding, Measurement, Report
from specprobe.rules import smoke as smoke_rules

WHAT_TO_CHECK = (
    "check the aux layer ids the engine captures against those the dump was made with (vLLM reads aux id i as "
    "the input of layer i; SGLang and SpecForge's capture as the output of layer i), the target class's EAGLE-3 "
    "support in this engine release, and `specprobe check DRAFT --target TARGET --engine ENGINE==VERSION --exact`"
)


def _bounds(point: float | None, ci95: Any) -> tuple[float, float] | None:
    """The 95% interval, or the point itself where no interval was measured (one prompt, gauges only)."""
    if isinstance(ci95, list) and len(ci95) == 2 and all(isinstance(v, int | float) for v in ci95):
        return float(ci95[0]), float(ci95[1])
    if isinstance(point, int | float):
        return float(point), float(point)
    return None


def offline_gap_finding(engine: Measurement, offline: Measurement, k: int) -> Finding | None:
    """SMOKE-ENGINE-BELOW-DATA when the engine's acceptance length is clearly below the data's.

    Clearly: the engine's 95% interval over prompts lies wholly below the data's 95% interval over
    samples (their upper and lower ends), so the threshold grows with the noise of both measurements
    rather than being a fixed share. None when the figures do not say that.
    """
    engine_bounds = _bounds(engine.mean_acceptance_length, engine.ci95)
    data_bounds = _bounds(offline.mean_acceptance_length, offline.ci95)
    if engine_bounds is None or data_bounds is None:
        return None
    if engine_bounds[1] >= data_bounds[0]:
        return None
    rate = engine.acceptance_rate
    data_rate = offline.acceptance_rate
    positions = ""
    if engine.per_position and len(engine.per_position) == len(offline.per_position):
        positions = "; per position (engine/data): " + ", ".join(
            f"{e:.3f}/{d:.3f}" if isinstance(e, float) and isinstance(d, float) else f"{e}/{d}"
            for e, d in zip(engine.per_position, offline.per_position, strict=True)
        )
    said_rate = (
        f"the engine accepts {rate:.2f} of draft tokens where the drafter's own data predicts {data_rate:.2f}"
        if isinstance(rate, float) and isinstance(data_rate, float)
        else "the engine accepts fewer draft tokens than the drafter's own data predicts"
    )
    return smoke_rules.ENGINE_BELOW_DATA.finding(
        f"{said_rate} (mean acceptance length {engine.mean_acceptance_length} against {offline.mean_acceptance_length}"
        f" at K={k}; 95% intervals {engine_bounds[0]:.3f}-{engine_bounds[1]:.3f} and "
        f"{data_bounds[0]:.3f}-{data_bounds[1]:.3f}){positions}: it is not giving the drafter the hidden states "
        "it was trained on",
        hint=WHAT_TO_CHECK,
    )


def offline_details(offline: Measurement) -> dict[str, Any]:
    """The data's figures as they sit beside the engine's in the report (``offline_expectation``)."""
    details = offline.details
    return {
        "source": "hidden-states",
        "mean_acceptance_length": offline.mean_acceptance_length,
        "acceptance_rate": offline.acceptance_rate,
        "per_position": offline.per_position,
        "ci95": offline.ci95,
        "drafts": offline.drafts,
        "samples": details.get("samples"),
        "tokens": offline.tokens,
        "dump_format": details.get("dump_format"),
        "loss_mask_source": details.get("loss_mask_source"),
        "generation": details.get("generation"),
    }


def attach_offline(measured: Measurement, offline: Measurement, k: int) -> Finding | None:
    """Put the data's expectation beside the engine's figures; the finding when the engine is clearly below."""
    measured.details["offline_expectation"] = offline_details(offline)
    return offline_gap_finding(measured, offline, k)


def compare_with_data(  # noqa: PLR0917 - one call per backend, every value is needed
    report: Report,
    measured: Measurement,
    hidden_states: Path,
    draft: Path,
    target: str | None,
    k: int,
    *,
    max_samples: int | None = None,
    device: str = "cpu",
    dtype: str = "float32",
    progress: bool = True,
    loss_mask_dataset: Path | None = None,
) -> None:
    """Replay the drafter on its dump (torch, imported here) and put the engine beside it."""
    from specprobe.smoke.offline import OfflineOptions, run_offline  # noqa: PLC0415 - torch only with a dump

    offline = run_offline(
        OfflineOptions(
            draft=draft,
            hidden_states=hidden_states,
            target=target,
            num_speculative_tokens=k,
            max_samples=max_samples,
            device=device,
            dtype=dtype,
            progress=progress,
            loss_mask_dataset=loss_mask_dataset,
        )
    )
    report.extend(f for f in offline.findings if f.rule != smoke_rules.MEASURED.id)
    if offline.measurement is None or offline.measurement.mean_acceptance_length is None:
        return
    finding = attach_offline(measured, offline.measurement, k)
    if finding is not None:
        report.findings.insert(0, finding)
