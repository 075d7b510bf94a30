// SPDX-License-Identifier: GPL-2.0-only
/*
 * tnpu hardware access: capability checks, programming the MMU and queues, device reset and the
 * interrupt handlers (registers.md, queues.md).
 */
#include <linux/bitfield.h>
#include <linux/interrupt.h>
#include <linux/iopoll.h>
#include <linux/module.h>

#include <drm/drm_print.h>

#include "tnpu_drv.h"

static const char * const tnpu_err_names[TNPU_ERR_MAX + 1] = {
	"NONE", "CMD_OPCODE", "CMD_SIZE", "CMD_RESERVED", "CMDBUF", "RING_ENTRY", "RING_FETCH",
	"FENCE_WRITE", "CTX_RANGE", "CTX_INVALID", "MMU_NOT_PRESENT", "MMU_PERMISSION",
	"MMU_BAD_PTE", "MMU_VA_RANGE", "BUS", "DMA_DESC", "SRAM_RANGE", "CONV_DESC", "DISPATCH",
	"PACKET", "CONFIG", "INSTR", "IBUF_EMPTY", "OPERAND", "ACC_SHAPE", "SLOT_EMPTY",
	"SPARSE_INDEX", "SFU_PARAM", "DTYPE", "SEM", "SEM_DEADLOCK", "SEM_OVERFLOW", "TOO_LARGE",
	"ALIGN", "WATCHDOG", "ABORTED", "NOMEM",
	/* feature blocks have their own number ranges, so the table has gaps */
	[40] = "RING_DESC", "RING_DEADLOCK", "RING_ACCESS", "ISLAND_ACCESS", "ISLAND_CAP",
	[45] = "PLAN_DESC", "PLAN_UNKNOWN", "PLAN_BAD", "PLAN_TOO_LARGE",
	[50] = "DW_PARAM", "DW_SHAPE",
	[53] = "VEC_DESC", "VEC_SHAPE", "COUNTERS_WRITE", "HAZARD", "DEQ_DESC",
	[58] = "RESUME", "SAVE_WRITE",
};

const char *tnpu_err_name(u32 code)
{
	return code <= TNPU_ERR_MAX && tnpu_err_names[code] ? tnpu_err_names[code] : "UNKNOWN";
}

static void tnpu_read_caps(struct tnpu_device *tdev)
{
	struct tnpu_caps_raw *c = &tdev->caps;

	c->version = tnpu_read(tdev, TNPU_REG_VERSION);
	c->geom = tnpu_read(tdev, TNPU_REG_CAP_GEOM);
	c->sram = tnpu_read(tdev, TNPU_REG_CAP_SRAM);
	c->cluster = tnpu_read(tdev, TNPU_REG_CAP_CLUSTER);
	c->acc = tnpu_read(tdev, TNPU_REG_CAP_ACC);
	c->dtypes = tnpu_read(tdev, TNPU_REG_CAP_DTYPES);
	c->queues = tnpu_read(tdev, TNPU_REG_CAP_QUEUES);
	c->mmu = tnpu_read(tdev, TNPU_REG_CAP_MMU);
	c->mmu_ctx = tnpu_read(tdev, TNPU_REG_CAP_MMU_CTX);
	c->clock = tnpu_read(tdev, TNPU_REG_CAP_CLOCK);
	c->rates = tnpu_read(tdev, TNPU_REG_CAP_RATES);
	c->features = tnpu_read(tdev, TNPU_REG_CAP_FEATURES);
	c->cmdbuf = tnpu_read(tdev, TNPU_REG_CAP_CMDBUF);
}

/* Reads and sanity-checks the identification and capability registers. */
int tnpu_hw_init(struct tnpu_device *tdev)
{
	struct device *dev = &tdev->pdev->dev;
	struct tnpu_caps_raw *c = &tdev->caps;
	u32 id = tnpu_read(tdev, TNPU_REG_ID);
	u32 rows, cols, pes, nq;

	if (id != TNPU_ID_VALUE) {
		dev_err(dev, "unexpected ID register 0x%08x\n", id);
		return -ENODEV;
	}
	tnpu_read_caps(tdev);
	if (FIELD_GET(TNPU_VERSION_MAJOR, c->version) != 1) {
		dev_err(dev, "unsupported hardware version 0x%08x\n", c->version);
		return -ENODEV;
	}
	rows = FIELD_GET(TNPU_CAP_GEOM_ROWS, c->geom);
	cols = FIELD_GET(TNPU_CAP_GEOM_COLS, c->geom);
	pes = FIELD_GET(TNPU_CAP_GEOM_PES, c->geom);
	nq = FIELD_GET(TNPU_CAP_QUEUES_NUM, c->queues);
	if (!rows || rows > 16 || !cols || cols > 16 || !pes || pes > 64 ||
	    !nq || nq > TNPU_MAX_QUEUES) {
		dev_err(dev, "implausible geometry 0x%08x / queues 0x%08x\n", c->geom, c->queues);
		return -ENODEV;
	}
	if (FIELD_GET(TNPU_CAP_MMU_PAGE_SHIFT, c->mmu) != TNPU_PAGE_SHIFT ||
	    FIELD_GET(TNPU_CAP_MMU_LEVELS, c->mmu) != TNPU_PT_LEVELS ||
	    FIELD_GET(TNPU_CAP_MMU_VA_BITS, c->mmu) < 41 || c->mmu_ctx < 2 ||
	    FIELD_GET(TNPU_CAP_QUEUES_LOG2_ENTRIES, c->queues) < ilog2(TNPU_RING_ENTRIES) ||
	    c->cmdbuf < 8) {
		dev_err(dev, "unsupported MMU/queue capabilities 0x%08x 0x%08x\n",
			c->mmu, c->queues);
		return -ENODEV;
	}
	tdev->num_rings = nq;
	dev_info(dev, "tnpu v%lu.%lu ISA %lu: %ux%u clusters x %u PEs, %u KiB SRAM/row, %u queues\n",
		 FIELD_GET(TNPU_VERSION_MAJOR, c->version),
		 FIELD_GET(TNPU_VERSION_MINOR, c->version),
		 FIELD_GET(TNPU_VERSION_ISA, c->version), rows, cols, pes, c->sram / 1024, nq);
	return 0;
}

/*
 * Programs everything a reset cleared: context table, rings, fences, interrupt mask, enable.
 * Called at probe and by recovery with tdev->lock held (no sleeping).
 */
void tnpu_hw_program(struct tnpu_device *tdev)
{
	u32 q, mask = TNPU_IRQ_ERROR | TNPU_IRQ_MMU_FAULT;

	tnpu_write64(tdev, TNPU_REG_MMU_CTX_BASE, tdev->ctx_table_dma);
	tnpu_write(tdev, TNPU_REG_MMU_CTX_COUNT, min_t(u32, TNPU_MAX_CTX, tdev->caps.mmu_ctx));
	tnpu_write(tdev, TNPU_REG_MMU_INVALIDATE, 1);
	for (q = 0; q < tdev->num_rings; q++) {
		struct tnpu_ring *ring = &tdev->rings[q];

		tnpu_qwrite(tdev, q, TNPU_Q_CTRL, 0);
		tnpu_write64(tdev, TNPU_Q_BASE(q) + TNPU_Q_RING_BASE, ring->entries_dma);
		tnpu_qwrite(tdev, q, TNPU_Q_RING_SIZE, TNPU_RING_ENTRIES);
		tnpu_write64(tdev, TNPU_Q_BASE(q) + TNPU_Q_FENCE, ring->fence_dma);
		if (ring->saves)
			tnpu_write64(tdev, TNPU_Q_BASE(q) + TNPU_Q_SAVE_BASE, ring->saves_dma);
		/* 0 -> 1 sets HEAD = TAIL = 0 */
		tnpu_qwrite(tdev, q, TNPU_Q_CTRL, TNPU_Q_CTRL_ENABLE);
		ring->tail = 0;
		mask |= TNPU_IRQ_QUEUE(q);
	}
	tnpu_write(tdev, TNPU_REG_IRQ_ACK, 0xffffffff);
	tnpu_write(tdev, TNPU_REG_IRQ_MASK, ~mask);
	tnpu_write(tdev, TNPU_REG_CTRL, TNPU_CTRL_ENABLE);
}

/*
 * registers.md: CTRL.RESET abandons every job in flight and returns registers to reset values;
 * it is complete once STATUS.RESET_PENDING reads 0 (no abandoned job can touch memory any more,
 * at most 100 ms).  Sleeps while it polls: never called under tdev->lock (issue #28: recovery
 * held the spinlock across this poll).  All-ones: device gone.
 */
void tnpu_hw_reset(struct tnpu_device *tdev)
{
	u32 st;

	might_sleep();
	tnpu_write(tdev, TNPU_REG_CTRL, TNPU_CTRL_RESET);
	if (tnpu_read(tdev, TNPU_REG_CTRL) & TNPU_CTRL_ENABLE)
		dev_warn(&tdev->pdev->dev, "device still enabled after reset\n");
	if (readl_poll_timeout(tdev->regs + TNPU_REG_STATUS, st,
			       st == U32_MAX || !(st & TNPU_STATUS_RESET_PENDING),
			       100, 200000))
		dev_warn(&tdev->pdev->dev, "reset not complete after 200 ms (status 0x%x)\n", st);
	else
		tnpu_mmu_reset_done(tdev);
}

/* Stops the device for remove: no more fetches, no interrupts, jobs abandoned. */
void tnpu_hw_disable(struct tnpu_device *tdev)
{
	tnpu_write(tdev, TNPU_REG_IRQ_MASK, 0xffffffff);
	tnpu_hw_reset(tdev);
}

static irqreturn_t tnpu_irq(int irq, void *arg)
{
	struct tnpu_device *tdev = arg;
	u32 status = tnpu_read(tdev, TNPU_REG_IRQ_STATUS);

	if (!status || status == 0xffffffff)
		return IRQ_NONE;
	/* queues.md: acknowledge what was seen first, so a later cause raises a new message */
	tnpu_write(tdev, TNPU_REG_IRQ_ACK, status);
	atomic_or(status, &tdev->irq_pending);
	return IRQ_WAKE_THREAD;
}

static irqreturn_t tnpu_irq_thread(int irq, void *arg)
{
	struct tnpu_device *tdev = arg;

	tnpu_rings_process(tdev, atomic_xchg(&tdev->irq_pending, 0));
	return IRQ_HANDLED;
}

/*
 * Without MSI/MSI-X the device raises no interrupts (README.md): poll instead. Like the interrupt
 * path, the poll leaves a device alone that it must not touch: runtime-suspended (it holds a PM
 * reference only while it reads, and does not count as activity, so an idle device still suspends),
 * or in a function reset,
 * system sleep or recovery (in_reset); and all-ones is no status but a device that does not answer
 * (D3, FLR, surprise removal), never "every cause".
 */
static void tnpu_poll_work(struct work_struct *work)
{
	struct tnpu_device *tdev = container_of(work, struct tnpu_device, poll_work.work);
	int pm = tnpu_pm_get_if_active(tdev);
	bool quiet;
	u32 status;

	if (pm) {
		spin_lock(&tdev->lock);
		quiet = tdev->in_reset;
		spin_unlock(&tdev->lock);
		if (!quiet) {
			status = tnpu_read(tdev, TNPU_REG_IRQ_STATUS);
			if (status && status != 0xffffffff) {
				tnpu_write(tdev, TNPU_REG_IRQ_ACK, status);
				tnpu_rings_process(tdev, status);
			}
		}
		if (pm > 0)
			tnpu_pm_put_quiet(tdev);
	}
	schedule_delayed_work(&tdev->poll_work, 1);
}

static unsigned int tnpu_irq_mode;
module_param_named(irq_mode, tnpu_irq_mode, uint, 0444);
MODULE_PARM_DESC(irq_mode, "0 MSI-X, else MSI, else polling (default); 1 MSI; 2 polling (tests)");

int tnpu_irq_init(struct tnpu_device *tdev)
{
	struct pci_dev *pdev = tdev->pdev;
	int i, ret = -ENODEV, want = 1 + tdev->num_rings;

	INIT_DELAYED_WORK(&tdev->poll_work, tnpu_poll_work);
	if (tnpu_irq_mode == 0)
		ret = pci_alloc_irq_vectors(pdev, want, want, PCI_IRQ_MSIX);
	if (ret < 0 && tnpu_irq_mode <= 1)
		ret = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_MSI);
	if (ret < 0) {
		dev_info(&pdev->dev, "no MSI-X/MSI (%d), polling for completions\n", ret);
		tdev->polling = true;
		tdev->num_irqs = 0;
		schedule_delayed_work(&tdev->poll_work, 1);
		return 0;
	}
	tdev->num_irqs = ret;
	for (i = 0; i < tdev->num_irqs; i++) {
		ret = request_threaded_irq(pci_irq_vector(pdev, i), tnpu_irq, tnpu_irq_thread,
					   IRQF_ONESHOT, "tnpu", tdev);
		if (ret) {
			while (--i >= 0)
				free_irq(pci_irq_vector(pdev, i), tdev);
			pci_free_irq_vectors(pdev);
			tdev->num_irqs = 0;
			return ret;
		}
	}
	return 0;
}

void tnpu_irq_fini(struct tnpu_device *tdev)
{
	int i;

	if (tdev->polling) {
		cancel_delayed_work_sync(&tdev->poll_work);
		tdev->polling = false;
	}
	for (i = 0; i < tdev->num_irqs; i++)
		free_irq(pci_irq_vector(tdev->pdev, i), tdev);
	if (tdev->num_irqs)
		pci_free_irq_vectors(tdev->pdev);
	tdev->num_irqs = 0;
}
