"""Writes tests/smoke/data/speculators_dataset/ with datasets itself, the way speculators' prepare_data.py does
(vllm-project/speculators c05b95b, data_generation/preprocessing.py): a batched map that returns torch long
tensors for input_ids and loss_mask and an int seq_len, set_format("torch"), a seeded shuffle, save_to_disk.

Not part of the test run (datasets is not a specprobe dependency): run it with an interpreter that has
datasets and torch, e.g. ``~/.cache/specprobe/engines/sglang-0.5.23/bin/python`` (datasets 5.1.0).
The rows are those ``speculators_rows()`` gives, before the shuffle; the test reads them back by token ids.
"""

from __future__ import annotations

import sys
from pathlib import Path


def speculators_rows() -> list[tuple[list[int], list[int]]]:
    rows = []
    for index in range(5):
        ids = [index * 10 + j for j in range(6 + index)]
        mask = [0] * (2 + index % 3) + [1] * (len(ids) - 2 - index % 3)
        rows.append((ids, mask))
    return rows


def main(out: Path) -> None:
    import torch
    from datasets import Dataset, concatenate_datasets

    rows = speculators_rows()
    raw = Dataset.from_dict({"input_ids": [r[0] for r in rows], "loss_mask": [r[1] for r in rows]})

    def passthrough(examples: dict) -> dict:
        results: dict[str, list] = {"input_ids": [], "loss_mask": [], "seq_len": []}
        for ids, mask in zip(examples["input_ids"], examples["loss_mask"], strict=True):
            results["input_ids"].append(torch.tensor(ids, dtype=torch.long))
            results["loss_mask"].append(torch.tensor(mask, dtype=torch.long))
            results["seq_len"].append(len(ids))
        return results

    dataset = raw.map(passthrough, batched=True, remove_columns=raw.column_names, keep_in_memory=True)
    dataset.set_format(type="torch")
    dataset = concatenate_datasets([dataset]).shuffle(seed=0)
    dataset.save_to_disk(str(out), num_shards=2)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
