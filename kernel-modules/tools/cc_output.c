// SPDX-License-Identifier: GPL-2.0
/*
 * cc_output.c - what fastlab-cc prints: its tiny JSON writer on stdout (one
 * object at a time into a fixed buffer: a value that does not fit is cut,
 * never overflows; keys in the order written, strings escaped), and die(),
 * the one-line error on stderr that ends the tool with its exit code.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "cc_tool.h"

void __attribute__((format(printf, 2, 3), noreturn))
die(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fastlab-cc: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}


void __attribute__((format(printf, 2, 3)))
jcat(struct json *j, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (j->len >= sizeof(j->buf) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(j->buf + j->len, sizeof(j->buf) - j->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		j->len = CC_MIN_U64(j->len + n, sizeof(j->buf) - 1);
}

void j_open(struct json *j)
{
	j->len = 0;
	j->buf[0] = 0;
	j->first = true;
	jcat(j, "{");
}

void j_key(struct json *j, const char *k)
{
	jcat(j, j->first ? "\"%s\":" : ",\"%s\":", k);
	j->first = false;
}

void j_str(struct json *j, const char *k, const char *v)
{
	const char *c;

	j_key(j, k);
	jcat(j, "\"");
	for (c = v; *c; c++) {
		if (*c == '"' || *c == '\\')
			jcat(j, "\\%c", *c);
		else if ((unsigned char)*c < 0x20)
			jcat(j, "\\u%04x", *c);
		else
			jcat(j, "%c", *c);
	}
	jcat(j, "\"");
}

void j_u64(struct json *j, const char *k, unsigned long long v)
{
	j_key(j, k);
	jcat(j, "%llu", v);
}

void j_bool(struct json *j, const char *k, bool v)
{
	j_key(j, k);
	jcat(j, v ? "true" : "false");
}

void j_num(struct json *j, const char *k, double v)
{
	j_key(j, k);
	jcat(j, "%.10g", v);
}

void j_raw(struct json *j, const char *k, const char *raw)
{
	j_key(j, k);
	jcat(j, "%s", raw);
}

void j_print(struct json *j)
{
	jcat(j, "}");
	printf("%s\n", j->buf);
	fflush(stdout);
}

const char *j_close(struct json *j)
{
	jcat(j, "}");
	return j->buf;
}
