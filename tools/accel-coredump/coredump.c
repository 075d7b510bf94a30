// SPDX-License-Identifier: MIT
/* coredump.c — see coredump.h. Layout: uapi/tnpu_coredump.h; registers: registers.md; commands: commands.md. */
#include "coredump.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tnpu/tnpu_hw.h"

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return ret;
}

static void copy_str(char *dst, size_t dstlen, const char *src, size_t srclen)
{
	size_t n = strnlen(src, srclen);

	if (n >= dstlen)
		n = dstlen - 1;
	memcpy(dst, src, n);
	dst[n] = 0;
}

#define HDR(field) offsetof(struct tnpu_coredump_header, field)

int cd_parse(const uint8_t *buf, size_t len, struct cd_dump *d, char *err, size_t errlen)
{
	size_t hsize, total, pos;
	uint32_t nsec, i;

	memset(d, 0, sizeof(*d));
	if (len < 16 || memcmp(buf, TNPU_COREDUMP_MAGIC, 8))
		return fail(err, errlen, -EINVAL, "not a tnpu coredump (no TNPUDUMP magic)");
	d->version = le32(buf + HDR(version));
	if (d->version != TNPU_COREDUMP_VERSION)
		return fail(err, errlen, -EPROTONOSUPPORT, "coredump version %" PRIu32 " (this decoder reads %d)",
			    d->version, TNPU_COREDUMP_VERSION);
	if (len < sizeof(struct tnpu_coredump_header))
		return fail(err, errlen, -EINVAL, "truncated: %zu bytes, the header alone is %zu", len,
			    sizeof(struct tnpu_coredump_header));
	hsize = le32(buf + HDR(header_size));
	total = le32(buf + HDR(total_size));
	if (hsize < sizeof(struct tnpu_coredump_header) || hsize % 8 || hsize > total)
		return fail(err, errlen, -EINVAL, "bad header size %zu (total %zu)", hsize, total);
	if (total > len)
		return fail(err, errlen, -EINVAL, "truncated: %zu bytes of %zu", len, total);
	d->reason = le32(buf + HDR(reason));
	d->flags = le32(buf + HDR(flags));
	d->timestamp_ns = le64(buf + HDR(timestamp_ns));
	copy_str(d->kernel_release, sizeof(d->kernel_release), (const char *)buf + HDR(kernel_release),
		 sizeof(((struct tnpu_coredump_header *)0)->kernel_release));
	copy_str(d->driver, sizeof(d->driver), (const char *)buf + HDR(driver),
		 sizeof(((struct tnpu_coredump_header *)0)->driver));
	copy_str(d->device, sizeof(d->device), (const char *)buf + HDR(device),
		 sizeof(((struct tnpu_coredump_header *)0)->device));
	d->client_id = le64(buf + HDR(client_id));
	d->job_seqno = le64(buf + HDR(job_seqno));
	d->hw_seqno = le64(buf + HDR(hw_seqno));
	d->cmd_va = le64(buf + HDR(cmd_va));
	d->cmd_len = le32(buf + HDR(cmd_len));
	d->ring = le32(buf + HDR(ring));
	d->ctx = le32(buf + HDR(ctx));
	d->queue = le32(buf + HDR(queue));
	d->err_code = le32(buf + HDR(err_code));
	d->err_info = le32(buf + HDR(err_info));
	d->err_cmd_offset = le32(buf + HDR(err_cmd_offset));
	d->timeout_ms = le32(buf + HDR(timeout_ms));
	d->err_addr = le64(buf + HDR(err_addr));

	nsec = le32(buf + HDR(section_count));
	pos = hsize;
	for (i = 0; i < nsec; i++) {
		const uint8_t *p;
		uint32_t type, size;

		if (total - pos < sizeof(struct tnpu_coredump_section))
			return fail(err, errlen, -EINVAL, "section %" PRIu32 " starts past the end", i);
		type = le32(buf + pos);
		size = le32(buf + pos + 4);
		pos += sizeof(struct tnpu_coredump_section);
		if (size % 8 || size > total - pos)
			return fail(err, errlen, -EINVAL, "section %" PRIu32 " (type %" PRIu32 "): bad size %" PRIu32,
				    i, type, size);
		p = buf + pos;
		pos += size;
		switch (type) {
		case TNPU_COREDUMP_SEC_REGS:
			if (size % sizeof(struct tnpu_coredump_reg))
				return fail(err, errlen, -EINVAL, "register section: size %" PRIu32, size);
			d->regs = p;
			d->nregs = size / sizeof(struct tnpu_coredump_reg);
			break;
		case TNPU_COREDUMP_SEC_RING: {
			uint32_t count;

			if (size < sizeof(struct tnpu_coredump_ring))
				return fail(err, errlen, -EINVAL, "ring section: size %" PRIu32, size);
			count = le32(p + offsetof(struct tnpu_coredump_ring, count));
			if (count > (size - sizeof(struct tnpu_coredump_ring)) / CD_RING_ENTRY_SIZE)
				return fail(err, errlen, -EINVAL, "ring section: %" PRIu32 " entries in %" PRIu32 " bytes",
					    count, size);
			d->has_ring = 1;
			d->ring_state.ring = le32(p + offsetof(struct tnpu_coredump_ring, ring));
			d->ring_state.entries = le32(p + offsetof(struct tnpu_coredump_ring, entries));
			d->ring_state.head = le32(p + offsetof(struct tnpu_coredump_ring, head));
			d->ring_state.tail = le32(p + offsetof(struct tnpu_coredump_ring, tail));
			d->ring_state.status = le32(p + offsetof(struct tnpu_coredump_ring, status));
			d->ring_state.first = le32(p + offsetof(struct tnpu_coredump_ring, first));
			d->ring_state.count = count;
			d->ring_state.fence = le64(p + offsetof(struct tnpu_coredump_ring, fence));
			d->ring_state.data = p + sizeof(struct tnpu_coredump_ring);
			if (!d->ring_state.entries)
				return fail(err, errlen, -EINVAL, "ring section: a ring of 0 entries");
			break;
		}
		case TNPU_COREDUMP_SEC_CMDS: {
			uint32_t clen;

			if (size < sizeof(struct tnpu_coredump_cmds))
				return fail(err, errlen, -EINVAL, "command section: size %" PRIu32, size);
			clen = le32(p + offsetof(struct tnpu_coredump_cmds, len));
			if (clen > size - sizeof(struct tnpu_coredump_cmds))
				return fail(err, errlen, -EINVAL, "command section: %" PRIu32 " bytes in %" PRIu32,
					    clen, size);
			d->has_cmds = 1;
			d->cmds.va = le64(p + offsetof(struct tnpu_coredump_cmds, va));
			d->cmds.offset = le32(p + offsetof(struct tnpu_coredump_cmds, offset));
			d->cmds.len = clen;
			d->cmds.data = p + sizeof(struct tnpu_coredump_cmds);
			break;
		}
		default:
			break;	/* a newer writer's section: skipped */
		}
	}
	return 0;
}

void cd_reg_at(const struct cd_dump *d, size_t i, struct cd_reg *r)
{
	const uint8_t *p = d->regs + i * sizeof(struct tnpu_coredump_reg);

	r->offset = le32(p);
	r->width = le32(p + 4);
	r->value = le64(p + 8);
}

void cd_ring_entry_at(const struct cd_dump *d, uint32_t i, struct cd_ring_entry *e)
{
	const uint8_t *p = d->ring_state.data + (size_t)i * CD_RING_ENTRY_SIZE;

	e->ctx = le16(p);
	e->flags = le16(p + 2);
	e->cmd_len = le32(p + 4);
	e->cmd_va = le64(p + 8);
	e->seqno = le64(p + 16);
	e->counters_addr = le64(p + 24);	/* the job's counter record (flags bit 1), 0 none */
}

const char *cd_reason_name(uint32_t reason)
{
	switch (reason) {
	case TNPU_COREDUMP_TIMEOUT:
		return "timeout";
	case TNPU_COREDUMP_MMU_FAULT:
		return "mmu_fault";
	case TNPU_COREDUMP_JOB_ERROR:
		return "job_error";
	default:
		return "unknown";
	}
}

#define REG(name) { TNPU_REG_##name, #name }
static const struct {
	uint32_t offset;
	const char *name;
} global_regs[] = {
	REG(ID), REG(VERSION), REG(CAP_GEOM), REG(CAP_SRAM), REG(CAP_CLUSTER), REG(CAP_ACC), REG(CAP_DTYPES),
	REG(CAP_QUEUES), REG(CAP_MMU), REG(CAP_MMU_CTX), REG(CAP_CLOCK), REG(CAP_RATES), REG(CAP_FEATURES),
	REG(CAP_CMDBUF), REG(CTRL), REG(STATUS), REG(SCRATCH), REG(IRQ_STATUS), REG(IRQ_MASK), REG(ERR_CODE),
	REG(ERR_QUEUE), REG(ERR_INFO), REG(ERR_CMD_OFFSET), { TNPU_REG_ERR_ADDR_LO, "ERR_ADDR" },
	{ TNPU_REG_ERR_SEQNO_LO, "ERR_SEQNO" }, REG(MMU_CTX_COUNT), REG(MMU_FAULTS),
};

#define QREG(name) { TNPU_Q_##name, #name }
static const struct {
	uint32_t offset;
	const char *name;
} queue_regs[] = {
	QREG(RING_SIZE), QREG(HEAD), QREG(TAIL), QREG(CTRL), QREG(STATUS), { TNPU_Q_DONE_SEQNO_LO, "DONE_SEQNO" },
	QREG(ERR_CODE), QREG(ERR_INFO), QREG(ERR_CMD_OFFSET), QREG(ERR_CTX), { TNPU_Q_ERR_ADDR_LO, "ERR_ADDR" },
	{ TNPU_Q_ERR_SEQNO_LO, "ERR_SEQNO" }, QREG(JOBS_DONE),
};

const char *cd_reg_name(uint32_t offset, char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < sizeof(global_regs) / sizeof(global_regs[0]); i++)
		if (global_regs[i].offset == offset)
			return global_regs[i].name;
	if (offset >= TNPU_REG_QUEUE_BASE && offset < TNPU_REG_Q(TNPU_MAX_QUEUES, 0)) {
		uint32_t q = (offset - TNPU_REG_QUEUE_BASE) / TNPU_REG_QUEUE_STRIDE;
		uint32_t r = (offset - TNPU_REG_QUEUE_BASE) % TNPU_REG_QUEUE_STRIDE;

		for (i = 0; i < sizeof(queue_regs) / sizeof(queue_regs[0]); i++)
			if (queue_regs[i].offset == r) {
				snprintf(buf, len, "Q%" PRIu32 "_%s", q, queue_regs[i].name);
				return buf;
			}
	}
	return NULL;
}

const char *cd_cmd_name(uint8_t opcode)
{
	switch (opcode) {
	case TNPU_CMD_NOP: return "NOP";
	case TNPU_CMD_DMA_H2D: return "DMA_H2D";
	case TNPU_CMD_DMA_D2H: return "DMA_D2H";
	case TNPU_CMD_IM2COL: return "IM2COL";
	case TNPU_CMD_DISPATCH: return "DISPATCH";
	case TNPU_CMD_SEM_SIGNAL: return "SEM_SIGNAL";
	case TNPU_CMD_SEM_WAIT: return "SEM_WAIT";
	case TNPU_CMD_FENCE: return "FENCE";
	case TNPU_CMD_ISLAND: return "ISLAND";
	case TNPU_CMD_RING_INIT: return "RING_INIT";
	case TNPU_CMD_RING_SIGNAL: return "RING_SIGNAL";
	case TNPU_CMD_RING_WAIT: return "RING_WAIT";
	case TNPU_CMD_PLAN_LOAD: return "PLAN_LOAD";
	case TNPU_CMD_GATHER: return "GATHER";
	case TNPU_CMD_PLAN_FREE: return "PLAN_FREE";
	case TNPU_CMD_DMA_BANDS_H2D: return "DMA_BANDS_H2D";
	case TNPU_CMD_DMA_BANDS_D2H: return "DMA_BANDS_D2H";
	case TNPU_CMD_VEC_LUT: return "VEC_LUT";
	case TNPU_CMD_VEC: return "VEC";
	default: return "UNKNOWN";
	}
}

/* The fields a reader needs to match a command to the code that built it; the rest as raw words. */
uint32_t cd_disasm(const uint8_t *p, size_t avail, char *text, size_t textlen)
{
	uint32_t size, i;
	int n;

	if (avail < sizeof(struct tnpu_cmd_hdr)) {
		snprintf(text, textlen, "(%zu bytes, cut off)", avail);
		return 0;
	}
	size = le32(p + 4);
	n = snprintf(text, textlen, "%-13s size %-4" PRIu32 " flags 0x%02x", cd_cmd_name(p[0]), size, p[1]);
	if (size < 8 || size % 8) {
		snprintf(text + n, textlen - (size_t)n, "  (invalid size: not decoded further)");
		return 0;
	}
	if (size > avail) {
		snprintf(text + n, textlen - (size_t)n, "  (cut off at the window's end)");
		return size;
	}
#define ROOM ((size_t)n < textlen ? textlen - (size_t)n : 0)
	switch (p[0]) {
	case TNPU_CMD_DMA_H2D:
	case TNPU_CMD_DMA_D2H:
		if (size >= sizeof(struct tnpu_cmd_dma))
			n += snprintf(text + n, ROOM,
				      "  host_va=0x%" PRIx64 " sram_off=0x%" PRIx32 " width=%" PRIu32 " height=%" PRIu32
				      " depth=%" PRIu32 " row=%u half=%u",
				      le64(p + offsetof(struct tnpu_cmd_dma, host_va)),
				      le32(p + offsetof(struct tnpu_cmd_dma, sram_off)),
				      le32(p + offsetof(struct tnpu_cmd_dma, width)),
				      le32(p + offsetof(struct tnpu_cmd_dma, height)),
				      le32(p + offsetof(struct tnpu_cmd_dma, depth)), p[offsetof(struct tnpu_cmd_dma, row)],
				      p[offsetof(struct tnpu_cmd_dma, half)]);
		break;
	case TNPU_CMD_IM2COL:
		if (size >= sizeof(struct tnpu_cmd_im2col))
			n += snprintf(text + n, ROOM, "  src_va=0x%" PRIx64,
				      le64(p + offsetof(struct tnpu_cmd_im2col, src_va)));
		break;
	case TNPU_CMD_FENCE:
		if (size >= sizeof(struct tnpu_cmd_fence))
			n += snprintf(text + n, ROOM, "  va=0x%" PRIx64 " value=%" PRIu64,
				      le64(p + offsetof(struct tnpu_cmd_fence, va)),
				      le64(p + offsetof(struct tnpu_cmd_fence, value)));
		break;
	case TNPU_CMD_DISPATCH:
		if (size >= sizeof(struct tnpu_cmd_dispatch))
			n += snprintf(text + n, ROOM, "  row=%u half=%u packet_len=%" PRIu32, p[8], p[9],
				      le32(p + offsetof(struct tnpu_cmd_dispatch, packet_len)));
		break;
	case TNPU_CMD_SEM_SIGNAL:
	case TNPU_CMD_SEM_WAIT:
		if (size >= sizeof(struct tnpu_cmd_sem))
			n += snprintf(text + n, ROOM, "  engine=%u sem=%u count=%" PRIu32, p[8], p[9],
				      le32(p + offsetof(struct tnpu_cmd_sem, count)));
		break;
	default:
		/* the first payload words, enough to recognise the command */
		for (i = 8; i < size && i < 32; i += 8)
			n += snprintf(text + n, ROOM, " %016" PRIx64, le64(p + i));
		break;
	}
#undef ROOM
	return size;
}
