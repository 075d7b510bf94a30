/* SPDX-License-Identifier: MIT */
/* job.c - jobs: one or more hardware command buffers, a status and summed counters. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int accel_job_new(struct accel_dev *dev, unsigned n_hw, struct accel_job **out)
{
	struct accel_job *j = calloc(1, sizeof(*j));

	if (!j)
		return accel_seterr(dev, -ENOMEM, "out of memory");
	j->hw = calloc(n_hw ? n_hw : 1, sizeof(*j->hw));
	if (!j->hw) {
		free(j);
		return accel_seterr(dev, -ENOMEM, "out of memory");
	}
	j->dev = dev;
	accel_obj_add(&dev->jobs, &j->link, ACCEL_OBJ_JOB);
	j->n_hw = 0;
	j->status = 1;
	*out = j;
	return 0;
}

static void sum_counters(struct accel_job *j)
{
	struct accel_counters *s = &j->sum;

	memset(s, 0, sizeof(*s));
	for (unsigned i = 0; i < j->n_hw; i++) {
		const uint64_t *c = j->hw[i].counters;

		s->total_cycles += c[0];
		s->compute_cycles += c[1];
		s->dma_cycles += c[2];
		s->stall_cycles += c[3];
		s->macs_dense += c[4];
		s->macs_effective += c[5];
		s->bytes_h2d += c[6];
		s->bytes_d2h += c[7];
		s->bytes_dispatch += c[8];
		s->bytes_config += c[9];
		s->instructions += c[10];
		s->bank_swaps += c[11];
		s->mmu_faults += c[12];
		s->commands += c[13];
		s->oq_accesses += c[14];
		s->sfu_ops += c[15];
		s->load_cycles += c[16];
		s->plan_hits += c[26];	/* TNPU_CNT_PLAN_HITS */
		s->plan_misses += c[27];	/* TNPU_CNT_PLAN_MISSES */
		s->vec_ops += c[28];	/* TNPU_CNT_VEC_OPS */
		s->vec_cycles += c[29];	/* TNPU_CNT_VEC_CYCLES */
		s->store_cycles += c[17];
		s->ring_rows += c[22];
		s->ring_wait_cycles += c[23];
		s->ring_full_cycles += c[24];
		s->ring_bytes += c[25];
		s->row_busy_max += c[18];
		s->row_busy_sum += c[19];
		s->busy_rows = ACCEL_MAX(s->busy_rows, c[20]);
		s->lb_macs_moved += c[21];
	}
	s->hw_jobs = j->n_hw;
}

int accel_job_wait(struct accel_job *job, int64_t timeout_ns)
{
	struct accel_dev *dev;

	if (!job)
		return -EINVAL;
	dev = job->dev;
	if (job->status != 1)
		return job->status;
	for (unsigned i = 0; i < job->n_hw; i++) {
		struct accel_hwjob *hw = &job->hw[i];
		int ret;

		if (!hw->done) {
			ret = dev->ops->wait(dev, hw, timeout_ns);
			if (ret == -ETIME)
				return accel_seterr(dev, -ETIME, "job still running after the timeout");
			if (ret) {
				job->status = ret;
				return ret;
			}
		}
		if (hw->status) {
			job->status = hw->status;
			sum_counters(job);
			return hw->status;
		}
	}
	sum_counters(job);
	job->status = 0;
	return 0;
}

int accel_job_counters(struct accel_job *job, struct accel_counters *out)
{
	int ret;

	if (!job)
		return -EINVAL;
	if (!out)
		return accel_seterr(job->dev, -EINVAL, "accel_job_counters: out is NULL");
	ret = accel_job_wait(job, -1);
	*out = job->sum;
	return ret == -EIO ? 0 : ret;
}

/* The 64-bit counters are two runs of uint64_t around hw_jobs/pad; walking them (rather than naming
 * each) sums a counter added to the struct later too (issue #27: per-field sums lost vec_ops). */
_Static_assert(offsetof(struct accel_counters, hw_jobs) % sizeof(uint64_t) == 0 &&
		       offsetof(struct accel_counters, pad) + sizeof(uint32_t) ==
			       offsetof(struct accel_counters, hw_jobs) + sizeof(uint64_t) &&
		       sizeof(struct accel_counters) % sizeof(uint64_t) == 0,
	       "struct accel_counters: uint64_t counters around one uint32_t hw_jobs + pad");

void accel_counters_add(struct accel_counters *sum, const struct accel_counters *add)
{
	const size_t lo = offsetof(struct accel_counters, hw_jobs) / sizeof(uint64_t);
	const size_t n = sizeof(*sum) / sizeof(uint64_t);
	uint64_t *d = (uint64_t *)sum, busy;
	const uint64_t *s = (const uint64_t *)add;

	if (!sum || !add)
		return;
	busy = ACCEL_MAX(sum->busy_rows, add->busy_rows);
	for (size_t i = 0; i < n; i++)
		if (i != lo)	/* hw_jobs and pad */
			d[i] += s[i];
	sum->hw_jobs += add->hw_jobs;
	sum->busy_rows = busy;	/* rows used: a maximum, as over one job's hardware jobs */
}

void accel_job_free(struct accel_job *job)
{
	if (!job)
		return;
	if (job->status == 1)
		(void)accel_job_wait(job, -1);
	for (unsigned i = 0; i < job->n_hw; i++)
		if (job->dev->ops->hw_release)
			job->dev->ops->hw_release(job->dev, &job->hw[i]);
	for (unsigned i = 0; i < job->n_owned; i++)
		accel_buffer_free(job->owned[i]);
	accel_kept_put(job->kept);
	accel_obj_del(&job->link);
	free(job->hw);
	free(job);
}

int accel_op_finish_owned(struct accel_dev *dev, struct accel_job *j, struct accel_buffer **owned, unsigned n,
			  struct accel_job **job)
{
	/* kept commands read the constants: they live as long as the last replay */
	for (unsigned i = 0; i < n; i++) {
		if (j->kept && j->kept->n_owned < 4)
			j->kept->owned[j->kept->n_owned++] = owned[i];
		else if (!j->kept && j->n_owned < 4)
			j->owned[j->n_owned++] = owned[i];
	}
	return accel_op_finish(dev, j, job);
}

int accel_op_submit(struct accel_dev *dev, struct accel_cmdstream *cs, int ret, const struct accel_submit *sub,
		    struct accel_buffer **owned, unsigned n, struct accel_job **job)
{
	struct accel_job *j;

	if (!ret)
		ret = cs_submit(cs, sub, &j);
	cs_fini(cs);
	if (ret) {
		for (unsigned i = 0; i < n; i++)
			accel_buffer_free(owned[i]);
		return ret;
	}
	return accel_op_finish_owned(dev, j, owned, n, job);
}

/* Common tail of every operation: hand the job out or wait for it (synchronous call). */
int accel_op_begin(struct accel_dev *dev, const void *desc, const char *fn, struct accel_job **job)
{
	if (job)
		*job = NULL;
	if (!dev)
		return -EINVAL;
	accel_clearerr(dev);
	if (!desc)
		return accel_seterr(dev, -EINVAL, "%s: descriptor is NULL", fn);
	return 0;
}

int accel_op_finish(struct accel_dev *dev, struct accel_job *j, struct accel_job **job)
{
	int ret;

	if (job) {
		*job = j;
		return 0;
	}
	ret = accel_job_wait(j, -1);
	accel_job_free(j);
	if (ret && !dev->err[0])
		accel_seterr(dev, ret, "job failed: %s", accel_strerror(ret));
	return ret;
}
