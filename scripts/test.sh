#!/usr/bin/env bash
# `make test` after setup: every tier in order, stopping at the first that fails, each tier's wall time
# printed as it ends and all of them in a table at the end (CI's log says where the time went).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=.venv/bin/python

tiers=(
    "lint + mypy|make -s lint"
    "linkemu C tests|make -s -C linkemu test"
    "CC cores + module build check|make -s -C kernel-modules test modules-check"
    "unit (recorded runs, pure code)|$PY -m pytest -p no:cacheprovider -q -m 'not root and not slow' tests/unit"
    "leftovers of killed runs|$PY -m fastlab cleanup"
    "host suite (real namespaces, live runs)|$PY -m pytest -p no:cacheprovider -rs --durations=25 --ignore=tests/unit tests"
    "stock-kernel lane (VM)|make -s test-stock-kernel"
)
report=()
total_start=$SECONDS
status=0
for tier in "${tiers[@]}"; do
    name=${tier%%|*}
    command=${tier#*|}
    start=$SECONDS
    echo "=== tier: $name"
    bash -c "$command"
    rc=$?
    took=$((SECONDS - start))
    report+=("$(printf '%-42s %5d s  %s' "$name" "$took" "$([ $rc -eq 0 ] && echo ok || echo "FAILED (exit $rc)")")")
    echo "=== tier: $name: $took s, exit $rc"
    if [ $rc -ne 0 ]; then
        status=$rc
        break
    fi
done
echo "=== make test: tiers"
printf '%s\n' "${report[@]}"
printf '%-42s %5d s\n' "all tiers" "$((SECONDS - total_start))"
exit $status
