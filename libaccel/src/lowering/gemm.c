/* SPDX-License-Identifier: MIT */
/* gemm.c - accel_gemm: validation and lowering to the matmul engine. */
#include <string.h>

#include "epilogue.h"
#include "sparse.h"

int arg_tensor(struct accel_dev *dev, const struct accel_tensor *t, const char *what)
{
	int ret;

	if (!t)
		return accel_seterr(dev, -EINVAL, "%s tensor is NULL", what);
	if (!t->buf && dev->query) {
		ret = tensor_usable(dev, t);
		return ret ? accel_seterr(dev, ret, "%s tensor is malformed (ndim, shape, strides, layout or dtype)", what)
			   : 0;
	}
	if (!t->buf)
		return accel_seterr(dev, -EINVAL, "%s tensor has no buffer", what);
	if (t->buf->dev != dev)
		return accel_seterr(dev, -EINVAL, "%s buffer belongs to another device", what);
	ret = accel_tensor_check(t);
	if (ret == -ERANGE) {
		uint64_t ext = 0;

		accel_tensor_extent(t, &ext);
		return accel_seterr(dev, ret, "%s tensor extends past the end of its buffer (offset %llu + %llu bytes "
				    "> buffer size %llu)", what, (unsigned long long)t->offset,
				    (unsigned long long)ext, (unsigned long long)t->buf->size);
	}
	if (ret)
		return accel_seterr(dev, ret, "%s tensor is malformed (ndim, shape, strides or dtype)", what);
	return 0;
}

int tensor_usable(struct accel_dev *dev, const struct accel_tensor *t)
{
	uint64_t ext;

	if (t && !t->buf && dev->query) {
		if (accel_tensor_extent(t, &ext) || (t->ndim == 2 && t->layout != ACCEL_LAYOUT_ROWMAJOR) ||
		    (t->ndim == 4 && t->layout != ACCEL_LAYOUT_NHWC && t->layout != ACCEL_LAYOUT_NCHW))
			return -EINVAL;
		return 0;
	}
	if (!t || !t->buf)
		return -EINVAL;
	return accel_tensor_check(t);
}

int arg_no_overlap(struct accel_dev *dev, const struct accel_tensor *out, const char *oname,
		   const struct accel_tensor *in, const char *iname)
{
	uint64_t eo, ei;

	if (!in || !out || !out->buf || in->buf != out->buf || accel_tensor_extent(out, &eo) || accel_tensor_extent(in, &ei))
		return 0;
	if (out->offset < in->offset + ei && in->offset < out->offset + eo)
		return accel_seterr(dev, -EINVAL, "%s overlaps %s in the same buffer (bytes %llu..%llu and %llu..%llu): "
				    "outputs must not alias inputs", oname, iname, (unsigned long long)out->offset,
				    (unsigned long long)(out->offset + eo), (unsigned long long)in->offset,
				    (unsigned long long)(in->offset + ei));
	return 0;
}

int mat_arg(struct accel_dev *dev, const struct accel_tensor *t, const char *what)
{
	int ret;

	/* Say what is wrong with the inner stride before the range check blames the buffer size. */
	if (t && (t->buf || dev->query) && t->ndim == 2 && accel_dtype_size(t->dtype) &&
	    (size_t)t->strides[1] != accel_dtype_size(t->dtype))
		return accel_seterr(dev, -EINVAL, "%s: the column dimension must be contiguous (inner stride %lld bytes, "
				    "element size %zu)", what, (long long)t->strides[1], accel_dtype_size(t->dtype));
	ret = arg_tensor(dev, t, what);
	if (ret)
		return ret;
	if (t->ndim != 2)
		return accel_seterr(dev, -EINVAL, "%s must be a 2-D tensor", what);
	if (t->strides[0] < t->strides[1] * (int64_t)t->shape[1] && t->shape[0] > 1)
		return accel_seterr(dev, -EINVAL, "%s: rows overlap (row stride too small)", what);
	if (t->dtype == ACCEL_FP32 && (tensor_addr(t) % 4 || t->strides[0] % 4))
		return accel_seterr(dev, -EINVAL, "%s: fp32 data must be 4-byte aligned", what);
	return 0;
}

static int gemm_run(struct accel_dev *dev, const struct accel_gemm_desc *d, const struct accel_submit *sub,
		    struct accel_job **job, bool zskip_a);

int accel_gemm(struct accel_dev *dev, const struct accel_gemm_desc *d, const struct accel_submit *sub,
	       struct accel_job **job)
{
	return gemm_run(dev, d, sub, job, false);
}

/* sparse (#8): dense weights with the activation bitmask (LD A with ZSKIP). */
int sparse_gemm_zskip(struct accel_dev *dev, const struct accel_gemm_desc *d, const struct accel_submit *sub,
		      struct accel_job **job)
{
	return gemm_run(dev, d, sub, job, true);
}

/* Everything accel_gemm checks before it lowers (accel_op_supported asks the same): operands, shapes,
 * the epilogue (into p, with M, N, K and f32) and the residual.  Touches no buffer. */
int gemm_validate(struct accel_dev *dev, const struct accel_gemm_desc *d, struct mm_problem *pp)
{
	struct mm_problem p;
	uint32_t M, N, K, kb;
	bool f32;
	int ret;

	if ((ret = mat_arg(dev, d->a, "A")) || (ret = mat_arg(dev, d->b, "B")) || (ret = mat_arg(dev, d->c, "C")))
		return ret;
	if ((ret = arg_no_overlap(dev, d->c, "C", d->a, "A")) || (ret = arg_no_overlap(dev, d->c, "C", d->b, "B")) ||
	    (ret = arg_no_overlap(dev, d->c, "C", d->epi.bias, "the bias")))
		return ret;
	if (d->a->dtype != d->b->dtype || (d->a->dtype != ACCEL_INT8 && d->a->dtype != ACCEL_FP32))
		return accel_seterr(dev, -EINVAL, "A and B must both be INT8 or both FP32");
	f32 = d->a->dtype == ACCEL_FP32;
	M = d->trans_a ? d->a->shape[1] : d->a->shape[0];
	K = d->trans_a ? d->a->shape[0] : d->a->shape[1];
	kb = d->trans_b ? d->b->shape[1] : d->b->shape[0];
	N = d->trans_b ? d->b->shape[0] : d->b->shape[1];
	if (kb != K)
		return accel_seterr(dev, -EINVAL, "inner dimensions differ: op(A) is %ux%u, op(B) is %ux%u", M, K, kb, N);
	if (d->c->shape[0] != M || d->c->shape[1] != N)
		return accel_seterr(dev, -EINVAL, "C is %ux%u, expected %ux%u", d->c->shape[0], d->c->shape[1], M, N);
	memset(&p, 0, sizeof(p));
	p.M = M;
	p.N = N;
	p.K = K;
	p.f32 = f32;
	ret = epi_setup(dev, &d->epi, f32, d->c->dtype, N, &p);
	if (ret)
		return ret;
	if (p.out_dtype != TNPU_DTYPE_INT8 && (tensor_addr(d->c) % 4 || d->c->strides[0] % 4))
		return accel_seterr(dev, -EINVAL, "C: 32-bit output must be 4-byte aligned");
	if (p.res_tensor) {
		const struct accel_tensor *r = p.res_tensor;

		if (r->ndim != 2 || r->shape[0] != M || r->shape[1] != N || r->strides[1] != 4 || r->strides[0] % 4)
			return accel_seterr(dev, -EINVAL, "residual must be an %ux%u matrix with contiguous rows", M, N);
	}
	*pp = p;
	return 0;
}

static int gemm_run(struct accel_dev *dev, const struct accel_gemm_desc *d, const struct accel_submit *sub,
		    struct accel_job **job, bool zskip_a)
{
	struct accel_cmdstream cs;
	struct mm_problem p;
	struct mm_ctx x;
	int ret;

	ret = accel_op_begin(dev, d, "accel_gemm", job);
	if (ret)
		return ret;
	ret = gemm_validate(dev, d, &p);
	if (ret)
		return ret;
	p.a.kind = d->trans_a ? MM_MAT_T : MM_MAT;
	p.a.buf = d->a->buf;
	p.a.va = d->a->buf->va + d->a->offset;
	p.a.pitch = (uint64_t)d->a->strides[0];
	p.b.kind = d->trans_b ? MM_MAT_T : MM_MAT;
	p.b.buf = d->b->buf;
	p.b.va = d->b->buf->va + d->b->offset;
	p.b.pitch = (uint64_t)d->b->strides[0];
	p.c_buf = d->c->buf;
	p.c_va = d->c->buf->va + d->c->offset;
	p.c_pitch = (uint64_t)d->c->strides[0];
	p.zskip_a = zskip_a;
	if (p.res_tensor) {
		p.res_va = p.res_tensor->buf->va + p.res_tensor->offset;
		p.res_pitch = (uint64_t)p.res_tensor->strides[0];
	}
	cs_init(&cs, dev);
	cs_use(&cs, p.a.buf);
	cs_use(&cs, p.b.buf);
	cs_use(&cs, p.c_buf);
	cs_use(&cs, p.bias_buf);
	cs_use(&cs, p.res_buf);
	mm_ctx_init(&x, dev, &cs);
	ret = gemm_pw_lower(dev, &x, &p);
	if (ret > 0)
		ret = mm_emit(&x, &p);
	return accel_op_submit(dev, &cs, ret, sub, NULL, 0, job);
}
