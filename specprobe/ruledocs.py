"""Rule documentation generated from the rule registry: one page per rule plus an index in docs/rules/,
the help text SARIF carries per rule, and the page address SARIF's ``helpUri`` points at.

A rule's longer text (``why``, ``fix``) has one home, the shipped ``specprobe/data/rule_docs.toml``
(a test checks that every rule has its entry and no definition carries its own). Only the explaining
paths (``rule``, ``rules``, SARIF, these docs) read the data file; ``RuleExplanation`` renders them all.

Regenerate with ``python -m specprobe.ruledocs`` (a test fails when the committed pages are stale).
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import textwrap
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from specprobe import __version__
from specprobe.columns import wrap, wrap_block
from specprobe.rules import Rule, RuleStatus

REPOSITORY_URL = "https://github.com/specprobe/specprobe"
DOCS_DIR = Path("docs") / "rules"
REGENERATE = "python -m specprobe.ruledocs"
RULE_DOCS_DATA = "data/rule_docs.toml"
_DOC_FIELDS = ("why", "fix")


@functools.cache
def rule_docs_data() -> dict[str, dict[str, str]]:
    """Rule ID -> {"why": ..., "fix": ...} from the shipped data file (read once, on first use)."""
    return parse_rule_docs(resources.files("specprobe").joinpath(RULE_DOCS_DATA).read_text(encoding="utf-8"))


def parse_rule_docs(text: str) -> dict[str, dict[str, str]]:
    """The rule-docs TOML checked for shape, each text with its whitespace collapsed.

    The file ships with the package, so a malformed one is a defect of specprobe: ValueError.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{RULE_DOCS_DATA}: {exc}") from exc
    docs: dict[str, dict[str, str]] = {}
    for rule_id, entry in data.items():
        if not isinstance(entry, dict) or not entry or set(entry) - set(_DOC_FIELDS):
            raise ValueError(f"{RULE_DOCS_DATA}: [{rule_id}] must be a table of {' and/or '.join(_DOC_FIELDS)}")
        for name, value in entry.items():
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{RULE_DOCS_DATA}: [{rule_id}] {name} must be non-empty text")
        # Values are wrapped in the file for reading; the pages and terminals re-wrap them.
        docs[rule_id] = {name: " ".join(value.split()) for name, value in entry.items()}
    return docs


def documented(rule: Rule) -> Rule:
    """``rule`` with ``why``/``fix`` filled from the data file (a rule built with its own text, as a
    test's fixed catalogue is, keeps that text field by field)."""
    entry = rule_docs_data().get(rule.id)
    if not entry:
        return rule
    return dataclasses.replace(rule, why=rule.why or entry.get("why"), fix=rule.fix or entry.get("fix"))


def documented_rules() -> list[Rule]:
    """Every registered rule (in catalogue order) with its documentation filled in."""
    # The catalogue imports every rule family, the deployment and engine-probe ones too (~40 ms): the
    # reporters import this module, and only a format that shows rule documentation reaches here.
    from specprobe.rules.catalog import all_rules  # noqa: PLC0415

    return [documented(r) for r in all_rules()]


def rule_doc_url(rule_id: str) -> str:
    """The generated page of ``rule_id`` at the tag of this version, so the text matches the rule."""
    return f"{REPOSITORY_URL}/blob/v{__version__}/{DOCS_DIR.as_posix()}/{rule_id}.md"


@dataclass(frozen=True)
class RuleExplanation:
    """Everything there is to say about one rule, and its renderings: the terminal page of
    `specprobe rule ID`, its JSON (`rule`/`rules --format json`), the generated docs page and SARIF's
    help. One object, so a new field (status, engine range) reaches every rendering at once, as
    ruff's ``Explanation`` serves both forms of ``ruff rule``."""

    rule: Rule

    @classmethod
    def of(cls, rule: Rule) -> RuleExplanation:
        """The explanation of ``rule``, its documentation filled in from the data file."""
        return cls(documented(rule))

    @property
    def docs_url(self) -> str:
        return rule_doc_url(self.rule.id)

    def _lifecycle(self) -> list[tuple[str, str]]:
        """(label, value) of what differs from a stable rule about every release: shown only then, so
        the pages and SARIF help of ordinary rules stay as short as they are."""
        rule = self.rule
        lines = []
        if rule.status is not RuleStatus.STABLE:
            lines.append(("status", rule.status.value))
        if rule.applies_to is not None:
            lines.append(("applies to", str(rule.applies_to)))
        return lines

    def text(self, width: int | None = None) -> str:
        """The terminal page, its prose laid out at ``width`` (None: each paragraph on one line)."""
        rule = self.rule
        lines = [f"{rule.id}  ({rule.family}, default severity {rule.severity.value})"]
        lines += [f"{label.capitalize()}: {value}" for label, value in self._lifecycle()]
        lines += ["", *wrap(rule.description, width)]
        if rule.why:
            lines += ["", "Why:", *wrap_block(rule.why, width, indent="  ")]
        if rule.fix:
            lines += ["", "How to fix:", *wrap_block(rule.fix, width, indent="  ")]
        lines += ["", "Evidence:", *(f"  {url}" for url in rule.evidence)]
        # The link alone on its line: a terminal can open it whatever its width.
        lines += ["", "Docs:", f"  {self.docs_url}"]
        return "\n".join(lines) + "\n"

    def to_json_dict(self) -> dict[str, Any]:
        rule = self.rule
        applies_to = rule.applies_to
        return {
            "id": rule.id,
            "family": rule.family,
            "severity": rule.severity.value,
            "status": rule.status.value,
            "applies_to": (
                {"engine": applies_to.engine, "versions": applies_to.versions(), "fact": applies_to.fact}
                if applies_to
                else None
            ),
            "description": rule.description,
            "why": rule.why,
            "fix": rule.fix,
            "evidence": list(rule.evidence),
            "docs": self.docs_url,
        }

    def list_line(self, width: int | None) -> str:
        """The rule's line in `specprobe rules`: ID, severity and family in columns, then the description
        (with a rule's status and engine range when not stable for every release) wrapped between words
        under its own column at ``width``, on lines of its own when that column would be too narrow."""
        rule = self.rule
        head = f"{rule.id:<28} {rule.severity.value:<8} {rule.family:<9} "
        lifecycle = "".join(f" [{label} {value}]" for label, value in self._lifecycle())
        description = " ".join(rule.description.split()) + lifecycle
        if width is None or len(head) + len(description) <= width:
            return head + description + "\n"
        column = width - len(head)
        if column >= 24 and all(len(word) <= column for word in description.split()):
            lines = textwrap.wrap(description, column, break_long_words=False, break_on_hyphens=False)
            return head + lines[0] + "\n" + "".join(" " * len(head) + f"{line}\n" for line in lines[1:])
        # A word wider than the column (a dotted path, a file name): the description goes below, indented.
        lines = textwrap.wrap(description, width - 4, break_long_words=False, break_on_hyphens=False)
        return head.rstrip() + "\n" + "".join(f"    {line}\n" for line in lines)

    def markdown_row(self, *, link_page: bool) -> str:
        """The rule's row in the markdown table (`rules --format markdown`, docs/rules/README.md)."""
        rule = self.rule
        name = f"[`{rule.id}`]({rule.id}.md)" if link_page else f"`{rule.id}`"
        lifecycle = "; ".join(f"{label} {value}" for label, value in self._lifecycle())
        evidence = " ".join(f"[{i + 1}]({url})" for i, url in enumerate(rule.evidence))
        description = rule.description.replace("|", "\\|")
        cells = (name, rule.severity.value, rule.family, lifecycle or "stable", description, evidence)
        return "| " + " | ".join(cells) + " |"

    def sarif_help(self) -> dict[str, str]:
        """SARIF's ``help``: plain text and markdown."""
        rule = self.rule
        text = [_sentence(rule.description), *(f"{label.capitalize()}: {value}" for label, value in self._lifecycle())]
        markdown = [f"**{rule.id}** ({rule.family}, {rule.severity.value}): {_sentence(rule.description)}"]
        markdown += [f"**{label.capitalize()}:** {value}" for label, value in self._lifecycle()]
        if rule.why:
            text.append(f"Why: {rule.why}")
            markdown.append(f"**Why.** {rule.why}")
        if rule.fix:
            text.append(f"How to fix: {rule.fix}")
            markdown.append(f"**How to fix.** {rule.fix}")
        text.append("Evidence: " + " ".join(rule.evidence))
        markdown.append("**Evidence.**\n" + "\n".join(f"- <{url}>" for url in rule.evidence))
        return {"text": "\n\n".join(text), "markdown": "\n\n".join(markdown)}

    def page(self) -> str:
        """The generated docs/rules/<ID>.md page."""
        rule = self.rule
        lines = [
            f"# {rule.id}",
            "",
            "<!-- Generated by `" + REGENERATE + "`; do not edit by hand. -->",
            "",
            f"- family: `{rule.family}`",
            f"- default severity: **{rule.severity.value}**",
            *(f"- {label}: **{value}**" for label, value in self._lifecycle()),
            "",
            _sentence(rule.description),
            "",
        ]
        if rule.why:
            lines += ["## Why", "", rule.why, ""]
        if rule.fix:
            lines += ["## How to fix", "", rule.fix, ""]
        lines += ["## Evidence", "", *(f"- <{url}>" for url in rule.evidence), ""]
        lines += [
            "## Configuration",
            "",
            "In `pyproject.toml` (or `specprobe.toml` without the `tool.specprobe` prefix):",
            "",
            "```toml",
            "[tool.specprobe]",
            "# off everywhere:",
            f'ignore = ["{rule.id}"]',
            "# or another severity:",
            f'severity = {{ "{rule.id}" = "{_other_severity(rule)}" }}',
            "",
            "# or off for some deployments only, with the reason on record:",
            "[[tool.specprobe.per-deployment-ignores]]",
            'deployment = "k8s/Deployment/my-server/*"',
            f'rules = ["{rule.id}"]',
            'reason = "why this deployment is accepted as it is"',
            "```",
            "",
            f"`specprobe rule {rule.id}` prints this page in a terminal; [all rules](README.md).",
            "",
        ]
        return "\n".join(lines)


def _sentence(text: str) -> str:
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


def _other_severity(rule: Rule) -> str:
    return "warning" if rule.severity.value == "error" else "error"


MARKDOWN_HEADER = [
    "| ID | severity | family | status | description | evidence |",
    "| --- | --- | --- | --- | --- | --- |",
]


def render_table(rules: list[Rule], *, link_pages: bool = False) -> str:
    """Every rule as one markdown table (`specprobe rules --format markdown`), rows from RuleExplanation."""
    lines = [
        "# specprobe rules",
        "",
        "Generated by `specprobe rules --format markdown`; do not edit by hand.",
        "",
        *MARKDOWN_HEADER,
        *(RuleExplanation(r).markdown_row(link_page=link_pages) for r in rules),
    ]
    return "\n".join(lines) + "\n"


def render_index(rules: list[Rule]) -> str:
    lines = [
        "# specprobe rules",
        "",
        "<!-- Generated by `" + REGENERATE + "`; do not edit by hand. -->",
        "",
        f"{len(rules)} rules; `specprobe rule ID` explains one in a terminal. Select, ignore or re-grade them",
        "in the project configuration ([below](#configuration)).",
        "",
        *MARKDOWN_HEADER,
        *(RuleExplanation(r).markdown_row(link_page=True) for r in rules),
    ]
    lines += ["", *CONFIGURATION_DOC]
    return "\n".join(lines) + "\n"


CONFIGURATION_DOC = [
    "## Configuration",
    "",
    "specprobe reads `[tool.specprobe]` in `pyproject.toml`, or a `specprobe.toml` with the same keys at",
    "top level: the nearest one above the command's inputs, else above the working directory;",
    "`--config FILE` names one. The table is checked against a JSON Schema shipped in the package",
    "(`specprobe/data/config.schema.json`); an invalid one, or a rule ID that matches no rule, stops the",
    "run with one line and exit code 2. Every finding-producing command (`check`, `lint`, `matrix`,",
    "`gate`) applies it; suppressed findings are counted on stderr and in the JSON report",
    "(`suppressed`).",
    "",
    "```toml",
    "[tool.specprobe]",
    "# Rule IDs or prefixes ending at a dash (LINT, LINT-, VOCAB-D2T), or ALL. The most specific",
    "# matching entry of select and ignore decides; ignore wins a tie; no select means all rules.",
    'select = ["ALL"]',
    'ignore = ["TARGET-ATTENTION"]',
    "# Severity overrides, by ID or prefix.",
    'severity = { "TARGET-MAX-POSITION" = "error" }',
    '# The mildest severity that fails the run: "error" (default) or "warning" (like --strict).',
    'fail-on = "error"',
    "# Accepted findings (see --baseline), relative to this file.",
    'baseline = "specprobe-baseline.json"',
    "# Drafters and targets named by hub id: read from the hub, warning on what cannot be read",
    '# ("optional", default), failing on it ("required"), or never asking the hub ("off").',
    'hub = "optional"',
    "",
    "# Rules off for the deployments a glob matches; the reason is required.",
    "[[tool.specprobe.per-deployment-ignores]]",
    'deployment = "k8s/Deployment/legacy-*"',
    'rules = ["LINT-"]',
    'reason = "legacy fleet on vLLM 0.16, replaced by the v2 deployments"',
    "```",
    "",
    "### Baselines",
    "",
    "`--baseline FILE` lets a fleet with existing warnings adopt the gate: when FILE is missing (or with",
    "`--update-baseline`) the run's errors and warnings are written to it and accepted; later runs",
    "suppress those findings (counted) and fail only on new ones. A finding's fingerprint is its rule,",
    "deployment, file (relative to the working directory) and message with line positions removed,",
    "so moving lines or checking out elsewhere keeps it; SARIF `partialFingerprints` and GitLab",
    "`fingerprint` carry the same value. Run from the repository root so paths agree.",
]


def expected_pages(rules: list[Rule]) -> dict[str, str]:
    """File name -> content of every page docs/rules/ must hold."""
    pages = {f"{r.id}.md": RuleExplanation(r).page() for r in rules}
    pages["README.md"] = render_index(rules)
    return pages


def stale_pages(directory: Path, rules: list[Rule]) -> list[str]:
    """Names of pages that are missing, differ, or no longer belong to a rule."""
    expected = expected_pages(rules)
    present = {p.name for p in directory.glob("*.md")} if directory.is_dir() else set()
    stale = [
        name
        for name, text in sorted(expected.items())
        if name not in present or (directory / name).read_text(encoding="utf-8") != text
    ]
    return stale + sorted(present - set(expected))


def write_pages(directory: Path, rules: list[Rule]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    expected = expected_pages(rules)
    for page in directory.glob("*.md"):
        if page.name not in expected:
            page.unlink()
    for name, text in expected.items():
        (directory / name).write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """``python -m specprobe.ruledocs [DIR]``: rewrite the rule pages (default docs/rules)."""
    args = sys.argv[1:] if argv is None else argv
    directory = Path(args[0]) if args else DOCS_DIR
    write_pages(directory, documented_rules())
    sys.stdout.write(f"wrote {directory}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
