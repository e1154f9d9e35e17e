"""Human renderings of an EngineSchema and a SchemaDiff: rich text tables and Markdown."""

from __future__ import annotations

import io
import json
import shutil
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

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


def _console(buffer: io.StringIO, color: bool) -> Console:
    # A terminal gets its own width; files and pipes a fixed one, so that output is reproducible.
    width = shutil.get_terminal_size((140, 24)).columns if color else 140
    return Console(file=buffer, width=width, force_terminal=color, no_color=not color, highlight=False, soft_wrap=False)


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


def render_text(schema: EngineSchema, *, color: bool = False) -> str:
    """Methods by family and the user-settable parameters, as rich tables."""
    buffer = io.StringIO()
    console = _console(buffer, color)
    console.print(f"[bold]{escape(headline(schema))}[/bold]")
    console.print(f"[dim]{escape(provenance_text(schema))}[/dim]")
    methods = Table(title="Speculative methods by family", title_justify="left", show_lines=False)
    methods.add_column("family", style="cyan", no_wrap=True)
    methods.add_column("methods (declaration order)")
    for family, members in schema.method_families.items():
        methods.add_row(family, escape(", ".join(members)))
    console.print(methods)
    if schema.reserved_methods:
        console.print(f"reserved aliases: {escape(', '.join(schema.reserved_methods))}")
    for line in fact_lines(schema):
        console.print(escape(line))
    params = Table(title="User-settable parameters", title_justify="left")
    # SGLang users type the flag; vLLM users write the key inside --speculative-config.
    by_flag = schema.engine == "sglang"
    params.add_column("option" if by_flag else "parameter", style="cyan", no_wrap=True)
    params.add_column("type")
    params.add_column("default")
    params.add_column("constraint", no_wrap=True)
    params.add_column("description")
    for name, spec in schema.user_parameters().items():
        params.add_row(
            escape(spec.flag if by_flag and spec.flag else name),
            escape(type_text(spec.type)),
            escape(default_text(spec)),
            escape(spec.constraint_text()),
            escape(spec.summary()),
        )
    console.print(params)
    internal = [name for name, spec in schema.parameters.items() if spec.internal]
    if internal:
        console.print(f"set by the engine itself (not user-settable): {escape(', '.join(internal))}")
    if schema.eagle3_target_supported is not None:
        console.print(
            f"EAGLE-3 targets gated by model_type: {escape(', '.join(schema.eagle3_target_supported))}"
        )
    if schema.draft_architectures:
        console.print(f"draft architectures in the model registry: {len(schema.draft_architectures)}")
    flags = [flag for entry in schema.cli_flags for flag in entry.flags]
    if flags:
        console.print(f"CLI flags: {escape(', '.join(flags))}")
    for problem in schema.problems:
        console.print(f"[yellow]not extracted:[/yellow] {escape(problem)}")
    return buffer.getvalue()


def render_field(schema: EngineSchema, name: str, *, color: bool = False) -> str:
    """One parameter in full: every attribute and the whole description."""
    spec = schema.parameters[name]
    buffer = io.StringIO()
    console = _console(buffer, color)
    console.print(f"[bold]{escape(name)}[/bold]  ({escape(headline(schema))})")
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
        console.print(f"[cyan]{label:>12}[/cyan]  {escape(value)}")
    console.print()
    console.print(escape(spec.description or "(no description)"))
    return buffer.getvalue()


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


def render_diff_text(result: SchemaDiff) -> str:
    title = ENGINE_TITLES.get(result.engine, result.engine)
    lines = [f"{title} {result.old} -> {result.new}"]
    if result.empty:
        lines.append("no differences")
    for label, items in _diff_sections(result):
        if items:
            lines.append(f"{label} ({len(items)}):")
            lines += [f"  {item}" for item in items]
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
