/* SPDX-License-Identifier: MIT */
/*
 * program.c - cluster program builder: 12-bit LD/ST/MAC/SFU instructions plus register-file records,
 * packed into one CONFIG packet (isa.md).  CONFIG is sent once per job; EXE packets run it per tile.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "packet.h"
#include "tnpu/tnpu_hw.h"

_Static_assert(sizeof(struct accel_operand) == sizeof(struct tnpu_operand), "operand mirror");
_Static_assert(sizeof(struct accel_sfu_param) == sizeof(struct tnpu_sfu_param), "sfu mirror");
_Static_assert(offsetof(struct accel_operand, su_delta) == offsetof(struct tnpu_operand, su_delta), "operand");
_Static_assert(offsetof(struct accel_sfu_param, lo) == offsetof(struct tnpu_sfu_param, lo), "sfu");
_Static_assert((int)ACCEL_INT8 == (int)TNPU_DTYPE_INT8 && (int)ACCEL_INT32 == (int)TNPU_DTYPE_INT32 &&
	       (int)ACCEL_FP32 == (int)TNPU_DTYPE_FP32,
	       "dtype mirror");

int accel_program_new(struct accel_program **out)
{
	if (!out)
		return -EINVAL;
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->repeat = 1;
	return 0;
}

void accel_program_free(struct accel_program *p)
{
	free(p);
}

int accel_program_set_mode(struct accel_program *p, bool pipe4, enum accel_wq_mode wq)
{
	if (!p || (unsigned)wq > ACCEL_WQ_SW)
		return -EINVAL;
	p->mode = (uint8_t)((pipe4 ? TNPU_CFG_MODE_PIPE4 : 0) | TNPU_CFG_MODE_WQ_PUT(wq));
	return 0;
}

int accel_program_set_loop(struct accel_program *p, unsigned start, unsigned end, unsigned repeat)
{
	if (!p || start > end || end >= TNPU_IBUF_DEPTH || !repeat || repeat > 65535)
		return -EINVAL;
	p->loop_start = (uint8_t)start;
	p->loop_end = (uint8_t)end;
	p->repeat = (uint16_t)repeat;
	p->loop_set = true;
	return 0;
}

int accel_program_set_rf_base(struct accel_program *p, unsigned rf_base)
{
	if (!p || rf_base + TNPU_RF_WINDOW > TNPU_RF_ENTRIES)
		return -EINVAL;
	p->rf_base = (uint8_t)rf_base;
	return 0;
}

int accel_program_set_chain_sfu(struct accel_program *p, unsigned rf)
{
	if (!p || rf >= TNPU_RF_WINDOW)
		return -EINVAL;
	p->sfu_rf = (uint8_t)rf;
	return 0;
}

static int add_rec(struct accel_program *p, const void *rec, unsigned *rf)
{
	if (!p || !rec)
		return -EINVAL;
	if (p->n_ops >= TNPU_RF_WINDOW)
		return -E2BIG;
	memcpy(p->recs[p->n_ops], rec, 32);
	if (rf)
		*rf = p->n_ops;
	p->n_ops++;
	return 0;
}

int accel_program_add_operand(struct accel_program *p, const struct accel_operand *op, unsigned *rf)
{
	if (op && (!op->rows || !op->cols || op->dtype > ACCEL_FP32 || (op->flags & ~TNPU_OPF_MASK)))
		return -EINVAL;
	return add_rec(p, op, rf);
}

int accel_program_add_sfu_param(struct accel_program *p, const struct accel_sfu_param *sp, unsigned *rf)
{
	if (sp && ((sp->ops & ~TNPU_SFU_OP_MASK) || sp->shift > 62 || sp->reserved[0] || sp->reserved[1] ||
		   sp->reserved[2]))
		return -EINVAL;
	return add_rec(p, sp, rf);
}

static int add_insn(struct accel_program *p, uint16_t w)
{
	if (p->n_instr >= TNPU_IBUF_DEPTH)
		return -E2BIG;
	p->instr[p->n_instr++] = w;
	return 0;
}

int accel_program_ld(struct accel_program *p, unsigned rf, unsigned slot, bool weight_queue, bool zskip)
{
	if (!p || rf >= TNPU_RF_WINDOW || slot >= TNPU_NUM_SLOTS)
		return -EINVAL;
	return add_insn(p, TNPU_INSN_LD(rf, slot, weight_queue, zskip));
}

int accel_program_mac(struct accel_program *p, unsigned in_slot, unsigned wq_slot, unsigned acc, unsigned flags)
{
	if (!p || in_slot >= TNPU_NUM_SLOTS || wq_slot >= TNPU_NUM_SLOTS || acc >= TNPU_NUM_ACCS ||
	    (flags & ~(ACCEL_MAC_LB | ACCEL_MAC_CHAIN)))
		return -EINVAL;
	return add_insn(p, TNPU_INSN_MAC(in_slot, wq_slot, acc, flags & ACCEL_MAC_LB, flags & ACCEL_MAC_CHAIN));
}

int accel_program_sfu(struct accel_program *p, enum accel_sfu_fn fn, unsigned rf, unsigned acc)
{
	if (!p || (unsigned)fn > ACCEL_SFU_FN_APPLY || rf >= TNPU_RF_WINDOW || acc >= TNPU_NUM_ACCS)
		return -EINVAL;
	return add_insn(p, TNPU_INSN_SFU(fn, rf, acc));
}

int accel_program_st(struct accel_program *p, unsigned acc, unsigned rf, bool raw)
{
	if (!p || acc >= TNPU_NUM_ACCS || rf >= TNPU_RF_WINDOW)
		return -EINVAL;
	return add_insn(p, TNPU_INSN_ST(acc, rf, raw));
}

/* The program's CONFIG packet in the builder (packet.c).  Its records go in unchecked: a hand-built
 * program's operands are the device's to validate (SRAM_RANGE), which the raw command-stream API's
 * error tests rely on. */
int accel_program_pkt(const struct accel_program *p, unsigned ibuf, struct pkt *out)
{
	struct tnpu_cfg_hdr h;

	if (!p || !p->n_instr || ibuf >= TNPU_NUM_IBUFS)
		return -EINVAL;
	memset(&h, 0, sizeof(h));
	h.rf_base = p->rf_base;
	h.mode = p->mode;
	h.loop_start = p->loop_set ? p->loop_start : 0;
	h.loop_end = p->loop_set ? p->loop_end : (uint8_t)(p->n_instr - 1);
	h.repeat = p->loop_set ? p->repeat : 1;
	h.sfu_rf = p->sfu_rf;
	if (h.loop_end >= p->n_instr)
		return -EINVAL;
	cfg_begin(out, ibuf, &h);
	cfg_insns(out, p->instr, p->n_instr);
	cfg_records(out, p->recs, p->n_ops);
	return out->err;
}
