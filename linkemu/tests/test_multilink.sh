#!/bin/sh
# test_multilink.sh - one linkemu process serving two links against one process per link.
#
# Needs root (network namespaces, AF_PACKET); without it, says so and passes nothing.
# Builds two link nodes (namespaces $P-l1, $P-l2, each with interfaces ea and eb:
# the same names, so each link's sockets must be opened in its own namespace) and one
# host namespace $P-h holding the other veth ends.  The same frames (experimental
# EtherType 0x88b5, no IP: nothing else crosses) are injected into each link, first
# through one single-link linkemu per link run inside its node, then through one
# multi-link linkemu started outside both (--link ID --netns PATH).  It checks that:
# - every link's seeded drop indices (--drops-log) are identical in both modes, for
#   Bernoulli and Gilbert-Elliott loss in both directions, and not empty;
# - the multi-link process's lines carry their link: one ready and one final stats line
#   per link, whose counters equal the single-link run's;
# - both modes forward every frame that was not dropped.
# All names are scoped by this shell's PID and removed on exit.  The last line printed is
# "N passed, M failed" like the C tests.
BIN=${1:-./linkemu}
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
pass=0
fail=0
P=lmt$$
T=$(mktemp -d)
N_AB=3000	# frames injected A -> B per link
N_BA=1000	# frames injected B -> A per link

if [ "$(id -u)" -ne 0 ]; then
	echo "test_multilink: needs root (namespaces, AF_PACKET): skipped"
	echo "0 passed, 0 failed"
	exit 0
fi

cleanup() {
	for ns in "$P-h" "$P-l1" "$P-l2"; do
		ip netns del "$ns" 2>/dev/null
	done
	rm -rf "$T"
}
trap cleanup EXIT INT TERM

check() {	# check NAME COMMAND...: one assertion
	name=$1
	shift
	if "$@"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: $name"
	fi
}

ip netns add "$P-h" && ip netns add "$P-l1" && ip netns add "$P-l2" || exit 1
for ns in "$P-h" "$P-l1" "$P-l2"; do
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
done
for k in 1 2; do
	ip link add "ia$k" netns "$P-h" type veth peer name ea netns "$P-l$k"
	ip link add "ib$k" netns "$P-h" type veth peer name eb netns "$P-l$k"
	ip -n "$P-h" link set "ia$k" up
	ip -n "$P-h" link set "ib$k" up
	ip -n "$P-l$k" link set ea up
	ip -n "$P-l$k" link set eb up
done

# inject IFACE COUNT: COUNT frames out of IFACE (in the host namespace), numbered.
inject() {
	ip netns exec "$P-h" python3 -c '
import socket, struct, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[1], 0))
for i in range(int(sys.argv[2])):
    s.send(b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x01" + struct.pack("!HI", 0x88B5, i) + bytes(80))
' "$1" "$2"
}

# count IFACE: frames received on IFACE (host namespace) until $2 s of silence.
count_start() {
	ip netns exec "$P-h" python3 -c '
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x88B5))
s.setsockopt(socket.SOL_SOCKET, 33, 1 << 24)  # SO_RCVBUFFORCE: hold every frame
s.bind((sys.argv[1], 0))
s.settimeout(1.5)
n = 0
try:
    while True:
        s.recv(2048)
        n += 1
except socket.timeout:
    pass
print(n)
' "$1" > "$2" &
	COUNTERS="$COUNTERS $!"
}

# wait_ready FILE N: N ready lines in FILE within 10 s (a loaded machine starts slowly).
ready_lines() {
	cat "$1" 2>/dev/null | grep -c '"event":"ready"'
}
wait_ready() {
	w=0
	while [ "$(ready_lines "$1")" -lt "$2" ] && [ $w -lt 100 ]; do
		sleep 0.1
		w=$((w + 1))
	done
	[ "$(ready_lines "$1")" -ge "$2" ]
}

LOSS1="--seed 7 --ab-loss bernoulli:0.1 --ba-loss bernoulli:0.2"
LOSS2="--seed 9 --ab-loss ge:0.05:0.3 --ba-loss every_nth:7"

# drive MODE: inject into both links and count what comes out, into $T/MODE-*.
drive() {
	COUNTERS=
	for k in 1 2; do
		count_start "ib$k" "$T/$1-fwd$k"
		count_start "ia$k" "$T/$1-rev$k"
	done
	sleep 0.3
	for k in 1 2; do
		inject "ia$k" $N_AB
		inject "ib$k" $N_BA
	done
	for pid in $COUNTERS; do	# they stop after 1.5 s of silence
		wait "$pid"
	done
}

# One process per link, each inside its node.
for k in 1 2; do
	eval loss=\$LOSS$k
	ip netns exec "$P-l$k" "$BIN" --if-a ea --if-b eb $loss --stats-interval-ms 0 \
		--drops-log "$T/single-drops$k" > "$T/single-out$k" 2>"$T/single-err$k" &
	echo $! > "$T/single-pid$k"
	check "single link $k ready" wait_ready "$T/single-out$k" 1
done
drive single
for k in 1 2; do
	kill -TERM "$(cat "$T/single-pid$k")"
	wait "$(cat "$T/single-pid$k")"
done

# One process for both links, started outside their namespaces.
"$BIN" --link one --netns "/run/netns/$P-l1" --if-a ea --if-b eb $LOSS1 --stats-interval-ms 0 \
	--drops-log "$T/multi-drops1" \
	--link two --netns "/run/netns/$P-l2" --if-a ea --if-b eb $LOSS2 --stats-interval-ms 0 \
	--drops-log "$T/multi-drops2" > "$T/multi-out" 2>"$T/multi-err" &
MPID=$!
check "multi-link ready lines, one per link" wait_ready "$T/multi-out" 2
check "ready lines tagged" sh -c "grep '\"event\":\"ready\",\"link\":\"one\"' '$T/multi-out' >/dev/null && grep '\"event\":\"ready\",\"link\":\"two\"' '$T/multi-out' >/dev/null"
drive multi
kill -TERM $MPID
wait $MPID
check "multi-link exits 0" [ $? -eq 0 ]

# final stats line of a link: the last stats line (tagged LINK, or untagged) in FILE
final() {
	if [ -n "$2" ]; then
		grep "\"event\":\"stats\",\"link\":\"$2\"" "$1" | tail -1
	else
		grep '"event":"stats"' "$1" | tail -1
	fi
}
# counters of a stats line without the times and histograms (those differ run to run)
counters() {
	python3 -c '
import json, sys
m = json.loads(sys.stdin.read())
keys = ("rx_pkts", "tx_pkts", "loss_drops", "queue_drops", "rx_frames", "tx_frames")
print(" ".join(f"{d}.{k}={m[d][k]}" for d in ("ab", "ba") for k in keys))
'
}

for k in 1 2; do
	id=$([ $k -eq 1 ] && echo one || echo two)
	check "link $k: drops logged" [ -s "$T/single-drops$k" ]
	check "link $k: both directions drop" sh -c "grep -q '^ab ' '$T/single-drops$k' && grep -q '^ba ' '$T/single-drops$k'"
	check "link $k: seeded drop indices identical (single vs multi)" cmp -s "$T/single-drops$k" "$T/multi-drops$k"
	s=$(final "$T/single-out$k" "" | counters)
	m=$(final "$T/multi-out" "$id" | counters)
	check "link $k: counters identical ($s | $m)" [ "$s" = "$m" ]
	check "link $k: every frame received ($s)" sh -c "echo '$s' | grep -q 'ab.rx_pkts=$N_AB ' && echo '$s' | grep -q 'ba.rx_pkts=$N_BA '"
	fwd=$(echo "$s" | sed 's/.*ab.tx_pkts=\([0-9]*\).*/\1/')
	rev=$(echo "$s" | sed 's/.*ba.tx_pkts=\([0-9]*\).*/\1/')
	for mode in single multi; do
		got="$(cat "$T/$mode-fwd$k") $(cat "$T/$mode-rev$k")"
		check "link $k $mode: forwarded frames arrive (got $got, sent $fwd $rev)" [ "$got" = "$fwd $rev" ]
	done
done
check "one exit line" [ "$(grep -c '"event":"exit"' "$T/multi-out")" -eq 1 ]
check "no stderr from the multi-link process" [ ! -s "$T/multi-err" ]

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
