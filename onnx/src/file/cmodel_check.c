// SPDX-License-Identifier: MIT
/*
 * cmodel_check.c - the compiled-model reader's checks of the values and steps it read (cmodel_file.c):
 * indices in range, offsets and sizes inside their buffers, sizes that match the shapes, step fields
 * within what the executor may be handed; each failure names the value or step and the field.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cmodel_file.h"

/* The values: shapes and sizes consistent, offsets inside their buffer. */
int cm_check_vals(struct rbuf *r, struct onnx_compiled *cm)
{
	for (unsigned v = 0; v < cm->n_vals; v++) {
		struct cval *cv = &cm->vals[v];
		uint64_t count = 1;

		if (cv->loc > LOC_CONST)
			return cm_rbad(r, -EBADMSG, "value %u: field 'loc' is %u", v, cv->loc);
		if (cv->nhwc != 0 && (cv->nhwc != 1 || cv->loc != LOC_ARENA || cv->ndim != 4))
			return cm_rbad(r, -EBADMSG, "value %u: field 'nhwc' is %d (only 4-D arena values)", v, cv->nhwc);
		if (cv->loc != LOC_ARENA && (cv->loc != LOC_WEIGHT || cm->m->vals[v].is_const))
			continue;	/* a known value (compile_known.c) is a LOC_WEIGHT non-constant: checked */
		if (cv->ndim > ONNX_MAX_DIMS || !onnx_dtype_size((enum onnx_dtype)cv->dtype))
			return cm_rbad(r, -EBADMSG, "value %u: field 'ndim' or 'dtype' out of range", v);
		{
			unsigned d = 0;

			if (onnx_shape_check(cv->ndim, cv->dims, &d))
				return cm_rbad(r, -EBADMSG, "value %u: field 'dims[%u]' out of range", v, d);
		}
		for (unsigned d = 0; d < cv->ndim; d++) {
			count = cv->dims[d] && count > (uint64_t)ONNX_MAX_TENSOR_BYTES / (uint64_t)cv->dims[d]
					? (uint64_t)ONNX_MAX_TENSOR_BYTES + 1 : count * (uint64_t)cv->dims[d];
		}
		if (count > ONNX_MAX_TENSOR_BYTES || cv->bytes != count * onnx_dtype_size((enum onnx_dtype)cv->dtype))
			return cm_rbad(r, -EBADMSG, "value %u: field 'bytes' (%llu) does not match its shape", v,
				   (unsigned long long)cv->bytes);
		if (cv->loc == LOC_WEIGHT) {
			if (!in_range(cv->off, cv->bytes, cm->wbytes))
				return cm_rbad(r, -EBADMSG, "value %u: field 'off' + bytes outside the weights", v);
			continue;
		}
		if (cv->root < 0 || (unsigned)cv->root >= cm->n_vals || cm->vals[cv->root].loc != LOC_ARENA)
			return cm_rbad(r, -EBADMSG, "value %u: field 'root' out of range", v);
		if (!in_range(cv->off, cv->bytes, cm->arena_bytes))
			return cm_rbad(r, -EBADMSG, "value %u: field 'off' + bytes outside the arena (%llu bytes)", v,
				   (unsigned long long)cm->arena_bytes);
	}
	for (unsigned v = 0; v < cm->n_vals; v++)
		if (cm->vals[v].loc == LOC_WEIGHT && cm->m->vals[v].is_const && !in_range(cm->vals[v].off, cm->m->vals[v].t.count *
				onnx_dtype_size(cm->m->vals[v].t.dtype), cm->wbytes))
			return cm_rbad(r, -EBADMSG, "value %u: field 'off' outside the weights", v);
	return 0;
}

static bool val_ok(const struct onnx_compiled *cm, int v, bool need)
{
	if (v == -1)
		return !need;
	return v >= 0 && (unsigned)v < cm->n_vals && (cm->vals[v].loc == LOC_ARENA || cm->vals[v].loc == LOC_WEIGHT);
}

/* A tensor of these dimensions holds at most 2^32 elements (libaccel's stride arithmetic stays exact). */
static bool small4(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	unsigned __int128 p = (unsigned __int128)a * b * c;

	return a <= (1u << 31) && b <= (1u << 31) && c <= (1u << 31) && d <= (1u << 31) &&
	       p * d <= ((unsigned __int128)1 << 32);
}

/* The last element of a box at element offset off with strides st, in bytes from the value's start
 * (false when it does not fit in bytes). */
static bool box_in(const uint32_t box[4], int64_t off, const int64_t st[4], int64_t esz, uint64_t bytes)
{
	unsigned __int128 last = (unsigned __int128)(uint64_t)off;

	if (off < 0)
		return false;
	for (int d = 0; d < 4; d++) {
		if (!box[d] || st[d] < 0 || st[d] > (1LL << 40))
			return false;
		last += (unsigned __int128)(box[d] - 1) * (uint64_t)st[d];
	}
	return (last + 1) * (uint64_t)esz <= bytes;
}

static bool copy_box_bad(const struct onnx_compiled *cm, const struct cstep *s)
{
	if (s->esz != 1 && s->esz != 4 && s->esz != 8)
		return true;
	if (s->esz == 8 && s->ad[3] > 1 && (s->sst[3] != 1 || s->dstr[3] != 1))
		return true;
	return !box_in(s->ad, s->src_off, s->sst, s->esz, cm->vals[s->in[0]].loc == LOC_ARENA ?
		       cm->vals[s->in[0]].bytes : cm->wbytes - cm->vals[s->in[0]].off) ||
	       !box_in(s->ad, s->dst_off, s->dstr, s->esz, cm->vals[s->out].bytes);
}

/* An int8 QDQ step (compile_qdq.c): operands placed, parameters in range, constants inside the
 * weights, scratch inside the arena, and nrq exactly the extent accel_requant reads its host-side
 * multiplier/shift arrays for (the axis it requantises along; a CS_QADD step with nrq 0 runs one
 * accel_qadd and reads none). */
static int check_qdq_step(struct rbuf *r, struct onnx_compiled *cm, unsigned i)
{
	const struct cstep *s = &cm->steps[i];
	uint64_t nrq_need = 0, wb = 0, bb = 0;
	bool requant;

	if (!val_ok(cm, s->in[0], true) || cm->vals[s->in[0]].loc != LOC_ARENA || !val_ok(cm, s->out, true) ||
	    cm->vals[s->out].loc != LOC_ARENA ||
	    (s->kind == CS_QADD && (!val_ok(cm, s->in[1], true) || cm->vals[s->in[1]].loc != LOC_ARENA)))
		return cm_rbad(r, -EBADMSG, "step %u: field 'in'/'out' names no placed value", i);
	if ((s->act != ACCEL_ACT_NONE && s->act != ACCEL_ACT_RELU) || s->izp < -128 || s->izp > 127 ||
	    s->izp2 < -128 || s->izp2 > 127 || s->ozp < -128 || s->ozp > 127 || s->shift < 0 || s->shift > 62 ||
	    (s->odt != ACCEL_INT8 && s->odt != ACCEL_INT32) || (s->qpool != 0 && s->qpool != 1))
		return cm_rbad(r, -EBADMSG, "step %u: a requantisation field ('act', 'izp', 'ozp', 'shift', 'odt', 'qpool') "
			   "out of range", i);
#define X(f) if (s->f < 0 || s->f > (1LL << 31)) return cm_rbad(r, -EBADMSG, "step %u: field '" #f "' out of range", i);
	STEP_I64_FIELDS(X)
#undef X
	for (int d = 0; d < 8; d++)
		if (s->pw[d] > 4096)
			return cm_rbad(r, -EBADMSG, "step %u: field 'pw' out of range", i);
	if (!small4((uint64_t)s->n, (uint64_t)s->c, (uint64_t)s->h, (uint64_t)s->w) ||
	    !small4((uint64_t)s->n, (uint64_t)s->k, (uint64_t)s->oh, (uint64_t)s->ow) ||
	    !small4((uint64_t)s->k, (uint64_t)s->cg, (uint64_t)s->kh, (uint64_t)s->kw) ||
	    !small4((uint64_t)s->M, (uint64_t)s->K, 1, 1) || !small4((uint64_t)s->M, (uint64_t)s->N, 1, 1) ||
	    !small4(s->ad[0], s->ad[1], s->ad[2], s->ad[3]) || !small4(s->od[0], s->od[1], s->od[2], s->od[3]))
		return cm_rbad(r, -EBADMSG, "step %u: a tensor shape field is larger than 2^32 elements", i);
	requant = (s->kind == CS_QADD && !cm_qdq_qadd1(s)) ||
		  ((s->kind == CS_QCONV || s->kind == CS_QGEMM) && s->odt == ACCEL_INT32);
	if (s->kind == CS_QCONV) {
		nrq_need = (uint64_t)s->k;
		wb = (uint64_t)s->k * (uint64_t)s->cg * (uint64_t)s->kh * (uint64_t)s->kw;
		bb = (uint64_t)s->k * (cm_qdq_qcol(s) ? 12 : 4);
	} else if (s->kind == CS_QGEMM) {
		nrq_need = (uint64_t)s->N;
		wb = (uint64_t)s->N * (uint64_t)s->K;
		bb = (uint64_t)s->N * (cm_qdq_qcol(s) ? 12 : 4);
	} else if (s->kind == CS_QADD) {
		/* nrq 0: one accel_qadd job, which only a device with CAP_FEATURES bit 20 runs */
		if (cm_qdq_qadd1(s) && !(cm->geom[6] & (1u << 20)))
			return cm_rbad(r, -EBADMSG, "step %u: a one-job 'qadd' step (field 'nrq' 0) for a device without "
				   "the quantised add (geometry.features bit 20)", i);
		nrq_need = s->od[0];
		if (!in_range(s->k_off[0], 1, cm->wbytes) || !in_range(s->k_off[1], 4, cm->wbytes) ||
		    !in_range(s->k_off[2], 1, cm->wbytes) || !in_range(s->k_off[3], 4, cm->wbytes))
			return cm_rbad(r, -EBADMSG, "step %u: field 'k_off' outside the weights", i);
	}
	if ((wb && !in_range(s->w_off, wb, cm->wbytes)) || (bb && !in_range(s->b_off, bb, cm->wbytes)))
		return cm_rbad(r, -EBADMSG, "step %u: field 'w_off'/'b_off' outside the weights", i);
	if (requant && (s->nrq != nrq_need || !in_range(s->rq_off, 5ull * s->nrq, cm->wbytes)))
		return cm_rbad(r, -EBADMSG, "step %u: field 'nrq'/'rq_off' does not fit the step or the weights", i);
	if (!in_range(s->sc_off, s->sc_bytes, cm->arena_bytes))
		return cm_rbad(r, -EBADMSG, "step %u: field 'sc_off' + 'sc_bytes' outside the arena", i);
	return 0;
}

static int check_step(struct rbuf *r, struct onnx_compiled *cm, unsigned i);

/* An expansion step's pair (compile_fuse_pwdw.c): a later fused step of the matching kind, named by no
 * other step, that reads the expansion's output, and whose own fields pass a device step's checks. */
static int check_pair(struct rbuf *r, struct onnx_compiled *cm, unsigned i)
{
	struct cstep *s = &cm->steps[i], *q;
	enum cstep_kind fk;

	if (s->pair == -1)
		return 0;
	if ((s->kind != CS_CONV && s->kind != CS_QCONV) || s->pair <= (int)i || (unsigned)s->pair >= cm->n_steps)
		return cm_rbad(r, -EBADMSG, "step %u: field 'pair' (%d) names no later step of this step's kind", i, s->pair);
	q = &cm->steps[s->pair];
	fk = s->kind == CS_CONV ? CS_FUSED : CS_QFUSED;
	if (q->kind != fk || q->in[0] != s->out || q->pair != -1)
		return cm_rbad(r, -EBADMSG, "step %u: field 'pair' (%d) names no fused depthwise step reading its output", i,
			   s->pair);
	for (unsigned k = 0; k < i; k++)
		if (cm->steps[k].pair == s->pair)
			return cm_rbad(r, -EBADMSG, "step %u: field 'pair' (%d) is another step's pair too", i, s->pair);
	/* the fused step's fields, checked as the device step it runs as */
	q->kind = s->kind;
	check_step(r, cm, (unsigned)s->pair);
	q->kind = fk;
	return r->ret;
}

/* Device steps: operands in range, and every tensor the step describes inside its buffer. */
int cm_check_steps(struct rbuf *r, struct onnx_compiled *cm)
{
	for (unsigned i = 0; i < cm->n_steps; i++) {
		if (check_pair(r, cm, i))
			return r->ret;
		if (check_step(r, cm, i))
			return r->ret;
	}
	return 0;
}

/* One step: the device steps' operands in range, every tensor the step describes inside its buffer. */
static int check_step(struct rbuf *r, struct onnx_compiled *cm, unsigned i)
{
	{
		struct cstep *s = &cm->steps[i];
		uint64_t wbytes;

		if (s->kind >= CS_KIND_COUNT)
			return cm_rbad(r, -EBADMSG, "step %u: field 'kind' is %u", i, s->kind);
		if (s->node < 0 || (unsigned)s->node >= cm->m->n_nodes || cm->m->nodes[s->node].folded)
			return cm_rbad(r, -EBADMSG, "step %u: field 'node' (%d) is not a node of the model", i, s->node);
		if (s->wq && s->kind != CS_GEMM)
			return cm_rbad(r, -EBADMSG, "step %u: field 'wq' (%u) on a step that is no GEMM", i, s->wq);
		if (!CS_IS_DEVICE(s->kind))
			return 0;
		if (CS_IS_QDQ(s->kind)) {
			if (check_qdq_step(r, cm, i))
				return r->ret;
			return 0;
		}
		if (s->res != -1 && (!val_ok(cm, s->res, true) || cm->vals[s->res].loc != LOC_ARENA ||
				     (s->kind != CS_CONV && s->kind != CS_GEMM)))
			return cm_rbad(r, -EBADMSG, "step %u: field 'res' names no placed value", i);
		if (!val_ok(cm, s->in[0], true) || !val_ok(cm, s->out, true) || cm->vals[s->out].loc != LOC_ARENA ||
		    /* an element-wise step's second operand: a value, or packed in the weights (b_off: a
		     * BatchNormalization's scale and shift, compile_bn.c; checked below); a GEMM's: a value when batched,
		     * else a value or packed at w_off (in[1] -1: ReduceMean's column, checked below) */
		    !val_ok(cm, s->in[1], (s->kind == CS_ELT && s->b_off == UINT64_MAX) || (s->kind == CS_GEMM && s->ad[0] > 1)))
			return cm_rbad(r, -EBADMSG, "step %u: field 'in'/'out' names no placed value", i);
		if (s->act < ACCEL_ACT_NONE || s->act > ACCEL_ACT_SOFTSIGN ||
		    (s->act > ACCEL_ACT_CLAMP && s->kind != CS_ACT))
			return cm_rbad(r, -EBADMSG, "step %u: field 'act' is %d", i, s->act);
#define X(f) if (s->f < 0 || s->f > (1LL << 31)) return cm_rbad(r, -EBADMSG, "step %u: field '" #f "' out of range", i);
		STEP_I64_FIELDS(X)
#undef X
		if (!small4((uint64_t)s->n, (uint64_t)s->c, (uint64_t)s->h, (uint64_t)s->w) ||
		    !small4((uint64_t)s->n, (uint64_t)s->k, (uint64_t)s->oh, (uint64_t)s->ow) ||
		    !small4((uint64_t)s->k, (uint64_t)s->cg, (uint64_t)s->kh, (uint64_t)s->kw) ||
		    !small4((uint64_t)s->M, (uint64_t)s->K, 1, 1) || !small4((uint64_t)s->K, (uint64_t)s->N, 1, 1) ||
		    !small4((uint64_t)s->M, (uint64_t)s->N, 1, 1) || !small4(s->ad[0], s->ad[1], s->ad[2], s->ad[3]) ||
		    !small4(s->bd[0], s->bd[1], s->bd[2], s->bd[3]) || !small4(s->od[0], s->od[1], s->od[2], s->od[3]))
			return cm_rbad(r, -EBADMSG, "step %u: a tensor shape field is larger than 2^32 elements", i);
		switch (s->kind) {
		case CS_CONV:
			wbytes = (uint64_t)s->k * (uint64_t)s->cg * (uint64_t)s->kh * (uint64_t)s->kw * 4;
			if (!s->cg || !s->groups || s->k > (1LL << 20) || s->cg > (1LL << 20) || s->kh > 4096 ||
			    s->kw > 4096 || !in_range(s->w_off, wbytes, cm->wbytes))
				return cm_rbad(r, -EBADMSG, "step %u: field 'w_off' or the kernel shape is outside the weights",
					   i);
			if (s->b_off != UINT64_MAX && !in_range(s->b_off, (uint64_t)s->k * 4, cm->wbytes))
				return cm_rbad(r, -EBADMSG, "step %u: field 'b_off' outside the weights", i);
			break;
		case CS_GEMM:
			if (s->b_off != UINT64_MAX && !in_range(s->b_off, (uint64_t)s->N * 4, cm->wbytes))
				return cm_rbad(r, -EBADMSG, "step %u: field 'b_off' outside the weights", i);
			/* B packed weight-only quantised (compile_wq.c): its format, codes, scales and zero points */
			if (s->wq && !cm_wq_check(cm, s))
				return cm_rbad(r, -EBADMSG, "step %u: field 'wq' (%u), 'wq_block', 'wq_off' or 'wq_pitch': the "
					   "packed weights do not fit the step, the weights or the device (geometry.features "
					   "bit 23)", i, s->wq);
			/* B packed at w_off (in[1] -1: ReduceMean's column) */
			if (s->in[1] == -1 && !s->wq && !in_range(s->w_off, (uint64_t)s->K * (uint64_t)s->N * 4, cm->wbytes))
				return cm_rbad(r, -EBADMSG, "step %u: field 'w_off' outside the weights", i);
			/* a batched GEMM (ad[0] slices): every slice inside its value */
			if (s->ad[0] > 1 &&
			    (s->ad[0] > CS_MAX_JOBS || s->in[1] < 0 ||
			     (uint64_t)s->ad[0] * (uint64_t)s->M * (uint64_t)s->K * 4 > cm->vals[s->in[0]].bytes ||
			     (uint64_t)s->ad[0] * (uint64_t)s->K * (uint64_t)s->N * 4 > cm->vals[s->in[1]].bytes ||
			     (uint64_t)s->ad[0] * (uint64_t)s->M * (uint64_t)s->N * 4 > cm->vals[s->out].bytes ||
			     (s->res >= 0 &&
			      (uint64_t)s->ad[0] * (uint64_t)s->M * (uint64_t)s->N * 4 > cm->vals[s->res].bytes)))
				return cm_rbad(r, -EBADMSG, "step %u: field 'ad' (the batch) does not fit its values", i);
			break;
		case CS_LAYERNORM:
			if (!in_range(s->w_off, (uint64_t)s->N * 4, cm->wbytes) ||
			    (s->b_off != UINT64_MAX && !in_range(s->b_off, (uint64_t)s->N * 4, cm->wbytes)))
				return cm_rbad(r, -EBADMSG, "step %u: field 'w_off'/'b_off' outside the weights", i);
			break;
		case CS_TRANSPOSE:
			for (int d = 0; d < 4; d++)
				if (s->bd[d] > 3)
					return cm_rbad(r, -EBADMSG, "step %u: field 'bd' (the permutation) out of range", i);
			break;
		case CS_COPY:
			if (copy_box_bad(cm, s))
				return cm_rbad(r, -EBADMSG, "step %u: field 'esz', 'src_off', 'dst_off', 'sst' or 'dstr': the "
					   "copy's box is outside its values", i);
			break;
		case CS_SOFTMAX:
			if (s->op != 0 && s->op != 1)	/* softmax, log-softmax */
				return cm_rbad(r, -EBADMSG, "step %u: field 'op' is %d", i, s->op);
			break;
		case CS_POOL:
			if (s->op != ACCEL_POOL_MAX && s->op != ACCEL_POOL_AVG && s->op != ACCEL_POOL_AVG_EXCL_PAD)
				return cm_rbad(r, -EBADMSG, "step %u: field 'op' is %d", i, s->op);
			break;
		case CS_REDUCE:
			if (s->op < ACCEL_REDUCE_SUM || s->op > ACCEL_REDUCE_LOGSUMEXP)	/* not the ARG ops (INT32) */
				return cm_rbad(r, -EBADMSG, "step %u: field 'op' is %d", i, s->op);
			if (s->ad[0] > CS_MAX_JOBS ||
			    (s->ad[0] ? s->ad[0] : 1) * (uint64_t)s->M * (uint64_t)s->N * 4 > cm->vals[s->in[0]].bytes ||
			    (s->ad[0] ? s->ad[0] : 1) * (uint64_t)s->M * 4 > cm->vals[s->out].bytes)
				return cm_rbad(r, -EBADMSG, "step %u: field 'M', 'N' or 'ad' does not fit its values", i);
			break;
		case CS_ELT:
			if (s->op < ACCEL_ELT_ADD || s->op > ACCEL_ELT_POW)	/* comparisons: host steps (BOOL) */
				return cm_rbad(r, -EBADMSG, "step %u: field 'op' is %d", i, s->op);
			if (s->b_off != UINT64_MAX &&
			    !in_range(s->b_off, (uint64_t)s->bd[0] * s->bd[1] * s->bd[2] * s->bd[3] * 4, cm->wbytes))
				return cm_rbad(r, -EBADMSG, "step %u: field 'b_off' outside the weights", i);
			break;
		default:
			break;
		}
		/* libaccel checks each tensor's extent against its buffer at submit time: a wrong shape is an
		 * error of that call, never an access outside the buffers */
	}
	return 0;
}
