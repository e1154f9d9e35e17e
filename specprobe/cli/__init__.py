"""The `specprobe` command line: each subcommand parses, builds, runs and reports; no logic lives here.

Subcommand modules import heavy libraries (torch, transformers, engines) only inside the command
body, so `specprobe --help`, `check`, `lint` and `matrix` start fast. Start-up is also why the
console entry point registers only the subcommand it was asked for (`specprobe check ...` never
imports the schema, smoke or matrix command modules); `--help`, an unknown word and the importable
``app`` get every subcommand.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from collections.abc import Iterable

import typer

from specprobe import __version__
from specprobe.untrusted.text import terminal

# Command name -> the module under specprobe.cli whose register(app) adds it.
COMMAND_MODULES: dict[str, str] = {
    "check": "check",
    "schema": "schema",
    "lint": "lint",
    "gate": "gate",
    "matrix": "matrix",
    "smoke": "smoke",
    "rules": "rules",
    "rule": "rules",
    "demo": "demo",
    "engines": "engines",
    "fix": "fix",
}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"specprobe {__version__}")
        raise typer.Exit(0)


def build_app(commands: Iterable[str] | None = None) -> typer.Typer:
    """The typer app with ``commands`` registered (all of them when None), in the order --help lists them."""
    application = typer.Typer(
        name="specprobe",
        help="Will this speculative-decoding deployment work? Check drafters, engine schemas and pairings "
        "for vLLM and SGLang before spending GPUs.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )

    @application.callback()
    def _root(
        version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
    ) -> None:
        """Will this speculative-decoding deployment work?"""

    wanted = set(COMMAND_MODULES.values()) if commands is None else {COMMAND_MODULES[c] for c in commands}
    for module in dict.fromkeys(COMMAND_MODULES.values()):
        if module in wanted:
            importlib.import_module(f"specprobe.cli.{module}").register(application)
    _whole_summaries(application)
    return application


_FULL_APP: list[typer.Typer] = []


def __getattr__(name: str) -> typer.Typer:
    """``specprobe.cli.app``, every subcommand registered, built on first use (PEP 562)."""
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if not _FULL_APP:
        _FULL_APP.append(build_app())
    return _FULL_APP[0]


def _app_for(argv: list[str]) -> typer.Typer:
    """Only the named subcommand's module when the first argument names one (options come after it)."""
    return build_app([argv[0]]) if argv and argv[0] in COMMAND_MODULES else __getattr__("app")


def _summary(help_text: str) -> str:
    """A command's one-line summary for the root ``--help``: the first sentence of its help, whole.
    Click would otherwise cut it at 45 characters with "..." whatever the terminal's width; given as
    ``short_help`` it is wrapped between words at the terminal's width instead."""
    paragraph = " ".join(help_text.strip().split("\n\n", 1)[0].split())
    sentence = re.split(r"(?<=[.;:])\s", paragraph, maxsplit=1)[0]
    return sentence.rstrip(".;:")


def _whole_summaries(application: typer.Typer) -> None:
    """Give every registered command its whole first sentence as ``short_help``."""
    for info in application.registered_commands:
        if info.short_help is None:
            text = info.help or (inspect.getdoc(info.callback) if info.callback else None)
            if text:
                info.short_help = _summary(text)
    for group in application.registered_groups:
        # typer keeps unset group fields as DefaultPlaceholder objects, not None: look for a string.
        own = group.typer_instance.info if group.typer_instance is not None else None
        text = next((t for t in (group.help, own.help if own else None) if isinstance(t, str)), None)
        if not isinstance(group.short_help, str) and text:
            group.short_help = _summary(text)


def main() -> None:
    """Console-script entry point: no traceback ever reaches the user."""
    try:
        _app_for(sys.argv[1:])()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.stderr.write("specprobe: interrupted\n")
        sys.exit(130)
    except Exception as exc:  # a bug in specprobe, not the user's input: still one line, exit 2
        sys.stderr.write(f"specprobe: internal error: {type(exc).__name__}: {terminal(exc)}\n")
        sys.exit(2)
