"""The static whole-command check agrees with each release's own parser on every labelled command.

tests/cli/labels.json was written by ``python -m tests.cli.label`` (the release's parser in its own
interpreter; tests/cli/test_oracle.py re-checks the labels against the engines in the engine tier). Here
only the stored snapshots are read: refused or not must match, and a refusal must carry the words the
release printed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specprobe.rules import cli_args
from specprobe.schema.cli import load_cli

LABELS: dict[str, list[dict[str, Any]]] = json.loads((Path(__file__).parent / "labels.json").read_text())
REFUSING = {cli_args.REFUSED.id, cli_args.CONFIG_KEY.id}


def _cases() -> list[Any]:
    return [
        pytest.param(release, label, id=f"{release}:{' '.join(label['args'])[:60]}")
        for release, labels in sorted(LABELS.items())
        for label in labels
    ]


def words(error: str) -> str:
    """The part of the release's error line specprobe repeats: argparse's own sentence, or, for a config
    class refusing a value, the argument and the class named."""
    return error.split(" [type=", maxsplit=1)[0]


@pytest.mark.parametrize(("release", "label"), _cases())
def test_static_verdict_matches_the_release(release: str, label: dict[str, Any]) -> None:
    engine, _, version = release.partition("==")
    assert load_cli(engine, version) is not None, f"no whole-CLI snapshot of {release}"
    findings = cli_args.check_args(engine, version, list(label["args"]), program=f"{engine} serve")
    refusals = [f for f in findings if f.rule in REFUSING]
    assert bool(refusals) == (not label["ok"]), (label, [f.message for f in findings])
    if not label["ok"]:
        said = " ".join(f.message for f in refusals)
        assert words(label["error"]) in said, (label["error"], said)
