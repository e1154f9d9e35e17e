"""Drafters of every method in their published on-disk shapes, and tokenizer identity, through `check` and `fix`.

Valid drafters of each form pass with zero warnings; the broken variants of each class are errors; a drafter
of another tokenizer is refused by `fix` with the reason, and a vocab_size rewrite is made only where the
files show one tokenizer, with a proof that re-reads the copy's tokenizer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specprobe.checkpoint.tokenizer_identity import ANOTHER, SAME, UNKNOWN, compare, read_facts
from specprobe.demo.fixtures import write_json
from specprobe.findings import Severity
from specprobe.fix.run import FixOptions, run_fix
from specprobe.pipeline.check import run_check
from tests.check.casebuild import build_draft_case, case_target_config, load_case

LLAMA31_EAGLE3 = load_case("valid-specforge-llama31-8b")[0]["draft"]
QWEN3_EAGLE3 = load_case("valid-specforge-qwen3-8b")[0]["draft"]


def _tokenizer_json(tokens: list[str], added: dict[int, str] | None = None) -> dict[str, Any]:
    """A tokenizers-library tokenizer.json (BPE model) over ``tokens``."""
    return {
        "version": "1.0",
        "added_tokens": [{"id": i, "content": c, "special": True} for i, c in (added or {}).items()],
        "model": {"type": "BPE", "vocab": {t: i for i, t in enumerate(tokens)}, "merges": []},
    }


QWEN_TOKENS = [f"q{i}" for i in range(300)]
LLAMA_TOKENS = [f"l{i}" for i in range(300)]


def _pair(
    tmp_path: Path, draft: dict[str, Any], target: dict[str, Any], *, draft_files: dict[str, Any] | None = None,
    target_files: dict[str, Any] | None = None,
) -> tuple[Path, Path]:
    draft_dir, target_dir = tmp_path / "draft", tmp_path / "target"
    build_draft_case(draft_dir, draft)
    target_dir.mkdir()
    write_json(target_dir / "config.json", case_target_config(target))
    for folder, files in ((draft_dir, draft_files or {}), (target_dir, target_files or {})):
        for name, content in files.items():
            write_json(folder / name, content)
    return draft_dir, target_dir


def _with(draft: dict[str, Any], **config: Any) -> dict[str, Any]:
    edited = json.loads(json.dumps(draft))
    edited.setdefault("config_set", {}).update(config)
    return edited


VALID = {
    "draft model Qwen3-0.6B for Qwen3-32B (vLLM draft_model)": (
        {"form": "draft_model", "preset": "Qwen/Qwen3-0.6B"}, {"preset": "Qwen/Qwen3-32B"},
        "draft_model", "vllm==0.33.0",
    ),
    "draft model Qwen3-0.6B for Qwen3-32B (SGLang STANDALONE)": (
        {"form": "draft_model", "preset": "Qwen/Qwen3-0.6B"}, {"preset": "Qwen/Qwen3-32B"},
        "standalone", "sglang==0.5.23",
    ),
    "draft model Llama-3.2-1B for Llama-3.1-8B": (
        {"form": "draft_model", "preset": "meta-llama/Llama-3.2-1B-Instruct"},
        {"preset": "meta-llama/Llama-3.1-8B-Instruct"}, "draft_model", "vllm==0.33.0",
    ),
    "DFlash Qwen3-8B-DFlash-b16 on SGLang": (
        {"form": "dflash", "preset": "z-lab/Qwen3-8B-DFlash-b16"}, {"preset": "Qwen/Qwen3-8B"},
        "dflash", "sglang==0.5.23",
    ),
    "DFlash Qwen3-8B-DFlash-b16 on vLLM": (
        {"form": "dflash", "preset": "z-lab/Qwen3-8B-DFlash-b16"}, {"preset": "Qwen/Qwen3-8B"}, "dflash", "vllm==0.33.0"
    ),
    "DSpark (SpecForge qwen3-8b-dspark) on SGLang": (
        {"form": "dspark", "preset": "SpecForge/qwen3-8b-dspark"}, {"preset": "Qwen/Qwen3-8B"},
        "dspark", "sglang==0.5.23",
    ),
    "EAGLE-3 Qwen3-8B with Qwen bos ids": (
        _with(QWEN3_EAGLE3, bos_token_id=151643, eos_token_id=151645),
        {"preset": "Qwen/Qwen3-8B"}, "eagle3", "vllm==0.33.0",
    ),
    "MTP layers quantized with the FP8 target": (
        {"form": "mtp", "preset": "Qwen3-Next-FP8-small", "config_set": {"_mtp_quantized": True}},
        {"preset": "Qwen/Qwen3-8B"}, "mtp", "vllm==0.33.0",
    ),
}


@pytest.mark.parametrize("name", list(VALID))
def test_valid_drafters_of_every_method_pass_without_warnings(name: str, tmp_path: Path) -> None:
    draft, target, method, engine = VALID[name]
    draft_dir, target_dir = _pair(tmp_path, draft, target)
    report = run_check(draft_dir, target=str(target_dir), method=method, engine=engine)
    loud = [f"{f.rule}: {f.message}" for f in report.findings if f.severity is not Severity.INFO]
    assert not loud, loud
    assert "LAYOUT-NOT-EAGLE3" not in report.fired()


BROKEN = {
    "draft model of another vocabulary (Qwen3-0.6B for Llama-3.1-8B)": (
        {"form": "draft_model", "preset": "Qwen/Qwen3-0.6B"}, {"preset": "meta-llama/Llama-3.1-8B-Instruct"},
        "draft_model", "vllm==0.33.0", {"DRAFT-MODEL-VOCAB", "TOKENIZER-MISMATCH"},
    ),
    "EAGLE-3 Llama-3.1 drafter for Qwen3-8B": (
        _with(LLAMA31_EAGLE3, bos_token_id=128000, eos_token_id=128001), {"preset": "Qwen/Qwen3-8B"},
        "eagle3", "vllm==0.33.0", {"TOKENIZER-MISMATCH"},
    ),
    "DFlash with target_layer_ids beyond the target": (
        {"form": "dflash", "preset": "z-lab/Qwen3-8B-DFlash-b16",
         "config_set": {"dflash_config": {"mask_token_id": 151669, "target_layer_ids": [1, 9, 17, 25, 40]}}},
        {"preset": "Qwen/Qwen3-8B"}, "dflash", "sglang==0.5.23", {"BLOCK-TARGET-LAYERS"},
    ),
    "DFlash drafter named with method draft_model": (
        {"form": "dflash", "preset": "z-lab/Qwen3-8B-DFlash-b16"}, {"preset": "Qwen/Qwen3-8B"},
        "draft_model", "vllm==0.33.0", {"METHOD-FORM-MISMATCH"},
    ),
    "MTP layers left BF16 in an FP8 target": (
        {"form": "mtp", "preset": "Qwen3-Next-FP8-small"}, {"preset": "Qwen/Qwen3-8B"}, "mtp", "sglang==0.5.23",
        {"QUANT-MTP-INHERITED"},
    ),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_broken_variants_are_errors(name: str, tmp_path: Path) -> None:
    draft, target, method, engine, rules = BROKEN[name]
    draft_dir, target_dir = _pair(tmp_path, draft, target)
    report = run_check(draft_dir, target=str(target_dir), method=method, engine=engine)
    errors = {f.rule for f in report.findings if f.severity is Severity.ERROR}
    assert rules <= errors, sorted(errors)


def test_tokenizer_json_tells_another_tokenizer_of_the_same_size(tmp_path: Path) -> None:
    """Same vocab_size, same special ids, different token strings: SGLang's STANDALONE refuses it too."""
    draft_dir, target_dir = _pair(
        tmp_path, {"form": "draft_model", "preset": "Qwen/Qwen3-0.6B"}, {"preset": "Qwen/Qwen3-32B"},
        draft_files={"tokenizer.json": _tokenizer_json(LLAMA_TOKENS)},
        target_files={"tokenizer.json": _tokenizer_json(QWEN_TOKENS)},
    )
    report = run_check(draft_dir, target=str(target_dir), method="draft_model", engine="sglang==0.5.23")
    (finding,) = [f for f in report.findings if f.rule == "TOKENIZER-MISMATCH"]
    assert "tokenizer.json vocabularies differ" in finding.message


def test_a_padding_of_one_tokenizer_is_information(tmp_path: Path) -> None:
    """Identical tokenizer.json, vocab_size 151936 vs a target padded to 152064: info, not the size warning."""
    draft = _with(QWEN3_EAGLE3)
    draft_dir, target_dir = _pair(
        tmp_path, draft, {"preset": "Qwen/Qwen3-8B", "config_set": {"vocab_size": 152064}},
        draft_files={"tokenizer.json": _tokenizer_json(QWEN_TOKENS)},
        target_files={"tokenizer.json": _tokenizer_json(QWEN_TOKENS)},
    )
    report = run_check(draft_dir, target=str(target_dir), engine="vllm==0.33.0")
    fired = report.fired()
    assert "TOKENIZER-PADDED" in fired and "TARGET-VOCAB-MISMATCH" not in fired and "TOKENIZER-MISMATCH" not in fired


def _fix(draft_dir: Path, target_dir: Path, out: Path) -> Any:
    return run_fix(FixOptions(draft=draft_dir, target=str(target_dir), engine="vllm==0.33.0", out=out))


def test_fix_refuses_a_drafter_of_another_tokenizer(tmp_path: Path) -> None:
    draft_dir, target_dir = _pair(
        tmp_path, _with(LLAMA31_EAGLE3, bos_token_id=128000, eos_token_id=128001), {"preset": "Qwen/Qwen3-8B"}
    )
    report = _fix(draft_dir, target_dir, tmp_path / "out")
    assert not report.ok and not (tmp_path / "out").exists()
    (refusal,) = [f for f in report.findings if f.rule == "FIX-UNFIXABLE"]
    assert "no rewrite makes this drafter propose the target's tokens: it must be retrained" in refusal.message


def test_fix_does_not_rewrite_vocab_size_without_tokenizer_evidence(tmp_path: Path) -> None:
    """The false fix of the field: a Llama drafter, a Qwen3 target, no special ids on either side."""
    draft_dir, target_dir = _pair(
        tmp_path, LLAMA31_EAGLE3, {"preset": "Qwen/Qwen3-8B", "config_remove": ["bos_token_id", "eos_token_id"]}
    )
    report = _fix(draft_dir, target_dir, tmp_path / "out")
    assert not report.ok and not (tmp_path / "out").exists()
    assert "FIX-MISSING-INFO" in report.fired() and "FIX-DRAFT-VOCAB" not in report.fired()


def test_fix_rewrites_a_padded_vocab_size_and_proves_the_tokenizer(tmp_path: Path) -> None:
    draft = _with(QWEN3_EAGLE3, bos_token_id=151643, eos_token_id=151645)
    draft_dir, target_dir = _pair(
        tmp_path, draft, {"preset": "Qwen/Qwen3-8B", "config_set": {"vocab_size": 152064}},
        draft_files={"tokenizer.json": _tokenizer_json(QWEN_TOKENS)},
        target_files={"tokenizer.json": _tokenizer_json(QWEN_TOKENS)},
    )
    report = _fix(draft_dir, target_dir, tmp_path / "out")
    assert report.ok, [f.message for f in report.findings if f.severity is Severity.ERROR]
    proof = report.extra["proof"]["tokenizer"]
    assert proof["verdict"] == SAME and proof["vocab_size_rewritten"] and proof["ok"]
    assert json.loads((tmp_path / "out" / "config.json").read_text())["vocab_size"] == 152064


def test_the_tokenizer_proof_fails_for_a_copy_of_another_tokenizer(tmp_path: Path) -> None:
    """The proof's check could have failed: the same proof over a copy whose tokenizer.json was swapped."""
    from specprobe.fix.plan import build_plan
    from specprobe.fix.proof import tokenizer_proof

    draft = _with(QWEN3_EAGLE3, bos_token_id=151643, eos_token_id=151645)
    draft_dir, target_dir = _pair(
        tmp_path, draft, {"preset": "Qwen/Qwen3-8B", "config_set": {"vocab_size": 152064}},
        draft_files={"tokenizer.json": _tokenizer_json(QWEN_TOKENS)},
        target_files={"tokenizer.json": _tokenizer_json(QWEN_TOKENS)},
    )
    plan = build_plan(str(draft_dir), target=str(target_dir), engine="vllm==0.33.0")
    assert tokenizer_proof(draft_dir, plan)["ok"]
    write_json(draft_dir / "tokenizer.json", _tokenizer_json(LLAMA_TOKENS))
    assert tokenizer_proof(draft_dir, plan) == {**tokenizer_proof(draft_dir, plan), "verdict": ANOTHER, "ok": False}


def test_compare_verdicts() -> None:
    qwen = read_facts("target", {"vocab_size": 151936, "bos_token_id": 151643}, {})
    assert compare(read_facts("drafter", {"vocab_size": 152064, "bos_token_id": 151643}, {}), qwen).verdict == SAME
    assert compare(read_facts("drafter", {"vocab_size": 128256, "bos_token_id": 128000}, {}), qwen).verdict == ANOTHER
    # The target's bos id is not an id of a 128256-token vocabulary: no padding of one tokenizer does that.
    assert compare(read_facts("drafter", {"vocab_size": 128256}, {}), qwen).verdict == ANOTHER
    # ... unless the drafter's own map covers the target's vocabulary (a vocab_size edited after training).
    assert compare(read_facts("drafter", {"vocab_size": 128256}, {}), qwen, map_size=151936).verdict == SAME
    bare = read_facts("target", {"vocab_size": 151936}, {})
    assert compare(read_facts("drafter", {"vocab_size": 128256}, {}), bare).verdict == UNKNOWN


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tokenizer=JSON, config=JSON, generation=JSON)
def test_hostile_tokenizer_files_are_data(tmp_path: Path, tokenizer: Any, config: Any, generation: Any) -> None:
    """Any JSON in tokenizer.json / generation_config.json / config.json gives facts, never an exception."""
    files = {}
    for name, value in (("tokenizer.json", tokenizer), ("generation_config.json", generation)):
        (tmp_path / name).write_text(json.dumps(value), encoding="utf-8")
        files[name] = tmp_path / name
    (tmp_path / "broken.json").write_bytes(b"\xff{not json")
    facts = read_facts("drafter", config if isinstance(config, dict) else None, files)
    other = read_facts("target", None, {"tokenizer.json": tmp_path / "broken.json"})
    assert compare(facts, other).verdict in (SAME, ANOTHER, UNKNOWN)


def test_identical_tokenizer_files_outweigh_a_copied_bos_id(tmp_path: Path) -> None:
    """A Qwen3 drafter whose config.json kept a template's Llama bos_token_id, shipped with the target's
    own tokenizer.json: one tokenizer, no error."""
    draft_dir, target_dir = _pair(
        tmp_path, _with(QWEN3_EAGLE3, bos_token_id=128000), {"preset": "Qwen/Qwen3-8B"},
        draft_files={"tokenizer.json": _tokenizer_json(QWEN_TOKENS)},
        target_files={"tokenizer.json": _tokenizer_json(QWEN_TOKENS)},
    )
    report = run_check(draft_dir, target=str(target_dir), engine="vllm==0.33.0")
    assert "TOKENIZER-MISMATCH" not in report.fired() and report.ok



@pytest.mark.parametrize(
    ("argv", "engine"),
    [
        (["vllm", "serve", "{t}", "--speculative-config", '{"method": "mtp", "num_speculative_tokens": 1}'],
         "vllm==0.33.0"),
        (["python", "-m", "sglang.launch_server", "--model-path", "{t}", "--speculative-algorithm", "NEXTN",
          "--speculative-num-steps", "1", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "2"],
         "sglang==0.5.23"),
    ],
)
def test_lint_reads_the_mtp_layers_of_a_local_target(tmp_path: Path, argv: list[str], engine: str) -> None:
    """MTP heads live in the target checkpoint: lint of an MTP launch examines the target's MTP layers."""
    from specprobe.pipeline.gate import lint_command
    from tests.check.formbuild import build_form_case

    verdicts = {}
    for name, quantized in (("dense-mtp", False), ("quantized-mtp", True)):
        folder = tmp_path / name
        build_form_case(folder, {"form": "mtp", "preset": "Qwen3-Next-FP8-small",
                                 "config_set": {"_mtp_quantized": quantized}})
        report = lint_command([a.replace("{t}", str(folder)) for a in argv], engine=engine)
        verdicts[name] = "QUANT-MTP-INHERITED" in report.fired()
    assert verdicts == {"dense-mtp": True, "quantized-mtp": False}
