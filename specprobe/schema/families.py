"""Grouping of speculative method names into families (eagle, mtp, ngram, draft model, ...).

Engines spell methods differently (vLLM ``eagle3``/``deepseek_mtp``, SGLang ``EAGLE3``/``NEXTN``);
the family is what rules and tables reason about.
"""

from __future__ import annotations

# Exact names first: these carry meaning a name pattern would get wrong.
_EXACT: dict[str, str] = {
    "eagle": "eagle",
    "eagle3": "eagle",
    "extract_hidden_states": "hidden_states",
    "mtp": "mtp",
    "nextn": "mtp",
    "ngram": "ngram",
    "ngram_gpu": "ngram",
    "draft_model": "draft_model",
    "standalone": "draft_model",
    "suffix": "suffix",
    "medusa": "medusa",
    "mlp_speculator": "mlp_speculator",
    "dflash": "dflash",
    "dspark": "dflash",
    "custom_class": "custom",
}

FAMILY_ORDER: tuple[str, ...] = (
    "eagle",
    "mtp",
    "draft_model",
    "ngram",
    "suffix",
    "dflash",
    "medusa",
    "mlp_speculator",
    "hidden_states",
    "custom",
)


def family_of(method: str) -> str:
    """The family of one method name; an unknown name is a family of its own."""
    key = method.lower()
    if key in _EXACT:
        return _EXACT[key]
    if key.endswith("mtp"):
        return "mtp"
    if key.startswith("eagle"):
        return "eagle"
    if "ngram" in key:
        return "ngram"
    return key


def group_methods(methods: list[str]) -> dict[str, list[str]]:
    """Methods by family, families in a fixed order, methods in declaration order within each."""
    grouped: dict[str, list[str]] = {}
    for method in methods:
        grouped.setdefault(family_of(method), []).append(method)
    rank = {name: index for index, name in enumerate(FAMILY_ORDER)}
    return dict(sorted(grouped.items(), key=lambda item: (rank.get(item[0], len(rank)), item[0])))
