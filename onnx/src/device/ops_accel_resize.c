/* SPDX-License-Identifier: MIT */
/*
 * ops_accel_resize.c - Resize/Upsample of FLOAT tensors on the PE array (and, below, the input
 * projections of RNN, GRU and LSTM).  Interpolation along one axis is
 * a product with that axis's interpolation matrix R [out x in] (row i holds the weights of output i's
 * taps, edge-clamped taps added), so resizing the last two axes is two GEMMs: T = X · Rw^T over every row
 * of X (all leading indices and rows y at once), then Y_b = Rh · T_b per leading slice b.  Every mode and
 * coordinate transform of the host kernel (rs_plan_make: nearest with each nearest_mode, linear, cubic,
 * half_pixel ... tf_crop_and_resize inside the input) runs this way, nearest exactly (one weight of 1 a
 * row).  Leading axes must keep their size with identity taps; a coordinate outside the input
 * (tf_crop_and_resize's extrapolation), an identity resize, or more than RS_MAX_SLICES leading slices
 * fall back to the host kernel.
 */
#include <string.h>

#include "accel_util.h"
#include "ops_common.h"
#include "ops_nn.h"

#define RS_MAX_SLICES 256

/* Axis d maps output i to input i with weight 1 (its taps add to exactly that). */
static bool axis_identity(const struct rs_plan *pl, const struct onnx_tensor *x, unsigned d)
{
	if (pl->dims[d] != x->dims[d])
		return false;
	for (int64_t i = 0; i < pl->dims[d]; i++) {
		double w = 0;

		for (unsigned k = 0; k < pl->ntap[d][i]; k++) {
			const struct rs_tap *t = &pl->taps[d][i * 4 + k];

			if (t->idx == i)
				w += t->w;
			else if (t->w != 0)
				return false;
		}
		if (w != 1)
			return false;
	}
	return true;
}

/* R of axis d [out x n] in fp32, row-major: each row's weights summed per input index in double. */
static void axis_matrix(const struct rs_plan *pl, unsigned d, int64_t n, float *r)
{
	memset(r, 0, (size_t)pl->dims[d] * (size_t)n * 4);
	for (int64_t i = 0; i < pl->dims[d]; i++) {
		double acc[4];
		int64_t at[4];
		unsigned u = 0;

		for (unsigned k = 0; k < pl->ntap[d][i]; k++) {
			const struct rs_tap *t = &pl->taps[d][i * 4 + k];
			unsigned j = 0;

			while (j < u && at[j] != t->idx)
				j++;
			if (j == u) {
				at[u] = t->idx;
				acc[u++] = 0;
			}
			acc[j] += t->w;
		}
		for (unsigned j = 0; j < u; j++)
			r[i * n + at[j]] = (float)acc[j];
	}
}

int accel_resize(struct onnx_ctx *c)
{
	const struct onnx_tensor *x = node_in(c, 0);
	struct accel_buffer *xb, *rwb = NULL, *tb = NULL, *rhb = NULL, *yb = NULL;
	struct abufs bs = { .n = 0 };
	int64_t B = 1, H, W, OH, OW;
	bool id_h, id_w, fits;
	struct rs_plan pl;
	unsigned nd;
	int ret;

	if (!x || x->dtype != ONNX_FLOAT || x->ndim < 2 || !x->count)
		return ONNX_FALLBACK;
	if ((ret = rs_plan_make(c, x, &pl)))
		return ret;
	nd = x->ndim;
	fits = true;
	for (unsigned d = 0; d < nd && fits; d++) {
		for (int64_t i = 0; i < pl.dims[d]; i++)
			fits &= !pl.outs[d][i];
		if (d < nd - 2) {
			fits &= axis_identity(&pl, x, d);
			B *= x->dims[d];
		}
	}
	H = x->dims[nd - 2], W = x->dims[nd - 1], OH = pl.dims[nd - 2], OW = pl.dims[nd - 1];
	id_h = axis_identity(&pl, x, nd - 2);
	id_w = axis_identity(&pl, x, nd - 1);
	if (!fits || !OH || !OW || (id_h && id_w) || (!id_h && B > RS_MAX_SLICES) || (uint64_t)(B * H) > UINT32_MAX ||
	    (uint64_t)(B * OH) > UINT32_MAX || OW > UINT32_MAX) {
		rs_plan_free(&pl);
		return ONNX_FALLBACK;
	}
	if ((ret = out_alloc(c, 0, ONNX_FLOAT, nd, pl.dims))) {
		rs_plan_free(&pl);
		return ret < 0 ? ret : 0;
	}
	if ((ret = abuf_new(c, &bs, x->data, x->count * 4, &xb)))
		goto out;
	if (!id_w) {	/* T [B*H x OW] = X [B*H x W] · Rw^T (Rw stored OW x W: trans_b) */
		if ((ret = abuf_new(c, &bs, NULL, (size_t)(OW * W) * 4, &rwb)) ||
		    (ret = abuf_new(c, &bs, NULL, (size_t)(B * H * OW) * 4, &tb)))
			goto out;
		axis_matrix(&pl, nd - 1, W, accel_buffer_ptr(rwb));
		if ((ret = gemm_run(c, ACCEL_FP32, xb, 0, rwb, 0, tb, 0, B * H, W, OW, false, true, NULL)))
			goto out;
	} else {
		tb = xb;
	}
	if (!id_h) {	/* Y_b [OH x OW] = Rh [OH x H] · T_b [H x OW] */
		if ((ret = abuf_new(c, &bs, NULL, (size_t)(OH * H) * 4, &rhb)) ||
		    (ret = abuf_new(c, &bs, NULL, node_out(c, 0)->count * 4, &yb)))
			goto out;
		axis_matrix(&pl, nd - 2, H, accel_buffer_ptr(rhb));
		for (int64_t b = 0; b < B && !ret; b++)
			ret = gemm_run(c, ACCEL_FP32, rhb, 0, tb, (uint64_t)(b * H * OW) * 4, yb, (uint64_t)(b * OH * OW) * 4,
				       OH, H, OW, false, false, NULL);
	} else {
		yb = tb;
	}
	if (!ret)
		memcpy(node_out(c, 0)->data, accel_buffer_ptr(yb), node_out(c, 0)->count * 4);
out:
	abufs_free(&bs);
	rs_plan_free(&pl);
	return ret;
}

/* ---- RNN, GRU, LSTM: the input projections on the PE array ----------------------------------- */

/* xw[d] = X2 · W[d]^T, X2 the rows x in matrix of every step's input, one GEMM per direction. */
static int device_proj(struct onnx_ctx *c, const float *x, const float *w, int64_t rows, int64_t in, int64_t cols,
		       int64_t dirs, float *xw)
{
	struct accel_buffer *xb, *wb, *yb;
	struct abufs bs = { .n = 0 };
	int ret;

	if (rows > UINT32_MAX || in > UINT32_MAX || cols > UINT32_MAX)
		return ONNX_FALLBACK;
	if ((ret = abuf_new(c, &bs, x, (size_t)(rows * in) * 4, &xb)) ||
	    (ret = abuf_new(c, &bs, w, (size_t)(dirs * cols * in) * 4, &wb)) ||
	    (ret = abuf_new(c, &bs, NULL, (size_t)(dirs * rows * cols) * 4, &yb)))
		goto out;
	for (int64_t d = 0; d < dirs && !ret; d++)
		ret = gemm_run(c, ACCEL_FP32, xb, 0, wb, (uint64_t)(d * cols * in) * 4, yb, (uint64_t)(d * rows * cols) * 4,
			       rows, in, cols, false, true, NULL);
	if (!ret)
		memcpy(xw, accel_buffer_ptr(yb), (size_t)(dirs * rows * cols) * 4);
out:
	abufs_free(&bs);
	return ret;
}

/* RNN, GRU, LSTM with the input projections of every step as device GEMMs (the bulk of the MACs when the
 * input is wider than the state); the recurrence (R·h, the gates' activations, the state) on the host. */
int accel_rnn(struct onnx_ctx *c)
{
	const struct onnx_tensor *x = node_in(c, 0), *w = node_in(c, 1);

	if (!x || !w || x->dtype != ONNX_FLOAT || w->dtype != ONNX_FLOAT || !x->count || !w->count)
		return ONNX_FALLBACK;
	return rnn_run(c, device_proj);
}
