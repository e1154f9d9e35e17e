"""`specprobe lint -- vllm serve ... | python -m sglang.launch_server ...`: check a serve command before running it."""

from __future__ import annotations

from typing import Annotated

import typer

from specprobe.cli._common import (
    BaselineOption,
    ConfigOption,
    FormatOption,
    OutputOption,
    StrictOption,
    UpdateBaselineOption,
    cannot_run_guard,
    emit,
)


@cannot_run_guard
def _lint(
    command: Annotated[
        list[str] | None, typer.Argument(help="The serve command, after --.", show_default=False)
    ] = None,
    *,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine", "-e", help="Engine version to lint against, e.g. vllm==0.33.0 (default: newest snapshot)."
        ),
    ] = None,
    fmt: FormatOption = None,
    output: OutputOption = None,
    strict: StrictOption = False,
    config: ConfigOption = None,
    baseline: BaselineOption = None,
    update_baseline: UpdateBaselineOption = False,
) -> None:
    """Lint a `vllm serve` or `sglang.launch_server` command against the engine's schema snapshot and the
    compatibility matrix (nothing is run or downloaded)."""
    from specprobe.lint import lint_command

    report = lint_command(list(command or []), engine=engine, strict=strict)
    emit(report, fmt, output, strict=strict, config=config, baseline=baseline, update_baseline=update_baseline)


def register(app: typer.Typer) -> None:
    """Add `specprobe lint` to the app."""
    app.command(
        "lint",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )(_lint)
