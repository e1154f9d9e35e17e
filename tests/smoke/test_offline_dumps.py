"""Hidden-state dumps as untrusted input: format detection, parsing, bounds and refusals, on small
synthetic drafters (random weights) and dumps written the way SpecForge and speculators write them."""

from __future__ import annotations

import gzip
import itertools
import json
import os
import pickle
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from specprobe.cli import app

torch = pytest.importorskip("torch")

from specprobe.smoke.dumps import (  # noqa: E402
    DumpError,
    DumpExpectation,
    DumpFormat,
    DumpSample,
    list_dump,
    load_torch_sample,
    parse_specforge,
    response_spans,
    select_files,
)
from tests.smoke.dump_writer import (  # noqa: E402
    AUX,
    HIDDEN,
    VOCAB,
    sample_path,
    save_record,
    synthetic_record,
    tiny_drafter,
)

EXPECT = DumpExpectation(HIDDEN, len(AUX), VOCAB)
_drafter = tiny_drafter
_record = synthetic_record


def _dump(folder: Path, records: list[dict], *, compress: bool = False) -> Path:
    for index, record in enumerate(records):
        save_record(record, sample_path(folder, index, compress=compress), compress=compress)
    return folder


def _smoke(*args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(app, ["smoke", *args, "--format", "json", "--no-progress"])
    try:
        return result.exit_code, json.loads(result.stdout)
    except json.JSONDecodeError:
        return result.exit_code, {"stdout": result.stdout, "stderr": result.stderr}


def _rules(report: dict) -> set[str]:
    return {f["rule"] for f in report.get("findings", [])}


def test_specforge_dump_gives_the_figures_in_the_smoke_envelope(tmp_path: Path) -> None:
    draft = _drafter(tmp_path / "draft")
    dump = _dump(tmp_path / "dump", [_record(seed=i) for i in range(3)])
    code, report = _smoke("--draft", str(draft), "--hidden-states", str(dump), "-k", "3")
    assert code == 0, report
    assert report["command"] == "smoke" and report["source"] == "hidden-states"
    assert report["samples"] == 3 and report["dump_format"] == "specforge"
    assert report["generation"] == "not recorded"
    assert len(report["per_position"]) == 3 and report["drafts"] > 0
    assert 1.0 <= report["mean_acceptance_length"] <= 4.0
    # Each of 3 samples has 16 response tokens: rounds start at 8 and count while start + K + 1 <= 23.
    assert report["drafts"] >= 3 * 3
    assert "SMOKE-MEASURED" in _rules(report)


def test_compressed_dump_reads_like_the_plain_one(tmp_path: Path) -> None:
    draft = _drafter(tmp_path / "draft")
    records = [_record(seed=i) for i in range(3)]
    plain = _smoke("--draft", str(draft), "--hidden-states", str(_dump(tmp_path / "plain", records)))[1]
    packed = _smoke("--draft", str(draft), "--hidden-states", str(_dump(tmp_path / "gz", records, compress=True)))[1]
    assert list_dump(tmp_path / "gz").files[0].name == "data_0.ckpt.gz"
    for key in ("mean_acceptance_length", "per_position", "drafts", "accepted_tokens", "samples"):
        assert plain[key] == packed[key], key


def test_another_targets_dump_is_an_error_finding_not_a_number(tmp_path: Path) -> None:
    draft = _drafter(tmp_path / "draft")
    wider = _dump(tmp_path / "wider", [_record(width=48 * len(AUX))])
    fewer = _dump(tmp_path / "fewer", [_record(width=HIDDEN * 4)])
    vocab = _record()
    vocab["input_ids"][3] = VOCAB + 7
    other_vocab = _dump(tmp_path / "vocab", [vocab])
    for dump, words in ((wider, "another target"), (fewer, "4 layers"), (other_vocab, "vocabulary")):
        code, report = _smoke("--draft", str(draft), "--hidden-states", str(dump))
        assert code == 1, report
        assert "SMOKE-DUMP-MISMATCH" in _rules(report)
        assert "mean_acceptance_length" not in report
        assert any(words in f["message"] for f in report["findings"]), report["findings"]


def test_truncated_empty_and_nonfinite_files_are_findings(tmp_path: Path) -> None:
    draft = _drafter(tmp_path / "draft")
    records = [_record(seed=i) for i in range(4)]
    records[2]["aux_hidden_state"][0, 5, 3] = float("nan")
    dump = _dump(tmp_path / "dump", records)
    data = sample_path(dump, 1).read_bytes()
    sample_path(dump, 1).write_bytes(data[: len(data) // 2])
    sample_path(dump, 3).write_bytes(b"")
    code, report = _smoke("--draft", str(draft), "--hidden-states", str(dump))
    assert code == 1
    messages = [f["message"] for f in report["findings"] if f["rule"] == "SMOKE-DUMP-UNREADABLE"]
    assert any("data_1.ckpt" in m and "truncated" in m for m in messages), messages
    assert any("data_3.ckpt is empty" in m for m in messages), messages
    assert any("data_2.ckpt" in m and "NaN" in m for m in messages), messages
    assert report["samples"] == 1 and report["samples_skipped"] == 3


class _WritesAFile:
    """A pickle whose loading would create a file (``__reduce__`` -> ``os.system``)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return (os.system, (f"touch {self.marker}",))


def test_a_pickle_that_would_run_code_runs_nothing_and_gives_one_line(tmp_path: Path) -> None:
    draft = _drafter(tmp_path / "draft")
    marker = tmp_path / "pwned"
    path = sample_path(tmp_path / "dump", 0)
    path.parent.mkdir(parents=True)
    record = _record()
    record["payload"] = _WritesAFile(marker)
    with path.open("wb") as stream:
        pickle.dump(record, stream)
    # The same payload inside torch's zip format, compressed, as a second sample.
    gz = sample_path(tmp_path / "dump", 1, compress=True)
    with gzip.open(gz, "wb") as stream:
        torch.save({"aux_hidden_state": _WritesAFile(marker)}, stream)
    assert not marker.exists()
    before = sorted(p.name for p in (tmp_path / "dump").rglob("*"))
    with pytest.raises(DumpError, match="refused") as raised:
        load_torch_sample(path, tmp_path / "dump")
    assert "\n" not in str(raised.value)
    code, report = _smoke("--draft", str(draft), "--hidden-states", str(tmp_path / "dump"))
    assert not marker.exists(), "unpickling ran the payload"
    assert code == 1, report
    refused = [f["message"] for f in report["findings"] if f["rule"] == "SMOKE-DUMP-UNREADABLE"]
    assert refused and all("refused" in m and "nothing was run" in m and "\n" not in m for m in refused), refused
    assert sorted(p.name for p in (tmp_path / "dump").rglob("*")) == before  # nothing written beside the data


def test_eagle_ge_data_is_a_finding_not_a_number(tmp_path: Path) -> None:
    draft = _drafter(tmp_path / "draft")
    record = _record()
    del record["aux_hidden_state"]
    dump = _dump(tmp_path / "ge", [record, record])
    assert list_dump(dump).format is DumpFormat.EAGLE_GE_DATA
    code, report = _smoke("--draft", str(draft), "--hidden-states", str(dump))
    assert code == 1
    assert "SMOKE-DUMP-UNREADABLE" in _rules(report) and "mean_acceptance_length" not in report
    assert any("last hidden state" in f["message"] for f in report["findings"])


def test_not_a_dump_and_bad_arguments(tmp_path: Path) -> None:
    draft = _drafter(tmp_path / "draft")
    (tmp_path / "empty").mkdir()
    code, report = _smoke("--draft", str(draft), "--hidden-states", str(tmp_path / "empty"))
    assert code == 1 and "SMOKE-DUMP-UNREADABLE" in _rules(report)
    result = CliRunner().invoke(app, ["smoke", "--draft", str(draft), "--hidden-states", str(tmp_path / "missing")])
    assert result.exit_code == 2 and "not a folder" in result.output
    dump = _dump(tmp_path / "dump", [_record()])
    result = CliRunner().invoke(app, ["smoke", "--draft", str(draft), "--hidden-states", str(dump),
                                      "--max-samples", "0"])
    assert result.exit_code == 2


def test_speculators_dump(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    draft = _drafter(tmp_path / "draft")
    dump = tmp_path / "hs"
    dump.mkdir()
    for index in range(2):
        record = _record(seed=index)
        layers = record["aux_hidden_state"][0].reshape(24, len(AUX), HIDDEN)
        last = record["hidden_state"][0][:, None]
        save_file({"token_ids": record["input_ids"], "hidden_states": torch.cat([layers, last], dim=1)},
                  str(dump / f"hs_{index}.safetensors"))
    assert list_dump(dump).format is DumpFormat.SPECULATORS
    code, report = _smoke("--draft", str(draft), "--hidden-states", str(dump))
    # Without a loss mask in the files every token after the first is replayed, and a warning says so.
    assert code == 0, report
    assert report["samples"] == 2 and report["dump_format"] == "speculators"
    assert any(f["severity"] == "warning" and "loss_mask" in f["message"] for f in report["findings"])


def test_max_samples_is_a_seeded_sample(tmp_path: Path) -> None:
    dump = _dump(tmp_path / "dump", [_record(length=12, seed=i) for i in range(10)])
    folder = list_dump(dump)
    first = select_files(folder, 4, seed=0)
    assert first == select_files(folder, 4, seed=0) and len(first) == 4
    assert first != select_files(folder, 4, seed=1)
    assert select_files(folder, None, seed=0) == list(folder.files)


@given(st.lists(st.booleans(), max_size=40))
def test_response_spans_cover_exactly_the_marked_tokens_after_the_first(mask: list[bool]) -> None:
    spans = response_spans(torch.tensor(mask, dtype=torch.bool))
    covered = {i for first, last in spans for i in range(first, last + 1)}
    assert covered == {i for i, marked in enumerate(mask) if marked and i > 0}
    assert all(first <= last for first, last in spans)
    assert all(b[0] > a[1] + 1 for a, b in itertools.pairwise(spans))  # runs apart stay apart


_shapes = st.tuples(st.integers(0, 3), st.integers(0, 40), st.integers(0, 130))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ids_shape=_shapes,
    aux_shape=_shapes,
    mask_len=st.integers(0, 40),
    dtype=st.sampled_from([torch.float32, torch.bfloat16, torch.int64, torch.bool]),
    drop=st.sampled_from([None, "input_ids", "loss_mask", "aux_hidden_state"]),
)
def test_parsing_any_record_gives_a_sample_or_a_dump_error(ids_shape, aux_shape, mask_len, dtype, drop) -> None:
    record: dict = {
        "input_ids": torch.zeros(ids_shape[1:] if ids_shape[0] == 0 else ids_shape[:2], dtype=torch.long) + 3,
        "loss_mask": torch.ones(mask_len, dtype=torch.long),
        "aux_hidden_state": torch.ones(tuple(d for d in aux_shape if d) or (0,), dtype=dtype),
    }
    if drop:
        record.pop(drop)
    try:
        sample = parse_specforge(record, "data_0.ckpt", EXPECT)
    except DumpError as exc:
        assert exc.kind in ("unreadable", "mismatch", "last-layer-only", "nonfinite")
        assert "\n" not in str(exc)
        return
    assert sample.aux_hidden.shape == (sample.length, HIDDEN * len(AUX))
    assert sample.loss_mask.shape == (sample.length,) and sample.loss_mask.dtype == torch.bool


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=600), gz=st.booleans())
def test_any_bytes_in_a_sample_file_give_a_dump_error(tmp_path_factory, data: bytes, gz: bool) -> None:
    root = tmp_path_factory.mktemp("bytes")
    path = root / ("data_0.ckpt.gz" if gz else "data_0.ckpt")
    path.write_bytes(gzip.compress(data) if gz else data)
    with pytest.raises(DumpError) as raised:
        load_torch_sample(path, root)
    assert raised.value.kind == "unreadable" and "\n" not in str(raised.value)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(1, 4000), gz=st.booleans())
def test_truncated_sample_files_give_a_dump_error(tmp_path_factory, cut: int, gz: bool) -> None:
    root = tmp_path_factory.mktemp("cut")
    path = sample_path(root, 0, compress=gz)
    save_record(_record(length=10), path, compress=gz)
    data = path.read_bytes()
    if cut >= len(data):
        return
    path.write_bytes(data[: len(data) - cut])
    with pytest.raises(DumpError) as raised:
        load_torch_sample(path, root)
    assert raised.value.kind == "unreadable"


def test_gzip_bomb_is_refused_past_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "data_0.ckpt.gz"
    with gzip.open(path, "wb") as stream:
        stream.write(b"\0" * (8 << 20))
    with pytest.raises(DumpError, match="decompresses to more than"):
        load_torch_sample(path, tmp_path, limit=1 << 20)


def test_last_layer_states_must_predict_the_data_through_the_targets_head() -> None:
    from specprobe.smoke.offline import TargetHead, check_same_target

    generator = torch.Generator().manual_seed(0)
    head = TargetHead(norm=None, eps=1e-6, lm_head=torch.randn(VOCAB, HIDDEN, generator=generator))
    own, other = synthetic_record(length=80, prompt=8), synthetic_record(length=80, prompt=8, seed=1)
    ids = own["input_ids"]
    # This target's states: each one's head output peaks at the next token (greedy data).
    states = head.lm_head[torch.cat([ids[1:], ids[:1]])] * 4
    sample = DumpSample("data_0.ckpt", ids, own["loss_mask"] != 0, own["aux_hidden_state"][0], last_hidden=states)
    said = check_same_target([sample], head)
    assert said is not None and said["agreement"] == 1.0 and said["chance"] < 0.2
    foreign = DumpSample("data_1.ckpt", ids, own["loss_mask"] != 0, own["aux_hidden_state"][0],
                         last_hidden=other["hidden_state"][0])
    with pytest.raises(DumpError, match="another target") as raised:
        check_same_target([foreign], head)
    assert raised.value.kind == "mismatch"
    without = DumpSample("data_2.ckpt", ids, own["loss_mask"] != 0, own["aux_hidden_state"][0])
    assert check_same_target([without], head) is None
