/* SPDX-License-Identifier: MIT */
/* ref.c - the CPU references accel-demo checks the device against (see ref.h). */
#include <math.h>

#include "ref.h"

int32_t ref_epilogue_i8(int32_t x, uint32_t col, const struct ref_epi *e)
{
	int64_t y;

	if (e->bias)
		x = (int32_t)((uint32_t)x + (uint32_t)e->bias[col]);
	if (e->relu && x < 0)
		x = 0;
	if (!e->multiplier)
		return x;
	/* isa.md REQUANT: 64-bit product, round half up, arithmetic shift, zero point, saturate. */
	y = (int64_t)x * e->multiplier + (e->shift ? (int64_t)1 << (e->shift - 1) : 0);
	y >>= e->shift;
	y += e->zero_point;
	return y < -128 ? -128 : y > 127 ? 127 : (int32_t)y;
}

void ref_gemm_i8(const int8_t *a, const int8_t *b, uint32_t m, uint32_t n, uint32_t k, const struct ref_epi *e,
		 int32_t *c)
{
	for (uint32_t i = 0; i < m; i++)
		for (uint32_t j = 0; j < n; j++) {
			uint32_t acc = 0;

			for (uint32_t p = 0; p < k; p++)
				acc += (uint32_t)((int32_t)a[(size_t)i * k + p] * b[(size_t)p * n + j]);
			c[(size_t)i * n + j] = ref_epilogue_i8((int32_t)acc, j, e);
		}
}

void ref_gemm_f32_at(const float *a, const float *b, uint32_t n, uint32_t k, uint32_t i, uint32_t j,
		     double *sum, double *mag)
{
	double s = 0, m = 0;

	for (uint32_t p = 0; p < k; p++) {
		double t = (double)a[(size_t)i * k + p] * b[(size_t)p * n + j];

		s += t;
		m += fabs(t);
	}
	*sum = s;
	*mag = m;
}

void ref_conv_i8(const struct ref_conv *g, const int8_t *in, const int8_t *wt, const struct ref_epi *e,
		 int32_t *out)
{
	for (uint32_t b = 0; b < g->n; b++)
		for (uint32_t oy = 0; oy < g->oh; oy++)
			for (uint32_t ox = 0; ox < g->ow; ox++)
				for (uint32_t o = 0; o < g->k; o++) {
					uint32_t acc = 0;

					for (uint32_t fy = 0; fy < g->r; fy++)
						for (uint32_t fx = 0; fx < g->s; fx++) {
							int64_t y = (int64_t)oy * g->stride + fy - g->pad;
							int64_t x = (int64_t)ox * g->stride + fx - g->pad;
							bool inside = y >= 0 && y < g->h && x >= 0 && x < g->w;
							const int8_t *px = inside ?
								in + (((size_t)b * g->h + (size_t)y) * g->w + (size_t)x) * g->c : NULL;
							const int8_t *wp = wt + (((size_t)o * g->r + fy) * g->s + fx) * g->c;

							for (uint32_t ch = 0; ch < g->c; ch++)
								acc += (uint32_t)((int32_t)(px ? px[ch] : g->pad_value) * wp[ch]);
						}
					out[(((size_t)b * g->oh + oy) * g->ow + ox) * g->k + o] =
						ref_epilogue_i8((int32_t)acc, o, e);
				}
}
