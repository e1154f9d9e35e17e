"""Engine facts as data: what each engine release does with a drafter that its snapshot does not declare.

The facts live in ``specprobe/data/engine_facts/``: ``engines.yaml`` names, once per engine, the newest
release they were read against; ``<engine>.yaml`` holds the facts, each a name with PEP 440 ranges, a value
per range and pinned evidence, described by ``engine_facts.schema.json`` (jsonschema, see ``load``) and
checked at every load (ranges that parse, that never overlap, and that stay open at the top). One function answers:
``answer(engine, version, fact)``. A release newer than the newest read is judged by the newest facts and
the answer says so (``beyond_newest``), so a new release never silently loses a fact or flips a verdict.

``python -m specprobe.engines.facts`` prints docs/evidence/engine-facts.md, generated from the same data.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from specprobe.engines.versions import parse_version
from specprobe.findings import SpecprobeError

SCHEMA_FILE = "engine_facts.schema.json"
NEWEST_FILE = "engines.yaml"
# Operators that close a range at the top: such a bound at or past the newest release read would restate
# "through the newest release read", which engines.yaml says once.
_CLOSING = frozenset({"<", "<=", "==", "===", "~="})
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class FactsError(SpecprobeError):
    """The shipped engine facts are invalid: a packaging bug, reported with the file and fact."""


@dataclass(frozen=True)
class Member:
    """A class that belongs to a fact's set from ``since`` (and, when removed, until ``until``)."""

    name: str
    since: Version
    until: Version | None = None

    def present(self, version: Version) -> bool:
        return self.since <= version and (self.until is None or version < self.until)


@dataclass(frozen=True)
class Range:
    """One value of a fact over a PEP 440 range of releases, with the source that shows it."""

    versions: SpecifierSet
    evidence: str
    value: Any = None
    members: tuple[Member, ...] = ()
    also: tuple[str, ...] = ()
    read_through: Version | None = None
    note: str = ""

    def covers(self, version: Version) -> bool:
        return self.versions.contains(version, prereleases=True)

    def links(self) -> list[str]:
        """Every link this range cites, a ``{since}`` template expanded for each member."""
        main = [self.evidence.format(since=m.since) for m in self.members] if "{since}" in self.evidence else []
        return list(dict.fromkeys([*(main or [self.evidence]), *self.also]))


@dataclass(frozen=True)
class Fact:
    """A named engine behaviour: its ranges, oldest first as written in the data."""

    engine: str
    name: str
    summary: str
    ranges: tuple[Range, ...]


@dataclass(frozen=True)
class Answer:
    """What ``engine==version`` does for one fact, and how the answer was reached.

    ``versions`` is the PEP 440 range the value came from ("" for every release); ``beyond_newest`` says
    the version is past ``read_through``, the newest release the fact was read in, so the value is that
    release's (rules say "judged by the newest facts (0.34.0)").
    """

    value: Any
    versions: str
    evidence: str
    read_through: str
    beyond_newest: bool = False
    also: tuple[str, ...] = field(default=())

    @property
    def judged_note(self) -> str:
        """" (judged by the newest facts (X))" when the version is past the releases read, else ""."""
        return f" (judged by the newest facts ({self.read_through}))" if self.beyond_newest else ""


def data_dir() -> Path:
    """The shipped facts folder, inside the package so that a wheel carries it."""
    return Path(str(resources.files("specprobe") / "data" / "engine_facts"))


def _read_yaml(path: Path, validator: Any | None) -> dict[str, Any]:
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_SAFE_LOADER)
    except (OSError, yaml.YAMLError) as exc:
        raise FactsError(f"engine facts {path.name} are unreadable: {exc}") from None
    if not isinstance(data, dict):
        raise FactsError(f"engine facts {path.name} are not a mapping")
    if validator is None:
        return data
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        where = "/".join(str(p) for p in errors[0].absolute_path) or "(top)"
        raise FactsError(f"engine facts {path.name} at {where}: {errors[0].message}")
    return data


def _validator() -> Any:
    # Imported here: jsonschema costs start-up time, and only the first answer of a run needs it.
    import jsonschema  # noqa: PLC0415

    schema = json.loads((data_dir() / SCHEMA_FILE).read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _range(engine: str, name: str, raw: dict[str, Any], newest: Version) -> Range:
    where = f"{engine}.yaml fact {name}"
    try:
        versions = SpecifierSet(raw.get("versions", ""))
    except InvalidSpecifier:
        raise FactsError(f"{where}: {raw.get('versions')!r} is not a PEP 440 range") from None
    for spec in versions:
        bound = parse_version(spec.version.rstrip(".*"))
        if spec.operator in _CLOSING and bound is not None and bound >= newest:
            raise FactsError(
                f"{where}: {spec} closes the range at or past the newest release read ({newest}); leave it open "
                f"(engines.yaml says how far the facts were read)"
            )
    read_through = Version(raw["read_through"]) if "read_through" in raw else None
    if read_through is not None and read_through > newest:
        raise FactsError(f"{where}: read_through {read_through} is past the newest release read ({newest})")
    members = tuple(
        Member(m["class"], Version(m["since"]), Version(m["until"]) if "until" in m else None)
        for m in raw.get("members", ())
    )
    return Range(
        versions=versions,
        evidence=raw["evidence"],
        value=raw.get("value"),
        members=members,
        also=tuple(raw.get("also", ())),
        read_through=read_through,
        note=str(raw.get("note", "")),
    )


def _overlap(fact: Fact, probes: list[Version]) -> str | None:
    """A version two ranges of ``fact`` both claim, among ``probes`` (every bound written), or None."""
    for version in probes:
        claiming = [str(r.versions) or "(every release)" for r in fact.ranges if r.covers(version)]
        if len(claiming) > 1:
            return f"{version} is in {' and '.join(claiming)}"
    return None


def load(*, validate: bool = False) -> tuple[dict[str, Version], dict[tuple[str, str], Fact]]:
    """The newest release read per engine and every fact, checked: ranges parse, never overlap and stay
    open at the top. With ``validate`` each file is first checked against engine_facts.schema.json with
    jsonschema (the test suite does this for the shipped files; a run skips it, as the matrix loader
    does, because importing jsonschema costs ~0.2 s of start-up)."""
    folder = data_dir()
    validator = _validator() if validate else None
    newest_raw = _read_yaml(folder / NEWEST_FILE, validator)
    if "newest_read" not in newest_raw:
        raise FactsError(f"engine facts {NEWEST_FILE} does not name newest_read")
    newest = {engine: Version(version) for engine, version in newest_raw["newest_read"].items()}
    facts: dict[tuple[str, str], Fact] = {}
    for path in sorted(folder.glob("*.yaml")):
        if path.name == NEWEST_FILE:
            continue
        data = _read_yaml(path, validator)
        engine = data.get("engine")
        if not isinstance(engine, str) or engine not in newest:
            raise FactsError(f"engine facts {path.name}: engine {engine!r} has no newest_read in {NEWEST_FILE}")
        for raw in data["facts"]:
            key = (engine, raw["name"])
            if key in facts:
                raise FactsError(f"engine facts {path.name}: {raw['name']} is stated twice")
            fact = Fact(
                engine,
                raw["name"],
                " ".join(str(raw["summary"]).split()),
                tuple(_range(engine, raw["name"], r, newest[engine]) for r in raw["ranges"]),
            )
            bounds = sorted(
                {Version(s.version) for r in fact.ranges for s in r.versions if parse_version(s.version)}
                | {newest[engine]}
            )
            clash = _overlap(fact, bounds)
            if clash is not None:
                raise FactsError(f"engine facts {path.name}: ranges of {fact.name} overlap: {clash}")
            facts[key] = fact
    return newest, facts


@cache
def _load() -> tuple[dict[str, Version], dict[tuple[str, str], Fact]]:
    return load(validate=False)


def newest_read() -> dict[str, str]:
    """The newest release of each engine the facts were read against (engines.yaml)."""
    return {engine: str(version) for engine, version in _load()[0].items()}


def beyond_newest(engine: str, version: str) -> str | None:
    """The newest release read when ``engine==version`` is newer than it (the release is then judged by
    that release's facts, and findings say so); None when it was read, older, unknown or not PEP 440."""
    newest = _load()[0].get(engine)
    wanted = parse_version(version)
    if newest is None or wanted is None or wanted <= newest:
        return None
    return str(newest)


@cache
def cpu_build_range(engine: str) -> tuple[Version, Version] | None:
    """First and last release of ``engine`` with a CPU build on the package index (engines.yaml)."""
    raw = _read_yaml(data_dir() / NEWEST_FILE, None).get("cpu_builds", {}).get(engine)
    if not isinstance(raw, dict):
        return None
    return Version(str(raw["first"])), Version(str(raw["last"]))


def all_facts() -> list[Fact]:
    """Every fact, engine by engine, in the order the data states them."""
    return list(_load()[1].values())


def fact(engine: str, name: str) -> Fact | None:
    return _load()[1].get((engine, name))


def answer(engine: str, version: str, name: str) -> Answer | None:
    """What ``engine==version`` does for fact ``name``; None when no range covers the version (or the
    version is not PEP 440, or the fact is unknown). Past the newest release read, the newest facts answer
    with ``beyond_newest`` set."""
    newest_by_engine, facts = _load()
    found = facts.get((engine, name))
    wanted = parse_version(version)
    if found is None or wanted is None:
        return None
    newest = newest_by_engine[engine]
    asked = min(wanted, newest)
    for candidate in found.ranges:
        if not candidate.covers(asked):
            continue
        read_through = candidate.read_through or newest
        value: Any = candidate.value
        evidence = candidate.evidence
        if candidate.members:
            present = [m for m in candidate.members if m.present(asked)]
            value = sorted(m.name for m in present)
            changed = max((m.since for m in candidate.members if m.since <= asked), default=None)
            evidence = evidence.format(since=changed or candidate.members[0].since)
        return Answer(
            value=value,
            versions=str(candidate.versions),
            evidence=evidence,
            read_through=str(read_through),
            beyond_newest=wanted > read_through,
            also=candidate.also,
        )
    return None


# --- docs/evidence/engine-facts.md ------------------------------------------------------------------
DOC_PATH = "docs/evidence/engine-facts.md"
REGENERATE = "python -m specprobe.engines.facts > docs/evidence/engine-facts.md"
_ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang"}

_PROLOGUE = """\
# Engine facts the rules read, by release

<!-- Generated from specprobe/data/engine_facts/ by `{regenerate}`; do not edit by hand. -->

The check and lint rules ask the shipped snapshot of the engine version being checked first
(`specprobe/data/schemas/<engine>/<version>.json`). What a snapshot does not declare comes from the facts
below (`specprobe/data/engine_facts/`), each read from the engines' released source and cited at a pinned
tag. Every range is open at the top: the facts were read through {newest}, and a newer release is judged
by the newest facts (findings say "judged by the newest facts"). A release older than every range gets no
verdict on that point, never a guess.
"""

_EPILOGUE = """\
## Rope settings
Both engines build the drafter's rotary embedding from the drafter's own config.json. A drafter whose
rope differs from its target's is therefore served exactly as it was trained: SpecForge's Kimi-K2.5
drafter is a Llama (GQA) head with `rope_theta` 1e6 and no scaling, while its MLA target applies YaRN
to 64 rope dimensions; the two cannot share a rope, and need not. A mismatch matters only if the
drafter's config.json was edited after training, which the checkpoint cannot show: `TARGET-ROPE` is
information.
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _value_text(candidate: Range) -> str:
    if candidate.members:
        return ", ".join(
            f"`{m.name}` ({m.since}+" + (f", until {m.until})" if m.until else ")") for m in candidate.members
        )
    value = candidate.value
    if isinstance(value, dict) and all(isinstance(v, dict) and "read" in v for v in value.values()):
        parts = []
        for layout, reading in value.items():
            keys = " then ".join(f"`{k}`" for k in reading["read"])
            parts.append(f"{layout}: " + (f"{keys}, else {reading['default']}" if keys else f"{reading['default']}"))
        return "; ".join(parts)
    return f"`{json.dumps(value)}`" if not isinstance(value, str) else f"`{value}`"


def _range_rows(fact_: Fact) -> Iterator[str]:
    for candidate in fact_.ranges:
        versions = str(candidate.versions) or "every release"
        links = " ".join(f"[{i + 1}]({url})" for i, url in enumerate(candidate.links()))
        read = f" (read through {candidate.read_through})" if candidate.read_through else ""
        note = f"; {candidate.note}" if candidate.note else ""
        yield f"| `{versions}`{read} | {_cell(_value_text(candidate))}{_cell(note)} | {links} |"


def render_markdown() -> str:
    """docs/evidence/engine-facts.md, from the data alone."""
    newest = ", ".join(f"{_ENGINE_NAMES.get(e, e)} {v}" for e, v in newest_read().items())
    lines = [_PROLOGUE.format(regenerate=REGENERATE, newest=newest)]
    for engine in newest_read():
        lines.append(f"## {_ENGINE_NAMES.get(engine, engine)} (read through {newest_read()[engine]})\n")
        for fact_ in (f for f in all_facts() if f.engine == engine):
            lines.append(f"### `{fact_.name}`\n")
            lines.append(f"{fact_.summary}\n")
            lines.append("| Releases | Value | Evidence |")
            lines.append("| --- | --- | --- |")
            lines.extend(_range_rows(fact_))
            lines.append("")
    lines.append(_EPILOGUE)
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(render_markdown())
