/* SPDX-License-Identifier: MIT */
/*
 * cmodel_file.c - the compiled-model file reader (onnx_compiled_load_mem; the format: cmodel_file.h,
 * Documentation/onnx.md "Compiled-model files").
 *
 * The reader checks the length and CRC first, then every field against the model, the device and its
 * own bounds (indices in range, offsets + sizes inside their buffer, sizes that match the shapes),
 * naming the field that fails.  It never allocates more than the file holds except the arena, which is
 * bounded by the sum of the values it places.
 */
#include <endian.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmodel_file.h"

static const char *const geom_names[8] = { "rows", "cols", "rate_fp32", "rate_int8", "sram_bytes", "acc_elems",
					   "features", "pes" };

/* ---- digest of what the compiled form depends on: the model graph, its constants, the input shapes */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint64_t fnv_i64(uint64_t h, int64_t v)
{
	return fnv(h, &v, sizeof(v));
}

/* The model's part of the digest (graph, names, every constant's bytes): hundreds of megabytes for a
 * language model, hashed once per model and kept (the generator compiles a model once per shape
 * bucket).  The memo is the model's only mutable field, under its own lock. */
static uint64_t graph_digest(const struct onnx_model *m);

static pthread_mutex_t digest_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t model_digest(const struct onnx_model *m, const struct onnx_tensor *shapes, unsigned n)
{
	struct onnx_model *mm = (struct onnx_model *)m;	/* the memo only */
	uint64_t h;

	pthread_mutex_lock(&digest_lock);
	if (!mm->digest_valid) {
		mm->digest = graph_digest(m);
		mm->digest_valid = true;
	}
	h = mm->digest;
	pthread_mutex_unlock(&digest_lock);
	for (unsigned i = 0; i < n; i++) {
		h = fnv_i64(h, shapes[i].dtype);
		h = fnv_i64(h, shapes[i].ndim);
		for (unsigned d = 0; d < shapes[i].ndim && d < ONNX_MAX_DIMS; d++)
			h = fnv_i64(h, shapes[i].dims[d]);
	}
	return h;
}

static uint64_t graph_digest(const struct onnx_model *m)
{
	uint64_t h = 0xcbf29ce484222325ull;

	h = fnv_i64(h, m->opset);
	h = fnv_i64(h, m->n_vals);
	h = fnv_i64(h, m->n_nodes);
	for (unsigned i = 0; i < m->n_nodes; i++) {
		const struct onnx_node *nd = &m->nodes[i];

		h = fnv_i64(h, nd->op);
		h = fnv_i64(h, nd->folded | nd->fused_relu << 1 | nd->fused_clamp << 2);
		for (unsigned k = 0; k < nd->n_in; k++)
			h = fnv_i64(h, nd->in[k]);
		for (unsigned k = 0; k < nd->n_out; k++)
			h = fnv_i64(h, nd->out[k]);
	}
	for (unsigned v = 0; v < m->n_vals; v++) {
		const struct onnx_value *val = &m->vals[v];

		h = fnv(h, val->name, strlen(val->name) + 1);
		h = fnv_i64(h, val->is_const);
		if (val->is_const && val->t.data) {
			h = fnv_i64(h, val->t.dtype);
			h = fnv(h, val->t.dims, sizeof(int64_t) * val->t.ndim);
			h = fnv(h, val->t.data, val->t.count * onnx_dtype_size(val->t.dtype));
		}
	}
	return h;
}

uint32_t cm_crc32(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & -(c & 1u));
	}
	return ~c;
}

/* ---- reader */

/* One step per node plus at most one device copy per node input or output (compile_views.c). */
static uint64_t max_steps(const struct onnx_model *m)
{
	uint64_t n = m->n_nodes;

	for (unsigned i = 0; i < m->n_nodes; i++)
		n += m->nodes[i].n_in + m->nodes[i].n_out;
	return n;
}


int cm_rbad(struct rbuf *r, int err, const char *fmt, ...)
{
	va_list ap;

	if (r->ret)
		return r->ret;
	va_start(ap, fmt);
	vsnprintf(r->err, r->errlen, fmt, ap);
	va_end(ap);
	r->ret = err;
	return err;
}

static bool take(struct rbuf *r, void *dst, size_t n, const char *field)
{
	if (r->ret)
		return false;
	if (n > r->n - r->pos) {
		snprintf(r->err, r->errlen, "truncated: field '%s' at offset %zu needs %zu bytes, %zu left", field,
			 r->pos, n, r->n - r->pos);
		r->ret = -EBADMSG;
		return false;
	}
	if (dst)
		memcpy(dst, r->p + r->pos, n);
	r->pos += n;
	return true;
}

static uint32_t get_u32(struct rbuf *r, const char *field)
{
	uint8_t b[4] = { 0 };

	take(r, b, 4, field);
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint64_t get_u64(struct rbuf *r, const char *field)
{
	uint64_t lo = get_u32(r, field);

	return lo | (uint64_t)get_u32(r, field) << 32;
}

static float get_f32(struct rbuf *r, const char *field)
{
	uint32_t v = get_u32(r, field);
	float f;

	memcpy(&f, &v, 4);
	return f;
}


/* The magic, the version and the CRC trailer; leaves r after the version, r->n before the trailer. */
static int envelope(struct rbuf *r)
{
	uint32_t crc, ver;

	if (r->n < 12 || memcmp(r->p, CM_MAGIC, 8)) {
		snprintf(r->err, r->errlen, "not a compiled tnpu model (field 'magic')");
		return -EBADMSG;
	}
	take(r, NULL, 8, "magic");
	ver = get_u32(r, "version");
	if (ver != CM_VERSION) {
		snprintf(r->err, r->errlen, "field 'version' is %u, this reader reads version %u: recompile the model",
			 ver, CM_VERSION);
		return -EBADMSG;
	}
	if (r->n < 16) {
		snprintf(r->err, r->errlen, "truncated: no room for field 'crc'");
		return -EBADMSG;
	}
	memcpy(&crc, r->p + r->n - 4, 4);
	crc = le32toh(crc);
	if (crc != cm_crc32(r->p, r->n - 4)) {
		snprintf(r->err, r->errlen,
			 "field 'crc' does not match the contents: the file is corrupted or truncated");
		return -EBADMSG;
	}
	r->n -= 4;	/* the trailer */
	return 0;
}

/* The inputs section (version 4): the load flags and the input shapes, into cm->shapes. */
static int read_shapes(struct rbuf *r, struct onnx_compiled *cm, size_t len, uint32_t *load_flags)
{
	uint32_t n, fl;

	fl = get_u32(r, "load_flags");
	if (load_flags)
		*load_flags = fl;
	n = get_u32(r, "n_shapes");
	if (r->ret)
		return r->ret;
	if (n > CM_MAX_SHAPES || (uint64_t)n * SHAPE_REC > len)
		return cm_rbad(r, -EBADMSG, "field 'n_shapes' (%u) is larger than the file or %u", n, CM_MAX_SHAPES);
	cm->shapes = calloc(n ? n : 1, sizeof(*cm->shapes));
	if (!cm->shapes)
		return cm_rbad(r, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < n && !r->ret; i++) {
		struct onnx_tensor *t = &cm->shapes[i];

		t->dtype = (enum onnx_dtype)get_u32(r, "shape.dtype");
		t->ndim = get_u32(r, "shape.ndim");
		for (int d = 0; d < ONNX_MAX_DIMS; d++)
			t->dims[d] = (int64_t)get_u64(r, "shape.dims");
		if (!r->ret && (t->ndim > ONNX_MAX_DIMS || !onnx_dtype_size(t->dtype)))
			return cm_rbad(r, -EBADMSG, "shape %u: field 'ndim' or 'dtype' out of range", i);
		for (unsigned d = 0; d < t->ndim && !r->ret; d++)
			if (t->dims[d] < 0 || t->dims[d] > INT32_MAX)
				return cm_rbad(r, -EBADMSG, "shape %u: field 'dims' (%lld) out of range", i,
					   (long long)t->dims[d]);
	}
	cm->n_shapes = n;
	return r->ret;
}

static int load_mem(struct onnx_model *m, struct accel_dev *dev, const struct onnx_tensor *shapes,
		    unsigned n_shapes, const void *buf, size_t len, struct onnx_compiled **out, char *err,
		    size_t errlen);

/* A half-precision network was compiled for its inputs as FLOAT (f16_promote.c, onnx_compile). */
int onnx_compiled_load_mem(struct onnx_model *m, struct accel_dev *dev, const struct onnx_tensor *shapes,
			   unsigned n_shapes, const void *buf, size_t len, struct onnx_compiled **out, char *err,
			   size_t errlen)
{
	struct onnx_tensor *f32 = NULL;
	int ret;

	*out = NULL;
	if (m && shapes && onnx_f16_inputs(m, shapes, n_shapes, &f32)) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ret = load_mem(m, dev, f32 ? f32 : shapes, n_shapes, buf, len, out, err, errlen);
	onnx_f16_inputs_free(f32, n_shapes);
	return ret;
}

static int load_mem(struct onnx_model *m, struct accel_dev *dev, const struct onnx_tensor *shapes,
		    unsigned n_shapes, const void *buf, size_t len, struct onnx_compiled **out, char *err,
		    size_t errlen)
{
	struct rbuf r = { .p = buf, .n = len, .err = err, .errlen = errlen };
	struct onnx_compiled *cm = NULL;
	struct accel_caps caps;
	int ret;

	*out = NULL;
	if (!m || !dev || !buf || (!shapes && n_shapes)) {
		snprintf(err, errlen, "needs a model, a device and the file's bytes");
		return -EINVAL;
	}
	if ((ret = envelope(&r)))
		return ret;
	cm = cm_alloc();
	if (!cm)
		return -ENOMEM;
	cm->m = m;
	cm->dev = dev;
	for (int i = 0; i < 8; i++)
		cm->geom[i] = get_u32(&r, "geometry");
	cm->digest = get_u64(&r, "model_digest");
	cm->n_vals = get_u32(&r, "n_vals");
	cm->n_steps = get_u32(&r, "n_steps");
	cm->arena_bytes = get_u64(&r, "arena_bytes");
	cm->lower_bound = get_u64(&r, "lower_bound");
	cm->wbytes = get_u64(&r, "weight_bytes");
	cm->n_before = get_u32(&r, "counts");
	cm->n_device = get_u32(&r, "counts");
	cm->n_host = get_u32(&r, "counts");
	cm->n_alias = get_u32(&r, "counts");
	cm->n_fused = get_u32(&r, "counts");
	if (read_shapes(&r, cm, len, NULL))
		goto fail;
	if ((ret = accel_query_caps(dev, &caps))) {
		cm_rbad(&r, ret, "device capabilities: %s", accel_last_error(dev));
		goto fail;
	}
	{
		uint32_t g[8] = { caps.rows, caps.cols, caps.rate_fp32, caps.rate_int8, caps.sram_bytes, caps.acc_elems,
				  caps.features, caps.pes };

		for (int i = 0; i < 8; i++)
			if (g[i] != cm->geom[i]) {
				cm_rbad(&r, -ENODEV, "field 'geometry.%s' is %u, the device has %u: compiled for another "
					"device geometry, recompile", geom_names[i], cm->geom[i], g[i]);
				goto fail;
			}
	}
	if (cm->digest != model_digest(m, shapes, n_shapes)) {
		cm_rbad(&r, -EINVAL, "field 'model_digest' does not match: compiled from another model or for other "
			"input shapes");
		goto fail;
	}
	for (unsigned i = 0; i < n_shapes || i < cm->n_shapes; i++) {	/* the digest's shapes, recorded */
		bool same = i < n_shapes && i < cm->n_shapes && cm->shapes[i].dtype == shapes[i].dtype &&
			    cm->shapes[i].ndim == shapes[i].ndim;

		for (unsigned d = 0; same && d < shapes[i].ndim && d < ONNX_MAX_DIMS; d++)
			same = cm->shapes[i].dims[d] == shapes[i].dims[d];
		if (!same) {
			cm_rbad(&r, -EINVAL, "shape %u: field 'shape' is not the input shape the file's digest was made "
				"for (%u shapes recorded, %u given)", i, cm->n_shapes, n_shapes);
			goto fail;
		}
	}
	if (cm->n_vals != m->n_vals || cm->n_steps > max_steps(m)) {
		cm_rbad(&r, -EBADMSG, "field 'n_vals'/'n_steps' (%u/%u) do not fit the model (%u values, %u nodes)",
		    cm->n_vals, cm->n_steps, m->n_vals, m->n_nodes);
		goto fail;
	}
	/* sizes from here on are bounded by the file (records) or checked below (arena) */
	if ((uint64_t)cm->n_vals * VAL_REC + (uint64_t)cm->n_steps * STEP_REC + cm->wbytes + 8 > len) {
		cm_rbad(&r, -EBADMSG, "truncated: field 'weight_bytes' (%llu) or the record counts exceed the file",
		    (unsigned long long)cm->wbytes);
		goto fail;
	}
	cm->vals = calloc(cm->n_vals ? cm->n_vals : 1, sizeof(*cm->vals));
	cm->steps = calloc(cm->n_steps ? cm->n_steps : 1, sizeof(*cm->steps));
	cm->wimg = malloc(cm->wbytes ? cm->wbytes : 1);
	if (!cm->vals || !cm->steps || !cm->wimg) {
		cm_rbad(&r, -ENOMEM, "out of memory");
		goto fail;
	}
	for (unsigned v = 0; v < cm->n_vals && !r.ret; v++) {
		struct cval *cv = &cm->vals[v];

		cv->dtype = (int)get_u32(&r, "value.dtype");
		cv->ndim = get_u32(&r, "value.ndim");
		for (int d = 0; d < ONNX_MAX_DIMS; d++)
			cv->dims[d] = (int64_t)get_u64(&r, "value.dims");
		cv->bytes = get_u64(&r, "value.bytes");
		cv->loc = (enum cval_loc)get_u32(&r, "value.loc");
		cv->off = get_u64(&r, "value.off");
		cv->root = (int)get_u32(&r, "value.root");
		cv->nhwc = (int)get_u32(&r, "value.nhwc");
	}
	for (unsigned i = 0; i < cm->n_steps && !r.ret; i++) {
		struct cstep *s = &cm->steps[i];

		s->kind = (enum cstep_kind)get_u32(&r, "step.kind");
		s->node = (int)get_u32(&r, "step.node");
		s->in[0] = (int)get_u32(&r, "step.in");
		s->in[1] = (int)get_u32(&r, "step.in");
		s->out = (int)get_u32(&r, "step.out");
		s->act = (int)get_u32(&r, "step.act");
		s->lo = get_f32(&r, "step.lo");
		s->hi = get_f32(&r, "step.hi");
		s->scale = get_f32(&r, "step.scale");
#define X(f) s->f = (int64_t)get_u64(&r, "step." #f);
		STEP_I64_FIELDS(X)
#undef X
		s->w_off = get_u64(&r, "step.w_off");
		s->b_off = get_u64(&r, "step.b_off");
		s->ta = (int)get_u32(&r, "step.ta");
		s->tb = (int)get_u32(&r, "step.tb");
		s->op = (int)get_u32(&r, "step.op");
		for (int d = 0; d < 4; d++) {
			s->ad[d] = get_u32(&r, "step.ad");
			s->bd[d] = get_u32(&r, "step.bd");
			s->od[d] = get_u32(&r, "step.od");
		}
		s->res = (int)get_u32(&r, "step.res");
		s->esz = (int64_t)get_u64(&r, "step.esz");
		s->src_off = (int64_t)get_u64(&r, "step.src_off");
		s->dst_off = (int64_t)get_u64(&r, "step.dst_off");
		for (int d = 0; d < 4; d++) {
			s->sst[d] = (int64_t)get_u64(&r, "step.sst");
			s->dstr[d] = (int64_t)get_u64(&r, "step.dstr");
		}
#define Q32(f) s->f = (__typeof__(s->f))get_u32(&r, "step." #f);
#define Q64(f) s->f = get_u64(&r, "step." #f);
		STEP_QDQ_FIELDS(Q32, Q64)
#undef Q32
#undef Q64
		s->pair = (int)get_u32(&r, "step.pair");
#define Q32(f) s->f = (__typeof__(s->f))get_u32(&r, "step." #f);
#define Q64(f) s->f = get_u64(&r, "step." #f);
		STEP_WQ_FIELDS(Q32, Q64)
#undef Q32
#undef Q64
		s->reason = CS_IS_DEVICE(s->kind)	  ? "device step of the plan" :
			    s->kind == CS_ALIAS  ? "a view of its input (addressing, no step)" :
			    s->kind == CS_FUSED  ? "fused into the step before it (SFU epilogue)" :
			    s->kind == CS_QFUSED ? "folded into an int8 device step (QDQ pattern)" :
						   NULL;
	}
	take(&r, cm->wimg, cm->wbytes, "weights");
	{
		uint64_t mb = get_u64(&r, "model_bytes");

		if (!r.ret && mb != r.n - r.pos)
			cm_rbad(&r, -EBADMSG, "field 'model_bytes' (%llu) does not match the %zu bytes after it",
			    (unsigned long long)mb, r.n - r.pos);
		take(&r, NULL, r.ret ? 0 : (size_t)mb, "model");	/* onnx_compiled_open read it */
	}
	if (!r.ret && r.pos != r.n)
		cm_rbad(&r, -EBADMSG, "%zu bytes after field 'model'", r.n - r.pos);
	if (r.ret)
		goto fail;
	if (cm_check_vals(&r, cm) || cm_check_steps(&r, cm))
		goto fail;
	for (unsigned i = 0; i < cm->n_steps; i++)
		if (cm->steps[i].pair >= 0)	/* compile_fuse_pwdw.c's words */
			cm->steps[cm->steps[i].pair].reason = "fused into the expansion Conv before it (one "
							      "accel_conv2d_pwdw job)";
	{
		uint64_t sum = 0, big = 0, sc = 0;

		for (unsigned v = 0; v < cm->n_vals; v++)
			if (cm->vals[v].loc == LOC_ARENA && cm->vals[v].root == (int)v) {
				sum += (cm->vals[v].bytes + 63) / 64 * 64 + 64;
				big = cm->vals[v].bytes > big ? cm->vals[v].bytes : big;
			}
		/* plus the steps' scratch (an int8 step's int32 temporaries, at most 8 bytes per element of
		 * its output: the six-job QADD's two), each live during its own step only but placed by the
		 * planner like any block */
		for (unsigned i = 0; i < cm->n_steps; i++) {
			uint64_t b = cm->steps[i].sc_bytes;

			if (b > 8 * big + 128) {
				cm_rbad(&r, -EBADMSG, "step %u: field 'sc_bytes' (%llu) is larger than any step's scratch", i,
				    (unsigned long long)b);
				goto fail;
			}
			if (b)
				sc += (b + 63) / 64 * 64 + 64;
		}
		sum += sc;
		if (cm->arena_bytes > sum || cm->lower_bound > cm->arena_bytes) {
			cm_rbad(&r, -EBADMSG, "field 'arena_bytes' (%llu) or 'lower_bound' is inconsistent with the values",
			    (unsigned long long)cm->arena_bytes);
			goto fail;
		}
	}
	ret = accel_buffer_alloc(dev, cm->arena_bytes ? cm->arena_bytes : 1, &cm->arena);
	cm->wprefix = cm->wbytes;	/* the whole image as one (shared) prefix */
	if (!ret && (ret = cm_weights_upload(cm)))
		cm->err[0] = 0;
	if (ret) {
		cm_rbad(&r, ret, "device buffers: %s", accel_last_error(dev));
		goto fail;
	}
	*out = cm;
	return 0;
fail:
	onnx_compiled_free(cm);
	return r.ret ? r.ret : -EBADMSG;
}

int cm_file_head(const void *buf, size_t len, struct cm_file_head *h, char *err, size_t errlen)
{
	struct rbuf r = { .p = buf, .n = len, .err = err, .errlen = errlen };
	struct onnx_compiled scratch = { 0 };	/* for read_shapes: only its shapes are used */
	uint32_t n_vals, n_steps;
	uint64_t wbytes, skip, mb;
	int ret;

	memset(h, 0, sizeof(*h));
	if ((ret = envelope(&r)))
		return ret;
	take(&r, NULL, 32 + 8, "geometry");
	n_vals = get_u32(&r, "n_vals");
	n_steps = get_u32(&r, "n_steps");
	take(&r, NULL, 16, "arena_bytes");
	wbytes = get_u64(&r, "weight_bytes");
	take(&r, NULL, 20, "counts");
	if (read_shapes(&r, &scratch, len, &h->load_flags))
		goto fail;
	skip = (uint64_t)n_vals * VAL_REC + (uint64_t)n_steps * STEP_REC;
	if (wbytes > len || skip > len || skip + wbytes > r.n - r.pos) {
		cm_rbad(&r, -EBADMSG, "truncated: the records and field 'weight_bytes' (%llu) exceed the file",
		    (unsigned long long)wbytes);
		goto fail;
	}
	take(&r, NULL, (size_t)(skip + wbytes), "records");
	mb = get_u64(&r, "model_bytes");
	if (r.ret)
		goto fail;
	if (!mb) {
		cm_rbad(&r, -ENOENT, "field 'model_bytes' is 0: the file does not carry its model; load the ONNX "
			"model and use onnx_compiled_load (accel-run MODEL --compiled FILE)");
		goto fail;
	}
	if (mb != r.n - r.pos) {
		cm_rbad(&r, -EBADMSG, "field 'model_bytes' (%llu) does not match the %zu bytes after it",
		    (unsigned long long)mb, r.n - r.pos);
		goto fail;
	}
	h->shapes = scratch.shapes;
	h->n_shapes = scratch.n_shapes;
	h->model = r.p + r.pos;
	h->model_bytes = (size_t)mb;
	return 0;
fail:
	free(scratch.shapes);
	return r.ret ? r.ret : -EBADMSG;
}

uint64_t cm_model_digest(const struct onnx_model *m, const struct onnx_tensor *shapes, unsigned n)
{
	return model_digest(m, shapes, n);
}
