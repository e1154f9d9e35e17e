"""Real models for the demo, the tests and the GPU run: a small Llama (or DeepSeek-V3-style MLA)
target trained briefly on Python's standard-library sources, and an EAGLE-3 drafter trained on that
target's hidden states, saved in vLLM's format (`layers.0.*`, d2t/t2d, reduced draft vocab).

Drafter training follows EAGLE-3's training-time test: the drafter is unrolled for a few chained
steps, each step feeding back its own hidden state, so that positions 2..K are trained as they run.
Labels are the target's own greedy choices (what greedy verification accepts), and half of the
training text is the target's own greedy continuation, the distribution the drafter meets in use.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import sysconfig
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch.nn import functional

from specprobe.compat.engine_facts import default_aux_layers
from specprobe.smoke.eagle3 import Eagle3Config, Eagle3Drafter, checkpoint_state, decode_attention

# Standard-library modules whose sources form the training text: plain Python, present in every
# CPython 3.11+, large enough for a small model to learn code-shaped text.
STDLIB_MODULES = (
    "argparse", "ast", "calendar", "collections/__init__", "configparser", "csv", "dataclasses", "datetime",
    "difflib", "enum", "fractions", "functools", "gettext", "glob", "gzip", "heapq", "inspect", "ipaddress",
    "json/decoder", "json/encoder", "logging/__init__", "mailbox", "ntpath", "numbers", "optparse", "os",
    "pathlib", "pickle", "platform", "posixpath", "pprint", "queue", "random", "shlex", "shutil", "statistics",
    "string", "subprocess", "tarfile", "tempfile", "textwrap", "threading", "tokenize", "traceback", "typing",
    "unittest/case", "urllib/parse", "uuid", "warnings", "zipfile/__init__", "zipfile",
)  # fmt: skip

Log = Callable[[str], None]


@dataclass(frozen=True)
class TrainPlan:
    """Sizes and budgets of one demo build; `tiny` runs on a laptop CPU in about a minute.

    The MLA shapes are the ones vLLM's CPU MLA decode kernel compiles for: kv_lora_rank +
    qk_rope_head_dim = 576; with MLA turned off (VLLM_MLA_DISABLE=1) the attention head size is
    qk_nope_head_dim + qk_rope_head_dim = 96, one the CPU attention backend runs.
    """

    vocab_size: int = 512
    hidden_size: int = 64
    num_layers: int = 4
    # Head size 32: the smallest vLLM's CPU attention runs (32, 64, 80, ... in cpu_attn.py), so that a
    # real CPU engine serves the demo models; a head size of 16 loads and then fails at the first request.
    num_heads: int = 2
    num_kv_heads: int = 1
    intermediate_size: int = 192
    target_steps: int = 200
    target_batch: int = 16
    seq_len: int = 64
    target_lr: float = 5e-3
    draft_vocab_size: int = 256
    draft_steps: int = 200
    draft_batch: int = 16
    draft_lr: float = 5e-3
    ttt_steps: int = 3
    generated_sequences: int = 64
    corpus_chars: int = 400_000
    mixed_precision: bool = False
    mla: bool = False
    kv_lora_rank: int = 512
    q_lora_rank: int = 64
    qk_rope_head_dim: int = 64
    qk_nope_head_dim: int = 32
    v_head_dim: int = 32
    # CPU MoE kernels pad intermediate sizes to multiples of 32; a multiple of 32 keeps both sides equal.
    moe_intermediate_size: int = 64
    # Share of the training stream made of random word cycles repeated ("w1 .. wn w1 .. wn ..."), among
    # `copy_words` one-token words. Continuing a cycle is copying: an induction circuit (two composed
    # attention layers) that the target learns and that its late layers carry; 0 for the code-text demo.
    copy_share: float = 0.0
    copy_words: int = 32
    # The aux layer ids the drafter is trained on; None: low, middle and high (aux_layer_ids).
    train_aux_ids: tuple[int, ...] | None = None

    @property
    def aux_layer_ids(self) -> tuple[int, ...]:
        """Low, middle and high layers; vLLM's own default (2, L//2, L-3) needs L >= 6."""
        if self.train_aux_ids is not None:
            return self.train_aux_ids
        layers = self.num_layers
        if layers >= 6:
            return tuple(default_aux_layers(layers))
        return (1, layers // 2, layers - 1)


TINY = TrainPlan()
TINY_MLA = replace(TINY, mla=True)
# >= 100M parameters (about 113M at vocab 8192), for the GPU run.
GPU = TrainPlan(
    vocab_size=8192,
    hidden_size=768,
    num_layers=12,
    num_heads=12,
    num_kv_heads=4,
    intermediate_size=3072,
    target_steps=1500,
    target_batch=32,
    seq_len=512,
    target_lr=6e-4,
    draft_vocab_size=4096,
    draft_steps=2000,
    draft_batch=32,
    draft_lr=1e-3,
    ttt_steps=4,
    generated_sequences=384,
    corpus_chars=12_000_000,
    mixed_precision=True,
)
# A deeper target whose text is four fifths copying of cycles over 6 words, and a drafter trained on its
# last three layers: a pair for which the layers an engine feeds the drafter matter (vLLM's default for 8
# layers is (2, 4, 5)). Over 6 words the current word rarely says which comes next, the position in the
# cycle does: the target finds it over several layers, and the drafter reads it from the late ones (fed
# vLLM's default layers, its mean acceptance length falls by a quarter: docs/smoke/offline.md). Batch 32
# at 2e-3: one of two settings, in a sweep of batch, rate and copy share, that learned to copy by step 400.
TINY_COPY = replace(
    TINY,
    num_layers=8,
    copy_share=0.8,
    copy_words=6,
    train_aux_ids=(5, 6, 7),
    target_steps=800,
    target_batch=32,
    target_lr=2e-3,
)
PLANS = {"tiny": TINY, "tiny-mla": TINY_MLA, "tiny-copy": TINY_COPY, "gpu": GPU}


def corpus_text(max_chars: int) -> str:
    """Standard-library sources, module list first, then the rest of Lib/ in sorted order if more is needed."""
    lib = Path(sysconfig.get_paths()["stdlib"])
    seen: set[Path] = set()
    parts: list[str] = []
    total = 0
    candidates = [lib / f"{name}.py" for name in STDLIB_MODULES] + sorted(lib.glob("*.py")) + sorted(lib.glob("*/*.py"))
    for path in candidates:
        if total >= max_chars:
            break
        if path in seen or not path.is_file() or path.parent.name in ("test", "tests", "idle_test"):
            continue
        seen.add(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        parts.append(text)
        total += len(text)
    return "\n\n".join(parts)[:max_chars]


def copy_vocabulary(tokenizer: Any, count: int) -> list[int]:
    """`count` one-token words (a space and letters) that encode back to themselves, lowest ids first.

    Words, because the byte-level pre-tokenizer cuts text at spaces: a cycle of them written as text
    encodes to the same ids wherever it stands, so prompts can be written as plain text."""
    words: list[int] = []
    for token_id in range(len(tokenizer)):
        text = tokenizer.decode([token_id])
        word = len(text) >= 2 and text[0] == " " and text[1:].isascii() and text[1:].isalpha()
        if word and tokenizer(text, add_special_tokens=False)["input_ids"] == [token_id]:
            words.append(token_id)
        if len(words) == count:
            return words
    raise ValueError(f"the tokenizer has only {len(words)} one-token words, {count} wanted")


def _cycle(words: list[int], low: int, high: int, generator: torch.Generator) -> list[int]:
    """A random cycle of `low` to `high` words drawn with repeats: over a few words the current word alone
    does not say which comes next, only the position in the cycle does."""
    size = int(torch.randint(low, high + 1, (1,), generator=generator))
    return [words[i] for i in torch.randint(0, len(words), (size,), generator=generator).tolist()]


def _copy_segment(words: list[int], newline: int, length: int, generator: torch.Generator) -> list[int]:
    """A newline, then one random cycle of 4-12 words repeated up to `length` tokens."""
    cycle = _cycle(words, 4, 12, generator)
    return [newline, *(cycle * (length // len(cycle) + 1))[:length]]


def with_copy_cycles(stream: torch.Tensor, tokenizer: Any, plan: TrainPlan, *, seed: int) -> torch.Tensor:
    """The text stream cut into pieces of 32-96 tokens with copy segments between them, `copy_share` of
    the tokens in all."""
    generator = torch.Generator().manual_seed(seed + 4)
    words = copy_vocabulary(tokenizer, plan.copy_words)
    newline = tokenizer("\n", add_special_tokens=False)["input_ids"][0]
    ratio = plan.copy_share / (1.0 - plan.copy_share)
    pieces: list[list[int]] = []
    text = stream.tolist()
    start = 0
    while start < len(text):
        size = int(torch.randint(32, 97, (1,), generator=generator))
        pieces.append(text[start : start + size])
        start += size
        pieces.append(_copy_segment(words, newline, max(8, round(size * ratio)), generator))
    return torch.tensor([t for piece in pieces for t in piece], dtype=torch.long)


def copy_prompts(tokenizer: Any, plan: TrainPlan, count: int = 24, *, seed: int = 0) -> list[dict[str, str]]:
    """Prompts that start a copy: a newline and a fresh random cycle (a generator of their own) written
    twice, as JSONL rows (`prompt`), for `smoke --prompts`. The target continues the cycle by copying."""
    generator = torch.Generator().manual_seed(seed + 5)
    words = copy_vocabulary(tokenizer, plan.copy_words)
    newline = tokenizer("\n", add_special_tokens=False)["input_ids"][0]
    rows = []
    for index in range(count):
        cycle = _cycle(words, 6, 12, generator)
        ids = [newline, *cycle, *cycle]
        rows.append({"id": f"copy-{index}", "prompt": tokenizer.decode(ids)})
    return rows


def train_tokenizer(text: str, vocab_size: int, out_dir: Path) -> Any:
    """A byte-level BPE tokenizer, saved as a transformers fast tokenizer (tokenizer.json)."""
    # transformers costs ~2 s beyond torch: the checkpoint-copy helpers (head_size_copy, rope_layout_copy)
    # need none of it.
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: PLC0415
    from transformers import PreTrainedTokenizerFast  # noqa: PLC0415

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    chunks = text.split("\n\n")
    tokenizer.train_from_iterator(chunks, trainer=trainer)
    fast: Any = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=tokenizer, bos_token="<|endoftext|>", eos_token="<|endoftext|>", pad_token="<|endoftext|>"
    )
    fast.save_pretrained(str(out_dir))
    return fast


def _target_model(plan: TrainPlan, vocab_size: int) -> Any:
    if plan.mla:
        # transformers: see train_tokenizer.
        from transformers import DeepseekV3Config, DeepseekV3ForCausalLM  # noqa: PLC0415

        mla_config = DeepseekV3Config(
            vocab_size=vocab_size,
            hidden_size=plan.hidden_size,
            intermediate_size=plan.intermediate_size,
            moe_intermediate_size=plan.moe_intermediate_size,
            num_hidden_layers=plan.num_layers,
            num_attention_heads=plan.num_heads,
            num_key_value_heads=plan.num_heads,
            n_routed_experts=4,
            num_experts_per_tok=2,
            n_shared_experts=1,
            n_group=1,
            topk_group=1,
            first_k_dense_replace=1,
            kv_lora_rank=plan.kv_lora_rank,
            q_lora_rank=plan.q_lora_rank,
            qk_rope_head_dim=plan.qk_rope_head_dim,
            qk_nope_head_dim=plan.qk_nope_head_dim,
            v_head_dim=plan.v_head_dim,
            max_position_embeddings=2048,
            tie_word_embeddings=False,
            # Interleaved (GPT-J-style) rope pairs: what vLLM computes for DeepSeek whatever the config
            # says (deepseek_v2.py builds its rope with is_neox_style=False).
            rope_interleave=True,
        )
        return DeepseekV3ForCausalLM(mla_config)
    from transformers import LlamaConfig, LlamaForCausalLM  # noqa: PLC0415

    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=plan.hidden_size,
        intermediate_size=plan.intermediate_size,
        num_hidden_layers=plan.num_layers,
        num_attention_heads=plan.num_heads,
        num_key_value_heads=plan.num_kv_heads,
        max_position_embeddings=2048,
        tie_word_embeddings=False,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=0,
    )
    return LlamaForCausalLM(config)


def _batches(stream: torch.Tensor, batch: int, seq_len: int, generator: torch.Generator) -> torch.Tensor:
    starts = torch.randint(0, stream.numel() - seq_len - 1, (batch,), generator=generator)
    return torch.stack([stream[s : s + seq_len] for s in starts.tolist()])


def _autocast(device: str, enabled: bool) -> Any:
    return torch.autocast(
        device_type="cuda" if device.startswith("cuda") else "cpu", dtype=torch.bfloat16, enabled=enabled
    )


def train_target(plan: TrainPlan, stream: torch.Tensor, vocab_size: int, *, device: str, seed: int, log: Log) -> Any:
    """Next-token training for a fixed number of steps with a cosine learning rate."""
    torch.manual_seed(seed)
    model = _target_model(plan, vocab_size).to(device)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=plan.target_lr, weight_decay=0.01, betas=(0.9, 0.95))
    generator = torch.Generator().manual_seed(seed)
    start = time.perf_counter()
    for step in range(plan.target_steps):
        lr = plan.target_lr * min(1.0, (step + 1) / 50) * 0.5 * (1 + math.cos(math.pi * step / plan.target_steps))
        for group in optimizer.param_groups:
            group["lr"] = lr
        batch = _batches(stream, plan.target_batch, plan.seq_len + 1, generator).to(device)
        with _autocast(device, plan.mixed_precision):
            logits = model(input_ids=batch[:, :-1]).logits
        loss = functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % 100 == 0 or step == plan.target_steps - 1:
            log(f"target step {step}: loss {loss.item():.3f} ({time.perf_counter() - start:.0f}s)")
    model.eval()
    return model


@torch.no_grad()
@decode_attention()  # generate() decodes: a new key length every step
def _greedy_continuations(model: Any, stream: torch.Tensor, plan: TrainPlan, *, device: str, seed: int) -> torch.Tensor:
    """The target's own greedy continuations of short prefixes: the text the drafter meets in use."""
    generator = torch.Generator().manual_seed(seed + 1)
    prefix_len = 16
    new_tokens = plan.seq_len - prefix_len
    rows: list[torch.Tensor] = []
    chunk = 64
    for begin in range(0, plan.generated_sequences, chunk):
        count = min(chunk, plan.generated_sequences - begin)
        ids = _batches(stream, count, prefix_len, generator).to(device)
        with _autocast(device, plan.mixed_precision):
            out = model.generate(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=new_tokens,
                min_new_tokens=new_tokens,
                do_sample=False,
                pad_token_id=0,
            )
        rows.append(out[:, : plan.seq_len].cpu())
    return torch.cat(rows)


@torch.no_grad()
def _target_features(
    model: Any, ids: torch.Tensor, aux_layer_ids: tuple[int, ...], *, device: str, mixed: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """Aux hidden states (input of each aux layer) and the target's greedy choice at every position."""
    with _autocast(device, mixed):
        out = model(input_ids=ids.to(device), output_hidden_states=True)
    aux = torch.cat([out.hidden_states[i].float() for i in aux_layer_ids], dim=-1)
    return aux, out.logits.argmax(-1)


def _ttt_attention(layer: Any, q: torch.Tensor, keys: list[torch.Tensor], values: list[torch.Tensor]) -> torch.Tensor:
    """Attention of one unrolled step: causal over the first step's keys, diagonal over later steps'."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    k0, v0 = layer.expand_kv(keys[0]), layer.expand_kv(values[0])
    length = q.shape[2]
    scores = torch.matmul(q, k0.transpose(-1, -2)) * scale
    causal = torch.ones(length, length, dtype=torch.bool, device=q.device).tril()
    scores = scores.masked_fill(~causal, float("-inf"))
    diagonal = [(q * layer.expand_kv(k)).sum(-1, keepdim=True) * scale for k in keys[1:]]
    weights = torch.softmax(torch.cat([scores, *diagonal], dim=-1).float(), dim=-1).to(q.dtype)
    out = torch.matmul(weights[..., :length], v0)
    for s, v in enumerate(values[1:]):
        out = out + weights[..., length + s : length + s + 1] * layer.expand_kv(v)
    return out


def draft_vocabulary(choices: torch.Tensor, target_vocab: int, draft_vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The most frequent target choices as the draft vocabulary: (d2t offsets, t2d mask), SpecForge-style."""
    counts = torch.bincount(choices.reshape(-1).cpu(), minlength=target_vocab).float()
    # Ties broken towards lower ids so that the choice is deterministic.
    counts = counts - torch.arange(target_vocab, dtype=torch.float32) * 1e-6
    used = torch.sort(torch.topk(counts, draft_vocab).indices).values
    d2t = used - torch.arange(draft_vocab)
    t2d = torch.zeros(target_vocab, dtype=torch.bool)
    t2d[used] = True
    return d2t, t2d


def train_drafter(
    plan: TrainPlan, target: Any, stream: torch.Tensor, *, device: str, seed: int, log: Log
) -> tuple[Eagle3Drafter, torch.Tensor]:
    """EAGLE-3 training-time test on the target's features; returns the drafter and t2d."""
    torch.manual_seed(seed)
    aux_ids = plan.aux_layer_ids
    generated = _greedy_continuations(target, stream, plan, device=device, seed=seed)
    log(f"generated {generated.shape[0]} greedy continuations")
    generator = torch.Generator().manual_seed(seed + 2)
    probe = torch.cat([generated, _batches(stream, generated.shape[0], plan.seq_len, generator)])
    choices = torch.cat(
        [
            _target_features(target, probe[i : i + 64], aux_ids, device=device, mixed=plan.mixed_precision)[1].cpu()
            for i in range(0, probe.shape[0], 64)
        ]
    )
    target_vocab = int(target.get_input_embeddings().num_embeddings)
    d2t, t2d = draft_vocabulary(choices, target_vocab, plan.draft_vocab_size)
    target_to_draft = torch.full((target_vocab,), -100, dtype=torch.long)
    target_to_draft[d2t + torch.arange(plan.draft_vocab_size)] = torch.arange(plan.draft_vocab_size)
    target_to_draft = target_to_draft.to(device)

    cfg = Eagle3Config(
        hidden_size=plan.hidden_size,
        target_hidden_size=int(target.config.hidden_size),
        num_attention_heads=plan.num_heads,
        num_key_value_heads=plan.num_kv_heads,
        head_dim=plan.hidden_size // plan.num_heads,
        intermediate_size=plan.intermediate_size,
        rms_norm_eps=1e-6,
        rope_theta=10000.0,
        target_vocab_size=target_vocab,
        draft_vocab_size=plan.draft_vocab_size,
        aux_layer_ids=aux_ids,
        aux_layer_ids_declared=True,
        norm_before_residual=False,
        norm_output=False,
        attention_bias=False,
        config_format="vllm",
    )
    embed = target.get_input_embeddings()
    drafter = Eagle3Drafter(cfg, embed_tokens=embed).to(device)
    drafter.d2t.copy_(d2t.to(device))
    # The target's embedding is shared and frozen, as engines share it at serve time.
    trainable = [p for name, p in drafter.named_parameters() if not name.startswith("embed_tokens.")]
    embed.weight.requires_grad_(False)
    optimizer = torch.optim.AdamW(trainable, lr=plan.draft_lr, weight_decay=0.0)
    layer = drafter.layer
    start = time.perf_counter()
    for step in range(plan.draft_steps):
        lr = plan.draft_lr * min(1.0, (step + 1) / 30) * 0.5 * (1 + math.cos(math.pi * step / plan.draft_steps))
        for group in optimizer.param_groups:
            group["lr"] = lr
        half = plan.draft_batch // 2
        rows = torch.randint(0, generated.shape[0], (plan.draft_batch - half,), generator=generator)
        ids = torch.cat([generated[rows], _batches(stream, half, plan.seq_len, generator)]).to(device)
        aux, choice = _target_features(target, ids, aux_ids, device=device, mixed=plan.mixed_precision)
        length = ids.shape[1]
        positions = torch.arange(length, device=device)[None].expand(ids.shape[0], -1)
        # Step 0: entry t pairs the target state at t with the real token t+1; label: the target's choice at t+1.
        tokens = torch.cat([ids[:, 1:], ids[:, -1:]], dim=1)
        hidden = drafter.combine_aux(aux)
        keys: list[torch.Tensor] = []
        values: list[torch.Tensor] = []
        loss = torch.zeros((), device=device)
        with _autocast(device, plan.mixed_precision):
            for j in range(plan.ttt_steps):
                embeds = drafter.embed_tokens(tokens).to(hidden.dtype)
                q, k, v, residual = layer.qkv(embeds, hidden, positions + j)
                keys.append(k)
                values.append(v)
                hidden = layer.finish(_ttt_attention(layer, q, keys, values), residual)
                logits = drafter.logits(hidden).float()
                labels = torch.full_like(ids, -100)
                labels[:, : length - 1 - j] = target_to_draft[choice[:, 1 + j :]]
                loss = loss + (0.8**j) * functional.cross_entropy(
                    logits.reshape(-1, logits.shape[-1]), labels.reshape(-1)
                )
                # Chained step j+1 at entry t is fed the target's choice for position t+j+2.
                tokens = torch.cat([choice[:, 1 + j :], choice[:, -1:].expand(-1, 1 + j)], dim=1)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        optimizer.step()
        if step % 100 == 0 or step == plan.draft_steps - 1:
            log(f"draft step {step}: loss {loss.item():.3f} ({time.perf_counter() - start:.0f}s)")
    drafter.eval()
    return drafter, t2d


def save_drafter(drafter: Eagle3Drafter, t2d: torch.Tensor, out_dir: Path, *, d2t: torch.Tensor | None = None) -> None:
    """vLLM format: config.json (`LlamaForCausalLMEagle3`) and model.safetensors with d2t/t2d inside."""
    out_dir.mkdir(parents=True, exist_ok=True)
    state = checkpoint_state(drafter, t2d=t2d)
    if d2t is not None:
        state["d2t"] = d2t.to(torch.long).contiguous()
    save_file(
        {k: v.float() if v.is_floating_point() else v for k, v in state.items()},
        str(out_dir / "model.safetensors"),
        metadata={"format": "pt"},
    )
    (out_dir / "config.json").write_text(json.dumps(drafter.cfg.to_json_dict(), indent=2) + "\n", encoding="utf-8")


def write_engine_routing_fields(target_dir: Path) -> None:
    """State in config.json how transformers' DeepSeek-V3 routes, for engines that default otherwise.

    transformers always scores experts with a sigmoid plus `e_score_correction_bias`; vLLM reads
    `scoring_func` (default softmax) and loads the bias only when `topk_method` is "noaux_tc".
    """
    path = target_dir / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config.update({"topk_method": "noaux_tc", "scoring_func": "sigmoid"})
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def rope_layout_copy(target_dir: Path, out_dir: Path) -> Path:
    """The same MLA model written with `rope_interleave: false`: an engine gap on purpose.

    transformers computes exactly the same function (the rope rows of q_b_proj/q_proj and
    kv_a_proj_with_mqa are permuted into the non-interleaved layout), so the drafter trained on the
    original stays right for it; vLLM ignores `rope_interleave` and applies interleaved rope to the
    permuted rows, so it serves a different model from the one the drafter was trained on.
    """
    config = json.loads((target_dir / "config.json").read_text(encoding="utf-8"))
    rope = int(config["qk_rope_head_dim"])
    nope = int(config["qk_nope_head_dim"])
    heads = int(config["num_attention_heads"])
    kv_lora_rank = int(config["kv_lora_rank"])
    # Interleaved pairs (x0, x1), (x2, x3), ... are (x0, x2, ...) and (x1, x3, ...) in rotate-half layout.
    order = torch.cat([torch.arange(0, rope, 2), torch.arange(1, rope, 2)])
    if out_dir.exists():
        shutil.rmtree(out_dir)
    shutil.copytree(target_dir, out_dir)
    tensors = load_file(str(target_dir / "model.safetensors"))
    for name, weight in list(tensors.items()):
        if name.endswith(("self_attn.q_b_proj.weight", "self_attn.q_proj.weight")):
            per_head = weight.reshape(heads, nope + rope, -1).clone()
            per_head[:, nope:] = per_head[:, nope:][:, order]
            tensors[name] = per_head.reshape(weight.shape).contiguous()
        elif name.endswith("self_attn.kv_a_proj_with_mqa.weight"):
            permuted = weight.clone()
            permuted[kv_lora_rank:] = weight[kv_lora_rank:][order]
            tensors[name] = permuted.contiguous()
    save_file(tensors, str(out_dir / "model.safetensors"), metadata={"format": "pt"})
    config["rope_interleave"] = False
    (out_dir / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return out_dir


def head_size_copy(target_dir: Path, out_dir: Path, head_dim: int = 16) -> Path:
    """The same weights read with a smaller attention head size (more heads of `head_dim`): a model
    that loads everywhere but that vLLM's CPU attention cannot run (it has no kernel for head size 16)."""
    config = json.loads((target_dir / "config.json").read_text(encoding="utf-8"))
    kv_width = int(config["num_key_value_heads"]) * int(config.get("head_dim") or 0)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    shutil.copytree(target_dir, out_dir)
    config.update(
        {
            "head_dim": head_dim,
            "num_attention_heads": int(config["hidden_size"]) // head_dim,
            # k_proj/v_proj keep their shapes: the same width in heads of the new size.
            "num_key_value_heads": kv_width // head_dim,
        }
    )
    (out_dir / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return out_dir


def shuffled_d2t(d2t: torch.Tensor, seed: int) -> torch.Tensor:
    """The same draft vocabulary, with its draft ids pointing at each other's target ids."""
    draft_vocab = d2t.numel()
    targets = torch.arange(draft_vocab) + d2t.cpu()
    generator = torch.Generator().manual_seed(seed + 3)
    permutation = torch.randperm(draft_vocab, generator=generator)
    return targets[permutation] - torch.arange(draft_vocab)


def _stderr_log(message: str) -> None:
    sys.stderr.write(f"specprobe demo: {message}\n")


def build_pair(
    plan: TrainPlan, target_dir: Path, draft_dir: Path, *, device: str, seed: int, log: Log
) -> tuple[Eagle3Drafter, torch.Tensor]:
    """Train and save one target (model + tokenizer) and its drafter."""
    text = corpus_text(plan.corpus_chars)
    target_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = train_tokenizer(text, plan.vocab_size, target_dir)
    # Batched encoding of ~64k-character pieces runs in parallel in the fast tokenizer.
    pieces = [text[i : i + 65536] for i in range(0, len(text), 65536)]
    stream = torch.tensor([t for ids in tokenizer(pieces)["input_ids"] for t in ids], dtype=torch.long)
    if plan.copy_share > 0:
        stream = with_copy_cycles(stream, tokenizer, plan, seed=seed)
    log(f"corpus: {len(text)} characters, {stream.numel()} tokens, vocab {len(tokenizer)}")
    target = train_target(plan, stream, len(tokenizer), device=device, seed=seed, log=log)
    target.save_pretrained(str(target_dir))
    if plan.mla:
        write_engine_routing_fields(target_dir)
    drafter, t2d = train_drafter(plan, target, stream, device=device, seed=seed, log=log)
    save_drafter(drafter, t2d, draft_dir)
    return drafter, t2d


def build_demo_models(
    out_dir: Path,
    *,
    device: str = "cpu",
    seed: int = 0,
    plan: TrainPlan = TINY,
    with_mla: bool = False,
    log: Log = _stderr_log,
) -> dict[str, Path]:
    """Write DIR/target, DIR/draft and DIR/draft-broken (shuffled d2t); with_mla adds DIR/target-mla,
    DIR/draft-mla, DIR/draft-mla-broken and DIR/target-mla-neox-rope (the same model written in the
    rope layout vLLM misreads); a plan with copy cycles adds DIR/copy-prompts.jsonl (copy_prompts).
    Returns the paths by name."""
    torch.set_num_threads(max(1, torch.get_num_threads()))
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {"target": out_dir / "target", "draft": out_dir / "draft", "draft-broken": out_dir / "draft-broken"}
    drafter, t2d = build_pair(plan, written["target"], written["draft"], device=device, seed=seed, log=log)
    broken = written["draft-broken"]
    if broken.exists():
        shutil.rmtree(broken)
    save_drafter(drafter, t2d, broken, d2t=shuffled_d2t(drafter.d2t, seed))
    if plan.copy_share > 0:
        # transformers: see train_tokenizer.
        from transformers import AutoTokenizer  # noqa: PLC0415

        tokenizer = AutoTokenizer.from_pretrained(str(written["target"]))
        written["copy-prompts"] = out_dir / "copy-prompts.jsonl"
        rows = copy_prompts(tokenizer, plan, seed=seed)
        written["copy-prompts"].write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    if with_mla:
        mla_plan = replace(plan, mla=True) if not plan.mla else plan
        written["target-mla"] = out_dir / "target-mla"
        written["draft-mla"] = out_dir / "draft-mla"
        mla_drafter, mla_t2d = build_pair(
            mla_plan, written["target-mla"], written["draft-mla"], device=device, seed=seed, log=log
        )
        written["draft-mla-broken"] = out_dir / "draft-mla-broken"
        save_drafter(mla_drafter, mla_t2d, written["draft-mla-broken"], d2t=shuffled_d2t(mla_drafter.d2t, seed))
        written["target-mla-neox-rope"] = rope_layout_copy(written["target-mla"], out_dir / "target-mla-neox-rope")
    return written


def main(argv: list[str] | None = None) -> int:
    """`python -m specprobe.demo.train --out DIR [--plan tiny|tiny-mla|tiny-copy|gpu] [--device cuda]`."""
    parser = argparse.ArgumentParser(description="Train the demo target and its EAGLE-3 drafters.")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--plan", choices=sorted(PLANS), default="tiny")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--with-mla", action="store_true")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    written = build_demo_models(
        args.out, device=args.device, seed=args.seed, plan=PLANS[args.plan], with_mla=args.with_mla
    )
    _stderr_log(f"wrote {', '.join(str(p) for p in written.values())} in {time.perf_counter() - start:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
