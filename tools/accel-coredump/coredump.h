/* SPDX-License-Identifier: MIT */
/*
 * coredump.h — parse a tnpu device coredump (uapi/tnpu_coredump.h) and name what it holds: registers by
 * BAR0 offset, commands by opcode (the constants of tnpu_hw.h), errors through the golden model's
 * tnpu_err_name(). Pure functions over a byte buffer, so tests/unit/tools can feed them hostile input.
 */
#ifndef ACCEL_COREDUMP_H
#define ACCEL_COREDUMP_H

#include <stddef.h>
#include <stdint.h>

#include "tnpu_coredump.h"

#define CD_RING_ENTRY_SIZE 32

/* A checked view of one dump: pointers into the caller's buffer, numbers in host order. */
struct cd_dump {
	uint32_t version, reason, flags;
	uint64_t timestamp_ns;
	char kernel_release[73], driver[17], device[33];	/* NUL-terminated copies */
	uint64_t client_id, job_seqno, hw_seqno, cmd_va, err_addr;
	uint32_t cmd_len, ring, ctx, queue, err_code, err_info, err_cmd_offset, timeout_ms;

	const uint8_t *regs;		/* struct tnpu_coredump_reg[nregs], little-endian */
	size_t nregs;
	int has_ring;
	struct {
		uint32_t ring, entries, head, tail, status, first, count;
		uint64_t fence;
		const uint8_t *data;	/* count entries of CD_RING_ENTRY_SIZE bytes */
	} ring_state;
	int has_cmds;
	struct {
		uint64_t va;
		uint32_t offset, len;
		const uint8_t *data;
	} cmds;
};

struct cd_reg {
	uint32_t offset, width;
	uint64_t value;
};

struct cd_ring_entry {
	uint16_t ctx, flags;
	uint32_t cmd_len;
	uint64_t cmd_va, seqno, counters_addr;
};

/* 0, or -EINVAL / -EPROTONOSUPPORT with a message in err (one line, no newline). */
int cd_parse(const uint8_t *buf, size_t len, struct cd_dump *d, char *err, size_t errlen);

void cd_reg_at(const struct cd_dump *d, size_t i, struct cd_reg *r);
void cd_ring_entry_at(const struct cd_dump *d, uint32_t i, struct cd_ring_entry *e);

/* "timeout", "mmu_fault", "job_error" or "unknown" */
const char *cd_reason_name(uint32_t reason);
/* Name of a BAR0 register ("ERR_CODE", "Q0_HEAD"); NULL if none. buf holds at least 32 bytes. */
const char *cd_reg_name(uint32_t offset, char *buf, size_t len);
/* Name of a command opcode ("DMA_H2D"), "UNKNOWN" if none. */
const char *cd_cmd_name(uint8_t opcode);

/*
 * Decodes the command at p (avail bytes left in the window) into text: "DMA_H2D host_va=0x... ...".
 * Returns its size from the header (may exceed avail: the command is cut off), or 0 when the header itself
 * is invalid (size < 8 or not a multiple of 8), after which nothing further can be decoded.
 */
uint32_t cd_disasm(const uint8_t *p, size_t avail, char *text, size_t textlen);

#endif
