"""`specprobe gate PATH... | gate -- LAUNCH...`: one pre-deploy gate over the deployment files a team has."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from specprobe.cli._common import (
    BaselineOption,
    ConfigOption,
    FormatOption,
    OutputOption,
    QuietOption,
    SarifLevelOption,
    UpdateBaselineOption,
    cannot_run_guard,
    emit,
)

if TYPE_CHECKING:
    from specprobe.deploy.model import Deployment
    from specprobe.engines.spec import EngineSpec
    from specprobe.findings import Report


class FailOn(StrEnum):
    """The mildest severity that fails the gate (exit 1)."""

    ERROR = "error"
    WARNING = "warning"


@cannot_run_guard
def _gate(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            help="Deployment files or folders (Kubernetes, compose, shell script, vLLM --config YAML, "
            "specprobe manifest YAML/TOML), or a launch command after --.",
            show_default=False,
        ),
    ] = None,
    *,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            "-e",
            help="Engine version to judge the deployments of that engine by, e.g. vllm==0.34.0: will they "
            "start on it? (over the image tag and the live install; a specprobe manifest's own pin stays).",
        ),
    ] = None,
    fmt: FormatOption = None,
    output: OutputOption = None,
    fail_on: Annotated[
        FailOn,
        typer.Option(
            "--fail-on",
            help="Fail (exit 1) on errors only, or on warnings too. With fail-on also in [tool.specprobe], "
            "the stricter of the two applies.",
        ),
    ] = FailOn.ERROR,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="Warnings fail the run too (exit 1), and what could not be examined here is a warning.",
        ),
    ] = False,
    config: ConfigOption = None,
    baseline: BaselineOption = None,
    update_baseline: UpdateBaselineOption = False,
    sarif_level: SarifLevelOption = None,
    stdin_filename: Annotated[
        str | None,
        typer.Option(
            "--stdin-filename",
            help="Name for the input read from `-` (stdin): used in locations, and its name tells the form "
            "(Dockerfile, serve.sh, deploy.yaml).",
        ),
    ] = None,
    exact: Annotated[
        bool,
        typer.Option(
            "--exact",
            help="Also run each vLLM or SGLang release's own draft model code on its drafter (docs/exact.md).",
        ),
    ] = False,
    smoke: Annotated[
        bool,
        typer.Option(
            "--smoke",
            help="Also measure acceptance where a deployment names a server url, or a device with local "
            "target and drafter (thresholds from the manifest's smoke table).",
        ),
    ] = False,
    fix_plan: Annotated[
        bool,
        typer.Option(
            "--fix-plan", help="Also list, per deployment, the `specprobe fix` command that repairs its drafter."
        ),
    ] = False,
    quiet: QuietOption = False,
) -> None:
    """Gate deployments before they ship: lint each launch, check each local drafter (with its target),
    and add the compatibility-matrix verdicts; what cannot be examined here is reported."""
    from specprobe.deploy.argv import looks_like_serve_command
    from specprobe.engines.spec import parse_optional_engine_spec
    from specprobe.findings import Finding, SpecprobeError
    from specprobe.pipeline.gate import gate_deployments, load_paths

    given = list(paths or [])
    if not given:
        raise SpecprobeError("give deployment files, or a launch command after --")
    spec = parse_optional_engine_spec(engine, allow_range=False)
    # The inputs are read once: gate, exact mode and the fix plan look at the same deployments (stdin
    # included, which cannot be read twice).
    if looks_like_serve_command(given) and not Path(given[0]).exists():
        from specprobe.deploy.model import deployment_from_argv

        deployments, notes, files = [deployment_from_argv(given)], list[Finding](), list[str]()
    else:
        (deployments, notes), files = load_paths(given, stdin_filename=stdin_filename), given
    measure = None
    if smoke:
        from specprobe.smoke.deployment import smoke_findings

        measure = smoke_findings
    from specprobe.config import exact_configured, hub_configured
    from specprobe.modelfiles import HubSession

    # One hub reader for the run: each repository the deployments name is read once, gate and exact alike.
    hub = HubSession(policy=hub_configured(config, [Path(p) for p in given if Path(p).exists()]))
    report = gate_deployments(
        deployments, engine=spec, strict=strict, files=files, extra_findings=notes, measure=measure, hub=hub
    )
    if exact or exact_configured(config, [Path(p) for p in given]):
        from specprobe.pipeline.exact import exact_for_deployments
        from specprobe.progress import progress

        with progress("exact mode: each release's own draft model code"):
            exact_for_deployments(report, deployments, spec, hub=hub)
    if fix_plan:
        from specprobe.fix.gate import fix_plan_findings

        planned = fix_plan_findings(deployments, spec)
        report.extend(planned)
        if not planned:
            report.next_steps.append(
                "fix-plan: no deployment has a local drafter that `specprobe fix` can repair for its release"
            )
    emit(
        report,
        fmt,
        output,
        strict=strict or fail_on is FailOn.WARNING,
        inputs=[Path(p) for p in given],
        config=config,
        baseline=baseline,
        update_baseline=update_baseline,
        sarif_level=sarif_level,
        quiet=quiet,
        next_steps=None if fix_plan else _fix_steps(deployments, spec),
    )


def _fix_steps(deployments: list[Deployment], spec: EngineSpec | None) -> Callable[[Report], list[str]]:
    """The `specprobe fix --plan` next steps, asked of the planner only when the gate fails."""

    def steps(report: Report) -> list[str]:
        from specprobe.cli._next import gate_steps

        return gate_steps(deployments, spec)(report)

    return steps


def register(app: typer.Typer) -> None:
    """Add `specprobe gate` to the app."""
    app.command("gate", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(_gate)
