#!/usr/bin/env bash
# make check: the fast tier (issue 13) -- lint, the type checker and every test that needs neither
# root nor a network (tests/unit), as any user, in under a minute on a 2-core machine.
#
# A checkout that `make setup` has set up uses its .venv. Otherwise the first run creates a
# user-owned .venv-check from requirements-check.txt (from PyPI, once; later runs need no network)
# and builds the two native tools the unit tests call (linkemu, fastlab-cc: gcc, clang and libbpf's
# headers must be installed, which `make setup` does as root on a fresh machine).
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
cd "$REPO"
log() { echo "check: $*" >&2; }
start=$(date +%s)

if [ -x .venv/bin/python ]; then
    PY=.venv/bin/python
else
    PY=.venv-check/bin/python
    stamp=.venv-check/.requirements-check.sha256
    want="$(cat requirements-check.txt requirements-docs.txt | sha256sum | cut -d' ' -f1)"
    if [ ! -x "$PY" ]; then
        log "creating .venv-check (no set-up .venv here)"
        python3 -m venv .venv-check
    fi
    if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        log "installing requirements-check.txt"
        "$PY" -m pip install -q --disable-pip-version-check -r requirements-check.txt -r requirements-docs.txt
        echo "$want" > "$stamp"
    fi
fi
export PYTHONPATH="$REPO"
export PATH="$PATH:/usr/sbin:/sbin"  # bpftool, for a user whose PATH lacks them (Debian's default)

if ! make -s -C linkemu linkemu >/dev/null || ! make -s -C kernel-modules fastlab-cc >/dev/null; then
    log "cannot build linkemu or fastlab-cc: install gcc, clang, bpftool and libbpf-dev (make setup does)"
    exit 1
fi
"$PY" -m ruff check fastlab topologies tests bench webapp labs controllers examples/plugin-topology scripts setup.py
"$PY" -m mypy
# -p no:cacheprovider: a read-only or shared checkout stays untouched; exit code 5 (no tests) fails.
# -n 2: both cores, when pytest-xdist is there (a .venv set up before it joined requirements.txt has not).
parallel=()
"$PY" -c "import xdist" 2>/dev/null && parallel=(-n 2)
"$PY" -m pytest -p no:cacheprovider -q "${parallel[@]}" -m "not root and not slow" tests/unit
log "done in $(( $(date +%s) - start )) s"
