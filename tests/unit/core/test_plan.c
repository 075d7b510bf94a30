/* SPDX-License-Identifier: MIT */
/* Static address plans (seed 004): PLAN_LOAD, GATHER, PLAN_FREE, the plan cache and its errors. */
#include "common.h"

static struct tsim s;

static void setup(void)
{
	struct tnpu_config cfg = small_cfg();

	cr_assert_eq(tsim_init(&s, &cfg, 64 << 20), 0);
}

static void teardown(void)
{
	tsim_fini(&s);
}

TestSuite(plan, .init = setup, .fini = teardown);

enum { L_NCHW = 0, L_NHWC = 1, L_NCHWC = 2 };

struct geo {
	int layout;
	uint32_t n, c, h, w, r, s, sy, sx, dy, dx, pt, pl, pb, pr, cb, e;
	uint32_t oh, ow;
};

/* Byte offset of input element (b, ch, y, x) of a packed tensor in the layout (x, y may be outside). */
static int64_t in_off(const struct geo *g, int64_t b, int64_t ch, int64_t y, int64_t x)
{
	int64_t e = g->e;

	switch (g->layout) {
	case L_NCHW:
		return (((b * g->c + ch) * g->h + y) * g->w + x) * e;
	case L_NHWC:
		return (((b * g->h + y) * g->w + x) * g->c + ch) * e;
	default:
		return ((((b * (g->c / g->cb) + ch / g->cb) * g->h + y) * g->w + x) * g->cb + ch % g->cb) * e;
	}
}

static void geo_finish(struct geo *g)
{
	g->oh = (g->h + g->pt + g->pb - g->dy * (g->r - 1) - 1) / g->sy + 1;
	g->ow = (g->w + g->pl + g->pr - g->dx * (g->s - 1) - 1) / g->sx + 1;
}

/* K index -> (ry, rx, ch); the test's own K order: taps outer, channels inner. */
static void k_split(const struct geo *g, uint32_t k, uint32_t *ry, uint32_t *rx, uint32_t *ch)
{
	*ch = k % g->c;
	*rx = (k / g->c) % g->s;
	*ry = k / (g->c * g->s);
}

static uint64_t fnv(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* Plan image for the conv: one base per output pixel, one offset per (tap, channel); group = tap. */
static uint8_t *build_plan(const struct geo *g, uint32_t *bytes)
{
	uint32_t M = g->n * g->oh * g->ow, K = g->r * g->s * g->c;
	uint8_t *img;
	struct tnpu_plan_hdr h = { .magic = TNPU_PLAN_MAGIC, .version = TNPU_PLAN_VERSION,
				   .elem_size = (uint8_t)g->e, .n_groups = (uint8_t)(g->r * g->s),
				   .n_bases = M, .n_offsets = K };

	*bytes = 32 + 16 * M + 8 * K;
	h.bytes = *bytes;
	img = calloc(1, *bytes);
	memcpy(img, &h, 32);
	for (uint32_t m = 0; m < M; m++) {
		uint32_t x = m % g->ow, y = (m / g->ow) % g->oh, b = m / (g->ow * g->oh);
		int64_t iy = (int64_t)y * g->sy - g->pt, ix = (int64_t)x * g->sx - g->pl;
		struct tnpu_plan_base pb = { .base = in_off(g, b, 0, iy, ix), .mask = 0 };

		for (uint32_t ry = 0; ry < g->r; ry++)
			for (uint32_t rx = 0; rx < g->s; rx++) {
				int64_t yy = iy + ry * g->dy, xx = ix + rx * g->dx;

				if (yy >= 0 && yy < g->h && xx >= 0 && xx < g->w)
					pb.mask |= 1ull << (ry * g->s + rx);
			}
		memcpy(img + 32 + 16 * m, &pb, 16);
	}
	for (uint32_t k = 0; k < K; k++) {
		uint32_t ry, rx, ch;
		struct tnpu_plan_offset po = { 0 };

		k_split(g, k, &ry, &rx, &ch);
		po.offset = (int32_t)(in_off(g, 0, ch, (int64_t)ry * g->dy, (int64_t)rx * g->dx) - in_off(g, 0, 0, 0, 0));
		po.group = (uint8_t)(ry * g->s + rx);
		memcpy(img + 32 + 16 * M + 8 * k, &po, 8);
	}
	return img;
}

static void plan_load(struct tcb *cb, uint8_t flags, uint64_t va, uint32_t handle, uint32_t bytes, uint64_t tag)
{
	struct tnpu_cmd_plan_load c = { .hdr = { .opcode = TNPU_CMD_PLAN_LOAD, .flags = flags, .size = 32 },
					.plan_va = va, .handle = handle, .bytes = bytes, .tag = tag };

	tcb_raw(cb, &c, sizeof(c));
}

static void gather(struct tcb *cb, uint64_t src, uint32_t handle, uint32_t pad, uint32_t m0, uint32_t mt,
		   uint32_t k0, uint32_t kt, uint32_t off, uint32_t pitch, uint8_t row, uint8_t half)
{
	struct tnpu_cmd_gather c = { .hdr = { .opcode = TNPU_CMD_GATHER, .size = 56 },
				     .src_va = src, .handle = handle, .pad_value = pad, .m0 = m0, .mt = mt,
				     .k0 = k0, .kt = kt, .sram_off = off, .sram_pitch = pitch, .row = row,
				     .half = half };

	tcb_raw(cb, &c, sizeof(c));
}

static void plan_free(struct tcb *cb, uint32_t handle)
{
	struct tnpu_cmd_plan_free c = { .hdr = { .opcode = TNPU_CMD_PLAN_FREE, .size = 16 }, .handle = handle };

	tcb_raw(cb, &c, sizeof(c));
}

/* Copy the uploaded plan image into guest memory; returns its VA. */
static uint64_t put(const void *p, uint32_t bytes)
{
	uint64_t va = tsim_buf(&s, bytes);

	memcpy(tsim_ptr(&s, va), p, bytes);
	return va;
}

/* Tile element (i, j) of the unrolled conv operand, computed from coordinates (not from a plan). */
static void cpu_elem(const struct geo *g, const uint8_t *in, uint32_t m, uint32_t k, uint32_t pad, uint8_t *out)
{
	uint32_t x = m % g->ow, y = (m / g->ow) % g->oh, b = m / (g->ow * g->oh), ry, rx, ch;
	int64_t iy, ix;

	k_split(g, k, &ry, &rx, &ch);
	iy = (int64_t)y * g->sy - g->pt + ry * g->dy;
	ix = (int64_t)x * g->sx - g->pl + rx * g->dx;
	if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w)
		memcpy(out, &pad, g->e);
	else
		memcpy(out, in + in_off(g, b, ch, iy, ix), g->e);
}

static void random_geo(uint64_t *rng, int layout, uint32_t e, struct geo *g)
{
	memset(g, 0, sizeof(*g));
	g->layout = layout;
	g->e = e;
	g->n = 1 + trng(rng) % 2;
	g->cb = layout == L_NCHWC ? 1u << (trng(rng) % 3) : 1;
	g->c = g->cb * (1 + trng(rng) % 4);
	g->h = 3 + trng(rng) % 9;
	g->w = 3 + trng(rng) % 9;
	g->r = 1 + trng(rng) % 3;
	g->s = 1 + trng(rng) % 3;
	g->sy = 1 + trng(rng) % 2;
	g->sx = 1 + trng(rng) % 2;
	g->dy = 1 + trng(rng) % 2;
	g->dx = 1 + trng(rng) % 2;
	g->pt = trng(rng) % 3;
	g->pl = trng(rng) % 3;
	g->pb = trng(rng) % 3;
	g->pr = trng(rng) % 3;
	while (g->h + g->pt + g->pb < g->dy * (g->r - 1) + 1)
		g->pb++;
	while (g->w + g->pl + g->pr < g->dx * (g->s - 1) + 1)
		g->pr++;
	geo_finish(g);
}

static void check_gather_random(int layout, uint32_t e, uint64_t seed)
{
	uint64_t rng = seed;

	for (int it = 0; it < 12; it++) {
		struct geo g;
		uint32_t bytes, M, K, m0, mt, k0, kt, pitch, pad = e == 1 ? 0x5A : 0x3F800000u;
		uint64_t in_bytes, src, pva, dst;
		uint8_t *img, *in, *out, want[4];
		struct tcb cb;
		struct tnpu_result res;

		random_geo(&rng, layout, e, &g);
		M = g.n * g.oh * g.ow;
		K = g.r * g.s * g.c;
		in_bytes = (uint64_t)g.n * g.c * g.h * g.w * e;
		src = tsim_buf(&s, in_bytes);
		in = tsim_ptr(&s, src);
		for (uint64_t i = 0; i < in_bytes; i++)
			in[i] = (uint8_t)trng(&rng);
		img = build_plan(&g, &bytes);
		pva = put(img, bytes);
		m0 = trng(&rng) % M;
		mt = 1 + trng(&rng) % (M - m0);
		k0 = trng(&rng) % K;
		kt = 1 + trng(&rng) % (K - k0);
		if ((uint64_t)mt * kt * e > 16384)
			mt = 16384 / (kt * e) ? 16384 / (kt * e) : 1;
		pitch = kt * e + 4 * (uint32_t)(trng(&rng) % 3);
		dst = tsim_buf(&s, (uint64_t)mt * pitch);
		tcb_init(&cb);
		plan_load(&cb, 0, pva, 7, bytes, fnv(img, bytes));
		gather(&cb, src, 7, pad, m0, mt, k0, kt, 64, pitch, TNPU_DMA_ROW_ALL, 1);
		tcb_dma(&cb, false, 0, dst, pitch, 0, 1, 1, 64, pitch, 0, pitch, mt, 1);
		tsim_run(&s, &cb, 0, &res);
		ASSERT_OK(res);
		out = tsim_ptr(&s, dst);
		for (uint32_t i = 0; i < mt; i++)
			for (uint32_t j = 0; j < kt; j++) {
				cpu_elem(&g, in, m0 + i, k0 + j, pad, want);
				cr_assert(!memcmp(out + (size_t)i * pitch + (size_t)j * e, want, e),
					  "seed %llu it %d layout %d e %u: tile (%u,%u) of m0 %u k0 %u differs",
					  (unsigned long long)seed, it, layout, e, i, j, m0, k0);
			}
		tcb_free(&cb);
		free(img);
	}
}

Test(plan, gather_matches_cpu_nchw_with_borders)
{
	check_gather_random(L_NCHW, 1, 11);
	check_gather_random(L_NCHW, 4, 12);
}

Test(plan, gather_matches_cpu_nhwc_with_borders)
{
	check_gather_random(L_NHWC, 1, 21);
	check_gather_random(L_NHWC, 4, 22);
}

Test(plan, gather_matches_cpu_nchwc_with_borders)
{
	check_gather_random(L_NCHWC, 1, 31);
	check_gather_random(L_NCHWC, 4, 32);
}

/* Seed 004 para 83: 4x4 input, 3x3 filter, bases {0,1,4,5}, offsets {0,1,2,4,5,6,8,9,10}. */
Test(plan, seed_example_tile_and_line_bytes)
{
	struct geo g = { .layout = L_NCHW, .n = 1, .c = 1, .h = 4, .w = 4, .r = 3, .s = 3, .sy = 1, .sx = 1,
			 .dy = 1, .dx = 1, .cb = 1, .e = 1 };
	uint32_t bytes;
	uint8_t *img, *in, *out;
	uint64_t src, dst, pva;
	struct tcb cb;
	struct tnpu_result res;
	static const int32_t offs[9] = { 0, 1, 2, 4, 5, 6, 8, 9, 10 };
	static const int64_t bases[4] = { 0, 1, 4, 5 };

	geo_finish(&g);
	img = build_plan(&g, &bytes);
	for (int m = 0; m < 4; m++)
		cr_assert_eq(((struct tnpu_plan_base *)(void *)(img + 32))[m].base, bases[m]);
	for (int k = 0; k < 9; k++)
		cr_assert_eq(((struct tnpu_plan_offset *)(void *)(img + 32 + 64))[k].offset, offs[k]);
	src = tsim_buf(&s, 16);
	in = tsim_ptr(&s, src);
	for (int i = 0; i < 16; i++)
		in[i] = (uint8_t)(100 + i);
	pva = put(img, bytes);
	dst = tsim_buf(&s, 36);
	tcb_init(&cb);
	plan_load(&cb, 0, pva, 1, bytes, fnv(img, bytes));
	gather(&cb, src, 1, 0, 0, 4, 0, 9, 0, 9, 0, 0);
	tcb_dma(&cb, false, 0, dst, 9, 0, 0, 0, 0, 9, 0, 9, 4, 1);
	tsim_run(&s, &cb, 0, &res);
	ASSERT_OK(res);
	out = tsim_ptr(&s, dst);
	for (int m = 0; m < 4; m++)
		for (int k = 0; k < 9; k++)
			cr_assert_eq(out[m * 9 + k], 100 + bases[m] + offs[k]);
	/* Plan upload + one 64-byte line for the 16-byte input. */
	cr_assert_eq(res.counters[TNPU_CNT_BYTES_H2D], bytes + 64);
	/* cycle-model.md: upload CMD + SETUP + ceil(bytes/128); GATHER CMD + SETUP + max(1 line run, 36 B / 128). */
	cr_assert_eq(res.counters[TNPU_CNT_LOAD_CYCLES],
		     (TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + (bytes + 127) / 128) + (TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + 1));
	tcb_free(&cb);
	free(img);
}

Test(plan, gather_equals_im2col_for_nchw_and_nhwc)
{
	for (int layout = L_NCHW; layout <= L_NHWC; layout++) {
		struct geo g = { .layout = layout, .n = 2, .c = 3, .h = 7, .w = 6, .r = 3, .s = 2, .sy = 2, .sx = 1,
				 .dy = 1, .dx = 2, .pt = 1, .pl = 2, .pb = 1, .pr = 0, .cb = 1, .e = 1 };
		struct tnpu_cmd_im2col ic;
		uint32_t bytes, M, K, ch;
		uint8_t *img, *in, *a, *b;
		uint64_t src, pva, da, db;
		struct tcb cb;
		struct tnpu_result res;

		geo_finish(&g);
		M = g.n * g.oh * g.ow;
		K = g.r * g.s * g.c;
		src = tsim_buf(&s, g.n * g.c * g.h * g.w);
		in = tsim_ptr(&s, src);
		for (uint32_t i = 0; i < g.n * g.c * g.h * g.w; i++)
			in[i] = (uint8_t)(i * 37 + 1);
		img = build_plan(&g, &bytes);
		pva = put(img, bytes);
		/* IM2COL's K order is (ry, rx, ch) for NHWC only; for NCHW compare column by column. */
		memset(&ic, 0, sizeof(ic));
		ic.src_va = src;
		ic.stride_w = layout == L_NHWC ? g.c : 1;
		ic.stride_h = layout == L_NHWC ? (uint64_t)g.c * g.w : g.w;
		ic.stride_c = layout == L_NHWC ? 1 : (uint64_t)g.h * g.w;
		ic.stride_n = (uint64_t)g.c * g.h * g.w;
		ic.n = (uint16_t)g.n;
		ic.h = (uint16_t)g.h;
		ic.w = (uint16_t)g.w;
		ic.c = (uint16_t)g.c;
		ic.r = (uint16_t)g.r;
		ic.s = (uint16_t)g.s;
		ic.oh = (uint16_t)g.oh;
		ic.ow = (uint16_t)g.ow;
		ic.stride_y = (uint8_t)g.sy;
		ic.stride_x = (uint8_t)g.sx;
		ic.dil_y = (uint8_t)g.dy;
		ic.dil_x = (uint8_t)g.dx;
		ic.pad_top = (uint8_t)g.pt;
		ic.pad_left = (uint8_t)g.pl;
		ic.layout = layout == L_NHWC ? TNPU_LAYOUT_NHWC : TNPU_LAYOUT_NCHW;
		ic.dtype = TNPU_DTYPE_INT8;
		ic.pad_value = 0x80;
		ic.mt = M;
		ic.kt = K;
		ic.sram_pitch = K;
		da = tsim_buf(&s, M * K);
		db = tsim_buf(&s, M * K);
		tcb_init(&cb);
		tcb_im2col(&cb, 0, &ic);
		tcb_dma(&cb, false, 0, da, K, 0, 0, 0, 0, K, 0, K, M, 1);
		plan_load(&cb, 0, pva, 3, bytes, fnv(img, bytes));
		gather(&cb, src, 3, 0x80, 0, M, 0, K, 0, K, 0, 1);
		tcb_dma(&cb, false, 0, db, K, 0, 0, 1, 0, K, 0, K, M, 1);
		tsim_run(&s, &cb, 0, &res);
		ASSERT_OK(res);
		a = tsim_ptr(&s, da);
		b = tsim_ptr(&s, db);
		for (uint32_t m = 0; m < M; m++)
			for (uint32_t k = 0; k < K; k++) {
				uint32_t ry = k / (g.c * g.s), rx = (k / g.c) % g.s, kk;

				ch = k % g.c;
				kk = layout == L_NHWC ? k : (ch * g.r + ry) * g.s + rx;
				cr_assert_eq(b[m * K + k], a[m * K + kk], "layout %d m %u k %u", layout, m, k);
			}
		tcb_free(&cb);
		free(img);
	}
}

/* A small valid plan: 2 bases x 3 offsets, int8. */
static uint8_t *tiny_plan(uint32_t *bytes)
{
	struct geo g = { .layout = L_NCHW, .n = 1, .c = 1, .h = 1, .w = 4, .r = 1, .s = 3, .sy = 1, .sx = 1,
			 .dy = 1, .dx = 1, .cb = 1, .e = 1 };

	geo_finish(&g);
	return build_plan(&g, bytes);
}

Test(plan, cache_charges_upload_only_on_a_miss)
{
	uint32_t bytes;
	uint8_t *img = tiny_plan(&bytes);
	uint64_t pva = put(img, bytes), tag = fnv(img, bytes), src = tsim_buf(&s, 64);
	struct tnpu_result r1, r2, r3;
	struct tcb cb;

	tcb_init(&cb);
	plan_load(&cb, 0, pva, 5, bytes, tag);
	gather(&cb, src, 5, 0, 0, 2, 0, 3, 0, 3, 0, 0);
	tsim_run(&s, &cb, 0, &r1);
	ASSERT_OK(r1);
	cr_assert_eq(r1.counters[TNPU_CNT_PLAN_MISSES], 1);
	cr_assert_eq(r1.counters[TNPU_CNT_PLAN_HITS], 0);
	tsim_run(&s, &cb, 0, &r2);
	ASSERT_OK(r2);
	cr_assert_eq(r2.counters[TNPU_CNT_PLAN_MISSES], 0);
	cr_assert_eq(r2.counters[TNPU_CNT_PLAN_HITS], 1);
	cr_assert_eq(r1.counters[TNPU_CNT_BYTES_H2D] - r2.counters[TNPU_CNT_BYTES_H2D], bytes);
	cr_assert_eq(r1.counters[TNPU_CNT_LOAD_CYCLES] - r2.counters[TNPU_CNT_LOAD_CYCLES],
		     TNPU_CYC_DMA_SETUP + (bytes + TNPU_RATE_DMA - 1) / TNPU_RATE_DMA);
	/* Same handle, different image (tag): uploaded again. */
	img[32] ^= 1;
	memcpy(tsim_ptr(&s, pva), img, bytes);
	tcb_free(&cb);
	tcb_init(&cb);
	plan_load(&cb, 0, pva, 5, bytes, fnv(img, bytes));
	tsim_run(&s, &cb, 0, &r3);
	ASSERT_OK(r3);
	cr_assert_eq(r3.counters[TNPU_CNT_PLAN_MISSES], 1);
	tcb_free(&cb);
	free(img);
}

Test(plan, free_and_lru_eviction_drop_plans)
{
	uint32_t bytes;
	uint8_t *img = tiny_plan(&bytes);
	uint64_t pva = put(img, bytes), tag = fnv(img, bytes), src = tsim_buf(&s, 64);
	struct tnpu_result res;
	struct tcb cb;

	tcb_init(&cb);
	for (uint32_t h = 0; h <= TNPU_PLAN_CACHE_ENTRIES; h++)
		plan_load(&cb, 0, pva, 100 + h, bytes, tag);
	gather(&cb, src, 100 + TNPU_PLAN_CACHE_ENTRIES, 0, 0, 2, 0, 3, 0, 3, 0, 0);
	tsim_run(&s, &cb, 0, &res);
	ASSERT_OK(res);
	cr_assert_eq(res.counters[TNPU_CNT_PLAN_MISSES], TNPU_PLAN_CACHE_ENTRIES + 1);
	tcb_free(&cb);
	/* The least recently used (handle 100) was evicted; 101 is still resident. */
	tcb_init(&cb);
	gather(&cb, src, 101, 0, 0, 2, 0, 3, 0, 3, 0, 0);
	tsim_run(&s, &cb, 0, &res);
	ASSERT_OK(res);
	tcb_free(&cb);
	tcb_init(&cb);
	gather(&cb, src, 100, 0, 0, 2, 0, 3, 0, 3, 0, 0);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_PLAN_UNKNOWN);
	cr_assert_eq(res.err_info, 100);
	tcb_free(&cb);
	tcb_init(&cb);
	plan_free(&cb, 101);
	gather(&cb, src, 101, 0, 0, 2, 0, 3, 0, 3, 0, 0);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_PLAN_UNKNOWN);
	cr_assert_eq(res.err_cmd_offset, 16);
	tcb_free(&cb);
	free(img);
}

Test(plan, another_context_cannot_use_a_plan)
{
	uint32_t bytes;
	uint8_t *img = tiny_plan(&bytes);
	uint64_t pva = put(img, bytes), tag = fnv(img, bytes), src = tsim_buf(&s, 4096);
	uint64_t src_pa = (uint64_t)((uint8_t *)tsim_ptr(&s, src) - s.mem);
	struct tnpu_result res;
	struct tcb cb, cb1;
	uint64_t cva, cpa;

	tcb_init(&cb);
	plan_load(&cb, 0, pva, 9, bytes, tag);
	tsim_run(&s, &cb, 0, &res);
	ASSERT_OK(res);
	/* Context 1 maps the same input and runs a GATHER naming handle 9. */
	tsim_map(&s, 1, src, src_pa, 4096, TNPU_PTE_READ);
	tcb_init(&cb1);
	gather(&cb1, src, 9, 0, 0, 2, 0, 3, 0, 3, 0, 0);
	cva = tsim_buf(&s, 4096);
	cpa = tsim_alloc_pa(&s, 4096);
	tsim_map(&s, 1, cva, cpa, 4096, TNPU_PTE_READ);
	memcpy(s.mem + cpa, cb1.buf, cb1.len);
	tnpu_exec_run_cmdbuf(s.ex, &s.ops, s.ctx_table, 2, 1, cva, (uint32_t)cb1.len, &res);
	cr_assert_eq(res.error, TNPU_ERR_PLAN_UNKNOWN);
	cr_assert_eq(res.ctx, 1);
	/* Context 0 still has it. */
	tcb_free(&cb);
	tcb_init(&cb);
	gather(&cb, src, 9, 0, 0, 2, 0, 3, 0, 3, 0, 0);
	tsim_run(&s, &cb, 0, &res);
	ASSERT_OK(res);
	cr_assert_eq(res.counters[TNPU_CNT_PLAN_MISSES] + res.counters[TNPU_CNT_PLAN_HITS], 0);
	tcb_free(&cb);
	tcb_free(&cb1);
	free(img);
}

/* Run one PLAN_LOAD of img (tag computed over it unless tag_override) and return the error. */
static uint32_t load_err(uint8_t *img, uint32_t bytes, uint32_t cmd_bytes, bool bad_tag)
{
	uint64_t pva = put(img, bytes);
	struct tnpu_result res;
	struct tcb cb;

	tcb_init(&cb);
	plan_load(&cb, 0, pva, 42, cmd_bytes, fnv(img, cmd_bytes < bytes ? cmd_bytes : bytes) ^ (bad_tag ? 1 : 0));
	tsim_run(&s, &cb, 0, &res);
	tcb_free(&cb);
	return res.error;
}

Test(plan, bad_plans_and_handles_fail_with_plan_errors_and_the_next_job_runs)
{
	uint32_t bytes;
	uint8_t *img = tiny_plan(&bytes), *bad = malloc(bytes);
	uint64_t src = tsim_buf(&s, 64);
	struct tnpu_result res;
	struct tcb cb;

	memcpy(bad, img, bytes);
	cr_assert_eq(load_err(bad, bytes, bytes, true), TNPU_ERR_PLAN_BAD, "checksum");
	bad[0] ^= 0xFF;
	cr_assert_eq(load_err(bad, bytes, bytes, false), TNPU_ERR_PLAN_BAD, "magic");
	memcpy(bad, img, bytes);
	bad[7] = 0;
	cr_assert_eq(load_err(bad, bytes, bytes, false), TNPU_ERR_PLAN_BAD, "zero groups");
	memcpy(bad, img, bytes);
	bad[16] ^= 8;
	cr_assert_eq(load_err(bad, bytes, bytes, false), TNPU_ERR_PLAN_BAD, "size field");
	memcpy(bad, img, bytes);
	bad[32 + 32 + 4] = 3;	/* group of offset 0 >= n_groups (3) */
	cr_assert_eq(load_err(bad, bytes, bytes, false), TNPU_ERR_PLAN_BAD, "group");
	memcpy(bad, img, bytes);
	bad[32 + 8] |= 0x08;	/* mask bit 3 of base 0 with 3 groups */
	cr_assert_eq(load_err(bad, bytes, bytes, false), TNPU_ERR_PLAN_BAD, "mask");
	cr_assert_eq(load_err(img, bytes, bytes - 8, false), TNPU_ERR_PLAN_BAD, "truncated");
	cr_assert_eq(load_err(img, bytes, 16, false), TNPU_ERR_PLAN_DESC, "shorter than a header");
	cr_assert_eq(load_err(img, bytes, TNPU_PLAN_CACHE_BYTES + 8, false), TNPU_ERR_PLAN_TOO_LARGE);

	tcb_init(&cb);
	gather(&cb, src, 77, 0, 0, 2, 0, 3, 0, 3, 0, 0);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_PLAN_UNKNOWN);
	tcb_free(&cb);
	/* A failed upload of handle 42 left nothing behind. */
	tcb_init(&cb);
	gather(&cb, src, 42, 0, 0, 2, 0, 3, 0, 3, 0, 0);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_PLAN_UNKNOWN);
	tcb_free(&cb);
	/* Descriptor errors on a resident plan. */
	{
		uint64_t pva = put(img, bytes);
		static const struct {
			uint32_t m0, mt, k0, kt, pad, pitch;
			uint8_t row;
		} d[] = {
			{ 1, 2, 0, 3, 0, 3, 0 },	/* m0 + mt > bases */
			{ 0, 2, 1, 3, 0, 3, 0 },	/* k0 + kt > offsets */
			{ 0, 0, 0, 3, 0, 3, 0 },	/* mt = 0 */
			{ 0, 2, 0, 3, 0x100, 3, 0 },	/* pad does not fit int8 */
			{ 0, 2, 0, 3, 0, 2, 0 },	/* pitch < kt */
			{ 0, 2, 0, 3, 0, 3, 7 },	/* row */
		};

		for (unsigned i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
			tcb_init(&cb);
			plan_load(&cb, 0, pva, 42, bytes, fnv(img, bytes));
			gather(&cb, src, 42, d[i].pad, d[i].m0, d[i].mt, d[i].k0, d[i].kt, 0, d[i].pitch, d[i].row, 0);
			tsim_run(&s, &cb, 0, &res);
			cr_assert_eq(res.error, TNPU_ERR_PLAN_DESC, "case %u: %s", i, tnpu_err_name(res.error));
			cr_assert_eq(res.err_cmd_offset, 32);
			tcb_free(&cb);
		}
	}
	/* The next job still runs. */
	tcb_init(&cb);
	gather(&cb, src, 42, 0, 0, 2, 0, 3, 0, 3, 0, 0);
	tsim_run(&s, &cb, 0, &res);
	ASSERT_OK(res);
	tcb_free(&cb);
	free(bad);
	free(img);
}

Test(plan, masked_elements_read_no_memory)
{
	/* A 1x1 input with 3x3 filter and padding 1: eight of nine taps are padding. The input page is
	 * the only mapped one; a read of any neighbour would fault. */
	struct geo g = { .layout = L_NHWC, .n = 1, .c = 1, .h = 1, .w = 1, .r = 3, .s = 3, .sy = 1, .sx = 1,
			 .dy = 1, .dx = 1, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .cb = 1, .e = 1 };
	uint32_t bytes;
	uint8_t *img, *out;
	uint64_t src, pva, dst;
	struct tnpu_result res;
	struct tcb cb;

	geo_finish(&g);
	img = build_plan(&g, &bytes);
	pva = put(img, bytes);
	src = tsim_buf(&s, 1);
	*(uint8_t *)tsim_ptr(&s, src) = 9;
	dst = tsim_buf(&s, 9);
	tcb_init(&cb);
	plan_load(&cb, 0, pva, 1, bytes, fnv(img, bytes));
	gather(&cb, src, 1, 0xEE, 0, 1, 0, 9, 0, 9, 0, 0);
	tcb_dma(&cb, false, 0, dst, 9, 0, 0, 0, 0, 9, 0, 9, 1, 1);
	tsim_run(&s, &cb, 0, &res);
	ASSERT_OK(res);
	out = tsim_ptr(&s, dst);
	for (int k = 0; k < 9; k++)
		cr_assert_eq(out[k], k == 4 ? 9 : 0xEE);
	cr_assert_eq(res.counters[TNPU_CNT_BYTES_H2D], bytes + 64);
	tcb_free(&cb);
	free(img);
}

/* Run cb through the queue path (tnpu_exec_run) with the given reset generation and queue session. */
static uint32_t run_as_queue_job(const struct tcb *cb, uint32_t generation, uint32_t session, struct tnpu_result *res)
{
	struct tnpu_job job;
	uint64_t va = tsim_buf(&s, cb->len);

	memcpy(tsim_ptr(&s, va), cb->buf, cb->len);
	memset(&job, 0, sizeof(job));
	job.entry.ctx = 0;
	job.entry.cmd_len = (uint32_t)cb->len;
	job.entry.cmd_va = va;
	job.ctx_table = s.ctx_table;
	job.ctx_count = 2;
	job.generation = generation;
	job.session = session;
	return tnpu_exec_run(s.ex, &job, &s.ops, res);
}

Test(plan, device_reset_and_queue_reenable_drop_cached_plans)
{
	uint32_t bytes;
	uint8_t *img = tiny_plan(&bytes);
	uint64_t pva = put(img, bytes), tag = fnv(img, bytes), src = tsim_buf(&s, 64);
	struct tnpu_result res;
	struct tcb load, use;

	tcb_init(&load);
	plan_load(&load, 0, pva, 5, bytes, tag);
	tcb_init(&use);
	gather(&use, src, 5, 0, 0, 2, 0, 3, 0, 3, 0, 0);
	cr_assert_eq(run_as_queue_job(&load, 1, 1, &res), 0);
	cr_assert_eq(run_as_queue_job(&use, 1, 1, &res), 0, "same generation and session: resident");
	cr_assert_eq(run_as_queue_job(&use, 2, 1, &res), TNPU_ERR_PLAN_UNKNOWN, "after a device reset");
	cr_assert_eq(run_as_queue_job(&load, 2, 1, &res), 0);
	cr_assert_eq(res.counters[TNPU_CNT_PLAN_MISSES], 1);
	cr_assert_eq(run_as_queue_job(&use, 2, 2, &res), TNPU_ERR_PLAN_UNKNOWN, "after a queue re-enable");
	tcb_free(&load);
	tcb_free(&use);
	free(img);
}

/* A plan base near INT64_MAX: GATHER must range-check it before adding the source address (the sum
 * was a signed overflow, caught by the UBSan build in check stage asan). */
Test(plan, huge_base_is_refused_before_it_is_added)
{
	uint32_t bytes;
	uint8_t *img = tiny_plan(&bytes);
	int64_t huge = INT64_MAX;
	uint64_t src = tsim_buf(&s, 64), pva;
	struct tnpu_result res;
	struct tcb cb;

	memcpy(img + 32, &huge, 8);	/* base 0 */
	pva = put(img, bytes);
	tcb_init(&cb);
	plan_load(&cb, 0, pva, 9, bytes, fnv(img, bytes));
	gather(&cb, src, 9, 0, 0, 1, 0, 3, 0, 3, 0, 0);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_MMU_VA_RANGE, "%s", tnpu_err_name(res.error));
	cr_assert_eq(res.err_cmd_offset, 32);
	tcb_free(&cb);
	free(img);
}
