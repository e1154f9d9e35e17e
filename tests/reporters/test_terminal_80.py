"""What a person reads fits an 80-column terminal: each command run in a pseudo-terminal of 80 columns
(as a user's shell gives it, no COLUMNS set) prints no line wider than 80, a link or a path alone
on its line aside, and `schema vllm` stays a page a person reads (at most 200 lines)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import sys
import termios
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
COLUMNS = 80
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# A word that cannot be broken (a link, a long absolute path) alone on its line may pass the width.
_LONE_WORD = re.compile(r"\s*(?:see:\s*)?\S+")


def in_terminal(*args: str, columns: int = COLUMNS) -> list[str]:
    """The lines `specprobe ARGS` writes (stdout and stderr) in a pseudo-terminal of ``columns``."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: specprobe on the pty, as from a shell
        env = {k: v for k, v in os.environ.items() if k not in {"COLUMNS", "LINES"}}
        env["PYTHONPATH"] = str(ROOT)
        os.chdir(ROOT)
        os.execvpe(sys.executable, [sys.executable, "-m", "specprobe", *args], env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    out = b""
    while True:
        ready, _, _ = select.select([fd], [], [], 120)
        if not ready:
            break
        try:
            data = os.read(fd, 65536)
        except OSError:  # the child closed the pty
            break
        if not data:
            break
        out += data
    os.waitpid(pid, 0)
    text = _ESCAPES.sub("", out.decode("utf-8", "replace")).replace("\r", "")
    return text.split("\n")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("demo") / "models"
    assert in_terminal("demo", "--static", "--out", str(folder))
    return folder


def _commands(demo: Path) -> list[list[str]]:
    return [
        ["schema", "vllm"],
        ["schema", "sglang"],
        ["demo", "--static", "--out", str(demo.parent / "again")],
        ["rule", "LAYOUT-ARCH-UNRESOLVED"],
        ["check", str(demo / "draft-broken"), "--target", str(demo / "target")],
        ["gate", "examples/bad"],
        ["rules"],
        ["matrix"],
        ["engines", "--help"],
        ["matrix", "--help"],
        ["gate", "--help"],
        ["schema", "vllm==0.99.0"],
    ]


def test_no_line_is_wider_than_the_terminal(demo: Path) -> None:
    for args in _commands(demo):
        lines = in_terminal(*args)
        assert len(lines) > 1, args
        wide = [line for line in lines if len(line) > COLUMNS and not _LONE_WORD.fullmatch(line)]
        assert not wide, (args, wide[:3])


def test_schema_leads_with_methods_and_is_a_page() -> None:
    lines = [line for line in in_terminal("schema", "vllm") if line]
    assert len(lines) <= 200
    headings = [line for line in lines if not line.startswith(" ") and not line.startswith("specprobe:")]
    assert headings[2] == "Speculative methods" and headings[3].startswith("Parameters")
    assert "--verbose" in headings[1]  # provenance in one line
