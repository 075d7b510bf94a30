/* SPDX-License-Identifier: MIT */
/*
 * hazard.c - the hazard checker (Documentation/hardware/hazards.md, issue #27).
 *
 * The model computes the stream-order result even for a racy command stream, so a missing
 * semaphore shows in no output.  Here every recorded access -- a byte pattern of host memory or of
 * one storage unit's SRAM, read or written -- carries its command's modelled interval [start, end).
 * Every ordering edge the ISA defines (the in-order queue of an engine or a cluster row, SEM_WAIT
 * after SEM_SIGNAL, a synchronous command after the previous one, FENCE) makes the later command
 * start no earlier than the earlier one ends; so two accesses of different commands whose intervals
 * overlap have no edge between them, and if their bytes overlap and one writes, silicon could run
 * them in either order: a hazard.
 *
 * Cost: one record per DMA side, at most HZ_CMD_CAP per EXE row (LD/ST ranges merge), a sort and a
 * sweep at job end that compares only accesses live at the same cycle.  Off (the default), every
 * hook is one branch.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define HZ_CMD_CAP	1024		/* accesses per command and row before they merge */
#define HZ_JOB_CAP	(1u << 20)	/* records per job; past it checking stops (hz->overflow) */
#define HZ_ROW_WORK	(1u << 20)	/* row-pair tests per pattern pair before the bounding box decides */

struct hz_acc {
	uint64_t base, w, py, pz, pe;	/* bytes [base + e*pe + z*pz + y*py, + w) for y < h, z < d, e < n */
	uint32_t h, d, n;
	uint64_t lo, hi;		/* bounding range */
	uint64_t start, end;		/* modelled interval; end == 0: not yet timed */
	uint32_t cmd;
	uint8_t space, r0, r1, write, kind;
};

struct tnpu_hz {
	enum tnpu_hazard_mode mode;
	struct hz_acc *a;
	size_t n, cap, open;		/* records; [open, n) belong to the command being run */
	bool overflow;
	uint32_t count;
	struct tnpu_hazard first;
};

int tnpu_hz_init(struct tnpu_exec *ex)
{
	const char *e = getenv("TNPU_HAZARD");

	ex->hz = NULL;
	if (!e || !*e || !strcmp(e, "off") || !strcmp(e, "0"))
		return 0;
	tnpu_exec_set_hazard(ex, !strcmp(e, "report") ? TNPU_HAZARD_REPORT : TNPU_HAZARD_FAIL);
	return ex->hz ? 0 : -1;
}

void tnpu_hz_free(struct tnpu_exec *ex)
{
	if (ex->hz) {
		free(ex->hz->a);
		free(ex->hz);
		ex->hz = NULL;
	}
}

void tnpu_exec_set_hazard(struct tnpu_exec *ex, enum tnpu_hazard_mode mode)
{
	if (mode == TNPU_HAZARD_OFF) {
		tnpu_hz_free(ex);
		return;
	}
	if (!ex->hz)
		ex->hz = calloc(1, sizeof(*ex->hz));
	if (ex->hz)
		ex->hz->mode = mode;
}

enum tnpu_hazard_mode tnpu_exec_hazard_mode(const struct tnpu_exec *ex)
{
	return ex->hz ? ex->hz->mode : TNPU_HAZARD_OFF;
}

uint32_t tnpu_exec_hazard(const struct tnpu_exec *ex, struct tnpu_hazard *first)
{
	if (!ex->hz)
		return 0;
	if (first && ex->hz->count)
		*first = ex->hz->first;
	return ex->hz->count;
}

void tnpu_hz_job_start(struct tnpu_exec *ex)
{
	struct tnpu_hz *hz = ex->hz;

	hz->n = hz->open = 0;
	hz->overflow = false;
	hz->count = 0;
	memset(&hz->first, 0, sizeof(hz->first));
}

static struct hz_acc *hz_new(struct tnpu_hz *hz)
{
	if (hz->n == hz->cap) {
		size_t cap = hz->cap ? hz->cap * 2 : 1024;
		struct hz_acc *a;

		if (hz->n >= HZ_JOB_CAP || !(a = realloc(hz->a, cap * sizeof(*a)))) {
			hz->overflow = true;
			return NULL;
		}
		hz->a = a;
		hz->cap = cap;
	}
	return &hz->a[hz->n++];
}

static void rec4(struct tnpu_exec *ex, unsigned space, unsigned r0, unsigned r1, bool write, unsigned kind,
		 uint64_t base, uint64_t w, uint32_t h, uint32_t d, uint32_t n, uint64_t py, uint64_t pz, uint64_t pe)
{
	struct hz_acc *a;

	if (!w || !h || !d || !n || !(a = hz_new(ex->hz)))
		return;
	*a = (struct hz_acc){ .base = base, .w = w, .py = py, .pz = pz, .pe = pe, .h = h, .d = d, .n = n, .lo = base,
			      .hi = base + (uint64_t)(n - 1) * pe + (uint64_t)(d - 1) * pz + (uint64_t)(h - 1) * py + w,
			      .cmd = ex->cmd_off, .space = (uint8_t)space, .r0 = (uint8_t)r0, .r1 = (uint8_t)r1,
			      .write = write, .kind = (uint8_t)kind };
}

void tnpu_hz_rec_slow(struct tnpu_exec *ex, unsigned space, unsigned r0, unsigned r1, bool write,
		      unsigned kind, uint64_t base, uint64_t w, uint32_t h, uint32_t d, uint64_t py, uint64_t pz)
{
	rec4(ex, space, r0, r1, write, kind, base, w, h, d, 1, py, pz, 0);
}

/* An access of one row by a cluster instruction: n x d tiles of h rows of w bytes (ST: a tile per
 * PE).  Loops re-issue LD/ST over the same or neighbouring tiles: a repeat of the last access of the
 * same direction is dropped, and past HZ_CMD_CAP accesses the command's last one grows to the
 * bounding range of both (a wider range can only report more, never hide a hazard). */
void tnpu_hz_tiles_slow(struct tnpu_exec *ex, unsigned row, bool write, unsigned kind, uint64_t base, uint64_t w,
			uint32_t h, uint32_t d, uint32_t n, uint64_t py, uint64_t pz, uint64_t pe)
{
	struct tnpu_hz *hz = ex->hz;
	struct hz_acc *last = NULL;
	uint64_t hi = base + (uint64_t)(n - 1) * pe + (uint64_t)(d - 1) * pz + (uint64_t)(h - 1) * py + w;

	if (!w || !h || !d || !n)
		return;
	for (size_t i = hz->n; i-- > hz->open;)
		if (hz->a[i].write == write && hz->a[i].r0 == row) {
			last = &hz->a[i];
			break;
		}
	if (last && last->base == base && last->w == w && last->h == h && last->d == d && last->n == n &&
	    last->py == py && last->pz == pz && last->pe == pe)
		return;
	if (last && h == 1 && d == 1 && n == 1 && last->d == 1 && last->n == 1) {
		/* a row: it touches the last range (grow it), or continues its rows at one pitch */
		if (last->h == 1 && base <= last->hi && hi >= last->lo) {
			last->base = last->lo = TNPU_MIN(last->lo, base);
			last->hi = TNPU_MAX(last->hi, hi);
			last->w = last->hi - last->lo;
			return;
		}
		if (last->w == w && base > last->base &&
		    (last->h == 1 || base == last->base + (uint64_t)last->h * last->py)) {
			last->py = base - last->base - (uint64_t)(last->h - 1) * (last->h > 1 ? last->py : 0);
			last->h++;
			last->hi = hi;
			return;
		}
	}
	if (hz->n - hz->open >= HZ_CMD_CAP) {
		/* full: the nearest access of this row and direction grows to cover both */
		struct hz_acc *best = NULL;
		uint64_t best_gap = UINT64_MAX;

		for (size_t i = hz->open; i < hz->n; i++) {
			struct hz_acc *a = &hz->a[i];
			uint64_t gap;

			if (a->write != write || a->r0 != row)
				continue;
			gap = hi < a->lo ? a->lo - hi : base > a->hi ? base - a->hi : 0;
			if (gap < best_gap) {
				best_gap = gap;
				best = a;
			}
		}
		if (best) {
			uint64_t l = TNPU_MIN(best->lo, base), r = TNPU_MAX(best->hi, hi);

			*best = (struct hz_acc){ .base = l, .w = r - l, .h = 1, .d = 1, .n = 1, .lo = l, .hi = r,
						 .cmd = best->cmd, .space = best->space, .r0 = best->r0, .r1 = best->r1,
						 .write = best->write, .kind = best->kind };
			return;
		}
	}
	rec4(ex, TNPU_HZ_SRAM, row, row, write, kind, base, w, h, d, n, py, pz, pe);
}

void tnpu_hz_close_slow(struct tnpu_exec *ex, uint64_t start, uint64_t end)
{
	struct tnpu_hz *hz = ex->hz;

	for (size_t i = hz->open; i < hz->n; i++) {
		hz->a[i].start = start;
		hz->a[i].end = end;
	}
	hz->open = hz->n;
}

void tnpu_hz_cmd_start_slow(struct tnpu_exec *ex)
{
	struct tnpu_hz *hz = ex->hz;

	hz->n = hz->open;	/* a failed command's untimed records */
}

/* ---- byte overlap of two strided patterns ---------------------------------------------------- */

static int64_t floordiv(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* First row of b meeting [a0, a1): its overlap in *lo, *hi. */
static bool row_meets(const struct hz_acc *b, uint64_t a0, uint64_t a1, uint64_t *lo, uint64_t *hi)
{
	for (uint64_t ez = 0; ez < (uint64_t)b->d * b->n; ez++) {
		int64_t bz = (int64_t)(b->base + (ez / b->d) * b->pe + (ez % b->d) * b->pz), y = 0, s;

		if (b->py) {
			y = floordiv((int64_t)a0 - (int64_t)b->w - bz, (int64_t)b->py) + 1;
			if (y < 0)
				y = 0;
			if (y >= b->h)
				continue;
		}
		s = bz + y * (int64_t)b->py;
		if (s < (int64_t)a1 && s + (int64_t)b->w > (int64_t)a0) {
			*lo = TNPU_MAX(a0, (uint64_t)s);
			*hi = TNPU_MIN(a1, (uint64_t)s + b->w);
			return true;
		}
	}
	return false;
}

static bool bytes_meet(const struct hz_acc *a, const struct hz_acc *b, uint64_t *lo, uint64_t *hi)
{
	uint64_t rows_a = (uint64_t)a->h * a->d * a->n, rows_b = (uint64_t)b->h * b->d * b->n;

	if (a->lo >= b->hi || b->lo >= a->hi)
		return false;
	if (rows_b < rows_a) {
		const struct hz_acc *t = a;

		a = b;
		b = t;
		rows_a = rows_b;
	}
	if (rows_a * b->d * b->n > HZ_ROW_WORK) {	/* too many to test: the bounding boxes decide */
		*lo = TNPU_MAX(a->lo, b->lo);
		*hi = TNPU_MIN(a->hi, b->hi);
		return true;
	}
	for (uint64_t ez = 0; ez < (uint64_t)a->d * a->n; ez++)
		for (uint32_t y = 0; y < a->h; y++) {
			uint64_t s = a->base + (ez / a->d) * a->pe + (ez % a->d) * a->pz + (uint64_t)y * a->py;

			if (row_meets(b, s, s + a->w, lo, hi))
				return true;
		}
	return false;
}

/* ---- the sweep ---------------------------------------------------------------------------- */

static int by_start(const void *x, const void *y)
{
	const struct hz_acc *a = x, *b = y;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->cmd < b->cmd ? -1 : a->cmd > b->cmd;
}

static void found(struct tnpu_hz *hz, const struct hz_acc *a, const struct hz_acc *b, uint64_t lo, uint64_t hi)
{
	const struct hz_acc *t;

	if (a->cmd > b->cmd) {
		t = a;
		a = b;
		b = t;
	}
	hz->count++;
	if (hz->count > 1 && (b->cmd > hz->first.cmd_b || (b->cmd == hz->first.cmd_b && a->cmd >= hz->first.cmd_a)))
		return;
	hz->first = (struct tnpu_hazard){
		.cmd_a = a->cmd, .cmd_b = b->cmd, .kind_a = a->kind, .kind_b = b->kind,
		.write_a = a->write, .write_b = b->write, .space = a->space,
		.row = a->space == TNPU_HZ_SRAM ? (uint8_t)TNPU_MAX(a->r0, b->r0) : 0,
		.lo = lo, .hi = hi, .a_start = a->start, .a_end = a->end, .b_start = b->start, .b_end = b->end,
	};
}

/* Check the job's records; returns the number of hazards. */
uint32_t tnpu_hz_check(struct tnpu_exec *ex)
{
	struct tnpu_hz *hz = ex->hz;
	size_t n = 0, live = 0, *act;

	for (size_t i = 0; i < hz->open; i++)	/* timed, non-empty intervals only */
		if (hz->a[i].end > hz->a[i].start)
			hz->a[n++] = hz->a[i];
	hz->n = hz->open = n;
	if (!n)
		return 0;
	qsort(hz->a, n, sizeof(*hz->a), by_start);
	act = malloc(n * sizeof(*act));
	if (!act) {
		hz->overflow = true;
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		const struct hz_acc *b = &hz->a[i];
		size_t k = 0;

		for (size_t j = 0; j < live; j++) {
			const struct hz_acc *a = &hz->a[act[j]];
			uint64_t lo, hi;

			if (a->end <= b->start)
				continue;	/* ended: drop from the live set */
			act[k++] = act[j];
			if (a->cmd == b->cmd || a->space != b->space || !(a->write | b->write))
				continue;
			if (a->space == TNPU_HZ_SRAM && (a->r1 < b->r0 || b->r1 < a->r0))
				continue;
			if (bytes_meet(a, b, &lo, &hi))
				found(hz, a, b, lo, hi);
		}
		live = k;
		act[live++] = i;
	}
	free(act);
	return hz->count;
}
