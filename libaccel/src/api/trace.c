/* SPDX-License-Identifier: MIT */
/*
 * trace.c - job timelines: the engine intervals the golden model reports (tnpu_exec_set_trace,
 * cycle-model.md "Trace") recorded per hardware job and written as Chrome trace-event JSON
 * (Perfetto, chrome://tracing).  Sim backend only: a real device does not expose its engines.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tnpu/tnpu_core.h"

/* Bound the recording so a runaway loop cannot eat the host (~48 MB of events). */
#define TRACE_MAX_EVENTS (1u << 20)

/* Lanes (trace-event "tid") of one job ("pid"). */
enum { LANE_LOAD = 1, LANE_DISPATCH = 2, LANE_STORE = 3, LANE_CP = 4, LANE_ROW0 = 10 };

struct trace_rec {
	struct tnpu_trace_event ev;	/* start/end already on the recording's time line */
	uint32_t job;			/* 1-based hardware job of the recording */
};

struct accel_trace {
	struct trace_rec *ev;
	size_t n, cap;
	bool recording;
	int err;		/* sticky: first recording failure */
	uint32_t jobs;		/* hardware jobs recorded */
	uint64_t base;		/* cycles: where the current job starts on the time line */
	uint32_t rows;
};

int accel_trace_begin(struct accel_dev *dev)
{
	struct accel_trace *tr;

	if (!dev)
		return -EINVAL;
	if (strcmp(dev->caps.backend, "sim"))
		return accel_seterr(dev, -EOPNOTSUPP,
				    "job timelines need the sim backend: the %s backend cannot see the device's "
				    "engines (run the same job on \"sim\" with the same geometry)", dev->caps.backend);
	tr = dev->trace;
	if (!tr) {
		tr = calloc(1, sizeof(*tr));
		if (!tr)
			return accel_seterr(dev, -ENOMEM, "out of memory");
		dev->trace = tr;
	}
	tr->n = 0;
	tr->err = 0;
	tr->jobs = 0;
	tr->base = 0;
	tr->rows = dev->caps.rows;
	/* chain #9: a multi-island device has rows beyond island 0's (caps.rows). */
	if (dev->n_islands > 1)
		tr->rows = dev->islands[dev->n_islands - 1].first_row + dev->islands[dev->n_islands - 1].rows;
	tr->recording = true;
	return 0;
}

int accel_trace_end(struct accel_dev *dev)
{
	if (!dev)
		return -EINVAL;
	if (!dev->trace || !dev->trace->recording)
		return accel_seterr(dev, -EINVAL, "no trace is being recorded (call accel_trace_begin first)");
	dev->trace->recording = false;
	return 0;
}

int accel_trace_event_count(struct accel_dev *dev, uint64_t *out)
{
	if (!dev)
		return -EINVAL;
	if (!out)
		return accel_seterr(dev, -EINVAL, "accel_trace_event_count: out is NULL");
	*out = dev->trace ? dev->trace->n : 0;
	return 0;
}

void accel_trace_free(struct accel_dev *dev)
{
	if (!dev->trace)
		return;
	free(dev->trace->ev);
	free(dev->trace);
	dev->trace = NULL;
}

bool accel_trace_on(const struct accel_dev *dev)
{
	return dev->trace && dev->trace->recording;
}

static void trace_cb(void *opaque, const struct tnpu_trace_event *ev)
{
	struct accel_trace *tr = opaque;
	struct trace_rec *r;

	if (tr->err)
		return;
	if (tr->n == tr->cap) {
		size_t cap = tr->cap ? tr->cap * 2 : 1024;
		struct trace_rec *p;

		if (tr->cap >= TRACE_MAX_EVENTS) {
			tr->err = -E2BIG;
			return;
		}
		p = realloc(tr->ev, cap * sizeof(*p));
		if (!p) {
			tr->err = -ENOMEM;
			return;
		}
		tr->ev = p;
		tr->cap = cap;
	}
	r = &tr->ev[tr->n++];
	r->ev = *ev;
	r->ev.start += tr->base;
	r->ev.end += tr->base;
	r->job = tr->jobs + 1;
}

void accel_trace_job_begin(struct accel_dev *dev, struct tnpu_exec *ex)
{
	tnpu_exec_set_trace(ex, trace_cb, dev->trace);
}

void accel_trace_job_end(struct accel_dev *dev, struct tnpu_exec *ex, uint64_t total_cycles)
{
	struct accel_trace *tr = dev->trace;

	tnpu_exec_set_trace(ex, NULL, NULL);
	/* The sim runs hardware jobs one after another, as one device queue would. */
	tr->base += total_cycles;
	tr->jobs++;
}

/* ---- JSON ------------------------------------------------------------------------------------ */

static unsigned lane_of(const struct tnpu_trace_event *ev)
{
	if (ev->kind == TNPU_TRACE_CONFIG || ev->kind == TNPU_TRACE_EXE)
		return LANE_ROW0 + ev->row;
	switch (ev->engine) {
	case TNPU_ENGINE_LOAD: return LANE_LOAD;
	case TNPU_ENGINE_COMPUTE: return LANE_DISPATCH;
	case TNPU_ENGINE_STORE: return LANE_STORE;
	default: return LANE_CP;
	}
}

static const char *cat_of(unsigned kind)
{
	switch (kind) {
	case TNPU_TRACE_DMA_H2D:
	case TNPU_TRACE_IM2COL: return "load";
	case TNPU_TRACE_DMA_D2H: return "store";
	case TNPU_TRACE_DISPATCH: return "dispatch";
	case TNPU_TRACE_CONFIG:
	case TNPU_TRACE_EXE: return "compute";
	case TNPU_TRACE_SEM_WAIT: return "stall";
	default: return "sync";
	}
}

/* Viewers order lanes by sort index: the data flow, load -> compute -> store. */
static unsigned lane_sort(unsigned tid)
{
	return tid == LANE_STORE ? 1000 : tid == LANE_CP ? 1001 : tid;
}

static void write_lane(FILE *f, uint32_t pid, unsigned tid, const char *name, bool *first)
{
	fprintf(f, "%s\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%" PRIu32 ",\"tid\":%u,"
		"\"args\":{\"name\":\"%s\"}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%" PRIu32
		",\"tid\":%u,\"args\":{\"sort_index\":%u}}", *first ? "" : ",", pid, tid, name, pid, tid,
		lane_sort(tid));
	*first = false;
}

int accel_trace_write_json(struct accel_dev *dev, const char *path)
{
	struct accel_trace *tr;
	double mhz;
	bool first = true;
	FILE *f;
	int ret = 0;

	if (!dev)
		return -EINVAL;
	if (!path)
		return accel_seterr(dev, -EINVAL, "accel_trace_write_json: path is NULL");
	tr = dev->trace;
	if (!tr)
		return accel_seterr(dev, -EINVAL, "no trace recorded (call accel_trace_begin first)");
	if (tr->err)
		return accel_seterr(dev, tr->err, "the trace is incomplete: %s",
				    tr->err == -E2BIG ? "more than 1M events" : "out of memory");
	f = fopen(path, "w");
	if (!f)
		return accel_seterr(dev, -errno, "cannot create %s: %s", path, strerror(errno));
	mhz = dev->caps.clock_mhz ? dev->caps.clock_mhz : 1;
	fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"clock_mhz\":%u,\"rows\":%u,\"jobs\":%" PRIu32 "},"
		"\n\"traceEvents\":[", dev->caps.clock_mhz, tr->rows, tr->jobs);
	for (uint32_t j = 1; j <= tr->jobs; j++) {
		char name[32];

		fprintf(f, "%s\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%" PRIu32 ",\"args\":{\"name\":\"job %"
			PRIu32 "\"}}", first ? "" : ",", j, j);
		first = false;
		write_lane(f, j, LANE_LOAD, "LOAD (DMA in, IM2COL)", &first);
		write_lane(f, j, LANE_DISPATCH, "DISPATCH", &first);
		for (uint32_t r = 0; r < tr->rows; r++) {
			snprintf(name, sizeof(name), "row %" PRIu32 " (compute + SFU)", r);
			write_lane(f, j, LANE_ROW0 + r, name, &first);
		}
		write_lane(f, j, LANE_STORE, "STORE (DMA out)", &first);
		write_lane(f, j, LANE_CP, "command processor", &first);
	}
	for (size_t i = 0; i < tr->n; i++) {
		const struct trace_rec *r = &tr->ev[i];

		fprintf(f, "%s\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.4f,\"dur\":%.4f,\"pid\":%" PRIu32
			",\"tid\":%u,\"args\":{\"cmd_offset\":%" PRIu32 ",\"start_cycle\":%" PRIu64
			",\"end_cycle\":%" PRIu64 "}}", first ? "" : ",", tnpu_trace_kind_name(r->ev.kind), cat_of(r->ev.kind),
			(double)r->ev.start / mhz, (double)(r->ev.end - r->ev.start) / mhz, r->job, lane_of(&r->ev),
			r->ev.cmd_offset, r->ev.start, r->ev.end);
		first = false;
	}
	fprintf(f, "\n]}\n");
	if (ferror(f))
		ret = accel_seterr(dev, -EIO, "write error on %s", path);
	if (fclose(f) && !ret)
		ret = accel_seterr(dev, -EIO, "write error on %s: %s", path, strerror(errno));
	return ret;
}

/* chain #9: per-row busy cycles of the recording (graph scheduler occupancy, chaining.md). */
int accel_trace_row_busy(struct accel_dev *dev, uint64_t *busy, unsigned max)
{
	const struct accel_trace *tr;

	if (!dev)
		return -EINVAL;
	if (!busy && max)
		return accel_seterr(dev, -EINVAL, "accel_trace_row_busy: busy is NULL with max > 0");
	tr = dev->trace;
	if (!tr)
		return accel_seterr(dev, -EOPNOTSUPP, "no trace recorded (accel_trace_begin, sim backend)");
	memset(busy, 0, sizeof(*busy) * max);
	for (size_t i = 0; i < tr->n; i++) {
		const struct tnpu_trace_event *ev = &tr->ev[i].ev;

		if ((ev->kind == TNPU_TRACE_CONFIG || ev->kind == TNPU_TRACE_EXE) && ev->row < max)
			busy[ev->row] += ev->end - ev->start;
	}
	return 0;
}
