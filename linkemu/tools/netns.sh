#!/bin/sh
# netns.sh - throw-away test bed for linkemu (needs root).
#
#   tools/netns.sh up     create namespaces lemu-a, lemu-e, lemu-b:
#                         lemu-a [va 10.99.0.1/24] <-> [ea] lemu-e [eb] <-> [vb 10.99.0.2/24] lemu-b
#   tools/netns.sh down   delete them
#
# linkemu is then run inside lemu-e with --if-a ea --if-b eb.  Offloads are
# switched off on every veth: with TSO/GSO/GRO on, AF_PACKET would see 64 KB
# super-frames, and with checksum offload the checksums stay partial.
set -e
PFX=${LEMU_PREFIX:-lemu}
A=$PFX-a E=$PFX-e B=$PFX-b

offloads_off() {
	ip netns exec "$1" ethtool -K "$2" tso off gso off gro off tx off rx off \
		>/dev/null 2>&1 || true
}

case "$1" in
up)
	ip netns add "$A"
	ip netns add "$E"
	ip netns add "$B"
	ip link add va netns "$A" type veth peer name ea netns "$E"
	ip link add vb netns "$B" type veth peer name eb netns "$E"
	# The emulator's namespace must not talk on its own: no IPv6 DAD/RS.
	ip netns exec "$E" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
	ip netns exec "$E" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
	for ns_dev in "$A va" "$E ea" "$E eb" "$B vb"; do
		set -- $ns_dev
		offloads_off "$1" "$2"
		ip -n "$1" link set "$2" up
	done
	for ns in "$A" "$E" "$B"; do
		ip -n "$ns" link set lo up
	done
	ip -n "$A" addr add 10.99.0.1/24 dev va
	ip -n "$B" addr add 10.99.0.2/24 dev vb
	for ns in "$A" "$B"; do
		ip netns exec "$ns" sysctl -qw net.ipv4.tcp_rmem='4096 131072 67108864'
		ip netns exec "$ns" sysctl -qw net.ipv4.tcp_wmem='4096 131072 67108864'
	done
	;;
down)
	for ns in "$A" "$E" "$B"; do
		ip netns del "$ns" 2>/dev/null || true
	done
	;;
*)
	echo "usage: $0 up|down" >&2
	exit 2
	;;
esac
