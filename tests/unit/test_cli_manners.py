"""The command line's manners (issue 51 item 5): `fastlab` alone prints its help and exits 0; every command
and positional argument has help with an example, and every command's example parses; a usage error is
one line in words (never argparse's internal names such as `command_lab`); the bash completion script,
generated from the parser, completes commands, options, choices and files in a real bash."""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fastlab.cli import build_parser, main
from fastlab.cli.completion import bash_script
from fastlab.cli.parsing import walk

REPO = Path(__file__).resolve().parents[2]
PARSERS = walk(build_parser())
IDS = [" ".join(path) or "fastlab" for path, _ in PARSERS]


def fastlab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fastlab", *args], capture_output=True, text=True, timeout=60,
                          cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, check=False)


def test_fastlab_alone_prints_its_help_and_exits_0() -> None:
    proc = fastlab()
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    assert proc.stdout.startswith("usage: fastlab") and "lab " in proc.stdout and "example: fastlab run" in proc.stdout


def test_fastlab_lab_alone_says_in_words_what_is_missing() -> None:
    proc = fastlab("lab")
    assert proc.returncode == 2 and not proc.stdout
    assert proc.stderr.strip().splitlines() == [
        "fastlab lab: missing a command: list, run, check, record or keep; e.g. fastlab lab list "
        "(fastlab lab --help says more)"]


@pytest.mark.parametrize("path, parser", PARSERS, ids=IDS)
def test_every_command_has_help_and_an_example_that_parses(path: tuple[str, ...], parser: argparse.ArgumentParser,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    example = getattr(parser, "example", None)
    assert example and example.startswith("fastlab " + " ".join(path)), (path, example)
    args = build_parser().parse_args(shlex.split(example)[1:])
    assert callable(getattr(args, "func", None)) or not path, example
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        assert action.help, (path, action.dest)
        if not action.option_strings and not isinstance(action, argparse._SubParsersAction):
            assert "(e.g. " in action.help, (path, action.dest, action.help)
    with pytest.raises(SystemExit) as done:
        main([*path, "--help"])
    assert done.value.code == 0 and f"example: {example}" in capsys.readouterr().out


@pytest.mark.parametrize("path, parser", PARSERS, ids=IDS)
def test_a_missing_argument_is_named_in_words(path: tuple[str, ...], parser: argparse.ArgumentParser,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Each command with nothing after it, or with a wrong word where a command goes, is parsed (never
    run): a usage error is one line, exit 2, with no internal name of an argument."""
    tries = [list(path)] + ([[*path, "nosuchcommand"]] if any(
        isinstance(a, argparse._SubParsersAction) for a in parser._actions) else [])
    for argv in tries:
        try:
            build_parser().parse_args(argv)
        except SystemExit as exc:
            assert exc.code == 2, argv
        else:  # a command that needs no argument (list, cleanup, doctor, ...): nothing to name
            continue
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1, err
        said = err.split(": ", 1)[1].split(";")[0]
        assert "required:" not in said and not re.search(r"\b[a-z]+_[a-z_]+\b", said), err
        if argv and argv[-1] == "nosuchcommand":
            assert said.startswith("no command 'nosuchcommand': the commands are "), err
        else:
            missing = [a for a in parser._actions if a.required]
            assert said == "missing " + " and ".join(
                parser.words.get(str(a.metavar), "a command: ") if not a.option_strings else a.option_strings[0]
                for a in missing) or said.startswith("missing a command: "), err


def test_positional_errors_use_words() -> None:
    parser = build_parser()
    sub = dict(walk(parser))[("lab", "check")]
    assert sub.in_words("the following arguments are required: LAB") == (
        "missing the lab: its number, folder name or slug")
    assert dict(walk(parser))[("cc", "set")].in_words("the following arguments are required: ALGORITHM, KEY=VALUE") \
        == "missing the algorithm, fast or hstcp and at least one parameter as KEY=VALUE"


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("completion") / "fastlab.bash"
    path.write_text(bash_script(build_parser()))
    return path


def complete(script: Path, line: str) -> list[str]:
    """What bash offers after `line` (the last word is the one being completed), through the script."""
    if not shutil.which("bash"):
        pytest.skip("no bash on this machine")
    words = shlex.split(line) + ([""] if line.endswith(" ") else [])
    program = (f"source {shlex.quote(str(script))}; COMP_WORDS=({' '.join(shlex.quote(w) for w in words)}); "
               f"COMP_CWORD={len(words) - 1}; _fastlab; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", program], capture_output=True, text=True,
                          cwd=REPO, timeout=30, check=False)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    return sorted(filter(None, proc.stdout.splitlines()))


@pytest.mark.parametrize("line, offered", [
    ("fastlab la", ["lab"]),
    ("fastlab lab ", ["check", "keep", "list", "record", "run"]),
    ("fastlab cc list --impl ", ["bpf", "module"]),
    ("fastlab run --c", ["--check"]),
    ("fastlab lab run 0", ["01-long-fat-pipes", "02-fast-equilibrium", "03-sc2002-table", "04-fairness",
                           "05-hstcp", "06-fast-docsis", "07-loss-vs-delay", "08-fast-reroute", "09-fast-stability"]),
    ("fastlab topo show sc", ["sc2002"]),
    ("fastlab run examples/simple-c", ["examples/simple-cubic.yaml"]),
    ("fastlab run examples/simple-cubic.yaml --set ", []),
    ("fastlab lab record 2 --form ", ["both", "full", "short"]),
])
def test_bash_completion_offers_what_the_parser_takes(script: Path, line: str, offered: list[str]) -> None:
    assert complete(script, line) == offered


def test_fastlab_completion_bash_prints_the_script() -> None:
    proc = fastlab("completion", "bash")
    assert proc.returncode == 0 and proc.stdout == bash_script(build_parser()), proc.stderr
    assert proc.stdout.rstrip().endswith("complete -o filenames -F _fastlab fastlab")
