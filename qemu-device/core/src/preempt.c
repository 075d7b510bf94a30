/* SPDX-License-Identifier: MIT */
/*
 * Preemption points, save records and RESUME (Documentation/hardware/queues.md
 * "Preemption", commands.md "Preemption points").
 *
 * Nothing on-chip is saved: a point drops the storage units, CONFIG state,
 * slots, accumulators and LUTs in every run (tnpu_onchip_reset), so the record
 * holds only the job's progress (resume offset, modelled time, counters, row
 * busy times, island 0's semaphore tokens and the island selection).  A record
 * can therefore only change its own job's counters and timing, whatever it says.
 */
#include "internal.h"

static void st16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void st32(uint8_t *p, uint32_t v)
{
	for (unsigned i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void st64(uint8_t *p, uint64_t v)
{
	st32(p, (uint32_t)v);
	st32(p + 4, (uint32_t)(v >> 32));
}

void tnpu_exec_preempt(struct tnpu_exec *ex, bool on)
{
	atomic_store(&ex->preempt, on);
}

static bool rings_valid(const struct tnpu_exec *ex)
{
	for (unsigned i = 0; i < TNPU_NUM_RINGS; i++)
		if (ex->ring[i].valid)
			return true;
	return false;
}

/* Live state a record does not carry: tokens of islands other than 0. */
static bool point_eligible(const struct tnpu_exec *ex)
{
	for (unsigned i = 1; i < ex->n_isl; i++)
		for (unsigned s = 0; s < TNPU_NUM_SEMS; s++)
			if (ex->isl_rt[i].sem[s].avail || ex->isl_rt[i].sem[s].n)
				return false;
	return true;
}

/* Every engine, row and AUX queue of every island waits for the job's time so far. */
static void barrier(struct tnpu_exec *ex, uint64_t t)
{
	for (unsigned i = 0; i < ex->n_isl; i++) {
		for (unsigned e = 0; e < TNPU_ENGINE_NUM; e++)
			ex->isl_rt[i].F[e] = t;
		ex->isl_rt[i].aux = t;
		ex->isl_rt[i].P = t;
	}
	for (unsigned r = 0; r < ex->cfg.rows; r++)
		ex->R[r] = t;
	ex->P = t;
	ex->compute_end = TNPU_MAX(ex->compute_end, t);
}

bool tnpu_preempt_point(struct tnpu_exec *ex, uint32_t off)
{
	const struct tnpu_ring_entry *e = ex->entry;
	struct tnpu_result *res = ex->res;
	uint64_t t = tnpu_job_time(ex);
	uint8_t *r;

	barrier(ex, t);
	/* an initialised ring (chaining) is on-chip data a point cannot drop: no point then */
	if (rings_valid(ex))
		return false;
	/*
	 * commands.md "Preemption points": the on-chip data is dropped whether or not the job stops,
	 * so a program that needs any of it after the point fails (or differs) in every run, not only
	 * in a preempted one, and a resumed run is the unpreempted one by construction.
	 */
	tnpu_onchip_reset(ex);
	if (!ex->preemptible || off == ex->resume_off || !atomic_load(&ex->preempt) || !point_eligible(ex))
		return false;
	/* the command at the point runs (and is counted) in the resumed job */
	res->counters[TNPU_CNT_COMMANDS]--;
	r = res->save;
	memset(r, 0, TNPU_SAVE_BYTES);
	st32(r + TNPU_SAVE_OFF_MAGIC, TNPU_SAVE_MAGIC);
	st16(r + TNPU_SAVE_OFF_VERSION, TNPU_SAVE_VERSION);
	r[TNPU_SAVE_OFF_ISLAND] = (uint8_t)ex->cur;
	st32(r + TNPU_SAVE_OFF_RESUME, off);
	st32(r + TNPU_SAVE_OFF_CMD_LEN, e->cmd_len);
	st64(r + TNPU_SAVE_OFF_CMD_VA, e->cmd_va);
	st16(r + TNPU_SAVE_OFF_CTX, e->ctx);
	st64(r + TNPU_SAVE_OFF_TIME, t);
	st64(r + TNPU_SAVE_OFF_WORK, ex->work);
	st64(r + TNPU_SAVE_OFF_SEQNO, e->seqno);
	st32(r + TNPU_SAVE_OFF_STATE, TNPU_SAVE_PREEMPTED);
	for (unsigned row = 0; row < TNPU_MAX_ROWS; row++)
		st64(r + TNPU_SAVE_OFF_ROW_BUSY + 8 * row, res->row_busy[row]);
	for (unsigned i = 0; i < TNPU_CNT_NUM && i < TNPU_CNT_SLOTS; i++)
		st64(r + TNPU_SAVE_OFF_COUNTERS + 8 * i, res->counters[i]);
	for (unsigned i = 0; i < TNPU_NUM_SEMS; i++)
		st32(r + TNPU_SAVE_OFF_SEMS + 4 * i, (uint32_t)ex->isl_rt[0].sem[i].avail);
	res->preempted = true;
	res->err_cmd_offset = off;
	return true;
}

static uint32_t bad(struct tnpu_exec *ex, uint32_t field)
{
	return tnpu_fail(ex, TNPU_ERR_RESUME, field, ex->save_pa);
}

uint32_t tnpu_resume_check(struct tnpu_exec *ex, const uint8_t *r)
{
	const struct tnpu_ring_entry *e = ex->entry;
	uint64_t t = ld64(r + TNPU_SAVE_OFF_TIME);
	uint32_t off = ld32(r + TNPU_SAVE_OFF_RESUME);

	if (ld32(r + TNPU_SAVE_OFF_MAGIC) != TNPU_SAVE_MAGIC)
		return bad(ex, TNPU_SAVE_OFF_MAGIC);
	if (ld16(r + TNPU_SAVE_OFF_VERSION) != TNPU_SAVE_VERSION)
		return bad(ex, TNPU_SAVE_OFF_VERSION);
	if (ld32(r + TNPU_SAVE_OFF_STATE) != TNPU_SAVE_PREEMPTED)
		return bad(ex, TNPU_SAVE_OFF_STATE);
	if (r[TNPU_SAVE_OFF_RSV0])
		return bad(ex, TNPU_SAVE_OFF_RSV0);
	if (ld16(r + TNPU_SAVE_OFF_RSV1))
		return bad(ex, TNPU_SAVE_OFF_RSV1);
	if (ld32(r + TNPU_SAVE_OFF_RSV2))
		return bad(ex, TNPU_SAVE_OFF_RSV2);
	if (ld32(r + TNPU_SAVE_OFF_RSV4))
		return bad(ex, TNPU_SAVE_OFF_RSV4);
	for (unsigned i = 0; i < TNPU_NUM_SEMS; i++)
		if (ld32(r + TNPU_SAVE_OFF_SEMS + 4 * i) > TNPU_SEM_MAX_TOKENS * 0xFFFFu)
			return bad(ex, TNPU_SAVE_OFF_SEMS + 4 * i);
	if (ld16(r + TNPU_SAVE_OFF_CTX) != e->ctx)
		return bad(ex, TNPU_SAVE_OFF_CTX);
	if (ld64(r + TNPU_SAVE_OFF_CMD_VA) != e->cmd_va)
		return bad(ex, TNPU_SAVE_OFF_CMD_VA);
	if (ld32(r + TNPU_SAVE_OFF_CMD_LEN) != e->cmd_len)
		return bad(ex, TNPU_SAVE_OFF_CMD_LEN);
	if (r[TNPU_SAVE_OFF_ISLAND] >= ex->n_isl)
		return bad(ex, TNPU_SAVE_OFF_ISLAND);
	if (t > ex->cfg.watchdog_cycles)
		return bad(ex, TNPU_SAVE_OFF_TIME);
	if (ld64(r + TNPU_SAVE_OFF_WORK) > ex->work_budget)
		return bad(ex, TNPU_SAVE_OFF_WORK);
	for (unsigned row = 0; row < TNPU_MAX_ROWS; row++) {
		uint64_t b = ld64(r + TNPU_SAVE_OFF_ROW_BUSY + 8 * row);

		if (b > t || (b && row >= ex->cfg.rows))
			return bad(ex, TNPU_SAVE_OFF_ROW_BUSY + 8 * row);
	}
	if ((off & 7) || off >= e->cmd_len)
		return bad(ex, TNPU_SAVE_OFF_RESUME);
	return 0;
}

/* The resume offset must be a command boundary of the stream and carry PREEMPT. */
uint32_t tnpu_resume_walk(struct tnpu_exec *ex, const uint8_t *buf, uint32_t len, uint32_t target)
{
	uint32_t off = 0;

	while (off < target) {
		uint32_t size = ld32(buf + off + 4);

		if (tnpu_stopped(ex, 1))
			return tnpu_stop_fail(ex);
		if (len - off < 8 || size < 8 || (size & 7) || size > len - off)
			break;
		off += size;
	}
	if (off != target || !(buf[off + 1] & TNPU_CMD_F_PREEMPT))
		return bad(ex, TNPU_SAVE_OFF_RESUME);
	return 0;
}

/* The job-end counters of a state (exec.c job_end): what an earlier run reported at its point. */
void tnpu_counters_job_end(const struct tnpu_exec *ex, uint64_t *counters, const uint64_t *row_busy, uint64_t time)
{
	counters[TNPU_CNT_TOTAL_CYCLES] = time + TNPU_CYC_JOB;
	for (unsigned r = 0; r < ex->cfg.rows; r++) {
		counters[TNPU_CNT_ROW_BUSY_MAX] = TNPU_MAX(counters[TNPU_CNT_ROW_BUSY_MAX], row_busy[r]);
		counters[TNPU_CNT_ROW_BUSY_SUM] += row_busy[r];
		counters[TNPU_CNT_BUSY_ROWS] += row_busy[r] != 0;
	}
}

void tnpu_resume_restore(struct tnpu_exec *ex, const uint8_t *r)
{
	struct tnpu_result *res = ex->res;
	uint64_t t = ld64(r + TNPU_SAVE_OFF_TIME);

	for (unsigned i = 0; i < TNPU_CNT_NUM && i < TNPU_CNT_SLOTS; i++)
		res->counters[i] = ld64(r + TNPU_SAVE_OFF_COUNTERS + 8 * i);
	/* the job-end counters are computed again at the end */
	res->counters[TNPU_CNT_TOTAL_CYCLES] = 0;
	res->counters[TNPU_CNT_ROW_BUSY_MAX] = 0;
	res->counters[TNPU_CNT_ROW_BUSY_SUM] = 0;
	res->counters[TNPU_CNT_BUSY_ROWS] = 0;
	for (unsigned row = 0; row < ex->cfg.rows; row++)
		res->row_busy[row] = ld64(r + TNPU_SAVE_OFF_ROW_BUSY + 8 * row);
	memcpy(res->base_counters, res->counters, sizeof(res->base_counters));
	tnpu_counters_job_end(ex, res->base_counters, res->row_busy, t);
	ex->work = ld64(r + TNPU_SAVE_OFF_WORK);
	barrier(ex, t);
	/* island 0's tokens, as one signal record each: every one was available by `time` */
	for (unsigned i = 0; i < TNPU_NUM_SEMS; i++) {
		struct sem_state *sm = &ex->isl_rt[0].sem[i];
		uint32_t n = ld32(r + TNPU_SAVE_OFF_SEMS + 4 * i);

		if (!n)
			continue;
		sm->time[0] = t;
		sm->count[0] = n;
		sm->head = 0;
		sm->n = 1;
		sm->avail = n;
	}
	if (r[TNPU_SAVE_OFF_ISLAND])
		tnpu_island_select(ex, r[TNPU_SAVE_OFF_ISLAND]);
	ex->resume_off = ld32(r + TNPU_SAVE_OFF_RESUME);
}
