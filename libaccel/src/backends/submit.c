/* SPDX-License-Identifier: MIT */
/*
 * submit.c - submitting a command stream as a job, and running a kept job's commands again
 * (ACCEL_SUBMIT_KEEP, accel_job_replay: "lower once, run many", as CONFIG once / EXE many is for
 * one job).  A replay costs a copy of the command bytes and one submission per segment; lowering a
 * convolution again costs its planning and encoding, which in a TCG guest is most of a small job's
 * host time.  No lowering encodes buffer contents into its commands (the automatic operations'
 * measured densities only pick which exact path runs), so a replay on new contents computes what
 * a fresh lowering would, on the path the first one chose.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The deps' last hardware jobs (each job's segments run in order, so its last one is enough). */
static int collect_deps(struct accel_dev *dev, const struct accel_submit *sub, struct accel_hwjob ***out,
			unsigned *n_out)
{
	struct accel_hwjob **deps;
	unsigned n = 0;

	*out = NULL;
	*n_out = 0;
	if (!sub)
		return 0;
	if (sub->flags & ~ACCEL_SUBMIT_KEEP)
		return accel_seterr(dev, -EINVAL, "accel_submit.flags: unknown bits 0x%x",
				    sub->flags & ~ACCEL_SUBMIT_KEEP);
	if (sub->n_deps && !sub->deps)
		return accel_seterr(dev, -EINVAL, "accel_submit: n_deps without deps");
	for (unsigned i = 0; i < sub->n_deps; i++) {
		const struct accel_job *d = sub->deps[i];

		if (!d || d->dev != dev)
			return accel_seterr(dev, -EINVAL, "accel_submit: dependency %u is not a job of this device", i);
		if (d->status != 1 && d->status != 0)
			return accel_seterr(dev, -ECANCELED, "dependency %u failed (%s)", i, accel_strerror(d->status));
	}
	if (!sub->n_deps)
		return 0;
	deps = calloc(sub->n_deps, sizeof(*deps));
	if (!deps)
		return accel_seterr(dev, -ENOMEM, "out of memory");
	for (unsigned i = 0; i < sub->n_deps; i++)
		if (sub->deps[i]->n_hw)
			deps[n++] = &sub->deps[i]->hw[sub->deps[i]->n_hw - 1];
	*out = deps;
	*n_out = n;
	return 0;
}

/* Submit every segment of buf as one hardware job, in order, on the device's queue. */
static int submit_segments(struct accel_dev *dev, const uint8_t *buf, size_t len, const size_t *cuts,
			   unsigned n_cuts, struct accel_buffer *const *bos, unsigned n_bos,
			   const struct accel_submit *sub, struct accel_job **out)
{
	struct accel_hwjob **deps;
	unsigned n_deps;
	struct accel_job *j;
	size_t start = 0;
	int ret;

	*out = NULL;
	if (!len)
		return accel_seterr(dev, -EINVAL, "command stream is empty");
	ret = collect_deps(dev, sub, &deps, &n_deps);
	if (ret)
		return ret;
	ret = accel_job_new(dev, n_cuts + 1, &j);
	if (ret) {
		free(deps);
		return ret;
	}
	for (unsigned s = 0; s <= n_cuts; s++) {
		size_t end = s < n_cuts ? cuts[s] : len;

		if (end == start)
			continue;
		if (end - start > dev->caps.max_cmdbuf) {
			ret = accel_seterr(dev, -E2BIG, "command buffer of %zu bytes exceeds the device limit %u",
					   end - start, dev->caps.max_cmdbuf);
			break;
		}
		ret = dev->ops->submit(dev, buf + start, end - start, bos, n_bos, deps, n_deps, &j->hw[j->n_hw]);
		if (ret)
			break;
		j->n_hw++;
		/* Later segments follow on the same queue: in-order, no explicit dependency needed. */
		n_deps = 0;
		start = end;
	}
	free(deps);
	if (ret && !j->n_hw) {
		accel_job_free(j);
		return ret;
	}
	if (ret) {
		/* Partially submitted: wait for what runs, report the error. */
		(void)accel_job_wait(j, -1);
		accel_job_free(j);
		return ret;
	}
	*out = j;
	return 0;
}

void accel_kept_put(struct accel_kept *k)
{
	if (!k || --k->refs)
		return;
	for (unsigned i = 0; i < k->n_owned; i++)
		accel_buffer_free(k->owned[i]);
	free(k->buf);
	free(k->cuts);
	free(k->bos);
	free(k->serials);
	free(k);
}

/* A copy of cs for later replays (NULL: out of memory). */
static struct accel_kept *kept_new(struct accel_cmdstream *cs)
{
	struct accel_kept *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->refs = 1;
	k->len = cs->len;
	k->n_cuts = cs->n_cuts;
	k->n_bos = cs->n_bos;
	k->buf = malloc(cs->len);
	k->cuts = malloc((cs->n_cuts ? cs->n_cuts : 1) * sizeof(*k->cuts));
	k->bos = malloc((cs->n_bos ? cs->n_bos : 1) * sizeof(*k->bos));
	k->serials = malloc((cs->n_bos ? cs->n_bos : 1) * sizeof(*k->serials));
	if (!k->buf || !k->cuts || !k->bos || !k->serials) {
		accel_kept_put(k);
		return NULL;
	}
	memcpy(k->buf, cs->buf, cs->len);
	if (cs->n_cuts)
		memcpy(k->cuts, cs->cuts, cs->n_cuts * sizeof(*k->cuts));
	for (unsigned i = 0; i < cs->n_bos; i++) {
		k->bos[i] = cs->bos[i];
		k->serials[i] = cs->bos[i]->serial;
	}
	return k;
}

int cs_submit(struct accel_cmdstream *cs, const struct accel_submit *sub, struct accel_job **out)
{
	struct accel_dev *dev = cs->dev;
	struct accel_kept *k = NULL;
	int ret;

	*out = NULL;
	if (cs->err)
		return accel_seterr(dev, cs->err, "command stream: out of memory");
	if (sub && sub->flags & ACCEL_SUBMIT_KEEP && cs->len && !(k = kept_new(cs)))
		return accel_seterr(dev, -ENOMEM, "out of memory");
	ret = submit_segments(dev, cs->buf, cs->len, cs->cuts, cs->n_cuts, cs->bos, cs->n_bos, sub, out);
	if (ret)
		accel_kept_put(k);
	else
		(*out)->kept = k;
	return ret;
}

/* Is b (as it was when the stream was kept) still a live buffer of dev? */
static bool buffer_alive(struct accel_dev *dev, const struct accel_buffer *b, uint64_t serial)
{
	for (const struct accel_link *l = dev->objs.next; l != &dev->objs; l = l->next)
		if (l->kind == ACCEL_OBJ_BUFFER && accel_container_of(l, struct accel_buffer, link) == b)
			return b->serial == serial;
	return false;
}

int accel_job_replay(struct accel_job *job, const struct accel_submit *sub, struct accel_job **out)
{
	struct accel_dev *dev;
	struct accel_kept *k;
	int ret;

	if (!job)
		return -EINVAL;
	dev = job->dev;
	if (!out)
		return accel_seterr(dev, -EINVAL, "accel_job_replay: out is NULL");
	*out = NULL;
	accel_clearerr(dev);
	k = job->kept;
	if (!k)
		return accel_seterr(dev, -EOPNOTSUPP, "accel_job_replay: the job kept no commands (submitted "
				    "without ACCEL_SUBMIT_KEEP, or its operation ran on the host)");
	for (unsigned i = 0; i < k->n_bos; i++)
		if (!buffer_alive(dev, k->bos[i], k->serials[i]))
			return accel_seterr(dev, -ESTALE, "accel_job_replay: buffer %u of the job's commands was freed", i);
	ret = submit_segments(dev, k->buf, k->len, k->cuts, k->n_cuts, k->bos, k->n_bos, sub, out);
	if (!ret) {
		k->refs++;
		(*out)->kept = k;
	}
	return ret;
}
