"""The reference drafter reads every checkpoint layout `check` understands, and refuses broken ones as findings."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specprobe.cli import app

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow


def _drafter_logits(target_dir: Path, draft_dir: Path) -> torch.Tensor:
    from specprobe.smoke.eagle3 import DraftKVCache
    from specprobe.smoke.reference import load_reference_drafter, load_target

    target = load_target(str(target_dir), device="cpu", dtype=torch.float32)
    drafter = load_reference_drafter(draft_dir, target, device="cpu", dtype=torch.float32)
    generator = torch.Generator().manual_seed(0)
    n_aux = len(drafter.cfg.aux_layer_ids)
    aux = torch.randn(2, 5, n_aux * target.hidden_size, generator=generator)
    tokens = torch.randint(0, target.vocab_size, (2, 5), generator=generator)
    positions = torch.arange(5)[None].expand(2, -1)
    with torch.no_grad():
        logits, _ = drafter.step(
            tokens, drafter.combine_aux(aux), positions, DraftKVCache(), torch.ones(2, 5, dtype=torch.bool)
        )
    return drafter.to_target_ids(logits.argmax(-1)), logits


def _rewrite(source: Path, dest: Path, *, rename: dict[str, str], config: dict, drop: tuple[str, ...] = ()) -> Path:
    from safetensors.torch import load_file, save_file

    dest.mkdir()
    tensors = load_file(str(source / "model.safetensors"))
    renamed = {}
    for key, value in tensors.items():
        if key in drop:
            continue
        new_key = key
        for old, new in rename.items():
            new_key = new_key.replace(old, new)
        renamed[new_key] = value
    save_file(renamed, str(dest / "model.safetensors"))
    (dest / "config.json").write_text(json.dumps(config))
    return dest


def test_midlayer_and_speculators_layouts_match_the_vllm_layout(demo_models: dict[str, Path], tmp_path: Path):
    draft = demo_models["draft"]
    vllm_config = json.loads((draft / "config.json").read_text())
    original = _rewrite(
        draft,
        tmp_path / "original",
        rename={"layers.0.": "midlayer."},
        config={**vllm_config, "architectures": ["LlamaForCausalLM"]},
    )
    layer_keys = ("hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim", "intermediate_size")
    speculators = _rewrite(
        draft,
        tmp_path / "speculators",
        rename={},
        config={
            "architectures": ["Eagle3Speculator"],
            "speculators_model_type": "eagle3",
            "transformer_layer_config": {k: vllm_config[k] for k in (*layer_keys, "rms_norm_eps", "vocab_size")},
            "draft_vocab_size": vllm_config["draft_vocab_size"],
            "target_hidden_size": vllm_config["target_hidden_size"],
            "eagle_aux_hidden_state_layer_ids": vllm_config["eagle_aux_hidden_state_layer_ids"],
            # speculators defaults norm_before_residual to True; this drafter was trained without it.
            "norm_before_residual": False,
        },
    )
    ids, logits = _drafter_logits(demo_models["target"], draft)
    for other in (original, speculators):
        other_ids, other_logits = _drafter_logits(demo_models["target"], other)
        assert torch.equal(ids, other_ids)
        assert torch.allclose(logits, other_logits)


def test_norm_before_residual_changes_the_drafter(demo_models: dict[str, Path], tmp_path: Path):
    draft = demo_models["draft"]
    config = {**json.loads((draft / "config.json").read_text()), "norm_before_residual": True}
    flipped = _rewrite(draft, tmp_path / "flipped", rename={}, config=config)
    _, logits = _drafter_logits(demo_models["target"], draft)
    _, flipped_logits = _drafter_logits(demo_models["target"], flipped)
    assert not torch.allclose(logits, flipped_logits)


@pytest.mark.parametrize(
    ("drop", "message"),
    [(("lm_head.weight",), "lm_head.weight is missing"), (("fc.weight",), "missing tensors: fc.weight")],
)
def test_unreadable_drafter_is_a_finding(
    demo_models: dict[str, Path], tmp_path: Path, drop: tuple[str, ...], message: str
):
    draft = demo_models["draft"]
    broken = _rewrite(
        draft, tmp_path / "broken", rename={}, config=json.loads((draft / "config.json").read_text()), drop=drop
    )
    result = CliRunner().invoke(
        app,
        ["smoke", "--target", str(demo_models["target"]), "--draft", str(broken), "--force", "--format", "json",
         "--no-progress", "--max-prompts", "2", "--max-new-tokens", "4"],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    unreadable = [f for f in report["findings"] if f["rule"] == "SMOKE-DRAFT-UNREADABLE"]
    assert unreadable and message in unreadable[0]["message"]
    assert "mean_acceptance_length" not in report


def test_pickled_weights_are_never_loaded(demo_models: dict[str, Path], tmp_path: Path):
    from specprobe.smoke.eagle3 import DrafterFormatError, safetensors_files

    pickled = tmp_path / "pickled"
    pickled.mkdir()
    shutil.copy(demo_models["draft"] / "config.json", pickled / "config.json")
    # A pickle that would run code if loaded; the reader must not even open it.
    (pickled / "pytorch_model.bin").write_bytes(b"\x80\x04cos\nsystem\n(S'false'\ntR.")
    with pytest.raises(DrafterFormatError, match="never loaded"):
        safetensors_files(pickled)


def test_chat_template_is_applied_when_the_tokenizer_has_one(demo_models: dict[str, Path]):
    from transformers import AutoTokenizer

    from specprobe.smoke.prompts import Prompt, encode_prompts

    tokenizer = AutoTokenizer.from_pretrained(str(demo_models["target"]))
    prompt = Prompt("p", (("system", "be brief"), ("user", "def f():")))
    plain = encode_prompts(tokenizer, [prompt])[0]
    assert plain == tokenizer("be brief\n\ndef f():")["input_ids"]
    tokenizer.chat_template = (
        "{% for m in messages %}[{{ m.role }}]{{ m.content }}\n{% endfor %}"
        "{% if add_generation_prompt %}[assistant]{% endif %}"
    )
    templated = encode_prompts(tokenizer, [prompt])[0]
    rendered = "[system]be brief\n[user]def f():\n[assistant]"
    assert templated == tokenizer(rendered, add_special_tokens=False)["input_ids"]


def test_weights_are_found_by_the_same_reader_as_check(tmp_path: Path):
    """An index that points out of the folder is refused, as `check` refuses it (FILES-INDEX-PATH-ESCAPE)."""
    from specprobe.smoke.eagle3 import DrafterFormatError, safetensors_files

    outside = tmp_path / "outside.safetensors"
    outside.write_bytes(b"\x02\x00\x00\x00\x00\x00\x00\x00{}")
    draft = tmp_path / "draft"
    draft.mkdir()
    (draft / "config.json").write_text("{}")
    (draft / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"fc.weight": "../outside.safetensors"}})
    )
    with pytest.raises(DrafterFormatError, match="outside the checkpoint folder"):
        safetensors_files(draft)
