"""Untrusted strings reach terminals, CI logs and rendered pages only escaped (specprobe.untrusted.text)."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.text import Text

from specprobe.findings import Finding, Report, Severity
from specprobe.reporters.text import TextReporter
from specprobe.untrusted import text as textsafe

HOSTILE = "evil\nPASS 0 error(s)\x1b[2J\x1b]8;;http://x\x07\u202egnp.\u2028[bold red]x[/]\r\x00%0A"


def _report(text: str) -> Report:
    report = Report(command="check", subject={"draft": text, "target": None}, specprobe_version="0.1.0")
    report.add(Finding(rule="FILES-HEADER-INVALID", severity=Severity.ERROR, message=f"{text}: bad", location=text,
                       hint=text, evidence=[text]))
    return report


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_terminal_output_has_only_printable_characters(text: str) -> None:
    escaped = textsafe.terminal(text)
    assert escaped.isprintable()
    if text.isprintable():
        assert escaped == text


@settings(max_examples=100, deadline=None)
@given(st.text())
def test_annotation_escapes_cannot_be_decoded_into_a_newline(text: str) -> None:
    data = textsafe.annotation_data(text)
    assert "\n" not in data and "\r" not in data
    # The runner decodes %25 last-to-first; decoding must give back the terminal-escaped text.
    decoded = data.replace("%0A", "\n").replace("%0D", "\r").replace("%25", "%")
    assert decoded == textsafe.terminal(text)
    prop = textsafe.annotation_property(text)
    assert ":" not in prop and "," not in prop


@settings(max_examples=100, deadline=None)
@given(st.text())
def test_markdown_escape_leaves_no_markup_character_bare(text: str) -> None:
    escaped = textsafe.markdown(text)
    bare = escaped.replace("\\\\", "")
    for special in "`*_[]<>|#~&@":
        assert bare.count(special) == bare.count("\\" + special)


@settings(max_examples=100, deadline=None)
@given(st.text())
def test_code_span_fence_is_longer_than_any_backtick_run(text: str) -> None:
    span = textsafe.markdown_code(text)
    fence = len(span) - len(span.lstrip("`"))
    assert "`" * fence not in span[fence:-fence]


def test_rich_markup_in_a_value_is_shown_as_written() -> None:
    buffer = io.StringIO()
    Console(file=buffer, force_terminal=False, width=200).print(textsafe.rich_markup("[bold]x[/bold] \x1b[2J"))
    assert buffer.getvalue().strip() == "[bold]x[/bold] \\x1b[2J"


def test_plain_text_report_keeps_every_hostile_string_on_its_line() -> None:
    rendered = TextReporter(color=False).render(_report(HOSTILE))
    assert "\x1b" not in rendered and "\u202e" not in rendered and "\r" not in rendered and "\x00" not in rendered
    lines = rendered.splitlines()
    # subject, blank, heading, finding, hint, see, blank, verdict: the newline in the name adds none.
    assert len(lines) == 8
    assert [line for line in lines if line.startswith("PASS")] == []
    assert lines[-1].startswith("FAIL")


def test_colour_report_escapes_and_does_not_interpret_markup() -> None:
    rendered = TextReporter(color=True).render(_report(HOSTILE))
    plain = Text.from_ansi(rendered).plain
    assert "[bold red]x[/]" in plain
    assert "\\x1b[2J" in plain and "\\u202e" in plain
    assert "\x1b[2J" not in rendered and "\x1b]8" not in rendered
    assert not any(line.startswith("PASS") for line in plain.splitlines())
