"""Shell text rewritten in place, every offset kept, into what bashlex's grammar reads: arrays marked,
``[[ ]]``/``(( ))`` as ``true``, ``$(( ))`` as ``0``, ``case`` as a group running every branch, command
substitutions and heredoc bodies hidden."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from specprobe.deploy.shell.model import NAME


def skip_quoted(text: str, i: int) -> int:
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
            close = closing(text, j + 2, "(", ")")
            j = len(text) if close < 0 else close + 1
            continue
        j += 1
    return len(text)


def closing(text: str, i: int, opener: str, closer: str, depth: int = 1) -> int:
    """Index of the ``closer`` that balances ``depth`` open ``opener``s, from ``i``; -1 when unbalanced."""
    j = i
    while j < len(text):
        char = text[j]
        if char in "'\"\\":
            j = skip_quoted(text, j)
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
FILLER = "\x02"


def _blank(
    chars: list[str], start: int, end: int, replacement: str = "", filler: str = " ", *, one_line: bool = False
) -> None:
    """Overwrite ``chars[start:end]`` with ``replacement`` then ``filler``. Newlines stay where they are
    unless ``one_line`` (a construct bash reads as one word, such as a ``[[ ... \\`` test continued over
    lines): lines are counted on the original text, so offsets are all that must be kept."""
    for k in range(start, end):
        offset = k - start
        if offset < len(replacement):
            chars[k] = replacement[offset]
        elif chars[k] != "\n" or one_line:
            chars[k] = filler


def _at_word_start(text: str, i: int) -> bool:
    return i == 0 or text[i - 1] in " \t\n;&|(){}"


def _keyword_at(text: str, i: int, word: str) -> bool:
    end = i + len(word)
    return text.startswith(word, i) and _at_word_start(text, i) and (end >= len(text) or text[end] in " \t\n;&|()")


@dataclass
class Rewrite:
    text: str
    arrays: dict[int, tuple[str, bool]] = field(default_factory=dict)  # offset of NAME -> (name, append)
    case_groups: set[int] = field(default_factory=set)  # offsets of the `{` that stands for a `case`
    # Spans of command substitutions `$(...)`, hidden from bashlex (it stumbles on nested quotes in
    # them) and given back as written when a word is expanded: their output is never known here.
    substitutions: list[tuple[int, int]] = field(default_factory=list)
    # `[[ ... ]]` tests rewritten as `true`: offset -> end, so that a test whose operands are known
    # can still be evaluated (which branch of an `if` runs).
    tests: dict[int, int] = field(default_factory=dict)

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


def rewrite_for_bashlex(text: str) -> Rewrite:
    """``text`` with the constructs bashlex lacks rewritten in place (same length, same newlines)."""
    chars = list(text)
    arrays: dict[int, tuple[str, bool]] = {}
    case_groups: set[int] = set()
    substitutions: list[tuple[int, int]] = []
    tests: dict[int, int] = {}
    case_depth: list[str] = []  # per open case: "pattern" (a pattern comes next) or "body"
    i = 0
    n = len(text)
    while i < n:
        char = text[i]
        pattern_next = case_depth and case_depth[-1] == "pattern"
        if pattern_next and char not in " \t\n#" and _at_word_start(text, i):
            # A case pattern (`"")`, `"$n":roce|x)`, `(a|b)`): blanked up to its `)`, quotes included.
            if _keyword_at(text, i, "esac"):
                _blank(chars, i, i + 4, "}")
                case_depth.pop()
                i += 4
                continue
            end = closing(text, i + (1 if char == "(" else 0), "(", ")")
            if end < 0:
                break
            _blank(chars, i, end + 1)
            case_depth[-1] = "body"
            i = end + 1
            continue
        if char in "'\"\\":
            end = skip_quoted(text, i)
            if char == '"':
                _rewrite_arithmetic(text, chars, i + 1, end)
                _hide_substitutions(text, chars, i + 1, end, substitutions)
            i = end
            continue
        if char == "#" and _at_word_start(text, i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if char in "<>" and text.startswith("(", i + 1):
            # Process substitution `<(cmd)` / `>(cmd)` (bashlex lacks it): a word standing for a file.
            end = closing(text, i + 2, "(", ")")
            if end > 0:
                _blank(chars, i, end + 1, "_", FILLER, one_line=True)
                i = end + 1
                continue
        if char == "<" and text.startswith("<<", i) and not text.startswith("<<<", i):
            i = _skip_heredoc(text, i, chars)
            continue
        if char == "$" and text.startswith("$((", i):
            end = closing(text, i + 3, "(", ")", depth=2)
            if end > 0:
                _blank(chars, i, end + 1, "0", FILLER, one_line=True)
                i = end + 1
                continue
        if char == "$" and text.startswith("$(", i) and not text.startswith("$((", i):
            end = closing(text, i + 2, "(", ")")
            if end > 0:
                _blank(chars, i + 2, end, "", FILLER, one_line=True)
                substitutions.append((i, end + 1))
                i = end + 1
                continue
        if _at_word_start(text, i):
            if text.startswith("[[", i) and i + 2 < n and text[i + 2] in " \t":
                end = text.find("]]", i + 2)
                while end > 0 and not (end + 2 >= n or text[end + 2] in " \t\n;&|)"):
                    end = text.find("]]", end + 2)
                if end > 0:
                    _blank(chars, i, end + 2, "true", one_line=True)
                    tests[i] = end + 2
                    i = end + 2
                    continue
            if text.startswith("((", i):
                end = closing(text, i + 2, "(", ")", depth=2)
                if end > 0:
                    _blank(chars, i, end + 1, "true", one_line=True)
                    i = end + 1
                    continue
            match = NAME.match(text, i)
            if match and text.startswith(("=(", "+=("), match.end()):
                opener = text.index("(", match.end())
                end = closing(text, opener + 1, "(", ")")
                if end > 0:
                    arrays[i] = (match.group(0), text[match.end()] == "+")
                    _blank(chars, match.end(), opener + 1)
                    _blank_array_body(text, chars, opener + 1, end)
                    chars[end] = " "
                    # The elements are scanned like any words ($((...)), $(...) and quotes in them).
                    i = opener + 1
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
    return Rewrite("".join(chars), arrays, case_groups, substitutions, tests)


def _hide_substitutions(
    text: str, chars: list[str], start: int, end: int, substitutions: list[tuple[int, int]]
) -> None:
    """``$( ... )`` inside a double-quoted string: its inside becomes filler (see ``Rewrite``)."""
    at = text.find("$(", start, end)
    while at >= 0:
        if text.startswith("$((", at):
            at = text.find("$(", at + 3, end)
            continue
        close = closing(text, at + 2, "(", ")")
        if close < 0 or close >= end:
            return
        _blank(chars, at + 2, close, "", FILLER, one_line=True)
        substitutions.append((at, close + 1))
        at = text.find("$(", close + 1, end)


def _rewrite_arithmetic(text: str, chars: list[str], start: int, end: int) -> None:
    """``$(( ... ))`` inside a double-quoted string becomes ``0`` (bashlex does not implement it)."""
    at = text.find("$((", start, end)
    while at >= 0:
        close = closing(text, at + 3, "(", ")", depth=2)
        if close < 0 or close >= end:
            return
        _blank(chars, at, close + 1, "0", FILLER, one_line=True)
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
            after = skip_quoted(text, j)
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
            after = skip_quoted(text, j)
            if after > end:
                end = text.find("\n", after)
                end = len(text) if end < 0 else end
            j = after
            continue
        j += 1
    return end
