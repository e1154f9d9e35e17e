"""Runner of the hub fixture kind: ``hub-check``.

``hub-check``: a ``check``-schema drafter (and target) published as hub repositories ``acme/draft`` and
``acme/target`` on the loopback hub server (tests/hub/hubserver.py), then ``specprobe check acme/draft
--target acme/target`` run as a user runs it: the CLI in a subprocess with HF_ENDPOINT set. ``draft_repo``
and ``target_repo`` are the repositories' settings (``gated``, ``private``, ``allowed_tokens``,
``delay_s``); ``token`` sends the fixture token as HF_TOKEN; ``env`` adds variables (SPECPROBE_HUB_TIMEOUT).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.hub.conftest import TOKEN, hub_env, specprobe
from tests.hub.hubserver import publish, serve_hub
from tests.rules.runners.check import _build


def run_hub_check_case(case: dict[str, Any], folder: Path, tmp_path: Path) -> set[str]:
    draft_dir, kwargs = _build(case, tmp_path)
    root = tmp_path / "repos"
    publish(root, "acme/draft", draft_dir, case.get("draft_repo"))
    args = ["check", "acme/draft", "--format", "json"]
    if "target" in kwargs:
        publish(root, "acme/target", Path(kwargs["target"]), case.get("target_repo"))
        args += ["--target", "acme/target"]
    if "engine" in kwargs:
        args += ["--engine", kwargs["engine"]]
    with serve_hub(root, tokens=(TOKEN,)) as hub:
        extra = dict(case.get("env", {}))
        if case.get("token"):
            extra["HF_TOKEN"] = TOKEN
        run = specprobe(args, hub_env(hub.url, tmp_path / "home", **extra))
    report = json.loads(run.stdout)
    return {finding["rule"] for finding in report["findings"]}


RUNNERS = {"hub-check": run_hub_check_case}
