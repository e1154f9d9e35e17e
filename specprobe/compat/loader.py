"""Loading the compatibility matrix: YAML files validated by the JSON Schema shipped beside them."""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from specprobe.compat.model import Acceptance, Entry, EntryKind, Status
from specprobe.findings import Severity, SpecprobeError
from specprobe.hfconfig import AttentionKind
from specprobe.untrusted.files import UntrustedInputError, check_tree, read_bounded

SCHEMA_FILE = "compat_matrix.schema.json"
# The shipped matrix is ~100 kB; a user's file of recorded runs is smaller still.
MAX_MATRIX_BYTES = 16 * 1024 * 1024


class MatrixError(SpecprobeError):
    """A matrix file is unreadable or invalid: the matrix cannot be evaluated (exit 2)."""


# libyaml's safe loader when PyYAML was built with it: the matrix is read on every `check` start.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

def data_dir() -> Path:
    """The shipped matrix folder, inside the package so that a wheel carries it."""
    return Path(str(resources.files("specprobe") / "data" / "compat_matrix"))


@cache
def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((data_dir() / SCHEMA_FILE).read_text(encoding="utf-8"))
    return loaded


def validation_errors(document: Any) -> list[str]:
    """Schema violations of one parsed matrix file, each as 'path: message'."""
    # jsonschema costs ~0.2 s to import: only files from outside the package pay for it.
    from jsonschema import Draft202012Validator  # noqa: PLC0415

    validator = Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    return [f"{'/'.join(str(p) for p in e.absolute_path) or '<root>'}: {e.message}" for e in errors]


def _tuple(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def entry_from_dict(data: dict[str, Any], source: str | None = None) -> Entry:
    """Build an Entry from a schema-valid mapping; PEP 440 specifiers are checked here because a
    JSON Schema cannot say what a valid specifier is."""
    try:
        versions = SpecifierSet(str(data.get("versions", "")))
    except InvalidSpecifier:
        where = f"{source or 'entry'}: {data.get('id')}"
        raise MatrixError(f"{where}: invalid version range {data.get('versions')!r}") from None
    draft = data.get("draft") or {}
    target = data.get("target") or {}
    acceptance_data = data.get("acceptance")
    acceptance = None
    if isinstance(acceptance_data, dict):
        acceptance = Acceptance(
            acceptance_rate=acceptance_data.get("acceptance_rate"),
            mean_acceptance_length=acceptance_data.get("mean_acceptance_length"),
            note=acceptance_data.get("note"),
            source=acceptance_data.get("source"),
        )
    return Entry(
        id=str(data["id"]),
        kind=EntryKind(data["kind"]),
        engine=str(data["engine"]),
        versions=versions,
        status=Status(data["status"]),
        severity=Severity(data["severity"]),
        summary=str(data["summary"]),
        evidence=_tuple(data.get("evidence")),
        methods=tuple(m.lower() for m in _tuple(data.get("methods"))),
        draft_formats=_tuple(draft.get("formats")),
        draft_architectures=_tuple(draft.get("architectures")),
        target_attention=tuple(AttentionKind(a) for a in _tuple(target.get("attention"))),
        target_model_types=_tuple(target.get("model_types")),
        target_config=tuple((str(key), _tuple(conditions)) for key, conditions in (target.get("config") or {}).items()),
        features=_tuple(data.get("features")),
        hint=data.get("hint"),
        acceptance=acceptance,
        source=source,
    )


def parse_matrix_yaml(text: str | bytes, name: str) -> Any:
    """One matrix YAML document, within bounds: PyYAML has no nesting limit (RecursionError) and its
    aliases can expand a small file into billions of values that validation would walk."""
    try:
        document = yaml.load(text, Loader=_SAFE_LOADER)
    except UnicodeDecodeError as exc:
        raise UntrustedInputError(f"{name} is not UTF-8 ({exc.reason})") from None
    except RecursionError:
        raise UntrustedInputError(f"{name} is nested too deeply to read") from None
    except yaml.YAMLError as exc:
        raise UntrustedInputError(f"{name} is not valid YAML: {str(exc).splitlines()[0]}") from None
    check_tree(document, what=name)
    return document


def load_file(path: Path, *, validate: bool = True) -> list[Entry]:
    """Parse and validate one matrix file; any problem is a MatrixError naming the file.

    The shipped files are validated by the test suite, so loading them skips the schema check.
    """
    try:
        document = parse_matrix_yaml(read_bounded(path, max_bytes=MAX_MATRIX_BYTES, what=path.name), path.name)
    except OSError as exc:
        raise MatrixError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UntrustedInputError as exc:
        raise MatrixError(str(exc)) from None
    errors = validation_errors(document) if validate else []
    if errors:
        raise MatrixError(f"{path.name} does not match the matrix schema: {errors[0]}")
    return [entry_from_dict(item, source=path.name) for item in document["entries"]]


def matrix_files(directory: Path | None = None) -> list[Path]:
    return sorted((directory or data_dir()).glob("*.yaml"))


def load_matrix(paths: Iterable[Path] | None = None, *, extra: Iterable[Path] = ()) -> list[Entry]:
    """Every entry of the shipped matrix (or of ``paths``) plus ``extra`` files, in file then
    declaration order; files from outside the package are validated against the schema."""
    extra = tuple(extra)
    if paths is None and not extra:
        # The shipped files are parsed once per process: one command asks for the matrix many times
        # (a refused fix looks for alternatives once per candidate), and the entries are frozen.
        return list(_shipped(tuple(matrix_files())))
    shipped = [(path, False) for path in matrix_files()] if paths is None else [(path, True) for path in paths]
    return _entries([*shipped, *((path, True) for path in extra)])


@cache
def _shipped(files: tuple[Path, ...]) -> tuple[Entry, ...]:
    return tuple(_entries([(path, False) for path in files]))


def _entries(files: Iterable[tuple[Path, bool]]) -> list[Entry]:
    entries: list[Entry] = []
    seen: dict[str, str] = {}
    for path, validate in files:
        for entry in load_file(path, validate=validate):
            if entry.id in seen:
                raise MatrixError(f"duplicate entry id {entry.id!r} in {path.name} (first in {seen[entry.id]})")
            seen[entry.id] = path.name
            entries.append(entry)
    return entries
