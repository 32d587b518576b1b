#!/usr/bin/env bash
# The stock-kernel lane: boots a distribution kernel (Debian's linux-image-<abi>-amd64, the kernel a
# stock Debian user runs) in a QEMU VM with virtme-ng and runs tests/stock_kernel inside it, as root,
# on this checkout. What it tests cannot exist on the development kernel: FAST and HSTCP as loadable
# modules, tc + netem shaping, the Open vSwitch kernel datapath, the kernel's own highspeed and vegas.
#
#   scripts/stock-kernel.sh [PYTEST ARGS...]     (make test-stock-kernel)
#   scripts/stock-kernel.sh --prepare           (everything before the boot: packages, the kernel,
#                                                the modules' build, the KVM probe; make test runs it
#                                                beside its first tiers, which judge nothing by time)
#   STOCK_KERNEL_IMAGE=/boot/vmlinuz-X [STOCK_KERNEL_HEADERS=DIR] scripts/stock-kernel.sh   (another kernel)
#   FASTLAB_LANE_REPEATS=N scripts/stock-kernel.sh -k ...   (tests that repeat read N in the guest: bench/red_lane.py)
#   FASTLAB_LANE_RED_S=S  ...                                (the RED test's seconds of flows a run; bench/red_lane.py: 25)
#
# The kernel is the image matching the newest Debian header package set-up installed
# (/usr/src/linux-headers-<abi>-amd64; the modules are compiled against it), unpacked into
# .cache/stock-kernel/<abi>/ -- never installed: the host's /boot and boot menu stay untouched.
# FastLab's modules are built for it there too, so a module build for the host kernel stays put.
# The guest sees the host's root file system read-only (9p) with writable overlays, and
# .cache/stock-kernel/out read-write (pytest.log, printed after the VM exits, and run folders).
#
# Acceleration: KVM where it works, else software emulation (TCG; this machine's /dev/kvm fails
# with "failed to set MSR 0x10a"). Where no VM can start (not x86-64/amd64, packages not
# installable) the lane prints "stock-kernel lane: SKIPPED: <why>" and exits 0; every other failure
# (a test, a boot that does not finish within VM_TIMEOUT_S) exits non-zero.
set -euo pipefail
PREPARE_ONLY=0
if [ "${1:-}" = --prepare ]; then PREPARE_ONLY=1; shift; fi
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="$REPO/.cache/stock-kernel"
VENV="$REPO/.venv"
VM_TIMEOUT_S=${VM_TIMEOUT_S:-900}   # the whole guest session; the lane takes ~4-6 min under TCG here
VM_MEMORY=${VM_MEMORY:-2G}
log() { printf 'stock-kernel lane: %s\n' "$*"; }
skip() { log "SKIPPED: $*"; exit 0; }

[ "$(id -u)" -eq 0 ] || { echo "stock-kernel lane: needs root (modules, namespaces in the guest): run 'make test-stock-kernel'" >&2; exit 2; }
[ "$(uname -m)" = x86_64 ] && [ "$(dpkg --print-architecture 2>/dev/null)" = amd64 ] \
    || skip "needs an x86-64 Debian-style host (this one: $(uname -m), $(dpkg --print-architecture 2>/dev/null || echo no dpkg))"
[ -x "$VENV/bin/vng" ] || { echo "stock-kernel lane: $VENV/bin/vng missing: run 'make setup' first" >&2; exit 2; }

# --- packages: QEMU and a static busybox (virtme-ng's initramfs) ------------------------------
missing=()
for pkg in qemu-system-x86 busybox-static; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null \
        || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; } \
        || skip "cannot install ${missing[*]} (no package source reachable)"
fi

# --- the kernel: the image of the newest installed Debian header package ----------------------
# (or the user's own: STOCK_KERNEL_IMAGE=/boot/vmlinuz-X, headers from STOCK_KERNEL_HEADERS or that
# kernel's /lib/modules/X/build, modules from /lib/modules/X as virtme-ng finds them)
if [ -n "${STOCK_KERNEL_IMAGE:-}" ]; then
    kimg="$STOCK_KERNEL_IMAGE"
    [ -f "$kimg" ] || { echo "stock-kernel lane: STOCK_KERNEL_IMAGE=$kimg does not exist" >&2; exit 2; }
    abi="$(basename "$kimg")"; abi="${abi#vmlinuz-}"
    hdr="${STOCK_KERNEL_HEADERS:-/lib/modules/$abi/build}"
    [ -d "$hdr" ] || { echo "stock-kernel lane: no headers for $abi at $hdr (set STOCK_KERNEL_HEADERS)" >&2; exit 2; }
else
    hdr="$(find /usr/src -maxdepth 1 -name 'linux-headers-*-amd64' | sort -V | tail -n1)"
    [ -n "$hdr" ] || skip "no Debian kernel headers in /usr/src (set-up installs linux-headers-amd64 on Debian)"
    abi="${hdr#/usr/src/linux-headers-}"
    kroot="$CACHE/$abi/root"
    kimg="$kroot/boot/vmlinuz-$abi"
    if [ ! -f "$kimg" ]; then
        log "fetching linux-image-$abi (unpacked into $CACHE/$abi, not installed)"
        tmp="$(mktemp -d)"
        trap 'rm -rf "$tmp"' EXIT
        chmod 755 "$tmp"   # apt's download user writes here
        (cd "$tmp" && apt-get download -q "linux-image-$abi" >/dev/null 2>&1) \
            || skip "cannot download linux-image-$abi (offline, or the archive no longer has it)"
        rm -rf "$kroot.part" && mkdir -p "$kroot.part"
        dpkg-deb -x "$tmp"/linux-image-"$abi"_*.deb "$kroot.part"
        rm -rf "$kroot" && mv "$kroot.part" "$kroot"
    fi
fi

# --- fastlab's modules, compiled for that kernel (zero warnings, like make modules-check) --------
# Built again only when their sources, the kernel or its headers changed (a stamp of their hashes):
# `--prepare` builds them and the lane's own run finds them ready.
mods="$CACHE/$abi/fastlab-modules"
stamp="$CACHE/$abi/fastlab-modules.stamp"
src_hash="$( (echo "$abi $hdr $(sha256sum "$kimg" | cut -d' ' -f1)"; \
    find "$REPO/kernel-modules/modules" "$REPO/kernel-modules/core" -type f \
        \( -name '*.c' -o -name '*.h' -o -name Makefile -o -name Kbuild \) -print0 | sort -z | xargs -0 sha256sum) \
    | sha256sum | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$src_hash" ] && ls "$mods"/modules/*.ko >/dev/null 2>&1; then
    log "modules for $abi: built from these sources already"
else
    rm -f "$stamp"
    rm -rf "$mods" && mkdir -p "$mods"
    cp -r "$REPO/kernel-modules/modules" "$REPO/kernel-modules/core" "$mods/"
    rm -f "$mods"/modules/*.ko "$mods"/modules/*.o "$mods"/modules/*.mod* "$mods"/modules/.*.cmd
    if ! make -s -C "$hdr" M="$mods/modules" modules > "$mods/build.log" 2>&1 || grep -qi warning "$mods/build.log"; then
        cat "$mods/build.log" >&2
        echo "stock-kernel lane: the module build for $abi failed or warned" >&2
        exit 1
    fi
    echo "$src_hash" > "$stamp"
fi

# --- boot ---------------------------------------------------------------------------------------
out="$CACHE/out"
rm -rf "$out" && mkdir -p "$out"
accel=(--disable-kvm)
# KVM probe: with KVM working the kernel boots and, having no root file system, panics and exits (0).
# The subshell reports a qemu that aborts (this machine) to /dev/null instead of the log. Its answer is
# kept for this boot of the machine (boot_id), so `--prepare`'s probe serves the lane's run after it.
probe_file="$CACHE/$abi/kvm-probe"
boot_id="$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo unknown)"
if [ -f "$probe_file" ] && [ "$(cut -d' ' -f1 "$probe_file")" = "$boot_id" ]; then
    kvm_rc="$(cut -d' ' -f2 "$probe_file")"
else
    kvm_rc=$( (timeout 30 qemu-system-x86_64 -accel kvm -cpu host -m 256 -display none -nodefaults -no-reboot \
        -kernel "$kimg" -append "panic=-1" >/dev/null 2>&1; echo $?) 2>/dev/null || true)
    echo "$boot_id $kvm_rc" > "$probe_file"
fi
if [ -w /dev/kvm ] && [ "$kvm_rc" = 0 ]; then
    accel=()
fi
if [ "$PREPARE_ONLY" = 1 ]; then
    log "prepared: $abi, modules built, ${accel[*]:-KVM}"
    exit 0
fi
# the checkout's version, computed here: over the guest's 9p root `git describe --dirty` takes over 10 s
repeats="${FASTLAB_LANE_REPEATS:-1}"; repeats="${repeats//[^0-9]/}"
red_s="${FASTLAB_LANE_RED_S:-}"; red_s="${red_s//[^0-9]/}"  # empty: the test's own default
describe="$(git -C "$REPO" describe --always --dirty 2>/dev/null | tr -cd 'A-Za-z0-9._-')"
log "booting $abi (${accel[*]:-KVM}) and running tests/stock_kernel inside"
# The guest's root is the host's over 9p without a page cache (virtme-ng's rootflags): every file read crosses to
# QEMU's main thread, which used more CPU than both vCPUs together (6:11 against 2:27 + 2:01 of a 7-minute lane),
# and 84 MB of pandas read in 30 s, twice. The same tree exported again read-only and mounted with cache=loose
# read it in 9.3 s, then 4.9: what the lane only reads -- the programs, Python and the libraries in /usr, and the
# venv -- comes from that mount (not all of /usr: the guest's kernel modules are mounted into /usr/lib/modules).
reads="/usr/bin /usr/sbin /usr/lib/python3 /usr/lib/python3.11 /usr/lib/x86_64-linux-gnu /usr/share $VENV"
cached="mkdir -p /run/fastlab-root && mount -t 9p -o trans=virtio,version=9p2000.L,cache=loose,msize=512000,ro \
fastlabroot /run/fastlab-root && (for d in $reads; do [ ! -d \"/run/fastlab-root\$d\" ] || mount --bind \
\"/run/fastlab-root\$d\" \"\$d\" || exit 1; done) || echo 'stock-kernel lane: no cached root in the guest (the \
uncached 9p root serves)'"
guest="$cached; cd '$REPO' && FASTLAB_STOCK_KERNEL_VM=1 FASTLAB_MODULES_DIR='$mods/modules' FASTLAB_LANE_OUT='$out' FASTLAB_LANE_REPEATS='$repeats' FASTLAB_LANE_RED_S='$red_s' FASTLAB_GIT_DESCRIBE='$describe' \
PYTHONPATH='$REPO' '$VENV/bin/python' -m pytest -p no:cacheprovider tests/stock_kernel --durations=0 -rP $* \
> '$out/pytest.log' 2>&1; echo \$? > '$out/rc'"
set +e
# Through a pipe: QEMU opens the guest's console files as /proc/self/fd/1 and /2, which truncates
# them when they are files -- `make test > log` lost everything printed before the lane.
timeout --kill-after=30 "$VM_TIMEOUT_S" env PATH="$VENV/bin:$PATH" "$VENV/bin/vng" "${accel[@]}" \
    --run "$kimg" --cpus 2 --memory "$VM_MEMORY" --rwdir "$out" --exec "$guest" \
    --qemu-opts="-fsdev local,id=fastlabroot,path=/,security_model=none,readonly=on,multidevs=remap \
-device virtio-9p-pci,fsdev=fastlabroot,mount_tag=fastlabroot" 2>&1 | cat
vm_rc=${PIPESTATUS[0]}
set -e
# pytest's report goes through a file, not the guest console: a CI runner without a terminal got
# none of the console's lines (a failed lane said only "exited 1").
if [ -f "$out/pytest.log" ]; then
    log "pytest inside $abi:"
    cat "$out/pytest.log"
fi
if [ ! -s "$out/rc" ]; then
    echo "stock-kernel lane: the guest did not finish (vng exit $vm_rc; timeout ${VM_TIMEOUT_S} s)" >&2
    exit 1
fi
rc="$(cat "$out/rc")"
log "tests inside $abi exited $rc"
exit "$rc"
