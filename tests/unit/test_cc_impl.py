"""Which build of FAST/HSTCP a run uses (cc_impl), and what the module build's global parameters
mean for a spec: one value per kernel, so flows must agree and a change may touch one host only."""

from __future__ import annotations

import pytest

from fastlab.define.cc import CCError
from fastlab.define.schema import SpecError, parse_spec
from fastlab.plan.capabilities import Capabilities, Probe
from fastlab.plan.flows import plan_parameters
from fastlab.run.ccload import default_registry


def caps(bpf: bool, modules: bool) -> Capabilities:
    c = Capabilities(kernel="test")
    c.probes["bpf_struct_ops"] = Probe("bpf_struct_ops", bpf, "")
    c.probes["modules"] = Probe("modules", modules, "")
    return c


@pytest.mark.parametrize(("bpf", "modules", "wanted", "impl", "why"), [
    (True, True, "auto", "bpf", "struct_ops"),
    (False, True, "auto", "module", "no BPF struct_ops"),
    (False, False, "auto", "unavailable", "built-ins only"),
    (True, True, "module", "module", "spec asks"),
    (True, False, "module", "unavailable", "cannot load modules"),
    (False, True, "bpf", "unavailable", "no BPF struct_ops"),
])
def test_cc_impl_choice(bpf: bool, modules: bool, wanted: str, impl: str, why: str) -> None:
    chosen = caps(bpf, modules).cc_impl_choice(wanted)
    assert chosen[0] == impl and why in chosen[1], chosen
    backend = caps(bpf, modules).backends()["congestion control"]
    assert backend[0] == {"bpf": "bpf struct_ops", "module": "kernel module"}.get(
        caps(bpf, modules).cc_impl_choice("auto")[0], "unavailable")


def spec(flows: list[dict], **extra: object) -> object:
    return parse_spec({"name": "t", "topology": "dumbbell", "duration_s": 10,
                       "topology_args": {"pairs": 2}, "flows": flows, **extra})


def test_module_build_sets_agreeing_flows_globally() -> None:
    s = spec([{"src": "h1", "dst": "h2", "cc": "fast", "cc_args": {"alpha": 30}},
              {"src": "h3", "dst": "h4", "cc": "fast", "cc_args": {"alpha": 30}}])
    hosts, glob = plan_parameters(s, default_registry("module"))
    assert glob == {"fast": {"alpha": 30}} and all(not h.args for h in hosts)
    hosts, glob = plan_parameters(s, default_registry("bpf"))
    assert glob == {} and {h.host: h.args["alpha"] for h in hosts} == {"h1": 30, "h3": 30}


def test_module_build_refuses_two_alphas_naming_the_flow() -> None:
    s = spec([{"src": "h1", "dst": "h2", "cc": "fast", "cc_args": {"alpha": 30}},
              {"src": "h3", "dst": "h4", "cc": "fast", "cc_args": {"alpha": 60}}])
    with pytest.raises(SpecError, match=r"^flows\[1\]\.cc_args: the module build of fast has global"):
        plan_parameters(s, default_registry("module"))
    plan_parameters(s, default_registry("bpf"))  # per host: fine


def test_module_build_change_of_a_shared_algorithm_is_refused() -> None:
    flows = [{"src": "h1", "dst": "h2", "cc": "fast"}, {"src": "h3", "dst": "h4", "cc": "fast"}]
    s = spec(flows, cc_changes=[{"at_s": 5, "host": "h1", "cc": "fast", "args": {"alpha": 60}}])
    with pytest.raises(SpecError, match=r"^cc_changes\[0\]\.host: the module build's parameters are global"):
        plan_parameters(s, default_registry("module"))
    alone = spec(flows[:1], cc_changes=[{"at_s": 5, "host": "h1", "cc": "fast", "args": {"alpha": 60}}])
    plan_parameters(alone, default_registry("module"))


@pytest.mark.parametrize("bad", ["kernel", "", None, 1, ["module"], "MODULE"])
def test_cc_impl_bad_values_are_refused(bad: object) -> None:
    with pytest.raises(SpecError, match="cc_impl"):
        spec([{"src": "h1", "dst": "h2", "cc": "cubic"}], cc_impl=bad)


@pytest.mark.parametrize("impl, bpf, modules", [("bpf", True, False), ("module", False, True)])
@pytest.mark.parametrize("args, message", [
    ({"low_window": 10, "high_p": 0.012}, r"high_p=0.012 is out of range \[1e-12, 0.01\]"),
    ({"low_window": 10, "high_p": 0.009}, r"high_window: table would need more than 1024 rows"),
    ({"low_window": "10"}, r"low_window must be a number"),
    ({"high_decrease": float("inf")}, r"high_decrease must be a finite number"),
    ({"low_window": 10**400}, r"low_window=a 401-digit number is out of range"),
])
def test_hostile_hstcp_table_values_are_refused_by_prepare_naming_the_field(
        impl: str, bpf: bool, modules: bool, args: dict, message: str) -> None:
    """Issue 35: {low_window: 10, high_p: 0.012} passed the Python check and was refused after the
    network was built; now the spec's checks (prepare_run: prepare with the loaders bound, nothing built)
    refuse it and its like, for both builds (the stock-kernel lane runs prepare on the module build)."""
    from fastlab.experiment.engine import prepare_run

    s = spec([{"src": "h1", "dst": "h2", "cc": "hstcp", "cc_args": args}], cc_impl=impl)
    if impl == "bpf":
        with pytest.raises(SpecError, match=rf"^flows\[0\]\.cc_args: {message}"):
            prepare_run(s, caps=caps(bpf, modules))
    else:  # this machine cannot load modules, which prepare says first: the module build's check itself
        with pytest.raises(CCError, match=rf"^{message}"):
            default_registry("module").lookup("hstcp").validate_args(args)
