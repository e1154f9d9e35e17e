"""`specprobe smoke` as a library: static check first, then a measured run, then findings.

The CLI only parses options into ``SmokeOptions`` and emits the returned report.
"""

from __future__ import annotations

import math
import statistics
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from specprobe.findings import Finding, Measurement, Report, SpecprobeError
from specprobe.pipeline.check import run_check
from specprobe.rules import smoke as smoke_rules
from specprobe.smoke.plot import plot_per_position
from specprobe.smoke.prompts import encode_prompts, load_prompts
from specprobe.smoke.stats import acceptance_extra, finite, from_counts, tokens_per_second

Progress = Any


@dataclass(frozen=True)
class SmokeOptions:
    """Options of one smoke run (reference backend, and the reference side of --compare-reference)."""

    target: str
    draft: Path
    device: str = "cpu"
    dtype: str = "float32"
    num_speculative_tokens: int = 3
    prompts: Path | None = None
    max_prompts: int | None = None
    max_new_tokens: int = 64
    min_acceptance_length: float | None = None
    plot: Path | None = None
    force: bool = False
    progress: bool = True
    timing_repeats: int = 1
    # What an engine returned for the same prompts ({"text", "token_ids"} each, from smoke --serve):
    # compared with the target's own greedy output, each divergence classified by the target's logit
    # margin (engine_output in the result).
    engine_outputs: list[dict[str, Any]] | None = None


def static_check(
    draft: Path, target: str | None, engine: str | None = None, *, method: str | None = None, device: str | None = None
) -> Report:
    """`specprobe check` of the drafter against the target (for the engine, method and device that will
    serve it, when known), run before anything is measured."""
    return run_check(draft, target=target, engine=engine, method=method, device=device)


def _validate(options: SmokeOptions) -> None:
    if not options.draft.is_dir():
        raise SpecprobeError(f"draft {str(options.draft)!r} is not a folder")
    if options.timing_repeats < 1:
        raise SpecprobeError("--timing-repeats must be at least 1")
    if options.num_speculative_tokens < 1:
        raise SpecprobeError("--num-speculative-tokens must be at least 1")
    if options.max_new_tokens < 2:
        raise SpecprobeError("--max-new-tokens must be at least 2")
    if options.device not in ("cpu", "cuda") and not options.device.startswith("cuda:"):
        raise SpecprobeError(f"unknown device {options.device!r}; use cpu or cuda[:N]")
    if options.plot is not None and options.plot.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise SpecprobeError("--plot must name a .png, .svg or .pdf file")


def _progress_bar(total: int, enabled: bool, description: str) -> Any:
    # On stderr so that the report on stdout stays a clean document.
    return tqdm(total=total, desc=description, unit="tok", disable=not enabled, file=sys.stderr, leave=False)


def measurement_findings(
    measured: Measurement | Mapping[str, Any], *, min_acceptance_length: float | None, label: str
) -> list[Finding]:
    """SMOKE-MEASURED, and the error findings a measured run can raise (a mapping is read as the
    figures of ``Measurement.from_figures``)."""
    if not isinstance(measured, Measurement):
        measured = Measurement.from_figures(dict(measured))
    findings: list[Finding] = []
    length = measured.mean_acceptance_length
    rate = measured.acceptance_rate
    speedup = measured.speedup
    details = measured.details
    if isinstance(speedup, float) and speedup > 1.0 and measured.accepted_tokens == 0:
        # Nothing was accepted, so speculation did strictly more work than target-only decoding: a
        # ratio above 1 comes from the machine (contention, frequency scaling), not from the drafter.
        measured.speedup = None
        details["timing_noise_speedup"] = speedup
        findings.append(
            smoke_rules.TIMING_NOISE.finding(
                f"measured {speedup:.2f}x over target-only greedy with no draft token accepted: timing noise, "
                "not a speed-up",
                hint="time on an otherwise idle machine, or with --timing-repeats N (median of N runs)",
            )
        )
        speedup = None
    summary = (
        f"{label}: mean acceptance length {length if length is not None else 'n/a'}"
        f", acceptance rate {rate if rate is not None else 'n/a'}"
        f" at K={measured.num_speculative_tokens}"
        + (f", speed-up {speedup:.2f}x over target-only greedy" if isinstance(speedup, float) else "")
        + (f", lossless {measured.lossless}" if measured.lossless is not None else "")
    )
    findings.append(smoke_rules.MEASURED.finding(summary))
    for tie in details.get("near_tie_divergences") or []:
        findings.append(
            smoke_rules.NEAR_TIE.finding(
                f"prompt {tie['prompt']}: speculative output leaves the target-only greedy output at new token "
                f"{tie['position']}, where the target's two candidates differ by {tie['margin']:.3g} in logit "
                f"(rounding tolerance {tie['tolerance']:.3g}): a near-tie, not a verification error",
            )
        )
    if measured.lossless is False:
        confident = details.get("confident_divergences") or []
        where = "; ".join(
            f"prompt {d['prompt']} at new token {d['position']} "
            f"(margin {d['margin']:.3g} > tolerance {d['tolerance']:.3g})"
            for d in confident[:3]
        )
        findings.append(
            smoke_rules.NOT_LOSSLESS.finding(
                f"{details.get('lossless_prompts')} prompts match the target's greedy output token for token; "
                f"diverged at a confident position: {where}",
                hint="greedy verification must emit only tokens the target chooses; check d2t and the verify step",
            )
        )
    if min_acceptance_length is not None and (length is None or length < min_acceptance_length):
        findings.append(
            smoke_rules.ACCEPTANCE_LOW.finding(
                f"mean acceptance length {length} is below the required {min_acceptance_length}",
                hint="run `specprobe check` on the drafter; a shuffled or missing d2t, wrong aux layer ids or "
                "a mismatched chat template all collapse acceptance",
            )
        )
    return findings


def run_reference(options: SmokeOptions) -> Report:
    """Static check, then greedy chain speculative decoding against target-only greedy decoding."""
    _validate(options)
    report = Report(
        command="smoke",
        subject={"target": options.target, "draft": str(options.draft), "backend": "reference"},
    )
    check = static_check(options.draft, options.target)
    if not check.ok:
        report.extend(check.findings)
        if not options.force:
            report.extra["refused"] = "the static check reported errors; pass --force to measure anyway"
            return report
        report.add(
            smoke_rules.CHECK_SKIPPED.finding(
                f"measured despite {check.summary.errors} error finding(s) from the static check"
            )
        )
    figures = measure_reference(options, report)
    if not figures:
        return report
    measured = report.measurement = Measurement.from_figures(figures)
    if measured.measured:
        report.extend(
            measurement_findings(
                measured, min_acceptance_length=options.min_acceptance_length, label="reference backend"
            )
        )
    if options.plot is not None and measured.per_position and measured.mean_acceptance_length is not None:
        plot_per_position(
            options.plot,
            measured.per_position,
            title=f"{Path(options.draft).name} on {Path(options.target).name}: K={options.num_speculative_tokens}, "
            f"mean acceptance length {measured.mean_acceptance_length:.2f}",
        )
        report.extra["plot"] = str(options.plot)
    return report


def measure_reference(options: SmokeOptions, report: Report) -> dict[str, Any]:
    """Load, warm up, and time both loops; the acceptance figures and the JSON keys of the report."""
    # torch and the reference backend only when measuring here: smoke --serve imports this module for its
    # static check and findings and must not load torch.
    import torch  # noqa: PLC0415

    from specprobe.smoke.eagle3 import DrafterFormatError, resolve_dtype  # noqa: PLC0415
    from specprobe.smoke.reference import (  # noqa: PLC0415
        classify_divergence,
        greedy_generate,
        load_reference_drafter,
        load_target,
        speculative_generate,
    )
    if options.device.startswith("cuda") and not torch.cuda.is_available():
        raise SpecprobeError("--device cuda: no CUDA device is available to torch")
    dtype = resolve_dtype(options.dtype)
    if options.device.startswith("cuda"):
        # Exact float32 matmuls: TF32 rounding makes near-tie argmax flips look like lossless failures.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    target = load_target(options.target, device=options.device, dtype=dtype)
    try:
        drafter = load_reference_drafter(options.draft, target, device=options.device, dtype=dtype)
    except DrafterFormatError as exc:
        report.add(smoke_rules.DRAFT_UNREADABLE.finding(str(exc), location=str(options.draft)))
        return {}
    prompts = load_prompts(options.prompts, limit=options.max_prompts)
    encoded = encode_prompts(target.tokenizer, prompts)
    k, n = options.num_speculative_tokens, options.max_new_tokens
    # Warm-up on one short prompt so that first-call costs (allocations, kernel selection) stay out of the timings.
    greedy_generate(target, encoded[:1], 4, device=options.device)
    speculative_generate(target, drafter, encoded[:1], 4, k, device=options.device)
    total = len(encoded) * n
    baseline_seconds: list[float] = []
    spec_seconds: list[float] = []
    # Timings repeat (median reported) because one short run on a GPU is dominated by launch jitter;
    # the tokens are the same every time (greedy), so the last run's are kept.
    for _ in range(max(1, options.timing_repeats)):
        with _progress_bar(total, options.progress, "target-only greedy") as bar:
            baseline = greedy_generate(target, encoded, n, device=options.device, progress=bar.update)
        with _progress_bar(total, options.progress, f"speculative K={k}") as bar:
            spec = speculative_generate(target, drafter, encoded, n, k, device=options.device, progress=bar.update)
        baseline_seconds.append(baseline.seconds)
        spec_seconds.append(spec.seconds)
    baseline.seconds = statistics.median(baseline_seconds)
    spec.seconds = statistics.median(spec_seconds)
    stats = from_counts(k, spec.drafts, spec.accepted, spec.accepted_per_pos)
    equal = [a == b for a, b in zip(spec.tokens, baseline.tokens, strict=True)]
    tokens = sum(len(t) for t in spec.tokens)
    spec_tps = tokens_per_second(tokens, spec.seconds)
    base_tps = tokens_per_second(sum(len(t) for t in baseline.tokens), baseline.seconds)
    extra: dict[str, Any] = acceptance_extra(stats)
    near_ties: list[dict[str, Any]] = []
    confident: list[dict[str, Any]] = []
    for prompt, ids, greedy_tokens, spec_tokens in zip(prompts, encoded, baseline.tokens, spec.tokens, strict=True):
        divergence = classify_divergence(target, ids, greedy_tokens, spec_tokens, device=options.device)
        if divergence is None:
            continue
        (near_ties if divergence.near_tie else confident).append(divergence_entry(prompt.id, divergence))
    extra.update(
        {
            # Lossless up to rounding: only a divergence at a confident position breaks it.
            "lossless": not confident,
            "lossless_prompts": f"{sum(equal)}/{len(equal)}",
            "not_lossless_prompt_ids": [d["prompt"] for d in confident],
            "near_tie_divergences": near_ties,
            "confident_divergences": confident,
            "tokens": tokens,
            "tokens_per_s": finite(spec_tps),
            "target_only_tokens_per_s": finite(base_tps),
            "speedup": finite(spec_tps / base_tps) if base_tps and not math.isnan(base_tps) else None,
            "seconds_speculative": round(spec.seconds, 4),
            "seconds_target_only": round(baseline.seconds, 4),
            "seconds_per_1k_tokens": finite(1000.0 * spec.seconds / tokens) if tokens else None,
            "timing_repeats": len(spec_seconds),
            "per_prompt_mean_acceptance_length": finite(
                statistics.fmean(stats.per_prompt_acceptance_length) if stats.per_prompt_acceptance_length else math.nan
            ),
            "prompts": len(encoded),
            "max_new_tokens": n,
            "device": str(torch.cuda.get_device_name(0)) if options.device.startswith("cuda") else "cpu",
            "dtype": options.dtype,
            "target_attention": target.attention,
            "target_parameters": sum(p.numel() for p in target.model.parameters()),
            "draft_parameters": sum(
                p.numel() for name, p in drafter.named_parameters() if not name.startswith("embed_tokens.")
            ),
            "aux_layer_ids": list(drafter.cfg.aux_layer_ids),
            "draft_vocab_size": drafter.cfg.draft_vocab_size,
            "torch": torch.__version__,
        }
    )
    if options.engine_outputs is not None and len(options.engine_outputs) == len(encoded):
        extra["engine_output"] = compare_engine_outputs(
            target, prompts, encoded, baseline.tokens, options.engine_outputs, device=options.device
        )
    return extra


def divergence_entry(prompt_id: str, divergence: Any, *, other: str = "speculative_token") -> dict[str, Any]:
    """One divergence in the result JSON: where, which two tokens, the target's margin and the tolerance."""
    return {
        "prompt": prompt_id,
        "position": divergence.position,
        "greedy_token": divergence.greedy_token,
        other: divergence.speculative_token,
        "margin": divergence.margin,
        "tolerance": divergence.tolerance,
    }


def compare_engine_outputs(
    target: Any,
    prompts: list[Any],
    encoded: list[list[int]],
    greedy: list[list[int]],
    outputs: list[dict[str, Any]],
    *,
    device: str,
) -> dict[str, Any]:
    """The engine's output against the target's greedy output, prompt by prompt.

    Greedy speculative decoding is lossless, so an engine that computes the checkpoint's model returns
    the target's own greedy continuation whatever the drafter does, up to near-ties. The engine's token
    ids are used when it returns them, else its text re-encoded with the target's tokenizer.
    """
    # the reference backend loads torch: see measure_reference.
    from specprobe.smoke.reference import classify_divergence  # noqa: PLC0415

    matching = 0
    near_ties: list[dict[str, Any]] = []
    confident: list[dict[str, Any]] = []
    for prompt, ids, greedy_tokens, output in zip(prompts, encoded, greedy, outputs, strict=True):
        tokens = output.get("token_ids")
        if tokens is None:
            text = output.get("text")
            if not isinstance(text, str):
                continue
            if text == target.tokenizer.decode(greedy_tokens, skip_special_tokens=True):
                matching += 1
                continue
            tokens = target.tokenizer.encode(text, add_special_tokens=False)
        length = min(len(tokens), len(greedy_tokens))
        divergence = classify_divergence(target, ids, greedy_tokens[:length], tokens[:length], device=device)
        if divergence is None:
            matching += 1
            continue
        entry = divergence_entry(prompt.id, divergence, other="engine_token")
        (near_ties if divergence.near_tie else confident).append(entry)
    return {
        "matching": matching,
        "compared": matching + len(near_ties) + len(confident),
        "near_tie_divergences": near_ties,
        "confident_divergences": confident,
    }
