/*
 * policy_trace.c - mahimahi delivery traces (see policy_trace.h for the
 * model and its sources).
 *
 * Per packet: one binary search over one period of the trace (only when the
 * packet does not follow on from the previous one) and one step per
 * opportunity it spans.  No syscalls, no floating point: the unit tests'
 * fake clock runs the same code as linkemu.
 */
#include "policy_trace.h"
#include "parse.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest piece of a bad line quoted back, and its widest number. */
#define LINE_QUOTE_MAX	24
#define MS_DIGITS_MAX	10

static int __attribute__((format(printf, 5, 6)))
fail(char *err, size_t errlen, const char *name, uint64_t line,
     const char *fmt, ...)
{
	char prefix[320];
	va_list ap;
	int r;

	if (line)
		snprintf(prefix, sizeof(prefix), "%s:%llu", name,
			 (unsigned long long)line);
	else
		snprintf(prefix, sizeof(prefix), "%s", name);
	va_start(ap, fmt);
	r = emu_failv(err, errlen, prefix, fmt, ap);
	va_end(ap);
	return r;
}

/* The line as it may appear in an error: printable ASCII, shortened. */
static void quote_line(char *out, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n && i < LINE_QUOTE_MAX; i++)
		out[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	out[i] = '\0';
	if (n > LINE_QUOTE_MAX)
		strcpy(out + i, "...");
}

int emu_trace_parse(struct emu_trace *t, const char *text, size_t len,
		    const char *name, char *err, size_t errlen)
{
	uint64_t lines = 0, line = 0;
	size_t i, pos = 0;

	memset(t, 0, sizeof(*t));
	if (len > EMU_TRACE_MAX_FILE_BYTES)
		return fail(err, errlen, name, 0, "larger than %u bytes",
			    EMU_TRACE_MAX_FILE_BYTES);
	/* Lines: every '\n', and a last line without one. */
	for (i = 0; i < len; i++)
		lines += text[i] == '\n';
	if (len && text[len - 1] != '\n')
		lines++;
	if (!lines)
		return fail(err, errlen, name, 0, "no timestamps (empty file)");
	if (lines > EMU_TRACE_MAX_LINES)
		return fail(err, errlen, name, 0, "more than %u lines",
			    EMU_TRACE_MAX_LINES);
	t->ms = malloc(lines * sizeof(*t->ms));
	if (!t->ms)
		return fail(err, errlen, name, 0, "out of memory");

	while (pos < len) {
		const char *s = text + pos;
		const char *nl = memchr(s, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - s) : len - pos;
		char q[LINE_QUOTE_MAX + 4];
		uint64_t v = 0;

		line++;
		pos += n + (nl != NULL);
		if (!n) {
			emu_trace_free(t);
			return fail(err, errlen, name, line, "empty line");
		}
		for (i = 0; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			if (i < MS_DIGITS_MAX + 1)
				v = v * 10 + (uint64_t)(s[i] - '0');
		quote_line(q, s, n);
		if (i != n) {
			emu_trace_free(t);
			return fail(err, errlen, name, line,
				    "'%s' is not a millisecond timestamp (digits only)", q);
		}
		if (n > MS_DIGITS_MAX || v > EMU_TRACE_MAX_MS) {
			emu_trace_free(t);
			return fail(err, errlen, name, line,
				    "'%s' is above the largest timestamp, %u ms", q,
				    EMU_TRACE_MAX_MS);
		}
		if (t->n && v < t->ms[t->n - 1]) {
			uint32_t prev = t->ms[t->n - 1];

			emu_trace_free(t);
			return fail(err, errlen, name, line,
				    "%llu is below the line before's %u (timestamps must be non-decreasing)",
				    (unsigned long long)v, prev);
		}
		t->ms[t->n++] = (uint32_t)v;
	}
	if (!t->ms[t->n - 1]) {
		emu_trace_free(t);
		return fail(err, errlen, name, line,
			    "the last timestamp is the period and must be above 0 ms");
	}
	t->period_ns = (uint64_t)t->ms[t->n - 1] * EMU_TRACE_NS_PER_MS;
	return 0;
}

void emu_trace_start(struct emu_trace *t, uint64_t origin_ns,
		     uint32_t uncharged_bytes)
{
	t->origin_ns = origin_ns;
	t->uncharged_bytes = uncharged_bytes;
	t->resume_ns = 0;
	t->started = false;
	t->opp = 0;
	t->left = 0;
}

void emu_trace_rebase(struct emu_trace *t, uint64_t origin_ns)
{
	if (t->started) {
		uint64_t last = emu_trace_opp_ns(t, t->opp);

		if (last > t->resume_ns)
			t->resume_ns = last;
	}
	t->origin_ns = origin_ns;
	t->started = false;
	t->opp = 0;
	t->left = 0;
}

void emu_trace_free(struct emu_trace *t)
{
	free(t->ms);
	t->ms = NULL;
	t->n = 0;
}

uint64_t emu_trace_opp_ns(const struct emu_trace *t, uint64_t k)
{
	return t->origin_ns + (k / t->n) * t->period_ns +
	       (uint64_t)t->ms[k % t->n] * EMU_TRACE_NS_PER_MS;
}

uint64_t emu_trace_first_after(const struct emu_trace *t, uint64_t t_ns)
{
	uint64_t rel, cycle, off, lo = 0, hi;

	if (t_ns < t->origin_ns)
		return 0;	/* T(0) >= origin > t */
	rel = t_ns - t->origin_ns;
	cycle = rel / t->period_ns;
	off = rel % t->period_ns;
	/*
	 * First line of this cycle above off: one exists, the last line is
	 * the period > off.  Lines of earlier cycles are all <= t (the last
	 * one's time is this cycle's start).
	 */
	hi = t->n - 1;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if ((uint64_t)t->ms[mid] * EMU_TRACE_NS_PER_MS > off)
			hi = mid;
		else
			lo = mid + 1;
	}
	return cycle * t->n + lo;
}

uint64_t emu_trace_mean_rate_bps(const struct emu_trace *t)
{
	/* n <= 2^23: n * 1504 * 8 * 1000 stays below 2^47 */
	return t->n * EMU_TRACE_OPP_BYTES * 8ULL * 1000ULL / t->ms[t->n - 1];
}

/* What a stored frame costs: per segment its IP bytes and the TUN header. */
static uint64_t trace_cost(const struct emu_trace *t, const struct emu_pkt *pkt)
{
	return emu_pkt_charged(pkt, t->uncharged_bytes) +
	       (uint64_t)pkt->segs * EMU_TRACE_PI_BYTES;
}

static uint64_t trace_enqueue(void *ctx, const struct emu_pkt *pkt,
			      uint64_t now_ns)
{
	struct emu_trace *t = ctx;
	uint64_t bytes = trace_cost(t, pkt), k;
	uint32_t left;

	if (t->started && t->left && now_ns < emu_trace_opp_ns(t, t->opp)) {
		/* It was queued when that opportunity came: it takes the rest. */
		k = t->opp;
		left = t->left;
	} else {
		/*
		 * The first opportunity after its arrival and after the last
		 * used (before an epoch: after the last departure then).
		 */
		k = emu_trace_first_after(t, now_ns > t->resume_ns ?
					     now_ns : t->resume_ns);
		if (t->started && k <= t->opp)
			k = t->opp + 1;
		left = EMU_TRACE_OPP_BYTES;
	}
	while (bytes > left) {
		bytes -= left;
		k++;
		left = EMU_TRACE_OPP_BYTES;
	}
	t->left = left - (uint32_t)bytes;
	t->opp = k;
	t->started = true;
	return emu_trace_opp_ns(t, k);
}

const struct emu_departure_ops emu_trace_policy_ops = {
	.name = "trace",
	.enqueue = trace_enqueue,
};
