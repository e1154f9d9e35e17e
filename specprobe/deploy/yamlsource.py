"""YAML read with PyYAML's safe loader, keeping the line of every value.

Mappings come back as ``LineDict`` and sequences as ``LineList``: ordinary dict/list with ``line``
(where the node starts) and ``lines`` (the line of each value), plus ``styles`` (the scalar style of
string values: ``|`` and ``>`` for block scalars) so that a shell string inside YAML maps its own
lines back to the file. Lines are 1-based. Merge keys (``<<: *anchor``) work as in YAML 1.1; a value
merged in keeps the line where the anchor defines it. No tag outside the safe set is constructed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from specprobe.findings import SpecprobeError

_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Documents above this size are not deployment files; refusing them bounds time and memory.
MAX_BYTES = 16 * 1024 * 1024


class LineDict(dict[Any, Any]):
    """A YAML mapping that knows the line of itself and of each of its values."""

    line: int = 0

    def __init__(self) -> None:
        super().__init__()
        self.lines: dict[Any, int] = {}
        self.styles: dict[Any, str | None] = {}

    def line_of(self, key: Any) -> int:
        return self.lines.get(key, self.line)


class LineList(list[Any]):
    """A YAML sequence that knows the line of itself and of each item."""

    line: int = 0

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[int] = []
        self.styles: list[str | None] = []

    def line_of(self, index: int) -> int:
        return self.lines[index] if 0 <= index < len(self.lines) else self.line


class _LineLoader(_BaseLoader):  # type: ignore[valid-type,misc]
    """The safe loader, building LineDict/LineList with marks."""


def _style(node: yaml.Node) -> str | None:
    return node.style if isinstance(node, yaml.ScalarNode) else None


def _construct_map(loader: _LineLoader, node: yaml.MappingNode) -> Iterator[LineDict]:
    data = LineDict()
    data.line = node.start_mark.line + 1
    yield data
    loader.flatten_mapping(node)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, "found an unhashable key", key_node.start_mark
            ) from None
        data[key] = loader.construct_object(value_node, deep=True)
        data.lines[key] = value_node.start_mark.line + 1
        data.styles[key] = _style(value_node)


def _construct_seq(loader: _LineLoader, node: yaml.SequenceNode) -> Iterator[LineList]:
    data = LineList()
    data.line = node.start_mark.line + 1
    yield data
    for item in node.value:
        data.append(loader.construct_object(item, deep=True))
        data.lines.append(item.start_mark.line + 1)
        data.styles.append(_style(item))


_LineLoader.add_constructor("tag:yaml.org,2002:map", _construct_map)
_LineLoader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)


def _construct_tagged(loader: _LineLoader, _suffix: str, node: yaml.Node) -> Any:
    """A value under an application tag (lm-eval's ``!function``, CloudFormation's ``!Ref``): read as
    the plain value it tags. Nothing is constructed from the tag itself, so no code runs."""
    if isinstance(node, yaml.MappingNode):
        return _construct_map(loader, node)
    if isinstance(node, yaml.SequenceNode):
        return _construct_seq(loader, node)
    return loader.construct_scalar(node)


_LineLoader.add_multi_constructor("!", _construct_tagged)


def load_documents(text: str, name: str) -> list[Any]:
    """Every document of ``text``; a YAML syntax error is one SpecprobeError line naming file and line."""
    if len(text) > MAX_BYTES:
        raise SpecprobeError(f"{name}: larger than {MAX_BYTES // (1024 * 1024)} MiB, not a deployment file")
    try:
        return list(yaml.load_all(text, Loader=_LineLoader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{name}:{mark.line + 1}" if mark is not None else name
        problem = exc.problem or exc.context or "invalid YAML"
        raise SpecprobeError(f"{where}: not valid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise SpecprobeError(f"{name}: not valid YAML: {str(exc).splitlines()[0] if str(exc) else 'error'}") from None
    except RecursionError:
        raise SpecprobeError(f"{name}: YAML nested too deeply") from None


def block_first_line(container: LineDict | LineList, key: Any) -> tuple[int, bool]:
    """(line of the value's first content line, whether its lines map one to one onto the file).

    A literal block scalar (``|``) starts on the line after its indicator and keeps its newlines; a
    plain, quoted or folded scalar is reported at its own line as a whole.
    """
    if isinstance(container, LineDict):
        line, style = container.line_of(key), container.styles.get(key)
    else:
        line, style = container.line_of(key), container.styles[key] if 0 <= key < len(container.styles) else None
    if style == "|":
        return line + 1, True
    if style == ">":
        return line + 1, False
    return line, False


def relocate(node: Any, first_line: int, follows: bool, seen: set[int] | None = None) -> None:
    """Make the lines of a document parsed from an embedded string (a ConfigMap value) file lines:
    shifted to start at ``first_line`` when its lines follow the file, else all at ``first_line``."""
    seen = set() if seen is None else seen
    if id(node) in seen or not isinstance(node, LineDict | LineList):
        return
    seen.add(id(node))

    def moved(line: int) -> int:
        return first_line + line - 1 if follows else first_line

    node.line = moved(node.line)
    if isinstance(node, LineDict):
        node.lines = {key: moved(line) for key, line in node.lines.items()}
        children = list(node.values())
    else:
        node.lines = [moved(line) for line in node.lines]
        children = list(node)
    for child in children:
        relocate(child, first_line, follows, seen)
