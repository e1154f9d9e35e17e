"""`matrix record` on hostile result files: never a NaN/Infinity measurement, never a silently dropped
field, and a path that is not here says that it came from the result file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hostile.builders import nested
from tests.hostile.cli import invoke

SMOKE = Path(__file__).resolve().parents[1] / "compat" / "smoke" / "reference-llama.json"
ROOT = Path(__file__).resolve().parents[2]


def _result(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "result.json"
    path.write_text(text, encoding="utf-8")
    return path


def _record(path: Path, *extra: str) -> str:
    outcome = invoke("matrix", "record", str(path), *extra, allowed=())
    assert outcome.exit_code == 2
    return outcome.stderr


@pytest.fixture
def base() -> dict:
    data = json.loads(SMOKE.read_text(encoding="utf-8"))
    # Paths in the shipped result are relative to the repository root.
    data["subject"]["target"] = str(ROOT / data["subject"]["target"])
    data["subject"]["draft"] = str(ROOT / data["subject"]["draft"])
    return data


def test_the_unmodified_result_records(tmp_path: Path, base: dict) -> None:
    outcome = invoke("matrix", "record", str(_result(tmp_path, json.dumps(base))))
    assert outcome.exit_code == 0 and "acceptance_rate: 0.71" in outcome.stdout


@pytest.mark.parametrize("field", ["acceptance_rate", "mean_acceptance_length", "speedup", "tokens", "tokens_per_s"])
@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_a_non_finite_measurement_is_refused_naming_the_field(
    tmp_path: Path, base: dict, field: str, literal: str
) -> None:
    base[field] = "__literal__"
    text = json.dumps(base).replace('"__literal__"', literal)
    stderr = _record(_result(tmp_path, text))
    assert field in stderr and "not a measured value" in stderr


def test_a_non_finite_confidence_bound_is_refused(tmp_path: Path, base: dict) -> None:
    text = json.dumps(base).replace("[0.69, 0.73]", "[0.69, Infinity]")
    assert "ci95[1]" in _record(_result(tmp_path, text))


@pytest.mark.parametrize(
    ("field", "value"),
    [("speedup", "2.05"), ("tokens", [2048]), ("lossless", "yes"), ("ci95", 0.7), ("drafts", True), ("method", 3)],
)
def test_a_field_of_the_wrong_type_is_refused_not_dropped(
    tmp_path: Path, base: dict, field: str, value: object
) -> None:
    base[field] = value
    stderr = _record(_result(tmp_path, json.dumps(base)))
    assert f"{field} must be" in stderr


def test_a_subject_path_that_is_not_here_says_it_came_from_the_result_file(tmp_path: Path, base: dict) -> None:
    base["subject"]["target"] = "/nowhere/target"
    stderr = _record(_result(tmp_path, json.dumps(base)))
    assert "subject.target in result.json" in stderr and "--target" in stderr
    base["subject"]["target"] = str(ROOT / "tests/compat/configs/targets/llama-3.1-8b-instruct")
    base["subject"]["draft"] = "/nowhere/draft"
    assert "subject.draft in result.json" in _record(_result(tmp_path, json.dumps(base)))


@pytest.mark.parametrize(
    "text",
    [nested(100_000), '{"acceptance_rate": ' + "1" * 5000 + "}", "\xff", "[]", '{"command": "smoke"}'],
    ids=["nested", "long-int", "not-json", "not-object", "no-subject"],
)
def test_unreadable_result_files_are_one_line(tmp_path: Path, text: str) -> None:
    _record(_result(tmp_path, text))


def test_a_hostile_existing_output_file_is_refused(tmp_path: Path, base: dict) -> None:
    output = tmp_path / "matrix.yaml"
    output.write_text("a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8)
    ))  # fmt: skip
    before = output.read_bytes()
    stderr = _record(_result(tmp_path, json.dumps(base)), "--output", str(output))
    assert "expands to more than" in stderr
    assert output.read_bytes() == before
