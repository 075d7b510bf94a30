/* SPDX-License-Identifier: (GPL-2.0-only WITH Linux-syscall-note) OR MIT */
/*
 * tnpu_coredump.h — the binary layout of a tnpu device coredump
 * (/sys/class/devcoredump/devcdN/data), written by tnpu.ko (driver/tnpu_coredump.c) and read by
 * accel-coredump(1).
 *
 * Layout, all little-endian, every part a multiple of 8 bytes:
 *   struct tnpu_coredump_header          (header_size bytes; a newer header only grows)
 *   section_count x { struct tnpu_coredump_section, size bytes of payload }
 * Readers skip sections of an unknown type and reject a major version they do not know.
 * The complete description, and what a dump may reveal: Documentation/driver.md, "Device coredump".
 */
#ifndef _UAPI_TNPU_COREDUMP_H_
#define _UAPI_TNPU_COREDUMP_H_

#include <linux/types.h>

#define TNPU_COREDUMP_MAGIC		"TNPUDUMP"	/* 8 bytes, no terminator in the file */
#define TNPU_COREDUMP_VERSION		1

/* why the dump was taken */
#define TNPU_COREDUMP_TIMEOUT		1	/* no progress for timeout_ms: device reset */
#define TNPU_COREDUMP_MMU_FAULT		2	/* the device reported an MMU error (10..14) */
#define TNPU_COREDUMP_JOB_ERROR		3	/* the device reported any other job error */

/* header flags */
#define TNPU_COREDUMP_F_CMD_OFFSET	0x1	/* err_cmd_offset names the failing command */
#define TNPU_COREDUMP_F_ERR_ADDR	0x2	/* err_addr is a faulting device VA */

/* section types */
#define TNPU_COREDUMP_SEC_REGS		1	/* struct tnpu_coredump_reg[] */
#define TNPU_COREDUMP_SEC_RING		2	/* struct tnpu_coredump_ring + entries */
#define TNPU_COREDUMP_SEC_CMDS		3	/* struct tnpu_coredump_cmds + bytes */

struct tnpu_coredump_header {
	char magic[8];
	__u32 version;
	__u32 header_size;		/* sizeof(struct tnpu_coredump_header), writer's */
	__u32 total_size;		/* header + every section */
	__u32 section_count;
	__u32 reason;			/* TNPU_COREDUMP_TIMEOUT, _MMU_FAULT, _JOB_ERROR */
	__u32 flags;			/* TNPU_COREDUMP_F_* */
	__u64 timestamp_ns;		/* CLOCK_REALTIME when captured */
	char kernel_release[72];	/* utsname release, NUL-terminated */
	char driver[16];		/* "tnpu 1.0" */
	char device[32];		/* PCI device name, "0000:00:03.0" */
	/* the failing job */
	__u64 client_id;		/* drm-client-id of the file that submitted it (fdinfo) */
	__u64 job_seqno;		/* SUBMIT's seqno (drm_tnpu_submit.seqno) */
	__u64 hw_seqno;			/* the ring's sequence number (the fence value) */
	__u64 cmd_va;			/* device VA of the command buffer */
	__u32 cmd_len;			/* its length in bytes */
	__u32 ring;			/* hardware queue */
	__u32 ctx;			/* device context (MMU address space) */
	__u32 queue;			/* the file's queue handle */
	/* what the device reported (0 for a timeout) */
	__u32 err_code;			/* errors.md code */
	__u32 err_info;
	__u32 err_cmd_offset;		/* failing command: byte offset in the buffer */
	__u32 timeout_ms;		/* the timeout_ms module parameter */
	__u64 err_addr;			/* faulting device VA (MMU errors) */
};

struct tnpu_coredump_section {
	__u32 type;			/* TNPU_COREDUMP_SEC_* */
	__u32 size;			/* payload bytes after this header, a multiple of 8 */
};

/* one BAR0 register, read before the device was reset */
struct tnpu_coredump_reg {
	__u32 offset;			/* BAR0 offset (registers.md) */
	__u32 width;			/* 4 or 8 bytes */
	__u64 value;
};

/* the failing job's ring: registers, then count 32-byte ring entries (queues.md) */
struct tnpu_coredump_ring {
	__u32 ring;
	__u32 entries;			/* ring size in entries */
	__u32 head;			/* Q_HEAD: next entry the device fetches */
	__u32 tail;			/* Q_TAIL */
	__u32 status;			/* Q_STATUS */
	__u32 first;			/* ring index of the first captured entry */
	__u32 count;			/* captured entries: first, first + 1, ... (mod entries) */
	__u32 reserved;
	__u64 fence;			/* last seqno the device wrote to the ring's fence word */
};

/* a window of the failing job's command buffer, starting at a command boundary */
struct tnpu_coredump_cmds {
	__u64 va;			/* device VA of the window's first byte */
	__u32 offset;			/* its byte offset in the command buffer */
	__u32 len;			/* bytes that follow */
};

#endif /* _UAPI_TNPU_COREDUMP_H_ */
