"""`specprobe check` as a library: read a drafter folder (and a target config), run the rule families.

Only config.json files and safetensors headers (plus the small d2t/t2d tensors, and tensor data in
bounded chunks under ``deep``) are read; nothing is imported from the checkpoint and nothing is written.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specprobe.checkpoint.folder import Checkpoint, load_checkpoint
from specprobe.checkpoint.layout import Layout, detect_layout, effective_draft_config
from specprobe.findings import Finding, Report, SpecprobeError
from specprobe.hfconfig import ConfigError, ModelConfig, load_config_json, parse_model_config, resolve_config_path

ENGINE_NAMES = ("vllm", "sglang")
# Newest releases whose behaviour the engine-specific rules encode, used when no snapshot is shipped.
FALLBACK_LATEST = {"vllm": "0.33.0", "sglang": "0.5.23"}


@dataclass
class CheckContext:
    """Everything a rule family may look at; built once per run.

    ``draft_format`` is one of ``specprobe.checkpoint.DRAFT_FORMATS``: ``eagle3`` (original EAGLE-3,
    ``midlayer.*`` keys, ``LlamaForCausalLM``), ``specforge`` (``midlayer.*`` keys,
    ``LlamaForCausalLMEagle3``), ``speculators`` (``Eagle3Speculator`` with ``speculators_config``),
    ``vllm-native`` (``layers.0.*`` keys) or ``eagle3-mla`` (DeepSeek MLA attention); None when the
    checkpoint is not recognised as an EAGLE-3 drafter.
    """

    draft_dir: Path
    draft_config: ModelConfig | None
    draft_format: str | None
    draft_architecture: str | None
    target_config: ModelConfig | None
    engines: list[tuple[str, str]]
    method: str | None
    checkpoint: Checkpoint
    layout: Layout
    draft_raw: dict[str, Any] | None = None
    target_spec: str | None = None
    target_error: str | None = None
    engine_explicit: bool = False
    deep: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def draft(self) -> dict[str, Any]:
        """The draft's effective settings (speculators' nested layer config merged in); {} without config."""
        return self.draft_config.raw if self.draft_config is not None else {}


Family = Callable[[CheckContext], Iterable[Finding]]


def parse_engine(spec: str | None) -> tuple[list[tuple[str, str]], bool]:
    """``vllm``, ``sglang``, ``vllm==0.16.0``; None means the newest known vLLM and SGLang."""
    if spec is None:
        return [(name, latest_version(name)) for name in ENGINE_NAMES], False
    name, _, version = spec.strip().partition("==")
    name = name.strip().lower()
    if name not in ENGINE_NAMES:
        raise SpecprobeError(f"unknown engine {spec!r}; use vllm or sglang, optionally ==VERSION")
    version = version.strip()
    if version:
        from packaging.version import InvalidVersion, Version

        try:
            Version(version)
        except InvalidVersion:
            raise SpecprobeError(f"invalid engine version {version!r} in {spec!r}") from None
    return [(name, version or latest_version(name))], True


def latest_version(engine: str) -> str:
    from specprobe.schema.store import known_versions

    versions = known_versions(engine)
    return versions[-1] if versions else FALLBACK_LATEST[engine]


def _families() -> list[Family]:
    from specprobe.rules import compat, deep, files, layout, safety, shapes, target, vocab

    # compat last: the matrix verdicts for this drafter/target/engine pairing, once the checkpoint's
    # own findings are in.
    return [files.run, safety.run, layout.run, shapes.run, vocab.run, target.run, deep.run, compat.run]


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
) -> CheckContext:
    draft_path = Path(draft_dir).expanduser()
    if not draft_path.exists():
        raise SpecprobeError(f"draft folder {draft_path} does not exist")
    if not draft_path.is_dir():
        raise SpecprobeError(f"draft {draft_path} is not a folder")
    engines, explicit = parse_engine(engine)
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
        deep=deep,
    )


def run_families(ctx: CheckContext, families: Iterable[Family], report: Report) -> None:
    """Run each family in order; a crash in one is one line on stderr, the others still run."""
    for family in families:
        try:
            report.extend(family(ctx))
        except Exception as exc:  # a bug in a rule must not hide the other families' findings
            where = getattr(family, "__module__", repr(family))
            line = f"internal error in {where}: {type(exc).__name__}: {exc}"
            ctx.notes.append(line)
            sys.stderr.write(f"specprobe: {line}\n")


def run_check(
    draft_dir: Path | str,
    *,
    target: str | None = None,
    engine: str | None = None,
    method: str | None = None,
    deep: bool = False,
    families: Iterable[Family] | None = None,
) -> Report:
    """Check one drafter folder; bad checkpoints give findings, unusable arguments raise SpecprobeError."""
    ctx = build_context(draft_dir, target=target, engine=engine, method=method, deep=deep)
    report = Report(
        command="check",
        subject={
            "draft": str(ctx.draft_dir),
            "target": target,
            "engine": ", ".join(f"{name}=={version}" for name, version in ctx.engines),
        },
    )
    if ctx.draft_format is not None:
        report.extra["draft_format"] = ctx.draft_format
    run_families(ctx, _families() if families is None else families, report)
    if ctx.notes:
        report.extra["internal_errors"] = ctx.notes
    return report
