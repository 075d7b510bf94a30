/* SPDX-License-Identifier: MIT */
/*
 * compiled_operands.c - the accel_tensor descriptors of a compiled plan's values (arena, weight image)
 * and the operation descriptors built from them, shared by the executor (compiled_run.c) and the
 * generator's device-resident KV cache (generate_kv.c).
 */
#include <errno.h>
#include <string.h>

#include "compiled_operands.h"

void cm_place(const struct onnx_compiled *cm, int v, struct accel_buffer **b, uint64_t *off)
{
	const struct cval *cv = &cm->vals[v];

	if (cv->loc == LOC_WEIGHT) {
		*b = cm_wbuf_at(cm, cv->off, off);
		return;
	}
	*b = cm->arena;
	*off = cv->off;
}

int cm_t4l(const struct onnx_compiled *cm, int v, bool nhwc, uint32_t n, uint32_t c, uint32_t h, uint32_t w,
	       struct accel_tensor *t)
{
	struct accel_buffer *b;
	uint64_t off;

	const struct cval *cv = &cm->vals[v];
	int ret;

	cm_place(cm, v, &b, &off);
	ret = accel_tensor_4d(b, off, ACCEL_FP32, nhwc ? ACCEL_LAYOUT_NHWC : ACCEL_LAYOUT_NCHW, n, c, h, w, t);
	if (!ret && nhwc && cv->loc == LOC_ARENA && cv->root != v) {
		/* a part of an NHWC in-place Concat (compile_layout.c): its pixels are the root's */
		int64_t px = 4 * cm->vals[cv->root].dims[1];

		t->strides[3] = px;
		t->strides[2] = px * w;
		t->strides[0] = px * w * h;
	}
	return ret;
}

/* A 2-D FP32 descriptor of value v's bytes. */
int cm_t2(const struct onnx_compiled *cm, int v, uint32_t rows, uint32_t cols, struct accel_tensor *t)
{
	struct accel_buffer *b;
	uint64_t off;

	cm_place(cm, v, &b, &off);
	return accel_tensor_2d(b, off, ACCEL_FP32, rows, cols, t);
}

/* Matrix slice bi of value v, a stack of rows x cols fp32 matrices (a batched CS_GEMM's operand). */
int cm_t2_slice(const struct onnx_compiled *cm, int v, uint32_t bi, uint32_t rows, uint32_t cols,
		    struct accel_tensor *t)
{
	struct accel_buffer *b;
	uint64_t off;

	cm_place(cm, v, &b, &off);
	return accel_tensor_2d(b, off + (uint64_t)bi * rows * cols * 4, ACCEL_FP32, rows, cols, t);
}

/*
 * NCHW descriptor of a value's bytes.  Activations read and write equally shaped operands as flat
 * arrays, so an NHWC group (compile_layout.c) runs through them unchanged.
 */
int cm_t4(const struct onnx_compiled *cm, int v, uint32_t n, uint32_t c, uint32_t h, uint32_t w,
	      struct accel_tensor *t)
{
	return cm_t4l(cm, v, false, n, c, h, w, t);
}

bool cm_nhwc(const struct onnx_compiled *cm, int v)
{
	return cm->vals[v].nhwc != 0;
}

/* CS_COPY: the source and destination boxes; 8-byte elements move as two 32-bit halves. */
void cm_copy_tensors(const struct onnx_compiled *cm, const struct cstep *s, struct accel_tensor *x,
			 struct accel_tensor *y)
{
	const struct cval *sv = &cm->vals[s->in[0]], *dv = &cm->vals[s->out];
	int64_t e = s->esz == 8 ? 4 : s->esz;
	enum accel_dtype dt = s->esz == 1 ? ACCEL_INT8 : ACCEL_INT32;

	uint64_t soff = sv->off;
	struct accel_buffer *sb = sv->loc == LOC_WEIGHT ? cm_wbuf_at(cm, sv->off, &soff) : cm->arena;

	*x = (struct accel_tensor){ .buf = sb, .dtype = dt, .layout = ACCEL_LAYOUT_NCHW, .ndim = 4,
				    .offset = soff + (uint64_t)(s->src_off * s->esz) };
	*y = (struct accel_tensor){ .buf = cm->arena, .dtype = dt, .layout = ACCEL_LAYOUT_NCHW, .ndim = 4,
				    .offset = dv->off + (uint64_t)(s->dst_off * s->esz) };
	for (int d = 0; d < 4; d++) {
		x->shape[d] = y->shape[d] = s->ad[d];
		x->strides[d] = s->sst[d] * s->esz;
		y->strides[d] = s->dstr[d] * s->esz;
	}
	if (s->esz == 8) {
		/* the innermost dimension of the box in 32-bit halves: contiguous, or a new one of 2 */
		if (s->ad[3] > 1 && s->sst[3] == 1 && s->dstr[3] == 1) {
			x->shape[3] = y->shape[3] = s->ad[3] * 2;
		} else if (s->ad[3] == 1) {
			x->shape[3] = y->shape[3] = 2;
		} else {
			x->buf = NULL;	/* not produced by the compiler: accel_transpose reports it */
			return;
		}
		x->strides[3] = y->strides[3] = e;
	}
}

/* A conv or GEMM step's epilogue: the packed bias (b_off), activation and clamp, the residual operand. */
void cm_step_epilogue(const struct cstep *s, const struct accel_tensor *bt, const struct accel_tensor *rt,
			  struct accel_epilogue *e)
{
	if (s->b_off != UINT64_MAX)
		e->bias = bt;
	e->act = (enum accel_act)s->act;
	e->clamp_lo_f = s->lo;
	e->clamp_hi_f = s->hi;
	if (s->res >= 0)	/* compile_fuse_residual.c: the skip tensor, the output's shape */
		e->residual = rt;
}

/* The accel_conv2d descriptor of a CS_CONV step (its tensors in x, w, y, bt, rt); 0 or a constructor's
 * -errno (message in accel_last_error). */
void cm_conv_geometry(const struct cstep *s, struct accel_conv2d_desc *d)
{
	d->stride_h = (uint32_t)s->sh, d->stride_w = (uint32_t)s->sw;
	d->dil_h = (uint32_t)s->dh, d->dil_w = (uint32_t)s->dw;
	d->pad_top = (uint32_t)s->pt, d->pad_left = (uint32_t)s->pl;
	d->pad_bottom = (uint32_t)s->pb, d->pad_right = (uint32_t)s->pr;
	d->groups = (uint32_t)s->groups;
}

int cm_conv_desc(const struct onnx_compiled *cm, const struct cstep *s, struct accel_conv2d_desc *d,
		     struct accel_tensor *x, struct accel_tensor *w, struct accel_tensor *y, struct accel_tensor *bt,
		     struct accel_tensor *rt)
{
	int ret;

	memset(d, 0, sizeof(*d));
	/* OIHW weights for an NCHW input, OHWI (repacked by the layout pass) for NHWC */
	if ((ret = cm_t4l(cm, s->in[0], cm_nhwc(cm, s->in[0]), (uint32_t)s->n, (uint32_t)s->c, (uint32_t)s->h, (uint32_t)s->w,
		       x)) ||
	    (ret = accel_tensor_4d(cm->wbuf, s->w_off, ACCEL_FP32,
				   cm_nhwc(cm, s->in[0]) ? ACCEL_LAYOUT_NHWC : ACCEL_LAYOUT_NCHW, (uint32_t)s->k,
				   (uint32_t)s->cg, (uint32_t)s->kh, (uint32_t)s->kw, w)) ||
	    (ret = cm_t4l(cm, s->out, cm_nhwc(cm, s->out), (uint32_t)s->n, (uint32_t)s->k, (uint32_t)s->oh, (uint32_t)s->ow,
		       y)) ||
	    (s->b_off != UINT64_MAX &&
	     (ret = accel_tensor_2d(cm->wbuf, s->b_off, ACCEL_FP32, 1, (uint32_t)s->k, bt))) ||
	    (s->res >= 0 && (ret = cm_t4l(cm, s->res, cm_nhwc(cm, s->res), (uint32_t)s->n, (uint32_t)s->k, (uint32_t)s->oh,
				       (uint32_t)s->ow, rt))))
		return ret;
	d->input = x;
	d->weights = w;
	d->output = y;
	cm_conv_geometry(s, d);
	cm_step_epilogue(s, bt, rt, &d->epi);
	return 0;
}

int cm_value_rows(const struct onnx_compiled *cm, int v, uint32_t row0, uint32_t rows, struct accel_tensor *t)
{
	const struct cval *cv;
	int ret;

	if (v < 0 || (unsigned)v >= cm->n_vals || cm->vals[v].loc != LOC_ARENA)
		return -ENOENT;
	cv = &cm->vals[v];
	if (cv->dtype != ONNX_FLOAT || cv->ndim != 4 || cv->dims[0] != 1 || cv->dims[1] <= 0 || cv->dims[3] <= 0 ||
	    cv->dims[1] > UINT32_MAX || cv->dims[2] > UINT32_MAX || cv->dims[3] > UINT32_MAX || !rows ||
	    (uint64_t)row0 + rows > (uint64_t)cv->dims[2])
		return -EINVAL;
	ret = cm_t4l(cm, v, cm_nhwc(cm, v), 1, (uint32_t)cv->dims[1], (uint32_t)cv->dims[2], (uint32_t)cv->dims[3], t);
	if (ret)
		return ret;
	t->offset += (uint64_t)row0 * (uint64_t)t->strides[2];
	t->shape[2] = rows;
	return 0;
}

const void *cm_value_host(const struct onnx_compiled *cm, int v)
{
	if (v < 0 || (unsigned)v >= cm->n_vals || cm->vals[v].loc != LOC_ARENA || !cm->arena)
		return NULL;
	return (const uint8_t *)accel_buffer_ptr(cm->arena) + cm->vals[v].off;
}
