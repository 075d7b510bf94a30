/* SPDX-License-Identifier: MIT */
/* attr.c - node attributes and the Conv/pooling window geometry (pads, strides, dilations, auto_pad). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

const Onnx__AttributeProto *attr_find(const Onnx__NodeProto *n, const char *name)
{
	for (size_t i = 0; i < n->n_attribute; i++)
		if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name))
			return n->attribute[i];
	return NULL;
}

int64_t attr_int(const Onnx__NodeProto *n, const char *name, int64_t def)
{
	const Onnx__AttributeProto *a = attr_find(n, name);

	return a && a->has_i ? a->i : def;
}

float attr_float(const Onnx__NodeProto *n, const char *name, float def)
{
	const Onnx__AttributeProto *a = attr_find(n, name);

	return a && a->has_f ? a->f : def;
}

const char *attr_string(const Onnx__NodeProto *n, const char *name, char *buf, size_t len, const char *def)
{
	const Onnx__AttributeProto *a = attr_find(n, name);

	if (!a || !a->has_s)
		return def;
	snprintf(buf, len, "%.*s", (int)a->s.len, (const char *)a->s.data);
	return buf;
}

int attr_ints(const Onnx__NodeProto *n, const char *name, int64_t *out, int max)
{
	const Onnx__AttributeProto *a = attr_find(n, name);

	if (!a)
		return -1;
	for (size_t i = 0; i < a->n_ints && (int)i < max; i++)
		out[i] = a->ints[i];
	return (int)a->n_ints;
}

int node_err(const struct onnx_ctx *c, int err, const char *fmt, ...)
{
	const Onnx__NodeProto *p = c->n->pb;
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return ctx_seterr(c, err, "node '%s' (%s): %s", p->name && p->name[0] ? p->name : p->output[0],
			   c->n->op_name ? c->n->op_name : p->op_type, msg);
}

/* a + b + c; false when int64 would overflow.  Shapes are bounded at load (tnpu_onnx.h, "Limits"),
 * so real windows never get here; the checks keep a shape that slipped past them from wrapping. */
static bool add3(int64_t a, int64_t b, int64_t c, int64_t *r)
{
	return !__builtin_add_overflow(a, b, r) && !__builtin_add_overflow(*r, c, r);
}

static bool mul_add(int64_t a, int64_t b, int64_t c, int64_t *r)
{
	return !__builtin_mul_overflow(a, b, r) && !__builtin_add_overflow(*r, c, r);
}

/* Output positions of a window of span over in (padded) with stride s; -1 on overflow. */
/* (k - 1) * dilation + 1: at most 2^47 within win_resolve's bounds. */
static int64_t span_of(int64_t k, int64_t dl)
{
	return (k - 1) * dl + 1;
}

static int64_t out_size(int64_t in, int64_t span, int64_t s, bool ceil_mode)
{
	int64_t num, q;

	if (__builtin_sub_overflow(in, span, &num))
		return -1;
	if (num < 0)
		return 0;
	if (!ceil_mode)
		q = num / s;
	else if (!add3(num, s, -1, &q))
		return -1;
	else
		q /= s;
	return q + 1;
}

int win_resolve(const struct onnx_ctx *c, unsigned spatial, int64_t h, int64_t w, int64_t kh, int64_t kw,
		bool ceil_mode, struct win2d *o)
{
	const Onnx__NodeProto *n = c->n->pb;
	int64_t st[2] = { 1, 1 }, dl[2] = { 1, 1 }, pd[4] = { 0, 0, 0, 0 };
	int64_t in[2] = { h, w }, k[2] = { kh, kw }, out[2], pb[2], pe[2];
	unsigned off = spatial == 1 ? 1 : 0;	/* 1-D: the attributes describe W; H is 1 */
	char buf[32];
	const char *ap = attr_string(n, "auto_pad", buf, sizeof(buf), "NOTSET");
	int cnt;

	if ((cnt = attr_ints(n, "strides", st + off, 2)) >= 0 && cnt != (int)spatial)
		return node_err(c, -EINVAL, "strides has %d values, expected %u", cnt, spatial);
	if ((cnt = attr_ints(n, "dilations", dl + off, 2)) >= 0 && cnt != (int)spatial)
		return node_err(c, -EINVAL, "dilations has %d values, expected %u", cnt, spatial);
	if ((cnt = attr_ints(n, "pads", pd, 4)) >= 0) {
		if (cnt != 2 * (int)spatial)
			return node_err(c, -EINVAL, "pads has %d values, expected %u", cnt, 2 * spatial);
		if (spatial == 1) {
			pd[3] = pd[1];
			pd[1] = pd[0];
			pd[0] = pd[2] = 0;
		}
	}
	for (int i = 0; i < 4; i++)	/* a zero Pad folded into this node at load time (fold.c) */
		if (__builtin_add_overflow(pd[i], c->n->extra_pads[i], &pd[i]))
			return node_err(c, -EINVAL, "pads out of range");
	memset(o, 0, sizeof(*o));
	for (int i = 0; i < 2; i++) {
		int64_t span, padded;

		if (in[i] < 0 || in[i] > ONNX_MAX_DIM_SIZE)
			return node_err(c, -EINVAL, "spatial dimension %d is %lld (0 to %d)", i + 2 - (int)off,
					(long long)in[i], ONNX_MAX_DIM_SIZE);
		if (st[i] < 1 || dl[i] < 1 || k[i] < 1)
			return node_err(c, -EINVAL, "strides, dilations and kernel must be >= 1");
		/* bounds that keep every sum below in int64 (real models are far inside them) */
		if (st[i] > (1LL << 31) || dl[i] > (1LL << 16) || k[i] > (1LL << 31) || pd[i] > (1LL << 31) ||
		    pd[i + 2] > (1LL << 31))
			return node_err(c, -EINVAL, "strides, dilations, kernel or pads out of range");
		if (!mul_add(k[i] - 1, dl[i], 1, &span))
			return node_err(c, -EINVAL, "kernel and dilations out of range");
		if (!strcmp(ap, "NOTSET")) {
			pb[i] = pd[i];
			pe[i] = pd[i + 2];
			if (pb[i] < 0 || pe[i] < 0)
				return node_err(c, -EINVAL, "negative pads");
			if (!add3(in[i], pb[i], pe[i], &padded))
				return node_err(c, -EINVAL, "padded input out of range");
			out[i] = out_size(padded, span, st[i], ceil_mode);
			/* ceil_mode: the last window must start inside the input or its leading padding */
			if (ceil_mode && out[i] > 1 && (out[i] - 1) * st[i] >= in[i] + pb[i])
				out[i]--;
		} else if (!strcmp(ap, "VALID")) {
			pb[i] = pe[i] = 0;
			out[i] = out_size(in[i], span, st[i], false);
		} else if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
			int64_t total;

			if (!add3(in[i], st[i], -1, &out[i]))
				return node_err(c, -EINVAL, "input or strides out of range");
			out[i] /= st[i];
			if (!mul_add(out[i] - 1, st[i], span - in[i], &total))
				return node_err(c, -EINVAL, "window out of range");
			if (total < 0)
				total = 0;
			pb[i] = !strcmp(ap, "SAME_UPPER") ? total / 2 : total - total / 2;
			pe[i] = total - pb[i];
		} else {
			return node_err(c, -EINVAL, "unknown auto_pad '%s'", ap);
		}
		if (out[i] < 0)
			return node_err(c, -EINVAL, "window arithmetic out of range");
		if (out[i] < 1)
			return node_err(c, -EINVAL, "window larger than the padded input");
	}
	o->kh = k[0];
	o->kw = k[1];
	o->sh = st[0];
	o->sw = st[1];
	o->dh = dl[0];
	o->dw = dl[1];
	o->pt = pb[0];
	o->pl = pb[1];
	o->pb = pe[0];
	o->pr = pe[1];
	o->oh = out[0];
	o->ow = out[1];
	for (int i = 0; i < 2; i++) {
		int64_t end, padded, extra;

		/* the last window's end past the padded input: (out - 1) * stride + span - padded */
		if (!mul_add(out[i] - 1, st[i], span_of(k[i], dl[i]), &end) || !add3(in[i], pb[i], pe[i], &padded) ||
		    __builtin_sub_overflow(end, padded, &extra))
			return node_err(c, -EINVAL, "window arithmetic out of range");
		if (extra > 0)
			*(i ? &o->ceil_extra_w : &o->ceil_extra_h) = extra;
	}
	return 0;
}
