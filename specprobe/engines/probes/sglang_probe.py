"""Probe run inside SGLang's interpreter: prints SGLang's speculative-decoding surface as one JSON object.

stdlib + SGLang only. The options come from SGLang's own argparse parser (``ServerArgs.add_cli_args``),
the algorithms from ``SpeculativeAlgorithm``; each part degrades on its own into ``problems``.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import inspect
import platform
import re
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

# Run as a script under the engine's interpreter (with -I): the shared helpers sit next to it.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common

# Model classes that propose tokens for a target rather than serve alone.
DRAFT_NAME_MARKERS = ("Eagle", "EAGLE", "NextN", "MTP", "DFlash", "DSpark", "Draft", "Medusa")


def extract_options(problems: list[str]) -> list[dict[str, Any]]:
    try:
        server_args = importlib.import_module("sglang.srt.server_args")
        parser = argparse.ArgumentParser(add_help=False)
        server_args.ServerArgs.add_cli_args(parser)
    except Exception as exc:
        problems.append(f"cli options: {type(exc).__name__}: {exc}")
        return []
    options = []
    for action in parser._actions:
        if any(flag.startswith("--speculative") for flag in action.option_strings) or action.dest.startswith(
            "speculative_"
        ):
            options.append(_common.action_record(action))
    return options


def reserved_from_source(enum_class: Any, members: set[str]) -> list[str]:
    """Upper-case names ``from_string`` maps onto a member (older releases spell NEXTN inline)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(enum_class.from_string)))
    except Exception:
        return []
    return _upper_constants(tree, members)


def algorithms_from_source() -> tuple[list[str], list[str]] | None:
    """(members, reserved aliases) of ``SpeculativeAlgorithm`` read from spec_info.py without importing it."""
    tree = _common.parse_file(_common.package_file("sglang", "srt", "speculative", "spec_info.py"))
    if tree is None:
        return None
    registered = registered_from_source(tree)
    if registered is not None:
        return registered
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "SpeculativeAlgorithm":
            members = [
                target.id
                for statement in node.body
                if isinstance(statement, ast.Assign)
                for target in statement.targets
                if isinstance(target, ast.Name) and target.id.isupper() and target.id != "NONE"
            ]
            reserved: list[str] = []
            for statement in node.body:
                if isinstance(statement, ast.FunctionDef) and statement.name == "from_string":
                    reserved = _upper_constants(statement, set(members) | {"NONE"})
            return members, reserved
    return None


def registered_from_source(tree: ast.Module) -> tuple[list[str], list[str]] | None:
    """Releases with a registry (0.5.6, 0.5.7): module-level ``register_speculative_algorithm("NAME",
    aliases=(...))`` and ``SpeculativeAlgorithm.register("NAME")`` calls, in order."""
    members: list[str] = []
    aliases: list[str] = []
    for statement in tree.body:
        call = statement.value if isinstance(statement, ast.Expr) else None
        if not isinstance(call, ast.Call) or not call.args:
            continue
        name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
        first = call.args[0]
        if name not in ("register_speculative_algorithm", "register") or not (
            isinstance(first, ast.Constant) and isinstance(first.value, str)
        ):
            continue
        if first.value != "NONE":
            members.append(first.value)
        for keyword in call.keywords:
            if keyword.arg == "aliases" and isinstance(keyword.value, (ast.Tuple, ast.List)):
                aliases.extend(
                    item.value
                    for item in keyword.value.elts
                    if isinstance(item, ast.Constant) and isinstance(item.value, str)
                )
    return (members, aliases) if members else None


def _upper_constants(tree: ast.AST, members: set[str]) -> list[str]:
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if text.isupper() and text.replace("_", "").isalnum() and text not in members and text not in found:
                found.append(text)
    return found


def extract_algorithms(problems: list[str]) -> tuple[list[str], list[str], str]:
    try:
        spec_info = importlib.import_module("sglang.srt.speculative.spec_info")
        enum_class = spec_info.SpeculativeAlgorithm
    except Exception as exc:
        # Some releases import CUDA kernels at the top of spec_info (0.5.6, 0.5.7: sgl_kernel needs
        # libcuda): the members are then read from the enum's source instead of being lost.
        from_source = algorithms_from_source()
        if from_source is None:
            problems.append(f"algorithms: {type(exc).__name__}: {exc}")
            return [], [], "unavailable"
        problems.append(f"algorithms read from spec_info.py's source (import failed: {type(exc).__name__})")
        return from_source[0], from_source[1], "SpeculativeAlgorithm source"
    members = [member.name for member in enum_class if member.name != "NONE"]
    reserved = None
    for module_name in ("sglang.srt.speculative.spec_registry", "sglang.srt.speculative.spec_info"):
        try:
            module = importlib.import_module(module_name)
        except Exception:
            continue
        aliases = getattr(module, "_RESERVED_ALIASES", None)
        if aliases is not None:
            reserved = sorted(str(alias) for alias in aliases)
            source = f"{module_name}._RESERVED_ALIASES"
            break
    if reserved is None:
        reserved = reserved_from_source(enum_class, set(members) | {"NONE"})
        source = "SpeculativeAlgorithm.from_string"
    return members, reserved, source


def entry_classes(tree: ast.Module) -> list[str]:
    """Names a model module registers: ``EntryClass = X`` or ``EntryClass = [X, Y]``."""
    names: list[str] = []
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "EntryClass" for t in node.targets)):
            continue
        values = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
        names.extend(value.id for value in values if isinstance(value, ast.Name))
    return names


# Where releases resolve speculative settings after parsing: ServerArgs methods (up to 0.5.2x), the
# speculative hook module (0.5.23) and SpeculativeAlgorithm.handle_server_args, which dispatches to it.
RESOLVER_FILES = (
    ("srt", "server_args.py"),
    ("srt", "arg_groups", "speculative_hook.py"),
    ("srt", "speculative", "spec_info.py"),
)
# Filled only for some targets; reported as self_drafting_architectures instead.
PER_TARGET_FLAGS = {"speculative_draft_model_path", "speculative_draft_model_revision", "speculative_algorithm"}
ARCHITECTURE_NAME = re.compile(r"^[A-Z][A-Za-z0-9_]*(For[A-Z][A-Za-z]*|Model)$")


class ResolverWalk:
    """Walks the release's resolution code once and records, per algorithm in scope, the speculative
    settings it assigns when they are unset, and the targets whose own path becomes the draft path.

    Scope comes from ``if`` tests on the algorithm (``== "NGRAM"``, ``in ("EAGLE", "EAGLE3")``, ``!=``)
    and from predicate calls (``algo.is_ngram()``), which are evaluated on the release's own
    SpeculativeAlgorithm members; calls of functions defined in the same files are followed.
    """

    def __init__(self, algorithms: list[str], enum_class: Any, options: dict[str, str]) -> None:
        self.algorithms = set(algorithms)
        self.enum_class = enum_class
        self.options = options  # dest -> long flag
        self.functions: dict[str, Any] = {}
        self.module_lists: dict[str, list[str]] = {}
        self.filled: dict[str, set[str]] = {}
        self.self_drafting: list[str] = []
        self.sources: list[str] = []

    def add_file(self, tree: Any, label: str) -> None:
        self.sources.append(label)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(node.name, node)
            if isinstance(node, ast.Assign) and isinstance(node.value, (ast.List, ast.Tuple, ast.Set)):
                values = [elt.value for elt in node.value.elts if isinstance(elt, ast.Constant)]
                if values and all(isinstance(value, str) for value in values):
                    for target in node.targets:
                        name = getattr(target, "id", None) or getattr(target, "attr", None)
                        if name:
                            self.module_lists[name] = [str(value) for value in values]

    # -- scope ---------------------------------------------------------------------------------
    def _predicate(self, name: str) -> set[str] | None:
        members = [member for member in self.enum_class if member.name != "NONE"] if self.enum_class else []
        chosen = set()
        for member in members:
            method = getattr(member, name, None)
            if not callable(method):
                return None
            try:
                if method():
                    chosen.add(member.name)
            except Exception:
                return None
        return chosen

    def _strings(self, node: Any) -> list[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return [elt.value for elt in node.elts if isinstance(elt, ast.Constant) and isinstance(elt.value, str)]
        name = getattr(node, "id", None) or getattr(node, "attr", None)
        return list(self.module_lists.get(name, [])) if name else []

    def narrow(self, test: Any) -> tuple[set[str] | None, set[str] | None]:
        """(algorithms for which the body runs, for which the else branch runs); None = not about the algorithm."""
        if isinstance(test, ast.BoolOp):
            parts = [self.narrow(value) for value in test.values]
            known = [part for part in parts if part[0] is not None]
            if not known:
                return None, None
            body_sets = [part[0] for part in known if part[0] is not None]
            if isinstance(test.op, ast.Or):
                if len(known) < len(parts):
                    return None, None
                union = set().union(*body_sets)
                return union, self.algorithms - union
            inter = set(self.algorithms).intersection(*body_sets)
            return inter, None
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            body, other = self.narrow(test.operand)
            if body is None:
                return None, None
            return (other if other is not None else self.algorithms - body), body
        if isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.func.attr.startswith("is_"):
            chosen = self._predicate(test.func.attr)
            return (chosen, self.algorithms - chosen) if chosen is not None else (None, None)
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            left = getattr(test.left, "attr", None) or getattr(test.left, "id", None)
            if left not in ("speculative_algorithm", "algorithm", "algo"):
                return None, None
            operator, right = test.ops[0], test.comparators[0]
            if isinstance(operator, (ast.Is, ast.IsNot)) and isinstance(right, ast.Constant) and right.value is None:
                return (set(), set(self.algorithms)) if isinstance(operator, ast.Is) else (set(self.algorithms), set())
            values = {value.upper() for value in self._strings(right)}
            if not values:
                return None, None
            if isinstance(operator, (ast.Eq, ast.In)):
                return values, self.algorithms - values
            if isinstance(operator, (ast.NotEq, ast.NotIn)):
                return self.algorithms - values, values
        return None, None

    def _pure(self, test: Any) -> bool:
        """Whether the test is about the algorithm and nothing else."""
        if isinstance(test, ast.BoolOp):
            return all(self._pure(value) for value in test.values)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self._pure(test.operand)
        return self.narrow(test)[0] is not None

    # -- records -------------------------------------------------------------------------------
    @staticmethod
    def _unset_tests(test: Any) -> bool:
        for compare in ast.walk(test):
            if (
                isinstance(compare, ast.Compare)
                and isinstance(compare.ops[0], ast.Is)
                and isinstance(compare.comparators[0], ast.Constant)
                and compare.comparators[0].value is None
                and str(getattr(compare.left, "attr", "")).startswith("speculative_")
            ):
                return True
        return False

    def _assigned(self, node: Any) -> list[tuple[str, Any]]:
        """(speculative dest, value) pairs a statement assigns."""
        pairs: list[tuple[str, Any]] = []
        if isinstance(node, ast.Assign):
            for target in node.targets:
                elts = target.elts if isinstance(target, ast.Tuple) else [target]
                for elt in elts:
                    if isinstance(elt, ast.Attribute) and elt.attr.startswith("speculative_"):
                        pairs.append((elt.attr, node.value))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            call = node.value
            name = getattr(call.func, "id", None) or getattr(call.func, "attr", None)
            if name == "declare_resolution":
                pairs.extend(
                    (keyword.arg, keyword.value)
                    for keyword in call.keywords
                    if keyword.arg and keyword.arg.startswith("speculative_")
                )
        return pairs

    def _record(self, dest: str, value: Any, scope: set[str] | None, guarded: bool, conditions: list[Any]) -> None:
        if dest == "speculative_draft_model_path" and any(
            getattr(inner, "attr", None) == "model_path" for inner in ast.walk(value)
        ):
            for test in conditions:
                for compare in ast.walk(test):
                    if isinstance(compare, ast.Compare) and isinstance(compare.ops[0], (ast.In, ast.Eq)):
                        for name in self._strings(compare.comparators[0]):
                            if ARCHITECTURE_NAME.match(name) and name not in self.self_drafting:
                                self.self_drafting.append(name)
        if dest in PER_TARGET_FLAGS or dest not in self.options or not scope:
            return
        if not guarded:
            return
        for algorithm in scope:
            self.filled.setdefault(algorithm, set()).add(self.options[dest])

    def walk(
        self,
        body: list[Any],
        *,
        scope: set[str] | None,
        guarded: bool,
        plain: bool,
        conditions: list[Any],
        stack: tuple[str, ...],
    ) -> None:
        for node in body:
            if isinstance(node, ast.If):
                inside, other = self.narrow(node.test)
                unset = self._unset_tests(node.test)
                about_algorithm = self._pure(node.test)
                body_scope = (inside & scope if scope is not None else inside) if inside is not None else scope
                else_scope = (other & scope if scope is not None else other) if other is not None else scope
                # An algorithm test starts a branch where unconditional assignments count; any other
                # test (a fix-up such as ``if topk == 1``) ends it.
                self.walk(
                    node.body,
                    scope=body_scope,
                    guarded=guarded or unset,
                    plain=about_algorithm,
                    conditions=[*conditions, node.test],
                    stack=stack,
                )
                self.walk(
                    node.orelse,
                    scope=else_scope,
                    guarded=guarded,
                    plain=about_algorithm,
                    conditions=[*conditions, node.test],
                    stack=stack,
                )
                continue
            for dest, value in self._assigned(node):
                # Unconditional within an algorithm's branch counts as filled too (NGRAM's topk).
                self._record(dest, value, scope, guarded or plain, conditions)
            for call in ast.walk(node) if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) else ():
                if not isinstance(call, ast.Call):
                    continue
                # The function called, and functions handed to a call to run (0.5.19 passes
                # ``algo.handle_server_args`` to record_foreign_defaults instead of calling it).
                callees = [call.func] + [arg for arg in call.args if isinstance(arg, (ast.Name, ast.Attribute))]
                for callee in callees:
                    name = getattr(callee, "id", None) or getattr(callee, "attr", None)
                    target = self.functions.get(name) if name else None
                    if target is not None and name not in stack and len(stack) < 6:
                        self.walk(
                            target.body,
                            scope=scope,
                            guarded=guarded,
                            plain=plain,
                            conditions=conditions,
                            stack=(*stack, name),
                        )
            for field_name in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(node, field_name, None)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    break
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.AST):
                    if field_name == "handlers":
                        for handler in inner:
                            self.walk(
                                handler.body,
                                scope=scope,
                                guarded=guarded,
                                plain=False,
                                conditions=conditions,
                                stack=stack,
                            )
                    else:
                        self.walk(inner, scope=scope, guarded=guarded, plain=plain, conditions=conditions, stack=stack)

    def run(self, entry_points: list[str]) -> None:
        for name in entry_points:
            function = self.functions.get(name)
            if function is not None:
                self.walk(function.body, scope=None, guarded=False, plain=False, conditions=[], stack=(name,))


def extract_resolution(
    algorithms: list[str], options: list[dict[str, Any]], problems: list[str]
) -> tuple[dict[str, list[str]], list[str], list[str]]:
    """(auto_resolved_flags, self_drafting_architectures, files read), from the release's source."""
    try:
        enum_class = importlib.import_module("sglang.srt.speculative.spec_info").SpeculativeAlgorithm
    except Exception:
        enum_class = None
    dests = {}
    for option in options:
        long_flags = [flag for flag in option["flags"] if flag.startswith("--")]
        if long_flags:
            dests[option["dest"]] = long_flags[0]
    walk = ResolverWalk(algorithms, enum_class, dests)
    for parts in RESOLVER_FILES:
        tree = _common.parse_file(_common.package_file("sglang", *parts))
        if tree is not None:
            walk.add_file(tree, "sglang/" + "/".join(parts))
    if not walk.sources:
        problems.append("resolution: no server_args.py found")
        return {}, [], []
    # __post_init__ runs every resolution step; releases with the hook module start there too.
    walk.run(["__post_init__", "handle_speculative_decoding"])
    filled = {algorithm: sorted(flags) for algorithm, flags in sorted(walk.filled.items()) if flags}
    return filled, walk.self_drafting, walk.sources


def extract_draft_architectures(problems: list[str]) -> list[str]:
    """Draft-capable classes of SGLang's model registry, read from each module's ``EntryClass``.

    The registry imports every model module and silently drops those whose kernels do not import on
    this machine (no GPU); reading ``EntryClass`` statically lists what the release ships.
    """
    try:
        spec = importlib.util.find_spec("sglang.srt.models")
        folders = list(spec.submodule_search_locations or []) if spec else []
    except Exception as exc:
        problems.append(f"draft architectures: {type(exc).__name__}: {exc}")
        return []
    names: list[str] = []
    for folder in folders:
        for module in sorted(Path(folder).glob("*.py")):
            try:
                tree = ast.parse(module.read_text(encoding="utf-8-sig"))  # some modules start with a BOM
            except (OSError, SyntaxError, UnicodeDecodeError):
                # SGLang's registry skips a module that does not import; so does this reading.
                continue
            names.extend(name for name in entry_classes(tree) if name not in names)
    if not names:
        problems.append("draft architectures: no EntryClass found in sglang.srt.models")
    return names


def main() -> None:
    started = time.monotonic()
    problems = []
    if importlib.util.find_spec("sglang") is None:
        _common.reply({"error": "not_installed", "engine": "sglang", "interpreter": sys.executable})
        sys.exit(3)
    with _common.stdout_to_stderr():
        import sglang

        imported = time.monotonic()
        options = extract_options(problems)
        algorithms, reserved, reserved_source = extract_algorithms(problems)
        model_architectures = extract_draft_architectures(problems)
        draft_architectures = [
            name for name in model_architectures if any(marker in name for marker in DRAFT_NAME_MARKERS)
        ]
        filled, self_drafting, resolver_files = extract_resolution(algorithms + reserved, options, problems)
        eagle3_tree = _common.parse_file(_common.package_file("sglang", "srt", "models", "llama_eagle3.py"))
    versions = _common.distribution_versions("sglang", "torch", "transformers", "pydantic")
    _common.reply(
        {
            "engine": "sglang",
            "version": getattr(sglang, "__version__", None) or versions["sglang"],
            "options": options,
            "algorithms": algorithms,
            "reserved_aliases": reserved,
            "reserved_aliases_source": reserved_source,
            "draft_architectures": draft_architectures,
            "model_architectures": sorted(model_architectures),
            "self_drafting_architectures": self_drafting,
            "auto_resolved_flags": filled,
            "eagle3_fc_inputs": _common.eagle3_fc_inputs(eagle3_tree),
            "eagle3_layer_prefixes": _common.eagle3_layer_prefixes(eagle3_tree),
            "problems": problems,
            "provenance": {
                "engine_version": versions["sglang"],
                "parser": "sglang.srt.server_args.ServerArgs.add_cli_args",
                "resolution_read_from": resolver_files,
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
