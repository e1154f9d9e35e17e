"""`specprobe matrix`: the compatibility matrix, whole or for one pairing; `matrix record` adds a smoke run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from specprobe.cli._common import (
    OutputOption,
    StrictOption,
    cannot_run_guard,
    emit,
    format_option,
    report_width,
    use_color,
    write_output,
)
from specprobe.findings import ExitCode, Finding, Report, SpecprobeError, exit_code

MATRIX_FORMATS = ("text", "json", "markdown")

MatrixFormatOption = Annotated[str | None, format_option(MATRIX_FORMATS)]

EngineOption = Annotated[
    str | None, typer.Option("--engine", "-e", help="vllm or sglang, optionally ==VERSION (e.g. vllm==0.16.0).")
]
MethodOption = Annotated[str | None, typer.Option("--method", "-m", help="Speculative method (eagle3, eagle, mtp...).")]
TargetOption = Annotated[
    str | None, typer.Option("--target", "-t", help="Target model folder, config.json or hub id (config.json only).")
]
DraftOption = Annotated[
    str | None, typer.Option("--draft", "-d", help="Drafter checkpoint folder or hub id OWNER/NAME[@REVISION].")
]
FeatureOption = Annotated[
    list[str] | None,
    typer.Option(
        "--feature",
        help="Serving feature in use (repeatable): lora, min_p, logit_bias, pipeline_parallel, "
        "structured_output, eagle_topk_gt_1, long_context, multi_layer_draft, cpu.",
    ),
]
MatrixFileOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--matrix",
        help="Extra matrix YAML file (repeatable), e.g. one written by `matrix record`.",
        exists=False,
        dir_okay=False,
    ),
]


def _format(fmt: str | None) -> str:
    from specprobe.cli._common import resolve_format

    # markdown is the matrix's own rendering (table or verdicts); text and json go through emit.
    return resolve_format(fmt, MATRIX_FORMATS)


def _entries(extra: list[Path] | None) -> list[object]:
    from specprobe.compat.loader import load_matrix

    for path in extra or []:
        if not path.is_file():
            raise SpecprobeError(f"matrix file {path} does not exist")
    return list(load_matrix(extra=extra or []))


@cannot_run_guard
def _matrix(
    ctx: typer.Context,
    *,
    engine: EngineOption = None,
    method: MethodOption = None,
    target: TargetOption = None,
    draft: DraftOption = None,
    feature: FeatureOption = None,
    matrix: MatrixFileOption = None,
    fmt: MatrixFormatOption = None,
    output: OutputOption = None,
    strict: StrictOption = False,
) -> None:
    """Known drafter x target x engine-version pairings. Without filters: the whole matrix. With
    filters: what applies to this pairing (exit 1 when an applicable entry fails at error severity)."""
    if ctx.invoked_subcommand is not None:
        return
    from specprobe.compat import render
    from specprobe.compat.evaluate import evaluate
    from specprobe.compat.model import Entry
    from specprobe.compat.subjects import build_pairing, classify_draft, classify_target, parse_features
    from specprobe.rules.compat import matrix_findings

    chosen = _format(fmt)
    entries = [e for e in _entries(matrix) if isinstance(e, Entry)]
    if not any((engine, method, target, draft, feature)):
        if chosen == "markdown":
            write_output(render.render_markdown(entries), output)
            raise typer.Exit(int(ExitCode.OK))
        if chosen == "text":
            write_output(render.render_table(entries, color=use_color(output), width=report_width(output)), output)
            raise typer.Exit(int(ExitCode.OK))
        report = Report(command="matrix", extra={"entries": render.entries_json(entries)})
        emit(report, chosen, output, strict=strict)
        return
    features = parse_features(feature)
    target_info = classify_target(target) if target else None
    draft_info = classify_draft(draft) if draft else None
    # A range (vllm>=0.16,<0.20) is evaluated at every shipped snapshot in it; the worst verdict wins.
    engine_labels: list[str | None] = [engine]
    if engine is not None:
        from specprobe.engines.spec import parse_engine_spec
        from specprobe.pipeline.check import engine_versions

        spec = parse_engine_spec(engine)
        if spec.is_range:
            engine_labels = [f"{name}=={version}" for name, version in engine_versions(spec)]
    pairings = [
        build_pairing(engine=label, method=method, target=target_info, draft=draft_info, features=features)
        for label in engine_labels
    ]
    pairing = pairings[0]
    internal: list[Finding] = []
    from specprobe.rules.internal import guarded

    # A bug in the evaluation is an INTERNAL-ERROR finding (exit 2), never a pass.
    judged, crash = guarded("the compatibility matrix", lambda: [(each, evaluate(entries, each)) for each in pairings])
    evaluated = judged or []
    if crash is not None:
        internal.append(crash)
    verdicts = [verdict for _, found in evaluated for verdict in found]
    subject: dict[str, str | None] = {
        "engine": engine if len(pairings) > 1 else pairing.engine_label,
        "method": pairing.method,
        "target": target,
        "target_model_type": ",".join(target_info.model_types) if target_info else None,
        "target_attention": ",".join(sorted(k.value for k in target_info.traits)) if target_info else None,
        "draft": draft,
        "draft_format": draft_info.format if draft_info else None,
        "draft_architecture": draft_info.architecture if draft_info else None,
        "features": ",".join(sorted(features)) if features else None,
    }
    report = Report(command="matrix", subject=subject, extra={"entries": render.verdicts_json(verdicts)})
    report.extend(internal)
    for each, found in evaluated:
        prefix = f"{each.engine_label}: " if len(pairings) > 1 else ""
        report.extend(matrix_findings(each, found, prefix=prefix, method_named=True, definite_only=False))
    if chosen == "markdown":
        label = ", ".join(f"{k}={v}" for k, v in subject.items() if v)
        write_output(render.render_verdicts_markdown(verdicts, label), output)
        raise typer.Exit(int(exit_code(report, strict=strict)))
    emit(report, chosen, output, strict=strict)


@cannot_run_guard
def _record(
    smoke_result: Annotated[
        Path, typer.Argument(help="JSON written by `specprobe smoke --format json`.", dir_okay=False)
    ],
    *,
    target: Annotated[
        str | None, typer.Option("--target", "-t", help="Target folder/config.json (default: the run's subject).")
    ] = None,
    draft: Annotated[
        str | None, typer.Option("--draft", "-d", help="Drafter folder (default: the run's subject).")
    ] = None,
    entry_id: Annotated[str | None, typer.Option("--id", help="Entry id (default: derived from the subject).")] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            dir_okay=False,
            help="Matrix YAML file to add the entry to (created if missing); stdout otherwise.",
        ),
    ] = None,
) -> None:
    """Turn a smoke run's JSON into a matrix entry with its measured acceptance as evidence."""
    from specprobe.compat.record import load_smoke_json, matrix_document, merge_into, record_entry, recorded_subjects

    data = load_smoke_json(smoke_result)
    target_info, draft_info = recorded_subjects(data, smoke_name=smoke_result.name, target=target, draft=draft)
    entry = record_entry(data, smoke_name=str(smoke_result), target=target_info, draft=draft_info, entry_id=entry_id)
    if output is None:
        write_output(matrix_document([entry], "Measured pairings recorded with `specprobe matrix record`."), None)
    else:
        existing = output.read_text(encoding="utf-8") if output.is_file() else None
        write_output(merge_into(existing, entry), output)
    typer.echo(f"specprobe matrix record: {entry.id}: {entry.status.value} ({entry.severity.value})", err=True)


def register(app: typer.Typer) -> None:
    """Add `specprobe matrix` (and `specprobe matrix record`) to the app."""
    group = typer.Typer(
        name="matrix",
        invoke_without_command=True,
        no_args_is_help=False,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        help="Known drafter x target x engine-version pairings, with evidence.",
    )
    group.callback()(_matrix)
    group.command("record")(_record)
    app.add_typer(group, name="matrix")
