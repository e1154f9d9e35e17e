"""`specprobe smoke`: measure the real acceptance of a drafter (reference backend or a live server).

torch and transformers are imported inside the library calls, never at module level, so that
`specprobe --help` stays light.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from specprobe.cli._common import FormatOption, OutputOption, StrictOption, cannot_run_guard, emit
from specprobe.findings import SpecprobeError

# The default of --max-target-tensor-bytes: specprobe.checkpoint.tensors.DEFAULT_MAX_TENSOR_BYTES, written
# out here so that `smoke --help` imports no reader (a test keeps the two equal).
DEFAULT_MAX_TENSOR_BYTES = 4 * 1024**3


class Backend(StrEnum):
    REFERENCE = "reference"
    SERVER = "server"


class Api(StrEnum):
    COMPLETIONS = "completions"
    CHAT = "chat"


def register(app: typer.Typer) -> None:
    """Add `specprobe smoke` to the app."""
    # Everything after `--` is the engine's launch command (smoke --serve), passed through untouched.
    app.command("smoke", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(smoke)


@cannot_run_guard
def smoke(
    command: Annotated[
        list[str] | None,
        typer.Argument(help="With --serve: the engine's launch command, after --.", show_default=False),
    ] = None,
    *,
    serve: Annotated[
        bool,
        typer.Option(
            "--serve",
            help="Start the engine from the launch command after --, measure it, stop it, and compare it with "
            "the reference backend when target and draft are local folders.",
        ),
    ] = False,
    python: Annotated[
        str | None,
        typer.Option(
            "--python",
            help="The engine's interpreter for --serve (default: SPECPROBE_VLLM_CPU_PYTHON / SPECPROBE_VLLM_PYTHON "
            "or SPECPROBE_SGLANG_PYTHON, else this one).",
        ),
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds the engine may take to start (--serve).")
    ] = 900.0,
    engine_log: Annotated[
        Path | None, typer.Option("--engine-log", help="With --serve: keep the engine's whole log in FILE.")
    ] = None,
    no_reference: Annotated[
        bool, typer.Option("--no-reference", help="With --serve: measure the engine only, no reference backend.")
    ] = False,
    target: Annotated[
        str | None,
        typer.Option(
            "--target",
            help="Target folder or hub id OWNER/NAME[@REVISION] (the model the drafter serves). With --hidden-states "
            "only its config.json and the few tensors used are read (embedding, final norm, lm_head), alone.",
        ),
    ] = None,
    draft: Annotated[Path | None, typer.Option("--draft", help="Drafter checkpoint folder.")] = None,
    backend: Annotated[
        Backend, typer.Option("--backend", help="reference (transformers) or server.")
    ] = Backend.REFERENCE,
    device: Annotated[str, typer.Option("--device", help="cpu or cuda[:N] (reference backend).")] = "cpu",
    dtype: Annotated[str, typer.Option("--dtype", help="float32, float64, bfloat16 or float16.")] = "float32",
    num_speculative_tokens: Annotated[
        int, typer.Option("--num-speculative-tokens", "-k", help="Draft tokens per round (K).")
    ] = 3,
    prompts: Annotated[
        Path | None, typer.Option("--prompts", help="JSONL prompts ('prompt' or 'messages'); default: built-in set.")
    ] = None,
    max_prompts: Annotated[int | None, typer.Option("--max-prompts", help="Use the first N prompts.")] = None,
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens", help="Tokens generated per prompt.")] = 64,
    min_acceptance_length: Annotated[
        float | None,
        typer.Option("--min-acceptance-length", help="Error finding (exit 1) below this mean acceptance length."),
    ] = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="Write a per-position acceptance chart (PNG).")] = None,
    url: Annotated[str | None, typer.Option("--url", help="Server base URL, e.g. http://127.0.0.1:8000.")] = None,
    metrics_url: Annotated[
        str | None, typer.Option("--metrics-url", help="Prometheus endpoint (default: URL/metrics).")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="Served model name (default: the first listed).")] = None,
    api: Annotated[Api, typer.Option("--api", help="completions or chat (server backend).")] = Api.COMPLETIONS,
    compare_reference: Annotated[
        bool, typer.Option("--compare-reference", help="Also run the reference backend and report the gap.")
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Measure even when the static check reports errors.")] = False,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="No progress bar.")] = False,
    timing_repeats: Annotated[
        int, typer.Option("--timing-repeats", help="Time each loop N times and report the median (reference).")
    ] = 1,
    hidden_states: Annotated[
        Path | None,
        typer.Option(
            "--hidden-states",
            help="A drafter-training hidden-state dump (SpecForge or speculators): replay the drafter on it, "
            "without the target, and report the acceptance its own data predicts.",
        ),
    ] = None,
    max_samples: Annotated[
        int | None, typer.Option("--max-samples", help="With --hidden-states: a seeded random sample of N files.")
    ] = None,
    sample_seed: Annotated[int, typer.Option("--sample-seed", help="Seed of --max-samples.")] = 0,
    loss_mask_dataset: Annotated[
        Path | None,
        typer.Option(
            "--loss-mask-dataset",
            help="With --hidden-states of speculators: its preprocessed dataset (prepare_data.py --output), where "
            "the loss mask lives, when it is not the folder above the hs_<i>.safetensors files.",
        ),
    ] = None,
    batch_size: Annotated[
        int | None,
        typer.Option("--batch-size", help="With --hidden-states: samples replayed together (default 16 CPU, 64 GPU)."),
    ] = None,
    max_target_tensor_bytes: Annotated[
        int,
        typer.Option(
            "--max-target-tensor-bytes",
            help="With --hidden-states: the most bytes one tensor read from --target may take (default 4 GiB: "
            "a bf16 embedding of 163840 x 7168 is 2.35 GB).",
        ),
    ] = DEFAULT_MAX_TENSOR_BYTES,
    fmt: FormatOption = None,
    output: OutputOption = None,
    strict: StrictOption = False,
) -> None:
    """Measure acceptance rate, acceptance length, losslessness and speed-up of a drafter."""
    if loss_mask_dataset is not None and hidden_states is None:
        raise SpecprobeError("--loss-mask-dataset needs --hidden-states (a speculators dump)")
    if hidden_states is not None and not serve and backend is Backend.REFERENCE and not compare_reference:
        from specprobe.smoke.offline import OfflineOptions, run_offline

        if draft is None:
            raise SpecprobeError("--hidden-states needs --draft")
        offline_options = OfflineOptions(
            draft=draft,
            hidden_states=hidden_states,
            target=target,
            num_speculative_tokens=num_speculative_tokens,
            max_samples=max_samples,
            seed=sample_seed,
            device=device,
            dtype=dtype,
            batch_size=batch_size,
            min_acceptance_length=min_acceptance_length,
            progress=not no_progress,
            max_target_tensor_bytes=max_target_tensor_bytes,
            loss_mask_dataset=loss_mask_dataset,
        )
        emit(run_offline(offline_options), fmt, output, strict=strict)
        return
    if serve:
        from specprobe.smoke.engine_process import ServeOptions, run_serve

        serve_options = ServeOptions(
            command=list(command or []),
            python=python,
            timeout_s=timeout,
            reference=not no_reference,
            force=force,
            prompts=prompts,
            max_prompts=max_prompts,
            max_new_tokens=max_new_tokens,
            min_acceptance_length=min_acceptance_length,
            plot=plot,
            api=api.value,
            device=device,
            progress=not no_progress,
            engine_log=engine_log,
            hidden_states=hidden_states,
            max_samples=max_samples,
            loss_mask_dataset=loss_mask_dataset,
        )
        emit(run_serve(serve_options), fmt, output, strict=strict)
        return
    if command:
        raise SpecprobeError(f"unexpected argument {command[0]!r}; a launch command after -- needs --serve")
    from specprobe.smoke.runner import SmokeOptions, run_reference

    if (backend is Backend.REFERENCE or compare_reference) and (target is None or draft is None):
        raise SpecprobeError("--target and --draft are required by the reference backend")
    if backend is Backend.REFERENCE:
        options = SmokeOptions(
            target=target or "",
            draft=draft or Path(),
            device=device,
            dtype=dtype,
            num_speculative_tokens=num_speculative_tokens,
            prompts=prompts,
            max_prompts=max_prompts,
            max_new_tokens=max_new_tokens,
            min_acceptance_length=min_acceptance_length,
            plot=plot,
            force=force,
            progress=not no_progress,
            timing_repeats=timing_repeats,
        )
        emit(run_reference(options), fmt, output, strict=strict)
        return
    from specprobe.smoke.counters import ServerOptions, run_server

    if url is None:
        raise SpecprobeError("--backend server needs --url")
    server_options = ServerOptions(
        url=url,
        metrics_url=metrics_url,
        model=model,
        api=api.value,
        prompts=prompts,
        max_prompts=max_prompts,
        max_new_tokens=max_new_tokens,
        min_acceptance_length=min_acceptance_length,
        plot=plot,
        target=target,
        draft=draft,
        compare_reference=compare_reference,
        num_speculative_tokens=num_speculative_tokens,
        device=device,
        dtype=dtype,
        progress=not no_progress,
        hidden_states=hidden_states,
        max_samples=max_samples,
        loss_mask_dataset=loss_mask_dataset,
    )
    emit(run_server(server_options), fmt, output, strict=strict)
