"""Text laid out for a person's terminal: lines broken between words at a width, never inside a word
(a URL or a path longer than the width stays whole on a line of its own), continuation lines indented
so that an entry still reads as one block. Used by the text report, `schema`, `rule ID` and `demo`."""

from __future__ import annotations

import re
import textwrap

# A word and the spaces after it.
_WORD = re.compile(r"\S+\s*")
# Below this a width is not useful for prose: lines are left as they are.
MIN_WIDTH = 24


def wrap_spans(text: str, width: int | None) -> list[tuple[int, int, str]]:
    """(start, end, prefix) slices of ``text`` that fit ``width``: breaks only between words, and
    continuation lines are indented four past the line's own indent so a finding stays readable as
    one block. A word longer than the width stays whole on a line of its own. None, or a width too
    small to be useful: the line as it is."""
    lead = len(text) - len(text.lstrip(" "))
    if width is None or len(text) <= width or width < lead + MIN_WIDTH:
        return [(0, len(text), "")]
    prefix = " " * (lead + 4)
    lines: list[tuple[int, int]] = []
    start = end = -1
    for word in _WORD.finditer(text, lead):
        word_end = word.start() + len(word.group().rstrip())
        if start < 0:
            start, end = 0, word_end  # the first line keeps its indent
            continue
        used = end - start + (len(prefix) if lines else 0)
        if used + (word_end - end) > width:
            lines.append((start, end))
            start = word.start()
        end = word_end
    lines.append((start, end))
    return [(s, e, prefix if index else "") for index, (s, e) in enumerate(lines)]


def wrap(text: str, width: int | None, *, indent: str = "", hang: str | None = None) -> list[str]:
    """``text`` (one paragraph; its own line breaks are joined) as lines of at most ``width``: the
    first indented by ``indent``, the rest by ``hang`` (default ``indent``). None: one line."""
    hang = indent if hang is None else hang
    flat = " ".join(text.split())
    if width is None or width < len(hang) + MIN_WIDTH:
        return [indent + flat]
    return textwrap.wrap(
        flat,
        width=width,
        initial_indent=indent,
        subsequent_indent=hang,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [indent.rstrip()]


def wrap_block(text: str, width: int | None, *, indent: str = "") -> list[str]:
    """Prose of several paragraphs (blank-line separated, as rule docs are written) re-wrapped at
    ``width``: paragraphs stay apart, and a line that starts a list item (``-``, ``*``, ``1.``) or a
    code block (four spaces) keeps its own line."""
    out: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text.strip("\n")):
        if out:
            out.append("")
        items = re.split(r"\n(?=\s*(?:[-*]|\d+\.)\s)", paragraph)
        for item in items:
            if item.startswith("    "):
                out += [indent + line for line in item.splitlines()]
                continue
            marker = re.match(r"\s*(?:[-*]|\d+\.)\s+", item)
            hang = indent + " " * len(marker.group()) if marker else indent
            out += wrap(item.strip(), width, indent=indent, hang=hang)
    return out
