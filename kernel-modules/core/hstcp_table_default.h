/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hstcp_table_default.h - the default HighSpeed TCP table: RFC 3649
 * Appendix B (Low_Window 38, High_Window 83000, High_P 1e-7,
 * High_Decrease 0.1), the same 72 rows as Linux net/ipv4/tcp_highspeed.c.
 *
 * Columns: w (the row applies to windows up to w packets), a(w) (packets per
 * RTT), b(w) in Q16 = floor(b(w) * 2^16) with
 *   b(w) = (High_Decrease - 0.5) (ln w - ln Low_Window) /
 *          (ln High_Window - ln Low_Window) + 0.5
 * evaluated at the RFC's w, so that b_q16 >> 8 is Linux's Q8 "md" column.
 *
 * fastlab-cc writes this table when the table parameters are the defaults
 * and regenerates one from the parameters otherwise; tests/test_cores.c
 * checks that the generator reproduces this table from the defaults and that
 * both match the RFC/Linux test vectors. `fastlab-cc table ... --c` prints a
 * replacement for this file (for module builds with other parameters).
 */
#ifndef FASTLAB_HSTCP_TABLE_DEFAULT_H
#define FASTLAB_HSTCP_TABLE_DEFAULT_H

#include "hstcp_core.h"

#define HSTCP_DEFAULT_ROWS	72

static const struct hstcp_row hstcp_default_rows[HSTCP_DEFAULT_ROWS] = {
	{     38,  1, 32768 },	/* b = 0.5000, Linux md 128 */
	{    118,  2, 28904 },	/* b = 0.4410, Linux md 112 */
	{    221,  3, 26765 },	/* b = 0.4084, Linux md 104 */
	{    347,  4, 25227 },	/* b = 0.3849, Linux md  98 */
	{    495,  5, 24016 },	/* b = 0.3665, Linux md  93 */
	{    663,  6, 23020 },	/* b = 0.3513, Linux md  89 */
	{    851,  7, 22168 },	/* b = 0.3383, Linux md  86 */
	{   1058,  8, 21426 },	/* b = 0.3269, Linux md  83 */
	{   1284,  9, 20766 },	/* b = 0.3169, Linux md  81 */
	{   1529, 10, 20171 },	/* b = 0.3078, Linux md  78 */
	{   1793, 11, 19628 },	/* b = 0.2995, Linux md  76 */
	{   2076, 12, 19128 },	/* b = 0.2919, Linux md  74 */
	{   2378, 13, 18665 },	/* b = 0.2848, Linux md  72 */
	{   2699, 14, 18233 },	/* b = 0.2782, Linux md  71 */
	{   3039, 15, 17829 },	/* b = 0.2720, Linux md  69 */
	{   3399, 16, 17447 },	/* b = 0.2662, Linux md  68 */
	{   3778, 17, 17087 },	/* b = 0.2607, Linux md  66 */
	{   4177, 18, 16744 },	/* b = 0.2555, Linux md  65 */
	{   4596, 19, 16419 },	/* b = 0.2505, Linux md  64 */
	{   5036, 20, 16107 },	/* b = 0.2458, Linux md  62 */
	{   5497, 21, 15808 },	/* b = 0.2412, Linux md  61 */
	{   5979, 22, 15522 },	/* b = 0.2368, Linux md  60 */
	{   6483, 23, 15246 },	/* b = 0.2326, Linux md  59 */
	{   7009, 24, 14980 },	/* b = 0.2286, Linux md  58 */
	{   7558, 25, 14723 },	/* b = 0.2247, Linux md  57 */
	{   8130, 26, 14474 },	/* b = 0.2209, Linux md  56 */
	{   8726, 27, 14233 },	/* b = 0.2172, Linux md  55 */
	{   9346, 28, 13999 },	/* b = 0.2136, Linux md  54 */
	{   9991, 29, 13771 },	/* b = 0.2101, Linux md  53 */
	{  10661, 30, 13550 },	/* b = 0.2068, Linux md  52 */
	{  11358, 31, 13334 },	/* b = 0.2035, Linux md  52 */
	{  12082, 32, 13123 },	/* b = 0.2002, Linux md  51 */
	{  12834, 33, 12917 },	/* b = 0.1971, Linux md  50 */
	{  13614, 34, 12716 },	/* b = 0.1940, Linux md  49 */
	{  14424, 35, 12519 },	/* b = 0.1910, Linux md  48 */
	{  15265, 36, 12326 },	/* b = 0.1881, Linux md  48 */
	{  16137, 37, 12137 },	/* b = 0.1852, Linux md  47 */
	{  17042, 38, 11951 },	/* b = 0.1824, Linux md  46 */
	{  17981, 39, 11768 },	/* b = 0.1796, Linux md  45 */
	{  18955, 40, 11588 },	/* b = 0.1768, Linux md  45 */
	{  19965, 41, 11411 },	/* b = 0.1741, Linux md  44 */
	{  21013, 42, 11236 },	/* b = 0.1714, Linux md  43 */
	{  22101, 43, 11064 },	/* b = 0.1688, Linux md  43 */
	{  23230, 44, 10895 },	/* b = 0.1662, Linux md  42 */
	{  24402, 45, 10727 },	/* b = 0.1637, Linux md  41 */
	{  25618, 46, 10561 },	/* b = 0.1611, Linux md  41 */
	{  26881, 47, 10397 },	/* b = 0.1586, Linux md  40 */
	{  28193, 48, 10234 },	/* b = 0.1562, Linux md  39 */
	{  29557, 49, 10073 },	/* b = 0.1537, Linux md  39 */
	{  30975, 50,  9914 },	/* b = 0.1513, Linux md  38 */
	{  32450, 51,  9755 },	/* b = 0.1488, Linux md  38 */
	{  33986, 52,  9597 },	/* b = 0.1464, Linux md  37 */
	{  35586, 53,  9440 },	/* b = 0.1440, Linux md  36 */
	{  37253, 54,  9284 },	/* b = 0.1417, Linux md  36 */
	{  38992, 55,  9129 },	/* b = 0.1393, Linux md  35 */
	{  40808, 56,  8974 },	/* b = 0.1369, Linux md  35 */
	{  42707, 57,  8819 },	/* b = 0.1346, Linux md  34 */
	{  44694, 58,  8663 },	/* b = 0.1322, Linux md  33 */
	{  46776, 59,  8508 },	/* b = 0.1298, Linux md  33 */
	{  48961, 60,  8353 },	/* b = 0.1275, Linux md  32 */
	{  51258, 61,  8196 },	/* b = 0.1251, Linux md  32 */
	{  53677, 62,  8039 },	/* b = 0.1227, Linux md  31 */
	{  56230, 63,  7881 },	/* b = 0.1203, Linux md  30 */
	{  58932, 64,  7721 },	/* b = 0.1178, Linux md  30 */
	{  61799, 65,  7559 },	/* b = 0.1153, Linux md  29 */
	{  64851, 66,  7394 },	/* b = 0.1128, Linux md  28 */
	{  68113, 67,  7227 },	/* b = 0.1103, Linux md  28 */
	{  71617, 68,  7056 },	/* b = 0.1077, Linux md  27 */
	{  75401, 69,  6880 },	/* b = 0.1050, Linux md  26 */
	{  79517, 70,  6699 },	/* b = 0.1022, Linux md  26 */
	{  84035, 71,  6511 },	/* b = 0.0993, Linux md  25 */
	{  89053, 72,  6313 },	/* b = 0.0963, Linux md  24 */
};

#endif /* FASTLAB_HSTCP_TABLE_DEFAULT_H */
