"""`specprobe check` as a library: read a drafter folder (and a target config), run the rule families.

Only config.json files and safetensors headers (plus the small d2t/t2d tensors, and tensor data in
bounded chunks under ``deep``) are read; nothing is imported from the checkpoint and nothing is written.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterable
from pathlib import Path

from specprobe.checkpoint.folder import Checkpoint, load_checkpoint
from specprobe.checkpoint.layout import detect_layout, effective_draft_config
from specprobe.context import CheckContext, Family
from specprobe.engines.spec import ENGINE_NAMES, EngineSpec, parse_engine_spec
from specprobe.findings import Finding, Report, SpecprobeError
from specprobe.hfconfig import MAX_CONFIG_BYTES, ConfigError, ModelConfig, parse_config_bytes, parse_model_config
from specprobe.modelfiles import HubSession, ModelFiles, ModelUnavailableError, locate
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
from specprobe.rules import hub as hub_rules
from specprobe.rules.internal import guarded
from specprobe.schema.store import known_versions, latest_version
from specprobe.untrusted.files import UntrustedInputError, expand_user, is_file

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


def _hub_findings(ctx: CheckContext) -> Iterable[Finding]:
    """The drafter or target that could not be read from the hub (collected while building the context)."""
    return ctx.hub_findings


def _load_target(
    spec: str, hub: HubSession
) -> tuple[ModelConfig | None, str | None, ModelFiles | None, ModelUnavailableError | None, Checkpoint | None]:
    """The target's parsed config.json, why it is unusable, where it is, why the hub could not give it, and
    for a local folder its checkpoint (config.json and safetensors headers): read once here, so the rules
    that need the target's tensor names read neither file again. A hub target is read for its config only."""
    try:
        files = locate(spec, role="target", hub=hub)
    except ModelUnavailableError as exc:
        return None, None, None, exc, None
    if files.folder is not None:
        try:
            checkpoint = load_checkpoint(files)
        except OSError:
            checkpoint = None
        if checkpoint is not None and checkpoint.config_raw is not None:
            return parse_model_config(checkpoint.config_raw), None, files, None, checkpoint
    # A config.json given by path (under any file name) is read as written.
    given = expand_user(spec)
    name = given.name if files.repo_id is None and is_file(given) else "config.json"
    try:
        data = files.read_file(name, max_bytes=MAX_CONFIG_BYTES)
        return parse_model_config(parse_config_bytes(data, name).value), None, files, None, None
    except FileNotFoundError:
        return None, f"target {spec}: {name} is missing", files, None, None
    except OSError as exc:
        return None, f"target {spec}: {name} cannot be read: {exc.strerror or exc}", files, None, None
    except (UntrustedInputError, ConfigError) as exc:
        return None, f"target {spec}: {exc}", files, None, None


def build_context(
    draft_dir: Path | str | ModelFiles,
    *,
    target: str | None = None,
    engine: str | None = None,
    method: str | None = None,
    deep: bool = False,
    device: str | None = None,
    hub: HubSession | None = None,
) -> CheckContext:
    """Read the drafter (a folder, a hub id ``owner/name[@rev]``, or files already located) and the target.

    A drafter the hub cannot give raises ModelUnavailableError; a target it cannot give becomes a HUB-*
    finding of the context (``hub_findings``), as an unreadable target config.json is a finding."""
    hub = hub if hub is not None else HubSession()
    draft_files = draft_dir if isinstance(draft_dir, ModelFiles) else locate(draft_dir, role="draft", hub=hub)
    engines, explicit = parse_engine(engine)
    engine_spec = parse_engine_spec(engine) if engine is not None else None
    target_config = target_error = target_files = target_missing = target_checkpoint = None
    if target:
        target_config, target_error, target_files, target_missing, target_checkpoint = _load_target(target, hub)
    try:
        checkpoint = load_checkpoint(draft_files)
    except OSError as exc:
        raise SpecprobeError(f"cannot read draft folder {draft_files.label}: {exc.strerror or exc}") from None
    draft_config = (
        parse_model_config(effective_draft_config(checkpoint.config_raw)) if checkpoint.config_raw is not None else None
    )
    layout = detect_layout(checkpoint, checkpoint.config_raw)
    ctx = CheckContext(
        draft_dir=checkpoint.root,
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
        target_checkpoint=target_checkpoint,
        target_files=target_files,
        engine_explicit=explicit,
        engine_spec=engine_spec,
        device=device.strip().lower() if device else None,
        deep=deep,
        draft_label=draft_files.label,
    )
    if draft_files.commit is not None:
        ctx.commits["draft"] = draft_files.commit
    if target_files is not None and target_files.commit is not None:
        ctx.commits["target"] = target_files.commit
    if target_missing is not None:
        finding = hub_rules.unavailable_finding(target_missing, "target", policy=hub.policy, subject=True)
        ctx.hub_findings.append(finding)
    return ctx


def _collect(family: Family, ctx: CheckContext) -> list[Finding]:
    return list(family(ctx))


def run_families(ctx: CheckContext, families: Iterable[Family], report: Report) -> None:
    """Run each family in order; a crash in one becomes an INTERNAL-ERROR finding (the command then
    exits 2, never 0) and the other families still run."""
    for family in families:
        # Collected whole: a family that raises half-way leaves no half verdict behind.
        where = getattr(family, "__module__", repr(family))
        found, crash = guarded(where, functools.partial(_collect, family, ctx))
        if crash is not None:
            ctx.notes.append(crash.message)
            report.add(crash)
            sys.stderr.write(f"specprobe: {crash.message}\n")
            continue
        report.extend(found or [])


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
    hub: HubSession | None = None,
) -> Report:
    """Check one drafter (a folder or a hub id); bad checkpoints give findings, a drafter the hub cannot
    give a HUB-* finding (never a pass), unusable arguments raise SpecprobeError."""
    hub = hub if hub is not None else HubSession()
    try:
        ctx = build_context(
            draft_dir, target=target, engine=engine, method=method, deep=deep, device=device, hub=hub
        )
    except ModelUnavailableError as exc:
        report = Report(command="check", subject={"draft": str(draft_dir), "target": target, "engine": engine})
        report.add(hub_rules.unavailable_finding(exc, "draft", policy=hub.policy, subject=True))
        return report
    report = Report(
        command="check",
        subject={
            "draft": ctx.draft_label or str(ctx.draft_dir),
            "target": target,
            "engine": ", ".join(f"{name}=={version}" for name, version in ctx.engines),
        },
    )
    for role, commit in ctx.commits.items():
        # The hub commit judged: a branch moves, the verdict is about this commit.
        report.subject[f"{role}_commit"] = commit
    if ctx.device is not None:
        report.subject["device"] = ctx.device
    if ctx.draft_format is not None:
        report.extra["draft_format"] = ctx.draft_format
    report.extend(_hub_findings(ctx))
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
