/* SPDX-License-Identifier: MIT */
/*
 * vec_rows.c - the vector units' row operations: accel_softmax, accel_log_softmax, accel_layernorm and
 * accel_reduce (each row of a matrix reduced or normalised in its chunk, with per-row scratch), as
 * sequences of VEC REDUCE, BINARY and MAP commands (Documentation/libaccel.md "Vector-unit operations").
 */
#include <math.h>
#include <string.h>

#include "epilogue.h"
#include "vec_lower.h"
#include "vec_ops.h"

/* ---- accel_softmax / accel_layernorm: row chunks with per-row scratch ---------------------- */

/* A REDUCE of in-place operand p (rows of the chunk) into scratch at `to` (ARGMAX/ARGMIN: INT32, vflags
 * LAST or 0; the scale only for SUM and SUMSQ). */
static void reduce_rows_vf(struct accel_cmdstream *cs, const struct vx_chunk *c, const struct vx_place *p, uint8_t fn,
			   float scale, uint32_t to, unsigned flags, uint8_t vf)
{
	bool arg = fn == TNPU_VEC_RED_ARGMAX || fn == TNPU_VEC_RED_ARGMIN;
	struct tnpu_cmd_vec v = vx_cmd(TNPU_VEC_REDUCE, fn, TNPU_DTYPE_FP32, arg ? TNPU_DTYPE_INT32 : TNPU_DTYPE_FP32);

	for (int k = 0; k < 3; k++) {
		v.n[k] = c->sz[k];
		v.a_st[k] = p->st[k];
	}
	v.d_st[2] = 4;
	v.d_st[1] = (int32_t)(4 * c->sz[2]);
	v.d_st[0] = (int32_t)(4 * c->sz[2] * c->sz[1]);
	v.a_off = p->off;
	v.d_off = to;
	v.win.red.red_len = c->sz[3];
	v.win.red.red_st = p->st[3];
	v.scale = fn == TNPU_VEC_RED_SUM || fn == TNPU_VEC_RED_SUMSQ ? vx_f32(scale) : 0;
	v.vflags = vf;
	v.row = (uint8_t)c->row;
	v.half = (uint8_t)c->half;
	v.hdr.flags = (uint8_t)flags;
	cs_raw(cs, &v, sizeof(v));
}

static void reduce_rows(struct accel_cmdstream *cs, const struct vx_chunk *c, const struct vx_place *p, uint8_t fn,
			float scale, uint32_t to, unsigned flags)
{
	reduce_rows_vf(cs, c, p, fn, scale, to, flags, 0);
}

/* d = f(a) over the chunk's whole box, a and d placements (in place when they are one). */
static void map_box(struct accel_cmdstream *cs, const struct vx_chunk *c, uint8_t fn, const struct vx_place *a,
		    const struct vx_place *d, unsigned flags)
{
	struct tnpu_cmd_vec v = vx_cmd(TNPU_VEC_MAP, fn, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);

	for (int k = 0; k < 4; k++) {
		v.n[k] = c->sz[k];
		v.a_st[k] = a->st[k];
		v.d_st[k] = d->st[k];
	}
	v.a_off = a->off;
	v.d_off = d->off;
	v.scale = vx_f32(1.0f);
	v.row = (uint8_t)c->row;
	v.half = (uint8_t)c->half;
	v.hdr.flags = (uint8_t)flags;
	cs_raw(cs, &v, sizeof(v));
}

/* d = a op b over the chunk's per-row values (units of dims 0..2, packed fp32 at the offsets). */
static void bin_units(struct accel_cmdstream *cs, const struct vx_chunk *c, uint8_t fn, uint32_t a, uint32_t b,
		      uint32_t d, unsigned flags)
{
	struct tnpu_cmd_vec v = vx_cmd(TNPU_VEC_BINARY, fn, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);

	v.n[3] = c->sz[0] * c->sz[1] * c->sz[2];
	v.a_st[3] = v.b_st[3] = v.d_st[3] = 4;
	v.a_off = a;
	v.b_off = b;
	v.d_off = d;
	v.row = (uint8_t)c->row;
	v.half = (uint8_t)c->half;
	v.hdr.flags = (uint8_t)flags;
	cs_raw(cs, &v, sizeof(v));
}

/* d = a op b, b either the per-row scratch at `s` (bp NULL) or an operand placement. */
static void bin_rows(struct accel_cmdstream *cs, const struct vx_chunk *c, uint8_t fn, const struct vx_place *a,
		     const struct vx_place *bp, uint32_t s, const struct vx_place *d, unsigned flags)
{
	struct tnpu_cmd_vec v = vx_cmd(TNPU_VEC_BINARY, fn, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);

	for (int k = 0; k < 4; k++) {
		v.n[k] = c->sz[k];
		v.a_st[k] = a->st[k];
		v.d_st[k] = d->st[k];
		v.b_st[k] = bp ? bp->st[k] : 0;
	}
	if (!bp) {
		v.b_st[2] = 4;
		v.b_st[1] = (int32_t)(4 * c->sz[2]);
		v.b_st[0] = (int32_t)(4 * c->sz[2] * c->sz[1]);
	}
	v.a_off = a->off;
	v.b_off = bp ? bp->off : s;
	v.d_off = d->off;
	v.row = (uint8_t)c->row;
	v.half = (uint8_t)c->half;
	v.hdr.flags = (uint8_t)flags;
	cs_raw(cs, &v, sizeof(v));
}

/* y = f(x*scale + bias) over n elements of the chunk: the whole out box (rows = false) or the
 * per-row scratch at s (rows = true). */
static void map_rows(struct accel_cmdstream *cs, const struct vx_chunk *c, uint8_t fn, float bias, bool rows,
		     uint32_t s, unsigned flags)
{
	struct tnpu_cmd_vec v = vx_cmd(TNPU_VEC_MAP, fn, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);

	if (rows) {
		v.n[3] = c->sz[0] * c->sz[1] * c->sz[2];
		v.a_st[3] = v.d_st[3] = 4;
		v.a_off = v.d_off = s;
	} else {
		for (int k = 0; k < 4; k++) {
			v.n[k] = c->sz[k];
			v.a_st[k] = v.d_st[k] = c->out.st[k];
		}
		v.a_off = v.d_off = c->out.off;
	}
	v.scale = vx_f32(1.0f);
	v.bias = vx_f32(bias);
	v.row = (uint8_t)c->row;
	v.half = (uint8_t)c->half;
	v.hdr.flags = (uint8_t)flags;
	cs_raw(cs, &v, sizeof(v));
}

static uint32_t units_of(const struct vx_chunk *c)
{
	return c->sz[0] * c->sz[1] * c->sz[2];
}

static void softmax_emit(struct accel_cmdstream *cs, const struct vx_job *j, const struct vx_chunk *c, unsigned f)
{
	uint32_t m = c->scratch, s = c->scratch + 4 * units_of(c);

	(void)j;
	reduce_rows(cs, c, &c->in[0], TNPU_VEC_RED_MAX, 1.0f, m, f);
	bin_rows(cs, c, TNPU_VEC_SUB, &c->in[0], NULL, m, &c->out, f);
	map_rows(cs, c, TNPU_VEC_EXP, 0.0f, false, 0, f);
	reduce_rows(cs, c, &c->out, TNPU_VEC_RED_SUM, 1.0f, s, f);
	map_rows(cs, c, TNPU_VEC_RECIP, 0.0f, true, s, f);
	bin_rows(cs, c, TNPU_VEC_MUL, &c->out, NULL, s, &c->out, f);
}

/* (x - m) - ln sum exp(x - m): the exponentials go into the input's own (loaded) box, the result stays
 * exact where softmax's would round to 0 (log of a tiny probability). */
static void log_softmax_emit(struct accel_cmdstream *cs, const struct vx_job *j, const struct vx_chunk *c, unsigned f)
{
	uint32_t m = c->scratch, s = c->scratch + 4 * units_of(c);

	(void)j;
	reduce_rows(cs, c, &c->in[0], TNPU_VEC_RED_MAX, 1.0f, m, f);
	bin_rows(cs, c, TNPU_VEC_SUB, &c->in[0], NULL, m, &c->out, f);
	map_box(cs, c, TNPU_VEC_EXP, &c->out, &c->in[0], f);
	reduce_rows(cs, c, &c->in[0], TNPU_VEC_RED_SUM, 1.0f, s, f);
	map_rows(cs, c, TNPU_VEC_LOG, 0.0f, true, s, f);
	bin_rows(cs, c, TNPU_VEC_SUB, &c->out, NULL, s, &c->out, f);
}

static int rows_arg(struct accel_dev *dev, const struct accel_tensor *in, const struct accel_tensor *out,
		    const char *what)
{
	int ret;

	if ((ret = arg_tensor(dev, in, "input")) || (ret = arg_tensor(dev, out, "output")))
		return ret;
	if ((ret = vx_need(dev, what)))
		return ret;
	if (in->ndim != 2 || out->ndim != 2 || in->dtype != ACCEL_FP32 || out->dtype != ACCEL_FP32 ||
	    in->shape[0] != out->shape[0] || in->shape[1] != out->shape[1])
		return accel_seterr(dev, -EINVAL, "%s: input and output must be 2-D FP32 of the same shape", what);
	return 0;
}

static void rows_job(struct vx_job *j, const struct accel_tensor *in, const struct accel_tensor *out)
{
	vx_job_init(j, out);
	j->n_in = 1;
	vx_opnd_of(in, &j->in[0]);
	j->keep_last = true;
	j->extra_per_unit = 8;
	/* the reduction axis keeps its stride even when it has one element */
	j->out.st[3] = (uint64_t)out->strides[1];
	j->in[0].st[3] = (uint64_t)in->strides[1];
}

/* Everything accel_softmax checks before it lowers (accel_op_supported asks the same). */
int softmax_validate(struct accel_dev *dev, const struct accel_softmax_desc *d)
{
	return rows_arg(dev, d->input, d->output, "accel_softmax");
}

int accel_softmax(struct accel_dev *dev, const struct accel_softmax_desc *d, const struct accel_submit *sub,
		  struct accel_job **job)
{
	const struct accel_tensor *ts[2];
	struct vx_job j;
	int ret;

	ret = accel_op_begin(dev, d, "accel_softmax", job);
	if (ret)
		return ret;
	if ((ret = softmax_validate(dev, d)))
		return ret;
	rows_job(&j, d->input, d->output);
	j.emit = softmax_emit;
	j.tmpl = vx_cmd(TNPU_VEC_MAP, TNPU_VEC_COPY, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);
	ts[0] = d->input;
	ts[1] = d->output;
	return vx_run(dev, &j, ts, 2, NULL, 0, sub, job);
}

int accel_log_softmax(struct accel_dev *dev, const struct accel_softmax_desc *d, const struct accel_submit *sub,
		      struct accel_job **job)
{
	const struct accel_tensor *ts[2];
	struct vx_job j;
	int ret;

	ret = accel_op_begin(dev, d, "accel_log_softmax", job);
	if (ret)
		return ret;
	if ((ret = rows_arg(dev, d->input, d->output, "accel_log_softmax")) || (ret = vm_need(dev, "accel_log_softmax")))
		return ret;
	rows_job(&j, d->input, d->output);
	j.emit = log_softmax_emit;
	j.tmpl = vx_cmd(TNPU_VEC_MAP, TNPU_VEC_COPY, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);
	ts[0] = d->input;
	ts[1] = d->output;
	return vx_run(dev, &j, ts, 2, NULL, 0, sub, job);
}

/* One REDUCE, or (VEC math) a MAP before it (L1: |x|) or after it (L2: sqrt, LOGSUM: ln), or LOGSUMEXP's
 * max + ln sum exp(x - max) with the exponentials in the input's loaded box. */
static void reduce_emit(struct accel_cmdstream *cs, const struct vx_job *j, const struct vx_chunk *c, unsigned f)
{
	const struct accel_reduce_desc *d = j->ctx;
	static const uint8_t fn[] = {
		[ACCEL_REDUCE_SUM] = TNPU_VEC_RED_SUM,	    [ACCEL_REDUCE_MEAN] = TNPU_VEC_RED_SUM,
		[ACCEL_REDUCE_MAX] = TNPU_VEC_RED_MAX,	    [ACCEL_REDUCE_SUMSQ] = TNPU_VEC_RED_SUMSQ,
		[ACCEL_REDUCE_MIN] = TNPU_VEC_RED_MIN,	    [ACCEL_REDUCE_PROD] = TNPU_VEC_RED_PROD,
		[ACCEL_REDUCE_L1] = TNPU_VEC_RED_SUM,	    [ACCEL_REDUCE_L2] = TNPU_VEC_RED_SUMSQ,
		[ACCEL_REDUCE_LOGSUM] = TNPU_VEC_RED_SUM,   [ACCEL_REDUCE_LOGSUMEXP] = TNPU_VEC_RED_MAX,
		[ACCEL_REDUCE_ARGMAX] = TNPU_VEC_RED_ARGMAX, [ACCEL_REDUCE_ARGMIN] = TNPU_VEC_RED_ARGMIN,
		[ACCEL_REDUCE_ARGMAX_LAST] = TNPU_VEC_RED_ARGMAX, [ACCEL_REDUCE_ARGMIN_LAST] = TNPU_VEC_RED_ARGMIN,
	};
	bool last = d->op == ACCEL_REDUCE_ARGMAX_LAST || d->op == ACCEL_REDUCE_ARGMIN_LAST;
	uint32_t o = c->out.off;

	if (d->op == ACCEL_REDUCE_L1)
		map_box(cs, c, TNPU_VEC_ABS, &c->in[0], &c->in[0], f);
	reduce_rows_vf(cs, c, &c->in[0], fn[d->op], d->op == ACCEL_REDUCE_MEAN ? 1.0f / (float)c->sz[3] : 1.0f, o, f,
		       last ? TNPU_VEC_F_LAST : 0);
	if (d->op == ACCEL_REDUCE_L2)
		map_rows(cs, c, TNPU_VEC_SQRT, 0.0f, true, o, f);
	if (d->op == ACCEL_REDUCE_LOGSUM)
		map_rows(cs, c, TNPU_VEC_LOG, 0.0f, true, o, f);
	if (d->op == ACCEL_REDUCE_LOGSUMEXP) {
		bin_rows(cs, c, TNPU_VEC_SUB, &c->in[0], NULL, o, &c->in[0], f);
		map_box(cs, c, TNPU_VEC_EXP, &c->in[0], &c->in[0], f);
		reduce_rows(cs, c, &c->in[0], TNPU_VEC_RED_SUM, 1.0f, c->scratch, f);
		map_rows(cs, c, TNPU_VEC_LOG, 0.0f, true, c->scratch, f);
		bin_units(cs, c, TNPU_VEC_ADD, o, c->scratch, o, f);
	}
}

int accel_reduce(struct accel_dev *dev, const struct accel_reduce_desc *d, const struct accel_submit *sub,
		 struct accel_job **job)
{
	const struct accel_tensor *ts[2];
	const struct accel_tensor *in, *out;
	struct vx_job j;
	bool arg;
	int ret;

	ret = accel_op_begin(dev, d, "accel_reduce", job);
	if (ret)
		return ret;
	in = d->input;
	out = d->output;
	if ((ret = arg_tensor(dev, in, "input")) || (ret = arg_tensor(dev, out, "output")))
		return ret;
	if ((ret = vx_need(dev, "accel_reduce")))
		return ret;
	if ((unsigned)d->op > ACCEL_REDUCE_ARGMIN_LAST)
		return accel_seterr(dev, -EINVAL, "reduce: unknown op %d", (int)d->op);
	arg = d->op >= ACCEL_REDUCE_ARGMAX;
	if (in->ndim != 2 || out->ndim != 2 || in->dtype != ACCEL_FP32 || out->dtype != (arg ? ACCEL_INT32 : ACCEL_FP32) ||
	    out->shape[0] != in->shape[0] || out->shape[1] != 1)
		return accel_seterr(dev, -EINVAL, "reduce: a 2-D FP32 input (rows x cols) and a rows x 1 %s output",
				    arg ? "INT32" : "FP32");
	if (d->op > ACCEL_REDUCE_SUMSQ && (ret = vm_need(dev, "accel_reduce")))
		return ret;
	vx_job_init(&j, in);
	vx_opnd_of(out, &j.out);	/* broadcast along the reduced axis: one element per row */
	j.n_in = 1;
	vx_opnd_of(in, &j.in[0]);
	j.in[0].st[3] = (uint64_t)in->strides[1];
	j.keep_last = true;
	j.extra_per_unit = d->op == ACCEL_REDUCE_LOGSUMEXP ? 4 : 0;
	j.emit = reduce_emit;
	j.ctx = d;
	j.tmpl = vx_cmd(TNPU_VEC_MAP, TNPU_VEC_COPY, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);
	ts[0] = in;
	ts[1] = out;
	return vx_run(dev, &j, ts, 2, NULL, 0, sub, job);
}

static void layernorm_emit(struct accel_cmdstream *cs, const struct vx_job *j, const struct vx_chunk *c, unsigned f)
{
	const struct accel_layernorm_desc *d = j->ctx;
	uint32_t m = c->scratch, v = c->scratch + 4 * units_of(c);
	float invL = 1.0f / (float)c->sz[3];

	reduce_rows(cs, c, &c->in[0], TNPU_VEC_RED_SUM, invL, m, f);
	bin_rows(cs, c, TNPU_VEC_SUB, &c->in[0], NULL, m, &c->out, f);
	reduce_rows(cs, c, &c->out, TNPU_VEC_RED_SUMSQ, invL, v, f);
	map_rows(cs, c, TNPU_VEC_RSQRT, d->epsilon, true, v, f);
	bin_rows(cs, c, TNPU_VEC_MUL, &c->out, NULL, v, &c->out, f);
	if (d->gamma)
		bin_rows(cs, c, TNPU_VEC_MUL, &c->out, &c->in[1], 0, &c->out, f);
	if (d->beta)
		bin_rows(cs, c, TNPU_VEC_ADD, &c->out, &c->in[d->gamma ? 2 : 1], 0, &c->out, f);
}

static int vec_arg(struct accel_dev *dev, const struct accel_tensor *t, uint32_t L, const char *what,
		   struct vx_opnd *o)
{
	int ret = arg_tensor(dev, t, what);

	if (ret)
		return ret;
	if (t->ndim != 2 || t->dtype != ACCEL_FP32 || (uint64_t)t->shape[0] * t->shape[1] != L ||
	    (t->shape[0] != 1 && t->shape[1] != 1))
		return accel_seterr(dev, -EINVAL, "layernorm: %s must be a 1 x %u (or %u x 1) FP32 vector", what, L, L);
	memset(o, 0, sizeof(*o));
	o->va = tensor_addr(t);
	o->e = 4;
	o->st[3] = (uint64_t)(t->shape[1] != 1 ? t->strides[1] : t->strides[0]);
	return 0;
}

/* Everything accel_layernorm checks before it lowers (accel_op_supported asks the same). */
int layernorm_validate(struct accel_dev *dev, const struct accel_layernorm_desc *d)
{
	struct vx_opnd o;
	int ret;

	if ((ret = rows_arg(dev, d->input, d->output, "accel_layernorm")))
		return ret;
	if (!(d->epsilon >= 0) || isinf(d->epsilon))
		return accel_seterr(dev, -EINVAL, "layernorm: epsilon %g: must be finite and >= 0", (double)d->epsilon);
	if (d->gamma && (ret = vec_arg(dev, d->gamma, d->input->shape[1], "gamma", &o)))
		return ret;
	if (d->beta && (ret = vec_arg(dev, d->beta, d->input->shape[1], "beta", &o)))
		return ret;
	return 0;
}

int accel_layernorm(struct accel_dev *dev, const struct accel_layernorm_desc *d, const struct accel_submit *sub,
		    struct accel_job **job)
{
	const struct accel_tensor *ts[4];
	struct vx_job j;
	int ret;

	ret = accel_op_begin(dev, d, "accel_layernorm", job);
	if (ret)
		return ret;
	if ((ret = layernorm_validate(dev, d)))
		return ret;
	rows_job(&j, d->input, d->output);
	if (d->gamma && (ret = vec_arg(dev, d->gamma, d->input->shape[1], "gamma", &j.in[j.n_in++])))
		return ret;
	if (d->beta && (ret = vec_arg(dev, d->beta, d->input->shape[1], "beta", &j.in[j.n_in++])))
		return ret;
	j.emit = layernorm_emit;
	j.ctx = d;
	j.tmpl = vx_cmd(TNPU_VEC_MAP, TNPU_VEC_COPY, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);
	ts[0] = d->input;
	ts[1] = d->output;
	ts[2] = d->gamma;
	ts[3] = d->beta;
	return vx_run(dev, &j, ts, 4, NULL, 0, sub, job);
}
