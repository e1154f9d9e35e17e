"""SGLang: turns the probe's reply (``--speculative-*`` options, ``SpeculativeAlgorithm``) into an EngineSchema."""

from __future__ import annotations

from typing import Any

from specprobe.schema.families import group_methods
from specprobe.schema.model import CliFlag, EngineSchema, ParameterSpec

_BOOLEAN_ACTIONS = {"_StoreTrueAction", "_StoreFalseAction", "BooleanOptionalAction"}
_SCALAR_TYPES = {"int": "integer", "float": "number", "str": "string", "bool": "boolean"}


def option_type(option: dict[str, Any]) -> dict[str, Any]:
    """JSON Schema of one argparse option's value."""
    if option.get("action") in _BOOLEAN_ACTIONS:
        return {"type": "boolean"}
    kind = option.get("type")
    scalar: dict[str, Any] = {"type": _SCALAR_TYPES[kind]} if kind in _SCALAR_TYPES else {}
    if kind is None:
        # argparse hands the raw string through when no type is given.
        scalar = {"type": "string"}
    choices = option.get("choices")
    if choices:
        scalar = {**scalar, "enum": list(choices)}
    nargs = option.get("nargs")
    if nargs in ("+", "*") or isinstance(nargs, int):
        array: dict[str, Any] = {"type": "array", "items": scalar}
        if nargs == "+":
            array["minItems"] = 1
        elif isinstance(nargs, int):
            array.update({"minItems": nargs, "maxItems": nargs})
        return array
    return scalar


def schema_from_probe(reply: dict[str, Any]) -> EngineSchema:
    """Normalise the SGLang probe's JSON reply."""
    parameters: dict[str, ParameterSpec] = {}
    cli_flags: list[CliFlag] = []
    for option in reply.get("options") or []:
        flag = CliFlag.from_dict(option)
        cli_flags.append(flag)
        long_flags = [item for item in flag.flags if item.startswith("--")]
        parameters[flag.dest] = ParameterSpec(
            type=option_type(option),
            python_type=flag.type,
            default=flag.default,
            description=flag.help,
            internal=False,
            flag=long_flags[0] if long_flags else None,
            aliases=long_flags[1:],
            choices=list(flag.choices) if flag.choices else None,
        )
    algorithms = [str(name) for name in reply.get("algorithms") or []]
    reserved = [str(name) for name in reply.get("reserved_aliases") or [] if name not in algorithms]
    algorithm_option = parameters.get("speculative_algorithm")
    # Older releases list the accepted names as the option's choices and map aliases (NEXTN) in
    # ServerArgs: a choice that is no SpeculativeAlgorithm member is such an alias.
    for choice in (algorithm_option.choices or []) if algorithm_option else []:
        if isinstance(choice, str) and choice not in algorithms and choice not in reserved:
            reserved.append(choice)
    methods = algorithms + reserved
    provenance = dict(reply.get("provenance") or {})
    provenance["reserved_aliases_source"] = reply.get("reserved_aliases_source")
    provenance["draft_architectures_source"] = (
        "EntryClass of each sglang.srt.models module (the registry's source), draft/MTP class names"
    )
    return EngineSchema(
        engine="sglang",
        version=str(reply.get("version")),
        source="live",
        methods=methods,
        method_families=group_methods(methods),
        reserved_methods=reserved,
        parameters=parameters,
        draft_architectures=[str(arch) for arch in reply.get("draft_architectures") or []],
        eagle3_target_supported=None,
        cli_flags=cli_flags,
        model_architectures=[str(arch) for arch in reply.get("model_architectures") or []],
        self_drafting_architectures=[str(arch) for arch in reply.get("self_drafting_architectures") or []],
        auto_resolved_flags={
            str(algorithm).upper(): [str(flag) for flag in flags]
            for algorithm, flags in dict(reply.get("auto_resolved_flags") or {}).items()
        },
        eagle3_fc_inputs=reply.get("eagle3_fc_inputs"),
        eagle3_layer_prefixes=[str(prefix) for prefix in reply.get("eagle3_layer_prefixes") or []],
        provenance=provenance,
        problems=[str(problem) for problem in reply.get("problems") or []],
    )
