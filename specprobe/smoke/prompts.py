"""Prompt sets for the smoke test: the built-in set written for specprobe, or a user's JSONL file.

Each line is an object with `prompt` (a string) or `messages` (chat messages); `id` is optional.
The tokenizer's chat template is applied when it has one, so a chat model is measured in the format
it is served with (acceptance drops when a drafter meets another template).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from specprobe.findings import SpecprobeError

BUILTIN_PROMPTS = "builtin.jsonl"


@dataclass(frozen=True)
class Prompt:
    id: str
    messages: tuple[tuple[str, str], ...]

    @property
    def text(self) -> str:
        """The plain text form (no chat template): the user turns joined."""
        return "\n\n".join(content for _, content in self.messages)

    def chat(self) -> list[dict[str, str]]:
        return [{"role": role, "content": content} for role, content in self.messages]


def _parse_line(line: str, number: int, source: str) -> Prompt:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise SpecprobeError(f"{source}:{number}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise SpecprobeError(f"{source}:{number}: expected an object with 'prompt' or 'messages'")
    prompt_id = str(data.get("id", f"prompt-{number}"))
    if isinstance(data.get("prompt"), str) and data["prompt"]:
        return Prompt(prompt_id, (("user", data["prompt"]),))
    messages = data.get("messages")
    if isinstance(messages, list) and messages:
        parsed: list[tuple[str, str]] = []
        for message in messages:
            if not (isinstance(message, dict) and isinstance(message.get("content"), str)):
                raise SpecprobeError(f"{source}:{number}: each message needs a string 'content'")
            parsed.append((str(message.get("role", "user")), message["content"]))
        return Prompt(prompt_id, tuple(parsed))
    raise SpecprobeError(f"{source}:{number}: expected a non-empty 'prompt' string or 'messages' list")


def parse_prompts(text: str, source: str) -> list[Prompt]:
    prompts = [_parse_line(line, i, source) for i, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not prompts:
        raise SpecprobeError(f"{source}: no prompts")
    return prompts


def load_prompts(path: Path | None = None, *, limit: int | None = None) -> list[Prompt]:
    """The prompts of ``path`` (JSONL) or the built-in set, the first ``limit`` of them."""
    if path is None:
        text = resources.files("specprobe").joinpath("data", "prompts", BUILTIN_PROMPTS).read_text(encoding="utf-8")
        prompts = parse_prompts(text, f"built-in {BUILTIN_PROMPTS}")
    else:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SpecprobeError(f"cannot read prompts {path}: {exc}") from None
        prompts = parse_prompts(text, str(path))
    return prompts[:limit] if limit else prompts


def encode_prompts(tokenizer: Any, prompts: list[Prompt]) -> list[list[int]]:
    """Token ids per prompt, through the chat template when the tokenizer has one."""
    encoded: list[list[int]] = []
    for prompt in prompts:
        if getattr(tokenizer, "chat_template", None):
            ids = tokenizer.apply_chat_template(prompt.chat(), add_generation_prompt=True, tokenize=True)
            if isinstance(ids, dict) or hasattr(ids, "keys"):
                ids = ids["input_ids"]
        else:
            ids = tokenizer(prompt.text, add_special_tokens=True)["input_ids"]
        ids = [int(i) for i in ids]
        if not ids:
            raise SpecprobeError(f"prompt {prompt.id!r} encodes to no tokens")
        encoded.append(ids)
    return encoded
