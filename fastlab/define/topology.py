"""Topology plans: the pure description of a network, independent of how it is built, and the
topologies themselves as plugins.

A topology module (fastlab's own in `topologies/`, another package's, or any Python file) turns its
validated arguments into a `TopologyPlan`: nodes (hosts, routers, switches), plain links with addresses,
static routes, and the shaped links with their default impairments; `PlanBuilder` composes one.
`fastlab.net.network` builds the plan on Mininet; the shaping planner turns each shaped link into tc
commands or an emulator configuration. How a topology is found: below, "Topologies as plugins".
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import os
import re
import sys
import tomllib
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from fastlab.base import paths
from fastlab.base.documents import one_line
from fastlab.define.schema import TOPOLOGY_NAME_RE, LinkSpec, Strict, TopologyFile, format_validation_error


class TopologyError(ValueError):
    """Unknown topology or invalid topology_args; the message names the field."""


@dataclass(frozen=True)
class Route:
    dst: str  # CIDR
    via: str  # next-hop address


@dataclass
class NodePlan:
    name: str
    role: Literal["host", "router", "switch"]
    routes: list[Route] = field(default_factory=list)
    site: str = ""
    openflow: bool = False  # a switch whose forwarding a controller (or static flows) decides


@dataclass(frozen=True)
class LinkPlan:
    """A plain link (veth) between two nodes; `shaped` names the shaped link it carries, if any."""

    a: str
    b: str
    a_ip: str | None = None  # CIDR on a's interface
    b_ip: str | None = None
    shaped: str | None = None


@dataclass(frozen=True)
class ShapedLinkPlan:
    """Default impairments of a shaped link (forward = a -> b) and the RTT its BDP refers to."""

    id: str
    a: str
    b: str
    profile: LinkSpec
    rtt_ms: float
    description: str = ""


@dataclass
class TopologyPlan:
    """A network as data, what a topology's plan(args) returns (PlanBuilder makes one): its nodes (hosts,
    routers, switches), plain links with addresses, shaped links with their default impairments, and
    metadata (e.g. rtt_ms, capacity_mbps, endpoints: the paths `fastlab topo show` describes)."""

    name: str
    nodes: dict[str, NodePlan]
    links: list[LinkPlan]
    shaped: dict[str, ShapedLinkPlan]
    metadata: dict[str, Any] = field(default_factory=dict)

    def host_names(self) -> set[str]:
        return {n for n, node in self.nodes.items() if node.role == "host"}

    def address_of(self, host: str) -> str:
        for link in self.links:
            if link.a == host and link.a_ip:
                return link.a_ip.split("/")[0]
            if link.b == host and link.b_ip:
                return link.b_ip.split("/")[0]
        raise TopologyError(f"host {host!r} has no address")


    def pruned(self, keep_hosts: set[str]) -> TopologyPlan:
        """The plan without the hosts no flow uses (and their access links): they carry nothing."""
        drop = self.host_names() - keep_hosts
        links = [link for link in self.links if link.a not in drop and link.b not in drop]
        shaped = {k: v for k, v in self.shaped.items() if v.a not in drop and v.b not in drop}
        nodes = {k: v for k, v in self.nodes.items() if k not in drop}
        return TopologyPlan(self.name, nodes, links, shaped, self.metadata)

    def unshaped(self, ids: set[str]) -> TopologyPlan:
        """The plan with the shaped links `ids` built as plain links: no flow crosses them, so
        they get no link node and no emulator (addresses and routes stay as they were)."""
        links = [LinkPlan(link.a, link.b, link.a_ip, link.b_ip) if link.shaped in ids else link
                 for link in self.links]
        shaped = {k: v for k, v in self.shaped.items() if k not in ids}
        return TopologyPlan(self.name, dict(self.nodes), links, shaped, self.metadata)


class PlanBuilder:
    """Builds a TopologyPlan: sites as LANs (router + switch), hosts, shaped wires between nodes."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.nodes: dict[str, NodePlan] = {}
        self.links: list[LinkPlan] = []
        self.shaped: dict[str, ShapedLinkPlan] = {}
        self._wires = 0

    def router(self, name: str, site: str = "") -> str:
        self.nodes[name] = NodePlan(name, "router", site=site)
        return name

    @staticmethod
    def _check_switch_name(switch: str) -> None:
        if not (switch.startswith("s") and switch[1:].isdigit()):
            raise TopologyError(f"switch names are s<N> (they live in the root namespace): {switch!r}")

    def lan(self, router: str, switch: str, subnet: str) -> None:
        """A site LAN `subnet`.0/24 on `switch`, with `router` at .254."""
        self._check_switch_name(switch)
        self.nodes[switch] = NodePlan(switch, "switch")
        self.links.append(LinkPlan(router, switch, a_ip=f"{subnet}.254/24"))

    def openflow_switch(self, switch: str, site: str = "") -> str:
        """An OpenFlow switch: always OVS, forwarding only what its flow rules say (no learning)."""
        self._check_switch_name(switch)
        self.nodes[switch] = NodePlan(switch, "switch", site=site, openflow=True)
        return switch

    def attach(self, router: str, switch: str, cidr: str) -> None:
        """A router interface with address `cidr` on a switch."""
        self.links.append(LinkPlan(router, switch, a_ip=cidr))

    def switch_wire(self, a: str, b: str, link_id: str, profile: LinkSpec, rtt_ms: float, description: str) -> None:
        """A shaped link between two switches (layer 2: no addresses)."""
        self.links.append(LinkPlan(a, b, shaped=link_id))
        self.shaped[link_id] = ShapedLinkPlan(link_id, a, b, profile, rtt_ms=rtt_ms, description=description)

    def host(self, name: str, switch: str, subnet: str, index: int, site: str = "",
             access: tuple[str, LinkSpec, float] | None = None) -> str:
        """A host at `subnet`.`index` on `switch`; `access` = (link id, profile, BDP RTT) shapes its link."""
        self.nodes[name] = NodePlan(name, "host", routes=[Route("0.0.0.0/0", f"{subnet}.254")], site=site)
        self.links.append(LinkPlan(name, switch, a_ip=f"{subnet}.{index}/24", shaped=access[0] if access else None))
        if access:
            link_id, profile, rtt_ms = access
            self.shaped[link_id] = ShapedLinkPlan(link_id, name, switch, profile, rtt_ms=rtt_ms,
                                                  description=f"{name}'s access link")
        return name

    def wire(self, a: str, b: str, link_id: str, profile: LinkSpec, rtt_ms: float, description: str) -> tuple[str, str]:
        """A shaped point-to-point link between routers; returns their addresses."""
        self._wires += 1
        a_ip, b_ip = f"10.0.{self._wires}.1", f"10.0.{self._wires}.2"
        self.links.append(LinkPlan(a, b, a_ip=f"{a_ip}/24", b_ip=f"{b_ip}/24", shaped=link_id))
        self.shaped[link_id] = ShapedLinkPlan(link_id, a, b, profile, rtt_ms=rtt_ms, description=description)
        return a_ip, b_ip

    def route(self, node: str, dst: str, via: str) -> None:
        self.nodes[node].routes.append(Route(dst, via))

    def build(self, **metadata: Any) -> TopologyPlan:
        return TopologyPlan(self.name, self.nodes, self.links, self.shaped, metadata)


# --- Topologies as plugins ------------------------------------------------------------------------
# A topology is a Python module with NAME (its name in specs, TOPOLOGY_NAME_RE), DESCRIPTION (one line),
# an optional `Args` (a pydantic model of its topology_args, unknown arguments refused: subclass
# fastlab.define.schema.Strict; none: it takes no arguments) and `plan(args) -> TopologyPlan`. It comes
# from one of three places, found in this order when a spec names it:
# - an entry point of the group `fastlab.topologies` of an installed package (name = module). fastlab's
#   own five are its own package's entry points (pyproject.toml), read from the checkout's pyproject.toml
#   when the package runs from one and from the installed metadata otherwise;
# - a file listed in FASTLAB_TOPOLOGIES (os.pathsep-separated files or folders of them): the topologies
#   an instructor configures for a server, named by their NAME like the installed ones;
# - a spec's `topology: {file: my_topo.py}` or `fastlab run --topology-file`: any file, for a script or
#   the command line. A process serving others (the web app) refuses these (`only_catalogued`): it
#   imports only what is installed or configured, never a file a request names.
# A plugin that cannot be used (a syntax error, missing NAME or plan, an import or plan() that raises)
# is one TopologyError line naming its file or entry point, never a traceback.
ENTRY_POINT_GROUP = "fastlab.topologies"
CONFIG_VAR = "FASTLAB_TOPOLOGIES"
_TOPOLOGY_NAME = re.compile(TOPOLOGY_NAME_RE)


@dataclass(frozen=True)
class Source:
    """Where a topology comes from: an entry point's module (`module`) or a file (`path`); `origin` says
    whose it is as `fastlab topo list` shows it (fastlab, package <name>, configured)."""

    name: str
    origin: str
    module: str = ""
    path: Path | None = None

    @property
    def where(self) -> str:
        """How an error names it: the file, or the entry point."""
        return str(self.path) if self.path is not None else f"entry point {self.name} = {self.module} ({self.origin})"


class _Empty(Strict):
    """The arguments of a topology that declares no Args: none."""


@functools.cache
def _entry_points(path: tuple[str, ...]) -> tuple[tuple[str, str, str], ...]:
    """(name, distribution, module) of every entry point of the group on the import path `path` (read
    once per path: scanning the installed distributions takes ~6 ms, and specs are checked often)."""
    return tuple((ep.name, ep.dist.name if ep.dist is not None else "?", ep.value)
                 for ep in metadata.entry_points(group=ENTRY_POINT_GROUP))


@functools.cache
def _own_pyproject_entry_points(tree: Path) -> tuple[tuple[str, str], ...]:
    data = tomllib.loads((tree / "pyproject.toml").read_text(encoding="utf-8"))
    return tuple(data["project"]["entry-points"][ENTRY_POINT_GROUP].items())


def _fastlab_entry_points() -> dict[str, str]:
    """fastlab's own entry points (name -> module): the checkout's pyproject.toml when the package runs
    from one (it may have no installed metadata, or another checkout's), else the installed package's."""
    if paths.SOURCE_TREE is not None:
        return dict(_own_pyproject_entry_points(paths.SOURCE_TREE))
    return {name: module for name, dist, module in _entry_points(tuple(sys.path)) if dist == "fastlab"}


def _configured_files() -> list[Path]:
    """The files FASTLAB_TOPOLOGIES lists (a folder stands for its *.py, sorted)."""
    out: list[Path] = []
    for item in filter(None, os.environ.get(CONFIG_VAR, "").split(os.pathsep)):
        path = Path(item).expanduser().resolve()
        out += sorted(p for p in path.glob("*.py") if not p.name.startswith("_")) if path.is_dir() else [path]
    return out


@functools.cache
def _file_names(path: Path, stamp: tuple[int, int]) -> str:
    """A configured file's NAME (cached per file version)."""
    return _checked(_import_file(path, stamp), f"topology file {path}").NAME


def sources() -> tuple[dict[str, Source], list[str]]:
    """Every topology a spec may name, by name, and one line for each plugin that cannot be offered
    (unreadable, no NAME, a name taken by one found before it). The built-ins come first, then other
    packages' entry points, then the configured files (each in the order of their names: installed metadata
    keeps no other)."""
    found = {name: Source(name, "fastlab", module) for name, module in sorted(_fastlab_entry_points().items())}
    problems: list[str] = []

    def add(source: Source) -> None:
        if source.name in found:
            problems.append(f"{source.where}: topology {source.name!r} is already {found[source.name].where}; "
                            "not offered")
        else:
            found[source.name] = source

    for name, dist, module in sorted(_entry_points(tuple(sys.path))):
        if dist != "fastlab":
            add(Source(name, f"package {dist}", module))
    for path in _configured_files():
        try:
            add(Source(_file_names(path, _stamp(path)), "configured", path=path))
        except TopologyError as exc:
            problems.append(str(exc))
    return found, problems


def known() -> list[str]:
    """The names a spec may give as its topology, built-ins first."""
    return list(sources()[0])


def only_catalogued(reason: str) -> None:
    """From now on in this process, a spec's `topology: {file: ...}` is refused with `reason` (the web
    app's server calls it: it imports the topologies installed or configured, never a file a request
    names). Named topologies, configured files included, are not affected."""
    global _FILES_REFUSED
    _FILES_REFUSED = reason


_FILES_REFUSED: str | None = None


def _stamp(path: Path) -> tuple[int, int]:
    try:
        st = path.stat()
    except OSError as exc:
        raise TopologyError(f"topology file {path}: {exc.strerror}") from None
    if not path.is_file():
        raise TopologyError(f"topology file {path}: not a file")
    return st.st_mtime_ns, st.st_size


@functools.cache
def _import_file(path: Path, stamp: tuple[int, int]) -> ModuleType:
    """Import a topology file as its own module (once per file version: `stamp` is its mtime and size)."""
    name = f"fastlab_topology_{hashlib.sha256(f'{path}:{stamp}'.encode()).hexdigest()[:16]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TopologyError(f"topology file {path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # pydantic resolves the Args' annotations through the module's name
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        sys.modules.pop(name, None)
        raise TopologyError(f"topology file {path}, line {exc.lineno}: {exc.msg}") from None
    except BaseException as exc:  # noqa: BLE001 - anything a plugin's import raises is one line
        sys.modules.pop(name, None)
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise TopologyError(f"topology file {path}: importing it raised {type(exc).__name__}: "
                            f"{one_line(str(exc))[:300]}") from None
    return module


def _checked(module: ModuleType, where: str) -> ModuleType:
    """`module` if it has what a topology needs (NAME, DESCRIPTION, plan, a pydantic Args if any), else
    TopologyError naming `where` and what is missing."""
    name, description = getattr(module, "NAME", None), getattr(module, "DESCRIPTION", None)
    if not isinstance(name, str) or not _TOPOLOGY_NAME.fullmatch(name):
        raise TopologyError(f"{where}: no NAME, or not a topology name (a string of a-z, 0-9, _ and -, at most "
                            f"32): {name!r}")
    if not isinstance(description, str) or not description.strip():
        raise TopologyError(f"{where}: no DESCRIPTION (one line saying what the network is)")
    if not callable(getattr(module, "plan", None)):
        raise TopologyError(f"{where}: no plan(args) function returning a TopologyPlan")
    args = getattr(module, "Args", None)
    if args is None:
        setattr(module, "Args", _Empty)  # noqa: B010 - a module attribute mypy cannot know
    elif not (isinstance(args, type) and issubclass(args, BaseModel)):
        raise TopologyError(f"{where}: Args must be a pydantic model (subclass fastlab.define.schema.Strict)")
    return module


def _entry_point_module(source: Source) -> ModuleType:
    try:
        return importlib.import_module(source.module)
    except BaseException as exc:  # noqa: BLE001 - a plugin that cannot be imported is one line
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise TopologyError(f"{source.where}: importing it raised {type(exc).__name__}: "
                            f"{one_line(str(exc))[:300]}") from None


def load_module(ref: str | TopologyFile) -> ModuleType:
    """The topology module a spec names: by name (an entry point or a configured file) or by file. Its
    NAME, DESCRIPTION, Args and plan are checked; TopologyError (one line) otherwise."""
    if isinstance(ref, TopologyFile):
        if _FILES_REFUSED is not None:
            raise TopologyError(f"topology.file: {_FILES_REFUSED}")
        path = Path(ref.file).expanduser().resolve()
        return _checked(_import_file(path, _stamp(path)), f"topology file {path}")
    found, _problems = sources()
    source = found.get(ref)
    if source is None:
        raise TopologyError(f"topology: unknown topology {ref!r} (known: {', '.join(found)})")
    if source.path is not None:
        module = _checked(_import_file(source.path, _stamp(source.path)), f"topology file {source.path}")
    else:
        module = _checked(_entry_point_module(source), source.where)
    if ref != module.NAME:
        raise TopologyError(f"{source.where}: its NAME is {module.NAME!r}, not {ref!r}")
    return module


def build_plan(ref: str | TopologyFile, args: dict[str, Any]) -> TopologyPlan:
    """The plan of the topology `ref` with `args` (its topology_args); TopologyError names the field, or the
    plugin and what it did wrong (plan() raised, or returned no TopologyPlan)."""
    module = load_module(ref)
    try:
        parsed = module.Args.model_validate(args or {})
    except ValidationError as err:
        raise TopologyError("topology_args." + format_validation_error(err)) from None
    try:
        plan = module.plan(parsed)
    except TopologyError:
        raise
    except Exception as exc:  # noqa: BLE001 - a plugin's failure is one line naming it
        raise TopologyError(f"topology {module.NAME} ({module.__file__}): plan() raised "
                            f"{type(exc).__name__}: {one_line(str(exc))[:300]}") from None
    if not isinstance(plan, TopologyPlan):
        raise TopologyError(f"topology {module.NAME} ({module.__file__}): plan() returned "
                            f"{type(plan).__name__}, not a TopologyPlan")
    return plan


def catalogue() -> list[dict[str, str]]:
    """The topologies a spec may name here (fastlab's, installed packages', FASTLAB_TOPOLOGIES'): returns
    one row each (name, description, arguments, origin), as `fastlab topo list` and the web form show them.
    A plugin that cannot be loaded is left out (catalogue_with_problems says why)."""
    rows, _problems = catalogue_with_problems()
    return rows


def catalogue_with_problems() -> tuple[list[dict[str, str]], list[str]]:
    """catalogue(), and one line for each plugin left out."""
    found, problems = sources()
    rows = []
    for name, source in found.items():
        try:
            module = load_module(name)
        except TopologyError as exc:
            problems.append(str(exc))
            continue
        rows.append({"name": name, "description": module.DESCRIPTION,
                     "arguments": ", ".join(module.Args.model_fields), "origin": source.origin})
    return rows, problems
