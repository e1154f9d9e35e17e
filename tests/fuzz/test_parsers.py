"""Property tests over every parser of untrusted bytes: no exception escapes but the documented one,
and time and memory stay bounded however the input is shaped."""

from __future__ import annotations

import contextlib
import json
import struct
import time
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specprobe.checkpoint.folder import MAX_INDEX_BYTES, load_checkpoint
from specprobe.checkpoint.safetensors_header import HeaderError, read_header
from specprobe.checkpoint.vocab import decode_integers
from specprobe.compat.loader import MatrixError, load_file
from specprobe.compat.record import load_smoke_json
from specprobe.findings import SpecprobeError
from specprobe.hfconfig import MAX_CONFIG_BYTES, ConfigError, attention_traits, parse_model_config, read_config_json
from specprobe.untrusted.files import UntrustedInputError, parse_json
from tests.fuzz.conftest import EXAMPLES
from tests.fuzz.strategies import HEADERS, JSON_VALUES, dumps, hostile_snippets

pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")


def _splice(base: str, snippet: str, at: int) -> str:
    position = at % (len(base) + 1)
    return base[:position] + snippet + base[position:]


JSON_TEXTS = st.one_of(
    JSON_VALUES.map(dumps),
    hostile_snippets(),
    st.builds(_splice, JSON_VALUES.map(dumps), hostile_snippets(), st.integers(min_value=0)),
    st.text(max_size=50),
)


@EXAMPLES
@given(JSON_TEXTS)
def test_parse_json_raises_only_its_own_error(text: str) -> None:
    try:
        parsed = parse_json(text, what="input")
    except UntrustedInputError as exc:
        assert "\n" not in str(exc)
        return
    json.dumps(parsed.value)  # whatever was accepted can be walked by the code after it


@EXAMPLES
@given(JSON_TEXTS)
def test_config_json_is_a_config_or_a_config_error(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    path = tmp_path_factory.mktemp("config") / "config.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        raw = read_config_json(path).value
    except ConfigError:
        return
    config = parse_model_config(raw)
    attention_traits(config)


@EXAMPLES
@given(st.dictionaries(st.sampled_from(
    ["hidden_size", "num_attention_heads", "num_key_value_heads", "text_config", "layer_types",
     "hybrid_override_pattern", "attn_type_list", "sliding_window", "kv_lora_rank", "rope_scaling",
     "architectures", "max_position_embeddings", "tie_word_embeddings", "model_type"]), JSON_VALUES, max_size=8))
def test_any_config_values_classify_without_raising(raw: dict) -> None:  # fmt: skip
    attention_traits(parse_model_config(raw))


def _write_header(path: Path, header: bytes, data: bytes = b"") -> None:
    path.write_bytes(struct.pack("<Q", len(header)) + header + data)


@EXAMPLES
@given(HEADERS.map(dumps), st.binary(max_size=64), st.integers(min_value=0, max_value=2**64 - 1))
def test_safetensors_header_is_a_header_or_a_header_error(
    tmp_path_factory: pytest.TempPathFactory, header: str, data: bytes, length: int
) -> None:
    folder = tmp_path_factory.mktemp("st")
    _write_header(folder / "a.safetensors", header.encode("utf-8", "surrogatepass"), data)
    (folder / "b.safetensors").write_bytes(struct.pack("<Q", length) + data)
    for name in ("a.safetensors", "b.safetensors"):
        try:
            read_header(folder / name)
        except HeaderError as exc:
            assert exc.kind in ("header", "truncated", "unreadable")


@EXAMPLES
@given(st.one_of(JSON_VALUES.map(lambda v: dumps({"weight_map": v})), JSON_TEXTS))
def test_shard_index_is_read_or_a_finding(tmp_path_factory: pytest.TempPathFactory, index: str) -> None:
    folder = tmp_path_factory.mktemp("index")
    (folder / "config.json").write_text("{}", encoding="utf-8")
    (folder / "model.safetensors.index.json").write_text(index, encoding="utf-8", errors="surrogatepass")
    load_checkpoint(folder)


@EXAMPLES
@given(st.sampled_from(["BOOL", "U8", "I8", "I16", "U16", "I32", "U32", "I64", "U64"]), st.binary(max_size=64))
def test_vocab_maps_decode_or_raise_value_error(dtype: str, data: bytes) -> None:
    try:
        values = decode_integers(data, dtype)
    except ValueError:
        return
    assert len(values) <= len(data)


def _smoke_result(value: object) -> str:
    return dumps({"command": "smoke", "subject": {"target": "t"}, "acceptance_rate": value, "speedup": value,
                  "ci95": value})  # fmt: skip


@EXAMPLES
@given(st.one_of(JSON_TEXTS, JSON_VALUES.map(_smoke_result)))
def test_smoke_results_load_or_are_a_usage_error(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    path = tmp_path_factory.mktemp("smoke") / "result.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        data = load_smoke_json(path)
    except SpecprobeError as exc:
        assert "\n" not in str(exc)
        return
    json.dumps(data)


YAML_TEXTS = st.one_of(
    JSON_VALUES.map(dumps),
    JSON_VALUES.map(lambda v: dumps({"entries": [v]})),
    st.integers(min_value=1, max_value=3000).map(lambda depth: "[" * depth + "]" * depth),
    st.integers(min_value=1, max_value=8).map(
        lambda levels: "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, levels + 1))
    ),
    st.text(max_size=60),
)


@EXAMPLES
@given(YAML_TEXTS)
def test_matrix_yaml_loads_or_is_a_matrix_error(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    path = tmp_path_factory.mktemp("matrix") / "extra.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    started = time.monotonic()
    with contextlib.suppress(MatrixError):
        load_file(path)
    assert time.monotonic() - started < 10


@pytest.mark.parametrize(
    ("name", "limit"), [("config.json", MAX_CONFIG_BYTES), ("model.safetensors.index.json", MAX_INDEX_BYTES)]
)
def test_oversized_files_are_refused_before_they_are_read(tmp_path: Path, name: str, limit: int) -> None:
    folder = tmp_path / "draft"
    folder.mkdir()
    (folder / "config.json").write_text("{}", encoding="utf-8")
    with (folder / name).open("w", encoding="utf-8") as handle:
        handle.write('{"k": [' + "1," * (limit // 2) + "1]}")
    tracemalloc.start()
    try:
        checkpoint = load_checkpoint(folder)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert any("limit" in issue.message for issue in checkpoint.issues)
    assert peak < 2 * 1024 * 1024, f"{peak} bytes allocated to refuse an oversized {name}"
