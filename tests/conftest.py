"""Suite-wide: the engine interpreter fixtures (tests/engine_interpreters.py), registered here for
every folder.

Test tiers (markers in pyproject.toml): ``engine`` needs a provisioned vLLM/SGLang interpreter,
``slow`` trains or runs models with torch; ``pytest -m "not engine and not slow"`` is the fast tier.
"""

from __future__ import annotations

from engine_interpreters import sglang_python, vllm_cpu_python, vllm_python

__all__ = ["sglang_python", "vllm_cpu_python", "vllm_python"]
