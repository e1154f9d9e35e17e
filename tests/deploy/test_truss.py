"""Truss ``config.yaml``: the ``docker_server.start_command`` launch, with the base image's release."""

from __future__ import annotations

from pathlib import Path

from specprobe.pipeline.gate import gate_paths, load_paths

CONFIG = Path(__file__).parent / "data" / "truss" / "qwen3-asr-config.yaml"


def test_the_start_command_is_the_launch_and_the_base_image_its_release() -> None:
    [deployment], notes = load_paths([str(CONFIG)])
    assert notes == []
    assert deployment.argv[:3] == ["vllm", "serve", "/app/checkpoint/model"]
    assert deployment.image == "vllm/vllm-openai:v0.22.0-cu129"
    lines = CONFIG.read_text().splitlines()
    assert deployment.file is not None and "start_command" in lines[deployment.flag_line("--load-format") - 1]


def test_a_start_command_the_release_refuses_fails_the_gate(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG.read_text().replace("v0.22.0-cu129", "v0.33.0").replace("--load-format", "--load-fromat"))
    report = gate_paths([str(config)])
    [finding] = [f for f in report.findings if f.rule == "CLI-REFUSED"]
    assert "unrecognized arguments: --load-fromat runai_streamer" in finding.message
    assert finding.hint is not None and "--load-format" in finding.hint
