"""The simpler reader for text bashlex cannot parse: ``shlex`` tokens, ``$VAR`` expanded inside words."""

from __future__ import annotations

import shlex
from typing import Any

from specprobe.deploy.shell.model import ASSIGNMENT, MAX_WORDS, ShellSyntaxError, SimpleCommand, expand
from specprobe.findings import SpecprobeError

_SEPARATORS = frozenset(";&|()\n")
_REDIRECTS = frozenset({">", ">>", "<", ">&", "<&", "&>", ">|", "<<", "<<<", "<>", "&>>"})
_KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time", "exec"})
_ENDERS = frozenset({"fi", "done", "}", "esac", "then", "else", "do"})


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


def fallback_commands(text: str, line_at: Any, variables: dict[str, str] | None) -> list[SimpleCommand]:
    """Simple commands split by ``shlex`` (quotes removed, ``$VAR`` expanded inside words, no splitting)."""
    try:
        tokens = _tokens(text)
    except ValueError as exc:  # shlex: "No closing quotation" / "No escaped character"
        raise ShellSyntaxError(f"shell text cannot be read: {exc}", line_at(0)) from None
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
        if body and all(ASSIGNMENT.match(w) for w in body):
            for word in body:
                name, value = word.split("=", 1)
                scope[name.rstrip("+")] = expand(value, scope)
        elif body[:1] in (["export"], ["readonly"], ["local"]):
            for word in body[1:]:
                match = ASSIGNMENT.match(word)
                if match:
                    scope[match.group(1)] = expand(match.group(3), scope)
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
