"""The `specprobe` command line: each subcommand parses, builds, runs and reports; no logic lives here.

Subcommand modules import heavy libraries (torch, transformers, engines) only inside the command
body, so `specprobe --help`, `check`, `lint` and `matrix` start fast.
"""

from __future__ import annotations

import sys

import typer

from specprobe import __version__
from specprobe.cli import check, demo, fix, gate, lint, matrix, rules, schema, smoke
from specprobe.textsafe import terminal

app = typer.Typer(
    name="specprobe",
    help="Will this speculative-decoding deployment work? Check drafters, engine schemas and pairings "
    "for vLLM and SGLang before spending GPUs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"specprobe {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """Will this speculative-decoding deployment work?"""


for _module in (check, schema, lint, gate, matrix, smoke, rules, demo, fix):
    _module.register(app)


def main() -> None:
    """Console-script entry point: no traceback ever reaches the user."""
    try:
        app()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.stderr.write("specprobe: interrupted\n")
        sys.exit(130)
    except Exception as exc:  # a bug in specprobe, not the user's input: still one line, exit 2
        sys.stderr.write(f"specprobe: internal error: {type(exc).__name__}: {terminal(exc)}\n")
        sys.exit(2)
