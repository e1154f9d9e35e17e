"""Snapshot store: extracted engine schemas shipped as package data (``specprobe/data/schemas``).

Snapshots live inside the package, not at the repository root, so an installed wheel serves them.
Importing this module is cheap (no engine, no torch): ``check`` and ``matrix`` read it.
"""

from __future__ import annotations

import json
from functools import cache, lru_cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from packaging.version import Version

from specprobe.engines.facts import newest_read
from specprobe.engines.versions import parse_version
from specprobe.findings import SpecprobeError
from specprobe.schema.model import ENGINES, EngineSchema


def _engine_dir(engine: str) -> Traversable:
    return resources.files("specprobe").joinpath("data", "schemas", engine)


def snapshot_dir(engine: str) -> Path:
    """The on-disk folder of ``engine``'s snapshots (for the snapshot writer; a source checkout)."""
    return Path(str(_engine_dir(engine)))


def _sort_key(version: str) -> tuple[int, Version | str]:
    parsed = parse_version(version)
    return (1, parsed) if parsed is not None else (0, version)


SHARED_FILE = "_shared.json"
SHARED_KEY = "$shared"


@lru_cache(maxsize=4)
def _shared(engine: str) -> dict[str, Any]:
    """The engine's shared store: ``objects`` (values several snapshots hold, by content hash) and
    ``same_surface`` (a patch release -> the release whose snapshot it is identical to)."""
    entry = _engine_dir(engine).joinpath(SHARED_FILE)
    try:
        payload = json.loads(entry.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"objects": {}, "same_surface": {}}
    except (OSError, ValueError) as exc:
        raise SpecprobeError(f"snapshot store {engine}/{SHARED_FILE} is unreadable: {exc}") from None
    if not isinstance(payload, dict):
        raise SpecprobeError(f"snapshot store {engine}/{SHARED_FILE} is not a JSON object")
    return {"objects": dict(payload.get("objects") or {}), "same_surface": dict(payload.get("same_surface") or {})}


def expand(value: Any, objects: dict[str, Any]) -> Any:
    """Replace every ``{"$shared": HASH}`` with the stored value."""
    if isinstance(value, dict):
        if len(value) == 1 and SHARED_KEY in value:
            key = value[SHARED_KEY]
            if key not in objects:
                raise ValueError(f"shared value {key} is missing")
            return expand(objects[key], objects)
        return {name: expand(item, objects) for name, item in value.items()}
    if isinstance(value, list):
        return [expand(item, objects) for item in value]
    return value


@lru_cache(maxsize=8)
def _listing(engine: str) -> tuple[str, ...]:
    if engine not in ENGINES:
        return ()
    folder = _engine_dir(engine)
    if not folder.is_dir():
        return ()
    names = [
        entry.name[: -len(".json")]
        for entry in folder.iterdir()
        if entry.name.endswith(".json") and not entry.name.startswith("_")
    ]
    # Patch releases whose surface equals an earlier release's are shipped as that snapshot.
    names.extend(version for version, twin in _shared(engine)["same_surface"].items() if twin in names)
    return tuple(sorted(set(names), key=_sort_key))


def known_versions(engine: str) -> list[str]:
    """Versions of ``engine`` with a shipped snapshot, oldest first (PEP 440 order)."""
    return list(_listing(engine))


def latest_version(engine: str) -> str:
    """The newest release read for ``engine``: its newest shipped snapshot, or, with none shipped, the
    newest release the engine facts were read against (engines.yaml). The one answer that `check`,
    `lint`, `gate` and a deployment with no stated version all use."""
    versions = known_versions(engine)
    return versions[-1] if versions else newest_read()[engine]


def _match(engine: str, version: str) -> str | None:
    versions = _listing(engine)
    if version in versions:
        return version
    wanted = parse_version(version)
    if wanted is None:
        return None
    for candidate in versions:
        if _sort_key(candidate) == (1, wanted):
            return candidate
    return None


# Unbounded: one process reads at most the shipped snapshots (about 60, each a few kB parsed), and a
# bound below their number made a gate or matrix over many releases parse the same files again.
@cache
def _read(engine: str, version: str) -> EngineSchema:
    shared = _shared(engine)
    twin = shared["same_surface"].get(version)
    if twin is not None:
        schema = _read(engine, twin).copy(version=version)
        schema.provenance["same_surface_as"] = twin
        return schema
    entry = _engine_dir(engine).joinpath(f"{version}.json")
    try:
        payload = expand(json.loads(entry.read_text(encoding="utf-8")), shared["objects"])
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
    wanted = parse_version(version)
    if wanted is None:
        return None
    older = [known for known in _listing(engine) if _sort_key(known)[0] == 1 and Version(known) <= wanted]
    return older[-1] if older else None


def clear_caches() -> None:
    """Forget what was read (after the store was rewritten)."""
    _shared.cache_clear()
    _listing.cache_clear()
    _read.cache_clear()
