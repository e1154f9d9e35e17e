"""Shell text split into simple commands with the line of every word, using the standard ``shlex``.

Handles what launch scripts and ``sh -c`` strings use: line continuations, comments, ``;``, ``&&``,
``||``, pipes, ``&``, compound-command keywords (``if``/``then``/``do``/``{``), redirections, and
variables assigned earlier in the script (``MODEL=/m``, ``export X=...``, ``${VAR:-default}``),
expanded the way the shell would for the simple cases. Nothing is ever executed; command substitution
``$(...)`` and unknown variables stay as written, for the caller to report.
"""

from __future__ import annotations

import bisect
import re
import shlex
from dataclasses import dataclass, field

from specprobe.findings import SpecprobeError

_SEPARATORS = frozenset(";&|()\n")
_REDIRECTS = frozenset({">", ">>", "<", ">&", "<&", "&>", ">|", "<<", "<<<", "<>", "&>>"})
_KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time", "exec"})
_ENDERS = frozenset({"fi", "done", "}", "esac", "then", "else", "do"})
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)
_VARIABLE = re.compile(
    r"\$\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?::?(?P<op>[-=])(?P<default>[^}]*))?\}|\$(?P<bare>[A-Za-z_][A-Za-z0-9_]*)"
)
UNEXPANDED = re.compile(r"\$(\{[A-Za-z_][A-Za-z0-9_]*[^}]*\}|[A-Za-z_][A-Za-z0-9_]*|\(|[@*0-9])")
MAX_WORDS = 200_000


class ShellSyntaxError(SpecprobeError):
    """The text is not shell the tokenizer can read (an unclosed quote); carries the line."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


@dataclass
class SimpleCommand:
    """One simple command: its words (variables expanded where known), the line of each word, and the
    variables the script had assigned when it ran."""

    words: list[str]
    lines: list[int]
    variables: dict[str, str] = field(default_factory=dict)

    @property
    def line(self) -> int:
        return self.lines[0] if self.lines else 0


def expand(word: str, variables: dict[str, str]) -> str:
    """``$VAR``, ``${VAR}``, ``${VAR:-default}`` expanded from ``variables``; unknown ones stay as written."""
    if "$" not in word:
        return word

    def substitute(match: re.Match[str]) -> str:
        name = match.group("braced") or match.group("bare")
        if name in variables:
            return variables[name]
        if match.group("op") is not None:
            return match.group("default") or ""
        return match.group(0)

    return _VARIABLE.sub(substitute, word)


class _Stream:
    """A text stream for shlex that counts characters read, and whose ``readline`` (used by shlex to
    skip a comment) stops before the newline so that the newline still ends the command."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def read(self, size: int = 1) -> str:
        chunk = self.text[self.pos : self.pos + size]
        self.pos += len(chunk)
        return chunk

    def readline(self) -> str:
        end = self.text.find("\n", self.pos)
        end = len(self.text) if end < 0 else end
        chunk = self.text[self.pos : end]
        self.pos = end
        return chunk


def _tokens(text: str) -> list[tuple[str, int]]:
    """(token, offset of its first character) for every token; separators come back as tokens."""
    # Backslash-newline joins lines; replacing it by two spaces keeps every offset where it was.
    joined = text.replace("\\\r\n", "   ").replace("\\\n", "  ")
    stream = _Stream(joined)
    lexer = shlex.shlex(stream, posix=True, punctuation_chars=";&|()<>\n")  # type: ignore[arg-type]
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = "#"
    found: list[tuple[str, int]] = []
    previous_end = 0
    while True:
        token = lexer.get_token()
        if token is None or token == lexer.eof:
            break
        found.append((token, _start(joined, previous_end)))
        previous_end = stream.pos - len(lexer._pushback_chars)  # type: ignore[attr-defined]
        if len(found) > MAX_WORDS:
            raise SpecprobeError(f"more than {MAX_WORDS} words: not a launch script")
    return found


def _start(text: str, offset: int) -> int:
    """The offset of the first character after ``offset`` that is neither blank nor in a comment."""
    length = len(text)
    while offset < length:
        char = text[offset]
        if char in " \t\r":
            offset += 1
        elif char == "#":
            newline = text.find("\n", offset)
            offset = length if newline < 0 else newline
        else:
            break
    return offset


def split_commands(
    text: str, *, first_line: int = 1, lines_follow_text: bool = True, variables: dict[str, str] | None = None
) -> list[SimpleCommand]:
    """The simple commands of ``text``; ``first_line`` is the file line of its first character, and when
    ``lines_follow_text`` is false (a folded YAML scalar) every word is reported at ``first_line``.

    ShellSyntaxError (with the line) for text shlex cannot read.
    """
    newlines = [i for i, char in enumerate(text) if char == "\n"]

    def line_at(offset: int) -> int:
        return first_line + bisect.bisect_right(newlines, offset - 1) if lines_follow_text else first_line

    try:
        tokens = _tokens(text)
    except ValueError as exc:  # shlex: "No closing quotation" / "No escaped character"
        raise ShellSyntaxError(f"shell text cannot be read: {exc}", first_line) from None
    scope = dict(variables or {})
    commands: list[SimpleCommand] = []
    words: list[str] = []
    lines: list[int] = []
    skip_next = False

    def finish() -> None:
        if not words:
            return
        start = 0
        while start < len(words) and words[start] in _KEYWORDS:
            start += 1
        body, body_lines = words[start:], lines[start:]
        if body and all(_ASSIGNMENT.match(w) for w in body):
            for word in body:
                name, value = word.split("=", 1)
                scope[name] = expand(value, scope)
        elif body[:1] == ["export"] or body[:1] == ["readonly"] or body[:1] == ["local"]:
            for word in body[1:]:
                match = _ASSIGNMENT.match(word)
                if match:
                    scope[match.group(1)] = expand(match.group(2), scope)
        elif body and body[0] not in _ENDERS:
            expanded = [expand(w, scope) for w in body]
            commands.append(SimpleCommand(expanded, list(body_lines), dict(scope)))
        words.clear()
        lines.clear()

    for token, offset in tokens:
        if skip_next:
            skip_next = False
            continue
        if token and all(char in _SEPARATORS for char in token):
            finish()
            continue
        if token in _REDIRECTS or (token and set(token) <= set("<>&")):
            skip_next = True  # the redirection's target is no argument
            if words and words[-1].isdigit():
                words.pop()
                lines.pop()
            continue
        words.append(token)
        lines.append(line_at(offset))
    finish()
    return commands
