"""COMPATIBILITY.md is generated from the matrix data and the snapshots; it must not go stale."""

from __future__ import annotations

from pathlib import Path

from specprobe.compat.loader import load_matrix
from specprobe.compat.render import render_markdown

DOC = Path(__file__).parents[2] / "COMPATIBILITY.md"
REGENERATE = "specprobe matrix --format markdown --output COMPATIBILITY.md"


def test_compatibility_md_is_current():
    assert DOC.read_text(encoding="utf-8") == render_markdown(load_matrix()), f"COMPATIBILITY.md is stale: {REGENERATE}"


def test_every_entry_and_link_is_in_the_document():
    text = DOC.read_text(encoding="utf-8")
    for entry in load_matrix():
        assert f"`{entry.id}`" in text
        for item in entry.evidence:
            assert item in text
