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
    why="vLLM prefixes a draft architecture with Eagle3 unless it starts or ends with Eagle3 and refuses a name "
    "its registry lacks; SGLang loads the class config.json names as it is, so LlamaForCausalLM builds a plain "
    "Llama there.",
    fix="Nothing more: the copy names a class that release registers for EAGLE-3 drafts.",
)
TENSOR_NAMES = rule(
    "FIX-TENSOR-NAMES",
    FAMILY,
    Severity.INFO,
    "decoder-layer tensors renamed to the namespace the engine release loads (midlayer.* / layers.0.*)",
    _VLLM_EAGLE3,
    source_url("sglang", "0.5.11", "sglang/srt/models/llama_eagle3.py"),
    _SGLANG_EAGLE3,
    why="Loaders skip weight names they do not expect: SGLang before 0.5.12 names its layer midlayer and "
    "ignores layers.0.*, so the decoder layer would stay random.",
    fix="Nothing more: only names change; every tensor's bytes are copied unchanged (checksums in the report).",
)
FORMAT = rule(
    "FIX-FORMAT",
    FAMILY,
    Severity.INFO,
    "the drafter converted between EAGLE-3 checkpoint formats (EAGLE release, SpecForge, speculators, vLLM-native)",
    _VLLM_SPECULATORS,
    _VLLM_EAGLE3,
    why="A format is a config.json layout plus a tensor naming; a release reads some formats better than others "
    "(vLLM's speculators path, for example, copies the aux-layer ids to where its fc sizing does not read them).",
    fix="Nothing more; pass --format-out to choose another format.",
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
    why="vLLM sizes fc from num_aux_hidden_states, else len(eagle_config.eagle_aux_hidden_state_layer_ids), else "
    "3, while the target captures the layers named at the top level: ids in only one place build an fc of the "
    "wrong width (refused at load) or capture the default layers.",
    fix="Nothing more: the copy names the same ids in every place that release reads.",
)
DRAFT_VOCAB = rule(
    "FIX-DRAFT-VOCAB",
    FAMILY,
    Severity.INFO,
    "draft_vocab_size / vocab_size set from lm_head and the target",
    _VLLM_EAGLE3,
    why="Engines build lm_head [draft_vocab_size, hidden] and the d2t buffer from config.json; a value that "
    "disagrees with the trained head fails at load or builds a full-vocabulary head.",
    fix="Nothing more: the sizes now match the tensors.",
)
VOCAB_MAP = rule(
    "FIX-VOCAB-MAP",
    FAMILY,
    Severity.INFO,
    "d2t / t2d derived from one another (offsets, dtype int64 / bool)",
    _VLLM_EAGLE3,
    _SGLANG_EAGLE3,
    _EAGLE_D2T,
    why="d2t[i] is an offset (target id = i + d2t[i]) over the sorted used target ids and t2d marks those ids; "
    "each can be rebuilt exactly from the other. Absolute ids are turned into offsets.",
    fix="Nothing more; the derived tensors are listed as derived in the checksums.",
)
TARGET_HIDDEN = rule(
    "FIX-TARGET-HIDDEN",
    FAMILY,
    Severity.INFO,
    "target_hidden_size set to the target's hidden size",
    _VLLM_EAGLE3,
    why="fc takes one target hidden state per aux layer; without target_hidden_size engines assume the draft's "
    "own hidden size.",
    fix="Nothing more.",
)
MAX_POSITION = rule(
    "FIX-MAX-POSITION",
    FAMILY,
    Severity.INFO,
    "max_position_embeddings raised to the target's context",
    "https://github.com/vllm-project/vllm/issues/48894",
    source_url("sglang", "0.5.23", "sglang/srt/configs/model_config.py"),
    why="Some releases size the draft's rotary cache by its own max_position_embeddings (reads past it) or refuse "
    "a target context longer than the draft's. The rotary frequencies do not depend on it, so draft logits stay "
    "identical.",
    fix="Nothing more. rope_theta and rope_scaling are kept: the drafter was trained with them.",
)
DROPPED = rule(
    "FIX-DROPPED",
    FAMILY,
    Severity.INFO,
    "tensors the engine release never uses dropped (an embedding identical to the target's, duplicate copies)",
    _VLLM_EAGLE3,
    why="A drafter's embed_tokens that is byte-identical to the target's is what the engine shares anyway; "
    "a second copy of a layer under the other namespace would overwrite the first at load.",
    fix="Nothing more.",
)
FROM_TARGET = rule(
    "FIX-FROM-TARGET",
    FAMILY,
    Severity.INFO,
    "a tensor the release needs, absent from the drafter, taken from the target's safetensors",
    _SGLANG_EAGLE3,
    "https://github.com/sgl-project/sglang/issues/27829",
    why="A tied or missing head leaves the engine a random or full-vocabulary head; a tied drafter's head is the "
    "target's embedding, so the reduced head is its rows at the draft vocabulary's target ids.",
    fix="Nothing more; the rows taken are listed in the report.",
)
FILES = rule(
    "FIX-FILES",
    FAMILY,
    Severity.INFO,
    "files beside the weights copied, or left out (code and pickles are never copied)",
    "https://huggingface.co/docs/safetensors/v0.4.5/index",
    why="The copy holds what an engine reads: config.json, safetensors weights and their index, and plain text "
    "and JSON files; remote code and pickles are never carried into it.",
    fix="Nothing more.",
)
UNFIXABLE = rule(
    "FIX-UNFIXABLE",
    FAMILY,
    Severity.ERROR,
    "the drafter cannot be made to work on this engine release by rewriting its files; what would work is named",
    "https://github.com/vllm-project/vllm/issues/31254",
    why="Some failures are in the pairing itself (a Llama EAGLE-3 drafter on an MLA target on vLLM 0.16 runs at "
    "~15% acceptance) or in the weights (an fc trained on another number of layers); renaming cannot change them.",
    fix="Serve it with the engine or release named in the message, or train a drafter for this pairing.",
)
MISSING_INFO = rule(
    "FIX-MISSING-INFO",
    FAMILY,
    Severity.ERROR,
    "the fix needs information the drafter's files do not hold (named in the message)",
    _EAGLE_CNETS,
    why="Some repairs need facts only the training run knows: the target layers fc was trained on, or the order "
    "of a vocabulary map whose other half (t2d) is absent.",
    fix="Supply the named information from the training run (its config or vocabulary map) and run fix again.",
)
PROOF = rule(
    "FIX-PROOF",
    FAMILY,
    Severity.INFO,
    "the proof that the copy works and is the same model: check passes for the release, tensor checksums, "
    "draft logits of the reference backend",
    "docs/fix.md#the-proof",
    why="A fixed copy is only useful if it loads on that release and is the same model: check runs the same rules "
    "as for any drafter, checksums show every copied tensor is byte-identical, and the reference backend shows "
    "identical draft logits where it can run.",
    fix="When the proof fails the copy is not written; the message says which part failed.",
)
EXACT = rule(
    "FIX-EXACT",
    FAMILY,
    Severity.WARNING,
    "--exact asked for the engine's own load of the copy; it was not available here",
    _VLLM_EAGLE3,
    why="Exact mode builds the draft model in the release's own interpreter and loads the copy's header shapes; "
    "without it the proof is specprobe's static check.",
    fix="Provision the engine release (specprobe engines install E==V) and run fix --exact again.",
)
COMMAND = rule(
    "FIX-COMMAND",
    FAMILY,
    Severity.INFO,
    "gate --fix-plan: the `specprobe fix` command that rewrites a deployment's drafter for its engine release",
    "docs/fix.md#in-ci",
    why="A gate failure in the drafter's files is often repairable by renaming tensors and moving config keys; "
    "the command does it into a new folder and proves the copy.",
    fix="Run the command, then point the deployment at the new folder.",
)
