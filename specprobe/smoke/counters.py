"""Server backend: send the prompts to a deployed OpenAI-compatible engine and read acceptance from the
engine's own counters.

vLLM: deltas of the Prometheus counters `vllm:spec_decode_num_drafts_total`,
`..._num_draft_tokens_total`, `..._num_accepted_tokens_total` and
`..._num_accepted_tokens_per_pos_total{position}`, scraped around every request so that each
prompt has its own figures (for the interval). SGLang: per-request `meta_info.spec_verify_ct`
(accept length = completion_tokens / spec_verify_ct), else its `sglang:spec_accept_length` gauge.
Metrics text is parsed with prometheus_client's own parser.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from specprobe.findings import Finding, Measurement, Report, SpecprobeError
from specprobe.rules import smoke as smoke_rules
from specprobe.smoke.offline_gap import compare_with_data
from specprobe.smoke.plot import plot_per_position
from specprobe.smoke.prompts import Prompt, load_prompts
from specprobe.smoke.runner import SmokeOptions, measurement_findings, run_reference
from specprobe.smoke.stats import AcceptanceStats, acceptance_extra, finite, mean_ci95, tokens_per_second

VLLM_DRAFTS = "vllm:spec_decode_num_drafts_total"
VLLM_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
VLLM_ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
VLLM_ACCEPTED_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
SGLANG_ACCEPT_LENGTH = "sglang:spec_accept_length"
SGLANG_ACCEPT_RATE = "sglang:spec_accept_rate"

# The engine's acceptance gain (length - 1) under this share of the reference's is an integration gap.
ENGINE_GAP_RATIO = 0.5
REQUEST_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class ServerOptions:
    url: str
    metrics_url: str | None = None
    model: str | None = None
    api: str = "completions"
    prompts: Path | None = None
    max_prompts: int | None = None
    max_new_tokens: int = 64
    min_acceptance_length: float | None = None
    plot: Path | None = None
    target: str | None = None
    draft: Path | None = None
    compare_reference: bool = False
    num_speculative_tokens: int = 3
    device: str = "cpu"
    dtype: str = "float32"
    progress: bool = True
    # Keep each prompt's returned output under "completions" as {"text", "token_ids"} (smoke --serve
    # compares it with the checkpoint's greedy output); off for `--backend server`, whose JSON stays free
    # of generated text.
    keep_outputs: bool = False
    # A hidden-state dump of the drafter's training data: the engine's figures beside what it predicts.
    hidden_states: Path | None = None
    max_samples: int | None = None
    loss_mask_dataset: Path | None = None  # speculators: the dataset holding the dump's loss mask


@dataclass
class MetricsSnapshot:
    """Summed samples of the spec-decode metrics (over engines and label sets), per-position by index."""

    drafts: float = 0.0
    draft_tokens: float = 0.0
    accepted: float = 0.0
    accepted_per_pos: dict[int, float] = field(default_factory=dict)
    sglang_accept_length: float | None = None
    sglang_accept_rate: float | None = None
    seen_vllm: bool = False


def parse_metrics(text: str) -> MetricsSnapshot:
    """Read the spec-decode samples out of a Prometheus text exposition."""
    snapshot = MetricsSnapshot()
    per_pos: dict[int, float] = defaultdict(float)
    try:
        families = list(text_string_to_metric_families(text))
    except ValueError as exc:
        raise SpecprobeError(f"the metrics endpoint did not return Prometheus text: {exc}") from None
    for family in families:
        for sample in family.samples:
            name, value = sample.name, float(sample.value)
            if name == VLLM_DRAFTS:
                snapshot.drafts += value
                snapshot.seen_vllm = True
            elif name == VLLM_DRAFT_TOKENS:
                snapshot.draft_tokens += value
            elif name == VLLM_ACCEPTED:
                snapshot.accepted += value
            elif name == VLLM_ACCEPTED_PER_POS:
                position = sample.labels.get("position")
                if position is not None and position.isdigit():
                    per_pos[int(position)] += value
            elif name == SGLANG_ACCEPT_LENGTH:
                snapshot.sglang_accept_length = value
            elif name == SGLANG_ACCEPT_RATE:
                snapshot.sglang_accept_rate = value
    snapshot.accepted_per_pos = dict(per_pos)
    return snapshot


def _check_url(url: str, *, api_base: bool = True) -> str:
    """The server's root URL. OpenAI clients are configured with `.../v1`; the API paths here add /v1
    themselves, so a trailing /v1 in an API base is dropped instead of requesting /v1/v1/models."""
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise SpecprobeError(f"{url!r} is not an http(s) URL")
    base = url.rstrip("/")
    if api_base and base.endswith("/v1"):
        base = base[: -len("/v1")]
    return base


def _http(url: str, payload: dict[str, Any] | None = None, *, timeout: float = REQUEST_TIMEOUT_S) -> bytes:
    data = None if payload is None else json.dumps(payload).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body: bytes = response.read()
            return body
    except urllib.error.HTTPError as exc:
        detail = exc.read()[:200].decode(errors="replace")
        raise SpecprobeError(f"{url}: HTTP {exc.code} {detail}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise SpecprobeError(f"cannot reach {url}: {getattr(exc, 'reason', exc)}") from None


def _json(url: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
    body = _http(url, payload)
    try:
        data = json.loads(body)
    except json.JSONDecodeError:
        raise SpecprobeError(f"{url}: the response is not JSON") from None
    if not isinstance(data, dict):
        raise SpecprobeError(f"{url}: the response is not a JSON object")
    return data


def _engine_version(base: str) -> str | None:
    """vLLM serves /version, SGLang /get_server_info; either names the engine for the matrix."""
    for path, engine in (("/version", "vllm"), ("/get_server_info", "sglang")):
        try:
            data = _json(base + path)
        except SpecprobeError:
            continue
        version = data.get("version")
        if isinstance(version, str) and version:
            return f"{engine}=={version}"
    return None


def _served_model(base: str) -> str:
    data = _json(base + "/v1/models")
    models = data.get("data")
    if isinstance(models, list) and models and isinstance(models[0], dict) and isinstance(models[0].get("id"), str):
        return str(models[0]["id"])
    raise SpecprobeError(f"{base}/v1/models lists no model; pass --model")


def _request(
    base: str, options: ServerOptions, model: str, prompt: Prompt
) -> tuple[int, dict[str, Any], dict[str, Any]]:
    """One greedy request; returns (completion tokens, SGLang meta_info or {}, the returned output)."""
    common: dict[str, Any] = {
        "model": model,
        "max_tokens": options.max_new_tokens,
        "temperature": 0.0,
        # Both engines accept ignore_eos: every prompt then yields the same number of measured tokens.
        "ignore_eos": True,
    }
    if options.keep_outputs:
        # vLLM returns the generated token ids with this (choices[0].token_ids); others ignore it.
        common["return_token_ids"] = True
    if options.api == "chat":
        data = _json(base + "/v1/chat/completions", {**common, "messages": prompt.chat()})
    else:
        data = _json(base + "/v1/completions", {**common, "prompt": prompt.text})
    usage = data.get("usage")
    tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
    if not isinstance(tokens, int):
        raise SpecprobeError(f"{base}: the response has no usage.completion_tokens")
    choices = data.get("choices")
    first: dict[str, Any] = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    message = first.get("message")
    text = first.get("text") if "text" in first else message.get("content") if isinstance(message, dict) else None
    ids = first.get("token_ids")
    output = {
        "text": text if isinstance(text, str) else None,
        "token_ids": ids if isinstance(ids, list) and all(type(i) is int for i in ids) else None,
    }
    meta = data.get("meta_info")
    if isinstance(meta, dict):
        return tokens, meta, output
    choice_meta = first.get("meta_info")
    return tokens, choice_meta if isinstance(choice_meta, dict) else {}, output


def run_server(options: ServerOptions) -> Report:
    """Measure a live engine; with compare_reference also the reference backend on the same prompts."""
    if options.max_new_tokens < 2:
        # Same rule as the reference backend: the first token comes from the prefill, so one token never
        # reaches a draft and the counters could not move.
        raise SpecprobeError("--max-new-tokens must be at least 2")
    base = _check_url(options.url)
    metrics_url = _check_url(options.metrics_url, api_base=False) if options.metrics_url else base + "/metrics"
    prompts = load_prompts(options.prompts, limit=options.max_prompts)
    model = options.model or _served_model(base)
    engine = _engine_version(base)
    report = Report(
        command="smoke",
        subject={
            "target": options.target or model,
            "draft": str(options.draft) if options.draft else None,
            "backend": "server",
            "engine": engine,
        },
    )
    before = parse_metrics(_http(metrics_url).decode(errors="replace"))
    first = before
    k = options.num_speculative_tokens
    per_prompt_length: list[float] = []
    completion_tokens = 0
    verify_total = 0
    start = time.perf_counter()
    completions: list[dict[str, Any]] = []
    for prompt in prompts:
        tokens, meta, output = _request(base, options, model, prompt)
        completions.append(output)
        completion_tokens += tokens
        after = parse_metrics(_http(metrics_url).decode(errors="replace"))
        drafts = after.drafts - before.drafts
        if drafts > 0:
            per_prompt_length.append(1.0 + (after.accepted - before.accepted) / drafts)
        verify = meta.get("spec_verify_ct")
        if isinstance(verify, int) and verify > 0:
            verify_total += verify
            if drafts <= 0:
                per_prompt_length.append(tokens / verify)
        before = after
    seconds = time.perf_counter() - start
    last = before
    drafts_total = last.drafts - first.drafts
    extra: dict[str, Any] = {}
    if drafts_total > 0:
        positions = sorted(set(last.accepted_per_pos) | set(first.accepted_per_pos))
        if positions:
            k = max(positions) + 1
        per_pos = tuple(int(last.accepted_per_pos.get(i, 0.0) - first.accepted_per_pos.get(i, 0.0)) for i in range(k))
        stats = AcceptanceStats(
            num_speculative_tokens=k,
            drafts=int(drafts_total),
            draft_tokens=int(last.draft_tokens - first.draft_tokens),
            accepted=int(last.accepted - first.accepted),
            accepted_per_pos=per_pos,
            per_prompt_acceptance_length=tuple(per_prompt_length),
        )
        extra.update(acceptance_extra(stats))
        extra["metrics_source"] = "vllm prometheus counters"
    elif verify_total > 0:
        # SGLang counts verification rounds; the accept length includes the bonus token.
        length = completion_tokens / verify_total
        _, low, high = mean_ci95(per_prompt_length)
        extra.update(
            {
                "mean_acceptance_length": finite(length),
                "acceptance_rate": finite((length - 1.0) / k) if k else None,
                "per_position": [],
                "drafts": verify_total,
                "num_speculative_tokens": k,
                "ci95": [finite(low), finite(high)] if len(per_prompt_length) > 1 else [],
                "metrics_source": "sglang meta_info.spec_verify_ct",
            }
        )
    elif last.sglang_accept_length is not None:
        extra.update(
            {
                "mean_acceptance_length": finite(last.sglang_accept_length),
                "acceptance_rate": finite(last.sglang_accept_rate) if last.sglang_accept_rate is not None else None,
                "per_position": [],
                "drafts": 0,
                "ci95": [],
                "num_speculative_tokens": k,
                "metrics_source": "sglang gauges (last scheduler interval)",
            }
        )
    else:
        report.add(
            smoke_rules.NO_METRICS.finding(
                f"{metrics_url} shows no spec-decode counters moving over {len(prompts)} requests",
                hint="start vLLM with --speculative-config, SGLang with --speculative-algorithm and --enable-metrics",
            )
        )
    extra.update(
        {
            "tokens": completion_tokens,
            "tokens_per_s": finite(tokens_per_second(completion_tokens, seconds)),
            "speedup": None,
            "prompts": len(prompts),
            "max_new_tokens": options.max_new_tokens,
            "model": model,
        }
    )
    if options.keep_outputs:
        # The engine's own outputs, for the reference to compare with: not a figure, not reported.
        report.extra["completions"] = completions
    measured = report.measurement = Measurement.from_figures(extra)
    if measured.measured:
        report.extend(measurement_findings_for_server(measured, options.min_acceptance_length, engine or "server"))
    if options.compare_reference:
        _compare_reference(options, report, measured)
    if options.hidden_states is not None:
        if options.draft is None:
            raise SpecprobeError("--hidden-states needs --draft")
        compare_with_data(
            report, measured, options.hidden_states, options.draft, options.target,
            int(measured.num_speculative_tokens or options.num_speculative_tokens),
            max_samples=options.max_samples, device=options.device, dtype=options.dtype, progress=options.progress,
            loss_mask_dataset=options.loss_mask_dataset,
        )  # fmt: skip
    if options.plot is not None and measured.per_position and measured.mean_acceptance_length is not None:
        reference = measured.details.get("reference", {}).get("per_position")
        plot_per_position(
            options.plot,
            measured.per_position,
            title=f"{engine or 'server'}: {model}, mean acceptance length {measured.mean_acceptance_length:.2f}",
            reference=reference if reference and len(reference) == len(measured.per_position) else None,
        )
        report.extra["plot"] = str(options.plot)
    return report


def measurement_findings_for_server(measured: Measurement, min_length: float | None, label: str) -> list[Finding]:
    return measurement_findings(measured, min_acceptance_length=min_length, label=label)


def _compare_reference(options: ServerOptions, report: Report, measured: Measurement) -> None:
    """Run the reference backend on the same prompts and K; a large shortfall is SMOKE-ENGINE-GAP."""
    if options.target is None or options.draft is None:
        raise SpecprobeError("--compare-reference needs --target and --draft")
    k = int(measured.num_speculative_tokens or options.num_speculative_tokens)
    reference = run_reference(
        SmokeOptions(
            target=options.target,
            draft=options.draft,
            device=options.device,
            dtype=options.dtype,
            num_speculative_tokens=k,
            prompts=options.prompts,
            max_prompts=options.max_prompts,
            max_new_tokens=options.max_new_tokens,
            progress=options.progress,
        )
    )
    report.extend(f for f in reference.findings if f.rule != smoke_rules.MEASURED.id)
    figures = reference.measurement or Measurement()
    measured.details["reference"] = {
        "mean_acceptance_length": figures.mean_acceptance_length,
        "acceptance_rate": figures.acceptance_rate,
        "per_position": figures.per_position if reference.measurement else None,
        "ci95": figures.ci95 if reference.measurement else None,
        "lossless": figures.lossless,
    }
    engine_length = measured.mean_acceptance_length
    reference_length = figures.mean_acceptance_length
    if not isinstance(reference_length, float):
        return
    if engine_length is None or (engine_length - 1.0) < ENGINE_GAP_RATIO * (reference_length - 1.0):
        report.add(
            smoke_rules.ENGINE_GAP.finding(
                f"engine mean acceptance length {engine_length} against {reference_length} from the reference "
                f"backend on the same prompts at K={k}",
                hint="the drafter is fine where the reference accepts it: look at the engine's method, aux layer "
                "ids, d2t handling and attention backend for this target",
            )
        )
