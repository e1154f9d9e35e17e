"""Choosing where a schema comes from: a live probe of an interpreter (cached) or a shipped snapshot.

Order: ``--python``, then ``SPECPROBE_<ENGINE>_PYTHON``, then this interpreter when the engine is
importable here; otherwise the newest snapshot, and the caller is told so. ``--version`` alone asks for
that version's snapshot.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from specprobe import __version__
from specprobe.engines import PROBES
from specprobe.engines._probe import DEFAULT_TIMEOUT_S, Interpreter, find_interpreter, run_probe
from specprobe.engines.versions import same_version
from specprobe.findings import SpecprobeError
from specprobe.schema import cache, store
from specprobe.schema.model import EngineSchema
from specprobe.schema.replies import FROM_REPLY


@dataclass(frozen=True)
class Resolution:
    """A schema and how it was obtained (shown to the user on stderr)."""

    schema: EngineSchema
    note: str | None = None
    cached: bool = False




def check_engine(engine: str) -> None:
    if engine not in PROBES:
        raise SpecprobeError(f"unknown engine {engine!r}; choose one of: {', '.join(PROBES)}")


def extract_live(
    engine: str, interpreter: Interpreter, *, timeout_s: float = DEFAULT_TIMEOUT_S, use_cache: bool = True
) -> tuple[EngineSchema, bool]:
    """Probe ``interpreter`` (or answer from the cache); returns (schema, came_from_cache)."""
    check_engine(engine)
    probe = PROBES[engine]
    key = cache.cache_key(engine, interpreter.path, probe.distributions)
    if use_cache and key is not None:
        hit = cache.read(key)
        if hit is not None:
            return hit, True
    reply = run_probe(engine, probe.probe_script, interpreter.path, timeout_s=timeout_s)
    schema = FROM_REPLY[engine](reply)
    schema.provenance.update(
        {
            "extracted_at": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
            "specprobe_version": __version__,
            "interpreter_selected_by": interpreter.how,
        }
    )
    if key is not None:
        cache.write(key, schema)
    return schema, False


def snapshot_or_fail(engine: str, version: str | None) -> EngineSchema:
    found = store.load_snapshot(engine, version)
    if found is None:
        versions = store.known_versions(engine)
        # The range, not every release: `schema history` and `schema diff` list them when asked.
        known = f"{len(versions)} shipped, {versions[0]} to {versions[-1]}" if versions else "none shipped"
        nearest = store.nearest_version(engine, version) if version else None
        near = f", nearest {nearest}" if nearest and nearest != version else ""
        wanted = f"{engine} {version}" if version else engine
        raise SpecprobeError(f"no snapshot of {wanted} ({known}{near}); pass --python to probe an interpreter")
    return found


def resolve_schema(
    engine: str,
    *,
    python: Path | None = None,
    version: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    use_cache: bool = True,
) -> Resolution:
    """The schema ``specprobe schema`` shows, following the order in this module's docstring."""
    check_engine(engine)
    if version is not None and python is None:
        return Resolution(snapshot_or_fail(engine, version))
    interpreter = find_interpreter(engine, python)
    if interpreter is None:
        schema = snapshot_or_fail(engine, None)
        note = (
            f"{engine} is not importable in this interpreter; showing the shipped snapshot of {engine} "
            f"{schema.version} (pass --python PATH to probe an installed engine)"
        )
        return Resolution(schema, note)
    schema, cached = extract_live(engine, interpreter, timeout_s=timeout_s, use_cache=use_cache)
    if version is not None and not same_version(schema.version, version):
        raise SpecprobeError(f"{interpreter.path} has {engine} {schema.version}, not {version}")
    return Resolution(schema, None, cached)
