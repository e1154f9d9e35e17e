"""Label tests/cli/cases.py with each provisioned release's own parser: ``python -m tests.cli.label`` writes
tests/cli/labels.json (``{"vllm==0.33.0": [{"args": [...], "ok": bool, "error": str | None}, ...]}``).

Which interpreters: tests/cli/releases.py RELEASES, found in the engine cache."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.cli.cases import SGLANG, VLLM
from tests.cli.releases import interpreter, provisioned

HERE = Path(__file__).resolve().parent
LABELS = HERE / "labels.json"


def run_oracle(engine: str, python: Path, commands: list[list[str]]) -> list[dict[str, object]]:
    done = subprocess.run(
        [str(python), "-I", "-B", str(HERE / "oracle.py"), engine],
        input=json.dumps(commands), capture_output=True, text=True, timeout=900, check=True,
    )
    results: list[dict[str, object]] = json.loads(done.stdout.strip().splitlines()[-1])
    return [{"args": args, **result} for args, result in zip(commands, results, strict=True)]


def main() -> int:
    labels: dict[str, object] = json.loads(LABELS.read_text()) if LABELS.is_file() else {}
    for engine, version in provisioned():
        commands = VLLM if engine == "vllm" else SGLANG
        python = interpreter(engine, version)
        assert python is not None
        labels[f"{engine}=={version}"] = run_oracle(engine, python, commands)
        sys.stdout.write(f"{engine}=={version}: {len(commands)} commands labelled\n")
    LABELS.write_text(json.dumps(labels, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
