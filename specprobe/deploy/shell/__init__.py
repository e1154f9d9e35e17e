"""Shell text read the way bash reads it, into the simple commands it would run, with the line of every word.

The grammar comes from ``bashlex`` (a port of bash's own parser): lists, pipelines, ``&&``/``||``,
``if``/``for``/``while`` bodies, brace and subshell groups, functions, heredocs, comments and line
continuations. Words are then expanded here as bash expands them, without running anything:
quoting, parameter expansion from the assignments the script made before (``X=1``, ``export``,
``local``, ``${X:-default}``, ``${X:=d}``, ``${X:+alt}``), arrays (``A=(...)``, ``A+=(...)``,
``"${A[@]}"``) and word splitting of unquoted expansions, so that ``"$ARGS"`` stays one argument
and ``$ARGS`` becomes several, as the engine will receive them. A function that is called runs its
body with its arguments as ``$1``...; ``eval`` of a string re-reads it.

What bashlex's grammar lacks is rewritten in place before parsing, keeping every character's
offset: array assignments are marked, ``[[ ... ]]`` and ``(( ... ))`` become ``true``, ``$(( ... ))``
becomes ``0``, and a ``case`` becomes a group that runs every branch (each branch's launch is a
deployment). Text bashlex still cannot read is split by the simpler ``shlex`` tokenizer and a note
says so. Nothing is ever executed; command substitution ``$(...)`` and unknown variables stay as
written, for the caller to report.

The package: ``rewrite`` (the offset-keeping rewrite), ``simple`` (simple commands without bashlex),
``walk`` (running the tree), ``expand`` (word expansion), ``fallback`` (the simpler reader), ``model``
(what it returns).
"""

from __future__ import annotations

import bisect
from typing import Any

from specprobe.deploy.shell.expand import Value
from specprobe.deploy.shell.fallback import fallback_commands
from specprobe.deploy.shell.model import MAX_WORDS, UNEXPANDED, ShellScript, ShellSyntaxError, SimpleCommand, expand
from specprobe.deploy.shell.rewrite import FILLER, rewrite_for_bashlex
from specprobe.deploy.shell.simple import simple_commands as _simple_commands
from specprobe.deploy.shell.walk import Walker
from specprobe.findings import SpecprobeError

__all__ = [
    "MAX_WORDS",
    "UNEXPANDED",
    "ShellScript",
    "ShellSyntaxError",
    "SimpleCommand",
    "expand",
    "parse_script",
    "split_commands",
]


class ParseFailedError(Exception):
    """bashlex could not read the text (its own ParsingError, or a construct it does not implement);
    ``rewritten`` is the text as rewritten for it (heredoc bodies blanked), for the simpler reader."""

    def __init__(self, message: str, offset: int | None, rewritten: str) -> None:
        super().__init__(message)
        self.offset = offset
        self.rewritten = rewritten


def _parse(text: str, line_at: Any, scope: dict[str, Value], positional: list[str] | None) -> ShellScript:
    rewrite = rewrite_for_bashlex(text)
    if not rewrite.text.strip():
        return ShellScript()
    tail = rewrite.text.rstrip()
    if tail.endswith("\\") and not tail.endswith("\\\\"):
        # A continuation with nothing after it (a YAML block's last line ending in `\`): bash reads
        # the end of the text; bashlex stops with "unexpected EOF".
        rewrite.text = tail[:-1] + " " + rewrite.text[len(tail) :]
    simple = _simple_commands(rewrite.text)
    if simple is not None:
        walker = Walker(rewrite, text, line_at, scope, _reparse)
        for command in simple:
            walker.walk(command, positional)
        return ShellScript(walker.commands)
    # Imported here: bashlex builds its parser tables at import (~0.3 s), paid only by shell text
    # beyond simple commands.
    import bashlex  # noqa: PLC0415

    try:
        trees = bashlex.parse(rewrite.text)
    except bashlex.errors.ParsingError as exc:
        raise ParseFailedError(exc.message, exc.position, rewrite.text) from None
    except (NotImplementedError, AttributeError, IndexError, TypeError, ValueError, KeyError, AssertionError) as exc:
        # bashlex raises these for grammar it does not implement (e.g. `select`, coprocesses).
        raise ParseFailedError(str(exc) or type(exc).__name__, None, rewrite.text) from None
    except RecursionError:
        raise ParseFailedError("nested too deeply", None, rewrite.text) from None
    walker = Walker(rewrite, text, line_at, scope, _reparse)
    for tree in trees:
        walker.walk(tree, positional)
    return ShellScript(walker.commands, files=walker.files)


def _reparse(text: str, line: int, scope: dict[str, Value], positional: list[str] | None) -> list[SimpleCommand]:
    """``eval STRING``: the string read as a script, every word at ``line``; nothing when unreadable."""
    try:
        return _parse(text, lambda _offset: line, scope, positional).commands
    except (SpecprobeError, ParseFailedError):
        return []  # an eval string that is not shell runs nothing that can be followed


def parse_script(
    text: str, *, first_line: int = 1, lines_follow_text: bool = True, variables: dict[str, str] | None = None
) -> ShellScript:
    """The simple commands of ``text`` as bash would run them, and notes on what was read otherwise.

    ``first_line`` is the file line of the text's first character; when ``lines_follow_text`` is false
    (a folded YAML scalar) every word is reported at ``first_line``. ShellSyntaxError (with the line)
    for text that no reader can split (an unclosed quote).
    """
    newlines = [i for i, char in enumerate(text) if char == "\n"]

    def line_at(offset: int) -> int:
        return first_line + bisect.bisect_right(newlines, offset - 1) if lines_follow_text else first_line

    scope = {name: Value([value], [0]) for name, value in (variables or {}).items()}
    try:
        return _parse(text, line_at, scope, None)
    except ParseFailedError as failure:
        line = line_at(failure.offset) if failure.offset is not None else first_line
        # The rewritten text keeps every offset; fillers become blanks for shlex.
        commands = fallback_commands(failure.rewritten.replace(FILLER, " "), line_at, variables)
        note = f"bash grammar not read here ({failure}); the script was split into words by a simpler reader"
        return ShellScript(commands, [(note, line)])
    except RecursionError:
        raise ShellSyntaxError("shell text nested too deeply", first_line) from None


def split_commands(
    text: str, *, first_line: int = 1, lines_follow_text: bool = True, variables: dict[str, str] | None = None
) -> list[SimpleCommand]:
    """The simple commands of ``text`` (see ``parse_script``, whose notes this drops)."""
    return parse_script(text, first_line=first_line, lines_follow_text=lines_follow_text, variables=variables).commands
