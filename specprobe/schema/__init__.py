"""Engine schemas: the EngineSchema model, the shipped snapshot store, the live cache, diff and JSON Schema export."""

from specprobe.schema.model import CliFlag, EngineSchema, ParameterSpec
from specprobe.schema.store import known_versions, load_snapshot

__all__ = ["CliFlag", "EngineSchema", "ParameterSpec", "known_versions", "load_snapshot"]
