"""Matching matrix entries against a pairing: which known verdicts apply, which might, and why.

Every facet an entry constrains (engine, version range, method, drafter format/architecture,
target attention/model_type/config.json conditions, serving features) is compared with what is known
of the pairing. A facet the pairing leaves unknown makes the entry POSSIBLE, never silently APPLIES
or NO. Allowlist and method-availability entries read the engine's schema snapshots instead.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Mapping
from fnmatch import fnmatchcase
from typing import Any

from packaging.version import Version

from specprobe.compat.model import Entry, EntryKind, Match, Pairing, Status, Verdict
from specprobe.compat.snapshots import (
    ResolvedFacts,
    SnapshotSource,
    StoreSnapshots,
    bracketing_facts,
    resolve_facts,
)
from specprobe.findings import Severity

_FACET_ORDER = {Match.NO: 0, Match.POSSIBLE: 1, Match.APPLIES: 2}


def _pattern_match(patterns: Iterable[str], values: Iterable[str]) -> bool:
    lowered = [v.lower() for v in values]
    return any(fnmatchcase(value, pattern.lower()) for pattern in patterns for value in lowered)


_COMPARISON = re.compile(r"^(<=|>=|==|!=|<|>)(-?\d+(?:\.\d+)?)$")
_OPERATORS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}


def condition_holds(condition: str, present: bool, value: Any) -> bool:
    """One condition on a config.json key: ``present``, ``absent``, or a numeric comparison."""
    if condition == "present":
        return present
    if condition == "absent":
        return not present
    parsed = _COMPARISON.match(condition)
    if parsed is None or not isinstance(value, int | float) or isinstance(value, bool):
        return False
    return _OPERATORS[parsed.group(1)](float(value), float(parsed.group(2)))


def config_matches(required: tuple[tuple[str, tuple[str, ...]], ...], config: Mapping[str, Any]) -> bool:
    """Every key satisfies at least one of its alternatives."""
    return all(
        any(condition_holds(c, key in config and config[key] is not None, config.get(key)) for c in conditions)
        for key, conditions in required
    )


def _version_in(entry: Entry, version: Version) -> bool:
    # Release candidates and dev builds of a release count as that release.
    return entry.versions.contains(version, prereleases=True)


def facet_matches(entry: Entry, pairing: Pairing) -> tuple[Match, list[str]]:
    """Compare each constrained facet; return the combined match and the facets that were unknown."""
    missing: list[str] = []
    results: list[Match] = []

    def check(constrained: bool, known: bool, ok: bool, need: str) -> None:
        if not constrained:
            return
        if not known:
            results.append(Match.POSSIBLE)
            missing.append(need)
        else:
            results.append(Match.APPLIES if ok else Match.NO)

    check(
        entry.engine != "any",
        pairing.engine is not None,
        pairing.engine == entry.engine,
        f"engine {entry.engine}",
    )
    check(
        bool(str(entry.versions)),
        pairing.version is not None,
        pairing.version is not None and _version_in(entry, pairing.version),
        f"{entry.engine} version {entry.versions}",
    )
    check(
        bool(entry.methods),
        pairing.method is not None,
        pairing.method in entry.methods,
        f"method {'/'.join(entry.methods)}",
    )
    draft_known = pairing.draft_format is not None or pairing.draft_architecture is not None
    check(
        bool(entry.draft_formats),
        pairing.draft_format is not None if draft_known else False,
        pairing.draft_format in entry.draft_formats,
        f"drafter format {'/'.join(entry.draft_formats)}",
    )
    check(
        bool(entry.draft_architectures),
        pairing.draft_architecture is not None if draft_known else False,
        pairing.draft_architecture is not None
        and _pattern_match(entry.draft_architectures, [pairing.draft_architecture]),
        f"drafter architecture {'/'.join(entry.draft_architectures)}",
    )
    check(
        bool(entry.target_attention),
        bool(pairing.target_attention),
        bool(set(entry.target_attention) & pairing.target_attention),
        f"target attention {'/'.join(k.value for k in entry.target_attention)}",
    )
    check(
        bool(entry.target_model_types),
        bool(pairing.target_model_types),
        _pattern_match(entry.target_model_types, pairing.target_model_types),
        f"target model_type {'/'.join(entry.target_model_types)}",
    )
    check(
        bool(entry.target_config),
        pairing.target_config is not None,
        pairing.target_config is not None and config_matches(entry.target_config, pairing.target_config),
        "target config " + ", ".join(f"{k} {'/'.join(c)}" for k, c in entry.target_config),
    )
    check(
        bool(entry.features),
        pairing.features is not None,
        pairing.features is not None and set(entry.features) <= pairing.features,
        f"feature {'+'.join(entry.features)}",
    )
    if not results:
        return Match.APPLIES, missing
    combined = min(results, key=lambda m: _FACET_ORDER[m])
    return combined, missing if combined is Match.POSSIBLE else []


def _message(entry: Entry, match: Match, missing: list[str]) -> str:
    text = f"{entry.status.value}: {entry.summary}"
    if entry.acceptance is not None and entry.acceptance.describe():
        text += f" [measured: {entry.acceptance.describe()}]"
    if match is Match.POSSIBLE:
        text += f" (applies if {', '.join(missing)})"
    return text


def _allowlist_text(facts: ResolvedFacts) -> str:
    versions = " and ".join(str(v) for v in facts.from_versions)
    source = f"snapshot {versions}" if facts.exact else f"snapshots {versions}, which agree"
    allowed = ", ".join(facts.facts.eagle3_target_supported or ())
    return f"[{allowed}] (from the {source})"


def _evaluate_allowlist(entry: Entry, pairing: Pairing, snapshots: SnapshotSource) -> Verdict:
    """vLLM's `eagle3_target_supported` gate: EAGLE-3 is refused unless one of the listed names is a
    substring of the target text model's model_type. The list is read from the snapshot of the
    engine version in question, never retyped here."""
    base, missing = facet_matches(entry, pairing)
    if base is Match.NO:
        return Verdict(entry, Match.NO, "engine, version or method differ")
    if pairing.version is None or pairing.engine is None:
        known = ", ".join(str(v) for v in snapshots.versions("vllm")) or "none"
        need = [*missing, "a vLLM version whose snapshot has an allowlist"]
        return Verdict(
            entry,
            Match.POSSIBLE,
            f"{entry.status.value}: {entry.summary} (snapshots known: {known}; "
            f"applies if {', '.join(dict.fromkeys(need))})",
            tuple(dict.fromkeys(need)),
        )
    resolved = resolve_facts(snapshots, pairing.engine, pairing.version, "eagle3_target_supported")
    if resolved is None:
        return Verdict(
            entry,
            Match.POSSIBLE,
            f"no schema snapshot of vllm {pairing.version} (or of two versions around it that agree) to read "
            "its EAGLE-3 target allowlist from; extract one with `specprobe schema vllm --python PATH`",
            ("a schema snapshot of this vLLM version",),
        )
    allowlist = resolved.facts.eagle3_target_supported
    if allowlist is None:
        return Verdict(entry, Match.NO, f"the vllm {pairing.version} snapshot records no EAGLE-3 target allowlist")
    if not pairing.target_model_types:
        return Verdict(
            entry,
            Match.POSSIBLE,
            f"{entry.status.value}: vllm {pairing.version} accepts EAGLE-3 only for target model_types containing "
            f"one of {_allowlist_text(resolved)} (applies if the target's model_type is not among them)",
            ("target model_type",),
        )
    model_type = pairing.target_model_types[0]
    if any(name in model_type for name in allowlist):
        return Verdict(
            entry,
            Match.NO,
            f"vllm {pairing.version} accepts EAGLE-3 for model_type {model_type!r}: "
            f"allowlist {_allowlist_text(resolved)}",
        )
    return Verdict(
        entry,
        Match.APPLIES,
        f"{entry.status.value}: vllm {pairing.version} refuses EAGLE-3 for target model_type {model_type!r}: "
        f"'Eagle3 is only supported for {list(allowlist)} models' — allowlist {_allowlist_text(resolved)}",
    )


def method_presence(
    snapshots: SnapshotSource, engine: str, version: Version, method: str
) -> tuple[bool, tuple[Version, ...]] | None:
    """Whether ``version`` offers ``method``: its own snapshot says, or the snapshots just below and
    above it agree (a method present, or absent, on both sides holds in between)."""
    exact = snapshots.facts(engine, version)
    if exact is not None and exact.methods is not None:
        return method in exact.methods, (version,)
    around = bracketing_facts(snapshots, engine, version)
    if around is None:
        return None
    (low, below), (high, above) = around
    if below.methods is None or above.methods is None or (method in below.methods) != (method in above.methods):
        return None
    return method in below.methods, (low, high)


def _evaluate_method_availability(entry: Entry, pairing: Pairing, snapshots: SnapshotSource) -> Verdict:
    """A method an engine version does not offer. The snapshot's method list decides when there is
    one for the version; the entry's version range is the fallback."""
    if pairing.method is not None and pairing.method not in entry.methods:
        return Verdict(entry, Match.NO, "method differs")
    if pairing.engine is not None and pairing.engine != entry.engine:
        return Verdict(entry, Match.NO, "engine differs")
    if pairing.engine is not None and pairing.version is not None and pairing.method is not None:
        presence = method_presence(snapshots, pairing.engine, pairing.version, pairing.method)
        if presence is not None:
            offered, versions = presence
            where = " and ".join(str(v) for v in versions)
            if offered:
                offers = f"{entry.engine} {pairing.version} offers {pairing.method!r} (snapshot {where})"
                return Verdict(entry, Match.NO, offers)
            return Verdict(
                entry,
                Match.APPLIES,
                f"{entry.status.value}: {entry.engine} {pairing.version} has no method {pairing.method!r} "
                f"(snapshot {where}). {entry.summary}",
            )
    match, missing = facet_matches(entry, pairing)
    return Verdict(entry, match, _message(entry, match, missing), tuple(missing))


def evaluate_entry(entry: Entry, pairing: Pairing, snapshots: SnapshotSource | None = None) -> Verdict:
    source = snapshots if snapshots is not None else StoreSnapshots()
    if entry.kind is EntryKind.EAGLE3_TARGET_ALLOWLIST:
        return _evaluate_allowlist(entry, pairing, source)
    if entry.kind is EntryKind.METHOD_AVAILABILITY:
        return _evaluate_method_availability(entry, pairing, source)
    match, missing = facet_matches(entry, pairing)
    return Verdict(entry, match, _message(entry, match, missing), tuple(missing))


def evaluate(entries: Iterable[Entry], pairing: Pairing, snapshots: SnapshotSource | None = None) -> list[Verdict]:
    """Every entry that applies or may apply to ``pairing``, worst first."""
    source = snapshots if snapshots is not None else StoreSnapshots()
    verdicts = [evaluate_entry(entry, pairing, source) for entry in entries]
    relevant = [v for v in verdicts if v.match is not Match.NO]
    status_rank = {Status.BROKEN: 0, Status.UNSUPPORTED: 1, Status.DEGRADED: 2, Status.WORKS: 3}
    return sorted(
        relevant,
        key=lambda v: (
            v.match is not Match.APPLIES,
            v.effective_severity.rank,
            status_rank[v.effective_status],
            v.entry.id,
        ),
    )


def finding_severity(verdict: Verdict) -> Severity:
    """A definite verdict keeps the entry's severity; a possible one is information until the
    missing facets are given (it must not fail a run on a guess)."""
    if verdict.match is Match.APPLIES and verdict.effective_status is not Status.WORKS:
        return verdict.effective_severity
    return Severity.INFO


__all__ = ["evaluate", "evaluate_entry", "facet_matches", "finding_severity"]
