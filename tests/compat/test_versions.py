"""The one version parse and the one "this engine's evidence first" ordering."""

from __future__ import annotations

from packaging.version import Version

from specprobe.engines.versions import engine_first, parse_version, same_version


def test_parse_version_never_raises() -> None:
    assert parse_version("0.33.0") == Version("0.33.0")
    assert parse_version("0.32.0+cpu") == Version("0.32.0+cpu")
    for text in (None, "", "latest", "v0.33.0-rc1-dirty", "0.33.0\n; rm -rf /"):
        assert parse_version(text) is None


def test_same_version() -> None:
    assert same_version("0.33", "0.33.0")
    assert not same_version("0.33.0", "0.33.1")
    assert same_version("nightly", "nightly") and not same_version("nightly", "0.33.0")


def test_engine_first_keeps_order_within_each_engine() -> None:
    links = ["https://github.com/vllm-project/a", "https://github.com/sgl-project/b", "https://x.org/c",
             "https://github.com/sgl-project/d"]  # fmt: skip
    assert engine_first(links, "sglang") == [links[1], links[3], links[0], links[2]]
    assert engine_first(links, "vllm") == [links[0], links[1], links[2], links[3]]
    assert engine_first(links, None) == links
