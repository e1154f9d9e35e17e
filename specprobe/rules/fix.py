"""Fix family: the changes `specprobe fix` makes to a drafter for one engine release, what it refuses,
and the proof it gives.

Each change is reported as a finding of one of these rules (info: a change made), with the value
before and after and the engine source of that release that makes the change necessary. What
cannot be fixed is an error; so is a copy that fails its own proof.
"""

from __future__ import annotations

from specprobe.compat.engine_facts import source_url
from specprobe.findings import Severity
from specprobe.rules import rule

FAMILY = "fix"
_VLLM_EAGLE3 = source_url("vllm", "0.33.0", "vllm/model_executor/models/llama_eagle3.py")
_VLLM_SPECULATORS = source_url("vllm", "0.33.0", "vllm/transformers_utils/configs/speculators/algos.py")
_VLLM_EAGLE_CONFIG = source_url("vllm", "0.33.0", "vllm/transformers_utils/configs/eagle.py")
_SGLANG_EAGLE3 = source_url("sglang", "0.5.23", "sglang/srt/models/llama_eagle3.py")
_EAGLE_D2T = "https://github.com/SafeAILab/EAGLE/issues/222"
_EAGLE_CNETS = "https://github.com/SafeAILab/EAGLE/blob/bfeb532e689a3db4e1a9081c7c83219c9385e84a/eagle/model/cnets.py"

ARCHITECTURE = rule(
    "FIX-ARCHITECTURE",
    FAMILY,
    Severity.INFO,
    "architectures rewritten to an EAGLE-3 draft class the engine release registers",
    _VLLM_EAGLE_CONFIG,
    source_url("sglang", "0.5.23", "sglang/srt/configs/model_config.py"),
)
TENSOR_NAMES = rule(
    "FIX-TENSOR-NAMES",
    FAMILY,
    Severity.INFO,
    "decoder-layer tensors renamed to the namespace the engine release loads (midlayer.* / layers.0.*)",
    _VLLM_EAGLE3,
    source_url("sglang", "0.5.11", "sglang/srt/models/llama_eagle3.py"),
    _SGLANG_EAGLE3,
)
FORMAT = rule(
    "FIX-FORMAT",
    FAMILY,
    Severity.INFO,
    "the drafter converted between EAGLE-3 checkpoint formats (EAGLE release, SpecForge, speculators, vLLM-native)",
    _VLLM_SPECULATORS,
    _VLLM_EAGLE3,
)
AUX_IDS = rule(
    "FIX-AUX-IDS",
    FAMILY,
    Severity.INFO,
    "auxiliary-layer ids written where the engine release reads them (top level, eagle_config, "
    "num_aux_hidden_states)",
    _VLLM_EAGLE3,
    _VLLM_SPECULATORS,
    "https://github.com/vllm-project/vllm/issues/54526",
)
DRAFT_VOCAB = rule(
    "FIX-DRAFT-VOCAB",
    FAMILY,
    Severity.INFO,
    "draft_vocab_size / vocab_size set from lm_head and the target",
    _VLLM_EAGLE3,
)
VOCAB_MAP = rule(
    "FIX-VOCAB-MAP",
    FAMILY,
    Severity.INFO,
    "d2t / t2d derived from one another (offsets, dtype int64 / bool)",
    _VLLM_EAGLE3,
    _SGLANG_EAGLE3,
    _EAGLE_D2T,
)
TARGET_HIDDEN = rule(
    "FIX-TARGET-HIDDEN",
    FAMILY,
    Severity.INFO,
    "target_hidden_size set to the target's hidden size",
    _VLLM_EAGLE3,
)
MAX_POSITION = rule(
    "FIX-MAX-POSITION",
    FAMILY,
    Severity.INFO,
    "max_position_embeddings raised to the target's context",
    "https://github.com/vllm-project/vllm/issues/48894",
    source_url("sglang", "0.5.23", "sglang/srt/configs/model_config.py"),
)
DROPPED = rule(
    "FIX-DROPPED",
    FAMILY,
    Severity.INFO,
    "tensors the engine release never uses dropped (an embedding identical to the target's, duplicate copies)",
    _VLLM_EAGLE3,
)
FROM_TARGET = rule(
    "FIX-FROM-TARGET",
    FAMILY,
    Severity.INFO,
    "a tensor the release needs, absent from the drafter, taken from the target's safetensors",
    _SGLANG_EAGLE3,
    "https://github.com/sgl-project/sglang/issues/27829",
)
FILES = rule(
    "FIX-FILES",
    FAMILY,
    Severity.INFO,
    "files beside the weights copied, or left out (code and pickles are never copied)",
    "https://huggingface.co/docs/safetensors/v0.4.5/index",
)
UNFIXABLE = rule(
    "FIX-UNFIXABLE",
    FAMILY,
    Severity.ERROR,
    "the drafter cannot be made to work on this engine release by rewriting its files; what would work is named",
    "https://github.com/vllm-project/vllm/issues/31254",
)
MISSING_INFO = rule(
    "FIX-MISSING-INFO",
    FAMILY,
    Severity.ERROR,
    "the fix needs information the drafter's files do not hold (named in the message)",
    _EAGLE_CNETS,
)
PROOF = rule(
    "FIX-PROOF",
    FAMILY,
    Severity.INFO,
    "the proof that the copy works and is the same model: check passes for the release, tensor checksums, "
    "draft logits of the reference backend",
    "docs/fix.md#the-proof",
)
EXACT = rule(
    "FIX-EXACT",
    FAMILY,
    Severity.WARNING,
    "--exact asked for the engine's own load of the copy; it was not available here",
    _VLLM_EAGLE3,
)
COMMAND = rule(
    "FIX-COMMAND",
    FAMILY,
    Severity.INFO,
    "gate --fix-plan: the `specprobe fix` command that rewrites a deployment's drafter for its engine release",
    "docs/fix.md#in-ci",
)
