"""What every subcommand shares: the --format/--output options, colour policy, error handling, emit."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, ParamSpec, TypeVar

import typer

from specprobe.findings import ExitCode, Report, SpecprobeError, exit_code
from specprobe.reporters import REPORTERS
from specprobe.textsafe import terminal

P = ParamSpec("P")
R = TypeVar("R")

FORMAT_HELP = "Output format: " + ", ".join(REPORTERS) + " (env SPECPROBE_FORMAT)."

FormatOption = Annotated[
    str | None, typer.Option("--format", "-f", help=FORMAT_HELP, show_default=False)
]
OutputOption = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write the report to FILE instead of stdout.", dir_okay=False)
]
StrictOption = Annotated[bool, typer.Option("--strict", help="Warnings fail the run too (exit 1).")]


def use_color(output: Path | None) -> bool:
    """Colour only on an interactive stdout and never when NO_COLOR is set (https://no-color.org)."""
    if output is not None or "NO_COLOR" in os.environ:
        return False
    return sys.stdout.isatty()


def fail(message: str) -> typer.Exit:
    """Print one line to stderr and return the exit for 'could not run' (2).

    The message often quotes a path or value the user gave: escaped, it stays one line."""
    typer.echo(f"specprobe: error: {terminal(message)}", err=True)
    return typer.Exit(int(ExitCode.CANNOT_RUN))


def cannot_run_guard(func: Callable[P, R]) -> Callable[P, R]:
    """Turn SpecprobeError (bad arguments, missing paths, engine crash) into one line and exit 2."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except SpecprobeError as exc:
            raise fail(str(exc)) from None

    return wrapper


def resolve_format(fmt: str | None, choices: tuple[str, ...] | None = None) -> str:
    """The format to write: ``--format`` (an unknown one is a usage error), else ``SPECPROBE_FORMAT``
    when this command has that format (a team-wide default must not break commands that lack it),
    else text."""
    allowed = choices or tuple(REPORTERS)
    if fmt is not None:
        if fmt not in allowed:
            raise SpecprobeError(f"unknown format {fmt!r}; choose one of: {', '.join(allowed)}")
        return fmt
    from_env = os.environ.get("SPECPROBE_FORMAT", "").strip()
    return from_env if from_env in allowed else "text"


def write_output(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise SpecprobeError(f"cannot write {output}: {exc.strerror}") from None


def emit(report: Report, fmt: str | None, output: Path | None, *, strict: bool = False) -> None:
    """Render ``report`` in the chosen format, write it, and exit by the policy in findings.py."""
    chosen = resolve_format(fmt)
    reporter = REPORTERS[chosen](color=use_color(output) and chosen == "text")
    write_output(reporter.render(report), output)
    code = exit_code(report, strict=strict)
    if output is not None or chosen != "text":
        # The verdict goes to stderr so that stdout stays a clean document.
        summary = report.summary
        typer.echo(
            f"specprobe {report.command}: {summary.errors} error(s), {summary.warnings} warning(s)",
            err=True,
        )
    raise typer.Exit(int(code))
