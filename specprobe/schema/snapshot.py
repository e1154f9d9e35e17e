"""Writing snapshots: probe an interpreter live, or build the shipped store from raw probe replies.

``python -m specprobe.schema.snapshot ENGINE PYTHON [--install NOTE]`` probes one interpreter and
writes its snapshot (scripts/snapshot-engine.sh provisions the interpreter first);
``scripts/snapshot_all.py build`` calls :func:`build_from_raw`, which turns the raw replies of every
release into ``specprobe/data/schemas/<engine>/``: one file per release with a distinct surface, the
values several releases share stored once in ``_shared.json``, and patch releases identical to the
release before them recorded there as aliases.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from packaging.version import Version

from specprobe import __version__
from specprobe.engines._probe import Interpreter, check_interpreter
from specprobe.engines.versions import parse_version
from specprobe.findings import SpecprobeError
from specprobe.schema import store
from specprobe.schema.live import extract_live
from specprobe.schema.model import EngineSchema
from specprobe.schema.replies import FROM_REPLY

# Provenance keys that describe the machine that made the snapshot, not the release.
_LOCAL_KEYS = ("interpreter", "interpreter_selected_by", "import_seconds", "probe_seconds")


def write_snapshot(engine: str, python: Path, install: str | None = None, folder: Path | None = None) -> Path:
    """Probe ``python`` (never from the cache) and write ``<folder>/<version>.json``; returns the path."""
    interpreter = Interpreter(check_interpreter(python), "--python")
    schema, _ = extract_live(engine, interpreter, use_cache=False)
    schema.provenance["installed_by"] = install or "pip install " + f"{engine}=={schema.version}"
    for key in _LOCAL_KEYS:
        schema.provenance.pop(key, None)
    target_dir = folder or store.snapshot_dir(engine)
    target_dir.mkdir(parents=True, exist_ok=True)
    target = target_dir / f"{schema.version}.json"
    payload = schema.copy(source="snapshot").to_json_dict()
    target.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return target


def release_line(engine: str, version: str) -> str:
    """vLLM's minor (``0.10``); SGLang's ``x.y.z`` (SGLang ships a release line per patch number)."""
    release = Version(version).release
    return ".".join(map(str, release[:2] if engine == "vllm" else release[:3]))


def surface(schema: EngineSchema) -> dict[str, Any]:
    """What a release accepts and does: everything but its version and how it was obtained."""
    data = schema.to_json_dict()
    for key in ("version", "source", "provenance"):
        data.pop(key, None)
    return data


def schema_from_record(record: dict[str, Any]) -> EngineSchema:
    """The snapshot of one raw record written by scripts/snapshot_all.py."""
    engine = str(record["engine"])
    schema = FROM_REPLY[engine](dict(record["reply"]))
    for key in _LOCAL_KEYS:
        schema.provenance.pop(key, None)
    schema.provenance.update(
        {
            "installed_by": record.get("installed_by"),
            "overlay": bool(record.get("overlay")),
            "probe_hash": record.get("probe_hash"),
            "install_figures": record.get("figures"),
            "extracted_at": record.get("extracted_at"),
            "specprobe_version": __version__,
        }
    )
    if record.get("refreshed_from"):
        # Probed by an earlier probe; the facts read from source files were re-read by the current one.
        schema.provenance["source_facts_reread_from_probe"] = record["refreshed_from"]
    schema.source = "snapshot"
    return schema


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _share(value: Any, objects: dict[str, Any]) -> dict[str, str]:
    key = _digest(value)
    objects.setdefault(key, value)
    return {store.SHARED_KEY: key}


def compact(payload: dict[str, Any], objects: dict[str, Any]) -> dict[str, Any]:
    """Move the bulky values (each parameter, each CLI flag, the model registry) into ``objects``."""
    out = dict(payload)
    out["parameters"] = {name: _share(spec, objects) for name, spec in payload["parameters"].items()}
    out["cli_flags"] = [_share(flag, objects) for flag in payload["cli_flags"]]
    if payload.get("model_architectures"):
        out["model_architectures"] = _share(payload["model_architectures"], objects)
    return out


def _references(value: Any) -> list[str]:
    """Every shared key a stored value refers to."""
    if isinstance(value, dict):
        if len(value) == 1 and store.SHARED_KEY in value:
            return [str(value[store.SHARED_KEY])]
        return [key for item in value.values() for key in _references(item)]
    if isinstance(value, list):
        return [key for item in value for key in _references(item)]
    return []


def _sort_key(version: str) -> Version:
    return parse_version(version) or Version("0")


def _kept_schemas(folder: Path, built: set[str]) -> dict[str, EngineSchema]:
    """The snapshots already in ``folder`` that this build has no reply for, expanded."""
    try:
        shared = json.loads((folder / store.SHARED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        shared = {}
    objects = dict(shared.get("objects") or {}) if isinstance(shared, dict) else {}
    kept: dict[str, EngineSchema] = {}
    for path in sorted(folder.glob("*.json")):
        version = path.name[: -len(".json")]
        if version.startswith("_") or version in built:
            continue
        try:
            kept[version] = EngineSchema.from_dict(store.expand(json.loads(path.read_text(encoding="utf-8")), objects))
        except (OSError, ValueError):
            continue  # unreadable: compared with nothing, left in place
    return kept


def build_engine(engine: str, records: list[dict[str, Any]], folder: Path) -> list[str]:
    """Write ``folder`` from ``records`` (one per release); returns one line per release."""
    built = {str(record["version"]) for record in records}
    kept = _kept_schemas(folder, built)
    schemas = sorted(
        [*(schema_from_record(record) for record in records), *kept.values()], key=lambda s: _sort_key(s.version)
    )
    objects: dict[str, Any] = {}
    same_surface: dict[str, str] = {}
    written: list[str] = []
    lines: list[str] = []
    previous: tuple[str, str, dict[str, Any]] | None = None  # (line, kept version, surface)
    for schema in schemas:
        line = release_line(engine, schema.version)
        current = surface(schema)
        if schema.version in kept and schema.version not in built:
            # A shipped release this build has no reply for stays as it is, but a later patch release
            # of its line that equals it is still shipped as an alias of it.
            previous = (line, schema.version, current)
            continue
        if previous is not None and previous[0] == line and previous[2] == current:
            same_surface[schema.version] = previous[1]
            lines.append(f"{engine} {schema.version}: same surface as {previous[1]}")
            continue
        payload = compact(schema.to_json_dict(), objects)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{schema.version}.json").write_text(
            json.dumps(payload, indent=None, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8"
        )
        written.append(schema.version)
        how = "overlay" if schema.provenance.get("overlay") else "full install"
        lines.append(f"{engine} {schema.version}: written ({how}, {len(schema.problems)} problems)")
        previous = (line, schema.version, current)
    for stale in folder.glob("*.json"):
        version = stale.name[: -len(".json")]
        if version.startswith("_"):
            continue
        # A release rebuilt from raw, or now an alias, replaces its old file; others stay as they were.
        if version in built and version not in written:
            stale.unlink()
    # Files this build left as they were (releases it had no reply for) keep their shared values.
    shared_path = folder / store.SHARED_FILE
    if shared_path.is_file():
        try:
            old = json.loads(shared_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            old = {}
        old_objects = dict(old.get("objects") or {})
        for kept_path in folder.glob("*.json"):
            if kept_path.name.startswith("_") or kept_path.name[: -len(".json")] in written:
                continue
            for key in _references(json.loads(kept_path.read_text(encoding="utf-8"))):
                if key in old_objects:
                    objects.setdefault(key, old_objects[key])
        for version, twin in dict(old.get("same_surface") or {}).items():
            if version not in built and twin not in built:
                same_surface.setdefault(version, twin)
    shared = {"objects": dict(sorted(objects.items())), "same_surface": same_surface}
    (folder / store.SHARED_FILE).write_text(
        json.dumps(shared, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8"
    )
    return lines


def build_from_raw(
    raw_dir: Path,
    engines: Iterable[str],
    folder: Path | None = None,
    accept: Callable[[dict[str, Any]], bool] | None = None,
) -> list[str]:
    """Build the shipped store of each engine from ``raw_dir/<engine>/*.json``; replies ``accept`` refuses
    (made by other probe code, lacking what the current probe extracts) are left out."""
    lines: list[str] = []
    for engine in engines:
        records = []
        for path in sorted((raw_dir / engine).glob("*.json")):
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                lines.append(f"{engine}: skipped {path.name}: {exc}")
                continue
            if not record.get("extracted_at"):
                # Replies written before the extraction time was recorded: the file's own time.
                stamp = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC).replace(microsecond=0)
                record["extracted_at"] = stamp.isoformat()
            if accept is not None and not accept(record):
                lines.append(f"{engine} {record.get('version')}: skipped, made by another probe")
                continue
            records.append(record)
        target = (folder / engine) if folder else store.snapshot_dir(engine)
        lines.extend(build_engine(engine, records, target))
    store.clear_caches()
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m specprobe.schema.snapshot", description=__doc__)
    parser.add_argument("engine", choices=["vllm", "sglang"])
    parser.add_argument("python", type=Path, help="interpreter that has the engine installed")
    parser.add_argument("--install", help="how the engine was installed (recorded in the provenance)")
    parser.add_argument("--folder", type=Path, help="write here instead of the package's snapshot folder")
    args = parser.parse_args(argv)
    try:
        path = write_snapshot(args.engine, args.python, args.install, args.folder)
    except SpecprobeError as exc:
        sys.stderr.write(f"snapshot: error: {exc}\n")
        return 2
    sys.stdout.write(f"{path}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
