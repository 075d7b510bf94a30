/* SPDX-License-Identifier: MIT */
/*
 * The DISPATCH packet builder (libaccel/src/isa/packet.c, issue #27): the header's counts are the
 * packet's, an operand record that runs past a storage-unit half is refused while the stream is built
 * (naming the record and the bytes, nothing appended), EXE patch fields keep their widths.  The device's
 * own checks of the same rules are tests/unit/core; every lowering's packets go through this builder (the
 * model zoo's device cycles were unchanged by the move).
 */
#include "common.h"
#include "packet.h"

static const uint16_t ins2[2] = { TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_ST(0, 1, 1) };

static struct tnpu_operand opnd(uint32_t addr, uint16_t rows, uint16_t cols, uint32_t pitch)
{
	return (struct tnpu_operand){ .addr = addr, .pitch = pitch, .rows = rows, .cols = cols,
				      .dtype = TNPU_DTYPE_FP32 };
}

Test(packet, the_header_counts_are_the_packets_own)
{
	struct accel_dev *dev = open_dev(NULL);
	struct tnpu_cfg_hdr h = { .n_instr = 9, .n_operands = 7, .repeat = 1 };	/* wrong on purpose */
	struct tnpu_operand o[2] = { opnd(0, 4, 16, 64), opnd(4096, 4, 16, 64) };
	struct accel_cmdstream cs;
	struct tnpu_cfg_hdr got;
	struct pkt p;

	cs_init(&cs, dev);
	cfg_begin(&p, 3, &h);
	cfg_insns(&p, ins2, 2);
	cfg_operands(&p, o, 2);
	pkt_dispatch(&cs, &p, 0, TNPU_DISPATCH_ROW_ALL, 0, 0);
	cr_assert_eq(cs.err, 0, "%s", cs.msg);
	/* DISPATCH command (16 bytes), then the packet: the CONFIG byte, the header, 2 instructions, 2 records */
	cr_assert_eq(cs.len, 16 + ((1 + 16 + 4 + 64 + 7) & ~7u));
	cr_expect_eq(cs.buf[16], TNPU_PKT_CONFIG_BYTE(3));
	memcpy(&got, cs.buf + 17, 16);
	cr_expect_eq(got.n_instr, 2);
	cr_expect_eq(got.n_operands, 2);
	cr_expect_eq(got.repeat, 1);
	cs_fini(&cs);
	accel_close(dev);
}

Test(packet, an_operand_past_the_half_is_refused_when_the_stream_is_built)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_caps caps;
	struct tnpu_cfg_hdr h = { .repeat = 1 };
	struct accel_cmdstream cs;
	struct pkt p;
	struct tnpu_operand ok, bad;
	uint32_t half;

	cr_assert_eq(accel_query_caps(dev, &caps), 0);
	half = caps.sram_bytes / 2;
	ok = opnd(0, 4, 16, 64);
	bad = opnd(half - 128, 4, 16, 64);	/* rows 0..3 reach half - 128 + 3 * 64 + 64 = half + 128 */
	cs_init(&cs, dev);
	cfg_begin(&p, 0, &h);
	cfg_insns(&p, ins2, 2);
	cfg_operands(&p, &ok, 1);
	cfg_operands(&p, &bad, 1);
	pkt_dispatch(&cs, &p, 0, TNPU_DISPATCH_ROW_ALL, 0, 0);
	cr_expect_eq(cs.err, -ERANGE);
	cr_expect_eq(cs.len, 0, "the refused packet was appended (%zu bytes)", cs.len);
	cr_expect_eq(cs_report(&cs), -ERANGE);
	cr_expect(strstr(accel_last_error(dev), "operand record 1"), "%s", accel_last_error(dev));
	cr_expect(strstr(accel_last_error(dev), "past the"), "%s", accel_last_error(dev));
	/* sticky: nothing more is appended */
	cfg_begin(&p, 0, &h);
	cfg_insns(&p, ins2, 2);
	cfg_operands(&p, &ok, 1);
	pkt_dispatch(&cs, &p, 0, TNPU_DISPATCH_ROW_ALL, 0, 0);
	cr_expect_eq(cs.len, 0);
	cs_fini(&cs);

	/* the last PE of the last cluster is where a strided operand ends */
	cs_init(&cs, dev);
	bad = opnd(0, 1, 16, 64);
	bad.pe_stride = (int32_t)(half / caps.pes);
	cfg_begin(&p, 0, &h);
	cfg_insns(&p, ins2, 2);
	cfg_operands(&p, &bad, 1);
	pkt_dispatch(&cs, &p, 0, TNPU_DISPATCH_ROW_ALL, 0, 0);
	cr_expect_eq(cs.err, caps.pes > 1 ? 0 : -ERANGE, "%s", cs.msg);
	bad.col_stride = bad.pe_stride;	/* cluster cols-1, PE pes-1: past the half */
	cfg_begin(&p, 0, &h);
	cfg_insns(&p, ins2, 2);
	cfg_operands(&p, &bad, 1);
	pkt_dispatch(&cs, &p, 0, TNPU_DISPATCH_ROW_ALL, 0, 0);
	cr_expect_eq(cs.err, caps.cols > 1 ? -ERANGE : 0, "%s", cs.msg);
	cs_fini(&cs);
	accel_close(dev);
}

Test(packet, records_that_are_not_operands_are_not_checked)
{
	struct accel_dev *dev = open_dev(NULL);
	struct tnpu_cfg_hdr h = { .repeat = 1 };
	struct tnpu_sfu_param sfu = { .bias_addr = 0xFFFFFF00u };	/* not an SRAM operand record */
	struct accel_cmdstream cs;
	struct pkt p;

	cs_init(&cs, dev);
	cfg_begin(&p, 0, &h);
	cfg_insns(&p, ins2, 2);
	cfg_record(&p, &sfu);
	pkt_dispatch(&cs, &p, 0, TNPU_DISPATCH_ROW_ALL, 0, 0);
	cr_expect_eq(cs.err, 0, "%s", cs.msg);
	cs_fini(&cs);
	accel_close(dev);
}

Test(packet, exe_patches_keep_their_field_widths)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_cmdstream cs;
	struct tnpu_exe_patch pt;
	struct pkt p;

	cs_init(&cs, dev);
	exe_begin(&p, 5, TNPU_PKT_LAST);
	exe_patch(&p, 2, TNPU_PATCH_ADDR, 0x12345);
	exe_patch(&p, 1, TNPU_PATCH_ROWS, 0xFFFF);
	cr_expect_eq(p.err, 0);
	exe_truncate(&p, 1);
	exe_patch(&p, 1, TNPU_PATCH_COLS, 7);
	pkt_dispatch(&cs, &p, 0, 0, 1, 0);
	cr_assert_eq(cs.err, 0, "%s", cs.msg);
	cr_expect_eq(cs.buf[16], TNPU_PKT_EXE_BYTE(5, TNPU_PKT_LAST));
	memcpy(&pt, cs.buf + 17 + 8, 8);
	cr_expect(pt.rf == 1 && pt.field == TNPU_PATCH_COLS && pt.value == 7);
	/* rows and cols take 16 bits (isa.md "EXE data"); rf < 16; at most 16 patches */
	exe_begin(&p, 5, 0);
	exe_patch(&p, 1, TNPU_PATCH_ROWS, 0x10000);
	cr_expect_eq(p.err, -EINVAL);
	exe_begin(&p, 5, 0);
	exe_patch(&p, 16, TNPU_PATCH_ADDR, 0);
	cr_expect_eq(p.err, -EINVAL);
	exe_begin(&p, 5, 0);
	for (unsigned i = 0; i <= PKT_MAX_PATCHES; i++)
		exe_patch(&p, 0, TNPU_PATCH_ADDR, i);
	cr_expect_eq(p.err, -EINVAL);
	pkt_dispatch(&cs, &p, 0, 0, 1, 0);
	cr_expect_eq(cs.err, -EINVAL);
	cs_fini(&cs);
	accel_close(dev);
}
