/* SPDX-License-Identifier: MIT */
/*
 * backend_sim.c - the "sim" backend: the golden model (qemu-device/core) in process.
 *
 * Buffers are host allocations given bus (physical) pages in a private page map; a 4-level device
 * page table (mmu.md) maps each buffer at VA = PA + SIM_VA_BIAS in context 0.  Jobs run
 * synchronously in accel submit (the executor is the same code the QEMU device runs, so results and
 * counters are identical); waiting is therefore immediate.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tnpu/tnpu_core.h"

#define SIM_VA_BIAS 0x100000000ull

struct sim {
	struct tnpu_config cfg;
	struct tnpu_exec *ex;
	struct tnpu_mem_ops ops;
	uint8_t **pages;	/* pfn -> host page */
	uint64_t n_pages, cap_pages;
	uint64_t next_pfn;
	uint8_t *ctx_table;
	uint64_t ctx_table_pa;
	uint8_t *root;
	uint64_t root_pa;
	struct accel_buffer *cmd;	/* command-buffer staging, grows */
	struct { uint64_t pfn, count; } *holes;	/* freed bus-page ranges, reused first-fit */
	unsigned n_holes, cap_holes;
};

static int sim_mem_read(void *opaque, uint64_t pa, void *buf, size_t len)
{
	struct sim *s = opaque;
	uint64_t pfn = pa >> 12;

	if (pfn >= s->n_pages || !s->pages[pfn] || (pa & 4095) + len > 4096)
		return -1;
	memcpy(buf, s->pages[pfn] + (pa & 4095), len);
	return 0;
}

static int sim_mem_write(void *opaque, uint64_t pa, const void *buf, size_t len)
{
	struct sim *s = opaque;
	uint64_t pfn = pa >> 12;

	if (pfn >= s->n_pages || !s->pages[pfn] || (pa & 4095) + len > 4096)
		return -1;
	memcpy(s->pages[pfn] + (pa & 4095), buf, len);
	return 0;
}

/* Give count host pages starting at host a contiguous range of bus pages; returns the first pfn. */
static int sim_map_pages(struct sim *s, uint8_t *host, uint64_t count, uint64_t *pfn_out)
{
	uint64_t pfn = s->next_pfn;

	for (unsigned i = 0; i < s->n_holes; i++) {
		if (s->holes[i].count < count)
			continue;
		pfn = s->holes[i].pfn;
		s->holes[i].pfn += count;
		s->holes[i].count -= count;
		if (!s->holes[i].count)
			s->holes[i] = s->holes[--s->n_holes];
		for (uint64_t j = 0; j < count; j++)
			s->pages[pfn + j] = host + j * 4096;
		*pfn_out = pfn;
		return 0;
	}

	if (pfn + count > s->cap_pages) {
		uint64_t cap = s->cap_pages ? s->cap_pages : 1024;
		uint8_t **np;

		while (cap < pfn + count)
			cap *= 2;
		np = realloc(s->pages, cap * sizeof(*np));
		if (!np)
			return -ENOMEM;
		memset(np + s->cap_pages, 0, (cap - s->cap_pages) * sizeof(*np));
		s->pages = np;
		s->cap_pages = cap;
	}
	for (uint64_t i = 0; i < count; i++)
		s->pages[pfn + i] = host + i * 4096;
	s->next_pfn += count;
	s->n_pages = s->next_pfn;
	*pfn_out = pfn;
	return 0;
}

static uint8_t *sim_table_page(struct sim *s, uint64_t *pa)
{
	uint8_t *p = aligned_alloc(4096, 4096);
	uint64_t pfn;

	if (!p)
		return NULL;
	memset(p, 0, 4096);
	if (sim_map_pages(s, p, 1, &pfn)) {
		free(p);
		return NULL;
	}
	*pa = pfn << 12;
	return p;
}

/* Leaf PTE slot of va (creating tables when create). */
static uint64_t *sim_pte(struct sim *s, uint64_t va, bool create)
{
	uint8_t *table = s->root;

	for (unsigned level = 4; level > 1; level--) {
		uint64_t *e = (uint64_t *)(void *)(table + 8 * TNPU_PT_INDEX(va, level));

		if (!(*e & TNPU_PTE_VALID)) {
			uint64_t pa;

			if (!create || !sim_table_page(s, &pa))
				return NULL;
			*e = pa | TNPU_PTE_VALID;
		}
		table = s->pages[(*e & TNPU_PTE_ADDR_MASK) >> 12];
	}
	return (uint64_t *)(void *)(table + 8 * TNPU_PT_INDEX(va, 1));
}

static int sim_buf_alloc(struct accel_dev *dev, struct accel_buffer *b)
{
	struct sim *s = dev->priv;
	uint64_t pfn, pages = b->alloc / 4096;
	uint8_t *host = aligned_alloc(4096, b->alloc);

	if (!host)
		return accel_seterr(dev, -ENOMEM, "sim: cannot allocate %llu bytes", (unsigned long long)b->alloc);
	memset(host, 0, b->alloc);
	if (sim_map_pages(s, host, pages + 1, &pfn)) {	/* + 1 unmapped guard page */
		free(host);
		return accel_seterr(dev, -ENOMEM, "sim: out of memory for the page map");
	}
	s->pages[pfn + pages] = NULL;
	b->ptr = host;
	b->va = (pfn << 12) + SIM_VA_BIAS;
	for (uint64_t i = 0; i < pages; i++) {
		uint64_t *pte = sim_pte(s, b->va + i * 4096, true);

		if (!pte) {
			for (uint64_t j = 0; j < i; j++)
				*sim_pte(s, b->va + j * 4096, false) = 0;
			for (uint64_t j = 0; j < pages; j++)
				s->pages[pfn + j] = NULL;
			free(host);
			return accel_seterr(dev, -ENOMEM, "sim: out of memory for page tables");
		}
		*pte = ((pfn + i) << 12) | TNPU_PTE_VALID | TNPU_PTE_READ | TNPU_PTE_WRITE;
	}
	return 0;
}

static void sim_buf_free(struct accel_dev *dev, struct accel_buffer *b)
{
	struct sim *s = dev->priv;
	uint64_t pfn = (b->va - SIM_VA_BIAS) >> 12;

	for (uint64_t i = 0; i < b->alloc / 4096; i++) {
		uint64_t *pte = sim_pte(s, b->va + i * 4096, false);

		if (pte)
			*pte = 0;
		s->pages[pfn + i] = NULL;
	}
	free(b->ptr);
	b->ptr = NULL;
	/* The range (with its guard page) can hold a later buffer; if the list cannot grow the pages
	 * are simply not reused. */
	if (s->n_holes == s->cap_holes) {
		unsigned cap = s->cap_holes ? s->cap_holes * 2 : 16;
		void *nh = realloc(s->holes, cap * sizeof(*s->holes));

		if (!nh)
			return;
		s->holes = nh;
		s->cap_holes = cap;
	}
	s->holes[s->n_holes].pfn = pfn;
	s->holes[s->n_holes].count = b->alloc / 4096 + 1;
	s->n_holes++;
}

static int sim_submit(struct accel_dev *dev, const uint8_t *cmds, size_t len, struct accel_buffer *const *bos,
		      unsigned n_bos, struct accel_hwjob *const *deps, unsigned n_deps, struct accel_hwjob *hw)
{
	struct sim *s = dev->priv;
	struct tnpu_result res;
	int ret;

	(void)bos;
	(void)n_bos;
	if (dev->submit_off)
		return accel_seterr(dev, -EPERM, "sim option submit=off: this device runs no job");
	/* Jobs run at submit in submission order, so every dependency has already completed. */
	for (unsigned i = 0; i < n_deps; i++)
		if (deps[i]->status)
			return accel_seterr(dev, -ECANCELED, "a dependency failed");
	if (!s->cmd || s->cmd->alloc < len) {
		if (s->cmd) {
			sim_buf_free(dev, s->cmd);
			free(s->cmd);
			s->cmd = NULL;
		}
		s->cmd = calloc(1, sizeof(*s->cmd));
		if (!s->cmd)
			return accel_seterr(dev, -ENOMEM, "out of memory");
		s->cmd->dev = dev;
		s->cmd->size = len;
		s->cmd->alloc = (len + 4095) & ~4095ull;
		ret = sim_buf_alloc(dev, s->cmd);
		if (ret) {
			free(s->cmd);
			s->cmd = NULL;
			return ret;
		}
	}
	memcpy(s->cmd->ptr, cmds, len);
	memset(&res, 0, sizeof(res));
	if (accel_trace_on(dev))
		accel_trace_job_begin(dev, s->ex);
	tnpu_exec_run_cmdbuf(s->ex, &s->ops, s->ctx_table_pa, 1, 0, s->cmd->va, (uint32_t)len, &res);
	if (accel_trace_on(dev))
		accel_trace_job_end(dev, s->ex, res.counters[TNPU_CNT_TOTAL_CYCLES]);
	memset(hw, 0, sizeof(*hw));
	hw->done = true;
	hw->hw_error = res.error;
	hw->err_info = res.err_info;
	hw->err_cmd_offset = res.err_cmd_offset;
	hw->err_addr = res.err_addr;
	for (unsigned i = 0; i < TNPU_CNT_NUM && i < ACCEL_MAX_COUNTERS; i++)
		hw->counters[i] = res.counters[i];
	hw->has_row_busy = true;
	memcpy(hw->row_busy, res.row_busy, sizeof(hw->row_busy));
	if (res.error) {
		hw->status = -EIO;
		accel_seterr(dev, -EIO, "device error %s (code %u) at command offset %u, info 0x%x, addr 0x%llx",
			     tnpu_err_name(res.error), res.error, res.err_cmd_offset, res.err_info,
			     (unsigned long long)res.err_addr);
	}
	return 0;
}

static int sim_wait(struct accel_dev *dev, struct accel_hwjob *hw, int64_t timeout_ns)
{
	(void)dev;
	(void)timeout_ns;
	return hw->done ? 0 : -ETIME;
}

static void sim_close(struct accel_dev *dev)
{
	struct sim *s = dev->priv;

	if (!s)
		return;
	if (s->cmd) {
		sim_buf_free(dev, s->cmd);
		free(s->cmd);
	}
	/* Table pages are the only remaining owners of pages[]; buffers were freed by the user
	 * (leaked user buffers keep their host memory; their pages are not table pages). */
	free(s->ctx_table);
	s->ctx_table = NULL;
	tnpu_exec_free(s->ex);
	{
		/* free page-table pages: walk the tree from the root */
		uint8_t *l4 = s->root;

		for (unsigned a = 0; a < 512; a++) {
			uint64_t e4 = ((uint64_t *)(void *)l4)[a];
			uint8_t *l3;

			if (!(e4 & TNPU_PTE_VALID))
				continue;
			l3 = s->pages[(e4 & TNPU_PTE_ADDR_MASK) >> 12];
			for (unsigned b = 0; b < 512; b++) {
				uint64_t e3 = ((uint64_t *)(void *)l3)[b];
				uint8_t *l2;

				if (!(e3 & TNPU_PTE_VALID))
					continue;
				l2 = s->pages[(e3 & TNPU_PTE_ADDR_MASK) >> 12];
				for (unsigned c = 0; c < 512; c++) {
					uint64_t e2 = ((uint64_t *)(void *)l2)[c];

					if (e2 & TNPU_PTE_VALID)
						free(s->pages[(e2 & TNPU_PTE_ADDR_MASK) >> 12]);
				}
				free(l2);
			}
			free(l3);
		}
		free(l4);
	}
	free(s->pages);
	free(s->holes);
	free(s);
	dev->priv = NULL;
}

static const struct accel_backend_ops sim_ops = {
	.name = "sim",
	.buf_alloc = sim_buf_alloc,
	.buf_free = sim_buf_free,
	.submit = sim_submit,
	.wait = sim_wait,
	.close = sim_close,
};

/*
 * The sim options that pick one of a few named behaviours (before/after figures, tests): value k of the
 * list is stored as k in the device's one-byte field.
 */
static const struct sim_choice {
	const char *key;
	const char *vals[5];	/* NULL-terminated */
	size_t off;		/* of a uint8_t in struct accel_dev */
} sim_choices[] = {
/* the field's offset, and a compile error unless it is one byte */
#define CHOICE(f) (offsetof(struct accel_dev, f) + 0 * sizeof(char[sizeof(((struct accel_dev *)0)->f) == 1 ? 1 : -1]))
	{ "conv", { "auto", "im2col", "direct" }, CHOICE(conv_mode) },
	{ "dw-wide", { "on", "off" }, CHOICE(dw_narrow) },
	{ "qcol", { "on", "off" }, CHOICE(qcol_off) },
	{ "pwdw", { "on", "off" }, CHOICE(pwdw_off) },
	{ "pwdw-host", { "auto", "off", "on", "all" }, CHOICE(pwdw_host) },
	{ "pwdw-ovl", { "auto", "off", "all" }, CHOICE(pwdw_ovl) },
	{ "wrap", { "on", "off", "all" }, CHOICE(wrap_mode) },
	{ "cpair", { "on", "off", "all" }, CHOICE(cpair_mode) },
	{ "qadd", { "on", "off" }, CHOICE(qadd_off) },
	{ "wdecomp", { "on", "off" }, CHOICE(wdecomp_off) },
	{ "vecmath", { "on", "off" }, CHOICE(vecmath_off) },
	{ "pw", { "auto", "off", "on" }, CHOICE(pw_mode) },
	{ "stream", { "on", "off", "only" }, CHOICE(stream_off) },
	{ "submit", { "on", "off" }, CHOICE(submit_off) },
#undef CHOICE
};

/* key=val for a sim_choices entry: 1 not such a key, 0 set, or the error of a value not in its list. */
static int parse_choice(struct accel_dev *dev, const char *key, const char *val)
{
	for (size_t i = 0; i < sizeof(sim_choices) / sizeof(sim_choices[0]); i++) {
		const struct sim_choice *c = &sim_choices[i];
		char expect[64] = "";
		unsigned n = 0;

		if (strcmp(key, c->key))
			continue;
		for (; c->vals[n]; n++)
			if (!strcmp(val, c->vals[n])) {
				*((uint8_t *)dev + c->off) = (uint8_t)n;
				return 0;
			}
		for (unsigned k = 0; k < n; k++)	/* "a, b or c" */
			snprintf(expect + strlen(expect), sizeof(expect) - strlen(expect), "%s%s",
				 k ? (k == n - 1 ? " or " : ", ") : "", c->vals[k]);
		return accel_seterr(dev, -EINVAL, "sim option %s=%s: expected %s", key, val, expect);
	}
	return 1;
}

static int parse_opts(struct accel_dev *dev, struct tnpu_config *cfg, uint32_t *cmdbuf, const char *opts)
{
	char buf[256], *save = NULL, *tok;

	if (strlen(opts) >= sizeof(buf))
		return accel_seterr(dev, -EINVAL, "sim options too long");
	strcpy(buf, opts);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *end;
		unsigned long v;
		int ret;

		if (!eq)
			return accel_seterr(dev, -EINVAL, "sim option '%s': expected key=value", tok);
		*eq = 0;
		ret = parse_choice(dev, tok, eq + 1);
		if (ret <= 0) {
			if (ret)
				return ret;
			continue;
		}
		if (!strcmp(tok, "islands")) {
			/* chain #9: e.g. islands=2:i8/2:all:2 (islands-and-chaining.md) */
			char msg[160];

			if (tnpu_islands_parse(eq + 1, cfg, msg, sizeof(msg)))
				return accel_seterr(dev, -EINVAL, "sim option %s", msg + (strncmp(msg, "tnpu: ", 6) ? 0 : 6));
			continue;
		}
		if (!strcmp(tok, "dw")) {
			static const char *const maps[] = { "col", "col-kc", "ch", "ch-kc" };

			dev->dw_map = 0;
			for (unsigned m = 0; m < 4; m++)
				if (!strcmp(eq + 1, maps[m]))
					dev->dw_map = (uint8_t)(m + 1);
			if (strcmp(eq + 1, "on") && strcmp(eq + 1, "off") && !dev->dw_map)
				return accel_seterr(dev, -EINVAL,
						    "sim option dw=%s: expected on, off, col, col-kc, ch or ch-kc", eq + 1);
			dev->dw_off = !strcmp(eq + 1, "off");
			continue;
		}
		v = strtoul(eq + 1, &end, 0);
		if (*end || end == eq + 1)
			return accel_seterr(dev, -EINVAL, "sim option '%s': bad number", tok);
		if (!strcmp(tok, "rows"))
			cfg->rows = (uint32_t)v;
		else if (!strcmp(tok, "cols"))
			cfg->cols = (uint32_t)v;
		else if (!strcmp(tok, "pes"))
			cfg->pes = (uint32_t)v;
		else if (!strcmp(tok, "sram"))
			cfg->sram = (uint32_t)v;
		else if (!strcmp(tok, "clock"))
			cfg->clock_mhz = (uint32_t)v;
		else if (!strcmp(tok, "cmdbuf") && v >= 8192 && v <= TNPU_CMDBUF_MAX)
			*cmdbuf = (uint32_t)v;	/* library-side limit (tests of job splitting) */
		else
			return accel_seterr(dev, -EINVAL, "unknown or out-of-range sim option '%s' (rows, cols, pes, sram, clock, conv, cmdbuf >= 8192, islands)", tok);
	}
	return 0;
}

int accel_sim_open(struct accel_dev *dev, const char *opts)
{
	struct sim *s = calloc(1, sizeof(*s));
	uint32_t cmdbuf = TNPU_CMDBUF_MAX;
	char msg[160];
	int ret;

	if (!s)
		return -ENOMEM;
	tnpu_config_default(&s->cfg);
	ret = parse_opts(dev, &s->cfg, &cmdbuf, opts);
	if (!ret && tnpu_config_validate(&s->cfg, msg, sizeof(msg)))
		ret = accel_seterr(dev, -EINVAL, "sim geometry: %s", msg);
	if (!ret && tnpu_exec_new(&s->cfg, &s->ex, msg, sizeof(msg)))
		ret = accel_seterr(dev, -ENOMEM, "sim: %s", msg);
	if (ret) {
		free(s);
		return ret;
	}
	s->ops.read = sim_mem_read;
	s->ops.write = sim_mem_write;
	s->ops.opaque = s;
	s->next_pfn = 1;	/* bus page 0 is never valid */
	dev->priv = s;
	dev->ops = &sim_ops;
	s->ctx_table = sim_table_page(s, &s->ctx_table_pa);
	s->root = sim_table_page(s, &s->root_pa);
	if (!s->ctx_table || !s->root) {
		sim_close(dev);
		return -ENOMEM;
	}
	((uint64_t *)(void *)s->ctx_table)[0] = s->root_pa | TNPU_CTX_VALID;

	struct accel_caps *c = &dev->caps;

	memset(c, 0, sizeof(*c));
	strcpy(c->backend, "sim");
	c->rows = s->cfg.rows;
	c->cols = s->cfg.cols;
	c->pes = s->cfg.pes;
	c->sram_bytes = s->cfg.sram;
	c->acc_elems = TNPU_ACC_ELEMS;
	c->accumulators = TNPU_NUM_ACCS;
	c->slots = TNPU_NUM_SLOTS;
	c->ibufs = TNPU_NUM_IBUFS;
	c->ibuf_depth = TNPU_IBUF_DEPTH;
	c->rf_entries = TNPU_RF_ENTRIES;
	c->semaphores = TNPU_NUM_SEMS;
	c->rate_int8 = TNPU_RATE_MAC_INT8;
	c->rate_fp32 = TNPU_RATE_MAC_FP32;
	c->rate_dma = TNPU_RATE_DMA;
	c->rate_dispatch = TNPU_RATE_DISPATCH;
	c->clock_mhz = s->cfg.clock_mhz;
	c->max_cmdbuf = cmdbuf;
	/* qcol=off / qadd=off / wdecomp=off / vecmath=off: report a device without per-column requantisation /
	 * the vector units' quantised add / the decompressing load / VEC math (software's older-device paths) */
	c->features = TNPU_FEATURES & (dev->qcol_off ? ~(uint32_t)TNPU_FEAT_SFU_QCOL : ~0u) &
		      (dev->qadd_off ? ~(uint32_t)TNPU_FEAT_VEC_QADD : ~0u) &
		      (dev->wdecomp_off ? ~(uint32_t)TNPU_FEAT_WDECOMP : ~0u) &
		      (dev->vecmath_off ? ~(uint32_t)TNPU_FEAT_VEC_MATH : ~0u) &
		      (dev->cpair_mode == 1 ? ~(uint32_t)TNPU_FEAT_CPAIR : ~0u) &
		      (dev->wrap_mode == 1 ? ~(uint32_t)TNPU_FEAT_WRAP : ~0u);
	{
		/* chain #9: the islands the executor was built with (same table as the registers). */
		struct tnpu_island_cfg isl[TNPU_MAX_ISLANDS];
		uint8_t first[TNPU_MAX_ISLANDS];

		dev->n_islands = tnpu_config_islands(&s->cfg, isl, first);
		dev->ring_mem = TNPU_RING_MEM_BYTES;
		dev->rings = TNPU_NUM_RINGS;
		for (unsigned i = 0; i < dev->n_islands; i++)
			dev->islands[i] = (struct accel_island){ .first_row = first[i], .rows = isl[i].rows,
								 .dtypes = isl[i].dtypes, .clkdiv = isl[i].clkdiv,
								 .sram_base = (uint64_t)first[i] * s->cfg.sram,
								 .sram_bytes = (uint64_t)isl[i].rows * s->cfg.sram };
		/* Classic ops run in island 0, the sub-stream every job starts in (chaining.md). */
		c->rows = dev->islands[0].rows;
	}
	return 0;
}
