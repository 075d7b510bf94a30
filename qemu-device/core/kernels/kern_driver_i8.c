/* SPDX-License-Identifier: MIT */
/*
 * Portable blocked int8 GEMM driver; same loop nest as kern_driver_f32.c.
 * Packed element sizes and k grouping come from the variant table, since
 * the vpmaddwd/vpdpwssd variants widen to int16 pairs while the vpdpbusd
 * variant keeps byte quads.  All arithmetic is modulo 2^32, so the order of
 * k slices is irrelevant to the (exact) result.
 */
#include <string.h>

#include "kern_internal.h"

static void zero_c_i32(size_t m, size_t n, int32_t *c, size_t ldc)
{
	for (size_t i = 0; i < m; i++)
		memset(c + i * ldc, 0, n * sizeof(int32_t));
}

static void edge_tile_i8(const struct kern_i8_impl *impl, size_t ng, const void *ap,
			 const void *bp, int32_t *c, size_t ldc, bool load_c, size_t mre, size_t nre)
{
	TNPU_UNINIT _Alignas(64) int32_t tmp[KERN_MAX_MR * KERN_MAX_NR];
	size_t nr = impl->nr;

	if (load_c) {
		for (size_t i = 0; i < mre; i++)
			memcpy(tmp + i * nr, c + i * ldc, nre * sizeof(int32_t));
	}
	impl->ukernel(ng, ap, bp, tmp, nr, load_c, impl->mr, nr);
	for (size_t i = 0; i < mre; i++)
		memcpy(c + i * ldc, tmp + i * nr, nre * sizeof(int32_t));
}

static size_t align64(size_t x) { return (x + 63) & ~(size_t)63; }

void kern_gemm_i8(const struct kern_i8_impl *impl, bool nt, size_t m, size_t n, size_t k,
		  const int8_t *a, size_t lda, const int8_t *b, size_t ldb,
		  int32_t *c, size_t ldc, bool accumulate)
{
	kern_gemm_i8_batch(impl, nt, 1, m, n, k, a, lda, 0, b, ldb, 0, c, ldc, 0, accumulate);
}

/* As kern_gemm_f32_batch: the products of a batch share the packed B block when sb = 0. */
void kern_gemm_i8_batch(const struct kern_i8_impl *impl, bool nt, size_t count, size_t m, size_t n, size_t k,
			const int8_t *a, size_t lda, ptrdiff_t sa, const int8_t *b, size_t ldb, ptrdiff_t sb,
			int32_t *c, size_t ldc, ptrdiff_t sc, bool accumulate)
{
	if (count == 0 || m == 0 || n == 0)
		return;
	if (k == 0) {
		if (!accumulate)
			for (size_t t = 0; t < count; t++)
				zero_c_i32(m, n, c + (ptrdiff_t)t * sc, ldc);
		return;
	}

	const size_t mr = impl->mr, nr = impl->nr, kg = impl->kg;
	const size_t KC = kern_min(impl->kc, kern_div_up(k, kg) * kg);
	const size_t NC = kern_min(impl->nc, kern_div_up(n, nr) * nr);
	const size_t MC = kern_min(impl->mc, kern_div_up(m, mr) * mr);
	/* Byte sizes of one micro-panel at full KC; shorter k slices use the same stride. */
	const size_t a_panel = mr * KC * impl->a_bytes;
	const size_t b_panel = nr * KC * impl->b_bytes + impl->b_extra;
	const size_t b_block = align64(b_panel * (NC / nr));
	unsigned char *bpk = kern_scratch(b_block + a_panel * (MC / mr));

	if (!bpk) {
		for (size_t t = 0; t < count; t++)
			(nt ? tnpu_kern_gemm_i8_nt_ref
			    : tnpu_kern_gemm_i8_nn_ref)(m, n, k, a + (ptrdiff_t)t * sa, lda, b + (ptrdiff_t)t * sb, ldb,
							c + (ptrdiff_t)t * sc, ldc, accumulate);
		return;
	}
	unsigned char *apk = bpk + b_block;

	for (size_t jc = 0; jc < n; jc += NC) {
		size_t nc = kern_min(NC, n - jc);
		for (size_t pc = 0; pc < k; pc += KC) {
			size_t kc = kern_min(KC, k - pc);
			size_t ng = kern_div_up(kc, kg);
			/* Panels of this slice are packed contiguously at its own k length. */
			size_t a_ps = mr * ng * kg * impl->a_bytes;
			size_t b_ps = nr * ng * kg * impl->b_bytes + impl->b_extra;
			bool load_c = accumulate || pc > 0;

			for (size_t t = 0; t < count; t++) {
				const int8_t *at = a + (ptrdiff_t)t * sa, *bt = b + (ptrdiff_t)t * sb;
				int32_t *cb = c + (ptrdiff_t)t * sc;

				if (t == 0 || sb) {
					if (nt)
						impl->pack_b_nt(nr, nc, kc, bt + jc * ldb + pc, ldb, bpk);
					else
						impl->pack_b_nn(nr, nc, kc, bt + pc * ldb + jc, ldb, bpk);
				}
				for (size_t ic = 0; ic < m; ic += MC) {
					size_t mc = kern_min(MC, m - ic);
					impl->pack_a(mr, mc, kc, at + ic * lda + pc, lda, apk);

					for (size_t jr = 0; jr < nc; jr += nr) {
						size_t nre = kern_min(nr, nc - jr);
						const void *bp = bpk + (jr / nr) * b_ps;
						for (size_t ir = 0; ir < mc; ir += mr) {
							size_t mre = kern_min(mr, mc - ir);
							const void *ap = apk + (ir / mr) * a_ps;
							int32_t *ct = cb + (ic + ir) * ldc + jc + jr;
							if (impl->edges || (mre == mr && nre == nr))
								impl->ukernel(ng, ap, bp, ct, ldc, load_c, mre, nre);
							else
								edge_tile_i8(impl, ng, ap, bp, ct, ldc, load_c, mre,
									     nre);
						}
					}
				}
			}
		}
	}
}
