"""Every registered rule, of every family, is fired by at least one test input.

Three sources, together: the check corpus (tests/cases/*/expected.json ``must_fire``, each asserted by
tests/check/test_check_corpus.py); the inputs run here (a --deep scan cut short, a family that raises,
launch commands, matrix queries, deployment files, smoke measurements, a metrics server whose counters
never move); and every rule any other test of the same run fired (recorded by tests/conftest.py, this
test runs last). Rules that only a provisioned engine or torch can fire are listed with the reason and
are excused only when that engine or torch is absent. On a partial run (-k, -m, a subset of files) the
rules that other files would fire cannot be seen: the test then skips instead of failing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from check.casebuild import case_names, load_case
from hostile.builders import valid_draft
from rule_recorder import FIRED, whole_suite_collected

from specprobe.check import run_check
from specprobe.demo import write_demo
from specprobe.findings import Finding, Report
from specprobe.rules import deep
from specprobe.rules.catalog import all_rules

CONFIGS = Path(__file__).parent / "compat" / "configs"
# Rules that only a trained model (torch) fires: the reference backend builds the drafter.
NEEDS_TORCH: dict[str, str] = {
    "SMOKE-CHECK-SKIPPED": "tests/smoke/test_reference.py (smoke --force on a drafter with check errors)",
    "SMOKE-DRAFT-UNREADABLE": "tests/smoke/test_formats.py::test_unreadable_drafter_is_a_finding",
    "SMOKE-ENGINE-GAP": "tests/smoke/test_server.py (compares the engine with the reference backend)",
}
# Rules that only a provisioned engine interpreter fires: the dry run builds the engine's own config.
NEEDS_ENGINE: dict[str, str] = {
    "LINT-DRY-RUN": "tests/dryrun/test_dryrun_engine.py (the engine refuses the command)",
    "LINT-DRY-RUN-PASSED": "tests/dryrun/test_dryrun_engine.py (the engine accepts the command)",
    "LINT-DRY-RUN-PLATFORM": "tests/dryrun/test_dryrun_engine.py (no accelerator: the CPU platform)",
}


def _excused() -> dict[str, str]:
    """The rules whose only firing tests cannot run on this machine."""
    excused: dict[str, str] = {}
    if importlib.util.find_spec("torch") is None:
        excused.update(NEEDS_TORCH)
    if os.environ.get("SPECPROBE_ALLOW_MISSING_ENGINES") == "1":
        excused.update(NEEDS_ENGINE)
    return excused


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("demo")
    write_demo(root)
    return root


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SPECPROBE_VLLM_PYTHON", raising=False)
    monkeypatch.delenv("SPECPROBE_SGLANG_PYTHON", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _corpus_fired() -> set[str]:
    fired: set[str] = set()
    for case in case_names():
        fired |= set(load_case(case)[1]["must_fire"])
    return fired


def _check_inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """check inputs the corpus cannot express: a --deep scan cut short by its bound."""
    folder = valid_draft(tmp_path / "deep-bound")
    with monkeypatch.context() as patch:
        patch.setattr(deep, "MAX_SCAN_BYTES", 1)
        fired = run_check(folder, deep=True).fired()

    def broken_family(ctx: object) -> list[Finding]:
        raise ValueError("a rule family that raises")

    return fired | run_check(folder, families=[broken_family]).fired()


def _lint_inputs(demo: Path) -> set[str]:
    from specprobe.pipeline import lint_command

    target, draft = str(demo / "target"), str(demo / "draft")
    spec = json.dumps({"method": "eagle3", "model": draft, "num_speculative_tokens": 3})
    commands: list[tuple[list[str], str | None]] = [
        (["vllm", "serve", target], None),
        (["vllm", "serve", target, "--speculative-config", "{not json"], None),
        (["vllm", "serve", target, "--speculative-config", '{"method": "eagle3", "modle": "x"}'], None),
        (["vllm", "serve", target, "--speculative-config", '{"num_speculative_tokens": "3x"}'], None),
        (["vllm", "serve", target, "--speculative-config", '{"method": "medusa2", "model": "x"}'], None),
        (["vllm", "serve", target, "--speculative-model", draft], None),
        (["vllm", "serve", target, "--speculative-config", spec], "vllm==0.99.0"),
        (["vllm", "serve", target, "--speculative-config", spec, "--enable-lora"], "vllm==0.33.0"),
        (["vllm", "serve", target, "--speculative-config", spec], "vllm==0.33.0"),
        (["vllm", "serve", target, "--speculative-config", '{"method": "dflash", "model": "x"}'], "vllm==0.16.0"),
        (["python", "-m", "sglang.launch_server", "--model-path", target, "--speculative-algorithm", "EAGLE3"], None),
        (["python", "-m", "sglang.launch_server", "--model-path", target, "--speculative-algorithm", "EAGLE3",
          "--speculative-draft-model-path", draft, "--speculative-num-steps", "3"], None),
        (["python", "-m", "sglang.launch_server", "--model-path", target, "--speculative-algorithm", "EAGLE3",
          "--speculative-draft-model-path", draft, "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
          "--speculative-num-draft-tokens", "8"], None),
    ]  # fmt: skip
    fired: set[str] = set()
    for argv, engine in commands:
        fired |= lint_command(argv, engine=engine).fired()
    return fired


def _deploy_inputs(demo: Path, tmp_path: Path) -> set[str]:
    from specprobe.gate import gate_paths

    spec = json.dumps({"method": "eagle3", "model": str(demo / "draft"), "num_speculative_tokens": 3})
    files = {
        "doubled.yaml": f"""\
            apiVersion: v1
            kind: Pod
            metadata: {{name: llm}}
            spec:
              containers:
                - name: vllm
                  image: vllm/vllm-openai:v0.33.0
                  args: ["vllm", "serve", "{demo / "target"}", "--speculative-config", '{spec}']
            """,
        "hub.yaml": """\
            apiVersion: v1
            kind: Pod
            metadata: {name: llm}
            spec:
              containers:
                - name: vllm
                  image: vllm/vllm-openai:v0.33.0
                  args: ["some-org/some-model", "--speculative-config", '{"method": "eagle3", "model": "o/d"}']
            """,
        "value.yaml": """            apiVersion: v1
            kind: Pod
            metadata: {name: llm}
            spec:
              containers:
                - name: vllm
                  image: vllm/vllm-openai:v0.33.0
                  args: "m --tensor-parallel-size 2"
            """,
        "no-entrypoint.yaml": """\
            apiVersion: v1
            kind: Pod
            metadata: {name: llm}
            spec:
              containers:
                - name: sglang
                  image: lmsysorg/sglang:v0.5.23
                  args: ["--model-path", "m", "--speculative-algorithm", "EAGLE3"]
            """,
        "assumed.yaml": """\
            apiVersion: v1
            kind: Pod
            metadata: {name: llm}
            spec:
              containers:
                - name: server
                  image: registry.example.com/inference:1
                  args: ["m", "--speculative-config", '{"method": "eagle3", "model": "d"}']
            """,
        "nothing.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\n",
        "specprobe.yaml": "specprobe: 1\ndeployments: [{name: 3}]\n",
    }
    fired: set[str] = set()
    for name, text in files.items():
        path = tmp_path / name
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        try:
            fired |= gate_paths([str(path)]).fired()
        except Exception as exc:  # a form this input does not reach is reported by the missing-rule assertion
            print(f"{name}: {type(exc).__name__}: {exc}")
    return fired


def _matrix_inputs() -> set[str]:
    from typer.testing import CliRunner

    from specprobe.cli import app

    kimi = str(CONFIGS / "targets" / "kimi-k2.5")
    kimi_draft = str(CONFIGS / "drafters" / "specforge-kimi-k2.5-eagle3")
    queries = [
        ["--engine", "vllm==0.16.0", "--method", "eagle3", "--target", kimi],
        ["--engine", "vllm==0.34.0", "--method", "medusa"],
        ["--engine", "vllm==0.16.0", "--method", "eagle", "--target", kimi, "--draft", kimi_draft],
        ["--engine", "vllm==0.29.0", "--method", "eagle3", "--feature", "pipeline_parallel"],
    ]
    fired: set[str] = set()
    for query in queries:
        result = CliRunner().invoke(app, ["matrix", *query, "--format", "json"])
        assert result.exit_code in (0, 1), result.output
        fired |= {f["rule"] for f in json.loads(result.stdout)["findings"]}
    return fired


def _smoke_inputs() -> set[str]:
    from specprobe.smoke.runner import measurement_findings

    report = Report(command="smoke")
    report.extend(
        measurement_findings(
            {"mean_acceptance_length": 1.1, "acceptance_rate": 0.05, "lossless": False, "num_speculative_tokens": 3},
            min_acceptance_length=2.0,
            label="reference backend",
        )
    )
    return report.fired()


class _NoSpeculationServer(BaseHTTPRequestHandler):
    """An OpenAI-compatible server whose speculative-decoding counters never move."""

    def do_GET(self) -> None:
        if self.path.startswith("/metrics"):
            self._send(b"# TYPE vllm:num_drafts counter\nvllm:num_drafts_total 0\n", "text/plain")
        elif self.path.startswith("/version"):
            self._send(b'{"version": "0.33.0"}')
        else:
            self._send(b'{"data": [{"id": "m"}]}')

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        self.rfile.read(length)
        body = {"choices": [{"text": "x", "token_ids": [1, 2]}], "usage": {"completion_tokens": 2}}
        self._send(json.dumps(body).encode())

    def _send(self, body: bytes, kind: str = "application/json") -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def no_speculation_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NoSpeculationServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _server_inputs(url: str) -> set[str]:
    from typer.testing import CliRunner

    from specprobe.cli import app

    result = CliRunner().invoke(
        app,
        ["smoke", "--backend", "server", "--url", url, "--format", "json", "--no-progress", "--max-prompts", "2",
         "--max-new-tokens", "4"],
    )  # fmt: skip
    if result.exit_code not in (0, 1):
        print(result.output)
        return set()
    return {f["rule"] for f in json.loads(result.stdout)["findings"]}


def test_every_rule_of_every_family_is_fired_by_a_test_input(
    demo: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    no_speculation_server: str,
    request: pytest.FixtureRequest,
) -> None:
    fired = _corpus_fired()
    fired |= _check_inputs(tmp_path, monkeypatch)
    fired |= _lint_inputs(demo)
    fired |= _deploy_inputs(demo, tmp_path)
    fired |= _matrix_inputs()
    fired |= _smoke_inputs()
    fired |= _server_inputs(no_speculation_server)
    fired |= FIRED
    registered = {r.id: r.family for r in all_rules()}
    excused = _excused()
    never = sorted(f"{registered[i]}: {i}" for i in registered if i not in fired and i not in excused)
    if never and not whole_suite_collected(request.config):
        pytest.skip(f"partial run: not fired here, perhaps by test files not collected: {', '.join(never)}")
    assert never == [], never


def test_the_excused_rules_are_real_rules() -> None:
    registered = {r.id for r in all_rules()}
    assert set(NEEDS_TORCH) <= registered
    assert set(NEEDS_ENGINE) <= registered
