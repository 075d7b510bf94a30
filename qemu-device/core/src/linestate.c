/* SPDX-License-Identifier: MIT */
/*
 * linestate.c - per-line state of a storage unit's SRAM (Documentation/hardware/commands.md
 * "Line state"): a written bit per TNPU_SRAM_LINE bytes (a clean line reads as zero and the
 * multicast LD does not deliver it) and two scoreboards of the cycles at which ranges are written
 * (STREAM bands and ST), which line-tracked readers wait for.  Timing state only: the data path
 * never reads it.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A scoreboard keeps its newest entries; when full, the two oldest merge into one covering both
 * ranges at the later time, which can only delay a reader (never let it run early). */
#define SB_CAP TNPU_SB_CAP
_Static_assert((TNPU_SB_CAP & (TNPU_SB_CAP - 1)) == 0 && TNPU_SB_CAP % TNPU_SB_BLK == 0,
	       "the ring wraps by a mask, in whole blocks");

static void sb_reset(struct scoreboard *sb);

int tnpu_lines_alloc(struct row_state *rs, uint32_t sram)
{
	size_t words = ((size_t)sram / TNPU_SRAM_LINE + 63) / 64;

	rs->lines = calloc(words ? words : 1, sizeof(uint64_t));
	rs->n_lines = (uint64_t)sram / TNPU_SRAM_LINE;
	rs->sb_in.e = malloc(SB_CAP * sizeof(struct sb_ent));
	rs->sb_out.e = malloc(SB_CAP * sizeof(struct sb_ent));
	rs->sb_in.cap = rs->sb_out.cap = SB_CAP;
	sb_reset(&rs->sb_in);
	sb_reset(&rs->sb_out);
	return rs->lines && rs->sb_in.e && rs->sb_out.e ? 0 : -1;
}

void tnpu_lines_free(struct row_state *rs)
{
	free(rs->lines);
	free(rs->sb_in.e);
	free(rs->sb_out.e);
}

static void sb_reset(struct scoreboard *sb)
{
	sb->n = sb->head = 0;
	memset(sb->bt, 0, sizeof(sb->bt));
	memset(sb->blo, 0xff, sizeof(sb->blo));
	memset(sb->bhi, 0, sizeof(sb->bhi));
}

/*
 * Job start: the SRAM the last job wrote is zeroed again and every line is clean, no writes in flight.
 * Every write marks its lines (sram_mark), and a line a zero fill cleaned holds zeros, so zeroing the
 * written lines (runs of set bits, a bitmap word at a time) restores an all-zero SRAM; the gaps of
 * the written range — a band's padding, the space between a layer's operands — are left alone.
 */
void tnpu_lines_reset(struct row_state *rs)
{
	if (rs->dirty_hi > rs->dirty_lo) {
		size_t w0 = rs->dirty_lo / TNPU_SRAM_LINE / 64, w1 = (rs->dirty_hi - 1u) / TNPU_SRAM_LINE / 64;
		size_t run = 0, n = 0;	/* pending run of written lines [run, run + n) */

		for (size_t w = w0; w <= w1; w++) {
			uint64_t bits = rs->lines[w];

			if (bits == ~0ull && n && run + n == w * 64) {
				n += 64;
				continue;
			}
			while (bits) {
				size_t b = (size_t)__builtin_ctzll(bits), len;
				uint64_t from = bits >> b;

				len = from == ~0ull >> b ? 64 - b : (size_t)__builtin_ctzll(~from);
				if (n && run + n == w * 64 + b) {
					n += len;
				} else {
					if (n)
						memset(rs->sram + run * TNPU_SRAM_LINE, 0, n * TNPU_SRAM_LINE);
					run = w * 64 + b;
					n = len;
				}
				bits = len + b >= 64 ? 0 : bits & (~0ull << (b + len));
			}
		}
		if (n)
			memset(rs->sram + run * TNPU_SRAM_LINE, 0, n * TNPU_SRAM_LINE);
		memset(rs->lines + w0, 0, (w1 - w0 + 1) * sizeof(uint64_t));
	}
	sb_reset(&rs->sb_in);
	sb_reset(&rs->sb_out);
}

/* Lines [lo / LINE, (hi - 1) / LINE] written, a bitmap word at a time (a band or a tile spans
 * thousands of lines; this runs for every DMA row, IM2COL tile and ST). */
void tnpu_lines_set(struct row_state *rs, uint64_t lo, uint64_t hi)
{
	uint64_t l0 = lo / TNPU_SRAM_LINE, l1 = (hi - 1) / TNPU_SRAM_LINE;
	uint64_t w0 = l0 / 64, w1 = l1 / 64;
	uint64_t m0 = ~0ull << (l0 % 64), m1 = ~0ull >> (63 - l1 % 64);

	if (w0 == w1) {
		rs->lines[w0] |= m0 & m1;
		return;
	}
	rs->lines[w0] |= m0;
	for (uint64_t w = w0 + 1; w < w1; w++)
		rs->lines[w] = ~0ull;
	rs->lines[w1] |= m1;
}

/* A zero fill makes the lines it covers entirely clean again (partly covered lines stay written). */
void tnpu_lines_clean(struct row_state *rs, uint64_t lo, uint64_t hi)
{
	for (uint64_t l = (lo + TNPU_SRAM_LINE - 1) / TNPU_SRAM_LINE; (l + 1) * TNPU_SRAM_LINE <= hi; l++)
		rs->lines[l / 64] &= ~(1ull << (l % 64));
}

static bool line_written(const struct row_state *rs, uint64_t l)
{
	return rs->lines[l / 64] & (1ull << (l % 64));
}

/* Written lines among lines [l0, l1), a word at a time (an LD's block can span a whole half). */
static uint64_t lines_written(const struct row_state *rs, uint64_t l0, uint64_t l1)
{
	uint64_t n = 0;

	while (l0 < l1 && l0 % 64)
		n += line_written(rs, l0++);
	for (; l0 + 64 <= l1; l0 += 64)
		n += (uint64_t)__builtin_popcountll(rs->lines[l0 / 64]);
	while (l0 < l1)
		n += line_written(rs, l0++);
	return n;
}

/* Bytes of [lo, hi) that lie in written lines (SRAM past the unit has none: never read the bitmap there). */
uint64_t tnpu_lines_written_bytes(const struct row_state *rs, uint64_t lo, uint64_t hi)
{
	uint64_t l0, l1, n;

	hi = TNPU_MIN(hi, rs->n_lines * TNPU_SRAM_LINE);
	if (hi <= lo)
		return 0;
	l0 = lo / TNPU_SRAM_LINE;
	l1 = (hi - 1) / TNPU_SRAM_LINE;
	n = lines_written(rs, l0, l1 + 1) * TNPU_SRAM_LINE;
	/* the first and last lines count only their bytes inside [lo, hi) */
	if (line_written(rs, l0))
		n -= lo - l0 * TNPU_SRAM_LINE;
	if (line_written(rs, l1))
		n -= (l1 + 1) * TNPU_SRAM_LINE - hi;
	return n;
}

/* The summary of the block holding slot i covers the entry now there (it only grows). */
static void sb_note(struct scoreboard *sb, unsigned i)
{
	const struct sb_ent *e = &sb->e[i];
	unsigned b = i / TNPU_SB_BLK;

	sb->bt[b] = TNPU_MAX(sb->bt[b], e->t);
	sb->blo[b] = TNPU_MIN(sb->blo[b], e->lo);
	sb->bhi[b] = TNPU_MAX(sb->bhi[b], e->hi);
}

/* Entries live in a ring (head = oldest); a full ring merges its two oldest entries. */
void tnpu_sb_add(struct scoreboard *sb, uint64_t lo, uint64_t hi, uint64_t t)
{
	unsigned i;

	if (hi <= lo)
		return;
	if (sb->n == TNPU_SB_CAP) {
		unsigned j = (sb->head + 1) & (TNPU_SB_CAP - 1);
		struct sb_ent *a = &sb->e[sb->head], *b = &sb->e[j];

		b->lo = TNPU_MIN(a->lo, b->lo);
		b->hi = TNPU_MAX(a->hi, b->hi);
		b->t = TNPU_MAX(a->t, b->t);
		sb_note(sb, j);
		sb->head = j;
		sb->n--;
	}
	i = (sb->head + sb->n++) & (TNPU_SB_CAP - 1);
	sb->e[i] = (struct sb_ent){ .lo = (uint32_t)lo, .hi = (uint32_t)hi, .t = t };
	sb_note(sb, i);
}

/*
 * max(after, the cycle by which every tracked write overlapping [lo, hi) is done): callers compare the
 * result with `after` (an EXE's start, a D2H row's earliest time), so entries done by then cannot
 * matter, and whole blocks of slots whose summary is done by then, or lies outside [lo, hi), are
 * skipped unread (a full ring holds 1024 entries; an LD or a D2H row asks once each).
 */
uint64_t tnpu_sb_ready(const struct scoreboard *sb, uint64_t lo, uint64_t hi, uint64_t after)
{
	uint64_t t = after;

	/* ring positions by masks, not divisions (a reader asks per LD and per D2H row, and almost
	 * always skips every block: the summaries are what it reads) */
	for (unsigned p = sb->head, left = sb->n; left;) {
		unsigned b = p / TNPU_SB_BLK, run = TNPU_MIN(TNPU_SB_BLK - p % TNPU_SB_BLK, left);

		if (!(sb->bt[b] <= t || sb->blo[b] >= hi || lo >= sb->bhi[b]))
			for (const struct sb_ent *e = &sb->e[p], *end = e + run; e < end; e++)
				if (e->t > t && e->lo < hi && lo < e->hi)
					t = e->t;
		left -= run;
		p = (p + run) & (TNPU_SB_CAP - 1);
	}
	return t;
}
