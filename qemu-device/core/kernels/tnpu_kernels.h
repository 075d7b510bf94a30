/* SPDX-License-Identifier: MIT */
/*
 * tnpu golden-model GEMM kernels.
 *
 * All matrices are row-major; leading dimensions are in elements.
 *   C[m x n] (+)= A[m x k] * B
 *   "_nn": B is k x n, element (p, j) at b[p * ldb + j]
 *   "_nt": B is n x k, element (p, j) at b[j * ldb + p]
 * accumulate == false overwrites C, true adds into C.  m, n, k may be 0:
 * m == 0 or n == 0 is a no-op; k == 0 leaves C untouched when accumulating
 * and zeroes it otherwise.  C must not alias A or B.
 *
 * Numerics
 *  - int8: every product and sum is exact modulo 2^32, i.e. results are
 *    bit-identical to the _ref functions (int32 wrap-around, no saturation)
 *    on every ISA variant.
 *  - fp32: each C element is computed as a single sequential chain over
 *    p = 0 .. k-1, starting from C (accumulate) or +0.0f:
 *        acc = fma(a[i][p], b[p][j], acc)     (one rounding per step)
 *    in every variant, the generic one (fmaf) and the _ref functions
 *    included: this is the golden model's rounding contract
 *    (Documentation/qemu-device.md "Rounding contract").  No reassociation,
 *    so the result of an element depends only on its A row, its B column and
 *    its old C value: it does not depend on m, n, the position of the
 *    element in a tile, alignment, the variant (TNPU_KERN_ISA), the host, or
 *    on how the caller splits a big GEMM into tiles along m and n (or along
 *    k, when the later parts are issued with accumulate = true, in k order).
 *
 * Variants (chosen at run time, see tnpu_kern_isa()):
 *   avx512vnni  fp32 8x32 FMA micro-kernel, or up to 16x16 / 12x32 tiles
 *               broadcasting A in place (narrow B); int8 via vpdpbusd (a + 128 trick)
 *   avx512      fp32 as above; int8 via vpmaddwd on int16 pairs (no VNNI)
 *   avxvnni     fp32 as avx2; int8 via 256-bit vpdpbusd (AVX-VNNI, no AVX-512)
 *   avx2        fp32 6x16 FMA micro-kernel; int8 via vpmaddwd (AVX2 + FMA)
 *   generic     portable C (fmaf), any host; the only variant off x86-64
 *
 * Performance: the blocked path packs A and B on every call (O(mk + kn) work,
 * and the first touch of their cache lines), so few large calls beat many
 * small ones: prefer whole-K calls per output tile and tiles of >= 128 x 128.
 * On AVX-512 hosts, products with B at most 64 columns wide (a convolution
 * tap's channels), "nt" products of at most 256 rows, or a few-channel k read A
 * in place and copy only B ("nt": a k x 16 transpose per 256-deep slice), so
 * narrow per-tap calls cost little more than their multiply-adds (kbench --conv).
 *
 * Memory: packing buffers are per-thread (_Thread_local) scratch, grown with
 * aligned_alloc() the first time a larger block is needed and then reused;
 * steady-state calls do not allocate.  The scratch is at most ~4.5 MiB per
 * thread (reached for n >= 4096; smaller problems need proportionally less).
 * Calls from several threads are safe.
 * A thread's scratch is freed when it exits (a pthread key destructor); a
 * thread may free it earlier with tnpu_kern_release_scratch().
 * If the scratch cannot be allocated the call falls back to the _ref loops
 * (same bits, slower).
 */
#ifndef TNPU_KERNELS_H
#define TNPU_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void tnpu_kern_gemm_f32_nn(size_t m, size_t n, size_t k, const float *a, size_t lda,
			   const float *b, size_t ldb, float *c, size_t ldc, bool accumulate);
void tnpu_kern_gemm_f32_nt(size_t m, size_t n, size_t k, const float *a, size_t lda,
			   const float *b, size_t ldb, float *c, size_t ldc, bool accumulate);
void tnpu_kern_gemm_i8_nn(size_t m, size_t n, size_t k, const int8_t *a, size_t lda,
			  const int8_t *b, size_t ldb, int32_t *c, size_t ldc, bool accumulate);
void tnpu_kern_gemm_i8_nt(size_t m, size_t n, size_t k, const int8_t *a, size_t lda,
			  const int8_t *b, size_t ldb, int32_t *c, size_t ldc, bool accumulate);

/*
 * Batches of one shape: for t = 0 .. count-1, C + t*sc (+)= (A + t*sa) * (B + t*sb), strides in
 * elements (any sign; 0 shares the operand), each product exactly the plain call's (the same chain
 * per element; the products' C regions must not overlap).  The golden model's PEs sharing a cluster's
 * weights (sb = 0): B is packed once per block for the whole batch instead of once per PE, and the
 * products run back to back.
 */
void tnpu_kern_gemm_f32_nn_batch(size_t count, size_t m, size_t n, size_t k, const float *a, size_t lda, ptrdiff_t sa,
				 const float *b, size_t ldb, ptrdiff_t sb, float *c, size_t ldc, ptrdiff_t sc,
				 bool accumulate);
void tnpu_kern_gemm_f32_nt_batch(size_t count, size_t m, size_t n, size_t k, const float *a, size_t lda, ptrdiff_t sa,
				 const float *b, size_t ldb, ptrdiff_t sb, float *c, size_t ldc, ptrdiff_t sc,
				 bool accumulate);
void tnpu_kern_gemm_i8_nn_batch(size_t count, size_t m, size_t n, size_t k, const int8_t *a, size_t lda, ptrdiff_t sa,
				const int8_t *b, size_t ldb, ptrdiff_t sb, int32_t *c, size_t ldc, ptrdiff_t sc,
				bool accumulate);
void tnpu_kern_gemm_i8_nt_batch(size_t count, size_t m, size_t n, size_t k, const int8_t *a, size_t lda, ptrdiff_t sa,
				const int8_t *b, size_t ldb, ptrdiff_t sb, int32_t *c, size_t ldc, ptrdiff_t sc,
				bool accumulate);

/*
 * One output row of a depthwise (channel-wise) fp32 convolution, a PE's DW MAC (isa.md "DW MAC"): for
 * ox < ow and c < tn,
 *     out[ox * out_step + 4c] = sum over ry < r, rx < s, in that order, from +0.0f, of
 *                               a[ry * a_ry + ox * a_ox + rx * a_rx + 4c] * w[(ry * s + rx) * w_tap + 4c]
 * (byte offsets, fp32 elements, any alignment), each channel one fmaf chain: the same bits in every
 * variant.  Reads only those elements (the last run of channels through masked loads).
 */
void tnpu_kern_dw_row_f32(size_t ow, size_t tn, size_t r, size_t s, const uint8_t *a, ptrdiff_t a_ry, ptrdiff_t a_ox,
			  ptrdiff_t a_rx, const uint8_t *w, ptrdiff_t w_tap, uint8_t *out, size_t out_step);

/* Reference versions: plain triple loops (fp32: fmaf chain in k order, as above). */
void tnpu_kern_gemm_f32_nn_ref(size_t m, size_t n, size_t k, const float *a, size_t lda,
			       const float *b, size_t ldb, float *c, size_t ldc, bool accumulate);
void tnpu_kern_gemm_f32_nt_ref(size_t m, size_t n, size_t k, const float *a, size_t lda,
			       const float *b, size_t ldb, float *c, size_t ldc, bool accumulate);
void tnpu_kern_gemm_i8_nn_ref(size_t m, size_t n, size_t k, const int8_t *a, size_t lda,
			      const int8_t *b, size_t ldb, int32_t *c, size_t ldc, bool accumulate);
void tnpu_kern_gemm_i8_nt_ref(size_t m, size_t n, size_t k, const int8_t *a, size_t lda,
			      const int8_t *b, size_t ldb, int32_t *c, size_t ldc, bool accumulate);

/* ISA variant picked by the dispatcher: "avx512vnni", "avx512", "avxvnni", "avx2"
 * or "generic".
 * The choice is made once per process from CPUID (the environment variable
 * TNPU_KERN_ISA, read at that moment, can lower it, e.g. TNPU_KERN_ISA=avx2). */
const char *tnpu_kern_isa(void);

/* Frees the calling thread's packing scratch; the next call re-allocates it. */
void tnpu_kern_release_scratch(void);

#ifdef __cplusplus
}
#endif

#endif /* TNPU_KERNELS_H */
