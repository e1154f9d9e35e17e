"""Exact mode inside SGLang's interpreter: build the EAGLE-3 draft model (and its target) of a deployment on
the meta device, load the checkpoint's header shapes through the draft's own ``load_weights`` and replay
the draft worker's head/embedding binding.

stdlib + SGLang (+ the torch it pins) only; no GPU, no tensor data, never trust_remote_code. Same request
and reply as ``vllm_exact.py``: ``{"cases": [{"id", "target", "draft", "tensors": [[name, dtype, shape]...],
"server_args": {...}, "env": {...}}]}`` on stdin (``target`` and ``draft`` are folders holding only a copy
of config.json), one JSON line on stdout. For each case, with the release's own code:

1. ``ServerArgs(model_path=T, speculative_algorithm="EAGLE3", speculative_draft_model_path=D, device="cpu",
   skip_tokenizer_init=True, load_format="dummy", **server_args)`` published for one scheduler rank
   (``runtime_context.publish`` runs every argument hook the launcher runs);
2. parallel state for one CPU rank over gloo, as SGLang's own test helper sets it up (once per process);
3. the target's and the draft's ``ModelConfig`` as the target and draft workers build them (the draft gets
   the target's context length and the draft-mode architecture rewrites);
4. the target runner's aux-state resolution, the target class built on meta and its
   ``set_eagle3_layers_to_capture`` (the capture ids come from the target's own code);
5. the draft class from the registry, built inside the draft worker's build scopes on meta, then its
   ``load_weights`` on meta tensors with every parameter's weight loader wrapped;
6. the EAGLE-3 branch of ``EagleDraftWorker.init_lm_head``: the target's embedding (and head) handed to the
   draft, ``hot_token_id`` read.

A refusal that names the environment variable lifting it ("set the env var X=1", SGLang's check of a draft
context shorter than the target's) is recorded in ``launch_refusals`` and the case goes on with the variable
set, so the rest of the drafter is still judged. Failures that are this machine's (a quantization method
SGLang registers only on GPU platforms, a CUDA driver asked for while building) come back as
``{"stage": "unsupported"}``, never as the drafter's fault.

Two things are not SGLang's code: RotaryEmbedding imports ``vllm._custom_ops.rotary_embedding`` as its
fallback kernel on a platform that is neither CUDA nor SGLang's CPU engine and only calls it in forward,
so an import stub is placed when no vLLM is installed; and the allocator flushes of the bind step
(``torch.cuda.empty_cache``) are no-ops while it runs.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import json
import os
import platform
import re
import resource
import socket
import sys
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common
import _errors

DISTRIBUTIONS = ("sglang", "torch", "transformers")
_DTYPES = {
    "F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16",
    "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool",
    "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2",
}
# SGLang's own advice in a refusal a launch setting lifts: "... set the env var NAME=1".
_ENV_ADVICE = re.compile(r"set the env var (SGLANG_[A-Z0-9_]+)=(\S+?)[.\s]*$")
# Messages of failures that come from this machine (no CUDA driver, GPU-only ops), not from the drafter.
_PLATFORM = (
    "Found no NVIDIA driver", "Torch not compiled with CUDA", "libcuda", "_OpNamespace", "no kernel image",
    "CUDA driver", "Failed to find a kernel that can implement", "not available on this platform",
    "cuda is not available", "No CUDA GPUs",
)
# specprobe's method names (vLLM's) -> SGLang's --speculative-algorithm.
_ALGORITHMS = {"eagle3": "EAGLE3", "eagle": "EAGLE", "mtp": "EAGLE", "ngram": "NGRAM", "standalone": "STANDALONE"}
_GPU_ONLY = "is registered by this SGLang release only on GPU platforms "
_GPU_ONLY_QUANTIZATION = re.compile(r"quantization ([\w-]+) " + re.escape(_GPU_ONLY))
# Parameters the draft takes from elsewhere (the target's embedding through set_embed) or that default
# (KV-cache scales default to 1.0): never reported as left at init.
_DEFAULTED_SUFFIXES = (".k_scale", ".v_scale")


UnsupportedError = _common.UnsupportedError
_first = _common.first_supported


def _optional(module: str, attribute: str) -> Any:
    """An API only some releases have (None where this one lacks it)."""
    try:
        return _common.first_attribute(((module, attribute),))
    except ImportError:
        return None


def _stub_fallback_rope_kernel() -> None:
    """RotaryEmbedding imports vllm._custom_ops.rotary_embedding at construction (never calls it there)."""
    if importlib.util.find_spec("vllm") is not None:
        return
    vllm = types.ModuleType("vllm")
    vllm.__path__ = []  # a package, so "vllm._custom_ops" resolves
    ops = types.ModuleType("vllm._custom_ops")

    def rotary_embedding(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("specprobe: vllm._custom_ops.rotary_embedding is an import stub, not a kernel")

    ops.rotary_embedding = rotary_embedding  # type: ignore[attr-defined]
    vllm._custom_ops = ops  # type: ignore[attr-defined]
    sys.modules["vllm"] = vllm
    sys.modules["vllm._custom_ops"] = ops


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """The deployment's SGLANG_* variables for one case (SGLang reads its variables when asked)."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class Session:
    """SGLang's APIs, found once per process, and its parallel state, initialised once."""

    def __init__(self) -> None:
        _stub_fallback_rope_kernel()
        import torch

        self.torch = torch
        self.server_args = _first((("sglang.srt.server_args", "ServerArgs"),))
        self.publish = _first((("sglang.srt.runtime_context", "publish"),))
        # 0.5.23 publishes for a rank (SpawnRanks); earlier releases publish for a role only.
        self.spawn_ranks = _optional("sglang.srt.runtime_context", "SpawnRanks")
        self.get_spec = _first((("sglang.srt.runtime_context", "get_spec"),))
        self.model_config = _first((("sglang.srt.configs.model_config", "ModelConfig"),))
        self.algorithm = _first((("sglang.srt.speculative.spec_info", "SpeculativeAlgorithm"),))
        self.resolve_aux = _first((
            ("sglang.srt.model_executor.model_runner_components.spec_aux_hidden_state",
             "resolve_spec_aux_hidden_state_config"),
        ))
        self.configure_capture = _first((
            ("sglang.srt.model_executor.model_runner_components.attention_backend_setup",
             "configure_aux_hidden_state_capture"),
        ))
        self.load_config = _first((("sglang.srt.configs.load_config", "LoadConfig"),))
        self.quant_config = _first((("sglang.srt.model_loader.loader", "_get_quantization_config"),))
        self.initialize_model = _first((("sglang.srt.model_loader.loader", "_initialize_model"),))
        self.get_model_architecture = _first((("sglang.srt.model_loader.utils", "get_model_architecture"),))
        self.default_dtype = _first((("sglang.srt.model_loader.utils", "set_default_torch_dtype"),))
        self.default_loader = _first((("sglang.srt.model_loader.weight_utils", "default_weight_loader"),))
        # 0.5.23 resolves them for pipeline-parallel drafts; earlier releases ask the target model itself.
        self.resolve_embed_and_head = _optional("sglang.srt.speculative.pp_draft_embedding",
                                                "resolve_target_embed_and_head")
        self.distributed_ready = False

    def ensure_distributed(self, server_args: Any, model_config: Any) -> None:
        """One CPU rank over gloo (sglang/test/layer_ut_utils.py's init_single_process_dist)."""
        if self.distributed_ready:
            return
        init = _first((("sglang.srt.distributed.parallel_state", "init_distributed_environment"),))
        model_parallel = _first((("sglang.srt.distributed.parallel_state", "initialize_model_parallel"),))
        dp_attention = _first((("sglang.srt.layers.dp_attention", "initialize_dp_attention"),))
        init(backend="gloo", world_size=1, rank=0, local_rank=0,
             distributed_init_method=f"tcp://127.0.0.1:{_free_port()}")
        model_parallel()
        accepted = inspect.signature(dp_attention).parameters
        dp_attention(server_args=server_args,
                     **({"model_config": model_config} if "model_config" in accepted else {}))
        self.distributed_ready = True


@contextlib.contextmanager
def _draft_build_scopes(draft_mc: Any, algorithm: Any) -> Iterator[None]:
    """The scopes EagleDraftWorker.__init__ builds its draft model in (speculative/eagle_worker_v2.py)."""
    scopes = _optional("sglang.srt.layers.moe.utils", "draft_model_build_scope")  # 0.5.18 and later
    moe = _first((("sglang.srt.layers.moe.utils", "speculative_moe_backend_context"),))
    a2a = _first((("sglang.srt.layers.moe.utils", "speculative_moe_a2a_backend_context"),))
    spec = _optional("sglang.srt.speculative.draft_parallel", "model_draft_parallel_spec")
    with contextlib.ExitStack() as stack:
        if spec is not None:
            # 0.5.23: the draft's own parallel layout (draft_tp_context over it) and draft_pp_context.
            layout_of = _first((("sglang.srt.speculative.draft_parallel", "resolve_draft_parallel_layout"),))
            tp = _first((("sglang.srt.speculative.spec_utils", "draft_tp_context"),))
            pp = _first((("sglang.srt.speculative.spec_utils", "draft_pp_context"),))
            stack.enter_context(tp(layout_of(spec(draft_mc, spec_algorithm=algorithm))))
            stack.enter_context(pp())
        # Earlier releases enter draft_tp_context only with DP attention, which one CPU rank does not use.
        for scope in (moe, a2a, scopes):
            if scope is not None:
                stack.enter_context(scope())
        yield


def _clear_meta_rope_cache() -> None:
    """As DefaultModelLoader._compute_local_structural_signature does after its own meta build."""
    try:
        from sglang.srt.layers.rotary_embedding.factory import _ROPE_DICT
    except Exception:
        return
    for key in [key for key, value in _ROPE_DICT.items()
                if any(t.device.type == "meta" for t in list(value.parameters()) + list(value.buffers()))]:
        del _ROPE_DICT[key]


class Tracker:
    """Every parameter's weight loader wrapped: which parameters were loaded, from which checkpoint tensors."""

    def __init__(self, model: Any, default_loader: Any) -> None:
        self.loaded: dict[str, int] = {}
        self.consumed: set[int] = set()
        self.consumed_names: set[str] = set()
        self.names: dict[int, str] = {}
        self.tensor_names: dict[int, str] = {}
        self.sources: dict[int, set[str]] = {}
        self.last: dict[str, Any] = {}
        self.shards: dict[tuple[str, str], Any] = {}
        self.overwritten: list[list[Any]] = []
        self.padded: list[dict[str, Any]] = []
        for name, param in model.named_parameters(remove_duplicate=False):
            if id(param) in self.names:
                continue
            self.names[id(param)] = name
            original = getattr(param, "weight_loader", None) or default_loader
            wrapped = self._wrap(name, original)
            # SGLang's quantized parameters expose weight_loader as a read-only property over _weight_loader.
            if isinstance(getattr(type(param), "weight_loader", None), property):
                param._weight_loader = wrapped
            else:
                param.weight_loader = wrapped

    def _wrap(self, name: str, original: Any) -> Any:
        def weight_loader(param: Any, loaded_weight: Any, *args: Any, **kwargs: Any) -> Any:
            self.loaded[name] = self.loaded.get(name, 0) + 1
            self.last = {"parameter": name, "tensor": None, "parameter_shape": list(param.shape),
                         "tensor_shape": list(getattr(loaded_weight, "shape", []))}
            tensor = loaded_weight
            while tensor is not None:  # a view (narrow, transpose) of a checkpoint tensor: follow it back
                self.consumed.add(id(tensor))
                if id(tensor) in self.tensor_names:
                    self.last["tensor"] = self.tensor_names[id(tensor)]
                for source in sorted(self.sources.get(id(tensor), ())):
                    self.consumed_names.add(source)
                    self.last["tensor"] = self.last["tensor"] or source
                tensor = getattr(tensor, "_base", None)
            _common.note_shard(self.shards, self.overwritten, name, self.last["tensor"], args=args, kwargs=kwargs)
            return original(param, loaded_weight, *args, **kwargs)

        return weight_loader

    def provenance(self, torch: Any) -> Any:
        """A TorchFunctionMode that follows checkpoint tensors through the ops load_weights applies before a
        loader sees them (MLA drafters fuse q_a and kv_a with torch.cat)."""
        self.sources = {key: {value} for key, value in self.tensor_names.items()}
        sources, keep = self.sources, []

        class _Follow(torch.overrides.TorchFunctionMode):  # type: ignore[misc, name-defined]
            def __torch_function__(self, func: Any, types_: Any, args: Any = (), kwargs: Any = None) -> Any:
                out = func(*args, **(kwargs or {}))
                found: set[str] = set()

                def visit(item: Any) -> None:
                    if isinstance(item, (list, tuple)):
                        for inner in item:
                            visit(inner)
                    elif id(item) in sources:
                        found.update(sources[id(item)])

                visit(args)
                visit(list((kwargs or {}).values()))
                if found:
                    for produced in out if isinstance(out, (list, tuple)) else [out]:
                        if isinstance(produced, torch.Tensor):
                            sources.setdefault(id(produced), set()).update(found)
                            keep.append(produced)  # alive, so its id stays unique
                return out

        return _Follow()


@contextlib.contextmanager
def _padding_recorded(tracker: Tracker) -> Iterator[None]:
    """SGLang's loaders pad a checkpoint tensor narrower than its parameter's shard with zeros
    (``pad_or_narrow_weight``, meant for odd MLP widths) without a message: each call that pads is recorded
    against the parameter being loaded. SGLang's function runs unchanged."""
    owners = []
    for module_name in ("sglang.srt.layers.linear", "sglang.srt.layers.parameter"):
        module = sys.modules.get(module_name)
        if module is not None and hasattr(module, "pad_or_narrow_weight"):
            owners.append(module)
    if not owners:
        yield
        return
    original = owners[0].pad_or_narrow_weight

    def recorded(loaded_weight: Any, input_dim: int, start_idx: int, shard_size: int) -> Any:
        valid = max(int(loaded_weight.shape[input_dim]) - int(start_idx), 0)
        if valid < shard_size:
            tracker.padded.append({"parameter": tracker.last.get("parameter"), "tensor": tracker.last.get("tensor"),
                                   "tensor_shape": [int(n) for n in loaded_weight.shape], "dim": int(input_dim),
                                   "rows": valid, "needed": int(shard_size)})
        return original(loaded_weight, input_dim, start_idx, shard_size)

    for module in owners:
        module.pad_or_narrow_weight = recorded
    try:
        yield
    finally:
        for module in owners:
            module.pad_or_narrow_weight = original


def _capture(model: Any) -> tuple[Any, list[Any] | None]:
    """The decoder holding layers_to_capture (wrappers keep it on language_model.model)."""
    for path in ("model", "language_model.model", "model.model"):
        found = model
        try:
            for part in path.split("."):
                found = getattr(found, part)
        except AttributeError:
            continue
        if hasattr(found, "layers_to_capture"):
            return found, list(found.layers_to_capture)
    return None, None


def _captures_per_token(inner: Any, capture: list[Any]) -> int:
    # The decoder's forward: `if i in self.layers_to_capture` before layer i, for i in range(start, end).
    start = int(getattr(inner, "start_layer", 0))
    end = int(getattr(inner, "end_layer", len(getattr(inner, "layers", []))))
    return sum(1 for index in range(start, end) if index in capture)


def _shape(module: Any, attribute: str = "weight") -> list[int] | None:
    tensor = getattr(module, attribute, None)
    return [int(size) for size in tensor.shape] if tensor is not None and hasattr(tensor, "shape") else None


def _platform_limit(exc: BaseException, message: str) -> str | None:
    """Why a failure is this machine's, not the drafter's (None: it is the engine's verdict)."""
    if any(text in message for text in _PLATFORM):
        return message
    unknown = re.match(r"Unknown quantization method: ([\w-]+)", message)
    if unknown:
        # A method SGLang knows but registers only on some platforms (mxfp4: CUDA, ROCm gfx95, XPU, CPU engine).
        try:
            spec = importlib.util.find_spec("sglang.srt.layers.quantization")
            source = Path(spec.origin).read_text(encoding="utf-8") if spec and spec.origin else ""
        except (OSError, ImportError, ValueError):
            source = ""
        if f'"{unknown.group(1)}"' in source:
            return (f"quantization {unknown.group(1)} {_GPU_ONLY}"
                    f"(sglang/srt/layers/quantization/__init__.py): {message}")
    return None


def _worker_line(exc: BaseException) -> dict[str, Any] | None:
    """The line of EagleDraftWorker.init_lm_head that raises what the replayed bind step raised (a draft class
    without ``hot_token_id`` or ``set_embed`` fails there at start-up)."""
    name = getattr(exc, "name", None)
    try:
        worker = _first((("sglang.srt.speculative.eagle_worker_v2", "EagleDraftWorker"),))
        lines, first = inspect.getsourcelines(worker.init_lm_head)
        path = inspect.getsourcefile(worker.init_lm_head) or ""
    except (UnsupportedError, OSError, TypeError):
        return None
    for offset, line in enumerate(lines):
        if name and re.search(rf"draft_runner\.model\.{re.escape(name)}\b", line):
            parts = Path(path).parts
            start = len(parts) - 1 - parts[::-1].index("sglang") if "sglang" in parts else 0
            return {"file": "/".join(parts[start:]), "line": first + offset, "function": "init_lm_head"}
    return None


def _model_configs(session: Session, server_args: Any, resolved: dict[str, Any]) -> tuple[Any, Any, list[Any]]:
    """Target and draft ModelConfig as the workers build them; refusals a variable lifts are recorded and lifted."""
    spec = session.get_spec()
    target_mc = session.model_config.from_server_args(server_args)
    refusals: list[dict[str, Any]] = []
    lifted: dict[str, str] = {}
    while True:
        try:
            with _environment(lifted):
                draft_mc = session.model_config.from_server_args(
                    server_args, model_path=spec.speculative_draft_model_path,
                    model_revision=getattr(spec, "speculative_draft_model_revision", None), is_draft_model=True,
                    context_length=target_mc.context_len,
                )
            break
        except ValueError as exc:
            advice = _ENV_ADVICE.search(str(exc))
            if advice is None or advice.group(1) in lifted:
                raise
            refusals.append({"variable": advice.group(1), "value": advice.group(2),
                             "error": _errors.describe_error(exc, "sglang")})
            lifted[advice.group(1)] = advice.group(2)
    resolved["target_context_length"] = int(target_mc.context_len)
    resolved["draft_context_length"] = int(draft_mc.context_len)
    return target_mc, draft_mc, refusals


def run_case(session: Session, case: dict[str, Any]) -> dict[str, Any]:
    """One case on SGLang's CPU device; again on its CUDA device when only the CPU rotary path refused it.

    SGLang's CPU rotary factory builds only some rope kinds (DeepSeek: deepseek_yarn, which every published
    DeepSeek-V3 / Kimi-K2 config has); its CUDA path builds the others on meta without an accelerator, with
    the same parameter shapes. A case is never judged by a rotary kind this machine's path lacks."""
    result = _run_case(session, case, "cpu")
    frame = (result.get("error") or {}).get("frame") or {}
    if not result["ok"] and frame.get("function") == "get_rope_cpu":
        result = _run_case(session, case, "cuda")
        result["device"] = "cuda (SGLang's CPU rotary path does not build this rope)"
    method = result.pop("_gpu_only_quantization", None)
    if method is not None:
        # The target's quantization (mxfp4) is registered by this release only on GPU platforms. The target
        # is built without it: its embedding, head, hidden size and layers (all the draft is judged against)
        # are not quantized; its expert and attention weights are, and nothing here reads them.
        retry = dict(case, target=_without_quantization(str(case["target"])))
        result = _run_case(session, retry, "cpu")
        result.pop("_gpu_only_quantization", None)
        result["resolved"]["target_built_without_quantization"] = method
    return result


def _without_quantization(target: str) -> str:
    """A copy of the target's config.json (itself specprobe's copy) without quantization_config, beside it."""
    source = Path(target)
    copy = source.parent / (source.name + "-unquantized")
    copy.mkdir(exist_ok=True)
    config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    config.pop("quantization_config", None)
    (copy / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return str(copy)


def _run_case(session: Session, case: dict[str, Any], device: str) -> dict[str, Any]:
    started = time.monotonic()
    seconds: dict[str, float] = {}
    resolved: dict[str, Any] = {}
    result: dict[str, Any] = {"id": case.get("id"), "ok": False, "resolved": resolved, "seconds": seconds}
    stage = "config"
    env = {str(k): str(v) for k, v in (case.get("env") or {}).items() if str(k).startswith("SGLANG_")}
    try:
        with _environment(env):
            stage = _run(session, case, result, started, device)
    except UnsupportedError as exc:
        result["unsupported"] = str(exc)
        stage = "unsupported"
    except (Exception, SystemExit) as exc:
        stage = result.get("_stage", stage)
        tracker = result.pop("_tracker", None)
        result["error"] = _errors.describe_error(exc, "sglang")
        # The folders SGLang names are specprobe's temporary copies: say what they stand for.
        message = str(result["error"].get("message"))
        for key, what in (("draft", "the drafter's folder"), ("target", "the target's folder")):
            if case.get(key):
                message = message.replace(str(case[key]), what)
        result["error"]["message"] = message
        limit = _platform_limit(exc, str(result["error"].get("message")))
        gpu_only = _GPU_ONLY_QUANTIZATION.search(limit or "")
        if gpu_only is not None and stage in ("config", "model_config"):
            result["_gpu_only_quantization"] = gpu_only.group(1)
        if limit is not None:
            result["unsupported"] = "this machine cannot construct it: " + limit[:400]
            stage = "unsupported"
        elif stage == "load" and tracker is not None:
            result["error"].update(tracker.last)
        elif stage == "bind" and result["error"].get("frame") is None:
            result["error"]["frame"] = _worker_line(exc)
    result.pop("_tracker", None)
    result.pop("_stage", None)
    _clear_meta_rope_cache()
    result["stage"] = stage
    return result


def _build_target(session: Session, target_mc: Any, load_config: Any, resolved: dict[str, Any],
                  device: str) -> Any:
    """The target class on meta, or None when it does not build here: the drafter is still judged by the draft
    class, its load_weights and its config; the captured layers and the binding need the target, and the
    reply names why they were not checked. A target class that does not build from a real config is far more
    often this machine (a kernel, a CPU-only path) than the deployment, and never the drafter's fault."""
    torch = session.torch
    target_class, _ = session.get_model_architecture(target_mc)
    resolved["target_class"] = f"{target_class.__module__}.{target_class.__qualname__}"
    try:
        target_quant = session.quant_config(target_mc, load_config)
        with session.default_dtype(target_mc.dtype), torch.device("meta"):
            return session.initialize_model(target_mc, load_config, target_quant)
    except (Exception, SystemExit) as exc:
        error = _errors.describe_error(exc, "sglang")
        if device == "cpu" and (error.get("frame") or {}).get("function") == "get_rope_cpu":
            raise  # built again on SGLang's CUDA rotary path (run_case)
        resolved["target_not_built"] = error
        return None


def _run(session: Session, case: dict[str, Any], result: dict[str, Any], started: float, device: str) -> str:
    """One case's steps; ``result`` collects the reply (its ``_stage`` says how far it got)."""
    resolved: dict[str, Any] = result["resolved"]
    seconds: dict[str, float] = result["seconds"]
    torch = session.torch

    def at(stage: str) -> None:
        result["_stage"] = stage

    at("config")
    method = str((case.get("speculative_config") or {}).get("method") or "eagle3")
    fields: dict[str, Any] = {
        "model_path": str(case["target"]),
        "speculative_algorithm": _ALGORITHMS.get(method, method.upper()),
        "speculative_draft_model_path": str(case["draft"]),
        "speculative_num_steps": 3,
        "speculative_eagle_topk": 1,
        "speculative_num_draft_tokens": 4,
    }
    fields.update(case.get("server_args") or {})
    # This machine's settings, never the deployment's: a CPU rank, no tokenizer, no weights read.
    fields.update({"device": device, "skip_tokenizer_init": True, "load_format": "dummy", "trust_remote_code": False})
    server_args = session.server_args(**fields)
    ranks = {"ranks": session.spawn_ranks(world_rank=0, dp_rank=None)} if session.spawn_ranks is not None else {}
    session.publish(server_args, role="scheduler", **ranks)
    seconds["config"] = round(time.monotonic() - started, 2)

    at("model_config")
    spec = session.get_spec()
    algorithm = session.algorithm.from_string(spec.speculative_algorithm)
    target_mc, draft_mc, refusals = _model_configs(session, server_args, resolved)

    at("distributed")
    session.ensure_distributed(server_args, target_mc)
    result["launch_refusals"] = refusals
    lifted = {item["variable"]: item["value"] for item in refusals}
    draft_hf = draft_mc.hf_config
    eagle_config = getattr(draft_hf, "eagle_config", None)
    resolved.update({
        "algorithm": str(spec.speculative_algorithm),
        "target_architectures": list(getattr(target_mc.hf_config, "architectures", None) or []),
        "target_layers": int(target_mc.num_hidden_layers),
        "target_hidden_size": int(target_mc.hidden_size),
        "target_vocab_size": int(target_mc.vocab_size),
        "target_attention_arch": getattr(getattr(target_mc, "attention_arch", None), "name", None),
        "draft_architectures": list(getattr(draft_hf, "architectures", None) or []),
        "draft_hidden_size": getattr(draft_hf, "hidden_size", None),
        "draft_vocab_size": getattr(draft_hf, "draft_vocab_size", None),
        "draft_target_hidden_size": getattr(draft_hf, "target_hidden_size", None),
        "draft_toplevel_aux_ids": _common.json_value(getattr(draft_hf, "eagle_aux_hidden_state_layer_ids", None)),
        "draft_eagle_config_aux_ids": _common.json_value(
            eagle_config.get("eagle_aux_hidden_state_layer_ids") if isinstance(eagle_config, dict) else None),
        "draft_quantization": getattr(draft_mc, "quantization", None),
        "dtype": str(draft_mc.dtype),
    })
    seconds["model_config"] = round(time.monotonic() - started, 2)

    with _environment(lifted):
        at("aux")
        aux = session.resolve_aux(server_args=server_args, model_config=target_mc, spec_algorithm=algorithm,
                                  is_draft_worker=False)
        use_aux = bool(getattr(aux, "eagle_use_aux_hidden_state", False))
        from_config = getattr(aux, "eagle_aux_hidden_state_layer_ids", None)
        resolved.update({
            "use_aux_hidden_state": use_aux,
            "aux_layer_ids": _common.json_value(list(from_config)) if from_config is not None else None,
            "aux_source": "draft config (eagle_config)" if from_config is not None else "target default",
        })

        load_config = session.load_config(load_format="dummy")
        at("target")
        target = _build_target(session, target_mc, load_config, resolved, device)
        seconds["target"] = round(time.monotonic() - started, 2)
        inner, capture = None, None
        if use_aux and target is not None:
            top = resolved["draft_toplevel_aux_ids"]
            if from_config is None and isinstance(top, list) and top and all(isinstance(i, int) for i in top):
                # What the target's own code would capture had it read the top-level ids (it reads only
                # eagle_config's): tells ignored ids that mean the defaults from ids that do not.
                session.configure_capture(model=target, eagle_use_aux_hidden_state=True,
                                          eagle_aux_hidden_state_layer_ids=list(top),
                                          dflash_use_aux_hidden_state=False, dflash_target_layer_ids=None,
                                          is_dspark=False)
                resolved["toplevel_would_capture"] = _common.json_value(_capture(target)[1])
            session.configure_capture(model=target, eagle_use_aux_hidden_state=True,
                                      eagle_aux_hidden_state_layer_ids=from_config,
                                      dflash_use_aux_hidden_state=False, dflash_target_layer_ids=None,
                                      is_dspark=False)
            inner, capture = _capture(target)
            resolved["target_layers_to_capture"] = _common.json_value(capture)
            if inner is not None and capture is not None:
                resolved["target_captures_per_token"] = _captures_per_token(inner, capture)
        if target is not None:
            resolved["target_embed_shape"] = _shape(getattr(inner or _capture(target)[0], "embed_tokens", None))

        at("resolve")
        model_class, _arch = session.get_model_architecture(draft_mc)
        resolved["draft_class"] = f"{model_class.__module__}.{model_class.__qualname__}"
        quant = session.quant_config(draft_mc, load_config)
        resolved["draft_quant_config"] = type(quant).__name__ if quant is not None else None

        at("build")
        with _draft_build_scopes(draft_mc, algorithm), session.default_dtype(draft_mc.dtype), torch.device("meta"):
            model = session.initialize_model(draft_mc, load_config, quant)
        seconds["build"] = round(time.monotonic() - started, 2)
        draft_inner = getattr(model, "model", None)
        fc = _shape(getattr(draft_inner, "fc", None))
        resolved.update({
            "num_aux_hidden_states": getattr(draft_inner, "num_aux_hidden_states", None),
            "fc_in_features": fc[1] if fc and len(fc) == 2 else None,
            "fc_out_features": fc[0] if fc and len(fc) == 2 else None,
            "load_lm_head_from_target": bool(getattr(model, "load_lm_head_from_target", False)),
            "draft_embed_shape": _shape(getattr(draft_inner, "embed_tokens", None)),
            "draft_lm_head_shape": _shape(getattr(model, "lm_head", None)),
        })

        at("load")
        tracker = Tracker(model, session.default_loader)
        result["_tracker"] = tracker
        weights = []
        for name, dtype_name, shape in case.get("tensors") or []:
            dtype = getattr(torch, _DTYPES.get(str(dtype_name), "float32"), torch.float32)
            weights.append((str(name), torch.empty([int(s) for s in shape], dtype=dtype, device="meta")))
        tracker.tensor_names = {id(tensor): name for name, tensor in weights}
        with torch.device("meta"), tracker.provenance(torch), _padding_recorded(tracker):
            model.load_weights(iter(weights))
        seconds["load"] = round(time.monotonic() - started, 2)
        hot = getattr(model, "hot_token_id", None)
        resolved["hot_token_map"] = _shape(types.SimpleNamespace(weight=hot)) if hot is not None else None
        # load_weights consumes d2t itself (hot_token_id = d2t + arange); t2d is skipped by design.
        by_design = {"t2d"} | ({"d2t"} if hot is not None else set())
        result["unconsumed"] = sorted(
            name for key, name in tracker.tensor_names.items()
            if key not in tracker.consumed and name not in tracker.consumed_names
            and name.rsplit(".", 1)[-1] not in by_design)
        result["unloaded"] = sorted(name for name in tracker.names.values()
                                    if name not in tracker.loaded and not name.endswith(_DEFAULTED_SUFFIXES))
        result["overwritten"] = tracker.overwritten
        result["padded"] = tracker.padded

        # EagleDraftWorker.init_lm_head, EAGLE-3 branch (speculative/eagle_worker_v2.py), on the meta models.
        if target is None:
            result["ok"] = True  # the drafter was judged by the draft's own code; the reply says what was not
            return "done"
        at("bind")
        if session.resolve_embed_and_head is not None:
            embed, head = session.resolve_embed_and_head(target, draft_model=model)
        else:
            embed, head = target.get_embed_and_head()
        flushes = [torch.cuda]
        with contextlib.suppress(Exception):
            from sglang.srt.platforms import current_platform

            flushes.append(current_platform)
        with contextlib.ExitStack() as restore:
            for owner in flushes:
                for name in ("empty_cache", "synchronize"):
                    if hasattr(owner, name):
                        restore.callback(setattr, owner, name, getattr(owner, name))
                        setattr(owner, name, lambda *args, **kwargs: None)
            if getattr(model, "load_lm_head_from_target", False):
                model.set_embed_and_head(embed, head)
                resolved["bound"] = "embed_and_head"
            else:
                model.set_embed(embed)
                resolved["bound"] = "embed"
        bound_hot = model.hot_token_id  # AttributeError for a class without it, as at the worker's startup
        resolved["hot_token_map"] = _shape(types.SimpleNamespace(weight=bound_hot)) if bound_hot is not None else None
        resolved["draft_embed_shape_after_bind"] = _shape(getattr(draft_inner, "embed_tokens", None))
        resolved["draft_lm_head_shape_after_bind"] = _shape(getattr(model, "lm_head", None))
        head_module, embed_module = getattr(model, "lm_head", None), getattr(draft_inner, "embed_tokens", None)
        resolved["lm_head_is_embed_tokens"] = head_module is not None and (
            head_module is embed_module
            or getattr(head_module, "weight", None) is getattr(embed_module, "weight", 0))
    result["ok"] = True
    return "done"


def main() -> None:
    if importlib.util.find_spec("sglang") is None:
        _common.reply({"error": "not_installed", "engine": "sglang", "interpreter": sys.executable})
        sys.exit(3)
    cases = _common.read_cases()
    for name, value in (("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1")):
        os.environ.setdefault(name, value)
    # The caller's shell is not the deployment: each case brings its deployment's SGLANG_* variables, and
    # inherited ones (SGLANG_IS_IN_CI lifts refusals, SGLANG_USE_CPU_ENGINE changes the import) would decide
    # verdicts no deployment asked for.
    for name in [name for name in os.environ if name.startswith("SGLANG_")]:
        del os.environ[name]
    started = time.monotonic()
    module, _session, replies, imported = _common.run_in_session(
        "sglang", Session, (UnsupportedError,), run_case, cases
    )
    versions = _common.distribution_versions(*DISTRIBUTIONS)
    # Values read from a hostile config.json may be anything SGLang keeps: what JSON cannot say is repr'ed.
    replies = json.loads(json.dumps(replies, default=repr))
    _common.reply({
        "engine": "sglang",
        "version": getattr(module, "__version__", None) or versions.get("sglang"),
        "distributions": versions,
        "python": platform.python_version(),
        "interpreter": sys.executable,
        "import_seconds": imported,
        "total_seconds": round(time.monotonic() - started, 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "cases": replies,
    })


if __name__ == "__main__":
    main()
