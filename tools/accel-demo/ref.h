/* SPDX-License-Identifier: MIT */
/*
 * ref.h - CPU references for accel-demo, written from the hardware spec (isa.md, SFU functions) and
 * sharing no code with libaccel, so a lowering bug in libaccel cannot hide in both sides of the check.
 */
#ifndef ACCEL_DEMO_REF_H
#define ACCEL_DEMO_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Output stage of an int8 operation: bias, ReLU, then (if multiplier != 0) requantisation to int8. */
struct ref_epi {
	const int32_t *bias;	/* one per output column / channel, or NULL */
	bool relu;
	int32_t multiplier;	/* 0: no requantisation, the output is the int32 accumulator */
	uint8_t shift;
	int16_t zero_point;
};

/* Accumulator x through the SFU: wrap-around bias add, ReLU, requantisation (isa.md, SFU functions). */
int32_t ref_epilogue_i8(int32_t x, uint32_t col, const struct ref_epi *e);

/* c[m][n] = epi(sum_k a[m][k] * b[k][n]), all row-major and packed; int32 accumulation wraps mod 2^32. */
void ref_gemm_i8(const int8_t *a, const int8_t *b, uint32_t m, uint32_t n, uint32_t k, const struct ref_epi *e,
		 int32_t *c);

/*
 * One fp32 GEMM output in double: *sum = sum_k a[i][k] * b[k][j], *mag = sum_k |a[i][k] * b[k][j]|
 * (the scale of the rounding error an fp32 sum of those products can have).
 */
void ref_gemm_f32_at(const float *a, const float *b, uint32_t n, uint32_t k, uint32_t i, uint32_t j,
		     double *sum, double *mag);

struct ref_conv {
	uint32_t n, h, w, c;		/* input, NHWC */
	uint32_t k, r, s;		/* weights, OHWI (k output channels of r x s x c) */
	uint32_t stride, pad;		/* same on both axes and all four sides */
	int8_t pad_value;		/* input zero point: what the padding reads as */
	uint32_t oh, ow;		/* output, NHWC: n x oh x ow x k */
};

/* Direct convolution loops (no im2col), output through ref_epilogue_i8 per output channel. */
void ref_conv_i8(const struct ref_conv *g, const int8_t *in, const int8_t *wt, const struct ref_epi *e,
		 int32_t *out);

#endif /* ACCEL_DEMO_REF_H */
