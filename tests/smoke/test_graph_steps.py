"""The reference backend's fixed-shape decoding steps: slot KV caches, CUDA graph replay, fused norms.

Fast tier, CPU: random tiny models built from configs (no training). A CUDA graph cannot be captured
without a GPU, so replay is emulated: the emulated graph re-runs the captured step on the same static
input buffers and writes into the same output tensors, which is what replaying a real graph does. What
that checks is the bookkeeping around the graphs (static inputs, the cursor set outside the graph, the
whole-capacity view, outputs reused between replays); that nothing in a step reads the GPU from the host
(which a real capture refuses) is checked by running the steps on the meta device, where every host
read raises.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from specprobe.smoke import eagle3, reference  # noqa: E402
from specprobe.smoke.eagle3 import DraftKVCache, Eagle3Config, Eagle3Drafter, RMSNorm, SlotKVCache  # noqa: E402

VOCAB, HIDDEN, LAYERS = 96, 32, 3


def _target(device: str = "cpu", dtype: Any = None) -> reference.Target:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
    )
    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaForCausalLM(config)
    model.to(dtype or torch.float32).eval()
    reference.fuse_rms_norms(model)
    return reference.Target(model, None, LAYERS, HIDDEN, VOCAB, "mha")


def _drafter(target: reference.Target, device: str = "cpu") -> Eagle3Drafter:
    cfg = Eagle3Config(
        hidden_size=HIDDEN,
        target_hidden_size=HIDDEN,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        intermediate_size=64,
        rms_norm_eps=1e-6,
        rope_theta=10000.0,
        target_vocab_size=VOCAB,
        draft_vocab_size=48,
        aux_layer_ids=(0, 1, 2),
        aux_layer_ids_declared=True,
        norm_before_residual=False,
        norm_output=False,
        attention_bias=False,
        config_format="vllm",
    )
    torch.manual_seed(1)
    with torch.device(device):
        drafter = Eagle3Drafter(cfg, target.embed_tokens)
    drafter.d2t = torch.arange(48, device=device) % 3  # a reduced vocabulary with a non-trivial mapping
    return drafter.eval()


PROMPTS = [[5, 17, 33, 2, 60, 61], [7, 7, 8], [90, 1, 2, 3, 4, 5, 6, 7, 8, 9], [11]]


class _EmulatedGraph:
    def __init__(self) -> None:
        self.replays = 0
        self.run: Any = None

    def replay(self) -> None:
        self.replays += 1
        self.run()


class _EmulatedCapture:
    """Stands in for ``torch.cuda.graph(g)``: binds g.replay to re-running the captured step."""

    def __init__(self, graph: _EmulatedGraph, capture_error_mode: str = "global") -> None:
        # The offline replay reads on a second thread while a step is captured: thread_local is the
        # mode that allows it (reference.GraphedSteps._capture).
        assert capture_error_mode == "thread_local"
        self.graph = graph

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        frame = sys._getframe(1)  # GraphedSteps._capture: its step, static inputs and outputs
        steps, static, outputs = frame.f_locals["self"], frame.f_locals["static"], frame.f_locals["outputs"]

        def run() -> None:
            for out, value in zip(outputs, steps.fn(*static), strict=True):
                out.copy_(value)

        self.graph.run = run


@pytest.fixture
def emulated_graphs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reference, "_graphs_enabled", lambda device: reference.CUDA_GRAPHS)
    monkeypatch.setattr(torch.cuda, "CUDAGraph", _EmulatedGraph)
    monkeypatch.setattr(torch.cuda, "graph", _EmulatedCapture)


@pytest.mark.parametrize("bucket", [None, 16], ids=["whole-capacity", "buckets-of-16"])
def test_replayed_steps_give_the_eager_tokens_and_acceptance(
    bucket: int | None, emulated_graphs: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Buckets of 16 slots: the 20-token generations cross several, each with graphs of its own."""
    monkeypatch.setattr(eagle3, "VIEW_BUCKET", bucket)
    target = _target()
    drafter = _drafter(target)
    monkeypatch.setattr(reference, "CUDA_GRAPHS", False)
    greedy = reference.greedy_generate(target, PROMPTS, 20, device="cpu")
    spec = reference.speculative_generate(target, drafter, PROMPTS, 20, 3, device="cpu")
    assert reference.graph_stats(target.model, drafter)["replays"] == 0
    monkeypatch.setattr(reference, "CUDA_GRAPHS", True)
    for _ in range(2):  # the second generation reuses the kept caches and graphs
        graphed = reference.greedy_generate(target, PROMPTS, 20, device="cpu")
        graphed_spec = reference.speculative_generate(target, drafter, PROMPTS, 20, 3, device="cpu")
        assert graphed.tokens == greedy.tokens
        assert graphed_spec.tokens == spec.tokens
        assert (graphed_spec.drafts, graphed_spec.accepted, graphed_spec.accepted_per_pos) == (
            spec.drafts,
            spec.accepted,
            spec.accepted_per_pos,
        )
    stats = reference.graph_stats(target.model, drafter)
    # Each generation of 20 tokens replays most of its steps: the greedy step, verification, drafts.
    assert stats["replays"] > 2 * 19
    # Over the whole capacity: greedy decoding's step, verification, chained drafts, catch-up, and the
    # three prefills (captured in the second generation); with buckets, more than one graph per step.
    assert stats["graphs"] == 7 if bucket is None else stats["graphs"] > 7
    assert stats["capture_errors"] == []
    # Losslessness, the property the backend measures: the speculative output is the greedy output.
    assert spec.tokens == greedy.tokens
    assert 0 < sum(spec.accepted) < 3 * sum(spec.drafts)  # some drafts rejected: masking exercised


@pytest.mark.parametrize("max_new_tokens", [1, 2, 3, 17])
def test_overlapped_rounds_record_what_sequential_rounds_record(
    max_new_tokens: int, emulated_graphs: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A round queued before the previous round's counts are read: the same tokens, drafts and per-position
    counts as waiting for each round, and the round queued past the end fits in the caches (a drafter
    that is mostly rejected emits one token per round, the most rounds a generation can take)."""
    target = _target()
    drafter = _drafter(target)
    monkeypatch.setattr(reference, "_overlaps", lambda device: False)
    sequential = reference.speculative_generate(target, drafter, PROMPTS, max_new_tokens, 3, device="cpu")
    reads: list[int] = []
    read_later = reference._read_later

    def counting(values: Any) -> Any:
        read = read_later(values)

        def counted() -> list[list[int]]:
            reads.append(1)
            return read()

        return counted

    monkeypatch.setattr(reference, "_overlaps", lambda device: True)
    monkeypatch.setattr(reference, "_read_later", counting)
    overlapped = reference.speculative_generate(target, drafter, PROMPTS, max_new_tokens, 3, device="cpu")
    assert overlapped.tokens == sequential.tokens
    assert all(len(tokens) == max_new_tokens for tokens in overlapped.tokens)
    assert (overlapped.drafts, overlapped.accepted, overlapped.accepted_per_pos, overlapped.acceptance_lengths) == (
        sequential.drafts,
        sequential.accepted,
        sequential.accepted_per_pos,
        sequential.acceptance_lengths,
    )
    # Every round read was one the sequential loop also ran; the last one queued was never read.
    assert len(reads) == max(sequential.drafts)


def test_no_garbage_collection_during_a_capture(emulated_graphs: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A collection mid-capture can free an earlier generation's graph, which fails the capture: the
    collector is off while a step is captured and back on after, also when the capture fails."""
    import gc

    seen: list[bool] = []
    enter = _EmulatedCapture.__enter__

    def recording(self: _EmulatedCapture) -> None:
        seen.append(gc.isenabled())
        enter(self)

    monkeypatch.setattr(_EmulatedCapture, "__enter__", recording)
    target = _target()
    reference.greedy_generate(target, PROMPTS, 6, device="cpu")
    assert seen and not any(seen)
    assert gc.isenabled()

    def refusing(self: _EmulatedCapture) -> None:
        seen.append(gc.isenabled())
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(_EmulatedCapture, "__enter__", refusing)
    reference.forget_steps(target.model)
    reference.greedy_generate(target, PROMPTS, 6, device="cpu")
    assert not seen[-1] and gc.isenabled()


def test_failed_capture_falls_back_to_eager(monkeypatch: pytest.MonkeyPatch):
    class _Refusing:
        def __init__(self, graph: object, capture_error_mode: str = "global") -> None:
            pass

        def __enter__(self) -> None:
            raise RuntimeError("operation not permitted when stream is capturing")

        def __exit__(self, *exc: object) -> None:
            return None

    monkeypatch.setattr(reference, "_graphs_enabled", lambda device: True)
    monkeypatch.setattr(torch.cuda, "CUDAGraph", _EmulatedGraph)
    monkeypatch.setattr(torch.cuda, "graph", _Refusing)
    target = _target()
    monkeypatch.setattr(reference, "CUDA_GRAPHS", False)
    expected = reference.greedy_generate(target, PROMPTS, 8, device="cpu").tokens
    got = reference.greedy_generate(target, PROMPTS, 8, device="cpu").tokens
    monkeypatch.setattr(reference, "CUDA_GRAPHS", True)
    got = reference.greedy_generate(target, PROMPTS, 8, device="cpu").tokens
    assert got == expected
    stats = reference.graph_stats(target.model)
    assert stats["replays"] == 0
    assert stats["capture_errors"] == ["operation not permitted when stream is capturing"]


def test_slot_cache_step_equals_growing_cache_step():
    target = _target()
    drafter = _drafter(target)
    batch, n = 2, 5
    torch.manual_seed(2)
    tokens = torch.randint(0, VOCAB, (batch, n))
    hidden = torch.randn(batch, n, HIDDEN)
    positions = torch.arange(n).repeat(batch, 1)
    valid = torch.tensor([[True] * n, [False, False, True, True, True]])
    with torch.inference_mode():
        growing = DraftKVCache()
        expected = [drafter.step(tokens, hidden, positions, growing, valid)]
        expected.append(drafter.step(tokens[:, :1], hidden[:, :1], positions[:, :1] + n, growing, valid[:, :1] | True))
        for whole in (False, True):
            slots = SlotKVCache(batch, 64, "cpu")
            got = []
            for args in (
                (tokens, hidden, positions, valid),
                (tokens[:, :1], hidden[:, :1], positions[:, :1] + n, valid[:, :1] | True),
            ):
                slots.begin(args[0].shape[1], whole=whole)
                got.append(drafter.step(args[0], args[1], args[2], slots, args[3]))
                slots.end(args[0].shape[1])
            for (want_logits, want_hidden), (got_logits, got_hidden) in zip(expected, got, strict=True):
                # Padded rows (all keys masked but their own) must match too: no NaN from empty softmax rows.
                torch.testing.assert_close(got_logits, want_logits)
                torch.testing.assert_close(got_hidden, want_hidden)


def test_slot_cache_refuses_to_overflow():
    cache = SlotKVCache(1, 8, "cpu")
    cache.begin(8, whole=False)
    cache.end(8)
    with pytest.raises(RuntimeError, match="cannot take 1 more"):
        cache.begin(1, whole=True)


def test_captured_steps_read_nothing_back_to_the_host():
    # On the meta device any .item(), .tolist() or tensor truth test raises: a step that needs one could
    # not be captured into a CUDA graph (and would stall the GPU every step).
    target = _target(device="meta")
    drafter = _drafter(target, device="meta")
    batch, n = 2, 4
    ids = torch.zeros(batch, n, dtype=torch.long, device="meta")
    valid = torch.ones(batch, n, dtype=torch.bool, device="meta")
    with torch.inference_mode():
        runner = reference.TargetRunner(target, (0, 1, 2), batch, 64, "meta")
        runner.cache.begin(n, whole=True)
        logits, aux = runner._step(ids, ids, valid)
        assert logits.shape == (batch, n, VOCAB) and aux.shape == (batch, n, 3 * HIDDEN)
        draft = reference.DrafterRunner(drafter, batch, 64, "meta")
        draft.cache.begin(n, whole=True)
        draft_logits, fed_back = draft._step(ids, torch.zeros(batch, n, HIDDEN, device="meta"), ids, valid)
        assert draft_logits.shape == (batch, n, 48) and fed_back.shape == (batch, n, HIDDEN)
    with pytest.raises(RuntimeError):
        torch.zeros(1, device="meta").item()


@pytest.mark.parametrize("dtype_name", ["float32", "bfloat16"])
def test_fused_norms_compute_what_transformers_and_the_drafter_did(dtype_name: str):
    from transformers.models.gemma.modeling_gemma import GemmaRMSNorm
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    dtype = getattr(torch, dtype_name)
    torch.manual_seed(3)
    x = (torch.randn(3, 7, HIDDEN) * 4).to(dtype)
    weight = (torch.randn(HIDDEN) * 0.3 + 1).to(dtype)
    llama = LlamaRMSNorm(HIDDEN, eps=1e-5).to(dtype)
    llama.weight.data = weight.clone()
    before = llama(x)
    gemma = GemmaRMSNorm(HIDDEN, eps=1e-5).to(dtype)
    model = torch.nn.ModuleDict({"llama": llama, "gemma": gemma})
    assert reference.fuse_rms_norms(model) == 1  # Gemma's norm (1 + weight) keeps its own forward
    assert "forward" in vars(llama) and "forward" not in vars(gemma)
    with torch.inference_mode():
        assert torch.equal(llama(x), before)
        drafter_norm = RMSNorm(HIDDEN, 1e-5).to(dtype)
        drafter_norm.weight.data = weight.clone()
        x32 = x.float()
        explicit = (weight.float() * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-5))).to(dtype)
        assert torch.equal(drafter_norm(x), explicit)
    with torch.enable_grad():  # training keeps the explicit form
        assert torch.equal(drafter_norm(x), explicit)


def test_target_has_every_llama_norm_fused():
    target = _target()
    assert sum("forward" in vars(m) for m in target.model.modules()) == 2 * LAYERS + 1
