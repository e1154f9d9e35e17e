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
"""

from __future__ import annotations

import bisect
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from specprobe.findings import SpecprobeError

_SEPARATORS = frozenset(";&|()\n")
_REDIRECTS = frozenset({">", ">>", "<", ">&", "<&", "&>", ">|", "<<", "<<<", "<>", "&>>"})
_KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time", "exec"})
_ENDERS = frozenset({"fi", "done", "}", "esac", "then", "else", "do"})
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\+?)=(.*)$", re.DOTALL)
_VARIABLE = re.compile(
    r"\$\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?::?(?P<op>[-=])(?P<default>[^}]*))?\}|\$(?P<bare>[A-Za-z_][A-Za-z0-9_]*)"
)
UNEXPANDED = re.compile(r"\$(\{[A-Za-z_][A-Za-z0-9_]*[^}]*\}|[A-Za-z_][A-Za-z0-9_]*|\(|[@*0-9])")
MAX_WORDS = 200_000
_MAX_CALL_DEPTH = 8
# $(cat <<EOF ... EOF): a command substitution whose output is a heredoc's text.
_HEREDOC_OUTPUT = re.compile(
    r"\s*cat\s*<<(?P<strip>-?)\s*(?P<quote>['\"]?)(?P<delim>[A-Za-z0-9_.-]+)(?P=quote)[ \t]*\n"
    r"(?P<body>.*?)\n[ \t]*(?P=delim)[ \t]*\n?\s*",
    re.DOTALL,
)
_MAX_LOOP = 16  # a `for` body is read once per word, for this many words at most
_EACH = re.compile(r"\$@|\$\{[A-Za-z_][A-Za-z0-9_]*\[@\]\}")
# `x=$2`, `x="${OPTARG}"`: a value that is one reference and nothing else (argument parsing).
_SOLE_REFERENCE = re.compile(r'^"?\$(\{[A-Za-z0-9_@*#?]+\}|[A-Za-z_][A-Za-z0-9_]*|[0-9@*])"?$')
_DECLARATIONS = frozenset({"export", "local", "readonly", "declare", "typeset"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BRACED = re.compile(
    r"^(?P<bang>!?)(?P<hash>#?)(?P<name>[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!])"
    r"(?:\[(?P<index>[^\]]*)\])?(?P<op>:?[-=+?])?(?P<rest>.*)$",
    re.DOTALL,
)


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


# --- rewriting what bashlex cannot parse, keeping offsets -------------------------------------------


def _skip_quoted(text: str, i: int) -> int:
    """Index after the quoted string or escape starting at ``i`` (``'``, ``"``, ``\\``)."""
    char = text[i]
    if char == "\\":
        return min(i + 2, len(text))
    if char == "'":
        end = text.find("'", i + 1)
        return len(text) if end < 0 else end + 1
    j = i + 1
    while j < len(text):
        if text[j] == "\\":
            j += 2
            continue
        if text[j] == '"':
            return j + 1
        if text.startswith("$(", j):
            # "$(cd "$(dirname x)" && pwd)": quotes inside a substitution do not end the string.
            close = _closing(text, j + 2, "(", ")")
            j = len(text) if close < 0 else close + 1
            continue
        j += 1
    return len(text)


def _closing(text: str, i: int, opener: str, closer: str, depth: int = 1) -> int:
    """Index of the ``closer`` that balances ``depth`` open ``opener``s, from ``i``; -1 when unbalanced."""
    j = i
    while j < len(text):
        char = text[j]
        if char in "'\"\\":
            j = _skip_quoted(text, j)
            continue
        if char == opener:
            depth += 1
        elif char == closer:
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return -1


# Fills the rest of a rewritten word (`$((1 + 2))` -> `0` and fillers): bashlex keeps it inside the word,
# word expansion drops it, so a rewrite inside quotes adds no blanks.
_FILLER = "\x02"


def _blank(chars: list[str], start: int, end: int, replacement: str = "", filler: str = " ") -> None:
    """Overwrite ``chars[start:end]`` with ``replacement`` then ``filler``, keeping newlines where they are."""
    for k in range(start, end):
        offset = k - start
        if offset < len(replacement):
            chars[k] = replacement[offset]
        elif chars[k] != "\n":
            chars[k] = filler


def _at_word_start(text: str, i: int) -> bool:
    return i == 0 or text[i - 1] in " \t\n;&|(){}"


def _keyword_at(text: str, i: int, word: str) -> bool:
    end = i + len(word)
    return text.startswith(word, i) and _at_word_start(text, i) and (end >= len(text) or text[end] in " \t\n;&|()")


@dataclass
class _Rewrite:
    text: str
    arrays: dict[int, tuple[str, bool]] = field(default_factory=dict)  # offset of NAME -> (name, append)
    case_groups: set[int] = field(default_factory=set)  # offsets of the `{` that stands for a `case`
    # Spans of command substitutions `$(...)`, hidden from bashlex (it stumbles on nested quotes in
    # them) and given back as written when a word is expanded: their output is never known here.
    substitutions: list[tuple[int, int]] = field(default_factory=list)

    def original(self, source: str, start: int, end: int) -> str:
        """``self.text[start:end]`` with the substitutions inside it as ``source`` wrote them."""
        chunk = self.text[start:end]
        inside = [(a, b) for a, b in self.substitutions if start <= a and b <= end]
        if not inside:
            return chunk
        pieces = list(chunk)
        for a, b in inside:
            pieces[a - start : b - start] = source[a:b]
        return "".join(pieces)


def _rewrite(text: str) -> _Rewrite:
    """``text`` with the constructs bashlex lacks rewritten in place (same length, same newlines)."""
    chars = list(text)
    arrays: dict[int, tuple[str, bool]] = {}
    case_groups: set[int] = set()
    substitutions: list[tuple[int, int]] = []
    case_depth: list[str] = []  # per open case: "pattern" (a pattern comes next) or "body"
    i = 0
    n = len(text)
    while i < n:
        char = text[i]
        if char in "'\"\\":
            end = _skip_quoted(text, i)
            if char == '"':
                _rewrite_arithmetic(text, chars, i + 1, end)
                _hide_substitutions(text, chars, i + 1, end, substitutions)
            i = end
            continue
        if char == "#" and _at_word_start(text, i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if char == "<" and text.startswith("<<", i) and not text.startswith("<<<", i):
            i = _skip_heredoc(text, i, chars)
            continue
        if char == "$" and text.startswith("$((", i):
            end = _closing(text, i + 3, "(", ")", depth=2)
            if end > 0:
                _blank(chars, i, end + 1, "0", _FILLER)
                i = end + 1
                continue
        if char == "$" and text.startswith("$(", i) and not text.startswith("$((", i):
            end = _closing(text, i + 2, "(", ")")
            if end > 0:
                _blank(chars, i + 2, end, "", _FILLER)
                substitutions.append((i, end + 1))
                i = end + 1
                continue
        if _at_word_start(text, i):
            if case_depth and case_depth[-1] == "pattern" and char not in " \t\n":
                if _keyword_at(text, i, "esac"):
                    _blank(chars, i, i + 4, "}")
                    case_depth.pop()
                    i += 4
                    continue
                end = _closing(text, i + (1 if char == "(" else 0), "(", ")")
                if end < 0:
                    break
                _blank(chars, i, end + 1)
                case_depth[-1] = "body"
                i = end + 1
                continue
            if text.startswith("[[", i) and i + 2 < n and text[i + 2] in " \t":
                end = text.find("]]", i + 2)
                while end > 0 and not (end + 2 >= n or text[end + 2] in " \t\n;&|)"):
                    end = text.find("]]", end + 2)
                if end > 0:
                    _blank(chars, i, end + 2, "true")
                    i = end + 2
                    continue
            if text.startswith("((", i):
                end = _closing(text, i + 2, "(", ")", depth=2)
                if end > 0:
                    _blank(chars, i, end + 1, "true")
                    i = end + 1
                    continue
            match = _NAME.match(text, i)
            if match and text.startswith(("=(", "+=("), match.end()):
                opener = text.index("(", match.end())
                end = _closing(text, opener + 1, "(", ")")
                if end > 0:
                    arrays[i] = (match.group(0), text[match.end()] == "+")
                    _blank(chars, match.end(), opener + 1)
                    _blank_array_body(text, chars, opener + 1, end)
                    chars[end] = " "
                    i = end + 1
                    continue
            if _keyword_at(text, i, "case"):
                header = re.compile(r"case\s+(?:\"[^\"]*\"|'[^']*'|\S)+\s+in(?=[\s;])").match(text, i)
                if header:
                    _blank(chars, i, header.end(), "{")
                    case_groups.add(i)
                    case_depth.append("pattern")
                    i = header.end()
                    continue
            if case_depth and case_depth[-1] == "body" and _keyword_at(text, i, "esac"):
                _blank(chars, i, i + 4, _separator(chars, i) + "}")
                case_depth.pop()
                i += 4
                continue
        if case_depth and case_depth[-1] == "body" and text.startswith((";;", ";&"), i):
            length = 3 if text.startswith(";;&", i) else 2
            _blank(chars, i, i + length, _separator(chars, i))
            case_depth[-1] = "pattern"
            i += length
            continue
        i += 1
    return _Rewrite("".join(chars), arrays, case_groups, substitutions)


def _hide_substitutions(
    text: str, chars: list[str], start: int, end: int, substitutions: list[tuple[int, int]]
) -> None:
    """``$( ... )`` inside a double-quoted string: its inside becomes filler (see ``_Rewrite``)."""
    at = text.find("$(", start, end)
    while at >= 0:
        if text.startswith("$((", at):
            at = text.find("$(", at + 3, end)
            continue
        close = _closing(text, at + 2, "(", ")")
        if close < 0 or close >= end:
            return
        _blank(chars, at + 2, close, "", _FILLER)
        substitutions.append((at, close + 1))
        at = text.find("$(", close + 1, end)


def _rewrite_arithmetic(text: str, chars: list[str], start: int, end: int) -> None:
    """``$(( ... ))`` inside a double-quoted string becomes ``0`` (bashlex does not implement it)."""
    at = text.find("$((", start, end)
    while at >= 0:
        close = _closing(text, at + 3, "(", ")", depth=2)
        if close < 0 or close >= end:
            return
        _blank(chars, at, close + 1, "0", _FILLER)
        at = text.find("$((", close + 1, end)


def _separator(chars: list[str], i: int) -> str:
    """``;`` when a command ends right before ``i`` (in the rewritten text), else nothing: bash refuses
    an empty command (``{ ;`` or a lone ``;`` on its own line)."""
    j = i - 1
    while j >= 0 and chars[j] in " \t":
        j -= 1
    return "" if j < 0 or chars[j] in "\n;{&|" else ";"


def _blank_array_body(text: str, chars: list[str], start: int, end: int) -> None:
    """Inside ``A=( ... )``: newlines and comments become spaces, so the elements stay one command."""
    j = start
    while j < end:
        char = text[j]
        if char in "'\"\\":
            after = _skip_quoted(text, j)
            if char == "\\" and text[j + 1 : j + 2] == "\n":
                chars[j] = chars[j + 1] = " "
            j = after
            continue
        if char == "#" and _at_word_start(text, j):
            stop = text.find("\n", j)
            stop = end if stop < 0 or stop > end else stop
            _blank(chars, j, stop)
            j = stop
            continue
        if char == "\n":
            chars[j] = " "
        j += 1


def _skip_heredoc(text: str, i: int, chars: list[str]) -> int:
    """Index after the body of the heredoc whose ``<<`` is at ``i``. The body is blanked (its lines
    kept): it is data, never a command, and bashlex misreads some bodies inside functions."""
    match = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z0-9_.-]+)\2").match(text, i)
    if match is None:
        return i + 2
    strip_tabs, delimiter = match.group(1) == "-", match.group(3)
    if match.group(2):
        # <<"EOF" / <<'EOF': bashlex waits for the quotes as part of the delimiter; the quotes only
        # turn expansion off in a body that is blanked anyway.
        chars[match.start(2)] = chars[match.end(3)] = " "
    line_end = text.find("\n", match.end())
    if line_end < 0:
        return len(text)
    # The rest of the heredoc's command line is scanned as usual; the body starts on the next line.
    rest_end = _rewrite_line(text, chars, match.end(), line_end)
    position = rest_end + 1
    while position < len(text):
        next_end = text.find("\n", position)
        stop = next_end if next_end >= 0 else len(text)
        line = text[position:stop]
        if (line.lstrip("\t") if strip_tabs else line) == delimiter:
            return stop
        _blank(chars, position, stop)
        if next_end < 0:
            return len(text)
        position = next_end + 1
    return len(text)


def _rewrite_line(text: str, chars: list[str], start: int, end: int) -> int:
    """The end of the heredoc's command line (after ``<<EOF``), past any quoted string that spans lines."""
    j = start
    while j < end:
        if text[j] in "'\"":
            after = _skip_quoted(text, j)
            if after > end:
                end = text.find("\n", after)
                end = len(text) if end < 0 else end
            j = after
            continue
        j += 1
    return end


# --- expanding words as bash does --------------------------------------------------------------------


@dataclass
class _Value:
    """A variable: one string, or an array's elements; each with the line where it was assigned."""

    items: list[str]
    lines: list[int]
    array: bool = False

    @property
    def scalar(self) -> str:
        return " ".join(self.items) if self.array else (self.items[0] if self.items else "")


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


class _Expander:
    """Word expansion of one raw word (quotes included) against a scope."""

    def __init__(self, scope: dict[str, _Value], positional: list[str] | None) -> None:
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
            if char == _FILLER:
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
                end = _skip_quoted(raw, i) - 1
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
                self._add(fields, raw[i : end + 1])
                i = end + 1
            else:
                self._add(fields, char)
                i += 1

    def _dollar(self, raw: str, i: int, fields: list[_Field], *, quoted: bool) -> int:
        nxt = raw[i + 1]
        if nxt == "(":
            end = _closing(raw, i + 2, "(", ")")
            end = len(raw) - 1 if end < 0 else end
            heredoc = _HEREDOC_OUTPUT.fullmatch(raw[i + 2 : end])
            if heredoc is not None:
                # $(cat <<EOF ... EOF): the text is known (a JSON config written inline, say).
                body = heredoc.group("body")
                if heredoc.group("strip"):
                    body = "\n".join(line.lstrip("\t") for line in body.split("\n"))
                value = body if heredoc.group("quote") else self.quoted_string(body)
                self._emit(_Value([value.rstrip("\n")], [0]), fields, quoted=quoted, each=False)
                return end + 1
            self._add(fields, raw[i : end + 1])  # command substitution: left as written
            return end + 1
        if nxt == "{":
            end = _closing(raw, i + 2, "{", "}")
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

    def _lookup(self, name: str, index: str | None = None) -> _Value | None:
        if name in ("@", "*"):
            if self.positional is None:
                return None
            return _Value(list(self.positional), [0] * len(self.positional), array=True)
        if name == "#" and self.positional is not None:
            return _Value([str(len(self.positional))], [0])
        if name.isdigit():
            if self.positional is None:
                return None
            position = int(name)
            if position == 0:
                return None
            return _Value([self.positional[position - 1] if position <= len(self.positional) else ""], [0])
        value = self.scope.get(name)
        if value is None or index is None:
            return value
        if index in ("@", "*"):
            return _Value(list(value.items), list(value.lines), array=True)
        if index.isdigit():
            position = int(index)
            if position < len(value.items):
                return _Value([value.items[position]], [value.lines[position]])
            return _Value([""], [0])
        return None

    def _emit(self, value: _Value, fields: list[_Field], *, quoted: bool, each: bool) -> None:
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
            chosen = _Value([self.string(rest)], [0]) if unset else value
        elif kind == "=":
            if unset:
                chosen = _Value([self.string(rest)], [0])
                if _NAME.fullmatch(name):
                    self.scope[name] = chosen
            else:
                chosen = value
        elif kind == "+":
            chosen = _Value([""], [0]) if unset else _Value([self.string(rest)], [0])
        else:  # ${X:?message}: the script stops when unset; the value is what it is otherwise
            chosen = value if value is not None else None
        if chosen is None:
            self._add(fields, whole)
        else:
            self._emit(chosen, fields, quoted=quoted, each=index == "@")


# --- walking the tree ----------------------------------------------------------------------------------


class _Walker:
    def __init__(self, rewrite: _Rewrite, source: str, line_at: Any, scope: dict[str, _Value]) -> None:
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

    def _heredoc_text(self, redirect: Any, expander: _Expander) -> tuple[str, int]:
        """The text of a heredoc redirect (expanded unless its delimiter is quoted) and its first line."""
        start, end = redirect.heredoc.pos
        body = self.source[start:end].rsplit("\n", 1)[0] if "\n" in self.source[start:end] else ""
        header = self.source[redirect.pos[0] : start]
        if "'" not in header and '"' not in header:
            body = expander.quoted_string(body)
        return body, self.line_at(start)

    def _written_file(self, node: Any, expander: _Expander) -> None:
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

    def _read_heredoc(self, node: Any, words: list[str], expander: _Expander) -> None:
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
        if not names or not _NAME.fullmatch(names[0]):
            return
        body, line = self._heredoc_text(redirect, expander)
        self.scope[names[0]] = _Value([body.rstrip("\n")], [line])

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
            expander = _Expander(self.scope, positional)
            for part in parts[in_at + 1 :]:
                if getattr(part, "kind", None) != "word":
                    break
                items.extend((f.text, self.line_at(part.pos[0])) for f in expander.fields(self._raw(part)))
        body = [p for p in parts if getattr(p, "kind", None) not in ("word", "reservedword")]
        self.conditional += 1
        try:
            for item, line in items[:_MAX_LOOP] or [("", 0)]:
                if name is not None and line:
                    self.scope[name] = _Value([item], [line])
                for child in body:
                    self.walk(child, positional)
        finally:
            self.conditional -= 1

    def _raw(self, node: Any) -> str:
        start, end = node.pos
        return self.rewrite.original(self.source, start, end)

    def _assign(self, raw: str, line: int, expander: _Expander, array_at: int | None, elements: list[Any]) -> None:
        match = _ASSIGNMENT.match(raw)
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
            self.scope[name] = _Value(items, lines, array=True)
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
        self.scope[name] = _Value([value], [line])

    def _command(self, node: Any, positional: list[str] | None) -> None:
        parts = [p for p in node.parts if p.kind in ("word", "assignment")]
        self.words += len(parts)
        if self.words > MAX_WORDS:
            raise SpecprobeError(f"more than {MAX_WORDS} words: not a launch script")
        expander = _Expander(self.scope, positional)
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
        if head == "read":
            self._read_heredoc(node, words, expander)
            return
        if head == "cat" and len(words) == 1:
            self._written_file(node, expander)
            return
        if head in _DECLARATIONS and not prefix:
            for part in parts[1:]:
                raw = self._raw(part)
                if _ASSIGNMENT.match(raw):
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
                inner = _parse(" ".join(words[1:]), lambda _offset, line=lines[0]: line, self.scope, positional)
                self.commands.extend(inner.commands)
            except (SpecprobeError, _ParseFailedError):
                pass  # an eval string that is not shell runs nothing we can follow
            finally:
                self.calls.pop()
            return
        variables = {key: value.scalar for key, value in self.scope.items()}
        self.commands.append(SimpleCommand(words, lines, variables))


@dataclass
class _Node:
    """A word or a simple command, shaped as bashlex's nodes are (``kind``, ``pos``, ``parts``)."""

    kind: str
    pos: tuple[int, int]
    parts: list[_Node] = field(default_factory=list)
    word: str = ""


_RESERVED = frozenset(
    [
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "for",
        "while",
        "until",
        "do",
        "done",
        "case",
        "esac",
        "function",
        "select",
        "{",
        "}",
        "[[",
        "]]",
        "!",
        "time",
        "coproc",
        "in",
    ]
)
_OPERATORS = frozenset(";&|<>(){}`")
_PREFIX = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")


def _simple_commands(text: str) -> list[_Node] | None:
    """The commands of ``text`` when it holds only simple commands, one a line (quotes, ``$VAR``,
    ``${...}``, ``$(...)``, continuation lines and comments allowed), else None for bashlex.

    Most launch scripts and ``sh -c`` strings are this; splitting them here gives the words bashlex
    would give, at a fraction of its cost (a fleet's manifest holds hundreds of them)."""
    commands: list[_Node] = []
    words: list[_Node] = []
    start: int | None = None
    i, n = 0, len(text)

    def end_word(at: int) -> None:
        nonlocal start
        if start is not None:
            words.append(_Node("word", (start, at), word=text[start:at]))
            start = None

    def end_command() -> bool:
        if not words:
            return True
        if words[0].word in _RESERVED or words[0].word.endswith("()"):
            return False
        leading = True
        for word in words:
            leading = leading and bool(_PREFIX.match(word.word.replace("\\\n", "")))
            if leading:
                word.kind = "assignment"
        commands.append(_Node("command", (words[0].pos[0], words[-1].pos[1]), list(words)))
        words.clear()
        return True

    while i < n:
        char = text[i]
        if char in " \t\r":
            end_word(i)
            i += 1
        elif char == "\n":
            end_word(i)
            if not end_command():
                return None
            i += 1
        elif char == "\\":
            # A continuation joins the next line (and a word on both sides of it); expansion drops it.
            if start is None and text[i + 1 : i + 2] != "\n":
                start = i
            i += 2
        elif char == "#" and start is None:
            newline = text.find("\n", i)
            i = n if newline < 0 else newline
        elif char in _OPERATORS:
            return None
        else:
            if start is None:
                start = i
            if char in "'\"":
                end = _skip_quoted(text, i)
                if end > n or text[end - 1] != char or end == i + 1:
                    return None  # unclosed: bashlex reports it
                i = end
            elif text.startswith(("$(", "${"), i):
                close = _closing(text, i + 2, text[i + 1], ")" if text[i + 1] == "(" else "}")
                if close < 0:
                    return None
                i = close + 1
            else:
                i += 1
    end_word(n)
    return commands if end_command() else None


class _ParseFailedError(Exception):
    """bashlex could not read the text (its own ParsingError, or a construct it does not implement);
    ``rewritten`` is the text as rewritten for it (heredoc bodies blanked), for the simpler reader."""

    def __init__(self, message: str, offset: int | None, rewritten: str) -> None:
        super().__init__(message)
        self.offset = offset
        self.rewritten = rewritten


def _parse(text: str, line_at: Any, scope: dict[str, _Value], positional: list[str] | None) -> ShellScript:
    rewrite = _rewrite(text)
    if not rewrite.text.strip():
        return ShellScript()
    tail = rewrite.text.rstrip()
    if tail.endswith("\\") and not tail.endswith("\\\\"):
        # A continuation with nothing after it (a YAML block's last line ending in `\`): bash reads
        # the end of the text; bashlex stops with "unexpected EOF".
        rewrite.text = tail[:-1] + " " + rewrite.text[len(tail) :]
    simple = _simple_commands(rewrite.text)
    if simple is not None:
        walker = _Walker(rewrite, text, line_at, scope)
        for command in simple:
            walker.walk(command, positional)
        return ShellScript(walker.commands)
    # Imported here: bashlex builds its parser tables at import (~0.3 s), paid only by shell text
    # beyond simple commands.
    import bashlex

    try:
        trees = bashlex.parse(rewrite.text)
    except bashlex.errors.ParsingError as exc:
        raise _ParseFailedError(exc.message, exc.position, rewrite.text) from None
    except (NotImplementedError, AttributeError, IndexError, TypeError, ValueError, KeyError, AssertionError) as exc:
        # bashlex raises these for grammar it does not implement (e.g. `select`, coprocesses).
        raise _ParseFailedError(str(exc) or type(exc).__name__, None, rewrite.text) from None
    except RecursionError:
        raise _ParseFailedError("nested too deeply", None, rewrite.text) from None
    walker = _Walker(rewrite, text, line_at, scope)
    for tree in trees:
        walker.walk(tree, positional)
    return ShellScript(walker.commands, files=walker.files)


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

    scope = {name: _Value([value], [0]) for name, value in (variables or {}).items()}
    try:
        return _parse(text, line_at, scope, None)
    except _ParseFailedError as failure:
        line = line_at(failure.offset) if failure.offset is not None else first_line
        # The rewritten text keeps every offset; fillers become blanks for shlex.
        commands = _fallback_commands(failure.rewritten.replace(_FILLER, " "), line_at, variables)
        note = f"bash grammar not read here ({failure}); the script was split into words by a simpler reader"
        return ShellScript(commands, [(note, line)])
    except RecursionError:
        raise ShellSyntaxError("shell text nested too deeply", first_line) from None


def split_commands(
    text: str, *, first_line: int = 1, lines_follow_text: bool = True, variables: dict[str, str] | None = None
) -> list[SimpleCommand]:
    """The simple commands of ``text`` (see ``parse_script``, whose notes this drops)."""
    return parse_script(text, first_line=first_line, lines_follow_text=lines_follow_text, variables=variables).commands


# --- the fallback: shlex tokens, simple expansion ------------------------------------------------------


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


def _fallback_commands(text: str, line_at: Any, variables: dict[str, str] | None) -> list[SimpleCommand]:
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
        if body and all(_ASSIGNMENT.match(w) for w in body):
            for word in body:
                name, value = word.split("=", 1)
                scope[name.rstrip("+")] = expand(value, scope)
        elif body[:1] in (["export"], ["readonly"], ["local"]):
            for word in body[1:]:
                match = _ASSIGNMENT.match(word)
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
