"""The shipped matrix: every YAML file validates against the JSON Schema beside it, and the
content covers what the field report and the trackers taught."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from packaging.specifiers import SpecifierSet

from specprobe.compat.loader import MatrixError, data_dir, load_file, load_matrix, matrix_files, validation_errors
from specprobe.compat.model import EntryKind, Status
from specprobe.findings import Severity

INVALID = Path(__file__).parent / "invalid"


@pytest.mark.parametrize("path", matrix_files(), ids=lambda p: p.name)
def test_every_matrix_file_validates(path: Path):
    assert validation_errors(yaml.safe_load(path.read_text())) == []
    assert load_file(path)


def test_the_schema_ships_inside_the_package():
    assert (data_dir() / "compat_matrix.schema.json").is_file()
    assert data_dir().parent.name == "data"


def test_matrix_size_and_evidence():
    entries = load_matrix()
    assert len(entries) >= 20
    assert len({e.id for e in entries}) == len(entries)
    for entry in entries:
        assert entry.evidence, entry.id
        assert any(item.startswith("https://") for item in entry.evidence), f"{entry.id} cites no link"
        SpecifierSet(str(entry.versions))  # a valid PEP 440 range
        assert entry.status is not Status.WORKS or entry.severity is Severity.INFO


def test_every_entry_kind_is_used():
    kinds = {e.kind for e in load_matrix()}
    # measured entries come from `matrix record`; the shipped data has every other kind
    assert kinds >= set(EntryKind) - {EntryKind.MEASURED}


def test_field_report_pairings_are_present():
    by_id = {e.id: e for e in load_matrix()}
    vllm = by_id["vllm-eagle3-llama-draft-mla-target"]
    assert (vllm.status, vllm.severity) == (Status.DEGRADED, Severity.ERROR)
    assert vllm.acceptance is not None and vllm.acceptance.acceptance_rate == pytest.approx(0.15)
    assert "docs/evidence/field-report-kimi-k25.md" in vllm.evidence
    assert by_id["sglang-eagle3-mla-target"].status is Status.WORKS


@pytest.mark.parametrize("case", sorted(INVALID.glob("*.yaml")), ids=lambda p: p.stem)
def test_invalid_matrix_files_are_rejected(case: Path):
    expected = case.with_suffix(".errors.txt").read_text().strip()
    with pytest.raises(MatrixError) as raised:
        load_file(case)
    assert expected in str(raised.value)


def test_duplicate_ids_across_files(tmp_path: Path):
    first = matrix_files()[0]
    copy = tmp_path / "copy.yaml"
    copy.write_text(first.read_text())
    with pytest.raises(MatrixError, match="duplicate entry id"):
        load_matrix([first, copy])
