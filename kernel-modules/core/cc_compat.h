/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cc_compat.h - the few types and helpers the fastlab congestion-control
 * cores need, so that one core header compiles unchanged in three places:
 *
 *   - the Linux kernel (loadable modules, modules/tcp_*.c),
 *   - BPF struct_ops programs (bpf/fast.bpf.c and bpf/hstcp.bpf.c, after vmlinux.h),
 *   - user space (unit tests, the fastlab-cc tool).
 *
 * Rules the cores follow so that all three accept them: no floating point,
 * no signed division (BPF has none), every loop has a compile-time bound,
 * all state is passed by pointer, 64-bit division goes through CC_DIV64()
 * (32-bit kernels need div64_u64()).
 */
#ifndef FASTLAB_CC_COMPAT_H
#define FASTLAB_CC_COMPAT_H

#if defined(__KERNEL__)
#include <linux/types.h>
#include <linux/math64.h>
#define CC_INLINE		static __always_inline
#define CC_DIV64(n, d)		div64_u64((n), (d))
#define CC_STATIC_ASSERT(c, m)	_Static_assert(c, m)

#elif defined(__bpf__)
/*
 * BPF: the including program has pulled in vmlinux.h (u8..u64, bool) and
 * <bpf/bpf_helpers.h> (__always_inline). The BPF ISA divides u64 natively.
 */
#define CC_INLINE		static __always_inline
#define CC_DIV64(n, d)		((u64)(n) / (u64)(d))
#define CC_STATIC_ASSERT(c, m)	_Static_assert(c, m)

#else /* user space */
#include <stdint.h>
#include <stdbool.h>
typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;
#define CC_INLINE		static inline
#define CC_DIV64(n, d)		((u64)(n) / (u64)(d))
#define CC_STATIC_ASSERT(c, m)	_Static_assert(c, m)
#endif

/*
 * Hide a value from the optimiser (like barrier_var() in bpf_helpers.h), so
 * branch-free arithmetic is not turned back into compare-and-branch.
 */
#define CC_OPAQUE(x)		asm volatile("" : "+r"(x))

/* Type-explicit min/max: the kernel's min_t() is not available in BPF/user space. */
#define CC_MIN_U32(a, b)	((u32)(a) < (u32)(b) ? (u32)(a) : (u32)(b))
#define CC_MAX_U32(a, b)	((u32)(a) > (u32)(b) ? (u32)(a) : (u32)(b))
#define CC_MIN_U64(a, b)	((u64)(a) < (u64)(b) ? (u64)(a) : (u64)(b))
#define CC_MAX_U64(a, b)	((u64)(a) > (u64)(b) ? (u64)(a) : (u64)(b))

#define CC_U32_MAX		0xffffffffU

/*
 * Size of the per-socket private area a congestion control may use
 * (ICSK_CA_PRIV_SIZE in include/net/inet_connection_sock.h: 13 * u64 since
 * Linux 6.0, 104 bytes). Every core state struct is checked against it.
 */
#define CC_CA_PRIV_SIZE		104

/* Wrap-safe sequence comparison, as before()/after() in include/net/tcp.h. */
CC_INLINE bool cc_seq_after(u32 seq1, u32 seq2)
{
	return (s32)(seq2 - seq1) < 0;
}

#endif /* FASTLAB_CC_COMPAT_H */
