"""In which shipped releases of an engine a method, a parameter, a draft architecture or an EAGLE-3
target was accepted: ``specprobe schema history``.

Answers come from the shipped snapshots only (one per release, oldest first), so the result names
exact releases; a release between two snapshots is not guessed.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any, assert_never

from specprobe.findings import SpecprobeError
from specprobe.schema import store
from specprobe.schema.model import EngineSchema
from specprobe.untrusted.text import terminal


class Subject(enum.StrEnum):
    """What a history question is about."""

    METHOD = "method"
    FIELD = "field"
    DRAFT_ARCH = "draft_arch"
    TARGET_GATE = "target_gate"


@dataclass
class Presence:
    """One release's answer."""

    version: str
    present: bool
    detail: str = ""


@dataclass
class History:
    """The answer over every shipped release of one engine, oldest first."""

    engine: str
    subject: Subject
    value: str
    releases: list[Presence] = field(default_factory=list)

    @property
    def present_in(self) -> list[str]:
        return [entry.version for entry in self.releases if entry.present]

    @property
    def first(self) -> str | None:
        found = self.present_in
        return found[0] if found else None

    @property
    def last(self) -> str | None:
        found = self.present_in
        return found[-1] if found else None

    @property
    def gaps(self) -> list[list[str]]:
        """Runs of releases without it between the first and the last release with it: [from, to]."""
        runs: list[list[str]] = []
        seen_present = False
        current: list[str] = []
        for entry in self.releases:
            if entry.present:
                if seen_present and current:
                    runs.append([current[0], current[-1]])
                current = []
                seen_present = True
            elif seen_present:
                current.append(entry.version)
        return runs

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "query": {"subject": self.subject.value, "value": self.value},
            "first": self.first,
            "last": self.last,
            "gaps": self.gaps,
            "present_in": self.present_in,
            "releases": [dataclasses.asdict(entry) for entry in self.releases],
        }


def _field_names(schema: EngineSchema, wanted: str) -> str | None:
    """The parameter ``wanted`` names: its own name, or one of its CLI spellings."""
    if wanted in schema.parameters:
        return wanted
    for name, spec in schema.parameters.items():
        if wanted in ([spec.flag] if spec.flag else []) + spec.aliases:
            return name
    normalised = wanted.lstrip("-").replace("-", "_")
    return normalised if normalised in schema.parameters else None


def _target_gate(schema: EngineSchema, model_type: str) -> Presence:
    gate = schema.eagle3_target_supported
    if schema.engine != "vllm":
        return Presence(schema.version, True, "no model_type gate for EAGLE-3 targets")
    if gate is None:
        return Presence(schema.version, True, "no model_type gate (EAGLE-3 targets are gated by their model class)")
    # vLLM matches each entry as a substring of the target's model_type (`"qwen" in "qwen3_moe"`).
    matched = [entry for entry in gate if entry in model_type]
    if matched:
        return Presence(schema.version, True, f"matches {', '.join(matched)} of {gate}")
    return Presence(schema.version, False, f"not matched by {gate}")


def presence(schema: EngineSchema, subject: Subject, value: str) -> Presence:
    """Whether one release has it, with a short reason."""
    if subject is Subject.METHOD:
        names = {method.casefold(): method for method in schema.methods}
        found = names.get(value.casefold())
        if found is None:
            return Presence(schema.version, False)
        how = "reserved alias" if found in schema.reserved_methods else "method"
        return Presence(schema.version, True, how)
    if subject is Subject.FIELD:
        name = _field_names(schema, value)
        if name is None:
            return Presence(schema.version, False)
        spec = schema.parameters[name]
        return Presence(schema.version, True, f"{name}: {spec.python_type or spec.type}, default {spec.default!r}")
    if subject is Subject.DRAFT_ARCH:
        if value in schema.draft_architectures:
            return Presence(schema.version, True, "draft architecture")
        if value in schema.model_architectures:
            return Presence(schema.version, False, "in the model registry, not as a draft architecture")
        return Presence(schema.version, False)
    if subject is Subject.TARGET_GATE:
        return _target_gate(schema, value)
    assert_never(subject)


def history(engine: str, subject: Subject, value: str) -> History:
    """Ask every shipped release of ``engine``."""
    versions = store.known_versions(engine)
    if not versions:
        raise SpecprobeError(f"no shipped snapshots of {engine}")
    if subject is Subject.TARGET_GATE and value != value.lower():
        # The gate matches config.json's model_type (lower case, e.g. deepseek_v3); a class name such as
        # DeepseekV3ForCausalLM never matches it and would read as "refused by every gated release".
        raise SpecprobeError(
            f"--target-gate takes the target's model_type as config.json spells it (e.g. deepseek_v3, qwen3_moe), "
            f"not {value!r}"
        )
    result = History(engine, subject, value)
    for version in versions:
        schema = store.load_snapshot(engine, version)
        if schema is not None:
            result.releases.append(presence(schema, subject, value))
    return result


def render_text(result: History) -> str:
    """A few lines: the verdict, first and last, gaps, then each release."""
    label = result.subject.value.replace("_", "-")
    total = len(result.releases)
    count = len(result.present_in)
    lines = [f"{result.engine} {label} {terminal(result.value)}: in {count} of {total} shipped releases"]
    if result.first is None:
        lines.append("  never present")
    else:
        lines.append(f"  first: {result.first}   last: {result.last}")
        gaps = ", ".join(f"{start}" if start == end else f"{start} to {end}" for start, end in result.gaps)
        lines.append(f"  gaps: {gaps or 'none'}")
    for entry in result.releases:
        mark = "yes" if entry.present else "no "
        detail = f"  {terminal(entry.detail)}" if entry.detail else ""
        lines.append(f"  {entry.version:<12} {mark}{detail}")
    return "\n".join(lines) + "\n"
