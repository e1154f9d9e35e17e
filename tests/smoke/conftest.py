"""Models for the smoke tests: trained once per session on this machine's CPU by the project itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def demo_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    # Only the tests that train or run models need torch: the statistics, prompt, metrics-parsing and
    # argument tests in this folder run (and are counted) without it.
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from specprobe.smoke.train import TINY, build_demo_models

    torch.set_num_threads(2)
    out = tmp_path_factory.mktemp("demo")
    return build_demo_models(out, plan=TINY, with_mla=True, log=lambda _message: None)


def read_json(text: str) -> dict:
    return json.loads(text)
