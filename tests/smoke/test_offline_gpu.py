"""The replay's GPU path (states copied and checked on the reading thread, grouped attention, CUDA
graphs) gives the CPU path's counts and the same findings. Runs where a CUDA device is present only."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _drafter(device: str) -> object:
    from benchmarks.offline_acceptance import SIZES, build_drafter

    torch.manual_seed(0)
    # Drafts target id 0 every step (fc, o_proj, down_proj zero): the data's pattern decides the counts.
    return build_drafter(SIZES["small"], device=device, dtype=torch.float32, accept="pattern")


@pytest.mark.parametrize("device_reads", [True, False])
def test_gpu_replay_counts_and_findings_equal_the_cpu_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           device_reads: bool) -> None:
    from benchmarks.offline_acceptance import SIZES
    from specprobe.smoke import offline
    from specprobe.smoke.dumps import DumpExpectation, list_dump
    from tests.smoke.dump_writer import sample_path, save_record

    size = SIZES["small"]
    width, vocab = 3 * size["hidden"], size["vocab"]
    generator = torch.Generator().manual_seed(1)
    cpu_drafter = _drafter("cpu")
    for index in range(10):
        length = 96
        ids = torch.randint(0, vocab, (length,), generator=generator)
        # A pattern the drafter (always drafting 0) accepts part of: counts depend on every round.
        ids[32:] = torch.tensor([0, 0, 1, 5]).repeat(16)
        aux = torch.randn(1, length, width, generator=generator)
        if index == 7:
            aux[0, 50, 3] = float("nan")
        mask = torch.zeros(length, dtype=torch.long)
        mask[32:] = 1
        save_record({"input_ids": ids, "loss_mask": mask, "aux_hidden_state": aux}, sample_path(tmp_path, index))
    folder = list_dump(tmp_path)
    expect = DumpExpectation(size["hidden"], 3, vocab)
    results = {}
    monkeypatch.setattr(offline, "DEVICE_READS", device_reads)
    for device, drafter in (("cpu", cpu_drafter), ("cuda", _drafter("cuda"))):
        drafter.grouped_attention = device == "cuda"  # type: ignore[attr-defined]
        problems: list = []
        counts, totals = offline.replay_dump(drafter, folder, list(folder.files), expect, k=3, device=device,
                                             batch_size=4, problems=problems)
        results[device] = (counts.drafts, counts.accepted, counts.per_pos, totals,
                           [(p.kind, p.location) for p in problems])
    assert results["cuda"] == results["cpu"]
    [(kind, location)] = results["cpu"][4]
    assert kind == "nonfinite" and "data_7" in str(location)
    assert results["cpu"][3]["samples"] == 9 and sum(results["cpu"][1]) > 0
