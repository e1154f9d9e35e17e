"""Any config.json a drafter may carry gives a fix report (findings) or a one-line usage error, never
a traceback; and the streaming writer copies bytes exactly, keeps holes, and never loads a tensor."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specprobe.checkpoint.rewrite import ByteRange, OutTensor, sha256_range, write_streamed
from specprobe.checkpoint.safetensors_header import read_header
from specprobe.checkpoint.writer import TensorSpec, write_safetensors
from specprobe.demo.fixtures import DraftSpec, draft_config
from specprobe.findings import Report, SpecprobeError
from specprobe.fix.run import FixOptions, run_fix
from tests.fix.builders import make_draft, make_target

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
KEYS = sorted(
    {*draft_config(DraftSpec(draft_format="specforge")), *draft_config(DraftSpec(draft_format="speculators")),
     "eagle_aux_hidden_state_layer_ids", "num_aux_hidden_states", "target_hidden_size", "eagle_config"}
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    fmt=st.sampled_from(["eagle3", "specforge", "speculators", "vllm-native", "eagle3-mla"]),
    edits=st.dictionaries(st.sampled_from(KEYS), json_values | st.just("__remove__"), max_size=4),
    engine=st.sampled_from(["vllm==0.33.0", "sglang==0.5.23", "sglang==0.5.11", "vllm==0.16.0"]),
)
def test_any_config_is_a_finding_or_a_usage_error(
    tmp_path_factory: object, fmt: str, edits: dict, engine: str
) -> None:
    root = tmp_path_factory.mktemp("prop")  # type: ignore[attr-defined]
    target = make_target(root / "target", weights=False)

    def edit(spec: DraftSpec, config: dict, tensors: dict) -> None:
        for key, value in edits.items():
            if value == "__remove__":
                config.pop(key, None)
            else:
                config[key] = value

    draft = make_draft(root / "draft", DraftSpec(draft_format=fmt), edit)
    try:
        report = run_fix(FixOptions(draft=draft, target=str(target), engine=engine, plan_only=True))
    except SpecprobeError as exc:
        assert "\n" not in str(exc)
        return
    assert isinstance(report, Report)
    assert not report.ok or "FIX-PROOF" in report.fired()
    assert sorted(p.name for p in root.iterdir()) == ["draft", "target"]


def test_streamed_copy_is_exact_and_keeps_holes(tmp_path: Path) -> None:
    source = tmp_path / "source.safetensors"
    data = np.arange(4096, dtype=np.float32)
    write_safetensors(source, {"hole": TensorSpec("F32", (1024, 1024)), "data": data, "tail": TensorSpec("BF16", (8,))})
    header = read_header(source)
    tensors = [
        OutTensor(f"renamed.{name}", entry.dtype, entry.shape, ranges=(ByteRange(source, entry.begin, entry.nbytes),))
        for name, entry in header.tensors.items()
    ]
    tensors.append(OutTensor("d2t", "I64", (2,), data=(5).to_bytes(8, "little") * 2))
    out = tmp_path / "out.safetensors"
    result = write_streamed(out, tensors, {"format": "pt"})
    copied = read_header(out)
    assert not copied.problems and copied.metadata == {"format": "pt"}
    for name, entry in header.tensors.items():
        new = copied.tensors[f"renamed.{name}"]
        assert (new.dtype, new.shape) == (entry.dtype, entry.shape)
        assert sha256_range(out, new.begin, new.nbytes) == sha256_range(source, entry.begin, entry.nbytes)
    assert result.size == out.stat().st_size
    # The 4 MiB hole stays a hole: far fewer blocks than the apparent size.
    assert out.stat().st_blocks * 512 < 1024 * 1024


def test_existing_output_file_is_never_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "out.safetensors"
    out.write_bytes(b"keep")
    with contextlib.suppress(FileExistsError):
        write_streamed(out, [OutTensor("x", "U8", (1,), data=b"\x01")])
    assert out.read_bytes() == b"keep"


def test_cli_one_line_errors(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from specprobe.cli import app

    target = make_target(tmp_path / "target", weights=False)
    draft = make_draft(tmp_path / "draft", DraftSpec())
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    runner = CliRunner()
    for args in (
        ["fix", str(draft), "--target", str(target), "--engine", "vllm==0.33.0", "--out", str(tmp_path / "full")],
        ["fix", str(draft), "--target", str(target), "--engine", "vllm==0.33.0", "--out", str(draft / "o")],
        ["fix", str(draft), "--target", str(target), "--engine", "vllm", "--out", str(tmp_path / "o")],
        ["fix", str(draft), "--target", str(target), "--engine", "vllm==0.33.0"],
        ["fix", str(tmp_path / "nope"), "--target", str(target), "--engine", "vllm==0.33.0", "--plan"],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert result.output.count("\n") == 1 and "Traceback" not in result.output
    ok = runner.invoke(app, ["fix", str(draft), "--target", str(target), "--engine", "sglang==0.5.23",
                             "--out", str(tmp_path / "new"), "--format", "json"])
    assert ok.exit_code == 0, ok.output
    payload = json.loads(ok.stdout)
    assert payload["command"] == "fix" and payload["ok"] is True and payload["plan"]["changes"]
    assert payload["proof"]["check"]["ok"] is True
    md = runner.invoke(app, ["fix", str(draft), "--target", str(target), "--engine", "sglang==0.5.23",
                             "--plan", "--format", "markdown"])
    assert md.exit_code == 0 and "FIX-" in md.stdout


def test_renamed_copy_keeps_page_positions(tmp_path: Path) -> None:
    """A rename changes the header's length; padding keeps each tensor at its source's page offset."""
    from specprobe.demo.fixtures import DraftSpec as Spec
    from tests.fix.builders import make_draft as draft_of

    target = make_target(tmp_path / "target", weights=False)
    draft = draft_of(tmp_path / "draft", Spec(draft_format="vllm-native"))
    report = run_fix(FixOptions(draft=draft, target=str(target), engine="sglang==0.5.11", out=tmp_path / "out"))
    assert report.ok and "FIX-TENSOR-NAMES" in report.fired()
    source, copy = read_header(draft / "model.safetensors"), read_header(tmp_path / "out" / "model.safetensors")
    assert not copy.problems
    for name, entry in source.tensors.items():
        moved = copy.tensors[name.replace("layers.0.", "midlayer.")]
        assert moved.begin % 4096 == entry.begin % 4096
