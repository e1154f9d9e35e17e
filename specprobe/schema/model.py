"""EngineSchema: what one engine version accepts for speculative decoding, live or from a snapshot.

One model serves vLLM (fields of ``SpeculativeConfig``) and SGLang (``--speculative-*`` options); the
JSON form is the fixed contract of ``specprobe schema --format json``.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field

Engine = Literal["vllm", "sglang"]
ENGINES: tuple[str, ...] = ("vllm", "sglang")


class ParameterSpec(BaseModel):
    """One setting the engine accepts: a SpeculativeConfig field (vLLM) or a CLI option (SGLang)."""

    type: dict[str, Any] = Field(default_factory=dict, description="JSON Schema of the value")
    python_type: str | None = Field(default=None, description="the annotation as the engine declares it")
    default: Any = None
    required: bool = False
    description: str = ""
    internal: bool = Field(default=False, description="set by the engine itself, not by users")
    flag: str | None = Field(default=None, description="the CLI option that sets it, when there is one")
    aliases: list[str] = Field(default_factory=list, description="further CLI spellings of the same option")
    choices: list[Any] | None = None
    constraints: dict[str, float] = Field(default_factory=dict, description="gt/ge/lt/le bounds")

    def constraint_text(self) -> str:
        """Bounds as a short human string, e.g. ``> 0`` or ``>= 1, <= 8``."""
        symbols = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
        return ", ".join(f"{symbols[key]} {value:g}" for key, value in self.constraints.items() if key in symbols)

    def summary(self) -> str:
        """The first sentence of the description, on one line."""
        text = " ".join(self.description.split())
        match = re.match(r"(.+?[.!?])(\s|$)", text)
        return match.group(1) if match else text


class CliFlag(BaseModel):
    """A speculative-decoding option of the engine's own argument parser."""

    flags: list[str]
    dest: str
    type: str | None = None
    choices: list[Any] | None = None
    default: Any = None
    help: str = ""
    nargs: str | int | None = None
    action: str | None = None


class EngineSchema(BaseModel):
    """Everything specprobe knows about one engine version's speculative-decoding surface."""

    engine: Engine
    version: str
    source: Literal["live", "snapshot"] = "live"
    methods: list[str] = Field(default_factory=list, description="accepted method names, declaration order")
    method_families: dict[str, list[str]] = Field(default_factory=dict)
    reserved_methods: list[str] = Field(
        default_factory=list, description="names the engine maps onto another method (SGLang NEXTN -> EAGLE)"
    )
    parameters: dict[str, ParameterSpec] = Field(default_factory=dict)
    draft_architectures: list[str] = Field(default_factory=list)
    eagle3_target_supported: list[str] | None = None
    cli_flags: list[CliFlag] = Field(default_factory=list)
    provenance: dict[str, Any] = Field(default_factory=dict)
    problems: list[str] = Field(
        default_factory=list, description="parts the probe could not extract; the rest is still valid"
    )

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
        return self.model_dump(mode="json")
