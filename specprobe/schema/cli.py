"""Whole-CLI snapshots: every option of a release's launch parser, as its own interpreter declared it.

Shipped under ``specprobe/data/cli/<engine>/``: one small file per release (its parser's settings and
the content hashes of its options and config tables) and ``_objects.json``, which holds each distinct
option record and config table once. Releases share most options unchanged, so the store grows by the
options a release changes; adding a release is one data commit
(``python -m specprobe.schema.cli_build``). Reading needs no engine, no torch: ``lint`` and ``gate``
read it at interpreter-start speed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from packaging.version import Version

from specprobe.engines.versions import parse_version
from specprobe.findings import SpecprobeError

OBJECTS_FILE = "_objects.json"
# The values probes/cli_probe.py asks each type callable to convert (its TYPE_SAMPLES); an option's
# ``accepts`` lists those the release's callable took.
SAMPLE_VALUES = ("0", "1", "-1", "1.5", "abc", "", "None", "1k", "auto", "true", '{"a": 1}', "[1, 2]")
ENGINES = ("vllm", "sglang")


@dataclass(frozen=True)
class CliOption:
    """One argparse action of the launch parser (an optional, or a positional when ``flags`` is empty)."""

    flags: tuple[str, ...]
    dest: str
    kind: str  # store, store_true, boolean_optional, ... or custom (an engine-defined Action class)
    action_class: str
    nargs: int | str | None = None
    const: Any = None
    default: Any = None
    type: dict[str, Any] | None = None
    choices: tuple[Any, ...] | None = None
    choices_plain: bool = True
    required: bool = False
    deprecated: dict[str, Any] | None = None
    help: str = ""
    accepts: tuple[str, ...] | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CliOption:
        choices = data.get("choices")
        accepts = data.get("accepts")
        return cls(
            flags=tuple(str(flag) for flag in data.get("flags") or ()),
            dest=str(data.get("dest")),
            kind=str(data.get("kind") or "store"),
            action_class=str(data.get("class") or ""),
            nargs=data.get("nargs"),
            const=data.get("const"),
            default=data.get("default"),
            type=data.get("type"),
            choices=tuple(choices) if isinstance(choices, list) else None,
            choices_plain=bool(data.get("choices_plain", True)),
            required=bool(data.get("required")),
            deprecated=data.get("deprecated"),
            help=str(data.get("help") or ""),
            accepts=tuple(accepts) if isinstance(accepts, list) else None,
        )

    def config_class(self) -> str | None:
        """The config class a JSON value of this option is validated as (vLLM's parse_dataclass)."""
        pending = [self.type] if self.type else []
        while pending:
            described = pending.pop()
            if described.get("config"):
                return str(described["config"])
            pending.extend(item for item in described.get("wraps") or () if isinstance(item, dict))
        return None

    def type_names(self) -> list[str]:
        """The type callable's name and the names of what it wraps, outermost first."""
        names: list[str] = []
        described = self.type
        while described:
            names.append(str(described.get("name")))
            wraps = [item for item in described.get("wraps") or () if isinstance(item, dict)]
            described = wraps[0] if wraps else None
        return names


@dataclass(frozen=True)
class ConfigTable:
    """The fields of a config class a JSON-valued option is validated as, and whether it refuses
    keys it does not have (asked of the class with an unknown key: ``extra`` is ``forbid``)."""

    name: str
    fields: dict[str, dict[str, Any]]
    extra: str | None
    unknown_key_message: str | None

    @property
    def short_name(self) -> str:
        return self.name.rpartition(".")[2]


@dataclass
class CliSnapshot:
    engine: str
    version: str
    parser: dict[str, Any]
    options: list[CliOption]
    positionals: list[CliOption]
    exclusive: list[dict[str, Any]]
    configs: dict[str, ConfigTable]
    problems: list[str] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def allow_abbrev(self) -> bool:
        return bool(self.parser.get("allow_abbrev", True))

    @property
    def features(self) -> dict[str, bool]:
        return dict(self.parser.get("features") or {})

    def option_strings(self) -> list[str]:
        return list(self.by_flag())

    def by_flag(self) -> dict[str, CliOption]:
        # Computed once: snapshots are cached per process and never changed after loading.
        cached: dict[str, CliOption] | None = self.__dict__.get("_by_flag")
        if cached is None:
            cached = {flag: option for option in self.options for flag in option.flags}
            self.__dict__["_by_flag"] = cached
        return cached


def _engine_dir(engine: str) -> Traversable:
    return resources.files("specprobe").joinpath("data", "cli", engine)


def store_dir(engine: str) -> Path:
    """The on-disk folder of ``engine``'s CLI snapshots (for the writer; a source checkout)."""
    return Path(str(_engine_dir(engine)))


def _key(version: str) -> Version:
    """A shipped snapshot's version (cli_versions lists only names that parse)."""
    parsed = parse_version(version)
    assert parsed is not None
    return parsed


@cache
def _objects(engine: str) -> dict[str, Any]:
    entry = _engine_dir(engine).joinpath(OBJECTS_FILE)
    try:
        payload = json.loads(entry.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise SpecprobeError(f"CLI snapshot store {engine}/{OBJECTS_FILE} is unreadable: {exc}") from None
    return dict(payload.get("objects") or {}) if isinstance(payload, dict) else {}


@cache
def cli_versions(engine: str) -> tuple[str, ...]:
    """Releases of ``engine`` with a whole-CLI snapshot, oldest first."""
    if engine not in ENGINES:
        return ()
    folder = _engine_dir(engine)
    if not folder.is_dir():
        return ()
    names = [e.name[: -len(".json")] for e in folder.iterdir() if e.name.endswith(".json") and e.name[0] != "_"]
    return tuple(sorted((name for name in names if parse_version(name) is not None), key=_key))


def _object(engine: str, key: str) -> Any:
    objects = _objects(engine)
    if key not in objects:
        raise SpecprobeError(f"CLI snapshot store of {engine} lacks object {key}")
    return objects[key]


@cache
def load_cli(engine: str, version: str) -> CliSnapshot | None:
    """The whole-CLI snapshot of ``engine`` at exactly ``version`` (PEP 440 equal), or None."""
    wanted = parse_version(version)
    chosen = next((v for v in cli_versions(engine) if v == version or (wanted and parse_version(v) == wanted)), None)
    if chosen is None:
        return None
    try:
        payload = json.loads(_engine_dir(engine).joinpath(f"{chosen}.json").read_text(encoding="utf-8"))
        options = [CliOption.from_dict(_object(engine, key)) for key in payload["options"]]
        positionals = [CliOption.from_dict(_object(engine, key)) for key in payload.get("positionals") or ()]
        configs = {}
        for name, key in (payload.get("configs") or {}).items():
            table = _object(engine, key)
            configs[name] = ConfigTable(
                name=name,
                fields=dict(table.get("fields") or {}),
                extra=table.get("extra"),
                unknown_key_message=table.get("unknown_key_message"),
            )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SpecprobeError(f"CLI snapshot {engine}/{chosen}.json is unreadable: {exc}") from None
    return CliSnapshot(
        engine=engine,
        version=chosen,
        parser=dict(payload.get("parser") or {}),
        options=options,
        positionals=positionals,
        exclusive=list(payload.get("exclusive") or ()),
        configs=configs,
        problems=list(payload.get("problems") or ()),
        provenance=dict(payload.get("provenance") or {}),
    )


def nearest_cli(engine: str, version: str) -> tuple[CliSnapshot | None, str | None]:
    """The snapshot to judge ``version`` by, and a caveat when it is not that release's own.

    A release without its own snapshot is judged by the nearest older one (options are added far more
    often than removed, so an option it lacks is, at worst, one added since); a release older than
    every snapshot is not judged (None): an option added later would be refused wrongly.
    """
    own = load_cli(engine, version)
    if own is not None:
        return own, None
    wanted = parse_version(version)
    if wanted is None:
        return None, f"{engine} {version} is not a release number: the whole command was not checked"
    older = [v for v in cli_versions(engine) if _key(v) < wanted]
    if not older:
        known = ", ".join(cli_versions(engine)) or "none"
        return None, (
            f"no whole-CLI snapshot of {engine} {version} or of an older release (snapshots: {known}): "
            "only its speculative-decoding flags were checked"
        )
    nearest = load_cli(engine, older[-1])
    return nearest, (
        f"no whole-CLI snapshot of {engine} {version}: its command was checked against {engine} {older[-1]}'s "
        "parser (options added after that release are reported as unknown)"
    )


def newer_cli(engine: str, version: str) -> CliSnapshot | None:
    """The oldest snapshot newer than ``version`` (what a release between two snapshots may have added)."""
    wanted = parse_version(version)
    if wanted is None:
        return None
    newer = [v for v in cli_versions(engine) if _key(v) > wanted]
    return load_cli(engine, newer[0]) if newer else None


@dataclass(frozen=True)
class FlagHistory:
    """Where an option string appears across the snapshots of one engine."""

    last_with: str | None  # newest snapshot older than the release checked that has it
    first_without: str | None  # the snapshot after ``last_with``: the first seen without it
    first_with_after: str | None  # oldest snapshot newer than the release checked that has it
    replacement: str | None  # what the release that last had it pointed to, or the option now on its dest


def flag_history(engine: str, flag: str, version: str) -> FlagHistory:
    """When ``flag`` was last accepted before ``version`` (and what replaced it), or first accepted after."""
    wanted = parse_version(version)
    if wanted is None:
        return FlagHistory(None, None, None, None)
    last_with = first_without = first_after = replacement = None
    versions = cli_versions(engine)
    for index, known in enumerate(versions):
        snapshot = load_cli(engine, known)
        if snapshot is None:
            continue
        option = snapshot.by_flag().get(flag)
        if option is None:
            continue
        if _key(known) < wanted:
            last_with = known
            first_without = versions[index + 1] if index + 1 < len(versions) else None
            replacement = _pointed_to(option)
        elif _key(known) > wanted and first_after is None:
            first_after = known
    if last_with is not None and replacement is None:
        current = load_cli(engine, version) or nearest_cli(engine, version)[0]
        previous = load_cli(engine, last_with)
        option = previous.by_flag().get(flag) if previous is not None else None
        if current is not None and option is not None:
            same_dest = [o for o in current.options if o.dest == option.dest and o.flags]
            if same_dest:
                replacement = same_dest[0].flags[0]
    return FlagHistory(last_with, first_without, first_after, replacement)


def _pointed_to(option: CliOption) -> str | None:
    """The replacement a deprecated option named (``new_flag``, or ``Use --x instead`` in its help)."""
    deprecated = option.deprecated or {}
    if isinstance(deprecated.get("new_flag"), str):
        return str(deprecated["new_flag"])
    text = " ".join(str(part) for part in (deprecated.get("error"), option.help) if part)
    lowered = text.lower()
    if "deprecat" not in lowered and "removed" not in lowered:
        return None
    for word in text.replace(",", " ").replace("'", " ").replace("`", " ").split():
        if word.startswith("--") and word.rstrip(".") not in option.flags:
            return word.rstrip(".")
    return None


def config_key_history(engine: str, config: str, key: str, version: str) -> str | None:
    """The newest snapshot older than ``version`` whose ``config`` class had field ``key``."""
    wanted = parse_version(version)
    if wanted is None:
        return None
    found = None
    for known in cli_versions(engine):
        if _key(known) >= wanted:
            break
        snapshot = load_cli(engine, known)
        tables = snapshot.configs.values() if snapshot is not None else ()
        # By the class's own name: a class may move between modules across releases.
        if any(table.short_name == config.rpartition(".")[2] and key in table.fields for table in tables):
            found = known
    return found


def clear_caches() -> None:
    _objects.cache_clear()
    cli_versions.cache_clear()
    load_cli.cache_clear()
