"""No per-release version bound is written in Python: engine behaviour by release lives in
specprobe/data/engine_facts/ (one loader, one "newest release read"), so adding a release is a data change
and a forgotten bound cannot silently drop a fact or flip a verdict.

The scan is over the syntax tree of every module under specprobe/: a ``Version("x.y")`` or
``SpecifierSet("...")`` built from a literal, or a string literal that is a PEP 440 comparison
(``"<=0.34.0"``, ``">=0.12,<0.14"``), is refused outside the allowlist below (each entry says why)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "specprobe"
# A PEP 440 clause as a whole string literal (or a comma-joined set of them).
# A dotted version is required: f-string alignment specs such as "<28" are not versions.
SPECIFIER = re.compile(
    r"^\s*(~=|==|!=|<=|>=|<|>|===)\s*v?\d+(\.\d+)+(\.\*)?\s*(,\s*(~=|==|!=|<=|>=|<|>)\s*v?\d+(\.\d+)+\s*)*$"
)
ALLOWED: dict[str, set[str]] = {
    # The facts loader is where ranges are read from data (it holds no literal bound itself).
    "engines/facts.py": set(),
    # Sorting key for a snapshot name that is not PEP 440 (it sorts first), not a release fact.
    "schema/snapshot.py": {'Version("0")'},
}
# Probes run inside an engine's own interpreter and read that release's source: they are the readers of
# the facts, with no fact tables of their own to move.
SKIPPED = ("engines/probes/",)


def _call_name(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def version_literals(source: str) -> list[str]:
    """Each version bound written as a literal in ``source``, as it reads."""
    found: list[str] = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _call_name(node) in ("Version", "SpecifierSet", "Specifier"):
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                found.append(f"{_call_name(node)}({node.args[0].value!r})".replace("'", '"'))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and SPECIFIER.match(node.value):
            found.append(repr(node.value))
    return found


def _modules() -> list[Path]:
    return sorted(
        p for p in PACKAGE.rglob("*.py") if not any(part in p.relative_to(PACKAGE).as_posix() for part in SKIPPED)
    )


@pytest.mark.parametrize("path", _modules(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_version_bound_is_written_in_python(path: Path) -> None:
    relative = path.relative_to(PACKAGE).as_posix()
    found = set(version_literals(path.read_text(encoding="utf-8")))
    extra = found - ALLOWED.get(relative, set())
    assert not extra, f"{relative} writes version bounds {sorted(extra)}: state them in specprobe/data/engine_facts/"


@pytest.mark.parametrize(
    ("source", "caught"),
    [
        ('ok = parsed <= Version("0.34.0")', True),
        ('CHECKED = SpecifierSet(">=0.12,<=0.33.0")', True),
        ('_fact("vllm", ">=0.22.0,<=0.34.0", 1, "x")', True),
        ('s = "==0.5.23"', True),
        ('url = "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/config.py"', False),
        ('version = parse(text)', False),
        ('label = "vllm==" + version', False),
    ],
)
def test_the_scan_itself(source: str, caught: bool) -> None:
    assert bool(version_literals(source)) is caught
