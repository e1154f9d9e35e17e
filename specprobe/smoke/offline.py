"""`smoke --hidden-states`: the acceptance a drafter reaches, from its training data, without its target.

An EAGLE-3 drafter's speculative loop needs only the target's aux hidden states along the context and
the target's tokens, and drafter-training pipelines dump both. Over each response run the loss mask
marks, this replays the chain draft exactly as ``reference.speculative_generate`` (and the engines)
run it: prefill the drafter on the context, draft K tokens from the end of the prompt, count how many
match the data's next tokens, let the drafter catch up on the accepted tokens and the bonus token with
the hidden states recorded for them, advance by accepted + 1, repeat. A round counts only where the
data covers its K drafts and its bonus token. When the data is the target's own greedy output the
data's next tokens are what the target would verify, so the figure is the drafter's greedy acceptance.
"""

from __future__ import annotations

import collections
import itertools
import math
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn
from tqdm import tqdm

from specprobe.checkpoint.folder import load_checkpoint
from specprobe.checkpoint.tensors import DEFAULT_MAX_TENSOR_BYTES, TensorLocation, TensorReader
from specprobe.findings import Finding, Measurement, Report, Severity, SpecprobeError
from specprobe.hfconfig import MAX_CONFIG_BYTES, ConfigError, load_config_json, parse_config_bytes, parse_model_config
from specprobe.modelfiles import HubSession, ModelFiles, ModelUnavailableError, TensorReadError, locate
from specprobe.rules import smoke as smoke_rules
from specprobe.smoke.dumps import (
    DumpError,
    DumpExpectation,
    DumpFolder,
    DumpFormat,
    DumpSample,
    check_finite,
    iter_samples,
    list_dump,
    read_sample,
    response_spans,
    select_files,
)
from specprobe.smoke.eagle3 import DrafterFormatError, Eagle3Drafter, decode_attention, load_drafter, resolve_dtype
from specprobe.smoke.stats import acceptance_extra, finite, from_counts
from specprobe.untrusted.files import UntrustedInputError

# Rounds between two host reads of "is any row still drafting": rows that finished run masked rounds
# until then, which costs less than a device sync per round.
CHECK_EVERY = 8


@dataclass(frozen=True)
class OfflineOptions:
    """Options of one `smoke --hidden-states` run."""

    draft: Path
    hidden_states: Path
    target: str | None = None
    num_speculative_tokens: int = 3
    max_samples: int | None = None
    seed: int = 0
    device: str = "cpu"
    dtype: str = "float32"
    batch_size: int | None = None
    min_acceptance_length: float | None = None
    progress: bool = True
    # The most bytes one tensor read from the target may take (its embedding, lm_head or final norm).
    max_target_tensor_bytes: int = DEFAULT_MAX_TENSOR_BYTES
    # speculators: the preprocessed dataset holding the loss mask, where it is not beside the dump.
    loss_mask_dataset: Path | None = None


@dataclass
class TargetFacts:
    """What the drafter needs from its target without loading it: sizes, and where to read the few
    tensors it borrows (``reader``, None without --target)."""

    num_layers: int | None
    hidden_size: int | None
    vocab_size: int | None
    reader: TensorReader | None = None


def open_target(target: str) -> ModelFiles:
    """``--target``: a folder (or its config.json) on this machine, or a hub id ``OWNER/NAME[@REVISION]``
    read through the hub reader, of which only config.json, the shard index, the header of each shard
    holding a wanted tensor and those tensors' bytes travel. A repository the hub refuses or cannot give
    is one line (exit 2)."""
    try:
        return locate(target, role="target", hub=HubSession())
    except ModelUnavailableError as exc:
        raise SpecprobeError(f"--target {target}: {exc}") from None


def target_facts(target: str | None) -> TargetFacts:
    if target is None:
        return TargetFacts(None, None, None)
    files = open_target(target)
    try:
        raw = files.read_file("config.json", max_bytes=MAX_CONFIG_BYTES)
        config = parse_model_config(parse_config_bytes(raw).value)
    except FileNotFoundError:
        raise SpecprobeError("target: config.json is missing") from None
    except OSError as exc:
        raise SpecprobeError(f"target: config.json cannot be read: {exc.strerror or exc}") from None
    except (ConfigError, UntrustedInputError) as exc:
        raise SpecprobeError(f"target: {exc}") from None
    return TargetFacts(config.num_hidden_layers, config.hidden_size, config.vocab_size, TensorReader(files))


# Tensor dtypes a borrowed embedding or head may have: floating point the drafter computes in (quantized
# ones need their scales, which a single tensor read does not bring).
_FLOAT_DTYPES = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32, "F64": torch.float64}


def _read_target_tensor(reader: TensorReader, location: TensorLocation, max_bytes: int) -> torch.Tensor:
    """One tensor's bytes as a torch tensor sharing them (no copy); one line when they cannot be had."""
    dtype = _FLOAT_DTYPES.get(location.dtype)
    if dtype is None:
        raise SpecprobeError(
            f"the target's {location.describe()} is not a floating-point tensor specprobe can borrow"
        )
    try:
        data = reader.read(location, max_bytes=max_bytes)
    except TensorReadError as exc:
        hint = " (--max-target-tensor-bytes raises it)" if "limit of this read" in str(exc) else ""
        raise SpecprobeError(f"--target: {exc}{hint}") from None
    if location.nbytes == 0:
        return torch.empty(location.shape, dtype=dtype)
    return torch.frombuffer(data, dtype=dtype).reshape(location.shape)


def _locate(reader: TensorReader, find: Callable[[], TensorLocation | None]) -> TensorLocation | None:
    try:
        return find()
    except TensorReadError as exc:
        raise SpecprobeError(f"--target {reader.files.describe()}: {exc}") from None


def target_embedding(reader: TensorReader, max_bytes: int = DEFAULT_MAX_TENSOR_BYTES) -> torch.Tensor:
    """The target's input embedding alone, read at its offsets in its shard (no other tensor)."""
    location = _locate(reader, reader.embedding)
    if location is None:
        raise SpecprobeError(
            f"the target {reader.files.describe()} has no embed_tokens tensor in its safetensors files"
        )
    return _read_target_tensor(reader, location, max_bytes)


# Positions whose next token the target's own head is asked to predict, over the first samples.
HEAD_CHECK_POSITIONS = 256
HEAD_CHECK_SAMPLES = 16


@dataclass
class TargetHead:
    """The target's final norm and output head, read alone (two tensors) to recognise its hidden states."""

    norm: torch.Tensor | None
    eps: float
    lm_head: torch.Tensor


def target_head(reader: TensorReader, max_bytes: int = DEFAULT_MAX_TENSOR_BYTES) -> TargetHead | None:
    """The target's final norm and lm_head (its embedding where tied), or None where it has none to read."""
    head_at = _locate(reader, reader.output_head)
    if head_at is None:
        return None
    norm_at = _locate(reader, reader.final_norm)
    eps = reader.config().get("rms_norm_eps", 1e-6)
    return TargetHead(
        _read_target_tensor(reader, norm_at, max_bytes) if norm_at is not None else None,
        float(eps) if isinstance(eps, int | float) and not isinstance(eps, bool) else 1e-6,
        _read_target_tensor(reader, head_at, max_bytes),
    )


@torch.inference_mode()
def check_same_target(samples: list[DumpSample], head: TargetHead) -> dict[str, Any] | None:
    """Do the dump's last-layer states come from this target? Through the target's own final norm and lm_head
    they must predict the data's next tokens far above chance (all of them for greedy data of this target);
    another target's states through this head predict them no better than chance. Chance is the same
    predictions against the next tokens of other positions (token frequencies included). Raises DumpError
    (mismatch) when the agreement is within three standard errors of chance; None without last-layer states.
    """
    states, following = [], []
    for sample in samples:
        if sample.last_hidden is None:
            continue
        positions = [p for first, last in response_spans(sample.loss_mask) for p in range(first - 1, last)]
        if positions:
            index = torch.tensor(positions)
            states.append(sample.last_hidden[index].float())
            following.append(sample.input_ids[index + 1])
    if not states:
        return None
    hidden = torch.cat(states)[:HEAD_CHECK_POSITIONS]
    tokens = torch.cat(following)[:HEAD_CHECK_POSITIONS]
    weight = head.lm_head.float()
    if hidden.shape[1] != weight.shape[1]:
        raise DumpError("mismatch", f"the dump's last-layer states are {hidden.shape[1]} wide, the target's lm_head "
                        f"takes {weight.shape[1]}: the dump comes from another target")
    candidates = [hidden]  # SpecForge keeps the state after the final norm, speculators before it
    if head.norm is not None and head.norm.shape[0] == hidden.shape[1]:
        candidates.append(torch.nn.functional.rms_norm(hidden, (hidden.shape[1],), head.norm.float(), head.eps))
    predictions = [(state @ weight.T).argmax(-1) for state in candidates]
    agreement = max(float((p == tokens).float().mean()) for p in predictions)
    shuffled = tokens[torch.randperm(tokens.shape[0], generator=torch.Generator().manual_seed(0))]
    chance = max(float((p == shuffled).float().mean()) for p in predictions)
    n = tokens.shape[0]
    error = math.sqrt(max(chance * (1 - chance), 1.0 / n) / n)
    said = {"agreement": round(agreement, 4), "chance": round(chance, 4), "positions": n}
    if agreement <= chance + 3 * error:
        raise DumpError(
            "mismatch",
            f"the dump's last-layer states, through the target's own final norm and lm_head, predict {agreement:.0%} "
            f"of the data's next tokens ({n} positions) where chance gives {chance:.0%}: they are not this "
            "target's hidden states, the dump comes from another target",
        )
    return said


def _first_samples(dump: DumpFolder, files: list[Path], expect: DumpExpectation) -> list[DumpSample]:
    samples = []
    for path in files[:HEAD_CHECK_SAMPLES]:
        try:
            samples.append(read_sample(dump, path, expect))
        except DumpError as exc:
            if exc.kind == "mismatch":
                raise
    return samples


def load_offline_drafter(options: OfflineOptions, facts: TargetFacts, dtype: torch.dtype) -> Eagle3Drafter:
    """The reference drafter, sized from its own config where no target config is given."""
    try:
        raw = load_config_json(options.draft / "config.json")
    except ConfigError as exc:
        raise DrafterFormatError(str(exc)) from None
    layer_cfg = raw.get("transformer_layer_config") if isinstance(raw.get("transformer_layer_config"), dict) else raw
    assert isinstance(layer_cfg, dict)
    hidden = facts.hidden_size or raw.get("target_hidden_size") or layer_cfg.get("hidden_size")
    vocab = facts.vocab_size or raw.get("vocab_size") or layer_cfg.get("vocab_size")
    if not isinstance(hidden, int) or not isinstance(vocab, int):
        raise DrafterFormatError("config.json gives no hidden_size or vocab_size (pass --target)")
    eagle = raw.get("eagle_config") if isinstance(raw.get("eagle_config"), dict) else {}
    assert isinstance(eagle, dict)
    ids = raw.get("eagle_aux_hidden_state_layer_ids") or eagle.get("eagle_aux_hidden_state_layer_ids")
    layers = facts.num_layers
    if layers is None:
        if not (isinstance(ids, list) and ids and all(isinstance(i, int) for i in ids)):
            raise DrafterFormatError(
                "the drafter declares no eagle_aux_hidden_state_layer_ids: pass --target so that the engines' "
                "default layers can be derived from its depth"
            )
        layers = max(ids) + 1
    embed: nn.Embedding | None = None
    has_embed = any(k.endswith("embed_tokens.weight") for k in load_checkpoint(options.draft).tensors)
    if not has_embed:
        if facts.reader is None:
            raise DrafterFormatError("the drafter has no embed_tokens: pass --target to read the target's")
        weight = target_embedding(facts.reader, options.max_target_tensor_bytes)
        embed = nn.Embedding(weight.shape[0], weight.shape[1], _weight=weight, _freeze=True)
    drafter = load_drafter(
        options.draft,
        target_num_layers=layers,
        target_hidden_size=hidden,
        target_vocab_size=vocab if embed is None else embed.num_embeddings,
        target_embed_tokens=embed,
    )
    drafter.to(device=options.device, dtype=dtype)
    drafter.d2t = drafter.d2t.to(device=options.device, dtype=torch.long)
    # On a GPU a long replay of a large drafter is bound by attention's key/value copies without this;
    # on the CPU the replay keeps the reference backend's kernels, so that its counts equal the reference's.
    drafter.grouped_attention = options.device.startswith("cuda")
    drafter.eval()
    return drafter


@dataclass
class Row:
    """One response run of one sample: the drafter's context ends at ``start - 1``."""

    sample: int
    tokens: torch.Tensor
    aux: torch.Tensor
    start: int
    end: int


@dataclass
class ReplayCounts:
    """Per-sample counts in vLLM's terms (a draft is one verification round)."""

    k: int
    drafts: list[int] = field(default_factory=list)
    accepted: list[int] = field(default_factory=list)
    per_pos: list[list[int]] = field(default_factory=list)
    emitted: list[int] = field(default_factory=list)

    def add_sample(self) -> int:
        self.drafts.append(0)
        self.accepted.append(0)
        self.per_pos.append([0] * self.k)
        self.emitted.append(0)
        return len(self.drafts) - 1


# Drafter cache sizes come in steps of this many slots, so that batches of similar length share one
# cache and its captured CUDA graphs (reference._steps keeps them per batch size and capacity).
CAPACITY_STEP = 2048


def _capacity(slots: int) -> int:
    return -(-slots // CAPACITY_STEP) * CAPACITY_STEP


@torch.inference_mode()
@decode_attention()
def replay_rows(drafter: Eagle3Drafter, rows: list[Row], k: int, *, device: str) -> list[tuple[int, int, list[int]]]:
    """Replay the chain draft over each row; returns (drafts, accepted, accepted per position) per row.

    The drafter's steps are those of ``reference.speculative_generate`` with the same shapes (a prefill
    over the left-padded contexts, K-1 chained steps of one entry, a catch-up of K+1 entries of which
    those past the accepted ones are masked), run through the same slot caches (and CUDA graphs on a GPU).
    """
    from specprobe.smoke.reference import DrafterRunner  # noqa: PLC0415 - the runner lives with the reference backend

    batch = len(rows)
    dtype = next(drafter.parameters()).dtype
    width = max(r.start for r in rows)
    longest = max(r.tokens.shape[0] for r in rows)
    aux_width = rows[0].aux.shape[1]
    # Data padded by K+2 so that every gather of a finished row stays in bounds.
    tokens = torch.zeros(batch, longest + k + 2, dtype=torch.long)
    aux = torch.zeros(batch, longest + k + 2, aux_width, dtype=dtype, device=device)
    pre_ids = torch.zeros(batch, width, dtype=torch.long)
    valid = torch.zeros(batch, width, dtype=torch.bool)
    for b, row in enumerate(rows):
        n = row.tokens.shape[0]
        tokens[b, :n] = row.tokens
        aux[b, :n] = row.aux.to(device=device, dtype=dtype)
        pre_ids[b, width - row.start :] = row.tokens[1 : row.start + 1]
        valid[b, width - row.start :] = True
    tokens = tokens.to(device)
    pre_ids, valid = pre_ids.to(device), valid.to(device)
    positions = (valid.long().cumsum(dim=1) - 1).clamp(min=0)
    start = torch.tensor([r.start for r in rows], dtype=torch.long, device=device)
    end = torch.tensor([r.end for r in rows], dtype=torch.long, device=device)
    # Context aux states, left-padded like the prompts of the reference backend (padding masked).
    pre_index = (start[:, None] - width + torch.arange(width, device=device)[None, :]).clamp(min=0)
    pre_aux = aux.gather(1, pre_index[:, :, None].expand(-1, -1, aux_width)) * valid[:, :, None]
    rounds_bound = int((end - start).max()) + 1 + CHECK_EVERY
    runner = DrafterRunner(drafter, batch, _capacity(width + 2 * k * rounds_bound + 2 * k), device)
    logits, hidden = runner.step(pre_ids, drafter.combine_aux(pre_aux), positions, valid)
    next_logits, next_hidden = logits[:, -1], hidden[:, -1:]

    cur = start.clone()  # position of the last emitted token (the round's first verified one)
    rows_index = torch.arange(batch, device=device)
    offsets = torch.arange(k + 1, device=device)
    one = torch.ones(batch, 1, dtype=torch.bool, device=device)
    drafts = torch.zeros(batch, dtype=torch.long, device=device)
    accepted = torch.zeros(batch, dtype=torch.long, device=device)
    per_pos = torch.zeros(batch, k, dtype=torch.long, device=device)
    round_number = 0
    while True:
        active = cur + k + 1 <= end  # the data covers the K drafts and the bonus token
        if round_number % CHECK_EVERY == 0 and not bool(active.any()):
            break
        round_number += 1
        chain_start = runner.cache.length
        proposal = [drafter.to_target_ids(next_logits.argmax(-1))]
        chained = next_hidden
        for j in range(1, k):
            step_logits, chained = runner.step(proposal[-1][:, None], chained, (cur - 1 + j)[:, None], one)
            proposal.append(drafter.to_target_ids(step_logits[:, -1].argmax(-1)))
        draft = torch.stack(proposal, dim=1)
        runner.cache.invalidate_from(chain_start)

        verify_pos = cur[:, None] + offsets[None, :]  # positions of [last, d1..dK]
        following = tokens.gather(1, verify_pos + 1)  # the data's tokens after each of them
        n_accepted = (draft == following[:, :k]).long().cumprod(dim=1).sum(dim=1)
        keep = (offsets[None, :] <= n_accepted[:, None]) & active[:, None]
        # Entries past the accepted ones are masked, so the data's tokens there stand in for the drafts.
        step_aux = aux.gather(1, verify_pos[:, :, None].expand(-1, -1, aux_width))
        catch_logits, catch_hidden = runner.step(following, drafter.combine_aux(step_aux), verify_pos, keep)
        next_logits = catch_logits[rows_index, n_accepted]
        next_hidden = catch_hidden[rows_index, n_accepted][:, None]
        counted = active.long()
        drafts += counted
        accepted += n_accepted * counted
        per_pos += (offsets[None, :k] < n_accepted[:, None]).long() * counted[:, None]
        cur = torch.where(active, cur + n_accepted + 1, cur)
    return [(int(d), int(a), [int(v) for v in p]) for d, a, p in
            zip(drafts.tolist(), accepted.tolist(), per_pos.tolist(), strict=True)]


def _rows_of(sample: DumpSample, index: int, k: int) -> list[Row]:
    return [
        Row(index, sample.input_ids, sample.aux_hidden, first, last)
        for first, last in response_spans(sample.loss_mask)
        if last - first >= k + 1  # room for at least one counted round
    ]


def _batches(rows: Iterator[Row], size: int) -> Iterator[list[Row]]:
    batch: list[Row] = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            # Rows of similar length in one batch: a finished row only runs masked rounds.
            yield sorted(batch, key=lambda r: r.end - r.start)
            batch = []
    if batch:
        yield batch


def replay_dump(
    drafter: Eagle3Drafter,
    dump: DumpFolder,
    files: list[Path],
    expect: DumpExpectation,
    *,
    k: int,
    device: str,
    batch_size: int,
    problems: list[DumpError],
    progress: Any = None,
) -> tuple[ReplayCounts, dict[str, int]]:
    """Replay every sample; per-sample counts and how many samples, tokens and response tokens were read."""
    counts = ReplayCounts(k)
    totals = {"samples": 0, "data_tokens": 0, "response_tokens": 0, "unmarked_samples": 0, "dataset_masked_samples": 0}
    on_gpu = device.startswith("cuda") and DEVICE_READS
    read_expect = replace(expect, check_finite=False) if on_gpu else expect

    def samples() -> Iterator[DumpSample]:
        if not on_gpu:
            yield from iter_samples(dump, files, read_expect, problems)
            return
        dtype = next(drafter.parameters()).dtype
        for sample, error in _read_to_device(dump, files, read_expect, device, dtype):
            if error is not None:
                if error.kind in ("mismatch", "last-layer-only"):
                    raise error
                problems.append(error)
            elif sample is not None:
                yield sample

    def rows() -> Iterator[Row]:
        for sample in samples():
            index = counts.add_sample()
            totals["samples"] += 1
            totals["data_tokens"] += sample.length
            totals["response_tokens"] += int(sample.loss_mask.sum())
            totals["unmarked_samples"] += 0 if sample.loss_mask_recorded else 1
            totals["dataset_masked_samples"] += 1 if sample.loss_mask_from_dataset else 0
            if progress is not None:
                progress(sample.length)
            yield from _rows_of(sample, index, k)

    # The next batch is read and checked (files, decompression, finiteness; on a GPU also copied there)
    # on a second thread while this one replays: torch releases the GIL in both.
    with ThreadPoolExecutor(max_workers=1) as reader:
        batches = _batches(rows(), batch_size)
        pending = reader.submit(next, batches, None)
        while (batch := pending.result()) is not None:
            pending = reader.submit(next, batches, None)
            _count(counts, batch, replay_rows(drafter, batch, k, device=device))
    return counts, totals


# On a GPU the reading thread also copies each sample's states to the device (on its own stream) and
# checks them there: the copy then overlaps the replay of the batch before instead of stalling it, and
# the finiteness check is a pass over device memory. Off: the copy happens in ``replay_rows``.
DEVICE_READS = True


# Files read, copied and checked at once on a GPU replay (in file order). A Kimi-sized replay on an H100
# consumes about 65k data tokens/s (2.8 GB/s of bfloat16 aux states), and one thread reading and checking on
# the host managed 55.6k (docs/smoke/offline.md). Whether 4 threads beat 1 on one machine is not yet
# measured (benchmarks/offline_acceptance.py --read-threads).
READ_THREADS = 4


def _read_to_device(
    dump: DumpFolder, files: list[Path], expect: DumpExpectation, device: str, dtype: torch.dtype
) -> Iterator[tuple[DumpSample | None, DumpError | None]]:
    """Each file's sample on the device (or its error), in file order, at most 2 x READ_THREADS ahead."""
    local = threading.local()

    def load(path: Path) -> tuple[DumpSample | None, DumpError | None]:
        if not hasattr(local, "stream"):
            local.stream = torch.cuda.Stream(device)  # type: ignore[no-untyped-call]  # unannotated
        try:
            return _on_device(read_sample(dump, path, expect), device, dtype, local.stream), None
        except DumpError as exc:
            return None, exc

    with ThreadPoolExecutor(max_workers=READ_THREADS) as pool:
        pending: collections.deque[Future[tuple[DumpSample | None, DumpError | None]]] = collections.deque()
        queue = iter(files)
        for path in itertools.islice(queue, 2 * READ_THREADS):
            pending.append(pool.submit(load, path))
        while pending:
            result = pending.popleft().result()
            for path in itertools.islice(queue, 1):
                pending.append(pool.submit(load, path))
            yield result


def _on_device(sample: DumpSample, device: str, dtype: torch.dtype, stream: Any) -> DumpSample:
    with torch.cuda.stream(stream):
        aux = sample.aux_hidden.to(device=device, dtype=dtype)
        check_finite(aux, sample.name)  # reads its verdict back: the copy on this stream is complete
    # Freed later by the replaying thread, whose stream must be done with it before the memory is reused.
    aux.record_stream(torch.cuda.default_stream(torch.device(device)))
    return replace(sample, aux_hidden=aux)


def _count(counts: ReplayCounts, batch: list[Row], results: list[tuple[int, int, list[int]]]) -> None:
    for row, (drafts, accepted, per_pos) in zip(batch, results, strict=True):
        counts.drafts[row.sample] += drafts
        counts.accepted[row.sample] += accepted
        counts.emitted[row.sample] += drafts + accepted
        for i, value in enumerate(per_pos):
            counts.per_pos[row.sample][i] += value


def _dump_finding(exc: DumpError) -> Finding:
    rule = smoke_rules.DUMP_MISMATCH if exc.kind == "mismatch" else smoke_rules.DUMP_UNREADABLE
    return rule.finding(str(exc), location=exc.location)


def _validate(options: OfflineOptions) -> None:
    if not options.draft.is_dir():
        raise SpecprobeError(f"draft {str(options.draft)!r} is not a folder")
    if not options.hidden_states.is_dir():
        raise SpecprobeError(f"--hidden-states {str(options.hidden_states)!r} is not a folder")
    if options.num_speculative_tokens < 1:
        raise SpecprobeError("--num-speculative-tokens must be at least 1")
    if options.max_samples is not None and options.max_samples < 1:
        raise SpecprobeError("--max-samples must be at least 1")
    if options.max_target_tensor_bytes < 0:
        raise SpecprobeError("--max-target-tensor-bytes must not be negative")
    if options.batch_size is not None and options.batch_size < 1:
        raise SpecprobeError("--batch-size must be at least 1")
    if options.device not in ("cpu", "cuda") and not options.device.startswith("cuda:"):
        raise SpecprobeError(f"unknown device {options.device!r}; use cpu or cuda[:N]")


def measure_offline(options: OfflineOptions, report: Report) -> dict[str, Any]:
    """Replay the dump; the smoke figures (empty when a finding says why there are none)."""
    _validate(options)
    dtype = resolve_dtype(options.dtype)
    if options.device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise SpecprobeError("--device cuda: no CUDA device is available to torch")
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    try:
        dump = list_dump(options.hidden_states)
    except DumpError as exc:
        report.add(_dump_finding(exc))
        return {}
    if dump.format is DumpFormat.EAGLE_GE_DATA:
        report.add(_dump_finding(DumpError("last-layer-only", _ge_data_message(dump), dump.relative(dump.files[0]))))
        return {}
    from specprobe.smoke.speculators_dataset import attach_masks  # noqa: PLC0415 - speculators dumps only

    try:
        dump, masks_note = attach_masks(dump, options.loss_mask_dataset)
    except DumpError as exc:
        report.add(_dump_finding(exc))
        return {}
    facts = target_facts(options.target)
    try:
        drafter = load_offline_drafter(options, facts, dtype)
    except DrafterFormatError as exc:
        report.add(smoke_rules.DRAFT_UNREADABLE.finding(str(exc), location=str(options.draft)))
        return {}
    cfg = drafter.cfg
    expect = DumpExpectation(cfg.target_hidden_size, len(cfg.aux_layer_ids), drafter.embed_tokens.num_embeddings)
    files = select_files(dump, options.max_samples, options.seed)
    head_check: dict[str, Any] | None = None
    if facts.reader is not None:
        try:
            first = _first_samples(dump, files, expect)
            # The head is read (from the hub: a vocabulary x hidden tensor) only where there are states to
            # put through it.
            head = target_head(facts.reader, options.max_target_tensor_bytes) if any(
                sample.last_hidden is not None for sample in first) else None
            head_check = check_same_target(first, head) if head is not None else None
        except DumpError as exc:
            report.add(_dump_finding(exc))
            return {}
    k = options.num_speculative_tokens
    batch_size = options.batch_size or (64 if options.device.startswith("cuda") else 16)
    problems: list[DumpError] = []
    bar = tqdm(total=None, desc="replaying hidden states", unit="tok", file=sys.stderr, leave=False,
               disable=not (options.progress and sys.stderr.isatty()))
    started = time.perf_counter()
    try:
        with bar:
            counts, totals = replay_dump(drafter, dump, files, expect, k=k, device=options.device,
                                         batch_size=batch_size, problems=problems, progress=bar.update)
    except DumpError as exc:
        report.add(_dump_finding(exc))
        return {}
    seconds = time.perf_counter() - started
    for problem in problems[:20]:
        report.add(_dump_finding(problem))
    if len(problems) > 20:
        report.add(smoke_rules.DUMP_UNREADABLE.finding(f"{len(problems) - 20} more files could not be used"))
    if totals["samples"] == 0:
        return {}
    stats = from_counts(k, counts.drafts, counts.accepted, counts.per_pos)
    figures: dict[str, Any] = acceptance_extra(stats)
    figures.update(
        {
            "source": "hidden-states",
            "lossless": None,
            "tokens": sum(counts.emitted),
            "data_tokens": totals["data_tokens"],
            "response_tokens": totals["response_tokens"],
            "samples": totals["samples"],
            "samples_in_dump": len(dump.files),
            "samples_skipped": len(problems),
            "sample_seed": options.seed if options.max_samples is not None else None,
            "tokens_per_s": finite(totals["data_tokens"] / seconds) if seconds > 0 else None,
            "seconds": round(seconds, 4),
            "dump_format": dump.format.value,
            "loss_mask_source": _mask_source(totals),
            "loss_mask_dataset": str(dump.masks.root) if dump.masks is not None else None,
            # None of the formats records how the responses were generated (greedy or sampled, by
            # this target or another): speculators' preprocessed dataset keeps input_ids, loss_mask and
            # seq_len only (its response regeneration writes sampling_params into a JSONL that
            # prepare_data.py drops). The figure is the greedy acceptance only if the responses are the
            # target's own greedy output, else an estimate.
            "generation": "not recorded",
            "per_sample_mean_acceptance_length": finite(
                sum(stats.per_prompt_acceptance_length) / len(stats.per_prompt_acceptance_length)
                if stats.per_prompt_acceptance_length else math.nan
            ),
            # Whether the dump's last-layer states predict its tokens through the target's own head.
            "target_check": head_check if head_check is not None else (
                "no --target" if options.target is None else "no last-layer states in the dump or head in the target"
            ),
            "aux_layer_ids": list(cfg.aux_layer_ids),
            "aux_layer_ids_declared": cfg.aux_layer_ids_declared,
            "device": str(torch.cuda.get_device_name(0)) if options.device.startswith("cuda") else "cpu",
            "dtype": options.dtype,
            "torch": torch.__version__,
        }
    )
    if totals["unmarked_samples"]:
        report.add(
            smoke_rules.DUMP_UNREADABLE.finding(
                f"{totals['unmarked_samples']} samples carry no loss_mask and no dataset gave one ("
                f"{masks_note or 'speculators keeps it in the preprocessed dataset'}): every token after the first "
                "was replayed, prompt tokens included",
                severity=Severity.WARNING,
            )
        )
    return figures


def _mask_source(totals: dict[str, int]) -> str:
    """Where the samples' loss masks came from: their files, the speculators dataset, none, or a mix."""
    unmarked, from_dataset, samples = totals["unmarked_samples"], totals["dataset_masked_samples"], totals["samples"]
    if unmarked == samples:
        return "none: every token after the first"
    if from_dataset == samples:
        return "speculators dataset"
    return "files" if unmarked == 0 and from_dataset == 0 else "mixed"


def _ge_data_message(dump: DumpFolder) -> str:
    return (
        f"{dump.root} is an EAGLE ge_data dump ({len(dump.files)} samples): it keeps only the target's last hidden "
        "state, and an EAGLE-3 drafter reads the concatenated aux layers, so it cannot be replayed from this data"
    )


def run_offline(options: OfflineOptions) -> Report:
    """`specprobe smoke --hidden-states`: the acceptance the drafter reaches on its own training data."""
    from specprobe.smoke.runner import measurement_findings  # noqa: PLC0415 - runner imports tqdm-light helpers only

    report = Report(
        command="smoke",
        subject={
            "draft": str(options.draft),
            "target": options.target,
            "hidden_states": str(options.hidden_states),
            "backend": "hidden-states",
        },
    )
    figures = measure_offline(options, report)
    if not figures:
        return report
    measured = report.measurement = Measurement.from_figures(figures)
    report.extend(
        measurement_findings(
            measured,
            min_acceptance_length=options.min_acceptance_length,
            label=f"hidden-state replay of {figures['samples']} samples ({figures['dump_format']}; generation "
            "not recorded: the greedy acceptance if the responses are the target's greedy output, else an estimate)",
        )
    )
    return report
