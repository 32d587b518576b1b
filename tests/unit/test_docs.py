"""The documentation (issue 51 items 1 and 6): README.md a front door of at most 1,200 words; docs/ builds with
MkDocs in strict mode (a broken link or anchor fails); and every `fastlab.x.y` name, repository path and
`fastlab` command that README.md, docs/ and the labs' texts (labs/README.md, each lab's README.md and
INSTRUCTOR.md) name exists: each module imports (and each attribute after it is there), each path is a file
or folder of the checkout (relative to the text's folder or to the checkout), and each command parses with
the real parser (a synopsis such as `fastlab lab record N [--step ID]`: its command exists and takes each
option named), and `fastlab <command> --help` answers for every command named. Figures the pages state
about the code (the labs' steps, the benches) are compared with the code."""

from __future__ import annotations

import argparse
import importlib
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from fastlab.cli import build_parser, main
from fastlab.cli.parsing import walk

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"
TEXTS = sorted([README, REPO / "labs" / "README.md", *DOCS.glob("*.md"), *(REPO / "labs").glob("*/README.md"),
                *(REPO / "labs").glob("*/INSTRUCTOR.md")])
README_MAX_WORDS = 1200
NAME = re.compile(r"\bfastlab(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
FENCE = re.compile(r"^(```|~~~)(\w*)[^\n]*\n(.*?)^\1\s*$", re.M | re.S)
SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
LINK = re.compile(r"\]\(([^)\s]+)\)")
PATH = re.compile(r"^\.{0,2}/?[A-Za-z0-9_.\-]+(?:/[A-Za-z0-9_.*\-]+)+/?$")  # * : a glob, one match at least
PATH_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".sh", ".c", ".h", ".json", ".ipynb", ".cff", ".txt", ".csv",
                 ".gz", ".png", ".toml"}
TOP = {p.name for p in REPO.iterdir() if not p.name.startswith(".")}
GENERATED = ("results/", ".cache/", "test-artifacts/", "site/", ".venv/")  # made by runs and builds
SHELL_LANGS = {"", "sh", "bash", "console", "shell"}
SYNOPSIS = re.compile(r"[\[\]|]|\.\.\.|^[A-Z][A-Z0-9_.=]*$")  # [--opt], a|b, ..., PLACEHOLDER
PLACEHOLDER = re.compile(r"(^|[_/-])[A-Z]{1,4}([._/-]|$)")  # tests/unit/test_X.py, labs/NN-slug


def rel(path: Path) -> str:
    return str(path.relative_to(REPO))


def prose(text: str) -> str:
    """The text without its fenced code blocks."""
    return FENCE.sub("", text)


def fences(text: str) -> Iterator[tuple[str, str]]:
    for match in FENCE.finditer(text):
        yield match.group(2), match.group(3)


# --- the front door -------------------------------------------------------------------------------------

def test_the_readme_is_a_front_door() -> None:
    text = README.read_text()
    words = len(text.split())
    assert words <= README_MAX_WORDS, f"README.md has {words} words (at most {README_MAX_WORDS}): move detail to docs/"
    for must in ("make run", "make test", "make check", "docs/"):
        assert must in text, must


def test_licence_and_citation() -> None:
    licence = (REPO / "LICENSE").read_text()
    assert licence.startswith("BSD 3-Clause License") and "GPL-2.0" in licence  # kernel-modules/ is GPL, marked
    citation = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0" and citation["license"] == "BSD-3-Clause"
    assert {"message", "title", "authors", "type"} <= set(citation) and citation["authors"]
    for ref in citation.get("references", []):
        assert {"type", "title", "authors"} <= set(ref), ref


# --- names ------------------------------------------------------------------------------------------------

def named_modules() -> list[tuple[str, str]]:
    return sorted({(rel(path), name.rstrip(".")) for path in TEXTS for name in NAME.findall(path.read_text())})


def resolve(dotted: str) -> object:
    """The module or attribute a dotted name names: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:n]))
        except ModuleNotFoundError:
            continue
        for attr in parts[n:]:
            found = getattr(found, attr)  # AttributeError: the name is not there
        return found
    raise ModuleNotFoundError(dotted)


@pytest.mark.parametrize("where, dotted", named_modules())
def test_every_fastlab_name_resolves(where: str, dotted: str) -> None:
    try:
        resolve(dotted)
    except (ImportError, AttributeError) as exc:
        pytest.fail(f"{where} names {dotted}, which does not exist: {exc}")


# --- paths ------------------------------------------------------------------------------------------------

def candidate_paths(path: Path) -> Iterator[str]:
    """Repository paths a text names: in inline code (each word) and as relative link targets."""
    text = prose(path.read_text())
    for span in SPAN.findall(text):
        for word in span.split():
            word = word.strip(",;:()\"'")
            if (PATH.match(word) and not word.startswith(GENERATED) and not word.startswith("/")
                    and not PLACEHOLDER.search(word)):
                first = word.lstrip("./").split("/")[0]
                if (first in TOP or Path(word.rstrip("/")).suffix in PATH_SUFFIXES or word.endswith("/")
                        or (path.parent / word).exists()):
                    yield word
    for target in LINK.findall(text):
        if not re.match(r"^[a-z]+:|^#", target):
            yield target.split("#")[0]


def named_paths() -> list[tuple[str, str]]:
    return sorted({(rel(path), word) for path in TEXTS for word in candidate_paths(path)})


@pytest.mark.parametrize("where, named", named_paths())
def test_every_path_named_exists(where: str, named: str) -> None:
    here = (REPO / where).parent
    if "*" in named:
        assert list(here.glob(named)) or list(REPO.glob(named)), f"{where} names {named}: nothing matches"
        return
    assert (here / named).exists() or (REPO / named).exists(), f"{where} names {named}: no such file or folder"


# --- commands ---------------------------------------------------------------------------------------------

def command_lines(path: Path) -> Iterator[str]:
    """Shell text that may hold `fastlab` commands: lines of shell code blocks (continuations joined) and
    inline code."""
    text = path.read_text()
    for lang, body in fences(text):
        if lang in SHELL_LANGS:
            yield from body.replace("\\\n", " ").splitlines()
    yield from SPAN.findall(prose(text))


def commands_in(line: str) -> Iterator[list[str]]:
    """Each `fastlab ...` command in a line of shell: its arguments, up to the next shell operator."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:  # an unclosed quote: prose in backticks, not a command
        return
    starts = True  # where a command may start: the line's start, after an operator, sudo, VAR=x, python -m
    for i, token in enumerate(tokens):
        if token.startswith("$(") and "fastlab" in token:
            yield from commands_in(token[2:].rstrip(")"))
        if token == "fastlab" and starts:
            args: list[str] = []
            for arg in tokens[i + 1:]:
                if arg and set(arg) <= set(";|&<>()"):
                    break
                args.append(arg)
            yield args
        operator = bool(token) and set(token) <= set(";|&()")
        assignment = starts and re.fullmatch(r"[A-Z_]+=\S*", token) is not None
        starts = operator or token in ("sudo", "-m", "exec") or assignment


def named_commands() -> list[tuple[str, str]]:
    return sorted({(rel(path), shlex.join(args)) for path in TEXTS for line in command_lines(path)
                   for args in commands_in(line)})


def command_path(args: list[str]) -> tuple[tuple[str, ...], argparse.ArgumentParser | None]:
    """The longest command path the arguments start with, and its parser (None: a word that is no command)."""
    parsers = dict(walk(build_parser()))
    path: tuple[str, ...] = ()
    for arg in args:
        if (*path, arg) in parsers:
            path = (*path, arg)
        elif arg.startswith("-") or SYNOPSIS.search(arg) or not any(
                isinstance(a, argparse._SubParsersAction) for a in parsers[path]._actions):
            break
        else:
            return path, None
    return path, parsers[path]


@pytest.mark.parametrize("where, command", named_commands())
def test_every_command_named_parses(where: str, command: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = shlex.split(command)
    try:
        build_parser().parse_args(args)
        return
    except SystemExit as exc:
        said = capsys.readouterr().err.strip()
        if exc.code == 0 or not args:  # --help, or `fastlab` alone (its help)
            return
    if not any(SYNOPSIS.search(arg) for arg in args) and ": missing " not in said:
        pytest.fail(f"{where}: `fastlab {command}` does not parse: {said}")  # a mention may leave arguments out
    path, parser = command_path(args)
    assert parser is not None, f"{where}: `fastlab {command}`: no such command"
    options = {o for a in parser._actions for o in a.option_strings}
    for arg in args:
        option = arg.strip("[]").split("=")[0]
        if option.startswith("-") and not SYNOPSIS.fullmatch(option):
            assert option in options, f"{where}: `fastlab {command}`: {' '.join(path)} takes no {option}"


def test_every_command_named_answers_help(capsys: pytest.CaptureFixture[str]) -> None:
    paths = {command_path(shlex.split(command))[0] for _, command in named_commands()}
    assert ("lab", "run") in paths and ("run",) in paths  # the extraction found the texts' commands
    for path in sorted(paths):
        with pytest.raises(SystemExit) as done:
            main([*path, "--help"])
        assert done.value.code == 0 and capsys.readouterr().out.startswith("usage: fastlab"), path


def test_the_command_extraction_sees_what_a_reader_types() -> None:
    assert list(commands_in("sudo fastlab run examples/simple-cubic.yaml --set 'flows.0.cc_args={alpha: 20}'")) == [
        ["run", "examples/simple-cubic.yaml", "--set", "flows.0.cc_args={alpha: 20}"]]
    assert list(commands_in('eval "$(fastlab completion bash)"')) == [["completion", "bash"]]
    assert list(commands_in("fastlab lab list | head  # the labs")) == [["lab", "list"]]
    assert command_path(["lab", "record", "N", "[--step", "ID]"])[0] == ("lab", "record")
    assert command_path(["nosuch"])[1] is None


# --- what the pages say about the code ----------------------------------------------------------------------

def test_the_classroom_examples_use_tokens_the_server_accepts() -> None:
    from webapp.security import MIN_TOKEN_CHARS

    found = []
    for path in TEXTS:
        for token in re.findall(r"(?:--token(?!-)\s+|[?&]token=|FASTLAB_TOKEN=|X-Fastlab-Token:\s*)([^\s`'\"&)]+)",
                                path.read_text()):
            if token.isupper() or token.startswith(("<", "$", "...")):
                continue  # a placeholder (TOKEN, <token>, $VAR), not an example
            found.append(token)
            assert len(token) >= MIN_TOKEN_CHARS, f"{rel(path)}: token {token!r} is refused by the server"
    assert found, "no classroom example with a concrete token"


def test_the_labs_page_states_the_labs_as_the_code_has_them() -> None:
    from fastlab.labs.kit import list_labs
    from tests.labs.test_lab_short import live_steps

    page = (DOCS / "labs.md").read_text()
    labs = list_labs()
    for lab in labs:
        row = f"| {lab.number} | `labs/{lab.name}/` | {lab.title} | {lab.minutes:g} | {len(lab.steps)} | " \
              f"`{', '.join(live_steps(lab))}` |"
        assert row in page, f"docs/labs.md: the row of lab {lab.name} should read {row}"
    steps = sum(len(lab.steps) for lab in labs)
    assert f"{len(labs)} labs, {steps} steps" in page and f"({len(labs)} of the {steps} steps)" in page
    assert f"{len(labs)} of the {steps} steps" in (DOCS / "testing.md").read_text()


def test_the_bench_table_lists_every_bench() -> None:
    page = (DOCS / "testing.md").read_text()
    for script in sorted((REPO / "bench").glob("*.py")):
        assert f"| `bench/{script.name}` |" in page, f"docs/testing.md lists no bench/{script.name}"


def test_the_layout_lists_modules_that_exist() -> None:
    for stage, modules in re.findall(r"^\| `fastlab\.(\w+)` \| .* \| ([\w, ]+) \|$", (DOCS / "layout.md").read_text(),
                                     re.M):
        for module in modules.split(", "):
            found = (REPO / "fastlab" / stage / f"{module}.py").is_file() or \
                (REPO / "fastlab" / stage / module / "__init__.py").is_file()  # a module, or a package (base.record)
            assert found, f"docs/layout.md: fastlab.{stage}.{module}"


def test_the_design_document_is_cited_in_the_repository() -> None:
    """The code cites docs/design.md by section; no text points outside the repository for the design."""
    sections = set(re.findall(r"^## (\d+)\. ", (DOCS / "design.md").read_text(), re.M))
    assert sections == {str(n) for n in range(1, 11)}
    outside = re.compile(r"shared/DESIGN|\.\./shared|(?<!docs/)DESIGN\.md")  # the brief outside the repository
    for path in [*TEXTS, *REPO.glob("fastlab/**/*.py"), *REPO.glob("tests/**/*.py"), *REPO.glob("topologies/*.py"),
                 *REPO.glob("bench/*.py"), *REPO.glob("linkemu/*.[ch]"), REPO / "Makefile"]:
        text = path.read_text()
        assert path == Path(__file__) or not outside.search(text), rel(path)
        for cited in re.findall(r"docs/design\.md §(\d+)", text):
            assert cited in sections, f"{rel(path)} cites docs/design.md §{cited}"


# --- the site ---------------------------------------------------------------------------------------------

def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """`mkdocs build --strict`: every page in the navigation, no broken link or anchor. Until docs/api.md (the
    API reference generated from docstrings) exists, its navigation entry is left out of the build and the
    next test says so."""
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (the test targets' requirements install it)")
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    config_file = REPO / "mkdocs.yml"
    if not (DOCS / "api.md").exists():
        text = config_file.read_text()
        assert "  - API reference: api.md\n" in text
        config_file = tmp_path / "mkdocs.yml"
        config_file.write_text(text.replace("  - API reference: api.md\n", "").replace(
            "docs_dir: docs", f"docs_dir: {DOCS}"))
    config = load_config(str(config_file), site_dir=str(tmp_path / "site"), strict=True)
    build(config)
    assert (tmp_path / "site" / "index.html").is_file() and (tmp_path / "site" / "design" / "index.html").is_file()


def test_the_api_reference_page_is_there() -> None:
    assert "API reference: api.md" in (REPO / "mkdocs.yml").read_text()
    if not (DOCS / "api.md").exists():
        pytest.skip("docs/api.md (the API reference generated from docstrings) is not in this checkout yet")
