/*
 * parse.h - what every spec-string parser of linkemu shares: reading a count,
 * and quoting the refused spec back in its one error line.
 *
 * Role: the loss, AQM and schedule parsers (loss.c, aqm.c, schedule.c) refuse
 * bad input with one line that names the field and quotes the input; these
 * are their common pieces, so they read counts and quote specs alike.
 */
#ifndef LINKEMU_PARSE_H
#define LINKEMU_PARSE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* Longest spec quoted back in an error line (then "..."). */
#define SPEC_QUOTE_MAX		80

/*
 * A plain unsigned decimal (digits only: no sign, space, hex or exponent) into
 * *out; -1 if s is anything else or overflows 64 bits.
 */
int emu_parse_count(const char *s, uint64_t *out);

/*
 * The spec as it may appear in one line: printable ASCII (others as '?'),
 * shortened to SPEC_QUOTE_MAX characters and "...".  out holds outlen bytes;
 * SPEC_QUOTE_MAX + 4 is always enough.
 */
void emu_quote_spec(char *out, size_t outlen, const char *spec);

/*
 * The parsers' one error line: "prefix: why" (or "why" alone when prefix is
 * NULL or empty), why formatted from fmt and ap, into err (errlen bytes; none
 * written when err is NULL).  Returns -1, the parsers' failure value.
 */
int emu_failv(char *err, size_t errlen, const char *prefix, const char *fmt,
	      va_list ap);

#endif /* LINKEMU_PARSE_H */
