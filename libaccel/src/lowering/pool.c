/* SPDX-License-Identifier: MIT */
/*
 * pool.c - pooling and element-wise activations, lowered to the matmul engine.
 *
 * ISA v1 has MAC and an SFU with ReLU/clamp/requantise but no max reduction, so:
 *  - average pooling = depthwise convolution with constant weights (1/(R*S) in fp32; 1 with the
 *    requantisation multiplier of 1/(R*S) in int8), padding counted in the window; an fp32 global
 *    average pool of a packed NHWC image is a GEMM per image instead (global_avg_nhwc());
 *  - activations = x times an identity matrix (exact in int8 and fp32) through the SFU;
 *  - max pooling runs on the host CPU (after the dependencies) and is reported as a job without
 *    hardware command buffers (hw_jobs = 0).  See Documentation/libaccel.md.
 */
#include <stdio.h>
#include <string.h>

#include "epilogue.h"
#include "vec_ops.h"

#define ID_W 64u	/* identity width used by accel_activation */

static int sub_wait(struct accel_dev *dev, const struct accel_submit *sub)
{
	if (!sub)
		return 0;
	if (sub->flags || (sub->n_deps && !sub->deps))
		return accel_seterr(dev, -EINVAL, "accel_submit: flags must be 0 and deps non-NULL");
	for (unsigned i = 0; i < sub->n_deps; i++) {
		int ret;

		if (!sub->deps[i] || sub->deps[i]->dev != dev)
			return accel_seterr(dev, -EINVAL, "accel_submit: dependency %u is not a job of this device", i);
		ret = accel_job_wait(sub->deps[i], -1);
		if (ret)
			return accel_seterr(dev, -ECANCELED, "dependency %u failed (%s)", i, accel_strerror(ret));
	}
	return 0;
}

static bool packed_same(const struct accel_tensor *a, const struct accel_tensor *b)
{
	if (a->ndim != b->ndim || a->dtype != b->dtype || a->layout != b->layout)
		return false;
	for (unsigned i = 0; i < a->ndim; i++)
		if (a->shape[i] != b->shape[i] || a->strides[i] != b->strides[i])
			return false;
	return true;
}

static bool packed(const struct accel_tensor *t, uint64_t *elems)
{
	uint64_t ext, n = 1;

	for (unsigned i = 0; i < t->ndim; i++)
		n *= t->shape[i];
	*elems = n;
	return !accel_tensor_extent(t, &ext) && ext == n * accel_dtype_size(t->dtype);
}

/* accel_activation's checks of NONE/RELU/CLAMP (the SFU epilogue of an identity GEMM): the epilogue in
 * ep and p, the element count in L. */
static int act_sfu_validate(struct accel_dev *dev, const struct accel_activation_desc *d, struct accel_epilogue *ep,
			    struct mm_problem *p, uint64_t *L)
{
	bool f32;
	int ret;

	if ((ret = arg_tensor(dev, d->input, "input")) || (ret = arg_tensor(dev, d->output, "output")))
		return ret;
	if (!packed_same(d->input, d->output))
		return accel_seterr(dev, -EINVAL, "activation: input and output need the same shape, strides, layout and dtype");
	if (d->input->dtype != ACCEL_INT8 && d->input->dtype != ACCEL_FP32)
		return accel_seterr(dev, -EINVAL, "activation: dtype must be INT8 or FP32");
	if (!packed(d->input, L))
		return accel_seterr(dev, -EINVAL, "activation: tensors must be packed (no gaps)");
	if (d->act != ACCEL_ACT_RELU && d->act != ACCEL_ACT_CLAMP && d->act != ACCEL_ACT_NONE)
		return accel_seterr(dev, -EINVAL, "activation: act: unknown function %d", (int)d->act);
	f32 = d->input->dtype == ACCEL_FP32;
	memset(ep, 0, sizeof(*ep));
	ep->act = d->act;
	ep->clamp_lo_i = d->clamp_lo_i;
	ep->clamp_hi_i = d->clamp_hi_i;
	ep->clamp_lo_f = d->clamp_lo_f;
	ep->clamp_hi_f = d->clamp_hi_f;
	if (!f32) {
		/* ((x * 2^30 + 2^29) >> 30) == x: the requantisation is the identity. */
		ep->multiplier = 1 << 30;
		ep->shift = 30;
	}
	memset(p, 0, sizeof(*p));
	return epi_setup(dev, ep, f32, d->output->dtype, ID_W, p);
}

/* accel_op_supported's check of an activation: what accel_activation checks before it lowers. */
int activation_validate(struct accel_dev *dev, const struct accel_activation_desc *d)
{
	struct accel_epilogue ep;
	struct mm_problem p;
	uint64_t L;
	int ret;

	if (act_is_vec(d->act)) {
		if ((ret = arg_tensor(dev, d->input, "input")) || (ret = arg_tensor(dev, d->output, "output")))
			return ret;
		return activation_vec_validate(dev, d);
	}
	return act_sfu_validate(dev, d, &ep, &p, &L);
}

int accel_activation(struct accel_dev *dev, const struct accel_activation_desc *d, const struct accel_submit *sub,
		     struct accel_job **job)
{
	struct accel_buffer *id = NULL;
	struct accel_cmdstream cs;
	struct accel_epilogue ep;
	struct mm_problem p;
	struct mm_ctx x;
	uint64_t L, q, r;
	uint32_t e;
	bool f32;
	int ret;

	ret = accel_op_begin(dev, d, "accel_activation", job);
	if (ret)
		return ret;
	if (act_is_vec(d->act)) {	/* ISA 2 vector units */
		if ((ret = arg_tensor(dev, d->input, "input")) || (ret = arg_tensor(dev, d->output, "output")))
			return ret;
		return accel_activation_vec(dev, d, sub, job);
	}
	ret = act_sfu_validate(dev, d, &ep, &p, &L);
	if (ret)
		return ret;
	f32 = d->input->dtype == ACCEL_FP32;
	e = f32 ? 4 : 1;
	ret = accel_buffer_alloc(dev, (uint64_t)ID_W * ID_W * e, &id);
	if (ret)
		return ret;
	for (uint32_t i = 0; i < ID_W; i++) {
		if (f32)
			((float *)id->ptr)[i * ID_W + i] = 1.0f;
		else
			((int8_t *)id->ptr)[i * ID_W + i] = 1;
	}
	q = L / ID_W;
	r = L % ID_W;
	p.f32 = f32;
	p.a.kind = MM_MAT;
	p.a.buf = d->input->buf;
	p.b.kind = MM_MAT;
	p.b.buf = id;
	p.b.va = id->va;
	p.b.pitch = ID_W * e;
	p.c_buf = d->output->buf;
	cs_init(&cs, dev);
	cs_use(&cs, d->input->buf);
	cs_use(&cs, d->output->buf);
	cs_use(&cs, id);
	mm_ctx_init(&x, dev, &cs);
	ret = 0;
	if (q) {
		/* View the tensor as q x 64 and multiply by I(64). */
		p.M = (uint32_t)ACCEL_MIN(q, 0x7fffffffu);
		p.N = p.K = ID_W;
		p.a.va = d->input->buf->va + d->input->offset;
		p.a.pitch = ID_W * e;
		p.c_va = d->output->buf->va + d->output->offset;
		p.c_pitch = ID_W * e;
		ret = q > 0x7fffffffu ? accel_seterr(dev, -E2BIG, "activation: tensor too large") : mm_emit(&x, &p);
	}
	if (!ret && r) {
		/* Tail: 1 x r times the top-left r x r block of I(64). */
		p.M = 1;
		p.N = p.K = (uint32_t)r;
		p.a.va = d->input->buf->va + d->input->offset + q * ID_W * e;
		p.a.pitch = r * e;
		p.c_va = d->output->buf->va + d->output->offset + q * ID_W * e;
		p.c_pitch = r * e;
		ret = mm_emit(&x, &p);
	}
	return accel_op_submit(dev, &cs, ret, sub, &id, 1, job);
}

static int pool_check(struct accel_dev *dev, const struct accel_pool2d_desc *d, uint32_t *oh, uint32_t *ow)
{
	const struct accel_tensor *in = d->input, *out = d->output;
	int ret;

	if ((ret = arg_tensor(dev, in, "input")) || (ret = arg_tensor(dev, out, "output")))
		return ret;
	if ((ret = arg_no_overlap(dev, out, "output", in, "input")))
		return ret;
	if (in->ndim != 4 || out->ndim != 4 || in->dtype != out->dtype || in->layout != out->layout)
		return accel_seterr(dev, -EINVAL, "pool2d: input and output must be 4-D with the same dtype and layout");
	if (in->dtype != ACCEL_INT8 && in->dtype != ACCEL_FP32)
		return accel_seterr(dev, -EINVAL, "pool2d: dtype must be INT8 or FP32");
	if (!d->win_h || !d->win_w || !d->stride_h || !d->stride_w)
		return accel_seterr(dev, -EINVAL, "pool2d: window and stride must be >= 1");
	if (d->pad_top >= d->win_h || d->pad_bottom >= d->win_h || d->pad_left >= d->win_w || d->pad_right >= d->win_w)
		return accel_seterr(dev, -EINVAL, "pool2d: padding must be smaller than the window");
	if (in->shape[2] + d->pad_top + d->pad_bottom < d->win_h || in->shape[3] + d->pad_left + d->pad_right < d->win_w)
		return accel_seterr(dev, -EINVAL, "pool2d: window larger than the padded input");
	*oh = (in->shape[2] + d->pad_top + d->pad_bottom - d->win_h) / d->stride_h + 1;
	*ow = (in->shape[3] + d->pad_left + d->pad_right - d->win_w) / d->stride_w + 1;
	if (out->shape[0] != in->shape[0] || out->shape[1] != in->shape[1] || out->shape[2] != *oh ||
	    out->shape[3] != *ow)
		return accel_seterr(dev, -EINVAL, "pool2d: output must be {%u,%u,%u,%u}", in->shape[0], in->shape[1], *oh,
				    *ow);
	if (d->kind != ACCEL_POOL_MAX && d->kind != ACCEL_POOL_AVG && d->kind != ACCEL_POOL_AVG_EXCL_PAD)
		return accel_seterr(dev, -EINVAL, "pool2d: unknown kind %d", (int)d->kind);
	if (d->kind == ACCEL_POOL_AVG_EXCL_PAD) {
		if (in->dtype != ACCEL_FP32)
			return accel_seterr(dev, -EINVAL, "pool2d: AVG_EXCL_PAD is FP32 only");
		if (!(dev->caps.features & TNPU_FEAT_VEC))
			return accel_seterr(dev, -EOPNOTSUPP, "pool2d: AVG_EXCL_PAD needs the vector units (CAP_FEATURES bit 15)");
	}
	return 0;
}

static const void *at(const struct accel_tensor *t, uint32_t n, uint32_t c, uint32_t y, uint32_t x)
{
	return (const uint8_t *)t->buf->ptr + t->offset + n * t->strides[0] + c * t->strides[1] + y * t->strides[2] +
	       x * t->strides[3];
}

/* Max pooling (and the fp32 average over the taps inside the input) on the host, where the vector units
 * cannot take the window (a field too wide, a row larger than a storage-unit half); the average as the
 * vector units compute it: the taps in order from 0.0, divided by their count. */
static void pool_host(const struct accel_pool2d_desc *d, uint32_t oh, uint32_t ow)
{
	const struct accel_tensor *in = d->input, *out = d->output;
	bool f32 = in->dtype == ACCEL_FP32, avg = d->kind == ACCEL_POOL_AVG_EXCL_PAD;

	for (uint32_t n = 0; n < in->shape[0]; n++)
		for (uint32_t c = 0; c < in->shape[1]; c++)
			for (uint32_t y = 0; y < oh; y++)
				for (uint32_t x = 0; x < ow; x++) {
					float mf = 0, sum = 0;
					int mi = -128, cnt = 0;
					bool any = false;

					for (uint32_t ry = 0; ry < d->win_h; ry++)
						for (uint32_t rx = 0; rx < d->win_w; rx++) {
							int64_t iy = (int64_t)y * d->stride_h - d->pad_top + ry;
							int64_t ix = (int64_t)x * d->stride_w - d->pad_left + rx;

							if (iy < 0 || ix < 0 || iy >= in->shape[2] || ix >= in->shape[3])
								continue;
							if (f32) {
								float v;

								memcpy(&v, at(in, n, c, (uint32_t)iy, (uint32_t)ix), 4);
								sum += v;
								cnt++;
								if (!any || v > mf || v != v)
									mf = v;
							} else {
								int v = *(const int8_t *)at(in, n, c, (uint32_t)iy, (uint32_t)ix);

								mi = v > mi ? v : mi;
							}
							any = true;
						}
					if (avg)
						mf = sum / (float)cnt;
					if (f32)
						memcpy((void *)at(out, n, c, y, x), &mf, 4);
					else
						*(int8_t *)(void *)at(out, n, c, y, x) = (int8_t)mi;
				}
}

/* An average pool is a depthwise convolution with 1/(R*S) weights wt ({C, 1, R, S}). */
static int avg_conv_desc(const struct accel_pool2d_desc *d, const struct accel_tensor *wt,
			 struct accel_conv2d_desc *cd)
{
	memset(cd, 0, sizeof(*cd));
	cd->input = d->input;
	cd->output = d->output;
	cd->weights = wt;
	cd->stride_h = d->stride_h;
	cd->stride_w = d->stride_w;
	cd->pad_top = d->pad_top;
	cd->pad_left = d->pad_left;
	cd->pad_bottom = d->pad_bottom;
	cd->pad_right = d->pad_right;
	cd->dil_h = cd->dil_w = 1;
	cd->groups = d->input->shape[1];
	if (d->input->dtype != ACCEL_FP32) {
		if (d->multiplier) {
			cd->epi.multiplier = d->multiplier;
			cd->epi.shift = d->shift;
		} else {
			return accel_quant_from_scale(1.0 / ((double)d->win_h * d->win_w), &cd->epi.multiplier,
						      &cd->epi.shift);
		}
	}
	return 0;
}

/* accel_op_supported's check of a pool (dev->query set): accel_pool2d's own checks, then for AVG the
 * depthwise convolution's validation (which accel_pool2d runs in conv_lower) on shape-only weights.  MAX
 * always runs (the vector units, else the host). */
int pool2d_validate(struct accel_dev *dev, const struct accel_pool2d_desc *d)
{
	struct accel_buffer shape_only = { .dev = dev };
	struct accel_conv2d_desc cd;
	struct accel_tensor wt;
	uint32_t oh, ow;
	int ret;

	ret = pool_check(dev, d, &oh, &ow);
	if (ret || d->kind != ACCEL_POOL_AVG)	/* MAX, AVG_EXCL_PAD: the vector units, else the host */
		return ret;
	ret = accel_tensor_4d(&shape_only, 0, d->input->dtype, d->input->layout, d->input->shape[1], 1, d->win_h,
			      d->win_w, &wt);
	if (ret)
		return ret;
	wt.buf = NULL;
	ret = avg_conv_desc(d, &wt, &cd);
	if (ret)
		return accel_seterr(dev, ret, "pool2d: no requantisation for a %ux%u window", d->win_h, d->win_w);
	ret = conv2d_validate(dev, &cd);
	if (ret) {
		char why[sizeof(dev->err)];

		snprintf(why, sizeof(why), "%s", dev->err);
		return accel_seterr(dev, ret, "pool2d (average as a depthwise convolution): %s", why);
	}
	return 0;
}

/*
 * An fp32 global average pool of a packed NHWC image is, per image, the GEMM [1 x H*W] x [H*W x C]
 * with A = 1/(H*W): B is the image as stored, one row per pixel.  The depthwise-convolution form takes
 * the whole map as one H x W window, which on NHWC runs at ~0.1 % of the array on large maps
 * (EfficientNet-B0's 112x112x32 squeeze-and-excite pool: 482 108 cycles; the GEMM 15 628, DMA-bound);
 * but on small maps it is often faster (7x7x512, ResNet-18's: 517 against 649; 56x56x16: 3 260
 * against 4 485) and erratic from 14x14 up (28x28x120: 107 311 against 1 702; 14x14x672: 190 439
 * against 1 797).  conv_dw_est() does not see that (3 712 estimated for the 112x112x32 pool), so the
 * choice is by the measured rule: the GEMM from a 14x14 map on (Documentation/libaccel.md, "Lowering").
 * Every output is still the sum of x * (1/(H*W)) in fp32.
 */
static bool global_avg_nhwc_ok(const struct accel_pool2d_desc *d)
{
	const struct accel_tensor *in = d->input, *out = d->output;
	int64_t C = in->shape[1];

	return d->kind == ACCEL_POOL_AVG && in->dtype == ACCEL_FP32 && in->layout == ACCEL_LAYOUT_NHWC &&
	       d->win_h == in->shape[2] && d->win_w == in->shape[3] && !d->pad_top && !d->pad_left &&
	       !d->pad_bottom && !d->pad_right && in->strides[1] == 4 && in->strides[3] == 4 * C &&
	       in->strides[2] == in->strides[3] * in->shape[3] && out->strides[1] == 4;
}

/*
 * Below 14x14 the depthwise form stays where the depthwise block takes it; where it does not (a
 * channel count it cannot split, e.g. SqueezeNet's 13x13x1000 class map: 255 246 cycles, per-channel
 * problems on the direct lowering; 13x13x520: 132 846, 13x13x1008: 257 286, while 13x13x1024 on the
 * block takes 2 832) the GEMM does (13x13x1000: 2 020, 7x7x1000: 877 against 3 459).  cd: the pool as
 * a depthwise convolution.
 */
static bool global_avg_gemm(struct accel_dev *dev, const struct accel_pool2d_desc *d,
			    const struct accel_conv2d_desc *cd)
{
	const struct accel_tensor *in = d->input;
	struct accel_cmdstream cs;
	struct mm_problem p;
	struct mm_ctx x;
	bool gemm;

	if (!global_avg_nhwc_ok(d))
		return false;
	if ((uint64_t)in->shape[2] * in->shape[3] >= 14 * 14)
		return true;
	cs_init(&cs, dev);
	mm_ctx_init(&x, dev, &cs);
	gemm = !conv_prepare(dev, &x, cd, &p) && !conv_dw_takes(dev, &x, cd, &p);
	cs_fini(&cs);
	return gemm;
}

/* Image n's GEMM, A (1/(H*W) in each of H*W elements) at a_buf. */
static int global_avg_problem(struct accel_dev *dev, const struct accel_pool2d_desc *d, struct accel_buffer *a_buf,
			      uint32_t n, struct mm_problem *p)
{
	const struct accel_tensor *in = d->input, *out = d->output;
	uint32_t C = in->shape[1], HW = in->shape[2] * in->shape[3];
	struct accel_epilogue epi;

	memset(p, 0, sizeof(*p));
	memset(&epi, 0, sizeof(epi));
	p->M = 1;
	p->N = C;
	p->K = HW;
	p->f32 = true;
	p->a.kind = MM_MAT;
	p->a.buf = a_buf;
	p->a.va = a_buf->va;
	p->a.pitch = (uint64_t)HW * 4;
	p->b.kind = MM_MAT;
	p->b.buf = in->buf;
	p->b.va = in->buf->va + in->offset + (uint64_t)n * (uint64_t)in->strides[0];
	p->b.pitch = (uint64_t)C * 4;
	p->c_buf = out->buf;
	p->c_va = out->buf->va + out->offset + (uint64_t)n * (uint64_t)out->strides[0];
	p->c_pitch = (uint64_t)C * 4;
	return epi_setup(dev, &epi, true, ACCEL_FP32, C, p);
}

static int global_avg_nhwc(struct accel_dev *dev, const struct accel_pool2d_desc *d, const struct accel_submit *sub,
			   struct accel_job **job)
{
	uint32_t N = d->input->shape[0], HW = d->input->shape[2] * d->input->shape[3];
	struct accel_cmdstream cs;
	struct accel_buffer *w = NULL;
	struct mm_problem p;
	struct mm_ctx x;
	int ret;

	ret = accel_buffer_alloc(dev, (uint64_t)HW * 4, &w);
	if (ret)
		return ret;
	for (uint32_t i = 0; i < HW; i++)
		((float *)w->ptr)[i] = 1.0f / (float)HW;
	cs_init(&cs, dev);
	cs_use(&cs, w);
	cs_use(&cs, d->input->buf);
	cs_use(&cs, d->output->buf);
	mm_ctx_init(&x, dev, &cs);
	for (uint32_t n = 0; n < N && !ret; n++)
		if (!(ret = global_avg_problem(dev, d, w, n, &p)))
			ret = mm_emit(&x, &p);
	return accel_op_submit(dev, &cs, ret, sub, &w, 1, job);
}

int accel_pool2d(struct accel_dev *dev, const struct accel_pool2d_desc *d, const struct accel_submit *sub,
		 struct accel_job **job)
{
	struct accel_buffer *w = NULL;
	struct accel_tensor wt;
	struct accel_conv2d_desc cd;
	struct accel_cmdstream cs;
	struct mm_ctx x;
	struct accel_job *j;
	uint32_t oh = 0, ow = 0, C, RS;
	bool f32;
	int ret;

	ret = accel_op_begin(dev, d, "accel_pool2d", job);
	if (ret)
		return ret;
	ret = pool_check(dev, d, &oh, &ow);
	if (ret)
		return ret;
	f32 = d->input->dtype == ACCEL_FP32;
	if (d->kind == ACCEL_POOL_MAX || d->kind == ACCEL_POOL_AVG_EXCL_PAD) {
		/* ISA 2: a max (or fp32 average over the valid taps) over windows on the vector units */
		ret = accel_pool_vec(dev, d, oh, ow, sub, job);
		if (ret <= 0)
			return ret;
		ret = sub_wait(dev, sub);
		if (ret)
			return ret;
		pool_host(d, oh, ow);
		ret = accel_job_new(dev, 1, &j);
		if (ret)
			return ret;
		j->status = 0;
		return accel_op_finish(dev, j, job);
	}
	C = d->input->shape[1];
	RS = d->win_h * d->win_w;
	ret = accel_buffer_alloc(dev, (uint64_t)C * RS * (f32 ? 4 : 1), &w);
	if (ret)
		return ret;
	for (uint64_t i = 0; i < (uint64_t)C * RS; i++) {
		if (f32)
			((float *)w->ptr)[i] = 1.0f / (float)RS;
		else
			((int8_t *)w->ptr)[i] = 1;
	}
	ret = accel_tensor_4d(w, 0, d->input->dtype, d->input->layout, C, 1, d->win_h, d->win_w, &wt);
	if (ret) {
		accel_buffer_free(w);
		return ret;
	}
	ret = avg_conv_desc(d, &wt, &cd);
	if (!ret && global_avg_gemm(dev, d, &cd)) {
		accel_buffer_free(w);
		return global_avg_nhwc(dev, d, sub, job);
	}
	cs_init(&cs, dev);
	cs_use(&cs, w);
	mm_ctx_init(&x, dev, &cs);
	if (!ret)
		ret = conv_lower(dev, &x, &cd);
	return accel_op_submit(dev, &cs, ret, sub, &w, 1, job);
}
