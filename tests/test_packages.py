"""The test suite is one package: every folder under tests/ that holds Python files has an ``__init__.py``,
and test code imports its helpers by their full name (``from tests.check.casebuild import ...``).

Why: a folder without ``__init__.py`` is imported by pytest under its files' bare names, with the folder
put on ``sys.path``; two test modules with one basename in two such folders then collide, and a helper
becomes importable under two names (two module objects, two copies of module-level state). Relative
imports and bare-folder imports (``from check.casebuild``) only work through that path insertion.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _python_files() -> list[Path]:
    return sorted(path for path in TESTS.rglob("*.py") if "__pycache__" not in path.parts)


def test_every_folder_with_python_files_is_a_package() -> None:
    folders = {path.parent for path in _python_files()}
    missing = sorted(
        str(folder.relative_to(TESTS.parent)) for folder in folders if not (folder / "__init__.py").is_file()
    )
    assert not missing, f"add an __init__.py to: {missing}"


def test_helpers_are_imported_by_their_full_name() -> None:
    # The names a bare-folder import would use: every first-level folder and module of tests/ (those that
    # share a standard-library module's name, such as platform, cannot be told apart and are left out).
    local_names = (
        {path.name for path in TESTS.iterdir() if path.is_dir()} | {path.stem for path in TESTS.glob("*.py")}
    ) - {
        "tests",
        *sys.stdlib_module_names,
    }
    offenders = []
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
                relative = node.level > 0
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
                relative = False
            else:
                continue
            for name in names:
                if relative or name.split(".")[0] in local_names:
                    offenders.append(
                        f"{path.relative_to(TESTS.parent)}:{node.lineno}: {'.' * (node.level if relative else 0)}{name}"
                    )
    assert not offenders, "import test helpers as tests.<folder>.<module>:\n" + "\n".join(offenders)
