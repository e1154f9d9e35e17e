"""Engines specprobe introspects: one module per engine, each with a probe script run in the engine's interpreter."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from specprobe.engines import sglang, vllm
from specprobe.schema.model import EngineSchema


@dataclass(frozen=True)
class EngineAdapter:
    """How to probe one engine and read the reply."""

    name: str
    distribution: str
    probe_script: str
    from_probe: Callable[[dict[str, Any]], EngineSchema]


ADAPTERS: dict[str, EngineAdapter] = {
    "vllm": EngineAdapter("vllm", vllm.DISTRIBUTION, vllm.PROBE_SCRIPT, vllm.schema_from_probe),
    "sglang": EngineAdapter("sglang", sglang.DISTRIBUTION, sglang.PROBE_SCRIPT, sglang.schema_from_probe),
}
