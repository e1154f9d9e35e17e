"""A --speculative-config that is not JSON gets the value written back as a shell would keep it."""

from __future__ import annotations

import json
import shlex

from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from specprobe.cli import app
from specprobe.deploy.quoting import quoting_hint


def test_lint_hints_the_quoted_value_for_shell_stripped_json() -> None:
    # What `--speculative-config {"method": "eagle3", ...}` without outer quotes reaches vLLM as.
    raw = "{method: eagle3, model: org/drafter, num_speculative_tokens: 3}"
    argv = ["lint", "--format", "json", "--", "vllm", "serve", "m", "--speculative-config", raw]
    result = CliRunner().invoke(app, argv)
    finding = next(f for f in json.loads(result.stdout)["findings"] if f["rule"] == "LINT-SPEC-CONFIG-JSON")
    suggested = shlex.split(finding["hint"].split(": ", 1)[1])
    assert suggested[0] == "--speculative-config"
    assert json.loads(suggested[1]) == {"method": "eagle3", "model": "org/drafter", "num_speculative_tokens": 3}


def test_python_quotes_are_rewritten_and_non_objects_are_named() -> None:
    assert "'{\"method\": \"eagle3\"}'" in quoting_hint("{'method': 'eagle3'}")
    assert "not an object" in quoting_hint("[1, 2]")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_any_value_gets_a_one_line_hint(raw: str) -> None:
    hint = quoting_hint(raw)
    assert hint and "\n" not in hint
