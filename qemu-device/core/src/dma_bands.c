/* SPDX-License-Identifier: MIT */
/*
 * dma_bands.c - DMA_BANDS_H2D / DMA_BANDS_D2H (commands.md "DMA_BANDS"): one 3-D transfer split
 * into one band (of planes, or of every row's bytes) per storage unit, moved by the units' own host
 * ports (TNPU_RATE_DMA_PORT bytes per cycle each, all units in parallel).  Host memory is read (H2D)
 * once even where bands overlap; D2H writes the bands unit by unit (later units win).  AXIS_G splits
 * every `group` bytes of a row (the channels of a pixel) and packs each unit's share of the row
 * contiguously in its SRAM (commands.md "DMA_BANDS", axis G).
 */
#include "internal.h"

struct band {
	int64_t lo, hi;		/* the unit's planes (AXIS_Z) or row bytes (AXIS_X) [lo, hi), clipped */
	int64_t first;		/* plane / byte at SRAM index 0 */
};

static uint64_t union_len(const struct band *b, unsigned n)
{
	uint64_t total = 0;
	int64_t done = INT64_MIN;

	/* Bands start in unit order only for step >= 0; the general case sorts (n <= 16). */
	bool used[TNPU_MAX_ROWS] = { false };

	for (unsigned k = 0; k < n; k++) {
		int best = -1;

		for (unsigned u = 0; u < n; u++)
			if (!used[u] && (best < 0 || b[u].lo < b[best].lo))
				best = (int)u;
		used[best] = true;
		if (b[best].hi <= b[best].lo)
			continue;
		if (b[best].hi > done) {
			total += (uint64_t)(b[best].hi - TNPU_MAX(b[best].lo, done));
			done = b[best].hi;
		}
	}
	return total;
}

uint32_t tnpu_cmd_dma_bands(struct tnpu_exec *ex, const uint8_t *c, bool h2d, bool async)
{
	uint64_t host_va = ld64(c + 8), hpy = ld64(c + 16), hpz = ld64(c + 24);
	uint32_t off = ld32(c + 32), spy = ld32(c + 36), spz = ld32(c + 40);
	uint32_t width = ld32(c + 44), height = ld32(c + 48), depth = ld32(c + 52);
	int32_t first = (int32_t)ld32(c + 56);
	uint32_t step = ld32(c + 60), len = ld32(c + 64);
	uint8_t half = c[68], axis = c[69] & (uint8_t)~(TNPU_BANDS_F_AUX | TNPU_BANDS_F_STREAM);
	bool aux = c[69] & TNPU_BANDS_F_AUX, stream = c[69] & TNPU_BANDS_F_STREAM;
	uint32_t group = ld16(c + 70), ng = 1, gw;
	unsigned rows = ex->cfg.rows, engine = h2d ? TNPU_ENGINE_LOAD : TNPU_ENGINE_STORE;
	bool grp = axis == TNPU_BANDS_AXIS_G, ax = axis == TNPU_BANDS_AXIS_X || grp;
	struct band b[TNPU_MAX_ROWS];
	uint64_t dur = 0, bytes, zn, xn, xfer;

	if (!width || !height || !depth || !len || half > 1 || axis > TNPU_BANDS_AXIS_G || (!grp && group) ||
	    (grp && (!group || width % group)) || (aux && !h2d))
		return tnpu_fail(ex, TNPU_ERR_DMA_DESC, 0, 0);
	if (grp)
		ng = width / group;
	gw = grp ? group : width;	/* the bytes a band is clipped to (AXIS_X, G) */
	/* SRAM extent of one unit's band: planes x rows x bytes, each term checked on its own */
	zn = ax ? depth : len;
	xn = ax ? (uint64_t)ng * len : width;
	if ((zn - 1) * spz > ex->half || (uint64_t)(height - 1) * spy > ex->half ||
	    (uint64_t)off + (zn - 1) * spz + (uint64_t)(height - 1) * spy + xn > ex->half)
		return tnpu_fail(ex, TNPU_ERR_SRAM_RANGE, 0, off);
	for (unsigned u = 0; u < rows; u++) {
		uint64_t n, cyc;

		b[u].first = (int64_t)first + (int64_t)u * step;
		b[u].lo = TNPU_MAX(b[u].first, 0);
		b[u].hi = TNPU_MIN(b[u].first + (int64_t)len, ax ? (int64_t)gw : (int64_t)depth);
		if (b[u].hi <= b[u].lo)
			continue;
		n = (uint64_t)(b[u].hi - b[u].lo) * ng;	/* AXIS_G: the unit's share of the row, packed */
		/* < 2^32 * 2^32 * 2^32 / 256 cannot be represented: the watchdog check catches it first */
		if (ax ? __builtin_mul_overflow((uint64_t)depth * height, div_ceil_u64(n, TNPU_RATE_DMA_PORT), &cyc)
		       : __builtin_mul_overflow(n * height, TNPU_MAX(1, div_ceil_u64(width, TNPU_RATE_DMA_PORT)), &cyc))
			return tnpu_fail(ex, TNPU_ERR_WATCHDOG, 0, 0);
		dur = TNPU_MAX(dur, cyc);
	}
	xfer = dur;
	if (__builtin_add_overflow(dur, (uint64_t)(TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP), &dur))
		return tnpu_fail(ex, TNPU_ERR_WATCHDOG, 0, 0);
	if (tnpu_past_watchdog(ex, TNPU_MAX(TNPU_MAX(ex->F[engine], ex->P), aux ? ex->isl_rt[ex->cur].aux : 0), dur))
		return tnpu_fail(ex, TNPU_ERR_WATCHDOG, 0, 0);
	for (unsigned u = 0; u < rows; u++) {
		struct row_state *rs = &ex->rows[u];
		int64_t z0 = ax ? 0 : b[u].lo, z1 = ax ? depth : b[u].hi;
		uint64_t x0 = ax ? (uint64_t)b[u].lo : 0, w = ax ? (uint64_t)(b[u].hi - b[u].lo) : width;

		if (b[u].hi <= b[u].lo)
			continue;
		for (int64_t z = z0; z < z1; z++) {
			/* lines back to back on the host: one memory access per page (tnpu_va_write_rows) */
			if (ng == 1 && hpy == w && height > 1) {
				uint64_t so = (uint64_t)half * ex->half + off +
					      (ax ? (uint64_t)z * spz + (uint64_t)(b[u].lo - b[u].first)
						  : (uint64_t)(z - b[u].first) * spz);
				uint64_t va, t, end;
				uint32_t err;

				if (!__builtin_mul_overflow((uint64_t)z, hpz, &t) && !__builtin_add_overflow(host_va, t, &va) &&
				    !__builtin_add_overflow(va, x0, &va) &&
				    !__builtin_add_overflow(va, (uint64_t)height * w, &end)) {
					if (tnpu_stopped(ex, (uint64_t)height * (1 + w / TNPU_WORK_BYTES)))
						return tnpu_stop_fail(ex);
					if (h2d) {
						for (uint32_t y = 0; y < height; y++)	/* before the copy, as DMA_H2D */
							sram_mark(rs, so + (uint64_t)y * spy, so + (uint64_t)y * spy + w);
						err = tnpu_va_read_rows(ex, va, rs->sram + so, spy, (uint32_t)w, height,
									TNPU_EC(engine));
					} else {
						err = tnpu_va_write_rows(ex, va, rs->sram + so, spy, (uint32_t)w, height,
									 TNPU_EC(engine));
					}
					if (err)
						return err;
					continue;
				}
			}
			for (uint32_t y = 0; y < height; y++) {
				for (uint32_t g = 0; g < ng; g++) {
					uint64_t so = (uint64_t)half * ex->half + off + (uint64_t)y * spy + (uint64_t)g * len +
						      (ax ? (uint64_t)z * spz + (uint64_t)(b[u].lo - b[u].first)
							  : (uint64_t)(z - b[u].first) * spz);
					uint64_t va, t;
					uint32_t err;

					if (tnpu_stopped(ex, 1 + w / TNPU_WORK_BYTES))
						return tnpu_stop_fail(ex);
					if (__builtin_mul_overflow((uint64_t)z, hpz, &t) ||
					    __builtin_add_overflow(host_va, t, &va) ||
					    __builtin_mul_overflow((uint64_t)y, hpy, &t) || __builtin_add_overflow(va, t, &va) ||
					    __builtin_add_overflow(va, x0 + (uint64_t)g * gw, &va))
						return tnpu_fail(ex, TNPU_ERR_MMU_VA_RANGE,
								 (h2d ? 0u : 1u) | (TNPU_EC(engine) << 4), host_va);
					if (h2d) {
						sram_mark(rs, so, so + w);	/* before the copy, as DMA_H2D */
						err = tnpu_va_read(ex, va, rs->sram + so, w, TNPU_EC(engine));
					} else {
						err = tnpu_va_write(ex, va, rs->sram + so, w, TNPU_EC(engine));
					}
					if (err)
						return err;
				}
			}
		}
	}
	if (stream) {
		/* line-tracked (commands.md "Line state"): data moves from S + CMD + SETUP, one unit row
		 * after the other; H2D publishes each row's landing, D2H waits for each row's writer */
		uint64_t s = TNPU_MAX(ex->F[engine], async ? 0 : ex->P), end = s + dur;

		if (aux)
			s = TNPU_MAX(s, ex->isl_rt[ex->cur].aux);
		for (unsigned u = 0; u < rows; u++) {
			struct row_state *rs = &ex->rows[u];
			uint64_t n = b[u].hi > b[u].lo ? (uint64_t)(b[u].hi - b[u].lo) * ng : 0;
			uint64_t rc = ax ? div_ceil_u64(n, TNPU_RATE_DMA_PORT)
					 : TNPU_MAX(1, div_ceil_u64(width, TNPU_RATE_DMA_PORT));
			uint64_t t = s + TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP;
			int64_t z0 = ax ? 0 : b[u].lo, z1 = ax ? depth : b[u].hi;

			if (!n)
				continue;
			for (int64_t z = z0; z < z1; z++) {
				for (uint32_t y = 0; y < height; y++) {
					uint64_t so = (uint64_t)half * ex->half + off + (uint64_t)y * spy +
						      (ax ? (uint64_t)z * spz + (uint64_t)(b[u].lo - b[u].first)
							  : (uint64_t)(z - b[u].first) * spz);
					uint64_t se = so + (ax ? (uint64_t)(ng - 1) * len + (uint64_t)(b[u].hi - b[u].lo) : width);

					if (tnpu_stopped(ex, 1))
						return tnpu_stop_fail(ex);
					if (h2d) {
						t += rc;
						tnpu_sb_add(&rs->sb_in, so, se, t);
					} else {
						t = tnpu_sb_ready(&rs->sb_out, so, se, tnpu_sb_ready(&rs->sb_in, so, se, t)) +
						    rc;
					}
				}
			}
			end = TNPU_MAX(end, t);
		}
		if (!h2d) {
			dur = end - s;
			if (end > ex->cfg.watchdog_cycles)
				return tnpu_fail(ex, TNPU_ERR_WATCHDOG, 0, 0);
		}
	}
	bytes = union_len(b, rows) * ng * height * (ax ? depth : (uint64_t)width);
	ex->res->counters[h2d ? TNPU_CNT_BYTES_H2D : TNPU_CNT_BYTES_D2H] += bytes;
	if (aux) {
		/* AUX queue: the load engine issues it (CYC_CMD) and its data shares the ports with the
		 * band queue (xfer), but its setup runs concurrently with the band queue's commands. */
		uint64_t s0 = TNPU_MAX(ex->F[engine], async ? 0 : ex->P);
		uint64_t s = TNPU_MAX(s0, ex->isl_rt[ex->cur].aux);

		ex->F[engine] = s0 + TNPU_CYC_CMD + xfer;
		ex->isl_rt[ex->cur].aux = s + dur;
		ex->P = s + dur;
		tnpu_trace_emit(ex, engine, TNPU_TRACE_ROW_NONE, TNPU_TRACE_DMA_H2D, s, s + dur);
		ex->res->counters[TNPU_CNT_LOAD_CYCLES] += dur;
		ex->res->counters[TNPU_CNT_DMA_CYCLES] += dur;
		return 0;
	}
	tnpu_engine_run(ex, engine, h2d ? TNPU_TRACE_DMA_H2D : TNPU_TRACE_DMA_D2H, async, dur);
	return 0;
}
