"""`smoke --serve` without a real engine: launch-command parsing and rewriting, the engine's failure
cause read from its log, process-group clean-up, and the start-failure path through a stand-in engine
module that prints what vLLM 0.32.0 printed when it refused the MLA pairing (docs/real-engine/).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from specprobe.cli import app
from specprobe.findings import SpecprobeError
from specprobe.smoke import engine_process
from specprobe.smoke.engine_process import escape, failure_cause, free_port, running_engine
from specprobe.smoke.launch import parse_launch

SPEC = '{"method":"eagle3","model":"/m/draft","num_speculative_tokens":3}'
# Lines as vLLM 0.32.0 (CPU build) wrote them; the first is a finaliser's noise that is not the cause.
MLA_REFUSAL_LOG = """\
(EngineCore pid=1) Exception ignored in: <function CPUDNNLGEMMHandler.__del__ at 0x7f3071530f40>
Traceback (most recent call last):
AssertionError: Please convert all Tensors to FakeTensors first
(EngineCore pid=1) ERROR 12-03 06:01:02 [core.py:1108] EngineCore failed to start.
(EngineCore pid=1) ERROR 12-03 06:01:02 [core.py:1108] Traceback (most recent call last):
(EngineCore pid=1) ERROR 12-03 06:01:02 [core.py:1108] ValueError: No common block size for 16 (CPU_MLA: [16]; \
CPU_ATTN: [MultipleOf(32)])
(APIServer pid=0) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
"""


def test_vllm_serve_becomes_the_api_server_module_on_a_loopback_port() -> None:
    launch = parse_launch(
        ["vllm", "serve", "/m/target", "--speculative-config", SPEC, "--port", "8000", "--host=0.0.0.0",
         "--dtype", "float32"]
    )  # fmt: skip
    assert (launch.engine, launch.model, launch.draft, launch.method) == ("vllm", "/m/target", "/m/draft", "eagle3")
    assert launch.num_speculative_tokens == 3
    assert launch.dtype("bfloat16") == "float32"
    argv = launch.argv("/py", 41234, vllm_cli=False)
    assert argv[:5] == ["/py", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m/target"]
    assert argv[-4:] == ["--host", "127.0.0.1", "--port", "41234"]
    assert "8000" not in argv and "--host=0.0.0.0" not in argv
    cli = launch.argv("/py", 41234, vllm_cli=True)
    assert cli[:5] == ["/py", "-m", "vllm.entrypoints.cli.main", "serve", "/m/target"]


def test_module_forms_and_environment_prefixes() -> None:
    launch = parse_launch(
        ["VLLM_MLA_DISABLE=1", "python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m/t", "--port=9"]
    )
    assert launch.env == {"VLLM_MLA_DISABLE": "1"}
    assert launch.model == "/m/t"
    assert launch.argv("/py", 5, vllm_cli=False).count("--model") == 1
    sglang = parse_launch(
        ["python", "-m", "sglang.launch_server", "--model-path", "/m/t", "--speculative-algorithm", "EAGLE3",
         "--speculative-draft-model-path", "/m/d", "--speculative-num-steps", "3"]
    )  # fmt: skip
    assert (sglang.engine, sglang.model, sglang.draft, sglang.num_speculative_tokens) == ("sglang", "/m/t", "/m/d", 3)
    assert sglang.argv("/py", 5, vllm_cli=False)[:5] == ["/py", "-m", "sglang.launch_server", "--model-path", "/m/t"]


@pytest.mark.parametrize(
    "argv",
    [[], ["ls", "-la"], ["vllm", "serve", "/m", "--speculative-config", "[1]"], ["A=1"]],
)
def test_not_a_serve_command_is_a_one_line_error(argv: list[str]) -> None:
    with pytest.raises(SpecprobeError):
        parse_launch(argv)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=30), max_size=12))
def test_any_argument_vector_parses_or_is_refused_cleanly(argv: list[str]) -> None:
    for head in (["vllm", "serve"], ["python", "-m", "sglang.launch_server"], []):
        try:
            launch = parse_launch(head + argv)
        except SpecprobeError:
            continue
        rewritten = launch.argv("/py", 1, vllm_cli=False)
        # The address is always specprobe's own, exactly once.
        assert rewritten.count("--port") == 1 and rewritten[-1] == "1"


def test_failure_cause_skips_finaliser_noise_and_wrapper_lines() -> None:
    cause = failure_cause(MLA_REFUSAL_LOG)
    assert cause == "ValueError: No common block size for 16 (CPU_MLA: [16]; CPU_ATTN: [MultipleOf(32)])"
    assert failure_cause("no exception here\n") is None
    assert "\x1b" not in escape("\x1b[2Jfake PASS")


def test_the_whole_process_group_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A leader that starts a child in its own group and then ignores SIGTERM, as a wedged engine can.
    # The escalation to SIGKILL is what is tested, not the length of the grace period: one second of it.
    monkeypatch.setattr(engine_process, "STOP_GRACE_S", 1.0)
    script = (
        "import signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(tmp_path / 'child')!r}, 'w').write(str(child.pid))\n"
        "time.sleep(600)\n"
    )
    with running_engine([sys.executable, "-c", script], dict(os.environ), free_port()) as engine:
        deadline = time.monotonic() + 30
        while not (tmp_path / "child").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        child = int((tmp_path / "child").read_text())
    assert engine.process.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        # A zombie that is not ours to reap still answers kill(0): read its state.
        state = Path(f"/proc/{child}/stat").read_text().split()[2] if Path(f"/proc/{child}/stat").exists() else "X"
        if state in ("Z", "X"):
            break
        time.sleep(0.1)
    else:
        pytest.fail("the engine's child process outlived the stop")


def _stand_in_engine(root: Path, body: str) -> dict[str, str]:
    """A `vllm` package whose api_server module runs ``body``: the probe finds vLLM, the launch runs it."""
    server = root / "vllm" / "entrypoints" / "openai"
    server.mkdir(parents=True)
    for folder in (root / "vllm", root / "vllm" / "entrypoints", server):
        (folder / "__init__.py").write_text("")
    (server / "api_server.py").write_text(body)
    return {"PYTHONPATH": str(root)}


def test_start_up_failure_is_a_finding_that_quotes_the_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    body = f"import sys\nsys.stdout.write({MLA_REFUSAL_LOG!r})\nsys.exit(1)\n"
    for name, value in _stand_in_engine(tmp_path / "engine", body).items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(
        app,
        ["smoke", "--serve", "--python", sys.executable, "--timeout", "60", "--no-progress", "--format", "json",
         "--", "vllm", "serve", str(tmp_path / "no-such-target"), "--speculative-config", SPEC],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    failed = [f for f in report["findings"] if f["rule"] == "SMOKE-SERVE-START-FAILED"]
    assert failed and "No common block size for 16" in failed[0]["message"]
    assert report["engine_cause"].startswith("ValueError: No common block size")


def test_start_up_timeout_is_a_finding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    body = "import time\nprint('INFO loading', flush=True)\ntime.sleep(600)\n"
    for name, value in _stand_in_engine(tmp_path / "engine", body).items():
        monkeypatch.setenv(name, value)
    start = time.monotonic()
    result = CliRunner().invoke(
        app,
        ["smoke", "--serve", "--python", sys.executable, "--timeout", "1", "--no-progress", "--format", "json",
         "--", "vllm", "serve", "/m/t"],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert time.monotonic() - start < 60
    assert "did not answer /health within 1 s" in result.stdout


def test_missing_engine_is_exit_2(tmp_path: Path) -> None:
    empty = subprocess.run([sys.executable, "-c", "import vllm"], capture_output=True, check=False)
    if empty.returncode == 0:
        pytest.skip("this interpreter has vLLM installed")
    for command, needle in ((["vllm", "serve", "/m"], "no vLLM"), (["sglang", "serve", "--model-path", "/m"], "AMX")):
        result = CliRunner().invoke(app, ["smoke", "--serve", "--python", sys.executable, "--", *command])
        assert result.exit_code == 2
        assert needle in result.output


RESULTS = Path(__file__).resolve().parents[2] / "docs" / "real-engine" / "results"


def test_served_runs_record_as_measured_matrix_entries(tmp_path: Path) -> None:
    """The kept result files of the real-engine runs become the shipped measured entries."""
    from specprobe.demo.example import write_demo

    write_demo(tmp_path)
    mla = tmp_path / "target-mla"
    mla.mkdir()
    (mla / "config.json").write_text(
        json.dumps({"model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 64,
                    "num_hidden_layers": 4, "vocab_size": 512, "num_attention_heads": 2, "kv_lora_rank": 512,
                    "qk_rope_head_dim": 64, "qk_nope_head_dim": 32, "v_head_dim": 32, "q_lora_rank": 64})
    )  # fmt: skip
    runner = CliRunner()
    refused = runner.invoke(
        app,
        ["matrix", "record", str(RESULTS / "mla-eagle3.json"),
         "--target", str(mla), "--draft", str(tmp_path / "draft")],
    )  # fmt: skip
    assert refused.exit_code == 0, refused.output
    assert "status: broken" in refused.stdout and "No common block size for 16" in refused.stdout
    control = runner.invoke(app, ["matrix", "record", str(RESULTS / "llama-ngram.json"), "--target", str(mla)])
    assert control.exit_code == 0, control.output
    assert "methods:\n  - ngram" in control.stdout and "draft:" not in control.stdout


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_specprobe_stops_the_engine(tmp_path: Path, sig: signal.Signals) -> None:
    pid_file = tmp_path / "engine.pid"
    body = f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(600)\n"
    env = {**os.environ, **_stand_in_engine(tmp_path / "engine", body)}
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(Path(__file__).resolve().parents[2])])
    specprobe = subprocess.Popen(
        [sys.executable, "-m", "specprobe", "smoke", "--serve", "--python", sys.executable, "--timeout", "120",
         "--no-progress", "--", "vllm", "serve", "/m/t"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    engine = int(pid_file.read_text())
    specprobe.send_signal(sig)
    _, stderr = specprobe.communicate(timeout=60)
    assert specprobe.returncode in (1, 2, 130, -sig), stderr
    assert b"Traceback" not in stderr
    with pytest.raises(ProcessLookupError):
        os.kill(engine, 0)


def test_engine_gap_either_way_beyond_rounding_is_an_error() -> None:
    """Figures of the served MLA runs (docs/real-engine/results): the right target and its rope-layout copy."""
    from specprobe.smoke.engine_process import engine_gap_finding

    reference = {"per_position": [0.920233, 0.546693, 0.529183], "dtype": "float32"}
    same = engine_gap_finding(2.996109, 2.996109, [0.920233, 0.546693, 0.529183], reference, 3)
    assert same.rule == "SMOKE-ENGINE-REFERENCE" and "reaches the reference" in same.message
    other_model = engine_gap_finding(3.131846, 2.996109, [0.93712, 0.604462, 0.590264], reference, 3)
    assert other_model.rule == "SMOKE-ENGINE-GAP" and "+4.5%" in other_model.message
    collapsed = engine_gap_finding(1.2, 2.996109, [0.2, 0.0, 0.0], reference, 3)
    assert collapsed.rule == "SMOKE-ENGINE-GAP" and "loses 90%" in collapsed.message
    # bfloat16 kernels round differently: 1.1% apart on the same pairing is not a gap.
    half = engine_gap_finding(3.66, 3.6978, None, {"dtype": "bfloat16"}, 3)
    assert half.rule == "SMOKE-ENGINE-REFERENCE"


def test_engine_output_leaving_the_checkpoints_at_confident_positions_is_an_engine_gap() -> None:
    """Acceptance can stay within rounding while the engine computes another model (a drafter that
    predicts nearly every token of both): the engine's greedy output then leaves the checkpoint's."""
    from specprobe.smoke.engine_process import engine_gap_finding, output_gap_finding

    reference = {"per_position": [0.99, 0.97, 0.97], "dtype": "float32"}
    close = engine_gap_finding(3.9068, 3.9415, [0.98, 0.96, 0.96], reference, 3)
    assert close.rule == "SMOKE-ENGINE-REFERENCE"

    def divergence(prompt: str, margin: float) -> dict:
        return {"prompt": prompt, "position": 7, "greedy_token": 1, "engine_token": 2,
                "margin": margin, "tolerance": 1e-4}  # fmt: skip

    other_model = {"matching": 20, "compared": 24, "near_tie_divergences": [],
                   "confident_divergences": [divergence(p, 2.5) for p in ("a", "b", "c", "d")]}  # fmt: skip
    gap = output_gap_finding(close, other_model, reference)
    assert gap.rule == "SMOKE-ENGINE-GAP" and gap.severity.value == "error"
    assert "20 of 24 prompts" in gap.message and "prompt a, new token 7" in gap.message
    # One confident flip (engine kernels round otherwise) or near-ties only: said, not failed.
    for output in (
        {"matching": 23, "compared": 24, "near_tie_divergences": [], "confident_divergences": [divergence("a", 2.5)]},
        {"matching": 20, "compared": 24, "near_tie_divergences": [divergence(p, 0.0) for p in "abcd"],
         "confident_divergences": []},
    ):  # fmt: skip
        kept = output_gap_finding(close, output, reference)
        assert kept.rule == "SMOKE-ENGINE-REFERENCE" and "greedy output equals the checkpoint's" in kept.message


@pytest.mark.parametrize(
    "speculative",
    [
        ["--speculative-config.method", "eagle3", "--speculative-config.model", "{draft}",
         "--speculative-config.num_speculative_tokens", "3"],
        ["--spec-method", "eagle3", "--spec-model", "{draft}", "--spec-tokens", "3"],
        ["--speculative-config", '{{"method": "eagle3", "model": "{draft}", "num_speculative_tokens": 3}}'],
    ],
    ids=["dotted", "shorthand", "json"],
)  # fmt: skip
def test_a_drafter_check_refuses_is_never_served_in_any_spelling(
    speculative: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # smoke --serve reads the speculative settings with the parser lint and gate use: the dotted form and
    # the --spec-* shorthands name the drafter as the JSON does, so check refuses it before an engine starts.
    from specprobe.demo.fixtures import DraftSpec
    from tests.fix.builders import d2t_absolute, make_draft, make_target

    started = tmp_path / "engine-started"
    body = f"open({str(started)!r}, 'w').close()\nimport time\ntime.sleep(600)\n"
    for name, value in _stand_in_engine(tmp_path / "engine", body).items():
        monkeypatch.setenv(name, value)
    target = make_target(tmp_path / "target")
    draft = make_draft(tmp_path / "draft-broken", DraftSpec(), d2t_absolute)
    argv = [part.format(draft=draft) for part in speculative]
    result = CliRunner().invoke(
        app,
        ["smoke", "--serve", "--python", sys.executable, "--timeout", "5", "--no-progress", "--format", "json",
         "--", "vllm", "serve", str(target), *argv],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert "refused" in report
    assert "VOCAB-D2T-RANGE" in {f["rule"] for f in report["findings"]}
    assert report["subject"]["draft"] == str(draft) and report["subject"]["method"] == "eagle3"
    assert not started.exists()


def test_bad_speculative_json_is_one_line_with_a_quoting_hint() -> None:
    for raw in ("{'method': 'eagle3'}", "[" * 100_000):
        with pytest.raises(SpecprobeError, match="single quotes") as caught:
            parse_launch(["vllm", "serve", "/m", "--speculative-config", raw])
        assert "\n" not in str(caught.value)
