/*
 * parse.c - the spec parsers' shared pieces (parse.h).
 */
#include "parse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int emu_parse_count(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!*s || strspn(s, "0123456789") != strlen(s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

void emu_quote_spec(char *out, size_t outlen, const char *spec)
{
	size_t i, n = 0;

	for (i = 0; spec[i] && n + 4 < outlen; i++) {
		if (n >= SPEC_QUOTE_MAX) {
			memcpy(out + n, "...", 3);
			n += 3;
			break;
		}
		out[n++] = spec[i] >= 0x20 && spec[i] < 0x7f ? spec[i] : '?';
	}
	out[n] = '\0';
}

int emu_failv(char *err, size_t errlen, const char *prefix, const char *fmt,
	      va_list ap)
{
	char why[256];

	if (!err || !errlen)
		return -1;
	vsnprintf(why, sizeof(why), fmt, ap);
	if (prefix && *prefix)
		snprintf(err, errlen, "%s: %s", prefix, why);
	else
		snprintf(err, errlen, "%s", why);
	return -1;
}
