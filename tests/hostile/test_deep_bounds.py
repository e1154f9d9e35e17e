"""--deep on hostile weights: holes of sparse files are counted, not read; the scan is bounded."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from specprobe.pipeline.check import run_check
from specprobe.rules import deep
from tests.hostile.builders import make_sparse_tensor, valid_draft


def test_a_100_gb_sparse_tensor_is_all_zero_without_being_read(tmp_path: Path) -> None:
    folder = valid_draft(tmp_path / "draft")
    nbytes = make_sparse_tensor(folder, gigabytes=100)
    started = time.monotonic()
    report = run_check(folder, deep=True)
    assert time.monotonic() - started < 10
    zero = [f for f in report.findings if f.rule == "DEEP-ALL-ZERO"]
    assert [f.location for f in zero] == ["model.safetensors:lm_head.weight"]
    assert "holes of a sparse file" in zero[0].message
    assert nbytes == 100 * 10**9
    assert "DEEP-INCOMPLETE" not in report.fired()
    assert not report.ok


def test_scan_stops_at_its_byte_bound_and_says_what_it_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = valid_draft(tmp_path / "draft")
    monkeypatch.setattr(deep, "MAX_SCAN_BYTES", 40_000)
    report = run_check(folder, deep=True)
    incomplete = [f for f in report.findings if f.rule == "DEEP-INCOMPLETE"]
    assert len(incomplete) == 1
    assert "--deep read" in incomplete[0].message and "not checked to the end" in incomplete[0].message
    # A tensor that was not read to its end is never called all-zero.
    assert "DEEP-ALL-ZERO" not in report.fired()


def test_scan_stops_at_its_time_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = valid_draft(tmp_path / "draft")
    monkeypatch.setattr(deep, "MAX_SCAN_SECONDS", 0.0)
    report = run_check(folder, deep=True)
    assert "DEEP-INCOMPLETE" in report.fired()
    assert "DEEP-ALL-ZERO" not in report.fired() and "DEEP-NONFINITE" not in report.fired()


def test_data_between_holes_is_still_read(tmp_path: Path) -> None:
    """A NaN written into the middle of a sparse tensor is found: only the holes are skipped."""
    import struct

    folder = valid_draft(tmp_path / "draft")
    make_sparse_tensor(folder, gigabytes=1)
    path = folder / "model.safetensors"
    from specprobe.checkpoint.safetensors_header import read_header

    entry = read_header(path).tensors["lm_head.weight"]
    with path.open("r+b") as handle:
        handle.seek(entry.begin + (entry.nbytes // 2 // 4) * 4)
        handle.write(struct.pack("<f", float("nan")) * 1024)
    report = run_check(folder, deep=True)
    nonfinite = [f for f in report.findings if f.rule == "DEEP-NONFINITE"]
    assert nonfinite and "1024 NaN/Inf" in nonfinite[0].message
    assert "DEEP-ALL-ZERO" not in report.fired()
