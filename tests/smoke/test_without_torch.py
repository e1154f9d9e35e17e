"""`smoke` where torch (the smoke extra) is not installed: one line naming the extra, exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
# torch made unimportable in the child, as on a machine without the smoke extra.
_WITHOUT = "import sys; sys.modules['{module}'] = None; sys.argv = ['specprobe', *sys.argv[1:]]; "
_WITHOUT += "from specprobe.cli import main; main()"


@pytest.mark.parametrize("module", ["torch", "transformers"])
def test_smoke_without_the_extra_is_one_line_and_exit_2(module: str, tmp_path: Path) -> None:
    from specprobe.demo.fixtures import DraftSpec
    from tests.fix.builders import make_draft, make_target

    # A valid pair: the static check passes, so the run reaches the libraries it measures with.
    target, draft = make_target(tmp_path / "target"), make_draft(tmp_path / "draft", DraftSpec())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT.format(module=module), "smoke", "--target", str(target), "--draft",
         str(draft)],
        capture_output=True, text=True, env=env, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "smoke extra" in lines[0] and "internal error" not in lines[0], done.stderr
