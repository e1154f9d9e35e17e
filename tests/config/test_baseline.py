"""--baseline: fingerprints survive line moves and re-runs; known findings are suppressed (and
counted), new ones fail; a malformed baseline is exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specprobe.baseline import Baseline, apply_baseline, fingerprint, read_baseline, render_baseline
from specprobe.findings import Finding, Report, Severity, SpecprobeError
from tests.config.conftest import MPE_WARNING_ENGINE, run_cli


def lint_finding(line: int, message: str = "num_speculative_tokens 8 > 3", **kwargs: str) -> Finding:
    return Finding(
        rule="LINT-SPEC-TOKENS",
        severity=Severity.WARNING,
        message=message,
        location=f"deploy/k8s.yaml:{line}",
        file=kwargs.get("file", "deploy/k8s.yaml"),
        line=line,
        deployment=kwargs.get("deployment", "k8s/Deployment/a/container/vllm"),
    )


@given(st.integers(min_value=1, max_value=10**6), st.integers(min_value=1, max_value=10**6))
def test_fingerprint_ignores_where_the_line_moved(a: int, b: int) -> None:
    assert fingerprint(lint_finding(a, f"at line {a}: too many")) == fingerprint(
        lint_finding(b, f"at line {b}: too many")
    )


def test_fingerprint_is_relative_to_the_checkout(tmp_path: Path, monkeypatch) -> None:
    """The same finding from two checkouts (absolute paths in file and message) is one fingerprint."""
    prints = []
    for checkout in ("one", "two"):
        root = tmp_path / checkout
        root.mkdir()
        monkeypatch.chdir(root)
        path = str(root / "drafts" / "config.json")
        finding = Finding(rule="TARGET-MAX-POSITION", severity="warning", message=f"{path}: 2048 < 131072", file=path)
        prints.append(fingerprint(finding))
    assert prints[0] == prints[1]


@pytest.mark.parametrize(
    "change",
    [
        {"message": "num_speculative_tokens 9 > 3"},
        {"deployment": "k8s/Deployment/b/container/vllm"},
        {"file": "deploy/other.yaml"},
    ],
)
def test_fingerprint_changes_with_what_the_finding_is(change: dict[str, str]) -> None:
    message = change.pop("message", "num_speculative_tokens 8 > 3")
    assert fingerprint(lint_finding(3)) != fingerprint(lint_finding(3, message, **change))


def test_render_read_apply_round_trip(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    accepted = [lint_finding(3), lint_finding(9, "unknown key foo", deployment="k8s/Deployment/b/container/vllm")]
    path = tmp_path / "baseline.json"
    path.write_text(render_baseline(accepted), encoding="utf-8")
    baseline = read_baseline(path)
    assert len(baseline.fingerprints) == 2
    report = Report(command="gate")
    report.extend([lint_finding(40), lint_finding(41, "a new problem")])
    result = apply_baseline(report, baseline)
    assert [f.message for f in result.findings] == ["a new problem"]
    assert result.suppressed == {"baseline": 1}
    # The file is sorted, readable JSON: a reviewer sees which findings were accepted.
    data = json.loads(path.read_text(encoding="utf-8"))
    assert [e["deployment"] for e in data["findings"]] == sorted(e["deployment"] for e in data["findings"])
    assert data["findings"][0]["file"] == "deploy/k8s.yaml"


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ("not json", "is not JSON"),
        ('{"findings": []}', "is not a specprobe baseline"),
        ('{"specprobe_baseline": 1, "findings": [{"rule": "X"}]}', "must be a list of objects with a 'fingerprint'"),
    ],
)
def test_a_malformed_baseline_is_one_line(tmp_path: Path, content: str, error: str) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(SpecprobeError, match=error):
        read_baseline(path)


def test_apply_with_an_empty_baseline_changes_nothing() -> None:
    report = Report(command="gate")
    report.add(lint_finding(1))
    assert apply_baseline(report, Baseline(frozenset())).findings == report.findings


def test_adopting_the_gate_on_a_fleet_with_existing_findings(project: Path, mpe_draft, broken_draft: Path) -> None:
    """First run writes the baseline and passes; a rerun stays green; a new error fails; the
    baseline only ever suppresses what it recorded."""
    draft, target = mpe_draft
    baseline = project / "specprobe-baseline.json"
    args = ["check", str(draft), "--target", str(target), "--engine", MPE_WARNING_ENGINE, "--strict"]

    code, _, _ = run_cli(*args)
    assert code == 1  # the warning fails under --strict before the team adopts a baseline

    code, out, err = run_cli(*args, "--baseline", str(baseline), "--format", "json")
    assert code == 0
    assert f"wrote baseline {baseline} (1 finding(s))" in err
    data = json.loads(out)
    assert data["suppressed"] == {"baseline": 1} and data["ok"] is True
    recorded = json.loads(baseline.read_text(encoding="utf-8"))["findings"]
    assert [e["rule"] for e in recorded] == ["TARGET-MAX-POSITION"]
    assert recorded[0]["file"] is None or not recorded[0]["file"].startswith("/")

    before = baseline.read_text(encoding="utf-8")
    code, _, err = run_cli(*args, "--baseline", str(baseline))
    assert code == 0 and "1 finding(s) suppressed" in err
    assert baseline.read_text(encoding="utf-8") == before  # an existing baseline is only read

    # A new drafter next to it brings a new error: the baseline does not hide it.
    code, out, _ = run_cli(
        "check", str(broken_draft), "--engine", "vllm==0.33.0", "--baseline", str(baseline), "-f", "json"
    )
    assert code == 1
    assert "VOCAB-D2T-RANGE" in {f["rule"] for f in json.loads(out)["findings"]}


def test_update_baseline_rewrites_and_needs_a_file(project: Path, broken_draft: Path) -> None:
    baseline = project / "baseline.json"
    code, _, err = run_cli("check", str(broken_draft), "--update-baseline")
    assert code == 2 and "--update-baseline needs --baseline FILE" in err
    baseline.write_text('{"specprobe_baseline": 1, "findings": []}\n', encoding="utf-8")
    code, _, _ = run_cli("check", str(broken_draft), "--baseline", str(baseline))
    assert code == 1
    code, _, _ = run_cli("check", str(broken_draft), "--baseline", str(baseline), "--update-baseline")
    assert code == 0
    assert "VOCAB-D2T-RANGE" in baseline.read_text(encoding="utf-8")


def test_the_same_tree_in_another_checkout_matches_the_baseline(
    project: Path, mpe_draft, tmp_path: Path, monkeypatch
) -> None:
    draft, target = mpe_draft
    baseline = project / "baseline.json"
    rel = [str(draft.relative_to(project)), "--target", str(target.relative_to(project))]
    code, _, _ = run_cli("check", *rel, "--engine", MPE_WARNING_ENGINE, "--strict", "--baseline", str(baseline))
    assert code == 0
    moved = tmp_path / "elsewhere"
    shutil.copytree(project, moved)
    monkeypatch.chdir(moved)
    code, _, err = run_cli("check", *rel, "--engine", MPE_WARNING_ENGINE, "--strict", "--baseline", "baseline.json")
    assert code == 0, err
    assert "1 finding(s) suppressed" in err


def test_baseline_from_the_configuration(project: Path, broken_draft: Path) -> None:
    (project / "specprobe.toml").write_text('baseline = "ci/accepted.json"\n', encoding="utf-8")
    (project / "ci").mkdir()
    code, _, err = run_cli("check", str(broken_draft))
    assert code == 0 and "wrote baseline" in err
    assert (project / "ci" / "accepted.json").is_file()


_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=150, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=64),
        _JSON.map(lambda v: json.dumps(v).encode()),
        _JSON.map(lambda v: json.dumps({"specprobe_baseline": 1, "findings": v}).encode()),
    )
)
def test_any_baseline_file_reads_or_is_one_line(tmp_path_factory: pytest.TempPathFactory, content: bytes) -> None:
    path = tmp_path_factory.mktemp("baseline") / "baseline.json"
    path.write_bytes(content)
    try:
        baseline = read_baseline(path)
    except SpecprobeError as exc:
        assert "\n" not in str(exc)
        return
    assert all(isinstance(f, str) for f in baseline.fingerprints)
