"""End-to-end fuzzing of `specprobe check`: random hostile drafter folders through the command line.

Each example damages a valid drafter written by the project's writer in several ways at once (config
values and syntax, header bytes and lengths, index, vocabulary maps, symlinks, FIFOs, pickles, code,
names with control characters) and asserts the contract: exit 0 or 1 with a report, no traceback, no
internal error, no raw escape sequence on the terminal, nothing written into the folder, no input code run.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.conftest import EXAMPLES
from tests.fuzz.strategies import HEADERS, JSON_VALUES, NASTY_TEXT, dumps, hostile_snippets
from tests.hostile.builders import SENTINEL, TouchOnUnpickle, folder_fingerprint, make_sparse_tensor, valid_draft
from tests.hostile.cli import invoke, run_cli

CONFIG_KEYS = st.sampled_from(
    ["architectures", "hidden_size", "vocab_size", "draft_vocab_size", "num_hidden_layers", "num_attention_heads",
     "num_key_value_heads", "head_dim", "intermediate_size", "max_position_embeddings", "rope_theta", "rope_scaling",
     "tie_word_embeddings", "eagle_config", "auto_map", "quantization_config", "text_config", "torch_dtype",
     "target_hidden_size", "transformer_layer_config", "speculators_config", "model_type"]
)  # fmt: skip

MUTATIONS = st.one_of(
    st.tuples(st.just("config-set"), CONFIG_KEYS, JSON_VALUES),
    st.tuples(st.just("config-text"), st.one_of(JSON_VALUES.map(dumps), hostile_snippets())),
    st.tuples(st.just("config-splice"), hostile_snippets(), st.integers(min_value=0)),
    st.tuples(st.just("header"), HEADERS.map(dumps)),
    st.tuples(st.just("header-length"), st.integers(min_value=0, max_value=2**64 - 1)),
    st.tuples(st.just("truncate"), st.integers(min_value=0, max_value=4096)),
    st.tuples(st.just("flip"), st.integers(min_value=0), st.integers(min_value=0, max_value=255)),
    st.tuples(st.just("index"), st.one_of(JSON_VALUES.map(lambda v: dumps({"weight_map": v})), hostile_snippets())),
    st.tuples(st.just("symlink-loop"), st.sampled_from(["config.json", "model.safetensors", "x.safetensors", "d/e"])),
    st.tuples(st.just("symlink-out"), st.sampled_from(["config.json", "extra.safetensors", "sub/link"])),
    st.tuples(st.just("fifo"), st.sampled_from(["config.json", "extra.safetensors", "model.safetensors.index.json"])),
    st.tuples(st.just("dir"), st.sampled_from(["config.json", "extra.safetensors"])),
    st.tuples(st.just("pickle"), st.sampled_from(["pytorch_model.bin", "model.pt", "training_args.bin"])),
    st.tuples(st.just("code"), st.sampled_from(["modeling_draft.py", "configuration_x.py"])),
    st.tuples(st.just("name"), NASTY_TEXT.filter(lambda n: n and "/" not in n and "\x00" not in n and n not in ".."),
              st.sampled_from([".safetensors", ".json", ".bin", ""])),
    st.tuples(st.just("sparse")),
)  # fmt: skip


def _apply(folder: Path, sandbox: Path, mutation: tuple) -> None:
    kind = mutation[0]
    config = folder / "config.json"
    weights = folder / "model.safetensors"
    if kind.startswith("config") and (not config.is_file() or config.is_symlink()):
        return
    if kind == "config-set":
        try:
            raw = json.loads(config.read_text(encoding="utf-8"))
        except (ValueError, RecursionError):  # the harness's own json, not specprobe's
            return
        if isinstance(raw, dict):
            raw[mutation[1]] = mutation[2]
            config.write_text(dumps(raw), encoding="utf-8", errors="surrogatepass")
    elif kind == "config-text":
        config.write_text(mutation[1], encoding="utf-8", errors="surrogatepass")
    elif kind == "config-splice":
        text = config.read_text(encoding="utf-8", errors="surrogatepass")
        at = mutation[2] % (len(text) + 1)
        config.write_text(text[:at] + mutation[1] + text[at:], encoding="utf-8", errors="surrogatepass")
    elif kind in ("header", "header-length", "truncate", "flip", "sparse"):
        # A file made sparse by an earlier mutation declares ~20 GB: leave it, reading it here would not fit.
        if not weights.is_file() or weights.is_symlink() or weights.stat().st_size > 2**24:
            return
        data = weights.read_bytes()
        if kind == "header":
            encoded = mutation[1].encode("utf-8", "surrogatepass")
            weights.write_bytes(struct.pack("<Q", len(encoded)) + encoded + data[8:][-256:])
        elif kind == "header-length":
            weights.write_bytes(struct.pack("<Q", mutation[1]) + data[8:])
        elif kind == "truncate":
            weights.write_bytes(data[: mutation[1]])
        elif kind == "flip" and data:
            index = mutation[1] % len(data)
            weights.write_bytes(data[:index] + bytes([mutation[2]]) + data[index + 1 :])
        elif kind == "sparse":
            try:
                make_sparse_tensor(folder, gigabytes=20)
            except Exception:  # the file was already damaged beyond rebuilding: keep it as it is
                return
    elif kind == "index":
        index = folder / "model.safetensors.index.json"
        if index.is_symlink() or (index.exists() and not index.is_file()):
            return  # an earlier mutation made it a FIFO, a folder or a link: writing would block or fail
        index.write_text(mutation[1], encoding="utf-8", errors="surrogatepass")
    elif kind in ("symlink-loop", "symlink-out", "fifo", "dir"):
        path = folder / mutation[1]
        if path.is_symlink() or path.exists():
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "symlink-loop":
            path.symlink_to(path.name + ".loop")
            if not (path.parent / (path.name + ".loop")).is_symlink():
                (path.parent / (path.name + ".loop")).symlink_to(path.name)
        elif kind == "symlink-out":
            outside = sandbox / "outside.json"
            outside.write_text("{}", encoding="utf-8")
            path.symlink_to(outside)
        elif kind == "fifo":
            os.mkfifo(path)
        else:
            path.mkdir()
    elif kind == "pickle":
        (folder / mutation[1]).write_bytes(pickle.dumps(TouchOnUnpickle(sandbox / SENTINEL)))
    elif kind == "code":
        (folder / mutation[1]).write_text(f"from pathlib import Path\nPath({str(sandbox / SENTINEL)!r}).touch()\n")
        if config.is_file() and not config.is_symlink():
            try:
                raw = json.loads(config.read_text(encoding="utf-8"))
            except (ValueError, RecursionError):
                return
            if isinstance(raw, dict):
                raw["auto_map"] = {"AutoModel": mutation[1].removesuffix(".py") + ".Model"}
                config.write_text(dumps(raw), encoding="utf-8")
    elif kind == "name":
        try:
            (folder / (mutation[1] + mutation[2])).write_bytes(b"{}")
        except (OSError, UnicodeEncodeError):
            return


OPTIONS = st.lists(
    st.sampled_from([("--deep",), ("--strict",), ("--engine", "vllm==0.16.0"), ("--engine", "sglang"),
                     ("--format", "json"), ("--method", "eagle"), ("--target", "TARGET")]),
    max_size=3,
    unique=True,
)  # fmt: skip


@EXAMPLES
@given(st.lists(MUTATIONS, min_size=1, max_size=4), OPTIONS)
def test_check_on_hostile_folders_keeps_its_contract(
    tmp_path_factory: pytest.TempPathFactory, mutations: list[tuple], options: list[tuple[str, ...]]
) -> None:
    root = tmp_path_factory.mktemp("fuzz")
    folder = valid_draft(root / "draft")
    sandbox = root / "sandbox"
    sandbox.mkdir()
    target = root / "target"
    target.mkdir()
    (target / "config.json").write_text(
        dumps({"model_type": "llama", "hidden_size": 64, "vocab_size": 512, "num_hidden_layers": 4}), encoding="utf-8"
    )
    for mutation in mutations:
        _apply(folder, sandbox, mutation)
    before = folder_fingerprint(root)
    args = [word.replace("TARGET", str(target)) for option in options for word in option]

    invoke("check", str(folder), *args)

    assert folder_fingerprint(root) == before, "check wrote into the folders it read"
    assert not (sandbox / SENTINEL).exists(), "code from the drafter folder was executed"


def test_the_console_script_keeps_the_contract_on_a_folder_of_every_hazard(tmp_path: Path) -> None:
    """The same contract through `python -m specprobe`, where a traceback would reach a real terminal."""
    folder = valid_draft(tmp_path / "draft")
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    for mutation in [
        ("sparse",),
        ("symlink-loop", "x.safetensors"),
        ("fifo", "extra.safetensors"),
        ("pickle", "pytorch_model.bin"),
        ("code", "modeling_draft.py"),
        ("name", "evil\nPASS 0 error(s)\x1b[2J", ".safetensors"),
        ("index", "[" * 50_000 + "]" * 50_000),
        ("config-set", "rope_theta", float("nan")),
    ]:
        _apply(folder, sandbox, mutation)
    before = folder_fingerprint(tmp_path)
    outcome = run_cli("check", str(folder), "--deep")
    assert outcome.exit_code == 1
    assert not any(line.startswith("PASS") for line in outcome.stdout.splitlines())
    assert folder_fingerprint(tmp_path) == before
    assert not (sandbox / SENTINEL).exists()
