"""80 columns wherever a person reads: --help, the matrix table, the rule list and text reports wrap
between words at the terminal's width (COLUMNS), never cut a word or a command summary."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specprobe.cli import app
from specprobe.cli._common import report_width
from specprobe.cli.schema import SCHEMA_HELP
from specprobe.findings import Finding, Report, Severity
from specprobe.reporters.text import TextReporter

WIDTH = 80
runner = CliRunner()


def run(*args: str) -> str:
    result = runner.invoke(app, list(args), env={"COLUMNS": str(WIDTH), "NO_COLOR": "1"})
    assert result.exit_code in (0, 1), result.output
    return result.stdout


def too_long(text: str) -> list[str]:
    return [line for line in text.splitlines() if len(line) > WIDTH]


def words(text: str) -> list[str]:
    return text.split()


def test_root_help_shows_every_command_summary_whole() -> None:
    text = run("--help")
    assert not too_long(text)
    commands = text.split("Commands:", 1)[1]
    assert "..." not in commands  # click's cut at 45 characters
    flat = " ".join(commands.split())
    for info in app.registered_commands:
        assert info.short_help, info.name
        assert " ".join(info.short_help.split()) in flat, info.short_help


def test_schema_help_fits_and_breaks_only_between_words() -> None:
    text = run("schema", "--help")
    assert not too_long(text)
    description = text.split("\n\n", 1)[1].split("Arguments:", 1)[0]
    # Every word shown is a word of the help as written: a word cut in two would not be.
    source = set(words(SCHEMA_HELP.replace("\b", "")))
    assert set(words(description)) <= source


def test_matrix_text_fits_80_columns() -> None:
    text = run("matrix")
    assert "compatibility matrix" in text
    assert not too_long(text)


def test_rules_list_fits_and_keeps_every_description_whole() -> None:
    from specprobe.ruledocs import documented_rules

    text = run("rules")
    assert not too_long(text)
    flat = " ".join(text.split())
    for rule in documented_rules():
        assert " ".join(rule.description.split()) in flat, rule.id


def _long_report() -> Report:
    report = Report(command="check", subject={"draft": "drafts/eagle3"})
    report.add(
        Finding(
            "VOCAB-D2T-RANGE",
            Severity.ERROR,
            "207 of 1024 entries of the draft-to-target map point outside the target vocabulary, so the "
            "engine would index past the end of its embedding table at the first accepted token",
            location="model.safetensors:d2t",
            hint="d2t[i] = target_id(i) - i; regenerate the map from the training vocabulary",
            evidence=["https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/models/llama_eagle3.py"],
        )
    )
    return report


@pytest.mark.parametrize("color", [False, True])
def test_text_report_wraps_between_words_at_the_width(color: bool) -> None:
    wide = TextReporter(color=False).render(_long_report())
    rendered = TextReporter(color=color, width=WIDTH).render(_long_report())
    plain = re.sub(r"\x1b\[[0-9;]*m", "", rendered)
    for line in plain.splitlines():
        # Only a single word longer than the width (a URL) may pass it, alone on its line.
        assert len(line) <= WIDTH or len(line.split()) == 1 or line.split()[0] == "see:", line
    assert words(plain) == words(wide)
    assert len(plain.splitlines()) > len(wide.splitlines())


def test_report_width_policy(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert report_width(None) == 80
    # A report written to a file is not wrapped, whatever the terminal.
    assert report_width(tmp_path / "report.txt") is None
    monkeypatch.delenv("COLUMNS")
    # Not a terminal (pytest captures stdout) and no COLUMNS: a pipe or a CI log is read at 80 columns.
    assert report_width(None) == 80
    monkeypatch.setenv("COLUMNS", "132")
    assert report_width(None) == 132
