/* SPDX-License-Identifier: MIT */
/*
 * compiled_run.c - the executor of a compiled model.  Inputs are copied into the arena; each device
 * step is submitted at once as an asynchronous job depending on the previous device job (one chain,
 * which also orders the arena's reuse of freed ranges); a host step first waits for the chain, reads
 * its inputs from the arena, runs the node-by-node kernel and writes its outputs back.  The outputs
 * are copied out after the last job.  Weights are never uploaded here.  A device step's first run
 * keeps its jobs' commands (ACCEL_SUBMIT_KEEP) and later runs replay them (accel_job_replay): the
 * buffers and offsets never change between runs, only the arena's contents, so lowering the same
 * step again would only produce the same commands (in a TCG guest it cost a fifth of a batch).
 * The device steps' lowering into libaccel operations is compiled_submit.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compiled_operands.h"
#include "compiled_run.h"


static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Room for n jobs in the run's arrays (doubling). */
static int run_reserve(struct run_state *rs, unsigned n)
{
	unsigned cap = rs->cap ? rs->cap : 64;
	void *p;

	if (n <= rs->cap)
		return 0;
	while (cap < n)
		cap *= 2;
	if (!(p = realloc(rs->jobs, cap * sizeof(*rs->jobs))))
		return -ENOMEM;
	rs->jobs = p;
	if (!(p = realloc(rs->kept, cap * sizeof(*rs->kept))))
		return -ENOMEM;
	rs->kept = p;
	if (rs->prof) {
		if (!(p = realloc(rs->job_node, cap * sizeof(*rs->job_node))))
			return -ENOMEM;
		rs->job_node = p;
	}
	rs->cap = cap;
	return 0;
}

/* Keep job as step si's next kept job. */
static int keep_job(struct cm_kept *k, struct accel_job *job)
{
	if (k->n == k->cap) {
		unsigned cap = k->cap ? 2 * k->cap : 4;
		struct accel_job **p = realloc(k->jobs, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		k->jobs = p;
		k->cap = cap;
	}
	k->jobs[k->n++] = job;
	return 0;
}

/* A submitted job of step s (the chain's newest: the next one depends on it); while the step's first
 * run is kept (rs->rec), also one of its kept jobs.  Out of memory: the job is waited for and freed. */
static int push_job(struct run_state *rs, const struct cstep *s, struct accel_job *job)
{
	struct onnx_compiled *cm = rs->cm;
	int si = (int)(s - cm->steps);

	if (run_reserve(rs, rs->n_jobs + 1)) {
		accel_job_wait(job, -1);
		accel_job_free(job);
		return cm_seterr(cm, -ENOMEM, "out of memory");
	}
	if (rs->prof)
		rs->job_node[rs->n_jobs] = s->node;
	rs->kept[rs->n_jobs] = false;
	if (rs->rec == si) {
		if (keep_job(&cm->kept[si], job))
			rs->keep_failed = true;	/* submit_step drops the step's partial keep */
		else
			rs->kept[rs->n_jobs] = true;
	}
	rs->jobs[rs->n_jobs++] = job;
	rs->prev = job;
	return 0;
}

/* The submission options of a step's next job: after the chain's last job; kept while recording. */
struct accel_submit cr_next_sub(struct run_state *rs)
{
	return (struct accel_submit){ .deps = &rs->prev, .n_deps = rs->prev ? 1 : 0,
				      .flags = rs->rec >= 0 ? ACCEL_SUBMIT_KEEP : 0 };
}

/* Jobs in flight before the oldest are retired (bounds the kernel objects a long chain holds). */
#define MAX_IN_FLIGHT 64

/* Wait for the submitted jobs [done, upto), add their counters, free them. */
static int retire(struct run_state *rs, unsigned upto)
{
	int ret = 0;

	for (unsigned i = rs->done; i < upto; i++) {
		struct accel_counters k;
		int r = accel_job_wait(rs->jobs[i], -1);

		if (r && !ret)
			ret = cm_seterr(rs->cm, r, "device job %u of the chain: %s", i, accel_last_error(rs->cm->dev));
		if (!r && (rs->stats || rs->prof) && !accel_job_counters(rs->jobs[i], &k)) {
			if (rs->stats)
				accel_counters_add(&rs->stats->counters, &k);
			if (rs->prof)
				accel_counters_add(&rs->prof[rs->job_node[i]].counters, &k);
		}
		if (!rs->kept[i])
			accel_job_free(rs->jobs[i]);
		rs->jobs[i] = NULL;
	}
	rs->done = upto;
	return ret;
}

/* push_job, then retire the oldest jobs when too many are in flight (the newest stays as the next
 * step's dependency). */
int cr_push_retire(struct run_state *rs, const struct cstep *s, struct accel_job *job)
{
	int ret = push_job(rs, s, job);

	if (ret)
		return ret;
	return rs->n_jobs - rs->done > MAX_IN_FLIGHT ? retire(rs, rs->n_jobs - MAX_IN_FLIGHT / 2) : 0;
}

/* Wait for every submitted job (the chain). */
static int drain(struct run_state *rs)
{
	int ret = retire(rs, rs->n_jobs);

	rs->prev = NULL;
	return ret;
}


/* Free step si's kept jobs of an earlier run (none of them is in this run's chain). */
static void drop_kept(struct onnx_compiled *cm, unsigned si)
{
	struct cm_kept *kp = &cm->kept[si];

	for (unsigned k = 0; k < kp->n; k++)
		accel_job_free(kp->jobs[k]);
	kp->n = 0;
}

/* Step si's first run failed after keeping some jobs: they are this run's chain's to free. */
static void unkeep(struct run_state *rs, unsigned si, unsigned first)
{
	struct cm_kept *kp = &rs->cm->kept[si];

	/* the kept jobs are the chain's jobs first, first + 1, ... of this step */
	for (unsigned k = 0, i = first; k < kp->n && i < rs->n_jobs; i++) {
		if (!rs->kept[i])
			continue;
		if (i < rs->done)	/* already waited for and dropped from the chain */
			accel_job_free(kp->jobs[k]);
		else
			rs->kept[i] = false;
		k++;
	}
	kp->n = 0;
}

/*
 * A device step: the replays of its kept jobs, or its lowering (kept when it is the step's first
 * run).  A replay refused (-EOPNOTSUPP: the operation ran on the host, so no commands were kept;
 * -ESTALE: a buffer of its commands is gone) lowers the step's remaining jobs instead; the step is
 * kept again on its next run unless it keeps no commands.
 */
static int submit_step(struct run_state *rs, const struct cstep *s)
{
	struct onnx_compiled *cm = rs->cm;
	unsigned si = (unsigned)(s - cm->steps), first = rs->n_jobs, k = 0;
	int ret;

	if (cm->kept && cm->kept[si].n) {
		for (; k < cm->kept[si].n; k++) {
			struct accel_submit sub = cr_next_sub(rs);
			struct accel_job *job = NULL;

			ret = accel_job_replay(cm->kept[si].jobs[k], &sub, &job);
			if (ret)
				break;
			if ((ret = cr_push_retire(rs, s, job)))
				return ret;
		}
		if (k == cm->kept[si].n)
			return 0;
		if (ret != -EOPNOTSUPP && ret != -ESTALE)
			return cr_step_err(cm, s, ret, "accel_job_replay");
		cm->kept[si].off = ret == -EOPNOTSUPP;
		drop_kept(cm, si);
		if (k && s->kind == CS_GEMM)	/* a batched GEMM: the slices not replayed */
			return cr_lower_bgemm(rs, s, k);
		if (k && s->kind == CS_REDUCE)	/* a sliced reduction: likewise */
			return cr_lower_reduce(rs, s, k);
		if (k)		/* else only a QDQ step has more than one job */
			return cr_submit_qdq(rs, s, k);
	}
	rs->rec = cm->kept && !cm->kept[si].off ? (int)si : -1;
	rs->keep_failed = false;
	ret = cr_lower_step(rs, s);
	if (rs->rec >= 0 && (ret || rs->keep_failed))
		unkeep(rs, si, first);	/* a partial keep would replay only part of the step */
	rs->rec = -1;
	return ret;
}

/* UINT8 values live in the arena as int8 (value - 128, the byte ^ 0x80) and the int8 steps' 4-D
 * values NHWC (compile_qdq.c): converted wherever the host reads or writes the arena (to_arena: the
 * host's NCHW bytes into the arena). */
/*
 * NCHW <-> NHWC of N images of C x HW elements of es bytes, walking the destination in order.  A value
 * with C = 1 or HW = 1 has the same bytes in both layouts and is one memcpy (in a TCG guest an element
 * loop over a batch of images cost more than the device's whole job).
 */
static void transpose_copy(uint8_t *dst, const uint8_t *src, size_t N, size_t C, size_t HW, size_t es, bool to_nhwc)
{
	size_t rows = to_nhwc ? HW : C, cols = to_nhwc ? C : HW;	/* destination image: rows x cols */

	if (C == 1 || HW == 1) {
		memcpy(dst, src, N * C * HW * es);
		return;
	}
	for (size_t n = 0; n < N; n++, dst += C * HW * es, src += C * HW * es)
		for (size_t r = 0; r < rows; r++)
			for (size_t k = 0; k < cols; k++) {
				size_t d = r * cols + k, s = k * rows + r;

				if (es == 4)
					memcpy(dst + 4 * d, src + 4 * s, 4);	/* fixed size: inlined */
				else if (es == 1)
					dst[d] = src[s];
				else
					memcpy(dst + es * d, src + es * s, es);
			}
}

static void arena_copy(const struct cval *cv, uint8_t *dst, const uint8_t *src, bool to_arena)
{
	if (cv->nhwc && cv->ndim == 4)
		transpose_copy(dst, src, (size_t)cv->dims[0], (size_t)cv->dims[1], (size_t)(cv->dims[2] * cv->dims[3]),
			       onnx_dtype_size((enum onnx_dtype)cv->dtype), to_arena);
	else
		memcpy(dst, src, cv->bytes);
	if (cv->dtype == ONNX_UINT8)
		for (uint64_t i = 0; i < cv->bytes; i++)
			dst[i] ^= 0x80;
}

/* A value's bytes in the arena as a host tensor of its planned shape. */
static int arena_read(struct onnx_compiled *cm, int v, struct onnx_tensor *t)
{
	const struct cval *cv = &cm->vals[v];
	int ret = onnx_tensor_alloc(t, (enum onnx_dtype)cv->dtype, cv->ndim, cv->dims);

	if (ret)
		return cm_seterr(cm, ret, "value '%s': out of memory", cm->m->vals[v].name);
	arena_copy(cv, t->data, (uint8_t *)accel_buffer_ptr(cm->arena) + cv->off, false);
	return 0;
}

static void count_copy(struct run_state *rs, uint64_t bytes)
{
	if (rs->stats)
		rs->stats->copy_bytes += bytes;
}

static int same_shape(const struct cval *cv, const struct onnx_tensor *t)
{
	if ((int)t->dtype != cv->dtype || t->ndim != cv->ndim)
		return 0;
	for (unsigned i = 0; i < t->ndim; i++)
		if (t->dims[i] != cv->dims[i])
			return 0;
	return 1;
}

/* The run's host copies of the model's values (they live for one host step). */
static void release_values(struct run_state *rs)
{
	const struct onnx_model *m = rs->cm->m;

	for (unsigned v = 0; v < m->n_vals; v++)
		if (!m->vals[v].is_const)
			onnx_tensor_release(&rs->vt[v]);
}

static int run_host_step(struct run_state *rs, const struct cstep *s)
{
	struct onnx_compiled *cm = rs->cm;
	const struct onnx_model *m = cm->m;
	const struct onnx_node *n = &m->nodes[s->node];
	char msg[ONNX_ERR_LEN];
	struct onnx_ctx c = { .m = cm->m, .vt = rs->vt, .err = msg, .dev = cm->dev, .n = n, .stats = rs->stats };
	int ret;

	if ((ret = drain(rs)))
		return ret;
	for (unsigned k = 0; k < n->n_in; k++) {
		int v = n->in[k];

		if (v < 0 || m->vals[v].is_const || rs->vt[v].data)
			continue;
		if (cm->vals[v].loc == LOC_WEIGHT) {	/* computed at compile time (compile_known.c) */
			const struct cval *cv = &cm->vals[v];

			if ((ret = onnx_tensor_alloc(&rs->vt[v], (enum onnx_dtype)cv->dtype, cv->ndim, cv->dims)))
				return cm_seterr(cm, ret, "value '%s': out of memory", m->vals[v].name);
			memcpy(rs->vt[v].data, cm->wimg + cv->off, cv->bytes);	/* the image's host copy */
			continue;
		}
		if (cm->vals[v].loc != LOC_ARENA)
			return cm_seterr(cm, -EINVAL, "node %d: input '%s' has no value", s->node, m->vals[v].name);
		if ((ret = arena_read(cm, v, &rs->vt[v])))
			return ret;
		count_copy(rs, cm->vals[v].bytes);
	}
	if (rs->prof) {	/* the node kernel's jobs add into stats: from zero, they are the node's */
		struct accel_counters run = rs->stats->counters;

		memset(&rs->stats->counters, 0, sizeof(rs->stats->counters));
		ret = onnx_run_node(&c);
		rs->prof[s->node].counters = rs->stats->counters;
		rs->prof[s->node].on_device = !ret && c.on_accel;
		rs->stats->counters = run;
		accel_counters_add(&rs->stats->counters, &rs->prof[s->node].counters);
	} else {
		ret = onnx_run_node(&c);
	}
	if (ret)
		return cm_seterr(cm, ret, "%s", msg);
	cm->steps[s - cm->steps].ran = c.on_accel ? 2 : 1;
	for (unsigned k = 0; k < n->n_out; k++) {
		int v = n->out[k];
		const struct cval *cv;

		if (v < 0 || !rs->vt[v].data)
			continue;
		cv = &cm->vals[v];
		if (cv->loc != LOC_ARENA)
			continue;
		if (!same_shape(cv, &rs->vt[v]))
			return cm_seterr(cm, -EINVAL,
					 "value '%s': its shape or type differs from the compiled one (data-dependent "
					 "shape: run without compiling)", m->vals[v].name);
		arena_copy(cv, (uint8_t *)accel_buffer_ptr(cm->arena) + cv->off, rs->vt[v].data, true);
		count_copy(rs, cv->bytes);
	}
	release_values(rs);
	return 0;
}

/* resident (may be NULL): inputs already in the arena, only their shapes are checked */
static int bind(struct run_state *rs, const struct onnx_tensor *in, unsigned n, const uint8_t *resident)
{
	struct onnx_compiled *cm = rs->cm;
	struct onnx_model *m = cm->m;

	if (n != m->n_inputs)
		return cm_seterr(cm, -EINVAL, "the model has %u inputs, %u given", m->n_inputs, n);
	for (unsigned i = 0; i < n; i++) {
		const struct cval *cv = &cm->vals[m->inputs[i]];
		char desc[96];

		if ((!in[i].data && !(resident && resident[i])) || tensor_count(in[i].ndim, in[i].dims) != in[i].count || in[i].ndim > ONNX_MAX_DIMS)
			return cm_seterr(cm, -EINVAL, "input '%s': malformed tensor", m->vals[m->inputs[i]].name);
		if (!same_shape(cv, &in[i])) {
			onnx_tensor_describe(&in[i], desc, sizeof(desc));
			return cm_seterr(cm, -EINVAL, "input '%s': %s, but the model was compiled for other shapes",
					 m->vals[m->inputs[i]].name, desc);
		}
		if (cv->loc == LOC_ARENA && !(resident && resident[i])) {
			arena_copy(cv, (uint8_t *)accel_buffer_ptr(cm->arena) + cv->off, in[i].data, true);
			count_copy(rs, cv->bytes);
		}
	}
	return 0;
}

/* outputs NULL: they stay in the arena (cm_run_resident) */
static int compiled_run_locked(struct onnx_compiled *cm, const struct onnx_tensor *inputs, unsigned n_inputs,
			       const uint8_t *resident, struct onnx_tensor *outputs, unsigned n_outputs,
			       struct onnx_run_stats *stats, struct onnx_node_profile *prof)
{
	struct onnx_model *m = cm->m;
	struct onnx_run_stats local;
	struct run_state rs = { .cm = cm, .stats = stats ? stats : &local, .prof = prof, .rec = -1 };
	double t0 = now_ms();
	int ret, r2;

	memset(rs.stats, 0, sizeof(*rs.stats));
	cm->err[0] = 0;
	if (outputs && n_outputs != m->n_outputs)
		return cm_seterr(cm, -EINVAL, "the model has %u outputs, %u requested", m->n_outputs, n_outputs);
	if (!outputs)
		n_outputs = 0;
	for (unsigned i = 0; i < n_outputs; i++)
		memset(&outputs[i], 0, sizeof(outputs[i]));
	if (!cm->kept && !(cm->flags & ONNX_COMPILE_NO_REPLAY) &&
	    !(cm->kept = calloc(cm->n_steps ? cm->n_steps : 1, sizeof(*cm->kept))))
		return cm_seterr(cm, -ENOMEM, "out of memory");
	if (!cm->run_vals)
		cm->run_vals = calloc(m->n_vals ? m->n_vals : 1, sizeof(*cm->run_vals));
	rs.vt = cm->run_vals;
	if (run_reserve(&rs, cm->run_jobs) || !rs.vt) {
		free(rs.jobs);
		free(rs.kept);
		free(rs.job_node);
		return cm_seterr(cm, -ENOMEM, "out of memory");
	}
	if (prof)
		memset(prof, 0, sizeof(*prof) * m->n_nodes);
	ret = bind(&rs, inputs, n_inputs, resident);
	for (unsigned i = 0; !ret && i < cm->n_steps; i++) {
		const struct cstep *s = &cm->steps[i];
		double t = now_ms();

		if (CS_IS_DEVICE(s->kind)) {
			ret = submit_step(&rs, s);
			rs.stats->accel_nodes++;
		} else if (s->kind == CS_HOST) {
			ret = run_host_step(&rs, s);
		} else {
			continue;
		}
		if (prof) {	/* host ms: a device step's lowering and submission, a host step's run */
			struct onnx_node_profile *p = &prof[s->node];

			if (!p->ran)
				p->start_ms = t - t0;
			p->ran = true;
			p->failed = ret != 0;
			if (CS_IS_DEVICE(s->kind))	/* a host step: run_host_step says */
				p->on_device = true;
			p->host_ms += now_ms() - t;
		}
	}
	r2 = drain(&rs);
	if (!ret)
		ret = r2;
	for (unsigned i = 0; !ret && i < n_outputs; i++) {
		int v = m->outputs[i];

		if (cm->vals[v].loc == LOC_ARENA) {
			ret = arena_read(cm, v, &outputs[i]);
			count_copy(&rs, cm->vals[v].bytes);
		}
		else if (m->vals[v].is_const)
			ret = tensor_copy(&outputs[i], &m->vals[v].t) ? cm_seterr(cm, -ENOMEM, "out of memory") : 0;
		else
			ret = cm_seterr(cm, -EINVAL, "output '%s' was not computed", m->vals[v].name);
	}
	if (ret)
		for (unsigned i = 0; i < n_outputs; i++)
			onnx_tensor_release(&outputs[i]);
	release_values(&rs);	/* a failed host step's */
	cm->run_jobs = rs.n_jobs;
	free(rs.jobs);
	free(rs.kept);
	free(rs.job_node);
	return ret;
}

/* One run at a time per compiled model: they share its arena, its kept jobs and its messages. */
static int compiled_run(struct onnx_compiled *cm, const struct onnx_tensor *inputs, unsigned n_inputs,
			struct onnx_tensor *outputs, unsigned n_outputs, struct onnx_run_stats *stats,
			struct onnx_node_profile *prof)
{
	struct onnx_tensor *f32 = NULL;
	int ret;

	/* a half-precision network's FLOAT16 inputs as FLOAT, its outputs back (f16_promote.c) */
	if (onnx_f16_inputs(cm->m, inputs, n_inputs, &f32))
		return cm_seterr(cm, -ENOMEM, "out of memory");
	pthread_mutex_lock(&cm->lock);
	ret = compiled_run_locked(cm, f32 ? f32 : inputs, n_inputs, NULL, outputs, n_outputs, stats, prof);
	if (!ret && (ret = onnx_f16_outputs(cm->m, outputs, n_outputs))) {
		for (unsigned i = 0; i < n_outputs; i++)
			onnx_tensor_release(&outputs[i]);
		cm_seterr(cm, ret, "out of memory");
	}
	pthread_mutex_unlock(&cm->lock);
	onnx_f16_inputs_free(f32, n_inputs);
	return ret;
}

int cm_run_resident(struct onnx_compiled *cm, const struct onnx_tensor *inputs, unsigned n_inputs,
		    const uint8_t *resident, struct onnx_run_stats *stats)
{
	int ret;

	pthread_mutex_lock(&cm->lock);
	ret = compiled_run_locked(cm, inputs, n_inputs, resident, NULL, 0, stats, NULL);
	pthread_mutex_unlock(&cm->lock);
	return ret;
}

void cm_drop_kept(struct onnx_compiled *cm)
{
	if (cm->kept)
		for (unsigned si = 0; si < cm->n_steps; si++) {
			drop_kept(cm, si);
			free(cm->kept[si].jobs);
		}
	free(cm->kept);
	cm->kept = NULL;
}

int onnx_compiled_run(struct onnx_compiled *cm, const struct onnx_tensor *inputs, unsigned n_inputs,
		      struct onnx_tensor *outputs, unsigned n_outputs, struct onnx_run_stats *stats)
{
	return compiled_run(cm, inputs, n_inputs, outputs, n_outputs, stats, NULL);
}

int onnx_compiled_run_profile(struct onnx_compiled *cm, const struct onnx_tensor *inputs, unsigned n_inputs,
			      struct onnx_tensor *outputs, unsigned n_outputs, struct onnx_run_stats *stats,
			      struct onnx_node_profile *prof)
{
	return compiled_run(cm, inputs, n_inputs, outputs, n_outputs, stats, prof);
}
