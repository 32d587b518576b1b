# fastlab: the two README commands are `make run` and `make test`, as root or as a sudo user.
# FASTLAB_VENV (scripts/setup.sh): another virtualenv than .venv, e.g. to try `make setup` apart.
PY := $(or $(FASTLAB_VENV),.venv)/bin/python
export PYTHONPATH := $(CURDIR)

.PHONY: setup run test test-stock-kernel unit check lint bench clean docs cc-constants

# Everything below needs root (packages, namespaces, tc, BPF): a sudo user's `make X` becomes
# `sudo make X`; root (e.g. a fresh Debian root shell, which has no sudo) runs it directly.
ifneq ($(shell id -u),0)
setup run test test-stock-kernel bench:
	@command -v sudo >/dev/null || { echo "make $@ needs root: run it as root (no sudo here)" >&2; exit 1; }
	exec sudo $(MAKE) $@
else

setup:
	@bash scripts/setup.sh

run: setup
	$(PY) -m webapp

# All tests, in tiers that fail fast (scripts/test.sh prints each tier's time): lint and the type
# checker, native unit tests, the Python unit tier (what `make check` runs: every lab's physics on its
# recorded runs), then (after removing what killed runs left behind) the web tests that start no
# experiment (marker `norun`, two at a time), the web app's live, integration and live lab tests (real
# namespaces; invariants, docs/design.md §10, one at a time) and the stock-kernel lane.
test: setup
	@bash scripts/test.sh

# The stock-kernel lane: Debian's distribution kernel in a QEMU VM (virtme-ng), running
# tests/stock_kernel inside: FAST/HSTCP as modules, tc + netem, the OVS kernel datapath.
test-stock-kernel: setup
	bash scripts/stock-kernel.sh

bench: setup
	$(PY) bench/emulator.py
	$(PY) bench/cc.py

endif

# The check tier, as any user and without `make setup` (a first run on a bare checkout creates
# .venv-check from PyPI): lint, the type checker and the tests that need neither root nor a network.
check:
	@bash scripts/check.sh

# The fast loop (~15 s): unit tests need no root and no network, only a set-up checkout.
unit:
	@test -x $(PY) || { echo "make unit: run 'make setup' once first (it creates .venv)" >&2; exit 1; }
	$(PY) -m pytest -p no:cacheprovider -q tests/unit

lint:
	$(PY) -m ruff check fastlab topologies tests bench webapp labs controllers examples/plugin-topology scripts setup.py
	$(PY) -m mypy

# The documentation site (site/), its API reference (docs/api.md) generated from the package's docstrings:
# mkdocs + mkdocstrings, from requirements-docs.txt (`make test` installs it; tests/unit/test_docs.py builds
# the same site).
docs:
	@$(PY) -c "import mkdocstrings" 2>/dev/null || $(PY) -m pip install -q -r requirements-docs.txt
	$(PY) -m mkdocs build --strict

# fastlab/define/cc_constants.py from the CC cores' C headers (after changing one; a unit test compares).
cc-constants:
	$(PY) scripts/cc_constants.py

clean:
	$(MAKE) -s -C linkemu clean
	$(MAKE) -s -C kernel-modules clean
