#!/bin/sh
# test_cli.sh - command-line validation of the linkemu binary.
#
# Every invalid invocation must print exactly one line on stderr that names
# the offending option, exit with status 2, and start nothing (these cases
# never reach socket creation, so no privileges are needed).  The last line
# printed is "N passed, M failed" like the C tests.
BIN=${1:-./linkemu}
pass=0
fail=0

# expect_usage_error WORD ARGS...: exit 2, one stderr line containing WORD.
expect_usage_error() {
	word=$1
	shift
	err=$(timeout 5 "$BIN" "$@" 2>&1 >/dev/null)
	rc=$?
	lines=$(printf '%s\n' "$err" | wc -l)
	if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] &&
	   printf '%s' "$err" | grep -q -- "$word"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: linkemu $* -> rc=$rc stderr=[$err] (want 2, '$word')"
	fi
}

OK="--if-a lo --if-b lo"	# only reached after per-option checks

expect_usage_error --if-a
expect_usage_error --if-b --if-a lo
expect_usage_error --if-a --if-a no-such-if0 --if-b lo
expect_usage_error --if-b --if-a lo --if-b no-such-if0
expect_usage_error --if-b $OK
expect_usage_error --if-a --if-a abcdefghijklmnopqrstuvwxyz --if-b lo
expect_usage_error --ab-rate-bps $OK --ab-rate-bps -5
expect_usage_error --ab-rate-bps $OK --ab-rate-bps 1e9
expect_usage_error --ab-rate-bps $OK --ab-rate-bps 10M
expect_usage_error --ba-rate-bps $OK --ba-rate-bps ""
expect_usage_error --ab-delay-us $OK --ab-delay-us 12.5
expect_usage_error --ba-delay-us $OK --ba-delay-us -1
expect_usage_error --ab-jitter-us $OK --ab-jitter-us x
expect_usage_error --ab-limit-pkts $OK --ab-limit-pkts " 5"
expect_usage_error --ba-limit-bytes $OK --ba-limit-bytes 99999999999999999999999
expect_usage_error --ab-loss $OK --ab-loss bernoulli:1.5
expect_usage_error --ab-loss $OK --ab-loss bernoulli:-0.1
expect_usage_error --ba-loss $OK --ba-loss gilbert:0.1
expect_usage_error --ba-loss $OK --ba-loss every_nth:0
expect_usage_error --ab-loss $OK --ab-loss ge:0.1
expect_usage_error --seed $OK --seed -1
expect_usage_error --stats-interval-ms $OK --stats-interval-ms abc
expect_usage_error --cpu $OK --cpu -2
expect_usage_error --max-frame $OK --max-frame 10
expect_usage_error --spin-us $OK --spin-us 99999
expect_usage_error --rx-defer-us $OK --rx-defer-us 1000001
expect_usage_error --bogus $OK --bogus 1
expect_usage_error --ab-rate-bps --if-a lo --if-b lo --ab-rate-bps
expect_usage_error stray $OK stray
expect_usage_error --ab-policy $OK --ab-policy netem
expect_usage_error --ba-policy $OK --ba-policy ""
expect_usage_error --ab-tbf-burst-bytes $OK --ab-tbf-burst-bytes 1k
expect_usage_error --ab-tbf-burst-bytes $OK --ab-policy tbf \
	--ab-rate-bps 3000000 --ab-tbf-burst-bytes 0
expect_usage_error --ba-tbf-peak-bps $OK --ba-tbf-peak-bps -1
expect_usage_error --ab-tbf-peak-bps $OK --ab-policy tbf \
	--ab-rate-bps 3000000 --ab-tbf-peak-bps 1000000
# Cisco's shaping options and the calibrated phantom element: tbf only, a rate to read the load against
expect_usage_error --ab-tbf-max-delay-us $OK --ab-tbf-max-delay-us 512000
expect_usage_error --ba-tbf-granularity-us $OK --ba-policy docsis --ba-tbf-granularity-us 4000
expect_usage_error --ab-phantom-max-delay-us $OK --ab-policy tbf --ab-phantom-max-delay-us 40000 \
	--ab-phantom-knee-ppm 500000
expect_usage_error --ab-phantom-knee-ppm $OK --ab-policy tbf --ab-rate-bps 3000000 \
	--ab-phantom-max-delay-us 40000
expect_usage_error --ab-phantom-knee-ppm $OK --ab-phantom-knee-ppm 1000001
expect_usage_error --ab-phantom-window-us $OK --ab-policy tbf --ab-rate-bps 3000000 \
	--ab-phantom-max-delay-us 40000 --ab-phantom-knee-ppm 500000 --ab-phantom-window-us 10
# the flow term: quarters 0..16, and only with the element it scales
expect_usage_error --ab-phantom-flow-exp-q $OK --ab-phantom-flow-exp-q 17
expect_usage_error --ba-phantom-flow-exp-q $OK --ba-phantom-flow-exp-q 1.5
expect_usage_error --ab-phantom-flow-exp-q $OK --ab-policy tbf --ab-rate-bps 3000000 \
	--ab-phantom-flow-exp-q 8
expect_usage_error --ab-phantom-flow-exp-q $OK --ab-policy rate --ab-phantom-flow-exp-q 8
expect_usage_error --docsis-map-interval-us $OK --docsis-map-interval-us 0
expect_usage_error --docsis-map-interval-us $OK --docsis-map-interval-us 2ms
expect_usage_error --docsis-lookahead-us $OK --docsis-lookahead-us 1.6
expect_usage_error --docsis-request-transit-us $OK \
	--docsis-request-transit-us 99999999999
expect_usage_error --docsis-phy-rate-bps $OK --docsis-phy-rate-bps 0
expect_usage_error --docsis-phy-rate-bps $OK --ba-policy docsis \
	--docsis-phy-rate-bps 1000
expect_usage_error --docsis-max-burst-bytes $OK --docsis-max-burst-bytes 0
expect_usage_error --docsis-concatenation $OK --docsis-concatenation 2
expect_usage_error --docsis-piggyback $OK --docsis-piggyback yes
# Active queue management: one line naming the option and the refused field.
expect_usage_error "--ab-aqm.*max_p" $OK --ab-aqm red:max_p=nan
expect_usage_error "--ab-aqm.*max_p" $OK --ab-aqm red:max_p=inf
expect_usage_error "--ab-aqm.*max_p" $OK --ab-aqm red:max_p=-0.1
expect_usage_error "--ab-aqm.*max_p" $OK --ab-aqm red:max_p=1.5
expect_usage_error "--ab-aqm.*wq" $OK --ab-aqm red:wq=0.1,wq=0.2
expect_usage_error "--ab-aqm.*foo" $OK --ab-aqm red:foo=1
expect_usage_error "--ab-aqm.*max_th_pkts" $OK --ab-aqm red:min_th_pkts=30
expect_usage_error "--ab-aqm.*max_th_pkts" $OK --ab-aqm red:max_th_pkts=18446744073709551616
expect_usage_error "--ab-aqm.*max_th_bytes" $OK --ab-aqm red:min_th_bytes=7500
expect_usage_error "--ab-aqm.*gentle" $OK --ab-aqm red:gentle=
expect_usage_error "--ab-aqm.*key=value" $OK --ab-aqm red:
expect_usage_error "--ab-aqm.*max_p" $OK --ab-aqm "red:max_p=0.1
"
expect_usage_error "--ba-aqm.*target_us" $OK --ba-aqm codel:target_us=-5
expect_usage_error "--ba-aqm.*target_us" $OK --ba-aqm codel:target_us=5ms
expect_usage_error "--ba-aqm.*interval_us" $OK --ba-aqm codel:interval_us=99999999999
expect_usage_error "--ab-aqm.*alpha" $OK --ab-aqm pie:alpha=1e999
expect_usage_error "--ab-aqm.*beta" $OK --ab-aqm pie:beta=nan
expect_usage_error "--ab-aqm.*tupdate_us" $OK --ab-aqm pie:tupdate_us=1
expect_usage_error "--ab-aqm.*unknown model" $OK --ab-aqm ""
expect_usage_error "--ab-aqm.*unknown model" $OK --ab-aqm fq_codel
expect_usage_error "--ab-aqm: codel needs --ab-policy rate" $OK --ab-policy tbf --ab-aqm codel
expect_usage_error "--ba-aqm: codel needs --ba-policy rate" $OK --ba-aqm codel --ba-policy docsis
expect_usage_error "--ba-aqm: pie cannot run with --ba-policy docsis" $OK --ba-policy docsis --ba-aqm pie
# Good specs get past every option check: the first error is --if-b's own.
for aqm in none red codel pie \
	red:min_th_pkts=5,max_th_pkts=15,max_p=0.1,wq=0.002,gentle=1,adaptive=1,ecn=1,mean_pkt_bytes=500 \
	red:min_th_bytes=7500,max_th_bytes=22500 \
	codel:target_us=5000,interval_us=100000,ecn=1 \
	pie:target_us=15000,tupdate_us=15000,alpha=0.125,beta=1.25,max_burst_us=150000,ecn=1; do
	expect_usage_error "--if-b: must differ" $OK --ab-aqm "$aqm" --ba-aqm "$aqm"
done
expect_usage_error "--if-b: must differ" $OK --ab-policy tbf --ab-aqm red --ba-policy tbf --ba-aqm pie
expect_usage_error "--if-b: must differ" $OK --ba-policy docsis --ba-aqm red

# Time-varying links: schedules and mahimahi traces, refused naming the
# option and the step/field, or the file and line.
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
printf '1\n2\n2\n3\n4\n5\n5\n6\n7\n8\n9\n10\n' > "$TMP/good.trace"
printf '5\n3\n' > "$TMP/down.trace"
printf '0\n0\n' > "$TMP/zero.trace"
printf '1\n\n2\n' > "$TMP/blank.trace"
printf '1\n2ms\n' > "$TMP/unit.trace"
: > "$TMP/empty.trace"
expect_usage_error "--ab-schedule.*expected T:key=value" $OK --ab-schedule ""
expect_usage_error "--ab-schedule.*step 1: unknown key 'rate'" $OK --ab-schedule 0:rate=5
expect_usage_error "--ab-schedule.*step 1: rate_bps" $OK --ab-schedule 0:rate_bps=5M
expect_usage_error "--ab-schedule.*step 2: time" $OK --ab-schedule "0:rate_bps=5;0:rate_bps=6"
expect_usage_error "--ab-schedule.*step 1: time" $OK --ab-schedule -5:rate_bps=5
expect_usage_error "--ba-schedule.*step 1: loss" $OK --ba-schedule 0:loss=2
expect_usage_error "--ba-schedule.*step 1: delay_us" $OK --ba-schedule 0:delay_us=-1
expect_usage_error "--ab-schedule.*given twice" $OK --ab-schedule 0:loss=0.1,loss=0.2
expect_usage_error "--ab-schedule.*step 2: empty step" $OK --ab-schedule "0:loss=0.1;"
expect_usage_error "--ab-schedule: rate_bps steps need --ab-policy rate" $OK --ab-policy tbf \
	--ab-schedule 0:rate_bps=1000000
expect_usage_error "--ab-schedule: loss steps need --ab-loss none or bernoulli" $OK \
	--ab-loss every_nth:3 --ab-schedule 0:loss=0.1
expect_usage_error "--ab-trace: empty file name" $OK --ab-trace ""
expect_usage_error "--ab-trace: cannot open" $OK --ab-trace "$TMP/missing.trace"
expect_usage_error "--ab-trace: cannot read" $OK --ab-trace "$TMP"
expect_usage_error "--ab-trace: .*down.trace:2: 3 is below" $OK --ab-trace "$TMP/down.trace"
expect_usage_error "--ba-trace: .*zero.trace:2: the last timestamp" $OK --ba-trace "$TMP/zero.trace"
expect_usage_error "--ab-trace: .*blank.trace:2: empty line" $OK --ab-trace "$TMP/blank.trace"
expect_usage_error "--ab-trace: .*unit.trace:2: '2ms'" $OK --ab-trace "$TMP/unit.trace"
expect_usage_error "--ab-trace: .*empty.trace: no timestamps" $OK --ab-trace "$TMP/empty.trace"
expect_usage_error "--ab-trace: a trace is the departure policy" $OK \
	--ab-trace "$TMP/good.trace" --ab-policy docsis
expect_usage_error "--ab-aqm: codel cannot run with --ab-trace" $OK \
	--ab-trace "$TMP/good.trace" --ab-aqm codel
expect_usage_error "--ab-schedule: rate_bps steps cannot run with --ab-trace" $OK \
	--ab-trace "$TMP/good.trace" --ab-schedule 0:rate_bps=1000000
# Good ones get past every option check: the first error is --if-b's own.
expect_usage_error "--if-b: must differ" $OK \
	--ab-schedule "0:rate_bps=10000000;1000000:rate_bps=5000000,delay_us=30000,loss=0.01" \
	--ba-schedule "5000000:delay_us=20000"
expect_usage_error "--if-b: must differ" $OK --ab-rate-bps 10000000 --ab-loss bernoulli:0.01 \
	--ab-schedule "10000000:rate_bps=5000000,loss=0" --ab-aqm codel
expect_usage_error "--if-b: must differ" $OK --ab-policy tbf --ab-schedule 0:delay_us=1000,loss=0.1
expect_usage_error "--if-b: must differ" $OK --ab-trace "$TMP/good.trace" --ba-trace "$TMP/good.trace"
expect_usage_error "--if-b: must differ" $OK --ab-trace "$TMP/good.trace" --ab-aqm red \
	--ab-schedule 0:delay_us=5000,loss=0.001
expect_usage_error "--if-b: must differ" $OK --ab-trace "$TMP/good.trace" --ab-aqm pie
expect_usage_error "--if-b: must differ" $OK --epoch-on-signal --ab-schedule 0:rate_bps=1000000 \
	--ba-trace "$TMP/good.trace"
expect_usage_error "unknown option '--epoch-on-signal=1'" $OK --epoch-on-signal=1

# Needs two real, distinct interfaces to get past the interface checks.
OTHER=$(ls /sys/class/net 2>/dev/null | grep -v '^lo$' | head -n 1)
if [ -n "$OTHER" ]; then
	expect_usage_error --drops-log --if-a lo --if-b "$OTHER" \
		--drops-log /nonexistent-dir/x.log
else
	echo "skip: --drops-log case (no interface besides lo)"
fi

# Several links in one process (--link ID [--netns PATH] LINK-OPTIONS ...).
expect_usage_error "comes before the first --link" $OK --link a $OK
expect_usage_error "--link: invalid link id" --link 'a b' $OK
expect_usage_error "--link: invalid link id" --link 'a"b' $OK
expect_usage_error "--link: invalid link id" --link
expect_usage_error "given twice" --link a $OK --link a $OK
expect_usage_error "link b: --ab-loss" --link a $OK --link b $OK --ab-loss bernoulli:2
expect_usage_error "link b: --rt-priority" --link a $OK --rt-priority 1 --link b $OK
expect_usage_error "link b: --stats-interval-ms" --link a $OK --link b $OK --stats-interval-ms 10
expect_usage_error "link a: --netns: cannot open" --link a --netns /nonexistent/ns $OK
expect_usage_error "--netns: empty path" --link a --netns "" $OK
expect_usage_error "link a: --if-b: must differ" --link a $OK
expect_usage_error "link a: --if-a: no such interface" --link a --if-a no-such-if0 --if-b lo

# --help is not an error.
if timeout 5 "$BIN" --help | grep -q usage; then
	pass=$((pass + 1))
else
	fail=$((fail + 1))
	echo "FAIL: --help"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
