"""Engines specprobe introspects: which probe script runs in each engine's interpreter, and how to run it.

This package is the bottom of the engine-facing stack: it runs a probe and hands back its raw JSON
reply. Turning a reply into an EngineSchema is ``specprobe.schema``'s job, which imports this
package (never the other way round). What it holds:

- ``spec``: the one spelling of an engine and its version (``vllm==0.16.0``); ``versions``: the
  PEP 440 parse that never raises.
- ``facts``: engine knowledge as data (``specprobe/data/engine_facts/``), including the newest
  release read.
- ``probes/``: every script run in an engine's interpreter; ``_probe``: finding that interpreter and
  running a probe; ``exact``: exact mode's probe runs; ``provision``: the engines' cached venvs.
"""

from __future__ import annotations

from dataclasses import dataclass

from specprobe.engines.spec import DISTRIBUTIONS


@dataclass(frozen=True)
class EngineProbe:
    """One engine: its probe script and the distributions that install its importable package."""

    name: str
    distributions: tuple[str, ...]
    probe_script: str


PROBES: dict[str, EngineProbe] = {
    "vllm": EngineProbe("vllm", DISTRIBUTIONS["vllm"], "vllm_probe.py"),
    "sglang": EngineProbe("sglang", DISTRIBUTIONS["sglang"], "sglang_probe.py"),
}
