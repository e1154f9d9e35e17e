"""`specprobe schema ENGINE` and `specprobe schema diff ENGINE OLD NEW`: parse, resolve, render."""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Annotated

import typer

from specprobe.cli._common import OutputOption, cannot_run_guard, use_color, write_output
from specprobe.findings import SpecprobeError

SCHEMA_FORMATS = ("text", "json", "jsonschema", "markdown")
DIFF_FORMATS = ("text", "json", "markdown")

SCHEMA_HELP = """Show what an engine version accepts for speculative decoding.

\b
  specprobe schema ENGINE [--python PATH] [--version V] [--field NAME] [--format F]
      ENGINE is vllm or sglang. vLLM: every field of SpeculativeConfig (the --speculative-config
      object); SGLang: every --speculative-* option. Where it comes from: --python PATH probes that
      interpreter; else $SPECPROBE_VLLM_PYTHON / $SPECPROBE_SGLANG_PYTHON; else this interpreter when
      the engine imports here; else the newest shipped snapshot (said on stderr). --version V alone
      serves the shipped snapshot of V. Live results are cached per interpreter and installed engine.
      Formats: text (tables), json, jsonschema (a JSON Schema document editors and the jsonschema
      library can use), markdown.
\b
  specprobe schema diff ENGINE OLD NEW [--format text|json|markdown]
      Methods and parameters added/removed, parameters retyped, defaults changed. OLD and NEW are
      snapshot versions, schema JSON files (from --format json), or `live` (the interpreter above).

Exit codes: 0 shown; 2 could not run (unknown engine or version, interpreter missing, engine not
installed there, probe crash or timeout).
"""


def _format(fmt: str | None, allowed: tuple[str, ...]) -> str:
    if fmt is None:
        # SPECPROBE_FORMAT is shared by all commands; a value this command has no use for is ignored.
        from_env = os.environ.get("SPECPROBE_FORMAT")
        return from_env if from_env in allowed else "text"
    if fmt not in allowed:
        raise SpecprobeError(f"unknown format {fmt!r}; choose one of: {', '.join(allowed)}")
    return fmt


def _show(
    engine: str,
    *,
    python: Path | None,
    version: str | None,
    field: str | None,
    fmt: str,
    output: Path | None,
    timeout: float,
    use_cache: bool,
) -> None:
    from specprobe.schema.live import resolve_schema

    resolution = resolve_schema(engine, python=python, version=version, timeout_s=timeout, use_cache=use_cache)
    schema = resolution.schema
    if resolution.note:
        typer.echo(f"specprobe: {resolution.note}", err=True)
    if field is not None and field not in schema.parameters:
        close = difflib.get_close_matches(field, list(schema.parameters), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise SpecprobeError(f"{engine} {schema.version} has no parameter {field!r}{hint}")
    color = use_color(output) and fmt == "text"
    if fmt == "json":
        payload = schema.parameters[field].to_dict() if field else schema.to_json_dict()
        text = json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
    elif fmt == "jsonschema":
        from specprobe.schema.jsonschema_export import to_json_schema

        document = to_json_schema(schema)
        text = json.dumps(document["properties"][field] if field else document, indent=2, ensure_ascii=False) + "\n"
    elif fmt == "markdown":
        from specprobe.schema.render import render_markdown

        text = render_markdown(schema)
    else:
        # rich is imported only for the table output.
        from specprobe.schema.render import render_field, render_text

        text = render_field(schema, field, color=color) if field else render_text(schema, color=color)
    write_output(text, output)


def _load_side(engine: str, side: str, python: Path | None, timeout: float) -> object:
    from specprobe.schema.live import resolve_schema, snapshot_or_fail
    from specprobe.schema.model import EngineSchema

    if side == "live":
        resolution = resolve_schema(engine, python=python, timeout_s=timeout)
        if resolution.schema.source != "live":
            raise SpecprobeError(f"no interpreter with {engine} for `live`; pass --python PATH")
        return resolution.schema
    path = Path(side)
    if side.endswith(".json") and path.is_file():
        try:
            loaded = EngineSchema.from_json(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise SpecprobeError(f"{side} is not a specprobe schema document: {str(exc).splitlines()[0]}") from None
        if loaded.engine != engine:
            raise SpecprobeError(f"{side} describes {loaded.engine}, not {engine}")
        return loaded
    return snapshot_or_fail(engine, side)


def _diff(args: list[str], python: Path | None, fmt: str, output: Path | None, timeout: float) -> None:
    from specprobe.schema.diff import diff_schemas
    from specprobe.schema.live import check_engine
    from specprobe.schema.model import EngineSchema
    from specprobe.schema.render import render_diff_markdown, render_diff_text

    if len(args) != 3:
        raise SpecprobeError("usage: specprobe schema diff ENGINE OLD NEW")
    engine, old_side, new_side = args
    check_engine(engine)
    old = _load_side(engine, old_side, python, timeout)
    new = _load_side(engine, new_side, python, timeout)
    assert isinstance(old, EngineSchema) and isinstance(new, EngineSchema)
    result = diff_schemas(old, new)
    if fmt == "json":
        text = json.dumps(result.to_json_dict(), indent=2, ensure_ascii=False) + "\n"
    elif fmt == "markdown":
        text = render_diff_markdown(result)
    else:
        text = render_diff_text(result)
    write_output(text, output)


def register(app: typer.Typer) -> None:
    """Add `specprobe schema` (and its `diff` form) to the app."""

    @app.command("schema", help=SCHEMA_HELP, short_help="Show (or diff) what an engine version accepts.")
    @cannot_run_guard
    def schema_command(  # noqa: PLR0917 - typer maps each parameter to an option
        engine: Annotated[str, typer.Argument(metavar="ENGINE|diff", help="vllm, sglang, or diff.")],
        rest: Annotated[
            list[str] | None, typer.Argument(metavar="[ENGINE OLD NEW]", help="With diff: ENGINE OLD NEW.")
        ] = None,
        python: Annotated[
            Path | None, typer.Option("--python", help="Interpreter that has the engine installed.")
        ] = None,
        version: Annotated[
            str | None, typer.Option("--version", help="Engine version; alone: serve its shipped snapshot.")
        ] = None,
        field: Annotated[str | None, typer.Option("--field", help="Show one parameter in full.")] = None,
        fmt: Annotated[
            str | None,
            typer.Option("--format", "-f", help="text, json, jsonschema, markdown (env SPECPROBE_FORMAT).",
                         show_default=False),
        ] = None,
        output: OutputOption = None,
        timeout: Annotated[
            float, typer.Option("--timeout", help="Seconds the engine probe may take.", min=1)
        ] = 300.0,
        no_cache: Annotated[bool, typer.Option("--no-cache", help="Probe again even when cached.")] = False,
    ) -> None:
        if engine == "diff":
            if version is not None or field is not None:
                raise SpecprobeError("schema diff takes ENGINE OLD NEW; --version and --field do not apply")
            _diff(list(rest or []), python, _format(fmt, DIFF_FORMATS), output, timeout)
            return
        if rest:
            raise SpecprobeError(f"unexpected argument(s): {' '.join(rest)}")
        _show(
            engine,
            python=python,
            version=version,
            field=field,
            fmt=_format(fmt, SCHEMA_FORMATS),
            output=output,
            timeout=timeout,
            use_cache=not no_cache,
        )
