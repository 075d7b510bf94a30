// SPDX-License-Identifier: MIT
/*
 * A small valid device coredump (uapi/tnpu_coredump.h), built field by field: the fixture of
 * test_coredump.c and the starting point of the coredump parser's fuzzer (tools/accel-coredump/fuzz).
 */
#include <string.h>

#include "coredump_sample.h"
#include "tnpu/tnpu_hw.h"

static void *put_section(uint8_t *buf, size_t *len, uint32_t type, uint32_t size)
{
	struct tnpu_coredump_section *s = (void *)(buf + *len);
	struct tnpu_coredump_header *h = (void *)buf;

	s->type = type;
	s->size = size;
	*len += sizeof(*s) + size;
	h->section_count++;
	return s + 1;
}

/* header + REGS(2) + RING(2 entries) + CMDS(FENCE 24 + DMA 64) */
size_t cd_sample_build(uint8_t buf[CD_SAMPLE_MAX])
{
	struct tnpu_coredump_header *h = (void *)buf;
	struct tnpu_coredump_reg *r;
	struct tnpu_coredump_ring *ring;
	struct tnpu_coredump_cmds *c;
	struct tnpu_cmd_fence *f;
	struct tnpu_cmd_dma *dma;
	size_t len;

	memset(buf, 0, CD_SAMPLE_MAX);
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

	r = put_section(buf, &len, TNPU_COREDUMP_SEC_REGS, 2 * sizeof(*r));
	r[0] = (struct tnpu_coredump_reg){ TNPU_REG_ERR_CODE, 4, TNPU_ERR_MMU_NOT_PRESENT };
	r[1] = (struct tnpu_coredump_reg){ TNPU_REG_Q(1, TNPU_Q_HEAD), 4, 4 };

	ring = put_section(buf, &len, TNPU_COREDUMP_SEC_RING, sizeof(*ring) + 2 * 32);
	ring->ring = 1;
	ring->entries = 256;
	ring->head = 0;
	ring->first = 255;
	ring->count = 2;

	c = put_section(buf, &len, TNPU_COREDUMP_SEC_CMDS, sizeof(*c) + 88);
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
	return len;
}
