/* SPDX-License-Identifier: MIT */
/*
 * cmodel_save.c - the compiled-model file writer (onnx_compiled_save; the format: cmodel_file.h,
 * Documentation/onnx.md "Compiled-model files").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmodel_file.h"

struct wbuf {
	uint8_t *p;
	size_t n, cap;
	bool oom;
};

static void put(struct wbuf *w, const void *src, size_t n)
{
	if (w->oom || !n)
		return;
	if (w->n + n > w->cap) {
		size_t cap = w->cap ? w->cap : 4096;
		uint8_t *p;

		while (cap < w->n + n)
			cap *= 2;
		p = realloc(w->p, cap);
		if (!p) {
			w->oom = true;
			return;
		}
		w->p = p;
		w->cap = cap;
	}
	memcpy(w->p + w->n, src, n);
	w->n += n;
}

static void put_u32(struct wbuf *w, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };

	put(w, b, 4);
}

static void put_u64(struct wbuf *w, uint64_t v)
{
	put_u32(w, (uint32_t)v);
	put_u32(w, (uint32_t)(v >> 32));
}

static void put_f32(struct wbuf *w, float f)
{
	uint32_t v;

	memcpy(&v, &f, 4);
	put_u32(w, v);
}

/* The model section: the ModelProto the model was loaded from, packed again (the loader keeps it
 * unchanged; its passes work on the graph they built from it). */
static void put_model(struct wbuf *w, const struct onnx_model *m)
{
	size_t n = m->pb ? onnx__model_proto__get_packed_size(m->pb) : 0;

	put_u64(w, n);
	if (!n || w->oom)
		return;
	if (w->n + n > w->cap) {	/* room for it, then pack in place */
		uint8_t *p = realloc(w->p, w->n + n);

		if (!p) {
			w->oom = true;
			return;
		}
		w->p = p;
		w->cap = w->n + n;
	}
	if (onnx__model_proto__pack(m->pb, w->p + w->n) != n) {
		w->oom = true;
		return;
	}
	w->n += n;
}

int onnx_compiled_save(const struct onnx_compiled *cm, const char *path, char *err, size_t errlen)
{
	struct wbuf w = { 0 };
	FILE *f;
	int ret = 0;

	put(&w, CM_MAGIC, 8);
	put_u32(&w, CM_VERSION);
	for (int i = 0; i < 8; i++)
		put_u32(&w, cm->geom[i]);
	put_u64(&w, cm->digest);
	put_u32(&w, cm->n_vals);
	put_u32(&w, cm->n_steps);
	put_u64(&w, cm->arena_bytes);
	put_u64(&w, cm->lower_bound);
	put_u64(&w, cm->wbytes);
	put_u32(&w, cm->n_before);
	put_u32(&w, cm->n_device);
	put_u32(&w, cm->n_host);
	put_u32(&w, cm->n_alias);
	put_u32(&w, cm->n_fused);
	put_u32(&w, cm->m->load_flags);
	put_u32(&w, cm->n_shapes);
	for (unsigned i = 0; i < cm->n_shapes; i++) {
		put_u32(&w, (uint32_t)cm->shapes[i].dtype);
		put_u32(&w, cm->shapes[i].ndim);
		for (int d = 0; d < ONNX_MAX_DIMS; d++)
			put_u64(&w, (uint64_t)cm->shapes[i].dims[d]);
	}
	for (unsigned v = 0; v < cm->n_vals; v++) {
		const struct cval *cv = &cm->vals[v];

		put_u32(&w, (uint32_t)cv->dtype);
		put_u32(&w, cv->ndim);
		for (int d = 0; d < ONNX_MAX_DIMS; d++)
			put_u64(&w, (uint64_t)cv->dims[d]);
		put_u64(&w, cv->bytes);
		put_u32(&w, cv->loc);
		put_u64(&w, cv->off);
		put_u32(&w, (uint32_t)cv->root);
		put_u32(&w, (uint32_t)cv->nhwc);
	}
	for (unsigned i = 0; i < cm->n_steps; i++) {
		const struct cstep *s = &cm->steps[i];

		put_u32(&w, s->kind);
		put_u32(&w, (uint32_t)s->node);
		put_u32(&w, (uint32_t)s->in[0]);
		put_u32(&w, (uint32_t)s->in[1]);
		put_u32(&w, (uint32_t)s->out);
		put_u32(&w, (uint32_t)s->act);
		put_f32(&w, s->lo);
		put_f32(&w, s->hi);
		put_f32(&w, s->scale);
#define X(f) put_u64(&w, (uint64_t)s->f);
		STEP_I64_FIELDS(X)
#undef X
		put_u64(&w, s->w_off);
		put_u64(&w, s->b_off);
		put_u32(&w, (uint32_t)s->ta);
		put_u32(&w, (uint32_t)s->tb);
		put_u32(&w, (uint32_t)s->op);
		for (int d = 0; d < 4; d++) {
			put_u32(&w, s->ad[d]);
			put_u32(&w, s->bd[d]);
			put_u32(&w, s->od[d]);
		}
		/* version 2: the residual and the copy box */
		put_u32(&w, (uint32_t)s->res);
		put_u64(&w, (uint64_t)s->esz);
		put_u64(&w, (uint64_t)s->src_off);
		put_u64(&w, (uint64_t)s->dst_off);
		for (int d = 0; d < 4; d++) {
			put_u64(&w, (uint64_t)s->sst[d]);
			put_u64(&w, (uint64_t)s->dstr[d]);
		}
#define Q32(f) put_u32(&w, (uint32_t)s->f);
#define Q64(f) put_u64(&w, s->f);
		STEP_QDQ_FIELDS(Q32, Q64)
#undef Q32
#undef Q64
		put_u32(&w, (uint32_t)s->pair);	/* version 3 */
#define Q32(f) put_u32(&w, (uint32_t)s->f);
#define Q64(f) put_u64(&w, s->f);
		STEP_WQ_FIELDS(Q32, Q64)	/* version 5 */
#undef Q32
#undef Q64
	}
	put(&w, cm->wimg, cm->wbytes);
	put_model(&w, cm->m);
	if (!w.oom)
		put_u32(&w, cm_crc32(w.p, w.n));
	if (w.oom) {
		snprintf(err, errlen, "out of memory");
		free(w.p);
		return -ENOMEM;
	}
	f = fopen(path, "wb");
	if (!f || fwrite(w.p, 1, w.n, f) != w.n)
		ret = -errno ? -errno : -EIO;
	if (f && fclose(f) && !ret)
		ret = -errno ? -errno : -EIO;
	if (ret)
		snprintf(err, errlen, "%s: cannot write: %s", path, strerror(-ret));
	free(w.p);
	return ret;
}
