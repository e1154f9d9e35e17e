"""The demo trainer's copy segments (plan ``tiny-copy``): one-token words, the share of the stream they take,
and prompts that encode back to a cycle written twice, the form the served gap test relies on."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from specprobe.demo.train import TINY, corpus_text, train_tokenizer

    return train_tokenizer(corpus_text(60_000), TINY.vocab_size, tmp_path_factory.mktemp("copy-tokenizer"))


def test_copy_words_are_one_token_each(tokenizer: Any) -> None:
    from specprobe.demo.train import copy_vocabulary

    words = copy_vocabulary(tokenizer, 6)
    assert len(set(words)) == 6
    for word in words:
        text = tokenizer.decode([word])
        assert text.startswith(" ") and text[1:].isalpha()
        assert tokenizer(text, add_special_tokens=False)["input_ids"] == [word]
    with pytest.raises(ValueError, match="one-token words"):
        copy_vocabulary(tokenizer, len(tokenizer))


def test_copy_cycles_take_their_share_and_keep_the_text(tokenizer: Any) -> None:
    from specprobe.demo.train import TINY_COPY, copy_vocabulary, with_copy_cycles

    text = torch.tensor(tokenizer(" def f(x):\n    return x\n" * 400, add_special_tokens=False)["input_ids"])
    mixed = with_copy_cycles(text, tokenizer, TINY_COPY, seed=0)
    words = set(copy_vocabulary(tokenizer, TINY_COPY.copy_words))
    newline = tokenizer("\n", add_special_tokens=False)["input_ids"][0]
    added = mixed.numel() - text.numel()
    assert abs(added / mixed.numel() - TINY_COPY.copy_share) < 0.05
    # The same seed, the same stream: the trained pair is reproducible.
    assert torch.equal(mixed, with_copy_cycles(text, tokenizer, TINY_COPY, seed=0))
    assert not torch.equal(mixed, with_copy_cycles(text, tokenizer, TINY_COPY, seed=1))
    # Every added token is a newline or a copy word.
    counts = torch.bincount(mixed, minlength=len(tokenizer)) - torch.bincount(text, minlength=len(tokenizer))
    assert set(torch.nonzero(counts).flatten().tolist()) <= words | {newline}


def test_copy_prompts_encode_to_a_cycle_written_twice(tokenizer: Any, tmp_path: Path) -> None:
    from specprobe.demo.train import TINY_COPY, copy_prompts, copy_vocabulary
    from specprobe.smoke.prompts import encode_prompts, parse_prompts

    rows = copy_prompts(tokenizer, TINY_COPY, 24)
    assert [row["id"] for row in rows] == [f"copy-{i}" for i in range(24)]
    words = set(copy_vocabulary(tokenizer, TINY_COPY.copy_words))
    newline = tokenizer("\n", add_special_tokens=False)["input_ids"][0]
    prompts = parse_prompts("\n".join(json.dumps(row) for row in rows), "copy-prompts.jsonl")
    for ids in encode_prompts(tokenizer, prompts):
        size = (len(ids) - 1) // 2
        assert 6 <= size <= 12 and len(ids) == 2 * size + 1
        assert ids[0] == newline and ids[1 : 1 + size] == ids[1 + size :]
        assert set(ids[1:]) <= words


def test_plans_feed_the_layers_they_name() -> None:
    from specprobe.compat.engine_facts import default_aux_layers
    from specprobe.demo.train import TINY, TINY_COPY

    assert TINY.aux_layer_ids == (1, 2, 3)
    assert replace(TINY, num_layers=8).aux_layer_ids == tuple(default_aux_layers(8))
    # The copy pair's drafter is trained on other layers than vLLM's default for its 8-layer target.
    assert TINY_COPY.aux_layer_ids == (5, 6, 7) != tuple(default_aux_layers(TINY_COPY.num_layers))
