"""`specprobe rules` lists every rule; `specprobe rule ID` explains one (why, evidence, how to fix)."""

from __future__ import annotations

import json
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


def register(app: typer.Typer) -> None:
    @app.command("rules")
    @cannot_run_guard
    def rules_command(
        fmt: Annotated[str | None, format_option(RULES_FORMATS)] = None,
        output: OutputOption = None,
    ) -> None:
        """List every rule: stable ID, severity, family, one-line description, evidence."""
        from specprobe.ruledocs import RuleExplanation, documented_rules, render_table

        chosen = resolve_format(fmt, RULES_FORMATS)
        rules = documented_rules()
        if chosen == "json":
            listed = [RuleExplanation(r).to_json_dict() for r in rules]
            text = _envelope(Report(command="rules", extra={"rules": listed}))
        elif chosen == "markdown":
            text = render_table(rules)
        else:
            width = report_width(output)
            text = "".join(RuleExplanation(r).list_line(width) for r in rules)
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
            text = explanation.text(report_width(output))
        write_output(text, output)
