"""`specprobe.rules.compat.run`: the matrix verdicts check and lint include once target and engine are known."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from specprobe.compat.snapshots import FolderSnapshots
from specprobe.findings import Severity
from specprobe.hfconfig import ModelConfig, parse_model_config
from specprobe.rules import RULES
from specprobe.rules.catalog import all_rules
from specprobe.rules.compat import run
from tests.compat.conftest import TARGETS


@dataclass(frozen=True)
class Context:
    """Shaped like check's CheckContext (frozen: the Protocol only reads)."""

    draft_dir: Path
    draft_config: ModelConfig | None = None
    draft_format: str | None = None
    draft_architecture: str | None = None
    target_config: ModelConfig | None = None
    engines: Sequence[tuple[str, str]] = field(default_factory=list)
    method: str | None = None


def config(name: str) -> ModelConfig:
    return parse_model_config(json.loads((TARGETS / name / "config.json").read_text()))


def field_report(engines, method="eagle3"):
    return Context(
        draft_dir=Path("drafts/kimi-eagle3"),
        draft_format="specforge",
        draft_architecture="LlamaForCausalLMEagle3",
        target_config=config("kimi-k2.5"),
        engines=engines,
        method=method,
    )


def test_compat_rules_are_registered_with_evidence():
    compat = [r for r in all_rules() if r.family == "compat"]
    assert {r.id for r in compat} >= {"COMPAT-KNOWN-ISSUE", "COMPAT-EAGLE3-TARGET", "COMPAT-KNOWN-GOOD"}
    assert all(r.evidence and r.evidence[0].startswith("https://") for r in compat)


def test_field_report_through_check(snapshot_dir: Path):
    findings = list(
        run(field_report([("vllm", "0.16.0"), ("sglang", "0.5.23")]), snapshots=FolderSnapshots(snapshot_dir))
    )
    errors = {f.rule for f in findings if f.severity is Severity.ERROR}
    # the model_type gate is check's TARGET-EAGLE3-UNSUPPORTED; run() leaves it to the target family
    assert errors == {"COMPAT-KNOWN-ISSUE"}
    with_gate = run(field_report([("vllm", "0.16.0")]), snapshots=FolderSnapshots(snapshot_dir), skip_kinds=frozenset())
    assert "COMPAT-EAGLE3-TARGET" in {f.rule for f in with_gate}
    assert any(f.rule == "COMPAT-KNOWN-GOOD" and f.message.startswith("sglang==0.5.23") for f in findings)
    for finding in findings:
        assert finding.evidence and finding.evidence[0].startswith("https://")
        assert finding.rule in RULES
    # only definite verdicts reach check: nothing that merely may apply
    assert not any(f.rule == "COMPAT-MAY-APPLY" for f in findings)


def test_method_is_assumed_from_an_eagle3_drafter():
    findings = list(run(field_report([("vllm", "0.16.0")], method=None)))
    issue = next(f for f in findings if f.rule == "COMPAT-KNOWN-ISSUE")
    assert "method eagle3 assumed" in issue.message


def test_nothing_without_an_engine():
    assert list(run(field_report([]))) == []


def test_no_target_keeps_target_bound_verdicts_out():
    ctx = Context(draft_dir=Path("d"), draft_format="eagle3", engines=[("vllm", "0.33.0")], method="eagle")
    rules = {f.rule for f in run(ctx)}
    assert rules == {"COMPAT-KNOWN-ISSUE"}  # method eagle with an EAGLE-3 checkpoint needs no target


def test_run_accepts_checks_own_context(tmp_path: Path):
    """The real CheckContext of a real-format drafter satisfies the Protocol and yields findings."""
    from specprobe.demo.fixtures import DraftSpec, build_draft
    from specprobe.pipeline.check import build_context

    draft = build_draft(tmp_path / "draft", DraftSpec(draft_format="specforge", sparse=True))
    ctx = build_context(draft, target=str(TARGETS / "kimi-k2.5"), engine="vllm==0.16.0", method="eagle3")
    findings = list(run(ctx))
    assert "COMPAT-KNOWN-ISSUE" in {f.rule for f in findings}
    sglang = build_context(draft, target=str(TARGETS / "kimi-k2.5"), engine="sglang==0.5.23", method="eagle3")
    assert not [f for f in run(sglang) if f.severity is Severity.ERROR]
