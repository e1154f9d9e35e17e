"""`specprobe demo`: build a valid and a broken EAGLE-3 drafter, check both, print both reports."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from specprobe.cli._common import cannot_run_guard, use_color, write_output


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
    ) -> None:
        """Write a valid EAGLE-3 drafter, a broken copy and their target; check both.

        With the smoke extra installed the target and drafters are trained on the CPU (about a minute)
        and both drafters are measured by the reference smoke test.
        """
        from specprobe.demo import run_demo
        from specprobe.reporters import REPORTERS

        result = run_demo(out, train=False if static else None)
        reporter = REPORTERS["text"](color=use_color(None))
        for title, report in (("valid drafter", result.valid), ("broken drafter", result.broken)):
            write_output(f"== {title}: {report.subject.get('draft')}\n", None)
            write_output(reporter.render(report) + "\n", None)
        for name, smoke in result.smoke.items():
            write_output(f"== smoke, reference backend: {name}\n", None)
            write_output(reporter.render(smoke) + "\n", None)
        write_output(result.verdict + "\n", None)
        raise typer.Exit(0 if result.as_expected else 1)
