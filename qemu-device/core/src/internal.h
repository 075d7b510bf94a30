/* SPDX-License-Identifier: MIT */
/*
 * Internal structures of the tnpu golden model (not installed).
 */
#ifndef TNPU_INTERNAL_H
#define TNPU_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "tnpu/tnpu_core.h"

/* Hot element loops are compiled for several x86-64 levels and picked at
 * load time (ifunc); nothing that ships uses -march=native.  GCC at -O2 vectorises
 * only loops whose trip count is a known multiple of the vector (its "very cheap"
 * cost model), so these loops ask for its dynamic model: vector body plus scalar
 * tail, the same element operations (no reassociation without -ffast-math). */
#if defined(__GNUC__) && !defined(__clang__)
#define TNPU_VECTORIZE __attribute__((optimize("tree-vectorize", "vect-cost-model=dynamic")))
#else
#define TNPU_VECTORIZE
#endif
/* ThreadSanitizer: GCC instruments the clones' ifunc resolver, which the dynamic loader runs while it
 * relocates the program, before the TSan runtime is initialised, and the program dies with SIGSEGV
 * before main (GCC 12).  A TSan build (tests/check-all tsan) checks the threading, not the ISA
 * variants, so it keeps the default clone only. */
#if defined(__SANITIZE_THREAD__) && !defined(TNPU_NO_CLONES)
#define TNPU_NO_CLONES
#endif
#if defined(__x86_64__) && defined(__has_attribute) && !defined(TNPU_NO_CLONES)
#if __has_attribute(target_clones)
/* x86-64-v3 and -v4, not "avx2" and "avx512f": those two leave FMA out, so every fmaf was a libm call */
#define TNPU_CLONES __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4"))) TNPU_VECTORIZE
#endif
#endif
#ifndef TNPU_CLONES
#define TNPU_CLONES TNPU_VECTORIZE
#endif

#include "tnpu_uninit.h"

#define TNPU_MIN(a, b) ((a) < (b) ? (a) : (b))
#define TNPU_MAX(a, b) ((a) > (b) ? (a) : (b))

static inline uint64_t div_ceil_u64(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

static inline uint16_t ld16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t ld32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t ld64(const uint8_t *p)
{
	return (uint64_t)ld32(p) | ((uint64_t)ld32(p + 4) << 32);
}

/* Per-PE rewrite of an operand record (isa.md "Operand record"): PE p of cluster c; with CPAIR the
 * cluster's index in its pair and the pair's index each have a stride (the pair's in su_wrap_delta). */
static inline int64_t tnpu_row_addr(const struct tnpu_operand *o, unsigned c, unsigned p, uint64_t i);

static inline int64_t tnpu_pe_addr(const struct tnpu_operand *o, unsigned c, unsigned p)
{
	if (o->flags & TNPU_OPF_WRAP)
		return tnpu_row_addr(o, c, p, 0);
	if (o->flags & TNPU_OPF_CPAIR)
		return (int64_t)o->addr + (int64_t)(c & 1) * o->col_stride + (int64_t)(c >> 1) * o->su_wrap_delta +
		       (int64_t)p * o->pe_stride;
	return (int64_t)o->addr + (int64_t)c * o->col_stride + (int64_t)p * o->pe_stride;
}

/* Row i of PE (c,p)'s tile (isa.md "Row wrap"): with WRAP the rewrite and the row are taken in a packed
 * space of su_wrap rows per layout row, the layout's rows su_wrap_delta bytes apart (no padding between
 * them in packed space); the address never decreases with the packed offset (su_wrap_delta >= W * pitch,
 * strides >= 0: tnpu_wrap_bad). */
static inline int64_t tnpu_row_addr(const struct tnpu_operand *o, unsigned c, unsigned p, uint64_t i)
{
	if (o->flags & TNPU_OPF_WRAP) {
		uint64_t span = (uint64_t)o->su_wrap * o->pitch;
		uint64_t off =
			(uint64_t)c * (uint32_t)o->col_stride + (uint64_t)p * (uint32_t)o->pe_stride + i * o->pitch;

		return (int64_t)o->addr + (int64_t)(off / span) * o->su_wrap_delta + (int64_t)(off % span);
	}
	return tnpu_pe_addr(o, c, p) + (int64_t)i * o->pitch;
}

/* tnpu_row_addr of a WRAP record with its products checked: false when the address does not fit in
 * 63 bits (a malformed record whose wrap count times su_wrap_delta overflows; every smaller packed
 * offset of the record gives a smaller address, so checking the last row of the last PE is enough). */
static inline bool tnpu_wrap_addr_checked(const struct tnpu_operand *o, unsigned c, unsigned p, uint64_t i,
					  int64_t *out)
{
	uint64_t span = (uint64_t)o->su_wrap * o->pitch;
	uint64_t off = (uint64_t)c * (uint32_t)o->col_stride + (uint64_t)p * (uint32_t)o->pe_stride + i * o->pitch;
	int64_t q, a;

	if (!span || o->su_wrap_delta < 0)
		return false;
	if (__builtin_mul_overflow((int64_t)(off / span), (int64_t)o->su_wrap_delta, &q) ||
	    __builtin_add_overflow(q, (int64_t)o->addr + (int64_t)(off % span), &a))
		return false;
	*out = a;
	return true;
}

/* The rows from row i of PE (c,p)'s WRAP tile (i < rows) that lie in the same layout row: a run of rows
 * pitch apart (without WRAP: all the remaining rows). */
static inline uint32_t tnpu_wrap_run(const struct tnpu_operand *o, unsigned c, unsigned p, uint32_t i, uint32_t rows)
{
	uint64_t span, r;

	if (!(o->flags & TNPU_OPF_WRAP))
		return rows - i;
	span = (uint64_t)o->su_wrap * o->pitch;
	r = ((uint64_t)c * (uint32_t)o->col_stride + (uint64_t)p * (uint32_t)o->pe_stride + (uint64_t)i * o->pitch) %
	    span;
	return (uint32_t)TNPU_MIN((uint64_t)(rows - i), (span - 1 - r) / o->pitch + 1);
}

/* A WRAP record is well-formed: no other flag, a layout row of su_wrap >= 1 rows of pitch >= 1 bytes that
 * fits its row pitch, non-negative strides (so addresses grow with the packed offset). */
static inline bool tnpu_wrap_bad(const struct tnpu_operand *o)
{
	return (o->flags & TNPU_OPF_WRAP) &&
	       (o->flags != TNPU_OPF_WRAP || !o->su_wrap || !o->pitch || o->col_stride < 0 || o->pe_stride < 0 ||
		(int64_t)o->su_wrap_delta < (int64_t)o->su_wrap * o->pitch);
}

/* A CPAIR record is well-formed: no scalar-unit wrap (its field is the pair stride), not SPARSE. */
static inline bool tnpu_cpair_bad(const struct tnpu_operand *o)
{
	return (o->flags & TNPU_OPF_CPAIR) && (o->su_wrap || (o->flags & TNPU_OPF_SPARSE));
}

/* One operand captured in an input-buffer or weight-queue slot. */
struct slot {
	bool valid;
	bool zskip;
	bool mcast;		/* loaded with TNPU_LD_MCAST (sliding multicast block) */
	struct tnpu_operand op;	/* record as it was at LD time */
	uint64_t half_off;	/* SRAM offset of the half it was loaded from (op.addr is half-relative) */
};

struct ibuf {
	bool valid;
	uint8_t n_instr, rf_base, mode, loop_start, loop_end, sfu_rf, dw_rf;
	uint16_t repeat;
	uint16_t instr[TNPU_IBUF_DEPTH];
};

/* Accumulator / output-queue tile meta data (uniform across a row's PEs).
 * Data layout for a row: (cols*tm) x (pes*tn) row-major 32-bit elements;
 * PE (c, p) owns rows c*tm.., columns p*tn..  This lets a row with
 * contiguous operands run as one GEMM call. */
struct tile_meta {
	bool valid;
	uint8_t dtype;		/* INT32 / FP32 (acc), INT8 / INT32 / FP32 (oq) */
	uint8_t acc;		/* oq: source accumulator */
	uint16_t tm, tn;
};

/* Line state (linestate.c): times at which SRAM ranges become readable for line-tracked readers. */
struct sb_ent {
	uint32_t lo, hi;	/* byte range of the row's SRAM (both halves) */
	uint64_t t;		/* cycle the range is written */
};
#define TNPU_SB_CAP 1024	/* entries of a scoreboard ring */
#define TNPU_SB_BLK 32		/* ring slots summarised together (tnpu_sb_ready skips whole blocks) */
struct scoreboard {
	struct sb_ent *e;
	unsigned head, n, cap;	/* ring of n entries from head (oldest first), cap = TNPU_SB_CAP */
	/* per block of TNPU_SB_BLK slots: the latest time and the byte range of every entry written to
	 * it since the job start -- a superset of its valid entries (a stale slot only costs a scan) */
	uint64_t bt[TNPU_SB_CAP / TNPU_SB_BLK];
	uint32_t blo[TNPU_SB_CAP / TNPU_SB_BLK], bhi[TNPU_SB_CAP / TNPU_SB_BLK];
};

struct row_state {
	uint8_t *sram;		/* cfg.sram bytes */
	uint32_t dirty_lo, dirty_hi;	/* written range, zeroed at job start */
	uint64_t *lines;	/* one bit per TNPU_SRAM_LINE: written since the job start (else zero) */
	uint64_t n_lines;	/* bits of lines[] that stand for SRAM (sram / TNPU_SRAM_LINE) */
	struct scoreboard sb_in;	/* STREAM band writes (LDs wait for them) */
	struct scoreboard sb_out;	/* ST writes (STREAM D2H waits for them) */
	struct ibuf ibuf[TNPU_NUM_IBUFS];
	struct tnpu_operand rf[TNPU_RF_ENTRIES];
	struct tnpu_operand rf_cfg[TNPU_RF_ENTRIES];
	uint16_t rf_cnt[TNPU_RF_ENTRIES];
	struct slot in[TNPU_NUM_SLOTS], wq[TNPU_NUM_SLOTS];
	struct tile_meta accm[TNPU_NUM_ACCS];
	void *acc[TNPU_NUM_ACCS];	/* cols*pes*TNPU_ACC_ELEMS 32-bit elements */
	struct tile_meta oqm;
	void *oq;
	int last_half;		/* -1 = no EXE yet */
	uint8_t dtypes;		/* chain #9: TNPU_CAP_DTYPE_* the row's island accepts */
};

struct tlb_entry {
	uint64_t vpn;		/* VA >> 12, ~0 = invalid */
	uint64_t pa;		/* page bus address */
	uint64_t pte;		/* leaf PTE (permissions) */
};
/* Translations cached within a job (mmu.md "Cached translations"; flushed at job start and on
 * MMU_INVALIDATE).  Sizes are simulation speed only: no counter or cycle depends on them.  1024 pages
 * cover a layer's weights walked plane by plane (a page each: a 4-level walk per miss was 5 % of
 * ResNet-18's sim time with 64 entries); the walk cache keeps, per 2 MiB of VA, the level-1 table its
 * levels 4..2 lead to, so a miss there reads one entry instead of four. */
#define TLB_SIZE 1024
#define PWC_SIZE 16
struct pwc_entry {
	uint64_t tag;		/* VA >> 21, ~0 = invalid */
	uint64_t table;		/* bus address of the level-1 table (of the job's root) */
};

struct sem_state {
	uint64_t time[TNPU_SEM_MAX_TOKENS];
	uint32_t count[TNPU_SEM_MAX_TOKENS];
	unsigned head, n;	/* ring of outstanding signal records */
	uint64_t avail;		/* tokens signalled and not consumed */
};

/* chain #9: one island's sub-stream timeline (islands-and-chaining.md). */
struct island_rt {
	uint64_t F[TNPU_ENGINE_NUM];	/* engine free times */
	uint64_t P;			/* completion of the island's previous command */
	struct sem_state sem[TNPU_NUM_SEMS];
	uint64_t aux;			/* ports' auxiliary queue free time (DMA_BANDS AUX, dw #6) */
};

/* chain #9: a producer-consumer ring.  Row sequence numbers only grow within a job:
 * released <= acquired <= published <= reserved <= released + slots. */
struct ring_state {
	bool valid;
	uint8_t producer, consumer;
	uint32_t slots, base, pitch;
	uint64_t released, acquired, published, reserved;
	uint64_t *pub_time;	/* per slot: when its current row was published */
	uint64_t *rel_time;	/* per slot: when its previous row was released */
};

struct tnpu_exec {
	struct tnpu_config cfg;
	uint32_t half;		/* bytes per half */
	struct row_state *rows;
	atomic_bool abort;
	atomic_bool preempt;		/* Q_CTRL.PREEMPT of the executor's queue (preempt.c) */
	uint64_t work, work_budget;	/* host-work units charged to the job, and its budget */
	/* MMU_INVALIDATE handshake (mmu.c va_access): tlb_req is bumped by any thread; a memory
	 * access sets in_access, then drops the TLB if tlb_req moved and records it in tlb_seq */
	atomic_uint tlb_req, tlb_seq;
	atomic_bool in_access;
	bool va_held;		/* tnpu_va_hold: in_access stays set across the accesses of one command */
	/* per-job state */
	const struct tnpu_mem_ops *mem;
	struct tnpu_result *res;
	uint64_t root;		/* page-table root of the job's context */
	uint32_t cmd_off;
	/* preemption (queues.md "Preemption"): the job's ring entry (NULL for tnpu_exec_run_cmdbuf),
	 * its save slot, whether its points may stop it, and the point a RESUME job started at */
	const struct tnpu_ring_entry *entry;
	uint64_t save_pa;
	bool preemptible;
	uint32_t resume_off;
	struct tlb_entry tlb[TLB_SIZE];
	struct pwc_entry pwc[PWC_SIZE];
	struct sem_state *sem;		/* the current island's semaphores (chain #9) */
	uint64_t *F;			/* the current island's engine free times */
	uint64_t R[TNPU_MAX_ROWS];	/* row free times */
	uint64_t P;			/* completion of the previous command of the current island */
	/* chain #9: islands and rings */
	unsigned n_isl, cur;		/* islands, current island */
	struct tnpu_island_cfg isl[TNPU_MAX_ISLANDS];
	uint8_t isl_first[TNPU_MAX_ISLANDS];
	struct island_rt *isl_rt;	/* n_isl entries */
	struct ring_state ring[TNPU_NUM_RINGS];
	uint8_t *ring_mem;		/* TNPU_RING_MEM_BYTES */
	uint32_t ring_dirty;		/* ring memory written below this offset since the last clear */
	uint64_t compute_end;		/* union accounting for COMPUTE_CYCLES */
	uint64_t watchdog;
	tnpu_trace_fn trace;		/* NULL: tracing off (cycle-model.md "Trace") */
	void *trace_opaque;
	struct tnpu_hz *hz;		/* hazard.c: NULL = checker off (hazards.md) */
	/* scratch */
	uint8_t *scratch;
	size_t scratch_cap;
	float *cvt;		/* bf16 -> fp32 widening */
	size_t cvt_cap;
	struct tnpu_plan_cache *plans;	/* plan.c: survives jobs, NULL until the first PLAN_LOAD */
	int8_t vec_lut[TNPU_VEC_LUTS][256];	/* vec_unit.c: the vector units' tables, zero at job start */
};

/* preempt.c: a PREEMPT command at `off` (a barrier; true: the job stops there, res->save filled),
 * the checks and restore of a RESUME job's record. */
uint64_t tnpu_job_time(const struct tnpu_exec *ex);
void tnpu_onchip_reset(struct tnpu_exec *ex);
bool tnpu_preempt_point(struct tnpu_exec *ex, uint32_t off);
uint32_t tnpu_resume_check(struct tnpu_exec *ex, const uint8_t *rec);
uint32_t tnpu_resume_walk(struct tnpu_exec *ex, const uint8_t *buf, uint32_t len, uint32_t target);
void tnpu_resume_restore(struct tnpu_exec *ex, const uint8_t *rec);
void tnpu_counters_job_end(const struct tnpu_exec *ex, uint64_t *counters, const uint64_t *row_busy,
			   uint64_t time);

/* Job-failure helper: records the first error; returns the code. */
uint32_t tnpu_fail(struct tnpu_exec *ex, uint32_t err, uint32_t info, uint64_t addr);

/* Host memory and time per command (qemu-device.md "Host resources"): GEMMs run in K panels of
 * about TNPU_PANEL_MACS multiply-adds (at least TNPU_PANEL_MIN_K deep) with an abort check between
 * them; the bf16 widening scratch holds one panel (<= TNPU_CVT_SCRATCH_MAX); every other scratch
 * (IM2COL / GATHER boxes, plan images, sparse counts) is <= TNPU_SCRATCH_MAX, and a job leaves at
 * most TNPU_SCRATCH_KEEP of it allocated. */
#define TNPU_PANEL_MACS		(1u << 22)
#define TNPU_PANEL_MIN_K	64u
#define TNPU_CVT_SCRATCH_MAX	(4u << 20)
/* the box plus, for IM2COL, its K decode tables (TNPU_IM2COL_K_BYTES per index of a chunk: 1.75 MiB;
 * issue #28: a 1 MiB margin failed boxes near the limit with NOMEM), for GATHER its line map */
#define TNPU_SCRATCH_MAX	(TNPU_IM2COL_MAX_FOOTPRINT + (2u << 20))
/* An SFU column vector repeated across a row of PEs that share it (cluster.c sfu_apply). */
#define TNPU_SFU_REP_MAX	(64u << 10)
#define TNPU_SCRATCH_KEEP	(1u << 20)
#define TNPU_IM2COL_K_CHUNK	65536u	/* K indices decoded at a time */
#define TNPU_IM2COL_K_BYTES	28u	/* per K index: an int64 offset and five 32-bit fields (exec.c) */
_Static_assert((uint64_t)TNPU_IM2COL_K_CHUNK * TNPU_IM2COL_K_BYTES + 16 <= TNPU_SCRATCH_MAX - TNPU_IM2COL_MAX_FOOTPRINT,
	       "an IM2COL box at the footprint limit and a full K chunk fit the scratch");

/* tnpu_exec_abort() was called: every loop whose trip count the guest chooses (per row, per page,
 * per K panel) checks this, so an abort stops a job within one such step whatever it asked for. */
static inline bool tnpu_aborted(struct tnpu_exec *ex)
{
	return atomic_load_explicit(&ex->abort, memory_order_relaxed);
}

/* Host-work units (cycle-model.md "Host-work budget"): one per step of a guest-sized loop, plus one
 * per TNPU_WORK_BYTES moved, TNPU_WORK_MACS multiply-adds, TNPU_WORK_NNZ zero-skipping counts, 8
 * gathered elements or 4 vector-unit element-taps;
 * each unit is roughly 20..100 ns of host time. */
#define TNPU_WORK_BYTES		1024u
#define TNPU_WORK_MACS		1024u
#define TNPU_WORK_NNZ		64u	/* elements a zero-skipping count reads (MAC with ZSKIP) */

/* Charges `units` of host work to the job (cycle-model.md "Host-work budget") and says whether it
 * must stop: aborted, or past its host-work budget.  Every loop whose trip count the guest chooses
 * calls it once per step, so no command, however cheap in modeled cycles, costs unbounded host time
 * (the watchdog bounds modeled time only). */
static inline bool tnpu_stopped(struct tnpu_exec *ex, uint64_t units)
{
	/* saturating: work_budget < 2^63 (tnpu_exec_new) */
	if (ex->work > ex->work_budget || units > ex->work_budget - ex->work)
		ex->work = ex->work_budget + 1;
	else
		ex->work += units;
	return ex->work > ex->work_budget || tnpu_aborted(ex);
}

/* The error of a job tnpu_stopped() stopped: ABORTED after an abort, else WATCHDOG with ERR_INFO 1
 * (the host-work budget; 0 is the modeled-cycle watchdog). */
static inline uint32_t tnpu_stop_fail(struct tnpu_exec *ex)
{
	return tnpu_aborted(ex) ? tnpu_fail(ex, TNPU_ERR_ABORTED, 0, 0) : tnpu_fail(ex, TNPU_ERR_WATCHDOG, 1, 0);
}

/* 0, or ABORTED (recorded) once an abort was requested. */
static inline uint32_t tnpu_check_abort(struct tnpu_exec *ex)
{
	return tnpu_aborted(ex) ? tnpu_fail(ex, TNPU_ERR_ABORTED, 0, 0) : 0;
}

/* True if a command starting at `start` and lasting `dur` cycles ends past the watchdog (a sum that
 * wraps is past it too). */
static inline bool tnpu_past_watchdog(const struct tnpu_exec *ex, uint64_t start, uint64_t dur)
{
	uint64_t end;

	return __builtin_add_overflow(start, dur, &end) || end > ex->cfg.watchdog_cycles;
}

/* islands.c / ring.c (chain #9) */
const char *tnpu_islands_check(const struct tnpu_config *cfg);
uint32_t tnpu_island_reg(const struct tnpu_config *cfg, uint64_t off, bool *found);
void tnpu_trace_emit(struct tnpu_exec *ex, unsigned engine, unsigned row, unsigned kind, uint64_t start,
		     uint64_t end);
uint64_t tnpu_island_rows_free(const struct tnpu_exec *ex);
void tnpu_island_select(struct tnpu_exec *ex, unsigned island);
uint32_t tnpu_cmd_island(struct tnpu_exec *ex, const uint8_t *c);
uint32_t tnpu_cmd_ring_init(struct tnpu_exec *ex, const uint8_t *c);
uint32_t tnpu_cmd_ring_op(struct tnpu_exec *ex, const uint8_t *c, bool signal, bool async);
/* Check a ring-memory DMA (TNPU_DMA_F_RING) row by row; 0 or the error (already recorded). */
uint32_t tnpu_ring_dma_check(struct tnpu_exec *ex, bool h2d, uint64_t off, uint64_t py, uint64_t pz, uint32_t width,
			     uint32_t height, uint32_t depth);
int tnpu_rings_alloc(struct tnpu_exec *ex);
void tnpu_rings_free(struct tnpu_exec *ex);
void tnpu_rings_reset(struct tnpu_exec *ex);

/* mmu.c */
void tnpu_tlb_flush(struct tnpu_exec *ex);
uint32_t tnpu_va_read(struct tnpu_exec *ex, uint64_t va, void *buf, size_t len, unsigned engine);
void tnpu_va_hold(struct tnpu_exec *ex);
void tnpu_va_unhold(struct tnpu_exec *ex);
uint32_t tnpu_va_write(struct tnpu_exec *ex, uint64_t va, const void *buf, size_t len, unsigned engine);
/* n rows of w bytes back to back on the host (va, va + w, ...), rows sp bytes apart on chip: the same
 * bytes, faults and fault addresses as n tnpu_va_read/write calls, one memory access per page */
uint32_t tnpu_va_read_rows(struct tnpu_exec *ex, uint64_t va, uint8_t *dst, uint64_t sp, uint32_t w, uint64_t n,
			   unsigned engine);
uint32_t tnpu_va_write_rows(struct tnpu_exec *ex, uint64_t va, const uint8_t *src, uint64_t sp, uint32_t w,
			    uint64_t n, unsigned engine);
/* engine code for ERR_INFO: 0 command fetch/FENCE, 1 + enum tnpu_engine */
#define TNPU_EC_FETCH 0
#define TNPU_EC(e) ((e) + 1u)

/* exec.c: a load/store engine command of `dur` cycles (timeline, counters, trace) */
void tnpu_engine_run(struct tnpu_exec *ex, unsigned e, unsigned kind, bool async, uint64_t dur);

/* hazard.c: the hazard checker.  Records are appended while a command runs and get the
 * command's (or the cluster row's) modelled interval from tnpu_hz_close. */
int tnpu_hz_init(struct tnpu_exec *ex);
void tnpu_hz_free(struct tnpu_exec *ex);
void tnpu_hz_job_start(struct tnpu_exec *ex);
uint32_t tnpu_hz_check(struct tnpu_exec *ex);
void tnpu_hz_rec_slow(struct tnpu_exec *ex, unsigned space, unsigned r0, unsigned r1, bool write,
		      unsigned kind, uint64_t base, uint64_t w, uint32_t h, uint32_t d, uint64_t py, uint64_t pz);
void tnpu_hz_tiles_slow(struct tnpu_exec *ex, unsigned row, bool write, unsigned kind, uint64_t base, uint64_t w,
			uint32_t h, uint32_t d, uint32_t n, uint64_t py, uint64_t pz, uint64_t pe);
void tnpu_hz_close_slow(struct tnpu_exec *ex, uint64_t start, uint64_t end);
void tnpu_hz_cmd_start_slow(struct tnpu_exec *ex);

/* A strided pattern (DMA side) of host memory or of SRAM rows r0..r1. */
static inline void tnpu_hz_rec(struct tnpu_exec *ex, unsigned space, unsigned r0, unsigned r1, bool write,
			       unsigned kind, uint64_t base, uint64_t w, uint32_t h, uint32_t d, uint64_t py,
			       uint64_t pz)
{
	if (ex->hz)
		tnpu_hz_rec_slow(ex, space, r0, r1, write, kind, base, w, h, d, py, pz);
}

/* A contiguous SRAM range of one row read or written by a cluster instruction. */
static inline void tnpu_hz_range(struct tnpu_exec *ex, unsigned row, bool write, unsigned kind, uint64_t lo,
				 uint64_t hi)
{
	if (ex->hz && hi > lo)
		tnpu_hz_tiles_slow(ex, row, write, kind, lo, hi - lo, 1, 1, 1, 0, 0, 0);
}

/* ST: a tile of h rows of w bytes, pitch py, per PE (pe_stride pz, col_stride pc; both >= 0). */
static inline void tnpu_hz_tiles(struct tnpu_exec *ex, unsigned row, bool write, unsigned kind, uint64_t base,
				 uint64_t w, uint32_t h, uint32_t d, uint32_t n, uint64_t py, uint64_t pz, uint64_t pc)
{
	if (ex->hz)
		tnpu_hz_tiles_slow(ex, row, write, kind, base, w, h, d, n, py, pz, pc);
}

static inline void tnpu_hz_close(struct tnpu_exec *ex, uint64_t start, uint64_t end)
{
	if (ex->hz)
		tnpu_hz_close_slow(ex, start, end);
}

/* dma_bands.c (depthwise block) */
uint32_t tnpu_cmd_dma_bands(struct tnpu_exec *ex, const uint8_t *c, bool h2d, bool async);
static inline uint32_t tnpu_dw_cmd_size(unsigned op)
{
	return op == TNPU_CMD_DMA_BANDS_H2D || op == TNPU_CMD_DMA_BANDS_D2H ? sizeof(struct tnpu_cmd_dma_bands) : 0;
}

/* dma_deq.c: DMA_DEQ, the weight-decompressing load (commands.md, CAP_FEATURES bit 23) */
uint32_t tnpu_cmd_dma_deq(struct tnpu_exec *ex, const uint8_t *c, bool async);

/* dw_mac.c (depthwise block): DW MAC arithmetic and the multicast LD's distribution bytes */
struct tnpu_dw_job {
	uint8_t *base;				/* start of the half */
	unsigned cols, pes;
	const struct tnpu_operand *A, *B;	/* input slot, weight slot (as loaded) */
	const struct tnpu_operand *rec;		/* register-file entry holding the tnpu_dw_param */
	void *acc;				/* the row's accumulator (overwritten) */
	atomic_bool *abort;			/* the executor's abort flag (NULL: none) */
	/* filled by tnpu_dw_check */
	struct tnpu_dw_param p;
	unsigned tm, tn, rate;
	uint8_t out_dtype;
	uint64_t macs_pe;			/* MACs of one PE */
};
uint32_t tnpu_dw_check(struct tnpu_dw_job *j);
uint32_t tnpu_dw_run(struct tnpu_dw_job *j);
/* The block an MCAST LD reads (isa.md "MCAST"), half-relative: rows r0 <= r < r1 of [lo + r * pitch,
 * + w), all of it below hi (the end of the furthest tile).  ok = false: no block (a plain LD's cost). */
struct tnpu_mcast_block {
	bool ok;
	uint64_t lo, hi, pitch, w, r0, r1;
};
void tnpu_dw_mcast_block(unsigned cols, unsigned pes, const struct tnpu_operand *o, const struct tnpu_operand *prev,
			 struct tnpu_mcast_block *b);
/* Bytes of the block's rows r0..r1 in written lines (a half at `base`). */
uint64_t tnpu_dw_mcast_bytes(const struct row_state *rs, uint64_t base, const struct tnpu_mcast_block *b);

/* cluster.c */
uint32_t tnpu_cluster_dispatch(struct tnpu_exec *ex, unsigned row, unsigned half, unsigned dflags,
			       const uint8_t *pkt, uint32_t len, uint64_t t0, uint64_t *busy);
void tnpu_cluster_reset(struct tnpu_exec *ex);
/* malloc below 256 KiB, an anonymous mapping above (freed pages go back to the OS at once) */
void *tnpu_host_alloc(size_t bytes);
void tnpu_host_free(void *p, size_t bytes);
uint8_t *tnpu_scratch(struct tnpu_exec *ex, size_t bytes);
void tnpu_scratch_trim(struct tnpu_exec *ex);	/* frees the scratch if above TNPU_SCRATCH_KEEP */
float *tnpu_cvt_scratch(struct tnpu_exec *ex, size_t bytes);

/* plan.c: static address plans (PLAN_LOAD / GATHER / PLAN_FREE) */
uint32_t tnpu_plan_cmd_size(uint8_t op);	/* 0 = not a plan opcode */
uint32_t tnpu_plan_cmd(struct tnpu_exec *ex, const uint8_t *c, bool async);
void tnpu_plan_job_start(struct tnpu_exec *ex, uint32_t generation, uint32_t session);
void tnpu_plan_cache_free(struct tnpu_exec *ex);
uint64_t tnpu_plan_tag(const void *image, size_t bytes);

/* vec_unit.c / vec_fn.c: ISA 2 vector units (vector-units.md) */
uint32_t tnpu_vec_cmd_size(uint8_t op);	/* 0 = not a vector-unit opcode */
uint32_t tnpu_vec_cmd(struct tnpu_exec *ex, const uint8_t *c, bool async);
/* exec.c: a command's island-relative row (or all) to absolute rows [*r0, *r1] */
uint32_t tnpu_island_rows(struct tnpu_exec *ex, unsigned row, bool all, unsigned *r0, unsigned *r1);

/* linestate.c: written-line bitmap and the STREAM scoreboards (commands.md "Line state") */
int tnpu_lines_alloc(struct row_state *rs, uint32_t sram);
void tnpu_lines_free(struct row_state *rs);
void tnpu_lines_reset(struct row_state *rs);
void tnpu_lines_set(struct row_state *rs, uint64_t lo, uint64_t hi);
void tnpu_lines_clean(struct row_state *rs, uint64_t lo, uint64_t hi);
uint64_t tnpu_lines_written_bytes(const struct row_state *rs, uint64_t lo, uint64_t hi);
void tnpu_sb_add(struct scoreboard *sb, uint64_t lo, uint64_t hi, uint64_t t);
uint64_t tnpu_sb_ready(const struct scoreboard *sb, uint64_t lo, uint64_t hi, uint64_t after);

/* Every write to a row's SRAM calls this, before the write or right after it: the job start zeroes
 * the lines marked here and nothing else (linestate.c tnpu_lines_reset), so an unmarked write would
 * survive into the next job. */
static inline void sram_mark(struct row_state *rs, uint64_t lo, uint64_t hi)
{
	if (hi > lo)
		tnpu_lines_set(rs, lo, hi);
	if (lo < rs->dirty_lo)
		rs->dirty_lo = (uint32_t)lo;
	if (hi > rs->dirty_hi)
		rs->dirty_hi = (uint32_t)hi;
}

#endif
