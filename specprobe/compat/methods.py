"""Is a speculative method offered at all? Every method the matrix is asked about is checked against the
schema snapshots (the engine version's own, or every shipped one), not only methods with a curated entry.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import Version

from specprobe.compat.engine_facts import source_url, vllm_speculative_config_path
from specprobe.compat.evaluate import method_presence
from specprobe.compat.model import Pairing
from specprobe.compat.snapshots import SnapshotSource
from specprobe.engines.spec import ENGINE_NAMES


@dataclass(frozen=True)
class MethodVerdict:
    """A method no engine version in question offers, and the snapshots and source that show it."""

    message: str
    evidence: tuple[str, ...]


def _method_source(engine: str, version: Version) -> str:
    if engine == "sglang":
        return source_url("sglang", str(version), "sglang/srt/speculative/spec_info.py")
    return source_url("vllm", str(version), vllm_speculative_config_path(str(version)))


def _offered(snapshots: SnapshotSource, engine: str, version: Version, method: str) -> bool | None:
    facts = snapshots.facts(engine, version)
    return None if facts is None or facts.methods is None else method in facts.methods


def unavailable_method(pairing: Pairing, snapshots: SnapshotSource) -> MethodVerdict | None:
    """Why ``pairing.method`` cannot run, or None when it may (or the snapshots cannot tell)."""
    method = pairing.method
    if method is None:
        return None
    engines = [pairing.engine] if pairing.engine else list(ENGINE_NAMES)
    if pairing.engine is not None and pairing.version is not None:
        presence = method_presence(snapshots, pairing.engine, pairing.version, method)
        if presence is None or presence[0]:
            return None
        where = " and ".join(str(v) for v in presence[1])
        return MethodVerdict(
            f"{pairing.engine} {pairing.version} has no speculative method {method!r} (snapshot {where})",
            tuple(_method_source(pairing.engine, v) for v in presence[1]),
        )
    # No version: the method must exist in some shipped snapshot of the engine(s) in question.
    seen: list[tuple[str, Version]] = []
    for engine in engines:
        for version in snapshots.versions(engine):
            offered = _offered(snapshots, engine, version, method)
            if offered is None:
                return None  # a snapshot without a method list: cannot tell
            if offered:
                return None
            seen.append((engine, version))
    if not seen:
        return None
    named = ", ".join(f"{engine} {version}" for engine, version in seen)
    return MethodVerdict(
        f"no shipped snapshot offers speculative method {method!r} ({named})",
        tuple(_method_source(engine, version) for engine, version in seen[-1:]),
    )
