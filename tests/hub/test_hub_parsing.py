"""What the hub sends is untrusted input, parsed within the same bounds as a local folder: the listing
answer, the safetensors headers (and where they place d2t/t2d), and a whole checkpoint read through
``ModelFiles``. Hypothesis searches for an answer that makes a parser raise or read out of bounds."""

from __future__ import annotations

import json
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specprobe.checkpoint.folder import load_checkpoint
from specprobe.modelfiles import ModelFiles
from specprobe.modelfiles.hub import _HubError, parse_hub_ref, parse_listing, vocab_spans
from specprobe.untrusted.files import UntrustedInputError

COMMIT = "a" * 40
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=20,
)


class MemoryFiles(ModelFiles):
    """A model whose files are bytes in memory, read through the same interface as a hub repository."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.label = "acme/memory"
        self.repo_id = "acme/memory"
        self.commit = COMMIT
        self.files = files
        self.reads: list[tuple[str, int, int]] = []

    def listing(self) -> dict[str, int | None]:
        return {name: len(data) for name, data in self.files.items()}

    def read_file(self, name: str, *, max_bytes: int) -> bytes:
        if name not in self.files:
            raise FileNotFoundError(name)
        if len(self.files[name]) > max_bytes:
            raise UntrustedInputError(f"{name} is too large")
        return self.files[name]

    def read_range(self, name: str, begin: int, length: int) -> bytes:
        assert begin >= 0 and length >= 0
        self.reads.append((name, begin, length))
        return self.files[name][begin : begin + length]


@given(st.binary(max_size=2000) | json_values.map(lambda v: json.dumps(v).encode()))
@settings(max_examples=300, deadline=None)
def test_any_listing_answer_parses_or_is_refused_in_one_sentence(raw: bytes) -> None:
    try:
        commit, files = parse_listing(raw, "acme/x")
    except _HubError as exc:
        assert "\n" not in exc.reason
        return
    assert len(commit) == 40
    assert all("/" not in name and name not in ("", ".", "..") for name in files)


@given(
    st.lists(
        st.fixed_dictionaries(
            {
                "rfilename": st.text(max_size=30) | st.integers(-(2**63), 2**63),
                "size": st.integers(-5, 2**64 - 1) | st.none() | st.text(),
            }
        ),
        max_size=10,
    )
)
@settings(max_examples=200, deadline=None)
def test_listed_names_and_sizes_are_only_plain_names_and_sane_sizes(siblings: list[dict]) -> None:
    raw = json.dumps({"sha": COMMIT, "siblings": siblings}).encode()
    _, files = parse_listing(raw, "acme/x")
    for name, size in files.items():
        assert isinstance(name, str) and "/" not in name and "\\" not in name
        assert size is None or 0 <= size < 2**63


@given(json_values, st.integers(0, 2**40), st.integers(0, 2**41) | st.none())
@settings(max_examples=300, deadline=None)
def test_vocab_spans_stay_inside_the_file(header: object, data_start: int, size: int | None) -> None:
    spans = vocab_spans(json.dumps(header).encode(), data_start, size)
    assert len(spans) <= 2
    for begin, length in spans:
        assert begin >= data_start and length > 0
        assert size is None or begin + length <= size


@given(st.binary(max_size=600), st.integers(0, 4096))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_hostile_shard_never_crashes_the_checkpoint_reader(body: bytes, claimed: int) -> None:
    shard = struct.pack("<Q", claimed) + body
    files = MemoryFiles({"config.json": b'{"architectures": ["LlamaForCausalLMEagle3"]}', "model.safetensors": shard})
    checkpoint = load_checkpoint(files)
    # Nothing outside the file was asked for, and a header longer than the file was refused from its length.
    assert all(begin + length <= len(shard) + 8 for _, begin, length in files.reads)
    if claimed > len(shard) - 8:
        assert any(issue.kind == "header" for issue in checkpoint.issues)


@given(json_values)
@settings(max_examples=200, deadline=None)
def test_any_json_header_is_judged_as_a_local_file_would_be(header: object) -> None:
    text = json.dumps(header).encode()
    shard = struct.pack("<Q", len(text)) + text
    checkpoint = load_checkpoint(MemoryFiles({"config.json": b"{}", "model.safetensors": shard}))
    assert checkpoint.headers or checkpoint.issues


@given(st.text(max_size=80))
@settings(max_examples=300, deadline=None)
def test_hub_references_are_ids_with_a_plain_revision(spec: str) -> None:
    ref = parse_hub_ref(spec)
    if ref is None:
        return
    assert ".." not in (ref.revision or "") and not ref.repo_id.startswith(("/", ".", "~"))
    assert str(ref) == spec
