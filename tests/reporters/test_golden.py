"""Golden output of every CI format for a two-deployment gate report, byte for byte.

Regenerate after an intended change with SPECPROBE_UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

import pytest

from specprobe.findings import Severity
from specprobe.reporters import REPORTERS
from tests.reporters.samples import RULES, deployments_report

GOLDEN = Path(__file__).parents[1] / "golden"
FORMATS = sorted(REPORTERS)


# Under --strict every format that states a verdict states it differently (the report's fail_on).
STRICT_SENSITIVE = tuple(FORMATS)

# What differs from run to run or machine to machine: the JUnit timestamp and the absolute
# repository root SARIF resolves its relative uris against.
_VOLATILE = (
    (re.compile(r'timestamp="[0-9T:-]+"'), 'timestamp="TIMESTAMP"'),
    (re.compile(r'("SRCROOT": \{\s*"uri": )"file://[^"]*"'), r'\1"file:///REPOSITORY/"'),
)


def stable(rendered: str) -> str:
    """``rendered`` with its run-specific values replaced by placeholders."""
    for pattern, placeholder in _VOLATILE:
        rendered = pattern.sub(placeholder, rendered)
    return rendered


@pytest.mark.parametrize(
    ("name", "strict"), [(name, False) for name in FORMATS] + [(name, True) for name in STRICT_SENSITIVE]
)
def test_deployments_report_matches_golden(name: str, strict: bool, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    report = replace(deployments_report(), fail_on=Severity.WARNING if strict else Severity.ERROR)
    rendered = stable(REPORTERS[name](rules=RULES).render(report))
    suffix = ".strict" if strict else ""
    golden = GOLDEN / f"deployments{suffix}.{name}"
    if os.environ.get("SPECPROBE_UPDATE_GOLDEN") == "1":
        golden.write_text(rendered, encoding="utf-8")
    assert golden.exists(), f"no golden file {golden.name}; run with SPECPROBE_UPDATE_GOLDEN=1 and review it"
    assert rendered == golden.read_text(encoding="utf-8")


def test_every_format_is_registered_under_its_own_name() -> None:
    assert set(REPORTERS) == {"text", "concise", "json", "sarif", "junit", "github", "gitlab", "markdown"}
    for name, reporter in REPORTERS.items():
        assert reporter.name == name
        assert reporter.description
