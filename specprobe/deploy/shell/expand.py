"""Word expansion as bash does it, without running anything: quotes, parameters (defaults,
alternatives, lengths), arrays, ``$@``, heredoc text through ``$(cat <<EOF)``, word splitting."""

from __future__ import annotations

import re
from dataclasses import dataclass

from specprobe.deploy.shell.model import NAME, UNEXPANDED
from specprobe.deploy.shell.rewrite import FILLER, closing, skip_quoted

# $(cat <<EOF ... EOF): a command substitution whose output is a heredoc's text.
_HEREDOC_OUTPUT = re.compile(
    r"\s*cat\s*<<(?P<strip>-?)\s*(?P<quote>['\"]?)(?P<delim>[A-Za-z0-9_.-]+)(?P=quote)[ \t]*\n"
    r"(?P<body>.*?)\n[ \t]*(?P=delim)[ \t]*\n?\s*",
    re.DOTALL,
)
_EACH = re.compile(r"\$@|\$\{[A-Za-z_][A-Za-z0-9_]*\[@\]\}")
_BRACED = re.compile(
    r"^(?P<bang>!?)(?P<hash>#?)(?P<name>[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!])"
    r"(?:\[(?P<index>[^\]]*)\])?(?P<op>:?[-=+?])?(?P<rest>.*)$",
    re.DOTALL,
)


@dataclass
class Value:
    """A variable: one string, or an array's elements; each with the line where it was assigned."""

    items: list[str]
    lines: list[int]
    array: bool = False

    @property
    def scalar(self) -> str:
        return " ".join(self.items) if self.array else (self.items[0] if self.items else "")


def _opaque(substitution: str) -> str:
    """An unknown command substitution as it stands in a value: its text without quotes and
    backslashes, so that a value built around it (a JSON string) keeps the quoting it was written with."""
    return substitution.translate({ord('"'): None, ord("'"): None, ord("\\"): None})


_PRINTF_SPEC = re.compile(r"%(%|[-+ 0#]*\d*(?:\.\d+)?[sdifgeExXoc])")


def raw_words(text: str) -> list[str] | None:
    """``text`` split at unquoted blanks, quotes kept (for the expander); None on an operator."""
    words: list[str] = []
    current = ""
    i = 0
    while i < len(text):
        char = text[i]
        if char in "'\"":
            end = skip_quoted(text, i)
            current += text[i:end]
            i = end
        elif char == "\\":
            current += "" if text[i + 1 : i + 2] == "\n" else text[i : i + 2]  # a continuation joins lines
            i += 2
        elif char.isspace():
            if current:
                words.append(current)
            current = ""
            i += 1
        elif char in ";&|<>()`":
            return None
        else:
            current += char
            i += 1
    if current:
        words.append(current)
    return words


def _split_fields(value: str) -> list[str]:
    """Word splitting of an unquoted expansion at blanks, except inside what is left as written
    (``$(...)``, ``${...}``, backticks): their output is not known, so it is not split."""
    pieces: list[str] = []
    current: list[str] = []
    depth = 0
    in_backticks = False
    i = 0
    while i < len(value):
        char = value[i]
        if char == "`":
            in_backticks = not in_backticks
        elif value.startswith(("$(", "${"), i):
            depth += 1
            current.append(value[i : i + 2])
            i += 2
            continue
        elif char in ")}" and depth:
            depth -= 1
        elif char.isspace() and not depth and not in_backticks:
            if current:
                pieces.append("".join(current))
                current = []
            i += 1
            continue
        current.append(char)
        i += 1
    if current:
        pieces.append("".join(current))
    return pieces


@dataclass
class _Field:
    text: str = ""
    exists: bool = False  # a quoted empty string is a field; an empty unquoted expansion is not
    line: int | None = None  # an array element's own line, when the field is exactly that element


class Expander:
    """Word expansion of one raw word (quotes included) against a scope."""

    def __init__(self, scope: dict[str, Value], positional: list[str] | None) -> None:
        self.scope = scope
        self.positional = positional
        self.split = True  # false while expanding an assignment's value: quotes removed, no splitting
        self._empty_each = False  # the last "${A[@]}" / "$@" had no element

    def fields(self, raw: str) -> list[_Field]:
        fields: list[_Field] = [_Field()]
        self._expand(raw, fields, quoted=False)
        return [f for f in fields if f.exists]

    def string(self, raw: str) -> str:
        """The word as one string, without splitting (assignment values, ``${X:-default}``)."""
        fields: list[_Field] = [_Field()]
        split, self.split = self.split, False
        try:
            self._expand(raw, fields, quoted=False)
        finally:
            self.split = split
        return " ".join(f.text for f in fields)

    def _printf(self, inner: str) -> str | None:
        """``$(printf FORMAT ARGS...)`` with known arguments: what the builtin prints (a JSON config
        assembled with printf, say); None when it cannot be told for sure."""
        words = raw_words(inner.strip())
        if not words or words[0] != "printf" or len(words) < 2 or words[1].startswith("-"):
            return None
        values = [field.text for word in words[1:] for field in self.fields(word)]
        template, args = values[0], values[1:]
        specs = [spec for spec in _PRINTF_SPEC.findall(template) if spec != "%"]
        if len(specs) != len(args):
            return None  # bash would repeat or pad the format: not followed
        converted: list[object] = []
        for spec, arg in zip(specs, args, strict=True):
            if UNEXPANDED.search(arg):
                if spec[-1] != "s":
                    return None  # a number that is not known: the output is not either
                converted.append(_opaque(arg))  # left as written, its text kept for the report
                continue
            try:
                converted.append(int(arg, 0) if spec[-1] in "dioxXc" else float(arg) if spec[-1] in "feEgG" else arg)
            except ValueError:
                return None
        try:
            text = template.encode().decode("unicode_escape") if "\\" in template else template
            return text % tuple(converted)
        except (TypeError, ValueError, UnicodeDecodeError):
            return None

    def quoted_string(self, text: str) -> str:
        """``text`` expanded as inside double quotes (an unquoted heredoc's body)."""
        fields: list[_Field] = [_Field()]
        self._expand(text, fields, quoted=True)
        return "".join(f.text for f in fields)

    def _add(self, fields: list[_Field], text: str) -> None:
        fields[-1].text += text
        fields[-1].exists = True
        fields[-1].line = None

    def _expand(self, raw: str, fields: list[_Field], *, quoted: bool) -> None:
        i = 0
        n = len(raw)
        while i < n:
            char = raw[i]
            if char == FILLER:
                i += 1
            elif char == "\\":
                nxt = raw[i + 1 : i + 2]
                if quoted and nxt not in ('"', "\\", "$", "`", "\n"):
                    self._add(fields, char + nxt)
                elif nxt != "\n":
                    self._add(fields, nxt)
                i += 2
            elif char == "'" and not quoted:
                end = raw.find("'", i + 1)
                end = n if end < 0 else end
                self._add(fields, raw[i + 1 : end])
                i = end + 1
            elif char == '"' and not quoted:
                end = skip_quoted(raw, i) - 1
                inner = raw[i + 1 : end]
                existed, fields[-1].exists = fields[-1].exists, True
                self._expand(inner, fields, quoted=True)
                if _EACH.fullmatch(inner) and not fields[-1].text and self._empty_each:
                    fields[-1].exists = existed  # "${A[@]}" of an empty array is no word at all
                i = end + 1
            elif char == "$" and i + 1 < n:
                i = self._dollar(raw, i, fields, quoted=quoted)
            elif char == "`":
                end = raw.find("`", i + 1)
                end = n if end < 0 else end
                self._add(fields, _opaque(raw[i : end + 1]))
                i = end + 1
            else:
                self._add(fields, char)
                i += 1

    def _dollar(self, raw: str, i: int, fields: list[_Field], *, quoted: bool) -> int:
        nxt = raw[i + 1]
        if nxt == "(":
            end = closing(raw, i + 2, "(", ")")
            end = len(raw) - 1 if end < 0 else end
            heredoc = _HEREDOC_OUTPUT.fullmatch(raw[i + 2 : end])
            if heredoc is not None:
                # $(cat <<EOF ... EOF): the text is known (a JSON config written inline, say).
                body = heredoc.group("body")
                if heredoc.group("strip"):
                    body = "\n".join(line.lstrip("\t") for line in body.split("\n"))
                value = body if heredoc.group("quote") else self.quoted_string(body)
                self._emit(Value([value.rstrip("\n")], [0]), fields, quoted=quoted, each=False)
                return end + 1
            printed = self._printf(raw[i + 2 : end])
            if printed is not None:
                self._emit(Value([printed.rstrip("\n")], [0]), fields, quoted=quoted, each=False)
                return end + 1
            self._add(fields, _opaque(raw[i : end + 1]))  # command substitution: its output is not known
            return end + 1
        if nxt == "{":
            end = closing(raw, i + 2, "{", "}")
            if end < 0:
                self._add(fields, raw[i:])
                return len(raw)
            self._braced(raw[i + 2 : end], raw[i : end + 1], fields, quoted=quoted)
            return end + 1
        match = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]").match(raw, i + 1)
        if match is None:
            self._add(fields, "$")
            return i + 1
        name = match.group(0)
        value = self._lookup(name)
        if value is None:
            self._add(fields, raw[i : match.end()])
        else:
            self._emit(value, fields, quoted=quoted, each=name == "@")
        return match.end()

    def _lookup(self, name: str, index: str | None = None) -> Value | None:
        if name in ("@", "*"):
            if self.positional is None:
                return None
            return Value(list(self.positional), [0] * len(self.positional), array=True)
        if name == "#" and self.positional is not None:
            return Value([str(len(self.positional))], [0])
        if name.isdigit():
            if self.positional is None:
                return None
            position = int(name)
            if position == 0:
                return None
            return Value([self.positional[position - 1] if position <= len(self.positional) else ""], [0])
        value = self.scope.get(name)
        if value is None or index is None:
            return value
        if index in ("@", "*"):
            return Value(list(value.items), list(value.lines), array=True)
        if index.isdigit():
            position = int(index)
            if position < len(value.items):
                return Value([value.items[position]], [value.lines[position]])
            return Value([""], [0])
        return None

    def _emit(self, value: Value, fields: list[_Field], *, quoted: bool, each: bool) -> None:
        """Append an expansion: quoted ``"${A[@]}"`` gives one field per element, quoted otherwise one
        string, unquoted is split at blanks."""
        if quoted and value.array and each:
            self._empty_each = not value.items
            for index, item in enumerate(value.items):
                if index > 0:
                    fields.append(_Field())
                was_empty = not fields[-1].text
                self._add(fields, item)
                if was_empty and value.lines[index]:
                    fields[-1].line = value.lines[index]
            if not value.items:
                return
            return
        if quoted or not self.split:
            self._add(fields, value.scalar)
            return
        for index, item in enumerate(value.items if value.array else [value.scalar]):
            if index > 0 and fields[-1].exists:
                fields.append(_Field())
            pieces = _split_fields(item)
            if item[:1].isspace() and fields[-1].exists:
                fields.append(_Field())
            for number, piece in enumerate(pieces):
                if number > 0:
                    fields.append(_Field())
                was_empty = not fields[-1].text
                self._add(fields, piece)
                if was_empty and value.array and value.lines[index] and len(pieces) == 1:
                    fields[-1].line = value.lines[index]
            if item[-1:].isspace() and fields[-1].exists:
                fields.append(_Field())

    def _braced(self, inner: str, whole: str, fields: list[_Field], *, quoted: bool) -> None:
        match = _BRACED.match(inner)
        if match is None or match.group("bang"):
            self._add(fields, whole)
            return
        name, index, op, rest = match.group("name"), match.group("index"), match.group("op"), match.group("rest")
        if match.group("hash"):
            value = self._lookup(name, index)
            if value is None or op or rest:
                self._add(fields, whole)
            else:
                count = len(value.items) if value.array and index in ("@", "*") else len(value.scalar)
                self._add(fields, str(count))
            return
        value = self._lookup(name, index)
        if op is None:
            if rest or (index is not None and value is None and name in self.scope):
                self._add(fields, whole)  # ${X#pat}, ${X/a/b}, ...: not followed
            elif value is None:
                self._add(fields, whole)
            else:
                self._emit(value, fields, quoted=quoted, each=index == "@" or name == "@")
            return
        unset = value is None or (op.startswith(":") and not value.scalar)
        kind = op[-1]
        if kind == "-":
            chosen = Value([self.string(rest)], [0]) if unset else value
        elif kind == "=":
            if unset:
                chosen = Value([self.string(rest)], [0])
                if NAME.fullmatch(name):
                    self.scope[name] = chosen
            else:
                chosen = value
        elif kind == "+":
            chosen = Value([""], [0]) if unset else Value([self.string(rest)], [0])
        else:  # ${X:?message}: the script stops when unset; the value is what it is otherwise
            chosen = value if value is not None else None
        if chosen is None:
            self._add(fields, whole)
        else:
            self._emit(chosen, fields, quoted=quoted, each=index == "@")
