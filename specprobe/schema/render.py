"""Human renderings of an EngineSchema and a SchemaDiff: text laid out at the terminal's width, and
Markdown."""

from __future__ import annotations

import json
from typing import Any

from specprobe.columns import wrap, wrap_block
from specprobe.schema.diff import SchemaDiff
from specprobe.schema.model import EngineSchema, ParameterSpec

ENGINE_TITLES = {"vllm": "vLLM", "sglang": "SGLang"}
_SCALARS = {"integer": "int", "number": "float", "string": "str", "boolean": "bool", "null": "None", "object": "dict"}
# Enumerations longer than this are summarised in tables ("one of 38 values"); --field lists them all.
_INLINE_CHOICES = 6


def type_text(schema: dict[str, Any], *, full: bool = False) -> str:
    """A compact Python-like spelling of a JSON Schema: ``int | None``, ``'greedy' | 'probabilistic'``."""
    if not schema:
        return "any"
    if "anyOf" in schema:
        return " | ".join(type_text(member, full=full) for member in schema["anyOf"])
    if "enum" in schema:
        values = [json.dumps(value).replace('"', "'") for value in schema["enum"]]
        if full or len(values) <= _INLINE_CHOICES:
            return " | ".join(values)
        return f"one of {len(values)} values"
    if "x-enum-names" in schema:
        names = schema["x-enum-names"]
        return " | ".join(names) if full or len(names) <= _INLINE_CHOICES else f"enum of {len(names)} names"
    if "x-python-type" in schema:
        return str(schema["x-python-type"]).rsplit(".", 1)[-1]
    kind = schema.get("type")
    if kind == "array":
        if "prefixItems" in schema:
            return "tuple[" + ", ".join(type_text(item, full=full) for item in schema["prefixItems"]) + "]"
        return f"list[{type_text(schema.get('items', {}), full=full)}]"
    if isinstance(kind, str):
        return _SCALARS.get(kind, kind)
    return json.dumps(schema)


def default_text(spec: ParameterSpec) -> str:
    if spec.required:
        return "(required)"
    return json.dumps(spec.default) if not isinstance(spec.default, str) else repr(spec.default)


def headline(schema: EngineSchema) -> str:
    title = ENGINE_TITLES.get(schema.engine, schema.engine)
    where = "live" if schema.source == "live" else "snapshot"
    return f"{title} {schema.version_label()} ({where})"


def provenance_text(schema: EngineSchema) -> str:
    """Where a schema came from, in one line."""
    facts = schema.provenance
    parts = [f"extracted {str(facts['extracted_at'])[:10]}"] if facts.get("extracted_at") else []
    if facts.get("same_surface_as"):
        parts.append(f"surface identical to {facts['same_surface_as']}")
    if facts.get("python"):
        parts.append(f"Python {facts['python']}")
    if facts.get("installed_by"):
        parts.append(str(facts["installed_by"]))
    return "; ".join(parts)


def fact_lines(schema: EngineSchema) -> list[str]:
    """The facts rules build on, one line each (only those the schema has)."""
    lines = []
    if schema.eagle3_fc_inputs or schema.eagle3_layer_prefixes:
        sizing = {"3": "3 x target hidden", "aux_layer_ids": "len(aux layer ids) x target hidden"}
        fc = sizing.get(schema.eagle3_fc_inputs or "", "unknown")
        prefixes = ", ".join(schema.eagle3_layer_prefixes) or "unknown"
        lines.append(f"Llama EAGLE-3 drafter: fc in-features {fc}; layer keys {prefixes}")
    if schema.auto_resolved_flags:
        resolved = "; ".join(f"{name}: {', '.join(flags)}" for name, flags in schema.auto_resolved_flags.items())
        lines.append(f"filled when unset: {resolved}")
    if schema.self_drafting_architectures:
        lines.append(f"draft path defaults to the target for: {', '.join(schema.self_drafting_architectures)}")
    if schema.cpu_attention_head_sizes is not None:
        lines.append(f"CPU attention head sizes: {', '.join(map(str, schema.cpu_attention_head_sizes))}")
    if schema.model_architectures:
        lines.append(f"model registry: {len(schema.model_architectures)} architectures")
    return lines


def _bold(text: str, color: bool) -> str:
    return f"\x1b[1m{text}\x1b[0m" if color else text


def render_text(schema: EngineSchema, *, color: bool = False, width: int | None = None, verbose: bool = False) -> str:
    """What a user asked first: the speculative methods by family, then the parameters a user sets
    (each its name, type, default and bound on one line, its description wrapped below), then the
    facts rules build on; the provenance in one line (all of it, the CLI flags and the internal
    parameters with ``verbose``). Laid out at ``width`` (None: not wrapped), as lists, so it reads at
    80 columns as well as at 200."""
    lines = [_bold(headline(schema), color)]
    provenance = provenance_text(schema)
    if verbose:
        lines += wrap(provenance, width, hang="    ")
    else:
        first = provenance.split("; ", 1)[0]
        lines.append(f"{first} (--verbose: how it was read)" if first else "(--verbose: how it was read)")
    lines += ["", _bold("Speculative methods", color)]
    for family, members in schema.method_families.items():
        lines += wrap(", ".join(members), width, indent=f"  {family}: ", hang="      ")
    if schema.reserved_methods:
        lines += wrap(", ".join(schema.reserved_methods), width, indent="  reserved aliases: ", hang="      ")
    # SGLang users type the flag; vLLM users write the key inside --speculative-config.
    by_flag = schema.engine == "sglang"
    title = "Parameters (flags)" if by_flag else "Parameters (--speculative-config keys)"
    lines += ["", _bold(title, color)]
    for name, spec in schema.user_parameters().items():
        shown = spec.flag if by_flag and spec.flag else name
        head = f"{shown}: {type_text(spec.type)} = {default_text(spec)}"
        constraint = spec.constraint_text()
        lines += wrap(head + (f" ({constraint})" if constraint else ""), width, indent="  ", hang="      ")
        summary = spec.summary()
        if summary:
            lines += wrap(summary, width, indent="      ")
    facts = fact_lines(schema)
    if schema.eagle3_target_supported is not None:
        facts.append(f"EAGLE-3 targets gated by model_type: {', '.join(schema.eagle3_target_supported)}")
    if schema.draft_architectures:
        facts.append(f"draft architectures in the model registry: {len(schema.draft_architectures)}")
    if verbose:
        internal = [name for name, spec in schema.parameters.items() if spec.internal]
        if internal:
            facts.append(f"set by the engine itself (not user-settable): {', '.join(internal)}")
        flags = [flag for entry in schema.cli_flags for flag in entry.flags]
        if flags:
            facts.append(f"CLI flags: {', '.join(flags)}")
    if facts:
        lines += ["", _bold("What the rules read", color)]
        for fact in facts:
            lines += wrap(fact, width, indent="  ", hang="      ")
    for problem in schema.problems:
        lines += wrap(f"not extracted: {problem}", width, hang="    ")
    return "\n".join(lines) + "\n"


def render_field(schema: EngineSchema, name: str, *, color: bool = False, width: int | None = None) -> str:
    """One parameter in full: every attribute and the whole description."""
    spec = schema.parameters[name]
    lines = [f"{_bold(name, color)}  ({headline(schema)})"]
    rows: list[tuple[str, str]] = [
        ("type", type_text(spec.type, full=True)),
        ("declared as", spec.python_type or ""),
        ("default", default_text(spec)),
        ("constraints", spec.constraint_text() or "none"),
        ("internal", "yes (set by the engine)" if spec.internal else "no"),
        ("flag", ", ".join([spec.flag, *spec.aliases]) if spec.flag else "none"),
        ("JSON Schema", json.dumps(spec.type)),
    ]
    for label, value in rows:
        lines += wrap(value, width, indent=f"{label:>12}  ", hang=" " * 14)
    lines.append("")
    lines += wrap_block(spec.description or "(no description)", width)
    return "\n".join(lines) + "\n"


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(schema: EngineSchema) -> str:
    lines = [f"# {headline(schema)}", "", provenance_text(schema), "", "## Speculative methods", ""]
    lines += ["| family | methods |", "|---|---|"]
    lines += [f"| {family} | {_md_cell(', '.join(members))} |" for family, members in schema.method_families.items()]
    lines += ["", "## Parameters", "", "| parameter | type | default | constraint | description |"]
    lines.append("|---|---|---|---|---|")
    for name, spec in schema.user_parameters().items():
        cells = [f"`{name}`", type_text(spec.type), default_text(spec), spec.constraint_text(), spec.summary()]
        lines.append("| " + " | ".join(_md_cell(cell) for cell in cells) + " |")
    if schema.eagle3_target_supported is not None:
        lines += ["", f"EAGLE-3 targets gated by model_type: {', '.join(schema.eagle3_target_supported)}"]
    if schema.draft_architectures:
        lines += ["", "## Draft architectures", "", ", ".join(f"`{arch}`" for arch in schema.draft_architectures)]
    return "\n".join(lines) + "\n"


def _diff_sections(result: SchemaDiff) -> list[tuple[str, list[str]]]:
    return [
        ("methods added", result.methods_added),
        ("methods removed", result.methods_removed),
        ("parameters added", result.parameters_added),
        ("parameters removed", result.parameters_removed),
        (
            "parameters retyped",
            [f"{item.name}: {type_text(item.old)} -> {type_text(item.new)}" for item in result.parameters_retyped],
        ),
        (
            "defaults changed",
            [f"{item.name}: {json.dumps(item.old)} -> {json.dumps(item.new)}" for item in result.defaults_changed],
        ),
        ("draft architectures added", result.draft_architectures_added),
        ("draft architectures removed", result.draft_architectures_removed),
        ("CLI flags added", result.cli_flags_added),
        ("CLI flags removed", result.cli_flags_removed),
        ("model architectures added", result.model_architectures_added),
        ("model architectures removed", result.model_architectures_removed),
        ("self-drafting targets added", result.self_drafting_architectures_added),
        ("self-drafting targets removed", result.self_drafting_architectures_removed),
        (
            "facts changed",
            [f"{item.name}: {json.dumps(item.old)} -> {json.dumps(item.new)}" for item in result.facts_changed],
        ),
        (
            "EAGLE-3 target gate",
            [f"{result.eagle3_target_supported.old} -> {result.eagle3_target_supported.new}"]
            if result.eagle3_target_supported
            else [],
        ),
    ]


def render_diff_text(result: SchemaDiff, width: int | None = None) -> str:
    title = ENGINE_TITLES.get(result.engine, result.engine)
    lines = [f"{title} {result.old} -> {result.new}"]
    if result.empty:
        lines.append("no differences")
    for label, items in _diff_sections(result):
        if items:
            lines.append(f"{label} ({len(items)}):")
            for item in items:
                lines += wrap(item, width, indent="  ", hang="      ")
    return "\n".join(lines) + "\n"


def render_diff_markdown(result: SchemaDiff) -> str:
    title = ENGINE_TITLES.get(result.engine, result.engine)
    lines = [f"# {title} {result.old} -> {result.new}", ""]
    if result.empty:
        lines.append("No differences.")
    for label, items in _diff_sections(result):
        if items:
            lines += [f"## {label[0].upper()}{label[1:]}", ""] + [f"- `{item}`" for item in items] + [""]
    return "\n".join(lines) + "\n"
