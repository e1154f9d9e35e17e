"""Launch-time failure classes judged from the serve command (lint / gate): values the release accepts and
then ignores, CUDA-graph capture sizes narrower than the speculative decode batch, and, for MTP methods, the
MTP layers of the local target checkpoint against its quantization_config.

Each rule reads what a release does from the engine facts (``specprobe.engines.facts``) or from the
release's own source cited in its evidence; the command is the ``ServeCommand`` lint parsed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from specprobe.checkpoint.folder import load_checkpoint
from specprobe.compat.engine_facts import answer, source_url
from specprobe.deploy.argv import ServeCommand
from specprobe.deploy.model import parse_speculative
from specprobe.findings import Finding, Severity
from specprobe.rules import rule
from specprobe.rules.quant import mtp_inherited
from specprobe.schema.families import family_of
from specprobe.untrusted.files import is_dir

FAMILY = "launch"
VLLM_CUDAGRAPH = source_url("vllm", "0.33.0", "vllm/config/vllm.py")

SPEC_KEY_IGNORED = rule(
    "LAUNCH-SPEC-KEY-IGNORED",
    FAMILY,
    Severity.WARNING,
    "a --speculative-config key the release accepts (and validates) but no code reads: the value written has "
    "no effect",
    source_url("vllm", "0.16.0", "vllm/config/speculative.py"),
)
CUDAGRAPH_NARROW = rule(
    "LAUNCH-CUDAGRAPH-NARROW",
    FAMILY,
    Severity.WARNING,
    "an explicit CUDA-graph capture maximum below max_num_seqs x (1 + num_speculative_tokens): the widest "
    "speculative decode batches run eagerly (25 vs 133 tok/s reported)",
    VLLM_CUDAGRAPH,
    "https://github.com/vllm-project/vllm/issues/54933",
)


def _positive_int(text: object) -> int | None:
    if isinstance(text, int) and not isinstance(text, bool):
        return text if text > 0 else None
    if isinstance(text, str) and text.isascii() and text.isdigit() and len(text) < 10:
        return int(text) or None
    return None


def _compilation(command: ServeCommand) -> dict[str, object]:
    """--compilation-config (JSON or an -O level; only the JSON form carries capture sizes)."""
    raw = command.get("--compilation-config") or command.get("-O")
    if not raw or not raw.lstrip().startswith("{") or len(raw) > 1_000_000:
        return {}
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):
        return {}  # lint's own rules report a malformed value
    return parsed if isinstance(parsed, dict) else {}


def _capture_max(command: ServeCommand) -> tuple[int, str] | None:
    """The explicit capture maximum and where it was written, or None when the release chooses it."""
    flag = _positive_int(command.get("--max-cudagraph-capture-size"))
    if flag is not None:
        return flag, "--max-cudagraph-capture-size"
    compilation = _compilation(command)
    value = _positive_int(compilation.get("max_cudagraph_capture_size"))
    if value is not None:
        return value, "--compilation-config max_cudagraph_capture_size"
    sizes = compilation.get("cudagraph_capture_sizes")
    if isinstance(sizes, list) and sizes:
        ints = [s for s in (_positive_int(v) for v in sizes) if s is not None]
        if ints:
            return max(ints), "--compilation-config cudagraph_capture_sizes"
    raw_sizes = command.get("--cudagraph-capture-sizes")
    if raw_sizes:
        ints = [s for s in (_positive_int(v) for v in raw_sizes.replace(",", " ").split()) if s is not None]
        if ints:
            return max(ints), "--cudagraph-capture-sizes"
    return None


def _ignored_keys(config: dict[str, object], version: str) -> Iterator[Finding]:
    fact = answer("vllm", version, "ignored_speculative_keys")
    if fact is None or not isinstance(fact.value, list):
        return
    for key in fact.value:
        if key in config:
            yield SPEC_KEY_IGNORED.finding(
                f"vllm=={version}{fact.judged_note} accepts and validates speculative {key} "
                f"({config[key]!r}) but no code reads it: the value has no effect",
                location="--speculative-config",
                key=f"speculative.{key}",
                hint=f"drop {key}; this release has no such behaviour",
                evidence=(fact.evidence, *fact.also),
            )


def _capture_width(command: ServeCommand, config: dict[str, object]) -> Iterator[Finding]:
    if command.has("--enforce-eager"):
        return
    k = _positive_int(config.get("num_speculative_tokens"))
    seqs = _positive_int(command.get("--max-num-seqs"))
    explicit = _capture_max(command)
    if k is None or seqs is None or explicit is None:
        return
    width = seqs * (1 + k)
    capture, where = explicit
    if capture >= width:
        return
    yield CUDAGRAPH_NARROW.finding(
        f"{where} = {capture} while a full decode step verifies --max-num-seqs {seqs} x (1 + "
        f"num_speculative_tokens {k}) = {width} tokens: vLLM keeps an explicit capture range as written, so "
        f"decode batches wider than {capture} tokens run without CUDA graphs",
        location=where.split()[0],
        key="--max-cudagraph-capture-size" if where.startswith("--max-") else "--compilation-config",
        hint=f"raise the capture maximum to {width} or more (or leave it unset: the release then covers the "
        "speculative decode batch itself), or lower --max-num-seqs",
    )


def run_vllm(command: ServeCommand, version: str) -> Iterator[Finding]:
    """The launch classes of a vLLM serve command for ``vllm==version``."""
    settings = parse_speculative(command)
    if not settings.given or not isinstance(settings.values, dict):
        return
    yield from _ignored_keys(settings.values, version)
    yield from _capture_width(command, settings.values)


def run_mtp_target(engine: str, version: str, method: str | None, target: Path | None) -> Iterator[Finding]:
    """MTP heads ship in the target checkpoint, which no drafter check reads: with an MTP method and a local
    target folder, the target's MTP layers against its quantization_config (QUANT-MTP-INHERITED)."""
    if method is None or family_of(method) != "mtp" or target is None or not is_dir(target):
        return
    try:
        checkpoint = load_checkpoint(target)
    except OSError:
        return  # an unreadable target is reported where the target is examined
    if checkpoint.config_raw is not None:
        yield from mtp_inherited(checkpoint.tensors, checkpoint.config_raw, [(engine, version)])
