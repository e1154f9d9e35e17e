"""Per engine, the function that turns its probe's raw JSON reply into an EngineSchema."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from specprobe.schema import reply_sglang, reply_vllm
from specprobe.schema.model import EngineSchema

FROM_REPLY: dict[str, Callable[[dict[str, Any]], EngineSchema]] = {
    "vllm": reply_vllm.schema_from_probe,
    "sglang": reply_sglang.schema_from_probe,
}
