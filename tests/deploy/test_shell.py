"""The shell reader: bash's grammar (bashlex) and bash's word expansion, checked command by command,
and properties that hold for any text (never an exception other than SpecprobeError)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specprobe.deploy.shell import ShellSyntaxError, parse_script, split_commands
from specprobe.findings import SpecprobeError

FAST = settings(max_examples=60, deadline=3000, suppress_health_check=[HealthCheck.too_slow])


def words_of(text: str) -> list[list[str]]:
    return [command.words for command in split_commands(text)]


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        # Quoting: a quoted variable is one word (leading blank kept), unquoted it is split.
        ('A=" --x 1 --y"\ncmd "$A"\ncmd $A\n', [["cmd", " --x 1 --y"], ["cmd", "--x", "1", "--y"]]),
        ("A='{\"m\": 1}'\ncmd --c \"$A\" '$A'\n", [["cmd", "--c", '{"m": 1}', "$A"]]),
        ('cmd "a"b\'c\' d\\ e\n', [["cmd", "abc", "d e"]]),
        # Assignments: export/local/readonly/declare, defaults, assign-default, alternative, append.
        ("export A=1 B=\"x y\"\ncmd $A \"$B\"\n", [["cmd", "1", "x y"]]),
        ("cmd ${M:-meta/llama} ${N:=7} $N ${M:+set} ${P:+set}x\n", [["cmd", "meta/llama", "7", "7", "x"]]),
        ("M=m\ncmd ${M:-d} ${M:+alt}\n", [["cmd", "m", "alt"]]),
        ("A=a\nA+=b\ncmd $A ${#A}\n", [["cmd", "ab", "2"]]),
        # Arrays: definition over lines with comments, +=, "${A[@]}", ${A[1]}, ${#A[@]}.
        (
            'A=(vllm serve "$M"\n  # comment\n  --x "1 2"\n)\nA+=(--y)\n"${A[@]}" ${A[1]} ${#A[@]}\n',
            [["vllm", "serve", "$M", "--x", "1 2", "--y", "serve", "6"]],  # $M unset here: left as written
        ),
        ("local -a L=(a b)\ndeclare -a D=(c)\ncmd \"${L[@]}\" \"${D[@]}\"\n", [["cmd", "a", "b", "c"]]),
        # Functions run where they are called, with $1...; exec and continuation lines.
        ('start() {\n  local m=$1\n  exec vllm serve "$m" \\\n    --x 2\n}\nstart my/model\n',
         [["exec", "vllm", "serve", "my/model", "--x", "2"]]),
        ("function f { cmd \"$@\"; }\nf 'a b' c\n", [["cmd", "a b", "c"]]),
        (
            'run() {\n  local label="$1"; shift\n  "$@" &\n}\nA=(vllm serve m)\nrun x "${A[@]}"\n',
            [["vllm", "serve", "m"]],
        ),
        # Control flow: every branch of if/case and loop bodies is read.
        (
            "if [[ -n $X && $Y == 1 ]]; then a; elif (( N > 1 )); then b; else c; fi\n",
            [["true"], ["a"], ["true"], ["b"], ["c"]],
        ),
        ("case \"$R\" in\n  p) x --p ;;\n  d|e)\n    y\n    ;;\n  *) z;;\nesac\n", [["x", "--p"], ["y"], ["z"]]),
        (
            "for m in a 'b c'; do cmd $m; done\nwhile true; do w; done\n",
            [["cmd", "a"], ["cmd", "b", "c"], ["true"], ["w"]],
        ),
        # Heredocs and comments do not break the parse; $((...)) is arithmetic; eval re-reads.
        ("cat <<EOF > f\nhello \"unclosed $X\nEOF\nvllm serve m # comment\n", [["vllm", "serve", "m"]]),
        ('N=$((2 * 3))\ncmd "$((N + 1))" $N\n', [["cmd", "0", "0"]]),
        ('eval "vllm serve m --x 1"\n', [["vllm", "serve", "m", "--x", "1"]]),
        # Command substitutions (nested, with quotes) stay as written and are not split inside.
        (
            'D="$(cd "$(dirname "$0")" && pwd)"\nA="--m x --p $(get port)"\ncmd $D/m $A\n',
            [["cmd", "$(cd $(dirname $0) && pwd)/m", "--m", "x", "--p", "$(get port)"]],  # quotes dropped inside
        ),
        # A test whose operands are known decides its branch; unknown tests read every branch, and a
        # variable set in several of them keeps the first branch's value.
        (
            'R=""\nN=0\nif [[ -n "$R" ]]; then cmd r; fi\n'
            'if [ "$N" -gt 0 ]; then cmd n; elif [ "$N" = 0 ]; then cmd z; else cmd e; fi\n'
            'if [ "$C" -le 8 ]; then T=7; elif [ "$C" -le 16 ]; then T=3; else T=0; fi\ncmd $T\n',
            [["[", "0", "=", "0", "]"], ["cmd", "z"], ["[", "$C", "-le", "8", "]"], ["[", "$C", "-le", "16", "]"],
             ["cmd", "7"]],
        ),
        # $(printf ...) with known arguments is what printf prints; an unknown substitution keeps a
        # JSON value's quoting intact.
        (
            "D=org/d\nS=$(printf '{\"model\": \"%s\", \"n\": %d}' \"$D\" 3)\n"
            'P="$(dirname "$M")/x"\ncmd "$S" "{\\"a\\": \\"$P\\"}"\n',
            [["cmd", '{"model": "org/d", "n": 3}', '{"a": "$(dirname $M)/x"}']],
        ),
        # A heredoc that becomes a value: $(cat <<EOF ...) and read -d '' NAME <<EOF (expanded unless quoted).
        (
            "D=d\nS=$(cat <<EOF\n{\"model\": \"$D\"}\nEOF\n)\n"
            "read -r -d '' R <<'E'\n{\"m\": \"$D\"}\nE\ncmd \"$S\" \"$R\"\n",
            [["cmd", '{"model": "d"}', '{"m": "$D"}']],
        ),
        # Heredoc bodies are data, inside functions too, with quoted delimiters.
        (
            'f() {\n  cat <<EOF > x\nUsage: <a> "\nEOF\n  vllm serve m\n}\nf\ncat <<-"E" | tee y\n\tq\n\tE\nz\n',
            [["vllm", "serve", "m"], ["tee", "y"], ["z"]],  # `cat` of a heredoc writes data, runs nothing
        ),
        # Argument parsing: `x=$2` in a branch keeps a non-empty default; an empty one gives way.
        ('m=dflt\nd=""\ncase $1 in --m) m=$2;; --d) d=$2;; esac\ncmd $m $d\n', [["cmd", "dflt", "$2"]]),
    ],
)
def test_commands_as_bash_runs_them(script, expected):
    assert [w for w in words_of(script) if w[:1] not in (["shift"],)] == expected


def test_each_word_keeps_its_line_and_array_elements_their_own():
    script = "#!/bin/bash\nCMD=(vllm serve m\n  --speculative-config '{}'\n)\n\n\"${CMD[@]}\" \\\n  --port 1\n"
    (command,) = split_commands(script)
    assert command.words == ["vllm", "serve", "m", "--speculative-config", "{}", "--port", "1"]
    assert command.lines == [2, 2, 2, 3, 3, 7, 7]
    (folded,) = split_commands("vllm serve m \\\n--x 1", first_line=10, lines_follow_text=False)
    assert folded.lines == [10] * 5


def test_grammar_bashlex_lacks_falls_back_with_a_note():
    script = "select x in a b; do vllm serve m; done\n"
    parsed = parse_script(script)
    assert ["vllm", "serve", "m"] in [c.words for c in parsed.commands]
    ((message, line),) = parsed.notes
    assert "simpler reader" in message and line == 1


def test_unreadable_text_is_a_shell_syntax_error_with_its_line():
    with pytest.raises(ShellSyntaxError) as info:
        split_commands("a\nvllm serve 'unclosed\n", first_line=5)
    assert "\n" not in str(info.value) and info.value.line >= 5


blank = st.sampled_from([" ", "  ", "\t"])
safe_word = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_./:=", min_size=1, max_size=8)


@FAST
@given(st.lists(safe_word, min_size=1, max_size=6), blank)
def test_quoted_expansion_is_one_word_unquoted_is_split(values, gap):
    joined = gap.join(values)
    script = f"V='{gap}{joined}'\ncmd \"$V\"\ncmd $V\n"
    quoted, unquoted = words_of(script)
    assert quoted == ["cmd", gap + joined]
    assert unquoted == ["cmd", *values]


@FAST
@given(st.lists(safe_word, min_size=0, max_size=6))
def test_array_elements_stay_words(values):
    quoted_items = " ".join(f"'{v} x'" for v in values)
    (command,) = words_of(f"A=({quoted_items})\ncmd \"${{A[@]}}\"\n")
    assert command == ["cmd", *(f"{v} x" for v in values)]


fragments = st.sampled_from(
    [
        "A=(", ")", "A+=(x)", '"${A[@]}"', "${A[0]}", "${#A[@]}", "case $x in", "a)", ";;", "esac", "if", "then",
        "fi", "[[ -n $x ]]", "(( i++ ))", "$((1+2))", "f() {", "}", "f", "<<EOF", "EOF", "'", '"', "\\", "\n",
        "&&", "||", ";", "|", "#", "vllm serve m", "python -m dynamo.vllm --model m", "export A=1", "local x=$1",
        "${X:-d}", "${X:=d}", "${X:?e}", "${X#p}", "$(cmd)", "`cmd`", "eval", "exec", "for i in 1; do", "done",
        "while", "do", "select", "function g {", "x=$2", "{", "(", ")",
    ]
)


@FAST
@given(st.lists(st.one_of(fragments, st.text(max_size=6)), max_size=30), st.sampled_from([" ", "\n"]))
def test_any_script_is_commands_or_a_specprobe_error(parts, separator):
    text = separator.join(parts)
    try:
        parsed = parse_script(text, first_line=3)
    except SpecprobeError:
        return
    lines = text.count("\n") + 3
    for command in parsed.commands:
        assert command.words and len(command.words) == len(command.lines)
        assert all(3 <= line <= lines for line in command.lines)
    assert all(3 <= line <= lines for _, line in parsed.notes)


simple_fragments = st.sampled_from(
    [
        "vllm", "serve", "--x", "1", "A=1", "B='a b'", 'C="$A x"', "$A", '"$B"', "${X:-d e}", '"${C}"', "$(cmd a)",
        "'q r'", '"s \\" t"', "\\\n", "\n", "# note", "export", "local", "exec", "A=(a 'b c')", '"${A[@]}"',
        "$((1 + 2))", "x\\ y",
    ]
)


@FAST
@given(st.lists(simple_fragments, max_size=25))
def test_the_fast_reader_of_simple_commands_agrees_with_bashlex(parts):
    import specprobe.deploy.shell as shell

    text = " ".join(parts)
    try:
        fast = [(c.words, c.lines) for c in shell.parse_script(text).commands]
    except SpecprobeError:
        fast = None
    original = shell._simple_commands
    shell._simple_commands = lambda _text: None  # every text through bashlex
    try:
        try:
            slow = [(c.words, c.lines) for c in shell.parse_script(text).commands]
        except SpecprobeError:
            slow = None
    finally:
        shell._simple_commands = original
    assert fast == slow
