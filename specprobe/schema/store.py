"""Snapshot store: extracted engine schemas shipped as package data (``specprobe/data/schemas``).

Snapshots live inside the package, not at the repository root, so an installed wheel serves them.
Importing this module is cheap (no engine, no torch): ``check`` and ``matrix`` read it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from packaging.version import InvalidVersion, Version

from specprobe.findings import SpecprobeError
from specprobe.schema.model import ENGINES, EngineSchema


def _engine_dir(engine: str) -> Traversable:
    return resources.files("specprobe").joinpath("data", "schemas", engine)


def snapshot_dir(engine: str) -> Path:
    """The on-disk folder of ``engine``'s snapshots (for the snapshot writer; a source checkout)."""
    return Path(str(_engine_dir(engine)))


def _sort_key(version: str) -> tuple[int, Version | str]:
    try:
        return (1, Version(version))
    except InvalidVersion:
        return (0, version)


@lru_cache(maxsize=8)
def _listing(engine: str) -> tuple[str, ...]:
    if engine not in ENGINES:
        return ()
    folder = _engine_dir(engine)
    if not folder.is_dir():
        return ()
    names = [entry.name[: -len(".json")] for entry in folder.iterdir() if entry.name.endswith(".json")]
    return tuple(sorted(names, key=_sort_key))


def known_versions(engine: str) -> list[str]:
    """Versions of ``engine`` with a shipped snapshot, oldest first (PEP 440 order)."""
    return list(_listing(engine))


def _match(engine: str, version: str) -> str | None:
    versions = _listing(engine)
    if version in versions:
        return version
    try:
        wanted = Version(version)
    except InvalidVersion:
        return None
    for candidate in versions:
        if _sort_key(candidate) == (1, wanted):
            return candidate
    return None


@lru_cache(maxsize=32)
def _read(engine: str, version: str) -> EngineSchema:
    entry = _engine_dir(engine).joinpath(f"{version}.json")
    try:
        payload = json.loads(entry.read_text(encoding="utf-8"))
        schema = EngineSchema.from_dict(payload)
    except (OSError, ValueError) as exc:
        # A shipped snapshot that does not parse is a packaging bug; say which file.
        raise SpecprobeError(f"snapshot {engine}/{version}.json is unreadable: {exc}") from None
    schema.source = "snapshot"
    return schema


def load_snapshot(engine: str, version: str | None = None) -> EngineSchema | None:
    """The shipped schema of ``engine`` at ``version`` (newest when None), or None when there is none."""
    if version is None:
        versions = _listing(engine)
        if not versions:
            return None
        chosen: str | None = versions[-1]
    else:
        chosen = _match(engine, version)
    if chosen is None:
        return None
    # A copy, so that callers may mutate their schema without touching the cached one.
    return _read(engine, chosen).copy()


def schema_from_json(text: str) -> EngineSchema:
    """Parse a schema document (a snapshot file or a probe's reply after normalisation)."""
    return EngineSchema.from_json(text)


def nearest_version(engine: str, version: str) -> str | None:
    """The newest shipped version not newer than ``version`` (a release between two snapshots is
    closest in behaviour to the older one), or None when every snapshot is newer or ``version`` is not PEP 440."""
    try:
        wanted = Version(version)
    except InvalidVersion:
        return None
    older = [known for known in _listing(engine) if _sort_key(known)[0] == 1 and Version(known) <= wanted]
    return older[-1] if older else None
