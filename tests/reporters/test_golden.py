"""Golden output of every CI format for a two-deployment gate report, byte for byte.

Regenerate after an intended change with SPECPROBE_UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from specprobe.reporters import REPORTERS

from .samples import RULES, deployments_report

GOLDEN = Path(__file__).parents[1] / "golden"
FORMATS = sorted(REPORTERS)


# Formats that mark pass/fail per finding render --strict differently; the others ignore it.
STRICT_SENSITIVE = ("junit", "markdown")


@pytest.mark.parametrize(
    ("name", "strict"), [(name, False) for name in FORMATS] + [(name, True) for name in STRICT_SENSITIVE]
)
def test_deployments_report_matches_golden(name: str, strict: bool, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    rendered = REPORTERS[name](strict=strict, rules=RULES).render(deployments_report())
    suffix = ".strict" if strict else ""
    golden = GOLDEN / f"deployments{suffix}.{name}"
    if os.environ.get("SPECPROBE_UPDATE_GOLDEN") == "1":
        golden.write_text(rendered, encoding="utf-8")
    assert golden.exists(), f"no golden file {golden.name}; run with SPECPROBE_UPDATE_GOLDEN=1 and review it"
    assert rendered == golden.read_text(encoding="utf-8")


def test_every_format_is_registered_under_its_own_name() -> None:
    assert set(REPORTERS) == {"text", "json", "sarif", "junit", "github", "gitlab", "markdown"}
    for name, reporter in REPORTERS.items():
        assert reporter.name == name
        assert reporter.description
