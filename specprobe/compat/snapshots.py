"""What the engines' schema snapshots say about speculative decoding, as the matrix needs it.

Entries of kind eagle3-target-allowlist and method-availability are derived from these facts rather
than retyped, so that a new snapshot updates the matrix.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from packaging.version import Version

from specprobe.engines.versions import parse_version
from specprobe.findings import SpecprobeError


@dataclass(frozen=True)
class SnapshotFacts:
    """The speculative-decoding facts of one engine version's snapshot."""

    engine: str
    version: Version
    eagle3_target_supported: tuple[str, ...] | None  # None: this version does not gate EAGLE-3 targets
    methods: tuple[str, ...] | None  # None: the snapshot does not list methods


class SnapshotSource(Protocol):
    """Where snapshot facts come from (the shipped store, or a folder of snapshots in tests)."""

    def versions(self, engine: str) -> list[Version]:
        """Versions with a snapshot, ascending."""
        ...

    def facts(self, engine: str, version: Version) -> SnapshotFacts | None:
        """The facts of exactly this version's snapshot, or None when there is none."""
        ...


def _strings(value: Any) -> tuple[str, ...] | None:
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value)
    return None


def facts_from_schema(engine: str, version: Version, schema: Any) -> SnapshotFacts:
    """Read the facts off an EngineSchema (or its JSON form as a dict)."""

    def field(name: str) -> Any:
        return schema.get(name) if isinstance(schema, dict) else getattr(schema, name, None)

    methods = field("methods")
    if isinstance(methods, dict):
        methods = list(methods)
    # Later vLLM releases renamed the list aux_hidden_states_supported (it gates eagle3 and the other
    # methods that read the target's aux hidden states); either name carries the same gate.
    gate = field("eagle3_target_supported")
    if gate is None:
        gate = field("aux_hidden_states_supported")
    return SnapshotFacts(
        engine=engine,
        version=version,
        eagle3_target_supported=_strings(gate),
        methods=tuple(m.lower() for m in _strings(methods) or ()) or None,
    )


class StoreSnapshots:
    """The snapshots shipped in ``specprobe/data/schemas/`` through ``specprobe.schema.store``.

    The store is imported on first use; when it is not importable the matrix simply has no snapshot
    facts (allowlist entries then stay POSSIBLE instead of guessing).
    """

    def __init__(self) -> None:
        self._cache: dict[tuple[str, Version], SnapshotFacts | None] = {}

    @staticmethod
    def _store() -> Any:
        try:
            return importlib.import_module("specprobe.schema.store")
        except ImportError:
            return None

    def versions(self, engine: str) -> list[Version]:
        store = self._store()
        if store is None:
            return []
        parsed = {version for raw in store.known_versions(engine) or () if (version := parse_version(str(raw)))}
        return sorted(parsed)

    def facts(self, engine: str, version: Version) -> SnapshotFacts | None:
        key = (engine, version)
        if key in self._cache:
            return self._cache[key]
        store = self._store()
        found: SnapshotFacts | None = None
        if store is not None:
            matching = [v for v in store.known_versions(engine) or () if _same_version(str(v), version)]
            schema = store.load_snapshot(engine, str(matching[0])) if matching else None
            if schema is not None:
                found = facts_from_schema(engine, version, schema)
        self._cache[key] = found
        return found


def _same_version(raw: str, version: Version) -> bool:
    return parse_version(raw) == version


@dataclass(frozen=True)
class ResolvedFacts:
    """Facts that hold for a requested version, and which snapshot(s) they were read from."""

    facts: SnapshotFacts
    from_versions: tuple[Version, ...]
    exact: bool


def bracketing_facts(
    source: SnapshotSource, engine: str, version: Version
) -> tuple[tuple[Version, SnapshotFacts], tuple[Version, SnapshotFacts]] | None:
    """The snapshots just below and just above ``version``, or None when it is not between two."""
    known = source.versions(engine)
    lower = [v for v in known if v < version]
    upper = [v for v in known if v > version]
    if not lower or not upper:
        return None
    below, above = source.facts(engine, lower[-1]), source.facts(engine, upper[0])
    if below is None or above is None:
        return None
    return (lower[-1], below), (upper[0], above)


def resolve_facts(source: SnapshotSource, engine: str, version: Version, attribute: str) -> ResolvedFacts | None:
    """The snapshot facts for ``version``: its own snapshot, or, between two snapshots that agree on
    ``attribute``, the facts they share (a list unchanged across a range of releases holds inside it).
    Outside the snapshotted range nothing is assumed."""
    exact = source.facts(engine, version)
    if exact is not None:
        return ResolvedFacts(exact, (version,), True)
    around = bracketing_facts(source, engine, version)
    if around is None:
        return None
    (low, below), (high, above) = around
    if getattr(below, attribute) != getattr(above, attribute):
        return None
    return ResolvedFacts(below, (low, high), False)


class FolderSnapshots:
    """Snapshots in a folder laid out like the shipped store (``<engine>/<version>.json``), e.g.
    ones extracted from a local engine with `specprobe schema`."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _files(self, engine: str) -> dict[Version, Path]:
        found: dict[Version, Path] = {}
        folder = self.root / engine
        if not folder.is_dir():
            return found
        for path in folder.glob("*.json"):
            version = parse_version(path.stem)
            if version is not None:
                found[version] = path
        return found

    def versions(self, engine: str) -> list[Version]:
        return sorted(self._files(engine))

    def facts(self, engine: str, version: Version) -> SnapshotFacts | None:
        path = self._files(engine).get(version)
        if path is None:
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SpecprobeError(f"snapshot {path} is unreadable: {exc}") from None
        return facts_from_schema(engine, version, data) if isinstance(data, dict) else None
