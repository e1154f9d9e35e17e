"""`specprobe lint -- vllm serve ... | python -m sglang.launch_server ...`: check a serve command before running it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from specprobe.cli._common import (
    BaselineOption,
    ConfigOption,
    FormatOption,
    OutputOption,
    QuietOption,
    StrictOption,
    UpdateBaselineOption,
    cannot_run_guard,
    emit,
)


@cannot_run_guard
def _lint(
    command: Annotated[
        list[str] | None, typer.Argument(help="The serve command, after --.", show_default=False)
    ] = None,
    *,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine", "-e", help="Engine version to lint against, e.g. vllm==0.33.0 (default: newest snapshot)."
        ),
    ] = None,
    device: Annotated[
        str | None,
        typer.Option("--device", help="Where it is served: cpu adds vLLM's CPU-platform limits (head sizes, MLA)."),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Also run the engine's own configuration code on the command in the engine's interpreter "
            "(offline, no workers started).",
        ),
    ] = False,
    python: Annotated[
        Path | None,
        typer.Option("--python", help="Interpreter with the engine installed, for --dry-run.", dir_okay=False),
    ] = None,
    timeout: Annotated[
        float, typer.Option("--dry-run-timeout", help="Seconds the --dry-run may take.", min=1.0)
    ] = 300.0,
    exact: Annotated[
        bool,
        typer.Option(
            "--exact", help="Also run the vLLM or SGLang release's own draft model code on the drafter (docs/exact.md)."
        ),
    ] = False,
    fmt: FormatOption = None,
    output: OutputOption = None,
    strict: StrictOption = False,
    config: ConfigOption = None,
    baseline: BaselineOption = None,
    update_baseline: UpdateBaselineOption = False,
    quiet: QuietOption = False,
) -> None:
    """Lint a `vllm serve` or `sglang.launch_server` command against the engine's schema snapshot and the
    compatibility matrix; with --dry-run also against the engine's own configuration code (nothing is
    served or downloaded)."""
    from specprobe.config import hub_configured
    from specprobe.modelfiles import HubSession
    from specprobe.pipeline.gate import lint_command

    argv = list(command or [])
    # One hub reader for the run: the drafter and target it names are read once, lint and exact alike.
    hub = HubSession(policy=hub_configured(config, []))
    if not dry_run:
        report = lint_command(argv, engine=engine, strict=strict, device=device, hub=hub)
    else:
        from specprobe.engines._probe import release_of
        from specprobe.pipeline.dryrun import findings, run_dry_run
        from specprobe.progress import progress

        with progress("dry run in the engine's interpreter"):
            result = run_dry_run(argv, python=python, device=device, timeout_s=timeout)
        # The interpreter's own version is the one to lint against, and a CPU build serves on CPU only.
        release = release_of(result.version)
        report = lint_command(
            argv,
            engine=engine or (f"{result.engine}=={release}" if release else None),
            strict=strict,
            device=device or ("cpu" if result.cpu_build else None),
            hub=hub,
        )
        report.extend(findings(result))
        report.extra["dry_run"] = result.to_json_dict()
    from specprobe.config import exact_configured

    if exact or exact_configured(config, []):
        from specprobe.deploy.model import deployment_from_argv
        from specprobe.engines.spec import parse_optional_engine_spec
        from specprobe.pipeline.exact import exact_for_deployments
        from specprobe.progress import progress

        deployment = deployment_from_argv(argv)
        with progress("exact mode: the release's own draft model code"):
            exact_for_deployments(report, [deployment], parse_optional_engine_spec(engine, allow_range=False), hub=hub)
    emit(
        report,
        fmt,
        output,
        strict=strict,
        config=config,
        baseline=baseline,
        update_baseline=update_baseline,
        quiet=quiet,
    )


def register(app: typer.Typer) -> None:
    """Add `specprobe lint` to the app."""
    app.command(
        "lint",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )(_lint)
