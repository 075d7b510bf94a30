/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * tnpu BAR0 register map, ring entry and MMU formats, written from Documentation/hardware/
 * (registers.md, mmu.md, queues.md, errors.md). The QEMU-side mirror is tnpu_hw.h; the kernel keeps
 * its own copy in kernel style so that neither tree depends on the other's headers.
 */
#ifndef __TNPU_REGS_H__
#define __TNPU_REGS_H__

#include <linux/bits.h>
#include <linux/types.h>

#define TNPU_PCI_VENDOR_ID		0x1234
#define TNPU_PCI_DEVICE_ID		0x4e50
#define TNPU_BAR0_SIZE			0x4000

/* Identification and capabilities (RO) */
#define TNPU_REG_ID			0x0000
#define   TNPU_ID_VALUE			0x554e5054	/* "TNPU" little-endian */
#define TNPU_REG_VERSION		0x0004
#define   TNPU_VERSION_MAJOR		GENMASK(31, 24)
#define   TNPU_VERSION_MINOR		GENMASK(23, 16)
#define   TNPU_VERSION_ISA		GENMASK(15, 8)
#define   TNPU_VERSION_PATCH		GENMASK(7, 0)
#define TNPU_REG_CAP_GEOM		0x0008
#define   TNPU_CAP_GEOM_ROWS		GENMASK(7, 0)
#define   TNPU_CAP_GEOM_COLS		GENMASK(15, 8)
#define   TNPU_CAP_GEOM_PES		GENMASK(23, 16)
#define   TNPU_CAP_GEOM_ACCS		GENMASK(31, 24)
#define TNPU_REG_CAP_SRAM		0x000c
#define TNPU_REG_CAP_CLUSTER		0x0010
#define   TNPU_CAP_CLUSTER_IBUFS	GENMASK(7, 0)
#define   TNPU_CAP_CLUSTER_IBUF_LEN	GENMASK(15, 8)
#define   TNPU_CAP_CLUSTER_RF		GENMASK(23, 16)
#define   TNPU_CAP_CLUSTER_SLOTS	GENMASK(31, 24)
#define TNPU_REG_CAP_ACC		0x0014
#define   TNPU_CAP_ACC_ELEMS		GENMASK(15, 0)
#define TNPU_REG_CAP_DTYPES		0x0018
#define TNPU_REG_CAP_QUEUES		0x001c
#define   TNPU_CAP_QUEUES_NUM		GENMASK(7, 0)
#define   TNPU_CAP_QUEUES_LOG2_ENTRIES	GENMASK(15, 8)
#define   TNPU_CAP_QUEUES_VECTORS	GENMASK(23, 16)
#define   TNPU_CAP_QUEUES_SEMS		GENMASK(31, 24)
#define TNPU_REG_CAP_MMU		0x0020
#define   TNPU_CAP_MMU_VA_BITS		GENMASK(7, 0)
#define   TNPU_CAP_MMU_PA_BITS		GENMASK(15, 8)
#define   TNPU_CAP_MMU_LEVELS		GENMASK(23, 16)
#define   TNPU_CAP_MMU_PAGE_SHIFT	GENMASK(31, 24)
#define TNPU_REG_CAP_MMU_CTX		0x0024
#define TNPU_REG_CAP_CLOCK		0x0028
#define TNPU_REG_CAP_RATES		0x002c
#define TNPU_REG_CAP_FEATURES		0x0030
#define TNPU_REG_CAP_CMDBUF		0x0034

/* Control, status, reset */
#define TNPU_REG_CTRL			0x0040
#define   TNPU_CTRL_ENABLE		BIT(0)
#define   TNPU_CTRL_RESET		BIT(1)
#define TNPU_REG_STATUS			0x0044
#define   TNPU_STATUS_ENABLED		BIT(0)
#define   TNPU_STATUS_BUSY		BIT(1)
#define   TNPU_STATUS_ERROR		BIT(2)
#define   TNPU_STATUS_RESET_PENDING	BIT(3)	/* abandoned jobs may still access memory */
#define   TNPU_STATUS_MMU_INV_PENDING	BIT(4)	/* MMU_INVALIDATE not complete yet */
#define TNPU_REG_SCRATCH		0x0048

/* Interrupts: vector 0 = ERROR/MMU_FAULT, vector 1 + q = QUEUE(q) */
#define TNPU_REG_IRQ_STATUS		0x0050
#define TNPU_REG_IRQ_MASK		0x0054
#define TNPU_REG_IRQ_ACK		0x0058
#define   TNPU_IRQ_QUEUE(q)		BIT(q)
#define   TNPU_IRQ_QUEUES		GENMASK(15, 0)
#define   TNPU_IRQ_ERROR		BIT(16)
#define   TNPU_IRQ_MMU_FAULT		BIT(17)

/* Global error registers (most recent job error of any queue) */
#define TNPU_REG_ERR_CODE		0x0060
#define TNPU_REG_ERR_QUEUE		0x0064
#define TNPU_REG_ERR_INFO		0x0068
#define TNPU_REG_ERR_CMD_OFFSET		0x006c
#define TNPU_REG_ERR_ADDR		0x0070
#define TNPU_REG_ERR_SEQNO		0x0078

/* MMU */
#define TNPU_REG_MMU_CTX_BASE		0x0080
#define TNPU_REG_MMU_CTX_COUNT		0x0088
#define TNPU_REG_MMU_INVALIDATE		0x008c
#define TNPU_REG_MMU_FAULTS		0x0090
#define TNPU_REG_PERF_CTRL		0x0094
#define   TNPU_PERF_CTRL_CLEAR		BIT(0)

/* Islands (chain #9), present when CAP_FEATURES has TNPU_FEAT_ISLANDS */
#define TNPU_FEAT_ISLANDS		BIT(10)
/* Ring entry COUNTERS: the device writes each job's counter record (queues.md) */
#define TNPU_FEAT_COUNTERS		BIT(18)
/* Preemption points, save records, ring entry PREEMPTIBLE / RESUME (queues.md "Preemption") */
#define TNPU_FEAT_PREEMPT		BIT(24)
#define TNPU_REG_ISLANDS		0x0200
#define   TNPU_ISLANDS_COUNT		GENMASK(7, 0)
#define   TNPU_ISLANDS_RINGS		GENMASK(15, 8)
#define TNPU_REG_RING_MEM		0x0204
#define TNPU_REG_ISL(i, r)		(0x0210 + 0x10 * (i) + (r))
#define TNPU_ISL_ROWS			0x0
#define   TNPU_ISL_FIRST		GENMASK(7, 0)
#define   TNPU_ISL_NROWS		GENMASK(15, 8)
#define   TNPU_ISL_CLKDIV		GENMASK(23, 16)
#define TNPU_ISL_DTYPES			0x4
#define TNPU_ISL_SRAM_BASE		0x8
#define TNPU_ISL_SRAM_SIZE		0xc

/* Global counter block: 32 64-bit counters */
#define TNPU_REG_PERF(i)		(0x0400 + 8 * (i))
/* counters 0..17, sparse #8 18..21, chain #9 22..25, plans #9 26..27 */
#define TNPU_NUM_COUNTERS		28

/* sparse (#8): busy cycles of row r in the last completed job (64-bit) */
#define TNPU_REG_ROW_BUSY(r)		(0x0300 + 8 * (r))
#define TNPU_COUNTER_SLOTS		32

/* Queue blocks */
#define TNPU_MAX_QUEUES			16
#define TNPU_Q_BASE(q)			(0x1000 + 0x200 * (q))
#define TNPU_Q_RING_BASE		0x000
#define TNPU_Q_RING_SIZE		0x008
#define TNPU_Q_HEAD			0x00c
#define TNPU_Q_TAIL			0x010
#define TNPU_Q_DOORBELL			0x014
#define TNPU_Q_FENCE			0x018
#define TNPU_Q_CTRL			0x020
#define   TNPU_Q_CTRL_ENABLE		BIT(0)
#define   TNPU_Q_CTRL_SKIP		BIT(1)
#define   TNPU_Q_CTRL_PREEMPT		BIT(2)
#define TNPU_Q_STATUS			0x024
#define   TNPU_Q_STATUS_ENABLED		BIT(0)
#define   TNPU_Q_STATUS_BUSY		BIT(1)
#define   TNPU_Q_STATUS_ERROR		BIT(2)
#define TNPU_Q_DONE_SEQNO		0x028
#define TNPU_Q_ERR_CODE			0x030
#define TNPU_Q_ERR_INFO			0x034
#define TNPU_Q_ERR_CMD_OFFSET		0x038
#define TNPU_Q_ERR_CTX			0x03c
#define TNPU_Q_ERR_ADDR			0x040
#define TNPU_Q_ERR_SEQNO		0x048
#define TNPU_Q_JOBS_DONE		0x050
#define TNPU_Q_SAVE_BASE		0x058
#define TNPU_Q_PERF(i)			(0x100 + 8 * (i))

/* Ring entry (queues.md), 32 bytes, little-endian */
#define TNPU_RING_ENTRY_SIZE		32
#define TNPU_RING_ENTRY_IRQ		BIT(0)
#define TNPU_RING_ENTRY_COUNTERS	BIT(1)	/* with TNPU_FEAT_COUNTERS */
#define TNPU_RING_ENTRY_PREEMPTIBLE	BIT(2)	/* with TNPU_FEAT_PREEMPT */
#define TNPU_RING_ENTRY_RESUME		BIT(3)	/* with TNPU_FEAT_PREEMPT */

struct tnpu_ring_entry {
	__le16 ctx;
	__le16 flags;
	__le32 cmd_len;
	__le64 cmd_va;
	__le64 seqno;
	__le64 counters_addr;		/* 0 without TNPU_RING_ENTRY_COUNTERS */
};

/* Counter record (queues.md): the job's 32 counters, written before the fence */
#define TNPU_COUNTERS			32
#define TNPU_CNT_TOTAL_CYCLES		0

struct tnpu_counter_record {
	__le64 counter[TNPU_COUNTERS];
};

/*
 * Save record of a preempted job (queues.md "Preemption"), one per ring entry at Q_SAVE_BASE. The
 * driver reads only the state word (written last) and the seqno; the rest it copies as it is.
 */
#define TNPU_SAVE_BYTES			512
#define TNPU_SAVE_PREEMPTED		1

struct tnpu_save_record {
	u8 head[48];
	__le64 seqno;
	__le32 state;
	u8 rest[TNPU_SAVE_BYTES - 60];
};

static_assert(sizeof(struct tnpu_save_record) == TNPU_SAVE_BYTES);

/* Context table entry (mmu.md), 16 bytes */
#define TNPU_CTX_ENTRY_SIZE		16
#define TNPU_CTX_VALID			BIT_ULL(0)

struct tnpu_ctx_entry {
	__le64 root;
	__le64 reserved;
};

/* Page-table entry (mmu.md) */
#define TNPU_PTE_VALID			BIT_ULL(0)
#define TNPU_PTE_READ			BIT_ULL(1)
#define TNPU_PTE_WRITE			BIT_ULL(2)
#define TNPU_PTE_ADDR			GENMASK_ULL(51, 12)
#define TNPU_PT_LEVELS			4
#define TNPU_PT_ENTRIES			512
#define TNPU_PT_SHIFT			9
#define TNPU_PAGE_SHIFT			12
#define TNPU_PAGE_SIZE			BIT(TNPU_PAGE_SHIFT)
#define TNPU_VA_BITS			48

/* Error codes (errors.md) */
#define TNPU_ERR_MMU_NOT_PRESENT	10
#define TNPU_ERR_BUS			14
#define TNPU_ERR_COUNTERS_WRITE		55
#define TNPU_ERR_HAZARD			56
#define TNPU_ERR_DEQ_DESC		57
#define TNPU_ERR_RESUME			58
#define TNPU_ERR_SAVE_WRITE		59
#define TNPU_ERR_MAX			59

/* ERR_INFO for MMU errors */
#define TNPU_MMU_INFO_WRITE		BIT(0)
#define TNPU_MMU_INFO_LEVEL		GENMASK(3, 1)
#define TNPU_MMU_INFO_ENGINE		GENMASK(7, 4)

#endif /* __TNPU_REGS_H__ */
