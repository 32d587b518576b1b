# fastlab: the two README commands are `sudo make run` and `sudo make test`.
PY := .venv/bin/python
export PYTHONPATH := $(CURDIR)

.PHONY: setup run test unit lint bench clean

setup:
	@bash scripts/setup.sh

run: setup
	$(PY) -m webapp

# All tests: lint, native unit tests, then (after removing what killed runs left behind)
# Python unit and integration tests (real namespaces).
test: setup lint
	$(MAKE) -s -C linkemu test
	$(MAKE) -s -C kernel-modules test modules-check
	$(PY) -m fastlab cleanup
	$(PY) -m pytest -p no:cacheprovider tests

unit: setup
	$(PY) -m pytest -p no:cacheprovider tests/unit

lint:
	$(PY) -m ruff check fastlab topologies tests bench webapp labs controllers

bench: setup
	$(PY) bench/emulator.py
	$(PY) bench/cc.py

clean:
	$(MAKE) -s -C linkemu clean
	$(MAKE) -s -C kernel-modules clean
