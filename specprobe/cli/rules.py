"""`specprobe rules` lists every rule; `specprobe rule ID` explains one (why, evidence, how to fix)."""

from __future__ import annotations

import json
import textwrap
from typing import TYPE_CHECKING, Annotated

import typer

from specprobe.cli._common import (
    OutputOption,
    cannot_run_guard,
    format_option,
    report_width,
    resolve_format,
    write_output,
)
from specprobe.findings import Report, SpecprobeError

if TYPE_CHECKING:
    from specprobe.rules import Rule

RULES_FORMATS = ("text", "json", "markdown")
RULE_FORMATS = ("text", "json", "markdown")


def _envelope(report: Report) -> str:
    return json.dumps(report.to_json_dict(), indent=2) + "\n"


def find_rule(rule_id: str) -> Rule:
    """The rule ``rule_id`` names (any case), its documentation filled in from the shipped data."""
    from specprobe.ruledocs import documented
    from specprobe.rules.catalog import all_rules

    by_id = {r.id: r for r in all_rules()}
    wanted = rule_id.strip().upper()
    if wanted in by_id:
        return documented(by_id[wanted])
    close = sorted(r for r in by_id if wanted and (wanted in r or r.startswith(wanted.split("-")[0] + "-")))
    hint = f"; did you mean {', '.join(close[:5])}?" if close else "; `specprobe rules` lists them"
    raise SpecprobeError(f"no rule {rule_id!r}{hint}")


def _rule_line(rule: Rule, width: int | None) -> str:
    """One rule of the list: ID, severity and family in columns, the description wrapped between
    words under its own column at ``width`` (on lines of its own when that column would be too narrow)."""
    head = f"{rule.id:<28} {rule.severity.value:<8} {rule.family:<9} "
    description = " ".join(rule.description.split())
    if width is None or len(head) + len(description) <= width:
        return head + description + "\n"
    column = width - len(head)
    if column >= 24 and all(len(word) <= column for word in description.split()):
        lines = textwrap.wrap(description, column, break_long_words=False, break_on_hyphens=False)
        return head + lines[0] + "\n" + "".join(" " * len(head) + f"{line}\n" for line in lines[1:])
    # A word wider than the column (a dotted path, a file name): the description goes below, indented.
    lines = textwrap.wrap(description, width - 4, break_long_words=False, break_on_hyphens=False)
    return head.rstrip() + "\n" + "".join(f"    {line}\n" for line in lines)


def register(app: typer.Typer) -> None:
    @app.command("rules")
    @cannot_run_guard
    def rules_command(
        fmt: Annotated[str | None, format_option(RULES_FORMATS)] = None,
        output: OutputOption = None,
    ) -> None:
        """List every rule: stable ID, severity, family, one-line description, evidence."""
        from specprobe.ruledocs import RuleExplanation, documented_rules
        from specprobe.rules.catalog import render_markdown

        chosen = resolve_format(fmt, RULES_FORMATS)
        rules = documented_rules()
        if chosen == "json":
            listed = [RuleExplanation(r).to_json_dict() for r in rules]
            text = _envelope(Report(command="rules", extra={"rules": listed}))
        elif chosen == "markdown":
            text = render_markdown(rules)
        else:
            width = report_width(output)
            text = "".join(_rule_line(r, width) for r in rules)
        write_output(text, output)

    @app.command("rule")
    @cannot_run_guard
    def rule_command(
        rule_id: Annotated[str, typer.Argument(metavar="ID", help="A rule ID, e.g. VOCAB-D2T-RANGE.")],
        fmt: Annotated[str | None, format_option(RULE_FORMATS)] = None,
        output: OutputOption = None,
    ) -> None:
        """Explain one rule: what it checks, why it matters, evidence, how to fix it."""
        from specprobe.ruledocs import RuleExplanation

        chosen = resolve_format(fmt, RULE_FORMATS)
        explanation = RuleExplanation(find_rule(rule_id))
        if chosen == "json":
            subject: dict[str, str | None] = {"rule": explanation.rule.id}
            text = _envelope(Report(command="rule", subject=subject, extra={"rule": explanation.to_json_dict()}))
        elif chosen == "markdown":
            text = explanation.page()
        else:
            text = explanation.text()
        write_output(text, output)
