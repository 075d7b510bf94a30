/* SPDX-License-Identifier: MIT */
/*
 * AVX-512F fp32, A read in place: the micro-kernels broadcast A's elements straight from its rows
 * (any leading dimension) and multiply them by 16 or 32 columns of B, so A is never packed.
 *
 * The model's convolutions give the kernels A operands that are strided windows of a resident image
 * (a direct convolution's tap: rows = output pixels at the stride's pitch, k = the channels), narrow
 * B operands (n = a cluster's PEs x their channels: 16 or 32) and a fresh call per tap: packing A cost
 * as much as the products, and the 8 x 32 packed micro-tile wasted half its lanes on n = 16.  Here
 * B is the only operand copied (n x k stored "nt" is transposed to k x 16 panels per KC slice, O(nk)
 * against the O(mnk) products; "nn" B is read in place with masked loads), and the row tiles are
 * as tall as the registers allow for the call's width: up to 16 rows x 16 columns (16 accumulators,
 * each broadcast folded into its FMA) or 12 rows x 32 columns (24 accumulators).  m is split into
 * tiles of near-equal height, so 14- or 56-row outputs need no padded rows.
 *
 * Numerics are the micro-kernel's: each C element is one fmadd chain over p in order, from C or +0.
 */
#if defined(__x86_64__)	/* x86-64 only: other hosts build the generic variant alone */
#include <immintrin.h>

#include "kern_internal.h"

#define KERN_ISA "avx512f,avx512vl,avx512bw,avx512dq,fma"

/* Every loop over a tile's rows is unrolled (the accumulators must stay in registers): gcc's pragma,
 * or clang's (which does not take gcc's for a bound that is constant only after inlining). */
#if defined(__clang__)
#define UNROLL _Pragma("clang loop unroll(full)")
#else
#define UNROLL _Pragma("GCC unroll 16")
#endif

#define KC 256		/* k slice: a 16-column B panel is 16 KiB, a 32-column pair 32 KiB (L1d) */
#define MR1 16		/* rows of a tile one vector wide */
#define MR2 12		/* rows of a tile two vectors wide */
#define NB 4096		/* columns of B packed at a time ("nt") */

TNPU_TARGET(KERN_ISA)
static inline __mmask16 cols_mask(size_t nre, size_t j0)
{
	size_t left = nre > j0 ? nre - j0 : 0;
	return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
}

/*
 * One MR x (16 NV) tile over kc: C (+)= A . B, A row i at a + i * lda, B row p at b + p * ldb
 * (columns 16.. at b + b1 + p * ldb), columns past nre neither read nor written.  Rows are addressed
 * as four-row groups off a few base pointers (row 4g + r at ag[r * lda]) so the compiler needs no
 * register per row.  Full-width tiles load and store C unmasked: consecutive taps accumulate into
 * the same C, and a masked store's data is not forwarded to the next call's load of it (the load
 * waits for the store to retire: a third of the time of the stem's k = 3 taps).
 */
TNPU_TARGET(KERN_ISA)
static inline __attribute__((always_inline)) void direct_tile(const size_t MR, const size_t NV, size_t kc,
							   const float *a, size_t lda, const float *b, size_t b1,
							   size_t ldb, float *c, size_t ldc, bool load_c, size_t nre)
{
	const __mmask16 m0 = cols_mask(nre, 0), m1 = cols_mask(nre, 16);
	const float *ag[4];
	__m512 c0[MR1], c1[MR2];

UNROLL
	for (size_t g = 0; g < (MR + 3) / 4; g++)
		ag[g] = a + 4 * g * lda;
	if (!load_c) {
UNROLL
		for (size_t i = 0; i < MR; i++) {
			c0[i] = _mm512_setzero_ps();
			if (NV == 2)
				c1[i] = _mm512_setzero_ps();
		}
	} else if (nre == 16 * NV) {
UNROLL
		for (size_t i = 0; i < MR; i++) {
			c0[i] = _mm512_loadu_ps(c + i * ldc);
			if (NV == 2)
				c1[i] = _mm512_loadu_ps(c + i * ldc + 16);
		}
	} else if (NV == 1 && (nre == 1 || nre == 2 || nre == 4 || nre == 8)) {
		/* Narrow C (a PE's few channels, rows a few elements apart, the next product's rows right
		 * after): accesses of exactly the row's width.  A 64-byte masked store spans the rows after
		 * its own, and a later load of them waits until it retires (masked stores do not forward). */
UNROLL
		for (size_t i = 0; i < MR; i++)
			c0[i] = nre == 1   ? _mm512_zextps128_ps512(_mm_load_ss(c + i * ldc))
				: nre == 2 ? _mm512_zextps128_ps512(_mm_castsi128_ps(_mm_loadl_epi64((const __m128i_u *)(c + i * ldc))))
				: nre == 4 ? _mm512_zextps128_ps512(_mm_loadu_ps(c + i * ldc))
					   : _mm512_zextps256_ps512(_mm256_loadu_ps(c + i * ldc));
	} else {
UNROLL
		for (size_t i = 0; i < MR; i++) {
			c0[i] = _mm512_maskz_loadu_ps(m0, c + i * ldc);
			if (NV == 2)
				c1[i] = _mm512_maskz_loadu_ps(m1, c + i * ldc + 16);
		}
	}
	for (size_t p = 0; p < kc; p++, b += ldb) {
		__m512 b0v = _mm512_maskz_loadu_ps(m0, b);
		__m512 b1v = NV == 2 ? _mm512_maskz_loadu_ps(m1, b + b1) : b0v;

UNROLL
		for (size_t i = 0; i < MR; i++) {
			__m512 av = _mm512_set1_ps(ag[i / 4][(i % 4) * lda + p]);

			c0[i] = _mm512_fmadd_ps(av, b0v, c0[i]);
			if (NV == 2)
				c1[i] = _mm512_fmadd_ps(av, b1v, c1[i]);
		}
	}
	if (nre == 16 * NV) {
UNROLL
		for (size_t i = 0; i < MR; i++) {
			_mm512_storeu_ps(c + i * ldc, c0[i]);
			if (NV == 2)
				_mm512_storeu_ps(c + i * ldc + 16, c1[i]);
		}
		return;
	}
	if (NV == 1 && (nre == 1 || nre == 2 || nre == 4 || nre == 8)) {
UNROLL
		for (size_t i = 0; i < MR; i++) {
			if (nre == 1)
				_mm_store_ss(c + i * ldc, _mm512_castps512_ps128(c0[i]));
			else if (nre == 2)
				_mm_storel_epi64((__m128i_u *)(c + i * ldc), _mm_castps_si128(_mm512_castps512_ps128(c0[i])));
			else if (nre == 4)
				_mm_storeu_ps(c + i * ldc, _mm512_castps512_ps128(c0[i]));
			else
				_mm256_storeu_ps(c + i * ldc, _mm512_castps512_ps256(c0[i]));
		}
		return;
	}
UNROLL
	for (size_t i = 0; i < MR; i++) {
		_mm512_mask_storeu_ps(c + i * ldc, m0, c0[i]);
		if (NV == 2)
			_mm512_mask_storeu_ps(c + i * ldc + 16, m1, c1[i]);
	}
}

typedef void (*direct_fn)(size_t kc, const float *a, size_t lda, const float *b, size_t b1, size_t ldb, float *c,
			  size_t ldc, bool load_c, size_t nre);

/* A batch of products of at most 16 rows and 16 columns (a cluster's PEs sharing their B, one
 * product per pixel row or per PE): the tile above for each product in one call, the tile's row
 * pointers stepped by sa and sc (a call and its setup per product cost as much as a 16-row tile of
 * k = 3). */
typedef void (*direct_batch_fn)(size_t count, size_t kc, const float *a, size_t lda, ptrdiff_t sa, const float *b,
				size_t ldb, float *c, size_t ldc, ptrdiff_t sc, bool load_c, size_t nre);

#define DIRECT_BATCH(mr)                                                                                     \
	TNPU_TARGET(KERN_ISA)                                                                                \
	static void direct_batch_##mr(size_t count, size_t kc, const float *a, size_t lda, ptrdiff_t sa,      \
				      const float *b, size_t ldb, float *c, size_t ldc, ptrdiff_t sc, bool load_c, \
				      size_t nre)                                                            \
	{                                                                                                    \
		for (size_t t = 0; t < count; t++, a += sa, c += sc)                                         \
			direct_tile(mr, 1, kc, a, lda, b, 0, ldb, c, ldc, load_c, nre);                      \
	}
DIRECT_BATCH(1) DIRECT_BATCH(2) DIRECT_BATCH(3) DIRECT_BATCH(4) DIRECT_BATCH(5) DIRECT_BATCH(6) DIRECT_BATCH(7)
DIRECT_BATCH(8) DIRECT_BATCH(9) DIRECT_BATCH(10) DIRECT_BATCH(11) DIRECT_BATCH(12) DIRECT_BATCH(13)
DIRECT_BATCH(14) DIRECT_BATCH(15) DIRECT_BATCH(16)

/*
 * Products of at most 16 rows and N = 2 or 4 columns whose C rows are contiguous (ldc = N: a PE
 * row of the pointwise lowering's pixels over PEs, tn channels each): the tile's C is 16 N
 * consecutive floats, N full vectors whose lane l holds row l / N (+ 16 v / N), column l % N.  A's rows
 * (up to 4 of k at a time, masked loads) are gathered into four registers of four rows each and
 * spread over the lanes by permutes, B's row k repeated every N lanes, so every FMA lane is an
 * output (a one-vector tile uses 2 of 16).  Each element is the same fmadd chain over k in order.
 */
TNPU_TARGET(KERN_ISA)
static inline __attribute__((always_inline)) void tiny_tile(const size_t N, size_t m, size_t kc, const float *a,
							 size_t lda, const float *b, size_t ldb, float *c,
							 bool load_c)
{
	const size_t NV = N;	/* vectors per 16 rows: 16 N elements */
	size_t elems = m * N;
	__m512 acc[4];
	__mmask16 cm[4];
	__m512i bidx = N == 2 ? _mm512_set_epi32(1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0)
			      : _mm512_set_epi32(3, 2, 1, 0, 3, 2, 1, 0, 3, 2, 1, 0, 3, 2, 1, 0);

UNROLL
	for (size_t v = 0; v < NV; v++) {
		size_t left = elems > 16 * v ? elems - 16 * v : 0;

		cm[v] = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
		acc[v] = load_c ? _mm512_maskz_loadu_ps(cm[v], c + 16 * v) : _mm512_setzero_ps();
	}
	for (size_t k0 = 0; k0 < kc; k0 += 4) {
		size_t kk = kc - k0 < 4 ? kc - k0 : 4;
		__mmask8 km = (__mmask8)((1u << kk) - 1);
		__m512 z[4];

UNROLL
		for (size_t g = 0; g < 4; g++) {
			__m512 t = _mm512_setzero_ps();

UNROLL
			for (size_t q = 0; q < 4; q++) {
				size_t r = 4 * g + q;

				/* lanes 4q..4q+3 (a masked broadcast: clang wants insertf32x4's lane as a constant before unrolling) */
				if (r < m)
					t = _mm512_mask_broadcast_f32x4(t, (__mmask16)(0xfu << (4 * q)),
								       _mm_maskz_loadu_ps(km, a + r * lda + k0));
			}
			z[g] = t;
		}
		for (size_t k = 0; k < kk; k++) {
			__m512 bk = _mm512_permutexvar_ps(bidx, _mm512_maskz_loadu_ps((__mmask16)((1u << N) - 1),
										       b + (k0 + k) * ldb));

			if (N == 2) {
				/* lane l: row l / 2 of rows 0..7 (z[0], z[1]) or 8..15 (z[2], z[3]) */
				__m512i ia = _mm512_add_epi32(_mm512_set_epi32(28, 28, 24, 24, 20, 20, 16, 16, 12, 12, 8, 8,
										  4, 4, 0, 0),
							      _mm512_set1_epi32((int)k));

				acc[0] = _mm512_fmadd_ps(_mm512_permutex2var_ps(z[0], ia, z[1]), bk, acc[0]);
				acc[1] = _mm512_fmadd_ps(_mm512_permutex2var_ps(z[2], ia, z[3]), bk, acc[1]);
			} else {
				/* lane l: row l / 4 of the register's four */
				__m512i ia = _mm512_add_epi32(_mm512_set_epi32(12, 12, 12, 12, 8, 8, 8, 8, 4, 4, 4, 4, 0, 0,
										  0, 0),
							      _mm512_set1_epi32((int)k));

UNROLL
				for (size_t v = 0; v < 4; v++)
					acc[v] = _mm512_fmadd_ps(_mm512_permutexvar_ps(ia, z[v]), bk, acc[v]);
			}
		}
	}
UNROLL
	for (size_t v = 0; v < NV; v++) {
		if (cm[v] == 0xffff)
			_mm512_storeu_ps(c + 16 * v, acc[v]);
		else if (cm[v])
			_mm512_mask_storeu_ps(c + 16 * v, cm[v], acc[v]);
	}
}

TNPU_TARGET(KERN_ISA)
static void tiny_batch(size_t N, size_t count, size_t m, size_t kc, const float *a, size_t lda, ptrdiff_t sa,
		       const float *b, size_t ldb, float *c, ptrdiff_t sc, bool load_c)
{
	if (N == 2)
		for (size_t t = 0; t < count; t++, a += sa, c += sc)
			tiny_tile(2, m, kc, a, lda, b, ldb, c, load_c);
	else
		for (size_t t = 0; t < count; t++, a += sa, c += sc)
			tiny_tile(4, m, kc, a, lda, b, ldb, c, load_c);
}

static const direct_batch_fn batch1[MR1 + 1] = {
	NULL,		  direct_batch_1,  direct_batch_2,  direct_batch_3,  direct_batch_4,  direct_batch_5,
	direct_batch_6,	  direct_batch_7,  direct_batch_8,  direct_batch_9,  direct_batch_10, direct_batch_11,
	direct_batch_12, direct_batch_13, direct_batch_14, direct_batch_15, direct_batch_16,
};

#define DIRECT_TILE(mr, nv)                                                                                  \
	TNPU_TARGET(KERN_ISA)                                                                                \
	static void direct_##mr##x##nv(size_t kc, const float *a, size_t lda, const float *b, size_t b1,      \
				       size_t ldb, float *c, size_t ldc, bool load_c, size_t nre)             \
	{                                                                                                    \
		direct_tile(mr, nv, kc, a, lda, b, b1, ldb, c, ldc, load_c, nre);                            \
	}
#define DIRECT_TILES_1_12(nv)                                                                                \
	DIRECT_TILE(1, nv) DIRECT_TILE(2, nv) DIRECT_TILE(3, nv) DIRECT_TILE(4, nv) DIRECT_TILE(5, nv)        \
	DIRECT_TILE(6, nv) DIRECT_TILE(7, nv) DIRECT_TILE(8, nv) DIRECT_TILE(9, nv) DIRECT_TILE(10, nv)       \
	DIRECT_TILE(11, nv) DIRECT_TILE(12, nv)
DIRECT_TILES_1_12(1)
DIRECT_TILE(13, 1)
DIRECT_TILE(14, 1)
DIRECT_TILE(15, 1)
DIRECT_TILE(16, 1)
DIRECT_TILES_1_12(2)

/* Tiles by height (index = rows), one vector and two vectors wide. */
static const direct_fn tiles1[MR1 + 1] = {
	NULL, direct_1x1, direct_2x1, direct_3x1, direct_4x1, direct_5x1, direct_6x1, direct_7x1, direct_8x1,
	direct_9x1, direct_10x1, direct_11x1, direct_12x1, direct_13x1, direct_14x1, direct_15x1, direct_16x1,
};
static const direct_fn tiles2[MR2 + 1] = {
	NULL, direct_1x2, direct_2x2, direct_3x2, direct_4x2, direct_5x2, direct_6x2,
	direct_7x2, direct_8x2, direct_9x2, direct_10x2, direct_11x2, direct_12x2,
};

/* The whole product (kern_f32_direct_fn): per KC slice of k and NB block of columns, B's block as
 * 16-column panels ("nt": packed; "nn": in place), then, for each product of the batch, every 32
 * columns of C in row tiles of near-equal height.  A shared B (sb = 0) is packed once for the batch
 * (a cluster's PEs: one copy instead of one per PE); the scratch is at most KC x NB floats whatever n. */
TNPU_TARGET(KERN_ISA)
void kern_gemm_f32_direct_batch_avx512(bool nt, size_t count, size_t m, size_t n, size_t k, const float *a, size_t lda,
				       ptrdiff_t sa, const float *b, size_t ldb, ptrdiff_t sb, float *c, size_t ldc,
				       ptrdiff_t sc, bool accumulate)
{
	float *bpk = NULL;

	if (sb && count > 1) {
		for (size_t t = 0; t < count; t++)
			kern_gemm_f32_direct_batch_avx512(nt, 1, m, n, k, a + (ptrdiff_t)t * sa, lda, 0,
							  b + (ptrdiff_t)t * sb, ldb, 0, c + (ptrdiff_t)t * sc, ldc, 0,
							  accumulate);
		return;
	}
	if (nt) {
		bpk = kern_scratch(kern_min(KC, k) * kern_min(NB, kern_div_up(n, 16) * 16) * sizeof(float));
		if (!bpk) {
			for (size_t t = 0; t < count; t++)
				tnpu_kern_gemm_f32_nt_ref(m, n, k, a + (ptrdiff_t)t * sa, lda, b, ldb,
							  c + (ptrdiff_t)t * sc, ldc, accumulate);
			return;
		}
	}
	for (size_t pc = 0; pc < k; pc += KC) {
		size_t kc = kern_min(KC, k - pc);
		bool load_c = accumulate || pc > 0;

		for (size_t jb = 0; jb < n; jb += NB) {
			size_t nb = kern_min(NB, n - jb);
			/* panel q (columns jb + 16q..) row p at bs + q * pstep + p * bld */
			const float *bs = nt ? bpk : b + pc * ldb + jb;
			size_t bld = nt ? 16 : ldb, pstep = nt ? kc * 16 : 16;

			if (nt)
				kern_pack_rows_f32_avx512(16, nb, kc, b + jb * ldb + pc, ldb, bpk);
			if (m <= MR1 && (nb == 2 || nb == 4) && ldc == nb) {
				tiny_batch(nb, count, m, kc, a + pc, lda, sa, bs, bld, c + jb, sc, load_c);
				continue;
			}
			if (count > 1 && m <= MR1 && nb <= 16) {
				batch1[m](count, kc, a + pc, lda, sa, bs, bld, c + jb, ldc, sc, load_c, nb);
				continue;
			}
			for (size_t t = 0; t < count; t++) {
				const float *at = a + (ptrdiff_t)t * sa + pc;
				float *ct = c + (ptrdiff_t)t * sc + jb;

				for (size_t j0 = 0; j0 < nb; j0 += 32) {
					size_t nre = kern_min(32, nb - j0), nv = nre > 16 ? 2 : 1,
					       mr = nv == 2 ? MR2 : MR1;
					size_t tiles = kern_div_up(m, mr), h = m / tiles, taller = m % tiles;
					const direct_fn *tab = nv == 2 ? tiles2 : tiles1;
					const float *bj = bs + j0 / 16 * pstep;

					/* the first m % tiles tiles have one row more */
					for (size_t tl = 0, i0 = 0; tl < tiles; tl++) {
						size_t rows = h + (tl < taller);

						tab[rows](kc, at + i0 * lda, lda, bj, pstep, bld, ct + i0 * ldc + j0,
							  ldc, load_c, nre);
						i0 += rows;
					}
				}
			}
		}
	}
}

TNPU_TARGET(KERN_ISA)
void kern_gemm_f32_direct_avx512(bool nt, size_t m, size_t n, size_t k, const float *a, size_t lda, const float *b,
				 size_t ldb, float *c, size_t ldc, bool accumulate)
{
	kern_gemm_f32_direct_batch_avx512(nt, 1, m, n, k, a, lda, 0, b, ldb, 0, c, ldc, 0, accumulate);
}
#endif /* __x86_64__ */
