// SPDX-License-Identifier: MIT
/*
 * accel-coredump's parser and command decoder (tools/accel-coredump/coredump.c) on dumps built here from
 * the layout in uapi/tnpu_coredump.h and the command formats of tnpu_hw.h: fields come back as written,
 * the failing command is found, and truncated or inconsistent input is refused with a message.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "coredump.h"
#include "tnpu/tnpu_hw.h"

/* header + REGS(2) + RING(2 entries) + CMDS(FENCE 24 + DMA 64) */
static uint8_t buf[4096];
static size_t len;

static void *put_section(uint32_t type, uint32_t size)
{
	struct tnpu_coredump_section *s = (void *)(buf + len);
	struct tnpu_coredump_header *h = (void *)buf;

	s->type = type;
	s->size = size;
	len += sizeof(*s) + size;
	h->section_count++;
	return s + 1;
}

static void build(void)
{
	struct tnpu_coredump_header *h = (void *)buf;
	struct tnpu_coredump_reg *r;
	struct tnpu_coredump_ring *ring;
	struct tnpu_coredump_cmds *c;
	struct tnpu_cmd_fence *f;
	struct tnpu_cmd_dma *dma;

	memset(buf, 0, sizeof(buf));
	memcpy(h->magic, TNPU_COREDUMP_MAGIC, 8);
	h->version = TNPU_COREDUMP_VERSION;
	h->header_size = sizeof(*h);
	h->reason = TNPU_COREDUMP_MMU_FAULT;
	h->flags = TNPU_COREDUMP_F_CMD_OFFSET | TNPU_COREDUMP_F_ERR_ADDR;
	strcpy(h->kernel_release, "6.12.0-test");
	strcpy(h->driver, "tnpu 1.0");
	strcpy(h->device, "0000:00:03.0");
	h->client_id = 7;
	h->job_seqno = 42;
	h->hw_seqno = 3;
	h->cmd_va = 0x200000;
	h->cmd_len = 88;
	h->ring = 1;
	h->ctx = 5;
	h->queue = 2;
	h->err_code = TNPU_ERR_MMU_NOT_PRESENT;
	h->err_cmd_offset = 24;
	h->err_addr = 0xdead000;
	len = sizeof(*h);

	r = put_section(TNPU_COREDUMP_SEC_REGS, 2 * sizeof(*r));
	r[0] = (struct tnpu_coredump_reg){ TNPU_REG_ERR_CODE, 4, TNPU_ERR_MMU_NOT_PRESENT };
	r[1] = (struct tnpu_coredump_reg){ TNPU_REG_Q(1, TNPU_Q_HEAD), 4, 4 };

	ring = put_section(TNPU_COREDUMP_SEC_RING, sizeof(*ring) + 2 * 32);
	ring->ring = 1;
	ring->entries = 256;
	ring->head = 0;
	ring->first = 255;
	ring->count = 2;

	c = put_section(TNPU_COREDUMP_SEC_CMDS, sizeof(*c) + 88);
	c->va = 0x200000;
	c->len = 88;
	f = (void *)(c + 1);
	f->hdr.opcode = TNPU_CMD_FENCE;
	f->hdr.size = 24;
	dma = (void *)((uint8_t *)(c + 1) + 24);
	dma->hdr.opcode = TNPU_CMD_DMA_H2D;
	dma->hdr.size = 64;
	dma->host_va = 0xdead000;
	dma->width = 16;
	dma->height = 1;
	dma->depth = 1;
	h->total_size = (uint32_t)len;
}

Test(coredump, fields_as_written)
{
	struct cd_dump d;
	struct cd_reg reg;
	char err[128], name[32];

	build();
	cr_assert_eq(cd_parse(buf, len, &d, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(d.reason, TNPU_COREDUMP_MMU_FAULT);
	cr_assert_str_eq(cd_reason_name(d.reason), "mmu_fault");
	cr_assert_eq(d.job_seqno, 42);
	cr_assert_eq(d.ring, 1);
	cr_assert_eq(d.ctx, 5);
	cr_assert_eq(d.err_addr, 0xdead000);
	cr_assert_str_eq(d.device, "0000:00:03.0");
	cr_assert_eq(d.nregs, 2);
	cd_reg_at(&d, 1, &reg);
	cr_assert_str_eq(cd_reg_name(reg.offset, name, sizeof(name)), "Q1_HEAD");
	cd_reg_at(&d, 0, &reg);
	cr_assert_str_eq(cd_reg_name(reg.offset, name, sizeof(name)), "ERR_CODE");
	cr_assert(d.has_ring && d.ring_state.count == 2 && d.ring_state.first == 255);
	cr_assert(d.has_cmds && d.cmds.len == 88);
}

Test(coredump, disassembles_the_window)
{
	struct cd_dump d;
	char err[128], text[256];

	build();
	cr_assert_eq(cd_parse(buf, len, &d, err, sizeof(err)), 0);
	cr_assert_eq(cd_disasm(d.cmds.data, d.cmds.len, text, sizeof(text)), 24);
	cr_assert(!strncmp(text, "FENCE", 5), "%s", text);
	cr_assert_eq(cd_disasm(d.cmds.data + 24, d.cmds.len - 24, text, sizeof(text)), 64);
	cr_assert(strstr(text, "DMA_H2D") && strstr(text, "host_va=0xdead000"), "%s", text);
}

Test(coredump, refuses_bad_input)
{
	struct tnpu_coredump_header *h = (void *)buf;
	struct cd_dump d;
	char err[128];

	build();
	cr_assert_eq(cd_parse(buf, len - 8, &d, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "truncated"), "%s", err);
	cr_assert_eq(cd_parse(buf, 100, &d, err, sizeof(err)), -EINVAL);
	h->version = 2;
	cr_assert_eq(cd_parse(buf, len, &d, err, sizeof(err)), -EPROTONOSUPPORT);
	build();
	h->section_count = 4;	/* one more than there is room for */
	cr_assert_eq(cd_parse(buf, len, &d, err, sizeof(err)), -EINVAL);
	build();
	/* the command section claims more bytes than it holds */
	((struct tnpu_coredump_cmds *)(buf + len - 88 - sizeof(struct tnpu_coredump_cmds)))->len = 4096;
	cr_assert_eq(cd_parse(buf, len, &d, err, sizeof(err)), -EINVAL);
	build();
	memcpy(buf, "NOTADUMP", 8);
	cr_assert_eq(cd_parse(buf, len, &d, err, sizeof(err)), -EINVAL);
}

Test(coredump, invalid_command_size_stops_the_decoder)
{
	uint8_t cmd[16] = { TNPU_CMD_NOP, 0, 0, 0, 12, 0, 0, 0 };
	char text[256];

	cr_assert_eq(cd_disasm(cmd, sizeof(cmd), text, sizeof(text)), 0);
	cr_assert(strstr(text, "invalid size"), "%s", text);
}
