"""vLLM production-stack Helm values: the launch the chart renders from each modelSpec, checked whole."""

from __future__ import annotations

from pathlib import Path

from specprobe.pipeline.gate import gate_paths, load_paths

DATA = Path(__file__).parent / "data" / "production_stack"


def test_the_chart_launch_is_rebuilt_from_vllm_config_and_extra_args() -> None:
    [deployment], _ = load_paths([str(DATA / "values-02-basic-config.yaml")])
    assert deployment.argv == [
        "vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--host", "0.0.0.0", "--port", "8000",
        "--no-enable-chunked-prefill", "--no-enable-prefix-caching", "--max-model-len", "4096",
        "--dtype", "bfloat16", "--disable-log-requests", "--gpu-memory-utilization", "0.8",
    ]
    assert deployment.image == "vllm/vllm-openai:latest"


def test_the_image_tag_pins_the_release_older_than_every_whole_cli_snapshot() -> None:
    [deployment], _ = load_paths([str(DATA / "values-25-v100-multi-gpu-tp2.yaml")])
    assert deployment.image == "vllm/vllm-openai:v0.8.5"
    assert "--gpu_memory_utilization" in deployment.argv and "--tensor-parallel-size" in deployment.argv
    report = gate_paths([str(DATA / "values-25-v100-multi-gpu-tp2.yaml")])
    [note] = [f for f in report.findings if f.rule == "CLI-SNAPSHOT"]
    assert "vllm 0.8.5" in note.message and "speculative" in note.message


def test_a_typo_in_extra_args_is_refused_on_its_line(tmp_path: Path) -> None:
    text = (DATA / "values-02-basic-config.yaml").read_text().replace('tag: "latest"', 'tag: "v0.32.0"')
    text = text.replace('"--gpu-memory-utilization"', '"--gpu-memory-utilisation"')
    values = tmp_path / "values.yaml"
    values.write_text(text)
    report = gate_paths([str(values)])
    refused = {f.key: f for f in report.findings if f.rule == "CLI-REFUSED"}
    # --disable-log-requests is gone from 0.17.0 to 0.32.0 (0.33.0 has it again), and argparse names
    # both unrecognized arguments in one line.
    assert set(refused) == {"--disable-log-requests", "--gpu-memory-utilisation"}
    finding = refused["--gpu-memory-utilisation"]
    assert "unrecognized arguments: --disable-log-requests --gpu-memory-utilisation 0.8" in finding.message
    assert "gone by 0.17.0" in refused["--disable-log-requests"].message
    assert finding.line is not None and "extraArgs" in text.splitlines()[finding.line - 1]
