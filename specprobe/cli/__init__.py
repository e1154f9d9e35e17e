"""The `specprobe` command line: each subcommand parses, builds, runs and reports; no logic lives here.

Subcommand modules import heavy libraries (torch, transformers, engines) only inside the command
body, so `specprobe --help`, `check`, `lint` and `matrix` start fast.
"""

from __future__ import annotations

import inspect
import re
import sys

import typer

from specprobe import __version__
from specprobe.cli import check, demo, engines, gate, lint, matrix, rules, schema, smoke
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


for _module in (check, schema, lint, gate, matrix, smoke, rules, demo, engines):
    _module.register(app)


def _summary(help_text: str) -> str:
    """A command's one-line summary for the root ``--help``: the first sentence of its help, whole.
    Click would otherwise cut it at 45 characters with "..." whatever the terminal's width; given as
    ``short_help`` it is wrapped between words at the terminal's width instead."""
    paragraph = " ".join(help_text.strip().split("\n\n", 1)[0].split())
    sentence = re.split(r"(?<=[.;:])\s", paragraph, maxsplit=1)[0]
    return sentence.rstrip(".;:")


for _info in app.registered_commands:
    if _info.short_help is None:
        _text = _info.help or (inspect.getdoc(_info.callback) if _info.callback else None)
        if _text:
            _info.short_help = _summary(_text)


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
