"""Shared pieces of the probe scripts (stdlib only): typing -> JSON Schema, JSON-safe values, output.

Probes run inside the engine's own interpreter, so this file must not import specprobe or any
third-party package; the engine scripts load it by path.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import enum
import importlib
import importlib.metadata
import importlib.util
import inspect
import itertools
import json
import math
import os
import sys
import textwrap
import time
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BOUND_NAMES = ("gt", "ge", "lt", "le")


def first_attribute(candidates: typing.Sequence[tuple[str, str]]) -> Any:
    """The first ``module.attribute`` of ``candidates`` that imports (releases move their APIs between
    modules); ImportError naming every place tried when none does."""
    tried = []
    for module_name, attribute in candidates:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            tried.append(f"{module_name} ({exc})")
            continue
        if hasattr(module, attribute):
            return getattr(module, attribute)
        tried.append(f"{module_name}.{attribute} (absent)")
    raise ImportError(f"{candidates[0][1]} not found: {'; '.join(tried)}")


class UnsupportedError(Exception):
    """An API a probe needs is not where any known release keeps it."""


def first_supported(candidates: typing.Sequence[tuple[str, str]]) -> Any:
    """``first_attribute``, with UnsupportedError naming every candidate when none imports: the probe then
    says the release is unsupported rather than crashing."""
    try:
        return first_attribute(candidates)
    except ImportError as exc:
        raise UnsupportedError(str(exc)) from None


def json_value(value: Any, depth: int = 0) -> Any:
    """A JSON-safe rendering of a default value; anything exotic becomes its repr."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, enum.Enum):
        return value.name
    if depth < 4 and isinstance(value, (list, tuple)):
        return [json_value(item, depth + 1) for item in value]
    if depth < 4 and isinstance(value, dict):
        return {str(key): json_value(item, depth + 1) for key, item in value.items()}
    return repr(value)


def type_name(tp: Any) -> str:
    """The annotation as a readable string (``int | None``, ``Literal['a', 'b']``)."""
    if isinstance(tp, type) and not typing.get_args(tp):
        return tp.__qualname__ if tp.__module__ == "builtins" else f"{tp.__module__}.{tp.__qualname__}"
    return repr(tp).replace("typing.", "")


def is_skip_validation(marker: Any) -> bool:
    return type(marker).__name__ == "SkipValidation"


def bounds_of(metadata: Any) -> dict[str, Any]:
    """gt/ge/lt/le from pydantic/annotated_types metadata objects (duck-typed: no pydantic import)."""
    found = {}
    for marker in metadata or ():
        for name in BOUND_NAMES:
            value = getattr(marker, name, None)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                found[name] = value
    return found


def schema_of(tp: Any, notes: dict[str, Any]) -> dict[str, Any]:
    """JSON Schema of a Python annotation. ``notes`` collects flags found on the way (internal, bounds)."""
    if tp is type(None) or tp is None:
        return {"type": "null"}
    if tp is typing.Any or tp is object:
        return {}
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        extras = list(getattr(tp, "__metadata__", ()))
        if any(is_skip_validation(marker) for marker in extras):
            notes["skip_validation"] = True
        notes.setdefault("bounds", {}).update(bounds_of(extras))
        return schema_of(args[0], notes)
    if origin is typing.Literal:
        # Nested Literal aliases are already flattened by typing, in declaration order.
        values = list(dict.fromkeys(args))
        schema = {"enum": [json_value(value) for value in values]}
        kinds = {type(value) for value in values}
        if kinds == {str}:
            schema["type"] = "string"
        elif kinds <= {int} and bool not in kinds:
            schema["type"] = "integer"
        return schema
    if origin is typing.Union or origin is types.UnionType:
        members = [schema_of(arg, notes) for arg in args]
        non_null = [member for member in members if member != {"type": "null"}]
        if any(member == {} for member in non_null):
            return {}
        return {"anyOf": members} if len(members) > 1 else members[0]
    if origin in (list, set, frozenset) or origin in (
        getattr(typing, "List", None),
        getattr(typing, "Sequence", None),
    ) or (origin is not None and getattr(origin, "__name__", "") in ("Sequence", "MutableSequence", "Iterable")):
        schema = {"type": "array"}
        if args:
            schema["items"] = schema_of(args[0], notes)
        if origin in (set, frozenset):
            schema["uniqueItems"] = True
        return schema
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": schema_of(args[0], notes)}
        if not args:
            return {"type": "array"}
        return {
            "type": "array",
            "prefixItems": [schema_of(arg, notes) for arg in args],
            "minItems": len(args),
            "maxItems": len(args),
        }
    if origin is dict or (origin is not None and getattr(origin, "__name__", "") in ("Mapping", "MutableMapping")):
        schema = {"type": "object"}
        if len(args) == 2:
            schema["additionalProperties"] = schema_of(args[1], notes)
        return schema
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is str:
        return {"type": "string"}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        # Engines parse enum members by name (vLLM upper-cases, also accepts "auto"): list the names
        # without forbidding other spellings.
        return {"type": "string", "x-enum-names": [member.name for member in tp], "x-python-type": type_name(tp)}
    if isinstance(tp, type) and (dataclasses.is_dataclass(tp) or hasattr(tp, "model_fields")):
        return {"type": "object", "x-python-type": type_name(tp)}
    if isinstance(tp, typing.TypeVar):
        return {}
    return {"x-python-type": type_name(tp)}


def attribute_docstrings(cls: type) -> dict[str, str]:
    """Attribute docstrings (a string literal right under an annotated field), base classes first."""
    docs = {}
    for klass in reversed(cls.__mro__):
        if klass is object:
            continue
        try:
            source = textwrap.dedent(inspect.getsource(klass))
            tree = ast.parse(source)
        except (OSError, TypeError, SyntaxError):
            continue
        class_node = next((node for node in tree.body if isinstance(node, ast.ClassDef)), None)
        if class_node is None:
            continue
        body = class_node.body
        for node, following in itertools.pairwise(body):
            if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
                continue
            if (
                isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                docs[node.target.id] = inspect.cleandoc(following.value.value)
    return docs


def action_record(action: Any) -> dict[str, Any]:
    """An argparse action as plain data."""
    kind = getattr(action, "type", None)
    if kind is None:
        type_text = None
    elif isinstance(kind, type):
        type_text = kind.__name__
    else:
        type_text = getattr(kind, "__name__", None) or type(kind).__name__
    choices = getattr(action, "choices", None)
    nargs = getattr(action, "nargs", None)
    return {
        "flags": list(action.option_strings),
        "dest": action.dest,
        "type": type_text,
        "choices": [json_value(choice) for choice in choices] if choices is not None else None,
        "default": json_value(action.default),
        "help": " ".join(str(action.help or "").split()),
        "nargs": nargs if isinstance(nargs, (int, str)) or nargs is None else str(nargs),
        "action": type(action).__name__,
    }


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[int]:
    """Engines log to stdout (and native code writes to fd 1): keep fd 1 clean for the JSON reply."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield saved
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def distribution_versions(*names: str) -> dict[str, Any]:
    """Installed versions of the engine and the libraries that shape its schema (None when absent)."""
    versions: dict[str, Any] = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except Exception:
            versions[name] = None
    return versions


def read_cases() -> list[dict[str, Any]]:
    """The exact probes' request (``{"cases": [{...}, ...]}``) from stdin; a request without a list of case
    objects is answered with ``bad_request`` and exit 2."""
    try:
        request = json.loads(sys.stdin.read() or "{}")
    except ValueError as exc:
        reply({"error": "bad_request", "message": str(exc)})
        sys.exit(2)
    cases = request.get("cases") if isinstance(request, dict) else None
    if not isinstance(cases, list) or not all(isinstance(case, dict) for case in cases):
        reply({"error": "bad_request", "message": "no cases"})
        sys.exit(2)
    return cases


def run_in_session(
    engine: str,
    new_session: typing.Callable[[], Any],
    unsupported: tuple[type[BaseException], ...],
    run_case: typing.Callable[[Any, dict[str, Any]], dict[str, Any]],
    cases: list[dict[str, Any]],
) -> tuple[Any, Any, list[dict[str, Any]], float]:
    """Import ``engine``, open one session and run every case in it, the engine's output kept off stdout.

    Returns the module, the session (None when it could not open), one reply per case and the seconds the
    import and session took. A session that cannot open (``unsupported``, or the release's own import chain
    failing) makes every case ``unsupported`` with the reason, never a crash of the probe."""
    started = time.monotonic()
    replies: list[dict[str, Any]] = []
    session_error: str | None = None
    with stdout_to_stderr():
        module = importlib.import_module(engine)
        try:
            session = new_session()
        except unsupported as exc:
            session, session_error = None, str(exc)
        except Exception as exc:  # the release's own import chain fails here
            session, session_error = None, f"{type(exc).__name__}: {exc}"
        imported = round(time.monotonic() - started, 2)
        for case in cases:
            if session is None:
                replies.append({"id": case.get("id"), "ok": False, "stage": "unsupported",
                                "unsupported": session_error})
                continue
            replies.append(run_case(session, case))
    return module, session, replies, imported


def note_shard(
    shards: dict[tuple[str, str], Any],
    overwritten: list[list[Any]],
    parameter: str,
    tensor: Any,
    *,
    args: typing.Sequence[Any],
    kwargs: dict[str, Any],
) -> None:
    """Record that ``tensor`` (a checkpoint name) was loaded into ``parameter`` (the shard of a fused one from the
    weight loader's arguments); the same parameter and shard loaded twice from different tensors goes to
    ``overwritten``: the later tensor silently wins."""
    shard = repr(args[0]) if args else repr(kwargs.get("loaded_shard_id", kwargs.get("shard_id")))
    earlier = shards.get((parameter, shard))
    if earlier is not None and earlier != tensor:
        overwritten.append([parameter, earlier, tensor])
    shards[(parameter, shard)] = tensor


def reply(payload: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(payload, sort_keys=False))
    sys.stdout.write("\n")
    sys.stdout.flush()


def package_file(package: str, *parts: str) -> Any:
    """Path of a file inside an installed package, found without importing it (None when absent)."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    for folder in list(getattr(spec, "submodule_search_locations", None) or []):
        candidate = Path(folder).joinpath(*parts)
        if candidate.is_file():
            return candidate
    return None


def parse_file(path: Any) -> Any:
    """The AST of a source file, or None when it cannot be read (or ``path`` is None: no such file)."""
    if path is None:
        return None
    try:
        return ast.parse(path.read_text(encoding="utf-8-sig"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None


def _assigned_name(target: Any) -> Any:
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return target.attr
    return None


def _identifiers(node: Any) -> list[str]:
    names = []
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name):
            names.append(inner.id)
        elif isinstance(inner, ast.Attribute):
            names.append(inner.attr)
    return names


def eagle3_fc_inputs(tree: Any) -> Any:
    """How a Llama EAGLE-3 drafter sizes ``fc``'s in-features: ``"3"`` (3 * target hidden) or
    ``"aux_layer_ids"`` (the number of auxiliary layers the config names, times target hidden).

    Reads the ``self.fc = Linear(IN, ...)`` construction and the assignments of the names in ``IN``
    (two levels), so ``self.hidden_size_in * self.num_aux_hidden_states`` resolves through
    ``num_aux_hidden_states = len(layer_ids) if layer_ids else 3``; None when no fc is built.
    """
    if tree is None:
        return None
    assignments: dict[str, list[Any]] = {}
    fc_inputs = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            name = _assigned_name(target)
            if name is None:
                continue
            assignments.setdefault(name, []).append(node.value)
            if name == "fc" and isinstance(node.value, ast.Call):
                call = node.value
                size = call.args[0] if call.args else None
                for keyword in call.keywords:
                    if keyword.arg in ("in_features", "input_size"):
                        size = keyword.value
                if size is not None:
                    fc_inputs.append(size)
    if not fc_inputs:
        return None
    frontier = list(fc_inputs)
    visited = list(fc_inputs)
    seen: set[str] = set()
    names: list[str] = []
    for _ in range(3):
        following = []
        for expression in frontier:
            for name in _identifiers(expression):
                names.append(name)
                if name not in seen:
                    seen.add(name)
                    following.extend(assignments.get(name, []))
        frontier = following
        visited.extend(following)
    if any("aux" in name for name in names):
        return "aux_layer_ids"
    # ``fc_input_size = self.config.target_hidden_size * 3`` (0.12) sits one assignment away.
    for expression in visited:
        for inner in ast.walk(expression):
            if (
                isinstance(inner, ast.BinOp)
                and isinstance(inner.op, ast.Mult)
                and any(isinstance(side, ast.Constant) and side.value == 3 for side in (inner.left, inner.right))
            ):
                return "3"
    return None


_LAYER_PREFIXES = {"midlayer": "midlayer.", "layers.0": "layers.0."}


def eagle3_layer_prefixes(tree: Any) -> list[str]:
    """Checkpoint key prefixes of the single decoder layer a Llama EAGLE-3 loader accepts.

    The module's own attribute (``self.midlayer`` or ``self.layers``) plus the names of a rename
    (``"midlayer." -> "layers.0."`` in a ``replace`` call or a mapping literal).
    """
    if tree is None:
        return []
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                on_self = isinstance(target, ast.Attribute) and getattr(target.value, "id", None) == "self"
                if on_self and target.attr == "midlayer":
                    found.add("midlayer.")
                elif on_self and target.attr == "layers":
                    found.add("layers.0.")
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            key = node.value.rstrip(".")
            if key in _LAYER_PREFIXES:
                found.add(_LAYER_PREFIXES[key])
    return sorted(found)
