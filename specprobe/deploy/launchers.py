"""The launchers specprobe knows, read from ``specprobe/data/launchers.yaml`` (checked against its JSON
Schema): commands that start vLLM or SGLang, and wrappers that run another command.

Adding a launcher (a new NVIDIA Dynamo worker, a job runner) is adding an entry to that file; the
code here only matches argument vectors against the entries.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml
from jsonschema import Draft202012Validator

from specprobe.findings import SpecprobeError

_PYTHON = re.compile(r"python(\d+(\.\d+)?)?")
# Python options that take a separate argument (python -X importtime -m ...).
_PYTHON_OPTIONS_WITH_VALUE = ("-X", "-W", "-Q")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# A word the file leaves unknown (`$PYTHON`, `${VENV}/bin/python3`, `$(command -v python3)`).
_UNSET = re.compile(r"\$(\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*|\(.*\))(/bin/python[0-9.]*)?", re.DOTALL)


@dataclass(frozen=True)
class EngineLauncher:
    """A command that starts an engine; what follows it are the engine's flags (minus ``own_flags``)."""

    name: str
    engine: str
    program: str | None = None
    module: str | None = None
    subcommand: tuple[str, ...] = ()
    own_flags: dict[str, bool] = field(default_factory=dict)  # flag -> takes a value
    model_flags: tuple[str, ...] = ()  # flags naming the model, before the engine's --model/--model-path
    own_flag_prefixes: tuple[str, ...] = ()  # a family of the launcher's own flags (--router-...)
    abbreviations: bool = False  # its argparse reads a unique prefix of a flag as the flag
    evidence: str | None = None


@dataclass(frozen=True)
class Wrapper:
    """A command that runs the command given after its own options."""

    name: str
    program: str | None = None
    module: str | None = None
    subcommand: tuple[str, ...] = ()
    runs_python: bool = False
    options_with_value: frozenset[str] = frozenset()
    positionals: int = 0
    separator: str | None = None
    assignments: bool = False


@dataclass(frozen=True)
class Launchers:
    engines: tuple[EngineLauncher, ...]
    wrappers: tuple[Wrapper, ...]
    model_formats: dict[str, tuple[str, ...]] = field(default_factory=dict)


def _data(name: str) -> str:
    return resources.files("specprobe").joinpath("data", name).read_text("utf-8")


def validate(raw: Any) -> None:
    """SpecprobeError naming the first entry of ``raw`` that the launchers schema refuses."""
    validator = Draft202012Validator(json.loads(_data("launchers.schema.json")))
    for error in validator.iter_errors(raw):
        where = "/".join(str(part) for part in error.absolute_path) or "(top level)"
        raise SpecprobeError(f"launchers.yaml: {where}: {error.message}")


@lru_cache(maxsize=1)
def launchers() -> Launchers:
    """The shipped launchers. The file is checked against its schema by the test suite (``validate``),
    not at each start: the shipped file cannot change under a run."""
    raw = yaml.safe_load(_data("launchers.yaml"))
    engines = tuple(
        EngineLauncher(
            name=entry["name"],
            engine=entry["engine"],
            program=entry.get("program"),
            module=entry.get("module"),
            subcommand=tuple(str(entry.get("subcommand", "")).split()),
            own_flags={flag: kind == "value" for flag, kind in (entry.get("own_flags") or {}).items()},
            model_flags=tuple(entry.get("model_flags") or ()),
            own_flag_prefixes=tuple(entry.get("own_flag_prefixes") or ()),
            abbreviations=bool(entry.get("abbreviations", False)),
            evidence=entry.get("evidence"),
        )
        for entry in raw["engines"]
    )
    wrappers = tuple(
        Wrapper(
            name=entry["name"],
            program=entry.get("program"),
            module=entry.get("module"),
            subcommand=tuple(str(entry.get("subcommand", "")).split()),
            runs_python=entry.get("runs") == "python",
            options_with_value=frozenset(entry.get("options_with_value") or ()),
            positionals=int(entry.get("positionals", 0)),
            separator=entry.get("separator"),
            assignments=bool(entry.get("assignments", False)),
        )
        for entry in raw["wrappers"]
    )
    formats = {str(name): tuple(words) for name, words in (raw.get("model_formats") or {}).items()}
    return Launchers(engines, wrappers, formats)


def python_module(argv: list[str], start: int) -> tuple[str, int] | None:
    """For ``python [opts] -m MODULE ...`` at ``start``: the module and the index after it."""
    if start >= len(argv):
        return None
    # `$PYTHON -m sglang.launch_server` with PYTHON set outside the file: an interpreter that runs
    # `-m MODULE` (the module must still be a known launcher's).
    unset_python = _UNSET.fullmatch(argv[start]) and argv[start + 1 : start + 2] == ["-m"]
    if not _PYTHON.fullmatch(_basename(argv[start])) and not unset_python:
        return None
    i = start + 1
    while i < len(argv):
        token = argv[i]
        if token == "-m":
            return (argv[i + 1], i + 2) if i + 1 < len(argv) else None
        if token.startswith("-m") and len(token) > 2:
            return token[2:], i + 1
        if token in _PYTHON_OPTIONS_WITH_VALUE:
            i += 2
        elif token.startswith("-"):
            i += 1
        else:
            return None  # python script.py: not a module launch
    return None


def _basename(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _after(argv: list[str], after: int, subcommand: tuple[str, ...], *, optional: bool) -> int | None:
    """Index after ``subcommand`` at ``after``; a module's subcommand may be left out, a program's may
    not (`vllm bench` is no server)."""
    if not subcommand:
        return after
    if tuple(argv[after : after + len(subcommand)]) == subcommand:
        return after + len(subcommand)
    return after if optional else None


_Entry = EngineLauncher | Wrapper


def _match_in(
    argv: list[str], start: int, by_program: dict[str, list[_Entry]], by_module: dict[str, list[_Entry]]
) -> tuple[_Entry, int] | None:
    """The first entry whose program (or ``python -m`` module) and subcommand start ``argv[start:]``."""
    if start >= len(argv):
        return None
    for entry in by_program.get(_basename(argv[start]), ()):
        after = _after(argv, start + 1, entry.subcommand, optional=False)
        if after is not None:
            return entry, after
    if _PYTHON.fullmatch(_basename(argv[start])) or _UNSET.fullmatch(argv[start]):
        found = python_module(argv, start)
        if found is not None:
            for entry in by_module.get(found[0], ()):
                after = _after(argv, found[1], entry.subcommand, optional=True)
                if after is not None:
                    return entry, after
    return None


@lru_cache(maxsize=1)
def _indexes() -> tuple[dict[str, list[_Entry]], ...]:
    """Entries by program name and by module, engines and wrappers apart, in file order."""
    indexes: list[dict[str, list[_Entry]]] = []
    for entries in (launchers().engines, launchers().wrappers):
        by_program: dict[str, list[_Entry]] = {}
        by_module: dict[str, list[_Entry]] = {}
        for entry in entries:
            if entry.program is not None:
                by_program.setdefault(entry.program, []).append(entry)
            if entry.module is not None:
                by_module.setdefault(entry.module, []).append(entry)
        indexes += [by_program, by_module]
    return tuple(indexes)


def match_engine(argv: list[str], start: int) -> tuple[EngineLauncher, int] | None:
    """The engine launcher at ``argv[start]`` and the index of its first engine argument."""
    engines_by_program, engines_by_module, _, _ = _indexes()
    found = _match_in(argv, start, engines_by_program, engines_by_module)
    return (found[0], found[1]) if found is not None and isinstance(found[0], EngineLauncher) else None


def _match_wrapper(argv: list[str], start: int) -> tuple[Wrapper, int] | None:
    _, _, wrappers_by_program, wrappers_by_module = _indexes()
    found = _match_in(argv, start, wrappers_by_program, wrappers_by_module)
    return (found[0], found[1]) if found is not None and isinstance(found[0], Wrapper) else None


def unwrap(argv: list[str], lines: list[int | None]) -> tuple[list[str], list[int | None]]:
    """Drop wrappers (``nohup``, ``timeout 3600``, ``uv run``, ``torchrun ... -m``, ``ray job submit
    ... --``) in front of the command they run; a wrapper that runs Python gets ``python`` back."""
    i = 0
    for _ in range(16):  # wrappers nest a few deep at most (env nohup timeout 60 uv run ...)
        found = _match_wrapper(argv, i)
        if found is None:
            break
        wrapper, j = found
        if wrapper.separator is not None and wrapper.separator in argv[j:]:
            j = argv.index(wrapper.separator, j) + 1
        else:
            while j < len(argv):
                word = argv[j]
                if wrapper.assignments and _ASSIGNMENT.match(word):
                    j += 1
                elif wrapper.runs_python and word in ("-m", "--module"):
                    break
                elif word == wrapper.separator:
                    j += 1
                    break
                elif word.startswith("-") and word != "-":
                    name, eq, _ = word.partition("=")
                    j += 2 if name in wrapper.options_with_value and not eq else 1
                else:
                    j += wrapper.positionals
                    break
        if wrapper.runs_python and j < len(argv):
            rest = ["-m", *argv[j + 1 :]] if argv[j] == "--module" else argv[j:]
            return ["python", *rest], [lines[j], *lines[j:]]
        i = j
    return argv[i:], lines[i:]
