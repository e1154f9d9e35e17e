"""What a check rule family may look at: the drafter, the target, the engine versions, the options.

Built once per run by ``specprobe.pipeline.check`` (or by a deployment in ``gate``/``lint``) and read by the rule
families under ``specprobe.rules``; it lives this low so that rules import it downward, never from
the command that runs them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specprobe.checkpoint.folder import Checkpoint
from specprobe.checkpoint.layout import Layout
from specprobe.engines.spec import EngineSpec
from specprobe.findings import Finding
from specprobe.hfconfig import ModelConfig
from specprobe.modelfiles import ModelFiles


@dataclass
class CheckContext:
    """Everything a rule family may look at; built once per run.

    ``draft_format`` is one of ``specprobe.checkpoint.DRAFT_FORMATS``: ``eagle3`` (original EAGLE-3,
    ``midlayer.*`` keys, ``LlamaForCausalLM``), ``specforge`` (``midlayer.*`` keys,
    ``LlamaForCausalLMEagle3``), ``speculators`` (``Eagle3Speculator`` with ``speculators_config``),
    ``vllm-native`` (``layers.0.*`` keys) or ``eagle3-mla`` (DeepSeek MLA attention); None when the
    checkpoint is not recognised as an EAGLE-3 drafter.
    """

    draft_dir: Path
    draft_config: ModelConfig | None
    draft_format: str | None
    draft_architecture: str | None
    target_config: ModelConfig | None
    engines: list[tuple[str, str]]
    method: str | None
    checkpoint: Checkpoint
    layout: Layout
    draft_raw: dict[str, Any] | None = None
    target_spec: str | None = None
    target_error: str | None = None
    # A local target folder read once (config.json and safetensors headers); None for a hub id.
    target_checkpoint: Checkpoint | None = None
    # Where the target is (a folder or a hub repository), located once: rules read its other files through it.
    target_files: ModelFiles | None = None
    engine_explicit: bool = False
    engine_spec: EngineSpec | None = None
    device: str | None = None
    deep: bool = False
    notes: list[str] = field(default_factory=list)
    # Findings about models named by hub id that could not be read (specprobe.rules.hub).
    hub_findings: list[Finding] = field(default_factory=list)
    # The drafter as the report names it (a folder, or a hub id as written) and the hub commits judged.
    draft_label: str | None = None
    commits: dict[str, str] = field(default_factory=dict)

    @property
    def draft(self) -> dict[str, Any]:
        """The draft's effective settings (speculators' nested layer config merged in); {} without config."""
        return self.draft_config.raw if self.draft_config is not None else {}


Family = Callable[[CheckContext], Iterable[Finding]]
