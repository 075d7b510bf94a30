/* SPDX-License-Identifier: MIT */
/*
 * plan_cache.c - a model's compiled plans for one device, keyed by the inputs' dtypes and shapes, least
 * recently used evicted first (tnpu_onnx.h, "plan cache"; Documentation/onnx.md, "Plan cache").
 *
 * A plan is what onnx_compile() makes for one set of input shapes: its memory plan, packed weights and
 * kept jobs are sized for them, so a model with a symbolic batch needs one plan per batch it meets.  The
 * cache is a small array searched linearly: a handful of plans (the default 4, at most 256), each key
 * a few dozen integers, next to a compile (milliseconds to seconds) or a run it saves.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct pc_key {
	enum onnx_dtype dtype;
	unsigned ndim;
	int64_t dims[ONNX_MAX_DIMS];
};

struct pc_plan {
	struct onnx_compiled *cm;	/* NULL: a free slot */
	struct pc_key *key;		/* n_in entries */
	uint64_t used;			/* the cache's clock at its last run (eviction: the smallest) */
};

struct onnx_plan_cache {
	struct onnx_model *m;
	struct accel_dev *dev;
	unsigned flags, n_in;		/* onnx_compile's flags; the model's input count */
	struct pc_plan *plans;		/* ONNX_PLAN_CACHE_MAX slots, the first st.capacity in use */
	uint64_t clock;
	struct onnx_plan_cache_stats st;
	pthread_mutex_t lock;
	char err[ONNX_ERR_LEN];
};

static int pc_seterr(struct onnx_plan_cache *pc, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int pc_seterr(struct onnx_plan_cache *pc, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(pc->err, sizeof(pc->err), fmt, ap);
	va_end(ap);
	return ret;
}

static void plan_drop(struct onnx_plan_cache *pc, struct pc_plan *p)
{
	onnx_compiled_free(p->cm);
	free(p->key);
	memset(p, 0, sizeof(*p));
	pc->st.plans--;
}

int onnx_plan_cache_new(struct onnx_model *m, struct accel_dev *dev, unsigned flags, unsigned capacity,
			struct onnx_plan_cache **out, char *err, size_t errlen)
{
	struct onnx_plan_cache *pc;

	if (out)
		*out = NULL;
	if (!m || !dev || !out) {
		if (err && errlen)
			snprintf(err, errlen, "onnx_plan_cache_new: needs a model, a device and an out pointer");
		return -EINVAL;
	}
	if (capacity > ONNX_PLAN_CACHE_MAX) {
		if (err && errlen)
			snprintf(err, errlen, "onnx_plan_cache_new: capacity %u above %u", capacity, ONNX_PLAN_CACHE_MAX);
		return -EINVAL;
	}
	pc = calloc(1, sizeof(*pc));
	if (pc)
		pc->plans = calloc(ONNX_PLAN_CACHE_MAX, sizeof(*pc->plans));
	if (!pc || !pc->plans || pthread_mutex_init(&pc->lock, NULL)) {
		if (pc)
			free(pc->plans);
		free(pc);
		if (err && errlen)
			snprintf(err, errlen, "onnx_plan_cache_new: out of memory");
		return -ENOMEM;
	}
	pc->m = m;
	pc->dev = dev;
	pc->flags = flags;
	pc->n_in = onnx_model_n_inputs(m);
	pc->st.capacity = capacity ? capacity : ONNX_PLAN_CACHE_DEFAULT;
	*out = pc;
	return 0;
}

static bool key_matches(const struct pc_plan *p, const struct onnx_tensor *in, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (p->key[i].dtype != in[i].dtype || p->key[i].ndim != in[i].ndim ||
		    memcmp(p->key[i].dims, in[i].dims, in[i].ndim * sizeof(int64_t)))
			return false;
	return true;
}

/* The plan for these inputs, compiled now on a miss (evicting the least recently used); lock held. */
static int plan_for(struct onnx_plan_cache *pc, const struct onnx_tensor *in, struct onnx_compiled **out)
{
	struct pc_plan *victim = NULL;
	char msg[ONNX_ERR_LEN - 16];
	int ret;

	for (unsigned i = 0; i < pc->st.capacity; i++) {
		struct pc_plan *p = &pc->plans[i];

		if (p->cm && key_matches(p, in, pc->n_in)) {
			p->used = ++pc->clock;
			pc->st.hits++;
			*out = p->cm;
			return 0;
		}
		if (!victim || (victim->cm && (!p->cm || p->used < victim->used)))
			victim = p;
	}
	if (victim->cm) {
		plan_drop(pc, victim);
		pc->st.evictions++;
	}
	victim->key = calloc(pc->n_in ? pc->n_in : 1, sizeof(*victim->key));
	if (!victim->key)
		return pc_seterr(pc, -ENOMEM, "out of memory");
	msg[0] = 0;
	ret = onnx_compile(pc->m, pc->dev, in, pc->n_in, pc->flags, &victim->cm, msg, sizeof(msg));
	if (ret) {
		free(victim->key);
		memset(victim, 0, sizeof(*victim));
		return pc_seterr(pc, ret, "compile: %s", msg);
	}
	for (unsigned i = 0; i < pc->n_in; i++) {
		victim->key[i].dtype = in[i].dtype;
		victim->key[i].ndim = in[i].ndim;
		memcpy(victim->key[i].dims, in[i].dims, in[i].ndim * sizeof(int64_t));
	}
	victim->used = ++pc->clock;
	pc->st.plans++;
	pc->st.compiles++;
	*out = victim->cm;
	return 0;
}

/* The inputs' count and ranks; lock held. */
static int check_inputs(struct onnx_plan_cache *pc, const struct onnx_tensor *inputs, unsigned n_inputs)
{
	if (n_inputs != pc->n_in || (n_inputs && !inputs))
		return pc_seterr(pc, -EINVAL, "the model has %u inputs, %u given", pc->n_in, n_inputs);
	for (unsigned i = 0; i < n_inputs; i++)
		if (inputs[i].ndim > ONNX_MAX_DIMS)
			return pc_seterr(pc, -EINVAL, "input '%s': rank %u above %d", onnx_model_input_name(pc->m, i),
					 inputs[i].ndim, ONNX_MAX_DIMS);
	return 0;
}

int onnx_plan_cache_run(struct onnx_plan_cache *pc, const struct onnx_tensor *inputs, unsigned n_inputs,
			struct onnx_tensor *outputs, unsigned n_outputs, struct onnx_run_stats *stats)
{
	struct onnx_compiled *cm = NULL;
	int ret;

	if (!pc)
		return -EINVAL;
	pthread_mutex_lock(&pc->lock);
	ret = check_inputs(pc, inputs, n_inputs);
	if (!ret)
		ret = plan_for(pc, inputs, &cm);
	if (ret)
		goto out;
	pc->st.runs++;
	ret = onnx_compiled_run(cm, inputs, n_inputs, outputs, n_outputs, stats);
	if (ret)
		pc_seterr(pc, ret, "%s", onnx_compiled_error(cm));
out:
	pthread_mutex_unlock(&pc->lock);
	return ret;
}

int onnx_plan_cache_compile(struct onnx_plan_cache *pc, const struct onnx_tensor *inputs, unsigned n_inputs,
			    const struct onnx_compiled **out)
{
	struct onnx_compiled *cm = NULL;
	int ret;

	if (!pc)
		return -EINVAL;
	pthread_mutex_lock(&pc->lock);
	ret = check_inputs(pc, inputs, n_inputs);
	if (!ret)
		ret = plan_for(pc, inputs, &cm);
	pthread_mutex_unlock(&pc->lock);
	if (out)
		*out = ret ? NULL : cm;
	return ret;
}

int onnx_plan_cache_set_capacity(struct onnx_plan_cache *pc, unsigned capacity)
{
	if (!pc)
		return -EINVAL;
	pthread_mutex_lock(&pc->lock);
	if (!capacity || capacity > ONNX_PLAN_CACHE_MAX) {
		int ret = pc_seterr(pc, -EINVAL, "capacity %u: 1 to %u plans", capacity, ONNX_PLAN_CACHE_MAX);

		pthread_mutex_unlock(&pc->lock);
		return ret;
	}
	/* keep the most recently used: evict the oldest until the rest fit, then pack them in front */
	while (pc->st.plans > capacity) {
		struct pc_plan *old = NULL;

		for (unsigned i = 0; i < pc->st.capacity; i++)
			if (pc->plans[i].cm && (!old || pc->plans[i].used < old->used))
				old = &pc->plans[i];
		plan_drop(pc, old);
		pc->st.evictions++;
	}
	for (unsigned i = 0, j = 0; i < pc->st.capacity; i++)
		if (pc->plans[i].cm) {
			struct pc_plan p = pc->plans[i];

			pc->plans[i] = (struct pc_plan){ 0 };
			pc->plans[j++] = p;
		}
	pc->st.capacity = capacity;
	pthread_mutex_unlock(&pc->lock);
	return 0;
}

int onnx_plan_cache_stats(struct onnx_plan_cache *pc, struct onnx_plan_cache_stats *out)
{
	if (!pc || !out)
		return -EINVAL;
	pthread_mutex_lock(&pc->lock);
	*out = pc->st;
	pthread_mutex_unlock(&pc->lock);
	return 0;
}

const char *onnx_plan_cache_error(const struct onnx_plan_cache *pc)
{
	return pc ? pc->err : "no plan cache";
}

void onnx_plan_cache_free(struct onnx_plan_cache *pc)
{
	if (!pc)
		return;
	for (unsigned i = 0; i < ONNX_PLAN_CACHE_MAX; i++)
		if (pc->plans[i].cm)
			plan_drop(pc, &pc->plans[i]);
	free(pc->plans);
	pthread_mutex_destroy(&pc->lock);
	free(pc);
}
