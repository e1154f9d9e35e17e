"""Reading a deployment file of any supported form: the form is told by the extension and the content.

``Dockerfile``/``Containerfile``: its final stage. ``.sh``/``.bash`` (or a ``#!`` line): a shell
script. ``.toml``: specprobe's manifest. YAML/JSON:
Kubernetes (``apiVersion`` + ``kind``), docker-compose (``services``), specprobe's manifest
(``deployments``), else vLLM's ``--config`` file (flag-named keys such as ``model``). A folder is
searched for such files. A path that does not exist or cannot be read is a SpecprobeError (exit 2);
a file of another kind is an info finding, broken content (malformed YAML, an unclosed quote) an
error finding for that file, and the other files are still read. An input with nothing in it
(empty, only comments) is EmptyInputError.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING

from specprobe.deploy import (
    compose,
    kubernetes,
    llmd,
    manifest,
    productionstack,
    rayserve,
    recipes,
    rules,
    skypilot,
    srtslurm,
    truss,
    vllm_config,
)
from specprobe.deploy.dockerfile import is_dockerfile, parse_dockerfile
from specprobe.deploy.launch import find_launches, to_deployments
from specprobe.deploy.manifest import parse_manifest
from specprobe.deploy.model import Deployment
from specprobe.deploy.render import NotRenderedError, RenderRoot, render, render_root
from specprobe.deploy.shell import ShellSyntaxError, parse_script
from specprobe.deploy.yamlsource import LineDict, load_documents, relocate
from specprobe.findings import Finding, SpecprobeError

if TYPE_CHECKING:  # the YAML reader is loaded when a file is read, not at import
    from specprobe.deploy.yamlsource import LineDict

_SHELL_SUFFIXES = (".sh", ".bash", ".zsh", ".ksh")
_YAML_SUFFIXES = (".yaml", ".yml", ".json")
_SUFFIXES = (*_SHELL_SUFFIXES, *_YAML_SUFFIXES, ".toml")
MAX_BYTES = 16 * 1024 * 1024
MAX_FILES = 2000


class UnrecognisedFileError(SpecprobeError):
    """The file is readable but none of the deployment forms specprobe reads."""


class EmptyInputError(SpecprobeError):
    """The input holds nothing but blanks and comments (an empty file, a failed ``helm template |``)."""


class CannotReadError(SpecprobeError):
    """The path cannot be read at all (missing, a permission refused): the run itself cannot go on."""


def is_blank(text: str) -> bool:
    """Only blank lines, comments and YAML document markers: nothing a deployment could be read from."""
    return all(
        not line.strip() or line.lstrip().startswith("#") or line.strip() in ("---", "...")
        for line in text.splitlines()
    )


def _read(path: Path, shown: str) -> str:
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise SpecprobeError(f"{shown}: larger than {MAX_BYTES // (1024 * 1024)} MiB, not a deployment file")
        data = path.read_bytes()
    except OSError as exc:
        raise CannotReadError(f"cannot read {shown}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SpecprobeError(f"{shown}: not a UTF-8 text file") from None


def _written_configs(files: dict[str, tuple[str, int]], shown: str) -> dict[str, LineDict]:
    """YAML/JSON files a script writes from a heredoc, parsed with their lines in the script (a vLLM
    ``--config`` written inline); text that is not YAML is left out."""
    configs: dict[str, LineDict] = {}
    for name, (text, first_line) in files.items():
        if not name.endswith((".yaml", ".yml", ".json")):
            continue
        try:
            documents = load_documents(text, f"{shown}: {name}")
        except SpecprobeError:
            continue
        if documents and isinstance(documents[0], LineDict):
            relocate(documents[0], first_line, True)
            configs[name] = documents[0]
    return configs


def _shell(text: str, shown: str, base_dir: Path) -> tuple[list[Deployment], list[Finding]]:
    try:
        script = parse_script(text)
    except ShellSyntaxError as exc:
        raise SpecprobeError(f"{shown}:{exc.line}: {exc}") from None
    commands = script.commands
    configs = _written_configs(script.files, shown)
    deployments: list[Deployment] = []
    findings: list[Finding] = []
    for message, line in script.notes:
        note = rules.NOT_EXAMINED.finding(message, location=shown)
        note.file, note.line = shown, line
        findings.append(note)
    base_name = "script/" + Path(shown).name
    for command in commands:
        search = find_launches(command.words, list(command.lines), variables=command.variables)
        # Named by order, not by line, so that a per-deployment ignore survives edits above the launch.
        label = base_name if not deployments else f"{base_name}#{len(deployments) + 1}"
        made, leftover = to_deployments(
            search, name=label, file=shown, base_dir=base_dir, line=command.line, configs=configs
        )
        deployments.extend(made)
        for finding in leftover:
            finding.file, finding.line = shown, finding.line or command.line
            findings.append(finding)
    return deployments, findings


def _toml(text: str, shown: str, base_dir: Path) -> tuple[list[Deployment], list[Finding]]:
    try:
        root = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecprobeError(f"{shown}: not valid TOML: {exc}") from None
    if "deployments" not in root:
        raise UnrecognisedFileError(f"{shown}: a TOML file without [[deployments]] is not a specprobe manifest")
    return parse_manifest(root, shown, base_dir, toml_text=text)


def _yaml(text: str, shown: str, base_dir: Path) -> tuple[list[Deployment], list[Finding]]:
    documents = [d for d in load_documents(text, shown) if d is not None]
    if not documents:
        return [], []  # empty or comments only (a chart rendered with everything off): nothing launches
    ray = rayserve.llm_configs(documents)
    if ray:
        deployments, findings = rayserve.parse_llm_configs(ray, shown, base_dir)
        if kubernetes.is_kubernetes(documents):  # a KubeRay RayService: its containers are read too
            more, notes = kubernetes.parse_kubernetes(documents, shown, base_dir)
            deployments, findings = [*deployments, *more], [*findings, *notes]
        return deployments, findings
    if kubernetes.is_kubernetes(documents):
        return kubernetes.parse_kubernetes(documents, shown, base_dir)
    if compose.is_compose(documents):
        return compose.parse_compose(documents, shown, base_dir)
    if manifest.is_manifest(documents):
        return manifest.parse_manifest(documents[0], shown, base_dir)
    if srtslurm.is_srt_slurm_recipe(documents):
        return srtslurm.parse_srt_slurm_recipe(documents, shown, base_dir)
    if skypilot.is_skypilot_task(documents):
        return skypilot.parse_skypilot_task(documents, shown, base_dir)
    if recipes.is_vllm_recipe(documents):
        return recipes.parse_vllm_recipe(documents, shown, base_dir)
    if llmd.is_modelservice_values(documents):
        return llmd.parse_modelservice_values(documents, shown, base_dir)
    if truss.is_truss_config(documents):
        return truss.parse_truss_config(documents, shown, base_dir)
    if productionstack.is_production_stack_values(documents):
        return productionstack.parse_production_stack_values(documents, shown, base_dir)
    if vllm_config.is_vllm_config(documents):
        return vllm_config.parse_vllm_config(documents, shown, base_dir)
    raise UnrecognisedFileError(f"{shown}: not a Kubernetes manifest, compose file, vLLM config or specprobe manifest")


def _load_file(path: Path, shown: str, text: str | None = None) -> tuple[list[Deployment], list[Finding]]:
    text = _read(path, shown) if text is None else text
    if is_blank(text):
        raise EmptyInputError(f"{shown}: empty (only blanks and comments)")
    base_dir = path.parent
    suffix = path.suffix.lower()
    if is_dockerfile(path):
        found = parse_dockerfile(text, shown, base_dir)
    elif suffix in _SHELL_SUFFIXES or text.startswith("#!"):
        found = _shell(text, shown, base_dir)
    elif suffix == ".toml":
        found = _toml(text, shown, base_dir)
    elif suffix in _YAML_SUFFIXES:
        found = _yaml(text, shown, base_dir)
    else:
        try:
            found = _yaml(text, shown, base_dir)
        except SpecprobeError:
            found = _shell(text, shown, base_dir)  # a launch line in a plain file
    deployments, findings = found
    if not deployments and not any(f.severity == "error" for f in findings):
        note = rules.NO_LAUNCH.finding(f"{shown}: no vLLM or SGLang launch found", location=shown)
        note.file, note.line = shown, 1
        findings.append(note)
    return deployments, findings


_KUSTOMIZATIONS = ("kustomization.yaml", "kustomization.yml", "Kustomization")


def _rendered(root: RenderRoot, shown: str) -> tuple[list[Deployment], list[Finding]]:
    """A chart or overlay as its tool renders it; without the tool, one info finding that says so."""
    try:
        text = render(root)
    except NotRenderedError as exc:
        note = rules.NOT_EXAMINED.finding(str(exc), location=shown)
        note.file, note.line = shown, 1
        return [], [note]
    except SpecprobeError as exc:
        return [], [_file_finding(exc, shown)]
    rendered = f"{shown} ({root.tool} rendered)"
    if is_blank(text):
        note = rules.NO_LAUNCH.finding(f"{rendered}: renders no manifest", location=shown)
        note.file, note.line = shown, 1
        return [], [note]
    try:
        return _yaml(text, rendered, root.folder)
    except SpecprobeError as exc:
        return [], [_file_finding(exc, rendered)]


def _file_finding(exc: SpecprobeError, shown: str) -> Finding:
    """What a named file that cannot be read as a deployment becomes: an error for that file when its
    content is broken (malformed YAML, an unclosed quote), info when it is simply another kind of file
    (a kustomize patch, a values file) — the other files are still gated."""
    if isinstance(exc, UnrecognisedFileError):
        note = rules.NO_LAUNCH.finding(f"{exc}: no launch read from it", location=shown)
    else:
        message = str(exc)
        note = rules.VALUE.finding(
            message if message.startswith(shown) else f"{shown}: {message}",
            location=shown,
            hint="Fix the file's syntax; nothing in it was gated.",
        )
    note.file, note.line = shown, _error_line(str(exc), shown)
    return note


def _error_line(message: str, shown: str) -> int:
    """The line a parser's message names (``FILE:LINE: ...``), else 1."""
    rest = message[len(shown) + 1 :] if message.startswith(shown + ":") else ""
    number = rest.split(":", 1)[0]
    return int(number) if number.isdigit() else 1


def load_deployments(path: str, *, stdin_name: str | None = None) -> tuple[list[Deployment], list[Finding]]:
    """The deployments in ``path`` (a file, ``-`` for stdin, or a folder searched for deployment files)
    and the findings about its content. A file whose content is broken or of another kind is a finding
    for that file; EmptyInputError for an input with nothing in it, CannotReadError (a SpecprobeError)
    for a path that does not exist or cannot be read. ``stdin_name`` names stdin in locations and tells
    its form (``Dockerfile``, ``serve.sh``)."""
    if path == "-":
        # `helm template . | specprobe gate -`: the form is told by the content (or by stdin_name);
        # relative paths resolve from here.
        shown = stdin_name or "<stdin>"
        data = sys.stdin.buffer.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            raise SpecprobeError(f"{shown}: larger than {MAX_BYTES // (1024 * 1024)} MiB, not a deployment file")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise SpecprobeError(f"{shown}: not UTF-8 text") from None
        if is_blank(text):
            raise EmptyInputError("no input")
        virtual = Path.cwd() / (stdin_name or "stdin")
        try:
            return _load_file(virtual, shown, text)
        except (EmptyInputError, CannotReadError):
            raise
        except SpecprobeError as exc:
            return [], [_file_finding(exc, shown)]
    given = Path(path).expanduser()
    if not given.exists():
        raise CannotReadError(f"{path} does not exist")
    if given.is_file() and (given.name == "Chart.yaml" or given.name in _KUSTOMIZATIONS):
        given, path = given.parent, str(given.parent)  # a chart or overlay is gated as rendered
    if given.is_dir() and render_root(given) is not None:
        return _rendered(render_root(given), path)  # type: ignore[arg-type]
    if given.is_file():
        try:
            return _load_file(given, path)
        except (EmptyInputError, CannotReadError):
            raise
        except SpecprobeError as exc:
            return [], [_file_finding(exc, path)]
    if not given.is_dir():
        raise CannotReadError(f"{path} is not a file")
    deployments: list[Deployment] = []
    findings: list[Finding] = []
    roots = sorted({p.parent for p in given.rglob("*") if p.name == "Chart.yaml" or p.name in _KUSTOMIZATIONS})
    roots = [root for root in roots if not any(part.startswith(".") for part in root.relative_to(given).parts)]
    for root in roots:
        found_roots = render_root(root)
        if found_roots is not None:
            made, notes = _rendered(found_roots, str(root))
            deployments.extend(made)
            findings.extend(f for f in notes if f.rule != rules.NO_LAUNCH.id)
    files = sorted(
        p
        for p in given.rglob("*")
        if p.is_file()
        and (p.suffix.lower() in _SUFFIXES or is_dockerfile(p))
        and not any(part.startswith(".") for part in p.relative_to(given).parts)
        and not any(root in p.parents for root in roots)  # a chart's templates are read rendered only
    )[:MAX_FILES]
    for file in files:
        try:
            found, notes = _load_file(file, str(file))
        except (UnrecognisedFileError, EmptyInputError):
            continue  # in a folder, files of other kinds (or empty ones) are simply not deployment files
        except CannotReadError as exc:
            note = rules.NOT_EXAMINED.finding(f"not read: {exc}", location=str(file))
            note.file, note.line = str(file), 1
            findings.append(note)
            continue
        except SpecprobeError as exc:
            # Broken content is an error for that file, as when it is named (a chart's raw templates
            # are never read: the chart is rendered, or reported as not rendered).
            findings.append(_file_finding(exc, str(file)))
            continue
        deployments.extend(found)
        findings.extend(f for f in notes if f.rule != rules.NO_LAUNCH.id)
    if not deployments:
        note = rules.NO_LAUNCH.finding(f"{path}: no deployment file with a vLLM or SGLang launch", location=path)
        findings.append(note)
    return deployments, findings
