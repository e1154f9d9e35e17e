"""What each engine version does with a drafter, read from its snapshot or from version-ranged facts.

A rule asks one question (``fc_inputs("vllm", "0.21.0")``); the answer comes from the shipped snapshot
of that version when the snapshot carries the field, else from the PEP 440-ranged facts below, each
established from the engine's source at a pinned tag (the evidence link). A version no fact covers
gives None: the rule then says what it cannot know instead of guessing. docs/evidence/engine-facts.md
lists the facts for users.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

VLLM_TREE = "https://github.com/vllm-project/vllm/blob/v{version}/"
SGLANG_TREE = "https://github.com/sgl-project/sglang/blob/v{version}/python/"


def source_url(engine: str, version: str, path: str) -> str:
    """A link to ``path`` (relative to the package root, e.g. ``vllm/config/speculative.py`` or
    ``sglang/srt/models/llama_eagle3.py``) in the source of exactly ``engine==version``."""
    tree = VLLM_TREE if engine == "vllm" else SGLANG_TREE
    return tree.format(version=version) + path


def vllm_speculative_config_path(version: str) -> str:
    """Where SpeculativeConfig lives in that vLLM release: vllm/config.py before 0.10.1, the config
    package's __init__.py in 0.10.x, vllm/config/speculative.py from 0.11.0 (read from the wheels)."""
    parsed = _parse(version)
    if parsed is not None and parsed < Version("0.10.1"):
        return "vllm/config.py"
    if parsed is not None and parsed < Version("0.11.0"):
        return "vllm/config/__init__.py"
    return "vllm/config/speculative.py"


@dataclass(frozen=True)
class RangedFact:
    """One engine behaviour over a PEP 440 range of releases, with the source that shows it."""

    engine: str
    versions: SpecifierSet
    value: Any
    evidence: str

    def covers(self, engine: str, version: Version) -> bool:
        return engine == self.engine and self.versions.contains(version, prereleases=True)


def _fact(engine: str, versions: str, value: Any, evidence: str) -> RangedFact:
    return RangedFact(engine, SpecifierSet(versions), value, evidence)


# --- the aux-layer defaults -------------------------------------------------------------------------
def default_aux_layers(num_layers: int) -> list[int]:
    """The target layers both engines capture when the drafter names none: (2, L//2, L-3).

    vLLM: ``get_eagle3_default_aux_hidden_state_layers`` in ``model_executor/models/interfaces.py``;
    SGLang: ``set_eagle3_layers_to_capture`` in ``srt/models/llama.py`` (the same three indices).
    """
    return [2, num_layers // 2, num_layers - 3]


DEFAULT_AUX_EVIDENCE = {
    "vllm": source_url("vllm", "0.33.0", "vllm/model_executor/models/interfaces.py"),
    "sglang": source_url("sglang", "0.5.23", "sglang/srt/models/llama.py"),
}

# --- how many aux hidden states fc is built for ----------------------------------------------------
# "3": fc is built for exactly three aux layers; "aux_layer_ids": for ``num_aux_hidden_states`` or the
# length of ``eagle_config.eagle_aux_hidden_state_layer_ids`` (3 when neither is set).
FC_INPUTS = (
    _fact("vllm", "<0.22.0", "3", source_url("vllm", "0.21.0", "vllm/model_executor/models/llama_eagle3.py")),
    _fact(
        "vllm",
        ">=0.22.0,<=0.34.0",
        "aux_layer_ids",
        source_url("vllm", "0.22.0", "vllm/model_executor/models/llama_eagle3.py"),
    ),
    _fact("sglang", "<0.5.12", "3", source_url("sglang", "0.5.11", "sglang/srt/models/llama_eagle3.py")),
    _fact(
        "sglang",
        ">=0.5.12,<=0.5.23",
        "aux_layer_ids",
        source_url("sglang", "0.5.12", "sglang/srt/models/llama_eagle3.py"),
    ),
)

# --- the decoder-layer key prefixes the Llama EAGLE-3 loader accepts -------------------------------
LAYER_PREFIXES = (
    # vLLM's WeightsMapper maps midlayer. onto layers.0. in every release with EAGLE-3.
    _fact(
        "vllm",
        ">=0.8.5,<=0.34.0",
        ("layers.0", "midlayer"),
        source_url("vllm", "0.8.5", "vllm/model_executor/models/llama_eagle3.py"),
    ),
    # SGLang's drafter names its layer model.midlayer and skips unknown names ...
    _fact(
        "sglang", ">=0.4.5,<0.5.12", ("midlayer",), source_url("sglang", "0.5.11", "sglang/srt/models/llama_eagle3.py")
    ),
    # ... until 0.5.12 names it layers.0 and maps legacy midlayer names onto it.
    _fact(
        "sglang",
        ">=0.5.12,<=0.5.23",
        ("layers.0", "midlayer"),
        source_url("sglang", "0.5.12", "sglang/srt/models/llama_eagle3.py"),
    ),
)

# --- what the draft's head is when config.json says tie_word_embeddings ----------------------------
# "embed_tokens": the engine uses embed_tokens ([vocab_size, hidden]) as the head, whatever
# draft_vocab_size says; "lm_head": the engine always builds its own [draft_vocab_size, hidden] head.
TIED_HEAD = (
    _fact(
        "vllm",
        ">=0.8.5,<=0.34.0",
        "lm_head",
        source_url("vllm", "0.33.0", "vllm/model_executor/models/llama_eagle3.py"),
    ),
    _fact(
        "sglang",
        ">=0.4.5,<=0.5.23",
        "embed_tokens",
        source_url("sglang", "0.5.23", "sglang/srt/models/llama_eagle3.py"),
    ),
)

# --- a draft max_position_embeddings below the serving context -------------------------------------
# "overflow": the draft's rotary cache is sized by its own max_position_embeddings while it runs at
# the target's positions; "raised": the engine raises the draft's value to max_model_len itself;
# "refused": the engine refuses to start unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1.
DRAFT_POSITIONS = (
    _fact("vllm", "<0.27.0", "overflow", "https://github.com/vllm-project/vllm/issues/48894"),
    _fact("vllm", ">=0.27.0,<=0.34.0", "raised", source_url("vllm", "0.27.0", "vllm/config/speculative.py")),
    # SGLang passes the target's context length to the draft's ModelConfig (eagle_worker.py); with
    # the overwrite switch on by default (0.4.x) the draft runs past its rotary cache ...
    _fact("sglang", ">=0.4.4,<0.5.1", "overflow", source_url("sglang", "0.4.10", "sglang/srt/configs/model_config.py")),
    # ... from 0.5.1 the switch defaults off and a longer target context is a ValueError at start.
    _fact(
        "sglang", ">=0.5.1,<=0.5.23", "refused", source_url("sglang", "0.5.23", "sglang/srt/configs/model_config.py")
    ),
)

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


# --- SGLang: targets whose missing draft path SGLang fills with the target's own -------------------
# With no --speculative-draft-model-path the draft worker's ModelConfig falls back to the target's own
# path (configs/model_config.py, since 0.4.7); _config_draft_model then turns these target classes into
# their MTP/NextN draft classes (the speculative hook also fills the path for its own list). Any other
# target is loaded as its own draft and crashes. Read from every release 0.4.3..0.5.23.
_SELF_DRAFT_SRC = "sglang/srt/configs/model_config.py"
SELF_DRAFTING = (
    _fact(
        "sglang",
        "<0.4.7",
        (),
        source_url("sglang", "0.4.3", _SELF_DRAFT_SRC),
    ),
    _fact(
        "sglang",
        ">=0.4.7,<0.4.10",
        ("DeepseekV3ForCausalLM", "MiMoForCausalLM"),
        source_url("sglang", "0.4.7", _SELF_DRAFT_SRC),
    ),
    _fact(
        "sglang",
        ">=0.4.10,<0.5.1",
        ("DeepseekV3ForCausalLM", "Glm4MoeForCausalLM", "MiMoForCausalLM"),
        source_url("sglang", "0.4.10", _SELF_DRAFT_SRC),
    ),
    _fact(
        "sglang",
        ">=0.5.1,<0.5.2",
        ("DeepseekV3ForCausalLM", "Ernie4_5_MoeForCausalLM", "Glm4MoeForCausalLM", "MiMoForCausalLM"),
        source_url("sglang", "0.5.1", _SELF_DRAFT_SRC),
    ),
    _fact(
        "sglang",
        ">=0.5.2,<0.5.3",
        (
            "DeepseekV3ForCausalLM",
            "Ernie4_5_MoeForCausalLM",
            "Glm4MoeForCausalLM",
            "LongcatFlashForCausalLM",
            "MiMoForCausalLM",
            "Qwen3NextForCausalLM",
        ),
        source_url("sglang", "0.5.2", _SELF_DRAFT_SRC),
    ),
    _fact(
        "sglang",
        ">=0.5.3,<0.5.7",
        (
            "BailingMoeForCausalLM",
            "BailingMoeV2ForCausalLM",
            "DeepseekV32ForCausalLM",
            "DeepseekV3ForCausalLM",
            "Ernie4_5_MoeForCausalLM",
            "Glm4MoeForCausalLM",
            "LongcatFlashForCausalLM",
            "MiMoForCausalLM",
            "Qwen3NextForCausalLM",
        ),
        source_url("sglang", "0.5.3", _SELF_DRAFT_SRC),
    ),
    _fact(
        "sglang",
        ">=0.5.7,<0.5.8",
        (
            "BailingMoeForCausalLM",
            "BailingMoeV2ForCausalLM",
            "DeepseekV32ForCausalLM",
            "DeepseekV3ForCausalLM",
            "Ernie4_5_MoeForCausalLM",
            "Glm4MoeForCausalLM",
            "LongcatFlashForCausalLM",
            "MiMoForCausalLM",
            "MiMoV2FlashForCausalLM",
            "MistralLarge3ForCausalLM",
            "PixtralForConditionalGeneration",
            "Qwen3NextForCausalLM",
        ),
        source_url("sglang", "0.5.7", _SELF_DRAFT_SRC),
    ),
    _fact(
        "sglang",
        ">=0.5.8,<0.5.9",
        (
            "BailingMoeForCausalLM",
            "BailingMoeV2ForCausalLM",
            "DeepseekV32ForCausalLM",
            "DeepseekV3ForCausalLM",
            "Ernie4_5_MoeForCausalLM",
            "Glm4MoeForCausalLM",
            "Glm4MoeLiteForCausalLM",
            "LongcatFlashForCausalLM",
            "MiMoForCausalLM",
            "MiMoV2FlashForCausalLM",
            "MistralLarge3ForCausalLM",
            "NemotronHForCausalLM",
            "PixtralForConditionalGeneration",
            "Qwen3NextForCausalLM",
        ),
        source_url("sglang", "0.5.8", _SELF_DRAFT_SRC),
    ),
    _fact(
        "sglang",
        ">=0.5.9,<0.5.11",
        (
            "BailingMoeForCausalLM",
            "BailingMoeV2ForCausalLM",
            "BailingMoeV2_5ForCausalLM",
            "DeepseekV32ForCausalLM",
            "DeepseekV3ForCausalLM",
            "Ernie4_5_MoeForCausalLM",
            "ExaoneMoEForCausalLM",
            "Glm4MoeForCausalLM",
            "Glm4MoeLiteForCausalLM",
            "GlmMoeDsaForCausalLM",
            "GlmOcrForConditionalGeneration",
            "LongcatFlashForCausalLM",
            "MiMoForCausalLM",
            "MiMoV2FlashForCausalLM",
            "MistralLarge3ForCausalLM",
            "NemotronHForCausalLM",
            "PixtralForConditionalGeneration",
            "Qwen3NextForCausalLM",
            "Qwen3_5ForConditionalGeneration",
            "Qwen3_5MoeForConditionalGeneration",
            "Step3p5ForCausalLM",
        ),
        source_url("sglang", "0.5.9", _SELF_DRAFT_SRC),
    ),
    _fact(
        "sglang",
        ">=0.5.11,<0.5.12",
        (
            "BailingMoeForCausalLM",
            "BailingMoeV2ForCausalLM",
            "BailingMoeV2_5ForCausalLM",
            "DeepseekV32ForCausalLM",
            "DeepseekV3ForCausalLM",
            "Ernie4_5_MoeForCausalLM",
            "ExaoneMoEForCausalLM",
            "Glm4MoeForCausalLM",
            "Glm4MoeLiteForCausalLM",
            "GlmMoeDsaForCausalLM",
            "GlmOcrForConditionalGeneration",
            "HYV3ForCausalLM",
            "LongcatFlashForCausalLM",
            "MiMoForCausalLM",
            "MiMoV2FlashForCausalLM",
            "MiMoV2ForCausalLM",
            "MistralLarge3ForCausalLM",
            "NemotronHForCausalLM",
            "PixtralForConditionalGeneration",
            "Qwen3NextForCausalLM",
            "Qwen3_5ForConditionalGeneration",
            "Qwen3_5MoeForConditionalGeneration",
            "Step3p5ForCausalLM",
        ),
        source_url("sglang", "0.5.11", _SELF_DRAFT_SRC),
    ),
    _fact(
        "sglang",
        ">=0.5.12,<0.5.13",
        (
            "BailingMoeForCausalLM",
            "BailingMoeV2ForCausalLM",
            "BailingMoeV2_5ForCausalLM",
            "DeepseekV32ForCausalLM",
            "DeepseekV3ForCausalLM",
            "DeepseekV4ForCausalLM",
            "Ernie4_5_MoeForCausalLM",
            "ExaoneMoEForCausalLM",
            "Glm4MoeForCausalLM",
            "Glm4MoeLiteForCausalLM",
            "GlmMoeDsaForCausalLM",
            "GlmOcrForConditionalGeneration",
            "HYV3ForCausalLM",
            "InternS2PreviewForConditionalGeneration",
            "LongcatFlashForCausalLM",
            "MiMoForCausalLM",
            "MiMoV2FlashForCausalLM",
            "MiMoV2ForCausalLM",
            "MistralLarge3ForCausalLM",
            "NemotronHForCausalLM",
            "PixtralForConditionalGeneration",
            "Qwen3NextForCausalLM",
            "Qwen3_5ForConditionalGeneration",
            "Qwen3_5MoeForConditionalGeneration",
            "Step3p5ForCausalLM",
        ),
        source_url("sglang", "0.5.12", _SELF_DRAFT_SRC),
    ),
    _fact(
        "sglang",
        ">=0.5.13,<0.5.16",
        (
            "BailingMoeForCausalLM",
            "BailingMoeV2ForCausalLM",
            "BailingMoeV2_5ForCausalLM",
            "DeepseekV32ForCausalLM",
            "DeepseekV3ForCausalLM",
            "DeepseekV4ForCausalLM",
            "Ernie4_5_MoeForCausalLM",
            "ExaoneMoEForCausalLM",
            "Glm4MoeForCausalLM",
            "Glm4MoeLiteForCausalLM",
            "GlmMoeDsaForCausalLM",
            "GlmOcrForConditionalGeneration",
            "HYV3ForCausalLM",
            "InternS2PreviewForConditionalGeneration",
            "LongcatFlashForCausalLM",
            "MiMoForCausalLM",
            "MiMoV2FlashForCausalLM",
            "MiMoV2ForCausalLM",
            "MistralLarge3ForCausalLM",
            "NemotronHForCausalLM",
            "NemotronHPuzzleForCausalLM",
            "PixtralForConditionalGeneration",
            "Qwen3MoeForCausalLM",
            "Qwen3NextForCausalLM",
            "Qwen3_5ForConditionalGeneration",
            "Qwen3_5MoeForConditionalGeneration",
            "Step3p5ForCausalLM",
            "Step3p7ForConditionalGeneration",
        ),
        source_url("sglang", "0.5.13", _SELF_DRAFT_SRC),
    ),
    _fact(
        "sglang",
        ">=0.5.16,<0.5.17",
        (
            "BailingMoeForCausalLM",
            "BailingMoeV2ForCausalLM",
            "BailingMoeV2_5ForCausalLM",
            "DeepseekV32ForCausalLM",
            "DeepseekV3ForCausalLM",
            "DeepseekV4ForCausalLM",
            "Ernie4_5_MoeForCausalLM",
            "ExaoneMoEForCausalLM",
            "Glm4MoeForCausalLM",
            "Glm4MoeLiteForCausalLM",
            "GlmMoeDsaForCausalLM",
            "GlmOcrForConditionalGeneration",
            "HYV3ForCausalLM",
            "InklingForConditionalGeneration",
            "InternS2PreviewForConditionalGeneration",
            "LongcatFlashForCausalLM",
            "MiMoForCausalLM",
            "MiMoV2FlashForCausalLM",
            "MiMoV2ForCausalLM",
            "MistralLarge3ForCausalLM",
            "NemotronHForCausalLM",
            "NemotronHPuzzleForCausalLM",
            "PixtralForConditionalGeneration",
            "Qwen3MoeForCausalLM",
            "Qwen3NextForCausalLM",
            "Qwen3_5ForConditionalGeneration",
            "Qwen3_5MoeForConditionalGeneration",
            "Step3p5ForCausalLM",
            "Step3p7ForConditionalGeneration",
        ),
        source_url("sglang", "0.5.16", _SELF_DRAFT_SRC),
    ),
    _fact(
        "sglang",
        ">=0.5.17,<0.5.18",
        (
            "BailingMoeForCausalLM",
            "BailingMoeV2ForCausalLM",
            "BailingMoeV2_5ForCausalLM",
            "DeepseekV32ForCausalLM",
            "DeepseekV3ForCausalLM",
            "DeepseekV4ForCausalLM",
            "Ernie4_5_MoeForCausalLM",
            "ExaoneMoEForCausalLM",
            "Glm4MoeForCausalLM",
            "Glm4MoeLiteForCausalLM",
            "GlmMoeDsaForCausalLM",
            "GlmOcrForConditionalGeneration",
            "HYV3ForCausalLM",
            "InklingForConditionalGeneration",
            "InternS2PreviewForConditionalGeneration",
            "LongcatFlashForCausalLM",
            "MiMoForCausalLM",
            "MiMoV2FlashForCausalLM",
            "MiMoV2ForCausalLM",
            "MistralLarge3ForCausalLM",
            "NemotronHForCausalLM",
            "NemotronHPuzzleForCausalLM",
            "PixtralForConditionalGeneration",
            "Qwen3MoeForCausalLM",
            "Qwen3NextForCausalLM",
            "Qwen3_5ForCausalLM",
            "Qwen3_5ForConditionalGeneration",
            "Qwen3_5MoeForCausalLM",
            "Qwen3_5MoeForConditionalGeneration",
            "Step3p5ForCausalLM",
            "Step3p7ForConditionalGeneration",
        ),
        source_url("sglang", "0.5.17", _SELF_DRAFT_SRC),
    ),
    _fact(
        "sglang",
        ">=0.5.18,<0.5.19",
        (
            "BailingMoeForCausalLM",
            "BailingMoeV2ForCausalLM",
            "BailingMoeV2_5ForCausalLM",
            "DeepseekV32ForCausalLM",
            "DeepseekV3ForCausalLM",
            "DeepseekV4ForCausalLM",
            "Ernie4_5_MoeForCausalLM",
            "ExaoneMoEForCausalLM",
            "Glm4MoeForCausalLM",
            "Glm4MoeLiteForCausalLM",
            "GlmMoeDsaForCausalLM",
            "GlmOcrForConditionalGeneration",
            "HYV3ForCausalLM",
            "InklingForConditionalGeneration",
            "InternS2MobiusForConditionalGeneration",
            "InternS2PreviewForConditionalGeneration",
            "LongcatFlashForCausalLM",
            "MiMoForCausalLM",
            "MiMoV2FlashForCausalLM",
            "MiMoV2ForCausalLM",
            "MistralLarge3ForCausalLM",
            "NemotronHForCausalLM",
            "NemotronHPuzzleForCausalLM",
            "PixtralForConditionalGeneration",
            "Qwen3MoeForCausalLM",
            "Qwen3NextForCausalLM",
            "Qwen3_5ForCausalLM",
            "Qwen3_5ForConditionalGeneration",
            "Qwen3_5MoeForCausalLM",
            "Qwen3_5MoeForConditionalGeneration",
            "Step3p5ForCausalLM",
            "Step3p7ForConditionalGeneration",
        ),
        source_url("sglang", "0.5.18", _SELF_DRAFT_SRC),
    ),
    _fact(
        "sglang",
        ">=0.5.19,<0.5.20",
        (
            "BailingMoeForCausalLM",
            "BailingMoeV2ForCausalLM",
            "BailingMoeV2_5ForCausalLM",
            "BailingMoeV3ForCausalLM",
            "DeepseekV32ForCausalLM",
            "DeepseekV3ForCausalLM",
            "DeepseekV4ForCausalLM",
            "Ernie4_5_MoeForCausalLM",
            "ExaoneMoEForCausalLM",
            "Glm4MoeForCausalLM",
            "Glm4MoeLiteForCausalLM",
            "GlmMoeDsaForCausalLM",
            "GlmOcrForConditionalGeneration",
            "HYV3ForCausalLM",
            "InklingForConditionalGeneration",
            "InternS2MobiusForConditionalGeneration",
            "InternS2PreviewForConditionalGeneration",
            "LongcatFlashForCausalLM",
            "MiMoForCausalLM",
            "MiMoV2FlashForCausalLM",
            "MiMoV2ForCausalLM",
            "MistralLarge3ForCausalLM",
            "NemotronHForCausalLM",
            "NemotronHPuzzleForCausalLM",
            "PixtralForConditionalGeneration",
            "Qwen3MoeForCausalLM",
            "Qwen3NextForCausalLM",
            "Qwen3_5ForCausalLM",
            "Qwen3_5ForConditionalGeneration",
            "Qwen3_5MoeForCausalLM",
            "Qwen3_5MoeForConditionalGeneration",
            "Step3p5ForCausalLM",
            "Step3p7ForConditionalGeneration",
        ),
        source_url("sglang", "0.5.19", _SELF_DRAFT_SRC),
    ),
    _fact(
        "sglang",
        ">=0.5.20,<0.5.21",
        (
            "BailingMoeForCausalLM",
            "BailingMoeV2ForCausalLM",
            "BailingMoeV2_5ForCausalLM",
            "BailingMoeV3ForCausalLM",
            "DeepseekV32ForCausalLM",
            "DeepseekV3ForCausalLM",
            "DeepseekV4ForCausalLM",
            "Ernie4_5_MoeForCausalLM",
            "ExaoneMoEForCausalLM",
            "Glm4MoeForCausalLM",
            "Glm4MoeLiteForCausalLM",
            "Glm5NextForConditionalGeneration",
            "GlmMoeDsaForCausalLM",
            "GlmOcrForConditionalGeneration",
            "HYV3ForCausalLM",
            "HYV4ForCausalLM",
            "InklingForConditionalGeneration",
            "InternS2MobiusForConditionalGeneration",
            "InternS2PreviewForConditionalGeneration",
            "LongcatFlashForCausalLM",
            "MiMoForCausalLM",
            "MiMoV2FlashForCausalLM",
            "MiMoV2ForCausalLM",
            "MistralLarge3ForCausalLM",
            "NemotronHForCausalLM",
            "NemotronHPuzzleForCausalLM",
            "NemotronH_Omni_Reasoning_V3",
            "PixtralForConditionalGeneration",
            "Qwen3MoeForCausalLM",
            "Qwen3NextForCausalLM",
            "Qwen3_5ForCausalLM",
            "Qwen3_5ForConditionalGeneration",
            "Qwen3_5MoeForCausalLM",
            "Qwen3_5MoeForConditionalGeneration",
            "Qwen4ExpForConditionalGeneration",
            "Step3p5ForCausalLM",
            "Step3p7ForConditionalGeneration",
        ),
        source_url("sglang", "0.5.20", _SELF_DRAFT_SRC),
    ),
    _fact(
        "sglang",
        ">=0.5.21,<0.5.22",
        (
            "BailingMoeForCausalLM",
            "BailingMoeV2ForCausalLM",
            "BailingMoeV2_5ForCausalLM",
            "BailingMoeV3ForCausalLM",
            "DeepseekV32ForCausalLM",
            "DeepseekV3ForCausalLM",
            "DeepseekV4ForCausalLM",
            "Ernie4_5_MoeForCausalLM",
            "ExaoneMoEForCausalLM",
            "GigaChat35ForCausalLM",
            "Glm4MoeForCausalLM",
            "Glm4MoeLiteForCausalLM",
            "Glm5NextForConditionalGeneration",
            "GlmMoeDsaForCausalLM",
            "GlmOcrForConditionalGeneration",
            "HYV3ForCausalLM",
            "HYV4ForCausalLM",
            "InklingForConditionalGeneration",
            "InternS2MobiusForConditionalGeneration",
            "InternS2PreviewForConditionalGeneration",
            "LongcatFlashForCausalLM",
            "MiMoForCausalLM",
            "MiMoV2FlashForCausalLM",
            "MiMoV2ForCausalLM",
            "MistralLarge3ForCausalLM",
            "NemotronHForCausalLM",
            "NemotronHPuzzleForCausalLM",
            "NemotronH_Omni_Reasoning_V3",
            "PixtralForConditionalGeneration",
            "Qwen3MoeForCausalLM",
            "Qwen3NextForCausalLM",
            "Qwen3_5ForCausalLM",
            "Qwen3_5ForConditionalGeneration",
            "Qwen3_5MoeForCausalLM",
            "Qwen3_5MoeForConditionalGeneration",
            "Qwen4ExpForConditionalGeneration",
            "Step3p5ForCausalLM",
            "Step3p7ForConditionalGeneration",
        ),
        source_url("sglang", "0.5.21", _SELF_DRAFT_SRC),
    ),
    _fact(
        "sglang",
        ">=0.5.22,<=0.5.23",
        (
            "BailingMoeForCausalLM",
            "BailingMoeV2ForCausalLM",
            "BailingMoeV2_5ForCausalLM",
            "BailingMoeV3ForCausalLM",
            "DeepseekV32ForCausalLM",
            "DeepseekV3ForCausalLM",
            "DeepseekV4ForCausalLM",
            "Ernie4_5_MoeForCausalLM",
            "ExaoneMoEForCausalLM",
            "ExaoneMoeForCausalLM",
            "GigaChat35ForCausalLM",
            "Glm4MoeForCausalLM",
            "Glm4MoeLiteForCausalLM",
            "Glm5NextForConditionalGeneration",
            "GlmMoeDsaForCausalLM",
            "GlmOcrForConditionalGeneration",
            "HYV3ForCausalLM",
            "HYV4ForCausalLM",
            "InklingForConditionalGeneration",
            "InternS2MobiusForConditionalGeneration",
            "InternS2PreviewForConditionalGeneration",
            "LongcatFlashForCausalLM",
            "MiMoForCausalLM",
            "MiMoV2FlashForCausalLM",
            "MiMoV2ForCausalLM",
            "MistralLarge3ForCausalLM",
            "NemotronHForCausalLM",
            "NemotronHPuzzleForCausalLM",
            "NemotronH_Omni_Reasoning_V3",
            "PixtralForConditionalGeneration",
            "Qwen3MoeForCausalLM",
            "Qwen3NextForCausalLM",
            "Qwen3_5ForCausalLM",
            "Qwen3_5ForConditionalGeneration",
            "Qwen3_5MoeForCausalLM",
            "Qwen3_5MoeForConditionalGeneration",
            "Qwen4ExpForConditionalGeneration",
            "Step3p5ForCausalLM",
            "Step3p7ForConditionalGeneration",
        ),
        source_url("sglang", "0.5.22", _SELF_DRAFT_SRC),
    ),
)

# --- SGLang: per algorithm, the flags a release fills itself ---------------------------------------
# NGRAM (0.5.3+): topk from --speculative-ngram-max-bfs-breadth, num-draft-tokens 12, num-steps
# derived; the EAGLE family chooses all three itself only when none is given (no fact needed).
AUTO_RESOLVED = (
    _fact(
        "sglang",
        ">=0.5.3,<=0.5.23",
        {
            "NGRAM": (
                "--speculative-eagle-topk",
                "--speculative-num-draft-tokens",
                "--speculative-num-steps",
            )
        },
        source_url("sglang", "0.5.23", "sglang/srt/arg_groups/speculative_hook.py"),
    ),
)


def _parse(version: str) -> Version | None:
    try:
        return Version(version)
    except InvalidVersion:
        return None


@functools.lru_cache(maxsize=64)
def snapshot_field(engine: str, version: str, name: str) -> Any:
    """Field ``name`` of the shipped snapshot of exactly ``engine==version``; None when either is absent."""
    from specprobe.findings import SpecprobeError
    from specprobe.schema.store import load_snapshot

    try:
        schema = load_snapshot(engine, version)
    except SpecprobeError:
        return None
    if schema is None or (schema.version != version and _parse(schema.version) != _parse(version)):
        return None
    value = getattr(schema, name, None)
    return value if value not in (None, [], {}) else None


@dataclass(frozen=True)
class Answer:
    """A fact about one engine version and where it was read (the snapshot, or a source link)."""

    value: Any
    evidence: str


def lookup(engine: str, version: str, field_name: str, facts: Sequence[RangedFact]) -> Answer | None:
    """The snapshot's ``field_name`` when it has one, else the ranged fact covering the version."""
    from_snapshot = snapshot_field(engine, version, field_name)
    if from_snapshot is not None:
        return Answer(from_snapshot, f"specprobe/data/schemas/{engine}/{version}.json")
    return covering(engine, version, facts)


def covering(engine: str, version: str, facts: Sequence[RangedFact]) -> Answer | None:
    """The ranged fact covering ``engine==version``, ignoring snapshots."""
    parsed = _parse(version)
    if parsed is None:
        return None
    for fact in facts:
        if fact.covers(engine, parsed):
            return Answer(fact.value, fact.evidence)
    return None


def fc_inputs(engine: str, version: str) -> Answer | None:
    return lookup(engine, version, "eagle3_fc_inputs", FC_INPUTS)


def layer_prefixes(engine: str, version: str) -> Answer | None:
    """The decoder-layer key prefixes (``layers.0``, ``midlayer``; no trailing dot) the loader accepts."""
    answer = lookup(engine, version, "eagle3_layer_prefixes", LAYER_PREFIXES)
    if answer is None:
        return None
    values = answer.value if isinstance(answer.value, list | tuple) else [answer.value]
    return Answer(tuple(str(v).rstrip(".") for v in values), answer.evidence)


def tied_head(engine: str, version: str) -> Answer | None:
    return lookup(engine, version, "eagle3_tied_head", TIED_HEAD)


def draft_positions(engine: str, version: str) -> Answer | None:
    return lookup(engine, version, "draft_max_position", DRAFT_POSITIONS)


def self_drafting_architectures(engine: str, version: str) -> Answer | None:
    """SGLang targets whose missing draft path is filled with their own. A snapshot lists what the
    resolution code fills explicitly; the facts add the target classes model_config.py turns into
    their MTP draft class (the draft falls back to the target's path), so both are joined."""
    if engine != "sglang":
        return None
    fact = covering(engine, version, SELF_DRAFTING)
    listed = snapshot_field(engine, version, "self_drafting_architectures")
    if listed is None:
        return fact
    joined = tuple(sorted({*(str(a) for a in listed), *(fact.value if fact else ())}))
    return Answer(joined, fact.evidence if fact else f"specprobe/data/schemas/{engine}/{version}.json")


def auto_resolved_flags(engine: str, version: str, algorithm: str) -> tuple[str, ...]:
    """The flags ``engine==version`` fills itself for ``algorithm`` (upper-case SGLang name)."""
    if engine != "sglang":
        return ()
    answer = lookup(engine, version, "auto_resolved_flags", AUTO_RESOLVED)
    if answer is None or not isinstance(answer.value, dict):
        return ()
    flags = answer.value.get(algorithm.upper()) or ()
    return tuple("--" + str(f).removeprefix("--").replace("_", "-") for f in flags)


def model_architectures(engine: str, version: str) -> frozenset[str] | None:
    """Every architecture the engine version's model registry knows; None when the snapshot lacks it."""
    value = snapshot_field(engine, version, "model_architectures")
    return frozenset(str(v) for v in value) if isinstance(value, list | tuple) else None


# Target (non-draft) classes registered by every release checked: SGLang 0.4.5..0.5.23 (EntryClass of
# srt/models/*.py) and vLLM 0.8.5..0.34.0 (_TEXT_GENERATION_MODELS of registry.py). Used only when the
# snapshot of the version lacks model_architectures; a class outside both is "unknown", never "known".
_COMMON_TARGETS = [
    "Cohere2ForCausalLM",
    "CohereForCausalLM",
    "DbrxForCausalLM",
    "DeepseekForCausalLM",
    "DeepseekV2ForCausalLM",
    "DeepseekV3ForCausalLM",
    "ExaoneForCausalLM",
    "GPT2LMHeadModel",
    "Gemma2ForCausalLM",
    "Gemma3ForCausalLM",
    "GraniteForCausalLM",
    "InternLM2ForCausalLM",
    "InternLM3ForCausalLM",
    "LlamaForCausalLM",
    "MiniCPM3ForCausalLM",
    "MiniCPMForCausalLM",
    "MistralForCausalLM",
    "MixtralForCausalLM",
    "Phi3ForCausalLM",
    "Qwen2ForCausalLM",
    "Qwen2MoeForCausalLM",
]
_VLLM_TARGETS = [
    "BloomForCausalLM",
    "Cohere2ForCausalLM",
    "CohereForCausalLM",
    "DbrxForCausalLM",
    "DeciLMForCausalLM",
    "DeepseekForCausalLM",
    "DeepseekV2ForCausalLM",
    "DeepseekV3ForCausalLM",
    "ExaoneForCausalLM",
    "FalconForCausalLM",
    "GPTBigCodeForCausalLM",
    "GPTJForCausalLM",
    "GPTNeoXForCausalLM",
    "Gemma2ForCausalLM",
    "Gemma3ForCausalLM",
    "GemmaForCausalLM",
    "Glm4ForCausalLM",
    "GlmForCausalLM",
    "GraniteForCausalLM",
    "GraniteMoeForCausalLM",
    "InternLM2ForCausalLM",
    "InternLM3ForCausalLM",
    "JambaForCausalLM",
    "LlamaForCausalLM",
    "MiniCPM3ForCausalLM",
    "MiniCPMForCausalLM",
    "MistralForCausalLM",
    "MixtralForCausalLM",
    "NemotronForCausalLM",
    "OPTForCausalLM",
    "Olmo2ForCausalLM",
    "OlmoForCausalLM",
    "OlmoeForCausalLM",
    "Phi3ForCausalLM",
    "PhiForCausalLM",
    "PhiMoEForCausalLM",
    "Qwen2ForCausalLM",
    "Qwen2MoeForCausalLM",
    "Qwen3ForCausalLM",
    "Qwen3MoeForCausalLM",
    "StableLmForCausalLM",
    "Starcoder2ForCausalLM",
]
KNOWN_TARGETS = (
    _fact(
        "sglang",
        ">=0.4.5,<=0.5.23",
        frozenset((*_COMMON_TARGETS, "BaichuanForCausalLM", "Gemma3ForConditionalGeneration", "GemmaForCausalLM")),
        source_url("sglang", "0.4.5", "sglang/srt/models/registry.py"),
    ),
    _fact(
        "vllm",
        ">=0.8.5,<=0.34.0",
        frozenset(_VLLM_TARGETS),
        source_url("vllm", "0.8.5", "vllm/model_executor/models/registry.py"),
    ),
)


def known_model_classes(engine: str, version: str) -> Answer | None:
    """Classes the engine version's model registry knows: the snapshot's full list, else the classes
    registered in every release checked (a subset: absence from it proves nothing)."""
    full = model_architectures(engine, version)
    if full is not None:
        return Answer(full, f"specprobe/data/schemas/{engine}/{version}.json")
    from specprobe.compat.registry_facts import registered_targets

    read = registered_targets(engine, version)
    return Answer(read[0], read[1]) if read is not None else covering(engine, version, KNOWN_TARGETS)
