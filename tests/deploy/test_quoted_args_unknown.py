"""A quoted "$ARGS" holding several flags is one argument whatever the unknown references inside hold.

The blanks and flags written around ``$2`` or ``$(...)`` reach the engine as written, so an unknown
part must not hide the quoting error; an unquoted expansion and a command substitution with blanks
inside its own parentheses are not errors.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specprobe.deploy.launch import known_text
from specprobe.deploy.loader import load_deployments

HEAD = 'args=" --model-path $2 --tp 2 --speculative-algorithm EAGLE3 --speculative-draft-model-path $3"\n'


def _value_errors(tmp_path: Path, script: str) -> list[str]:
    path = tmp_path / "serve.sh"
    path.write_text("#!/bin/bash\n" + textwrap.dedent(script), encoding="utf-8")
    deployments, _ = load_deployments(str(path))
    return [f.message for d in deployments for f in d.findings if f.rule == "DEPLOY-VALUE"]


def test_quoted_args_with_an_undefined_reference_is_still_one_argument(tmp_path: Path) -> None:
    (message,) = _value_errors(tmp_path, HEAD + 'python -m sglang.launch_server "$args"\n')
    assert "several flags in one word" in message and "$2" in message


def test_unquoted_args_with_an_undefined_reference_is_split(tmp_path: Path) -> None:
    assert _value_errors(tmp_path, HEAD + "python -m sglang.launch_server $args\n") == []


def test_blanks_inside_a_command_substitution_are_not_the_words_own(tmp_path: Path) -> None:
    script = 'python -m sglang.launch_server --model-path "$(cat /etc/model path)" --tp 2\n'
    assert _value_errors(tmp_path, script) == []


@pytest.mark.parametrize(
    ("word", "known"),
    [("$2", "\x00"), (" --tp $2 --x", " --tp \x00 --x"), ("a$(b c)d", "a\x00d"), ("${X:-a b}", "\x00"), ("--p", "--p")],
)
def test_known_text(word: str, known: str) -> None:
    assert known_text(word) == known


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab -$(){}2X_")), max_size=40))
def test_known_text_never_grows_blanks(word: str) -> None:
    """Unknown parts only ever remove characters: no blank appears that the word did not hold."""
    known = known_text(word)
    assert sum(c.isspace() for c in known) <= sum(c.isspace() for c in word)
