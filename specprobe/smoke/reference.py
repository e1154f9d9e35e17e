"""Reference backend: greedy chain speculative decoding of a transformers target with specprobe's own
EAGLE-3 drafter, batched across prompts with KV caches, beside target-only greedy decoding.

It is engine-independent ground truth: what acceptance a drafter reaches when the integration is
right, and whether the speculative output equals the target's own greedy output (losslessness).
Rows of a batch accept different numbers of tokens per round; instead of re-packing the caches,
rejected slots stay in place and are masked out by an explicit 4-D attention mask.
"""

from __future__ import annotations

import gc
import inspect
import math
import time
import types
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional

from specprobe.findings import SpecprobeError
from specprobe.hfconfig import (
    AttentionKind,
    ConfigError,
    classify_attention,
    load_config_json,
    parse_model_config,
)
from specprobe.modelfiles import resolve_config_path
from specprobe.smoke.eagle3 import (
    Eagle3Drafter,
    SlotKVCache,
    decode_attention,
    load_drafter,
    slot_mask,
)

Progress = Callable[[int], None]


@dataclass
class Target:
    """A causal LM loaded by transformers, with what the drafter needs from it."""

    model: Any
    tokenizer: Any
    num_layers: int
    hidden_size: int
    vocab_size: int
    attention: str

    @property
    def embed_tokens(self) -> nn.Embedding:
        embed: nn.Embedding = self.model.get_input_embeddings()
        return embed


def load_target(spec: str, *, device: str, dtype: torch.dtype) -> Target:
    """Load a target folder or hub id with safetensors only and no remote code."""
    from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: PLC0415 - ~2 s, only when a target is loaded


    local = Path(spec).is_dir()
    config_path = resolve_config_path(spec)

    try:
        raw = load_config_json(config_path)
    except ConfigError as exc:
        raise SpecprobeError(f"target: {exc}") from None
    if raw.get("auto_map"):
        raise SpecprobeError("target declares auto_map (remote code); specprobe never runs code from a checkpoint")
    config = parse_model_config(raw)
    try:
        tokenizer: Any = AutoTokenizer.from_pretrained(spec, trust_remote_code=False, local_files_only=local)
        model: Any = AutoModelForCausalLM.from_pretrained(
            spec,
            trust_remote_code=False,
            use_safetensors=True,
            local_files_only=local,
            dtype=dtype,
            attn_implementation="eager" if dtype == torch.float64 else "sdpa",
        )
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SpecprobeError(f"cannot load target {spec!r}: {first_line}") from None
    model.to(device)
    model.eval()
    fuse_rms_norms(model)
    kind: AttentionKind = classify_attention(config)
    return Target(
        model=model,
        tokenizer=tokenizer,
        num_layers=int(model.config.num_hidden_layers),
        hidden_size=int(model.config.hidden_size),
        vocab_size=int(model.get_input_embeddings().num_embeddings),
        attention=kind.value,
    )


def _fused_rms_norm_forward(self: Any, hidden_states: torch.Tensor) -> torch.Tensor:
    # transformers' Llama RMSNorm: float32 normalisation rounded to the input dtype, then the weight
    # multiplied in that dtype. torch's rms_norm without a weight is the first part in one kernel on a
    # GPU, the same arithmetic with the mean summed in the kernel's own order (on an H200: bfloat16
    # outputs identical, float32 ones within a float32 ulp or two); the CPU runs the very composite
    # transformers writes out.
    normed = functional.rms_norm(hidden_states, (hidden_states.shape[-1],), None, self.variance_epsilon)
    out: torch.Tensor = self.weight * normed
    return out


def fuse_rms_norms(model: nn.Module) -> int:
    """Run the model's Llama-style RMSNorms as two kernels instead of six (float32) or eight (half precision).

    Only modules whose ``forward`` is byte for byte transformers' ``LlamaRMSNorm.forward`` (the same
    code is copied into Qwen2, Mistral and most other families) are changed; a norm that computes
    anything else (Gemma's 1 + weight, a norm without weight) keeps its own forward. Returns how many.
    """
    from transformers.models.llama.modeling_llama import LlamaRMSNorm  # noqa: PLC0415 - transformers ~2 s, only for a loaded target

    reference = LlamaRMSNorm.forward.__code__
    fused = 0
    for module in model.modules():
        code = getattr(type(module).forward, "__code__", None)
        if (
            code is not None
            and code.co_code == reference.co_code
            and code.co_consts == reference.co_consts
            and code.co_names == reference.co_names
            and isinstance(getattr(module, "weight", None), torch.Tensor)
            and isinstance(getattr(module, "variance_epsilon", None), float)
        ):
            module.forward = types.MethodType(_fused_rms_norm_forward, module)
            fused += 1
    return fused


def load_reference_drafter(draft_dir: Path, target: Target, *, device: str, dtype: torch.dtype) -> Eagle3Drafter:
    drafter = load_drafter(
        draft_dir,
        target_num_layers=target.num_layers,
        target_hidden_size=target.hidden_size,
        target_vocab_size=target.vocab_size,
        target_embed_tokens=target.embed_tokens,
    )
    drafter.to(device=device, dtype=dtype)
    # d2t is an index: keep it integral whatever the compute dtype.
    drafter.d2t = drafter.d2t.to(device=device, dtype=torch.long)
    drafter.eval()
    return drafter


# Replay fixed-shape decoding steps from CUDA graphs on a GPU. A step of the demo target launches
# about 440 kernels of a few microseconds each, and the host takes longer to launch them than the
# GPU to run them: eager decoding measured the host, and half precision, whose extra cast kernels
# (norms and rotary tables computed in float32) cost launches while its smaller weights save GPU
# time nobody waited for, ran slower than float32. A replayed graph launches all of a step at once.
# A captured step attends over the cache up to the end of its bucket of slots (eagle3.VIEW_BUCKET;
# unwritten and rejected slots masked), an eager one over the slots written so far; on an H200 both
# gave the same tokens in both dtypes (docs/smoke/README.md).
CUDA_GRAPHS = True

# Queue a speculative round on the GPU before reading the previous round's acceptance counts (see
# speculative_generate); off, the host waits for every round before queuing the next.
OVERLAP_ROUNDS = True

# Caches and captured graphs kept per model between generations (the smoke command runs the same
# batch several times), least recently used first; a few so that memory stays bounded. They hang off
# the model itself, so they go when it goes (a runner refers back to its model: a weak mapping keyed
# by the model would keep it alive).
_KEPT_STEPS = 4
_KEPT_ATTRIBUTE = "_specprobe_steps"


def _kept(owner: nn.Module) -> OrderedDict[tuple[Any, ...], GraphedSteps]:
    kept: OrderedDict[tuple[Any, ...], GraphedSteps] | None = owner.__dict__.get(_KEPT_ATTRIBUTE)
    if kept is None:
        kept = OrderedDict()
        owner.__dict__[_KEPT_ATTRIBUTE] = kept
    return kept


class GraphedSteps:
    """Runs ``fn(*inputs)`` over a ``SlotKVCache``, as a CUDA graph from the second call of a shape on.

    The first call of each input shape runs eagerly (it also does the one-time work: the cache's
    lazy allocation, kernel selection); the second captures the step into a graph over static copies
    of the inputs and replays it; later calls copy their inputs in and replay. A graph's outputs are
    its own buffers, overwritten by its next replay: callers use them before running that shape again.
    On the CPU, with ``CUDA_GRAPHS`` off, or after a capture fails, every call runs eagerly.
    """

    def __init__(self, fn: Callable[..., tuple[torch.Tensor, ...]], cache: SlotKVCache, *, graphs: bool) -> None:
        self.fn = fn
        self.cache = cache
        self.graphs = graphs
        self.seen: set[tuple[Any, ...]] = set()
        self.captured: dict[tuple[Any, ...], tuple[Any, list[torch.Tensor], tuple[torch.Tensor, ...]]] = {}
        self.replays = 0
        self.capture_error: str | None = None

    def __call__(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        n = inputs[0].shape[1]
        # A graph per input shape and per bucket of slots attended (SlotKVCache.bucket).
        key = (*((tuple(t.shape), t.dtype) for t in inputs), self.cache.bucket(n))
        if self.graphs and key in self.seen and key not in self.captured:
            self.cache.begin(n, whole=True)
            self._capture(key, inputs)
        if key in self.captured:
            self.cache.begin(n, whole=True)
            graph, static, outputs = self.captured[key]
            for buffer, value in zip(static, inputs, strict=True):
                buffer.copy_(value)
            graph.replay()
            self.replays += 1
        else:
            self.seen.add(key)
            self.cache.begin(n, whole=False)
            outputs = self.fn(*inputs)
        self.cache.end(n)
        return outputs

    def _capture(self, key: tuple[Any, ...], inputs: Sequence[torch.Tensor]) -> None:
        static = [t.clone() for t in inputs]
        graph = torch.cuda.CUDAGraph()
        # No garbage collection while capturing: runners of earlier generations hold their graphs in a
        # reference cycle (runner -> steps -> bound step -> runner), and a collection that frees one of
        # those graphs mid-capture resets it, which a capturing stream refuses; the capture then fails
        # ("operation failed due to a previous error during capture") and the step stays eager (on an
        # H200, a benchmark variant kept 13 of its 16 graphs so). torch.cuda.graph collects before it starts.
        collecting = gc.isenabled()
        gc.disable()
        try:
            # thread_local: the offline replay's reading thread copies and checks the next batch on its own
            # stream while this thread captures; under the default (global) mode its synchronising check
            # is refused ("operation not permitted when stream is capturing"). This thread stays bound.
            with torch.cuda.graph(graph, capture_error_mode="thread_local"):
                outputs = self.fn(*static)
        except RuntimeError as exc:  # an operation that cannot be captured: stay eager, say why
            self.graphs = False
            self.capture_error = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            return
        finally:
            if collecting:
                gc.enable()
        self.captured[key] = (graph, static, outputs)


def _graphs_enabled(device: str) -> bool:
    return CUDA_GRAPHS and device.startswith("cuda")


def _steps(owner: nn.Module, key: tuple[Any, ...], build: Callable[[bool], GraphedSteps], device: str) -> GraphedSteps:
    """The steps runner for (owner, key): reused between generations where graphs are on, else new."""
    if not _graphs_enabled(device):
        return build(False)
    kept = _kept(owner)
    steps = kept.pop(key, None)
    if steps is None:
        steps = build(True)
    else:
        steps.cache.reset()
    kept[key] = steps
    while len(kept) > _KEPT_STEPS:
        kept.popitem(last=False)
    return steps


def forget_steps(*owners: nn.Module) -> None:
    """Drop the caches and graphs kept for these models (after changing what a step would capture)."""
    for owner in owners:
        _kept(owner).clear()


def graph_stats(*owners: nn.Module) -> dict[str, Any]:
    """Graph replays and capture failures of the steps kept for these models (for benchmarks and logs)."""
    kept = [steps for owner in owners for steps in _kept(owner).values()]
    return {
        "replays": sum(steps.replays for steps in kept),
        "graphs": sum(len(steps.captured) for steps in kept),
        "capture_errors": sorted({steps.capture_error for steps in kept if steps.capture_error}),
    }


def _capacity(slots: int) -> int:
    # A multiple of 64 slots: attention kernels want aligned mask rows, and nearby lengths share graphs.
    return -(-slots // 64) * 64


class TargetRunner:
    """Runs the target incrementally over a slot KV cache whose slots can be masked out per row."""

    def __init__(self, target: Target, aux_layer_ids: Sequence[int], batch: int, capacity: int, device: str) -> None:
        self.target = target
        self.aux_layer_ids = tuple(aux_layer_ids)
        # transformers renamed `past_key_values` to `cache` (5.2x); pass whichever this version takes.
        parameters = inspect.signature(target.model.forward).parameters
        self.cache_kwarg = "cache" if "cache" in parameters else "past_key_values"
        capacity = _capacity(capacity)
        self.steps = _steps(
            target.model,
            ("target", batch, capacity, self.aux_layer_ids),
            lambda graphs: GraphedSteps(self._step, SlotKVCache(batch, capacity, device), graphs=graphs),
            device,
        )
        self.cache = self.steps.cache

    @property
    def length(self) -> int:
        return self.cache.length

    def forward(
        self, input_ids: torch.Tensor, positions: torch.Tensor, valid: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Append n entries per row; returns logits [B, n, V] and aux hidden states [B, n, n_aux*H]
        (None without aux layers). Both belong to the step's graph until the next step of this shape."""
        outputs = self.steps(input_ids, positions, valid)
        return outputs[0], (outputs[1] if self.aux_layer_ids else None)

    def _step(self, input_ids: torch.Tensor, positions: torch.Tensor, valid: torch.Tensor) -> tuple[torch.Tensor, ...]:
        # Device work only (no host reads): this is what a CUDA graph captures.
        slots = self.cache.slots(input_ids.shape[1])
        allowed = slot_mask(self.cache.attended(), slots, self.cache.mark(valid))
        dtype = self.target.model.dtype
        mask = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
        mask.masked_fill_(~allowed, torch.finfo(dtype).min)
        want_aux = bool(self.aux_layer_ids)
        out = self.target.model(
            input_ids=input_ids,
            attention_mask=mask[:, None],
            position_ids=positions,
            use_cache=True,
            output_hidden_states=want_aux,
            **{self.cache_kwarg: self.cache},
        )
        logits: torch.Tensor = out.logits
        if not want_aux:
            return (logits,)
        # hidden_states[i] is the input of layer i, the residual stream vLLM captures for aux id i.
        return logits, torch.cat([out.hidden_states[i] for i in self.aux_layer_ids], dim=-1)

    def invalidate(self, keep: torch.Tensor, start: int) -> None:
        """Mask slots ``start + j`` for j where ``keep[:, j]`` is false (rejected draft tokens)."""
        self.cache.valid[:, start : start + keep.shape[1]] &= keep


class DrafterRunner:
    """Runs the drafter's steps over a slot KV cache (graph-replayed like the target's)."""

    def __init__(self, drafter: Eagle3Drafter, batch: int, capacity: int, device: str) -> None:
        self.drafter = drafter
        capacity = _capacity(capacity)
        self.steps = _steps(
            drafter,
            ("drafter", batch, capacity),
            lambda graphs: GraphedSteps(self._step, SlotKVCache(batch, capacity, device), graphs=graphs),
            device,
        )
        self.cache = self.steps.cache

    def step(
        self, tokens: torch.Tensor, hidden: torch.Tensor, positions: torch.Tensor, valid: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``Eagle3Drafter.step`` on this runner's cache; outputs belong to the step's graph."""
        logits, fed_back = self.steps(tokens, hidden, positions, valid)
        return logits, fed_back

    def _step(
        self, tokens: torch.Tensor, hidden: torch.Tensor, positions: torch.Tensor, valid: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        return self.drafter.step(tokens, hidden, positions, self.cache, valid)


def _left_pad(
    prompts: Sequence[Sequence[int]], pad_id: int, device: str
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    valid = torch.zeros((len(prompts), width), dtype=torch.bool)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt) :] = torch.tensor(list(prompt), dtype=torch.long)
        valid[row, width - len(prompt) :] = True
    positions = (valid.long().cumsum(dim=1) - 1).clamp(min=0)
    return ids.to(device), valid.to(device), positions.to(device)


def _overlaps(device: str) -> bool:
    return OVERLAP_ROUNDS and device.startswith("cuda")


def _read_later(values: torch.Tensor) -> Callable[[], list[list[int]]]:
    """Start copying ``values`` to the host; the returned call waits for that copy alone and reads it."""
    if values.device.type != "cuda":
        return values.tolist  # computed already: nothing to wait for
    host = torch.empty(values.shape, dtype=values.dtype, pin_memory=True)
    host.copy_(values, non_blocking=True)
    copied = torch.cuda.Event()  # type: ignore[no-untyped-call]  # torch leaves its __init__ unannotated
    copied.record()

    def read() -> list[list[int]]:
        copied.synchronize()
        rows: list[list[int]] = host.tolist()
        return rows

    return read


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


@dataclass
class GreedyResult:
    tokens: list[list[int]]
    seconds: float


@dataclass
class SpeculativeResult:
    """Per-prompt counts in vLLM's terms: a draft is one verification round of up to K tokens."""

    tokens: list[list[int]]
    seconds: float
    num_speculative_tokens: int
    drafts: list[int]
    accepted: list[int]
    accepted_per_pos: list[list[int]]
    acceptance_lengths: list[list[int]] = field(default_factory=list)


@torch.inference_mode()
@decode_attention()
def greedy_generate(
    target: Target,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    *,
    device: str,
    progress: Progress | None = None,
) -> GreedyResult:
    """Target-only greedy decoding with a KV cache, batched (the baseline and the lossless reference)."""
    _sync(device)
    start = time.perf_counter()
    ids, valid, positions = _left_pad(prompts, 0, device)
    runner = TargetRunner(target, (), len(prompts), ids.shape[1] + max_new_tokens, device)
    logits, _ = runner.forward(ids, positions, valid)
    next_tok = logits[:, -1].argmax(-1)
    pos = positions[:, -1:] + 1
    one = torch.ones(len(prompts), 1, dtype=torch.bool, device=device)
    out = [next_tok]
    for _ in range(max_new_tokens - 1):
        logits, _ = runner.forward(next_tok[:, None], pos, one)
        next_tok = logits[:, -1].argmax(-1)
        pos = pos + 1
        out.append(next_tok)
        if progress:
            progress(len(prompts))
    tokens = torch.stack(out, dim=1).tolist()  # the one host sync of the loop
    _sync(device)
    seconds = time.perf_counter() - start
    return GreedyResult(tokens=tokens, seconds=seconds)


@torch.inference_mode()
@decode_attention()
def speculative_generate(
    target: Target,
    drafter: Eagle3Drafter,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    num_speculative_tokens: int,
    *,
    device: str,
    progress: Progress | None = None,
) -> SpeculativeResult:
    """Greedy chain speculative decoding: K chained drafts, one target pass verifies them all.

    The first new token comes from the target's prefill; each round then emits the accepted
    drafts plus the target's own next token (the bonus token), so every emitted token is one the
    target would have chosen greedily. Every round has the same shapes (K-1 chained drafter steps
    of one entry, a target pass and a drafter catch-up of K+1 entries, the unaccepted ones masked),
    so that each can replay as a CUDA graph, and the host reads one small tensor per round, the
    acceptance counts, on a GPU while the next round runs (``OVERLAP_ROUNDS``).
    """
    k = num_speculative_tokens
    batch = len(prompts)
    _sync(device)
    start = time.perf_counter()
    ids, valid, positions = _left_pad(prompts, 0, device)
    # Each round emits at least one token per row and takes K+1 target slots and 2K drafter slots
    # (K-1 chained, K+1 catching up), so these capacities are never exceeded.
    runner = TargetRunner(target, drafter.cfg.aux_layer_ids, batch, ids.shape[1] + (k + 1) * max_new_tokens, device)
    draft_runner = DrafterRunner(drafter, batch, ids.shape[1] + 2 * k * max_new_tokens, device)
    logits, aux = runner.forward(ids, positions, valid)
    assert aux is not None
    last_tok = logits[:, -1].argmax(-1)
    cur_pos = positions[:, -1] + 1  # position of last_tok, not yet seen by the target
    # Drafter entry p pairs the target's hidden state at p with the token at p + 1.
    draft_tokens = torch.cat([ids[:, 1:], last_tok[:, None]], dim=1)
    draft_logits, draft_hidden = draft_runner.step(draft_tokens, drafter.combine_aux(aux), positions, valid)
    next_logits, next_hidden = draft_logits[:, -1], draft_hidden[:, -1:]

    emitted: list[list[int]] = [[int(t)] for t in last_tok.tolist()]
    drafts = [0] * batch
    accepted = [0] * batch
    per_pos = [[0] * k for _ in range(batch)]
    lengths: list[list[int]] = [[] for _ in range(batch)]
    rows = torch.arange(batch, device=device)
    offsets = torch.arange(k + 1, device=device)
    one = torch.ones(batch, 1, dtype=torch.bool, device=device)
    all_verified = torch.ones(batch, k + 1, dtype=torch.bool, device=device)

    def launch_round() -> torch.Tensor:
        """Queue one round on the device; returns its counts [B, 1 + K + 1] (accepted, drafts, bonus)."""
        nonlocal last_tok, cur_pos, next_logits, next_hidden
        # 1. Chain K drafts; chained entries are speculative and masked once verified.
        chain_start = draft_runner.cache.length
        proposal = [drafter.to_target_ids(next_logits.argmax(-1))]
        hidden = next_hidden
        for j in range(1, k):
            step_logits, hidden = draft_runner.step(proposal[-1][:, None], hidden, (cur_pos - 1 + j)[:, None], one)
            proposal.append(drafter.to_target_ids(step_logits[:, -1].argmax(-1)))
        draft = torch.stack(proposal, dim=1)  # [B, K]
        draft_runner.cache.invalidate_from(chain_start)

        # 2. Verify [last_tok, d1..dK] in one target pass.
        verify_ids = torch.cat([last_tok[:, None], draft], dim=1)
        verify_pos = cur_pos[:, None] + offsets[None, :]
        verify_start = runner.length
        logits, aux = runner.forward(verify_ids, verify_pos, all_verified)
        assert aux is not None
        target_choice = logits.argmax(-1)  # [B, K+1]
        matches = (draft == target_choice[:, :k]).long()
        n_accepted = matches.cumprod(dim=1).sum(dim=1)  # leading matches per row
        bonus = target_choice[rows, n_accepted]
        keep = offsets[None, :] <= n_accepted[:, None]  # last_tok and the accepted drafts stay
        runner.invalidate(keep, verify_start)

        # 3. The drafter catches up on all K+1 entries with the target's hidden states; those past
        # a row's accepted ones are masked out (keep false), as rejected drafts are in the target.
        next_tokens = torch.cat([draft, bonus[:, None]], dim=1)
        next_tokens[rows, n_accepted] = bonus
        catch_logits, catch_hidden = draft_runner.step(next_tokens, drafter.combine_aux(aux), verify_pos, keep)
        next_logits = catch_logits[rows, n_accepted]
        next_hidden = catch_hidden[rows, n_accepted][:, None]
        last_tok = bonus
        cur_pos = cur_pos + n_accepted + 1
        return torch.cat([n_accepted[:, None], draft, bonus[:, None]], dim=1)

    def record(counts: list[list[int]]) -> None:
        """4. Bookkeeping on the host for one round's counts."""
        for row, (n, *row_draft, row_bonus) in enumerate(counts):
            if len(emitted[row]) >= max_new_tokens:
                continue
            drafts[row] += 1
            accepted[row] += n
            lengths[row].append(n + 1)
            for position in range(n):
                per_pos[row][position] += 1
            emitted[row].extend([*row_draft[:n], row_bonus])
        if progress:
            progress(sum(row[0] + 1 for row in counts))

    # On a GPU the next round is queued before the host reads this one's counts (a copy it waits for
    # alone), so the GPU never idles while the host does the bookkeeping and launches the next round's
    # kernels; a round depends on the previous one only through device tensors. The round queued when
    # the last one read ends the generation is discarded (the caches have room for it: a round emits
    # at least one token per row). On the CPU every operation runs as it is called: nothing to overlap.
    overlap = _overlaps(device)
    pending: Callable[[], list[list[int]]] | None = None
    while min(len(e) for e in emitted) < max_new_tokens:
        counts = launch_round()
        if not overlap:
            record(counts.tolist())  # waits for the GPU work queued above
            continue
        if pending is not None:
            record(pending())  # the previous round's counts; this round runs meanwhile
        pending = _read_later(counts)
    _sync(device)
    seconds = time.perf_counter() - start
    return SpeculativeResult(
        tokens=[e[:max_new_tokens] for e in emitted],
        seconds=seconds,
        num_speculative_tokens=k,
        drafts=drafts,
        accepted=accepted,
        accepted_per_pos=per_pos,
        acceptance_lengths=lengths,
    )


# Roundings to the model's dtype per decoder layer that rounding_tolerance counts: two norms, the
# q/k/v, attention output and o projections, the gate/up, down projections and two residual adds.
OPS_PER_LAYER = 8


@dataclass(frozen=True)
class Divergence:
    """Where speculative and target-only greedy output first part, and how close the target's call was.

    ``margin`` is the gap between the target's logits for the two tokens at that position (computed
    by one plain forward pass over the common prefix); ``tolerance`` is how far rounding alone can
    move a logit there. A margin within the tolerance is a numerical near-tie: verifying K+1 tokens in
    one pass sums in another order than decoding them one by one, and either token is the target's
    greedy choice up to rounding. A larger margin is a confident position: a real verification bug.
    """

    position: int
    greedy_token: int
    speculative_token: int
    margin: float
    tolerance: float

    @property
    def near_tie(self) -> bool:
        return self.margin <= self.tolerance


def rounding_tolerance(dtype: torch.dtype, magnitude: float, *, hidden_size: int, num_layers: int) -> float:
    """How far rounding alone can move a logit of this magnitude, from two sources.

    Storage: every operation's output is rounded to ``dtype`` (relative ``eps``), about
    ``OPS_PER_LAYER`` roundings per layer that add up as a random walk. Accumulation: dot products
    of ``hidden_size`` terms sum in at least float32 (GPU and CPU kernels accumulate half precision
    in float32), again a random walk over ``hidden_size * num_layers`` products. Both scale with the
    logit's magnitude. The bound is deliberately not loose: on the H200 the bfloat16 near-ties of the
    docs/smoke model (12 layers, hidden 768) had margins of 0 to 0.0625 against a tolerance of about
    0.7 (docs/smoke/README.md), while a verification bug shows up at margins of whole logits.
    """
    eps = float(torch.finfo(dtype).eps)
    accumulator_eps = float(torch.finfo(torch.float64 if dtype == torch.float64 else torch.float32).eps)
    storage = eps * math.sqrt(OPS_PER_LAYER * max(1, num_layers))
    accumulation = accumulator_eps * math.sqrt(max(1, hidden_size * num_layers))
    return max(1.0, magnitude) * (storage + accumulation)


@torch.inference_mode()
@decode_attention()
def classify_divergence(
    target: Target, prompt: Sequence[int], greedy: Sequence[int], speculative: Sequence[int], *, device: str
) -> Divergence | None:
    """The first position where ``speculative`` leaves ``greedy``, with the target's margin there."""
    position = next((i for i, (a, b) in enumerate(zip(greedy, speculative, strict=False)) if a != b), None)
    if position is None:
        return None
    context = torch.tensor([[*prompt, *greedy[:position]]], dtype=torch.long, device=device)
    logits = target.model(input_ids=context).logits[0, -1].float()
    greedy_token, speculative_token = int(greedy[position]), int(speculative[position])
    margin = abs(float(logits[greedy_token] - logits[speculative_token]))
    magnitude = float(logits.abs().max())
    tolerance = rounding_tolerance(
        target.model.dtype, magnitude, hidden_size=target.hidden_size, num_layers=target.num_layers
    )
    return Divergence(position, greedy_token, speculative_token, margin, tolerance)
