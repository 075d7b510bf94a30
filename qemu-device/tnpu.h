/*
 * tnpu — PCIe neural-network accelerator: state shared by the glue files.
 *
 * The glue is thin: every behaviour the hardware spec (Documentation/hardware/)
 * defines lives in the QEMU-free golden model (core/).  The glue maps BAR0 onto
 * the model's register block, moves jobs between the BQL world (registers, ring
 * fetch, completion, MSI-X) and one worker thread per hardware queue (the
 * model's executor), and gives the model its view of guest memory.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_MISC_TNPU_H
#define HW_MISC_TNPU_H

#include "hw/pci/pci_device.h"
#include "qemu/thread.h"
#include "qom/object.h"
#include "system/runstate.h"

#include "tnpu/tnpu_core.h"

#define TYPE_TNPU "tnpu"
OBJECT_DECLARE_SIMPLE_TYPE(TnpuState, TNPU)

/*
 * PCI config-space layout (capabilities at fixed offsets, MSI-X placed after
 * them).
 */
#define TNPU_CAP_PM_OFFSET   0x40
#define TNPU_CAP_MSI_OFFSET  0x50
#define TNPU_CAP_PCIE_OFFSET 0x80

typedef struct TnpuState TnpuState;

/*
 * One worker thread + one executor per hardware queue: the spec (queues.md,
 * "Arbitration and concurrency") lets jobs of different queues run
 * concurrently, and within a queue jobs run in ring order one at a time, so a
 * queue never needs more than one executor.
 */
/*
 * Device-wide host-memory budget (qemu-device.md "Host resources"): at most
 * TNPU_RUN_TOKENS jobs run at once, each with its big scratch (command buffer
 * copy, IM2COL/GATHER box, bf16 panel, GEMM packing, ~42 MiB at most); with
 * more queues than tokens a worker frees that scratch before it returns its
 * token.  Modelled cycles never depend on the wait.
 */
#define TNPU_RUN_TOKENS 4

typedef struct TnpuWorker {
    TnpuState *s;
    unsigned q;
    struct tnpu_exec *ex;
    QemuThread thread;
    QemuCond cond; /* job handed over, or stopping */
    bool thread_started;

    /* Protected by TnpuState.lock. */
    bool has_job;    /* @job is waiting for the thread */
    bool running;    /* the thread is inside tnpu_exec_run() */
    bool discard;    /* a reset abandoned the running job */
    bool has_result; /* @done_job/@res wait for the completion BH */
    struct tnpu_job job;
    struct tnpu_job done_job;
    struct tnpu_result res;
} TnpuWorker;

struct TnpuState {
    PCIDevice parent_obj;
    MemoryRegion mmio;

    /* Properties. */
    struct tnpu_config cfg;
    bool sync; /* x-sync: run jobs inline in the BH (fuzzing, debugging) */
    bool msi;  /* offer an MSI capability as fallback for MSI-X */
    char *islands; /* islands=ROWS[:DTYPES[:CLKDIV]]/... (chain #9), NULL = one */

    /* Under the BQL. */
    struct tnpu_core *core;
    QEMUBH *bh;            /* completions, then fetches */
    uint32_t kick_pending; /* queues to try to fetch from in the BH */
    unsigned rr_next;      /* round-robin start for fetches */
    struct tnpu_mem_ops
        mem; /* the model's view of guest memory: RAM only, any thread */

    /* Worker hand-off. */
    QemuMutex lock;
    QemuCond idle_cond; /* a worker left tnpu_exec_run() */
    QemuCond token_cond; /* a run token was returned, or reset/stopping */
    unsigned run_tokens; /* free run tokens (TNPU_RUN_TOKENS at start) */
    /* queues whose worker waits for a token, oldest first: tokens go in order */
    uint8_t token_waiters[TNPU_MAX_QUEUES];
    unsigned token_nwait;
    bool stopping;
    TnpuWorker workers[TNPU_MAX_QUEUES];

    /* Migration (qemu-device.md "Migration"), under the BQL. */
    uint32_t drain_ms;     /* x-drain-ms: how long a stop waits for jobs */
    bool paused;           /* VM stopped: the BH fetches no new job */
    int busy_queue;        /* a queue still busy after the drain, or -1 */
    VMChangeStateEntry *vmstate_change;
    uint8_t *snap;         /* the model's snapshot while it is saved/loaded */
    uint32_t snap_len;
    bool loading;          /* between pre_load and the snapshot's load */
};

/* tnpu-worker.c */
void tnpu_mem_init(TnpuState *s);
int tnpu_workers_start(TnpuState *s, Error **errp);
void tnpu_workers_stop(TnpuState *s);
void tnpu_workers_drop(TnpuState *s);
uint32_t tnpu_workers_pending(TnpuState *s);
bool tnpu_workers_wait_dropped(TnpuState *s, unsigned timeout_ms);
int tnpu_workers_wait_idle(TnpuState *s, unsigned timeout_ms);
void tnpu_workers_tlb_invalidate(TnpuState *s);
void tnpu_workers_preempt(TnpuState *s, uint32_t queues, bool on);
void tnpu_worker_submit(TnpuState *s, const struct tnpu_job *job);
bool tnpu_worker_take_result(TnpuState *s, unsigned q, struct tnpu_job *job,
                             struct tnpu_result *res);

/* tnpu.c */
void tnpu_complete(TnpuState *s, const struct tnpu_job *job,
                   const struct tnpu_result *res);

#endif
