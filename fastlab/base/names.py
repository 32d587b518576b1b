"""Names that become paths: one validated identifier for every name fastlab joins to a folder.

A sweep point's id, a run id, a lab's reference, an upload's id: each is read from somewhere a person or a
file can write (sweep.json, a URL, a bundle, lab.json) and then used as `folder / name`. A crafted
sweep.json whose point id was `../..` or an absolute path had its "unfinished run directory" removed by
`shutil.rmtree` (issue 47), as root. So every such name is checked here and joined here:

- `check_name(value, what)` -> the value, if it is a plain file name: 1..128 characters of letters,
  digits, `.`, `_` and `-`, starting with a letter or digit (so never `.`, `..`, empty, absolute, or
  holding a separator, a NUL or a line break); NameRefused otherwise, naming `what`.
- `child(folder, value, what)` -> `folder / value`, the name checked, and refused if that path is a
  symbolic link (which could lead out of the folder) or resolves outside it.

Pure but for `child`'s look at the file system (lstat and resolve; nothing is created or removed).
"""

from __future__ import annotations

import re
from pathlib import Path

from fastlab.base.documents import one_line

MAX_NAME_CHARS = 128
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class NameRefused(ValueError):
    """A name that cannot be used as a file name inside its folder; one line naming what it was for."""


def is_name(value: object) -> bool:
    """True for a plain file name as `check_name` takes it."""
    return isinstance(value, str) and NAME_RE.fullmatch(value) is not None


def check_name(value: object, what: str) -> str:
    """`value` if it is a plain file name (see the module's text); NameRefused naming `what` otherwise."""
    if is_name(value):
        return str(value)
    if not isinstance(value, str):
        raise NameRefused(f"{what}: not a name ({type(value).__name__})")
    shown = one_line(value[:40]) + ("..." if len(value) > 40 else "")
    raise NameRefused(f"{what}: {shown!r} is not a plain name (letters, digits, '.', '_' and '-', "
                      f"at most {MAX_NAME_CHARS}, not starting with '.')")


def child(folder: Path, value: object, what: str) -> Path:
    """`folder / value` for a checked name, refused (NameRefused) if it is a symbolic link or resolves
    outside `folder`; the path need not exist."""
    path = Path(folder) / check_name(value, what)
    if path.is_symlink():
        raise NameRefused(f"{what}: {path} is a symbolic link (refused: it could lead out of {folder})")
    if not path.resolve().is_relative_to(Path(folder).resolve()):
        raise NameRefused(f"{what}: {path} lies outside {folder}")
    return path
