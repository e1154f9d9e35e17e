"""The drafter form a folder holds, per speculative method: EAGLE-3 (every format ``layout`` names), EAGLE-1/2,
an independent draft model, MTP heads inside a target checkpoint, a DFlash or DSpark block drafter, Medusa
heads, an MLP speculator; or none that specprobe models.

The form decides which rule families apply (EAGLE-3 rules only to EAGLE-3 drafters), and the method a user
names (``--method``, or the method of a launch command) must agree with it. Read from config.json and the
safetensors tensor names only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from specprobe.checkpoint.layout import Layout
from specprobe.schema.families import family_of

EAGLE3 = "eagle3"
EAGLE = "eagle"
DRAFT_MODEL = "draft_model"
MTP = "mtp"
DFLASH = "dflash"
DSPARK = "dspark"
MEDUSA = "medusa"
MLP_SPECULATOR = "mlp_speculator"

FORMS: dict[str, str] = {
    EAGLE3: "an EAGLE-3 drafter (fc over the target's auxiliary hidden states)",
    EAGLE: "an EAGLE-1/2 drafter (Eagle* architecture)",
    DRAFT_MODEL: "an independent draft model: a complete causal LM proposing tokens of the target's vocabulary",
    MTP: "multi-token-prediction heads inside a target checkpoint",
    DFLASH: "a DFlash block drafter (parallel drafting of a block from target hidden states)",
    DSPARK: "a DSpark block drafter (DFlash with a Markov/confidence head)",
    MEDUSA: "Medusa heads",
    MLP_SPECULATOR: "an MLP speculator",
}

# The form each method family serves (schema.families); dflash covers DSpark too.
_FAMILY_FORMS: dict[str, frozenset[str]] = {
    "eagle": frozenset({EAGLE, EAGLE3}),
    "draft_model": frozenset({DRAFT_MODEL}),
    "mtp": frozenset({MTP}),
    "dflash": frozenset({DFLASH, DSPARK}),
    "medusa": frozenset({MEDUSA}),
    "mlp_speculator": frozenset({MLP_SPECULATOR}),
}
# Methods that need no drafter weights at all.
MODEL_FREE = frozenset({"ngram", "suffix"})

_LAYER_KEY = re.compile(r"^(?:model\.)?(?:language_model\.)?(?:model\.)?layers\.(\d+)\.")
_MTP_KEY = re.compile(r"(^|\.)(mtp|nextn)\.|(^|\.)(eh_proj|enorm|hnorm|shared_head)\.")


@dataclass(frozen=True)
class DrafterForm:
    """The recognised form (None: none specprobe models) and what it was recognised from."""

    form: str | None
    why: str

    @property
    def is_eagle3(self) -> bool:
        return self.form == EAGLE3


def _archs(raw: dict[str, Any]) -> list[str]:
    archs = raw.get("architectures")
    return [a for a in archs if isinstance(a, str)] if isinstance(archs, list) else []


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def block_config(raw: dict[str, Any]) -> dict[str, Any]:
    """The block drafter's settings: ``dflash_config`` merged over the top level (where older exports keep
    ``block_size`` and ``target_layer_ids``)."""
    nested = raw.get("dflash_config")
    merged = {k: v for k, v in raw.items() if k in ("block_size", "target_layer_ids", "dspark_block_size",
                                                    "num_target_layers", "mask_token_id")}
    if isinstance(nested, dict):
        merged.update(nested)
    return merged


def detect_form(layout: Layout, raw: dict[str, Any] | None) -> DrafterForm:
    """The drafter form of a folder from its config.json and tensor names."""
    config = raw or {}
    archs = _archs(config)
    joined = " ".join(archs).lower()
    names = list(layout.tensors)
    if layout.draft_format is not None:
        return DrafterForm(EAGLE3, f"EAGLE-3 format {layout.draft_format}")
    if "dspark" in joined or config.get("dspark_block_size") is not None or (
        isinstance(config.get("dflash_config"), dict) and config["dflash_config"].get("projector_type") == "dspark"
    ):
        return DrafterForm(DSPARK, f"architecture {archs[0] if archs else '(none)'} / dspark settings")
    if "dflash" in joined or isinstance(config.get("dflash_config"), dict):
        return DrafterForm(DFLASH, f"architecture {archs[0] if archs else '(none)'} / dflash_config")
    if any(a.startswith("Eagle") and not a.startswith("Eagle3") for a in archs):
        return DrafterForm(EAGLE, f"architecture {archs[0]}")
    if "medusa" in joined or config.get("medusa_num_heads") is not None or any(
        n.startswith("medusa_head") for n in names
    ):
        return DrafterForm(MEDUSA, "Medusa heads in config.json or tensor names")
    if "mlpspeculator" in joined or config.get("model_type") == "mlp_speculator":
        return DrafterForm(MLP_SPECULATOR, f"architecture {archs[0] if archs else 'mlp_speculator'}")
    nextn = _int(config.get("num_nextn_predict_layers")) or _int(config.get("mtp_num_hidden_layers"))
    if nextn or any(_MTP_KEY.search(n) for n in names):
        return DrafterForm(MTP, "num_nextn_predict_layers / mtp tensors")
    layers = {int(m.group(1)) for n in names if (m := _LAYER_KEY.match(n))}
    causal = any(a.endswith(("ForCausalLM", "ForConditionalGeneration", "LMHeadModel")) for a in archs)
    embeds = any(n.endswith("embed_tokens.weight") for n in names)
    if causal and embeds and layers and "fc.weight" not in layout.tensors:
        return DrafterForm(DRAFT_MODEL, f"a complete {archs[0]} ({len(layers)} decoder layers with embeddings)")
    return DrafterForm(None, f"architecture {archs[0] if archs else '(none)'}")


def method_forms(method: str | None) -> frozenset[str] | None:
    """The drafter forms a method loads (None: the method is unknown or needs no drafter)."""
    if not method:
        return None
    key = method.lower()
    if key == "eagle3":
        return frozenset({EAGLE3})
    if key == "eagle":
        return frozenset({EAGLE})
    if key == "dspark":
        return frozenset({DSPARK})
    return _FAMILY_FORMS.get(family_of(key))


def proposes_tokens(form: str | None) -> bool:
    """Whether the form's draft ids are read as the target's token ids (every drafter with weights)."""
    return form is not None
