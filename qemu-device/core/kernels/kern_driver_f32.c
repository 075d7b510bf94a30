/* SPDX-License-Identifier: MIT */
/*
 * Portable blocked fp32 GEMM driver (GotoBLAS/BLIS loop nest).
 *
 *   for jc in n by NC:              B block (KC x NC) stays in L3/L2
 *     for pc in k by KC:            pack B block once
 *       for ic in m by MC:          pack A block (MC x KC, sized for L2)
 *         for jr in nc by NR:       B micro-panel (KC x NR) stays in L1
 *           for ir in mc by MR:     micro-kernel on one MR x NR tile of C
 *
 * The micro-kernel starts every element from C (or 0 on the first k slice
 * when not accumulating) and applies the k products in order, so splitting
 * k into KC slices does not change the result: fp32 stores are exact.
 */
#include <string.h>

#include "kern_internal.h"

static void zero_c_f32(size_t m, size_t n, float *c, size_t ldc)
{
	for (size_t i = 0; i < m; i++)
		memset(c + i * ldc, 0, n * sizeof(float));
}

/* Partial tile at the right/bottom edge: run the full-tile kernel on a
 * local copy so the kernel never reads or writes outside C. */
static void edge_tile_f32(const struct kern_f32_impl *impl, size_t kc, const float *ap,
			  const float *bp, float *c, size_t ldc, bool load_c, size_t mre, size_t nre)
{
	TNPU_UNINIT _Alignas(64) float tmp[KERN_MAX_MR * KERN_MAX_NR];
	size_t nr = impl->nr;

	if (load_c) {
		memset(tmp, 0, sizeof(tmp));
		for (size_t i = 0; i < mre; i++)
			memcpy(tmp + i * nr, c + i * ldc, nre * sizeof(float));
	}
	impl->ukernel(kc, ap, bp, tmp, nr, load_c, impl->mr, nr);
	for (size_t i = 0; i < mre; i++)
		memcpy(c + i * ldc, tmp + i * nr, nre * sizeof(float));
}

void kern_gemm_f32(const struct kern_f32_impl *impl, bool nt, size_t m, size_t n, size_t k,
		   const float *a, size_t lda, const float *b, size_t ldb,
		   float *c, size_t ldc, bool accumulate)
{
	kern_gemm_f32_batch(impl, nt, 1, m, n, k, a, lda, 0, b, ldb, 0, c, ldc, 0, accumulate);
}

/* The products t of a batch run one after the other inside the loop nest, after the B block they
 * share is packed (a per-product B, sb != 0, is packed for each); each is the plain call's. */
void kern_gemm_f32_batch(const struct kern_f32_impl *impl, bool nt, size_t count, size_t m, size_t n, size_t k,
			 const float *a, size_t lda, ptrdiff_t sa, const float *b, size_t ldb, ptrdiff_t sb, float *c,
			 size_t ldc, ptrdiff_t sc, bool accumulate)
{
	if (count == 0 || m == 0 || n == 0)
		return;
	if (k == 0) {
		if (!accumulate)
			for (size_t t = 0; t < count; t++)
				zero_c_f32(m, n, c + (ptrdiff_t)t * sc, ldc);
		return;
	}

	if (impl->direct && kern_f32_use_direct(nt, m, n, k)) {
		impl->direct(nt, count, m, n, k, a, lda, sa, b, ldb, sb, c, ldc, sc, accumulate);
		return;
	}
	if (k <= KERN_SMALL_K && impl->small_k) {
		for (size_t t = 0; t < count; t++)
			impl->small_k(nt, m, n, k, a + (ptrdiff_t)t * sa, lda, b + (ptrdiff_t)t * sb, ldb,
				      c + (ptrdiff_t)t * sc, ldc, accumulate);
		return;
	}

	const size_t mr = impl->mr, nr = impl->nr;
	const size_t KC = kern_min(impl->kc, k);
	const size_t NC = kern_min(impl->nc, kern_div_up(n, nr) * nr);
	const size_t MC = kern_min(impl->mc, kern_div_up(m, mr) * mr);
	const size_t b_elems = (KC * NC + 15) & ~(size_t)15;	/* keep A 64-byte aligned */
	float *bpk = kern_scratch((b_elems + KC * MC) * sizeof(float));

	if (!bpk) {
		for (size_t t = 0; t < count; t++)
			(nt ? tnpu_kern_gemm_f32_nt_ref
			    : tnpu_kern_gemm_f32_nn_ref)(m, n, k, a + (ptrdiff_t)t * sa, lda, b + (ptrdiff_t)t * sb,
							 ldb, c + (ptrdiff_t)t * sc, ldc, accumulate);
		return;
	}
	float *apk = bpk + b_elems;

	for (size_t jc = 0; jc < n; jc += NC) {
		size_t nc = kern_min(NC, n - jc);
		for (size_t pc = 0; pc < k; pc += KC) {
			size_t kc = kern_min(KC, k - pc);
			bool load_c = accumulate || pc > 0;

			for (size_t t = 0; t < count; t++) {
				const float *at = a + (ptrdiff_t)t * sa, *bt = b + (ptrdiff_t)t * sb;
				float *cb = c + (ptrdiff_t)t * sc;

				if (t == 0 || sb) {
					if (nt)
						impl->pack_rows(nr, nc, kc, bt + jc * ldb + pc, ldb, bpk);
					else
						impl->pack_cols(nr, nc, kc, bt + pc * ldb + jc, ldb, bpk);
				}
				for (size_t ic = 0; ic < m; ic += MC) {
					size_t mc = kern_min(MC, m - ic);
					impl->pack_rows(mr, mc, kc, at + ic * lda + pc, lda, apk);

					for (size_t jr = 0; jr < nc; jr += nr) {
						size_t nre = kern_min(nr, nc - jr);
						const float *bp = bpk + jr * kc;
						for (size_t ir = 0; ir < mc; ir += mr) {
							size_t mre = kern_min(mr, mc - ir);
							const float *ap = apk + ir * kc;
							float *ct = cb + (ic + ir) * ldc + jc + jr;
							if (impl->edges || (mre == mr && nre == nr))
								impl->ukernel(kc, ap, bp, ct, ldc, load_c, mre, nre);
							else
								edge_tile_f32(impl, kc, ap, bp, ct, ldc, load_c, mre,
									      nre);
						}
					}
				}
			}
		}
	}
}
