/* SPDX-License-Identifier: MIT */
/*
 * sparse_dispatch.c - sparse (#8): sparse GEMM / convolution entry points and the density
 * dispatcher (seed 003: the dispatch engine analyses sparsity and routes sparse maps to the sparse
 * path, dense maps to the dense one).  Thresholds and why: Documentation/sparse.md, "Dispatcher".
 */
#include <string.h>

#include "epilogue.h"
#include "sparse.h"

int accel_sparse_gemm(struct accel_dev *dev, const struct accel_sparse_gemm_desc *d, const struct accel_submit *sub,
		      struct accel_job **job)
{
	const struct accel_sparse_weights *sw;
	struct accel_cmdstream cs;
	struct mm_problem p;
	struct mm_ctx x;
	uint32_t M, K;
	int ret;

	ret = accel_op_begin(dev, d, "accel_sparse_gemm", job);
	if (ret)
		return ret;
	sw = d->w;
	if (!sw || sw->dev != dev)
		return accel_seterr(dev, -EINVAL, "accel_sparse_gemm: packed weights missing or of another device");
	if (d->flags & ~(ACCEL_SPARSE_ZSKIP_A | ACCEL_SPARSE_LB))
		return accel_seterr(dev, -EINVAL, "accel_sparse_gemm: unknown flags 0x%x", d->flags);
	if ((ret = mat_arg(dev, d->a, "A")) || (ret = mat_arg(dev, d->c, "C")))
		return ret;
	if ((ret = arg_no_overlap(dev, d->c, "C", d->a, "A")) ||
	    (ret = arg_no_overlap(dev, d->c, "C", d->epi.bias, "the bias")))
		return ret;
	if (d->a->dtype != (sw->f32 ? ACCEL_FP32 : ACCEL_INT8))
		return accel_seterr(dev, -EINVAL, "A must have the packed weights' dtype (%s)", sw->f32 ? "FP32" : "INT8");
	M = d->trans_a ? d->a->shape[1] : d->a->shape[0];
	K = d->trans_a ? d->a->shape[0] : d->a->shape[1];
	if (K != sw->K)
		return accel_seterr(dev, -EINVAL, "inner dimensions differ: op(A) is %ux%u, W is %ux%u", M, K, sw->K, sw->N);
	if (d->c->shape[0] != M || d->c->shape[1] != sw->N)
		return accel_seterr(dev, -EINVAL, "C is %ux%u, expected %ux%u", d->c->shape[0], d->c->shape[1], M, sw->N);
	memset(&p, 0, sizeof(p));
	p.M = M;
	p.N = sw->N;
	p.K = K;
	p.f32 = sw->f32;
	ret = epi_setup(dev, &d->epi, p.f32, d->c->dtype, p.N, &p);
	if (ret)
		return ret;
	p.a.kind = d->trans_a ? MM_MAT_T : MM_MAT;
	p.a.buf = d->a->buf;
	p.a.va = d->a->buf->va + d->a->offset;
	p.a.pitch = (uint64_t)d->a->strides[0];
	p.b.kind = MM_SPARSE;
	p.b.buf = sw->buf;
	p.b.sp = sw;
	p.c_buf = d->c->buf;
	p.c_va = d->c->buf->va + d->c->offset;
	p.c_pitch = (uint64_t)d->c->strides[0];
	p.zskip_a = d->flags & ACCEL_SPARSE_ZSKIP_A;
	p.mac_lb = d->flags & ACCEL_SPARSE_LB;
	if (p.out_dtype != TNPU_DTYPE_INT8 && (p.c_va % 4 || p.c_pitch % 4))
		return accel_seterr(dev, -EINVAL, "C: 32-bit output must be 4-byte aligned");
	cs_init(&cs, dev);
	cs_use(&cs, p.a.buf);
	cs_use(&cs, sw->buf);
	cs_use(&cs, p.c_buf);
	cs_use(&cs, p.bias_buf);
	mm_ctx_init(&x, dev, &cs);
	ret = mm_emit(&x, &p);
	return accel_op_submit(dev, &cs, ret, sub, NULL, 0, job);
}

/* Checks shared by the sparse convolution paths; 0 if w (may be NULL) fits conv. */
int sparse_conv_check(struct accel_dev *dev, const struct accel_conv2d_desc *conv, const struct accel_sparse_weights *w,
		      uint32_t flags)
{
	const struct accel_tensor *wt;

	if (flags & ~(ACCEL_SPARSE_ZSKIP_A | ACCEL_SPARSE_LB))
		return accel_seterr(dev, -EINVAL, "sparse conv2d: unknown flags 0x%x", flags);
	if (!w)
		return 0;
	wt = conv->weights;
	if (w->dev != dev)
		return accel_seterr(dev, -EINVAL, "sparse conv2d: packed weights belong to another device");
	if (conv->groups != 1)
		return accel_seterr(dev, -EOPNOTSUPP, "sparse conv2d: packed weights need groups == 1");
	if (!wt || wt->ndim != 4 || w->N != wt->shape[0] || w->K != wt->shape[1] * wt->shape[2] * wt->shape[3] ||
	    w->f32 != (wt->dtype == ACCEL_FP32))
		return accel_seterr(dev, -EINVAL, "sparse conv2d: packed weights do not match the weights tensor");
	return 0;
}

int accel_sparse_conv2d(struct accel_dev *dev, const struct accel_conv2d_desc *conv,
			const struct accel_sparse_weights *w, uint32_t flags, const struct accel_submit *sub,
			struct accel_job **job)
{
	struct accel_cmdstream cs;
	struct mm_ctx x;
	int ret;

	ret = accel_op_begin(dev, conv, "accel_sparse_conv2d", job);
	if (ret)
		return ret;
	ret = sparse_conv_check(dev, conv, w, flags);
	if (ret)
		return ret;
	cs_init(&cs, dev);
	mm_ctx_init(&x, dev, &cs);
	x.conv_sp = w;
	x.conv_zskip_lb = flags;
	ret = conv_lower(dev, &x, conv);
	return accel_op_submit(dev, &cs, ret, sub, NULL, 0, job);
}

/* ---- dispatcher ---------------------------------------------------------------------------- */

int accel_tensor_density(const struct accel_tensor *t, double *out)
{
	const uint8_t *base;
	uint64_t nz = 0, n = 0;
	uint32_t d0, d1, d2, d3;

	if (!t || !t->buf)
		return -EINVAL;
	if (!out || accel_tensor_check(t) || (t->dtype != ACCEL_INT8 && t->dtype != ACCEL_FP32))
		return accel_seterr(t->buf->dev, -EINVAL, "accel_tensor_density: %s",
				    !out ? "out is NULL" : "the tensor is malformed, outside its buffer, or not INT8/FP32");
	base = (const uint8_t *)accel_buffer_ptr(t->buf) + t->offset;
	d0 = t->shape[0];
	d1 = t->shape[1];
	d2 = t->ndim == 4 ? t->shape[2] : 1;
	d3 = t->ndim == 4 ? t->shape[3] : 1;
	for (uint32_t a = 0; a < d0; a++)
		for (uint32_t b = 0; b < d1; b++)
			for (uint32_t c = 0; c < d2; c++)
				for (uint32_t e = 0; e < d3; e++) {
					const uint8_t *p = base + (int64_t)a * t->strides[0] + (int64_t)b * t->strides[1] +
							   (t->ndim == 4 ? (int64_t)c * t->strides[2] + (int64_t)e * t->strides[3] : 0);

					if (t->dtype == ACCEL_INT8) {
						nz += *p != 0;
					} else {
						float v;

						memcpy(&v, p, 4);
						nz += v != 0.0f;
					}
					n++;
				}
	*out = n ? (double)nz / (double)n : 0.0;
	return 0;
}

int accel_sparse_route(double weight_density, double act_density, bool have_packed, double w_thr, double a_thr,
		       struct accel_route_info *out)
{
	if (!out)
		return -EINVAL;
	if (w_thr <= 0)
		w_thr = ACCEL_SPARSE_W_THRESHOLD;
	if (a_thr <= 0)
		a_thr = ACCEL_SPARSE_A_THRESHOLD;
	memset(out, 0, sizeof(*out));
	out->weight_density = weight_density;
	out->act_density = act_density;
	if (act_density <= a_thr)
		out->flags |= ACCEL_SPARSE_ZSKIP_A;
	if (have_packed && weight_density <= w_thr) {
		out->route = ACCEL_ROUTE_SPARSE;
		out->flags |= ACCEL_SPARSE_LB;
	} else {
		out->route = out->flags ? ACCEL_ROUTE_ZSKIP : ACCEL_ROUTE_DENSE;
	}
	return 0;
}

/* Planner estimates (plan_tiling.c) of the dense and the packed-weight lowering of d. */
static void estimate_paths(struct accel_dev *dev, const struct accel_gemm_desc *d, const struct accel_sparse_weights *sw,
			   double *dense, double *sparse)
{
	struct mm_problem p;
	struct mm_plan pl;

	memset(&p, 0, sizeof(p));
	p.M = d->trans_a ? d->a->shape[1] : d->a->shape[0];
	p.K = sw->K;
	p.N = sw->N;
	p.f32 = sw->f32;
	p.out_dtype = d->c && d->c->dtype == ACCEL_INT8 ? TNPU_DTYPE_INT8 : (sw->f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT32);
	p.use_sfu = d->epi.bias || d->epi.act || d->epi.multiplier;
	p.a.kind = d->trans_a ? MM_MAT_T : MM_MAT;
	p.b.kind = MM_MAT;
	*dense = mm_plan_choose(&dev->caps, &p, &pl) ? 1e300 : pl.est_cycles;
	p.b.kind = MM_SPARSE;
	p.b.sp = sw;
	*sparse = mm_plan_choose(&dev->caps, &p, &pl) ? 1e300 : pl.est_cycles;
}

int accel_auto_gemm(struct accel_dev *dev, const struct accel_gemm_desc *d, const struct accel_sparse_weights *sw,
		    const struct accel_submit *sub, struct accel_job **job, struct accel_route_info *info)
{
	struct accel_route_info ri;
	double ad = 1.0, wd = 1.0;
	int ret;

	ret = accel_op_begin(dev, d, "accel_auto_gemm", job);
	if (ret)
		return ret;
	if (!d->a || accel_tensor_density(d->a, &ad))
		return accel_seterr(dev, -EINVAL, "accel_auto_gemm: A is not a host-visible INT8/FP32 tensor");
	if (d->a->ndim != 2)
		return accel_seterr(dev, -EINVAL, "accel_auto_gemm: A must be a 2-D tensor");
	if (sw) {
		if (d->trans_b)
			return accel_seterr(dev, -EINVAL, "accel_auto_gemm: packed weights replace B; trans_b must be false");
		wd = sparse_nnz_density(sw);
	}
	accel_sparse_route(wd, ad, sw != NULL, 0, 0, &ri);
	if (ri.route == ACCEL_ROUTE_SPARSE) {
		/* Packed slots are 4 (8) bytes per non-zero against 1 (4) per dense weight: a layer
		 * bound by weight traffic can lose even at low density.  Ask the planner. */
		estimate_paths(dev, d, sw, &ri.est_dense_cycles, &ri.est_sparse_cycles);
		if (ri.est_sparse_cycles >= ri.est_dense_cycles) {
			ri.flags &= ~ACCEL_SPARSE_LB;
			ri.route = ri.flags ? ACCEL_ROUTE_ZSKIP : ACCEL_ROUTE_DENSE;
		}
	}
	if (info)
		*info = ri;
	if (ri.route == ACCEL_ROUTE_SPARSE) {
		struct accel_sparse_gemm_desc sd = {
			.a = d->a, .c = d->c, .trans_a = d->trans_a, .w = sw, .epi = d->epi, .flags = ri.flags,
		};

		return accel_sparse_gemm(dev, &sd, sub, job);
	}
	if (ri.route == ACCEL_ROUTE_ZSKIP) {
		/* Dense weights with the activation bitmask: the sparse entry point's dense-B twin. */
		return sparse_gemm_zskip(dev, d, sub, job);
	}
	return accel_gemm(dev, d, sub, job);
}

int accel_auto_conv2d(struct accel_dev *dev, const struct accel_conv2d_desc *d, const struct accel_sparse_weights *sw,
		      const struct accel_submit *sub, struct accel_job **job, struct accel_route_info *info)
{
	struct accel_route_info ri;
	double ad = 1.0, wd = 1.0;
	int ret;

	ret = accel_op_begin(dev, d, "accel_auto_conv2d", job);
	if (ret)
		return ret;
	if (!d->input || accel_tensor_density(d->input, &ad))
		return accel_seterr(dev, -EINVAL, "accel_auto_conv2d: the input is not a host-visible INT8/FP32 tensor");
	if (sw && d->groups != 1)
		sw = NULL;	/* packed weights serve groups == 1 only: the grouped layer goes dense */
	if (sw) {
		ret = sparse_conv_check(dev, d, sw, 0);
		if (ret)
			return ret;
		wd = sparse_nnz_density(sw);
	}
	accel_sparse_route(wd, ad, sw != NULL, 0, 0, &ri);
	if (ri.route == ACCEL_ROUTE_SPARSE) {
		/* The planner's view of the convolution as a matmul: M = N * OH * OW output pixels. */
		const struct accel_tensor *o = d->output;
		struct accel_tensor a;
		struct accel_gemm_desc g = { .a = &a, .c = o, .epi = d->epi };

		if (!o || o->ndim != 4)
			return accel_seterr(dev, -EINVAL, "accel_auto_conv2d: output must be a 4-D tensor");
		memset(&a, 0, sizeof(a));
		a.ndim = 2;
		a.shape[0] = o->shape[0] * o->shape[2] * o->shape[3];
		a.shape[1] = sw->K;
		g.epi.bias = NULL;
		estimate_paths(dev, &g, sw, &ri.est_dense_cycles, &ri.est_sparse_cycles);
		if (ri.est_sparse_cycles >= ri.est_dense_cycles) {
			ri.flags &= ~ACCEL_SPARSE_LB;
			ri.route = ri.flags ? ACCEL_ROUTE_ZSKIP : ACCEL_ROUTE_DENSE;
		}
	}
	if (info)
		*info = ri;
	if (ri.route == ACCEL_ROUTE_SPARSE)
		return accel_sparse_conv2d(dev, d, sw, ri.flags, sub, job);
	if (ri.route == ACCEL_ROUTE_ZSKIP)
		return accel_sparse_conv2d(dev, d, NULL, ri.flags, sub, job);
	return accel_conv2d(dev, d, sub, job);
}

int accel_job_row_busy(struct accel_job *job, uint64_t *rows, unsigned n)
{
	unsigned nr;

	if (!job)
		return -EINVAL;
	if (!rows && n)
		return accel_seterr(job->dev, -EINVAL, "accel_job_row_busy: rows is NULL with n > 0");
	(void)accel_job_wait(job, -1);
	for (unsigned i = 0; i < job->n_hw; i++)
		if (!job->hw[i].has_row_busy)
			return accel_seterr(job->dev, -EOPNOTSUPP,
					    "per-row busy cycles of this job are not available (drm: another job "
					    "completed before it was read, or the device lacks ROW_BUSY)");
	nr = ACCEL_MIN(n, job->dev->caps.rows);
	for (unsigned r = 0; r < nr; r++) {
		rows[r] = 0;
		for (unsigned i = 0; i < job->n_hw; i++)
			rows[r] += job->hw[i].row_busy[r];
	}
	return (int)nr;
}
