#!/usr/bin/env bash
# `make test` after setup: every tier in order, stopping at the first that fails, each tier's wall time
# printed as it ends and all of them in a table at the end (CI's log says where the time went).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${FASTLAB_VENV:-.venv}/bin/python
# The test target's own tools (the documentation site's builder): installed here, not by `make setup`/`make run`.
"$PY" -c "import mkdocstrings" 2>/dev/null || "$PY" -m pip install -q --disable-pip-version-check -r requirements-docs.txt \
    || echo "test: cannot install requirements-docs.txt: the API page's test will be skipped" >&2

tiers=(
    "lint + mypy|make -s lint"
    "linkemu C tests|make -s -C linkemu test"
    "CC cores + module build check|make -s -C kernel-modules test modules-check"
    "unit (recorded runs, pure code)|$PY -m pytest -p no:cacheprovider -q -n 2 -m 'not root and not slow' tests/unit"
    "leftovers of killed runs|$PY -m fastlab cleanup"
    "web pages and API, no experiment (side by side)|$PY -m pytest -p no:cacheprovider -q -n 2 --dist worksteal -m norun --durations=15 tests/webapp"
    "stock-kernel lane: preparation, beside the tiers above|@lane-prepared"
    "host suite (real namespaces, live runs)|$PY -m pytest -p no:cacheprovider -rs --durations=60 -m 'not norun' --ignore=tests/unit tests"
    "stock-kernel lane (VM)|make -s test-stock-kernel"
)
report=()
total_start=$SECONDS

# The stock-kernel lane's preparation (its packages, the kernel's download, fastlab's modules built for
# it, the KVM probe) runs beside the first tiers, which judge nothing by time; the host suite and the
# lane, which do, start only once it is over (the tier "preparation" is the wait that is left).
mkdir -p .cache
lane_log=.cache/stock-kernel-prepare.log
rm -f "$lane_log.rc"
( bash scripts/stock-kernel.sh --prepare > "$lane_log" 2>&1; echo $? > "$lane_log.rc" ) &
lane_prep=$!
lane_prepared() {
    wait "$lane_prep"
    cat "$lane_log"
    return "$(cat "$lane_log.rc" 2>/dev/null || echo 1)"
}
status=0
for tier in "${tiers[@]}"; do
    name=${tier%%|*}
    command=${tier#*|}
    start=$SECONDS
    echo "=== tier: $name"
    if [ "$command" = "@lane-prepared" ]; then
        lane_prepared
    else
        bash -c "$command"
    fi
    rc=$?
    took=$((SECONDS - start))
    report+=("$(printf '%-42s %5d s  %s' "$name" "$took" "$([ $rc -eq 0 ] && echo ok || echo "FAILED (exit $rc)")")")
    echo "=== tier: $name: $took s, exit $rc"
    if [ $rc -ne 0 ]; then
        status=$rc
        wait "$lane_prep" 2>/dev/null  # never leave the preparation running behind a failed tier
        break
    fi
done
echo "=== make test: tiers"
printf '%s\n' "${report[@]}"
printf '%-42s %5d s\n' "all tiers" "$((SECONDS - total_start))"
exit $status
