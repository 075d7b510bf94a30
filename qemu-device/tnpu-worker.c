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
 * check and the access use one translation (a MemoryRegionCache, inside one
 * RCU read-side section), so the memory map cannot change between them.
 * MSI-X/MSI messages are sent by the PCI core, not through these callbacks.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "qemu/rcu.h"
#include "qemu/timer.h"
#include "qemu/units.h"
#include "exec/memory.h"
#include "hw/pci/pci_device.h"
#include "system/dma.h"
#include "trace.h"

#include "tnpu.h"

/* ---- guest memory -------------------------------------------------------- */

/*
 * While a job runs, its thread keeps a few translations per direction (windows
 * of up to TNPU_DMA_WINDOW bytes of RAM, based at the window-aligned address
 * below the one they were made for when that is RAM too) and reuses them for the
 * job's later accesses instead of translating every DMA row again: the golden
 * model makes one access per row, page or tile line, and a fresh
 * MemoryRegionCache per access (FlatView lookup, region and FlatView references,
 * RAM block lookup) cost more than the copies themselves.  Aligned bases and
 * several windows matter because a buffer's pages are wherever the guest's page
 * allocator put them: once the guest has freed and reallocated memory a few
 * times, consecutive pages of one buffer are scattered over its RAM, and a
 * single window based at the last address was made anew for almost every page
 * (a Fashion-MNIST batch ran 35 % longer in a guest's third process than in its
 * first).  A window is used only while the address space still has the
 * FlatView it was made on: any change of the memory map (bus mastering switched
 * off, RAM hot-unplugged, a BAR moved) makes a new FlatView, and the next access
 * translates afresh, so check and copy still use one translation.  The windows
 * hold references on their FlatView and region, dropped when the job ends.
 * Outside a job (ring fetch, fence writes under the BQL) every access
 * translates on its own.
 */
#define TNPU_DMA_WINDOW (256 * MiB)
#define TNPU_DMA_WINDOWS 4              /* per direction: 1 GiB of RAM in 4 */

typedef struct TnpuDmaWindow {
    MemoryRegionCache cache;
    AddressSpace *as;
    hwaddr base;
    bool valid;
} TnpuDmaWindow;

static __thread bool tnpu_in_job;
static __thread TnpuDmaWindow tnpu_window[2][TNPU_DMA_WINDOWS]; /* [is_write] */
static __thread unsigned tnpu_window_next[2];   /* round-robin replacement */

static void tnpu_dma_windows_drop(void)
{
    for (int i = 0; i < 2; i++) {
        for (int k = 0; k < TNPU_DMA_WINDOWS; k++) {
            if (tnpu_window[i][k].valid) {
                address_space_cache_destroy(&tnpu_window[i][k].cache);
                tnpu_window[i][k].valid = false;
            }
        }
    }
}

static bool tnpu_window_covers(TnpuDmaWindow *win, AddressSpace *as,
                               hwaddr addr)
{
    return win->valid && win->as == as &&
           win->cache.fv == address_space_to_flatview(as) &&
           addr >= win->base && addr - win->base < win->cache.len;
}

/* Make win a translation of RAM from base (0 if base is not RAM). */
static int64_t tnpu_window_make(TnpuDmaWindow *win, AddressSpace *as,
                                hwaddr base, hwaddr want, bool is_write)
{
    int64_t l;

    want = MIN(want, UINT64_MAX - base);    /* no wrap past 2^64 */
    l = address_space_cache_init(&win->cache, as, base, want, is_write);
    if (l <= 0 || !win->cache.ptr) {
        address_space_cache_destroy(&win->cache);
        return 0;
    }
    win->as = as;
    win->base = base;
    win->valid = true;
    return l;
}

/*
 * The translation covering addr: one of the job's windows for this direction
 * (a new one replaces the oldest when none covers addr), or a one-shot cache.
 * Returns the bytes usable from addr (at most len) and sets *cache and *off,
 * or 0 when addr is not directly accessible RAM.  Called under RCU.
 */
static hwaddr tnpu_dma_translate(AddressSpace *as, hwaddr addr, hwaddr len,
                                 bool is_write, MemoryRegionCache *one,
                                 MemoryRegionCache **cache, hwaddr *off)
{
    TnpuDmaWindow *win = NULL;
    hwaddr aligned = addr & ~(hwaddr)(TNPU_DMA_WINDOW - 1);
    int64_t l;

    if (!tnpu_in_job) {
        l = address_space_cache_init(one, as, addr, len, is_write);
        if (l <= 0 || !one->ptr) {
            address_space_cache_destroy(one);
            return 0;
        }
        *cache = one;
        *off = 0;
        return l;
    }
    for (int k = 0; k < TNPU_DMA_WINDOWS; k++) {
        if (tnpu_window_covers(&tnpu_window[is_write][k], as, addr)) {
            win = &tnpu_window[is_write][k];
            break;
        }
    }
    if (!win) {
        win = &tnpu_window[is_write][tnpu_window_next[is_write]];
        tnpu_window_next[is_write] =
            (tnpu_window_next[is_write] + 1) % TNPU_DMA_WINDOWS;
        if (win->valid) {
            address_space_cache_destroy(&win->cache);
            win->valid = false;
        }
        /*
         * From the aligned base when RAM reaches addr from there (a stable
         * window for every page of that range), else from addr itself.
         */
        if (aligned == addr ||
            !tnpu_window_make(win, as, aligned, TNPU_DMA_WINDOW, is_write) ||
            !tnpu_window_covers(win, as, addr)) {
            if (win->valid) {
                address_space_cache_destroy(&win->cache);
                win->valid = false;
            }
            if (!tnpu_window_make(win, as, addr,
                                  MAX(len, (hwaddr)TNPU_DMA_WINDOW),
                                  is_write)) {
                return 0;
            }
        }
    }
    *cache = &win->cache;
    *off = addr - win->base;
    return MIN(len, win->cache.len - *off);
}

/*
 * One access to [pa, pa + len) of the device's bus-master address space, RAM
 * only (ROM for reads).  Each piece is translated exactly once: the
 * MemoryRegionCache holds the FlatView and the region it found, so the RAM
 * check and the copy see the same translation even if the memory map changes
 * in between (no time-of-check/time-of-use window).  A piece that is not
 * directly accessible RAM (MMIO, unassigned space, bus mastering disabled, an
 * IOMMU region) is a bus error before any byte of it is touched.
 */
static int tnpu_dma(void *opaque, uint64_t pa, void *buf, size_t len,
                    bool is_write)
{
    /* opaque is always our TnpuState: no checked QOM cast on every access */
    TnpuState *s = opaque;
    AddressSpace *as = pci_get_address_space(&s->parent_obj);
    hwaddr addr = pa;
    uint8_t *p = buf;

    if (addr + len < addr) {
        trace_tnpu_dma_error(pa, len, is_write, MEMTX_DECODE_ERROR);
        return -1;
    }
    RCU_READ_LOCK_GUARD();
    while (len) {
        MemoryRegionCache one, *cache;
        hwaddr off;
        hwaddr l = tnpu_dma_translate(as, addr, len, is_write, &one, &cache,
                                      &off);

        if (!l) {
            trace_tnpu_dma_error(pa, len, is_write, MEMTX_DECODE_ERROR);
            return -1;
        }
        /* direct RAM: a copy (plus dirty tracking for writes), never MMIO */
        if (is_write) {
            address_space_write_cached(cache, off, p, l);
            address_space_cache_invalidate(cache, off, l);
        } else {
            address_space_read_cached(cache, off, p, l);
        }
        if (cache == &one) {
            address_space_cache_destroy(&one);
        }
        addr += l;
        p += l;
        len -= l;
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
    tnpu_in_job = true;
    tnpu_exec_run(w->ex, job, mem, res);
    tnpu_in_job = false;
    tnpu_dma_windows_drop();
    trace_tnpu_job_end(job->queue, job->entry.seqno, res->error,
                       res->counters[TNPU_CNT_TOTAL_CYCLES]);
}

/*
 * The worker of queue @q stops waiting for a run token (it has one, or it
 * leaves): the next waiter may be at the head now, with a token free.
 */
static void token_wait_leave(TnpuState *s, unsigned q)
{
    unsigned i = 0;

    while (i < s->token_nwait && s->token_waiters[i] != q) {
        i++;
    }
    assert(i < s->token_nwait);
    memmove(&s->token_waiters[i], &s->token_waiters[i + 1],
            s->token_nwait - i - 1);
    s->token_nwait--;
    qemu_cond_broadcast(&s->token_cond);
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
        /*
         * A run token (device-wide memory budget), first come first served
         * in the order the jobs reached the device: the job joined the
         * waiters' FIFO when it was handed over (tnpu_worker_submit), so a
         * worker that returns its token and gets its next job queues behind
         * every job fetched before it, however late their threads wake
         * (issue #28: it used to take the token back before they woke, and
         * some queues starved).  The wait is abortable: reset and unplug
         * broadcast token_cond, and an abandoned job then returns at once
         * without running.
         */
        while (!(s->run_tokens && s->token_waiters[0] == w->q) &&
               !w->discard && !s->stopping) {
            qemu_cond_wait(&s->token_cond, &s->lock);
        }
        token_wait_leave(s, w->q);
        if (s->stopping) {
            w->running = false;
            qemu_cond_broadcast(&s->idle_cond);
            break;
        }
        if (!w->discard) {
            s->run_tokens--;
            qemu_mutex_unlock(&s->lock);

            tnpu_run_job(w, &job, &s->mem, &res);
            if (s->cfg.queues > TNPU_RUN_TOKENS) {
                /* at rest a worker keeps no big scratch: the token covers it */
                tnpu_exec_release_scratch(w->ex);
                tnpu_thread_cleanup();
            }

            qemu_mutex_lock(&s->lock);
            s->run_tokens++;
            qemu_cond_broadcast(&s->token_cond);
        }
        w->running = false;
        qemu_cond_broadcast(&s->idle_cond);
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
    /* the GEMM kernels' per-thread packing scratch (a few MiB) */
    tnpu_thread_cleanup();
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
    /* its place among the run-token waiters: the order of arrival */
    s->token_waiters[s->token_nwait++] = w->q;
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

        if (w->has_job) {
            token_wait_leave(s, q);     /* handed over, not yet taken */
        }
        w->has_job = false;
        w->has_result = false;
        if (w->ex) {
            tnpu_exec_preempt(w->ex, false);
        }
        if (w->running) {
            w->discard = true;
            tnpu_exec_abort(w->ex);
        }
    }
    qemu_cond_broadcast(&s->token_cond);
    qemu_mutex_unlock(&s->lock);
}

/*
 * STATUS bits only the glue knows (registers.md): RESET_PENDING while a job a
 * reset abandoned is still unwinding (it may touch guest memory until then),
 * MMU_INV_PENDING while a running job may still use a translation cached
 * before the last MMU_INVALIDATE.  Computed when STATUS is read.
 */
uint32_t tnpu_workers_pending(TnpuState *s)
{
    uint32_t bits = 0;

    qemu_mutex_lock(&s->lock);
    for (unsigned q = 0; q < s->cfg.queues; q++) {
        TnpuWorker *w = &s->workers[q];

        if (w->running && w->discard) {
            bits |= TNPU_STATUS_RESET_PENDING;
        }
        if (w->ex && tnpu_exec_tlb_pending(w->ex)) {
            bits |= TNPU_STATUS_MMU_INV_PENDING;
        }
    }
    qemu_mutex_unlock(&s->lock);
    return bits;
}

/*
 * Waits (at most timeout_ms) until no job abandoned by a reset is still
 * running.  Returns false on timeout.
 */
bool tnpu_workers_wait_dropped(TnpuState *s, unsigned timeout_ms)
{
    int64_t deadline = qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + timeout_ms;
    bool busy;

    qemu_mutex_lock(&s->lock);
    for (;;) {
        int64_t left;

        busy = false;
        for (unsigned q = 0; q < s->cfg.queues; q++) {
            busy |= s->workers[q].running && s->workers[q].discard;
        }
        left = deadline - qemu_clock_get_ms(QEMU_CLOCK_REALTIME);
        if (!busy || left <= 0) {
            break;
        }
        qemu_cond_timedwait(&s->idle_cond, &s->lock, left);
    }
    qemu_mutex_unlock(&s->lock);
    return !busy;
}

/*
 * Migration drain: waits (at most timeout_ms) until no worker holds a
 * handed-over or running job; their results then wait for the completion BH.
 * Returns -1 when idle, else the first queue still busy.
 */
int tnpu_workers_wait_idle(TnpuState *s, unsigned timeout_ms)
{
    int64_t deadline = qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + timeout_ms;
    int busy;

    qemu_mutex_lock(&s->lock);
    for (;;) {
        int64_t left;

        busy = -1;
        for (unsigned q = 0; q < s->cfg.queues && busy < 0; q++) {
            if (s->workers[q].has_job || s->workers[q].running) {
                busy = q;
            }
        }
        left = deadline - qemu_clock_get_ms(QEMU_CLOCK_REALTIME);
        if (busy < 0 || left <= 0) {
            break;
        }
        qemu_cond_timedwait(&s->idle_cond, &s->lock, left);
    }
    qemu_mutex_unlock(&s->lock);
    return busy;
}

/* MMU_INVALIDATE: every executor drops its TLB before its next access. */
/*
 * Q_CTRL.PREEMPT (queues.md "Preemption"): the executor of each queue in
 * @queues stops its job at the next eligible preemption point; @on false (the
 * queue's job completed, or a reset) withdraws the request.
 */
void tnpu_workers_preempt(TnpuState *s, uint32_t queues, bool on)
{
    for (unsigned q = 0; q < s->cfg.queues; q++) {
        if ((queues & (1u << q)) && s->workers[q].ex) {
            tnpu_exec_preempt(s->workers[q].ex, on);
        }
    }
}

void tnpu_workers_tlb_invalidate(TnpuState *s)
{
    for (unsigned q = 0; q < s->cfg.queues; q++) {
        if (s->workers[q].ex) {
            tnpu_exec_tlb_invalidate(s->workers[q].ex);
        }
    }
}

int tnpu_workers_start(TnpuState *s, Error **errp)
{
    static unsigned instances; /* under the BQL: realize */
    unsigned inst = instances++;
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
        /* unique per device: "tnpu<instance>-q<queue>" (15 characters max) */
        snprintf(msg, sizeof(msg), "tnpu%u-q%u", inst % 1000, q);
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
    qemu_cond_broadcast(&s->token_cond);
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
    s->token_nwait = 0;     /* jobs handed over that no thread took */
}
