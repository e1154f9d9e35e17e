"""Hub rules (HUB-*): a drafter or target named by hub id that could not be read where it lives.

A hub model is examined from what the hub serves (its listing, config.json, the shard index, the
safetensors headers and the d2t/t2d bytes, by HTTP Range); these findings say when that could not be
done, and why, so that a gate never passes on a model it did not see.
"""

from __future__ import annotations

from specprobe.findings import Finding, Severity
from specprobe.modelfiles import ModelUnavailableError, Unavailable
from specprobe.rules import rule

_GATED = "https://huggingface.co/docs/hub/models-gated"
_ENV = "https://huggingface.co/docs/huggingface_hub/v0.35.0/en/package_reference/environment_variables"
_OFFLINE = _ENV + "#hfhuboffline"

ACCESS = rule(
    "HUB-ACCESS",
    "hub",
    Severity.ERROR,
    "The hub refuses this machine the drafter or target: a gated or private repository without a token "
    "that grants access (HF_TOKEN), or a repository or revision that does not exist. The engine would "
    "fail the same way when it downloads it.",
    _GATED,
    _ENV + "#hftoken",
)
NOT_EXAMINED = rule(
    "HUB-NOT-EXAMINED",
    "hub",
    Severity.WARNING,
    "A drafter or target named by hub id could not be read: the hub did not answer in time or could not "
    "be reached, HF_HUB_OFFLINE is set and no earlier run cached it, or the hub's answer was outside "
    "specprobe's bounds. What was not read was not judged.",
    _OFFLINE,
    _ENV + "#hfendpoint",
)

POLICY_REQUIRED = "required"


def unavailable_finding(error: ModelUnavailableError, role: str, *, policy: str, subject: bool) -> Finding:
    """The finding for ``role`` (draft or target) that could not be read.

    Access refused is always an error. Otherwise the hub policy decides: under ``required``, or when the
    model is the subject of the command (``check``'s own drafter and target), what was not read fails
    the run; under ``optional`` it is a warning (``--strict`` fails it).
    """
    if error.kind is Unavailable.ACCESS:
        return ACCESS.finding(
            f"{role} {error.spec}: {error}",
            location=error.spec,
            hint="set HF_TOKEN to a token with access (or run `hf auth login`), accept the repository's "
            "conditions on the hub if it is gated, and check the id and revision",
        )
    severity = Severity.ERROR if subject or policy == POLICY_REQUIRED else Severity.WARNING
    return NOT_EXAMINED.finding(
        f"{role} {error.spec} not examined: {error}",
        location=error.spec,
        severity=severity,
        hint="run again with the hub reachable (HF_ENDPOINT for a mirror), or restore specprobe's hub cache "
        "(specprobe-hub beside the Hugging Face cache) and set HF_HUB_OFFLINE=1; `hf download "
        f"{error.spec.split('@')[0]}` puts the files in the local cache",
    )
