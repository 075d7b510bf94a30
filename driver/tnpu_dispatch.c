// SPDX-License-Identifier: GPL-2.0-only
/*
 * tnpu dispatch: the driver's ready lists between drm_sched and a hardware ring, and the choice of
 * the next job the device gets.
 *
 * run_job puts a job on its flow (one per context, ring and priority); the dispatcher moves jobs
 * from the flows to the ring while the ring has room for their priority: at most TNPU_DEPTH_HIGH
 * HIGH jobs and TNPU_DEPTH_NORMAL NORMAL-or-LOW job on the hardware at once, a lower priority only
 * while no higher one waits, and within a priority the flow that used the least device time first
 * (start-time fair queueing on the engine time fdinfo reports). A HIGH job therefore waits behind
 * at most one NORMAL job (and earlier HIGH ones), and equally busy files of one priority share
 * the ring's time equally, whatever their backlogs.
 *
 * Everything here runs under tdev->lock, from run_job, the IRQ thread, recovery and resume.
 */
#include <linux/dma-fence.h>
#include <linux/ktime.h>

#include "tnpu_drv.h"
#include "tnpu_accel.h"
#include "tnpu_trace.h"

static const u32 tnpu_depth[2] = { TNPU_DEPTH_NORMAL, TNPU_DEPTH_HIGH };

/*
 * issue #28: how long a ring stays free of NORMAL and LOW work after a HIGH job completes while
 * more HIGH jobs of that ring wait for their dependencies (the next job of an inference becomes
 * ready when this one's fence has signalled, a scheduler work item later).
 */
#define TNPU_HIGH_HOLD_NS	(2 * NSEC_PER_MSEC)

static u32 tnpu_prio_class(u32 prio)
{
	return prio == DRM_TNPU_QUEUE_PRIORITY_HIGH;
}

void tnpu_ctx_init_flows(struct tnpu_ctx *ctx)
{
	u32 q, p;

	for (q = 0; q < TNPU_MAX_QUEUES; q++) {
		for (p = 0; p < TNPU_NUM_PRIO; p++) {
			INIT_LIST_HEAD(&ctx->flows[q][p].jobs);
			INIT_LIST_HEAD(&ctx->flows[q][p].node);
		}
	}
}

void tnpu_ring_init_flows(struct tnpu_ring *ring)
{
	u32 p;

	for (p = 0; p < TNPU_NUM_PRIO; p++)
		INIT_LIST_HEAD(&ring->flows[p]);
}

static struct tnpu_flow *tnpu_job_flow(struct tnpu_job *job)
{
	return &job->ctx->flows[job->ring->idx][job->prio];
}

void tnpu_ring_write_entry(struct tnpu_ring *ring, struct tnpu_job *job)
{
	struct tnpu_ring_entry *e = &ring->entries[ring->tail];

	e->ctx = cpu_to_le16(job->ctx->id);
	e->flags = cpu_to_le16(TNPU_RING_ENTRY_IRQ);
	e->cmd_len = cpu_to_le32(job->cmd_len);
	/* fault injection: VA 0 is never mapped (TNPU_VA_START) */
	e->cmd_va = cpu_to_le64(job->inject_fault ? 0 : job->cmd_va);
	e->seqno = cpu_to_le64(job->hw_seqno);
	e->counters_addr = 0;
	/* every job gets its counter record in the slot of its entry (tnpu_perfmon.c) */
	if (ring->counters) {
		memset(&ring->counters[ring->tail], 0, sizeof(*ring->counters));
		job->counters_slot = ring->tail;
		e->flags |= cpu_to_le16(TNPU_RING_ENTRY_COUNTERS);
		e->counters_addr = cpu_to_le64(ring->counters_dma +
					       ring->tail * sizeof(*ring->counters));
	}
	/*
	 * queues.md "Preemption": NORMAL and LOW jobs may stop at their preemption points, HIGH
	 * ones never. A resumed job's record goes into its new slot; a fresh job's slot must not
	 * look preempted (the retire loop reads it).
	 */
	job->preemptible = ring->saves && tnpu_prio_class(job->prio) == 0;
	job->preempt_asked = false;
	if (job->preemptible) {
		struct tnpu_save_record *rec = &ring->saves[ring->tail];

		job->save_slot = ring->tail;
		e->flags |= cpu_to_le16(TNPU_RING_ENTRY_PREEMPTIBLE);
		if (job->resume) {
			*rec = job->save;
			e->flags |= cpu_to_le16(TNPU_RING_ENTRY_RESUME);
		} else {
			WRITE_ONCE(rec->state, 0);
		}
	}
	/* fault injection: an odd counters_addr is RING_ENTRY, with or without COUNTERS */
	if (job->inject_error)
		e->counters_addr |= cpu_to_le64(1);
	ring->tail = (ring->tail + 1) % TNPU_RING_ENTRIES;
}

void tnpu_ring_kick(struct tnpu_ring *ring)
{
	struct tnpu_device *tdev = ring->tdev;

	/* writel orders the coherent-memory entry writes before the doorbell */
	tnpu_qwrite(tdev, ring->idx, TNPU_Q_TAIL, ring->tail);
	tnpu_qwrite(tdev, ring->idx, TNPU_Q_DOORBELL, 1);
}

/* run_job: @job (its hardware fence initialised) waits for its ring in its flow. */
void tnpu_ring_queue(struct tnpu_ring *ring, struct tnpu_job *job)
{
	struct tnpu_flow *flow = tnpu_job_flow(job);

	lockdep_assert_held(&ring->tdev->lock);
	if (list_empty(&flow->jobs)) {
		/* an idle flow banks no credit: it starts at the ring's virtual clock */
		flow->vtime = max(flow->vtime, ring->vclock[job->prio]);
		list_add_tail(&flow->node, &ring->flows[job->prio]);
	}
	list_add_tail(&job->node, &flow->jobs);
	ring->queued++;
}

/*
 * A job the device stopped at a preemption point goes back to the head of its flow (its queue's
 * later jobs stay behind it) and continues from its save record when its turn comes again.
 */
static void tnpu_ring_requeue(struct tnpu_ring *ring, struct tnpu_job *job)
{
	struct tnpu_flow *flow = tnpu_job_flow(job);

	if (list_empty(&flow->jobs)) {
		flow->vtime = max(flow->vtime, ring->vclock[job->prio]);
		list_add_tail(&flow->node, &ring->flows[job->prio]);
	}
	list_add(&job->node, &flow->jobs);
	ring->queued++;
}

/* The oldest job of the flow with the least device time; ties in round-robin order. */
static struct tnpu_job *tnpu_flow_pop(struct tnpu_ring *ring, u32 prio)
{
	struct tnpu_flow *flow, *best = NULL;
	struct tnpu_job *job;

	list_for_each_entry(flow, &ring->flows[prio], node)
		if (!best || flow->vtime < best->vtime)
			best = flow;
	job = list_first_entry(&best->jobs, struct tnpu_job, node);
	list_del_init(&job->node);
	ring->queued--;
	ring->vclock[prio] = best->vtime;
	if (list_empty(&best->jobs))
		list_del_init(&best->node);
	else
		list_move_tail(&best->node, &ring->flows[prio]);
	return job;
}

/* A HIGH job of @ring completed: hold lower priorities off while more HIGH jobs are coming. */
void tnpu_ring_high_done(struct tnpu_ring *ring)
{
	if (atomic_read(&ring->high_waiting) <= 0)
		return;
	ring->hold_until_ns = ktime_get_ns() + TNPU_HIGH_HOLD_NS;
	mod_delayed_work(system_wq, &ring->hold_work, nsecs_to_jiffies(TNPU_HIGH_HOLD_NS) + 1);
}

void tnpu_ring_hold_work(struct work_struct *work)
{
	struct tnpu_ring *ring = container_of(to_delayed_work(work), struct tnpu_ring, hold_work);
	struct tnpu_device *tdev = ring->tdev;

	spin_lock(&tdev->lock);
	tnpu_ring_dispatch(ring);
	spin_unlock(&tdev->lock);
}

/* SUBMIT's count of a HIGH job waiting for run_job, dropped once (run_job or the kill path). */
void tnpu_job_high_uncount(struct tnpu_job *job)
{
	if (job->high_counted) {
		job->high_counted = false;
		atomic_dec(&job->ring->high_waiting);
	}
}

/* The next job for the hardware: the highest priority waiting, if the ring has room for it. */
static struct tnpu_job *tnpu_ring_pick(struct tnpu_ring *ring)
{
	int prio;

	for (prio = TNPU_NUM_PRIO - 1; prio >= 0; prio--) {
		u32 class = tnpu_prio_class(prio);

		if (list_empty(&ring->flows[prio]))
			continue;
		/* a lower priority never takes the place a waiting higher one is due */
		if (ring->hw_jobs[class] >= tnpu_depth[class])
			return NULL;
		/* nor the ring while the next HIGH job of an inference is about to come */
		if (!class && atomic_read(&ring->high_waiting) > 0 &&
		    ktime_get_ns() < ring->hold_until_ns)
			return NULL;
		return tnpu_flow_pop(ring, prio);
	}
	return NULL;
}

/*
 * A job that leaves the ready lists without running: its counters BO status first (uapi.md), then
 * its hardware fence, whose error the scheduler passes on to the out-fence.
 */
static void tnpu_job_fail_queued(struct tnpu_job *job, int err)
{
	tnpu_job_write_status(job, err);
	dma_fence_set_error(job->hw_fence, err);
	dma_fence_signal(job->hw_fence);
}

static void tnpu_ring_start(struct tnpu_ring *ring, struct tnpu_job *job)
{
	struct tnpu_device *tdev = ring->tdev;

	job->hw_seqno = ++ring->seqno;
	job->inject_hang = atomic_xchg(&tdev->inject_hang, 0);
	job->inject_fault = atomic_xchg(&tdev->inject_fault, 0);
	job->inject_error = atomic_xchg(&tdev->inject_error, 0);
	job->run_ns = ktime_get_ns();
	if (list_empty(&ring->inflight)) {
		ring->progress = jiffies;
		ring->busy_since = job->run_ns;
	}
	list_add_tail(&job->node, &ring->inflight);
	ring->hw_jobs[tnpu_prio_class(job->prio)]++;
	tnpu_ring_write_entry(ring, job);
	/* hang injection: the ring stops fetching, so this job never completes */
	if (job->inject_hang)
		tnpu_qwrite(tdev, ring->idx, TNPU_Q_CTRL, 0);
	tnpu_ring_kick(ring);
	trace_tnpu_job_run(job);
}

/*
 * issue #28: a HIGH job of this ring (on the hardware or waiting) while the job the device runs
 * first is a preemptible NORMAL/LOW one: ask the device once to stop that job at its next point.
 */
static void tnpu_ring_preempt(struct tnpu_ring *ring)
{
	struct tnpu_job *front = list_first_entry_or_null(&ring->inflight, struct tnpu_job, node);
	struct tnpu_job *job;

	if (!front || !front->preemptible || front->preempt_asked)
		return;
	/* a system suspend drains the rings: a job stopped at a point resumes after it */
	if (!ring->hw_jobs[1] && list_empty(&ring->flows[DRM_TNPU_QUEUE_PRIORITY_HIGH]) &&
	    !ring->tdev->sleeping)
		return;
	/* a Q_CTRL write also sets ENABLE: not on a ring that hang injection stopped */
	list_for_each_entry(job, &ring->inflight, node)
		if (job->inject_hang)
			return;
	front->preempt_asked = true;
	tnpu_qwrite(ring->tdev, ring->idx, TNPU_Q_CTRL, TNPU_Q_CTRL_ENABLE | TNPU_Q_CTRL_PREEMPT);
}

/*
 * The device stopped @job at a preemption point (its save slot says so): off the hardware without
 * a signal, its engine time so far charged as at a completion, back to the head of its flow.
 */
void tnpu_ring_job_preempted(struct tnpu_ring *ring, struct tnpu_job *job)
{
	struct tnpu_usage *usage = &job->ctx->usage;
	u64 now = ktime_get_ns(), start = max(job->run_ns, ring->last_done_ns);

	job->save = ring->saves[job->save_slot];
	job->resume = true;
	list_del_init(&job->node);
	ring->last_done_ns = now;
	job->busy_ns = now > start ? now - start : 0;
	usage->busy_ns[ring->idx] += job->busy_ns;
	usage->rings_used |= BIT(ring->idx);
	tnpu_ring_job_done(ring, job);
	if (list_empty(&ring->inflight))
		ring->busy_ns += now - ring->busy_since;
	ring->jobs_preempted++;
	ring->progress = jiffies;
	tnpu_ring_requeue(ring, job);
}

/*
 * Hands the ring every job it has room for; not while the device is held off or gone, and none
 * while the system goes to sleep (the rings drain then).
 */
void tnpu_ring_dispatch(struct tnpu_ring *ring)
{
	struct tnpu_device *tdev = ring->tdev;
	struct tnpu_job *job;

	lockdep_assert_held(&tdev->lock);
	if (tdev->unplugged || tdev->in_reset)
		return;
	while (!tdev->sleeping && (job = tnpu_ring_pick(ring))) {
		/* uapi.md: jobs of a faulted context that have not started are cancelled */
		if (READ_ONCE(job->ctx->faulted)) {
			tnpu_job_fail_queued(job, -ECANCELED);
			continue;
		}
		tnpu_ring_start(ring, job);
	}
	tnpu_ring_preempt(ring);
}

void tnpu_rings_dispatch(struct tnpu_device *tdev)
{
	u32 q;

	for (q = 0; q < tdev->num_rings; q++)
		tnpu_ring_dispatch(&tdev->rings[q]);
}

/* @job, which was on the hardware, is done: free its place and charge its flow. */
void tnpu_ring_job_done(struct tnpu_ring *ring, struct tnpu_job *job)
{
	ring->hw_jobs[tnpu_prio_class(job->prio)]--;
	tnpu_job_flow(job)->vtime += job->busy_ns;
}

/* Unplug: every job still in the ready lists fails with @err. */
void tnpu_ring_fail_queued(struct tnpu_ring *ring, int err)
{
	u32 p;

	lockdep_assert_held(&ring->tdev->lock);
	for (p = 0; p < TNPU_NUM_PRIO; p++)
		while (!list_empty(&ring->flows[p]))
			tnpu_job_fail_queued(tnpu_flow_pop(ring, p), err);
}
