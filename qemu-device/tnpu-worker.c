/*
 * tnpu — worker threads and the golden model's view of guest memory.
 *
 * A job runs on its queue's worker thread, outside the BQL, so a long job never
 * stalls a vCPU.  The worker touches no register and calls no QEMU API but the
 * DMA accessors below and qemu_bh_schedule(); everything else happens in the
 * device's bottom half under the BQL.
 *
 * Why device DMA is RAM-only: an address-space access that hits MMIO takes the
 * BQL.  Reset and unrealize run under the BQL and abort / join the workers, so
 * a worker that could block on the BQL could deadlock them.  And under the BQL
 * (ring fetch, fence write, x-sync jobs) an access to MMIO can re-enter the
 * device — e.g. a fence write into our own config space through MMCONFIG
 * triggering an FLR in the middle of tnpu_core_complete().  So every access the
 * model makes must target RAM (ROM for reads); anything else (MMIO of any
 * device, unassigned space, any address while bus mastering is disabled) is a
 * bus error, which the model reports as RING_FETCH / FENCE_WRITE / CTX_INVALID
 * / BUS. Peer-to-peer DMA into a BAR is not a feature of the device.  The RAM
 * check and the access run in one RCU read-side section (pci_dma_* on RAM is
 * RCU-safe without the BQL; under the BQL the memory map cannot change between
 * the two).  MSI-X/MSI messages are sent by the PCI core, not through these
 * callbacks.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "qemu/rcu.h"
#include "exec/memory.h"
#include "hw/pci/pci_device.h"
#include "system/dma.h"
#include "trace.h"

#include "tnpu.h"

/* ---- guest memory -------------------------------------------------------- */

/*
 * True if [pa, pa + len) is RAM (ROM for reads) in the device's bus-master
 * address space.
 */
static bool tnpu_dma_is_ram(AddressSpace *as, uint64_t pa, size_t len,
                            bool is_write)
{
    hwaddr addr = pa;
    hwaddr left = len;

    if (!len) {
        return true;
    }
    if (addr + left < addr) {
        return false;
    }
    RCU_READ_LOCK_GUARD();
    while (left) {
        hwaddr xlat, l = left;
        MemoryRegion *mr = address_space_translate(
            as, addr, &xlat, &l, is_write, MEMTXATTRS_UNSPECIFIED);

        if (!l ||
            !memory_access_is_direct(mr, is_write, MEMTXATTRS_UNSPECIFIED)) {
            return false;
        }
        addr += l;
        left -= l;
    }
    return true;
}

static int tnpu_dma(void *opaque, uint64_t pa, void *buf, size_t len,
                    bool is_write)
{
    PCIDevice *pdev = PCI_DEVICE(opaque);
    MemTxResult r;

    RCU_READ_LOCK_GUARD();
    if (!tnpu_dma_is_ram(pci_get_address_space(pdev), pa, len, is_write)) {
        trace_tnpu_dma_error(pa, len, is_write, MEMTX_DECODE_ERROR);
        return -1;
    }
    r = is_write ? pci_dma_write(pdev, pa, buf, len)
                 : pci_dma_read(pdev, pa, buf, len);
    if (r != MEMTX_OK) {
        trace_tnpu_dma_error(pa, len, is_write, r);
        return -1;
    }
    return 0;
}

static int tnpu_dma_read(void *opaque, uint64_t pa, void *buf, size_t len)
{
    return tnpu_dma(opaque, pa, buf, len, false);
}

static int tnpu_dma_write(void *opaque, uint64_t pa, const void *buf,
                          size_t len)
{
    return tnpu_dma(opaque, pa, (void *)buf, len, true);
}

void tnpu_mem_init(TnpuState *s)
{
    s->mem = (struct tnpu_mem_ops){
        .read = tnpu_dma_read,
        .write = tnpu_dma_write,
        .opaque = s,
    };
}

/* ---- worker threads ------------------------------------------------------ */

static void tnpu_run_job(TnpuWorker *w, const struct tnpu_job *job,
                         const struct tnpu_mem_ops *mem,
                         struct tnpu_result *res)
{
    trace_tnpu_job_start(job->queue, job->head, job->entry.ctx,
                         job->entry.cmd_va, job->entry.cmd_len,
                         job->entry.seqno);
    tnpu_exec_run(w->ex, job, mem, res);
    trace_tnpu_job_end(job->queue, job->entry.seqno, res->error,
                       res->counters[TNPU_CNT_TOTAL_CYCLES]);
}

static void *tnpu_worker_thread(void *opaque)
{
    TnpuWorker *w = opaque;
    TnpuState *s = w->s;
    struct tnpu_job job;
    struct tnpu_result res;

    /*
     * The DMA callbacks read the memory map under RCU: synchronize_rcu() must
     * know this thread.
     */
    rcu_register_thread();
    qemu_mutex_lock(&s->lock);
    for (;;) {
        while (!w->has_job && !s->stopping) {
            qemu_cond_wait(&w->cond, &s->lock);
        }
        if (s->stopping) {
            break;
        }
        job = w->job;
        w->has_job = false;
        w->running = true;
        qemu_mutex_unlock(&s->lock);

        tnpu_run_job(w, &job, &s->mem, &res);

        qemu_mutex_lock(&s->lock);
        w->running = false;
        if (w->discard) {
            /*
             * A reset abandoned this job: no fence, no interrupt, no register
             * update.
             */
            w->discard = false;
            tnpu_exec_clear_abort(w->ex);
            trace_tnpu_job_dropped(job.queue, job.entry.seqno);
            continue;
        }
        w->done_job = job;
        w->res = res;
        w->has_result = true;
        qemu_bh_schedule(s->bh);
    }
    qemu_mutex_unlock(&s->lock);
    rcu_unregister_thread();
    return NULL;
}

/*
 * Called from the BH under the BQL after tnpu_core_fetch() marked the queue
 * busy.
 */
void tnpu_worker_submit(TnpuState *s, const struct tnpu_job *job)
{
    TnpuWorker *w = &s->workers[job->queue];

    if (s->sync) {
        struct tnpu_result res;

        tnpu_run_job(w, job, &s->mem, &res);
        tnpu_complete(s, job, &res);
        return;
    }
    qemu_mutex_lock(&s->lock);
    /* The core never fetches for a busy queue, so the slot is free. */
    g_assert(!w->has_job);
    w->job = *job;
    w->has_job = true;
    qemu_cond_signal(&w->cond);
    qemu_mutex_unlock(&s->lock);
}

bool tnpu_worker_take_result(TnpuState *s, unsigned q, struct tnpu_job *job,
                             struct tnpu_result *res)
{
    TnpuWorker *w = &s->workers[q];
    bool got;

    qemu_mutex_lock(&s->lock);
    got = w->has_result;
    if (got) {
        *job = w->done_job;
        *res = w->res;
        w->has_result = false;
    }
    qemu_mutex_unlock(&s->lock);
    return got;
}

/*
 * Reset: abandon every job.  Pending hand-offs and unapplied results are
 * dropped; a running job is aborted at its next command/instruction boundary
 * and discarded when it returns.  This does not wait for the thread: a job
 * fetched after the reset simply waits in the slot until the aborted one has
 * unwound (the model also drops completions of an older generation).
 */
void tnpu_workers_drop(TnpuState *s)
{
    qemu_mutex_lock(&s->lock);
    for (unsigned q = 0; q < s->cfg.queues; q++) {
        TnpuWorker *w = &s->workers[q];

        w->has_job = false;
        w->has_result = false;
        if (w->running) {
            w->discard = true;
            tnpu_exec_abort(w->ex);
        }
    }
    qemu_mutex_unlock(&s->lock);
}

int tnpu_workers_start(TnpuState *s, Error **errp)
{
    char msg[128];

    s->stopping = false;
    for (unsigned q = 0; q < s->cfg.queues; q++) {
        TnpuWorker *w = &s->workers[q];

        w->s = s;
        w->q = q;
        if (tnpu_exec_new(&s->cfg, &w->ex, msg, sizeof(msg))) {
            error_setg(errp, "%s", msg);
            tnpu_workers_stop(s);
            return -1;
        }
        if (s->sync) {
            continue;
        }
        qemu_cond_init(&w->cond);
        snprintf(msg, sizeof(msg), "tnpu-q%u", q);
        qemu_thread_create(&w->thread, msg, tnpu_worker_thread, w,
                           QEMU_THREAD_JOINABLE);
        w->thread_started = true;
    }
    return 0;
}

/*
 * Unrealize: stop and join every thread.  Safe under the BQL: workers never
 * take it.
 */
void tnpu_workers_stop(TnpuState *s)
{
    qemu_mutex_lock(&s->lock);
    s->stopping = true;
    for (unsigned q = 0; q < TNPU_MAX_QUEUES; q++) {
        TnpuWorker *w = &s->workers[q];

        if (w->ex) {
            tnpu_exec_abort(w->ex);
        }
        if (w->thread_started) {
            qemu_cond_signal(&w->cond);
        }
    }
    qemu_mutex_unlock(&s->lock);
    for (unsigned q = 0; q < TNPU_MAX_QUEUES; q++) {
        TnpuWorker *w = &s->workers[q];

        if (w->thread_started) {
            qemu_thread_join(&w->thread);
            qemu_cond_destroy(&w->cond);
            w->thread_started = false;
        }
        tnpu_exec_free(w->ex);
        w->ex = NULL;
        w->has_job = w->running = w->discard = w->has_result = false;
    }
}
