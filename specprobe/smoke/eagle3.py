"""specprobe's own EAGLE-3 drafter in torch, following vLLM's semantics, reading the checkpoint formats
`check` understands: vLLM-native `layers.0.*`, original/SpecForge `midlayer.*`, speculators configs.

Semantics (vLLM `llama_eagle3.py`): `fc` maps the concatenated aux hidden states of the target
(len(aux_layer_ids) * target_hidden) to the draft hidden size; one decoder layer whose q/k/v take
2*hidden = [input_layernorm(embeds); hidden_norm(hidden)]; the residual is the hidden state before
(default) or after (`norm_before_residual`) `hidden_norm`; logits come from `norm(out + residual)`
through the reduced `lm_head`, and draft id i means target id i + d2t[i]. The pre-norm sum is the
hidden state fed back for the next chained draft.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file
from torch import nn
from torch.nn import functional
from torch.nn.attention import SDPBackend, sdpa_kernel

from specprobe.checkpoint.folder import load_checkpoint
from specprobe.compat.engine_facts import default_aux_layers
from specprobe.findings import SpecprobeError
from specprobe.hfconfig import ConfigError, load_config_json

EVIDENCE_VLLM_EAGLE3 = "https://github.com/vllm-project/vllm/blob/main/vllm/model_executor/models/llama_eagle3.py"

# Attention kernels for decoding loops, where the key length grows by one or more every step. cuDNN's
# attention (the first choice of torch's scaled_dot_product_attention for half precision on Hopper)
# builds and caches an execution graph per distinct shape, so in a decoding loop nearly every call
# pays a graph build: on an H200 a bfloat16 smoke run with one timing repeat took 11.3 s for what
# float32 (never routed to cuDNN) did in 1.1 s. The other kernels take any shape at no set-up cost;
# on the CPU these are the kernels torch uses anyway, so CPU results do not change.
DECODE_ATTENTION_BACKENDS: list[SDPBackend] = [
    SDPBackend.FLASH_ATTENTION,
    SDPBackend.EFFICIENT_ATTENTION,
    SDPBackend.MATH,
]


@contextlib.contextmanager
def decode_attention() -> Iterator[None]:
    """Scaled-dot-product attention without the per-shape kernels, for loops whose shapes change each step."""
    with sdpa_kernel(DECODE_ATTENTION_BACKENDS):
        yield


def resolve_dtype(name: str) -> torch.dtype:
    """The torch dtype a ``--dtype`` name stands for (SpecprobeError, exit 2, for any other name)."""
    dtypes = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}
    if name not in dtypes:
        raise SpecprobeError(f"unknown dtype {name!r}; choose one of: {', '.join(dtypes)}")
    return dtypes[name]


class DrafterFormatError(Exception):
    """The drafter folder cannot be read as an EAGLE-3 checkpoint (a finding, not a crash)."""


@dataclass(frozen=True)
class Eagle3Config:
    """What the reference drafter needs from a drafter's config.json, in any of the supported formats."""

    hidden_size: int
    target_hidden_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    rms_norm_eps: float
    rope_theta: float
    target_vocab_size: int
    draft_vocab_size: int
    aux_layer_ids: tuple[int, ...]
    aux_layer_ids_declared: bool
    norm_before_residual: bool
    norm_output: bool
    attention_bias: bool
    config_format: str

    def to_json_dict(self, architecture: str = "LlamaForCausalLMEagle3") -> dict[str, Any]:
        """A vLLM-format config.json (what `LlamaForCausalLMEagle3` drafters ship)."""
        return {
            "architectures": [architecture],
            "model_type": "llama",
            "hidden_size": self.hidden_size,
            "target_hidden_size": self.target_hidden_size,
            "num_hidden_layers": 1,
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads,
            "head_dim": self.head_dim,
            "intermediate_size": self.intermediate_size,
            "hidden_act": "silu",
            "rms_norm_eps": self.rms_norm_eps,
            "rope_theta": self.rope_theta,
            "max_position_embeddings": 4096,
            "vocab_size": self.target_vocab_size,
            "draft_vocab_size": self.draft_vocab_size,
            "tie_word_embeddings": False,
            "eagle_aux_hidden_state_layer_ids": list(self.aux_layer_ids),
            "eagle_config": {
                "eagle_aux_hidden_state_layer_ids": list(self.aux_layer_ids),
                "use_aux_hidden_state": True,
            },
            "norm_before_residual": self.norm_before_residual,
            "torch_dtype": "float32",
        }


def default_aux_layer_ids(num_target_layers: int) -> tuple[int, ...]:
    """The engines' choice when a drafter declares none (written once, in compat.engine_facts)."""

    return tuple(default_aux_layers(num_target_layers))


def _int_field(cfg: dict[str, Any], key: str, default: int | None = None) -> int:
    value = cfg.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise DrafterFormatError(f"config.json: {key} must be an integer (got {value!r})")
    return value


def parse_eagle3_config(
    raw: dict[str, Any], *, target_num_layers: int, target_hidden_size: int, target_vocab_size: int
) -> Eagle3Config:
    """Read vLLM/SpecForge (`hidden_size` at top level) or speculators (`transformer_layer_config`)."""
    layer_cfg = raw.get("transformer_layer_config")
    if isinstance(layer_cfg, dict):
        config_format = "speculators"
        # vLLM's speculators path defaults norm_before_residual to True, the raw path to False.
        norm_before_residual_default = True
    else:
        layer_cfg = raw
        config_format = "specforge" if raw.get("eagle_config") else "vllm"
        norm_before_residual_default = False
    hidden = _int_field(layer_cfg, "hidden_size")
    heads = _int_field(layer_cfg, "num_attention_heads")
    kv_heads = _int_field(layer_cfg, "num_key_value_heads", heads)
    head_dim_value = layer_cfg.get("head_dim")
    head_dim = head_dim_value if isinstance(head_dim_value, int) and head_dim_value > 0 else hidden // heads
    vocab = raw.get("vocab_size", layer_cfg.get("vocab_size", target_vocab_size))
    if not isinstance(vocab, int):
        vocab = target_vocab_size
    draft_vocab = raw.get("draft_vocab_size", layer_cfg.get("draft_vocab_size")) or vocab
    eagle_value = raw.get("eagle_config")
    eagle_cfg: dict[str, Any] = eagle_value if isinstance(eagle_value, dict) else {}
    aux = raw.get("eagle_aux_hidden_state_layer_ids", eagle_cfg.get("eagle_aux_hidden_state_layer_ids"))
    declared = isinstance(aux, list) and all(isinstance(i, int) for i in aux) and len(aux) > 0
    aux_ids: tuple[int, ...] = (
        tuple(aux) if isinstance(aux, list) and declared else default_aux_layer_ids(target_num_layers)
    )
    rope_value = layer_cfg.get("rope_parameters")
    rope: dict[str, Any] = rope_value if isinstance(rope_value, dict) else {}
    rope_theta = layer_cfg.get("rope_theta", rope.get("rope_theta", 10000.0))
    if not isinstance(rope_theta, int | float):
        raise DrafterFormatError(f"config.json: rope_theta must be a number (got {rope_theta!r})")
    norm_before_residual = raw.get("norm_before_residual", layer_cfg.get("norm_before_residual"))
    norm_output = raw.get("norm_output", layer_cfg.get("norm_output", False))
    return Eagle3Config(
        hidden_size=hidden,
        target_hidden_size=int(
            raw.get("target_hidden_size") or layer_cfg.get("target_hidden_size") or target_hidden_size
        ),
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=_int_field(layer_cfg, "intermediate_size"),
        rms_norm_eps=float(layer_cfg.get("rms_norm_eps", 1e-6)),
        rope_theta=float(rope_theta),
        target_vocab_size=vocab,
        draft_vocab_size=int(draft_vocab),
        aux_layer_ids=aux_ids,
        aux_layer_ids_declared=declared,
        norm_before_residual=bool(
            norm_before_residual_default if norm_before_residual is None else norm_before_residual
        ),
        norm_output=bool(norm_output),
        attention_bias=bool(layer_cfg.get("attention_bias", False)),
        config_format=config_format,
    )


class RMSNorm(nn.Module):
    """Llama RMSNorm, computed in float32 like the engines do."""

    def __init__(self, size: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not torch.is_grad_enabled():
            # One kernel on a GPU instead of five (float32) or nine (half precision: the casts to and
            # from float32 are kernels of their own). The fused kernel computes the same float32
            # expression, weight * x * rsqrt(mean(x^2) + eps), rounded once to x's dtype, summing the
            # mean in its own order (a float32 result can differ in the last bit); on the CPU it is this
            # very composite. Training keeps the explicit form below, which autocast sees.
            return functional.rms_norm(x, (x.shape[-1],), self.weight, self.eps)
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return (self.weight.float() * x32).to(x.dtype)


def rotary_tables(
    positions: torch.Tensor, dim: int, theta: float, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin [B, 1, n, dim] of Llama's rotary embedding at positions [B, n], in ``dtype``."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, device=positions.device, dtype=torch.float32) / dim))
    angles = positions.to(torch.float32)[..., None] * inv_freq  # [B, n, d/2]
    cos = torch.cat([angles.cos(), angles.cos()], dim=-1)[:, None].to(dtype)
    sin = torch.cat([angles.sin(), angles.sin()], dim=-1)[:, None].to(dtype)
    return cos, sin


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate x [B, heads, n, d] (non-interleaved halves) by tables from ``rotary_tables``."""
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


def rotate(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """Llama rotary embedding (non-interleaved halves) of x [B, heads, n, d] at positions [B, n]."""
    cos, sin = rotary_tables(positions, x.shape[-1], theta, x.dtype)
    return apply_rotary(x, cos, sin)


class DraftKVCache:
    """Keys/values of the drafter's single layer with a validity mask per slot.

    Rows of a batch accept different numbers of tokens; rather than re-packing, rejected or padded
    slots stay in place and are masked out (``valid`` false) for every later query.
    """

    def __init__(self) -> None:
        self.keys: torch.Tensor | None = None
        self.values: torch.Tensor | None = None
        self.valid: torch.Tensor | None = None

    @property
    def length(self) -> int:
        return 0 if self.keys is None else int(self.keys.shape[2])

    def append(self, keys: torch.Tensor, values: torch.Tensor, valid: torch.Tensor) -> None:
        if self.keys is None or self.values is None or self.valid is None:
            self.keys, self.values, self.valid = keys, values, valid
            return
        self.keys = torch.cat([self.keys, keys], dim=2)
        self.values = torch.cat([self.values, values], dim=2)
        self.valid = torch.cat([self.valid, valid], dim=1)

    def invalidate_from(self, start: int) -> None:
        """Mask out every slot from ``start`` on (chained draft entries once they are verified)."""
        if self.valid is not None:
            self.valid[:, start:] = False


# Captured steps attend over the cache in buckets of this many slots (None: always the whole capacity).
# Attention and its mask cost grow with the slots attended, and a speculative generation sizes its
# caches for the worst case ((K+1) target slots and 2K drafter slots per token): over the whole
# capacity, the largest GPU kernels of a batch-24 K=3 generation on an H200 were attention and the
# elementwise work on masks, over slots mostly not yet written. A graph per bucket costs one more
# eager step and capture every 128 slots.
VIEW_BUCKET: int | None = 128


class SlotKVCache:
    """Keys/values in slots allocated once, for decoding steps of fixed shape (replayable as CUDA graphs).

    The same layout as ``DraftKVCache`` (rows advance in lockstep, a rejected or padded slot stays in
    place and is masked by ``valid``), but the buffers hold ``capacity`` slots from the start, so every
    step reads and writes the same memory and nothing in a step depends on a host-side length: the
    step's slots are ``cursor + arange(n)`` with ``cursor`` a device tensor. Whoever runs a step calls
    ``begin(n, whole=...)`` (sets the cursor) before and ``end(n)`` after it, outside any captured graph.
    A step that is captured attends over the slots up to the end of the ``VIEW_BUCKET``-slot bucket that
    holds its last entry (``whole``: unwritten and rejected ones masked out), so that one graph serves
    the steps of a bucket; an eager step only over the slots written so far, as a growing cache would.

    It also speaks the protocol transformers' decoder layers use (``update(keys, values, layer_idx)``
    returning the whole keys and values), so one instance serves as a target's cache, its layers
    allocated lazily at their first (eager) write with whatever head layout the model has.
    """

    def __init__(self, batch: int, capacity: int, device: torch.device | str) -> None:
        self.batch = batch
        self.capacity = capacity
        self.length = 0
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []
        self.valid = torch.zeros(batch, capacity, dtype=torch.bool, device=device)
        self.key_index = torch.arange(capacity, device=device)
        self.cursor = torch.zeros(1, dtype=torch.long, device=device)
        self.step_slots: torch.Tensor | None = None
        self.view = capacity  # slots a step attends over

    def reset(self) -> None:
        """Empty the cache for a new generation, keeping its buffers (and any graph that uses them)."""
        self.length = 0
        self.valid.zero_()
        for tensor in (*self.keys, *self.values):
            tensor.zero_()

    def bucket(self, n: int) -> int:
        """The slots a captured step of n entries attends over (see ``VIEW_BUCKET``)."""
        if VIEW_BUCKET is None:
            return self.capacity
        return min(self.capacity, -(-(self.length + n) // VIEW_BUCKET) * VIEW_BUCKET)

    def begin(self, n: int, *, whole: bool) -> None:
        if self.length + n > self.capacity:
            raise RuntimeError(f"KV cache of {self.capacity} slots cannot take {n} more after {self.length}")
        self.cursor.fill_(self.length)
        self.view = self.bucket(n) if whole else self.length + n

    def end(self, n: int) -> None:
        self.length += n

    def slots(self, n: int) -> torch.Tensor:
        """The slots of this step's n entries; also where ``update`` writes until the next call."""
        self.step_slots = self.cursor + self.key_index[:n]
        return self.step_slots

    def mark(self, valid: torch.Tensor) -> torch.Tensor:
        """Record the validity [B, n] of this step's entries; returns the validity of the slots attended."""
        assert self.step_slots is not None
        self.valid.index_copy_(1, self.step_slots, valid)
        return self.valid[:, : self.view]

    def attended(self) -> torch.Tensor:
        """Indices of the slots a step attends over."""
        return self.key_index[: self.view]

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write this step's keys/values [B, heads, n, d] of one layer; returns those of the slots attended."""
        assert self.step_slots is not None
        while len(self.keys) <= layer_idx:
            shape = (self.batch, key_states.shape[1], self.capacity, key_states.shape[3])
            self.keys.append(torch.zeros(shape, dtype=key_states.dtype, device=key_states.device))
            shape = (self.batch, value_states.shape[1], self.capacity, value_states.shape[3])
            self.values.append(torch.zeros(shape, dtype=value_states.dtype, device=value_states.device))
        self.keys[layer_idx].index_copy_(2, self.step_slots, key_states)
        self.values[layer_idx].index_copy_(2, self.step_slots, value_states)
        return self.keys[layer_idx][:, :, : self.view], self.values[layer_idx][:, :, : self.view]

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.length

    def invalidate_from(self, start: int) -> None:
        """Mask out every slot from ``start`` on (chained draft entries once they are verified)."""
        self.valid[:, start:] = False


def slot_mask(key_index: torch.Tensor, query_slots: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Boolean attention mask [B, n, slots]: causal over slot order, valid slots only.

    A padded or rejected query still sees itself, so that no softmax row is all masked (no NaN).
    """
    causal = key_index[None, :] <= query_slots[:, None]  # [n, slots]
    own = key_index[None, :] == query_slots[:, None]
    allowed: torch.Tensor = (causal[None] & valid[:, None, :]) | own[None]
    return allowed


class Eagle3Layer(nn.Module):
    """The drafter's one decoder layer: attention over 2*hidden inputs, then a SiLU-gated MLP."""

    def __init__(self, cfg: Eagle3Config) -> None:
        super().__init__()
        self.cfg = cfg
        hidden, hd = cfg.hidden_size, cfg.head_dim
        self.input_layernorm = RMSNorm(hidden, cfg.rms_norm_eps)
        self.hidden_norm = RMSNorm(hidden, cfg.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(hidden, cfg.rms_norm_eps)
        self.q_proj = nn.Linear(2 * hidden, cfg.num_attention_heads * hd, bias=cfg.attention_bias)
        self.k_proj = nn.Linear(2 * hidden, cfg.num_key_value_heads * hd, bias=cfg.attention_bias)
        self.v_proj = nn.Linear(2 * hidden, cfg.num_key_value_heads * hd, bias=cfg.attention_bias)
        self.o_proj = nn.Linear(cfg.num_attention_heads * hd, hidden, bias=False)
        self.gate_proj = nn.Linear(hidden, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(hidden, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, hidden, bias=False)

    def qkv(
        self, embeds: torch.Tensor, hidden: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Queries, keys, values [B, heads, n, d] (rotated) and the residual stream."""
        if self.cfg.norm_before_residual:
            normed = self.hidden_norm(hidden)
            residual = normed
        else:
            residual = hidden
            normed = self.hidden_norm(hidden)
        x = torch.cat([self.input_layernorm(embeds), normed], dim=-1)
        batch, n, _ = x.shape
        hd = self.cfg.head_dim
        q = self.q_proj(x).view(batch, n, -1, hd).transpose(1, 2)
        k = self.k_proj(x).view(batch, n, -1, hd).transpose(1, 2)
        v = self.v_proj(x).view(batch, n, -1, hd).transpose(1, 2)
        # One table for queries and keys: the same positions, so the same cos and sin.
        cos, sin = rotary_tables(positions, hd, self.cfg.rope_theta, q.dtype)
        q = apply_rotary(q, cos, sin)
        k = apply_rotary(k, cos, sin)
        return q, k, v, residual

    def finish(self, attn_out: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        """o_proj, residual add, MLP; returns the pre-norm output (out + residual)."""
        batch, _, n, _ = attn_out.shape
        h = self.o_proj(attn_out.transpose(1, 2).reshape(batch, n, -1)) + residual
        normed = self.post_attention_layernorm(h)
        out: torch.Tensor = h + self.down_proj(functional.silu(self.gate_proj(normed)) * self.up_proj(normed))
        return out

    def expand_kv(self, x: torch.Tensor) -> torch.Tensor:
        groups = self.cfg.num_attention_heads // self.cfg.num_key_value_heads
        return x if groups == 1 else x.repeat_interleave(groups, dim=1)


class Eagle3Drafter(nn.Module):
    """EAGLE-3 drafter: fc over aux hidden states, one layer, final norm, reduced lm_head, d2t."""

    d2t: torch.Tensor
    # Attend with the query heads of each key/value head stacked, instead of copying every cached key
    # and value once per query head (``expand_kv``): the same arithmetic per output row without the
    # copies, which for a long replay of a large drafter (8 key/value heads for 64 query heads) cost
    # more than the step. Off by default so that the reference backend keeps the kernels its measured
    # results were taken with.
    grouped_attention = False

    def __init__(self, cfg: Eagle3Config, embed_tokens: nn.Embedding | None = None) -> None:
        super().__init__()
        self.cfg = cfg
        n_aux = len(cfg.aux_layer_ids)
        self.fc = nn.Linear(n_aux * cfg.target_hidden_size, cfg.hidden_size, bias=False)
        self.fc_norm: RMSNorm | None = None
        self.layer = Eagle3Layer(cfg)
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.draft_vocab_size, bias=False)
        self.embed_tokens = (
            embed_tokens if embed_tokens is not None else nn.Embedding(cfg.target_vocab_size, cfg.hidden_size)
        )
        self.register_buffer("d2t", torch.zeros(cfg.draft_vocab_size, dtype=torch.long))

    def combine_aux(self, aux_hidden: torch.Tensor) -> torch.Tensor:
        """fc over concatenated aux hidden states [.., n_aux * target_hidden] -> draft hidden."""
        if self.fc_norm is not None and self.fc_norm.weight.shape[0] == aux_hidden.shape[-1]:
            aux_hidden = self.fc_norm(aux_hidden)
        out: torch.Tensor = self.fc(aux_hidden)
        if self.fc_norm is not None and self.fc_norm.weight.shape[0] != aux_hidden.shape[-1]:
            out = self.fc_norm(out)
        return out

    def logits(self, hidden_prenorm: torch.Tensor) -> torch.Tensor:
        """Draft-vocab logits from the pre-norm output."""
        out: torch.Tensor = self.lm_head(self.norm(hidden_prenorm))
        return out

    def to_target_ids(self, draft_ids: torch.Tensor) -> torch.Tensor:
        """target id = draft id + d2t[draft id] (vLLM and SGLang agree on the offset meaning)."""
        return draft_ids + self.d2t[draft_ids]

    def step(
        self,
        tokens: torch.Tensor,
        hidden: torch.Tensor,
        positions: torch.Tensor,
        cache: DraftKVCache | SlotKVCache,
        valid: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Run n new entries per row against the cache; returns (draft logits, hidden to feed back).

        tokens [B, n] are target ids of the token *after* each hidden state; hidden [B, n, H] is the
        fc output (target entries) or a fed-back drafter state (chained entries).
        """
        embeds = self.embed_tokens(tokens).to(hidden.dtype)
        q, k, v, residual = self.layer.qkv(embeds, hidden, positions)
        n = tokens.shape[1]
        if isinstance(cache, SlotKVCache):
            query_slots = cache.slots(n)
            keys, values = cache.update(k, v, 0)
            mask = slot_mask(cache.attended(), query_slots, cache.mark(valid))
        else:
            old = cache.length
            cache.append(k, v, valid.clone())
            assert cache.keys is not None and cache.values is not None and cache.valid is not None
            keys, values = cache.keys, cache.values
            key_index = torch.arange(old + n, device=tokens.device)
            mask = slot_mask(key_index, key_index[old:], cache.valid)
        groups = self.cfg.num_attention_heads // self.cfg.num_key_value_heads
        if self.grouped_attention and groups > 1:
            attn = _grouped_attention(q, keys, values, mask, groups=groups, scale=1.0 / math.sqrt(self.cfg.head_dim))
        else:
            attn = functional.scaled_dot_product_attention(
                q,
                self.layer.expand_kv(keys),
                self.layer.expand_kv(values),
                attn_mask=mask[:, None],
                scale=1.0 / math.sqrt(self.cfg.head_dim),
            )
        prenorm = self.layer.finish(attn, residual)
        normed = self.norm(prenorm)
        logits: torch.Tensor = self.lm_head(normed)
        return logits, (normed if self.cfg.norm_output else prenorm)


def _grouped_attention(
    q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, *, groups: int, scale: float
) -> torch.Tensor:
    """Attention of q [B, heads, n, d] over shared keys/values [B, kv_heads, slots, d] (query head h reads
    key/value head h // groups, as ``expand_kv`` lays them out) with a mask [B, n, slots]."""
    batch, heads, n, dim = q.shape
    kv_heads = keys.shape[1]
    stacked = q.reshape(batch, kv_heads, groups * n, dim)
    stacked_mask = mask[:, None, None].expand(batch, 1, groups, n, mask.shape[-1]).reshape(batch, 1, groups * n, -1)
    out = functional.scaled_dot_product_attention(stacked, keys, values, attn_mask=stacked_mask, scale=scale)
    return out.reshape(batch, heads, n, dim)


# --- reading and writing checkpoints ------------------------------------------------------------


def _canonical_key(key: str) -> str:
    """`midlayer.` (original EAGLE-3, SpecForge) -> `layers.0.` (vLLM); drop a leading `model.`."""
    if key.startswith("model."):
        key = key[len("model.") :]
    return key.replace("midlayer.", "layers.0.")


_LAYER_MAP = {
    "layers.0.self_attn.q_proj.": "layer.q_proj.",
    "layers.0.self_attn.k_proj.": "layer.k_proj.",
    "layers.0.self_attn.v_proj.": "layer.v_proj.",
    "layers.0.self_attn.o_proj.": "layer.o_proj.",
    "layers.0.mlp.gate_proj.": "layer.gate_proj.",
    "layers.0.mlp.up_proj.": "layer.up_proj.",
    "layers.0.mlp.down_proj.": "layer.down_proj.",
    "layers.0.input_layernorm.": "layer.input_layernorm.",
    "layers.0.hidden_norm.": "layer.hidden_norm.",
    "layers.0.post_attention_layernorm.": "layer.post_attention_layernorm.",
}
_MODULE_TO_CHECKPOINT = {v: k for k, v in _LAYER_MAP.items()}


def _module_key(checkpoint_key: str) -> str:
    key = _canonical_key(checkpoint_key)
    for prefix, replacement in _LAYER_MAP.items():
        if key.startswith(prefix):
            return replacement + key[len(prefix) :]
    if key.startswith("norm_before_fc."):
        return "fc_norm." + key[len("norm_before_fc.") :]
    return key


# What the static reader reports that leaves no complete, safe set of weights to load.
_UNLOADABLE = frozenset(
    {"index-invalid", "path-escape", "shard-missing", "no-weights", "pickle-only", "truncated", "header", "duplicate"}
)


def safetensors_files(draft_dir: Path) -> list[Path]:
    """The weight files of a folder, as `specprobe check` reads them (checkpoint.folder): the shard
    index's files, else *.safetensors; symlinks out of the folder and index paths that escape it are
    refused, and pickles are never loaded."""

    ckpt = load_checkpoint(draft_dir)
    blocking = [issue for issue in ckpt.issues if issue.kind in _UNLOADABLE]
    if blocking:
        issue = blocking[0]
        if issue.kind in ("no-weights", "pickle-only"):
            raise DrafterFormatError(
                f"{issue.message} (no *.safetensors weights; pickled .bin/.pt files are never loaded)"
            )
        raise DrafterFormatError(issue.message)
    return [ckpt.root / name for name in ckpt.headers]


def read_tensors(draft_dir: Path) -> dict[str, torch.Tensor]:

    tensors: dict[str, torch.Tensor] = {}
    for path in safetensors_files(draft_dir):
        try:
            tensors.update(load_file(str(path)))
        except (OSError, SafetensorError) as exc:
            raise DrafterFormatError(f"{path.name} cannot be read: {exc}") from None
    return tensors


def load_drafter(
    draft_dir: Path,
    *,
    target_num_layers: int,
    target_hidden_size: int,
    target_vocab_size: int,
    target_embed_tokens: nn.Embedding | None,
) -> Eagle3Drafter:
    """Build the drafter from a checkpoint folder; shapes are checked against the config.

    As in vLLM, a drafter without `embed_tokens` shares the target's, and a reduced draft vocab
    without `d2t` keeps the zero mapping (draft id i becomes target id i).
    """
    try:
        raw = load_config_json(draft_dir / "config.json")
    except ConfigError as exc:
        raise DrafterFormatError(str(exc)) from None
    cfg = parse_eagle3_config(
        raw,
        target_num_layers=target_num_layers,
        target_hidden_size=target_hidden_size,
        target_vocab_size=target_vocab_size,
    )
    for layer_id in cfg.aux_layer_ids:
        if not 0 <= layer_id < target_num_layers:
            raise DrafterFormatError(
                f"aux layer id {layer_id} does not exist in a target of {target_num_layers} layers"
            )
    tensors = {_module_key(k): v for k, v in read_tensors(draft_dir).items()}
    tensors.pop("t2d", None)
    has_embed = "embed_tokens.weight" in tensors
    if not has_embed and target_embed_tokens is None:
        raise DrafterFormatError("the drafter has no embed_tokens and no target embedding was given")
    if not has_embed and target_embed_tokens is not None and target_embed_tokens.embedding_dim != cfg.hidden_size:
        raise DrafterFormatError(
            f"the drafter has no embed_tokens and the target's are {target_embed_tokens.embedding_dim} wide, "
            f"not {cfg.hidden_size}"
        )
    drafter = Eagle3Drafter(cfg, embed_tokens=None if has_embed else target_embed_tokens)
    if "fc_norm.weight" in tensors:
        drafter.fc_norm = RMSNorm(tensors["fc_norm.weight"].shape[0], cfg.rms_norm_eps)
    if "lm_head.weight" not in tensors:
        raise DrafterFormatError("lm_head.weight is missing: the draft head would be random")
    expected = drafter.state_dict()
    unknown = sorted(set(tensors) - set(expected))
    if unknown:
        raise DrafterFormatError(f"unexpected tensors: {', '.join(unknown[:5])}")
    for name, tensor in tensors.items():
        if tuple(tensor.shape) != tuple(expected[name].shape):
            raise DrafterFormatError(
                f"{_MODULE_TO_CHECKPOINT.get(name, name)} has shape {tuple(tensor.shape)}, "
                f"expected {tuple(expected[name].shape)}"
            )
    missing = sorted(set(expected) - set(tensors) - {"d2t"} - {k for k in expected if k.startswith("embed_tokens.")})
    if missing:
        raise DrafterFormatError(f"missing tensors: {', '.join(missing[:5])}")
    drafter.load_state_dict(
        {k: v for k, v in tensors.items() if not k.startswith("embed_tokens.") or has_embed}, strict=False
    )
    targets = torch.arange(cfg.draft_vocab_size) + drafter.d2t
    if int(targets.min()) < 0 or int(targets.max()) >= target_vocab_size:
        raise DrafterFormatError("d2t maps draft ids outside the target vocabulary")
    return drafter


def checkpoint_state(
    drafter: Eagle3Drafter, *, t2d: torch.Tensor, include_embed: bool = False
) -> dict[str, torch.Tensor]:
    """The drafter's tensors under vLLM-native names (`layers.0.*`, `fc`, `norm`, `lm_head`, d2t, t2d)."""
    state: dict[str, torch.Tensor] = {}
    for name, tensor in drafter.state_dict().items():
        if name.startswith("embed_tokens.") and not include_embed:
            continue
        key = name
        for module_prefix, checkpoint_prefix in _MODULE_TO_CHECKPOINT.items():
            if name.startswith(module_prefix):
                key = checkpoint_prefix + name[len(module_prefix) :]
        state[key] = tensor.detach().to("cpu").contiguous()
    state["t2d"] = t2d.to(torch.bool).cpu().contiguous()
    return state
