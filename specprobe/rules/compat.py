"""Compatibility-matrix rules: known drafter x target x engine-version verdicts as findings.

``run(ctx)`` is what `check` (and `lint`) call once the target and engine are known; `matrix`
turns its verdicts into findings through ``verdict_finding`` so all three say the same thing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

from specprobe.compat.evaluate import evaluate, finding_severity
from specprobe.compat.loader import load_matrix
from specprobe.compat.methods import unavailable_method
from specprobe.compat.model import DRAFT_FORMATS, Entry, EntryKind, Match, Pairing, Status, Verdict
from specprobe.compat.snapshots import SnapshotSource, StoreSnapshots
from specprobe.compat.subjects import normalize_method, target_model_types
from specprobe.engines.versions import parse_version
from specprobe.findings import Finding, Severity
from specprobe.hfconfig import ModelConfig, attention_traits
from specprobe.rules import AppliesTo, Rule, rule

_VLLM_SPECULATIVE_SOURCE = "https://github.com/vllm-project/vllm/blob/v0.16.0/vllm/config/speculative.py"
_SGLANG_SPEC_INFO_SOURCE = (
    "https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/speculative/spec_info.py"
)

KNOWN_ISSUE = rule(
    "COMPAT-KNOWN-ISSUE",
    "compat",
    Severity.ERROR,
    "The drafter/target/engine-version pairing is known to be broken, degraded or refused.",
    "https://github.com/vllm-project/vllm/issues/31254",
)
EAGLE3_TARGET = rule(
    "COMPAT-EAGLE3-TARGET",
    "compat",
    Severity.ERROR,
    "The vLLM version refuses EAGLE-3 for a target model_type outside its eagle3_target_supported list.",
    _VLLM_SPECULATIVE_SOURCE,
    "https://github.com/vllm-project/vllm/issues/32765",
    # Only the releases that check the list (fact eagle3_target_allowlist): vLLM 0.22.0 dropped it.
    applies_to=AppliesTo("vllm", "eagle3_target_allowlist", "checked"),
)
METHOD_UNAVAILABLE = rule(
    "COMPAT-METHOD-UNAVAILABLE",
    "compat",
    Severity.ERROR,
    "The speculative method does not exist (any more, or yet) in this engine version: every method is checked "
    "against the version's schema snapshot.",
    "https://github.com/vllm-project/vllm/issues/47825",
    _VLLM_SPECULATIVE_SOURCE,
    _SGLANG_SPEC_INFO_SOURCE,
)
FEATURE_UNSUPPORTED = rule(
    "COMPAT-FEATURE",
    "compat",
    Severity.ERROR,
    "A serving feature (LoRA, min_p, pipeline parallelism, structured output...) fails with speculative decoding.",
    "https://github.com/vllm-project/vllm/issues/42744",
)
KNOWN_GOOD = rule(
    "COMPAT-KNOWN-GOOD",
    "compat",
    Severity.INFO,
    "The pairing is known to work on this engine version (with measured acceptance where recorded).",
    "https://github.com/sgl-project/sglang/pull/19689",
)
MAY_APPLY = rule(
    "COMPAT-MAY-APPLY",
    "compat",
    Severity.INFO,
    "A known verdict applies if the facets not given (target, version, feature...) match.",
    "https://github.com/vllm-project/vllm/issues/31254",
)


def rule_for(verdict: Verdict) -> Rule:
    if verdict.match is not Match.APPLIES:
        return MAY_APPLY
    if verdict.effective_status is Status.WORKS:
        return KNOWN_GOOD
    return {
        EntryKind.EAGLE3_TARGET_ALLOWLIST: EAGLE3_TARGET,
        EntryKind.METHOD_AVAILABILITY: METHOD_UNAVAILABLE,
        EntryKind.FEATURE: FEATURE_UNSUPPORTED,
    }.get(verdict.entry.kind, KNOWN_ISSUE)


def verdict_finding(verdict: Verdict, prefix: str = "") -> Finding:
    """One verdict as a finding: the entry's own evidence first (the reporter shows the first link)."""
    chosen = rule_for(verdict)
    entry = verdict.entry
    cited = [*entry.evidence, *chosen.evidence]
    # Links first: the text reporter shows the first item, and a URL is what a reader can follow.
    evidence = list(dict.fromkeys(sorted(cited, key=lambda item: not item.startswith("https://"))))
    return Finding(
        rule=chosen.id,
        severity=finding_severity(verdict),
        message=prefix + verdict.message,
        location=f"compat_matrix/{entry.source}#{entry.id}" if entry.source else f"compat_matrix#{entry.id}",
        hint=entry.hint,
        evidence=evidence,
    )


class CompatContext(Protocol):
    """The part of check's context the matrix needs (read-only, so any context object fits)."""

    @property
    def draft_dir(self) -> Path: ...

    @property
    def draft_config(self) -> ModelConfig | None: ...

    @property
    def draft_format(self) -> str | None: ...

    @property
    def draft_architecture(self) -> str | None: ...

    @property
    def target_config(self) -> ModelConfig | None: ...

    @property
    def engines(self) -> Sequence[tuple[str, str]]: ...

    @property
    def method(self) -> str | None: ...




def pairings_for(ctx: CompatContext) -> list[tuple[Pairing, str]]:
    """One pairing per engine named in the context, and a note when the method was inferred."""
    method = normalize_method(ctx.method) if ctx.method else None
    note = ""
    if method is None and ctx.draft_format in DRAFT_FORMATS:
        # An EAGLE-3 checkpoint is served with method eagle3; vLLM even guesses it from the path.
        method, note = "eagle3", "(method eagle3 assumed from the drafter format) "
    target = ctx.target_config
    pairings = []
    for engine, version in ctx.engines:
        pairings.append(
            (
                Pairing(
                    engine=engine.lower(),
                    version=parse_version(version),
                    method=method,
                    draft_format=ctx.draft_format,
                    draft_architecture=ctx.draft_architecture,
                    target_model_types=target_model_types(target) if target else (),
                    target_attention=attention_traits(target) if target else frozenset(),
                    target_config=target.raw if target else None,
                    # A CPU deployment is the matrix's `cpu` feature; other features are unknown to check.
                    features=frozenset({"cpu"}) if getattr(ctx, "device", None) == "cpu" else None,
                    draft_label=str(ctx.draft_dir),
                ),
                note,
            )
        )
    return pairings


# check's target family already reports vLLM's model_type gate (TARGET-EAGLE3-UNSUPPORTED) from the
# same snapshots; check leaves it out here so one fact is one finding. lint and matrix keep it.
CHECK_SKIPS = frozenset({EntryKind.EAGLE3_TARGET_ALLOWLIST})


def run(
    ctx: CompatContext,
    entries: Iterable[Entry] | None = None,
    snapshots: SnapshotSource | None = None,
    skip_kinds: frozenset[EntryKind] = CHECK_SKIPS,
) -> Iterable[Finding]:
    """Definite matrix verdicts for each engine of the check (possible ones stay in `matrix`)."""
    matrix = [e for e in (entries if entries is not None else load_matrix()) if e.kind not in skip_kinds]
    for pairing, note in pairings_for(ctx):
        verdicts = evaluate(matrix, pairing, snapshots)
        # A method the user named (not the one inferred from the drafter) must exist in that release.
        yield from matrix_findings(
            pairing, verdicts, prefix=f"{pairing.engine_label}: {note}", method_named=ctx.method is not None,
            snapshots=snapshots,
        )  # fmt: skip


def matrix_findings(
    pairing: Pairing,
    verdicts: Sequence[Verdict],
    *,
    prefix: str = "",
    method_named: bool = False,
    definite_only: bool = True,
    snapshots: SnapshotSource | None = None,
) -> list[Finding]:
    """The one matrix stage's findings for one pairing, as check, lint and `matrix` report them: a
    finding per verdict (only the definite ones, ``Match.APPLIES``, unless ``definite_only`` is off, as
    in `matrix`, which lists the possible ones too), and, when the user named the method, whether the
    release offers it at all."""
    found = [verdict_finding(v, prefix) for v in verdicts if not definite_only or v.match is Match.APPLIES]
    if method_named:
        found += method_unavailable_findings([pairing], verdicts, snapshots)
    return found


def method_unavailable_findings(
    pairings: Iterable[Pairing], verdicts: Sequence[Verdict], snapshots: SnapshotSource | None = None
) -> list[Finding]:
    """A finding per pairing whose method its engine version's snapshot does not offer, unless a curated
    method-availability entry already says so."""
    source = snapshots if snapshots is not None else StoreSnapshots()
    curated = any(v.entry.kind is EntryKind.METHOD_AVAILABILITY and v.match is Match.APPLIES for v in verdicts)
    findings: list[Finding] = []
    for pairing in pairings:
        found = None if curated else unavailable_method(pairing, source)
        if found is None:
            continue
        finding = METHOD_UNAVAILABLE.finding(
            found.message,
            location="--method",
            hint="run `specprobe schema ENGINE==VERSION` for the methods that version offers",
        )
        # The version's own source first: the reporter shows the first link.
        finding.evidence = list(dict.fromkeys([*found.evidence, *finding.evidence]))
        findings.append(finding)
    return findings
