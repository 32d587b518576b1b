"""`fastlab cc`: the congestion controls here, loading fastlab's, and setting their parameters."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from fastlab.base import paths
from fastlab.cli.common import CliError, need_root, table


def _cc(name: str, impl: str) -> Any:
    from fastlab.define.cc import CCError
    from fastlab.run.ccload import default_registry

    try:
        cc = default_registry(impl).lookup(name)
    except CCError as exc:
        raise CliError(str(exc)) from None
    if cc.origin != "fastlab":
        raise CliError(f"{name} is a kernel algorithm: it needs no loading and has no run-time parameters here")
    return cc


def cmd_cc_list(args: argparse.Namespace) -> int:
    from fastlab.run.ccload import default_registry

    print(table(default_registry(args.impl).listing(), ["name", "origin", "usable", "how", "description"]))
    return 0


def cmd_cc_load(args: argparse.Namespace) -> int:
    from fastlab.run.ccload import ToolError

    need_root("fastlab cc load")
    cc = _cc(args.name, args.impl)
    try:
        if args.command_cc == "load":
            print(f"{cc.name}: {'loaded' if cc.build.load() else 'already loaded'} ({cc.build.impl})")
        else:
            print(f"{cc.name}: {cc.build.unload()}")
    except ToolError as exc:
        print(f"fastlab: {exc}", file=sys.stderr)
        return 1
    return 0


def live_host_pid(host: str, run: str | None) -> int:
    """The PID inside `host`'s namespace in a running run (the only one, or --run PREFIX)."""
    from fastlab.net.runstate import RunState

    states = [RunState.load(p) for p in sorted(paths.STATE_DIR.glob("fl*.json"))] if paths.STATE_DIR.is_dir() else []
    found = [s for s in states if s.engine_alive() and host in s.hosts and run in (None, s.prefix)]
    if not found:
        raise CliError(f"--host {host}: no running fastlab run has a host {host!r}")
    if len(found) > 1:
        raise CliError(f"--host {host}: several runs have it ({', '.join(s.prefix for s in found)}): add --run")
    return found[0].hosts[host]


def cmd_cc_set(args: argparse.Namespace) -> int:
    from fastlab.define.cc import CCError
    from fastlab.define.schema import SpecError, parse_override
    from fastlab.run.ccload import ToolError
    from fastlab.run.ccruntime import per_host_args

    need_root("fastlab cc set")
    cc = _cc(args.name, args.impl)
    values: dict[str, Any] = {}
    try:
        for item in args.values:
            path, value = parse_override(item)
            values[".".join(map(str, path))] = value
        checked = per_host_args(cc, values) if args.host else cc.validate_args(values)
    except (SpecError, CCError) as exc:
        raise CliError(str(exc).replace("--set ", "")) from None
    pid = live_host_pid(args.host, args.run) if args.host else None
    try:
        print(json.dumps(cc.build.set(checked, netns_pid=pid)))
    except ToolError as exc:
        print(f"fastlab: {exc}", file=sys.stderr)
        return 1
    return 0


def register(sub: Any) -> None:
    """The `cc` command groups on the top-level subparsers."""
    cc = sub.add_parser("cc", help="congestion controls: list, load, unload, set parameters",
                        example="fastlab cc list")
    cc_sub = cc.commands("command_cc")
    impl: dict[str, Any] = {"choices": ["bpf", "module"], "default": "bpf", "help": "build to use (default: bpf)"}
    cc_list = cc_sub.add_parser("list", help="kernel algorithms here and fastlab's, and how each loads",
                                example="fastlab cc list --impl module")
    cc_list.add_argument("--impl", **impl)
    cc_list.set_defaults(func=cmd_cc_list)
    for verb in ("load", "unload"):
        p = cc_sub.add_parser(verb, help=f"{verb} fast or hstcp", example=f"fastlab cc {verb} fast")
        p.positional("name", metavar="ALGORITHM", words="the algorithm, fast or hstcp",
                     help="fastlab's algorithm: fast or hstcp", example="fast")
        p.add_argument("--impl", **impl)
        p.set_defaults(func=cmd_cc_load)
    cc_set = cc_sub.add_parser("set", help="set parameters, globally or for one host of a running run",
                               example="fastlab cc set fast alpha=60 --host h1")
    cc_set.positional("name", metavar="ALGORITHM", words="the algorithm, fast or hstcp",
                      help="fastlab's algorithm: fast or hstcp", example="fast")
    cc_set.positional("values", nargs="+", metavar="KEY=VALUE", words="at least one parameter as KEY=VALUE",
                      help="parameters to set", example="alpha=60 gamma=0.5")
    cc_set.add_argument("--host", help="a host of a running run (per-namespace override), e.g. h1")
    cc_set.add_argument("--run", metavar="PREFIX", help="run prefix, when several runs have the host")
    cc_set.add_argument("--impl", **impl)
    cc_set.set_defaults(func=cmd_cc_set)
