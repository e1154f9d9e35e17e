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
import json
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


# speculators' layout (vllm-project/speculators c05b95b): prepare_data.py saves the preprocessed dataset with
# datasets' save_to_disk, data_generation_offline.py writes hs_<i>.safetensors for row i into
# <dataset>/hidden_states. The Arrow shards are written here with pyarrow in the schema datasets gives
# speculators' rows (checked against a dataset datasets itself wrote: tests/smoke/data/speculators_dataset).
SPECULATORS_FEATURES = (
    '{"info": {"features": {"input_ids": {"feature": {"dtype": "int32", "_type": "Value"}, "_type": "List"}, '
    '"loss_mask": {"feature": {"dtype": "int64", "_type": "Value"}, "_type": "List"}, '
    '"seq_len": {"dtype": "int64", "_type": "Value"}}}}'
)


def speculators_table(rows: Sequence[tuple[Sequence[int], Sequence[int]]]) -> Any:
    """The rows as datasets stores them: input_ids list<int32>, loss_mask list<int64>, seq_len int64."""
    import pyarrow as pa

    schema = pa.schema(
        [("input_ids", pa.list_(pa.int32())), ("loss_mask", pa.list_(pa.int64())), ("seq_len", pa.int64())],
        metadata={"huggingface": SPECULATORS_FEATURES},
    )
    return pa.table(
        {
            "input_ids": [list(map(int, ids)) for ids, _ in rows],
            "loss_mask": [list(map(int, mask)) for _, mask in rows],
            "seq_len": [len(ids) for ids, _ in rows],
        },
        schema=schema,
    )


def write_speculators_dataset(
    out: Path, rows: Sequence[tuple[Sequence[int], Sequence[int]]], *, shards: int = 1, batch_rows: int = 1000
) -> Path:
    """A save_to_disk folder: data-<i>-of-<n>.arrow (Arrow IPC stream, record batches of ``batch_rows`` as
    datasets' ArrowWriter writes them), state.json listing the shards, dataset_info.json."""
    import pyarrow as pa

    out.mkdir(parents=True, exist_ok=True)
    table = speculators_table(rows)
    per_shard = -(-len(rows) // shards)
    names = []
    for index in range(shards):
        name = f"data-{index:05d}-of-{shards:05d}.arrow"
        names.append(name)
        part = table.slice(index * per_shard, per_shard)
        with pa.OSFile(str(out / name), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
            for batch in part.to_batches(max_chunksize=batch_rows):
                writer.write_batch(batch)
    state = {
        "_data_files": [{"filename": name} for name in names],
        "_fingerprint": "0123456789abcdef",
        "_format_columns": ["input_ids", "loss_mask", "seq_len"],
        "_format_kwargs": {},
        "_format_type": "torch",
        "_output_all_columns": False,
        "_split": None,
    }
    (out / "state.json").write_text(json.dumps(state, indent=2))
    info = json.loads(SPECULATORS_FEATURES)["info"]
    (out / "dataset_info.json").write_text(json.dumps({"citation": "", "description": "", **info}, indent=2))
    return out


def write_speculators_sample(
    record: dict[str, torch.Tensor], path: Path, *, with_loss_mask: bool = False, with_last_layer: bool = True
) -> None:
    """A SpecForge-shaped record as speculators' hs_<i>.safetensors: token_ids [L], hidden_states [L, n, H]
    (the aux layers, then the final one), and a loss_mask tensor only where asked (a writer that adds it)."""
    from safetensors.torch import save_file

    aux = record["aux_hidden_state"][0]
    hidden = record["hidden_state"][0].shape[-1]
    layers = [aux.reshape(aux.shape[0], -1, hidden)]
    if with_last_layer:
        layers.append(record["hidden_state"][0][:, None])
    tensors = {"token_ids": record["input_ids"].clone(), "hidden_states": torch.cat(layers, dim=1).contiguous()}
    if with_loss_mask:
        tensors["loss_mask"] = record["loss_mask"].clone()
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path))
