"""What changed between two versions of an engine's schema: methods, parameters, types, defaults."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from specprobe.schema.model import EngineSchema


@dataclass
class Change:
    """One parameter whose type or default differs between the two versions."""

    name: str
    old: Any = None
    new: Any = None


@dataclass
class SchemaDiff:
    """The difference ``new`` minus ``old`` for one engine."""

    engine: str
    old: str
    new: str
    methods_added: list[str] = field(default_factory=list)
    methods_removed: list[str] = field(default_factory=list)
    parameters_added: list[str] = field(default_factory=list)
    parameters_removed: list[str] = field(default_factory=list)
    parameters_retyped: list[Change] = field(default_factory=list)
    defaults_changed: list[Change] = field(default_factory=list)
    draft_architectures_added: list[str] = field(default_factory=list)
    draft_architectures_removed: list[str] = field(default_factory=list)
    cli_flags_added: list[str] = field(default_factory=list)
    cli_flags_removed: list[str] = field(default_factory=list)
    eagle3_target_supported: Change | None = None
    model_architectures_added: list[str] = field(default_factory=list)
    model_architectures_removed: list[str] = field(default_factory=list)
    self_drafting_architectures_added: list[str] = field(default_factory=list)
    self_drafting_architectures_removed: list[str] = field(default_factory=list)
    facts_changed: list[Change] = field(default_factory=list)
    """auto_resolved_flags, eagle3_fc_inputs, eagle3_layer_prefixes, cpu_attention_head_sizes."""

    @property
    def empty(self) -> bool:
        return not any(
            getattr(self, name)
            for name in (f.name for f in dataclasses.fields(self))
            if name not in {"engine", "old", "new"}
        )

    def to_json_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_FACTS = ("auto_resolved_flags", "eagle3_fc_inputs", "eagle3_layer_prefixes", "cpu_attention_head_sizes")


def _added(old: list[str], new: list[str]) -> list[str]:
    known = set(old)
    return [item for item in new if item not in known]


def _flag_names(schema: EngineSchema) -> list[str]:
    return [flag for entry in schema.cli_flags for flag in entry.flags if flag.startswith("--")]


def diff_schemas(old: EngineSchema, new: EngineSchema) -> SchemaDiff:
    """Compare two schemas of the same engine."""
    result = SchemaDiff(
        engine=new.engine,
        old=old.version,
        new=new.version,
        methods_added=_added(old.methods, new.methods),
        methods_removed=_added(new.methods, old.methods),
        parameters_added=_added(list(old.parameters), list(new.parameters)),
        parameters_removed=_added(list(new.parameters), list(old.parameters)),
        draft_architectures_added=_added(old.draft_architectures, new.draft_architectures),
        draft_architectures_removed=_added(new.draft_architectures, old.draft_architectures),
        cli_flags_added=_added(_flag_names(old), _flag_names(new)),
        cli_flags_removed=_added(_flag_names(new), _flag_names(old)),
    )
    for name, spec in new.parameters.items():
        before = old.parameters.get(name)
        if before is None:
            continue
        if before.type != spec.type:
            result.parameters_retyped.append(Change(name=name, old=before.type, new=spec.type))
        if before.default != spec.default:
            result.defaults_changed.append(Change(name=name, old=before.default, new=spec.default))
    result.model_architectures_added = _added(old.model_architectures, new.model_architectures)
    result.model_architectures_removed = _added(new.model_architectures, old.model_architectures)
    result.self_drafting_architectures_added = _added(old.self_drafting_architectures, new.self_drafting_architectures)
    result.self_drafting_architectures_removed = _added(
        new.self_drafting_architectures, old.self_drafting_architectures
    )
    for name in _FACTS:
        before, after = getattr(old, name), getattr(new, name)
        if before != after:
            result.facts_changed.append(Change(name=name, old=before, new=after))
    if old.eagle3_target_supported != new.eagle3_target_supported:
        result.eagle3_target_supported = Change(
            name="eagle3_target_supported", old=old.eagle3_target_supported, new=new.eagle3_target_supported
        )
    return result
