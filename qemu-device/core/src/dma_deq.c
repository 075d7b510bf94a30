/* SPDX-License-Identifier: MIT */
/*
 * dma_deq.c - DMA_DEQ (commands.md "DMA_DEQ", CAP_FEATURES bit 23): the weight-decompressing load.
 * Packed int8 (per column) or int4 (blockwise) weights with fp32/fp16 scales and optional zero points
 * are read column by column and expanded into an fp32 or bf16 weight tile of a storage-unit half:
 * element = (float)(code - zero point) * scale, one binary32 rounding (then RNE to bf16).
 *
 * Host reads go in K chunks of TNPU_DEQ_CHUNK codes aligned to multiples of TNPU_DEQ_CHUNK: a multiple
 * of every block and even, so no code byte, scale or zero-point byte is read twice and the scratch
 * stays bounded whatever kt is.
 */
#include "internal.h"

#define TNPU_DEQ_CHUNK	(1u << 20)

struct deq {
	uint64_t src, scl, zp;
	uint32_t sp, scp, zpp, k0, kt, nt, block, off, pitch;
	unsigned fmt, e, es, lines, r0, r1;
	bool bf16, kn;
	uint64_t lbytes;	/* bytes of one tile line */
};

/* IEEE binary16 -> binary32, exact (subnormals, infinities and NaNs included). */
static inline float f16_to_f32(uint16_t h)
{
	uint32_t s = (uint32_t)(h & 0x8000u) << 16, ex = (h >> 10) & 0x1Fu, m = h & 0x3FFu, u;
	float f;

	if (ex == 0x1F) {
		u = s | 0x7F800000u | (m << 13);
	} else if (ex) {
		u = s | ((ex + 112) << 23) | (m << 13);
	} else if (m) {
		/* subnormal: m * 2^-24, exact in binary32 */
		f = (float)m * 0x1p-24f;
		memcpy(&u, &f, 4);
		u |= s;
	} else {
		u = s;
	}
	memcpy(&f, &u, 4);
	return f;
}

/* binary32 -> bf16, round to nearest even; a NaN stays a NaN (sign kept, quiet bit set). */
static inline uint16_t f32_to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	if ((u & 0x7FFFFFFFu) > 0x7F800000u)
		return (uint16_t)((u >> 16) | 0x40u);
	return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

/* The bytes [lo, hi) of a packed stream that hold elements [a, b) (nibbles when half). */
static inline void span(uint64_t a, uint64_t b, bool half, uint64_t *lo, uint64_t *hi)
{
	*lo = half ? a / 2 : a;
	*hi = half ? (b + 1) / 2 : b;
}

static uint32_t check(struct tnpu_exec *ex, const uint8_t *c, struct deq *d)
{
	uint8_t row = c[71], half = c[72], dt = c[69];
	bool all = row == TNPU_DMA_ROW_ALL;
	uint64_t last;

	d->src = ld64(c + 8);
	d->scl = ld64(c + 16);
	d->zp = ld64(c + 24);
	d->sp = ld32(c + 32);
	d->scp = ld32(c + 36);
	d->zpp = ld32(c + 40);
	d->k0 = ld32(c + 44);
	d->kt = ld32(c + 48);
	d->nt = ld32(c + 52);
	d->block = ld32(c + 56);
	d->off = ld32(c + 60);
	d->pitch = ld32(c + 64);
	d->fmt = c[68];
	d->kn = c[70] & TNPU_DEQ_F_KN;
	d->es = (c[70] & TNPU_DEQ_F_SCALE_F16) ? 2 : 4;
	/* field rules, in the order commands.md lists them; ERR_INFO = the failing field's offset */
	if (d->fmt > TNPU_DEQ_FMT_U4)
		return tnpu_fail(ex, TNPU_ERR_DEQ_DESC, 68, 0);
	if (dt != TNPU_DTYPE_FP32 && dt != TNPU_DTYPE_BF16)
		return tnpu_fail(ex, TNPU_ERR_DEQ_DESC, 69, 0);
	if (c[70] & ~TNPU_DEQ_F_MASK)
		return tnpu_fail(ex, TNPU_ERR_DEQ_DESC, 70, 0);
	if (!all && row >= ex->cfg.rows)
		return tnpu_fail(ex, TNPU_ERR_DEQ_DESC, 71, 0);
	if (half > 1)
		return tnpu_fail(ex, TNPU_ERR_DEQ_DESC, 72, 0);
	for (unsigned i = 73; i < 80; i++)
		if (c[i])
			return tnpu_fail(ex, TNPU_ERR_DEQ_DESC, 73, 0);
	if (!d->kt)
		return tnpu_fail(ex, TNPU_ERR_DEQ_DESC, 48, 0);
	if (!d->nt)
		return tnpu_fail(ex, TNPU_ERR_DEQ_DESC, 52, 0);
	if ((uint64_t)d->k0 + d->kt > (1ull << 32))
		return tnpu_fail(ex, TNPU_ERR_DEQ_DESC, 44, 0);
	if (d->block && (d->block < TNPU_DEQ_BLOCK_MIN || d->block > TNPU_DEQ_BLOCK_MAX || (d->block & (d->block - 1))))
		return tnpu_fail(ex, TNPU_ERR_DEQ_DESC, 56, 0);
	d->bf16 = dt == TNPU_DTYPE_BF16;
	d->e = d->bf16 ? 2 : 4;
	d->lines = d->kn ? d->kt : d->nt;
	d->lbytes = (uint64_t)(d->kn ? d->nt : d->kt) * d->e;
	if (d->pitch < d->lbytes)
		return tnpu_fail(ex, TNPU_ERR_DEQ_DESC, 64, 0);
	if (tnpu_island_rows(ex, row, all, &d->r0, &d->r1))
		return ex->res->error;
	/* each term < 2^64 on its own, checked one by one (as DMA_H2D) */
	if ((uint64_t)(d->lines - 1) * d->pitch > ex->half || d->lbytes > ex->half)
		return tnpu_fail(ex, TNPU_ERR_SRAM_RANGE, 0, d->off);
	last = (uint64_t)d->off + (uint64_t)(d->lines - 1) * d->pitch + d->lbytes;
	if (last > ex->half)
		return tnpu_fail(ex, TNPU_ERR_SRAM_RANGE, 0, d->off);
	if (d->off % d->e || d->pitch % d->e)
		return tnpu_fail(ex, TNPU_ERR_ALIGN, 0, d->off);
	return 0;
}

/* Bytes of column-relative stream data: codes [k0, k0+kt), scales / zero points of the blocks. */
static void col_spans(const struct deq *d, uint64_t *cb, uint64_t *sb, uint64_t *zb)
{
	uint64_t lo, hi, b0 = d->block ? d->k0 / d->block : 0;
	uint64_t b1 = d->block ? ((uint64_t)d->k0 + d->kt - 1) / d->block : 0;

	span(d->k0, (uint64_t)d->k0 + d->kt, d->fmt == TNPU_DEQ_FMT_U4, &lo, &hi);
	*cb = hi - lo;
	*sb = (b1 - b0 + 1) * d->es;
	span(b0, b1 + 1, d->fmt == TNPU_DEQ_FMT_U4, &lo, &hi);
	*zb = d->zp ? hi - lo : 0;
}

/* Stream `base` (nt columns `pitch` apart, each ending `hi` bytes after its column's base) ends at or
 * below 2^48, computed without overflow. */
static bool stream_ok(uint64_t base, uint32_t pitch, uint32_t nt, uint64_t hi)
{
	uint64_t end;

	return !__builtin_mul_overflow((uint64_t)(nt - 1), (uint64_t)pitch, &end) &&
	       !__builtin_add_overflow(end, base, &end) && !__builtin_add_overflow(end, hi, &end) &&
	       end <= (1ull << TNPU_VA_BITS);
}

#define DEQ_PIECE	256	/* codes decoded at a time (a stack buffer) */

/* t[i] = (float)(code(k + i) - z) * s for i < cnt: q - z is exact in binary32, so the product is the one
 * rounding (-ffp-contract=off).  One loop per format, so each vectorises. */
static void decode(unsigned fmt, const uint8_t *codes, uint64_t cbase, uint64_t k, unsigned cnt, int z, float s,
		   float *t)
{
	if (fmt == TNPU_DEQ_FMT_U4) {
		for (unsigned i = 0; i < cnt; i++) {
			uint64_t kk = k + i;

			t[i] = (float)(((codes[kk / 2 - cbase] >> (4 * (kk & 1))) & 0xF) - z) * s;
		}
	} else if (fmt == TNPU_DEQ_FMT_S8) {
		const uint8_t *p = codes + (k - cbase);

		for (unsigned i = 0; i < cnt; i++)
			t[i] = (float)((int8_t)p[i] - z) * s;
	} else {
		const uint8_t *p = codes + (k - cbase);

		for (unsigned i = 0; i < cnt; i++)
			t[i] = (float)(p[i] - z) * s;
	}
}

/* Store t[0..cnt) `step` bytes apart as fp32 or bf16. */
static void store(bool bf16, uint8_t *out, uint64_t step, const float *t, unsigned cnt)
{
	if (!bf16 && step == 4) {
		memcpy(out, t, (size_t)cnt * 4);
		return;
	}
	for (unsigned i = 0; i < cnt; i++, out += step) {
		if (bf16) {
			uint16_t h = f32_to_bf16(t[i]);

			memcpy(out, &h, 2);
		} else {
			memcpy(out, &t[i], 4);
		}
	}
}

/* Expand codes [ka, kb) of column n (buffers hold the chunk's bytes from code byte cbase, block bbase,
 * zero-point byte zbase) into the destination of row r0. */
static void expand(const struct deq *d, uint8_t *sram, uint32_t n, uint64_t ka, uint64_t kb,
		   const uint8_t *codes, uint64_t cbase, const uint8_t *scales, uint64_t bbase,
		   const uint8_t *zps, uint64_t zbase)
{
	static const int zdef[3] = { 0, 128, 8 };
	uint64_t step = d->kn ? d->pitch : d->e, k = ka;
	uint8_t *out = sram + (d->kn ? (uint64_t)n * d->e : (uint64_t)n * d->pitch) + (ka - d->k0) * step;
	float t[DEQ_PIECE];

	while (k < kb) {
		uint64_t b = d->block ? k / d->block : 0;
		uint64_t end = d->block ? TNPU_MIN(kb, (b + 1) * d->block) : kb;
		const uint8_t *sp = scales + (b - bbase) * d->es;
		float s;
		int z = zdef[d->fmt];

		if (d->es == 2)
			s = f16_to_f32(ld16(sp));
		else
			memcpy(&s, sp, 4);
		if (d->zp) {
			if (d->fmt == TNPU_DEQ_FMT_U4)
				z = (zps[b / 2 - zbase] >> (4 * (b & 1))) & 0xF;
			else if (d->fmt == TNPU_DEQ_FMT_S8)
				z = (int8_t)zps[b - zbase];
			else
				z = zps[b - zbase];
		}
		while (k < end) {
			unsigned cnt = (unsigned)TNPU_MIN(end - k, DEQ_PIECE);

			decode(d->fmt, codes, cbase, k, cnt, z, s, t);
			store(d->bf16, out, step, t, cnt);
			out += cnt * step;
			k += cnt;
		}
	}
}

uint32_t tnpu_cmd_dma_deq(struct tnpu_exec *ex, const uint8_t *c, bool async)
{
	struct deq d;
	uint64_t cb, sb, zb, packed, dur, units, base;
	uint32_t err = check(ex, c, &d);
	unsigned nrows;

	if (err)
		return err;
	col_spans(&d, &cb, &sb, &zb);
	{
		uint64_t lo, hi;

		span(d.k0, (uint64_t)d.k0 + d.kt, d.fmt == TNPU_DEQ_FMT_U4, &lo, &hi);
		if (!stream_ok(d.src, d.sp, d.nt, hi))
			return tnpu_fail(ex, TNPU_ERR_MMU_VA_RANGE, TNPU_EC(TNPU_ENGINE_LOAD) << 4, d.src);
		if (!stream_ok(d.scl, d.scp, d.nt,
			       (d.block ? ((uint64_t)d.k0 + d.kt - 1) / d.block + 1 : 1) * d.es))
			return tnpu_fail(ex, TNPU_ERR_MMU_VA_RANGE, TNPU_EC(TNPU_ENGINE_LOAD) << 4, d.scl);
		span(0, d.block ? ((uint64_t)d.k0 + d.kt - 1) / d.block + 1 : 1, d.fmt == TNPU_DEQ_FMT_U4, &lo, &hi);
		if (d.zp && !stream_ok(d.zp, d.zpp, d.nt, hi))
			return tnpu_fail(ex, TNPU_ERR_MMU_VA_RANGE, TNPU_EC(TNPU_ENGINE_LOAD) << 4, d.zp);
	}
	/* the SRAM check bounds kt * nt by sram/2 (<= 2^25), so no product below can overflow */
	packed = (uint64_t)d.nt * (cb + sb + zb);
	dur = TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP +
	      TNPU_MAX(div_ceil_u64(packed, TNPU_RATE_DMA), div_ceil_u64((uint64_t)d.kt * d.nt, TNPU_RATE_DEQ));
	if (tnpu_past_watchdog(ex, TNPU_MAX(ex->F[TNPU_ENGINE_LOAD], ex->P), dur))
		return tnpu_fail(ex, TNPU_ERR_WATCHDOG, 0, 0);
	/* host work: a step per column and chunk, the expansion and the copies to the other rows */
	nrows = d.r1 - d.r0 + 1;
	if (__builtin_mul_overflow((uint64_t)d.nt, 1 + d.kt / TNPU_DEQ_CHUNK + (uint64_t)d.kt * d.e * nrows / TNPU_WORK_BYTES,
				   &units))
		units = UINT64_MAX;
	if (tnpu_stopped(ex, units))
		return tnpu_stop_fail(ex);

	base = (uint64_t)c[72] * ex->half + d.off;
	{
		uint64_t lo = base, hi = base + (uint64_t)(d.lines - 1) * d.pitch + d.lbytes;

		/* marked before the writes: a load that faults half way has still written lines */
		for (unsigned r = d.r0; r <= d.r1; r++)
			sram_mark(&ex->rows[r], lo, hi);
	}
	for (uint32_t n = 0; n < d.nt; n++) {
		uint8_t s0[4] = { 0 }, z0 = 0;
		uint64_t kend = (uint64_t)d.k0 + d.kt;

		for (uint64_t ka = d.k0; ka < kend;) {
			uint64_t kb = TNPU_MIN(kend, (ka / TNPU_DEQ_CHUNK + 1) * TNPU_DEQ_CHUNK);
			uint64_t clo, chi, b0 = d.block ? ka / d.block : 0, b1 = d.block ? (kb - 1) / d.block : 0;
			uint64_t zlo = 0, zhi = 0, sn = (ka == d.k0 || d.block) ? (b1 - b0 + 1) * d.es : 0;
			uint8_t *buf;
			bool u4 = d.fmt == TNPU_DEQ_FMT_U4;

			if (tnpu_stopped(ex, 0))	/* charged above */
				return tnpu_stop_fail(ex);
			span(ka, kb, u4, &clo, &chi);
			if (d.zp && sn)
				span(b0, b1 + 1, u4, &zlo, &zhi);
			buf = tnpu_scratch(ex, (chi - clo) + sn + (zhi - zlo));
			if (!buf)
				return tnpu_fail(ex, TNPU_ERR_NOMEM, 0, 0);
			err = tnpu_va_read(ex, d.src + (uint64_t)n * d.sp + clo, buf, chi - clo, TNPU_EC(TNPU_ENGINE_LOAD));
			/* per column (block 0): the one scale and zero point come with the first chunk */
			if (!err && sn)
				err = tnpu_va_read(ex, d.scl + (uint64_t)n * d.scp + b0 * d.es, buf + (chi - clo), sn,
						   TNPU_EC(TNPU_ENGINE_LOAD));
			if (!err && zhi > zlo)
				err = tnpu_va_read(ex, d.zp + (uint64_t)n * d.zpp + zlo, buf + (chi - clo) + sn, zhi - zlo,
						   TNPU_EC(TNPU_ENGINE_LOAD));
			if (err)
				return err;
			if (!d.block && sn) {	/* per column: kept for the column's later chunks */
				memcpy(s0, buf + (chi - clo), d.es);
				z0 = zhi > zlo ? buf[(chi - clo) + sn] : 0;
			}
			if (d.block)
				expand(&d, ex->rows[d.r0].sram + base, n, ka, kb, buf, clo, buf + (chi - clo), b0,
				       buf + (chi - clo) + sn, zlo);
			else
				expand(&d, ex->rows[d.r0].sram + base, n, ka, kb, buf, clo, s0, 0, &z0, 0);
			ka = kb;
		}
	}
	for (unsigned r = d.r0 + 1; r <= d.r1; r++)
		for (uint32_t l = 0; l < d.lines; l++) {
			uint64_t o = base + (uint64_t)l * d.pitch;

			memcpy(ex->rows[r].sram + o, ex->rows[d.r0].sram + o, d.lbytes);
		}
	ex->res->counters[TNPU_CNT_BYTES_H2D] += packed;
	tnpu_hz_rec(ex, TNPU_HZ_HOST, 0, 0, false, TNPU_TRACE_DMA_H2D, d.src + (d.fmt == TNPU_DEQ_FMT_U4 ? d.k0 / 2 : d.k0),
		    cb, d.nt, 1, d.sp, 0);
	tnpu_hz_rec(ex, TNPU_HZ_HOST, 0, 0, false, TNPU_TRACE_DMA_H2D, d.scl + (d.block ? d.k0 / d.block : 0) * d.es,
		    sb, d.nt, 1, d.scp, 0);
	if (d.zp) {
		uint64_t b0 = d.block ? d.k0 / d.block : 0;

		tnpu_hz_rec(ex, TNPU_HZ_HOST, 0, 0, false, TNPU_TRACE_DMA_H2D,
			    d.zp + (d.fmt == TNPU_DEQ_FMT_U4 ? b0 / 2 : b0), zb, d.nt, 1, d.zpp, 0);
	}
	tnpu_hz_rec(ex, TNPU_HZ_SRAM, d.r0, d.r1, true, TNPU_TRACE_DMA_H2D, base, d.lbytes, d.lines, 1, d.pitch, 0);
	tnpu_engine_run(ex, TNPU_ENGINE_LOAD, TNPU_TRACE_DMA_H2D, async, dur);
	return 0;
}
