"""Hidden-state dumps written the way the training pipelines write them, for the offline replay tests.

``write_specforge_dump`` follows SpecForge's ``scripts/prepare_hidden_states.py``: one ``torch.save`` dict
per sample at ``rows_<a>-<b>/data_<i>.ckpt`` (``.ckpt.gz`` compressed), keys ``input_ids`` [L],
``loss_mask`` [L], ``aux_hidden_state`` [1, L, n_aux * H] and ``hidden_state`` [1, L, H]. The responses are
the target's own greedy continuations (the reference backend's ``greedy_generate``), and the aux states
are those the reference backend feeds the drafter: ``hidden_states[i]`` of transformers (the input of
layer i, vLLM's aux id i) for the drafter's aux layer ids.
"""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

GROUP = 2000  # SpecForge's file_group_size


def sample_path(out: Path, index: int, *, compress: bool = False) -> Path:
    group = index // GROUP * GROUP
    return out / f"rows_{group}-{group + GROUP}" / f"data_{index}.ckpt{'.gz' if compress else ''}"


def save_record(record: dict[str, Any], path: Path, *, compress: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if compress:
        with gzip.open(path, "wb", compresslevel=6) as stream:
            torch.save(record, stream)
    else:
        torch.save(record, path)


@torch.inference_mode()
def greedy_records(
    target: Any, prompts: Sequence[Sequence[int]], max_new_tokens: int, aux_layer_ids: Sequence[int]
) -> list[dict[str, torch.Tensor]]:
    """One SpecForge record per prompt: the prompt and the target's greedy continuation, with its states."""
    from specprobe.smoke.reference import greedy_generate

    generated = greedy_generate(target, prompts, max_new_tokens, device="cpu").tokens
    records = []
    for prompt, response in zip(prompts, generated, strict=True):
        ids = torch.tensor([*prompt, *response], dtype=torch.long)
        out = target.model(input_ids=ids[None], output_hidden_states=True)
        aux = torch.cat([out.hidden_states[i][0] for i in aux_layer_ids], dim=-1)
        mask = torch.zeros(ids.shape[0], dtype=torch.long)
        mask[len(prompt) :] = 1
        records.append(
            {
                "input_ids": ids,
                "loss_mask": mask,
                "aux_hidden_state": aux[None].clone(),
                "hidden_state": out.hidden_states[-1][0][None].clone(),
            }
        )
    return records


def write_specforge_dump(records: Sequence[dict[str, torch.Tensor]], out: Path, *, compress: bool = False) -> Path:
    for index, record in enumerate(records):
        save_record(record, sample_path(out, index, compress=compress), compress=compress)
    return out


# Small synthetic drafters and dumps (random weights and states) for the parsing tests and rule fixtures.
HIDDEN = 32
AUX = (1, 2, 3)
VOCAB = 256


def tiny_drafter(folder: Path) -> Path:
    """A random EAGLE-3 drafter with its own embedding, target hidden 32, three aux layers, vocab 256."""
    from specprobe.demo.fixtures import DraftSpec, build_draft

    spec = DraftSpec(hidden_size=HIDDEN, num_attention_heads=2, num_key_value_heads=1, intermediate_size=64,
                     vocab_size=VOCAB, draft_vocab_size=64, aux_layer_ids=list(AUX), embed_tokens=True)
    return build_draft(folder, spec)


def synthetic_record(length: int = 24, prompt: int = 8, *, width: int = HIDDEN * len(AUX), seed: int = 0,
                     hidden: int = HIDDEN) -> dict[str, torch.Tensor]:
    """A SpecForge record of random states: ``prompt`` context tokens, then ``length - prompt`` response tokens."""
    generator = torch.Generator().manual_seed(seed)
    mask = torch.zeros(length, dtype=torch.long)
    mask[prompt:] = 1
    return {
        "input_ids": torch.randint(0, VOCAB, (length,), generator=generator),
        "loss_mask": mask,
        "aux_hidden_state": torch.randn(1, length, width, generator=generator),
        "hidden_state": torch.randn(1, length, hidden, generator=generator),
    }
