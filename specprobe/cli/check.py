"""`specprobe check`: parse the arguments, run the drafter checkpoint inspector, report."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from typing import TYPE_CHECKING, Annotated

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

if TYPE_CHECKING:
    from specprobe.findings import Report


def _fix_steps(draft: str, target: str | None) -> Callable[[Report], list[str]]:
    """The `specprobe fix --plan` next step, asked of the planner only when the run fails."""

    def steps(report: Report) -> list[str]:
        from specprobe.cli._next import check_steps

        return check_steps(draft, target)(report)

    return steps


def register(app: typer.Typer) -> None:
    """Add `specprobe check` to the app."""

    @app.command("check")
    @cannot_run_guard
    def check_command(  # noqa: PLR0917 - typer maps each parameter to an option
        draft_dir: Annotated[
            str,
            typer.Argument(
                help="The drafter: a folder (config.json + safetensors) or a hub id OWNER/NAME[@REVISION] "
                "(read by HTTP Range: config, headers, d2t/t2d; never the weights)."
            ),
        ],
        target: Annotated[
            str | None,
            typer.Option(
                "--target", help="Target folder, its config.json, or a hub id OWNER/NAME[@REVISION] (config.json only)."
            ),
        ] = None,
        engine: Annotated[
            str | None, typer.Option("--engine", help="vllm or sglang, optionally ==VERSION (default: newest of both).")
        ] = None,
        method: Annotated[
            str | None, typer.Option("--method", help="The speculative method to be served (eagle3).")
        ] = None,
        deep: Annotated[bool, typer.Option("--deep", help="Also read tensor data: NaN/Inf, all-zero tensors.")] = False,
        device: Annotated[
            str | None,
            typer.Option("--device", help="Where it is served: cpu adds vLLM's CPU-platform limits (head sizes, MLA)."),
        ] = None,
        exact: Annotated[
            bool,
            typer.Option(
                "--exact",
                help="Also run the engine release's own code (config, draft class on the meta device, load_weights "
                "on the header shapes) in its cached interpreter (specprobe engines install E==V).",
            ),
        ] = False,
        strict: StrictOption = False,
        fmt: FormatOption = None,
        output: OutputOption = None,
        config: ConfigOption = None,
        baseline: BaselineOption = None,
        update_baseline: UpdateBaselineOption = False,
        quiet: QuietOption = False,
    ) -> None:
        """Check a drafter checkpoint (EAGLE-3 formats) from its headers, without loading it."""
        from specprobe.cli._common import local_inputs
        from specprobe.config import exact_configured, hub_configured
        from specprobe.modelfiles import HubSession
        from specprobe.pipeline.check import run_check
        from specprobe.progress import progress

        # A hub id is no folder to look for a configuration beside: the working directory's applies.
        inputs = local_inputs([draft_dir])
        exact = exact or exact_configured(config, inputs)
        hub = HubSession(policy=hub_configured(config, inputs))
        with progress("exact mode: the release's own draft model code") if exact else nullcontext():
            report = run_check(
                draft_dir, target=target, engine=engine, method=method, deep=deep, device=device, exact=exact, hub=hub
            )
        emit(
            report,
            fmt,
            output,
            strict=strict,
            inputs=inputs,
            config=config,
            baseline=baseline,
            update_baseline=update_baseline,
            quiet=quiet,
            next_steps=_fix_steps(draft_dir, target),
        )
