/* SPDX-License-Identifier: MIT */
/*
 * tnpu_hw.h - hardware definitions of the tnpu accelerator.
 *
 * Shared by the golden model (qemu-device/core), the QEMU glue and libaccel.
 * The normative text is Documentation/hardware/; this header must match it
 * byte for byte.  All multi-byte fields are little-endian.  Bit 0 is the
 * least significant bit.  Nothing here may include QEMU or kernel headers.
 */
#ifndef TNPU_HW_H
#define TNPU_HW_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TNPU_BIT(n)		(1u << (n))
/* Field helpers: mask of bits [h:l], extract, insert. */
#define TNPU_GENMASK(h, l)	((uint32_t)((~0u >> (31 - (h))) & (~0u << (l))))
#define TNPU_GET(v, h, l)	(((uint32_t)(v) & TNPU_GENMASK(h, l)) >> (l))
#define TNPU_PUT(x, h, l)	(((uint32_t)(x) << (l)) & TNPU_GENMASK(h, l))

/* ------------------------------------------------------------------------- */
/* PCI identity                                                              */
/* ------------------------------------------------------------------------- */
#define TNPU_PCI_VENDOR_ID	0x1234
#define TNPU_PCI_DEVICE_ID	0x4e50
#define TNPU_PCI_CLASS_CODE	0x120000	/* processing accelerator */
#define TNPU_PCI_REVISION	0x01
#define TNPU_BAR_REGS		0		/* BAR0: 64-bit memory BAR, registers */
#define TNPU_BAR_MSIX		2		/* BAR2: MSI-X table + PBA (exclusive BAR) */
#define TNPU_BAR0_SIZE		0x4000		/* 16 KiB */

/* MSI-X vectors: 0 = error/fault, 1 + q = completion of queue q. */
#define TNPU_MSIX_VEC_ERROR	0
#define TNPU_MSIX_VEC_QUEUE(q)	(1u + (q))

/* ------------------------------------------------------------------------- */
/* Limits and fixed architectural parameters                                 */
/* ------------------------------------------------------------------------- */
#define TNPU_MAX_ROWS		16
#define TNPU_MAX_COLS		16
#define TNPU_MAX_PES		64
#define TNPU_MIN_SRAM		(64u * 1024)		/* bytes per storage unit */
#define TNPU_MAX_SRAM		(64u * 1024 * 1024)
#define TNPU_MAX_QUEUES		16
#define TNPU_MAX_CLOCK_MHZ	10000

#define TNPU_DEF_ROWS		4
#define TNPU_DEF_COLS		4
#define TNPU_DEF_PES		16
#define TNPU_DEF_SRAM		(1024u * 1024)
#define TNPU_DEF_QUEUES		4
#define TNPU_DEF_CLOCK_MHZ	1000

#define TNPU_NUM_IBUFS		32	/* instruction buffers per cluster (5-bit id) */
#define TNPU_IBUF_DEPTH		64	/* instructions per buffer */
#define TNPU_RF_ENTRIES		64	/* register-file entries per cluster */
#define TNPU_RF_WINDOW		16	/* entries one buffer can name (4-bit field) */
#define TNPU_NUM_ACCS		4	/* accumulators per PE */
#define TNPU_ACC_ELEMS		1024	/* 32-bit elements per accumulator */
#define TNPU_NUM_SLOTS		4	/* input-buffer slots and weight-queue slots per PE */
#define TNPU_NUM_SEMS		16	/* semaphores per job */
#define TNPU_SEM_MAX_TOKENS	64	/* outstanding signal records per semaphore */
#define TNPU_MAX_CTX		4096	/* context-table entries */
#define TNPU_RING_MIN		2
#define TNPU_RING_MAX		4096	/* entries, power of two */
#define TNPU_CMDBUF_MAX		(16u * 1024 * 1024)	/* bytes per command buffer */
#define TNPU_IM2COL_MAX_FOOTPRINT (16u * 1024 * 1024)	/* bytes buffered per IM2COL */

/* Cycle-model rates (reported in CAP_RATES; see cycle-model.md). */
#define TNPU_RATE_MAC_INT8	16	/* int8 MACs per cycle per PE */
#define TNPU_RATE_MAC_FP32	4	/* fp32 MACs per cycle per PE */
#define TNPU_RATE_DMA		128	/* bytes per cycle, each direction (load / store engine) */
#define TNPU_RATE_DISPATCH	128	/* bytes per cycle per distribution unit (row): packets + LD */
#define TNPU_RATE_ST		128	/* bytes per cycle per cluster into its storage unit (ST) */
#define TNPU_RATE_IM2COL	128	/* SRAM bytes generated per cycle by IM2COL */
#define TNPU_RATE_OQ		64	/* output-queue elements per cycle per PE (PASS, ST RAW) */
#define TNPU_RATE_SFU		16	/* SFU elements per cycle per PE (APPLY, chained) */
#define TNPU_CYC_CMD		4	/* command decode, every command */
#define TNPU_CYC_DMA_SETUP	32	/* per DMA_H2D / DMA_D2H / IM2COL / FENCE write */
#define TNPU_CYC_DISPATCH	8	/* per DISPATCH, before the packet transfer */
#define TNPU_CYC_EXE		16	/* per EXE and row: pipeline fill/drain */
#define TNPU_CYC_JOB		64	/* per job: ring fetch + fence write */
#define TNPU_ZSKIP_MAX_SPEEDUP	16	/* index compare scans <= 16 candidate pairs per MAC lane per cycle */

/* ------------------------------------------------------------------------- */
/* BAR0 register map (all registers 32-bit; 64-bit values are LO/HI pairs     */
/* that also accept one aligned 8-byte access at the LO offset)              */
/* ------------------------------------------------------------------------- */
#define TNPU_REG_ID		0x0000	/* RO 0x554E5054 "TNPU" */
#define   TNPU_ID_VALUE		0x554E5054u
#define TNPU_REG_VERSION	0x0004	/* RO */
#define   TNPU_VERSION_MAJOR(v)	TNPU_GET(v, 31, 24)
#define   TNPU_VERSION_MINOR(v)	TNPU_GET(v, 23, 16)
#define   TNPU_VERSION_ISA(v)	TNPU_GET(v, 15, 8)
#define   TNPU_VERSION_PATCH(v)	TNPU_GET(v, 7, 0)
#define   TNPU_HW_VERSION_MAJOR	1
#define   TNPU_HW_VERSION_MINOR	0
#define   TNPU_HW_ISA_VERSION	2	/* 2: vector units (vector-units.md) */
#define   TNPU_VERSION_VALUE	((TNPU_HW_VERSION_MAJOR << 24) | (TNPU_HW_VERSION_MINOR << 16) | \
				 (TNPU_HW_ISA_VERSION << 8))
#define TNPU_REG_CAP_GEOM	0x0008	/* RO */
#define   TNPU_CAP_GEOM_ROWS(v)	TNPU_GET(v, 7, 0)
#define   TNPU_CAP_GEOM_COLS(v)	TNPU_GET(v, 15, 8)
#define   TNPU_CAP_GEOM_PES(v)	TNPU_GET(v, 23, 16)
#define   TNPU_CAP_GEOM_ACCS(v)	TNPU_GET(v, 31, 24)
#define TNPU_REG_CAP_SRAM	0x000C	/* RO bytes per storage unit (one per row); half = /2 */
#define TNPU_REG_CAP_CLUSTER	0x0010	/* RO */
#define   TNPU_CAP_CLUSTER_IBUFS(v)	TNPU_GET(v, 7, 0)
#define   TNPU_CAP_CLUSTER_IDEPTH(v)	TNPU_GET(v, 15, 8)
#define   TNPU_CAP_CLUSTER_RF(v)	TNPU_GET(v, 23, 16)
#define   TNPU_CAP_CLUSTER_SLOTS(v)	TNPU_GET(v, 31, 24)
#define TNPU_REG_CAP_ACC	0x0014	/* RO [15:0] elements per accumulator */
#define TNPU_REG_CAP_DTYPES	0x0018	/* RO bit per supported MAC type */
#define   TNPU_CAP_DTYPE_INT8	TNPU_BIT(0)	/* int8 x int8 -> int32 */
#define   TNPU_CAP_DTYPE_FP32	TNPU_BIT(1)	/* fp32 x fp32 -> fp32 */
#define   TNPU_CAP_DTYPE_BF16	TNPU_BIT(2)	/* bf16 x bf16 -> fp32 (fp32 MAC rate) */
#define TNPU_REG_CAP_QUEUES	0x001C	/* RO */
#define   TNPU_CAP_QUEUES_NUM(v)	TNPU_GET(v, 7, 0)
#define   TNPU_CAP_QUEUES_RING_LOG2(v)	TNPU_GET(v, 15, 8)	/* max ring entries, log2 */
#define   TNPU_CAP_QUEUES_VECTORS(v)	TNPU_GET(v, 23, 16)	/* MSI-X vectors = 1 + queues */
#define   TNPU_CAP_QUEUES_SEMS(v)	TNPU_GET(v, 31, 24)	/* semaphores per job */
#define TNPU_REG_CAP_MMU	0x0020	/* RO */
#define   TNPU_CAP_MMU_VA_BITS(v)	TNPU_GET(v, 7, 0)	/* 48 */
#define   TNPU_CAP_MMU_PA_BITS(v)	TNPU_GET(v, 15, 8)	/* 52 */
#define   TNPU_CAP_MMU_LEVELS(v)	TNPU_GET(v, 23, 16)	/* 4 */
#define   TNPU_CAP_MMU_PAGE_SHIFT(v)	TNPU_GET(v, 31, 24)	/* 12 */
#define TNPU_REG_CAP_MMU_CTX	0x0024	/* RO max context-table entries */
#define TNPU_REG_CAP_CLOCK	0x0028	/* RO cycle-model clock, MHz */
#define TNPU_REG_CAP_RATES	0x002C	/* RO */
#define   TNPU_CAP_RATES_INT8(v)	TNPU_GET(v, 7, 0)	/* MACs/cycle/PE */
#define   TNPU_CAP_RATES_FP32(v)	TNPU_GET(v, 15, 8)	/* MACs/cycle/PE */
#define   TNPU_CAP_RATES_DMA(v)		TNPU_GET(v, 23, 16)	/* bytes/cycle/direction */
#define   TNPU_CAP_RATES_DISPATCH(v)	TNPU_GET(v, 31, 24)	/* bytes/cycle/row */
#define TNPU_REG_CAP_FEATURES	0x0030	/* RO */
#define   TNPU_FEAT_ZSKIP	TNPU_BIT(0)	/* LD bitmask zero-skipping */
#define   TNPU_FEAT_SPARSE_W	TNPU_BIT(1)	/* (value, index) sparse weights */
#define   TNPU_FEAT_LOADBAL	TNPU_BIT(2)	/* neighbour load balancing */
#define   TNPU_FEAT_SFU_CHAIN	TNPU_BIT(3)	/* chained SFU */
#define   TNPU_FEAT_IM2COL	TNPU_BIT(4)	/* implicit-im2col load */
#define   TNPU_FEAT_SEMAPHORES	TNPU_BIT(5)	/* SEM_SIGNAL / SEM_WAIT, async commands */
#define   TNPU_FEAT_DMA_FILL	TNPU_BIT(6)	/* DMA_H2D fill mode */
#define   TNPU_FEAT_ROW_BUSY	TNPU_BIT(8)	/* sparse (#8): ROW_BUSY(r) registers */
#define   TNPU_FEAT_SPARSE_CNT	TNPU_BIT(9)	/* sparse (#8): counters 18..21 (row busy, LB) */
#define   TNPU_FEAT_ISLANDS	TNPU_BIT(10)	/* ISLAND command, island registers (chain #9) */
#define   TNPU_FEAT_RINGS	TNPU_BIT(11)	/* RING_INIT / RING_SIGNAL / RING_WAIT */
#define   TNPU_FEAT_RING_DMA	TNPU_BIT(12)	/* DMA to/from on-chip ring memory (TNPU_DMA_F_RING) */
#define   TNPU_FEAT_PLAN	TNPU_BIT(13)	/* static address plans: PLAN_LOAD / GATHER / PLAN_FREE */
#define   TNPU_FEAT_STREAM	TNPU_BIT(14)	/* line state: STREAM bands, clean-line skipping (#6) */
#define   TNPU_FEAT_VEC		TNPU_BIT(15)	/* ISA 2: VEC_LUT / VEC vector units (#16) */
#define   TNPU_FEAT_SFU_RESIDUAL	TNPU_BIT(16)	/* ISA 2: SFU record op RESIDUAL (#16) */
/* Every feature this model implements: the CAP_FEATURES value. */
#define TNPU_FEATURES	(TNPU_FEAT_ZSKIP | TNPU_FEAT_SPARSE_W | TNPU_FEAT_LOADBAL | TNPU_FEAT_SFU_CHAIN | \
			 TNPU_FEAT_IM2COL | TNPU_FEAT_SEMAPHORES | TNPU_FEAT_DMA_FILL | TNPU_FEAT_DEPTHWISE | \
			 TNPU_FEAT_ROW_BUSY | TNPU_FEAT_SPARSE_CNT | \
			 TNPU_FEAT_ISLANDS | TNPU_FEAT_RINGS | TNPU_FEAT_RING_DMA | TNPU_FEAT_PLAN | \
			 TNPU_FEAT_STREAM | TNPU_FEAT_VEC | TNPU_FEAT_SFU_RESIDUAL | \
			 TNPU_FEAT_DW_WIDE | TNPU_FEAT_COUNTERS | TNPU_FEAT_SFU_QCOL | TNPU_FEAT_VEC_QADD | \
			 TNPU_FEAT_CPAIR | TNPU_FEAT_WRAP | TNPU_FEAT_WDECOMP | TNPU_FEAT_PREEMPT | TNPU_FEAT_VEC_MATH)
#define TNPU_REG_CAP_CMDBUF	0x0034	/* RO max command-buffer bytes */

#define TNPU_REG_CTRL		0x0040	/* RW */
#define   TNPU_CTRL_ENABLE	TNPU_BIT(0)	/* queues are served only while set */
#define   TNPU_CTRL_RESET	TNPU_BIT(1)	/* W1: device reset, self-clearing, reads 0 */
#define TNPU_REG_STATUS		0x0044	/* RO */
#define   TNPU_STATUS_ENABLED	TNPU_BIT(0)
#define   TNPU_STATUS_BUSY	TNPU_BIT(1)	/* some queue has a job in flight */
#define   TNPU_STATUS_ERROR	TNPU_BIT(2)	/* some queue is halted on an error */
#define   TNPU_STATUS_RESET_PENDING	TNPU_BIT(3)	/* a reset's abandoned jobs may still access memory */
#define   TNPU_STATUS_MMU_INV_PENDING	TNPU_BIT(4)	/* an MMU_INVALIDATE is not yet complete */
#define TNPU_REG_SCRATCH	0x0048	/* RW, no effect */

#define TNPU_REG_IRQ_STATUS	0x0050	/* RO: pending interrupt causes */
#define   TNPU_IRQ_QUEUE(q)	TNPU_BIT(q)	/* queue q completed a job (q < 16) */
#define   TNPU_IRQ_QUEUE_MASK	0x0000FFFFu
#define   TNPU_IRQ_ERROR	TNPU_BIT(16)	/* a queue halted on a job error */
#define   TNPU_IRQ_MMU_FAULT	TNPU_BIT(17)	/* that error was an MMU fault */
#define   TNPU_IRQ_ALL		0x0003FFFFu
#define TNPU_REG_IRQ_MASK	0x0054	/* RW: 1 = cause masked; reset value 0xFFFFFFFF */
#define TNPU_REG_IRQ_ACK	0x0058	/* WO: write 1 to clear IRQ_STATUS bits */

#define TNPU_REG_ERR_CODE	0x0060	/* RO: most recent job error (enum tnpu_err) */
#define TNPU_REG_ERR_QUEUE	0x0064	/* RO: [7:0] queue, [31:16] context id */
#define TNPU_REG_ERR_INFO	0x0068	/* RO: code-specific, see errors.md */
#define TNPU_REG_ERR_CMD_OFFSET	0x006C	/* RO: byte offset of the failing command */
#define TNPU_REG_ERR_ADDR_LO	0x0070	/* RO: faulting device VA / SRAM offset */
#define TNPU_REG_ERR_ADDR_HI	0x0074
#define TNPU_REG_ERR_SEQNO_LO	0x0078	/* RO: seqno of the failing ring entry */
#define TNPU_REG_ERR_SEQNO_HI	0x007C

#define TNPU_REG_MMU_CTX_BASE_LO 0x0080	/* RW: bus address of the context table, bits [11:0] read 0 */
#define TNPU_REG_MMU_CTX_BASE_HI 0x0084
#define TNPU_REG_MMU_CTX_COUNT	0x0088	/* RW: entries (0..CAP_MMU_CTX); larger writes clamp */
#define TNPU_REG_MMU_INVALIDATE	0x008C	/* WO: any value, drops cached translations */
#define TNPU_REG_MMU_FAULTS	0x0090	/* RO: MMU faults since reset */
#define TNPU_REG_PERF_CTRL	0x0094	/* WO */
/* Static address plans (0x0380..0x03BF). */
#define TNPU_REG_PLAN_CACHE_BYTES	0x0380	/* RO plan-cache capacity per queue, bytes */
#define TNPU_REG_PLAN_CACHE_ENTRIES	0x0384	/* RO plans resident at once per queue */
#define   TNPU_PERF_CTRL_CLEAR	TNPU_BIT(0)	/* zero the global counter block */

/* Sparse (#8): busy cycles of cluster row r (0..15) in the last completed job, 64-bit RO. */
#define TNPU_REG_ROW_BUSY_BASE	0x0300
#define TNPU_REG_ROW_BUSY(r)	(TNPU_REG_ROW_BUSY_BASE + 8u * (r))

/* Global counter block: TNPU_CNT_SLOTS 64-bit counters summed over all jobs. */
#define TNPU_REG_PERF_BASE	0x0400
#define TNPU_REG_PERF(i)	(TNPU_REG_PERF_BASE + 8u * (i))

/* Per-queue blocks. */
#define TNPU_REG_QUEUE_BASE	0x1000
#define TNPU_REG_QUEUE_STRIDE	0x0200
#define TNPU_REG_Q(q, r)	(TNPU_REG_QUEUE_BASE + TNPU_REG_QUEUE_STRIDE * (q) + (r))
#define TNPU_Q_RING_BASE_LO	0x000	/* RW while disabled: bus address, 64-byte aligned */
#define TNPU_Q_RING_BASE_HI	0x004
#define TNPU_Q_RING_SIZE	0x008	/* RW while disabled: entries, power of two 2..4096 */
#define TNPU_Q_HEAD		0x00C	/* RO: next entry the device fetches */
#define TNPU_Q_TAIL		0x010	/* RW: next entry the driver fills (masked to size-1) */
#define TNPU_Q_DOORBELL		0x014	/* WO: any value, "tail moved" */
#define TNPU_Q_FENCE_LO		0x018	/* RW: bus address of the 8-byte fence, 8-byte aligned */
#define TNPU_Q_FENCE_HI		0x01C
#define TNPU_Q_CTRL		0x020	/* RW */
#define   TNPU_Q_CTRL_ENABLE	TNPU_BIT(0)	/* 0->1: HEAD = TAIL = 0, ERROR cleared */
#define   TNPU_Q_CTRL_SKIP	TNPU_BIT(1)	/* W1 in ERROR: drop the failed entry, resume */
#define   TNPU_Q_CTRL_PREEMPT	TNPU_BIT(2)	/* W1 while BUSY: stop the job at its next eligible point */
#define TNPU_Q_STATUS		0x024	/* RO */
#define   TNPU_Q_STATUS_ENABLED	TNPU_BIT(0)
#define   TNPU_Q_STATUS_BUSY	TNPU_BIT(1)	/* a job of this queue is in flight */
#define   TNPU_Q_STATUS_ERROR	TNPU_BIT(2)	/* halted on the entry at HEAD */
#define   TNPU_Q_STATUS_PREEMPT_REQ	TNPU_BIT(3)	/* a preemption request is pending */
#define TNPU_Q_DONE_SEQNO_LO	0x028	/* RO: last seqno written to the fence */
#define TNPU_Q_DONE_SEQNO_HI	0x02C
#define TNPU_Q_ERR_CODE		0x030	/* RO: error of the halted job, 0 if none */
#define TNPU_Q_ERR_INFO		0x034
#define TNPU_Q_ERR_CMD_OFFSET	0x038
#define TNPU_Q_ERR_CTX		0x03C
#define TNPU_Q_ERR_ADDR_LO	0x040
#define TNPU_Q_ERR_ADDR_HI	0x044
#define TNPU_Q_ERR_SEQNO_LO	0x048
#define TNPU_Q_ERR_SEQNO_HI	0x04C
#define TNPU_Q_JOBS_DONE	0x050	/* RO: jobs completed (ok, error or preempted) since reset, wraps */
#define TNPU_Q_SAVE_BASE_LO	0x058	/* RW: bus address of the save records (512 B per entry) */
#define TNPU_Q_SAVE_BASE_HI	0x05C
#define TNPU_Q_PERF_BASE	0x100	/* RO: counters of the last job of this queue */
#define TNPU_Q_PERF(i)		(TNPU_Q_PERF_BASE + 8u * (i))

/* ------------------------------------------------------------------------- */
/* Performance counters (index into the counter blocks / result array)       */
/* ------------------------------------------------------------------------- */
enum tnpu_counter {
	TNPU_CNT_TOTAL_CYCLES = 0,	/* job start to fence write */
	TNPU_CNT_COMPUTE_CYCLES = 1,	/* cycles with at least one row executing */
	TNPU_CNT_DMA_CYCLES = 2,	/* load-engine + store-engine busy cycles */
	TNPU_CNT_STALL_CYCLES = 3,	/* engine cycles spent in SEM_WAIT */
	TNPU_CNT_MACS_DENSE = 4,	/* dense-equivalent MACs */
	TNPU_CNT_MACS_EFFECTIVE = 5,	/* MACs actually performed after zero-skipping */
	TNPU_CNT_BYTES_H2D = 6,		/* bytes read from host memory by DMA/IM2COL */
	TNPU_CNT_BYTES_D2H = 7,		/* bytes written to host memory by DMA */
	TNPU_CNT_BYTES_DISPATCH = 8,	/* packet bytes + LD operand bytes delivered */
	TNPU_CNT_BYTES_CONFIG = 9,	/* CONFIG packet bytes */
	TNPU_CNT_INSTRUCTIONS = 10,	/* cluster instructions issued (per row) */
	TNPU_CNT_BANK_SWAPS = 11,	/* ping-pong half changes seen by a row */
	TNPU_CNT_MMU_FAULTS = 12,
	TNPU_CNT_COMMANDS = 13,		/* command-processor commands executed */
	TNPU_CNT_OQ_ACCESSES = 14,	/* output-queue element accesses */
	TNPU_CNT_SFU_OPS = 15,		/* elements processed by the SFU */
	TNPU_CNT_LOAD_CYCLES = 16,	/* load-engine busy cycles */
	TNPU_CNT_STORE_CYCLES = 17,	/* store-engine busy cycles */
	/* sparse (#8): load balance across rows and PEs */
	TNPU_CNT_ROW_BUSY_MAX = 18,	/* busy cycles of the busiest row */
	TNPU_CNT_ROW_BUSY_SUM = 19,	/* busy cycles summed over rows */
	TNPU_CNT_BUSY_ROWS = 20,	/* rows that executed at least one packet */
	TNPU_CNT_LB_MACS_MOVED = 21,	/* effective MACs the MAC LB flag moved to a neighbour PE */
	/* chain (#9): producer-consumer rings, islands-and-chaining.md */
	TNPU_CNT_RING_ROWS = 22,	/* ring rows published (RING_SIGNAL PUBLISH counts) */
	TNPU_CNT_RING_WAIT_CYCLES = 23,	/* cycles consumers stalled in RING_WAIT ROWS */
	TNPU_CNT_RING_FULL_CYCLES = 24,	/* cycles producers stalled in RING_WAIT SPACE (ring full) */
	TNPU_CNT_RING_BYTES = 25,	/* bytes moved between storage units and ring memory */
	TNPU_CNT_PLAN_HITS = 26,	/* PLAN_LOADs served from the plan cache */
	TNPU_CNT_PLAN_MISSES = 27,	/* PLAN_LOADs that uploaded the plan */
	/* device-ops (#16): vector units, vector-units.md */
	TNPU_CNT_VEC_OPS = 28,		/* vector-unit element-operations, summed over rows */
	TNPU_CNT_VEC_CYCLES = 29,	/* vector-unit busy cycles, summed over rows */
	TNPU_CNT_NUM = 30,
};
#define TNPU_CNT_SLOTS		32	/* slots reserved in each counter block */

/* ------------------------------------------------------------------------- */
/* Error codes (ERR_CODE, Q_ERR_CODE, job results)                           */
/* ------------------------------------------------------------------------- */
enum tnpu_err {
	TNPU_ERR_NONE = 0,
	TNPU_ERR_CMD_OPCODE = 1,	/* unknown command opcode */
	TNPU_ERR_CMD_SIZE = 2,		/* command size field wrong or runs past the buffer */
	TNPU_ERR_CMD_RESERVED = 3,	/* reserved command field or flag not zero */
	TNPU_ERR_CMDBUF = 4,		/* ring entry cmd_va/cmd_len invalid */
	TNPU_ERR_RING_ENTRY = 5,	/* ring entry flags/reserved invalid */
	TNPU_ERR_RING_FETCH = 6,	/* bus error reading the ring entry */
	TNPU_ERR_FENCE_WRITE = 7,	/* bus error writing the fence */
	TNPU_ERR_CTX_RANGE = 8,		/* context id >= MMU_CTX_COUNT */
	TNPU_ERR_CTX_INVALID = 9,	/* context entry not valid / reserved bits / bus error */
	TNPU_ERR_MMU_NOT_PRESENT = 10,	/* PTE not valid at some level */
	TNPU_ERR_MMU_PERMISSION = 11,	/* leaf lacks R (read) or W (write) */
	TNPU_ERR_MMU_BAD_PTE = 12,	/* reserved PTE bits set */
	TNPU_ERR_MMU_VA_RANGE = 13,	/* VA >= 2^48 or VA range wraps */
	TNPU_ERR_BUS = 14,		/* host memory access failed after translation */
	TNPU_ERR_DMA_DESC = 15,		/* invalid DMA descriptor */
	TNPU_ERR_SRAM_RANGE = 16,	/* storage-unit access outside the half */
	TNPU_ERR_CONV_DESC = 17,	/* invalid IM2COL descriptor */
	TNPU_ERR_DISPATCH = 18,		/* invalid DISPATCH row/half/flags/length */
	TNPU_ERR_PACKET = 19,		/* invalid 8-bit command or EXE data */
	TNPU_ERR_CONFIG = 20,		/* invalid CONFIG data */
	TNPU_ERR_INSTR = 21,		/* invalid 12-bit instruction */
	TNPU_ERR_IBUF_EMPTY = 22,	/* EXE of a buffer that was never configured */
	TNPU_ERR_OPERAND = 23,		/* invalid operand record for its use */
	TNPU_ERR_ACC_SHAPE = 24,	/* MAC/ST shape does not match the accumulator */
	TNPU_ERR_SLOT_EMPTY = 25,	/* MAC/SFU/ST on an empty slot/accumulator/queue */
	TNPU_ERR_SPARSE_INDEX = 26,	/* sparse weight index >= K */
	TNPU_ERR_SFU_PARAM = 27,	/* invalid SFU parameter record */
	TNPU_ERR_DTYPE = 28,		/* data-type mismatch between operands */
	TNPU_ERR_SEM = 29,		/* invalid semaphore id or engine */
	TNPU_ERR_SEM_DEADLOCK = 30,	/* SEM_WAIT not covered by earlier SEM_SIGNALs */
	TNPU_ERR_SEM_OVERFLOW = 31,	/* more than 64 outstanding signal records */
	TNPU_ERR_TOO_LARGE = 32,	/* IM2COL footprint / GATHER line span above 16 MiB */
	TNPU_ERR_ALIGN = 33,		/* fp32/int32 operand or pitch not 4-byte aligned */
	TNPU_ERR_WATCHDOG = 34,		/* job exceeded the modeled-cycle watchdog */
	TNPU_ERR_ABORTED = 35,		/* job aborted by reset / queue disable */
	TNPU_ERR_NOMEM = 36,		/* model could not allocate host memory */
	/* chain (#9): islands-and-chaining.md */
	TNPU_ERR_RING_DESC = 40,	/* bad ring descriptor, ring id, op, count or island role */
	TNPU_ERR_RING_DEADLOCK = 41,	/* RING_WAIT that earlier commands can never satisfy */
	TNPU_ERR_RING_ACCESS = 42,	/* ring-memory access to rows not owned (unpublished, unreserved) */
	TNPU_ERR_ISLAND_ACCESS = 43,	/* command touches a row / SRAM window of another island */
	TNPU_ERR_ISLAND_CAP = 44,	/* operation the executing island does not support */
	TNPU_ERR_PLAN_DESC = 45,	/* invalid PLAN_LOAD / GATHER / PLAN_FREE fields */
	TNPU_ERR_PLAN_UNKNOWN = 46,	/* GATHER names a handle not resident for this context */
	TNPU_ERR_PLAN_BAD = 47,		/* plan contents invalid (header, sizes, entries, checksum) */
	TNPU_ERR_PLAN_TOO_LARGE = 48,	/* plan larger than the plan cache */
	TNPU_ERR_DW_PARAM = 50,		/* invalid depthwise parameter record (DW MAC) */
	TNPU_ERR_DW_SHAPE = 51,		/* DW MAC operands do not match its parameter record */
	TNPU_ERR_VEC_DESC = 53,		/* VEC / VEC_LUT field rules (vector-units.md) */
	TNPU_ERR_VEC_SHAPE = 54,	/* VEC work above the per-command bound, bad pooling window */
	TNPU_ERR_COUNTERS_WRITE = 55,	/* bus error writing the job's counter record */
	TNPU_ERR_HAZARD = 56,		/* hazard checker in FAIL mode: unordered overlapping accesses (hazards.md) */
	TNPU_ERR_DEQ_DESC = 57,		/* DMA_DEQ field rules (commands.md); ERR_INFO = the field's offset */
	TNPU_ERR_RESUME = 58,		/* RESUME: bad save record or resume point; ERR_INFO = field offset */
	TNPU_ERR_SAVE_WRITE = 59,	/* bus error writing the save record at a preemption point */
	TNPU_ERR_COUNT
};

/* ERR_INFO for MMU errors (codes 10..14). */
#define TNPU_ERRINFO_WRITE	TNPU_BIT(0)	/* the access was a write */
#define TNPU_ERRINFO_LEVEL(v)	TNPU_GET(v, 3, 1)	/* 4..1 table level, 0 = context entry */
#define TNPU_ERRINFO_ENGINE(v)	TNPU_GET(v, 7, 4)	/* enum tnpu_engine + 1, 0 = command fetch */
/* ERR_INFO for cluster errors (codes 19..28): [7:0] row, [15:8] buffer id,
 * [23:16] instruction index (0xFF = not an instruction). */

/* ------------------------------------------------------------------------- */
/* Device MMU                                                                 */
/* ------------------------------------------------------------------------- */
#define TNPU_PAGE_SHIFT		12
#define TNPU_PAGE_SIZE		(1u << TNPU_PAGE_SHIFT)
#define TNPU_VA_BITS		48
#define TNPU_PA_BITS		52
#define TNPU_PT_LEVELS		4
#define TNPU_PT_ENTRIES		512
/* VA bits [47:39] index level 4 (root), [38:30] level 3, [29:21] level 2, [20:12] level 1. */
#define TNPU_PT_INDEX(va, level) ((unsigned)(((va) >> (TNPU_PAGE_SHIFT + 9 * ((level) - 1))) & 0x1FF))

#define TNPU_PTE_VALID		(1ull << 0)
#define TNPU_PTE_READ		(1ull << 1)	/* leaf only; ignored in tables */
#define TNPU_PTE_WRITE		(1ull << 2)	/* leaf only; ignored in tables */
#define TNPU_PTE_ADDR_MASK	0x000FFFFFFFFFF000ull	/* bits [51:12] */
#define TNPU_PTE_RESERVED_MASK	(~(TNPU_PTE_ADDR_MASK | 0x7ull))	/* must be 0 when VALID */

/* Context table entry: 16 bytes, indexed by context id. */
struct tnpu_ctx_entry {
	uint64_t root;		/* bit 0 VALID, [51:12] root table bus address, others 0 */
	uint64_t reserved;	/* must be 0 */
};
#define TNPU_CTX_VALID		(1ull << 0)
_Static_assert(sizeof(struct tnpu_ctx_entry) == 16, "ctx entry");

/* ------------------------------------------------------------------------- */
/* Submission ring entry (32 bytes)                                           */
/* ------------------------------------------------------------------------- */
struct tnpu_ring_entry {
	uint16_t ctx;		/* context id, < MMU_CTX_COUNT */
	uint16_t flags;		/* TNPU_RING_F_* */
	uint32_t cmd_len;	/* bytes, multiple of 8, 8..CAP_CMDBUF */
	uint64_t cmd_va;	/* device VA of the command buffer, 8-byte aligned */
	uint64_t seqno;		/* written to the queue's fence on success */
	uint64_t counters_addr;	/* TNPU_RING_F_COUNTERS: bus address of the counter record, else 0 */
};
#define TNPU_RING_F_IRQ		TNPU_BIT(0)	/* raise the queue's completion vector */
#define TNPU_RING_F_COUNTERS	TNPU_BIT(1)	/* write the counter record to counters_addr */
#define TNPU_RING_F_PREEMPTIBLE	TNPU_BIT(2)	/* may stop at preemption points (CAP_FEATURES bit 24) */
#define TNPU_RING_F_RESUME	TNPU_BIT(3)	/* continue from the save record in this entry's slot */
#define TNPU_RING_F_MASK	0x000Fu
#define TNPU_COUNTER_RECORD_BYTES	256	/* 32 little-endian 64-bit counters */

/* Save record of a preempted job (queues.md "Preemption"): one per ring entry at Q_SAVE_BASE. */
#define TNPU_SAVE_BYTES		512
#define TNPU_SAVE_MAGIC		0x45525054u	/* "TPRE" */
#define TNPU_SAVE_VERSION	1
#define TNPU_SAVE_OFF_MAGIC	0	/* u32 */
#define TNPU_SAVE_OFF_VERSION	4	/* u16 */
#define TNPU_SAVE_OFF_ISLAND	6	/* u8 */
#define TNPU_SAVE_OFF_RSV0	7	/* u8, 0 */
#define TNPU_SAVE_OFF_RESUME	8	/* u32: offset of the PREEMPT command */
#define TNPU_SAVE_OFF_CMD_LEN	12	/* u32 */
#define TNPU_SAVE_OFF_CMD_VA	16	/* u64 */
#define TNPU_SAVE_OFF_CTX	24	/* u16 */
#define TNPU_SAVE_OFF_RSV1	26	/* u16, 0 */
#define TNPU_SAVE_OFF_RSV4	28	/* u32, 0 */
#define TNPU_SAVE_OFF_TIME	32	/* u64: modelled cycles at the point */
#define TNPU_SAVE_OFF_WORK	40	/* u64: host-work units so far */
#define TNPU_SAVE_OFF_SEQNO	48	/* u64: seqno of the preempted entry */
#define TNPU_SAVE_OFF_STATE	56	/* u32: TNPU_SAVE_PREEMPTED, written last */
#define TNPU_SAVE_OFF_RSV2	60	/* u32, 0 */
#define TNPU_SAVE_OFF_ROW_BUSY	64	/* 16 x u64 */
#define TNPU_SAVE_OFF_COUNTERS	192	/* 32 x u64, without the job-end counters */
#define TNPU_SAVE_OFF_SEMS	448	/* 16 x u32: island 0's semaphore tokens not consumed yet */
#define TNPU_SAVE_PREEMPTED	1u
_Static_assert(sizeof(struct tnpu_ring_entry) == 32, "ring entry");
_Static_assert(offsetof(struct tnpu_ring_entry, cmd_len) == 4, "ring entry");
_Static_assert(offsetof(struct tnpu_ring_entry, cmd_va) == 8, "ring entry");
_Static_assert(offsetof(struct tnpu_ring_entry, seqno) == 16, "ring entry");

/* ------------------------------------------------------------------------- */
/* Command-processor commands                                                */
/* ------------------------------------------------------------------------- */
enum tnpu_engine {
	TNPU_ENGINE_LOAD = 0,	/* DMA_H2D, IM2COL */
	TNPU_ENGINE_COMPUTE = 1,/* DISPATCH */
	TNPU_ENGINE_STORE = 2,	/* DMA_D2H */
	TNPU_ENGINE_NUM = 3,
};

enum tnpu_cmd_opcode {
	TNPU_CMD_NOP = 0x00,
	TNPU_CMD_DMA_H2D = 0x01,
	TNPU_CMD_DMA_D2H = 0x02,
	TNPU_CMD_IM2COL = 0x03,
	TNPU_CMD_DISPATCH = 0x04,
	TNPU_CMD_SEM_SIGNAL = 0x05,
	TNPU_CMD_SEM_WAIT = 0x06,
	TNPU_CMD_FENCE = 0x07,
	/* chain (#9): islands-and-chaining.md */
	TNPU_CMD_ISLAND = 0x08,		/* select the island whose sub-stream the next commands join */
	TNPU_CMD_RING_INIT = 0x09,	/* define a producer-consumer ring */
	TNPU_CMD_RING_SIGNAL = 0x0A,	/* PUBLISH rows / RELEASE slots (boundary pointers) */
	TNPU_CMD_RING_WAIT = 0x0B,	/* wait for published ROWS / free SPACE */
	TNPU_CMD_PLAN_LOAD = 0x0C,	/* make a static address plan resident (plans.md) */
	TNPU_CMD_GATHER = 0x0D,		/* plan-driven gather load of one tile */
	TNPU_CMD_PLAN_FREE = 0x0E,	/* drop plans of the job's context from the cache */
};

/* Every command starts with this 8-byte header; size includes the header. */
struct tnpu_cmd_hdr {
	uint8_t opcode;		/* enum tnpu_cmd_opcode */
	uint8_t flags;		/* TNPU_CMD_F_* */
	uint16_t reserved;	/* must be 0 */
	uint32_t size;		/* bytes, multiple of 8 */
};
_Static_assert(sizeof(struct tnpu_cmd_hdr) == 8, "cmd hdr");
#define TNPU_CMD_F_ASYNC	TNPU_BIT(0)	/* do not wait for the previous command */
#define TNPU_CMD_F_PREEMPT	TNPU_BIT(1)	/* a preemption point before this command (CAP_FEATURES bit 24) */
#define TNPU_CMD_F_MASK		0x03u

/* NOP: header only, size 8. */

/* FENCE: barrier over all engines, then (if va != 0) write `value` to va. */
struct tnpu_cmd_fence {
	struct tnpu_cmd_hdr hdr;	/* size 24 */
	uint64_t va;			/* device VA, 8-byte aligned, or 0 = barrier only */
	uint64_t value;
};
_Static_assert(sizeof(struct tnpu_cmd_fence) == 24, "fence cmd");

/* DMA_H2D / DMA_D2H: 3-D strided copy between host VA and one storage-unit half. */
struct tnpu_cmd_dma {
	struct tnpu_cmd_hdr hdr;	/* size 64 */
	uint64_t host_va;
	uint64_t host_pitch_y;		/* bytes between rows in host memory */
	uint64_t host_pitch_z;		/* bytes between planes in host memory */
	uint32_t sram_off;		/* byte offset in the half */
	uint32_t sram_pitch_y;
	uint32_t sram_pitch_z;
	uint32_t width;			/* bytes per row, >= 1 */
	uint32_t height;		/* rows, >= 1 */
	uint32_t depth;			/* planes, >= 1 */
	uint8_t row;			/* storage unit; 0xFF = all rows (H2D only) */
	uint8_t half;			/* 0 = ping, 1 = pong */
	uint8_t dma_flags;		/* TNPU_DMA_F_* */
	uint8_t fill;			/* fill byte for TNPU_DMA_F_FILL */
	uint32_t reserved;		/* must be 0 */
};
#define TNPU_DMA_ROW_ALL	0xFF
#define TNPU_DMA_F_FILL		TNPU_BIT(0)	/* H2D only: write `fill`, read no host memory */
#define TNPU_DMA_F_RING		TNPU_BIT(1)	/* host_va is a ring-memory byte offset (chain #9) */
#define TNPU_DMA_F_MASK		0x03u
_Static_assert(sizeof(struct tnpu_cmd_dma) == 64, "dma cmd");
_Static_assert(offsetof(struct tnpu_cmd_dma, sram_off) == 32, "dma cmd");
_Static_assert(offsetof(struct tnpu_cmd_dma, row) == 56, "dma cmd");

/* IM2COL: implicit-im2col load of one GEMM A tile (rows = output pixels, cols = r,s,c). */
struct tnpu_cmd_im2col {
	struct tnpu_cmd_hdr hdr;	/* size 104 */
	uint64_t src_va;		/* element (0,0,0,0) of the input tensor */
	uint64_t stride_n;		/* host byte strides of the input tensor */
	uint64_t stride_c;
	uint64_t stride_h;
	uint64_t stride_w;
	uint16_t n, h, w, c;		/* input shape, each >= 1 */
	uint16_t r, s;			/* filter height, width, >= 1 */
	uint16_t oh, ow;		/* output height, width, >= 1 */
	uint8_t stride_y, stride_x;	/* >= 1 */
	uint8_t dil_y, dil_x;		/* >= 1 */
	uint8_t pad_top, pad_left;	/* pad_bottom/right follow from oh, ow */
	uint8_t layout;			/* enum tnpu_layout: K order and contiguous axis */
	uint8_t dtype;			/* TNPU_DTYPE_INT8, TNPU_DTYPE_FP32 or TNPU_DTYPE_BF16 */
	uint32_t pad_value;		/* raw element bits (int8 in [7:0], bf16 in [15:0]) */
	uint32_t m0, mt;		/* first output pixel (row of A) and count */
	uint32_t k0, kt;		/* first K column and count */
	uint32_t sram_off;		/* byte offset of the tile in the half */
	uint32_t sram_pitch;		/* bytes between tile rows */
	uint8_t row;			/* storage unit; 0xFF = all rows */
	uint8_t half;
	uint16_t reserved;		/* must be 0 */
};
enum tnpu_layout {
	TNPU_LAYOUT_NHWC = 0,	/* k = (r*S + s)*C + c; C contiguous (stride_c == elem size) */
	TNPU_LAYOUT_NCHW = 1,	/* k = (c*R + r)*S + s; W contiguous (stride_w == elem size) */
};
_Static_assert(sizeof(struct tnpu_cmd_im2col) == 104, "im2col cmd");
_Static_assert(offsetof(struct tnpu_cmd_im2col, n) == 48, "im2col cmd");
_Static_assert(offsetof(struct tnpu_cmd_im2col, pad_value) == 72, "im2col cmd");
_Static_assert(offsetof(struct tnpu_cmd_im2col, m0) == 76, "im2col cmd");
_Static_assert(offsetof(struct tnpu_cmd_im2col, row) == 100, "im2col cmd");

/* DISPATCH: one {8-bit command + data} packet to one row or all rows. */
struct tnpu_cmd_dispatch {
	struct tnpu_cmd_hdr hdr;	/* size = 16 + packet_len rounded up to 8 */
	uint8_t row;			/* 0..rows-1, or 0xFF = broadcast */
	uint8_t half;			/* half the cluster operands address */
	uint8_t dflags;			/* TNPU_DISPATCH_F_* */
	uint8_t reserved;		/* must be 0 */
	uint32_t packet_len;		/* bytes of packet, >= 1 */
	/* uint8_t packet[packet_len]; then zero padding to 8 bytes */
};
#define TNPU_DISPATCH_ROW_ALL	0xFF
#define TNPU_DISPATCH_F_RF_RESTORE TNPU_BIT(0)	/* EXE: restore scalar-updated operands first */
#define TNPU_DISPATCH_F_MASK	0x01u
_Static_assert(sizeof(struct tnpu_cmd_dispatch) == 16, "dispatch cmd");

/* SEM_SIGNAL / SEM_WAIT: dependency tokens between engines (size 16). */
struct tnpu_cmd_sem {
	struct tnpu_cmd_hdr hdr;
	uint8_t engine;			/* enum tnpu_engine executing the signal/wait */
	uint8_t sem;			/* 0..TNPU_NUM_SEMS-1 */
	uint16_t reserved;		/* must be 0 */
	uint32_t count;			/* 1..65535 */
};
_Static_assert(sizeof(struct tnpu_cmd_sem) == 16, "sem cmd");

/* ---- chain (#9): islands and producer-consumer rings (islands-and-chaining.md) ---- */
#define TNPU_MAX_ISLANDS	8
#define TNPU_NUM_RINGS		8	/* ring descriptors per job */
#define TNPU_RING_MAX_SLOTS	4096
#define TNPU_RING_MEM_BYTES	(1024u * 1024)	/* on-chip ring memory */
#define TNPU_ISLAND_MAX_CLKDIV	8

/* ISLAND: the following commands join island `island`'s sub-stream (own engines, semaphores). */
struct tnpu_cmd_island {
	struct tnpu_cmd_hdr hdr;	/* size 16 */
	uint8_t island;			/* 0..islands-1 */
	uint8_t reserved[7];		/* must be 0 */
};
_Static_assert(sizeof(struct tnpu_cmd_island) == 16, "island cmd");

/* RING_INIT: ring `ring` has `slots` rows of `pitch` bytes at `base` in ring memory (pitch 0: no
 * ring memory, the ring only orders accesses elsewhere).  Only `producer` publishes / reserves,
 * only `consumer` waits for rows / releases. */
struct tnpu_cmd_ring_init {
	struct tnpu_cmd_hdr hdr;	/* size 32 */
	uint8_t ring;			/* 0..TNPU_NUM_RINGS-1 */
	uint8_t producer;		/* island */
	uint8_t consumer;		/* island */
	uint8_t reserved0;		/* must be 0 */
	uint32_t slots;			/* 1..TNPU_RING_MAX_SLOTS */
	uint32_t base;			/* ring-memory byte offset (0 when pitch is 0) */
	uint32_t pitch;			/* bytes per slot, 0 = pointer-only ring */
	uint64_t reserved1;		/* must be 0 */
};
_Static_assert(sizeof(struct tnpu_cmd_ring_init) == 32, "ring init cmd");

/* RING_SIGNAL / RING_WAIT: one boundary-pointer operation on `engine`'s timeline. */
struct tnpu_cmd_ring_op {
	struct tnpu_cmd_hdr hdr;	/* size 16 */
	uint8_t engine;			/* enum tnpu_engine of the current island */
	uint8_t ring;
	uint8_t op;			/* enum tnpu_ring_op (signal) / enum tnpu_ring_wait (wait) */
	uint8_t reserved;		/* must be 0 */
	uint32_t count;			/* rows, 1..slots */
};
_Static_assert(sizeof(struct tnpu_cmd_ring_op) == 16, "ring op cmd");
enum tnpu_ring_op {
	TNPU_RING_PUBLISH = 0,	/* producer: `count` reserved rows become visible to the consumer */
	TNPU_RING_RELEASE = 1,	/* consumer: `count` acquired rows are free again */
};
enum tnpu_ring_wait {
	TNPU_RING_WAIT_ROWS = 0,	/* consumer: wait until `count` more rows are published, acquire them */
	TNPU_RING_WAIT_SPACE = 1,	/* producer: wait until `count` slots are free, reserve them (back-pressure) */
};

/* Island / ring capability registers (BAR0 window 0x0200-0x02FF, RO). */
#define TNPU_REG_ISLANDS	0x0200	/* [7:0] islands, [15:8] rings per job, [23:16] max slots log2 */
#define TNPU_REG_RING_MEM	0x0204	/* ring-memory bytes */
#define TNPU_REG_ISL_BASE	0x0210
#define TNPU_REG_ISL_STRIDE	0x10
#define TNPU_REG_ISL(i, r)	(TNPU_REG_ISL_BASE + TNPU_REG_ISL_STRIDE * (i) + (r))
#define TNPU_ISL_ROWS		0x0	/* [7:0] first row, [15:8] rows, [23:16] clock divisor */
#define   TNPU_ISL_FIRST(v)	TNPU_GET(v, 7, 0)
#define   TNPU_ISL_NROWS(v)	TNPU_GET(v, 15, 8)
#define   TNPU_ISL_CLKDIV(v)	TNPU_GET(v, 23, 16)
#define TNPU_ISL_DTYPES		0x4	/* TNPU_CAP_DTYPE_* bits the island's MACs accept */
#define TNPU_ISL_SRAM_BASE	0x8	/* first byte of the island's SRAM window (first row * CAP_SRAM) */
#define TNPU_ISL_SRAM_SIZE	0xC	/* bytes of the window (rows * CAP_SRAM) */

/* ------------------------------------------------------------------------- */
/* Cluster packets: the 8-bit command (seed 001 para 117)                    */
/* ------------------------------------------------------------------------- */
#define TNPU_PKT_EXE		TNPU_BIT(0)	/* 0 = CONFIG, 1 = EXE */
#define TNPU_PKT_SHIFT_OUT	TNPU_BIT(1)	/* EXE: zero accumulators after the buffer ran */
#define TNPU_PKT_LAST		TNPU_BIT(2)	/* EXE: last segment: ST and chained SFU active */
#define TNPU_PKT_BUF(v)		TNPU_GET(v, 7, 3)	/* 5-bit instruction-buffer id */
#define TNPU_PKT_CONFIG_BYTE(buf)	((uint8_t)TNPU_PUT(buf, 7, 3))
#define TNPU_PKT_EXE_BYTE(buf, flags)	((uint8_t)(TNPU_PKT_EXE | (flags) | TNPU_PUT(buf, 7, 3)))

/* CONFIG data: header, n_instr 16-bit instruction words, then n_operands records. */
struct tnpu_cfg_hdr {
	uint8_t n_instr;	/* 1..TNPU_IBUF_DEPTH */
	uint8_t n_operands;	/* 0..TNPU_RF_WINDOW, written to rf[rf_base + i] */
	uint8_t rf_base;	/* rf_base + 16 <= TNPU_RF_ENTRIES */
	uint8_t mode;		/* TNPU_CFG_MODE_* */
	uint8_t loop_start;	/* first instruction of the loop body */
	uint8_t loop_end;	/* last instruction of the loop body (inclusive) */
	uint16_t repeat;	/* loop-body passes per EXE, >= 1 */
	uint8_t sfu_rf;		/* window index of the SFU record used by chained MACs */
	uint8_t dw_rf;		/* window index of the depthwise record used by DW MACs (0..15) */
	uint8_t reserved[6];	/* must be 0 */
};
_Static_assert(sizeof(struct tnpu_cfg_hdr) == 16, "cfg hdr");
#define TNPU_CFG_MODE_PIPE4	TNPU_BIT(0)	/* 4-stage ID-FO-SU-WB: scalar updates on */
#define TNPU_CFG_MODE_WQ(v)	TNPU_GET(v, 2, 1)	/* weight-queue mode */
#define TNPU_CFG_MODE_WQ_PUT(m)	TNPU_PUT(m, 2, 1)
#define TNPU_CFG_MODE_MASK	0x07u
enum tnpu_wq_mode {
	TNPU_WQ_SQ = 0,		/* streaming FIFO: a MAC consumes its weight slot */
	TNPU_WQ_RQ = 1,		/* rotation: weights loop back, slot stays valid */
	TNPU_WQ_SW = 2,		/* sliding window: LD re-sends only new rows */
};

/* Register-file entry (32 bytes): operand record, or SFU parameter record. */
struct tnpu_operand {
	uint32_t addr;		/* byte offset in the half (base before per-PE rewrite) */
	int32_t col_stride;	/* per-PE rewrite: + cluster column * col_stride */
	int32_t pe_stride;	/*               + PE index in cluster * pe_stride */
	uint32_t pitch;		/* bytes between rows */
	uint16_t rows;		/* >= 1 */
	uint16_t cols;		/* >= 1 */
	uint8_t dtype;		/* enum tnpu_dtype */
	uint8_t flags;		/* TNPU_OPF_* */
	uint16_t su_wrap;	/* scalar unit: passes before the wrap step (0 = never) */
	int32_t su_delta;	/* scalar unit: addr += su_delta after every LD/ST issue */
	int32_t su_wrap_delta;	/* scalar unit: addr += su_wrap_delta every su_wrap issues */
};
_Static_assert(sizeof(struct tnpu_operand) == 32, "operand");
_Static_assert(offsetof(struct tnpu_operand, rows) == 16, "operand");
_Static_assert(offsetof(struct tnpu_operand, dtype) == 20, "operand");
_Static_assert(offsetof(struct tnpu_operand, su_delta) == 24, "operand");
#define TNPU_OPF_TRANS		TNPU_BIT(0)	/* weights stored N x K (rows = N, cols = K) */
#define TNPU_OPF_SPARSE		TNPU_BIT(1)	/* weights as (value, index): cols = N, rows = slots */
#define TNPU_OPF_MASK		0x03u
/* CAP_FEATURES bit 21: cluster c's rewrite is (c & 1)*col_stride + (c >> 1)*su_wrap_delta (su_wrap 0) */
#define TNPU_OPF_CPAIR		TNPU_BIT(2)
/* CAP_FEATURES bit 22: the tile's rows wrap every su_wrap rows by su_wrap_delta bytes (isa.md "Row wrap"):
 * row i of PE (c,p) at packed o = c*col_stride + p*pe_stride + i*pitch, address
 * addr + (o / (su_wrap*pitch)) * su_wrap_delta + o % (su_wrap*pitch) */
#define TNPU_OPF_WRAP		TNPU_BIT(3)

enum tnpu_dtype {
	TNPU_DTYPE_INT8 = 0,
	TNPU_DTYPE_INT32 = 1,
	TNPU_DTYPE_FP32 = 2,
	TNPU_DTYPE_BF16 = 3,	/* LD/IM2COL operands only; accumulates in fp32 */
};

/* Sparse weight slot (TNPU_OPF_SPARSE): column n's slots at addr + n*pitch. */
struct tnpu_sparse_i8 {
	uint16_t index;		/* k index, < K; ignored when value == 0 */
	int8_t value;
	uint8_t reserved;
};
struct tnpu_sparse_f32 {
	uint16_t index;
	uint16_t reserved;
	float value;
};
struct tnpu_sparse_bf16 {
	uint16_t index;
	uint16_t value;		/* bf16 bits */
};
_Static_assert(sizeof(struct tnpu_sparse_i8) == 4, "sparse i8");
_Static_assert(sizeof(struct tnpu_sparse_bf16) == 4, "sparse bf16");
_Static_assert(sizeof(struct tnpu_sparse_f32) == 8, "sparse f32");

/* SFU parameter record (same 32-byte register-file entry). */
struct tnpu_sfu_param {
	uint32_t bias_addr;	/* per-column bias vector in the half (int32 or fp32) */
	int32_t bias_col_stride;/* per-PE rewrite of bias_addr, as for operands */
	int32_t bias_pe_stride;
	uint32_t scale;		/* REQUANT: int32 multiplier (int) or fp32 bits (fp32) */
	uint8_t ops;		/* TNPU_SFU_OP_* applied in bit order */
	uint8_t shift;		/* REQUANT int: right shift 0..62, round half up */
	int16_t zero_point;	/* REQUANT int: added after the shift, -128..127 */
	uint8_t out_dtype;	/* INT8 (needs REQUANT), INT32 or FP32 */
	uint8_t reserved[3];	/* must be 0 */
	uint32_t lo;		/* CLAMP lower bound (int32 or fp32 bits, accumulator domain) */
	uint32_t hi;		/* CLAMP upper bound */
};
_Static_assert(sizeof(struct tnpu_sfu_param) == 32, "sfu param");
_Static_assert(offsetof(struct tnpu_sfu_param, ops) == 16, "sfu param");
_Static_assert(offsetof(struct tnpu_sfu_param, lo) == 24, "sfu param");
#define TNPU_SFU_OP_BIAS	TNPU_BIT(0)	/* x += bias[column] */
#define TNPU_SFU_OP_RELU	TNPU_BIT(1)	/* x = max(x, 0) */
#define TNPU_SFU_OP_CLAMP	TNPU_BIT(2)	/* x = min(max(x, lo), hi), e.g. ReLU6 */
#define TNPU_SFU_OP_REQUANT	TNPU_BIT(3)	/* int: sat8(((x*scale + rnd) >> shift) + zp); fp32: x*scale */
#define TNPU_SFU_OP_RESIDUAL	TNPU_BIT(4)	/* ISA 2: x += R[i][j], R = the next register-file entry */
#define TNPU_SFU_OP_QCOL	TNPU_BIT(5)	/* ISA 2: per-column records {bias, multiplier, shift} at bias_addr */
#define TNPU_SFU_OP_MASK	0x3Fu
/* QCOL column record (isa.md "SFU parameter record"): one per output column, 12 bytes */
struct tnpu_sfu_qcol {
	int32_t bias;		/* added by BIAS */
	int32_t multiplier;	/* REQUANT multiplier of this column */
	uint32_t shift;		/* REQUANT right shift; above 62 acts as 62 */
};
_Static_assert(sizeof(struct tnpu_sfu_qcol) == 12, "sfu qcol");

/* ------------------------------------------------------------------------- */
/* 12-bit cluster instructions (stored as 16-bit words, bits [15:12] zero)    */
/* ------------------------------------------------------------------------- */
#define TNPU_INSN_OP(i)		TNPU_GET(i, 1, 0)
enum tnpu_insn_op {
	TNPU_OP_LD = 0,
	TNPU_OP_ST = 1,
	TNPU_OP_MAC = 2,
	TNPU_OP_SFU = 3,
};
/* LD: [2] target (0 input buffer, 1 weight queue), [3] ZSKIP (build bitmask),
 *     [7:4] rf window index of the operand, [9:8] slot, [10] MCAST, [11] WIDE (depthwise block, below). */
#define TNPU_LD_WQ		TNPU_BIT(2)
#define TNPU_LD_ZSKIP		TNPU_BIT(3)
#define TNPU_LD_RF(i)		TNPU_GET(i, 7, 4)
#define TNPU_LD_SLOT(i)		TNPU_GET(i, 9, 8)
#define TNPU_LD_RSVD		0x0000u	/* bit 10 = TNPU_LD_MCAST, bit 11 = TNPU_LD_WIDE (depthwise block) */
/* ST: [3:2] accumulator, [7:4] rf window index of the destination,
 *     [8] RAW (store the accumulator itself instead of the output queue), [11:9] reserved. */
#define TNPU_ST_ACC(i)		TNPU_GET(i, 3, 2)
#define TNPU_ST_RF(i)		TNPU_GET(i, 7, 4)
#define TNPU_ST_RAW		TNPU_BIT(8)
#define TNPU_ST_RSVD		0x0E00u
/* MAC: [2] load balance, [3] chained SFU, [5:4] input slot, [7:6] weight slot,
 *      [9:8] accumulator, [11:10] reserved. */
#define TNPU_MAC_LB		TNPU_BIT(2)
#define TNPU_MAC_CHAIN		TNPU_BIT(3)
#define TNPU_MAC_IN(i)		TNPU_GET(i, 5, 4)
#define TNPU_MAC_WQ(i)		TNPU_GET(i, 7, 6)
#define TNPU_MAC_ACC(i)		TNPU_GET(i, 9, 8)
#define TNPU_MAC_RSVD		0x0800u	/* bit 10 = TNPU_MAC_DW (depthwise block) */
/* SFU: [3:2] function class, [7:4] rf window index of the parameter record,
 *      [9:8] accumulator, [11:10] reserved. */
#define TNPU_SFU_FN(i)		TNPU_GET(i, 3, 2)
#define TNPU_SFU_RF(i)		TNPU_GET(i, 7, 4)
#define TNPU_SFU_ACC(i)		TNPU_GET(i, 9, 8)
#define TNPU_SFU_RSVD		0x0C00u
enum tnpu_sfu_fn {
	TNPU_SFU_FN_PASS = 0,	/* non-SF: accumulator -> output queue unchanged */
	TNPU_SFU_FN_APPLY = 1,	/* decoupled: ops of the parameter record */
};
#define TNPU_INSN_RSVD_HI	0xF000u	/* bits [15:12] of the word must be 0 */

#define TNPU_INSN_LD(rf, slot, wq, zskip) ((uint16_t)(TNPU_OP_LD | ((wq) ? TNPU_LD_WQ : 0) | \
	((zskip) ? TNPU_LD_ZSKIP : 0) | TNPU_PUT(rf, 7, 4) | TNPU_PUT(slot, 9, 8)))
#define TNPU_INSN_ST(acc, rf, raw) ((uint16_t)(TNPU_OP_ST | TNPU_PUT(acc, 3, 2) | \
	TNPU_PUT(rf, 7, 4) | ((raw) ? TNPU_ST_RAW : 0)))
#define TNPU_INSN_MAC(in, wq, acc, lb, chain) ((uint16_t)(TNPU_OP_MAC | ((lb) ? TNPU_MAC_LB : 0) | \
	((chain) ? TNPU_MAC_CHAIN : 0) | TNPU_PUT(in, 5, 4) | TNPU_PUT(wq, 7, 6) | TNPU_PUT(acc, 9, 8)))
#define TNPU_INSN_SFU(fn, rf, acc) ((uint16_t)(TNPU_OP_SFU | TNPU_PUT(fn, 3, 2) | \
	TNPU_PUT(rf, 7, 4) | TNPU_PUT(acc, 9, 8)))

/* EXE data (optional): 8-byte register-file patches applied before the run. */
struct tnpu_exe_patch {
	uint8_t rf;		/* window index 0..15 of the executed buffer */
	uint8_t field;		/* enum tnpu_patch_field */
	uint16_t reserved;	/* must be 0 */
	uint32_t value;
};
_Static_assert(sizeof(struct tnpu_exe_patch) == 8, "exe patch");
enum tnpu_patch_field {
	TNPU_PATCH_ADDR = 0,
	TNPU_PATCH_ROWS = 1,
	TNPU_PATCH_COLS = 2,
	TNPU_PATCH_PITCH = 3,
};

/* ------------------------------------------------------------------------- */
/* Depthwise convolution (issue #6): banded DMA over the storage-unit ports,  */
/* channel-wise DW MAC, multicast LD (commands.md, isa.md, cycle-model.md)    */
/* ------------------------------------------------------------------------- */
#define TNPU_CMD_DMA_BANDS_H2D	0x14	/* load engine: host planes -> every storage unit's band */
#define TNPU_CMD_DMA_BANDS_D2H	0x15	/* store engine: every storage unit's band -> host planes */
#define TNPU_RATE_DMA_PORT	256	/* bytes per cycle per storage-unit port and direction (banded DMA) */
#define TNPU_REG_CAP_PORTS	0x03C0	/* RO: banded-DMA ports */
#define   TNPU_CAP_PORTS_RATE(v)	TNPU_GET(v, 15, 0)	/* bytes/cycle per port and direction */
#define   TNPU_CAP_PORTS_NUM(v)		TNPU_GET(v, 23, 16)	/* ports (= rows) */
#define TNPU_FEAT_DEPTHWISE	TNPU_BIT(7)	/* DMA_BANDS_*, DW MAC, MCAST LD */

/* DMA_BANDS_H2D / DMA_BANDS_D2H: one 3-D transfer split into one band per storage unit.
 * AXIS_Z: unit u takes planes z in [first + u*step, first + u*step + len) clipped to [0, depth),
 * at SRAM plane index z - (first + u*step).  AXIS_X: unit u takes bytes x of every row in the same
 * interval clipped to [0, width), at SRAM byte x - (first + u*step) of the row.  AXIS_G: every row is
 * width/group groups of `group` bytes; unit u takes bytes x of every group g in the interval clipped
 * to [0, group), at SRAM byte g*len + x - (first + u*step) of the row. */
struct tnpu_cmd_dma_bands {
	struct tnpu_cmd_hdr hdr;	/* size 72 */
	uint64_t host_va;
	uint64_t host_pitch_y;
	uint64_t host_pitch_z;
	uint32_t sram_off;
	uint32_t sram_pitch_y;
	uint32_t sram_pitch_z;
	uint32_t width;			/* bytes per row, >= 1 */
	uint32_t height;		/* rows per plane, >= 1 */
	uint32_t depth;			/* host planes, >= 1 */
	int32_t band_first;		/* first plane of unit 0's band (may be negative) */
	uint32_t band_step;		/* planes between consecutive units' bands */
	uint32_t band_len;		/* planes per band, >= 1 */
	uint8_t half;			/* 0 / 1 */
	uint8_t axis;			/* TNPU_BANDS_AXIS_*: what the bands split */
	uint16_t group;			/* AXIS_G: bytes per group (width a multiple); else 0 */
};
_Static_assert(sizeof(struct tnpu_cmd_dma_bands) == 72, "dma bands cmd");
#define TNPU_BANDS_AXIS_Z	0	/* bands of planes: first/step/len count planes */
#define TNPU_BANDS_AXIS_X	1	/* bands of every row's bytes: first/step/len count bytes */
#define TNPU_BANDS_AXIS_G	2	/* bands of every group's bytes (channel slices of each pixel) */
#define TNPU_BANDS_AXIS_MASK	0x03u	/* axis byte: [1:0] axis, bit 6 STREAM, bit 7 AUX, others reserved */
#define TNPU_BANDS_F_STREAM	TNPU_BIT(6)	/* line-tracked: readers wait per SRAM line (commands.md) */
#define TNPU_BANDS_F_AUX	TNPU_BIT(7)	/* H2D on the ports' auxiliary queue (weights) */
#define TNPU_SRAM_LINE		64		/* bytes per SRAM line (line state: written bit, STREAM) */
_Static_assert(offsetof(struct tnpu_cmd_dma_bands, band_first) == 56, "dma bands cmd");

#define TNPU_LD_MCAST		TNPU_BIT(10)	/* LD: the row's tiles travel as one multicast block */
#define TNPU_MAC_DW		TNPU_BIT(10)	/* MAC: channel-wise (depthwise) window MAC */
#define TNPU_LD_WIDE		TNPU_BIT(11)	/* LD (with MCAST): the block crosses at TNPU_RATE_WIDE_MCAST */
#define TNPU_RATE_WIDE_MCAST	256	/* bytes per cycle per row of the wide multicast path (isa.md) */
#define TNPU_FEAT_DW_WIDE	TNPU_BIT(17)	/* LD bit 11 WIDE: wide multicast (issue #16) */
#define TNPU_FEAT_COUNTERS	TNPU_BIT(18)	/* ring entry COUNTERS: per-job counter record (queues.md) */
#define TNPU_FEAT_SFU_QCOL	TNPU_BIT(19)	/* SFU record op QCOL: per-column requantisation (issue #16) */
#define TNPU_FEAT_VEC_QADD	TNPU_BIT(20)	/* VEC BINARY vflags QADD: per-operand int8 quantisation (#16) */
#define TNPU_FEAT_CPAIR		TNPU_BIT(21)	/* operand flags CPAIR: cluster pairs, a second stride (#16) */
#define TNPU_FEAT_WRAP		TNPU_BIT(22)	/* operand flags WRAP: a tile's rows wrap by a row pitch (#16) */
#define TNPU_FEAT_WDECOMP	TNPU_BIT(23)	/* DMA_DEQ: packed int8/int4 weights expanded on load (#29) */
#define TNPU_FEAT_PREEMPT	TNPU_BIT(24)	/* preemption points, save records, RESUME (#28, queues.md) */
/* VEC math (#30): MAP funcs 26..38, BINARY DIV/PRELU/POW/CMP_*, REDUCE MIN/PROD/ARGMAX/ARGMIN (vector-units.md) */
#define TNPU_FEAT_VEC_MATH	TNPU_BIT(25)

/* Depthwise parameter record (register-file entry named by the CONFIG header's dw_rf). */
struct tnpu_dw_param {
	uint16_t oh, ow;	/* output block of the PE: oh x ow pixels (tm = oh*ow), >= 1 */
	uint16_t pix;		/* input elements between horizontally adjacent pixels, >= 1 */
	uint8_t r, s;		/* filter height, width, >= 1 */
	uint8_t stride_y, stride_x;	/* >= 1 */
	uint8_t dil_y, dil_x;	/* >= 1 */
	uint8_t reserved[20];	/* must be 0 */
};
_Static_assert(sizeof(struct tnpu_dw_param) == 32, "dw param");
/* Static address plans (seed 004; Documentation/plans.md, commands.md)       */
/* ------------------------------------------------------------------------- */
#define TNPU_PLAN_CACHE_BYTES	(1024u * 1024)	/* per queue; sum of resident plan sizes */
#define TNPU_PLAN_CACHE_ENTRIES	16		/* resident plans per queue; LRU replacement */
#define TNPU_PLAN_MAGIC		0x4E4C5054u	/* "TPLN" */
#define TNPU_PLAN_VERSION	1
#define TNPU_PLAN_MAX_GROUPS	64		/* validity groups (one mask bit each) */
#define TNPU_PLAN_HANDLE_ALL	0xFFFFFFFFu	/* PLAN_FREE: every plan of the context */
#define TNPU_GATHER_LINE	64		/* host bytes per gather burst (cycle model, BYTES_H2D) */

/* Plan image in host memory: header, n_bases base records, n_offsets offset records. */
struct tnpu_plan_hdr {
	uint32_t magic;		/* TNPU_PLAN_MAGIC */
	uint16_t version;	/* TNPU_PLAN_VERSION */
	uint8_t elem_size;	/* 1, 2 or 4 bytes per gathered element */
	uint8_t n_groups;	/* 1..64 validity groups */
	uint32_t n_bases;	/* tile rows (per-PE base addresses), >= 1 */
	uint32_t n_offsets;	/* tile columns (shared offsets), >= 1 */
	uint32_t bytes;		/* 32 + 16 * n_bases + 8 * n_offsets */
	uint32_t reserved[3];	/* must be 0 */
};
_Static_assert(sizeof(struct tnpu_plan_hdr) == 32, "plan hdr");
struct tnpu_plan_base {
	int64_t base;		/* byte offset from GATHER src_va */
	uint64_t mask;		/* bit g: offsets of group g are valid for this row; bits >= n_groups 0 */
};
_Static_assert(sizeof(struct tnpu_plan_base) == 16, "plan base");
struct tnpu_plan_offset {
	int32_t offset;		/* byte offset added to the row's base */
	uint8_t group;		/* < n_groups */
	uint8_t reserved[3];	/* must be 0 */
};
_Static_assert(sizeof(struct tnpu_plan_offset) == 8, "plan offset");

/* PLAN_LOAD: make plan `handle` of the job's context resident (upload only on a miss). */
struct tnpu_cmd_plan_load {
	struct tnpu_cmd_hdr hdr;	/* size 32 */
	uint64_t plan_va;		/* device VA of the plan image */
	uint32_t handle;		/* software-chosen id, != TNPU_PLAN_HANDLE_ALL */
	uint32_t bytes;			/* image size, 32..TNPU_PLAN_CACHE_BYTES */
	uint64_t tag;			/* FNV-1a 64 of the image: identity and checksum */
};
_Static_assert(sizeof(struct tnpu_cmd_plan_load) == 32, "plan load cmd");

/* GATHER: tile element (i, j) = src_va + base[m0+i] + offset[k0+j], or pad_value if masked. */
struct tnpu_cmd_gather {
	struct tnpu_cmd_hdr hdr;	/* size 56 */
	uint64_t src_va;
	uint32_t handle;
	uint32_t pad_value;		/* raw element bits for masked elements */
	uint32_t m0, mt;		/* first base record and count */
	uint32_t k0, kt;		/* first offset record and count */
	uint32_t sram_off;		/* tile origin in the half */
	uint32_t sram_pitch;		/* bytes between tile rows, >= kt * elem_size */
	uint8_t row;			/* storage unit; 0xFF = all rows */
	uint8_t half;
	uint16_t reserved0;		/* must be 0 */
	uint32_t reserved1;		/* must be 0 */
};
_Static_assert(sizeof(struct tnpu_cmd_gather) == 56, "gather cmd");
_Static_assert(offsetof(struct tnpu_cmd_gather, row) == 48, "gather cmd");

/* PLAN_FREE: drop plan `handle` (or all) of the job's context; absent plans are no error. */
struct tnpu_cmd_plan_free {
	struct tnpu_cmd_hdr hdr;	/* size 16 */
	uint32_t handle;		/* or TNPU_PLAN_HANDLE_ALL */
	uint32_t reserved;		/* must be 0 */
};
_Static_assert(sizeof(struct tnpu_cmd_plan_free) == 16, "plan free cmd");

/* ------------------------------------------------------------------------- */
/* ISA 2 vector units (device-ops #16, vector-units.md)                       */
/* ------------------------------------------------------------------------- */
#define TNPU_CMD_VEC_LUT	0x18	/* load a 256-entry int8 table into every vector unit */
#define TNPU_CMD_VEC		0x19	/* one vector-unit operation on storage-unit tensors */
#define TNPU_VEC_LUTS		4
#define TNPU_VEC_LANES		64	/* element-operations per cycle per row */
#define TNPU_CYC_VEC		8	/* per VEC and row: pipeline fill */
#define TNPU_VEC_FN_COST	4	/* fp32 functions (MAP funcs >= 16) cost 4 lane-cycles */
#define TNPU_VEC_MAX_ELEMS	(1u << 22)	/* output elements per command */
#define TNPU_VEC_MAX_WORK	(1u << 26)	/* element-taps per command */

struct tnpu_cmd_vec_lut {
	struct tnpu_cmd_hdr hdr;	/* size 272 */
	uint8_t table;			/* 0..3 */
	uint8_t reserved[7];
	int8_t entry[256];		/* output for input value i - 128 */
};
_Static_assert(sizeof(struct tnpu_cmd_vec_lut) == 272, "vec lut cmd");

enum tnpu_vec_op { TNPU_VEC_MAP = 0, TNPU_VEC_BINARY = 1, TNPU_VEC_POOL = 2, TNPU_VEC_REDUCE = 3 };
enum tnpu_vec_map_fn {
	TNPU_VEC_COPY = 0, TNPU_VEC_LUT = 1, TNPU_VEC_CLAMP = 2, TNPU_VEC_REQUANT = 3, TNPU_VEC_QUANT = 4,
	TNPU_VEC_DEQUANT = 5,
	TNPU_VEC_SIGMOID = 16, TNPU_VEC_TANH = 17, TNPU_VEC_EXP = 18, TNPU_VEC_ERF = 19, TNPU_VEC_GELU = 20,
	TNPU_VEC_HARDSIGMOID = 21, TNPU_VEC_HARDSWISH = 22, TNPU_VEC_SILU = 23, TNPU_VEC_RECIP = 24,
	TNPU_VEC_RSQRT = 25,
	/* CAP_FEATURES bit 25 VEC_MATH */
	TNPU_VEC_LOG = 26, TNPU_VEC_SQRT = 27, TNPU_VEC_ABS = 28, TNPU_VEC_NEG = 29, TNPU_VEC_FLOOR = 30,
	TNPU_VEC_CEIL = 31, TNPU_VEC_ROUND = 32, TNPU_VEC_SIGN = 33, TNPU_VEC_LEAKY = 34, TNPU_VEC_ELU = 35,
	TNPU_VEC_THRESH = 36, TNPU_VEC_SOFTPLUS = 37, TNPU_VEC_SOFTSIGN = 38,
};
#define TNPU_VEC_FN_FIRST	16	/* first fp32 function of MAP */
#define TNPU_VEC_FN_LAST	38
#define TNPU_VEC_FN_PARAM_FIRST	TNPU_VEC_LEAKY	/* LEAKY..THRESH take fp32 parameters in lo (and hi) */
#define TNPU_VEC_FN_PARAM_LAST	TNPU_VEC_THRESH
enum tnpu_vec_bin_fn {
	TNPU_VEC_ADD = 0, TNPU_VEC_SUB = 1, TNPU_VEC_MUL = 2, TNPU_VEC_MAX = 3, TNPU_VEC_MIN = 4,
	TNPU_VEC_DIV = 5, TNPU_VEC_PRELU = 6, TNPU_VEC_POW = 7,	/* fp32 only; CAP_FEATURES bit 25 VEC_MATH */
	/* comparisons: FP32 in, INT8 out 1 (true) or 0 (IEEE: NaN compares false); VEC_MATH */
	TNPU_VEC_CMP_EQ = 8, TNPU_VEC_CMP_LT = 9, TNPU_VEC_CMP_LE = 10, TNPU_VEC_CMP_GT = 11, TNPU_VEC_CMP_GE = 12,
};
enum tnpu_vec_pool_fn { TNPU_VEC_POOL_MAX = 0, TNPU_VEC_POOL_AVG = 1 };
enum tnpu_vec_red_fn {
	TNPU_VEC_RED_SUM = 0, TNPU_VEC_RED_MAX = 1, TNPU_VEC_RED_SUMSQ = 2,
	/* CAP_FEATURES bit 25 VEC_MATH: MIN as MAX; PROD fp32; ARG* fp32 in, INT32 index out */
	TNPU_VEC_RED_MIN = 3, TNPU_VEC_RED_PROD = 4, TNPU_VEC_RED_ARGMAX = 5, TNPU_VEC_RED_ARGMIN = 6,
};
#define TNPU_VEC_F_RELU		TNPU_BIT(0)	/* MAP, BINARY: y = max(y, 0) before the output conversion */
#define TNPU_VEC_F_PER_CHANNEL	TNPU_BIT(1)	/* MAP REQUANT: {s32 M, u32 shift} per channel at b_off */
#define TNPU_VEC_F_COUNT_PAD	TNPU_BIT(2)	/* POOL AVG: divide by win_h * win_w */
/* BINARY ADD/SUB INT8 -> INT8 (CAP_FEATURES bit 20): r = (A - lo) * scale +/- (B - hi) * (s32)bias,
 * then requantised with shift and zero_point (vector-units.md "Quantised add") */
#define TNPU_VEC_F_QADD		TNPU_BIT(3)
#define TNPU_VEC_F_LAST		TNPU_BIT(4)	/* REDUCE ARGMAX/ARGMIN: the last index of a tie (VEC_MATH) */
#define TNPU_VEC_F_MASK		0x1Fu

struct tnpu_vec_pool_win {
	uint16_t win_h, win_w;
	uint8_t stride_y, stride_x, pad_top, pad_left;
	uint16_t in_h, in_w;
};
struct tnpu_vec_red_win {
	uint32_t red_len;	/* >= 1 */
	int32_t red_st;		/* byte stride of the reduction */
	uint32_t reserved;	/* must be 0 */
};

struct tnpu_cmd_vec {
	struct tnpu_cmd_hdr hdr;	/* size 128 */
	uint8_t op;			/* enum tnpu_vec_op */
	uint8_t func;
	uint8_t in_dtype;		/* enum tnpu_dtype: INT8, INT32, FP32 */
	uint8_t out_dtype;
	uint8_t row;			/* or 0xFF: every row of the island */
	uint8_t half;
	uint8_t vflags;			/* TNPU_VEC_F_* */
	uint8_t lut;			/* MAP LUT: table */
	uint32_t n[4];			/* output dims, n[3] innermost */
	uint32_t d_off;
	int32_t d_st[4];
	uint32_t a_off;
	int32_t a_st[4];
	uint32_t b_off;
	int32_t b_st[4];
	union {
		struct tnpu_vec_pool_win pool;
		struct tnpu_vec_red_win red;
		uint8_t raw[12];
	} win;
	uint32_t scale;			/* fp32 bits or s32 multiplier (QADD: A's) */
	uint32_t bias;			/* fp32 bits (MAP fp32 pre-affine); QADD: B's s32 multiplier */
	uint8_t shift;
	uint8_t chan_dim;
	int16_t zero_point;
	uint32_t lo, hi;		/* MAP CLAMP bounds; QADD: A's and B's zero points */
	uint32_t reserved;
};
_Static_assert(sizeof(struct tnpu_cmd_vec) == 128, "vec cmd");
_Static_assert(offsetof(struct tnpu_cmd_vec, n) == 16, "vec cmd");
_Static_assert(offsetof(struct tnpu_cmd_vec, d_off) == 32, "vec cmd");
_Static_assert(offsetof(struct tnpu_cmd_vec, a_off) == 52, "vec cmd");
_Static_assert(offsetof(struct tnpu_cmd_vec, b_off) == 72, "vec cmd");
_Static_assert(offsetof(struct tnpu_cmd_vec, win) == 92, "vec cmd");
_Static_assert(offsetof(struct tnpu_cmd_vec, scale) == 104, "vec cmd");
_Static_assert(offsetof(struct tnpu_cmd_vec, shift) == 112, "vec cmd");
_Static_assert(offsetof(struct tnpu_cmd_vec, lo) == 116, "vec cmd");

/* ------------------------------------------------------------------------- */
/* Weight-decompressing load (issue #29, commands.md "DMA_DEQ")               */
/* ------------------------------------------------------------------------- */
#define TNPU_CMD_DMA_DEQ	0x1A	/* load engine: packed int8/int4 weights -> fp32/bf16 tile */
#define TNPU_RATE_DEQ		256	/* codes expanded per cycle per storage unit */

/* Column n's code k (k from the column's first code): S8/U8 byte C_n + k, U4 nibble k&1 (low first) of
 * byte C_n + k/2, C_n = src_va + n*src_pitch.  Block b = k / block (0 when block is 0: per column);
 * scale at scale_va + n*scale_pitch + b*(4 or 2 with SCALE_F16); zero point (zp_va != 0) at
 * zp_va + n*zp_pitch + b (S8/U8) or nibble b&1 of byte + b/2 (U4), else 0 / 128 / 8.
 * Element j < kt of column n (k = k0 + j) = (float)(q - z) * s, one fp32 rounding (BF16: then RNE),
 * at sram_off + n*sram_pitch + j*e, or with KN at sram_off + j*sram_pitch + n*e. */
struct tnpu_cmd_dma_deq {
	struct tnpu_cmd_hdr hdr;	/* size 80 */
	uint64_t src_va;		/* column 0's code 0 */
	uint64_t scale_va;		/* column 0's block-0 scale */
	uint64_t zp_va;			/* column 0's block-0 zero point; 0 = default zero points */
	uint32_t src_pitch;		/* bytes between columns' codes */
	uint32_t scale_pitch;		/* bytes between columns' scales */
	uint32_t zp_pitch;		/* bytes between columns' zero points */
	uint32_t k0;			/* first code of the tile along K */
	uint32_t kt;			/* codes per column, >= 1 */
	uint32_t nt;			/* columns, >= 1 */
	uint32_t block;			/* 0 (per column) or a power of two TNPU_DEQ_BLOCK_MIN..MAX */
	uint32_t sram_off;		/* tile origin in the half */
	uint32_t sram_pitch;		/* bytes between tile lines (a column, or a K index with KN) */
	uint8_t fmt;			/* TNPU_DEQ_FMT_* */
	uint8_t out_dtype;		/* TNPU_DTYPE_FP32 or TNPU_DTYPE_BF16 */
	uint8_t qflags;			/* TNPU_DEQ_F_* */
	uint8_t row;			/* storage unit, or TNPU_DMA_ROW_ALL */
	uint8_t half;			/* 0 / 1 */
	uint8_t reserved[7];		/* must be 0 */
};
_Static_assert(sizeof(struct tnpu_cmd_dma_deq) == 80, "dma deq cmd");
_Static_assert(offsetof(struct tnpu_cmd_dma_deq, src_pitch) == 32, "dma deq cmd");
_Static_assert(offsetof(struct tnpu_cmd_dma_deq, block) == 56, "dma deq cmd");
_Static_assert(offsetof(struct tnpu_cmd_dma_deq, fmt) == 68, "dma deq cmd");
_Static_assert(offsetof(struct tnpu_cmd_dma_deq, reserved) == 73, "dma deq cmd");
#define TNPU_DEQ_FMT_S8		0	/* int8 codes, int8 zero points, default 0 */
#define TNPU_DEQ_FMT_U8		1	/* uint8 codes, uint8 zero points, default 128 */
#define TNPU_DEQ_FMT_U4		2	/* 4-bit codes and zero points, low nibble first, default 8 */
#define TNPU_DEQ_F_SCALE_F16	TNPU_BIT(0)	/* binary16 scales (widened exactly) */
#define TNPU_DEQ_F_KN		TNPU_BIT(1)	/* K-major destination (plain weight record) */
#define TNPU_DEQ_F_MASK		0x03u
#define TNPU_DEQ_BLOCK_MIN	16u
#define TNPU_DEQ_BLOCK_MAX	4096u

#ifdef __cplusplus
}
#endif

#endif /* TNPU_HW_H */
