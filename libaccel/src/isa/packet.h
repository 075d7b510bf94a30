/* SPDX-License-Identifier: MIT */
/*
 * packet.h - the one builder of DISPATCH packets (isa.md "CONFIG data", "EXE data"): every CONFIG and
 * EXE packet the lowerings send is assembled here and checked when it is dispatched, so a plan whose
 * SRAM offsets run past a storage-unit half is refused while the stream is built (with the record and
 * the bytes named) instead of failing on the device with SRAM_RANGE.
 *
 *	struct pkt p;
 *
 *	cfg_begin(&p, ibuf, &hdr);		// hdr's n_instr and n_operands are the builder's
 *	cfg_insns(&p, ins, 4);
 *	cfg_operands(&p, ops, 3);		// operand records: checked against the half
 *	cfg_record(&p, &sfu);			// other 32-byte entries (SFU, depthwise parameters)
 *	pkt_dispatch(cs, &p, flags, row, half, dflags);
 *
 *	exe_begin(&p, ibuf, TNPU_PKT_LAST | TNPU_PKT_SHIFT_OUT);
 *	exe_patch(&p, 0, TNPU_PATCH_COLS, kv);
 *	pkt_dispatch(cs, &p, flags, row, half, dflags);
 *
 * A check that fails makes the stream's error sticky (cs->err, message in cs->msg; cs_report()).
 */
#ifndef ACCEL_PACKET_H
#define ACCEL_PACKET_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"
#include "tnpu/tnpu_hw.h"

#define PKT_MAX_PATCHES 16

struct pkt {
	uint8_t b[1 + 16 + 2 * TNPU_IBUF_DEPTH + 32 * TNPU_RF_WINDOW];
	uint32_t len;
	unsigned n_instr, n_recs, n_patches;
	bool exe;
	uint16_t operand;	/* bit i: record i is an operand (checked against the half) */
	int err;		/* first misuse of the builder (too many entries), -EINVAL */
};

void cfg_begin(struct pkt *p, unsigned ibuf, const struct tnpu_cfg_hdr *h);
void cfg_insns(struct pkt *p, const uint16_t *ins, unsigned n);
void cfg_operands(struct pkt *p, const struct tnpu_operand *ops, unsigned n);
/* Any other 32-byte register-file entry (SFU or depthwise parameter record, an operand's raw bytes). */
void cfg_record(struct pkt *p, const void *rec);
void cfg_records(struct pkt *p, const void *recs, unsigned n);
void exe_begin(struct pkt *p, unsigned ibuf, unsigned flags);
void exe_patch(struct pkt *p, unsigned rf, unsigned field, uint32_t value);
/* A patch whose value is not checked against its field's width (the raw accel_cs_exe API: the device
 * validates a hand-built stream, PACKET). */
void exe_patch_raw(struct pkt *p, unsigned rf, unsigned field, uint32_t value);
/* Patches of an EXE so far (callers that replace their last patches). */
static inline void exe_truncate(struct pkt *p, unsigned n_patches)
{
	if (p->exe && n_patches < p->n_patches) {
		p->n_patches = n_patches;
		p->len = 1 + 8 * n_patches;
	}
}
/* Check the packet and append its DISPATCH; on a failed check nothing is appended. */
void pkt_dispatch(struct accel_cmdstream *cs, const struct pkt *p, unsigned flags, unsigned row, unsigned half,
		  unsigned dflags);
/* SRAM bytes [lo, hi) of the half that an operand record reaches on a cols x pes row as configured
 * (every PE's tile, before EXE patches and scalar updates); false for the layouts this does not
 * model (cluster pairs, row wrap). */
bool pkt_operand_span(const struct tnpu_operand *o, unsigned cols, unsigned pes, int64_t *lo, int64_t *hi);

#endif
