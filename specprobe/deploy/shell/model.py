"""What the shell reader returns (commands with the line of every word, notes) and the names and
patterns the rest of the reader shares."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from specprobe.findings import SpecprobeError

ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\+?)=(.*)$", re.DOTALL)
_VARIABLE = re.compile(
    r"\$\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?::?(?P<op>[-=])(?P<default>[^}]*))?\}|\$(?P<bare>[A-Za-z_][A-Za-z0-9_]*)"
)
UNEXPANDED = re.compile(r"\$(\{[A-Za-z_][A-Za-z0-9_]*[^}]*\}|[A-Za-z_][A-Za-z0-9_]*|\(|[@*0-9])")
MAX_WORDS = 200_000
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ShellSyntaxError(SpecprobeError):
    """The text is not shell that can be read (an unclosed quote); carries the line."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


@dataclass
class SimpleCommand:
    """One simple command: its words (expanded where known), the line of each word, and the variables
    the script had assigned when it ran."""

    words: list[str]
    lines: list[int]
    variables: dict[str, str] = field(default_factory=dict)

    @property
    def line(self) -> int:
        return self.lines[0] if self.lines else 0


@dataclass
class ShellScript:
    """The commands of a script and notes about what could not be read as bash reads it (with lines)."""

    commands: list[SimpleCommand] = field(default_factory=list)
    notes: list[tuple[str, int]] = field(default_factory=list)
    # Files the script writes from a heredoc (`cat > serve.yaml <<EOF`): name -> (text, its first line),
    # so that a later `vllm serve --config serve.yaml` is read with them.
    files: dict[str, tuple[str, int]] = field(default_factory=dict)


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
