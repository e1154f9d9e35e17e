"""`specprobe fix`: parse the arguments, plan/write/prove the corrected copy, report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from specprobe.cli._common import OutputOption, cannot_run_guard, emit, format_option

FIX_FORMATS = ("text", "json", "markdown")


def register(app: typer.Typer) -> None:
    """Add `specprobe fix` to the app."""

    @app.command("fix")
    @cannot_run_guard
    def fix_command(  # noqa: PLR0917 - typer maps each parameter to an option
        draft_dir: Annotated[Path, typer.Argument(help="The drafter folder (config.json + safetensors); only read.")],
        target: Annotated[
            str, typer.Option("--target", help="Target folder, its config.json, or a cached hub id.")
        ],
        engine: Annotated[str, typer.Option("--engine", help="The release to fix for: vllm==V or sglang==V.")],
        out: Annotated[
            Path | None,
            typer.Option("--out", help="The new folder to write (must not exist, or be empty).", file_okay=False),
        ] = None,
        plan: Annotated[bool, typer.Option("--plan", help="Print the changes and their check; write nothing.")] = False,
        exact: Annotated[
            bool, typer.Option("--exact", help="Also load the copy with the engine's own code, when available.")
        ] = False,
        format_out: Annotated[
            str | None,
            typer.Option(
                "--format-out",
                help="Checkpoint format of the copy: eagle3, specforge, speculators, vllm-native "
                "(default: what the release reads best, with the fewest changes).",
            ),
        ] = None,
        fmt: Annotated[str | None, format_option(FIX_FORMATS)] = None,
        output: OutputOption = None,
    ) -> None:
        """Write a corrected copy of a drafter for one engine release, with proof; or say why it cannot be fixed."""
        from specprobe.fix.run import FixOptions, run_fix

        report = run_fix(
            FixOptions(
                draft=draft_dir,
                target=target,
                engine=engine,
                out=out,
                plan_only=plan,
                exact=exact,
                format_out=format_out,
            )
        )
        emit(report, fmt, output, formats=FIX_FORMATS, inputs=[draft_dir])
