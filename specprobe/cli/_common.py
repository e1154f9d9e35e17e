"""What every subcommand shares: the --format/--output options, colour policy, error handling, emit."""

from __future__ import annotations

import functools
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ParamSpec, TypeVar

import typer

from specprobe.findings import ExitCode, Report, Severity, SpecprobeError, exit_code
from specprobe.untrusted.text import terminal

if TYPE_CHECKING:
    from specprobe.config import Config

P = ParamSpec("P")
R = TypeVar("R")

# Every registered reporter renders a findings report; commands with other output (rules, schema)
# declare their own shorter tuple. The names are written here rather than read from
# specprobe.reporters because every command module imports this one and the reporters cost about
# 15 ms to import (`specprobe --help` renders no report); tests/config/test_distribution.py checks
# that they are the registry's names, in its order.
FINDINGS_FORMATS: tuple[str, ...] = ("text", "concise", "json", "sarif", "junit", "github", "gitlab", "markdown")


def format_option(formats: Sequence[str]) -> Any:
    """The ``--format`` option of a command that writes ``formats`` (its help lists them)."""
    return typer.Option(
        "--format",
        "-f",
        "--output-format",
        metavar="FORMAT",
        help="Output format: " + ", ".join(formats) + " (env SPECPROBE_FORMAT).",
        show_default=False,
    )


FORMAT_HELP = "Output format: " + ", ".join(FINDINGS_FORMATS) + " (env SPECPROBE_FORMAT)."

FormatOption = Annotated[str | None, format_option(FINDINGS_FORMATS)]
OutputOption = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write the report to FILE instead of stdout.", dir_okay=False)
]
StrictOption = Annotated[bool, typer.Option("--strict", help="Warnings fail the run too (exit 1).")]
ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="Configuration: a specprobe.toml or a pyproject.toml with [tool.specprobe] (default: the nearest "
        "one above the inputs, else above the working directory).",
        dir_okay=False,
        show_default=False,
    ),
]
BaselineOption = Annotated[
    Path | None,
    typer.Option(
        "--baseline",
        help="Baseline of accepted findings: written when FILE is missing (or with --update-baseline), "
        "otherwise its findings are suppressed and only new ones fail.",
        dir_okay=False,
        show_default=False,
    ),
]
SarifLevelOption = Annotated[
    Severity | None,
    typer.Option(
        "--sarif-level",
        help="The mildest severity SARIF reports as results (code-scanning alerts): error, warning "
        "(default) or info; milder findings are counted in the run's properties. Config key: sarif-level.",
        show_default=False,
        case_sensitive=False,
    ),
]
def _quiet(value: bool) -> bool:
    """``--quiet`` is known before the command body runs: no progress is drawn from its first step."""
    if value:
        from specprobe.progress import set_quiet

        set_quiet(True)
    return value


QuietOption = Annotated[
    bool,
    typer.Option(
        "--quiet",
        "-q",
        help="Only errors, warnings and the verdict (a pass is one line); no progress on stderr.",
        callback=_quiet,
    ),
]
UpdateBaselineOption = Annotated[
    bool, typer.Option("--update-baseline", help="Rewrite the --baseline file with this run's findings.")
]


def use_color(output: Path | None) -> bool:
    """Colour only on an interactive stdout and never when NO_COLOR is set (https://no-color.org)."""
    if output is not None or "NO_COLOR" in os.environ:
        return False
    return sys.stdout.isatty()


# What a pipe or a CI log is wrapped at: a log viewer, a pager and a mail are read at 80 columns.
PIPE_WIDTH = 80


def report_width(output: Path | None) -> int | None:
    """The width text reports wrap at: ``COLUMNS`` when set, else the terminal's when stdout is one,
    else (a pipe, a CI log) 80. ``--output FILE`` is not wrapped (a document, not a screen); the
    ``concise`` format never is (one finding per line stays greppable)."""
    if output is not None:
        return None
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return PIPE_WIDTH


def stderr_width() -> int | None:
    """The width notes and errors on stderr wrap at: the terminal's (``COLUMNS`` first) when stderr is
    one; else None, one line each, as logs and callers that read the error keep them."""
    if not sys.stderr.isatty():
        return None
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return shutil.get_terminal_size().columns


def fail(message: str) -> typer.Exit:
    """Print one line to stderr and return the exit for 'could not run' (2).

    The message often quotes a path or value the user gave: escaped, it stays one line (a terminal
    gets it broken between words at its width; a log keeps the line whole)."""
    from specprobe.columns import wrap

    typer.echo("\n".join(wrap(f"specprobe: error: {terminal(message)}", stderr_width(), hang="    ")), err=True)
    return typer.Exit(int(ExitCode.CANNOT_RUN))


# The libraries of the smoke extra (pyproject.toml): a command that needs one and does not find it
# names the extra, never a ModuleNotFoundError.
SMOKE_EXTRA_MODULES = frozenset({"torch", "transformers", "safetensors", "tokenizers", "matplotlib", "tqdm"})


def cannot_run_guard(func: Callable[P, R]) -> Callable[P, R]:
    """Turn SpecprobeError (bad arguments, missing paths, engine crash) and a missing library of the
    smoke extra into one line and exit 2."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except SpecprobeError as exc:
            raise fail(str(exc)) from None
        except ModuleNotFoundError as exc:
            missing = (exc.name or "").split(".", 1)[0]
            if missing not in SMOKE_EXTRA_MODULES:
                raise
            raise fail(
                f"this needs {missing}, from the smoke extra: pip install torch && pip install 'specprobe[smoke]' "
                "(or '.[smoke]' in a checkout)"
            ) from None

    return wrapper


def resolve_format(fmt: str | None, choices: tuple[str, ...] | None = None) -> str:
    """The format to write: ``--format`` (an unknown one is a usage error), else ``SPECPROBE_FORMAT``
    when this command has that format (a team-wide default must not break commands that lack it),
    else text."""
    allowed = choices or FINDINGS_FORMATS
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


def configured(
    report: Report,
    *,
    inputs: Sequence[Path] = (),
    config: Path | None = None,
    baseline: Path | None = None,
    update_baseline: bool = False,
) -> tuple[Report, Config]:
    """``report`` filtered by the project configuration and the baseline, and the configuration.

    The configuration is ``config`` or the nearest one above the inputs (else the working
    directory). The baseline is ``baseline`` or the configuration's; it is written, and this run's
    errors and warnings accepted, when the file is missing or ``update_baseline`` is set.
    """
    from specprobe import baseline as baselines
    from specprobe import config as configuration

    settings = configuration.load_config(config if config is not None else configuration.find_config(inputs))
    report = configuration.apply(report, settings)
    baseline_path = baseline if baseline is not None else settings.baseline
    if update_baseline and baseline_path is None:
        raise SpecprobeError("--update-baseline needs --baseline FILE (or baseline = ... in the configuration)")
    if baseline_path is not None:
        if update_baseline or not baseline_path.exists():
            # Info findings stay visible: a baseline accepts what would fail, not the run's context.
            accepted = [f for f in report.findings if f.severity is not Severity.INFO]
            baselines.write_baseline(baseline_path, accepted)
            typer.echo(f"specprobe: wrote baseline {terminal(baseline_path)} ({len(accepted)} finding(s))", err=True)
        report = baselines.apply_baseline(report, baselines.read_baseline(baseline_path))
    return report, settings


def emit(
    report: Report,
    fmt: str | None,
    output: Path | None,
    *,
    strict: bool = False,
    formats: Sequence[str] | None = None,
    inputs: Sequence[Path] = (),
    config: Path | None = None,
    baseline: Path | None = None,
    update_baseline: bool = False,
    sarif_level: Severity | None = None,
    quiet: bool = False,
    next_steps: Callable[[Report], list[str]] | None = None,
) -> None:
    """Apply configuration and baseline, render ``report`` in the chosen format, write it, and exit
    by the policy in findings.py (``strict`` or the configuration's ``fail-on = "warning"``: warnings
    fail too).

    The policy is set on the report itself (``Report.fail_on``) before any format renders it, so the
    text verdict, JSON/SARIF ``ok``, JUnit failures, the GitHub and markdown verdicts and the exit
    code are one decision."""
    chosen = resolve_format(fmt, tuple(formats) if formats is not None else None)
    report, settings = configured(
        report, inputs=inputs, config=config, baseline=baseline, update_baseline=update_baseline
    )
    warnings_fail = strict or settings.fail_on is Severity.WARNING
    report = replace(report, fail_on=Severity.WARNING if warnings_fail else Severity.ERROR)
    if not report.ok:
        # Asked only of a failing run: the fix planner reads the drafter again, which a pass never needs.
        from specprobe.cli._next import why_step

        found = next_steps(report) if next_steps is not None else []
        report.next_steps = [*report.next_steps, *found, *why_step(report)]
    from specprobe.reporters import REPORTERS  # start-up: see FINDINGS_FORMATS

    reporter = REPORTERS[chosen](
        color=use_color(output) and chosen == "text",
        width=report_width(output) if chosen == "text" else None,
        sarif_level=sarif_level or settings.sarif_level or Severity.WARNING,
        quiet=quiet,
    )
    write_output(reporter.render(report), output)
    if chosen == "github":
        from specprobe.reporters.github import append_step_summary

        append_step_summary(report, quiet=quiet)
    code = exit_code(report)
    if (output is not None or chosen not in {"text", "concise"}) and not (quiet and chosen == "github"):
        # (The github format states its verdict on stdout already: under --quiet that one line is all.)
        # The verdict goes to stderr so that stdout stays a clean document.
        summary = report.summary
        typer.echo(
            f"specprobe {report.command}: {'PASS' if report.ok else 'FAIL'} {summary.errors} error(s), "
            f"{summary.warnings} warning(s)" + (" (warnings fail)" if warnings_fail else ""),
            err=True,
        )
    from specprobe.baseline import suppressed_count

    suppressed = suppressed_count(report)
    if suppressed:
        typer.echo(
            f"specprobe {report.command}: {suppressed} finding(s) suppressed by configuration or baseline", err=True
        )
    raise typer.Exit(int(code))


def local_inputs(specs: Sequence[str | Path]) -> list[Path]:
    """The inputs that are paths on this machine (a hub id names no folder to find a configuration beside)."""
    found = []
    for spec in specs:
        try:
            path = Path(spec).expanduser()
            if path.exists():
                found.append(path)
        except (OSError, ValueError, RuntimeError):  # RuntimeError: ~user unknown here
            continue
    return found
