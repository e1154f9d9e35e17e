"""GitHub workflow commands: escaping exactly as @actions/core does, annotations per finding, and the
job summary appended to $GITHUB_STEP_SUMMARY."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from specprobe.findings import Finding, Report, Severity
from specprobe.reporters.github import GithubReporter, annotation
from specprobe.untrusted.text import annotation_data, annotation_property, terminal
from tests.reporters.conftest import run_cli
from tests.reporters.samples import RULES, deployments_report

# The runner's side of the protocol: a command is `::name props::message` on one line, properties
# split on unescaped ',' and '=' (actions/runner's ActionCommand parsing), then percent-decoded.
COMMAND = re.compile(r"^::(?P<name>[a-z]+)(?: (?P<props>[^:]*))?::(?P<message>.*)$")


def unescape(text: str) -> str:
    for escaped, raw in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        text = text.replace(escaped, raw)
    return text


def parse(line: str) -> tuple[str, dict[str, str], str]:
    match = COMMAND.match(line)
    assert match, line
    props = dict(item.split("=", 1) for item in (match["props"] or "").split(",") if item)
    return match["name"], {k: unescape(v) for k, v in props.items()}, unescape(match["message"])


def test_escaping_matches_the_toolkit_on_its_own_examples() -> None:
    # The replacements of packages/core/src/command.ts, in the toolkit's order ('%' first), applied
    # after textsafe made CR/LF and other controls visible.
    assert annotation_data("100% done, a:b") == "100%25 done, a:b"
    assert annotation_property("a:b,c%") == "a%3Ab%2Cc%25"
    assert annotation_data("line\r\nnext") == "line\\r\\nnext"


@given(st.text())
def test_escaped_text_is_one_line_and_decodes_to_the_visible_text(text: str) -> None:
    data, prop = annotation_data(text), annotation_property(text)
    assert "\n" not in data and "\r" not in data
    assert not {",", ":", "\n", "\r"} & set(prop)
    assert unescape(data) == terminal(text)
    assert unescape(prop) == terminal(text)


@given(message=st.text(), file=st.text(min_size=1), line=st.integers(min_value=1, max_value=10**6))
def test_an_annotation_round_trips_through_the_runner_parser(message: str, file: str, line: int) -> None:
    finding = Finding(rule="LINT-SPEC-TOKENS", severity=Severity.WARNING, message=message, file=file, line=line)
    rendered = annotation(finding, Report(command="gate"))
    assert "\n" not in rendered
    name, props, decoded = parse(rendered)
    assert name == "warning"
    assert props["line"] == str(line) and props["title"] == "LINT-SPEC-TOKENS"
    # Control characters other than CR/LF/tab come back as visible \xNN text, never raw.
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]", decoded)


def test_each_finding_is_one_annotation_with_file_line_and_title(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    lines = GithubReporter(rules=RULES).render(deployments_report()).splitlines()
    commands = [parse(line) for line in lines if line.startswith("::")]
    assert [name for name, _, _ in commands] == ["error", "warning", "warning", "notice"]
    _, props, message = commands[1]
    assert props == {"file": "deploy/k8s.yaml", "line": "27", "title": "LINT-SPEC-TOKENS"}
    assert message.startswith("k8s/Deployment/vllm-eagle3/container/vllm: num_speculative_tokens 8")
    assert "50% | <b>x</b>, a:b\\r\\n\\x1b[31mred" in message
    # Hint and evidence are lines of the same annotation.
    _, _, first = commands[0]
    assert first.endswith("4096)\nhint: d2t[i] = target_id(i) - i\nsee: " + RULES["VOCAB-D2T-RANGE"].evidence[0])
    assert lines[-1] == "specprobe gate: FAIL 1 error(s), 2 warning(s), 1 info"


def test_cli_appends_the_markdown_summary_to_the_step_summary(built_case, tmp_path: Path) -> None:
    draft, _ = built_case("d2t-absolute")
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    env = {"GITHUB_STEP_SUMMARY": str(summary)}
    code, out, _ = run_cli("check", str(draft), "--engine", "vllm==0.33.0", "-f", "github", env=env)
    assert code == 1
    assert out.startswith("::error file=d2t-absolute/draft/model.safetensors,title=VOCAB-D2T-RANGE::")
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n## specprobe check: FAIL")
    assert "[`VOCAB-D2T-RANGE`]" in text


def test_no_summary_file_outside_github_actions(built_case, tmp_path: Path) -> None:
    draft, _ = built_case("d2t-absolute")
    env = {"GITHUB_STEP_SUMMARY": ""}
    code, _, _ = run_cli("check", str(draft), "--engine", "vllm==0.33.0", "-f", "github", env=env)
    assert code == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d2t-absolute"]


def test_annotations_past_githubs_limit_end_with_one_line_saying_how_many_more() -> None:
    from specprobe.findings import Finding, Report, Severity
    from specprobe.reporters.github import ANNOTATION_LIMIT, GithubReporter

    report = Report(command="gate")
    report.extend(
        Finding("VOCAB-D2T-RANGE", Severity.ERROR, f"error {i}", file="a.yaml", line=i + 1) for i in range(25)
    )
    report.extend(Finding("TARGET-MAX-POSITION", Severity.WARNING, f"warning {i}", file="a.yaml") for i in range(3))
    lines = GithubReporter().render(report).splitlines()
    errors = [line for line in lines if line.startswith("::error ")]
    assert len(errors) == ANNOTATION_LIMIT
    assert errors[-1].endswith("16 more error(s) in the job summary (GitHub shows 10 error annotations per step)")
    assert sum(line.startswith("::warning ") for line in lines) == 3  # under the limit: all shown
    assert lines[-1].startswith("specprobe gate: FAIL")
