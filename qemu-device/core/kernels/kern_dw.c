/* SPDX-License-Identifier: MIT */
/*
 * Portable depthwise output row (tnpu_kern_dw_row_f32): runs of up to 64 channels inner, each channel's
 * fmaf chain over the taps in (ry, rx) order from +0 (the golden model's DW MAC, isa.md "DW MAC").
 */
#include <math.h>
#include <string.h>

#include "kern_internal.h"

#define DW_RUN 64

void kern_dw_row_f32_generic(size_t ow, size_t tn, size_t r, size_t s, const uint8_t *a, ptrdiff_t a_ry,
			     ptrdiff_t a_ox, ptrdiff_t a_rx, const uint8_t *w, ptrdiff_t w_tap, uint8_t *out,
			     size_t out_step)
{
	float acc[DW_RUN];

	for (size_t ox = 0; ox < ow; ox++) {
		const uint8_t *ax = a + (ptrdiff_t)ox * a_ox;

		for (size_t c0 = 0; c0 < tn; c0 += DW_RUN) {
			size_t n = tn - c0 < DW_RUN ? tn - c0 : DW_RUN;

			for (size_t c = 0; c < n; c++)
				acc[c] = 0.0f;
			for (size_t ry = 0; ry < r; ry++) {
				for (size_t rx = 0; rx < s; rx++) {
					const uint8_t *ap = ax + (ptrdiff_t)ry * a_ry + (ptrdiff_t)rx * a_rx + c0 * 4;
					const uint8_t *wp = w + (ptrdiff_t)(ry * s + rx) * w_tap + c0 * 4;

					for (size_t c = 0; c < n; c++) {
						float x, y;

						memcpy(&x, ap + 4 * c, 4);
						memcpy(&y, wp + 4 * c, 4);
						acc[c] = fmaf(x, y, acc[c]);
					}
				}
			}
			memcpy(out + ox * out_step + c0 * 4, acc, n * 4);
		}
	}
}
