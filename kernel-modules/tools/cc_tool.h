/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cc_tool.h - what the files of fastlab-cc share: exit codes, what it
 * prints (cc_output.c: the JSON writer and die()), and the parsing and
 * printing of the algorithms' parameters (cc_params.c); the commands are
 * fastlab-cc.c.
 *
 * The parameter ranges themselves are not here: they are the cores'
 * (core/fast_core.h, core/hstcp_core.h), shared with the kernel modules and
 * the BPF programs; Python reads the same headers (fastlab/define/ccset.py).
 */
#ifndef FASTLAB_CC_TOOL_H
#define FASTLAB_CC_TOOL_H

#include <stdbool.h>
#include <stddef.h>

#include "../core/fast_core.h"
#include "../core/hstcp_core.h"

#define EXIT_ERR		1
#define EXIT_USAGE		2
#define EXIT_NOT_REGISTERED	3

void __attribute__((format(printf, 2, 3), noreturn))
die(int code, const char *fmt, ...);

/* ---- cc_output.c: die(), and one JSON object at a time in a buffer ----- */

struct json {
	char buf[32768];
	size_t len;
	bool first;
};

void __attribute__((format(printf, 2, 3)))
jcat(struct json *j, const char *fmt, ...);
void j_open(struct json *j);
void j_key(struct json *j, const char *k);
void j_str(struct json *j, const char *k, const char *v);
void j_u64(struct json *j, const char *k, unsigned long long v);
void j_bool(struct json *j, const char *k, bool v);
void j_num(struct json *j, const char *k, double v);
void j_raw(struct json *j, const char *k, const char *raw);
void j_print(struct json *j);
const char *j_close(struct json *j);

/* ---- cc_params.c: values and the algorithms' parameters ----------------- */

/* Which HSTCP keys a command line gave (tool-local). */
#define HK_LOW_WINDOW	(1U << 0)
#define HK_HIGH_WINDOW	(1U << 1)
#define HK_HIGH_P	(1U << 2)
#define HK_HIGH_DEC	(1U << 3)
#define HK_MAX_SSTHRESH	(1U << 4)
#define HK_TABLE	(HK_LOW_WINDOW | HK_HIGH_WINDOW | HK_HIGH_P | HK_HIGH_DEC)

extern const char fast_keys[];
extern const char hstcp_keys[];

bool parse_u64(const char *s, unsigned long long *out);
bool parse_double(const char *s, double *out);
bool parse_ratio(const char *s, u32 *num, u32 *den);

int fast_set_key(struct fast_params *p, const char *k, const char *v,
		 char *err, size_t n);
void fast_period_str(const struct fast_params *p, char *buf, size_t n);
const char *fast_params_json(struct json *j, const struct fast_params *p,
			     u32 mask);

int hstcp_set_key(struct hstcp_params *p, u32 *given, const char *k,
		  const char *v, char *err, size_t n);
const char *hstcp_params_json(struct json *j, const struct hstcp_params *p,
			      u32 mask, int table_rows);
const char *hstcp_given_json(struct json *j, const struct hstcp_params *p,
			     u32 given);
void hstcp_check_windows(const struct hstcp_params *p, u32 given,
			 const char *ctx);
void hstcp_apply_given(struct hstcp_params *dst,
		       const struct hstcp_params *src, u32 given);

#endif /* FASTLAB_CC_TOOL_H */
