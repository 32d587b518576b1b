#!/usr/bin/env bash
# fastlab setup: idempotent, as root, on Debian 12 / Ubuntu 22.04+.
# The system part: packages (Mininet, Open vSwitch, clang/libbpf, ...), the native builds (linkemu,
# fastlab-cc, fastlab-clamp) installed where an installed package finds them ($PREFIX/lib/fastlab),
# Open vSwitch running. Then the Python part: a virtualenv in which Mininet imports (system python3 +
# venv with system site-packages), requirements.txt, fastlab itself installed into it editable
# (`pip install -e`, offline: no build isolation), and `fastlab` on PATH ($PREFIX/bin/fastlab).
#   FASTLAB_VENV    the virtualenv (default: .venv in the checkout)
#   FASTLAB_PREFIX  where the command and the native tools go (default: /usr/local)
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${FASTLAB_VENV:-$REPO/.venv}"
PREFIX="${FASTLAB_PREFIX:-/usr/local}"
STAMP="$VENV/.fastlab-setup"
log() { printf 'setup: %s\n' "$*"; }

if [ "$(id -u)" -ne 0 ]; then
    echo "setup: needs root (apt, network namespaces): run 'make setup' (it asks sudo itself for a sudo user)" >&2
    exit 2
fi

APT_PACKAGES=(mininet openvswitch-switch iperf3 iproute2 ethtool iputils-ping procps net-tools
              bridge-utils iptables make gcc libc6-dev python3 python3-venv python3-dev python3-wheel
              clang llvm libbpf-dev libelf-dev zlib1g-dev bpftool libnetfilter-queue-dev
              chromium)
# Headers to compile-check the loadable modules: Debian's metapackage, else this kernel's.
headers_package() {
    if apt-cache show linux-headers-amd64 >/dev/null 2>&1 && [ "$(dpkg --print-architecture)" = amd64 ]; then
        echo linux-headers-amd64
    elif apt-cache show "linux-headers-$(uname -r)" >/dev/null 2>&1; then
        echo "linux-headers-$(uname -r)"
    fi
}
if ! compgen -G "/var/lib/apt/lists/*_Packages*" >/dev/null; then  # lists may be stored compressed (.lz4)
    apt-get update -q   # a fresh machine has no package lists: look-ups need them
fi
hdr="$(headers_package)"
[ -n "$hdr" ] && APT_PACKAGES+=("$hdr")
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    log "installing system packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Mininet is a Debian package for the system interpreter; the venv sees it through
# --system-site-packages (the python3 first on PATH may be another build without it).
SYS_PY=/usr/bin/python3
if [ ! -x "$VENV/bin/python" ]; then
    log "creating $VENV"
    "$SYS_PY" -m venv --system-site-packages "$VENV"
fi
# The stamp covers what the environment is made from: the pins and the package's own metadata.
req_hash="$(cat "$REPO/requirements.txt" "$REPO/pyproject.toml" "$REPO/setup.py" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$STAMP" 2>/dev/null)" != "$req_hash" ]; then
    log "installing requirements.txt"
    "$VENV/bin/pip" install -q --disable-pip-version-check -r "$REPO/requirements.txt"
    # fastlab itself, editable (this checkout's code, its console script and its topology entry points);
    # no build isolation: the venv's own setuptools (and the system's python3-wheel) build it, with no network.
    log "installing fastlab (editable) into $VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check --no-build-isolation -e "$REPO"
    echo "$req_hash" > "$STAMP"
fi
"$VENV/bin/python" -c "import mininet.net, yaml, pydantic, pandas, plotly" \
    || { echo "setup: the Python environment is incomplete" >&2; exit 1; }
(cd / && "$VENV/bin/python" -c "import fastlab.cli") \
    || { echo "setup: fastlab is not importable from $VENV" >&2; exit 1; }

log "building the link emulator and the congestion-control set"
make -s -C "$REPO/linkemu"
make -s -C "$REPO/kernel-modules"
# ... installed where a fastlab that is not this checkout's (pip install <checkout>) finds them
# (fastlab.base.paths: FASTLAB_NATIVE_DIR, else the checkout it runs from, else $PREFIX/lib/fastlab).
NATIVE="$PREFIX/lib/fastlab"
for tool in linkemu/linkemu kernel-modules/fastlab-cc kernel-modules/fastlab-clamp; do
    cmp -s "$REPO/$tool" "$NATIVE/${tool##*/}" || install -D -m 755 "$REPO/$tool" "$NATIVE/${tool##*/}"
done
for ko in "$REPO"/kernel-modules/modules/*.ko; do
    [ -e "$ko" ] || continue
    cmp -s "$ko" "$NATIVE/modules/${ko##*/}" || install -D -m 644 "$ko" "$NATIVE/modules/${ko##*/}"
done

# Open vSwitch: systemd where it runs, otherwise its own control script. Only from the machine's
# own network namespace: a daemon started from another one (e.g. `make run` inside `unshare --net`)
# would stay in it and could not see the namespaces fastlab builds. Where init's namespace cannot be
# read (some sandboxes), a namespace holding nothing but loopback is taken as such another one.
other_netns() {
    local init
    init=$(readlink /proc/1/ns/net 2>/dev/null) && [ "$init" != "$(readlink /proc/self/ns/net)" ] && return 0
    [ -z "$(ip -o link show 2>/dev/null | awk -F': ' '$2 != "lo"')" ]
}
if other_netns; then
    ovs-vsctl --timeout=3 show >/dev/null 2>&1 \
        || log "warning: Open vSwitch is not running, and it is not started from this network namespace; Linux bridges will be used"
elif ! ovs-vsctl --timeout=3 show >/dev/null 2>&1; then
    log "starting Open vSwitch"
    if [ -d /run/systemd/system ]; then
        systemctl start openvswitch-switch || true
    fi
    if ! ovs-vsctl --timeout=3 show >/dev/null 2>&1; then
        # The daemons outlive this script and would keep every descriptor it was given: a caller's
        # `flock LOCK make test` left the lock held by ovs-vswitchd for good (2026-11-28), and a pipe
        # would keep its reader waiting for an end. So they get none but stdin/stdout/stderr.
        (
            for fd in /proc/self/fd/*; do
                n=${fd##*/}
                [ "$n" -gt 2 ] 2>/dev/null && eval "exec $n>&-"
            done
            exec /usr/share/openvswitch/scripts/ovs-ctl start --system-id=random </dev/null >/dev/null 2>&1
        ) || true
    fi
    ovs-vsctl --timeout=5 show >/dev/null 2>&1 || log "warning: Open vSwitch is not running; Linux bridges will be used"
fi

# tracefs, for the tcp:tcp_probe tracepoint (a no-op where it is mounted already).
if grep -qw tracefs /proc/filesystems && [ -d /sys/kernel/tracing ] && ! mountpoint -q /sys/kernel/tracing; then
    mount -t tracefs nodev /sys/kernel/tracing || log "warning: cannot mount tracefs"
fi

# `fastlab` on root's PATH (and a sudo user's), running the engine from this checkout (the path first:
# the virtualenv may be shared with another checkout's editable install).
mkdir -p "$PREFIX/bin"
cat > "$PREFIX/bin/fastlab.new" <<WRAP
#!/bin/sh
# installed by $REPO/scripts/setup.sh
export PYTHONPATH="$REPO\${PYTHONPATH:+:\$PYTHONPATH}"
exec "$VENV/bin/python" -m fastlab "\$@"
WRAP
chmod 755 "$PREFIX/bin/fastlab.new"
mv -f "$PREFIX/bin/fastlab.new" "$PREFIX/bin/fastlab"
log "ready: $("$PREFIX/bin/fastlab" --version) on PATH ($PREFIX/bin/fastlab)"
