/* SPDX-License-Identifier: MIT */
/*
 * tnpu_core.h - public API of the tnpu golden model (no QEMU headers).
 *
 * Three parts, matching QEMU's threading model (qemu-device-notes.md):
 *
 *  (a) struct tnpu_core: the BAR0 register block.  tnpu_core_reg_read/write
 *      never run jobs; side effects the glue must act on (queues to kick,
 *      MSI-X vectors to notify, reset) come back in struct tnpu_effects.
 *      Call under one lock (the BQL in QEMU).
 *  (b) struct tnpu_exec: a job executor (storage units, clusters, cycle
 *      model).  tnpu_exec_run() runs one fetched job through the MMU and the
 *      memory callbacks and fills a struct tnpu_result; it never touches
 *      registers.  One executor per worker thread; executors are independent
 *      so several queues can run concurrently.
 *  (c) completion: tnpu_core_complete() writes the fence, updates head/
 *      status/error/counter registers and says which vectors to raise.
 *      Call under the same lock as (a).
 *
 * Typical QEMU flow:  doorbell write -> effects.kick_queues -> BH:
 *   tnpu_core_fetch(q) -> worker: tnpu_exec_run() -> BH: tnpu_core_complete()
 *   -> msix_notify(effects.msix_vectors) -> if effects.kick_queues, fetch again.
 *
 * libaccel's sim backend can call tnpu_exec_run_cmdbuf() directly with its own
 * in-process memory and page tables (same executor, identical results and
 * counters), or drive the full register/ring path like the QEMU device.
 *
 * No function aborts on guest-controlled input; there is no global mutable
 * state.
 */
#ifndef TNPU_CORE_H
#define TNPU_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tnpu_hw.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Guest-physical (bus address) memory.  Return 0 on success, non-zero on a
 * bus error (the job fails with TNPU_ERR_BUS / RING_FETCH / FENCE_WRITE).
 * Called from the thread that calls tnpu_exec_run() / tnpu_core_fetch() /
 * tnpu_core_complete().  Accesses never cross a 4 KiB page boundary when
 * they come from translated (job) accesses. */
struct tnpu_mem_ops {
	int (*read)(void *opaque, uint64_t pa, void *buf, size_t len);
	int (*write)(void *opaque, uint64_t pa, const void *buf, size_t len);
	void *opaque;
};

/* Device configuration (QEMU properties).  tnpu_config_default() fills the
 * fixed defaults; tnpu_config_validate() checks ranges. */
struct tnpu_config {
	uint32_t rows;		/* 1..16 */
	uint32_t cols;		/* 1..16 */
	uint32_t pes;		/* 1..64 */
	uint32_t sram;		/* bytes per storage unit: power of two, 64 KiB..64 MiB */
	uint32_t queues;	/* 1..16 */
	uint32_t clock_mhz;	/* 1..10000 */
	uint64_t watchdog_cycles; /* modeled cycles per job before TNPU_ERR_WATCHDOG; 0 = default */
	/* chain (#9): islands (groups of consecutive rows, islands-and-chaining.md).  n_islands 0 =
	 * one island of every row with every data type at full clock (the classic device). */
	uint32_t n_islands;
	struct tnpu_island_cfg {
		uint8_t rows;		/* >= 1; the islands' rows add up to `rows` */
		uint8_t dtypes;		/* TNPU_CAP_DTYPE_* bits, non-zero */
		uint8_t clkdiv;		/* 1..TNPU_ISLAND_MAX_CLKDIV: rows run at clock / clkdiv */
		uint8_t reserved;
	} islands[TNPU_MAX_ISLANDS];
	/* host-work units per job before TNPU_ERR_WATCHDOG with ERR_INFO 1 (cycle-model.md "Host-work
	 * budget"); 0 = TNPU_HOST_WORK_PER_PE per PE of the array (rows x cols x pes) */
	uint64_t host_work;
};
/* 2^32 cycles: 4.3 s of modelled time at the default 1 GHz (cycle-model.md "Watchdog"). */
#define TNPU_DEF_WATCHDOG	(1ull << 32)
/* Host-work budget per PE: one unit is one step of a loop whose trip count the guest chooses (a
 * transferred row, a guest page, a tile row, an instruction), 1 KiB moved or 1024 multiply-adds,
 * about 20..100 ns of host time; the default array (4 x 4 x 16 PEs) gets 2^26 units, a few seconds
 * (cycle-model.md "Host-work budget"). */
#define TNPU_HOST_WORK_PER_PE	(1ull << 18)

void tnpu_config_default(struct tnpu_config *cfg);
/* Host bytes of one executor's on-chip memories (storage units, accumulators, output queues,
 * ring memory); every queue has one executor.  tnpu_config_validate() refuses a configuration
 * whose queues together need more than TNPU_MAX_ONCHIP_TOTAL. */
uint64_t tnpu_config_onchip_bytes(const struct tnpu_config *cfg);
#define TNPU_MAX_ONCHIP_TOTAL	(4ull << 30)
/* 0 if valid, else -EINVAL with a message in msg (if msg != NULL). */
int tnpu_config_validate(const struct tnpu_config *cfg, char *msg, size_t msglen);

/* chain (#9): parse an island spec "ROWS[:DTYPES[:CLKDIV]][/...]" (islands separated by '/' or
 * ','; DTYPES: i8, f32, bf16 joined by '+', or "all"; e.g. "2:i8/2:i8+f32:2") into cfg->n_islands / cfg->islands.  An empty
 * string selects the default single island.  0 or -EINVAL with a message.  The row total is
 * checked by tnpu_config_validate(). */
int tnpu_islands_parse(const char *spec, struct tnpu_config *cfg, char *msg, size_t msglen);
/* Effective island table of a valid configuration (the default one filled in): returns the
 * number of islands; first[i] = first row of island i. */
unsigned tnpu_config_islands(const struct tnpu_config *cfg, struct tnpu_island_cfg out[TNPU_MAX_ISLANDS],
			     uint8_t first[TNPU_MAX_ISLANDS]);

/* Side effects of a register access or a completion, for the glue to apply. */
struct tnpu_effects {
	uint32_t kick_queues;	/* bit q: queue q may have work: call tnpu_core_fetch(q) */
	uint32_t msix_vectors;	/* bit v: notify MSI-X vector v */
	bool reset;		/* device reset happened: stop workers, drop in-flight jobs */
	bool mmu_invalidate;	/* MMU_INVALIDATE: tnpu_exec_tlb_invalidate() every executor */
	uint32_t preempt_queues;	/* bit q: Q_CTRL.PREEMPT: tnpu_exec_preempt(q's executor, true) */
};

/* Result of a register access. */
enum tnpu_reg_status {
	TNPU_REG_OK = 0,
	TNPU_REG_BAD_ACCESS = 1,	/* size/alignment invalid: read 0 / write ignored */
	TNPU_REG_UNMAPPED = 2,		/* no register there: read 0 / write ignored */
	TNPU_REG_READ_ONLY = 3,		/* write to a read-only register, ignored */
	TNPU_REG_IGNORED = 4,		/* write not allowed in the current state, ignored */
};

/* ---- (a) register block ----------------------------------------------- */
struct tnpu_core;

/* Returns 0 or -EINVAL (bad config, msg filled) / -ENOMEM. */
int tnpu_core_new(const struct tnpu_config *cfg, struct tnpu_core **out, char *msg, size_t msglen);
void tnpu_core_free(struct tnpu_core *core);
const struct tnpu_config *tnpu_core_config(const struct tnpu_core *core);
/* Hardware reset (power-on, FLR, CTRL.RESET): registers to reset values,
 * in-flight jobs are abandoned (their tnpu_core_complete() is ignored). */
void tnpu_core_reset(struct tnpu_core *core);
/* STATUS bits the glue computes (it owns the workers): TNPU_STATUS_RESET_PENDING
 * and TNPU_STATUS_MMU_INV_PENDING; other bits of `bits` are ignored.  Call before
 * reading STATUS; a reset leaves them as set (the glue recomputes them). */
void tnpu_core_set_pending(struct tnpu_core *core, uint32_t bits);
/* size is 4 or 8; offset relative to BAR0.  *val always written (0 on error). */
enum tnpu_reg_status tnpu_core_reg_read(struct tnpu_core *core, uint64_t offset, unsigned size,
					uint64_t *val);
enum tnpu_reg_status tnpu_core_reg_write(struct tnpu_core *core, uint64_t offset, unsigned size,
					 uint64_t val, struct tnpu_effects *fx);

/* ---- migration (Documentation/qemu-device.md "Migration") ------------- */
/* The register block between jobs as a versioned, size-checked little-endian byte string: magic,
 * format version, size, the geometry, then the registers.  Size of the snapshot of this core. */
size_t tnpu_core_snapshot_size(const struct tnpu_core *core);
/* Writes the snapshot into buf; returns its size, -EBUSY if a queue has a job in flight (drain
 * first), -ENOSPC if len is too small (msg names the reason). */
int tnpu_core_snapshot_save(const struct tnpu_core *core, void *buf, size_t len, char *msg, size_t msglen);
/* Loads a snapshot of a core with the same geometry.  Everything is checked before anything
 * changes: 0, or -EINVAL with msg naming the field (magic, version, size, a geometry field that
 * differs from this core's, a busy queue, a head/tail outside an enabled ring).  The reset
 * generation advances; no job may be in flight. */
int tnpu_core_snapshot_load(struct tnpu_core *core, const void *buf, size_t len, char *msg, size_t msglen);

/* ---- queue pipeline --------------------------------------------------- */
/* A fetched ring entry plus everything the executor needs (a value type). */
struct tnpu_job {
	uint32_t queue;
	uint32_t generation;	/* reset generation at fetch; stale completions are dropped */
	uint32_t head;		/* ring index of the entry */
	uint32_t fetch_error;	/* TNPU_ERR_RING_FETCH if the entry could not be read */
	uint64_t entry_pa;	/* bus address of the entry */
	struct tnpu_ring_entry entry;
	uint64_t ctx_table;	/* MMU_CTX_BASE sampled at fetch */
	uint32_t ctx_count;	/* MMU_CTX_COUNT sampled at fetch */
	uint32_t session;	/* queue enable session at fetch; a completion from an older one is dropped */
	uint64_t save_pa;	/* bus address of the entry's save record (Q_SAVE_BASE + 512 * head), 0 = none */
};

struct tnpu_result {
	uint32_t error;		/* enum tnpu_err, 0 = success */
	uint32_t err_info;
	uint32_t err_cmd_offset;
	uint32_t ctx;
	uint64_t err_addr;
	uint64_t counters[TNPU_CNT_NUM];
	uint64_t row_busy[TNPU_MAX_ROWS];	/* sparse (#8): busy cycles per cluster row (ROW_BUSY) */
	/* preemption (queues.md "Preemption"): the job stopped at a point; `save` is its record
	 * (state word included), written by tnpu_core_complete() */
	bool preempted;
	uint8_t save[TNPU_SAVE_BYTES];
	/* a RESUME job: the counters its earlier runs reported (already in the global block) */
	uint64_t base_counters[TNPU_CNT_NUM];
};

/* If queue q can run (device and queue enabled, not halted, not busy, entry
 * available) read the entry at HEAD, mark the queue busy, fill *job and
 * return true; otherwise return false and leave *job untouched.
 * Call under the register lock. */
bool tnpu_core_fetch(struct tnpu_core *core, unsigned q, const struct tnpu_mem_ops *mem,
		     struct tnpu_job *job);
/* Apply a finished job: fence write, HEAD/status/error/counter registers,
 * IRQ status; fx gets vectors to notify and queues to kick.  A job from
 * before the last reset is ignored.  Call under the register lock. */
void tnpu_core_complete(struct tnpu_core *core, const struct tnpu_job *job,
			const struct tnpu_result *res, const struct tnpu_mem_ops *mem,
			struct tnpu_effects *fx);

/* ---- (b) executor ----------------------------------------------------- */
struct tnpu_exec;

int tnpu_exec_new(const struct tnpu_config *cfg, struct tnpu_exec **out, char *msg, size_t msglen);
void tnpu_exec_free(struct tnpu_exec *ex);
/* Runs one job; returns res->error (0 on success).  Thread: any, one job at
 * a time per executor. */
uint32_t tnpu_exec_run(struct tnpu_exec *ex, const struct tnpu_job *job,
		       const struct tnpu_mem_ops *mem, struct tnpu_result *res);
/* Convenience for the sim backend and tests: run a command buffer in context
 * `ctx` of the context table at `ctx_table` (bus address, `ctx_count` entries). */
uint32_t tnpu_exec_run_cmdbuf(struct tnpu_exec *ex, const struct tnpu_mem_ops *mem,
			      uint64_t ctx_table, uint32_t ctx_count, uint16_t ctx,
			      uint64_t cmd_va, uint32_t cmd_len, struct tnpu_result *res);
/* Thread-safe: make the running job (and any later one, until
 * tnpu_exec_clear_abort()) stop with TNPU_ERR_ABORTED at the next command,
 * instruction, transferred row or page, or K panel of a MAC, whatever the job
 * asked for (well under 100 ms; qemu-device.md "Host resources").  Used by
 * reset/unrealize to stop a worker quickly. */
void tnpu_exec_abort(struct tnpu_exec *ex);
/* Q_CTRL.PREEMPT for the executor's queue (any thread): the running job stops at its next eligible
 * preemption point; the glue clears it when the queue's job completes. */
void tnpu_exec_preempt(struct tnpu_exec *ex, bool on);
void tnpu_exec_clear_abort(struct tnpu_exec *ex);
/* Thread-safe: MMU_INVALIDATE for this executor.  A running job drops its
 * cached translations before its next memory access. */
void tnpu_exec_tlb_invalidate(struct tnpu_exec *ex);
/* Thread-safe: true while a running job may still use a translation cached
 * before the last tnpu_exec_tlb_invalidate() (false once it dropped them,
 * and whenever no job runs). */
bool tnpu_exec_tlb_pending(struct tnpu_exec *ex);
/* Host-work units charged to the executor's last job so far (cycle-model.md "Host-work budget";
 * tests: a command's charge grows with the host work it does).  Call only between jobs. */
uint64_t tnpu_exec_work_units(const struct tnpu_exec *ex);
/* Host bytes held by the executor's scratch buffers (tests: they stay capped). */
size_t tnpu_exec_scratch_bytes(const struct tnpu_exec *ex);
/* Frees every scratch the executor keeps between jobs (the bf16 widening panel and the small kept
 * scratch); the next job allocates again.  Call only between jobs.  Results do not change. */
void tnpu_exec_release_scratch(struct tnpu_exec *ex);

/* ---- engine timeline trace (model/debug feature, cycle-model.md "Trace") -- */
/* What a trace event covers.  Append only. */
enum tnpu_trace_kind {
	TNPU_TRACE_DMA_H2D = 1,		/* LOAD engine: DMA_H2D (including FILL) */
	TNPU_TRACE_IM2COL = 2,		/* LOAD engine: IM2COL */
	TNPU_TRACE_DMA_D2H = 3,		/* STORE engine: DMA_D2H */
	TNPU_TRACE_DISPATCH = 4,	/* COMPUTE engine: packet issue (command + transfer to the rows) */
	TNPU_TRACE_CONFIG = 5,		/* one cluster row busy with a CONFIG packet */
	TNPU_TRACE_EXE = 6,		/* one cluster row busy with an EXE packet (MACs, SFU, stores) */
	TNPU_TRACE_SEM_WAIT = 7,	/* an engine stalled in SEM_WAIT (only emitted when it stalls) */
	TNPU_TRACE_FENCE = 8,		/* FENCE: all engines drained, optional fence write */
	TNPU_TRACE_RING_WAIT = 9,	/* an engine stalled in RING_WAIT (chain #9; only when it stalls) */
};
#define TNPU_TRACE_ROW_NONE	0xFFu

/* One busy (or stalled) interval of an engine or cluster row, in modeled cycles from the start
 * of the job.  engine: enum tnpu_engine; row: cluster row for CONFIG/EXE, else TNPU_TRACE_ROW_NONE;
 * cmd_offset: byte offset of the command in the command buffer.  start <= end <= TOTAL_CYCLES. */
struct tnpu_trace_event {
	uint8_t engine;
	uint8_t row;
	uint16_t kind;			/* enum tnpu_trace_kind */
	uint32_t cmd_offset;
	uint64_t start, end;
};
typedef void (*tnpu_trace_fn)(void *opaque, const struct tnpu_trace_event *ev);

/* Call fn for every interval of the following jobs, in command order, from the thread running the
 * job; fn == NULL turns tracing off.  Tracing never changes results or counters. */
void tnpu_exec_set_trace(struct tnpu_exec *ex, tnpu_trace_fn fn, void *opaque);

/*
 * Hazard checker (Documentation/hardware/hazards.md): records, per command, its modelled interval
 * [start, end) and the host and SRAM byte ranges it reads and writes; two accesses of one job that
 * overlap in bytes and in modelled time, at least one a write, are a hazard (an ordering edge --
 * in-order queue, semaphore, FENCE -- always separates them in time).  A new executor takes its
 * mode from the environment, TNPU_HAZARD=off|report|fail (unset/empty: off).
 */
enum tnpu_hazard_mode {
	TNPU_HAZARD_OFF = 0,	/* nothing recorded (no cost) */
	TNPU_HAZARD_REPORT = 1,	/* recorded and checked; tnpu_exec_hazard() tells, the job result is untouched */
	TNPU_HAZARD_FAIL = 2,	/* as REPORT, and a job that had no other error fails with TNPU_ERR_HAZARD */
};
enum tnpu_hazard_space { TNPU_HZ_HOST = 0, TNPU_HZ_SRAM = 1 };
struct tnpu_hazard {
	uint32_t cmd_a, cmd_b;		/* command offsets: a was issued first in the stream */
	uint8_t kind_a, kind_b;		/* enum tnpu_trace_kind of each access */
	uint8_t write_a, write_b;	/* 1 = that access writes the bytes */
	uint8_t space;			/* enum tnpu_hazard_space */
	uint8_t row;			/* SRAM: the storage unit (absolute row); host: 0 */
	uint16_t pad;
	uint64_t lo, hi;		/* first overlapping byte range found: host VA or SRAM row offset */
	uint64_t a_start, a_end, b_start, b_end;	/* the two modelled intervals, cycles */
};
/* Set the mode for the following jobs. */
void tnpu_exec_set_hazard(struct tnpu_exec *ex, enum tnpu_hazard_mode mode);
enum tnpu_hazard_mode tnpu_exec_hazard_mode(const struct tnpu_exec *ex);
/* Number of hazards of the last job (0 with the checker off); *first (if non-NULL) gets the first
 * (earliest second access in stream order). */
uint32_t tnpu_exec_hazard(const struct tnpu_exec *ex, struct tnpu_hazard *first);
/* ISA 2 vector unit: the fp32 function `func` (TNPU_VEC_SIGMOID..TNPU_VEC_RSQRT) of t, bit-exactly as
 * the device computes it (vector-units.md); NAN for another func. */
float tnpu_vec_eval(unsigned func, float t);
/* The same with MAP's fp32 parameters lo, hi (LEAKY, ELU, THRESH; vector-units.md). */
float tnpu_vec_eval_p(unsigned func, float t, float lo, float hi);
/* BINARY POW (VEC math): a^b from the unit's exp and log, bit-exactly as the device computes it. */
float tnpu_vec_pow(float a, float b);
/* MAP of an fp32 function over a packed run: out[i] = func(in[i] * scale + bias) (ReLU after when
 * relu), the same bits as tnpu_vec_eval per element; in is n little-endian fp32 words. */
void tnpu_vec_map_run(unsigned func, const uint8_t *in, float *out, size_t n, float scale, float bias, bool relu);

/* Name of a trace kind ("DMA_H2D", ...), "?" if unknown. */
const char *tnpu_trace_kind_name(unsigned kind);

/* Call on a worker thread that ran tnpu_exec_run() before the thread exits:
 * frees the GEMM kernels' per-thread packing scratch (else it leaks). */
void tnpu_thread_cleanup(void);

/* ---- page-table builder (in-process users: libaccel sim backend, tests) -- */
/* alloc_page returns the bus address of a zeroed, 4 KiB-aligned page, or 0. */
struct tnpu_pt_alloc {
	uint64_t (*alloc_page)(void *opaque);
	void *opaque;
};
/* Map [va, va+len) -> [pa, pa+len) with perms (TNPU_PTE_READ | TNPU_PTE_WRITE)
 * under the level-4 table at `root`; all page-aligned.  0, -EINVAL, -ENOMEM, -EIO. */
int tnpu_pt_map(const struct tnpu_mem_ops *mem, const struct tnpu_pt_alloc *al, uint64_t root, uint64_t va,
		uint64_t pa, uint64_t len, uint64_t perms);
/* Clear the leaf PTEs of [va, va+len) (tables are kept).  0, -EINVAL, -EIO. */
int tnpu_pt_unmap(const struct tnpu_mem_ops *mem, uint64_t root, uint64_t va, uint64_t len);
/* Write context-table entry ctx: root != 0 -> VALID | root, root == 0 -> invalid. */
int tnpu_ctx_set(const struct tnpu_mem_ops *mem, uint64_t ctx_table, uint16_t ctx, uint64_t root);

/* ---- helpers ---------------------------------------------------------- */
const char *tnpu_err_name(uint32_t err);
const char *tnpu_counter_name(unsigned idx);
/* Translate one VA in a context (for tests/debug): 0 or a TNPU_ERR_MMU_* code. */
uint32_t tnpu_mmu_translate(const struct tnpu_mem_ops *mem, uint64_t ctx_table, uint32_t ctx_count,
			    uint16_t ctx, uint64_t va, bool write, uint64_t *pa);

#ifdef __cplusplus
}
#endif

#endif /* TNPU_CORE_H */
