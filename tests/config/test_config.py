"""[tool.specprobe] / specprobe.toml: discovery, validation (one line, exit 2), and how select,
ignore, severity, per-deployment-ignores and fail-on change a report and the exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specprobe.config import (
    Config,
    DeploymentIgnore,
    apply,
    config_from_settings,
    find_config,
    is_selected,
    load_config,
    matches,
)
from specprobe.findings import Finding, Report, Severity, SpecprobeError
from tests.config.conftest import MPE_WARNING_ENGINE, run_cli

RULE_IDS = ["VOCAB-D2T-RANGE", "VOCAB-D2T-ORDER", "LINT-SPEC-TOKENS", "TARGET-MAX-POSITION", "TARGET-ATTENTION"]


def report_of(*findings: Finding) -> Report:
    report = Report(command="gate")
    report.extend(findings)
    return report


def finding(rule: str, severity: Severity = Severity.WARNING, deployment: str | None = None) -> Finding:
    return Finding(rule=rule, severity=severity, message=f"{rule} fired", deployment=deployment)


def check_json(*args: str) -> tuple[int, dict, str]:
    code, out, err = run_cli("check", *args, "--engine", MPE_WARNING_ENGINE, "--format", "json")
    return code, (json.loads(out) if out else {}), err


# --- selection semantics ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("selector", "rule", "expected"),
    [
        ("ALL", "VOCAB-D2T-RANGE", True),
        ("VOCAB-D2T-RANGE", "VOCAB-D2T-RANGE", True),
        ("VOCAB", "VOCAB-D2T-RANGE", True),
        ("VOCAB-", "VOCAB-D2T-RANGE", True),
        ("VOCAB-D2T", "VOCAB-D2T-RANGE", True),
        ("VOCAB-D", "VOCAB-D2T-RANGE", False),
        ("VOCAB-D2T-RANGE", "VOCAB-D2T-RANGES", False),
        ("LINT", "VOCAB-D2T-RANGE", False),
    ],
)
def test_selector_matching(selector: str, rule: str, expected: bool) -> None:
    assert matches(selector, rule) is expected


def test_most_specific_selector_wins_like_ruff() -> None:
    config = Config(select=("VOCAB",), ignore=("VOCAB-D2T",))
    assert not is_selected("VOCAB-D2T-RANGE", config)
    config = Config(select=("VOCAB-D2T-RANGE",), ignore=("VOCAB",))
    assert is_selected("VOCAB-D2T-RANGE", config)
    assert not is_selected("VOCAB-D2T-ORDER", config)
    # A tie goes to ignore; with no select every rule is in.
    assert not is_selected("LINT-SPEC-TOKENS", Config(select=("LINT",), ignore=("LINT",)))
    assert is_selected("LINT-SPEC-TOKENS", Config(ignore=("VOCAB",)))
    assert not is_selected("LINT-SPEC-TOKENS", Config(select=("VOCAB",)))


def test_apply_drops_counts_and_regrades() -> None:
    config = Config(
        ignore=("TARGET-ATTENTION",),
        severity={"TARGET-MAX-POSITION": Severity.ERROR, "LINT": Severity.INFO},
        per_deployment_ignores=(DeploymentIgnore("k8s/Deployment/legacy-*", ("VOCAB",), "retired next quarter"),),
    )
    original = report_of(
        finding("TARGET-ATTENTION", Severity.INFO),
        finding("TARGET-MAX-POSITION"),
        finding("LINT-SPEC-TOKENS"),
        finding("VOCAB-D2T-RANGE", Severity.ERROR, "k8s/Deployment/legacy-a/container/vllm"),
        finding("VOCAB-D2T-RANGE", Severity.ERROR, "k8s/Deployment/new/container/vllm"),
    )
    result = apply(original, config)
    assert [(f.rule, f.severity, f.deployment) for f in result.findings] == [
        ("TARGET-MAX-POSITION", Severity.ERROR, None),
        ("LINT-SPEC-TOKENS", Severity.INFO, None),
        ("VOCAB-D2T-RANGE", Severity.ERROR, "k8s/Deployment/new/container/vllm"),
    ]
    assert result.suppressed == {"config": 2}
    # The input report is left as it was.
    assert len(original.findings) == 5 and original.findings[1].severity is Severity.WARNING


# --- discovery -------------------------------------------------------------------------------------


def test_found_upward_from_the_input_before_the_working_directory(tmp_path: Path, monkeypatch) -> None:
    repo = tmp_path / "repo"
    (repo / "deploy" / "models").mkdir(parents=True)
    (repo / "pyproject.toml").write_text('[tool.specprobe]\nignore = ["LINT"]\n', encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "specprobe.toml").write_text('ignore = ["VOCAB"]\n', encoding="utf-8")
    monkeypatch.chdir(elsewhere)
    assert find_config([repo / "deploy" / "models"]) == repo / "pyproject.toml"
    assert find_config([tmp_path / "missing"]) == elsewhere / "specprobe.toml"


def test_pyproject_without_the_table_is_skipped_and_specprobe_toml_comes_first(tmp_path: Path) -> None:
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    (inner / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n", encoding="utf-8")
    (tmp_path / "a" / "pyproject.toml").write_text('[tool.specprobe]\nfail-on = "warning"\n', encoding="utf-8")
    (tmp_path / "a" / "specprobe.toml").write_text('fail-on = "error"\n', encoding="utf-8")
    assert find_config([inner], cwd=tmp_path) == tmp_path / "a" / "specprobe.toml"


# --- validation ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[tool.specprobe]\nignore = "LINT"\n', "tool.specprobe.ignore: 'LINT' is not of type 'array'"),
        ('[tool.specprobe]\nselekt = ["LINT"]\n', "Additional properties are not allowed ('selekt' was unexpected)"),
        ('[tool.specprobe]\nseverity = { "TARGET-MAX-POSITION" = "fatal" }\n', "tool.specprobe.severity.TARGET-MAX"),
        ('[tool.specprobe]\nfail-on = "info"\n', "tool.specprobe.fail-on: 'info' is not one of ['error', 'warning']"),
        (
            '[[tool.specprobe.per-deployment-ignores]]\ndeployment = "k8s/*"\nrules = ["LINT"]\n',
            "tool.specprobe.per-deployment-ignores[0]: 'reason' is a required property",
        ),
        (
            '[[tool.specprobe.per-deployment-ignores]]\ndeployment = "k8s/*"\nrules = ["LINT"]\nreason = "  "\n',
            "tool.specprobe.per-deployment-ignores[0].reason: '  ' does not match",
        ),
        ('[tool.specprobe]\nignore = ["lint-spec"]\n', "tool.specprobe.ignore[0]: 'lint-spec' does not match"),
        ('[tool.specprobe]\nignore = ["NOPE-RULE"]\n', "ignore: no rule is 'NOPE-RULE' or starts with it"),
        ("[tool.specprobe\n", "is not valid TOML"),
    ],
)
def test_an_invalid_configuration_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SpecprobeError) as caught:
        load_config(path, rule_ids=RULE_IDS)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_valid_configuration_loads(tmp_path: Path) -> None:
    path = tmp_path / "specprobe.toml"
    path.write_text(
        'select = ["ALL"]\nignore = ["TARGET-ATTENTION"]\nfail-on = "warning"\nbaseline = "ci/baseline.json"\n'
        'severity = { "TARGET-MAX-POSITION" = "error" }\n'
        '[[per-deployment-ignores]]\ndeployment = "k8s/Deployment/foo/*"\nrules = ["LINT-"]\nreason = "legacy"\n',
        encoding="utf-8",
    )
    config = load_config(path, rule_ids=RULE_IDS)
    assert config.select == ("ALL",) and config.ignore == ("TARGET-ATTENTION",)
    assert config.fail_on is Severity.WARNING
    assert config.baseline == tmp_path / "ci" / "baseline.json"
    assert config.severity == {"TARGET-MAX-POSITION": Severity.ERROR}
    assert config.per_deployment_ignores == (DeploymentIgnore("k8s/Deployment/foo/*", ("LINT-",), "legacy"),)


def test_the_shipped_schema_is_a_valid_json_schema() -> None:
    import jsonschema

    from specprobe.config import config_schema

    jsonschema.Draft202012Validator.check_schema(config_schema())


# --- through the CLI -------------------------------------------------------------------------------


def test_check_honours_the_project_configuration(project: Path, mpe_draft: tuple[Path, Path]) -> None:
    draft, target = mpe_draft
    code, data, _ = check_json(str(draft), "--target", str(target))
    assert code == 0 and "TARGET-MAX-POSITION" in {f["rule"] for f in data["findings"]}

    (project / "pyproject.toml").write_text(
        '[tool.specprobe]\nseverity = { "TARGET-MAX-POSITION" = "error" }\nignore = ["LAYOUT-FORMAT"]\n',
        encoding="utf-8",
    )
    code, data, err = check_json(str(draft), "--target", str(target))
    assert code == 1
    rules = {f["rule"]: f["severity"] for f in data["findings"]}
    assert rules["TARGET-MAX-POSITION"] == "error" and "LAYOUT-FORMAT" not in rules
    assert data["suppressed"] == {"config": 1}
    assert "1 finding(s) suppressed" in err


def test_fail_on_warning_and_explicit_config(project: Path, mpe_draft: tuple[Path, Path], tmp_path: Path) -> None:
    draft, target = mpe_draft
    explicit = tmp_path / "strict.toml"
    explicit.write_text('[tool.specprobe]\nfail-on = "warning"\n', encoding="utf-8")
    code, data, _ = check_json(str(draft), "--target", str(target), "--config", str(explicit))
    assert code == 1 and data["summary"]["errors"] == 0


@pytest.mark.parametrize(
    ("name", "text", "error"),
    [
        ("pyproject.toml", '[tool.specprobe]\nignore = ["NOT-A-RULE"]\n', "no rule is 'NOT-A-RULE'"),
        ("pyproject.toml", "[tool.specprobe]\nfail-on = 3\n", "fail-on: 3 is not one of"),
        ("specprobe.toml", "ignore = [\n", "is not valid TOML"),
    ],
)
def test_invalid_configuration_exits_2_with_one_line(
    project: Path, broken_draft: Path, name: str, text: str, error: str
) -> None:
    (project / name).write_text(text, encoding="utf-8")
    code, out, err = run_cli("check", str(broken_draft))
    assert code == 2 and out == ""
    assert err.startswith(("specprobe: error: invalid configuration", "specprobe: error: configuration"))
    assert error in err and len(err.strip().splitlines()) == 1


def test_missing_explicit_config_exits_2(project: Path, broken_draft: Path) -> None:
    code, _, err = run_cli("check", str(broken_draft), "--config", str(project / "nope.toml"))
    assert code == 2 and "does not exist" in err


# --- any table: a configuration or one line, never a traceback ------------------------------------

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=20))
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
_KEYS = st.sampled_from(["select", "ignore", "severity", "per-deployment-ignores", "fail-on", "baseline", "other"])
_RULE_LIKE = st.sampled_from([*RULE_IDS, "ALL", "VOCAB", "LINT-", "NOPE", "vocab"])
_TABLES = st.dictionaries(
    _KEYS,
    st.one_of(
        _VALUES,
        st.lists(_RULE_LIKE, max_size=3),
        st.dictionaries(_RULE_LIKE, st.sampled_from(["error", "warning", "info", "fatal"]), max_size=3),
        st.lists(
            st.fixed_dictionaries(
                {"deployment": st.text(max_size=10), "rules": st.lists(_RULE_LIKE, max_size=3)},
                optional={"reason": st.text(max_size=10)},
            ),
            max_size=2,
        ),
    ),
    max_size=5,
)


@settings(max_examples=200, deadline=None)
@given(_TABLES)
def test_any_settings_table_is_a_config_or_one_line(table: dict) -> None:
    try:
        config = config_from_settings(table, Path("specprobe.toml"), rule_ids=RULE_IDS)
    except SpecprobeError as exc:
        assert "\n" not in str(exc)
        return
    assert isinstance(config, Config)
    # A configuration that loads applies to any report without error.
    apply(report_of(finding("VOCAB-D2T-RANGE", Severity.ERROR, "k8s/x")), config)


def test_hostile_input_names_find_the_working_directory_configuration(tmp_path: Path) -> None:
    (tmp_path / "specprobe.toml").write_text('fail-on = "warning"\n', encoding="utf-8")
    hostile = [Path("a\0b"), Path("x" * 5000), Path("/definitely/not/here")]
    assert find_config(hostile, cwd=tmp_path) == tmp_path / "specprobe.toml"
