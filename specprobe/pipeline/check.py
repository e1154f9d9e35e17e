"""`specprobe check` as a library: read a drafter folder (and a target config), run the rule families.

Only config.json files and safetensors headers (plus the small d2t/t2d tensors, and tensor data in
bounded chunks under ``deep``) are read; nothing is imported from the checkpoint and nothing is written.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from specprobe.checkpoint.folder import draft_folder, load_checkpoint
from specprobe.checkpoint.layout import detect_layout, effective_draft_config
from specprobe.context import CheckContext, Family
from specprobe.engines.spec import ENGINE_NAMES, EngineSpec, parse_engine_spec
from specprobe.findings import Finding, Report, SpecprobeError
from specprobe.hfconfig import ConfigError, ModelConfig, load_config_json, parse_model_config, resolve_config_path
from specprobe.rules import (
    compat,
    deep,
    engine_config,
    files,
    layout,
    methods,
    platform,
    quant,
    safety,
    shapes,
    target,
    tokenizer,
    vocab,
    within_lifecycle,
)
from specprobe.rules.internal import internal_error
from specprobe.schema.store import known_versions, latest_version

__all__ = ["ENGINE_NAMES", "CheckContext", "Family", "build_context", "parse_engine", "run_check"]


def parse_engine(spec: str | None) -> tuple[list[tuple[str, str]], bool]:
    """The (engine, version) pairs the engine rules run for, and whether the user named the engine.

    None means the newest known vLLM and SGLang; ``vllm`` the newest vLLM; ``vllm==0.16.0`` that
    release; a range such as ``vllm>=0.16,<0.20`` every shipped snapshot in it (the worst verdict wins,
    each finding naming its version).
    """
    if spec is None:
        return [(name, latest_version(name)) for name in ENGINE_NAMES], False
    return engine_versions(parse_engine_spec(spec)), True


def engine_versions(spec: EngineSpec) -> list[tuple[str, str]]:
    """The shipped versions ``spec`` names; a range that names none is a usage error."""
    if spec.version is not None:
        return [(spec.engine, spec.version)]
    if spec.specifier is None:
        return [(spec.engine, latest_version(spec.engine))]
    known = known_versions(spec.engine)
    chosen = spec.select(known)
    if not chosen:
        raise SpecprobeError(
            f"no shipped {spec.engine} snapshot is in {spec}; shipped: {', '.join(known) or 'none'}"
        )
    return [(spec.engine, version) for version in chosen]


def _families() -> list[Family]:
    # compat last: the matrix verdicts for this drafter/target/engine pairing, once the checkpoint's
    # own findings are in.
    return [files.run, safety.run, layout.run, methods.run, shapes.run, vocab.run, tokenizer.run, target.run,
            quant.run, engine_config.run, platform.run, deep.run, compat.run]


def _load_target(spec: str) -> tuple[ModelConfig | None, str | None]:
    path = resolve_config_path(spec)
    try:
        return parse_model_config(load_config_json(path)), None
    except ConfigError as exc:
        return None, f"target {spec}: {exc}"


def build_context(
    draft_dir: Path | str,
    *,
    target: str | None = None,
    engine: str | None = None,
    method: str | None = None,
    deep: bool = False,
    device: str | None = None,
) -> CheckContext:
    draft_path = draft_folder(draft_dir)
    engines, explicit = parse_engine(engine)
    engine_spec = parse_engine_spec(engine) if engine is not None else None
    target_config, target_error = _load_target(target) if target else (None, None)
    try:
        checkpoint = load_checkpoint(draft_path)
    except OSError as exc:
        raise SpecprobeError(f"cannot read draft folder {draft_path}: {exc.strerror or exc}") from None
    draft_config = (
        parse_model_config(effective_draft_config(checkpoint.config_raw)) if checkpoint.config_raw is not None else None
    )
    layout = detect_layout(checkpoint, checkpoint.config_raw)
    return CheckContext(
        draft_dir=draft_path,
        draft_config=draft_config,
        draft_format=layout.draft_format,
        draft_architecture=layout.architecture,
        target_config=target_config,
        engines=engines,
        method=method.strip().lower() if method else None,
        checkpoint=checkpoint,
        layout=layout,
        draft_raw=checkpoint.config_raw,
        target_spec=target,
        target_error=target_error,
        engine_explicit=explicit,
        engine_spec=engine_spec,
        device=device.strip().lower() if device else None,
        deep=deep,
    )


def run_families(ctx: CheckContext, families: Iterable[Family], report: Report) -> None:
    """Run each family in order; a crash in one becomes an INTERNAL-ERROR finding (the command then
    exits 2, never 0) and the other families still run."""
    for family in families:
        found: list[Finding] = []
        try:
            # Collected first: a family that raises half-way must not leave half its findings behind
            # looking like a complete verdict.
            found = list(family(ctx))
        except Exception as exc:  # a bug in a rule must not hide the other families' findings
            where = getattr(family, "__module__", repr(family))
            finding = internal_error(where, exc)
            ctx.notes.append(finding.message)
            report.add(finding)
            sys.stderr.write(f"specprobe: {finding.message}\n")
            continue
        report.extend(found)


def run_check(
    draft_dir: Path | str,
    *,
    target: str | None = None,
    engine: str | None = None,
    method: str | None = None,
    deep: bool = False,
    families: Iterable[Family] | None = None,
    device: str | None = None,
    exact: bool = False,
) -> Report:
    """Check one drafter folder; bad checkpoints give findings, unusable arguments raise SpecprobeError."""
    ctx = build_context(draft_dir, target=target, engine=engine, method=method, deep=deep, device=device)
    report = Report(
        command="check",
        subject={
            "draft": str(ctx.draft_dir),
            "target": target,
            "engine": ", ".join(f"{name}=={version}" for name, version in ctx.engines),
        },
    )
    if ctx.device is not None:
        report.subject["device"] = ctx.device
    if ctx.draft_format is not None:
        report.extra["draft_format"] = ctx.draft_format
    run_families(ctx, _families() if families is None else families, report)
    if exact:
        # The engine release's own code on the same drafter (specprobe.engines.exact); its interpreter
        # failing is exit 2, never a pass. Imported here: the engine-probe and provisioning machinery
        # (urllib, ssl: ~25 ms) is for --exact only.
        from specprobe.rules.exact import check_exact  # noqa: PLC0415

        check_exact(ctx, report)
    # A rule whose engine range (or status) puts it outside every release judged says nothing here.
    report.findings = within_lifecycle(report.findings, ctx.engines)
    if ctx.notes:
        report.extra["internal_errors"] = ctx.notes
    return report
