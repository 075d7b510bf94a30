/* SPDX-License-Identifier: MIT */
/*
 * test_scoreboard.c - the STREAM scoreboard (linestate.c, commands.md "Line state") against a plain
 * model of its documented rule: a ring keeping the newest TNPU_SB_CAP writes, whose two oldest merge
 * into one (union of ranges, later time) when it is full; a reader asking about [lo, hi) after cycle
 * `after` gets max(after, the time of every overlapping write).  White-box: tnpu_sb_ready skips
 * blocks of the ring by their summaries, which must never change an answer.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct ref_ent {
	uint64_t lo, hi, t;
};

struct ref {
	struct ref_ent e[TNPU_SB_CAP];
	unsigned n;	/* oldest first */
};

static void ref_add(struct ref *r, uint64_t lo, uint64_t hi, uint64_t t)
{
	if (hi <= lo)
		return;
	if (r->n == TNPU_SB_CAP) {
		r->e[1].lo = r->e[0].lo < r->e[1].lo ? r->e[0].lo : r->e[1].lo;
		r->e[1].hi = r->e[0].hi > r->e[1].hi ? r->e[0].hi : r->e[1].hi;
		r->e[1].t = r->e[0].t > r->e[1].t ? r->e[0].t : r->e[1].t;
		memmove(r->e, r->e + 1, (TNPU_SB_CAP - 1) * sizeof(r->e[0]));
		r->n--;
	}
	r->e[r->n++] = (struct ref_ent){ lo, hi, t };
}

static uint64_t ref_ready(const struct ref *r, uint64_t lo, uint64_t hi, uint64_t after)
{
	uint64_t t = after;

	for (unsigned i = 0; i < r->n; i++)
		if (r->e[i].lo < hi && lo < r->e[i].hi && r->e[i].t > t)
			t = r->e[i].t;
	return t;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Writes like a job's: bands of rows landing later and later, ST tiles, a few out-of-order ones;
 * queries anywhere, with `after` before, inside and past the landing times. */
Test(scoreboard, answers_equal_the_ring_rule_over_merges_and_wraps)
{
	static struct row_state rs;
	static struct ref ref;
	uint64_t seed = 0x5c0eb0a7d15ull, now = 0;

	cr_assert_eq(tnpu_lines_alloc(&rs, 1u << 20), 0);
	for (unsigned job = 0; job < 4; job++) {
		tnpu_lines_reset(&rs);
		memset(&ref, 0, sizeof(ref));
		now = 0;
		for (unsigned step = 0; step < 6000; step++) {
			uint64_t r = rnd(&seed), lo, hi, t;

			if (r % 3) {	/* a write */
				lo = rnd(&seed) % (1u << 20);
				hi = lo + 1 + rnd(&seed) % (r % 5 ? 2048 : 65536);
				hi = hi > (1u << 20) ? (1u << 20) : hi;
				now += rnd(&seed) % 8;
				t = r % 17 ? now + rnd(&seed) % 64 : rnd(&seed) % (now + 1);	/* mostly later */
				tnpu_sb_add(&rs.sb_in, lo, hi, t);
				ref_add(&ref, lo, hi, t);
			} else {	/* a query */
				uint64_t after = rnd(&seed) % (now + 80);

				lo = rnd(&seed) % (1u << 20);
				hi = lo + 1 + rnd(&seed) % 40000;
				cr_assert_eq(tnpu_sb_ready(&rs.sb_in, lo, hi, after), ref_ready(&ref, lo, hi, after),
					     "job %u step %u: [%llu, %llu) after %llu", job, step, (unsigned long long)lo,
					     (unsigned long long)hi, (unsigned long long)after);
			}
		}
		cr_assert_eq(rs.sb_in.n, TNPU_SB_CAP, "the ring filled and merged (job %u)", job);
	}
	tnpu_lines_free(&rs);
}

/* A full ring merges its two oldest entries; when they sit in different blocks of slots, the merged
 * entry's wider range must still be found (here only slot 32 covers byte 5000 after 32 merges). */
Test(scoreboard, a_merge_across_blocks_widens_the_later_block)
{
	static struct row_state rs;
	uint64_t i;

	cr_assert_eq(tnpu_lines_alloc(&rs, 1u << 20), 0);
	tnpu_lines_reset(&rs);
	for (i = 0; i < TNPU_SB_CAP; i++)
		tnpu_sb_add(&rs.sb_in, i * 1000, i * 1000 + 10, 100 + i);
	for (i = 0; i < TNPU_SB_BLK; i++)	/* 32 merges; the new entries land far from byte 5000 */
		tnpu_sb_add(&rs.sb_in, 1040000, 1040010, 1000 + i);
	/* slot 32 now holds [0, 32010) at cycle 132: the 33 oldest writes merged */
	cr_assert_eq(tnpu_sb_ready(&rs.sb_in, 5000, 5001, 131), 132);
	cr_assert_eq(tnpu_sb_ready(&rs.sb_in, 5000, 5001, 0), 132);
	cr_assert_eq(tnpu_sb_ready(&rs.sb_in, 33000, 33001, 0), 133);
	cr_assert_eq(tnpu_sb_ready(&rs.sb_in, 1040005, 1040006, 0), 1000 + TNPU_SB_BLK - 1);
	cr_assert_eq(tnpu_sb_ready(&rs.sb_in, 1040005, 1040006, 5000), 5000);
	tnpu_lines_free(&rs);
}
