"""Making untrusted strings (config.json values, file and tensor names, command lines) safe to show.

Every string that comes from a user's files reaches a terminal, a CI log or a rendered page only
through one of these functions, so a file name with a newline cannot print a fake ``PASS`` line, an
``ESC [2J`` in a config value cannot clear the screen, and a bidi override cannot reorder what is shown.

``terminal`` is the base: every character that ``str.isprintable`` rejects (C0/C1 controls, DEL,
format characters such as the bidi overrides U+202A-U+202E and U+2066-U+2069 and zero-width ones,
line and paragraph separators, surrogates from undecodable file names, unassigned code points,
non-ASCII spaces) becomes a visible Python-style escape (``\\n``, ``\\x1b``, ``\\u202e``). The output
formats' own syntax is escaped on top of that by ``markdown``, ``markdown_code``, ``annotation_data``,
``annotation_property`` and ``rich_markup``.
"""

from __future__ import annotations

import re

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}

# CommonMark lets any ASCII punctuation be backslash-escaped; these are the ones that start emphasis,
# code, links, images, HTML, tables, headings, strikethrough, entities and GitHub @-mentions.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|#~&@!{}])")


def _escape_char(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def terminal(text: object) -> str:
    """``text`` (any object, shown with ``str``) with every non-printable character escaped.

    Printable text, which is nearly all text, is returned unchanged without a per-character pass.
    """
    value = text if isinstance(text, str) else str(text)
    if value.isprintable():
        return value
    return "".join(char if char.isprintable() else _escape_char(char) for char in value)


def markdown(text: object) -> str:
    """Inline Markdown (GitHub-flavoured, tables included): escaped for the terminal, then every
    character that could start markup, HTML, a table cell or a mention is backslash-escaped."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", terminal(text))


def markdown_code(text: object) -> str:
    """An inline code span holding ``text`` verbatim: backslashes do not escape inside code spans, so
    the fence is one backtick longer than the longest run of backticks in the text."""
    value = terminal(text)
    longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") or not value.strip() else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def annotation_data(text: object) -> str:
    """The message part of a GitHub Actions workflow command (``::error ...::MESSAGE``).

    The runner decodes ``%25``, ``%0D`` and ``%0A``; a literal ``%0A`` in the input must not become a
    newline, so ``%`` is encoded first (the rules of @actions/core's ``escapeData``).
    """
    return terminal(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def annotation_property(text: object) -> str:
    """A property value of a workflow command (``file=``, ``title=``): also ``:`` and ``,`` are
    encoded, as @actions/core's ``escapeProperty`` does."""
    return annotation_data(text).replace(":", "%3A").replace(",", "%2C")


def rich_markup(text: object) -> str:
    """``text`` for a string that rich parses as console markup: ``[bold]`` in a config value must
    show as written, not turn the rest of the line bold. rich is imported only when this is called."""
    from rich.markup import escape  # noqa: PLC0415

    return escape(terminal(text))
