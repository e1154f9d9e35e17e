"""Finding the engine launch inside what a container or script runs.

An argument vector may be the serve command itself, a shell running one (``sh -c "..."``, the form
the engines' own Kubernetes docs use), a ``docker run IMAGE ARGS`` line, or a wrapper (``uv run``,
``conda run -n env``, ``timeout``, ``nohup``). Container arguments without a command run through the
image's entrypoint (``vllm/vllm-openai`` runs ``vllm serve``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from specprobe.deploy import rules
from specprobe.deploy.argv import detect_engine
from specprobe.deploy.engines import image_engine, image_entrypoint, image_without_entrypoint
from specprobe.deploy.launchers import unwrap
from specprobe.deploy.model import Deployment, deployment_from_argv
from specprobe.deploy.sglang_config import splice_sglang_config
from specprobe.deploy.shell import UNEXPANDED, ShellSyntaxError, parse_script
from specprobe.deploy.vllm_config import annotate_speculative, config_path, splice_config
from specprobe.deploy.yamlsource import LineDict, load_documents
from specprobe.findings import Finding, SpecprobeError

_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ash", "ksh"})
_CONTAINER_RUNNERS = frozenset({"docker", "podman", "nerdctl"})
# docker/podman run options that take a value (the others are switches).
_RUN_VALUE_OPTIONS = frozenset(
    {
        "-a", "--attach", "--add-host", "--annotation", "--blkio-weight", "--cap-add", "--cap-drop",
        "--cgroup-parent", "--cgroupns", "--cidfile", "--cpu-period", "--cpu-quota", "--cpu-shares", "-c", "--cpus",
        "--cpuset-cpus", "--cpuset-mems", "--device", "--device-cgroup-rule", "--dns", "--dns-option",
        "--dns-search", "--domainname", "-e", "--env", "--env-file", "--expose", "--gpus", "--group-add",
        "--health-cmd", "--health-interval", "--health-retries", "--health-start-period", "--health-timeout", "-h",
        "--hostname", "--ip", "--ip6", "--ipc", "--isolation", "--kernel-memory", "-l", "--label", "--label-file",
        "--link", "--log-driver", "--log-opt", "--mac-address", "-m", "--memory", "--memory-reservation",
        "--memory-swap", "--mount", "--name", "--network", "--net", "--network-alias", "--oom-score-adj", "--pid",
        "--pids-limit", "--platform", "-p", "--publish", "--pull", "--restart", "--runtime", "--security-opt",
        "--shm-size", "--stop-signal", "--stop-timeout", "--storage-opt", "--sysctl", "--tmpfs", "--ulimit", "-u",
        "--user", "--userns", "--uts", "-v", "--volume", "--volumes-from", "-w", "--workdir", "--entrypoint",
    }
)
MAX_DEPTH = 4


@dataclass
class Launch:
    """A serve command found in a container, service or script, with the line of each word."""

    argv: list[str]
    lines: list[int | None]
    image: str | None = None
    variables: dict[str, str] = field(default_factory=dict)


@dataclass
class Search:
    """What a search found: launches, and findings about what it could not follow."""

    launches: list[Launch] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def shown_command(words: list[str], limit: int = 4) -> str:
    """The first words of a command for a message, each cut short."""
    shown = " ".join(word if len(word) <= 40 else word[:37] + "..." for word in words[:limit])
    return shown + (" ..." if len(words) > limit else "")


def _shell_script(argv: list[str]) -> int | None:
    """For ``sh [-e] -c SCRIPT ...`` the index of SCRIPT."""
    if not argv or PurePosixPath(argv[0]).name not in _SHELLS:
        return None
    for i in range(1, len(argv)):
        option = argv[i]
        if not option.startswith("-") or option == "--":
            return None
        if option.startswith("-") and not option.startswith("--") and "c" in option[1:]:
            return i + 1 if i + 1 < len(argv) else None
    return None


def _docker_run(argv: list[str]) -> int | None:
    """For ``docker run [options] IMAGE ...`` the index of IMAGE."""
    if not argv or PurePosixPath(argv[0]).name not in _CONTAINER_RUNNERS:
        return None
    i = 1
    if argv[i : i + 2] == ["container", "run"]:
        i += 2
    elif argv[i : i + 1] == ["run"]:
        i += 1
    else:
        return None
    while i < len(argv):
        option = argv[i]
        if not option.startswith("-") or option == "-":
            return i
        i += 2 if option in _RUN_VALUE_OPTIONS else 1
    return None


def _docker_options(argv: list[str], image_at: int) -> tuple[dict[str, str], list[str] | None]:
    """``-e K=V`` variables and ``--entrypoint`` of a docker run line."""
    env: dict[str, str] = {}
    entrypoint: list[str] | None = None
    i = 2 if argv[1:2] == ["run"] else 3
    while i < image_at:
        option, eq, inline = argv[i].partition("=")
        takes = option in _RUN_VALUE_OPTIONS and not eq
        value = inline if eq else (argv[i + 1] if takes and i + 1 < image_at else "")
        if option in ("-e", "--env") and "=" in value:
            name, _, assigned = value.partition("=")
            env[name] = assigned
        elif option == "--entrypoint" and value:
            entrypoint = [value]
        i += 2 if takes else 1
    return env, entrypoint


def through_entrypoint(
    image: str | None, args: list[str], args_lines: list[int | None], at_line: int | None
) -> tuple[list[str], list[int | None], list[Finding]]:
    """What a container with only arguments runs: the image's entrypoint followed by them.

    A vllm/vllm-openai container whose arguments repeat `vllm serve` is a finding: the image runs
    `vllm serve vllm serve ...` and vLLM refuses it.
    """
    entrypoint = image_entrypoint(image)
    if entrypoint is None:
        return args, args_lines, []
    if detect_engine(args) is not None:
        doubled = rules.ENTRYPOINT_DOUBLED.finding(
            f"image {image} already starts the server from its entrypoint (`{' '.join(entrypoint)}`); these "
            f"arguments make it run `{' '.join(entrypoint)} {shown_command(args, 3)}`, which vLLM refuses",
            location=image,
            hint="Drop `vllm serve` from args (keep the model and flags), or set `command` explicitly.",
        )
        doubled.line = args_lines[0] if args_lines else at_line
        return args, args_lines, [doubled]
    return [*entrypoint, *args], [at_line] * len(entrypoint) + list(args_lines), []


_VLLM_ONLY_FLAGS = ("--speculative-config", "--speculative_config", "--served-model-name", "--gpu-memory-utilization")
_SGLANG_ONLY_FLAGS = (
    "--model-path",
    "--speculative-algorithm",
    "--speculative-draft-model-path",
    "--mem-fraction-static",
)


def assumed_launcher(image: str | None, args: list[str]) -> tuple[str, ...] | None:
    """For arguments alone under an image of unknown entrypoint: the launcher they are written for."""
    if not args or detect_engine(args) is not None:
        return None
    flags = {arg.split("=", 1)[0] for arg in args if arg.startswith("--")}
    if not flags:
        return None
    engine = image_engine(image) if image else None
    if any(flag in flags for flag in _SGLANG_ONLY_FLAGS) or (engine == "sglang" and args[0].startswith("-")):
        return ("python3", "-m", "sglang.launch_server")
    if any(flag.startswith(_VLLM_ONLY_FLAGS) for flag in flags) or engine == "vllm":
        return ("vllm", "serve")
    return None


def assume_launcher(
    image: str | None, args: list[str], args_lines: list[int | None], at_line: int | None
) -> Search:
    """``find_launches`` on the assumed launcher + ``args``, with a finding that says it was assumed."""
    launcher = assumed_launcher(image, args)
    if launcher is None:
        return Search()
    found = find_launches([*launcher, *args], [at_line] * len(launcher) + list(args_lines), image=image)
    if found.launches and image_without_entrypoint(image) and args[0].startswith("-"):
        note = rules.NO_ENTRYPOINT.finding(
            f"{image} has no entrypoint: the container runs `{args[0]}` as a program and fails to start",
            location=image,
            hint=f"Set the command: [{', '.join(repr(word) for word in launcher)}] before these arguments.",
        )
        note.line = at_line
        found.findings.insert(0, note)
    elif found.launches:
        note = rules.ENTRYPOINT_ASSUMED.finding(
            f"the entrypoint of {image or 'the image'} is not known to specprobe; "
            f"the arguments were read as `{' '.join(launcher)} ...`",
            location=image,
        )
        note.line = at_line
        found.findings.insert(0, note)
    return found


def find_launches(
    argv: list[str],
    lines: list[int | None],
    *,
    image: str | None = None,
    variables: dict[str, str] | None = None,
    text_origin: dict[int, tuple[int, bool]] | None = None,
    depth: int = 0,
) -> Search:
    """Every serve command ``argv`` runs. ``text_origin`` maps a word's index to (first line of its text,
    whether its lines follow the file) for shell strings from YAML block scalars."""
    found = Search()
    scope = dict(variables or {})
    given = len(argv)
    argv, lines = unwrap(argv, lines)
    dropped = given - len(argv)
    if not argv or depth > MAX_DEPTH:
        return found
    if detect_engine(argv) is not None:
        found.launches.append(Launch(list(argv), list(lines), image=image, variables=scope))
        return found
    script_at = _shell_script(argv)
    if script_at is not None:
        origin = (text_origin or {}).get(script_at + dropped)
        first_line, follows = origin if origin is not None else (lines[script_at] or 1, True)
        try:
            script = parse_script(argv[script_at], first_line=first_line, lines_follow_text=follows, variables=scope)
        except ShellSyntaxError as exc:
            bad = rules.VALUE.finding(f"the shell script given to {argv[0]} -c cannot be read: {exc}")
            bad.line = exc.line
            found.findings.append(bad)
            return found
        for message, line in script.notes:
            note = rules.NOT_EXAMINED.finding(message, location=argv[0])
            note.line = line
            found.findings.append(note)
        for command in script.commands:
            inner = find_launches(
                command.words, list(command.lines), image=image, variables=command.variables, depth=depth + 1
            )
            found.launches.extend(inner.launches)
            found.findings.extend(inner.findings)
        return found
    image_at = _docker_run(argv)
    if image_at is not None:
        run_image = argv[image_at]
        env, entrypoint = _docker_options(argv, image_at)
        args, args_lines = argv[image_at + 1 :], lines[image_at + 1 :]
        if entrypoint is not None:
            args, args_lines = [*entrypoint, *args], [lines[image_at], *args_lines]
            doubled: list[Finding] = []
        else:
            args, args_lines, doubled = through_entrypoint(run_image, args, args_lines, lines[image_at])
        found.findings.extend(doubled)
        inner = find_launches(args, args_lines, image=run_image, variables={**scope, **env}, depth=depth + 1)
        found.launches.extend(inner.launches)
        found.findings.extend(inner.findings)
        if not inner.launches and image_engine(run_image) is not None:
            note = rules.NO_LAUNCH.finding(
                f"`{argv[0]} run {run_image}` runs no serve command specprobe recognises", location=run_image
            )
            note.line = lines[image_at]
            found.findings.append(note)
    return found


def _unexpanded_notes(deployment: Deployment) -> list[Finding]:
    """One finding per launch word that still holds a variable reference (target and draft are
    reported where they are resolved)."""
    notes = []
    skip = {deployment.target, deployment.draft}
    for index, word in enumerate(deployment.argv):
        if word in skip or not UNEXPANDED.search(word):
            continue
        note = rules.NOT_EXAMINED.finding(
            f"{word!r} holds a variable reference that the file does not define; its value was not examined",
            location=word,
        )
        note.line = deployment.source.argv_line(index)
        notes.append(note)
    return notes


# A word holding a flag after a blank (" --model-path m --tp 2"): flags an engine would need split.
_JOINED_FLAGS = re.compile(r"(^|\s)--?[A-Za-z][A-Za-z0-9_-]*")


def known_text(word: str) -> str:
    """``word`` with each unexpanded part (a variable, ``$(...)`` with its parentheses) replaced by one
    non-blank placeholder: what the shell passes whatever those parts hold."""
    out: list[str] = []
    i = 0
    while i < len(word):
        match = UNEXPANDED.match(word, i)
        if match is None:
            out.append(word[i])
            i += 1
            continue
        end = match.end()
        if match.group(0) == "$(":
            depth = 1
            while end < len(word) and depth:
                depth += {"(": 1, ")": -1}.get(word[end], 0)
                end += 1
        out.append("\x00")
        i = end
    return "".join(out)


def _joined_flag_notes(deployment: Deployment) -> list[Finding]:
    """One error per launch argument that holds several flags in one word.

    The shell passes ``"$ARGS"`` (quoted) as a single argument, and a YAML list item
    ``"--model m --port 1"`` is a single argument too; argparse then sees one positional it does not
    accept (or takes it as the model), and the server refuses to start."""
    command = deployment.command
    if command is None:
        return []
    detected = detect_engine(deployment.argv)
    start = detected[1] if detected is not None else 0
    flag_tokens = set(command.positions.values())
    notes = []
    values = set(command.value_positions.values()) - flag_tokens
    for index in range(start, len(deployment.argv)):
        raw = deployment.argv[index]
        # Unknown parts (`$2`, `$(...)`) may expand to anything, but the blanks and flags written around them
        # are there whatever their value: the word is judged on what is known, each unknown part standing
        # for one non-blank character.
        word = known_text(raw)
        if index in flag_tokens:
            joined = any(char.isspace() for char in word.partition("=")[0])  # "--port 8000" as one word
        elif index in values:
            # A flag's value may hold blanks (a chat template, JSON); one that hides more flags may not.
            joined = word[:1].isspace() or bool(re.search(r"\s--[A-Za-z]", word))
        else:
            joined = bool(_JOINED_FLAGS.search(word)) and any(char.isspace() for char in word)
        # A word still holding `$(...)` or an unset variable is not known: what it splits into is not either.
        if joined and not word.lstrip().startswith(("{", "[")):
            note = rules.VALUE.finding(
                f"the launch argument {shown_command([raw], 1)!r} holds several flags in one word: the engine "
                "receives it as one argument (a quoted \"$VAR\" or one YAML item), reads no flag from it and "
                "refuses to start (unrecognized arguments, or no model)",
                location=raw.strip()[:40],
                hint='Split it: leave the variable unquoted ($ARGS), or build an array and run "${ARGS[@]}"; in '
                "YAML give each flag and value as its own list item.",
            )
            note.line = deployment.source.argv_line(index)
            notes.append(note)
    return notes


def _with_config_file(
    launch: Launch, base_dir: Path, configs: dict[str, LineDict]
) -> tuple[list[str], list[int | None], LineDict | None]:
    """The launch with its vLLM ``--config`` file spliced in, and that config when its lines are this
    file's (a ConfigMap of the same manifest)."""
    path = config_path(launch.argv)
    detected = detect_engine(launch.argv)
    if not path or detected is None or detected[0] not in ("vllm", "sglang"):
        return launch.argv, launch.lines, None
    # Each engine merges the file its own way (order, booleans): deploy/vllm_config.py, deploy/sglang_config.py.
    splice = splice_config if detected[0] == "vllm" else splice_sglang_config
    name = PurePosixPath(path).name
    if name in configs:
        return (*splice(launch.argv, launch.lines, configs[name]), configs[name])
    local = Path(path) if Path(path).is_absolute() else base_dir / path
    try:
        if local.is_file() and local.stat().st_size < 1024 * 1024:
            documents = load_documents(local.read_text(encoding="utf-8"), path)
            if documents and isinstance(documents[0], LineDict):
                index = launch.argv.index(next(w for w in launch.argv if w.startswith("--config")))
                spliced = splice(launch.argv, launch.lines, documents[0], config_line=launch.lines[index])
                return (*spliced, None)
    except (OSError, UnicodeDecodeError, SpecprobeError):
        pass  # an unreadable config file leaves the launch as written; lint reports what it can
    return launch.argv, launch.lines, None


def to_deployments(
    search: Search,
    *,
    name: str,
    file: str,
    base_dir: Path,
    line: int | None,
    image: str | None = None,
    image_line: int | None = None,
    device: str | None = None,
    configs: dict[str, LineDict] | None = None,
) -> tuple[list[Deployment], list[Finding]]:
    """Deployments for the launches found (named ``name``, ``name#2``...) and, when none was found,
    the search's findings for the caller to report against the file. A vLLM ``--config FILE`` is read
    from ``configs`` (file name -> parsed config, e.g. a ConfigMap of the same manifest) or from the
    file itself when it is on this machine (relative to ``base_dir``)."""
    deployments: list[Deployment] = []
    for index, launch in enumerate(search.launches):
        argv, argv_lines, config = _with_config_file(launch, base_dir, configs or {})
        deployment = deployment_from_argv(
            argv,
            file,
            line,
            argv_lines=argv_lines,
            name=name if index == 0 else f"{name}#{index + 1}",
            base_dir=base_dir,
        )
        if config is not None:
            annotate_speculative(deployment, config)
        deployment.image = launch.image or image
        deployment.source.set("image", image_line if deployment.image == image else launch.lines[0])
        deployment.env = {**launch.variables, **deployment.env}
        if deployment.device is None and device is not None:
            deployment.device = device
        deployment.findings.extend(_joined_flag_notes(deployment))
        deployment.findings.extend(_unexpanded_notes(deployment))
        deployments.append(deployment)
    if deployments:
        deployments[0].findings[:0] = search.findings
        for deployment in deployments:
            deployment.findings = [deployment.locate(f) for f in deployment.findings]
        return deployments, []
    return [], search.findings


@dataclass
class ContainerRun:
    """What one container (a Kubernetes container, a compose service) runs: its words, each word's
    source line and text origin, and whether it names its own entrypoint (Kubernetes ``command``,
    compose ``entrypoint``) or only the image entrypoint's arguments (``args``, ``command``)."""

    spec: LineDict
    words: list[str]
    lines: list[int | None]
    origins: dict[int, tuple[int, bool]]
    own_entrypoint: bool
    arguments_given: bool
    arguments_key: str
    problems: list[Finding] = field(default_factory=list)


def container_deployments(
    run: ContainerRun,
    *,
    name: str,
    file: str,
    base_dir: Path,
    image: str | None,
    variables: dict[str, str],
    device: str | None,
    configs: dict[str, LineDict] | None = None,
) -> tuple[list[Deployment], list[Finding]]:
    """The deployments a container runs, and findings placed in ``file`` under ``name``: arguments alone
    go through the image's entrypoint; without a serve command on an engine image, DEPLOY-NO-LAUNCH."""
    words, lines, origins = run.words, run.lines, run.origins
    search = Search(findings=run.problems)
    if not run.own_entrypoint and run.arguments_given:
        before = len(words)
        words, lines, doubled = through_entrypoint(image, words, lines, run.spec.line_of("image"))
        origins = {index + len(words) - before: origin for index, origin in origins.items()}
        search.findings.extend(doubled)
    if words:
        found = find_launches(words, lines, image=image, variables=variables, text_origin=origins)
        if not found.launches and not run.own_entrypoint:
            found = assume_launcher(image, words, lines, run.spec.line_of(run.arguments_key))
        search.launches.extend(found.launches)
        search.findings.extend(found.findings)
    deployments, leftover = to_deployments(
        search,
        name=name,
        file=file,
        base_dir=base_dir,
        line=run.spec.line,
        image=image,
        image_line=run.spec.line_of("image") if "image" in run.spec else None,
        device=device,
        configs=configs,
    )
    if not deployments and image is not None and image_engine(image) is not None:
        how = "its image's default command" if not words else f"`{shown_command(words)}`"
        note = rules.NO_LAUNCH.finding(
            f"engine image {image} runs {how}, which is no serve command specprobe recognises",
            location=image,
        )
        note.line = run.spec.line
        leftover.append(note)
    for finding in leftover:
        finding.file, finding.deployment = file, name
        finding.line = finding.line or run.spec.line
    return deployments, leftover
