"""What each engine version does with a drafter: its shipped snapshot first, else the engine facts.

A rule asks one question (``layer_prefixes("sglang", "0.5.11")``); the answer comes from the shipped
snapshot of that version when the snapshot carries the field, else from the facts in
``specprobe/data/engine_facts/`` (``specprobe.engines.facts.answer``), each read from the engine's source at
a pinned tag. A release newer than every snapshot is judged by the newest snapshot and facts, and the
answer says so (``Answer.beyond_newest``); a version no fact covers gives None, and the rule then says
what it cannot know instead of guessing. docs/evidence/engine-facts.md is generated from the same data.
"""

from __future__ import annotations

import functools
from typing import Any

from specprobe.engines.facts import Answer, answer, beyond_newest, newest_read
from specprobe.engines.versions import parse_version
from specprobe.findings import SpecprobeError
from specprobe.schema.store import known_versions, load_snapshot, nearest_version

__all__ = [
    "DEFAULT_AUX_EVIDENCE",
    "Answer",
    "answer",
    "auto_resolved_flags",
    "default_aux_layers",
    "draft_positions",
    "draft_registry",
    "fc_inputs",
    "known_model_classes",
    "layer_prefixes",
    "model_architectures",
    "self_drafting_architectures",
    "sglang_context_length",
    "snapshot_field",
    "source_url",
    "tied_head",
    "vllm_speculative_config_path",
]

VLLM_TREE = "https://github.com/vllm-project/vllm/blob/v{version}/"
SGLANG_TREE = "https://github.com/sgl-project/sglang/blob/v{version}/python/"


def source_url(engine: str, version: str, path: str) -> str:
    """A link to ``path`` (relative to the package root, e.g. ``vllm/config/speculative.py`` or
    ``sglang/srt/models/llama_eagle3.py``) in the source of exactly ``engine==version``."""
    tree = VLLM_TREE if engine == "vllm" else SGLANG_TREE
    return tree.format(version=version) + path


def vllm_speculative_config_path(version: str) -> str:
    """Where SpeculativeConfig lives in that vLLM release (fact ``speculative_config_path``)."""
    found = answer("vllm", version, "speculative_config_path")
    return str(found.value) if found is not None else "vllm/config/speculative.py"


# --- the aux-layer defaults -------------------------------------------------------------------------
def default_aux_layers(num_layers: int) -> list[int]:
    """The target layers both engines capture when the drafter names none: (2, L//2, L-3)
    (fact ``eagle3_default_aux_layers``)."""
    return [2, num_layers // 2, num_layers - 3]


def _default_aux_evidence() -> dict[str, str]:
    links: dict[str, str] = {}
    for engine, newest in newest_read().items():
        found = answer(engine, newest, "eagle3_default_aux_layers")
        if found is not None:
            links[engine] = found.evidence
    return links


DEFAULT_AUX_EVIDENCE = _default_aux_evidence()


def sglang_context_length(config: dict[str, Any]) -> int | None:
    """The context length SGLang derives from a config.json (``get_context_length``): the first of
    max_sequence_length, seq_length, max_seq_len, model_max_length, max_position_embeddings, times the
    rope_scaling factor unless the scaling names original_max_position_embeddings or is llama3."""
    factor: Any = 1
    scaling = config.get("rope_scaling")
    if isinstance(scaling, dict) and scaling:
        factor = scaling.get("factor", 1)
        if "original_max_position_embeddings" in scaling or scaling.get("rope_type") == "llama3":
            factor = 1
    if isinstance(factor, bool) or not isinstance(factor, int | float) or not 0 < factor < 1e6:
        factor = 1
    for key in ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length", "max_position_embeddings"):
        value = config.get(key)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**40:
                return None
            return int(factor * value)
    return None


# --- the snapshots ----------------------------------------------------------------------------------
@functools.lru_cache(maxsize=64)
def snapshot_field(engine: str, version: str, name: str) -> Any:
    """Field ``name`` of the shipped snapshot of exactly ``engine==version``; None when either is absent."""
    try:
        schema = load_snapshot(engine, version)
    except SpecprobeError:
        return None
    if schema is None or (schema.version != version and parse_version(schema.version) != parse_version(version)):
        return None
    value = getattr(schema, name, None)
    return value if value not in (None, [], {}) else None


def _snapshot_answer(engine: str, version: str, name: str) -> Answer | None:
    """The snapshot's field for ``engine==version``; past the newest release read, the newest snapshot's
    (flagged), so that a release newer than every snapshot keeps what the newest one says."""
    value = snapshot_field(engine, version, name)
    if value is not None:
        return Answer(value, "", f"specprobe/data/schemas/{engine}/{version}.json", version)
    newest = beyond_newest(engine, version)
    if newest is None:
        return None
    value = snapshot_field(engine, newest, name)
    if value is None:
        return None
    return Answer(value, "", f"specprobe/data/schemas/{engine}/{newest}.json", newest, beyond_newest=True)


def lookup(engine: str, version: str, field_name: str, fact_name: str) -> Answer | None:
    """The snapshot's ``field_name`` when it has one, else engine fact ``fact_name``."""
    return _snapshot_answer(engine, version, field_name) or answer(engine, version, fact_name)


def fc_inputs(engine: str, version: str) -> Answer | None:
    """Where the release reads how many aux hidden states fc is built for, per config layout (``raw``,
    ``speculators``): ``{"read": [dotted config.json paths], "default": 3}``. The snapshots' coarser
    ``eagle3_fc_inputs`` ("3" / "aux_layer_ids") is kept consistent with it by the tests."""
    return answer(engine, version, "eagle3_fc_inputs")


def layer_prefixes(engine: str, version: str) -> Answer | None:
    """The decoder-layer key prefixes (``layers.0``, ``midlayer``; no trailing dot) the loader accepts."""
    found = lookup(engine, version, "eagle3_layer_prefixes", "eagle3_layer_prefixes")
    if found is None:
        return None
    values = found.value if isinstance(found.value, list | tuple) else [found.value]
    return Answer(
        tuple(str(v).rstrip(".") for v in values),
        found.versions,
        found.evidence,
        found.read_through,
        found.beyond_newest,
    )


def tied_head(engine: str, version: str) -> Answer | None:
    return answer(engine, version, "eagle3_tied_head")


def draft_positions(engine: str, version: str) -> Answer | None:
    return answer(engine, version, "draft_max_position")


def self_drafting_architectures(engine: str, version: str) -> Answer | None:
    """SGLang targets whose missing draft path is filled with their own. A snapshot lists what the
    resolution code fills explicitly; the facts add the target classes model_config.py turns into
    their MTP draft class (the draft falls back to the target's path), so both are joined."""
    if engine != "sglang":
        return None
    fact = answer(engine, version, "self_drafting_architectures")
    listed = _snapshot_answer(engine, version, "self_drafting_architectures")
    if listed is None:
        return None if fact is None else Answer(tuple(fact.value), *_rest(fact))
    joined = tuple(sorted({*(str(a) for a in listed.value), *(fact.value if fact else ())}))
    return Answer(joined, *_rest(fact or listed))


def _rest(found: Answer) -> tuple[str, str, str, bool]:
    return found.versions, found.evidence, found.read_through, found.beyond_newest


def auto_resolved_flags(engine: str, version: str, algorithm: str) -> tuple[str, ...]:
    """The flags ``engine==version`` fills itself for ``algorithm`` (upper-case SGLang name)."""
    if engine != "sglang":
        return ()
    found = lookup(engine, version, "auto_resolved_flags", "auto_resolved_flags")
    if found is None or not isinstance(found.value, dict):
        return ()
    flags = found.value.get(algorithm.upper()) or ()
    return tuple("--" + str(f).removeprefix("--").replace("_", "-") for f in flags)


def model_architectures(engine: str, version: str) -> frozenset[str] | None:
    """Every architecture the engine version's model registry knows; None when the snapshot lacks it."""
    value = snapshot_field(engine, version, "model_architectures")
    return frozenset(str(v) for v in value) if isinstance(value, list | tuple) else None


def _registry_snapshot(engine: str, version: str, nearest: bool) -> tuple[str, bool] | None:
    """The snapshot version whose registry stands for ``engine==version``: the version's own, the newest
    (flagged) past the newest release read, and with ``nearest`` the newest older one between snapshots."""
    if version in known_versions(engine) or snapshot_field(engine, version, "model_architectures") is not None:
        return version, False
    newest = beyond_newest(engine, version)
    if newest is not None:
        return newest, True
    if nearest:
        older = nearest_version(engine, version)
        return (older, False) if older is not None else None
    return None


def known_model_classes(engine: str, version: str) -> Answer | None:
    """Classes the engine version's model registry knows (targets and drafts): its snapshot's
    ``model_architectures``, else the nearest older snapshot's (a class a release adds is missing there:
    absence proves nothing), the newest snapshot's past the newest release read."""
    chosen = _registry_snapshot(engine, version, nearest=True)
    if chosen is None:
        return None
    snapshot, beyond = chosen
    full = model_architectures(engine, snapshot)
    if full is None:
        return None
    return Answer(full, "", f"specprobe/data/schemas/{engine}/{snapshot}.json", snapshot, beyond)


def draft_registry(engine: str, version: str, *, nearest: bool = False) -> Answer | None:
    """The draft classes ``engine==version`` registers (snapshot ``draft_architectures``), only where that
    release's registry is known: its own snapshot, or the newest one (flagged) past the newest release
    read. Between snapshots and before the first, None: a class missing from a neighbour proves nothing.
    With ``nearest``, a release between snapshots gets the nearest older one's (what it kept at least)."""
    chosen = _registry_snapshot(engine, version, nearest=nearest)
    if chosen is None:
        return None
    snapshot, beyond = chosen
    value = snapshot_field(engine, snapshot, "draft_architectures")
    if not isinstance(value, list | tuple):
        return None
    return Answer(frozenset(str(v) for v in value), "", f"specprobe/data/schemas/{engine}/{snapshot}.json", snapshot,
                  beyond)
