/*
 * tnpu — PCIe neural-network accelerator (QEMU glue on the golden model).
 *
 * PCI identity, BAR0 (the model's register block), MSI-X (BAR2, exclusive) with
 * an MSI fallback, the PCIe endpoint capability with FLR, power management,
 * reset, properties and the bottom half that drives the queue pipeline:
 *
 *   doorbell MMIO write -> fx.kick_queues -> BH: tnpu_core_fetch()
 *   -> worker thread: tnpu_exec_run() -> qemu_bh_schedule
 *   -> BH: tnpu_core_complete() (fence write) -> msix_notify -> next fetch.
 *
 * Everything but tnpu_exec_run() runs under the BQL.  See
 * Documentation/qemu-device.md.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/error-report.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/units.h"
#include "hw/pci/msi.h"
#include "hw/pci/msix.h"
#include "hw/pci/pcie.h"
#include "hw/qdev-properties.h"
#include "hw/resettable.h"
#include "migration/vmstate.h"
#include "system/runstate.h"
#include "trace.h"

#include "tnpu.h"

static unsigned tnpu_nr_vectors(const TnpuState *s)
{
    return TNPU_MSIX_VEC_QUEUE(s->cfg.queues);
}

/* ---- interrupts ---------------------------------------------------------- */

static void tnpu_notify(TnpuState *s, uint32_t vectors)
{
    PCIDevice *pdev = PCI_DEVICE(s);

    while (vectors) {
        unsigned v = ctz32(vectors);

        vectors &= vectors - 1;
        if (msix_enabled(pdev)) {
            trace_tnpu_irq(v, "msix");
            msix_notify(pdev, v);
        } else if (msi_enabled(pdev)) {
            unsigned n = msi_nr_vectors_allocated(pdev);

            /*
             * Fewer vectors granted than asked for: the excess share the last
             * one.
             */
            trace_tnpu_irq(MIN(v, n - 1), "msi");
            msi_notify(pdev, MIN(v, n - 1));
        } else {
            /*
             * The spec has no INTx: without MSI-X/MSI the driver polls
             * IRQ_STATUS.
             */
            trace_tnpu_irq(v, "none");
        }
    }
}

static void tnpu_apply(TnpuState *s, const struct tnpu_effects *fx)
{
    if (fx->msix_vectors) {
        tnpu_notify(s, fx->msix_vectors);
    }
    if (fx->kick_queues) {
        s->kick_pending |= fx->kick_queues;
        qemu_bh_schedule(s->bh);
    }
}

/* ---- queue pipeline (BH, BQL held) --------------------------------------- */

void tnpu_complete(TnpuState *s, const struct tnpu_job *job,
                   const struct tnpu_result *res)
{
    struct tnpu_effects fx;

    if (res->error) {
        trace_tnpu_job_fault(job->queue, job->entry.seqno, res->error,
                             tnpu_err_name(res->error), res->err_info,
                             res->err_addr, res->err_cmd_offset);
        /* A job fault is a guest programming error (or a hostile job). */
        qemu_log_mask(LOG_GUEST_ERROR,
                      "tnpu: queue %u seqno %" PRIu64 " ctx %u: job fault %s "
                      "(%u) info 0x%x addr 0x%" PRIx64 " cmd offset 0x%x\n",
                      job->queue, job->entry.seqno, job->entry.ctx,
                      tnpu_err_name(res->error), res->error, res->err_info,
                      res->err_addr, res->err_cmd_offset);
    }
    if (res->preempted) {
        trace_tnpu_job_preempted(job->queue, job->entry.seqno,
                                 res->err_cmd_offset);
    }
    trace_tnpu_job_complete(job->queue, job->entry.seqno, res->error);
    tnpu_core_complete(s->core, job, res, &s->mem, &fx);
    /* a preemption request concerns the job that just completed */
    tnpu_workers_preempt(s, 1u << job->queue, false);
    if (!res->error && trace_event_get_state_backends(TRACE_TNPU_JOB_FAULT)) {
        uint64_t st, addr;

        /*
         * A successful job can still fail at completion: the fence write
         * (FENCE_WRITE).
         */
        tnpu_core_reg_read(s->core, TNPU_REG_Q(job->queue, TNPU_Q_STATUS), 4,
                           &st);
        if (st & TNPU_Q_STATUS_ERROR) {
            tnpu_core_reg_read(
                s->core, TNPU_REG_Q(job->queue, TNPU_Q_ERR_ADDR_LO), 8, &addr);
            trace_tnpu_job_fault(
                job->queue, job->entry.seqno, TNPU_ERR_FENCE_WRITE,
                tnpu_err_name(TNPU_ERR_FENCE_WRITE), 0, addr, 0);
        }
    }
    tnpu_apply(s, &fx);
}

static void tnpu_apply_results(TnpuState *s)
{
    struct tnpu_job job;
    struct tnpu_result res;

    for (unsigned q = 0; q < s->cfg.queues; q++) {
        if (tnpu_worker_take_result(s, q, &job, &res)) {
            tnpu_complete(s, &job, &res);
        }
    }
}

static void tnpu_bh(void *opaque)
{
    TnpuState *s = opaque;
    unsigned nq = s->cfg.queues;
    struct tnpu_job job;
    uint32_t kicks;
    unsigned start;

    tnpu_apply_results(s);
    if (s->paused) {
        /* VM stopped (migration): kicks wait for the resume. */
        return;
    }

    /*
     * Round-robin over the ready queues (queues.md "Arbitration and
     * concurrency").
     */
    kicks = s->kick_pending;
    s->kick_pending = 0;
    /*
     * The scan starts where the last round left off; rr_next moves inside the
     * loop, so the starting point must be sampled once or a kicked queue can be
     * skipped and its kick lost.
     */
    start = s->rr_next;
    for (unsigned i = 0; i < nq && kicks; i++) {
        unsigned q = (start + i) % nq;

        if (!(kicks & (1u << q))) {
            continue;
        }
        kicks &= ~(1u << q);
        if (tnpu_core_fetch(s->core, q, &s->mem, &job)) {
            s->rr_next = (q + 1) % nq;
            trace_tnpu_job_fetch(q, job.head, job.entry_pa, job.fetch_error);
            tnpu_worker_submit(s, &job);
        }
    }
}

/* ---- BAR0 ---------------------------------------------------------------- */

static const char *tnpu_reg_status_name(enum tnpu_reg_status st)
{
    switch (st) {
    case TNPU_REG_OK:
        return "ok";
    case TNPU_REG_BAD_ACCESS:
        return "bad size or alignment";
    case TNPU_REG_UNMAPPED:
        return "unmapped offset";
    case TNPU_REG_READ_ONLY:
        return "read-only register";
    case TNPU_REG_IGNORED:
        return "not allowed in the current state";
    }
    return "?";
}

static uint64_t tnpu_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    TnpuState *s = opaque;
    enum tnpu_reg_status st;
    uint64_t val;

    if (addr >= TNPU_REG_STATUS && addr < TNPU_REG_STATUS + 4) {
        /* STATUS.RESET_PENDING / MMU_INV_PENDING come from the workers */
        tnpu_core_set_pending(s->core, tnpu_workers_pending(s));
    }
    st = tnpu_core_reg_read(s->core, addr, size, &val);
    trace_tnpu_mmio_read(addr, size, val, st);
    if (st == TNPU_REG_BAD_ACCESS) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "tnpu: read at 0x%" HWADDR_PRIx " size %u: %s\n", addr,
                      size, tnpu_reg_status_name(st));
    } else if (st != TNPU_REG_OK) {
        qemu_log_mask(LOG_UNIMP,
                      "tnpu: read at 0x%" HWADDR_PRIx " size %u: %s\n", addr,
                      size, tnpu_reg_status_name(st));
    }
    return val;
}

static bool tnpu_is_doorbell(hwaddr addr, unsigned *q)
{
    if (addr < TNPU_REG_QUEUE_BASE ||
        addr >= TNPU_REG_QUEUE_BASE + TNPU_MAX_QUEUES * TNPU_REG_QUEUE_STRIDE) {
        return false;
    }
    *q = (addr - TNPU_REG_QUEUE_BASE) / TNPU_REG_QUEUE_STRIDE;
    return (addr - TNPU_REG_QUEUE_BASE) % TNPU_REG_QUEUE_STRIDE ==
           TNPU_Q_DOORBELL;
}

static void tnpu_mmio_write(void *opaque, hwaddr addr, uint64_t val,
                            unsigned size)
{
    TnpuState *s = opaque;
    struct tnpu_effects fx;
    enum tnpu_reg_status st;
    unsigned q;

    st = tnpu_core_reg_write(s->core, addr, size, val, &fx);
    trace_tnpu_mmio_write(addr, size, val, st);
    if (st != TNPU_REG_OK) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "tnpu: write 0x%" PRIx64 " at 0x%" HWADDR_PRIx
                      " size %u ignored: %s\n",
                      val, addr, size, tnpu_reg_status_name(st));
    }
    if (tnpu_is_doorbell(addr, &q)) {
        trace_tnpu_doorbell(q, !!(fx.kick_queues & (1u << q)));
    }
    if (fx.reset) {
        /*
         * CTRL.RESET: the model has reset its registers; abandon the jobs in
         * flight.
         */
        trace_tnpu_reset("ctrl");
        tnpu_workers_drop(s);
        s->kick_pending = 0;
    }
    if (fx.mmu_invalidate) {
        tnpu_workers_tlb_invalidate(s);
    }
    if (fx.preempt_queues) {
        tnpu_workers_preempt(s, fx.preempt_queues, true);
    }
    tnpu_apply(s, &fx);
}

/*
 * All sizes and alignments reach the model, which implements the spec's access
 * rules (4/8-byte, naturally aligned, 8 only on 64-bit registers; anything else
 * reads 0 / is ignored).
 */
static const MemoryRegionOps tnpu_mmio_ops = {
    .read = tnpu_mmio_read,
    .write = tnpu_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 8, .unaligned = true },
    .impl = { .min_access_size = 1, .max_access_size = 8, .unaligned = true },
};

/* ---- PCI config space: FLR ----------------------------------------------- */

static void tnpu_write_config(PCIDevice *pdev, uint32_t addr, uint32_t val,
                              int len)
{
    pci_default_write_config(pdev, addr, val, len);
    pcie_cap_flr_write_config(pdev, addr, val, len);
}

/* ---- reset --------------------------------------------------------------- */

/*
 * System reset, FLR (pci_device_reset -> device_cold_reset) and bus reset all
 * land here.
 */
static void tnpu_reset_hold(Object *obj, ResetType type)
{
    TnpuState *s = TNPU(obj);

    trace_tnpu_reset("device");
    if (!s->core) {
        return;
    }
    tnpu_workers_drop(s);
    s->kick_pending = 0;
    tnpu_core_reset(s->core);
    /*
     * FLR and system reset have no status the guest could poll: wait here
     * (under the BQL, which workers never take) until abandoned jobs stopped
     * touching guest memory.  An abort takes effect within one row, page or
     * K panel, so this is short; the wait is bounded all the same.
     */
    tnpu_workers_wait_dropped(s, 1000);
}

/* ---- migration (qemu-device.md "Migration") ------------------------------ */

/* Far above any snapshot (a few KiB): a bound before the stream allocates. */
#define TNPU_SNAP_MAX (1 * MiB)

static uint32_t tnpu_all_queues(const TnpuState *s)
{
    return MAKE_64BIT_MASK(0, s->cfg.queues);
}

/*
 * A job is never migrated half-run: when the VM stops, fetching stops and the
 * jobs in flight run to completion (bounded by x-drain-ms), and their
 * completions are applied now, before RAM's final pass and the CPU state are
 * saved.  A job still running at the deadline makes pre_save fail the
 * migration; the job is left alone (re-running it could repeat its writes).
 */
static void tnpu_vm_state_change(void *opaque, bool running, RunState state)
{
    TnpuState *s = opaque;

    if (running) {
        s->paused = false;
        s->busy_queue = -1;
        s->kick_pending |= tnpu_all_queues(s);
        qemu_bh_schedule(s->bh);
        return;
    }
    s->paused = true;
    if (state == RUN_STATE_SHUTDOWN) {
        /* QEMU exits: unrealize aborts the jobs, nothing is saved. */
        return;
    }
    s->busy_queue = tnpu_workers_wait_idle(s, s->drain_ms);
    tnpu_apply_results(s);
    trace_tnpu_quiesce(state, s->busy_queue);
}

static int tnpu_pre_save(void *opaque)
{
    TnpuState *s = opaque;
    char msg[160];
    size_t len;
    int ret;

    /*
     * RAM is already saved: a completion applied now would be lost, so a job
     * that outlived the drain fails the save instead.  (Without a drain, e.g.
     * a save of a running VM, the model refuses a busy queue itself.)
     */
    if (s->busy_queue >= 0) {
        error_report("tnpu: queue %d still runs a job %u ms after the VM "
                     "stopped: migration needs an idle device",
                     s->busy_queue, s->drain_ms);
        return -EBUSY;
    }
    len = tnpu_core_snapshot_size(s->core);
    s->snap = g_malloc(len);
    ret = tnpu_core_snapshot_save(s->core, s->snap, len, msg, sizeof(msg));
    if (ret < 0) {
        error_report("%s", msg);
        g_free(s->snap);
        s->snap = NULL;
        return ret;
    }
    s->snap_len = ret;
    return 0;
}

static int tnpu_post_save(void *opaque)
{
    TnpuState *s = opaque;

    g_free(s->snap);
    s->snap = NULL;
    return 0;
}

static int tnpu_pre_load(void *opaque)
{
    TnpuState *s = opaque;

    s->loading = true;
    return 0;
}

/* The VALIDATE steps run on save too (as field tests): they act on load. */
static bool tnpu_snap_len_ok(void *opaque, int version_id)
{
    TnpuState *s = opaque;

    if (!s->loading) {
        return true;
    }
    g_free(s->snap);  /* the field allocates anew */
    s->snap = NULL;
    if (s->snap_len > TNPU_SNAP_MAX) {
        s->loading = false;
        error_report("tnpu: migration stream: snap_len is %u bytes, more "
                     "than %u", s->snap_len, (unsigned)TNPU_SNAP_MAX);
        return false;
    }
    return true;
}

/*
 * Loads the model's registers before the PCI config and MSI-X state, so a
 * stream of another geometry is refused with the field named, not as a
 * config-space or MSI-X table mismatch.
 */
static bool tnpu_snap_load(void *opaque, int version_id)
{
    TnpuState *s = opaque;
    char msg[160];
    int ret;

    if (!s->loading) {
        return true;
    }
    s->loading = false;
    ret = tnpu_core_snapshot_load(s->core, s->snap, s->snap_len, msg,
                                  sizeof(msg));
    g_free(s->snap);
    s->snap = NULL;
    if (ret < 0) {
        error_report("%s", msg);
        return false;
    }
    return true;
}

static int tnpu_post_load(void *opaque, int version_id)
{
    TnpuState *s = opaque;

    /* Executors cache translations only within a job; drop them anyway. */
    tnpu_workers_tlb_invalidate(s);
    /* Fetching resumes with the VM (tnpu_vm_state_change). */
    s->kick_pending = tnpu_all_queues(s);
    return 0;
}

/* ---- realize / exit ------------------------------------------------------ */

static void tnpu_exit(PCIDevice *pdev)
{
    TnpuState *s = TNPU(pdev);

    if (s->vmstate_change) {
        qemu_del_vm_change_state_handler(s->vmstate_change);
        s->vmstate_change = NULL;
    }
    tnpu_workers_stop(s);
    if (s->bh) {
        qemu_bh_delete(s->bh);
        s->bh = NULL;
    }
    tnpu_core_free(s->core);
    s->core = NULL;
    qemu_cond_destroy(&s->idle_cond);
    qemu_cond_destroy(&s->token_cond);
    qemu_mutex_destroy(&s->lock);
    msix_uninit_exclusive_bar(pdev);
    msi_uninit(pdev);
    pcie_cap_exit(pdev);
}

static void tnpu_realize(PCIDevice *pdev, Error **errp)
{
    TnpuState *s = TNPU(pdev);
    Error *local_err = NULL;
    unsigned nvec;
    char msg[192];
    int ret;

    /* Properties first: a clear error before anything is allocated. */
    if (tnpu_islands_parse(s->islands, &s->cfg, msg, sizeof(msg))) {
        error_setg(errp, "%s", msg);
        return;
    }
    if (tnpu_config_validate(&s->cfg, msg, sizeof(msg))) {
        error_setg(errp, "%s", msg);
        return;
    }
    nvec = tnpu_nr_vectors(s);

    pdev->config[PCI_INTERRUPT_PIN] = 0;
    if (pci_pm_init(pdev, TNPU_CAP_PM_OFFSET, errp) < 0) {
        return;
    }
    /*
     * D0/D3hot writable (QEMU then stops BAR decoding outside D0); D3hot -> D0
     * keeps the device's state (No_Soft_Reset): jobs and registers are
     * untouched by power-state changes.
     */
    pci_set_word(pdev->wmask + TNPU_CAP_PM_OFFSET + PCI_PM_CTRL,
                 PCI_PM_CTRL_STATE_MASK);
    pci_set_word(pdev->config + TNPU_CAP_PM_OFFSET + PCI_PM_CTRL,
                 PCI_PM_CTRL_NO_SOFT_RESET);
    if (s->msi) {
        ret = msi_init(pdev, TNPU_CAP_MSI_OFFSET, pow2ceil(nvec), true, false,
                       NULL);
        if (ret < 0 && ret != -ENOTSUP) {
            error_setg(errp, "tnpu: cannot add the MSI capability");
            return;
        }
    }
    if (pcie_endpoint_cap_init(pdev, TNPU_CAP_PCIE_OFFSET) < 0) {
        error_setg(errp, "tnpu: cannot add the PCIe endpoint capability");
        goto fail_msi;
    }
    pcie_cap_deverr_init(pdev);
    pcie_cap_flr_init(pdev);

    memory_region_init_io(&s->mmio, OBJECT(s), &tnpu_mmio_ops, s, "tnpu-mmio",
                          TNPU_BAR0_SIZE);
    pci_register_bar(
        pdev, TNPU_BAR_REGS,
        PCI_BASE_ADDRESS_SPACE_MEMORY | PCI_BASE_ADDRESS_MEM_TYPE_64, &s->mmio);

    ret = msix_init_exclusive_bar(pdev, nvec, TNPU_BAR_MSIX, &local_err);
    if (ret == -ENOTSUP) {
        /*
         * No MSI on this machine: the device still works, a driver polls
         * IRQ_STATUS.
         */
        warn_report_err(local_err);
        local_err = NULL;
    } else if (ret < 0) {
        error_propagate(errp, local_err);
        goto fail_pcie;
    } else {
        /* Every vector is in use, or msix_notify() silently drops it. */
        for (unsigned v = 0; v < nvec; v++) {
            msix_vector_use(pdev, v);
        }
    }

    if (tnpu_core_new(&s->cfg, &s->core, msg, sizeof(msg))) {
        error_setg(errp, "%s",
                   msg[0] ? msg : "tnpu: cannot allocate the register block");
        goto fail_msix;
    }
    tnpu_mem_init(s);
    qemu_mutex_init(&s->lock);
    qemu_cond_init(&s->idle_cond);
    qemu_cond_init(&s->token_cond);
    s->run_tokens = TNPU_RUN_TOKENS;
    s->bh = qemu_bh_new_guarded(tnpu_bh, s, &DEVICE(s)->mem_reentrancy_guard);
    s->kick_pending = 0;
    s->rr_next = 0;
    s->busy_queue = -1;
    s->paused = !runstate_is_running();
    if (tnpu_workers_start(s, errp) < 0) {
        qemu_bh_delete(s->bh);
        s->bh = NULL;
        qemu_cond_destroy(&s->idle_cond);
        qemu_cond_destroy(&s->token_cond);
        qemu_mutex_destroy(&s->lock);
        tnpu_core_free(s->core);
        s->core = NULL;
        goto fail_msix;
    }
    s->vmstate_change = qdev_add_vm_change_state_handler(
        DEVICE(s), tnpu_vm_state_change, s);
    return;

fail_msix:
    msix_uninit_exclusive_bar(pdev);
fail_pcie:
    pcie_cap_exit(pdev);
fail_msi:
    msi_uninit(pdev);
}

/* ---- class --------------------------------------------------------------- */

static const Property tnpu_properties[] = {
    DEFINE_PROP_UINT32("rows", TnpuState, cfg.rows, TNPU_DEF_ROWS),
    DEFINE_PROP_UINT32("cols", TnpuState, cfg.cols, TNPU_DEF_COLS),
    DEFINE_PROP_UINT32("pes", TnpuState, cfg.pes, TNPU_DEF_PES),
    DEFINE_PROP_UINT32("sram", TnpuState, cfg.sram, TNPU_DEF_SRAM),
    DEFINE_PROP_UINT32("queues", TnpuState, cfg.queues, TNPU_DEF_QUEUES),
    DEFINE_PROP_UINT32("clock_mhz", TnpuState, cfg.clock_mhz,
                       TNPU_DEF_CLOCK_MHZ),
    DEFINE_PROP_UINT64("watchdog", TnpuState, cfg.watchdog_cycles,
                       TNPU_DEF_WATCHDOG),
    DEFINE_PROP_BOOL("msi", TnpuState, msi, true),
    /* chain #9: e.g. islands=2:i8/2:all:2 (islands-and-chaining.md) */
    DEFINE_PROP_STRING("islands", TnpuState, islands),
    DEFINE_PROP_BOOL("x-sync", TnpuState, sync, false),
    DEFINE_PROP_UINT32("x-drain-ms", TnpuState, drain_ms, 10000),
};

static const VMStateDescription vmstate_tnpu = {
    .name = TYPE_TNPU,
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_save = tnpu_pre_save,
    .post_save = tnpu_post_save,
    .pre_load = tnpu_pre_load,
    .post_load = tnpu_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(snap_len, TnpuState),
        VMSTATE_VALIDATE("tnpu snapshot size", tnpu_snap_len_ok),
        VMSTATE_VBUFFER_ALLOC_UINT32(snap, TnpuState, 1, NULL, snap_len),
        VMSTATE_VALIDATE("tnpu register block", tnpu_snap_load),
        VMSTATE_PCI_DEVICE(parent_obj, TnpuState),
        VMSTATE_MSIX(parent_obj, TnpuState),
        VMSTATE_END_OF_LIST()
    },
};

static void tnpu_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);

    k->realize = tnpu_realize;
    k->exit = tnpu_exit;
    k->config_write = tnpu_write_config;
    k->vendor_id = TNPU_PCI_VENDOR_ID;
    k->device_id = TNPU_PCI_DEVICE_ID;
    k->class_id = TNPU_PCI_CLASS_CODE >> 8;
    k->revision = TNPU_PCI_REVISION;
    rc->phases.hold = tnpu_reset_hold;
    dc->desc = "tnpu neural-network accelerator";
    dc->vmsd = &vmstate_tnpu;
    device_class_set_props(dc, tnpu_properties);
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
}

static const TypeInfo tnpu_info = {
    .name = TYPE_TNPU,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(TnpuState),
    .class_init = tnpu_class_init,
    .interfaces = (InterfaceInfo[]){ { INTERFACE_PCIE_DEVICE }, {} },
};

static void tnpu_register_types(void)
{
    type_register_static(&tnpu_info);
}

type_init(tnpu_register_types)
