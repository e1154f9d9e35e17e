"""Server backend against a loopback stand-in for an engine's wire format.

The stand-in is not vLLM: it serves OpenAI-compatible completions and a Prometheus /metrics page in
vLLM's metric names and label layout (exposition written by prometheus_client itself), and behind
them it really decodes with the project's reference speculative loop, so the counters advance by
the real per-request figures. Only 127.0.0.1 is used and every request loop is bounded.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from specprobe.cli import app
from specprobe.smoke.counters import parse_metrics
from tests.http_stub import StubHandler, serving

pytestmark = pytest.mark.slow

K = 3
ARGS = ["--max-prompts", "4", "--max-new-tokens", "24", "--no-progress", "--format", "json"]


class FakeVllm:
    """Counters named and labelled as vLLM exports them, advanced by real speculative decoding."""

    def __init__(self, target_dir: Path, draft_dir: Path, *, speculating: bool = True, sglang: bool = False) -> None:
        import torch
        from prometheus_client import CollectorRegistry, Counter

        from specprobe.smoke.reference import load_reference_drafter, load_target

        self.target = load_target(str(target_dir), device="cpu", dtype=torch.float32)
        self.drafter = load_reference_drafter(draft_dir, self.target, device="cpu", dtype=torch.float32)
        self.speculating = speculating
        # SGLang's wire format instead: no vLLM counters, per-request meta_info.spec_verify_ct.
        self.sglang = sglang
        self.registry = CollectorRegistry()
        labels = ["model_name", "engine"]
        self.drafts = Counter("vllm:spec_decode_num_drafts", "drafts", labels, registry=self.registry)
        self.draft_tokens = Counter("vllm:spec_decode_num_draft_tokens", "draft tokens", labels, registry=self.registry)
        self.accepted = Counter("vllm:spec_decode_num_accepted_tokens", "accepted", labels, registry=self.registry)
        self.per_pos = Counter(
            "vllm:spec_decode_num_accepted_tokens_per_pos",
            "accepted per position",
            [*labels, "position"],
            registry=self.registry,
        )
        self.requests = 0
        self.lock = threading.Lock()

    def complete(self, payload: dict[str, Any]) -> dict[str, Any]:
        from specprobe.smoke.reference import speculative_generate

        assert payload["temperature"] == 0.0
        ids = self.target.tokenizer(payload["prompt"])["input_ids"]
        n = int(payload["max_tokens"])
        with self.lock:
            self.requests += 1
            result = speculative_generate(self.target, self.drafter, [ids], n, K, device="cpu")
            if self.speculating and not self.sglang:
                labels = {"model_name": "tiny", "engine": "0"}
                self.drafts.labels(**labels).inc(result.drafts[0])
                self.draft_tokens.labels(**labels).inc(result.drafts[0] * K)
                self.accepted.labels(**labels).inc(result.accepted[0])
                for position, count in enumerate(result.accepted_per_pos[0]):
                    self.per_pos.labels(**labels, position=str(position)).inc(count)
        text = self.target.tokenizer.decode(result.tokens[0])
        response: dict[str, Any] = {
            "choices": [{"index": 0, "text": text}],
            "usage": {"completion_tokens": len(result.tokens[0])},
        }
        if self.sglang:
            response["meta_info"] = {"spec_verify_ct": result.drafts[0], "completion_tokens": len(result.tokens[0])}
        return response

    def metrics(self) -> bytes:
        from prometheus_client import generate_latest

        return generate_latest(self.registry)


@pytest.fixture
def serve() -> Iterator[Any]:
    with contextlib.ExitStack() as servers:

        def start(engine: FakeVllm) -> str:
            class Handler(StubHandler):
                def do_GET(self) -> None:  # noqa: N802 (http.server's handler name)
                    if self.path == "/metrics":
                        self.send_body(engine.metrics(), "text/plain; version=0.0.4")
                    elif self.path == "/v1/models":
                        self.send_body(json.dumps({"data": [{"id": "tiny"}]}).encode())
                    elif self.path == "/version" and not engine.sglang:
                        self.send_body(json.dumps({"version": "0.33.0"}).encode())
                    elif self.path == "/get_server_info" and engine.sglang:
                        self.send_body(json.dumps({"version": "0.5.23"}).encode())
                    else:
                        self.send_error(404)

                def do_POST(self) -> None:  # noqa: N802 (http.server's handler name)
                    if self.path != "/v1/completions":
                        self.send_error(404)
                        return
                    payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                    self.send_body(json.dumps(engine.complete(payload)).encode())

            return servers.enter_context(serving(Handler))

        yield start


def run(*args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(app, ["smoke", "--backend", "server", *args, *ARGS])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def test_counter_deltas_give_the_engine_acceptance(demo_models: dict[str, Path], serve: Any, tmp_path: Path):
    engine = FakeVllm(demo_models["target"], demo_models["draft"])
    url = serve(engine)
    before = parse_metrics(engine.metrics().decode())
    plot = tmp_path / "server.png"
    code, report = run("--url", url, "--plot", str(plot))
    after = parse_metrics(engine.metrics().decode())
    assert code == 0, report["findings"]
    assert engine.requests == 4
    assert report["subject"]["engine"] == "vllm==0.33.0"
    assert report["num_speculative_tokens"] == K
    assert report["drafts"] == after.drafts - before.drafts > 0
    assert report["mean_acceptance_length"] == pytest.approx(1 + (after.accepted - before.accepted) / report["drafts"])
    assert report["mean_acceptance_length"] > 1.8
    assert report["tokens"] == 4 * 24
    assert len(report["ci95"]) == 2
    assert plot.is_file()


def test_engine_far_below_the_reference_is_an_engine_gap(demo_models: dict[str, Path], serve: Any):
    # The "engine" wires the drafter with a shuffled d2t; the reference reads the good checkpoint.
    url = serve(FakeVllm(demo_models["target"], demo_models["draft-broken"]))
    code, report = run(
        "--url",
        url,
        "--compare-reference",
        "--target",
        str(demo_models["target"]),
        "--draft",
        str(demo_models["draft"]),
    )
    assert code == 1
    assert "SMOKE-ENGINE-GAP" in {f["rule"] for f in report["findings"]}
    assert report["reference"]["mean_acceptance_length"] > 1.8
    assert report["mean_acceptance_length"] < 1.2


def test_engine_matching_the_reference_has_no_gap(demo_models: dict[str, Path], serve: Any):
    url = serve(FakeVllm(demo_models["target"], demo_models["draft"]))
    code, report = run(
        "--url",
        url,
        "--compare-reference",
        "--target",
        str(demo_models["target"]),
        "--draft",
        str(demo_models["draft"]),
    )
    assert code == 0, report["findings"]
    assert report["mean_acceptance_length"] == pytest.approx(report["reference"]["mean_acceptance_length"], rel=0.15)


def test_counters_that_never_move_mean_no_speculation(demo_models: dict[str, Path], serve: Any):
    url = serve(FakeVllm(demo_models["target"], demo_models["draft"], speculating=False))
    code, report = run("--url", url)
    assert code == 1
    assert {f["rule"] for f in report["findings"]} == {"SMOKE-NO-METRICS"}


def test_sglang_meta_info_gives_the_accept_length(demo_models: dict[str, Path], serve: Any):
    engine = FakeVllm(demo_models["target"], demo_models["draft"], sglang=True)
    code, report = run("--url", serve(engine))
    assert code == 0, report["findings"]
    assert report["subject"]["engine"] == "sglang==0.5.23"
    assert report["metrics_source"].startswith("sglang meta_info")
    # accept length = completion tokens / verification rounds, over the 4 requests.
    assert report["mean_acceptance_length"] == pytest.approx(report["tokens"] / report["drafts"])
    assert report["mean_acceptance_length"] > 1.8


def test_unreachable_server_is_exit_2():
    result = CliRunner().invoke(app, ["smoke", "--backend", "server", "--url", "http://127.0.0.1:9", *ARGS])
    assert result.exit_code == 2
    assert "cannot reach" in result.stderr


def test_sglang_gauges_and_unknown_metrics():
    text = (
        "# HELP sglang:spec_accept_length The average acceptance length\n"
        "# TYPE sglang:spec_accept_length gauge\n"
        'sglang:spec_accept_length{model_name="m"} 2.5\n'
        "# HELP sglang:spec_accept_rate The average acceptance rate\n"
        "# TYPE sglang:spec_accept_rate gauge\n"
        'sglang:spec_accept_rate{model_name="m"} 0.5\n'
        "# TYPE other_total counter\n"
        "other_total 7\n"
    )
    snapshot = parse_metrics(text)
    assert snapshot.sglang_accept_length == 2.5
    assert snapshot.sglang_accept_rate == 0.5
    assert snapshot.drafts == 0 and not snapshot.seen_vllm
