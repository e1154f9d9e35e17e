"""Dependencies point downward: the engine probes sit below the schema package and never import it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_engines_import_nothing_from_schema():
    code = (
        "import json, sys; import specprobe.engines, specprobe.engines._probe; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('specprobe.'))))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True, timeout=60
    )
    loaded = json.loads(completed.stdout)
    assert not [name for name in loaded if name.startswith(("specprobe.schema", "specprobe.cli"))], loaded
