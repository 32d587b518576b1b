"""The one bounded reader of YAML and JSON documents: spec files, `--set` values, query strings, API
bodies, sweep and lab records, run folders and bundle members all come through here.

Every document a client, a file or a bundle hands fastlab is data an attacker may have written. The
readers below keep the cost of reading proportional to the text's size and turn every refusal into one
line (`DocumentError`, which the caller prefixes with the document's name):

- **length**: a text longer than the caller's `max_chars` is refused before it is parsed;
- **depth**: more than `max_depth` levels of mappings/lists (the spec schema itself uses 5; Python's
  parsers recurse, and a 100,000-deep text would otherwise end in RecursionError or, with libyaml, a
  segmentation fault);
- **alias expansion** (YAML): a document whose aliases expand past `max_values` values (a 649-byte
  "billion laughs" `set=` expanded 10^6 values in a walk that followed every alias);
- **integer size**: more than MAX_INT_DIGITS digits (CPython refuses to convert over 4,300 digits with a
  ValueError that is not a parser error, and no physical quantity fastlab takes has more than ~20);
- **duplicate keys**: a mapping that names a key twice (YAML and JSON parsers silently keep the last one:
  `rate_mbps: 10` then `rate_mbps: 1000` ran at 1000);
- **non-finite JSON constants**: `NaN`, `Infinity` are not JSON (Python's `json` accepts them).

The readers are pure; `read_file` (and `read_json_file`, `read_yaml_file` over it) is the one way a
document is read from a path: a regular file only (a lab.json linked to /dev/zero made `lab check --run`
read for ever; a FIFO blocks its reader), and at most `max_bytes` of it.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

MAX_DEPTH = 32  # levels of mappings/lists (the spec schema uses 5; sweep.json 4; summary.json 5)
MAX_VALUES = 100_000  # values with aliases expanded (the labs' largest spec: ~300)
MAX_INT_DIGITS = 40  # digits of an integer literal (a 64-bit seed has 20; a byte count of 1 PB has 16)
_INT_DIGITS = re.compile(r"[0-9a-fA-F]")


class DocumentError(ValueError):
    """A document that cannot be taken, as one line without the document's name (the caller adds it) and
    without echoing its content beyond a short, escaped excerpt."""


def shape(data: object) -> tuple[int, int]:
    """(depth, values) of loaded data as if shared nodes (YAML aliases) were expanded: each shared node is
    counted once per reference but walked once (iterative and memoized, so a billion-laughs document costs
    its size in memory, not its expansion). A node that contains itself (`&a [*a]`): DocumentError."""
    memo: dict[int, tuple[int, int]] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[object, bool]] = [(data, False)]
    while stack:
        node, children_done = stack.pop()
        if not isinstance(node, dict | list):
            continue
        children = [c for c in (node.values() if isinstance(node, dict) else node) if isinstance(c, dict | list)]
        if children_done:
            depth = 1 + max((memo[id(c)][0] for c in children), default=0)
            values = len(node) + sum(memo[id(c)][1] for c in children)
            memo[id(node)] = (depth, values)
            open_nodes.discard(id(node))
            continue
        if id(node) in memo:
            continue
        if id(node) in open_nodes:
            raise DocumentError("an alias refers to the node that contains it (a document without end)")
        open_nodes.add(id(node))
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in memo)
    return memo.get(id(data), (0, 0))


def check_shape(data: object, *, max_depth: int = MAX_DEPTH, max_values: int = MAX_VALUES) -> None:
    """Refuse data nested deeper than `max_depth` or holding more than `max_values` values (expanded)."""
    depth, values = shape(data)
    if depth > max_depth:
        raise DocumentError(f"nested deeper than {max_depth} levels")
    if values > max_values:
        raise DocumentError(f"more than {max_values:,} values (its aliases expanded)")


def _int_literal(text: str) -> None:
    digits = len(_INT_DIGITS.findall(text))
    if digits > MAX_INT_DIGITS:
        raise DocumentError(f"an integer of {digits:,} digits (at most {MAX_INT_DIGITS})")


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader (its pure-Python parser, on purpose: libyaml's composes nested nodes by C
    recursion and crashed the process on a document 100,000 levels deep) with duplicate keys and
    over-long integers refused while the document is constructed."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *base` merges keys on purpose; the mapping's own keys may override them
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key: the base constructor says so in its own words
                continue
            if duplicate:
                raise DocumentError(f"the key {one_line(str(key))[:60]!r} is given twice "
                                    f"(line {key_node.start_mark.line + 1})")
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        _int_literal(str(node.value))
        return super().construct_yaml_int(node)


_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _BoundedLoader.construct_yaml_int)
# A number in exponent form (1e-3, 5E9, 1.5e3) is a float, as YAML 1.2 and JSON read it: PyYAML's YAML 1.1
# wants a dot and a signed exponent and reads the others as texts, which the spec's strict numbers refuse
# ("Input should be a valid number" for `--set rate_mbps=1e-3`); quoted, "1e-3" stays a text.
_BoundedLoader.add_implicit_resolver("tag:yaml.org,2002:float",
                                     re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
                                     list("-+0123456789."))


def read_yaml(text: str, *, max_chars: int, max_depth: int = MAX_DEPTH, max_values: int = MAX_VALUES) -> Any:
    """A YAML text as data within the bounds above; DocumentError (one line) for anything else: "not
    valid YAML at line N", too long, too deep, too large when expanded, a duplicate key, a huge integer."""
    if not isinstance(text, str):
        raise DocumentError(f"not text ({type(text).__name__})")
    if len(text) > max_chars:
        raise DocumentError(f"longer than {max_chars:,} characters")
    try:
        data = yaml.load(text, Loader=_BoundedLoader)  # noqa: S506 -- a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise DocumentError(f"not valid YAML{f' at line {mark.line + 1}' if mark else ''}") from None
    except RecursionError:
        raise DocumentError(f"nested deeper than {max_depth} levels") from None
    except ValueError as exc:  # a DocumentError from the loader, or a value the constructor cannot take
        if isinstance(exc, DocumentError):
            raise
        raise DocumentError(f"a value cannot be read ({exc.__class__.__name__})") from None
    check_shape(data, max_depth=max_depth, max_values=max_values)
    return data


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DocumentError(f"the key {one_line(key)[:60]!r} is given twice")
        out[key] = value
    return out


def _json_int(text: str) -> int:
    _int_literal(text)
    return int(text)


def _json_constant(name: str) -> Any:
    raise DocumentError(f"{name} is not a JSON number")


def _json_null(_name: str) -> None:
    return None


def read_json(text: str | bytes, *, max_chars: int, max_depth: int = MAX_DEPTH,
              max_values: int | None = None, non_finite_as_null: bool = False) -> Any:
    """A JSON text as data within the bounds above (strict JSON: no NaN or Infinity, no duplicate keys);
    DocumentError (one line) for anything else. `non_finite_as_null` reads NaN and Infinity as null
    instead: a run's record written before fastlab.base.record (json.dumps wrote a NaN figure as NaN)."""
    if isinstance(text, bytes | bytearray):
        if len(text) > max_chars * 4:
            raise DocumentError(f"longer than {max_chars:,} characters")
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            raise DocumentError("not UTF-8 text") from None
    if not isinstance(text, str):
        raise DocumentError(f"not text ({type(text).__name__})")
    if len(text) > max_chars:
        raise DocumentError(f"longer than {max_chars:,} characters")
    try:
        data = json.loads(text, object_pairs_hook=_pairs, parse_int=_json_int,
                          parse_constant=_json_null if non_finite_as_null else _json_constant)
    except DocumentError:
        raise
    except RecursionError:
        raise DocumentError(f"nested deeper than {max_depth} levels") from None
    except ValueError as exc:  # JSONDecodeError is a ValueError
        where = f" at line {exc.lineno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise DocumentError(f"not valid JSON{where}") from None
    check_shape(data, max_depth=max_depth, max_values=max_values if max_values is not None else 10 * max_chars)
    return data


_FILE_TYPES = {stat.S_IFDIR: "a folder", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
               stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket"}


def read_file(path: str | Path, *, max_bytes: int) -> bytes:
    """The bytes of the regular file at `path` (a symbolic link to one is followed), at most `max_bytes`;
    DocumentError for anything that is not a regular file (refused from its type, before a byte is read:
    opened without blocking, so a FIFO with no writer does not hang) or longer; OSError (FileNotFoundError,
    PermissionError, ...) as the file system says."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise DocumentError(f"not a regular file ({_FILE_TYPES.get(stat.S_IFMT(mode), 'a special file')})")
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(max_bytes + 1)  # one more: a longer file is refused, not cut
    if len(data) > max_bytes:
        raise DocumentError(f"larger than {max_bytes:,} bytes")
    return data


def _text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise DocumentError("not UTF-8 text") from None


def read_json_file(path: str | Path, *, max_chars: int, max_depth: int = MAX_DEPTH,
                   max_values: int | None = None) -> Any:
    """`read_json` of the regular file at `path` (read_file's bounds); DocumentError or OSError."""
    return read_json(_text(read_file(path, max_bytes=4 * max_chars)), max_chars=max_chars, max_depth=max_depth,
                     max_values=max_values)


def read_yaml_file(path: str | Path, *, max_chars: int, max_depth: int = MAX_DEPTH,
                   max_values: int = MAX_VALUES) -> Any:
    """`read_yaml` of the regular file at `path` (read_file's bounds); DocumentError or OSError."""
    return read_yaml(_text(read_file(path, max_bytes=4 * max_chars)), max_chars=max_chars, max_depth=max_depth,
                     max_values=max_values)


# Whatever str.splitlines() breaks at: an error echoes the input it refuses (a union's tag, a key), and
# a one-line error must stay one line whatever that input holds (the fuzz test found a tag of '\n').
_LINE_BREAKS = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def one_line(text: str) -> str:
    """`text` with every line break written as its escape (`\\n`), so it prints as one line."""
    return _LINE_BREAKS.sub(lambda m: repr(m.group())[1:-1], text)
