"""A standard JSON Schema (2020-12) document for what an engine version accepts.

vLLM: the ``--speculative-config`` object (user-settable SpeculativeConfig fields; unknown keys are
rejected, as SpeculativeConfig's constructor does). SGLang: the ``--speculative-*`` options keyed by
their argparse destination (what a ``--config`` file or ``ServerArgs(**kwargs)`` takes).
"""

from __future__ import annotations

from typing import Any

from specprobe.schema.model import EngineSchema, ParameterSpec

DIALECT = "https://json-schema.org/draft/2020-12/schema"
_BOUND_KEYWORDS = {"gt": "exclusiveMinimum", "ge": "minimum", "lt": "exclusiveMaximum", "le": "maximum"}


def _accepts_null(schema: dict[str, Any]) -> bool:
    if schema.get("type") == "null" or not schema:
        return True
    return any(_accepts_null(member) for member in schema.get("anyOf", []))


def _enum_names(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with each Python enum's member names (``x-enum-names``, what the engine's argument
    parser accepts) also stated as a standard ``enum``, so that a validator enforces them."""
    copied = dict(schema)
    if "x-enum-names" in copied and "enum" not in copied:
        copied["enum"] = list(copied["x-enum-names"])
    if isinstance(copied.get("anyOf"), list):
        copied["anyOf"] = [_enum_names(member) if isinstance(member, dict) else member for member in copied["anyOf"]]
    return copied


def property_schema(spec: ParameterSpec) -> dict[str, Any]:
    """One parameter's JSON Schema with its bounds, description and default folded in."""
    schema: dict[str, Any] = _enum_names(spec.type)
    for bound, keyword in _BOUND_KEYWORDS.items():
        if bound in spec.constraints:
            # Numeric keywords ignore non-numbers, so a bound on ``int | None`` still lets null through.
            schema[keyword] = spec.constraints[bound]
    if spec.description:
        schema["description"] = spec.description
    if spec.default is not None or _accepts_null(spec.type):
        schema["default"] = spec.default
    if spec.flag:
        schema["x-cli-flag"] = spec.flag
    return schema


def to_json_schema(schema: EngineSchema) -> dict[str, Any]:
    """The JSON Schema document for ``schema``'s user-settable parameters."""
    properties = {name: property_schema(spec) for name, spec in schema.user_parameters().items()}
    if schema.engine == "vllm":
        title = f"vLLM {schema.version} --speculative-config"
        description = (
            f"The JSON object of `vllm serve --speculative-config` (vllm.config.SpeculativeConfig) in vLLM "
            f"{schema.version}, extracted by specprobe ({schema.source})."
        )
    else:
        title = f"SGLang {schema.version} speculative-decoding server arguments"
        description = (
            f"The --speculative-* options of SGLang {schema.version} (ServerArgs), keyed by argument name, "
            f"extracted by specprobe ({schema.source})."
        )
    return {
        "$schema": DIALECT,
        "title": title,
        "description": description,
        "type": "object",
        "properties": properties,
        "required": [name for name, spec in schema.user_parameters().items() if spec.required],
        "additionalProperties": False,
        "x-engine": schema.engine,
        "x-engine-version": schema.version,
        "x-methods": list(schema.methods),
    }
