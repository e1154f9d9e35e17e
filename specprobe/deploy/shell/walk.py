"""Walking the parsed script as bash would run it: assignments and declarations into the scope,
functions run where called, ``for`` bodies once per word, every branch of ``if``/``case``, ``eval``
re-read, heredocs that become values or files; each simple command with the line of every word."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from specprobe.deploy.shell.expand import Expander, Value, raw_words
from specprobe.deploy.shell.model import ASSIGNMENT, MAX_WORDS, NAME, UNEXPANDED, SimpleCommand
from specprobe.deploy.shell.rewrite import Rewrite
from specprobe.findings import SpecprobeError

# Reads a string as a script (``eval``): (text, its line, the scope, $1...) -> its commands.
Reparse = Callable[[str, int, dict[str, Value], list[str] | None], list[SimpleCommand]]
_MAX_CALL_DEPTH = 8
_MAX_LOOP = 16  # a `for` body is read once per word, for this many words at most
# `x=$2`, `x="${OPTARG}"`: a value that is one reference and nothing else (argument parsing).
_SOLE_REFERENCE = re.compile(r'^"?\$(\{[A-Za-z0-9_@*#?]+\}|[A-Za-z_][A-Za-z0-9_]*|[0-9@*])"?$')
_DECLARATIONS = frozenset({"export", "local", "readonly", "declare", "typeset"})


_INTEGER_TESTS = {
    "-eq": lambda a, b: a == b,
    "-ne": lambda a, b: a != b,
    "-gt": lambda a, b: a > b,
    "-ge": lambda a, b: a >= b,
    "-lt": lambda a, b: a < b,
    "-le": lambda a, b: a <= b,
}


def _evaluate(operands: list[str]) -> bool | None:
    """A test's result from its expanded operands; None when an operand is not known or the test is
    not one of the plain forms (``-n``, ``-z``, ``=``, ``!=``, integer comparisons, ``!``)."""
    if any(UNEXPANDED.search(operand) for operand in operands):
        return None
    if operands[:1] == ["!"]:
        inner = _evaluate(operands[1:])
        return None if inner is None else not inner
    if len(operands) == 1:
        return operands[0] != ""
    if len(operands) == 2 and operands[0] in ("-n", "-z"):
        return (operands[1] != "") == (operands[0] == "-n")
    if len(operands) == 3:
        left, operator, right = operands
        if operator in ("=", "==", "!=") and not any(char in right for char in "*?["):
            return (left == right) == (operator != "!=")
        if operator in _INTEGER_TESTS:
            try:
                return bool(_INTEGER_TESTS[operator](int(left), int(right)))
            except ValueError:
                return None
    return None


class Walker:
    def __init__(self, rewrite: Rewrite, source: str, line_at: Any, scope: dict[str, Value], reparse: Reparse) -> None:
        self.reparse = reparse
        self.rewrite = rewrite
        self.source = source
        self.text = rewrite.text
        self.arrays = rewrite.arrays
        self.line_at = line_at
        self.scope = scope
        self.functions: dict[str, Any] = {}
        self.commands: list[SimpleCommand] = []
        self.calls: list[str] = []
        self.words = 0
        self.files: dict[str, tuple[str, int]] = {}
        # Inside a branch or loop body that may not run (if/case/for/while): an assignment there whose
        # value is unknown (`model=$2` in an argument-parsing loop) keeps the non-empty value known
        # before it.
        self.conditional = 0
        self.case_groups = rewrite.case_groups

    def walk(self, node: Any, positional: list[str] | None) -> None:
        kind = getattr(node, "kind", None)
        if kind == "command":
            self._command(node, positional)
            return
        if kind == "function":
            name = next((p.word for p in node.parts if getattr(p, "kind", None) == "word"), None)
            if name is not None:
                self.functions[name] = node.body
            return
        if kind in ("word", "reservedword", "operator", "pipe", "redirect", "heredoc", "tilde", "parameter"):
            return
        if kind == "for":
            self._for(node, positional)
            return
        if kind == "if":
            self._if(node, positional)
            return
        children = getattr(node, "parts", None) or getattr(node, "list", None) or []
        first: Any = children[0] if children else None
        branch = kind in ("if", "for", "while", "until") or (
            kind == "compound" and getattr(first, "kind", None) == "reservedword" and first.pos[0] in self.case_groups
        )
        self.conditional += branch
        try:
            for child in children:
                self.walk(child, positional)
        finally:
            self.conditional -= branch

    def _if(self, node: Any, positional: list[str] | None) -> None:
        """``if``/``elif``/``else``: a branch whose test is known to fail is skipped, the first known to
        pass ends the chain; branches whose test is not known are all read, and a variable set in
        more than one of them keeps the first branch's value (the case the file puts first)."""
        parts = list(node.parts)
        branches: list[tuple[Any, Any]] = []
        k = 0
        while k < len(parts):
            part = parts[k]
            word = getattr(part, "word", None) if getattr(part, "kind", None) == "reservedword" else None
            if word in ("if", "elif") and k + 3 < len(parts):
                branches.append((parts[k + 1], parts[k + 3]))
                k += 4
            elif word == "else" and k + 1 < len(parts):
                branches.append((None, parts[k + 1]))
                k += 2
            else:
                k += 1
        first_values: dict[str, Value] = {}
        self.conditional += 1
        try:
            for condition, body in branches:
                verdict = True if condition is None else self._test(condition, positional)
                if verdict is False:
                    continue
                if condition is not None:
                    self.walk(condition, positional)  # a test may run commands too
                before = dict(self.scope)
                self.walk(body, positional)
                for name, value in list(self.scope.items()):
                    if before.get(name) is not value:
                        if name in first_values:
                            self.scope[name] = first_values[name]
                        else:
                            first_values[name] = value
                if verdict is True:
                    break
        finally:
            self.conditional -= 1

    def _test(self, condition: Any, positional: list[str] | None) -> bool | None:
        """Whether ``[ ... ]``, ``test ...`` or ``[[ ... ]]`` passes, when its operands are known."""
        commands = [p for p in getattr(condition, "parts", [condition]) if getattr(p, "kind", None) == "command"]
        if getattr(condition, "kind", None) == "command":
            commands = [condition]
        if len(commands) != 1:
            return None
        words = [p for p in commands[0].parts if getattr(p, "kind", None) == "word"]
        if not words:
            return None
        expander = Expander(self.scope, positional)
        end = self.rewrite.tests.get(words[0].pos[0])
        if end is not None:
            raw = raw_words(self.source[words[0].pos[0] + 2 : end - 2])
            if raw is None:
                return None
            operands = [" ".join(f.text for f in expander.fields(word)) for word in raw]
        else:
            operands = [" ".join(f.text for f in expander.fields(self._raw(word))) for word in words]
            if operands[:1] == ["["] and operands[-1:] == ["]"]:
                operands = operands[1:-1]
            elif operands[:1] == ["test"]:
                operands = operands[1:]
            else:
                return None
        return _evaluate(operands)

    def _heredoc_text(self, redirect: Any, expander: Expander) -> tuple[str, int]:
        """The text of a heredoc redirect (expanded unless its delimiter is quoted) and its first line."""
        start, end = redirect.heredoc.pos
        body = self.source[start:end].rsplit("\n", 1)[0] if "\n" in self.source[start:end] else ""
        header = self.source[redirect.pos[0] : start]
        if "'" not in header and '"' not in header:
            body = expander.quoted_string(body)
        return body, self.line_at(start)

    def _written_file(self, node: Any, expander: Expander) -> None:
        """``cat > NAME <<EOF ... EOF``: the file NAME holds the heredoc's text."""
        heredoc = next((p for p in node.parts if getattr(p, "heredoc", None) is not None), None)
        target = next(
            (p for p in node.parts if getattr(p, "kind", None) == "redirect" and p.type == ">" and p is not heredoc),
            None,
        )
        output = getattr(target, "output", None)
        if heredoc is None or output is None or getattr(output, "kind", None) != "word":
            return
        name = expander.string(self._raw(output)).rsplit("/", 1)[-1]
        self.files[name] = self._heredoc_text(heredoc, expander)

    def _read_heredoc(self, node: Any, words: list[str], expander: Expander) -> None:
        """``read -r -d '' NAME <<EOF ... EOF``: NAME gets the heredoc's text (a JSON config, say)."""
        redirect = next((p for p in node.parts if getattr(p, "heredoc", None) is not None), None)
        if redirect is None:
            return
        names: list[str] = []
        k = 1
        while k < len(words):
            if words[k] in ("-d", "-p", "-t", "-n", "-N", "-u", "-i", "-a"):
                k += 2
                continue
            if not words[k].startswith("-"):
                names.append(words[k])
            k += 1
        if not names or not NAME.fullmatch(names[0]):
            return
        body, line = self._heredoc_text(redirect, expander)
        self.scope[names[0]] = Value([body.rstrip("\n")], [line])

    def _for(self, node: Any, positional: list[str] | None) -> None:
        """``for NAME in WORDS; do BODY; done``: the body once per word (a few at most), NAME set."""
        parts = list(node.parts)
        names = [p for p in parts if getattr(p, "kind", None) == "word"]
        name = names[0].word if names else None
        in_at = next(
            (k for k, p in enumerate(parts) if getattr(p, "kind", None) == "reservedword" and p.word == "in"), None
        )
        items: list[tuple[str, int]] = []
        if in_at is not None:
            expander = Expander(self.scope, positional)
            for part in parts[in_at + 1 :]:
                if getattr(part, "kind", None) != "word":
                    break
                items.extend((f.text, self.line_at(part.pos[0])) for f in expander.fields(self._raw(part)))
        body = [p for p in parts if getattr(p, "kind", None) not in ("word", "reservedword")]
        self.conditional += 1
        try:
            for item, line in items[:_MAX_LOOP] or [("", 0)]:
                if name is not None and line:
                    self.scope[name] = Value([item], [line])
                for child in body:
                    self.walk(child, positional)
        finally:
            self.conditional -= 1

    def _raw(self, node: Any) -> str:
        start, end = node.pos
        return self.rewrite.original(self.source, start, end)

    def _assign(self, raw: str, line: int, expander: Expander, array_at: int | None, elements: list[Any]) -> None:
        match = ASSIGNMENT.match(raw)
        if match is None:
            return
        name, append, value_raw = match.groups()
        if array_at is not None:
            items: list[str] = []
            lines: list[int] = []
            for element in elements:
                for found in expander.fields(self._raw(element)):
                    items.append(found.text)
                    lines.append(found.line or self.line_at(element.pos[0]))
            old = self.scope.get(name)
            if append and old is not None:
                items, lines = [*old.items, *items], [*old.lines, *lines]
            self.scope[name] = Value(items, lines, array=True)
            return
        value = expander.string(value_raw)
        old = self.scope.get(name)
        if (
            self.conditional
            and old is not None
            and old.scalar
            and _SOLE_REFERENCE.match(value_raw)
            and UNEXPANDED.search(value)
            and not UNEXPANDED.search(old.scalar)
        ):
            return  # an empty default (`eagle_path=""`) does give way: the branch is what sets it
        if append and old is not None:
            value = old.scalar + value
        self.scope[name] = Value([value], [line])

    def _command(self, node: Any, positional: list[str] | None) -> None:
        parts = [p for p in node.parts if p.kind in ("word", "assignment")]
        self.words += len(parts)
        if self.words > MAX_WORDS:
            raise SpecprobeError(f"more than {MAX_WORDS} words: not a launch script")
        expander = Expander(self.scope, positional)
        array_index = next((k for k, p in enumerate(parts) if p.pos[0] in self.arrays), None)
        if array_index is not None:
            head = parts[array_index]
            name, append = self.arrays[head.pos[0]]
            raw = f"{name}{'+' if append else ''}="
            self._assign(raw, self.line_at(head.pos[0]), expander, head.pos[0], parts[array_index + 1 :])
            return
        prefix: list[Any] = []
        while parts and parts[0].kind == "assignment":
            prefix.append(parts.pop(0))
        if not parts:
            for assignment in prefix:
                self._assign(self._raw(assignment), self.line_at(assignment.pos[0]), expander, None, [])
            return
        words: list[str] = []
        lines: list[int] = []
        for part in [*prefix, *parts]:
            for found in expander.fields(self._raw(part)):
                words.append(found.text)
                lines.append(found.line or self.line_at(part.pos[0]))
        if not words:
            return
        head = words[0]
        if head == "shift" and positional is not None and not prefix:
            # `shift [N]` in a function: $1... move on (the caller's list is this call's own copy).
            count = int(words[1]) if len(words) > 1 and words[1].isdigit() else 1
            del positional[:count]
            return
        if head == "read":
            self._read_heredoc(node, words, expander)
            return
        if head == "cat" and len(words) == 1:
            self._written_file(node, expander)
            return
        if head in _DECLARATIONS and not prefix:
            for part in parts[1:]:
                raw = self._raw(part)
                if ASSIGNMENT.match(raw):
                    self._assign(raw, self.line_at(part.pos[0]), expander, None, [])
            return
        if head in self.functions and not prefix:
            if head in self.calls or len(self.calls) >= _MAX_CALL_DEPTH:
                return  # recursion: the body was walked once already
            self.calls.append(head)
            try:
                self.walk(self.functions[head], words[1:])
            finally:
                self.calls.pop()
            return
        if head == "eval" and len(words) > 1 and len(self.calls) < _MAX_CALL_DEPTH:
            self.calls.append("eval")
            try:
                self.commands.extend(self.reparse(" ".join(words[1:]), lines[0], self.scope, positional))
            finally:
                self.calls.pop()
            return
        variables = {key: value.scalar for key, value in self.scope.items()}
        self.commands.append(SimpleCommand(words, lines, variables))
