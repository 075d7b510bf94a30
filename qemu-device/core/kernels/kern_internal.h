/* SPDX-License-Identifier: MIT */
/*
 * Internals shared by the kernel sources (not part of the core's API).
 *
 * A GEMM is run by a portable blocked driver (kern_driver_*.c, GotoBLAS/BLIS
 * loop order: NC columns of B -> KC slice of k -> pack B -> MC rows of A ->
 * pack A -> NR x MR micro-tiles) that calls the per-ISA packing routines and
 * register-blocked micro-kernel described by an implementation table.
 */
#ifndef TNPU_KERN_INTERNAL_H
#define TNPU_KERN_INTERNAL_H

#include "tnpu_kernels.h"

/* Compiles one function for an instruction set, e.g. TNPU_TARGET("avx2,fma").
 * Every function of the per-ISA files that uses intrinsics (static inline
 * helpers included) carries it: unlike '#pragma GCC target', which clang
 * ignores, the attribute works with both gcc and clang, so neither needs
 * -m<isa>/-march flags.  Such functions may only run after the dispatcher's
 * CPUID check (kern_dispatch.c).  Each per-ISA file names its ISA once, as a
 * line '#define KERN_ISA "..."' (tools/qemu-overlay reads it), and marks its
 * functions TNPU_TARGET(KERN_ISA). */
#define TNPU_TARGET(isa) __attribute__((target(isa)))

#include "tnpu_uninit.h"

/* Largest micro-tile of any variant; edge tiles go through a stack buffer this big. */
#define KERN_MAX_MR 16
#define KERN_MAX_NR 32

/* ---- fp32 ---------------------------------------------------------------- */

/* Packs rows [0, rows) x k-columns [0, kc) of a row-major matrix into
 * ceil(rows / r) panels; panel element (p, i) is at dst[panel][p * r + i].
 * Rows past `rows` are zero.  Used for A and for B in "nt" layout. */
typedef void (*kern_f32_pack_rows_fn)(size_t r, size_t rows, size_t kc,
				      const float *src, size_t ld, float *dst);
/* Packs k-rows [0, kc) x columns [0, cols) of B ("nn") into ceil(cols / r)
 * panels; panel element (p, j) is at dst[panel][p * r + j]. */
typedef void (*kern_f32_pack_cols_fn)(size_t r, size_t cols, size_t kc,
				      const float *src, size_t ld, float *dst);
/* One MR x NR tile: C = (load_c ? C : 0) + sum_p ap[p][i] * bp[p][j], in p order.
 * Only the top-left mre x nre part of C is read or written; kernels whose
 * table says !edges are only called with mre == MR, nre == NR (the driver
 * runs partial tiles through a local buffer for them). */
typedef void (*kern_f32_ukernel_fn)(size_t kc, const float *ap, const float *bp,
				    float *c, size_t ldc, bool load_c, size_t mre, size_t nre);

/* The whole product for k <= KERN_SMALL_K, unpacked: C = (accumulate ? C : 0) + sum_p a[i][p] * b[p][j]
 * (nt: b[j][p]), each element one fmaf chain in p order.  A direct conv's taps are MACs of k = channels
 * (1 for a grayscale stem), where packing A and B cost more than the products. */
#define KERN_SMALL_K 8
typedef void (*kern_f32_small_k_fn)(bool nt, size_t m, size_t n, size_t k, const float *a, size_t lda,
				    const float *b, size_t ldb, float *c, size_t ldc, bool accumulate);

/* The whole product with A read in place (never packed): any m, n, k >= 1, same chains as the
 * micro-kernel, for each of `count` products t (operands at a + t * sa, b + t * sb, c + t * sc; a
 * shared B, sb = 0, is copied once for all of them).  Optional; the driver prefers it for the shapes
 * kern_f32_use_direct() names. */
typedef void (*kern_f32_direct_fn)(bool nt, size_t count, size_t m, size_t n, size_t k, const float *a, size_t lda,
				   ptrdiff_t sa, const float *b, size_t ldb, ptrdiff_t sb, float *c, size_t ldc,
				   ptrdiff_t sc, bool accumulate);

/* Where the A-direct path beats packing (kbench --conv and sweeps of cold operands, AVX-512): B at
 * most 64 columns wide (a convolution tap's PE channels, whatever k); B stored n x k (packed either
 * way) under at most 256 rows of A (re-read per 32 columns: an IM2COL-lowered layer's 49..196
 * pixels); or a few-channel tap (2 <= k <= KERN_SMALL_K) at any width.  Fewer than 4 rows and k = 1
 * on wide B stay with the small-k loop, wide "nn" B and tall A with the packed path. */
static inline bool kern_f32_use_direct(bool nt, size_t m, size_t n, size_t k)
{
	if (k > KERN_SMALL_K)
		return n <= 64 || (nt && m <= 256);
	return m >= 4 && (n <= 64 || k >= 2);
}

/* One depthwise output row (tnpu_kern_dw_row_f32's contract). */
typedef void (*kern_f32_dw_row_fn)(size_t ow, size_t tn, size_t r, size_t s, const uint8_t *a, ptrdiff_t a_ry,
				   ptrdiff_t a_ox, ptrdiff_t a_rx, const uint8_t *w, ptrdiff_t w_tap, uint8_t *out,
				   size_t out_step);
void kern_dw_row_f32_generic(size_t ow, size_t tn, size_t r, size_t s, const uint8_t *a, ptrdiff_t a_ry,
			     ptrdiff_t a_ox, ptrdiff_t a_rx, const uint8_t *w, ptrdiff_t w_tap, uint8_t *out,
			     size_t out_step);
void kern_dw_row_f32_avx2(size_t ow, size_t tn, size_t r, size_t s, const uint8_t *a, ptrdiff_t a_ry,
			  ptrdiff_t a_ox, ptrdiff_t a_rx, const uint8_t *w, ptrdiff_t w_tap, uint8_t *out,
			  size_t out_step);

struct kern_f32_impl {
	const char *name;
	size_t mr, nr;		/* micro-tile */
	size_t kc, mc, nc;	/* cache blocking: mc % mr == 0, nc % nr == 0 */
	kern_f32_pack_rows_fn pack_rows;
	kern_f32_pack_cols_fn pack_cols;
	kern_f32_ukernel_fn ukernel;
	bool edges;		/* ukernel handles partial tiles itself */
	kern_f32_small_k_fn small_k;	/* optional: k <= KERN_SMALL_K without packing */
	kern_f32_direct_fn direct;	/* optional: A unpacked */
	kern_f32_dw_row_fn dw_row;	/* optional: a depthwise output row (else the generic loop) */
};

/* ---- int8 ---------------------------------------------------------------- */

/* The int8 variants pack k in groups of `kg` consecutive values (2: int16
 * pairs for vpmaddwd/vpdpwssd, 4: byte quads for vpdpbusd).  A panel holds,
 * for each k group and each of its mr rows, kg values of a_bytes each; a
 * B panel likewise for nr columns, followed by b_extra bytes (per-column
 * correction terms for vpdpbusd). */
typedef void (*kern_i8_pack_rows_fn)(size_t r, size_t rows, size_t kc,
				     const int8_t *src, size_t ld, void *dst);
typedef void (*kern_i8_pack_cols_fn)(size_t r, size_t cols, size_t kc,
				     const int8_t *src, size_t ld, void *dst);
/* ngroups = ceil(kc / kg); C = (load_c ? C : 0) + A.B modulo 2^32, on the
 * top-left mre x nre part of the tile (see kern_f32_ukernel_fn). */
typedef void (*kern_i8_ukernel_fn)(size_t ngroups, const void *ap, const void *bp,
				   int32_t *c, size_t ldc, bool load_c, size_t mre, size_t nre);

struct kern_i8_impl {
	const char *name;
	size_t mr, nr, kg;
	size_t kc, mc, nc;	/* kc % kg == 0 */
	size_t a_bytes, b_bytes;	/* bytes per packed element of A / B */
	size_t b_extra;		/* bytes after each B panel */
	kern_i8_pack_rows_fn pack_a;	/* A (row-major m x k) */
	kern_i8_pack_rows_fn pack_b_nt;	/* B stored n x k */
	kern_i8_pack_cols_fn pack_b_nn;	/* B stored k x n */
	kern_i8_ukernel_fn ukernel;
	bool edges;		/* ukernel handles partial tiles itself */
};

/* ---- variants (NULL-free tables defined in the per-ISA files) ---------------- */

extern const struct kern_f32_impl kern_f32_generic, kern_f32_avx2, kern_f32_avx512;
extern const struct kern_i8_impl kern_i8_generic, kern_i8_avx2, kern_i8_avxvnni, kern_i8_avx512,
	kern_i8_avx512vnni;

/* Portable packing helpers (kern_pack.c); variants may use them directly. */
void kern_pack_rows_f32(size_t r, size_t rows, size_t kc, const float *src, size_t ld, float *dst);
void kern_pack_cols_f32(size_t r, size_t cols, size_t kc, const float *src, size_t ld, float *dst);
void kern_pack_rows_i16p(size_t r, size_t rows, size_t kc, const int8_t *src, size_t ld, void *dst);
void kern_pack_cols_i16p(size_t r, size_t cols, size_t kc, const int8_t *src, size_t ld, void *dst);
void kern_pack_rows_q8(size_t r, size_t rows, size_t kc, const int8_t *src, size_t ld,
		       uint8_t *dst, uint32_t xor_mask);
void kern_pack_cols_q8(size_t r, size_t cols, size_t kc, const int8_t *src, size_t ld,
		       uint8_t *dst, size_t panel);

/* AVX-512 packing (kern_pack_avx512.c), same layouts as the portable
 * ones; r must be a multiple of 8.  Only call on AVX-512F/BW/VL/DQ CPUs. */
void kern_pack_rows_f32_avx512(size_t r, size_t rows, size_t kc, const float *src, size_t ld,
			       float *dst);
void kern_pack_cols_f32_avx512(size_t r, size_t cols, size_t kc, const float *src, size_t ld,
			       float *dst);
/* Byte quads: dst word (g * r + i) = src[i][4g .. 4g + 3] ^ xor (zero bytes
 * past kc before the xor), i.e. a 32-bit transpose. */
void kern_pack_rows_q8_avx512(size_t r, size_t rows, size_t kc, const int8_t *src, size_t ld,
			      uint8_t *dst, uint32_t xor_mask);
/* int16 pairs (kern_pack_rows_i16p / kern_pack_cols_i16p layouts). */
void kern_pack_rows_i16p_avx512(size_t r, size_t rows, size_t kc, const int8_t *src, size_t ld,
				void *dst);
void kern_pack_cols_i16p_avx512(size_t r, size_t cols, size_t kc, const int8_t *src, size_t ld,
				void *dst);
/* Byte quads from k x n storage: dst[(g * r + j) * 4 + e] = src[4g + e][j],
 * panels `panel` bytes apart (room for per-panel extras). */
void kern_pack_cols_q8_avx512(size_t r, size_t cols, size_t kc, const int8_t *src, size_t ld,
			      uint8_t *dst, size_t panel);

/* AVX-512 fp32 with A read in place (kern_f32_avx512_direct.c): one product, or a batch
 * (kern_f32_direct_fn). */
void kern_gemm_f32_direct_avx512(bool nt, size_t m, size_t n, size_t k, const float *a, size_t lda,
				 const float *b, size_t ldb, float *c, size_t ldc, bool accumulate);
void kern_gemm_f32_direct_batch_avx512(bool nt, size_t count, size_t m, size_t n, size_t k, const float *a, size_t lda,
				       ptrdiff_t sa, const float *b, size_t ldb, ptrdiff_t sb, float *c, size_t ldc,
				       ptrdiff_t sc, bool accumulate);

/* Blocked drivers (kern_driver_*.c): one product, or `count` products of one shape with their
 * operands sa, sb, sc elements apart (tnpu_kern_gemm_*_batch); a shared B (sb = 0) is packed once
 * per block for the whole batch. */
void kern_gemm_f32(const struct kern_f32_impl *impl, bool nt, size_t m, size_t n, size_t k,
		   const float *a, size_t lda, const float *b, size_t ldb,
		   float *c, size_t ldc, bool accumulate);
void kern_gemm_f32_batch(const struct kern_f32_impl *impl, bool nt, size_t count, size_t m, size_t n, size_t k,
			 const float *a, size_t lda, ptrdiff_t sa, const float *b, size_t ldb, ptrdiff_t sb, float *c,
			 size_t ldc, ptrdiff_t sc, bool accumulate);
void kern_gemm_i8(const struct kern_i8_impl *impl, bool nt, size_t m, size_t n, size_t k,
		  const int8_t *a, size_t lda, const int8_t *b, size_t ldb,
		  int32_t *c, size_t ldc, bool accumulate);
void kern_gemm_i8_batch(const struct kern_i8_impl *impl, bool nt, size_t count, size_t m, size_t n, size_t k,
			const int8_t *a, size_t lda, ptrdiff_t sa, const int8_t *b, size_t ldb, ptrdiff_t sb,
			int32_t *c, size_t ldc, ptrdiff_t sc, bool accumulate);

/* Per-thread scratch (kern_scratch.c): 64-byte aligned, NULL on allocation failure. */
void *kern_scratch(size_t bytes);

/* ---- test hooks (kern_dispatch.c) ------------------------------------------ */

/* Forces the variant used by the public entry points, by name ("generic",
 * "avx2", "avxvnni", "avx512", "avx512vnni").  Returns false, changing nothing, if the
 * name is unknown or the CPU lacks the ISA.  Not thread-safe with concurrent
 * GEMM calls: tests and benchmarks only. */
bool tnpu_kern_force_isa(const char *name);
/* Whether this CPU (and OS) can run the named variant. */
bool tnpu_kern_isa_supported(const char *name);

static inline size_t kern_div_up(size_t a, size_t b) { return (a + b - 1) / b; }
static inline size_t kern_min(size_t a, size_t b) { return a < b ? a : b; }

#endif /* TNPU_KERN_INTERNAL_H */
