"""The command line's parser: help with an example for every command and argument, errors in words.

`Parser` is the argparse parser of `fastlab` and of every subcommand (subparsers inherit its class). A
command is added with `example=` (shown under its help and checked by tests/unit/test_cli_manners.py to
parse); a positional argument with `positional(...)`, which gives it a metavar a user reads, words for
error messages and an example in its help. Usage errors are one line, exit status 2, and name what is
missing in words ("missing the lab: its number, folder name or slug"), never argparse's internal
names (`dest`).
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any, NoReturn

from fastlab.cli.common import EXIT_USAGE

COMMAND = "COMMAND"  # the metavar of every group's subcommand
REQUIRED = re.compile(r"the following arguments are required: (?P<names>.+)")
ARGUMENT = re.compile(r"argument (?P<name>[^:]+): (?P<rest>.*)")
INVALID_CHOICE = re.compile(r"invalid choice: (?P<value>.+?) \(choose from (?P<choices>.*)\)")


class Parser(argparse.ArgumentParser):
    """An argparse parser whose errors are one line in words, and whose commands carry an example."""

    def __init__(self, *args: Any, example: str | None = None, **kwargs: Any) -> None:
        if example:
            kwargs.setdefault("epilog", f"example: {example}")
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)
        self.example = example
        self.words: dict[str, str] = {}  # metavar -> what it is, in words (error messages)

    def positional(self, dest: str, *, metavar: str, words: str, help: str, example: str,
                   **kwargs: Any) -> argparse.Action:
        """A positional argument: `metavar` in usage, `words` in errors, `help` ending in an example."""
        self.words[metavar] = words
        return self.add_argument(dest, metavar=metavar, help=f"{help} (e.g. {example})", **kwargs)

    def commands(self, dest: str) -> Any:
        """The group's subcommands (required; `dest` holds the one chosen, read by handlers only)."""
        return self.add_subparsers(dest=dest, metavar=COMMAND, required=True, parser_class=Parser,
                                   help=f"one of these ({self.prog} COMMAND --help for its own help):")

    def choices_of(self, metavar: str) -> list[str]:
        for action in self._actions:
            if action.metavar == metavar and action.choices:
                return list(action.choices)
        return []

    def in_words(self, message: str) -> str:
        """argparse's message with its names of arguments put in words."""
        required = REQUIRED.fullmatch(message)
        if required:
            missing = [self._what(name.strip()) for name in required.group("names").split(", ")]
            return "missing " + " and ".join(missing)
        argument = ARGUMENT.fullmatch(message)
        if argument and argument.group("name") == COMMAND:
            invalid = INVALID_CHOICE.fullmatch(argument.group("rest"))
            if invalid:
                return f"no command {invalid.group('value')}: the commands are {self._commands()}"
        if argument and argument.group("name") in self.words:
            return f"{self.words[argument.group('name')]}: {argument.group('rest')}"
        return message

    def _commands(self) -> str:
        names = self.choices_of(COMMAND)
        return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else "".join(names)

    def _what(self, name: str) -> str:
        if name == COMMAND:
            return f"a command: {self._commands()}"
        return self.words.get(name, name)

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        example = f"; e.g. {self.example}" if self.example else ""
        print(f"{self.prog}: {self.in_words(message)}{example} ({self.prog} --help says more)", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Parser]]:
    """Every parser of the command line with its command path: ((), fastlab), (("run",), run), ..."""
    found: list[tuple[tuple[str, ...], Parser]] = [(path, parser)]  # type: ignore[list-item]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += walk(sub, (*path, name))
    return found
