"""Reading files and JSON from a user's folders within bounds: size, nesting, integer width.

Every parser of untrusted JSON (config.json, safetensors headers, shard indexes, ``--speculative-config``,
smoke result files) goes through ``parse_json``, and every file is opened through ``open_regular``:

- only a regular file is read: a FIFO, a device or a directory (even behind a symlink, even one swapped
  in after the folder was listed) is refused before a byte is read, so nothing can block or stream forever;
- a file above its ``max_bytes`` is refused from its size, before it is read: parsing JSON costs about 15x
  its size in memory (a 50 MB config.json peaked at 724 MB RSS);
- nesting deeper than ``MAX_JSON_DEPTH`` is refused: Python's json raises RecursionError near 1000 levels,
  and everything that walks the parsed value (validation, dumping, hashing) recurses too;
- integers are parsed as Python's json parses them (over 4300 digits is refused, as Python refuses it,
  and so the engines, which load these files with Python's json), and an integer outside 64 bits is
  refused: safetensors sizes are u64, and no engine sizes a tensor or a token id beyond that;
- ``NaN``/``Infinity`` literals are accepted, as Python's json (and so every engine) accepts them; the
  caller learns that they were used, to say so.
"""

from __future__ import annotations

import json
import math
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

# Nesting of real files: config.json's quantization_config reaches 5 levels, a safetensors header 3.
MAX_JSON_DEPTH = 64
_INT64_LIMIT = 2**64


class UntrustedInputError(ValueError):
    """A file or JSON text that specprobe refuses to read further; the message is one line."""


@dataclass(frozen=True)
class ParsedJson:
    """A parsed JSON value and the non-standard literals it used (``NaN``, ``Infinity``, ``-Infinity``)."""

    value: Any
    nonfinite_literals: tuple[str, ...] = ()


def open_regular(path: Path) -> IO[bytes]:
    """Open ``path`` for reading only if it is a regular file; OSError otherwise.

    O_NONBLOCK makes opening a FIFO return at once instead of waiting for a writer; the type is then
    checked on the opened descriptor, so a file replaced after it was listed cannot slip through.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "not a regular file"
            raise OSError(f"{path.name} is {kind}")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def expand_user(spec: str | Path) -> Path:
    """``Path(spec).expanduser()``, leaving ``~name`` of a user this machine does not know as written
    (pathlib raises RuntimeError for it)."""
    try:
        return Path(spec).expanduser()
    except RuntimeError:
        return Path(spec)


def is_dir(path: Path) -> bool:
    """``path.is_dir()`` that answers False for any path the OS refuses to look up (a name longer than
    NAME_MAX or PATH_MAX, a NUL byte, a symlink loop) instead of raising."""
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def is_file(path: Path) -> bool:
    """``path.is_file()`` that answers False instead of raising (see ``is_dir``)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def exists(path: Path) -> bool:
    """``path.exists()`` that answers False instead of raising (see ``is_dir``)."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def read_bounded(path: Path, *, max_bytes: int, what: str) -> bytes:
    """The whole of a regular file no larger than ``max_bytes``; UntrustedInputError above it."""
    with open_regular(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > max_bytes:
            raise UntrustedInputError(f"{what} is {size} bytes, above the {max_bytes}-byte limit specprobe reads")
        # read(n) allocates n bytes up front: ask for what the file holds (plus one byte, to notice a file
        # that grew since its size was read), not for the limit.
        data = handle.read(size + 1)
    if len(data) > max_bytes:
        raise UntrustedInputError(f"{what} is larger than the {max_bytes}-byte limit specprobe reads")
    return data


def _parse_int(text: str) -> int:
    # Python's json calls int() on the literal: over 4300 digits that raises ValueError first.
    value = int(text)
    if not -_INT64_LIMIT < value < _INT64_LIMIT:
        digits = len(text.lstrip("-"))
        raise UntrustedInputError(f"holds a {digits}-digit integer, outside the 64-bit range any engine reads")
    return value


def json_depth(value: Any, *, max_nodes: int | None = None) -> int:
    """How deeply arrays and objects nest in ``value`` (a scalar is 0), without recursion.

    With ``max_nodes``, UntrustedInputError once more containers than that have been visited: YAML
    aliases can make a small document expand to billions of values that every later walk would visit.
    """
    deepest = 0
    visited = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        visited += 1 + len(children)
        if max_nodes is not None and visited > max_nodes:
            raise UntrustedInputError(f"expands to more than {max_nodes} values")
        depth += 1
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in children if isinstance(child, dict | list))
    return deepest


def parse_json(text: str | bytes, *, what: str, max_depth: int = MAX_JSON_DEPTH) -> ParsedJson:
    """Parse ``text`` as Python's json does, within the bounds above; UntrustedInputError says why not.

    ``what`` names the input in the message ("config.json", "the safetensors header").
    """
    nonfinite: list[str] = []

    def constant(name: str) -> float:
        nonfinite.append(name)
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[name]

    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        value = json.loads(text, parse_int=_parse_int, parse_constant=constant)
    except UnicodeDecodeError as exc:
        raise UntrustedInputError(f"{what} is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except RecursionError:
        raise UntrustedInputError(f"{what} is nested deeper than {max_depth} levels") from None
    except UntrustedInputError as exc:
        raise UntrustedInputError(f"{what} {exc}") from None
    except json.JSONDecodeError as exc:
        raise UntrustedInputError(f"{what} is not valid JSON: {exc.msg} at line {exc.lineno}") from None
    except ValueError as exc:
        # int() refusing a literal over sys.get_int_max_str_digits() digits (4300 by default).
        raise UntrustedInputError(
            f"{what} holds an integer too long for Python's json (and so for the engines): {_first_clause(exc)}"
        ) from None
    if json_depth(value) > max_depth:
        raise UntrustedInputError(f"{what} is nested deeper than {max_depth} levels")
    return ParsedJson(value, tuple(dict.fromkeys(nonfinite)))


def check_tree(value: Any, *, what: str, max_depth: int = MAX_JSON_DEPTH, max_nodes: int = 1_000_000) -> None:
    """Refuse a parsed document (YAML, whose parser has no such bounds) nested deeper than ``max_depth``
    or expanding to more than ``max_nodes`` values."""
    try:
        depth = json_depth(value, max_nodes=max_nodes)
    except UntrustedInputError as exc:
        raise UntrustedInputError(f"{what} {exc}") from None
    if depth > max_depth:
        raise UntrustedInputError(f"{what} is nested deeper than {max_depth} levels")


def _first_clause(exc: Exception) -> str:
    return str(exc).split(";")[0].split(":")[0]


def load_json_file(path: Path, *, max_bytes: int, what: str | None = None) -> ParsedJson:
    """``read_bounded`` then ``parse_json``; OSError when the file cannot be opened or is not regular."""
    label = what or path.name
    return parse_json(read_bounded(path, max_bytes=max_bytes, what=label), what=label)
