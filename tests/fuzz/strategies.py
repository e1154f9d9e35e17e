"""Hypothesis strategies for hostile input: JSON values and texts, safetensors headers, argv vectors.

Bounded sizes keep each example in milliseconds; the hostile shapes that need size (deep nesting, long
integers, huge declared tensors) are built as text by ``hostile_snippets`` rather than grown by search.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from specprobe.checkpoint.safetensors_header import DTYPE_SIZES

# Strings that have broken parsers and terminals: controls, escapes, bidi overrides, path tricks.
NASTY_TEXT = st.sampled_from(
    [
        "",
        "\n",
        "\x1b[2J",
        "\x1b]8;;http://x\x07link",
        "\u202e",
        "\x00",
        "[bold]",
        "../../etc/passwd",
        "/abs/path",
        "~root/x",
        "x" * 300,
        "NaN",
        "%0A::error::x",
        "\ud800",
        "LlamaForCausalLMEagle3",
        "eagle3",
    ]
)

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    NASTY_TEXT,
)

JSON_VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(st.one_of(st.text(max_size=10), NASTY_TEXT), children, max_size=5),
    ),
    max_leaves=25,
)


def hostile_snippets() -> st.SearchStrategy[str]:
    """JSON texts that are hostile by size or shape rather than by content."""
    return st.one_of(
        st.integers(min_value=1, max_value=20_000).map(lambda depth: "[" * depth + "]" * depth),
        st.integers(min_value=1, max_value=20_000).map(lambda depth: '{"a":' * depth + "1" + "}" * depth),
        st.integers(min_value=19, max_value=6000).map(lambda digits: "9" * digits),
        st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-0", "1E400", '"\\ud800"', "\ufeff{}"]),
    )


def dumps(value: Any) -> str:
    """JSON text of a value that may hold NaN/Infinity (written as Python's json writes them)."""
    return json.dumps(value, allow_nan=True)


def _entry(dtype: Any, shape: Any, offsets: Any) -> dict[str, Any]:
    return {"dtype": dtype, "shape": shape, "data_offsets": offsets}


SIZES = st.one_of(st.integers(min_value=0, max_value=64), st.integers(min_value=-2, max_value=2**66), JSON_VALUES)

HEADER_ENTRIES = st.one_of(
    st.builds(
        _entry,
        st.one_of(st.sampled_from(sorted(DTYPE_SIZES)), st.text(max_size=5)),
        st.lists(SIZES, max_size=4),
        st.lists(SIZES, min_size=0, max_size=3),
    ),
    JSON_VALUES,
)

TENSOR_NAMES = st.one_of(
    st.sampled_from(
        ["fc.weight", "lm_head.weight", "d2t", "t2d", "norm.weight", "layers.0.self_attn.q_proj.weight",
         "midlayer.hidden_norm.weight", "embed_tokens.weight", "__metadata__"]
    ),
    st.text(max_size=12),
    NASTY_TEXT,
)  # fmt: skip

HEADERS = st.dictionaries(TENSOR_NAMES, HEADER_ENTRIES, max_size=6)
