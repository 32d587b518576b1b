/*
 * check.h - minimal test harness for linkemu's C unit tests.
 *
 * Each RUN(fn) is one test case; CHECK() failures are printed with file and
 * line and mark the current case failed.  The last line printed is always
 * "N passed, M failed" and the exit status is non-zero on any failure, which
 * is what `make test` (and CI) rely on.
 */
#ifndef LINKEMU_CHECK_H
#define LINKEMU_CHECK_H

#include <stdio.h>

static int check_passed, check_failed, check_cur_failed;
static const char *check_cur_name;

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			if (!check_cur_failed)				\
				printf("FAIL %s\n", check_cur_name);	\
			check_cur_failed = 1;				\
			printf("  %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			printf(__VA_ARGS__);				\
			printf("\n");					\
		}							\
	} while (0)

#define RUN(fn)								\
	do {								\
		check_cur_name = #fn;					\
		check_cur_failed = 0;					\
		fn();							\
		if (check_cur_failed) {					\
			check_failed++;					\
		} else {						\
			check_passed++;					\
			printf("ok   %s\n", #fn);			\
		}							\
	} while (0)

#define CHECK_DONE()							\
	do {								\
		printf("%d passed, %d failed\n", check_passed,		\
		       check_failed);					\
		return check_failed ? 1 : 0;				\
	} while (0)

#endif /* LINKEMU_CHECK_H */
