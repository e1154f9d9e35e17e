"""`specprobe demo`: build a valid and a broken EAGLE-3 drafter, check both, print both reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from specprobe.cli._common import (
    OutputOption,
    cannot_run_guard,
    format_option,
    report_width,
    resolve_format,
    use_color,
    write_output,
)

DEMO_FORMATS = ("text", "json")


def register(app: typer.Typer) -> None:
    """Add `specprobe demo` to the app."""

    @app.command("demo")
    @cannot_run_guard
    def demo_command(
        out: Annotated[
            Path | None, typer.Option("--out", help="Write the example folders here instead of a temporary folder.")
        ] = None,
        static: Annotated[
            bool,
            typer.Option("--static", help="Random-weight drafters and static checks only (no training, no torch)."),
        ] = False,
        models: Annotated[
            Path | None,
            typer.Option(
                "--models",
                help="Reuse models trained earlier (a folder with target/, draft/ and draft-broken/, as written "
                "by a previous `specprobe demo --out DIR`): copied, not retrained; the smoke extra is still needed.",
                file_okay=False,
            ),
        ] = None,
        fmt: Annotated[str | None, format_option(DEMO_FORMATS)] = None,
        output: OutputOption = None,
    ) -> None:
        """Write a valid EAGLE-3 drafter, a broken copy and their target; check both.

        With the smoke extra installed the target and drafters are trained on the CPU (about a minute)
        and both drafters are measured by the reference smoke test. `--out` is where the model folders
        go; `--output` is where the report goes.
        """
        from specprobe.demo.example import run_demo
        from specprobe.findings import Report, SpecprobeError

        chosen = resolve_format(fmt, DEMO_FORMATS)
        if static and models is not None:
            raise SpecprobeError("--static writes random-weight drafters; --models reuses trained ones: choose one")
        result = run_demo(out, train=False if static else None, models=models)
        sections = [("valid drafter", result.valid), ("broken drafter", result.broken)]
        sections += [(f"smoke, reference backend: {name}", smoke) for name, smoke in result.smoke.items()]
        if chosen == "json":
            # One envelope like every other command's; each section is a full report of its own.
            envelope = Report(
                command="demo",
                subject={"folder": str(result.root)},
                extra={
                    "trained": result.trained,
                    "as_expected": result.as_expected,
                    "verdict": result.verdict,
                    "reports": [{"title": title, **report.to_json_dict()} for title, report in sections],
                },
            )
            text = json.dumps(envelope.to_json_dict(), indent=2) + "\n"
        else:
            from specprobe.columns import wrap
            from specprobe.reporters import REPORTERS

            width = report_width(output)
            reporter = REPORTERS["text"](color=use_color(output), width=width)
            parts = []
            for title, report in sections:
                label = f": {report.subject.get('draft')}" if title.endswith("drafter") else ""
                heading = "\n".join(wrap(f"== {title}{label}", width, hang="   "))
                parts.append(f"{heading}\n{reporter.render(report)}\n")
            text = "".join(parts) + "\n".join(wrap(result.verdict, width, hang="    ")) + "\n"
        write_output(text, output)
        raise typer.Exit(0 if result.as_expected else 1)
