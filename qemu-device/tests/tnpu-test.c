/*
 * qtest for the tnpu PCIe accelerator (no guest kernel).
 *
 * Every test boots a q35 machine with the device at 04.0, builds the structures
 * a driver would build (context table, 4-level page tables, a ring per queue,
 * fences, command buffers) in guest memory and drives BAR0 like a driver.
 * Copied to tests/qtest/tnpu-test.c by tools/qemu-overlay.
 *
 * Run:  cd build/qemu-build && QTEST_QEMU_BINARY=./qemu-system-x86_64
 * ./tests/qtest/tnpu-test --tap -k
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "libqos/pci.h"
#include "libqos/pci-pc.h"
#include "libqos/malloc-pc.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "standard-headers/linux/pci_regs.h"

#include "../../hw/misc/tnpu/core/include/tnpu/tnpu_hw.h"

#define DEVFN       QPCI_DEVFN(4, 0)
#define TIMEOUT_US  (10 * G_USEC_PER_SEC)
#define VA_BASE     0x0000004000000000ull /* device VAs used by the tests */
#define VA_UNMAPPED 0x0000100000000000ull /* no level-4 entry there */
#define RING_SIZE   8

typedef struct Tnpu {
    QTestState *qts;
    QGuestAllocator alloc;
    QPCIBus *bus;
    QPCIDevice *dev;
    QPCIBar bar;
    uint64_t ctx_table, l4, l3, l2, l1;
    uint64_t va_next;
    uint64_t ring[TNPU_MAX_QUEUES], fence[TNPU_MAX_QUEUES];
    uint32_t tail[TNPU_MAX_QUEUES];
    uint32_t rows, cols, pes, queues;
} Tnpu;

/* ---- helpers ------------------------------------------------------------- */

static uint32_t rd(Tnpu *t, uint64_t off)
{
    return qpci_io_readl(t->dev, t->bar, off);
}

static void wr(Tnpu *t, uint64_t off, uint32_t v)
{
    qpci_io_writel(t->dev, t->bar, off, v);
}

static uint64_t rd64(Tnpu *t, uint64_t off)
{
    return qpci_io_readq(t->dev, t->bar, off);
}

static void wr64(Tnpu *t, uint64_t off, uint64_t v)
{
    qpci_io_writeq(t->dev, t->bar, off, v);
}

static uint64_t alloc_page_aligned(Tnpu *t, uint64_t bytes)
{
    uint64_t pa = guest_alloc(&t->alloc, bytes + 4096);

    g_assert(pa);
    return (pa + 4095) & ~4095ull;
}

static uint64_t alloc_zeroed(Tnpu *t, uint64_t bytes)
{
    uint64_t pa = alloc_page_aligned(t, bytes);

    qtest_memset(t->qts, pa, 0, bytes);
    return pa;
}

static void wq(Tnpu *t, uint64_t pa, uint64_t v)
{
    qtest_writeq(t->qts, pa, v);
}

/*
 * Map [va, va + len) to [pa, pa + len); all test VAs share one level-1 table (2
 * MiB).
 */
static void map(Tnpu *t, uint64_t va, uint64_t pa, uint64_t len, uint64_t perms)
{
    g_assert(va >= VA_BASE && va + len <= VA_BASE + (2u << 20));
    for (uint64_t off = 0; off < len; off += 4096) {
        wq(t, t->l1 + 8 * TNPU_PT_INDEX(va + off, 1),
           (pa + off) | TNPU_PTE_VALID | perms);
    }
}

/* A fresh, mapped (read/write) buffer: returns the VA, its PA in *pa. */
static uint64_t buf(Tnpu *t, uint64_t bytes, uint64_t *pa)
{
    uint64_t len = (bytes + 4095) & ~4095ull;
    uint64_t p = alloc_zeroed(t, len);
    uint64_t va = t->va_next;

    map(t, va, p, len, TNPU_PTE_READ | TNPU_PTE_WRITE);
    t->va_next += len;
    if (pa) {
        *pa = p;
    }
    return va;
}

static Tnpu *tnpu_start(const char *props)
{
    Tnpu *t = g_new0(Tnpu, 1);
    uint64_t barsize;
    uint32_t geom;

    t->qts = qtest_initf("-M q35 -device tnpu,addr=04.0%s%s", props ? "," : "",
                         props ? props : "");
    pc_alloc_init(&t->alloc, t->qts, 0);
    t->bus = qpci_new_pc(t->qts, &t->alloc);
    t->dev = qpci_device_find(t->bus, DEVFN);
    g_assert(t->dev);
    qpci_device_enable(t->dev);
    t->bar = qpci_iomap(t->dev, TNPU_BAR_REGS, &barsize);
    g_assert_cmpuint(barsize, ==, TNPU_BAR0_SIZE);

    geom = rd(t, TNPU_REG_CAP_GEOM);
    t->rows = TNPU_CAP_GEOM_ROWS(geom);
    t->cols = TNPU_CAP_GEOM_COLS(geom);
    t->pes = TNPU_CAP_GEOM_PES(geom);
    t->queues = TNPU_CAP_QUEUES_NUM(rd(t, TNPU_REG_CAP_QUEUES));
    return t;
}

static void tnpu_stop(Tnpu *t)
{
    g_free(t->dev);
    qpci_free_pc(t->bus);
    alloc_destroy(&t->alloc);
    qtest_quit(t->qts);
    g_free(t);
}

/*
 * Context 0 with page tables, IRQs unmasked, MSI-X on, every queue with a ring
 * + fence, enabled. Called again after a reset: the guest structures are reused
 * (their roots rewritten), so a long random run does not exhaust guest memory.
 */
static void tnpu_setup(Tnpu *t)
{
    if (!t->ctx_table) {
        t->ctx_table = alloc_zeroed(t, 4096);
        t->l4 = alloc_zeroed(t, 4096);
        t->l3 = alloc_zeroed(t, 4096);
        t->l2 = alloc_zeroed(t, 4096);
        t->l1 = alloc_zeroed(t, 4096);
        t->va_next = VA_BASE;
        for (unsigned q = 0; q < t->queues; q++) {
            t->ring[q] = alloc_zeroed(t, 32 * RING_SIZE);
            t->fence[q] = alloc_zeroed(t, 8);
        }
    }
    wq(t, t->l4 + 8 * TNPU_PT_INDEX(VA_BASE, 4), t->l3 | TNPU_PTE_VALID);
    wq(t, t->l3 + 8 * TNPU_PT_INDEX(VA_BASE, 3), t->l2 | TNPU_PTE_VALID);
    wq(t, t->l2 + 8 * TNPU_PT_INDEX(VA_BASE, 2), t->l1 | TNPU_PTE_VALID);
    wq(t, t->ctx_table, t->l4 | TNPU_CTX_VALID);
    wq(t, t->ctx_table + 8, 0);

    if (!t->dev->msix_enabled) {
        qpci_msix_enable(t->dev);
    }
    g_assert_cmpuint(qpci_msix_table_size(t->dev), ==, 1 + t->queues);

    wr64(t, TNPU_REG_MMU_CTX_BASE_LO, t->ctx_table);
    wr(t, TNPU_REG_MMU_CTX_COUNT, 1);
    wr(t, TNPU_REG_IRQ_MASK, 0);
    for (unsigned q = 0; q < t->queues; q++) {
        t->tail[q] = 0;
        wq(t, t->fence[q], 0);
        wr(t, TNPU_REG_Q(q, TNPU_Q_CTRL), 0);
        wr64(t, TNPU_REG_Q(q, TNPU_Q_RING_BASE_LO), t->ring[q]);
        wr(t, TNPU_REG_Q(q, TNPU_Q_RING_SIZE), RING_SIZE);
        wr64(t, TNPU_REG_Q(q, TNPU_Q_FENCE_LO), t->fence[q]);
        wr(t, TNPU_REG_Q(q, TNPU_Q_CTRL), TNPU_Q_CTRL_ENABLE);
        g_assert(rd(t, TNPU_REG_Q(q, TNPU_Q_STATUS)) & TNPU_Q_STATUS_ENABLED);
    }
    wr(t, TNPU_REG_CTRL, TNPU_CTRL_ENABLE);
    g_assert(rd(t, TNPU_REG_STATUS) & TNPU_STATUS_ENABLED);
}

/* Command buffer builder. */
typedef struct Cmds {
    GByteArray *b;
} Cmds;

static struct tnpu_cmd_hdr hdr(uint8_t op, uint32_t size)
{
    struct tnpu_cmd_hdr h = { .opcode = op, .size = size };
    return h;
}

static void cmd_dma(Cmds *c, bool h2d, uint64_t va, uint64_t pitch, uint8_t row,
                    uint8_t half, uint32_t off, uint32_t spitch, uint32_t width,
                    uint32_t height)
{
    struct tnpu_cmd_dma d = {
        .hdr = hdr(h2d ? TNPU_CMD_DMA_H2D : TNPU_CMD_DMA_D2H, sizeof(d)),
        .host_va = va,
        .host_pitch_y = pitch,
        .sram_off = off,
        .sram_pitch_y = spitch,
        .width = width,
        .height = height,
        .depth = 1,
        .row = row,
        .half = half,
    };
    g_byte_array_append(c->b, (const guint8 *)&d, sizeof(d));
}

static void cmd_fill(Cmds *c, uint32_t width)
{
    struct tnpu_cmd_dma d = {
        .hdr = hdr(TNPU_CMD_DMA_H2D, sizeof(d)),
        .width = width,
        .height = 1,
        .depth = 1,
        .row = TNPU_DMA_ROW_ALL,
        .dma_flags = TNPU_DMA_F_FILL,
        .fill = 0x5a,
    };
    g_byte_array_append(c->b, (const guint8 *)&d, sizeof(d));
}

static void cmd_dispatch(Cmds *c, uint8_t row, uint8_t half, const uint8_t *pkt,
                         uint32_t len)
{
    static const uint8_t zero[8];
    uint32_t padded = (len + 7) & ~7u;
    struct tnpu_cmd_dispatch d = {
        .hdr = hdr(TNPU_CMD_DISPATCH, 16 + padded),
        .row = row,
        .half = half,
        .packet_len = len,
    };
    g_byte_array_append(c->b, (const guint8 *)&d, sizeof(d));
    g_byte_array_append(c->b, pkt, len);
    g_byte_array_append(c->b, zero, padded - len);
}

static void cmd_raw(Cmds *c, uint8_t op, uint32_t size)
{
    struct tnpu_cmd_hdr h = hdr(op, size);
    static const uint8_t zero[64];

    g_byte_array_append(c->b, (const guint8 *)&h, sizeof(h));
    g_byte_array_append(c->b, zero, size - 8);
}

/* Copy the commands into a fresh mapped buffer; returns its VA. */
static uint64_t cmds_upload(Tnpu *t, Cmds *c, uint32_t *len)
{
    uint64_t pa, va = buf(t, c->b->len, &pa);

    qtest_memwrite(t->qts, pa, c->b->data, c->b->len);
    *len = c->b->len;
    g_byte_array_free(c->b, true);
    c->b = NULL;
    return va;
}

static void submit(Tnpu *t, unsigned q, uint64_t cmd_va, uint32_t cmd_len,
                   uint64_t seqno)
{
    struct tnpu_ring_entry e = {
        .ctx = 0,
        .flags = TNPU_RING_F_IRQ,
        .cmd_len = cmd_len,
        .cmd_va = cmd_va,
        .seqno = seqno,
    };

    qtest_memwrite(t->qts, t->ring[q] + 32 * t->tail[q], &e, sizeof(e));
    t->tail[q] = (t->tail[q] + 1) % RING_SIZE;
    wr(t, TNPU_REG_Q(q, TNPU_Q_TAIL), t->tail[q]);
    wr(t, TNPU_REG_Q(q, TNPU_Q_DOORBELL), 1);
}

static bool wait_for(Tnpu *t, unsigned vector)
{
    gint64 end = g_get_monotonic_time() + TIMEOUT_US;

    while (!qpci_msix_pending(t->dev, vector)) {
        if (g_get_monotonic_time() > end) {
            return false;
        }
        g_usleep(1000);
    }
    return true;
}

/* Wait until queue q is idle (not busy) or halted. */
static void wait_idle(Tnpu *t, unsigned q)
{
    gint64 end = g_get_monotonic_time() + TIMEOUT_US;

    while ((rd(t, TNPU_REG_Q(q, TNPU_Q_STATUS)) & TNPU_Q_STATUS_BUSY) ||
           rd(t, TNPU_REG_Q(q, TNPU_Q_HEAD)) != t->tail[q]) {
        if (rd(t, TNPU_REG_Q(q, TNPU_Q_STATUS)) & TNPU_Q_STATUS_ERROR) {
            return;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
}

/* ---- GEMM program (non-pipelined form of the model's tgemm generator) ---- */

typedef struct Gemm {
    uint32_t m, n, k, tm, tn, kt;
    uint64_t a, b,
        c; /* VAs: A m x k int8, B k x n int8, C m x n int32, row-major */
} Gemm;

static void gemm_build(Tnpu *t, const Gemm *g, Cmds *cb)
{
    uint32_t C = t->cols, P = t->pes, R = t->rows;
    uint32_t Mb = C * g->tm, Nb = P * g->tn;
    uint32_t a_sz = Mb * g->kt, b_sz = g->kt * Nb;
    uint32_t a_off = 0, b_off = a_sz, c_off = a_sz + b_sz;
    uint32_t ksteps = g->k / g->kt, step = 0;
    uint8_t pkt[512];

    g_assert(g->m % Mb == 0 && g->n % Nb == 0 && g->k % g->kt == 0);
    {
        struct tnpu_cfg_hdr h = {
            .n_instr = 4, .n_operands = 3, .loop_end = 2, .repeat = 1
        };
        uint16_t ins[4] = {
            TNPU_INSN_LD(0, 0, 0, 0),
            TNPU_INSN_LD(1, 0, 1, 0),
            TNPU_INSN_MAC(0, 0, 0, 0, 0),
            TNPU_INSN_ST(0, 2, 1),
        };
        struct tnpu_operand ops[3] = {
            { .addr = a_off,
              .col_stride = (int32_t)(g->tm * g->kt),
              .pitch = g->kt,
              .rows = g->tm,
              .cols = g->kt,
              .dtype = TNPU_DTYPE_INT8 },
            { .addr = b_off,
              .pe_stride = (int32_t)g->tn,
              .pitch = Nb,
              .rows = g->kt,
              .cols = g->tn,
              .dtype = TNPU_DTYPE_INT8 },
            { .addr = c_off,
              .col_stride = (int32_t)(g->tm * Nb * 4),
              .pe_stride = (int32_t)(g->tn * 4),
              .pitch = Nb * 4,
              .rows = g->tm,
              .cols = g->tn,
              .dtype = TNPU_DTYPE_INT32 },
        };
        uint32_t len = 17 + sizeof(ins) + sizeof(ops);

        pkt[0] = TNPU_PKT_CONFIG_BYTE(0);
        memcpy(pkt + 1, &h, 16);
        memcpy(pkt + 17, ins, sizeof(ins));
        memcpy(pkt + 17 + sizeof(ins), ops, sizeof(ops));
        cmd_dispatch(cb, TNPU_DISPATCH_ROW_ALL, 0, pkt, len);
    }
    for (uint32_t mo = 0; mo < g->m; mo += R * Mb) {
        uint32_t nrows = MIN(R, (g->m - mo) / Mb);

        for (uint32_t no = 0; no < g->n; no += Nb) {
            for (uint32_t ks = 0; ks < ksteps; ks++, step++) {
                uint8_t h = step & 1;
                bool last = ks == ksteps - 1;
                uint32_t kk = ks * g->kt;

                for (uint32_t r = 0; r < nrows; r++) {
                    cmd_dma(cb, true,
                            g->a + (uint64_t)(mo + r * Mb) * g->k + kk, g->k, r,
                            h, a_off, g->kt, g->kt, Mb);
                    cmd_dma(cb, true, g->b + (uint64_t)kk * g->n + no, g->n, r,
                            h, b_off, Nb, Nb, g->kt);
                }
                pkt[0] = TNPU_PKT_EXE_BYTE(
                    0, last ? (TNPU_PKT_LAST | TNPU_PKT_SHIFT_OUT) : 0);
                for (uint32_t r = 0; r < nrows; r++) {
                    cmd_dispatch(cb, r, h, pkt, 1);
                }
                if (last) {
                    for (uint32_t r = 0; r < nrows; r++) {
                        cmd_dma(cb, false,
                                g->c +
                                    ((uint64_t)(mo + r * Mb) * g->n + no) * 4,
                                g->n * 4, r, h, c_off, Nb * 4, Nb * 4, Mb);
                    }
                }
            }
        }
    }
}

/*
 * Builds A, B, the program and C for an m x n x k int8 GEMM; returns C's PA and
 * the reference.
 */
static uint64_t gemm_prepare(Tnpu *t, uint32_t m, uint32_t n, uint32_t k,
                             uint32_t seed, uint64_t *cmd_va, uint32_t *cmd_len,
                             int32_t **ref)
{
    Gemm g = { .m = m, .n = n, .k = k, .tm = 1, .tn = 1, .kt = MIN(k, 16u) };
    g_autofree int8_t *a = g_new(int8_t, m * k);
    g_autofree int8_t *b = g_new(int8_t, k * n);
    uint64_t apa, bpa, cpa;
    GRand *rnd = g_rand_new_with_seed(seed);
    Cmds cb = { g_byte_array_new() };

    for (uint32_t i = 0; i < m * k; i++) {
        a[i] = (int8_t)g_rand_int_range(rnd, -128, 128);
    }
    for (uint32_t i = 0; i < k * n; i++) {
        b[i] = (int8_t)g_rand_int_range(rnd, -128, 128);
    }
    g_rand_free(rnd);
    *ref = g_new0(int32_t, m * n);
    for (uint32_t i = 0; i < m; i++) {
        for (uint32_t j = 0; j < n; j++) {
            int32_t acc = 0;
            for (uint32_t kk = 0; kk < k; kk++) {
                acc += (int32_t)a[i * k + kk] * b[kk * n + j];
            }
            (*ref)[i * n + j] = acc;
        }
    }
    g.a = buf(t, m * k, &apa);
    g.b = buf(t, k * n, &bpa);
    g.c = buf(t, m * n * 4, &cpa);
    qtest_memwrite(t->qts, apa, a, m * k);
    qtest_memwrite(t->qts, bpa, b, k * n);
    gemm_build(t, &g, &cb);
    *cmd_va = cmds_upload(t, &cb, cmd_len);
    return cpa;
}

static void check_gemm(Tnpu *t, uint64_t cpa, const int32_t *ref, uint32_t m,
                       uint32_t n)
{
    g_autofree int32_t *c = g_new(int32_t, m * n);

    qtest_memread(t->qts, cpa, c, m * n * 4);
    for (uint32_t i = 0; i < m * n; i++) {
        if (c[i] != ref[i]) {
            g_test_message("C[%u][%u] = %d, expected %d", i / n, i % n, c[i],
                           ref[i]);
        }
        g_assert_cmpint(c[i], ==, ref[i]);
    }
}

/* ---- tests --------------------------------------------------------------- */

static void test_identity(void)
{
    Tnpu *t = tnpu_start(NULL);

    g_assert_cmphex(qpci_config_readw(t->dev, PCI_VENDOR_ID), ==,
                    TNPU_PCI_VENDOR_ID);
    g_assert_cmphex(qpci_config_readw(t->dev, PCI_DEVICE_ID), ==,
                    TNPU_PCI_DEVICE_ID);
    g_assert_cmphex(qpci_config_readw(t->dev, PCI_CLASS_DEVICE), ==,
                    TNPU_PCI_CLASS_CODE >> 8);
    g_assert_cmphex(qpci_config_readb(t->dev, PCI_REVISION_ID), ==,
                    TNPU_PCI_REVISION);
    g_assert_cmphex(qpci_config_readb(t->dev, PCI_INTERRUPT_PIN), ==, 0);
    g_assert(qpci_find_capability(t->dev, PCI_CAP_ID_EXP, 0));
    g_assert(qpci_find_capability(t->dev, PCI_CAP_ID_MSIX, 0));
    g_assert(qpci_find_capability(t->dev, PCI_CAP_ID_PM, 0));
    g_assert(qpci_find_capability(t->dev, PCI_CAP_ID_MSI, 0));
    g_assert(qpci_config_readl(t->dev,
                               qpci_find_capability(t->dev, PCI_CAP_ID_EXP, 0) +
                                   PCI_EXP_DEVCAP) &
             PCI_EXP_DEVCAP_FLR);

    g_assert_cmphex(rd(t, TNPU_REG_ID), ==, TNPU_ID_VALUE);
    g_assert_cmphex(rd(t, TNPU_REG_VERSION), ==, 0x01000200); /* ISA 2 */
    g_assert_cmphex(rd(t, TNPU_REG_CAP_GEOM), ==, 0x04100404);
    g_assert_cmphex(rd(t, TNPU_REG_CAP_SRAM), ==, 1024 * 1024);
    g_assert_cmphex(rd(t, TNPU_REG_CAP_CLUSTER), ==, 0x04404020);
    g_assert_cmphex(rd(t, TNPU_REG_CAP_ACC), ==, 1024);
    /*
     * Fixed by the model (the spec grows): check what the glue and these tests
     * rely on.
     */
    g_assert_cmphex(rd(t, TNPU_REG_CAP_DTYPES) & 3, ==,
                    TNPU_CAP_DTYPE_INT8 | TNPU_CAP_DTYPE_FP32);
    g_assert_cmphex(rd(t, TNPU_REG_CAP_QUEUES), ==, 0x10050c04);
    g_assert_cmphex(rd(t, TNPU_REG_CAP_MMU), ==, 0x0c043430);
    g_assert_cmphex(rd(t, TNPU_REG_CAP_MMU_CTX), ==, 4096);
    g_assert_cmphex(rd(t, TNPU_REG_CAP_CLOCK), ==, 1000);
    g_assert_cmphex(rd(t, TNPU_REG_CAP_FEATURES) & 0x7f, ==, 0x7f);
    /* ISA 2 vector units and SFU residual (#16) */
    g_assert_cmphex(rd(t, TNPU_REG_CAP_FEATURES) & 0x18000, ==, 0x18000);
    g_assert_cmphex(rd(t, TNPU_REG_CAP_CMDBUF), ==, 0x01000000);
    /* Reset values. */
    g_assert_cmphex(rd(t, TNPU_REG_CTRL), ==, 0);
    g_assert_cmphex(rd(t, TNPU_REG_IRQ_MASK), ==, 0xffffffff);
    /*
     * Access rules: other sizes read 0, an 8-byte read of a 32-bit register
     * reads 0.
     */
    g_assert_cmphex(qpci_io_readb(t->dev, t->bar, TNPU_REG_ID), ==, 0);
    g_assert_cmphex(qpci_io_readw(t->dev, t->bar, TNPU_REG_ID), ==, 0);
    g_assert_cmphex(rd64(t, TNPU_REG_ID), ==, 0);
    wr(t, TNPU_REG_SCRATCH, 0x12345678);
    g_assert_cmphex(rd(t, TNPU_REG_SCRATCH), ==, 0x12345678);
    wr(t, TNPU_REG_ID, 0);
    g_assert_cmphex(rd(t, TNPU_REG_ID), ==, TNPU_ID_VALUE);
    tnpu_stop(t);
}

static void test_properties(void)
{
    Tnpu *t =
        tnpu_start("rows=2,cols=3,pes=8,sram=131072,queues=2,clock_mhz=500");

    g_assert_cmphex(rd(t, TNPU_REG_CAP_GEOM), ==, 0x04080302);
    g_assert_cmphex(rd(t, TNPU_REG_CAP_SRAM), ==, 131072);
    g_assert_cmphex(rd(t, TNPU_REG_CAP_QUEUES), ==, 0x10030c02);
    g_assert_cmphex(rd(t, TNPU_REG_CAP_CLOCK), ==, 500);
    /* Blocks of absent queues read 0. */
    g_assert_cmphex(rd(t, TNPU_REG_Q(2, TNPU_Q_RING_SIZE)), ==, 0);
    qpci_msix_enable(t->dev);
    g_assert_cmpuint(qpci_msix_table_size(t->dev), ==, 3);
    tnpu_stop(t);
}

/* chain #9: the islands= property reaches the island capability registers. */
static void test_islands_property(void)
{
    Tnpu *t = tnpu_start("rows=4,sram=131072,islands=1:i8/3:i8+f32:2");

    g_assert_cmphex(rd(t, TNPU_REG_ISLANDS) & 0xff, ==, 2);
    g_assert_cmphex(rd(t, TNPU_REG_RING_MEM), ==, TNPU_RING_MEM_BYTES);
    g_assert_cmphex(rd(t, TNPU_REG_ISL(0, TNPU_ISL_ROWS)), ==, 0x010100);
    g_assert_cmphex(rd(t, TNPU_REG_ISL(1, TNPU_ISL_ROWS)), ==, 0x020301);
    g_assert_cmphex(rd(t, TNPU_REG_ISL(0, TNPU_ISL_DTYPES)), ==, 0x1);
    g_assert_cmphex(rd(t, TNPU_REG_ISL(1, TNPU_ISL_DTYPES)), ==, 0x3);
    g_assert_cmphex(rd(t, TNPU_REG_ISL(1, TNPU_ISL_SRAM_BASE)), ==, 131072);
    g_assert_cmphex(rd(t, TNPU_REG_ISL(1, TNPU_ISL_SRAM_SIZE)), ==,
                    3 * 131072);
    g_assert_cmphex(rd(t, TNPU_REG_ISL(2, TNPU_ISL_ROWS)), ==, 0);
    g_assert_cmphex(rd(t, TNPU_REG_CAP_FEATURES) & 0x1c00, ==, 0x1c00);
    tnpu_stop(t);

    /* Without the property: one island of every row. */
    t = tnpu_start(NULL);
    g_assert_cmphex(rd(t, TNPU_REG_ISLANDS) & 0xff, ==, 1);
    g_assert_cmphex(rd(t, TNPU_REG_ISL(0, TNPU_ISL_ROWS)), ==,
                    (TNPU_DEF_ROWS << 8) | (1 << 16));
    tnpu_stop(t);
}

static void test_bad_properties(void)
{
    static const struct {
        const char *props, *msg;
    } cases[] = {
        { "rows=99", "rows must be 1..16" },
        { "cols=0", "cols must be 1..16" },
        { "pes=65", "pes must be 1..64" },
        { "sram=100000", "sram must be a power of two" },
        { "queues=17", "queues must be 1..16" },
        { "clock_mhz=0", "clock_mhz must be 1..10000" },
        /* 4 queues x 16 rows x 64 MiB: refused before anything is allocated */
        { "rows=16,sram=67108864", "exceeds 4 GiB of host memory" },
        /* chain #9 */
        { "islands=3:i8", "rows must add up to rows" },
        { "islands=2:x/2", "DTYPES is i8, f32, bf16" },
        { "islands=2:i8:9/2", "CLKDIV must be 1..8" },
    };
    const char *qemu = g_getenv("QTEST_QEMU_BINARY");

    g_assert(qemu);
    for (unsigned i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *dev = g_strdup_printf("tnpu,%s", cases[i].props);
        /* timeout(1): a device that wrongly realizes must not hang the test. */
        const char *argv[] = { "timeout", "20",          qemu,    "-M",
                               "q35",     "-accel",      "qtest", "-display",
                               "none",    "-nodefaults", "-S",    "-device",
                               dev,       NULL };
        g_autofree char *out = NULL, *err = NULL;
        g_autoptr(GError) gerr = NULL;
        int status;

        g_assert(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH,
                              NULL, NULL, &out, &err, &status, &gerr));
        g_assert_cmpint(status, !=, 0);
        g_assert(strstr(err, cases[i].msg));
    }
}

static void test_gemm_int8(void)
{
    Tnpu *t = tnpu_start(NULL);
    g_autofree int32_t *ref = NULL;
    uint64_t cmd_va, cpa;
    uint32_t cmd_len, m = 8, n = 32, k = 48;

    tnpu_setup(t);
    cpa = gemm_prepare(t, m, n, k, 1, &cmd_va, &cmd_len, &ref);
    submit(t, 0, cmd_va, cmd_len, 0x1111);
    g_assert(wait_for(t, TNPU_MSIX_VEC_QUEUE(0)));
    g_assert_cmphex(qtest_readq(t->qts, t->fence[0]), ==, 0x1111);
    check_gemm(t, cpa, ref, m, n);
    g_assert_cmphex(rd64(t, TNPU_REG_Q(0, TNPU_Q_DONE_SEQNO_LO)), ==, 0x1111);
    g_assert_cmpuint(rd(t, TNPU_REG_Q(0, TNPU_Q_HEAD)), ==, 1);
    g_assert_cmpuint(rd(t, TNPU_REG_Q(0, TNPU_Q_JOBS_DONE)), ==, 1);
    g_assert_cmphex(rd(t, TNPU_REG_Q(0, TNPU_Q_STATUS)), ==,
                    TNPU_Q_STATUS_ENABLED);
    g_assert_cmphex(rd(t, TNPU_REG_IRQ_STATUS), ==, TNPU_IRQ_QUEUE(0));
    g_assert(!qpci_msix_pending(t->dev, TNPU_MSIX_VEC_ERROR));
    g_assert_cmpuint(rd64(t, TNPU_REG_Q(0, TNPU_Q_PERF(TNPU_CNT_MACS_DENSE))),
                     ==, (uint64_t)m * n * k);
    g_assert_cmpuint(rd64(t, TNPU_REG_PERF(TNPU_CNT_TOTAL_CYCLES)), >, 0);
    wr(t, TNPU_REG_IRQ_ACK, TNPU_IRQ_QUEUE(0));
    g_assert_cmphex(rd(t, TNPU_REG_IRQ_STATUS), ==, 0);
    tnpu_stop(t);
}

/*
 * Ring entry COUNTERS (CAP_FEATURES bit 18): each job of a queue gets its own
 * 256-byte counter record, written before the fence, while Q_PERF only holds
 * the last job's; a record the device cannot write is a COUNTERS_WRITE error
 * and the fence stays unwritten.
 */
static void submit_counters(Tnpu *t, unsigned q, uint64_t cmd_va,
                            uint32_t cmd_len, uint64_t seqno, uint64_t rec)
{
    struct tnpu_ring_entry e = {
        .ctx = 0,
        .flags = TNPU_RING_F_IRQ | TNPU_RING_F_COUNTERS,
        .cmd_len = cmd_len,
        .cmd_va = cmd_va,
        .seqno = seqno,
        .counters_addr = rec,
    };

    qtest_memwrite(t->qts, t->ring[q] + 32 * t->tail[q], &e, sizeof(e));
    t->tail[q] = (t->tail[q] + 1) % RING_SIZE;
    wr(t, TNPU_REG_Q(q, TNPU_Q_TAIL), t->tail[q]);
    wr(t, TNPU_REG_Q(q, TNPU_Q_DOORBELL), 1);
}

static void test_counter_records(void)
{
    Tnpu *t = tnpu_start(NULL);
    Cmds cb = { g_byte_array_new() };
    g_autofree int32_t *ref = NULL;
    uint64_t gemm_va, nop_va, cpa, rec;
    uint32_t gemm_len, nop_len, m = 8, n = 32, k = 48;
    uint64_t r0[TNPU_CNT_SLOTS], r1[TNPU_CNT_SLOTS];

    tnpu_setup(t);
    g_assert_cmphex(rd(t, TNPU_REG_CAP_FEATURES) & TNPU_FEAT_COUNTERS, ==,
                    TNPU_FEAT_COUNTERS);
    cpa = gemm_prepare(t, m, n, k, 1, &gemm_va, &gemm_len, &ref);
    cmd_raw(&cb, TNPU_CMD_NOP, 8);
    cmd_raw(&cb, TNPU_CMD_NOP, 8);
    nop_va = cmds_upload(t, &cb, &nop_len);
    rec = alloc_zeroed(t, 4096);
    submit_counters(t, 0, gemm_va, gemm_len, 1, rec);
    submit_counters(t, 0, nop_va, nop_len, 2, rec + 256);
    wait_idle(t, 0);
    g_assert_cmphex(qtest_readq(t->qts, t->fence[0]), ==, 2);
    check_gemm(t, cpa, ref, m, n);
    qtest_memread(t->qts, rec, r0, sizeof(r0));
    qtest_memread(t->qts, rec + 256, r1, sizeof(r1));
    /* the first job's counters survive the second job (x86 guests: LE) */
    g_assert_cmpuint(r0[TNPU_CNT_MACS_DENSE], ==, (uint64_t)m * n * k);
    g_assert_cmpuint(r0[TNPU_CNT_TOTAL_CYCLES], >, 0);
    g_assert_cmpuint(r1[TNPU_CNT_COMMANDS], ==, 2);
    g_assert_cmpuint(r1[TNPU_CNT_MACS_DENSE], ==, 0);
    for (unsigned i = 0; i < TNPU_CNT_SLOTS; i++) {
        g_assert_cmpuint(r1[i], ==, rd64(t, TNPU_REG_Q(0, TNPU_Q_PERF(i))));
    }

    /* a record in unassigned space: job error, no fence */
    submit_counters(t, 1, nop_va, nop_len, 9, 0x0000100000000000ull);
    wait_idle(t, 1);
    g_assert_cmpuint(rd(t, TNPU_REG_Q(1, TNPU_Q_ERR_CODE)), ==,
                     TNPU_ERR_COUNTERS_WRITE);
    g_assert_cmphex(rd64(t, TNPU_REG_Q(1, TNPU_Q_ERR_ADDR_LO)), ==,
                    0x0000100000000000ull);
    g_assert_cmphex(qtest_readq(t->qts, t->fence[1]), ==, 0);
    g_assert(wait_for(t, TNPU_MSIX_VEC_ERROR));
    tnpu_stop(t);
}

/*
 * ISA 2 vector units (#16) through the device: a VEC job completes and counts
 * its element-operations; a malformed VEC stops its job with VEC_DESC.
 */
static void test_vec_units(void)
{
    Tnpu *t = tnpu_start(NULL);
    Cmds cb = { g_byte_array_new() };
    struct tnpu_cmd_vec v;
    uint64_t cmd_va;
    uint32_t cmd_len;
    float one = 1.0f;

    tnpu_setup(t);
    memset(&v, 0, sizeof(v));
    v.hdr = hdr(TNPU_CMD_VEC, sizeof(v));
    v.op = TNPU_VEC_MAP;
    v.func = TNPU_VEC_SIGMOID;
    v.in_dtype = v.out_dtype = TNPU_DTYPE_FP32;
    v.row = 0xFF;
    v.n[0] = v.n[1] = v.n[2] = 1;
    v.n[3] = 256;
    v.a_st[3] = v.d_st[3] = 4;
    v.d_off = 4096;
    memcpy(&v.scale, &one, 4);
    g_byte_array_append(cb.b, (const guint8 *)&v, sizeof(v));
    cmd_va = cmds_upload(t, &cb, &cmd_len);
    submit(t, 0, cmd_va, cmd_len, 0x21);
    g_assert(wait_for(t, TNPU_MSIX_VEC_QUEUE(0)));
    g_assert_cmphex(qtest_readq(t->qts, t->fence[0]), ==, 0x21);
    g_assert_cmpuint(rd64(t, TNPU_REG_Q(0, TNPU_Q_PERF(TNPU_CNT_VEC_OPS))), ==,
                     256ull * 4);
    g_assert_cmpuint(rd64(t, TNPU_REG_Q(0, TNPU_Q_PERF(TNPU_CNT_VEC_CYCLES))),
                     ==, 4ull * (TNPU_CYC_VEC + 256 * TNPU_VEC_FN_COST / 64));
    wr(t, TNPU_REG_IRQ_ACK, TNPU_IRQ_QUEUE(0));

    cb.b = g_byte_array_new();
    v.op = 7;
    g_byte_array_append(cb.b, (const guint8 *)&v, sizeof(v));
    cmd_va = cmds_upload(t, &cb, &cmd_len);
    submit(t, 0, cmd_va, cmd_len, 0x22);
    g_assert(wait_for(t, TNPU_MSIX_VEC_ERROR));
    g_assert_cmpuint(rd(t, TNPU_REG_Q(0, TNPU_Q_ERR_CODE)), ==,
                     TNPU_ERR_VEC_DESC);
    g_assert_cmphex(rd(t, TNPU_REG_Q(0, TNPU_Q_ERR_INFO)), ==, 8);
    tnpu_stop(t);
}

/*
 * Preemption (CAP_FEATURES bit 24, queues.md "Preemption"): one job of two
 * steps, a long store and a GEMM, with a preemption point between them.
 */
typedef struct PreemptJob {
    uint64_t cmd_va, cpa, save_pa;
    uint32_t cmd_len, point;
    int32_t *ref;
} PreemptJob;

#define PM 8
#define PN 32
#define PK 48

static void preempt_job(Tnpu *t, PreemptJob *j)
{
    Cmds cb = { g_byte_array_new() };
    Gemm g = { .m = PM, .n = PN, .k = PK, .tm = 1, .tn = 1, .kt = 16 };
    g_autofree int8_t *a = g_new(int8_t, PM * PK);
    g_autofree int8_t *b = g_new(int8_t, PK * PN);
    uint64_t apa, bpa, page_pa, page_va = buf(t, 4096, &page_pa);
    struct tnpu_cmd_dma d = {
        .hdr = hdr(TNPU_CMD_DMA_D2H, sizeof(d)),
        .host_va = page_va,
        .width = 1,
        .height = 1u << 22, /* every pitch 0: ~0.1-1 s of host time */
        .depth = 1,
    };

    for (uint32_t i = 0; i < PM * PK; i++) {
        a[i] = (int8_t)(i * 7 + 3);
    }
    for (uint32_t i = 0; i < PK * PN; i++) {
        b[i] = (int8_t)(i * 13 + 1);
    }
    j->ref = g_new0(int32_t, PM * PN);
    for (uint32_t i = 0; i < PM; i++) {
        for (uint32_t n = 0; n < PN; n++) {
            for (uint32_t k = 0; k < PK; k++) {
                j->ref[i * PN + n] += (int32_t)a[i * PK + k] * b[k * PN + n];
            }
        }
    }
    g.a = buf(t, PM * PK, &apa);
    g.b = buf(t, PK * PN, &bpa);
    g.c = buf(t, PM * PN * 4, &j->cpa);
    qtest_memwrite(t->qts, apa, a, sizeof(*a) * PM * PK);
    qtest_memwrite(t->qts, bpa, b, sizeof(*b) * PK * PN);
    g_byte_array_append(cb.b, (const guint8 *)&d, sizeof(d));
    j->point = cb.b->len;
    gemm_build(t, &g, &cb);
    cb.b->data[j->point + 1] |= TNPU_CMD_F_PREEMPT;
    j->cmd_va = cmds_upload(t, &cb, &j->cmd_len);
    j->save_pa = alloc_zeroed(t, RING_SIZE * TNPU_SAVE_BYTES);
    wr64(t, TNPU_REG_Q(0, TNPU_Q_SAVE_BASE_LO), j->save_pa);
}

static void submit_flags(Tnpu *t, unsigned q, const PreemptJob *j,
                         uint64_t seqno, uint16_t flags)
{
    struct tnpu_ring_entry e = {
        .ctx = 0,
        .flags = TNPU_RING_F_IRQ | flags,
        .cmd_len = j->cmd_len,
        .cmd_va = j->cmd_va,
        .seqno = seqno,
    };

    qtest_memwrite(t->qts, t->ring[q] + 32 * t->tail[q], &e, sizeof(e));
    t->tail[q] = (t->tail[q] + 1) % RING_SIZE;
    wr(t, TNPU_REG_Q(q, TNPU_Q_TAIL), t->tail[q]);
    wr(t, TNPU_REG_Q(q, TNPU_Q_DOORBELL), 1);
}

/* Runs the job PREEMPTIBLE, asked to stop while it runs: it stops at the point */
static void preempt_run(Tnpu *t, PreemptJob *j, uint64_t seqno)
{
    uint32_t head = t->tail[0], zero[PM * PN] = { 0 }, c[PM * PN];
    uint64_t slot = j->save_pa + TNPU_SAVE_BYTES * head;

    qtest_memwrite(t->qts, j->cpa, zero, sizeof(zero));
    wr(t, TNPU_REG_IRQ_ACK, TNPU_IRQ_QUEUE(0));
    submit_flags(t, 0, j, seqno, TNPU_RING_F_PREEMPTIBLE);
    g_assert(rd(t, TNPU_REG_Q(0, TNPU_Q_STATUS)) & TNPU_Q_STATUS_BUSY);
    wr(t, TNPU_REG_Q(0, TNPU_Q_CTRL), TNPU_Q_CTRL_ENABLE | TNPU_Q_CTRL_PREEMPT);
    g_assert(rd(t, TNPU_REG_Q(0, TNPU_Q_STATUS)) & TNPU_Q_STATUS_PREEMPT_REQ);
    wait_idle(t, 0);
    g_assert_cmpuint(rd(t, TNPU_REG_Q(0, TNPU_Q_STATUS)) &
                     (TNPU_Q_STATUS_ERROR | TNPU_Q_STATUS_PREEMPT_REQ), ==, 0);
    /* the completion interrupt of the entry, as for a finished job */
    g_assert(rd(t, TNPU_REG_IRQ_STATUS) & TNPU_IRQ_QUEUE(0));
    g_assert_cmpuint(qtest_readl(t->qts, slot + TNPU_SAVE_OFF_STATE), ==,
                     TNPU_SAVE_PREEMPTED);
    g_assert_cmpuint(qtest_readq(t->qts, slot + TNPU_SAVE_OFF_SEQNO), ==,
                     seqno);
    g_assert_cmpuint(qtest_readl(t->qts, slot + TNPU_SAVE_OFF_RESUME), ==,
                     j->point);
    qtest_memread(t->qts, j->cpa, c, sizeof(c));
    g_assert(!memcmp(c, zero, sizeof(c))); /* the GEMM has not run */
}

/* Copies the record of the last entry into the next one's slot. */
static void copy_record(Tnpu *t, PreemptJob *j)
{
    uint8_t rec[TNPU_SAVE_BYTES];
    uint32_t from = (t->tail[0] + RING_SIZE - 1) % RING_SIZE;

    qtest_memread(t->qts, j->save_pa + TNPU_SAVE_BYTES * from, rec,
                  sizeof(rec));
    qtest_memwrite(t->qts, j->save_pa + TNPU_SAVE_BYTES * t->tail[0], rec,
                   sizeof(rec));
}

/*
 * A job preempted at its point and resumed from its save record gives the
 * memory results and every counter of the same job run without preemption.
 */
static void test_preempt_resume(void)
{
    Tnpu *t = tnpu_start(NULL);
    PreemptJob j;
    uint64_t ref_perf[TNPU_CNT_NUM], fence;

    tnpu_setup(t);
    g_assert_cmphex(rd(t, TNPU_REG_CAP_FEATURES) & TNPU_FEAT_PREEMPT, ==,
                    TNPU_FEAT_PREEMPT);
    preempt_job(t, &j);
    submit_flags(t, 0, &j, 1, 0);
    wait_idle(t, 0);
    g_assert_cmphex(qtest_readq(t->qts, t->fence[0]), ==, 1);
    check_gemm(t, j.cpa, j.ref, PM, PN);
    for (unsigned i = 0; i < TNPU_CNT_NUM; i++) {
        ref_perf[i] = rd64(t, TNPU_REG_Q(0, TNPU_Q_PERF(i)));
    }
    g_assert_cmpuint(ref_perf[TNPU_CNT_MACS_DENSE], ==, PM * PN * PK);

    preempt_run(t, &j, 2);
    fence = qtest_readq(t->qts, t->fence[0]);
    g_assert_cmphex(fence, ==, 1); /* no fence for a preempted job */
    copy_record(t, &j);
    submit_flags(t, 0, &j, 3, TNPU_RING_F_PREEMPTIBLE | TNPU_RING_F_RESUME);
    wait_idle(t, 0);
    g_assert_cmpuint(rd(t, TNPU_REG_Q(0, TNPU_Q_ERR_CODE)), ==, 0);
    g_assert_cmphex(qtest_readq(t->qts, t->fence[0]), ==, 3);
    check_gemm(t, j.cpa, j.ref, PM, PN);
    for (unsigned i = 0; i < TNPU_CNT_NUM; i++) {
        uint64_t v = rd64(t, TNPU_REG_Q(0, TNPU_Q_PERF(i)));

        if (v != ref_perf[i]) {
            g_test_message("counter %u: %" PRIu64 ", unpreempted %" PRIu64, i,
                           v, ref_perf[i]);
        }
        g_assert_cmpuint(v, ==, ref_perf[i]);
    }
    g_free(j.ref);
    tnpu_stop(t);
}

/*
 * A RESUME whose record does not belong to the job (another cmd_len), or
 * whose resume point is not a PREEMPT command, fails the job with RESUME and
 * the field's offset; after SKIP the queue runs the next job correctly.
 */
static void test_preempt_malformed(void)
{
    Tnpu *t = tnpu_start(NULL);
    static const struct {
        uint32_t off, val, info;
    } cases[] = {
        { TNPU_SAVE_OFF_CMD_LEN, 8, TNPU_SAVE_OFF_CMD_LEN },
        { TNPU_SAVE_OFF_RESUME, 0, TNPU_SAVE_OFF_RESUME },
        { TNPU_SAVE_OFF_MAGIC, 0, TNPU_SAVE_OFF_MAGIC },
    };
    PreemptJob j;
    uint64_t seq = 1;

    tnpu_setup(t);
    preempt_job(t, &j);
    for (unsigned i = 0; i < G_N_ELEMENTS(cases); i++) {
        uint64_t slot;

        preempt_run(t, &j, seq++);
        copy_record(t, &j);
        slot = j.save_pa + TNPU_SAVE_BYTES * t->tail[0];
        qtest_writel(t->qts, slot + cases[i].off, cases[i].val);
        submit_flags(t, 0, &j, seq++, TNPU_RING_F_RESUME);
        wait_idle(t, 0);
        g_assert_cmpuint(rd(t, TNPU_REG_Q(0, TNPU_Q_ERR_CODE)), ==,
                         TNPU_ERR_RESUME);
        g_assert_cmpuint(rd(t, TNPU_REG_Q(0, TNPU_Q_ERR_INFO)), ==,
                         cases[i].info);
        g_assert_cmphex(rd64(t, TNPU_REG_Q(0, TNPU_Q_ERR_ADDR_LO)), ==, slot);
        g_assert_cmphex(qtest_readq(t->qts, t->fence[0]), ==, 0);
        g_assert(rd(t, TNPU_REG_IRQ_STATUS) & TNPU_IRQ_ERROR);
        wr(t, TNPU_REG_IRQ_ACK, TNPU_IRQ_ALL);
        wr(t, TNPU_REG_Q(0, TNPU_Q_CTRL),
           TNPU_Q_CTRL_ENABLE | TNPU_Q_CTRL_SKIP);
    }
    /* the device keeps working: the whole job, unpreempted */
    submit_flags(t, 0, &j, 100, 0);
    wait_idle(t, 0);
    g_assert_cmpuint(rd(t, TNPU_REG_Q(0, TNPU_Q_STATUS)) & TNPU_Q_STATUS_ERROR,
                     ==, 0);
    g_assert_cmphex(qtest_readq(t->qts, t->fence[0]), ==, 100);
    check_gemm(t, j.cpa, j.ref, PM, PN);
    g_free(j.ref);
    tnpu_stop(t);
}

/*
 * DMA_DEQ, the weight-decompressing load (CAP_FEATURES bit 23, #29), through
 * the device's DMA: int4 codes 0..15 of two 32-code columns with scale 0.5 per
 * block of 16 and the default zero point 8 land as fp32 (q - 8) * 0.5; a block
 * that is not a power of two stops the job with DEQ_DESC naming the field.
 */
static void test_dma_deq(void)
{
    Tnpu *t = tnpu_start(NULL);
    Cmds cb = { g_byte_array_new() };
    struct tnpu_cmd_dma_deq d;
    uint64_t src_pa, scl_pa, out_pa, src, scl, out, cmd_va;
    uint32_t cmd_len;
    uint8_t codes[32];
    float scales[4] = { 0.5f, 0.5f, 0.5f, 0.5f }, got[64];

    tnpu_setup(t);
    g_assert_cmphex(rd(t, TNPU_REG_CAP_FEATURES) & TNPU_FEAT_WDECOMP, ==,
                    TNPU_FEAT_WDECOMP);
    for (unsigned i = 0; i < 32; i++) {
        /* code 2i (low nibble) then 2i + 1, modulo 16 */
        codes[i] = (uint8_t)(((2 * i) & 15) | (((2 * i + 1) & 15) << 4));
    }
    src = buf(t, 4096, &src_pa);
    scl = buf(t, 4096, &scl_pa);
    out = buf(t, 4096, &out_pa);
    qtest_memwrite(t->qts, src_pa, codes, sizeof(codes));
    qtest_memwrite(t->qts, scl_pa, scales, sizeof(scales));
    memset(&d, 0, sizeof(d));
    d.hdr = hdr(TNPU_CMD_DMA_DEQ, sizeof(d));
    d.src_va = src;
    d.scale_va = scl;
    d.src_pitch = 16;
    d.scale_pitch = 8;
    d.kt = 32;
    d.nt = 2;
    d.block = 16;
    d.sram_pitch = 128;
    d.fmt = TNPU_DEQ_FMT_U4;
    d.out_dtype = TNPU_DTYPE_FP32;
    g_byte_array_append(cb.b, (const guint8 *)&d, sizeof(d));
    cmd_dma(&cb, false, out, 256, 0, 0, 0, 256, 256, 1);
    cmd_va = cmds_upload(t, &cb, &cmd_len);
    submit(t, 0, cmd_va, cmd_len, 0x31);
    g_assert(wait_for(t, TNPU_MSIX_VEC_QUEUE(0)));
    g_assert_cmphex(qtest_readq(t->qts, t->fence[0]), ==, 0x31);
    qtest_memread(t->qts, out_pa, got, sizeof(got));
    for (unsigned i = 0; i < 64; i++) {
        g_assert_cmpfloat(got[i], ==, ((float)(i % 16) - 8.0f) * 0.5f);
    }
    /* 32 code bytes + 2 x 2 fp32 scales */
    g_assert_cmpuint(rd64(t, TNPU_REG_Q(0, TNPU_Q_PERF(TNPU_CNT_BYTES_H2D))),
                     ==, 48);
    wr(t, TNPU_REG_IRQ_ACK, TNPU_IRQ_QUEUE(0));

    cb.b = g_byte_array_new();
    d.block = 48;
    g_byte_array_append(cb.b, (const guint8 *)&d, sizeof(d));
    cmd_va = cmds_upload(t, &cb, &cmd_len);
    submit(t, 0, cmd_va, cmd_len, 0x32);
    g_assert(wait_for(t, TNPU_MSIX_VEC_ERROR));
    g_assert_cmpuint(rd(t, TNPU_REG_Q(0, TNPU_Q_ERR_CODE)), ==,
                     TNPU_ERR_DEQ_DESC);
    g_assert_cmphex(rd(t, TNPU_REG_Q(0, TNPU_Q_ERR_INFO)), ==, 56);
    tnpu_stop(t);
}

static void test_unknown_command(void)
{
    Tnpu *t = tnpu_start(NULL);
    Cmds cb = { g_byte_array_new() };
    uint64_t cmd_va;
    uint32_t cmd_len;

    tnpu_setup(t);
    cmd_raw(&cb, TNPU_CMD_NOP, 8);
    cmd_raw(&cb, 0x7f, 16);
    cmd_va = cmds_upload(t, &cb, &cmd_len);
    submit(t, 0, cmd_va, cmd_len, 7);
    g_assert(wait_for(t, TNPU_MSIX_VEC_ERROR));
    g_assert_cmphex(rd(t, TNPU_REG_Q(0, TNPU_Q_STATUS)), ==,
                    TNPU_Q_STATUS_ENABLED | TNPU_Q_STATUS_ERROR);
    g_assert_cmpuint(rd(t, TNPU_REG_ERR_CODE), ==, TNPU_ERR_CMD_OPCODE);
    g_assert_cmphex(rd(t, TNPU_REG_ERR_INFO), ==, 0x7f);
    g_assert_cmpuint(rd(t, TNPU_REG_ERR_CMD_OFFSET), ==, 8);
    g_assert_cmpuint(rd64(t, TNPU_REG_ERR_SEQNO_LO), ==, 7);
    g_assert_cmpuint(rd(t, TNPU_REG_Q(0, TNPU_Q_ERR_CODE)), ==,
                     TNPU_ERR_CMD_OPCODE);
    g_assert_cmphex(rd(t, TNPU_REG_IRQ_STATUS), ==, TNPU_IRQ_ERROR);
    g_assert_cmphex(rd(t, TNPU_REG_STATUS), ==,
                    TNPU_STATUS_ENABLED | TNPU_STATUS_ERROR);
    g_assert_cmpuint(rd(t, TNPU_REG_Q(0, TNPU_Q_HEAD)), ==, 0);
    g_assert_cmphex(qtest_readq(t->qts, t->fence[0]), ==, 0);
    g_assert(!qpci_msix_pending(t->dev, TNPU_MSIX_VEC_QUEUE(0)));

    /* SKIP drops the failed entry; the queue resumes. */
    wr(t, TNPU_REG_Q(0, TNPU_Q_CTRL), TNPU_Q_CTRL_ENABLE | TNPU_Q_CTRL_SKIP);
    g_assert_cmpuint(rd(t, TNPU_REG_Q(0, TNPU_Q_HEAD)), ==, 1);
    g_assert_cmphex(rd(t, TNPU_REG_Q(0, TNPU_Q_STATUS)), ==,
                    TNPU_Q_STATUS_ENABLED);
    tnpu_stop(t);
}

/*
 * Job faults are logged as guest errors (-d guest_errors), and the worker
 * threads of two devices have distinct names (tnpu<N>-q<q>).
 */
static void test_guest_errors_and_thread_names(void)
{
    g_autofree char *dir = g_dir_make_tmp("tnpu-log-XXXXXX", NULL);
    g_autofree char *log = g_build_filename(dir, "qemu.log", NULL);
    g_autofree char *props = g_strdup_printf(
        "msi=on -d guest_errors -D %s -name debug-threads=on "
        "-device tnpu,addr=05.0", log);
    g_autofree char *task_dir = NULL, *text = NULL;
    g_autoptr(GHashTable) names = g_hash_table_new_full(g_str_hash,
                                                        g_str_equal, g_free,
                                                        NULL);
    Tnpu *t = tnpu_start(props);
    Cmds cb = { g_byte_array_new() };
    uint64_t cmd_va;
    uint32_t cmd_len, queues = t->queues;
    unsigned threads = 0;
    const char *ent;
    GDir *d;

    tnpu_setup(t);
    cmd_raw(&cb, 0x7f, 16);
    cmd_va = cmds_upload(t, &cb, &cmd_len);
    submit(t, 0, cmd_va, cmd_len, 9);
    g_assert(wait_for(t, TNPU_MSIX_VEC_ERROR));

    task_dir = g_strdup_printf("/proc/%d/task", (int)qtest_pid(t->qts));
    d = g_dir_open(task_dir, 0, NULL);
    g_assert(d);
    while ((ent = g_dir_read_name(d))) {
        g_autofree char *comm = g_build_filename(task_dir, ent, "comm", NULL);
        char *name = NULL;

        if (g_file_get_contents(comm, &name, NULL, NULL) &&
            g_str_has_prefix(name, "tnpu")) {
            g_strchomp(name);
            threads++;
            g_hash_table_add(names, name);
        } else {
            g_free(name);
        }
    }
    g_dir_close(d);
    g_assert_cmpuint(threads, ==, 2 * queues);
    g_assert_cmpuint(g_hash_table_size(names), ==, 2 * queues);
    tnpu_stop(t);

    g_assert(g_file_get_contents(log, &text, NULL, NULL));
    g_assert(strstr(text, "seqno 9 ctx 0: job fault CMD_OPCODE"));
    unlink(log);
    rmdir(dir);
}

static void test_mmu_fault(void)
{
    Tnpu *t = tnpu_start(NULL);
    Cmds cb = { g_byte_array_new() };
    uint64_t cmd_va;
    uint32_t cmd_len;

    tnpu_setup(t);
    cmd_dma(&cb, true, VA_UNMAPPED + 0x123, 64, 0, 0, 0, 64, 64, 1);
    cmd_va = cmds_upload(t, &cb, &cmd_len);
    submit(t, 0, cmd_va, cmd_len, 9);
    g_assert(wait_for(t, TNPU_MSIX_VEC_ERROR));
    g_assert_cmpuint(rd(t, TNPU_REG_ERR_CODE), ==, TNPU_ERR_MMU_NOT_PRESENT);
    g_assert_cmphex(rd64(t, TNPU_REG_ERR_ADDR_LO), ==, VA_UNMAPPED + 0x123);
    g_assert_cmphex(rd(t, TNPU_REG_ERR_ADDR_HI), ==,
                    (VA_UNMAPPED + 0x123) >> 32);
    g_assert_cmphex(rd64(t, TNPU_REG_Q(0, TNPU_Q_ERR_ADDR_LO)), ==,
                    VA_UNMAPPED + 0x123);
    /* Level 4 walk, load engine, read. */
    g_assert_cmpuint(TNPU_ERRINFO_LEVEL(rd(t, TNPU_REG_ERR_INFO)), ==, 4);
    g_assert_cmpuint(TNPU_ERRINFO_ENGINE(rd(t, TNPU_REG_ERR_INFO)), ==,
                     TNPU_ENGINE_LOAD + 1);
    g_assert_cmphex(rd(t, TNPU_REG_IRQ_STATUS), ==,
                    TNPU_IRQ_ERROR | TNPU_IRQ_MMU_FAULT);
    g_assert_cmpuint(rd(t, TNPU_REG_MMU_FAULTS), ==, 1);
    g_assert_cmphex(qtest_readq(t->qts, t->fence[0]), ==, 0);
    tnpu_stop(t);
}

/*
 * Bus errors: a fence at an address with nothing behind it (FENCE_WRITE), a job
 * DMA whose page maps to MMIO — our own BAR0 (BUS: jobs only reach RAM), and
 * any access with bus mastering off (RING_FETCH).  Each reports its address and
 * halts only its own queue.
 */
static void test_bus_error(void)
{
    Tnpu *t = tnpu_start(NULL);
    Cmds cb = { g_byte_array_new() };
    const uint64_t nowhere = 0x0000100000000000ull;
    uint64_t cmd_va, mmio_va, pa;
    uint32_t cmd_len;
    uint16_t cmd;

    tnpu_setup(t);
    wr(t, TNPU_REG_Q(0, TNPU_Q_CTRL), 0);
    wr64(t, TNPU_REG_Q(0, TNPU_Q_FENCE_LO), nowhere);
    wr(t, TNPU_REG_Q(0, TNPU_Q_CTRL), TNPU_Q_CTRL_ENABLE);
    cmd_raw(&cb, TNPU_CMD_NOP, 8);
    cmd_va = cmds_upload(t, &cb, &cmd_len);
    submit(t, 0, cmd_va, cmd_len, 1);
    wait_idle(t, 0);
    g_assert_cmpuint(rd(t, TNPU_REG_Q(0, TNPU_Q_ERR_CODE)), ==,
                     TNPU_ERR_FENCE_WRITE);
    g_assert_cmphex(rd64(t, TNPU_REG_Q(0, TNPU_Q_ERR_ADDR_LO)), ==, nowhere);
    g_assert(rd(t, TNPU_REG_Q(0, TNPU_Q_STATUS)) & TNPU_Q_STATUS_ERROR);
    g_assert(wait_for(t, TNPU_MSIX_VEC_ERROR));

    mmio_va = buf(t, 4096, &pa);
    map(t, mmio_va, t->bar.addr, 4096, TNPU_PTE_READ | TNPU_PTE_WRITE);
    cb.b = g_byte_array_new();
    cmd_dma(&cb, true, mmio_va, 64, 0, 0, 0, 64, 64, 1);
    cmd_va = cmds_upload(t, &cb, &cmd_len);
    submit(t, 1, cmd_va, cmd_len, 2);
    wait_idle(t, 1);
    g_assert_cmpuint(rd(t, TNPU_REG_Q(1, TNPU_Q_ERR_CODE)), ==, TNPU_ERR_BUS);
    g_assert_cmphex(rd64(t, TNPU_REG_Q(1, TNPU_Q_ERR_ADDR_LO)), ==, mmio_va);
    g_assert_cmpuint(rd(t, TNPU_REG_Q(1, TNPU_Q_ERR_CMD_OFFSET)), ==, 0);
    g_assert_cmphex(rd(t, TNPU_REG_SCRATCH), ==, 0);

    cmd = qpci_config_readw(t->dev, PCI_COMMAND);
    qpci_config_writew(t->dev, PCI_COMMAND, cmd & ~PCI_COMMAND_MASTER);
    submit(t, 2, VA_BASE, 8, 3);
    wait_idle(t, 2);
    g_assert_cmpuint(rd(t, TNPU_REG_Q(2, TNPU_Q_ERR_CODE)), ==,
                     TNPU_ERR_RING_FETCH);
    g_assert_cmphex(rd64(t, TNPU_REG_Q(2, TNPU_Q_ERR_ADDR_LO)), ==, t->ring[2]);
    g_assert_cmphex(rd(t, TNPU_REG_Q(3, TNPU_Q_STATUS)), ==,
                    TNPU_Q_STATUS_ENABLED);
    tnpu_stop(t);
}

static void check_reset_state(Tnpu *t)
{
    g_assert_cmphex(rd(t, TNPU_REG_CTRL), ==, 0);
    g_assert_cmphex(rd(t, TNPU_REG_STATUS), ==, 0);
    g_assert_cmphex(rd(t, TNPU_REG_SCRATCH), ==, 0);
    g_assert_cmphex(rd(t, TNPU_REG_IRQ_STATUS), ==, 0);
    g_assert_cmphex(rd(t, TNPU_REG_IRQ_MASK), ==, 0xffffffff);
    g_assert_cmphex(rd(t, TNPU_REG_ERR_CODE), ==, 0);
    g_assert_cmphex(rd64(t, TNPU_REG_ERR_ADDR_LO), ==, 0);
    g_assert_cmphex(rd64(t, TNPU_REG_MMU_CTX_BASE_LO), ==, 0);
    g_assert_cmphex(rd(t, TNPU_REG_MMU_CTX_COUNT), ==, 0);
    g_assert_cmphex(rd(t, TNPU_REG_MMU_FAULTS), ==, 0);
    for (unsigned i = 0; i < TNPU_CNT_NUM; i++) {
        g_assert_cmphex(rd64(t, TNPU_REG_PERF(i)), ==, 0);
    }
    for (unsigned q = 0; q < t->queues; q++) {
        g_assert_cmphex(rd64(t, TNPU_REG_Q(q, TNPU_Q_RING_BASE_LO)), ==, 0);
        g_assert_cmphex(rd(t, TNPU_REG_Q(q, TNPU_Q_RING_SIZE)), ==, 0);
        g_assert_cmphex(rd(t, TNPU_REG_Q(q, TNPU_Q_HEAD)), ==, 0);
        g_assert_cmphex(rd(t, TNPU_REG_Q(q, TNPU_Q_TAIL)), ==, 0);
        g_assert_cmphex(rd64(t, TNPU_REG_Q(q, TNPU_Q_FENCE_LO)), ==, 0);
        g_assert_cmphex(rd(t, TNPU_REG_Q(q, TNPU_Q_CTRL)), ==, 0);
        g_assert_cmphex(rd(t, TNPU_REG_Q(q, TNPU_Q_STATUS)), ==, 0);
        g_assert_cmphex(rd64(t, TNPU_REG_Q(q, TNPU_Q_DONE_SEQNO_LO)), ==, 0);
        g_assert_cmphex(rd(t, TNPU_REG_Q(q, TNPU_Q_ERR_CODE)), ==, 0);
        g_assert_cmphex(rd(t, TNPU_REG_Q(q, TNPU_Q_JOBS_DONE)), ==, 0);
        g_assert_cmphex(rd64(t, TNPU_REG_Q(q, TNPU_Q_PERF(0))), ==, 0);
    }
    g_assert_cmphex(rd(t, TNPU_REG_CAP_GEOM), ==, 0x04100404);
}

/*
 * A long job: a FENCE command that writes a marker (so the test knows the job
 * is running on the worker), then many storage-unit fills (each touches half a
 * storage unit of every row).
 */
static uint64_t long_job(Tnpu *t, uint32_t *cmd_len, uint64_t *marker_pa)
{
    Cmds cb = { g_byte_array_new() };
    uint64_t marker_va = buf(t, 8, marker_pa);
    struct tnpu_cmd_fence f = { .hdr = hdr(TNPU_CMD_FENCE, sizeof(f)),
                                .va = marker_va,
                                .value = 1 };

    g_byte_array_append(cb.b, (const guint8 *)&f, sizeof(f));
    for (unsigned i = 0; i < 4000; i++) {
        cmd_fill(&cb, 512 * 1024);
    }
    return cmds_upload(t, &cb, cmd_len);
}

static void wait_marker(Tnpu *t, uint64_t pa)
{
    gint64 end = g_get_monotonic_time() + TIMEOUT_US;

    while (qtest_readq(t->qts, pa) != 1) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(100);
    }
}

/*
 * A hostile job (issue 17): after its marker, a 1-byte fill of SRAM byte 0
 * (0x5a) and a DMA_D2H of width 1, 2^25 - 2^16 rows, every pitch 0, that
 * stores that byte to *page_pa over and over: the longest such store the
 * default array's host-work budget (2^26 units, two per row: the row and its
 * guest page) lets run, seconds of host time. (2^32 - 2^16 rows, the reported
 * command, is now refused before it starts: WATCHDOG, ERR_INFO 1.)
 */
static uint64_t hostile_job(Tnpu *t, uint32_t *cmd_len, uint64_t *marker_pa,
                            uint64_t *page_va, uint64_t *page_pa)
{
    Cmds cb = { g_byte_array_new() };
    uint64_t marker_va = buf(t, 8, marker_pa);
    struct tnpu_cmd_fence f = { .hdr = hdr(TNPU_CMD_FENCE, sizeof(f)),
                                .va = marker_va,
                                .value = 1 };

    *page_va = buf(t, 4096, page_pa);
    g_byte_array_append(cb.b, (const guint8 *)&f, sizeof(f));
    cmd_fill(&cb, 1);
    cmd_dma(&cb, false, *page_va, 0, 0, 0, 0, 0, 1, (1u << 25) - (1u << 16));
    return cmds_upload(t, &cb, cmd_len);
}

/* Waits until the hostile job's store reached the page. */
static void wait_page_written(Tnpu *t, uint64_t page_pa)
{
    gint64 end = g_get_monotonic_time() + TIMEOUT_US;

    while (qtest_readb(t->qts, page_pa) != 0x5a) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(100);
    }
}

/*
 * Submits the hostile job on queue @q (ring seqno @seq) and returns once its
 * store is reaching the page it gives back.
 */
static void hostile_job_streaming(Tnpu *t, unsigned q, uint64_t seq,
                                  uint64_t *page_va, uint64_t *page_pa)
{
    uint64_t cmd_va, marker;
    uint32_t cmd_len;

    cmd_va = hostile_job(t, &cmd_len, &marker, page_va, page_pa);
    submit(t, q, cmd_va, cmd_len, seq);
    wait_marker(t, marker);
    wait_page_written(t, *page_pa);
}

/*
 * Polls STATUS until the bits in @mask are clear (registers.md: reset done,
 * MMU invalidate complete); returns the wait in microseconds.
 */
static gint64 wait_status_clear(Tnpu *t, uint32_t mask)
{
    gint64 start = g_get_monotonic_time();

    while (rd(t, TNPU_REG_STATUS) & mask) {
        g_assert_cmpint(g_get_monotonic_time() - start, <, G_USEC_PER_SEC);
        g_usleep(50);
    }
    return g_get_monotonic_time() - start;
}

/* The page is zeroed and must stay zero: nothing of the job writes any more. */
static void check_page_quiet(Tnpu *t, uint64_t page_pa)
{
    qtest_memset(t->qts, page_pa, 0, 4096);
    g_usleep(200 * 1000);
    g_assert_cmphex(qtest_readb(t->qts, page_pa), ==, 0);
}

/*
 * Bus mastering switched off while a job streams rows into guest memory: the
 * worker's translation window (tnpu-worker.c) belongs to the old memory map,
 * so the next row translates afresh and the job stops with BUS at that row's
 * address; nothing more reaches the page.
 */
static void test_bus_master_off_mid_job(void)
{
    Tnpu *t = tnpu_start(NULL);
    uint64_t page_va, page_pa;
    uint16_t cmd;

    tnpu_setup(t);
    hostile_job_streaming(t, 0, 1, &page_va, &page_pa);
    cmd = qpci_config_readw(t->dev, PCI_COMMAND);
    qpci_config_writew(t->dev, PCI_COMMAND, cmd & ~PCI_COMMAND_MASTER);
    /*
     * A row the worker translated before the write may still land, as a
     * posted write would: so the page must be quiet once the job has stopped,
     * not from the config write on (a starved worker thread made that racy).
     */
    wait_idle(t, 0);
    check_page_quiet(t, page_pa);
    g_assert_cmpuint(rd(t, TNPU_REG_Q(0, TNPU_Q_ERR_CODE)), ==, TNPU_ERR_BUS);
    g_assert_cmphex(rd64(t, TNPU_REG_Q(0, TNPU_Q_ERR_ADDR_LO)), ==, page_va);
    tnpu_stop(t);
}

static void test_reset_register(void)
{
    Tnpu *t = tnpu_start(NULL);
    g_autofree int32_t *ref = NULL;
    uint64_t cmd_va, cpa, marker;
    uint32_t cmd_len;

    tnpu_setup(t);
    /* Leave state everywhere: a completed job, an error, counters, scratch. */
    cpa = gemm_prepare(t, 4, 16, 16, 2, &cmd_va, &cmd_len, &ref);
    submit(t, 0, cmd_va, cmd_len, 1);
    g_assert(wait_for(t, TNPU_MSIX_VEC_QUEUE(0)));
    check_gemm(t, cpa, ref, 4, 16);
    submit(t, 1, VA_UNMAPPED, 8, 2);
    g_assert(wait_for(t, TNPU_MSIX_VEC_ERROR));
    wr(t, TNPU_REG_SCRATCH, 0xabcd);

    /*
     * And a long job in flight on queue 2 when the reset hits: it must leave no
     * trace.
     */
    cmd_va = long_job(t, &cmd_len, &marker);
    submit(t, 2, cmd_va, cmd_len, 0x77);
    wait_marker(t, marker);
    g_assert(rd(t, TNPU_REG_Q(2, TNPU_Q_STATUS)) & TNPU_Q_STATUS_BUSY);
    wr(t, TNPU_REG_CTRL, TNPU_CTRL_RESET);
    wait_status_clear(t, TNPU_STATUS_RESET_PENDING);
    check_reset_state(t);
    g_usleep(200 * 1000);
    check_reset_state(t);
    g_assert_cmphex(qtest_readq(t->qts, t->fence[2]), ==, 0);

    /* The device works again after reprogramming. */
    tnpu_setup(t);
    cpa = gemm_prepare(t, 4, 16, 16, 3, &cmd_va, &cmd_len, &ref);
    submit(t, 3, cmd_va, cmd_len, 5);
    wait_idle(t, 3);
    g_assert_cmphex(qtest_readq(t->qts, t->fence[3]), ==, 5);
    check_gemm(t, cpa, ref, 4, 16);
    tnpu_stop(t);
}

/*
 * CTRL.RESET during the hostile job: STATUS.RESET_PENDING clears promptly, and
 * from then on the abandoned job writes nothing; the queue runs the next job.
 */
static void test_reset_hostile(void)
{
    Tnpu *t = tnpu_start(NULL);
    g_autofree int32_t *ref = NULL;
    uint64_t page_va, page_pa, cpa, cmd_va;
    uint32_t cmd_len;
    gint64 us;

    tnpu_setup(t);
    hostile_job_streaming(t, 0, 0x42, &page_va, &page_pa);
    wr(t, TNPU_REG_CTRL, TNPU_CTRL_RESET);
    us = wait_status_clear(t, TNPU_STATUS_RESET_PENDING);
    g_test_message("reset done after %" PRId64 " us", us);
    check_page_quiet(t, page_pa);
    check_reset_state(t);

    tnpu_setup(t);
    cpa = gemm_prepare(t, 4, 16, 16, 2, &cmd_va, &cmd_len, &ref);
    submit(t, 0, cmd_va, cmd_len, 7);
    wait_idle(t, 0);
    g_assert_cmphex(qtest_readq(t->qts, t->fence[0]), ==, 7);
    check_gemm(t, cpa, ref, 4, 16);
    tnpu_stop(t);
}

/*
 * MMU_INVALIDATE while the hostile job stores through a translation it has
 * cached: once STATUS.MMU_INV_PENDING reads 0 the unmapped page is never
 * written again (the job faults on its next access).
 */
static void test_mmu_invalidate_handshake(void)
{
    Tnpu *t = tnpu_start(NULL);
    uint64_t page_va, page_pa;
    gint64 us;

    tnpu_setup(t);
    hostile_job_streaming(t, 1, 0x43, &page_va, &page_pa);
    wq(t, t->l1 + 8 * TNPU_PT_INDEX(page_va, 1), 0);
    wr(t, TNPU_REG_MMU_INVALIDATE, 1);
    us = wait_status_clear(t, TNPU_STATUS_MMU_INV_PENDING);
    g_test_message("invalidate complete after %" PRId64 " us", us);
    check_page_quiet(t, page_pa);
    g_assert(wait_for(t, TNPU_MSIX_VEC_ERROR));
    g_assert_cmpuint(rd(t, TNPU_REG_Q(1, TNPU_Q_ERR_CODE)), ==,
                     TNPU_ERR_MMU_NOT_PRESENT);
    g_assert_cmphex(rd(t, TNPU_REG_STATUS) & TNPU_STATUS_MMU_INV_PENDING, ==,
                    0);
    tnpu_stop(t);
}

/*
 * Doorbells never get lost (issue 17: the driver re-rang every 200 ms because
 * the device once lost them): bursts of short jobs on every queue, each rung
 * once while the queue is still busy with the previous ones, all complete
 * without a second doorbell.
 */
static void test_doorbell_bursts(void)
{
    Tnpu *t = tnpu_start(NULL);
    Cmds cb = { g_byte_array_new() };
    uint64_t seq = 0, cmd_va;
    uint32_t cmd_len;

    tnpu_setup(t);
    cmd_raw(&cb, TNPU_CMD_NOP, 8);
    cmd_va = cmds_upload(t, &cb, &cmd_len);
    for (unsigned round = 0; round < 40; round++) {
        for (unsigned i = 0; i < RING_SIZE - 1; i++) {
            for (unsigned q = 0; q < t->queues; q++) {
                submit(t, q, cmd_va, cmd_len, ++seq);
            }
        }
        for (unsigned q = 0; q < t->queues; q++) {
            wait_idle(t, q);
            g_assert_cmphex(rd(t, TNPU_REG_Q(q, TNPU_Q_STATUS)) &
                                TNPU_Q_STATUS_ERROR, ==, 0);
            g_assert_cmpuint(rd(t, TNPU_REG_Q(q, TNPU_Q_HEAD)), ==,
                             t->tail[q]);
            g_assert_cmphex(qtest_readq(t->qts, t->fence[q]), ==,
                            seq - t->queues + 1 + q);
        }
    }
    tnpu_stop(t);
}

static void test_reset_flr(void)
{
    Tnpu *t = tnpu_start(NULL);
    uint8_t exp = qpci_find_capability(t->dev, PCI_CAP_ID_EXP, 0);
    uint64_t cmd_va, marker;
    uint32_t cmd_len;

    tnpu_setup(t);
    cmd_va = long_job(t, &cmd_len, &marker);
    submit(t, 0, cmd_va, cmd_len, 0x99);
    wait_marker(t, marker);
    qpci_config_writew(t->dev, exp + PCI_EXP_DEVCTL,
                       qpci_config_readw(t->dev, exp + PCI_EXP_DEVCTL) |
                           PCI_EXP_DEVCTL_BCR_FLR);
    /*
     * FLR clears the command register and the BARs: map BAR0 again to look at
     * it.
     */
    qpci_device_enable(t->dev);
    t->bar = qpci_iomap(t->dev, TNPU_BAR_REGS, NULL);
    check_reset_state(t);
    g_usleep(200 * 1000);
    check_reset_state(t);
    g_assert_cmphex(qtest_readq(t->qts, t->fence[0]), ==, 0);
    tnpu_stop(t);
}

static void test_reset_system(void)
{
    Tnpu *t = tnpu_start(NULL);
    uint64_t cmd_va, marker;
    uint32_t cmd_len;

    tnpu_setup(t);
    cmd_va = long_job(t, &cmd_len, &marker);
    submit(t, 1, cmd_va, cmd_len, 0x55);
    wait_marker(t, marker);
    qtest_qmp_assert_success(t->qts, "{ 'execute': 'system_reset' }");
    qtest_qmp_eventwait(t->qts, "RESET");
    /* The firmware would reprogram the BARs: do it like libqos does. */
    qpci_device_enable(t->dev);
    t->bar = qpci_iomap(t->dev, TNPU_BAR_REGS, NULL);
    check_reset_state(t);
    g_usleep(200 * 1000);
    check_reset_state(t);
    g_assert_cmphex(qtest_readq(t->qts, t->fence[1]), ==, 0);
    tnpu_stop(t);
}

/* ---- hot-unplug from a PCIe slot --------------------------------------- */

#define RP_DEVFN   QPCI_DEVFN(5, 0)
#define SLOT_DEVFN ((1 << 8) | QPCI_DEVFN(0, 0)) /* bus 1, behind the port */

/*
 * The root port as firmware would leave it: secondary bus 1, the window libqos
 * allocates BARs from (0xe0000000..0xefffffff) forwarded, no
 * I/O or prefetchable window, memory decoding and bus mastering on (DMA and
 * MSI-X messages of the device go upstream through the port).
 */
static void root_port_setup(QPCIDevice *rp)
{
    qpci_config_writeb(rp, PCI_PRIMARY_BUS, 0);
    qpci_config_writeb(rp, PCI_SECONDARY_BUS, 1);
    qpci_config_writeb(rp, PCI_SUBORDINATE_BUS, 1);
    qpci_config_writew(rp, PCI_MEMORY_BASE, 0xe000);
    qpci_config_writew(rp, PCI_MEMORY_LIMIT, 0xeff0);
    qpci_config_writew(rp, PCI_PREF_MEMORY_BASE, 0xfff0);
    qpci_config_writew(rp, PCI_PREF_MEMORY_LIMIT, 0);
    qpci_config_writeb(rp, PCI_IO_BASE, 0xf0);
    qpci_config_writeb(rp, PCI_IO_LIMIT, 0);
    qpci_config_writew(rp, PCI_COMMAND,
                       PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
}

/*
 * What the guest's pciehp does after the attention button: power indicator
 * off, slot power off.  QEMU then detaches the device
 * (pcie_cap_slot_do_unplug).
 */
static void slot_power(QPCIDevice *rp, bool on)
{
    uint8_t exp = qpci_find_capability(rp, PCI_CAP_ID_EXP, 0);
    uint16_t ctl = qpci_config_readw(rp, exp + PCI_EXP_SLTCTL);

    ctl &= ~(PCI_EXP_SLTCTL_PIC | PCI_EXP_SLTCTL_PCC);
    ctl |= on ? PCI_EXP_SLTCTL_PWR_IND_ON | PCI_EXP_SLTCTL_PWR_ON
              : PCI_EXP_SLTCTL_PWR_IND_OFF | PCI_EXP_SLTCTL_PWR_OFF;
    qpci_config_writew(rp, exp + PCI_EXP_SLTCTL, ctl);
}

static void wait_device_deleted(QTestState *qts, const char *id)
{
    for (;;) {
        QDict *resp = qtest_qmp_eventwait_ref(qts, "DEVICE_DELETED");
        QDict *data = qdict_get_qdict(resp, "data");
        const char *dev = data ? qdict_get_try_str(data, "device") : NULL;
        bool match = dev && !strcmp(dev, id);

        qobject_unref(resp);
        if (match) {
            return;
        }
    }
}

/* True if /machine/peripheral has a child named id (a device with that id). */
static bool peripheral_exists(QTestState *qts, const char *id)
{
    QDict *resp = qtest_qmp(qts, "{ 'execute': 'qom-list', 'arguments': "
                                 "{ 'path': '/machine/peripheral' } }");
    QList *list = qdict_get_qlist(resp, "return");
    QListEntry *e;
    bool found = false;

    g_assert(list);
    QLIST_FOREACH_ENTRY(list, e) {
        QDict *prop = qobject_to(QDict, qlist_entry_obj(e));

        if (prop && !strcmp(qdict_get_str(prop, "name"), id)) {
            found = true;
        }
    }
    qobject_unref(resp);
    return found;
}

/*
 * device_del of a busy device behind a PCIe root port (native hotplug, as a
 * guest with pciehp sees it): the long job in flight is abandoned, unrealize
 * stops and joins the worker threads, QEMU keeps running, the device is gone
 * from QOM and from config space, the abandoned job never writes guest memory
 * afterwards, and a new tnpu can be plugged into the same slot.
 */
static void test_hot_unplug(gconstpointer data)
{
    bool hostile = data != NULL;
    Tnpu *t = g_new0(Tnpu, 1);
    QPCIDevice *rp, *dev2;
    uint64_t cmd_va, marker, cmd2_va, marker2, page_va, page_pa = 0;
    uint32_t cmd_len, cmd2_len;
    QDict *resp;
    gint64 t0;

    t->qts = qtest_init("-M q35 "
                        "-global ICH9-LPC."
                        "acpi-pci-hotplug-with-bridge-support=off "
                        "-device pcie-root-port,id=rp0,bus=pcie.0,addr=05.0,"
                        "chassis=1,slot=1 "
                        "-device tnpu,id=npu0,bus=rp0,addr=00.0");
    pc_alloc_init(&t->alloc, t->qts, 0);
    t->bus = qpci_new_pc(t->qts, &t->alloc);
    rp = qpci_device_find(t->bus, RP_DEVFN);
    g_assert(rp);
    root_port_setup(rp);
    t->dev = qpci_device_find(t->bus, SLOT_DEVFN);
    g_assert(t->dev);
    g_assert_cmphex(qpci_config_readw(t->dev, PCI_DEVICE_ID), ==,
                    TNPU_PCI_DEVICE_ID);
    qpci_device_enable(t->dev);
    t->bar = qpci_iomap(t->dev, TNPU_BAR_REGS, NULL);
    t->queues = TNPU_CAP_QUEUES_NUM(rd(t, TNPU_REG_CAP_QUEUES));
    g_assert_cmpuint(t->queues, >=, 2);
    tnpu_setup(t);

    /* Work through the port: a short job completes (DMA + MSI-X work). */
    submit(t, 1, VA_UNMAPPED, 8, 1);
    g_assert(wait_for(t, TNPU_MSIX_VEC_ERROR));

    /*
     * A long job (or the hostile one) running on queue 0, and one waiting
     * behind it.
     */
    if (hostile) {
        cmd_va = hostile_job(t, &cmd_len, &marker, &page_va, &page_pa);
    } else {
        cmd_va = long_job(t, &cmd_len, &marker);
    }
    cmd2_va = long_job(t, &cmd2_len, &marker2);
    submit(t, 0, cmd_va, cmd_len, 0x11);
    submit(t, 0, cmd2_va, cmd2_len, 0x12);
    wait_marker(t, marker);
    if (hostile) {
        wait_page_written(t, page_pa);
    }
    g_assert(rd(t, TNPU_REG_Q(0, TNPU_Q_STATUS)) & TNPU_Q_STATUS_BUSY);

    t0 = g_get_monotonic_time();
    qtest_qmp_device_del_send(t->qts, "npu0");
    slot_power(rp, false);
    wait_device_deleted(t->qts, "npu0");
    g_test_message("unplugged after %" PRId64 " us",
                   g_get_monotonic_time() - t0);
    if (hostile) {
        check_page_quiet(t, page_pa);
    }

    /* QEMU survives, the port stays, the device is gone. */
    resp = qtest_qmp(t->qts, "{ 'execute': 'query-status' }");
    g_assert(qdict_haskey(resp, "return"));
    qobject_unref(resp);
    g_assert(!peripheral_exists(t->qts, "npu0"));
    g_assert(peripheral_exists(t->qts, "rp0"));
    g_assert_cmphex(qpci_config_readw(t->dev, PCI_VENDOR_ID), ==, 0xffff);
    g_assert_cmphex(qpci_config_readw(rp, PCI_VENDOR_ID), ==, 0x1b36);

    /* The abandoned jobs never complete into guest memory. */
    g_usleep(200 * 1000);
    g_assert_cmphex(qtest_readq(t->qts, t->fence[0]), ==, 0);
    g_assert_cmphex(qtest_readq(t->qts, marker2), ==, 0);

    /* The slot takes a new device, which answers. */
    qtest_qmp_assert_success(t->qts, "{ 'execute': 'device_add', 'arguments': "
                             "{ 'driver': 'tnpu', 'id': 'npu1', "
                             "'bus': 'rp0', 'addr': '00.0' } }");
    slot_power(rp, true);
    dev2 = qpci_device_find(t->bus, SLOT_DEVFN);
    g_assert(dev2);
    g_assert_cmphex(qpci_config_readw(dev2, PCI_VENDOR_ID), ==,
                    TNPU_PCI_VENDOR_ID);
    g_assert_cmphex(qpci_config_readw(dev2, PCI_DEVICE_ID), ==,
                    TNPU_PCI_DEVICE_ID);
    g_assert(peripheral_exists(t->qts, "npu1"));

    g_free(dev2);
    g_free(rp);
    tnpu_stop(t);
}

/*
 * Queues really run concurrently (one worker per queue): two long jobs on two
 * queues have both started (their first command wrote its marker) while neither
 * has completed.
 */
static void test_queues_concurrent(void)
{
    Tnpu *t = tnpu_start(NULL);
    uint64_t va0, va1, m0, m1;
    uint32_t len0, len1;

    tnpu_setup(t);
    va0 = long_job(t, &len0, &m0);
    va1 = long_job(t, &len1, &m1);
    submit(t, 0, va0, len0, 1);
    submit(t, 1, va1, len1, 2);
    wait_marker(t, m0);
    wait_marker(t, m1);
    g_assert_cmphex(qtest_readq(t->qts, t->fence[0]), ==, 0);
    g_assert_cmphex(qtest_readq(t->qts, t->fence[1]), ==, 0);
    g_assert(rd(t, TNPU_REG_Q(0, TNPU_Q_STATUS)) & TNPU_Q_STATUS_BUSY);
    g_assert(rd(t, TNPU_REG_Q(1, TNPU_Q_STATUS)) & TNPU_Q_STATUS_BUSY);
    /* The vCPU is not stalled meanwhile: registers answer. */
    wr(t, TNPU_REG_SCRATCH, 0x1234);
    g_assert_cmphex(rd(t, TNPU_REG_SCRATCH), ==, 0x1234);
    wr(t, TNPU_REG_CTRL, TNPU_CTRL_RESET);
    tnpu_stop(t);
}

/* A job: FENCE *marker = 1, then @fills FILL DMAs of 512 KiB */
static uint64_t marked_job(Tnpu *t, unsigned fills, uint32_t *cmd_len,
                           uint64_t *marker_pa)
{
    Cmds cb = { g_byte_array_new() };
    struct tnpu_cmd_fence f = { .hdr = hdr(TNPU_CMD_FENCE, sizeof(f)),
                                .va = buf(t, 8, marker_pa),
                                .value = 1 };

    g_byte_array_append(cb.b, (const guint8 *)&f, sizeof(f));
    for (unsigned i = 0; i < fills; i++) {
        cmd_fill(&cb, 512 * 1024);
    }
    return cmds_upload(t, &cb, cmd_len);
}

/*
 * Run tokens go first come, first served (issue #28). Queues 0-3 run a long
 * job each and so hold the 4 tokens; queues 4-7 then get a short job each,
 * whose workers wait for a token; queues 0-3 have a second long job behind
 * the first. Each token a first job returns goes to a waiting short job, so
 * no second long job starts before every short job has started. Before the
 * FIFO the worker that returned a token could take it back for its second
 * job before a waiter woke (about every other round: 4 rounds here). A job
 * joins the FIFO when it reaches the device, not when its thread wakes; a
 * second long job can then start only once a short one has finished; a short
 * job whose thread took its token but is late to write its marker on a loaded
 * host gets GRACE_US, a fraction of a long job's run.
 */
#define SHORT_FILLS 100
#define LONG_FILLS 2000
#define GRACE_US (100 * 1000)
enum { FIFO_NQ = 8, FIFO_NL = 4 };

static void run_tokens_round(Tnpu *t, const uint64_t *va, const uint32_t *len,
                             const uint64_t *marker)
{
    gint64 end = g_get_monotonic_time() + TIMEOUT_US;
    unsigned q, polls = 0;
    bool all_short;

    tnpu_setup(t);
    for (q = 0; q < FIFO_NQ + FIFO_NL; q++) {
        wq(t, marker[q], 0);
    }
    for (q = 0; q < FIFO_NL; q++) {
        submit(t, q, va[q], len[q], 1);
    }
    for (q = 0; q < FIFO_NL; q++) {
        wait_marker(t, marker[q]);
    }
    for (q = FIFO_NL; q < FIFO_NQ; q++) {
        submit(t, q, va[q], len[q], 1);
    }
    for (q = 0; q < FIFO_NL; q++) {
        submit(t, q, va[FIFO_NQ + q], len[FIFO_NQ + q], 2);
    }
    /* the first long jobs were still running: the short ones had to wait */
    for (q = 0; q < FIFO_NL; q++) {
        g_assert_cmphex(qtest_readq(t->qts, t->fence[q]), ==, 0);
    }
    do {
        bool second = false;

        for (q = FIFO_NQ; q < FIFO_NQ + FIFO_NL; q++) {
            second |= qtest_readq(t->qts, marker[q]) == 1;
        }
        /* read after the long ones' markers */
        all_short = true;
        for (q = FIFO_NL; q < FIFO_NQ; q++) {
            all_short &= qtest_readq(t->qts, marker[q]) == 1;
        }
        if (second && !all_short) {
            /*
             * A short job whose thread took its token may not have written
             * its marker yet on a loaded host: it must within GRACE_US, far
             * less than a long job runs (a second long job holding a short
             * job's token would keep it waiting that long).
             */
            gint64 grace = g_get_monotonic_time() + GRACE_US;

            while (!all_short && g_get_monotonic_time() < grace) {
                g_usleep(200);
                all_short = true;
                for (q = FIFO_NL; q < FIFO_NQ; q++) {
                    all_short &= qtest_readq(t->qts, marker[q]) == 1;
                }
            }
        }
        g_assert(!second || all_short);
        polls++;
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(200);
    } while (!all_short);
    g_test_message("%u polls until every short job had started", polls);
    for (q = 0; q < FIFO_NQ; q++) {
        wait_idle(t, q);
        g_assert_cmpuint(qtest_readq(t->qts, t->fence[q]), ==,
                         q < FIFO_NL ? 2 : 1);
    }
}

static void test_run_tokens_fifo(void)
{
    Tnpu *t = tnpu_start("queues=8");
    uint64_t va[FIFO_NQ + FIFO_NL], marker[FIFO_NQ + FIFO_NL];
    uint32_t len[FIFO_NQ + FIFO_NL];

    g_assert_cmpuint(t->queues, ==, FIFO_NQ);
    tnpu_setup(t);
    for (unsigned q = 0; q < FIFO_NQ + FIFO_NL; q++) {
        bool long_job = q < FIFO_NL || q >= FIFO_NQ;

        va[q] = marked_job(t, long_job ? LONG_FILLS : SHORT_FILLS, &len[q], &marker[q]);
    }
    for (unsigned round = 0; round < 4; round++) {
        run_tokens_round(t, va, len, marker);
    }
    tnpu_stop(t);
}

/*
 * Interrupt rules: a masked cause sends no message; unmasking a pending cause
 * sends it. The device fetches nothing while CTRL.ENABLE is clear.
 */
static void test_irq_mask_and_enable(void)
{
    Tnpu *t = tnpu_start(NULL);
    Cmds cb = { g_byte_array_new() };
    uint64_t cmd_va;
    uint32_t cmd_len;

    tnpu_setup(t);
    cmd_raw(&cb, TNPU_CMD_NOP, 8);
    cmd_va = cmds_upload(t, &cb, &cmd_len);

    wr(t, TNPU_REG_CTRL, 0);
    submit(t, 0, cmd_va, cmd_len, 5);
    g_usleep(100 * 1000);
    g_assert_cmpuint(rd(t, TNPU_REG_Q(0, TNPU_Q_HEAD)), ==, 0);
    g_assert_cmphex(qtest_readq(t->qts, t->fence[0]), ==, 0);

    wr(t, TNPU_REG_IRQ_MASK, 0xffffffff);
    wr(t, TNPU_REG_CTRL, TNPU_CTRL_ENABLE);
    wait_idle(t, 0);
    g_assert_cmphex(qtest_readq(t->qts, t->fence[0]), ==, 5);
    g_assert_cmphex(rd(t, TNPU_REG_IRQ_STATUS), ==, TNPU_IRQ_QUEUE(0));
    g_assert(!qpci_msix_pending(t->dev, TNPU_MSIX_VEC_QUEUE(0)));
    wr(t, TNPU_REG_IRQ_MASK, ~TNPU_IRQ_QUEUE(0));
    g_assert(qpci_msix_pending(t->dev, TNPU_MSIX_VEC_QUEUE(0)));
    g_assert(!qpci_msix_pending(t->dev, TNPU_MSIX_VEC_ERROR));
    tnpu_stop(t);
}

static void test_two_queues(void)
{
    Tnpu *t = tnpu_start(NULL);
    g_autofree int32_t *ref0 = NULL;
    g_autofree int32_t *ref1 = NULL;
    uint64_t va0, va1, c0, c1;
    uint32_t len0, len1;

    tnpu_setup(t);
    c0 = gemm_prepare(t, 16, 32, 32, 10, &va0, &len0, &ref0);
    c1 = gemm_prepare(t, 8, 16, 64, 11, &va1, &len1, &ref1);
    submit(t, 0, va0, len0, 100);
    submit(t, 1, va1, len1, 200);
    submit(t, 0, va0, len0, 101);
    g_assert(wait_for(t, TNPU_MSIX_VEC_QUEUE(0)));
    g_assert(wait_for(t, TNPU_MSIX_VEC_QUEUE(1)));
    wait_idle(t, 0);
    wait_idle(t, 1);
    g_assert_cmphex(qtest_readq(t->qts, t->fence[0]), ==, 101);
    g_assert_cmphex(qtest_readq(t->qts, t->fence[1]), ==, 200);
    g_assert_cmpuint(rd(t, TNPU_REG_Q(0, TNPU_Q_JOBS_DONE)), ==, 2);
    g_assert_cmpuint(rd(t, TNPU_REG_Q(1, TNPU_Q_JOBS_DONE)), ==, 1);
    g_assert_cmphex(rd(t, TNPU_REG_IRQ_STATUS), ==,
                    TNPU_IRQ_QUEUE(0) | TNPU_IRQ_QUEUE(1));
    check_gemm(t, c0, ref0, 16, 32);
    check_gemm(t, c1, ref1, 8, 16);
    tnpu_stop(t);
}

/* The same job in the synchronous (fuzzing) mode gives the same result. */
static void test_sync_mode(void)
{
    Tnpu *t = tnpu_start("x-sync=on");
    g_autofree int32_t *ref = NULL;
    uint64_t cmd_va, cpa;
    uint32_t cmd_len;

    tnpu_setup(t);
    cpa = gemm_prepare(t, 8, 16, 16, 4, &cmd_va, &cmd_len, &ref);
    submit(t, 0, cmd_va, cmd_len, 42);
    g_assert(wait_for(t, TNPU_MSIX_VEC_QUEUE(0)));
    check_gemm(t, cpa, ref, 8, 16);
    tnpu_stop(t);
}

/*
 * Without MSI-X the device falls back to MSI; a message to a RAM address is
 * visible as a write.
 */
static void test_msi_fallback(void)
{
    Tnpu *t = tnpu_start(NULL);
    uint8_t msi = qpci_find_capability(t->dev, PCI_CAP_ID_MSI, 0);
    uint64_t msg_pa = alloc_zeroed(t, 4096);
    uint16_t flags;
    Cmds cb = { g_byte_array_new() };
    uint64_t cmd_va;
    uint32_t cmd_len;
    gint64 end;

    g_assert(msi);
    flags = qpci_config_readw(t->dev, msi + PCI_MSI_FLAGS);
    g_assert(flags & PCI_MSI_FLAGS_64BIT);
    /* Multiple Message Capable: pow2ceil(1 + 4 queues) = 8 vectors. */
    g_assert_cmpuint((flags & PCI_MSI_FLAGS_QMASK) >> 1, ==, 3);
    qpci_config_writel(t->dev, msi + PCI_MSI_ADDRESS_LO, (uint32_t)msg_pa);
    qpci_config_writel(t->dev, msi + PCI_MSI_ADDRESS_HI, msg_pa >> 32);
    qpci_config_writew(t->dev, msi + PCI_MSI_DATA_64, 0xab00);
    qpci_config_writew(t->dev, msi + PCI_MSI_FLAGS,
                       flags | PCI_MSI_FLAGS_ENABLE | (3 << 4));

    /* The driver's setup, MSI-X left disabled; queue 1 only. */
    t->ctx_table = alloc_zeroed(t, 4096);
    t->l4 = alloc_zeroed(t, 4096);
    t->l3 = alloc_zeroed(t, 4096);
    t->l2 = alloc_zeroed(t, 4096);
    t->l1 = alloc_zeroed(t, 4096);
    t->va_next = VA_BASE;
    wq(t, t->l4 + 8 * TNPU_PT_INDEX(VA_BASE, 4), t->l3 | TNPU_PTE_VALID);
    wq(t, t->l3 + 8 * TNPU_PT_INDEX(VA_BASE, 3), t->l2 | TNPU_PTE_VALID);
    wq(t, t->l2 + 8 * TNPU_PT_INDEX(VA_BASE, 2), t->l1 | TNPU_PTE_VALID);
    wq(t, t->ctx_table, t->l4 | TNPU_CTX_VALID);
    wr64(t, TNPU_REG_MMU_CTX_BASE_LO, t->ctx_table);
    wr(t, TNPU_REG_MMU_CTX_COUNT, 1);
    wr(t, TNPU_REG_IRQ_MASK, 0);
    t->ring[1] = alloc_zeroed(t, 32 * RING_SIZE);
    t->fence[1] = alloc_zeroed(t, 8);
    wr64(t, TNPU_REG_Q(1, TNPU_Q_RING_BASE_LO), t->ring[1]);
    wr(t, TNPU_REG_Q(1, TNPU_Q_RING_SIZE), RING_SIZE);
    wr64(t, TNPU_REG_Q(1, TNPU_Q_FENCE_LO), t->fence[1]);
    wr(t, TNPU_REG_Q(1, TNPU_Q_CTRL), TNPU_Q_CTRL_ENABLE);
    wr(t, TNPU_REG_CTRL, TNPU_CTRL_ENABLE);

    /* Completion of queue 1 -> vector 2 -> data 0xab02. */
    cmd_raw(&cb, TNPU_CMD_NOP, 8);
    cmd_va = cmds_upload(t, &cb, &cmd_len);
    submit(t, 1, cmd_va, cmd_len, 11);
    end = g_get_monotonic_time() + TIMEOUT_US;
    while (qtest_readl(t->qts, msg_pa) != 0xab02) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
    g_assert_cmphex(qtest_readq(t->qts, t->fence[1]), ==, 11);

    /* An error -> vector 0 -> data 0xab00. */
    submit(t, 1, VA_UNMAPPED, 8, 12);
    while (qtest_readl(t->qts, msg_pa) != 0xab00) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
    g_assert_cmpuint(rd(t, TNPU_REG_Q(1, TNPU_Q_ERR_CODE)), ==,
                     TNPU_ERR_MMU_NOT_PRESENT);
    tnpu_stop(t);
}

/*
 * D3hot: BAR0 stops decoding (QEMU's PCI PM); D0 restores it with the registers
 * intact.
 */
static void test_power_management(void)
{
    Tnpu *t = tnpu_start(NULL);
    uint8_t pm = qpci_find_capability(t->dev, PCI_CAP_ID_PM, 0);

    g_assert(pm);
    wr(t, TNPU_REG_SCRATCH, 0x5a5a);
    qpci_config_writew(t->dev, pm + PCI_PM_CTRL, 3 /* D3hot */);
    g_assert_cmphex(qpci_config_readw(t->dev, pm + PCI_PM_CTRL) &
                        PCI_PM_CTRL_STATE_MASK,
                    ==, 3);
    g_assert_cmphex(rd(t, TNPU_REG_ID), !=, TNPU_ID_VALUE);
    qpci_config_writew(t->dev, pm + PCI_PM_CTRL, 0 /* D0 */);
    g_assert_cmphex(rd(t, TNPU_REG_ID), ==, TNPU_ID_VALUE);
    g_assert_cmphex(rd(t, TNPU_REG_SCRATCH), ==, 0x5a5a);
    tnpu_stop(t);
}

/* ---- random MMIO + DMA stress (bounded "fuzzer" over the whole device) --- */

/*
 * Random register accesses of every size and alignment, random ring entries and
 * command buffers (valid commands with random fields, mutated valid programs,
 * random bytes), random guest-memory mutation of rings, page tables and context
 * entries, random device-physical addresses (RAM, MMIO, unassigned, our own
 * BARs), doorbells, CTRL.RESET, FLR and bus-master toggling — in the threaded
 * mode and in x-sync mode.  QEMU must neither crash nor hang, and the device
 * must keep answering. TNPU_FUZZ_SECONDS (default 2 per mode) and
 * TNPU_FUZZ_SEED (default 1) control a run; the seed is printed so a failure
 * can be replayed.
 */
static const uint32_t fuzz_regs[] = {
    TNPU_REG_CTRL,      TNPU_REG_SCRATCH,       TNPU_REG_IRQ_MASK,
    TNPU_REG_IRQ_ACK,   TNPU_REG_MMU_CTX_COUNT, TNPU_REG_MMU_INVALIDATE,
    TNPU_REG_PERF_CTRL, TNPU_REG_STATUS,        TNPU_REG_ERR_CODE,
};
static const uint32_t fuzz_qregs[] = {
    TNPU_Q_RING_BASE_LO, TNPU_Q_RING_BASE_HI,  TNPU_Q_RING_SIZE,
    TNPU_Q_HEAD,         TNPU_Q_TAIL,          TNPU_Q_DOORBELL,
    TNPU_Q_FENCE_LO,     TNPU_Q_FENCE_HI,      TNPU_Q_CTRL,
    TNPU_Q_STATUS,       TNPU_Q_DONE_SEQNO_LO, TNPU_Q_JOBS_DONE,
    TNPU_Q_PERF(0),
};

static uint64_t fuzz_value(GRand *r)
{
    switch (g_rand_int_range(r, 0, 6)) {
    case 0:
        return 0;
    case 1:
        return 1;
    case 2:
        return g_rand_int_range(r, 0, 64);
    case 3:
        return 1ull << g_rand_int_range(r, 0, 64);
    case 4:
        return ~0ull;
    default:
        return ((uint64_t)g_rand_int(r) << 32) | g_rand_int(r);
    }
}

/*
 * A device-physical address: mostly our RAM, sometimes MMIO, unassigned or
 * anything.
 */
static uint64_t fuzz_pa(Tnpu *t, GRand *r, uint64_t ram_pa, uint64_t ram_len)
{
    switch (g_rand_int_range(r, 0, 10)) {
    case 0:
        return 0xfe000000ull +
               (g_rand_int(r) & 0x1ffffff8u); /* MMIO window, BARs, APIC */
    case 1:
        return fuzz_value(r) & ~7ull;
    case 2:
        return t->ring[0];
    default:
        return ram_pa + (g_rand_int_range(r, 0, ram_len / 8) * 8);
    }
}

static void fuzz_command(Cmds *c, GRand *r, uint64_t va, uint32_t va_len)
{
    uint8_t raw[128];
    uint32_t size;

    switch (g_rand_int_range(r, 0, 8)) {
    case 0: {
        struct tnpu_cmd_dma d = {
            .hdr = hdr(g_rand_boolean(r) ? TNPU_CMD_DMA_H2D : TNPU_CMD_DMA_D2H,
                       sizeof(d)),
            .host_va = va + g_rand_int_range(r, 0, va_len),
            .host_pitch_y = g_rand_int_range(r, 0, 512),
            .sram_off = g_rand_int_range(r, 0, 1 << 20),
            .sram_pitch_y = g_rand_int_range(r, 0, 512),
            .width = g_rand_int_range(r, 0, 4096),
            .height = g_rand_int_range(r, 0, 16),
            .depth = g_rand_int_range(r, 0, 3),
            .row = g_rand_boolean(r) ? 0xff : g_rand_int_range(r, 0, 5),
            .half = g_rand_int_range(r, 0, 3),
            .dma_flags = g_rand_int_range(r, 0, 2),
            .fill = g_rand_int(r),
        };
        d.hdr.flags = g_rand_int_range(r, 0, 2);
        g_byte_array_append(c->b, (const guint8 *)&d, sizeof(d));
        return;
    }
    case 1: {
        struct tnpu_cmd_sem sc = {
            .hdr =
                hdr(g_rand_boolean(r) ? TNPU_CMD_SEM_SIGNAL : TNPU_CMD_SEM_WAIT,
                    sizeof(sc)),
            .engine = g_rand_int_range(r, 0, 4),
            .sem = g_rand_int_range(r, 0, 18),
            .count = g_rand_int_range(r, 0, 4),
        };
        sc.hdr.flags = g_rand_int_range(r, 0, 2);
        g_byte_array_append(c->b, (const guint8 *)&sc, sizeof(sc));
        return;
    }
    case 2: {
        struct tnpu_cmd_fence f = {
            .hdr = hdr(TNPU_CMD_FENCE, sizeof(f)),
            .va = g_rand_boolean(r) ? va + (g_rand_int_range(r, 0, va_len) & ~7)
                                    : fuzz_value(r),
            .value = fuzz_value(r),
        };
        g_byte_array_append(c->b, (const guint8 *)&f, sizeof(f));
        return;
    }
    case 3: {
        /* A CONFIG or EXE packet with random instructions and operand records.
         */
        uint8_t pkt[17 + 2 * 8 + 32 * 3];
        struct tnpu_cfg_hdr h = {
            .n_instr = g_rand_int_range(r, 0, 9),
            .n_operands = g_rand_int_range(r, 0, 4),
            .rf_base = g_rand_int_range(r, 0, 2) * 16,
            .mode = g_rand_int_range(r, 0, 8),
            .loop_start = 0,
            .loop_end = g_rand_int_range(r, 0, 8),
            .repeat = g_rand_int_range(r, 0, 4),
            .sfu_rf = g_rand_int_range(r, 0, 3),
        };
        uint32_t len;

        if (g_rand_boolean(r)) {
            pkt[0] = TNPU_PKT_EXE_BYTE(g_rand_int_range(r, 0, 32),
                                       g_rand_int_range(r, 0, 8) & 6);
            len = 1;
        } else {
            pkt[0] = TNPU_PKT_CONFIG_BYTE(g_rand_int_range(r, 0, 32));
            memcpy(pkt + 1, &h, 16);
            for (unsigned i = 17; i < sizeof(pkt); i++) {
                pkt[i] = g_rand_int(r);
            }
            /*
             * Operand records mostly plausible: small addresses, sizes and
             * known dtypes.
             */
            for (unsigned i = 0; i < h.n_operands; i++) {
                struct tnpu_operand op = {
                    .addr = g_rand_int_range(r, 0, 4096),
                    .col_stride = g_rand_int_range(r, -64, 64),
                    .pe_stride = g_rand_int_range(r, -64, 64),
                    .pitch = g_rand_int_range(r, 0, 256),
                    .rows = g_rand_int_range(r, 0, 40),
                    .cols = g_rand_int_range(r, 0, 40),
                    .dtype = g_rand_int_range(r, 0, 4),
                    .flags = g_rand_int_range(r, 0, 4),
                };
                memcpy(pkt + 17 + 2 * h.n_instr + 32 * i, &op, sizeof(op));
            }
            for (unsigned i = 0; i < h.n_instr; i++) {
                uint16_t insn = g_rand_int(r) & 0x0fff;
                memcpy(pkt + 17 + 2 * i, &insn, 2);
            }
            len = 17 + 2 * h.n_instr + 32 * h.n_operands;
            if (g_rand_int_range(r, 0, 8) == 0) {
                len = g_rand_int_range(r, 1, sizeof(pkt));
            }
        }
        cmd_dispatch(c, g_rand_boolean(r) ? 0xff : g_rand_int_range(r, 0, 5),
                     g_rand_int_range(r, 0, 2), pkt, len);
        return;
    }
    case 4: {
        struct tnpu_cmd_im2col ic = {
            .hdr = hdr(TNPU_CMD_IM2COL, sizeof(ic)),
            .src_va = va + g_rand_int_range(r, 0, va_len),
            .stride_n = g_rand_int_range(r, 0, 4096),
            .stride_c = g_rand_int_range(r, 0, 5),
            .stride_h = g_rand_int_range(r, 0, 256),
            .stride_w = g_rand_int_range(r, 0, 16),
            .n = g_rand_int_range(r, 0, 3),
            .h = g_rand_int_range(r, 0, 12),
            .w = g_rand_int_range(r, 0, 12),
            .c = g_rand_int_range(r, 0, 8),
            .r = g_rand_int_range(r, 0, 4),
            .s = g_rand_int_range(r, 0, 4),
            .oh = g_rand_int_range(r, 0, 12),
            .ow = g_rand_int_range(r, 0, 12),
            .stride_y = g_rand_int_range(r, 0, 3),
            .stride_x = g_rand_int_range(r, 0, 3),
            .dil_y = g_rand_int_range(r, 0, 3),
            .dil_x = g_rand_int_range(r, 0, 3),
            .pad_top = g_rand_int_range(r, 0, 3),
            .pad_left = g_rand_int_range(r, 0, 3),
            .layout = g_rand_int_range(r, 0, 3),
            .dtype = g_rand_int_range(r, 0, 3),
            .m0 = g_rand_int_range(r, 0, 64),
            .mt = g_rand_int_range(r, 0, 64),
            .k0 = g_rand_int_range(r, 0, 64),
            .kt = g_rand_int_range(r, 0, 64),
            .sram_off = g_rand_int_range(r, 0, 1 << 20),
            .sram_pitch = g_rand_int_range(r, 0, 256),
            .row = g_rand_boolean(r) ? 0xff : g_rand_int_range(r, 0, 5),
            .half = g_rand_int_range(r, 0, 3),
        };
        g_byte_array_append(c->b, (const guint8 *)&ic, sizeof(ic));
        return;
    }
    case 5:
        cmd_raw(c, TNPU_CMD_NOP, 8);
        return;
    default:
        /* Random header + body. */
        size = g_rand_int_range(r, 1, 16) * 8;
        for (unsigned i = 0; i < size; i++) {
            raw[i] = g_rand_int(r);
        }
        raw[0] = g_rand_int_range(r, 0, 10);
        raw[2] = raw[3] = 0;
        if (g_rand_boolean(r)) {
            uint32_t sz = size;
            memcpy(raw + 4, &sz, 4);
        }
        g_byte_array_append(c->b, raw, size);
        return;
    }
}

static unsigned fuzz_run(const char *props, uint32_t seed, double seconds,
                         unsigned *jobs)
{
    Tnpu *t = tnpu_start(props);
    GRand *r = g_rand_new_with_seed(seed);
    gint64 end = g_get_monotonic_time() + (gint64)(seconds * G_USEC_PER_SEC);
    uint64_t ram_pa, ram_va, cmd_pa[4], cmd_va[4];
    const uint32_t ram_len = 64 * 1024;
    unsigned execs = 0;
    uint8_t exp = qpci_find_capability(t->dev, PCI_CAP_ID_EXP, 0);
    Cmds gemm;

    tnpu_setup(t);
    ram_va = buf(t, ram_len, &ram_pa);
    for (unsigned i = 0; i < 4; i++) {
        cmd_va[i] = buf(t, 4096, &cmd_pa[i]);
    }
    {
        /*
         * A valid GEMM program over the playground, to mutate (reaches deep
         * cluster paths).
         */
        Gemm g = { .m = 8,
                   .n = 16,
                   .k = 32,
                   .tm = 1,
                   .tn = 1,
                   .kt = 16,
                   .a = ram_va,
                   .b = ram_va + 4096,
                   .c = ram_va + 8192 };

        gemm.b = g_byte_array_new();
        gemm_build(t, &g, &gemm);
        g_assert_cmpuint(gemm.b->len, <=, 4096);
    }
    *jobs = 0;
    while (g_get_monotonic_time() < end) {
        unsigned q = g_rand_int_range(
            r, 0, t->queues + 1); /* one absent queue block too */
        unsigned action = g_rand_int_range(r, 0, 100);

        execs++;
        if (action < 25) {
            /*
             * Register write: known registers mostly, any offset and size
             * sometimes.
             */
            uint64_t off;
            unsigned size = 4;

            if (action < 10) {
                off =
                    fuzz_regs[g_rand_int_range(r, 0, G_N_ELEMENTS(fuzz_regs))];
            } else if (action < 20) {
                off = TNPU_REG_Q(q, fuzz_qregs[g_rand_int_range(
                                        r, 0, G_N_ELEMENTS(fuzz_qregs))]);
            } else {
                off = g_rand_int_range(r, 0, TNPU_BAR0_SIZE + 16);
                size = 1u << g_rand_int_range(r, 0, 4);
            }
            if (off == TNPU_REG_CTRL && g_rand_int_range(r, 0, 4)) {
                wr(t, off,
                   TNPU_CTRL_ENABLE); /* keep resets rarer than enables */
                continue;
            }
            if (off + size > TNPU_BAR0_SIZE) {
                off = TNPU_BAR0_SIZE - size;
            }
            switch (size) {
            case 1:
                qpci_io_writeb(t->dev, t->bar, off, fuzz_value(r));
                break;
            case 2:
                qpci_io_writew(t->dev, t->bar, off, fuzz_value(r));
                break;
            case 4:
                wr(t, off, fuzz_value(r));
                break;
            default:
                wr64(t, off, fuzz_value(r));
            }
        } else if (action < 35) {
            uint64_t off = g_rand_int_range(r, 0, TNPU_BAR0_SIZE / 4) * 4;

            if (g_rand_boolean(r)) {
                rd(t, off);
            } else {
                rd64(t, off & ~7ull);
            }
        } else if (action < 75) {
            /*
             * A job: random program in one of the command buffers, random-ish
             * ring entry.
             */
            Cmds cb = { g_byte_array_new() };
            unsigned n = g_rand_int_range(r, 1, 12),
                     slot = g_rand_int_range(r, 0, 4);
            struct tnpu_ring_entry e = {
                .ctx = g_rand_int_range(r, 0, 10) ? 0 : fuzz_value(r),
                .flags = g_rand_int_range(r, 0, 10) ? TNPU_RING_F_IRQ
                                                    : fuzz_value(r),
                .seqno = fuzz_value(r),
            };

            if (g_rand_int_range(r, 0, 4) == 0) {
                /* The valid program with a few random byte changes. */
                g_byte_array_append(cb.b, gemm.b->data, gemm.b->len);
                for (unsigned i = g_rand_int_range(r, 0, 5); i > 0; i--) {
                    cb.b->data[g_rand_int_range(r, 0, cb.b->len)] =
                        g_rand_int(r);
                }
            } else {
                for (unsigned i = 0; i < n && cb.b->len < 3900; i++) {
                    fuzz_command(&cb, r, ram_va, ram_len);
                }
            }
            if (cb.b->len > 4096) {
                g_byte_array_set_size(cb.b, 4096);
            }
            qtest_memwrite(t->qts, cmd_pa[slot], cb.b->data, cb.b->len);
            e.cmd_va =
                g_rand_int_range(r, 0, 10) ? cmd_va[slot] : fuzz_value(r);
            e.cmd_len = g_rand_int_range(r, 0, 10) ? cb.b->len : fuzz_value(r);
            if (g_rand_int_range(r, 0, 4) == 0) {
                /* a counter record: mostly into RAM, sometimes anywhere */
                e.flags |= TNPU_RING_F_COUNTERS;
                e.counters_addr = g_rand_int_range(r, 0, 5)
                                      ? fuzz_pa(t, r, ram_pa, ram_len - 256)
                                      : fuzz_value(r);
            } else {
                e.counters_addr = g_rand_int_range(r, 0, 20) ? 0 : 1;
            }
            g_byte_array_free(cb.b, true);
            if (q >= t->queues) {
                q = 0;
            }
            qtest_memwrite(t->qts, t->ring[q] + 32 * t->tail[q], &e, sizeof(e));
            t->tail[q] = (t->tail[q] + 1) % RING_SIZE;
            wr(t, TNPU_REG_Q(q, TNPU_Q_TAIL), t->tail[q]);
            wr(t, TNPU_REG_Q(q, TNPU_Q_DOORBELL), 1);
            if (g_rand_boolean(r)) {
                /* Recover a halted queue so jobs keep running. */
                wr(t, TNPU_REG_Q(q, TNPU_Q_CTRL),
                   TNPU_Q_CTRL_ENABLE | TNPU_Q_CTRL_SKIP);
            }
            (*jobs)++;
        } else if (action < 85) {
            /*
             * Mutate guest memory the device reads: PTEs, context entry, ring,
             * data.
             */
            uint64_t pa;

            switch (g_rand_int_range(r, 0, 5)) {
            case 0:
                pa = t->l1 + 8 * g_rand_int_range(r, 0, 512);
                break;
            case 1:
                pa = (g_rand_boolean(r) ? t->l2 : t->l4) +
                     8 * g_rand_int_range(r, 0, 512);
                break;
            case 2:
                pa = g_rand_boolean(r)
                         ? t->ctx_table + 8 * g_rand_int_range(r, 0, 2)
                         : t->l1 + 8 * g_rand_int_range(r, 0, 512);
                break;
            case 3:
                pa = t->ring[q % t->queues] +
                     8 * g_rand_int_range(r, 0, RING_SIZE * 4);
                break;
            default:
                pa = ram_pa + 8 * g_rand_int_range(r, 0, ram_len / 8);
            }
            if (pa >= t->l1 && pa < t->l1 + 4096 && g_rand_boolean(r)) {
                wq(t, pa, fuzz_pa(t, r, ram_pa, ram_len) | (g_rand_int(r) & 7));
            } else {
                wq(t, pa, fuzz_value(r));
            }
        } else if (action < 88) {
            /*
             * Repair what the driver owns (tables, MMU registers) so jobs get
             * deep again.
             */
            wq(t, t->l4 + 8 * TNPU_PT_INDEX(VA_BASE, 4),
               t->l3 | TNPU_PTE_VALID);
            wq(t, t->l3 + 8 * TNPU_PT_INDEX(VA_BASE, 3),
               t->l2 | TNPU_PTE_VALID);
            wq(t, t->l2 + 8 * TNPU_PT_INDEX(VA_BASE, 2),
               t->l1 | TNPU_PTE_VALID);
            wq(t, t->ctx_table, t->l4 | TNPU_CTX_VALID);
            wq(t, t->ctx_table + 8, 0);
            wr64(t, TNPU_REG_MMU_CTX_BASE_LO, t->ctx_table);
            wr(t, TNPU_REG_MMU_CTX_COUNT, 1);
            wr(t, TNPU_REG_CTRL, TNPU_CTRL_ENABLE);
            qpci_device_enable(t->dev);
            q %= t->queues;
            wr(t, TNPU_REG_Q(q, TNPU_Q_CTRL), 0);
            wr64(t, TNPU_REG_Q(q, TNPU_Q_RING_BASE_LO), t->ring[q]);
            wr(t, TNPU_REG_Q(q, TNPU_Q_RING_SIZE), RING_SIZE);
            wr(t, TNPU_REG_Q(q, TNPU_Q_CTRL), TNPU_Q_CTRL_ENABLE);
            t->tail[q] = 0;
        } else if (action < 90) {
            /* Point a queue's fence or the context table somewhere odd. */
            if (g_rand_boolean(r)) {
                wr64(t, TNPU_REG_Q(q % t->queues, TNPU_Q_FENCE_LO),
                     fuzz_pa(t, r, ram_pa, ram_len));
            } else {
                wr64(t, TNPU_REG_MMU_CTX_BASE_LO,
                     fuzz_pa(t, r, ram_pa, ram_len));
            }
        } else if (action < 93) {
            g_usleep(g_rand_int_range(r, 0, 2000));
        } else if (action < 95) {
            uint16_t cmd = qpci_config_readw(t->dev, PCI_COMMAND);

            qpci_config_writew(t->dev, PCI_COMMAND, cmd ^ PCI_COMMAND_MASTER);
        } else if (action < 97) {
            /* Reset and bring the device back (the driver's recovery path). */
            if (g_rand_boolean(r)) {
                wr(t, TNPU_REG_CTRL, TNPU_CTRL_RESET);
            } else {
                qpci_config_writew(t->dev, exp + PCI_EXP_DEVCTL,
                                   PCI_EXP_DEVCTL_BCR_FLR);
                qpci_device_enable(t->dev);
                t->bar = qpci_iomap(t->dev, TNPU_BAR_REGS, NULL);
                t->dev->msix_enabled = false;
            }
            tnpu_setup(t);
        } else {
            wr(t, TNPU_REG_CTRL, TNPU_CTRL_ENABLE);
            qpci_device_enable(t->dev);
            for (unsigned i = 0; i < t->queues; i++) {
                wr(t, TNPU_REG_Q(i, TNPU_Q_CTRL),
                   TNPU_Q_CTRL_ENABLE | TNPU_Q_CTRL_SKIP);
                wr(t, TNPU_REG_Q(i, TNPU_Q_DOORBELL), 1);
            }
        }
        if (execs % 64 == 0) {
            g_assert_cmphex(rd(t, TNPU_REG_ID), ==, TNPU_ID_VALUE);
        }
    }
    /* Still alive and still correct: a reset and a real job work. */
    wr(t, TNPU_REG_CTRL, TNPU_CTRL_RESET);
    qpci_device_enable(t->dev);
    tnpu_setup(t);
    {
        g_autofree int32_t *ref = NULL;
        uint64_t va, cpa;
        uint32_t len;

        cpa = gemm_prepare(t, 4, 16, 16, seed, &va, &len, &ref);
        submit(t, 0, va, len, 1234);
        wait_idle(t, 0);
        g_assert_cmpuint(rd(t, TNPU_REG_Q(0, TNPU_Q_ERR_CODE)), ==, 0);
        g_assert_cmphex(qtest_readq(t->qts, t->fence[0]), ==, 1234);
        check_gemm(t, cpa, ref, 4, 16);
    }
    g_byte_array_free(gemm.b, true);
    g_rand_free(r);
    tnpu_stop(t);
    return execs;
}

/*
 * Host memory under hostile jobs on every queue (issue 17 target: QEMU's RSS
 * stays within 256 MiB above the configured SRAM).  The device has the maximum
 * queue count (TNPU_MAX_QUEUES) and every queue runs, at the same time, a job
 * whose command buffer is the largest allowed (CAP_CMDBUF, copied whole by the
 * executor) and starts with the scratch-hungriest MAC: bf16, K = 65535, pitch-0
 * operands (a capped widening panel plus the GEMM kernels' packing scratch).
 * "Configured SRAM" is every on-chip memory the properties ask for:
 * queues x (rows x (sram + cols x pes x (NUM_ACCS + 1) x ACC_ELEMS x 4) + ring
 * memory) (tnpu_config_onchip_bytes() x queues).  The RSS increase over the
 * machine at rest (set up, buffers written, no job yet) is sampled from
 * /proc/<pid>/status while the jobs run.
 */
#define RSS_BIG_VA (VA_BASE + (2u << 20)) /* 16 MiB behind the test window */

static uint64_t vm_rss(Tnpu *t)
{
    g_autofree char *path =
        g_strdup_printf("/proc/%d/status", (int)qtest_pid(t->qts));
    g_autofree char *txt = NULL;
    const char *p;

    g_assert(g_file_get_contents(path, &txt, NULL, NULL));
    p = strstr(txt, "VmRSS:");
    g_assert(p);
    return g_ascii_strtoull(p + 6, NULL, 10) << 10;
}

static void test_rss_hostile_all_queues(void)
{
    const uint32_t K = 65535, tm = 16, tn = 2, pes = 16, N = pes * tn;
    const uint32_t a_off = 0, b_off = 131072, o_off = 135168;
    const uint32_t sram = 512u << 10;
    Tnpu *t = tnpu_start("rows=1,cols=1,pes=16,sram=524288,queues=16");
    uint64_t onchip = (uint64_t)t->queues *
        ((uint64_t)t->rows * (sram + (uint64_t)t->cols * t->pes *
                                         TNPU_ACC_ELEMS * 4 *
                                         (TNPU_NUM_ACCS + 1)) +
         TNPU_RING_MEM_BYTES);
    Cmds cb = { g_byte_array_new() };
    uint64_t opa, ova, big_pa, rest, peak = 0;
    uint8_t pkt[512];
    g_autofree uint16_t *ab = g_new0(uint16_t, b_off / 2 + N);
    gint64 t0, us;
    bool busy = true;

    g_assert_cmpuint(t->queues, ==, TNPU_MAX_QUEUES);
    g_assert_cmpuint(t->pes, ==, pes);
    tnpu_setup(t);
    /* Operands: A one bf16 row (pitch 0), B one bf16 row (pitch 0). */
    for (uint32_t k = 0; k < K; k++) {
        ab[k] = 0x3f80 | (k & 0x7f);
    }
    for (uint32_t j = 0; j < N; j++) {
        ab[b_off / 2 + j] = 0xbf00 | (j & 0x7f);
    }
    ova = buf(t, o_off + tm * N * 4, &opa);
    qtest_memwrite(t->qts, opa, ab, b_off + N * 2);
    cmd_dma(&cb, true, ova, 0, 0, 0, 0, 0, b_off + N * 2, 1);
    {
        struct tnpu_cfg_hdr h = {
            .n_instr = 4, .n_operands = 3, .loop_end = 2, .repeat = 1
        };
        uint16_t ins[4] = {
            TNPU_INSN_LD(0, 0, 0, 1),
            TNPU_INSN_LD(1, 0, 1, 0),
            TNPU_INSN_MAC(0, 0, 0, 0, 0),
            TNPU_INSN_ST(0, 2, 1),
        };
        struct tnpu_operand ops[3] = {
            { .addr = a_off, .rows = tm, .cols = K,
              .dtype = TNPU_DTYPE_BF16 },
            { .addr = b_off, .pe_stride = (int32_t)(tn * 2), .rows = K,
              .cols = tn, .dtype = TNPU_DTYPE_BF16 },
            { .addr = o_off, .pe_stride = (int32_t)(tn * 4), .pitch = N * 4,
              .rows = tm, .cols = tn, .dtype = TNPU_DTYPE_FP32 },
        };
        uint32_t len = 17 + sizeof(ins) + sizeof(ops);

        pkt[0] = TNPU_PKT_CONFIG_BYTE(0);
        memcpy(pkt + 1, &h, 16);
        memcpy(pkt + 17, ins, sizeof(ins));
        memcpy(pkt + 17 + sizeof(ins), ops, sizeof(ops));
        cmd_dispatch(&cb, 0, 0, pkt, len);
        pkt[0] = TNPU_PKT_EXE_BYTE(0, TNPU_PKT_LAST | TNPU_PKT_SHIFT_OUT);
        cmd_dispatch(&cb, 0, 0, pkt, 1);
    }
    cmd_dma(&cb, false, ova + o_off, 0, 0, 0, o_off, 0, tm * N * 4, 1);
    while (cb.b->len < TNPU_CMDBUF_MAX) {
        cmd_raw(&cb, TNPU_CMD_NOP, 8);
    }
    g_assert_cmpuint(cb.b->len, ==, TNPU_CMDBUF_MAX);
    /* The command buffer: 16 MiB at RSS_BIG_VA, one level-1 table per 2 MiB. */
    big_pa = alloc_page_aligned(t, TNPU_CMDBUF_MAX);
    qtest_memwrite(t->qts, big_pa, cb.b->data, cb.b->len);
    g_byte_array_free(cb.b, true);
    for (uint64_t off = 0; off < TNPU_CMDBUF_MAX; off += 2u << 20) {
        uint64_t l1 = alloc_zeroed(t, 4096);

        wq(t, t->l2 + 8 * TNPU_PT_INDEX(RSS_BIG_VA + off, 2),
           l1 | TNPU_PTE_VALID);
        for (uint64_t p = 0; p < (2u << 20); p += 4096) {
            wq(t, l1 + 8 * TNPU_PT_INDEX(RSS_BIG_VA + off + p, 1),
               (big_pa + off + p) | TNPU_PTE_VALID | TNPU_PTE_READ);
        }
    }

    rest = vm_rss(t);
    t0 = g_get_monotonic_time();
    for (unsigned q = 0; q < t->queues; q++) {
        submit(t, q, RSS_BIG_VA, TNPU_CMDBUF_MAX, 1000 + q);
    }
    while (busy) {
        busy = false;
        for (unsigned q = 0; q < t->queues; q++) {
            busy |= qtest_readq(t->qts, t->fence[q]) != 1000 + q;
        }
        peak = MAX(peak, vm_rss(t));
        for (unsigned q = 0; q < t->queues; q++) {
            g_assert_cmphex(rd(t, TNPU_REG_Q(q, TNPU_Q_ERR_CODE)) << 8 |
                                rd(t, TNPU_REG_Q(q, TNPU_Q_ERR_INFO)),
                            ==, 0);
        }
        g_assert_cmpint(g_get_monotonic_time() - t0, <, 120 * G_USEC_PER_SEC);
        g_usleep(2000);
    }
    g_test_message("16 queues x (16 MiB command buffer + bf16 MAC K=65535): "
                   "RSS at rest %" PRIu64 " MiB, peak %" PRIu64
                   " MiB (+%" PRIu64 " MiB), configured SRAM %" PRIu64
                   " MiB, %.2f s",
                   rest >> 20, peak >> 20, (peak - rest) >> 20, onchip >> 20,
                   (g_get_monotonic_time() - t0) / 1e6);
    for (unsigned q = 0; q < t->queues; q++) {
        g_assert_cmpuint(rd(t, TNPU_REG_Q(q, TNPU_Q_JOBS_DONE)), ==, 1);
        g_assert_false(rd(t, TNPU_REG_Q(q, TNPU_Q_STATUS)) &
                       TNPU_Q_STATUS_ERROR);
    }
    g_assert_cmpuint(peak - rest, <=, (256ull << 20) + onchip);

    /*
     * CTRL.RESET while most workers wait for a run token: the waits are
     * abandoned at once (RESET_PENDING clears within 100 ms) and no token is
     * lost (all 16 queues then complete again).
     */
    for (unsigned q = 0; q < t->queues; q++) {
        submit(t, q, RSS_BIG_VA, TNPU_CMDBUF_MAX, 2000 + q);
    }
    g_usleep(2000);
    wr(t, TNPU_REG_CTRL, TNPU_CTRL_RESET);
    us = wait_status_clear(t, TNPU_STATUS_RESET_PENDING);
    g_test_message("reset with 16 queues busy done after %" PRId64 " us", us);
    g_assert_cmpint(us, <, 100 * 1000);
    tnpu_setup(t);
    for (unsigned q = 0; q < t->queues; q++) {
        submit(t, q, RSS_BIG_VA, TNPU_CMDBUF_MAX, 3000 + q);
    }
    for (unsigned q = 0; q < t->queues; q++) {
        wait_idle(t, q);
        g_assert_cmphex(qtest_readq(t->qts, t->fence[q]), ==, 3000 + q);
    }
    tnpu_stop(t);
}

static void test_fuzz(gconstpointer data)
{
    const char *props = data;
    const char *env_s = g_getenv("TNPU_FUZZ_SECONDS");
    const char *env_seed = g_getenv("TNPU_FUZZ_SEED");
    double seconds = env_s ? g_ascii_strtod(env_s, NULL) : 2.0;
    uint32_t seed =
        env_seed ? (uint32_t)g_ascii_strtoull(env_seed, NULL, 0) : 1;
    unsigned execs, jobs;

    g_test_message("tnpu fuzz: props '%s' seed %u seconds %.1f", props, seed,
                   seconds);
    execs = fuzz_run(props[0] ? props : NULL, seed, seconds, &jobs);
    g_test_message("tnpu fuzz: props '%s' seed %u: %u actions, %u jobs "
                   "submitted, no crash",
                   props, seed, execs, jobs);
}

/* ---- migration (qemu-device.md "Migration") ------------------------------ */

/*
 * Waits until @qts's migration has ended; returns its error description
 * (NULL when it completed).  Fails the test if the status is @unexpected.
 */
static char *wait_migration_end(QTestState *qts, const char *unexpected)
{
    gint64 end = g_get_monotonic_time() + 4 * TIMEOUT_US;

    for (;;) {
        QDict *resp = qtest_qmp(qts, "{ 'execute': 'query-migrate' }");
        QDict *ret = qdict_get_qdict(resp, "return");
        const char *st = ret ? qdict_get_try_str(ret, "status") : NULL;
        char *desc = NULL;
        bool done = false;

        if (st && (!strcmp(st, "completed") || !strcmp(st, "failed"))) {
            done = true;
            desc = !strcmp(st, "failed") ?
                g_strdup(qdict_get_try_str(ret, "error-desc") ?: "?") : NULL;
            if (!strcmp(st, unexpected)) {
                g_test_message("migration %s: %s", st, desc ?: "");
                g_assert_not_reached();
            }
        }
        qobject_unref(resp);
        if (done) {
            return desc;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(10000);
    }
}

/* Waits until @qts's migration is "completed"; fails on "failed". */
static void wait_migration(QTestState *qts)
{
    g_assert_null(wait_migration_end(qts, "failed"));
}

/* Every 4-byte register of BAR0. */
static uint32_t *read_bar0(Tnpu *t)
{
    uint32_t *r = g_new(uint32_t, TNPU_BAR0_SIZE / 4);

    for (uint32_t off = 0; off < TNPU_BAR0_SIZE; off += 4) {
        r[off / 4] = rd(t, off);
    }
    return r;
}

/*
 * Saves the source to @file and starts a destination from it; @t then drives
 * the destination (same guest allocator, BARs and MSI-X layout: they are in
 * the migrated config space and RAM).
 */
static void migrate_via_file(Tnpu *t, const char *file, const char *props)
{
    g_autofree char *out = g_strdup_printf("exec:cat > %s", file);
    g_autofree char *in = g_strdup_printf("exec:cat %s", file);
    QPCIDevice *dev;
    QTestState *dst;

    qtest_qmp_assert_success(t->qts, "{ 'execute': 'migrate', 'arguments': "
                             "{ 'uri': %s } }", out);
    wait_migration(t->qts);

    dst = qtest_initf("-M q35 -device tnpu,addr=04.0%s%s -incoming defer",
                      props ? "," : "", props ? props : "");
    qtest_qmp_assert_success(dst, "{ 'execute': 'migrate-incoming', "
                             "'arguments': { 'uri': %s } }", in);
    wait_migration(dst);

    qpci_free_pc(t->bus);
    qtest_quit(t->qts);
    t->qts = dst;
    t->bus = qpci_new_pc(dst, &t->alloc);
    dev = g_memdup2(t->dev, sizeof(*t->dev));
    dev->bus = t->bus;
    g_free(t->dev);
    t->dev = dev;
}

/*
 * A device with history (a finished GEMM, a faulted job that halted its queue,
 * counters, the mapped context) and a job running when the migration starts:
 * the job completes before the save (fence, result, MSI-X pending), every
 * register reads the same on the destination, and the destination runs the
 * next jobs with correct results.
 */
static void test_migrate(void)
{
    Tnpu *t = tnpu_start(NULL);
    g_autofree int32_t *ref0 = NULL, *ref1 = NULL;
    g_autofree uint32_t *before = NULL, *after = NULL;
    g_autofree char *file = NULL;
    Cmds bad = { g_byte_array_new() };
    uint64_t cmd_va, cpa0, cpa1, marker_pa, long_va;
    uint32_t cmd_len, long_len, m = 8, n = 32, k = 48;
    int fd;

    fd = g_file_open_tmp("tnpu-migrate-XXXXXX", &file, NULL);
    g_assert_cmpint(fd, >=, 0);
    close(fd);
    tnpu_setup(t);

    cpa0 = gemm_prepare(t, m, n, k, 1, &cmd_va, &cmd_len, &ref0);
    submit(t, 0, cmd_va, cmd_len, 0x100);
    g_assert(wait_for(t, TNPU_MSIX_VEC_QUEUE(0)));
    check_gemm(t, cpa0, ref0, m, n);

    cmd_dma(&bad, true, VA_UNMAPPED + 0x40, 64, 0, 0, 0, 64, 64, 1);
    cmd_va = cmds_upload(t, &bad, &cmd_len);
    submit(t, 1, cmd_va, cmd_len, 0x200);
    g_assert(wait_for(t, TNPU_MSIX_VEC_ERROR));
    g_assert(rd(t, TNPU_REG_Q(1, TNPU_Q_STATUS)) & TNPU_Q_STATUS_ERROR);

    /* In flight on queue 2 when the VM stops: drained, not migrated half-run */
    long_va = long_job(t, &long_len, &marker_pa);
    submit(t, 2, long_va, long_len, 0x300);
    wait_marker(t, marker_pa);
    g_assert(rd(t, TNPU_REG_Q(2, TNPU_Q_STATUS)) & TNPU_Q_STATUS_BUSY);

    migrate_via_file(t, file, NULL);
    g_assert_cmphex(qtest_readq(t->qts, t->fence[2]), ==, 0x300);
    g_assert_cmphex(rd(t, TNPU_REG_Q(2, TNPU_Q_STATUS)), ==,
                    TNPU_Q_STATUS_ENABLED);
    g_assert(qpci_msix_pending(t->dev, TNPU_MSIX_VEC_QUEUE(2)));
    before = read_bar0(t);

    /* Once more, idle: the registers survive a second hop unchanged. */
    migrate_via_file(t, file, NULL);
    after = read_bar0(t);
    for (uint32_t i = 0; i < TNPU_BAR0_SIZE / 4; i++) {
        if (before[i] != after[i]) {
            g_test_message("register 0x%x: 0x%x before, 0x%x after", i * 4,
                           before[i], after[i]);
        }
        g_assert_cmphex(before[i], ==, after[i]);
    }
    g_assert_cmphex(rd64(t, TNPU_REG_Q(0, TNPU_Q_DONE_SEQNO_LO)), ==, 0x100);
    g_assert_cmpuint(rd64(t, TNPU_REG_Q(0, TNPU_Q_PERF(TNPU_CNT_MACS_DENSE))),
                     ==, (uint64_t)m * n * k);
    g_assert_cmpuint(rd(t, TNPU_REG_Q(1, TNPU_Q_ERR_CODE)), ==,
                     TNPU_ERR_MMU_NOT_PRESENT);
    g_assert_cmpuint(rd(t, TNPU_REG_MMU_FAULTS), ==, 1);
    g_assert_cmphex(rd64(t, TNPU_REG_MMU_CTX_BASE_LO), ==, t->ctx_table);

    /* The destination runs on: a new GEMM in the migrated context ... */
    cpa1 = gemm_prepare(t, m, n, k, 2, &cmd_va, &cmd_len, &ref1);
    submit(t, 0, cmd_va, cmd_len, 0x101);
    wait_idle(t, 0);
    g_assert_cmphex(qtest_readq(t->qts, t->fence[0]), ==, 0x101);
    check_gemm(t, cpa1, ref1, m, n);
    g_assert_cmpuint(rd(t, TNPU_REG_Q(0, TNPU_Q_JOBS_DONE)), ==, 2);
    /* ... and the halted queue resumes after SKIP */
    submit(t, 1, cmd_va, cmd_len, 0x201);
    wr(t, TNPU_REG_Q(1, TNPU_Q_CTRL), TNPU_Q_CTRL_ENABLE | TNPU_Q_CTRL_SKIP);
    wait_idle(t, 1);
    g_assert_cmphex(qtest_readq(t->qts, t->fence[1]), ==, 0x201);
    check_gemm(t, cpa1, ref1, m, n);
    unlink(file);
    tnpu_stop(t);
}

/*
 * A job that outlives the drain (x-drain-ms=0, a job running for seconds)
 * fails the migration in pre_save instead of being saved half-run or lost;
 * the source resumes, the job completes normally (fence, no error), and the
 * idle device then migrates.
 */
static void test_migrate_busy(void)
{
    Tnpu *t = tnpu_start("x-drain-ms=0");
    g_autofree char *file = NULL, *out = NULL, *desc = NULL;
    uint64_t page_va, page_pa;
    gint64 end;
    int fd;

    fd = g_file_open_tmp("tnpu-migrate-XXXXXX", &file, NULL);
    g_assert_cmpint(fd, >=, 0);
    close(fd);
    out = g_strdup_printf("exec:cat > %s", file);
    tnpu_setup(t);
    hostile_job_streaming(t, 0, 0x400, &page_va, &page_pa);

    qtest_qmp_assert_success(t->qts, "{ 'execute': 'migrate', 'arguments': "
                             "{ 'uri': %s } }", out);
    desc = wait_migration_end(t->qts, "completed");
    g_test_message("migration failed as it should: %s", desc);
    g_assert(strstr(desc, "tnpu"));

    /* The source runs on and the job completes, neither aborted nor re-run */
    end = g_get_monotonic_time() + TIMEOUT_US;
    for (;;) {
        QDict *resp = qtest_qmp(t->qts, "{ 'execute': 'query-status' }");
        bool running = qdict_get_bool(qdict_get_qdict(resp, "return"),
                                      "running");

        qobject_unref(resp);
        if (running) {
            break;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(10000);
    }
    wait_idle(t, 0);
    g_assert_cmphex(qtest_readq(t->qts, t->fence[0]), ==, 0x400);
    g_assert_cmphex(rd(t, TNPU_REG_Q(0, TNPU_Q_STATUS)), ==,
                    TNPU_Q_STATUS_ENABLED);
    g_assert_cmpuint(rd(t, TNPU_REG_Q(0, TNPU_Q_JOBS_DONE)), ==, 1);

    migrate_via_file(t, file, "x-drain-ms=0");
    g_assert_cmphex(rd64(t, TNPU_REG_Q(0, TNPU_Q_DONE_SEQNO_LO)), ==, 0x400);
    g_assert_cmpuint(rd(t, TNPU_REG_Q(0, TNPU_Q_JOBS_DONE)), ==, 1);
    unlink(file);
    tnpu_stop(t);
}

/*
 * A destination of another geometry refuses the stream (the model names the
 * field: "tnpu: migration stream: rows is 4, this device has 2") and exits
 * with an error instead of running with registers of another device.
 */
static void test_migrate_other_geometry(void)
{
    Tnpu *t = tnpu_start(NULL);
    g_autofree char *file = NULL, *out = NULL, *in = NULL;
    QTestState *dst;
    gint64 end;
    int fd;

    fd = g_file_open_tmp("tnpu-migrate-XXXXXX", &file, NULL);
    g_assert_cmpint(fd, >=, 0);
    close(fd);
    out = g_strdup_printf("exec:cat > %s", file);
    in = g_strdup_printf("exec:cat %s", file);
    tnpu_setup(t);
    qtest_qmp_assert_success(t->qts, "{ 'execute': 'migrate', 'arguments': "
                             "{ 'uri': %s } }", out);
    wait_migration(t->qts);

    dst = qtest_init("-M q35 -device tnpu,addr=04.0,rows=2 -incoming defer");
    qtest_set_expected_status(dst, EXIT_FAILURE);
    qtest_qmp_assert_success(dst, "{ 'execute': 'migrate-incoming', "
                             "'arguments': { 'uri': %s } }", in);
    end = g_get_monotonic_time() + TIMEOUT_US;
    while (qtest_probe_child(dst)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(10000);
    }
    qtest_quit(dst);
    unlink(file);
    tnpu_stop(t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/tnpu/identity", test_identity);
    qtest_add_func("/tnpu/properties", test_properties);
    qtest_add_func("/tnpu/bad-properties", test_bad_properties);
    qtest_add_func("/tnpu/islands-property", test_islands_property);
    qtest_add_func("/tnpu/gemm-int8", test_gemm_int8);
    qtest_add_func("/tnpu/vec-units", test_vec_units);
    qtest_add_func("/tnpu/dma-deq", test_dma_deq);
    qtest_add_func("/tnpu/counter-records", test_counter_records);
    qtest_add_func("/tnpu/error/unknown-command", test_unknown_command);
    qtest_add_func("/tnpu/error/mmu-fault", test_mmu_fault);
    qtest_add_func("/tnpu/error/guest-log-and-thread-names",
                   test_guest_errors_and_thread_names);
    qtest_add_func("/tnpu/error/bus", test_bus_error);
    qtest_add_func("/tnpu/error/bus-master-off-mid-job",
                   test_bus_master_off_mid_job);
    qtest_add_func("/tnpu/reset/register", test_reset_register);
    qtest_add_func("/tnpu/reset/flr", test_reset_flr);
    qtest_add_func("/tnpu/reset/system", test_reset_system);
    qtest_add_func("/tnpu/preempt/resume", test_preempt_resume);
    qtest_add_func("/tnpu/preempt/malformed-resume", test_preempt_malformed);
    qtest_add_func("/tnpu/reset/hostile-dma", test_reset_hostile);
    qtest_add_func("/tnpu/mmu-invalidate-handshake",
                   test_mmu_invalidate_handshake);
    qtest_add_data_func("/tnpu/hot-unplug", NULL, test_hot_unplug);
    qtest_add_data_func("/tnpu/hot-unplug/hostile-dma", (void *)1,
                        test_hot_unplug);
    qtest_add_func("/tnpu/two-queues", test_two_queues);
    qtest_add_func("/tnpu/doorbell-bursts", test_doorbell_bursts);
    qtest_add_func("/tnpu/queues-concurrent", test_queues_concurrent);
    qtest_add_func("/tnpu/run-tokens-fifo", test_run_tokens_fifo);
    qtest_add_func("/tnpu/irq-mask-and-enable", test_irq_mask_and_enable);
    qtest_add_func("/tnpu/sync-mode", test_sync_mode);
    qtest_add_func("/tnpu/msi-fallback", test_msi_fallback);
    qtest_add_func("/tnpu/power-management", test_power_management);
    qtest_add_func("/tnpu/migrate", test_migrate);
    qtest_add_func("/tnpu/migrate-busy", test_migrate_busy);
    qtest_add_func("/tnpu/migrate-other-geometry", test_migrate_other_geometry);
    qtest_add_func("/tnpu/rss-hostile-all-queues",
                   test_rss_hostile_all_queues);
    /*
     * A modeled-cycle watchdog keeps random (e.g. mutated-loop) jobs short in
     * wall time too.
     */
    qtest_add_data_func("/tnpu/fuzz/threaded", "watchdog=10000000", test_fuzz);
    qtest_add_data_func("/tnpu/fuzz/sync", "x-sync=on,watchdog=10000000",
                        test_fuzz);
    return g_test_run();
}
