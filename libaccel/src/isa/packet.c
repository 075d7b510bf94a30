// SPDX-License-Identifier: MIT
/* packet.c - the DISPATCH packet builder (packet.h; isa.md "CONFIG data", "EXE data"). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "packet.h"

void cfg_begin(struct pkt *p, unsigned ibuf, const struct tnpu_cfg_hdr *h)
{
	p->n_instr = p->n_recs = p->n_patches = 0;
	p->exe = false;
	p->operand = 0;
	p->err = ibuf < TNPU_NUM_IBUFS ? 0 : -EINVAL;
	p->b[0] = TNPU_PKT_CONFIG_BYTE(ibuf);
	memcpy(p->b + 1, h, 16);
	p->len = 17;
}

void cfg_insns(struct pkt *p, const uint16_t *ins, unsigned n)
{
	if (p->exe || p->n_recs || p->n_instr + n > TNPU_IBUF_DEPTH) {
		p->err = -EINVAL;	/* instructions come before the records, at most a buffer's depth */
		return;
	}
	memcpy(p->b + p->len, ins, 2u * n);
	p->len += 2u * n;
	p->n_instr += n;
}

void cfg_record(struct pkt *p, const void *rec)
{
	cfg_records(p, rec, 1);
}

void cfg_records(struct pkt *p, const void *recs, unsigned n)
{
	if (p->exe || p->n_recs + n > TNPU_RF_WINDOW) {
		p->err = -EINVAL;
		return;
	}
	memcpy(p->b + p->len, recs, 32u * n);
	p->len += 32u * n;
	p->n_recs += n;
}

void cfg_operands(struct pkt *p, const struct tnpu_operand *ops, unsigned n)
{
	unsigned first = p->n_recs;

	cfg_records(p, ops, n);
	if (!p->err)
		for (unsigned i = 0; i < n; i++)
			p->operand |= (uint16_t)(1u << (first + i));
}

void exe_begin(struct pkt *p, unsigned ibuf, unsigned flags)
{
	p->exe = true;
	p->n_instr = p->n_recs = p->n_patches = 0;
	p->operand = 0;
	p->err = ibuf < TNPU_NUM_IBUFS && !(flags & ~(unsigned)(TNPU_PKT_LAST | TNPU_PKT_SHIFT_OUT)) ? 0 : -EINVAL;
	p->b[0] = TNPU_PKT_EXE_BYTE(ibuf, flags);
	p->len = 1;
}

void exe_patch_raw(struct pkt *p, unsigned rf, unsigned field, uint32_t value)
{
	struct tnpu_exe_patch pt = { .rf = (uint8_t)rf, .field = (uint8_t)field, .value = value };

	if (!p->exe || p->n_patches == PKT_MAX_PATCHES || rf >= TNPU_RF_WINDOW || field > TNPU_PATCH_PITCH) {
		p->err = -EINVAL;
		return;
	}
	memcpy(p->b + p->len, &pt, 8);
	p->len += 8;
	p->n_patches++;
}

void exe_patch(struct pkt *p, unsigned rf, unsigned field, uint32_t value)
{
	/* isa.md "EXE data": rows and cols take 16 bits */
	if ((field == TNPU_PATCH_ROWS || field == TNPU_PATCH_COLS) && value > 0xFFFF) {
		p->err = -EINVAL;
		return;
	}
	exe_patch_raw(p, rf, field, value);
}

static unsigned esize(unsigned dtype)
{
	return dtype == TNPU_DTYPE_INT8 ? 1 : dtype == TNPU_DTYPE_BF16 ? 2 : 4;
}

bool pkt_operand_span(const struct tnpu_operand *o, unsigned cols, unsigned pes, int64_t *lo, int64_t *hi)
{
	int64_t ext, a;

	if ((o->flags & (TNPU_OPF_CPAIR | TNPU_OPF_WRAP)) || !o->rows || !o->cols || !cols || !pes)
		return false;
	if (o->flags & TNPU_OPF_SPARSE)	/* cols slot columns of rows (value, index) slots */
		ext = (int64_t)(o->cols - 1) * o->pitch + (int64_t)o->rows * (o->dtype == TNPU_DTYPE_FP32 ? 8 : 4);
	else
		ext = (int64_t)(o->rows - 1) * o->pitch + (int64_t)o->cols * esize(o->dtype);
	*lo = INT64_MAX;
	*hi = INT64_MIN;
	for (unsigned c = 0; c < 2; c++)	/* the corners: strides are linear in the cluster and PE index */
		for (unsigned q = 0; q < 2; q++) {
			a = (int64_t)o->addr + (int64_t)(c ? cols - 1 : 0) * o->col_stride +
			    (int64_t)(q ? pes - 1 : 0) * o->pe_stride;
			if (a < *lo)
				*lo = a;
			if (a + ext > *hi)
				*hi = a + ext;
		}
	return true;
}

/* Every operand record within the half (sram_bytes / 2). */
static int check_cfg(struct accel_cmdstream *cs, const struct pkt *p)
{
	const struct accel_caps *c = &cs->dev->caps;
	int64_t half = c->sram_bytes / 2, lo, hi;

	for (unsigned i = 0; i < p->n_recs; i++) {
		struct tnpu_operand o;

		if (!(p->operand & (1u << i)))
			continue;
		memcpy(&o, p->b + 17 + 2u * p->n_instr + 32u * i, sizeof(o));
		if (pkt_operand_span(&o, c->cols, c->pes, &lo, &hi) && (lo < 0 || hi > half)) {
			snprintf(cs->msg, sizeof(cs->msg),
				 "CONFIG of buffer %u: operand record %u (addr %u, %ux%u, pitch %u, col stride %d, pe "
				 "stride %d) reaches SRAM bytes [%lld, %lld), past the %lld-byte storage-unit half",
				 TNPU_PKT_BUF(p->b[0]), i, o.addr, o.rows, o.cols, o.pitch, o.col_stride, o.pe_stride,
				 (long long)lo, (long long)hi, (long long)half);
			return -ERANGE;
		}
	}
	return 0;
}

void pkt_dispatch(struct accel_cmdstream *cs, const struct pkt *p, unsigned flags, unsigned row, unsigned half,
		  unsigned dflags)
{
	uint8_t b[sizeof(p->b)];
	int err = p->err;

	if (cs->err)
		return;
	if (err) {
		snprintf(cs->msg, sizeof(cs->msg), "%s packet: more entries than the ISA allows, or a field out of range",
			 p->exe ? "EXE" : "CONFIG");
	} else if (!p->exe) {
		struct tnpu_cfg_hdr h;

		memcpy(&h, p->b + 1, 16);
		if (!p->n_instr) {
			err = -EINVAL;
			snprintf(cs->msg, sizeof(cs->msg), "CONFIG packet without instructions");
		} else {
			err = check_cfg(cs, p);
		}
		if (!err) {	/* the header's counts are what the packet holds (isa.md: the length rule) */
			memcpy(b, p->b, p->len);
			h.n_instr = (uint8_t)p->n_instr;
			h.n_operands = (uint8_t)p->n_recs;
			memcpy(b + 1, &h, 16);
			cs_dispatch(cs, flags, row, half, dflags, b, p->len);
			return;
		}
	} else {
		cs_dispatch(cs, flags, row, half, dflags, p->b, p->len);
		return;
	}
	cs->err = err;
}
