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
#include "coredump_sample.h"
#include "tnpu/tnpu_hw.h"

static uint8_t buf[CD_SAMPLE_MAX];
static size_t len;

static void build(void)
{
	len = cd_sample_build(buf);
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
