"""speculators dumps take their loss mask from the pipeline's preprocessed dataset (Arrow shards written by
datasets' save_to_disk): layouts, the replay it changes, and bad datasets as findings (hypothesis over bytes)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from specprobe.cli import app

torch = pytest.importorskip("torch")

from specprobe.smoke.dumps import DumpError, list_dump  # noqa: E402
from specprobe.smoke.speculators_dataset import find_dataset, open_dataset  # noqa: E402
from tests.smoke.data.make_speculators_dataset import speculators_rows  # noqa: E402
from tests.smoke.dump_writer import (  # noqa: E402
    speculators_table,
    synthetic_record,
    tiny_drafter,
    write_speculators_dataset,
    write_speculators_sample,
)

DATASETS_WRITTEN = Path(__file__).parent / "data" / "speculators_dataset"
KEYS = ("mean_acceptance_length", "per_position", "drafts", "accepted_tokens", "samples", "response_tokens", "tokens")


def _records(count: int = 4) -> list[dict]:
    """Multi-turn samples: context, a response, a second user turn, a second response (two masked runs)."""
    records = []
    for index in range(count):
        record = synthetic_record(length=40, prompt=6, seed=index)
        mask = torch.zeros(40, dtype=torch.long)
        mask[6 + index : 20] = 1
        mask[26:40] = 1
        record["loss_mask"] = mask
        records.append(record)
    return records


def _constant_drafter(folder: Path) -> tuple[Path, int]:
    """The tiny drafter with a zero lm_head: every draft is draft id 0, i.e. target token d2t[0]."""
    from safetensors.torch import load_file, save_file

    draft = tiny_drafter(folder)
    weights = load_file(str(draft / "model.safetensors"))
    weights["lm_head.weight"] = torch.zeros_like(weights["lm_head.weight"])
    save_file(weights, str(draft / "model.safetensors"))
    return draft, int(weights["d2t"][0])


def _layout(base: Path, records: list[dict], *, in_file: bool = False, dataset: bool = True,
            shards: int = 1) -> Path:
    """speculators' default layout: <base>/data (the dataset), <base>/data/hidden_states/hs_<i>.safetensors."""
    data = base / "data"
    for index, record in enumerate(records):
        write_speculators_sample(record, data / "hidden_states" / f"hs_{index}.safetensors", with_loss_mask=in_file)
    if dataset:
        rows = [(r["input_ids"].tolist(), r["loss_mask"].tolist()) for r in records]
        write_speculators_dataset(data, rows, shards=shards, batch_rows=3)
    return data


def _smoke(*args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(app, ["smoke", *args, "--format", "json", "--no-progress"])
    try:
        return result.exit_code, json.loads(result.stdout)
    except json.JSONDecodeError:
        return result.exit_code, {"stdout": result.stdout, "stderr": result.stderr, "output": result.output}


def _rules(report: dict) -> set[str]:
    return {f["rule"] for f in report.get("findings", [])}


def _messages(report: dict, rule: str) -> list[str]:
    return [f["message"] for f in report.get("findings", []) if f["rule"] == rule]


def test_the_replay_uses_the_datasets_mask(tmp_path: Path) -> None:
    # The drafter always proposes one token, and the responses are that token: within the loss mask every
    # draft is accepted (K + 1 = 3 tokens a round), over the prompts almost none is.
    draft, proposed = _constant_drafter(tmp_path / "draft")
    records = _records()
    for record in records:
        ids = record["input_ids"]
        ids[ids == proposed] = (proposed + 1) % 256
        ids[record["loss_mask"] != 0] = proposed
    with_dataset = _layout(tmp_path / "a", records, shards=2)
    in_file = _layout(tmp_path / "b", records, in_file=True, dataset=False)
    without = _layout(tmp_path / "c", records, dataset=False)
    code, report = _smoke("--draft", str(draft), "--hidden-states", str(with_dataset / "hidden_states"), "-k", "2")
    assert code == 0, report
    assert report["loss_mask_source"] == "speculators dataset"
    assert report["loss_mask_dataset"] == str(with_dataset)
    assert not any(f["severity"] == "warning" for f in report["findings"]), report["findings"]
    assert report["response_tokens"] == sum(int(r["loss_mask"].sum()) for r in records)
    assert report["mean_acceptance_length"] == 3.0 and report["per_position"] == [1.0, 1.0]
    _, own = _smoke("--draft", str(draft), "--hidden-states", str(in_file / "hidden_states"), "-k", "2")
    assert own["loss_mask_source"] == "files"
    for key in KEYS:
        assert report[key] == own[key], key
    _, unmasked = _smoke("--draft", str(draft), "--hidden-states", str(without / "hidden_states"), "-k", "2")
    assert unmasked["loss_mask_source"] == "none: every token after the first"
    assert unmasked["response_tokens"] == 4 * 39
    assert unmasked["mean_acceptance_length"] < 2.5 and unmasked["drafts"] > report["drafts"], unmasked
    warnings = [f["message"] for f in unmasked["findings"] if f["severity"] == "warning"]
    assert any("--loss-mask-dataset" in m and "state.json" in m for m in warnings), warnings


def test_the_dataset_is_found_wherever_speculators_puts_it_or_given(tmp_path: Path) -> None:
    draft = tiny_drafter(tmp_path / "draft")
    records = _records(2)
    data = _layout(tmp_path / "run", records)
    assert find_dataset(list_dump(data / "hidden_states")) == data
    # The dataset folder itself given as the dump (its hidden_states/ below it).
    assert find_dataset(list_dump(data)) == data
    # hs files written into the dataset folder itself (one --output for both scripts).
    flat = tmp_path / "flat"
    shutil.copytree(data, flat, ignore=shutil.ignore_patterns("hidden_states"))
    for path in (data / "hidden_states").iterdir():
        shutil.copy(path, flat / path.name)
    assert find_dataset(list_dump(flat)) == flat
    # Elsewhere: only with --loss-mask-dataset.
    moved = tmp_path / "elsewhere"
    shutil.move(data / "hidden_states", moved)
    assert find_dataset(list_dump(moved)) is None
    code, report = _smoke("--draft", str(draft), "--hidden-states", str(moved), "--loss-mask-dataset", str(data))
    assert code == 0 and report["loss_mask_source"] == "speculators dataset", report


def test_a_mask_in_the_file_comes_first(tmp_path: Path) -> None:
    draft = tiny_drafter(tmp_path / "draft")
    records = _records(2)
    data = _layout(tmp_path / "run", records, in_file=True, dataset=False)
    other = [(r["input_ids"].tolist(), [1] * 40) for r in records]
    write_speculators_dataset(data, other)
    code, report = _smoke("--draft", str(draft), "--hidden-states", str(data / "hidden_states"))
    assert code == 0 and report["loss_mask_source"] == "files", report


def test_a_dataset_written_by_datasets_itself_reads_back(tmp_path: Path) -> None:
    dataset = open_dataset(DATASETS_WRITTEN)
    assert dataset.rows == 5 and len(dataset.shards) == 2
    read = []
    for index in range(dataset.rows):
        ids, mask = dataset.row(index, f"hs_{index}.safetensors")
        assert ids.dtype == torch.long and mask.shape == ids.shape
        read.append((ids.tolist(), mask.tolist()))
    assert sorted(read) == sorted(speculators_rows())
    assert read != speculators_rows()  # prepare_data.py shuffles: rows are read in the saved order
    # The test writer's schema is the one datasets wrote.
    with pa.memory_map(str(DATASETS_WRITTEN / "data-00000-of-00002.arrow")) as source:
        written = pa.ipc.open_stream(source).schema
    assert written.equals(speculators_table(speculators_rows()).schema, check_metadata=True)


def test_wrong_datasets_are_findings_not_numbers(tmp_path: Path) -> None:
    draft = tiny_drafter(tmp_path / "draft")
    records = _records(3)

    def run(data: Path) -> tuple[int, dict]:
        return _smoke("--draft", str(draft), "--hidden-states", str(data / "hidden_states"))

    # Fewer rows than samples: another dataset.
    short = _layout(tmp_path / "short", records, dataset=False)
    write_speculators_dataset(short, [(r["input_ids"].tolist(), r["loss_mask"].tolist()) for r in records[:2]])
    code, report = run(short)
    assert code == 1 and "SMOKE-DUMP-MISMATCH" in _rules(report) and "mean_acceptance_length" not in report
    assert any("hs_2.safetensors" in m and "2 rows" in m for m in _messages(report, "SMOKE-DUMP-MISMATCH"))
    # Other tokens in a row: another dataset.
    other = _layout(tmp_path / "other", records, dataset=False)
    rows = [(r["input_ids"].tolist(), r["loss_mask"].tolist()) for r in records]
    rows[1] = ([(t + 1) % 256 for t in rows[1][0]], rows[1][1])
    write_speculators_dataset(other, rows)
    code, report = run(other)
    assert code == 1 and "mean_acceptance_length" not in report
    assert any("differ" in m for m in _messages(report, "SMOKE-DUMP-MISMATCH")), report
    # A mask shorter than the row's tokens: that sample is unreadable and left out.
    skew = _layout(tmp_path / "skew", records, dataset=False)
    rows = [(r["input_ids"].tolist(), r["loss_mask"].tolist()) for r in records]
    rows[0] = (rows[0][0], rows[0][1][:-3])
    write_speculators_dataset(skew, rows)
    code, report = run(skew)
    assert code == 1 and report["samples"] == 2 and report["samples_skipped"] == 1, report
    assert any("37 loss_mask" in m for m in _messages(report, "SMOKE-DUMP-UNREADABLE"))


def _bad_shard(tmp_path: Path, name: str, table: pa.Table | None = None, data: bytes | None = None) -> Path:
    folder = _layout(tmp_path / name, _records(2))
    shard = folder / "data-00000-of-00001.arrow"
    if table is not None:
        with pa.OSFile(str(shard), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
    if data is not None:
        shard.write_bytes(data)
    return folder


def test_unreadable_datasets_are_one_line_findings(tmp_path: Path) -> None:
    draft = tiny_drafter(tmp_path / "draft")
    good = _layout(tmp_path / "good", _records(2))
    shard_bytes = (good / "data-00000-of-00001.arrow").read_bytes()
    rows = [(r["input_ids"].tolist(), r["loss_mask"].tolist()) for r in _records(2)]
    strings = pa.table({"input_ids": [[str(t) for t in ids] for ids, _ in rows], "loss_mask": [m for _, m in rows]})
    floats = pa.table({"input_ids": [ids for ids, _ in rows], "loss_mask": [[float(v) for v in m] for _, m in rows]})
    no_mask = pa.table({"input_ids": [ids for ids, _ in rows]})
    cases = {
        "truncated": (_bad_shard(tmp_path, "truncated", data=shard_bytes[: len(shard_bytes) * 2 // 3]), "truncated"),
        # Cut at a record batch boundary, the end-of-stream marker lost: still parses, so it is checked.
        "no-eos": (_bad_shard(tmp_path, "no-eos", data=shard_bytes[:-8]), "end-of-stream"),
        "empty": (_bad_shard(tmp_path, "empty", data=b""), "empty"),
        "strings": (_bad_shard(tmp_path, "strings", table=strings), "not a list of integers"),
        "floats": (_bad_shard(tmp_path, "floats", table=floats), "not a list of integers"),
        "no-mask-column": (_bad_shard(tmp_path, "nomask", table=no_mask), "no loss_mask column"),
    }
    escape = _layout(tmp_path / "escape", _records(2))
    (escape / "state.json").write_text(json.dumps({"_data_files": [{"filename": "../good/data-00000-of-00001.arrow"}]}))
    cases["escape"] = (escape, "not a file name")
    garbled = _layout(tmp_path / "garbled", _records(2))
    (garbled / "state.json").write_text("{not json")
    cases["state"] = (garbled, "state.json")
    for label, (data, words) in cases.items():
        code, report = _smoke("--draft", str(draft), "--hidden-states", str(data / "hidden_states"))
        messages = _messages(report, "SMOKE-DUMP-UNREADABLE")
        assert code == 1 and "mean_acceptance_length" not in report, (label, report)
        assert any(words in m for m in messages) and all("\n" not in m for m in messages), (label, messages)


def test_without_pyarrow_the_replay_warns_and_names_the_extra(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    draft = tiny_drafter(tmp_path / "draft")
    data = _layout(tmp_path / "run", _records(2))
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    code, report = _smoke("--draft", str(draft), "--hidden-states", str(data / "hidden_states"))
    assert code == 0 and report["loss_mask_source"].startswith("none"), report
    warnings = [f["message"] for f in report["findings"] if f["severity"] == "warning"]
    assert any("specprobe[smoke]" in m and "pyarrow" in m for m in warnings), warnings
    result = CliRunner().invoke(app, ["smoke", "--draft", str(draft), "--hidden-states", str(data / "hidden_states"),
                                      "--loss-mask-dataset", str(data)])
    assert result.exit_code == 2 and "specprobe[smoke]" in result.output


def test_loss_mask_dataset_arguments(tmp_path: Path) -> None:
    from tests.smoke.dump_writer import sample_path, save_record

    draft = tiny_drafter(tmp_path / "draft")
    data = _layout(tmp_path / "run", _records(1))
    result = CliRunner().invoke(app, ["smoke", "--draft", str(draft), "--loss-mask-dataset", str(data)])
    assert result.exit_code == 2 and "needs --hidden-states" in result.output
    save_record(synthetic_record(), sample_path(tmp_path / "specforge", 0))
    result = CliRunner().invoke(app, ["smoke", "--draft", str(draft), "--hidden-states", str(tmp_path / "specforge"),
                                      "--loss-mask-dataset", str(data)])
    assert result.exit_code == 2 and "speculators dumps" in result.output
    result = CliRunner().invoke(app, ["smoke", "--draft", str(draft), "--hidden-states", str(data / "hidden_states"),
                                      "--loss-mask-dataset", str(tmp_path / "missing")])
    assert result.exit_code == 2 and "not a folder" in result.output


def _read_everything(folder: Path) -> None:
    dataset = open_dataset(folder)
    for index in range(min(dataset.rows, 64)):
        try:
            dataset.row(index, f"hs_{index}.safetensors")
        except DumpError as exc:
            assert exc.kind == "unreadable" and "\n" not in str(exc)


def _fresh(tmp_path_factory: pytest.TempPathFactory, shard: bytes) -> Path:
    folder = tmp_path_factory.mktemp("arrow")
    write_speculators_dataset(folder, [([1, 2, 3], [0, 1, 1])])
    (folder / "data-00000-of-00001.arrow").write_bytes(shard)
    return folder


_VALID = speculators_table([([5, 6, 7, 8], [0, 0, 1, 1]), ([9] * 12, [0] * 4 + [1] * 8), ([1], [1])])


def _valid_shard(encoding: str) -> bytes:
    """The shard as datasets writes it (a stream), or compressed, or in the IPC file format."""
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression="zstd" if encoding == "zstd" else None)
    opened = pa.ipc.new_file if encoding == "file" else pa.ipc.new_stream
    with opened(sink, _VALID.schema, options=options) as writer:
        for batch in _VALID.to_batches(max_chunksize=2):
            writer.write_batch(batch)
    return bytes(sink.getvalue().to_pybytes())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), encoding=st.sampled_from(["stream", "stream", "zstd", "file"]))
def test_corrupted_arrow_bytes_give_rows_or_a_dump_error(tmp_path_factory, data, encoding: str) -> None:
    shard = bytearray(_valid_shard(encoding))
    for _ in range(data.draw(st.integers(1, 8))):
        at = data.draw(st.integers(0, len(shard) - 1))
        shard[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.sampled_from([None, *range(0, len(shard), 7)]))
    folder = _fresh(tmp_path_factory, bytes(shard[:cut] if cut is not None else shard))
    try:
        _read_everything(folder)
    except DumpError as exc:
        assert exc.kind in ("unreadable", "mismatch") and "\n" not in str(exc)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(blob=st.binary(max_size=800))
def test_any_bytes_as_a_shard_give_a_dump_error(tmp_path_factory, blob: bytes) -> None:
    folder = _fresh(tmp_path_factory, blob)
    with pytest.raises(DumpError) as raised:
        open_dataset(folder)
    assert raised.value.kind == "unreadable" and "\n" not in str(raised.value)


def _rewrite(folder: Path, table: pa.Table, *, compression: str | None = None, file_format: bool = False) -> None:
    shard = folder / "data-00000-of-00001.arrow"
    options = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.OSFile(str(shard), "wb") as sink:
        opened = pa.ipc.new_file if file_format else pa.ipc.new_stream
        with opened(sink, table.schema, options=options) as writer:
            writer.write_table(table, max_chunksize=700)


def test_other_arrow_encodings_read_the_same_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    from specprobe.smoke import speculators_dataset

    rows = [([i, i + 1, i + 2], [0, 1, 1]) for i in range(2500)]
    table = speculators_table(rows)
    expected = [(torch.tensor(ids), torch.tensor(mask)) for ids, mask in rows]
    for label, kwargs in {"zstd": {"compression": "zstd"}, "file": {"file_format": True},
                          "lz4-file": {"compression": "lz4", "file_format": True}}.items():
        folder = write_speculators_dataset(tmp_path / label, rows[:1])
        _rewrite(folder, table, **kwargs)
        dataset = open_dataset(folder)
        assert dataset.rows == 2500, label
        for index in (0, 699, 700, 2499):
            ids, mask = dataset.row(index, "hs")
            assert torch.equal(ids, expected[index][0]) and torch.equal(mask, expected[index][1]), (label, index)
        del dataset, ids, mask
        gc.collect()  # decompressed buffers freed after the reader: nothing may outlive what they point into
    # Decompression allocates what the stream declares: past the bound the dataset is refused.
    monkeypatch.setattr(speculators_dataset, "MAX_ALLOCATED_BYTES", 1024)
    with pytest.raises(DumpError, match="allocate more than 1024 bytes"):
        open_dataset(tmp_path / "zstd")


def test_null_rows_and_other_integer_types(tmp_path: Path) -> None:
    folder = write_speculators_dataset(tmp_path / "nulls", [([1], [1])])
    _rewrite(folder, pa.table({
        "input_ids": pa.array([[1, 2], None, [1, None]], pa.list_(pa.int32())),
        "loss_mask": pa.array([[0, 1], [1], [0, 1]], pa.list_(pa.int64())),
    }))
    dataset = open_dataset(folder)
    assert [v.tolist() for v in dataset.row(0, "hs_0")] == [[1, 2], [0, 1]]
    for index, words in ((1, "no input_ids (null)"), (2, "holds nulls")):
        with pytest.raises(DumpError, match=words.replace("(", r"\(").replace(")", r"\)")):
            dataset.row(index, f"hs_{index}")
    # large_list of int64 ids and a boolean mask: read as integers.
    _rewrite(folder, pa.table({
        "input_ids": pa.array([[7, 8]], pa.large_list(pa.int64())),
        "loss_mask": pa.array([[False, True]], pa.list_(pa.bool_())),
    }))
    assert [v.tolist() for v in open_dataset(folder).row(0, "hs_0")] == [[7, 8], [0, 1]]
