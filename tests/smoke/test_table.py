"""The docs tables are regenerated from the JSON reports the runs wrote (no torch needed)."""

from __future__ import annotations

from pathlib import Path

from specprobe.smoke.table import gpu_table, main, serve_table

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_gpu_table_reproduces_the_published_acceptance_figures() -> None:
    table = gpu_table(DOCS / "smoke")
    published = (DOCS / "smoke" / "README.md").read_text(encoding="utf-8")
    rows = table.splitlines()[2:]
    assert len(rows) == 4
    for row in rows:
        drafter, k, length = (cell.strip() for cell in row.strip("|").split("|")[:3])
        # Same drafter, K and mean acceptance length (with its interval) as the hand-checked README row.
        assert f"| {drafter} | {k} | {length.split(' (')[0]}" in published


def test_serve_table_names_each_run_and_its_verdict() -> None:
    table = serve_table(DOCS / "real-engine" / "results")
    assert "| llama-eagle3 | reaches the reference | 3.6978 | 3.6978 | +0.0% |" in table
    assert "No common block size for 16" in table


def test_unreadable_folder_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "smoke-k1.json").write_text("[1]", encoding="utf-8")
    assert main(["gpu", str(tmp_path)]) == 2
