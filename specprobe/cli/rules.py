"""`specprobe rules`: list every rule with its ID, severity, family, description and evidence."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from specprobe.cli._common import OutputOption, cannot_run_guard, resolve_format, write_output


def register(app: typer.Typer) -> None:
    @app.command("rules")
    @cannot_run_guard
    def rules_command(
        fmt: Annotated[
            str | None, typer.Option("--format", "-f", help="text, json or markdown (env SPECPROBE_FORMAT).")
        ] = None,
        output: OutputOption = None,
    ) -> None:
        """List every rule: stable ID, severity, family, one-line description, evidence."""
        from specprobe.rules.catalog import all_rules, render_markdown

        chosen = resolve_format(fmt, ("text", "json", "markdown"))
        rules = all_rules()
        if chosen == "json":
            text = json.dumps(
                [
                    {
                        "id": r.id,
                        "family": r.family,
                        "severity": r.severity.value,
                        "description": r.description,
                        "evidence": list(r.evidence),
                    }
                    for r in rules
                ],
                indent=2,
            ) + "\n"
        elif chosen == "markdown":
            text = render_markdown(rules)
        else:
            text = "".join(f"{r.id:<28} {r.severity.value:<8} {r.family:<9} {r.description}\n" for r in rules)
        write_output(text, output)
