"""Every command's JSON output is one envelope, validated against the published JSON Schema
(specprobe/data/report.schema.json), as a consumer of the JSON would validate it."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from specprobe.cli import app
from specprobe.demo.fixtures import DraftSpec
from tests.fix.builders import d2t_absolute, make_draft, make_target

ROOT = Path(__file__).parents[1]
SCHEMA = json.loads(resources.files("specprobe").joinpath("data/report.schema.json").read_text(encoding="utf-8"))
VALIDATOR = Draft202012Validator(SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("models")
    make_target(root / "target")
    make_draft(root / "draft", DraftSpec())
    make_draft(root / "broken", DraftSpec(), d2t_absolute)
    return root


def _commands(models: Path) -> dict[str, list[str]]:
    spec = '{"method": "eagle3", "model": "org/drafter", "num_speculative_tokens": 3}'
    return {
        "check": ["check", str(models / "broken"), "--target", str(models / "target"), "-f", "json"],
        "lint": ["lint", "-f", "json", "--", "vllm", "serve", "org/target", "--speculative-config", spec],
        "gate": ["gate", "examples/bad", "-f", "json"],
        "matrix": ["matrix", "-f", "json"],
        "rules": ["rules", "-f", "json"],
        "rule": ["rule", "VOCAB-D2T-RANGE", "-f", "json"],
        "demo": ["demo", "--static", "--out", str(models / "demo"), "-f", "json"],
        "fix": ["fix", str(models / "broken"), "--target", str(models / "target"), "--engine", "vllm==0.33.0",
                "--plan", "-f", "json"],
        "schema": ["schema", "vllm==0.33.0", "-f", "json"],
        "schema diff": ["schema", "diff", "vllm", "0.30.0", "0.33.0", "-f", "json"],
        "schema history": ["schema", "history", "vllm", "--method", "eagle3", "-f", "json"],
        "engines list": ["engines", "list", "-f", "json"],
    }  # fmt: skip


@pytest.mark.parametrize(
    "name",
    ["check", "lint", "gate", "matrix", "rules", "rule", "demo", "fix", "schema", "schema diff", "schema history",
     "engines list"],
)  # fmt: skip
def test_every_command_writes_the_one_envelope(name: str, models: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(app, _commands(models)[name])
    assert result.exit_code in (0, 1), result.output
    document = json.loads(result.stdout)
    errors = sorted(VALIDATOR.iter_errors(document), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]
    assert document["command"] == ("engines" if name == "engines list" else name)
    for nested in document.get("reports", []):  # demo: a full report per section
        assert not list(VALIDATOR.iter_errors(nested))


def test_the_golden_json_reports_match_the_schema() -> None:
    for golden in sorted((ROOT / "tests" / "golden").glob("*.json")):
        assert not list(VALIDATOR.iter_errors(json.loads(golden.read_text(encoding="utf-8")))), golden.name


def test_the_schema_is_a_valid_schema_and_refuses_a_bare_list() -> None:
    Draft202012Validator.check_schema(SCHEMA)
    assert list(VALIDATOR.iter_errors({"engines_dir": "/x", "engines": []}))
