/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hstcp_table.h - user-space generator of the HighSpeed TCP a(w)/b(w) table
 * (floating point lives here, never in the cores).
 */
#ifndef FASTLAB_HSTCP_TABLE_H
#define FASTLAB_HSTCP_TABLE_H

#include <stddef.h>
#include "../core/hstcp_core.h"

/* The four RFC 3649 parameters, in natural units. */
struct hstcp_gen {
	double low_window;	/* packets */
	double high_window;	/* packets */
	double high_p;		/* loss rate at high_window */
	double high_decrease;	/* b(high_window) */
};

/* Response function p(w) = C / w^E, derived from the parameters. */
struct hstcp_response {
	double low_p;		/* standard TCP's loss rate at low_window */
	double e_exact, c_exact;	/* straight line through both points */
	double e, c;		/* rounded as RFC 3649 publishes them */
};

void hstcp_gen_default(struct hstcp_gen *g);
void hstcp_gen_from_params(struct hstcp_gen *g, const struct hstcp_params *p);
bool hstcp_gen_is_default(const struct hstcp_gen *g);

void hstcp_gen_response(const struct hstcp_gen *g, struct hstcp_response *r);
double hstcp_gen_b(const struct hstcp_gen *g, double w);
double hstcp_gen_a(const struct hstcp_gen *g, const struct hstcp_response *r,
		   double w);

/*
 * Fill @t from @g. Returns 0, or -1 with a one-line reason in @err (naming
 * the parameter at fault) when the parameters cannot give a valid table.
 */
int hstcp_gen_table(const struct hstcp_gen *g, struct hstcp_table *t,
		    char *err, size_t errlen);

/* The RFC 3649 Appendix B / Linux table (core/hstcp_table_default.h). */
void hstcp_default_table(struct hstcp_table *t);

/*
 * What fastlab-cc writes for @g: the default table itself when @g is the
 * default parameter set, else the generated one.
 */
int hstcp_table_for(const struct hstcp_gen *g, struct hstcp_table *t,
		    char *err, size_t errlen);

#endif /* FASTLAB_HSTCP_TABLE_H */
