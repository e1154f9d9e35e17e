"""Writing a snapshot: probe an interpreter live and store the result under ``specprobe/data/schemas``.

Run as ``python -m specprobe.schema.snapshot ENGINE PYTHON [--install NOTE]`` from a source checkout
(scripts/snapshot-engine.sh provisions the interpreter first).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from specprobe.engines._probe import Interpreter, check_interpreter
from specprobe.findings import SpecprobeError
from specprobe.schema import store
from specprobe.schema.live import extract_live


def write_snapshot(engine: str, python: Path, install: str | None = None, folder: Path | None = None) -> Path:
    """Probe ``python`` (never from the cache) and write ``<folder>/<version>.json``; returns the path."""
    interpreter = Interpreter(check_interpreter(python), "--python")
    schema, _ = extract_live(engine, interpreter, use_cache=False)
    schema.provenance["installed_by"] = install or "pip install " + f"{engine}=={schema.version}"
    # The interpreter path is of the machine that wrote the snapshot; it means nothing elsewhere.
    schema.provenance.pop("interpreter", None)
    schema.provenance.pop("interpreter_selected_by", None)
    target_dir = folder or store.snapshot_dir(engine)
    target_dir.mkdir(parents=True, exist_ok=True)
    target = target_dir / f"{schema.version}.json"
    payload = schema.copy(source="snapshot").to_json_dict()
    target.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return target


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
