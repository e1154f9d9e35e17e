"""The quoting hint for a ``--speculative-config`` value that is not JSON: what the value most likely
was before a shell or a YAML file took its quotes away, written back as the command to type.

The usual causes are the shell's: ``--speculative-config {"method": "eagle3"}`` without outer single
quotes reaches vLLM as ``{method: eagle3}`` (the shell removed the double quotes), and a value written
with Python's single quotes (``{'method': 'eagle3'}``) is no JSON either. The value is repaired only as
text (bare words and single-quoted strings become JSON strings) and then read by the bounded JSON
reader; nothing in it is evaluated."""

from __future__ import annotations

import json
import re

from specprobe.untrusted.files import UntrustedInputError, parse_json

# Longer values are not worth repairing: a hint quotes the whole value back.
_MAX_REPAIR = 4096
_SINGLE_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'")
# A bare word where JSON wants a string: a key before ':' or a value before ',' / '}' / ']'.
_BARE = re.compile(r'(?<=[{\[,:])(\s*)([A-Za-z_./][\w./:-]*?)(\s*)(?=[:,}\]])')
_LITERALS = {"true", "false", "null", "NaN", "Infinity"}
_EXAMPLE = '{"method": "eagle3", "model": "...", "num_speculative_tokens": 3}'
_RULE_OF_QUOTES = "JSON needs double-quoted keys and strings, and a shell keeps them only inside single quotes"


def _reads(raw: str) -> bool:
    try:
        parse_json(raw, what="the value")
    except UntrustedInputError:
        return False
    return True


def _repair(raw: str) -> str | None:
    text = _SINGLE_QUOTED.sub(lambda m: json.dumps(m.group(1)), raw)

    def quoted(match: re.Match[str]) -> str:
        word = match.group(2)
        return match.group(0) if word in _LITERALS else f"{match.group(1)}{json.dumps(word)}{match.group(3)}"

    text = _BARE.sub(quoted, text)
    try:
        value = parse_json(text, what="the value").value
    except UntrustedInputError:
        return None
    return json.dumps(value) if isinstance(value, dict) else None


def quoting_hint(raw: str | None, flag: str = "--speculative-config") -> str:
    """What to write instead of ``raw``: the repaired value inside single quotes when the repair reads
    as a JSON object, else how JSON and a shell quote."""
    if raw and _reads(raw):
        return f"the value is JSON but not an object: {flag} '{_EXAMPLE}'"
    repaired = _repair(raw) if raw and len(raw) <= _MAX_REPAIR else None
    if repaired is not None and "'" not in repaired:
        return f"{_RULE_OF_QUOTES}: {flag} '{repaired}'"
    return f"{_RULE_OF_QUOTES}: {flag} '{_EXAMPLE}' (in YAML, quote the whole value)"
