// SPDX-License-Identifier: MIT
/*
 * accel-coredump — decode a tnpu device coredump: why it was taken, the failing job (client, ring,
 * context, seqno), the error by name, the registers by name, the ring around HEAD and the commands
 * around the failing one. Reads FILE, or every tnpu dump under /sys/class/devcoredump.
 * Documentation/tools.md, "accel-coredump"; the format: uapi/tnpu_coredump.h, Documentation/driver.md.
 * Exit status: 0 decoded, 1 a dump could not be read or decoded, 2 usage error, 3 no tnpu dump found.
 */
#define _GNU_SOURCE
#include "coredump.h"
#include "cli.h"
#include "json.h"

#include "tnpu/tnpu_core.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROG "accel-coredump"
#define DEVCD_DIR "/sys/class/devcoredump"
#define MAX_DUMP (16u << 20)	/* far above what the driver writes: a bound, not a guess */

struct opts {
	bool json, clear;
	const char *file;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: accel-coredump [--json] [--clear] [FILE]\n"
		"Decode a tnpu device coredump (written by the driver on a job timeout, an MMU fault or a job\n"
		"error): the failing job, the error, registers, ring entries and the commands around the failing\n"
		"one. Without FILE, every tnpu dump in " DEVCD_DIR "/devcd*/data is decoded.\n\n"
		"  -j, --json     one JSON array of decoded dumps (Documentation/tools.md)\n"
		"  -c, --clear    after decoding, free the dumps read from " DEVCD_DIR "\n"
		"                 (so the driver can write the next one)\n"
		"  -h, --help     this help\n"
		"  -V, --version  print the version\n\n"
		"Exit status: 0 decoded, 1 a dump could not be read or decoded, 2 usage error, 3 no tnpu dump.\n");
}

/* Reads a whole file (sysfs bin attributes report size 0: read to EOF), at most MAX_DUMP bytes. */
static int read_all(const char *path, uint8_t **out, size_t *len)
{
	size_t cap = 65536, n = 0;
	uint8_t *buf = malloc(cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || !buf) {
		int e = fd < 0 ? errno : ENOMEM;

		free(buf);
		if (fd >= 0)
			close(fd);
		return -e;
	}
	for (;;) {
		ssize_t r;

		if (n == cap) {
			uint8_t *nb;

			if (cap >= MAX_DUMP) {
				free(buf);
				close(fd);
				return -EFBIG;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				close(fd);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			free(buf);
			close(fd);
			return -e;
		}
		if (!r)
			break;
		n += (size_t)r;
	}
	close(fd);
	*out = buf;
	*len = n;
	return 0;
}

static const char *err_name(uint32_t code)
{
	return tnpu_err_name(code);
}

static void fmt_time(uint64_t ns, char *buf, size_t len)
{
	time_t s = (time_t)(ns / 1000000000u);
	struct tm tm;

	if (!gmtime_r(&s, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm))
		snprintf(buf, len, "%" PRIu64 " ns", ns);
	else
		snprintf(buf + strlen(buf), len - strlen(buf), ".%09" PRIu64 "Z", ns % 1000000000u);
}

static bool has_off(const struct cd_dump *d)
{
	return d->flags & TNPU_COREDUMP_F_CMD_OFFSET;
}

/* ---- human-readable ---- */

static void print_human(const char *src, const struct cd_dump *d)
{
	char when[64], name[32], text[512];
	uint32_t i, off;
	size_t r;

	fmt_time(d->timestamp_ns, when, sizeof(when));
	printf("%s: tnpu coredump v%" PRIu32 ", %s on %s at %s\n", src, d->version, cd_reason_name(d->reason),
	       d->device, when);
	printf("  kernel %s, driver %s, timeout_ms %" PRIu32 "\n", d->kernel_release, d->driver, d->timeout_ms);
	printf("job: client %" PRIu64 " seqno %" PRIu64 " (ring seqno %" PRIu64 ") ring %" PRIu32 " ctx %" PRIu32
	       " queue %" PRIu32 "\n", d->client_id, d->job_seqno, d->hw_seqno, d->ring, d->ctx, d->queue);
	printf("  command buffer VA 0x%" PRIx64 ", %" PRIu32 " bytes\n", d->cmd_va, d->cmd_len);
	if (d->reason == TNPU_COREDUMP_TIMEOUT)
		printf("error: none reported by the device: no progress for %" PRIu32 " ms\n", d->timeout_ms);
	else
		printf("error: %s (%" PRIu32 ") info 0x%" PRIx32 " at command offset 0x%" PRIx32 "\n",
		       err_name(d->err_code), d->err_code, d->err_info, d->err_cmd_offset);
	if (d->flags & TNPU_COREDUMP_F_ERR_ADDR)
		printf("  faulting VA 0x%" PRIx64 " in context %" PRIu32 " (%s access)\n", d->err_addr, d->ctx,
		       d->err_info & 1 ? "write" : "read");

	printf("registers:\n");
	for (r = 0; r < d->nregs; r++) {
		struct cd_reg reg;
		const char *n;

		cd_reg_at(d, r, &reg);
		n = cd_reg_name(reg.offset, name, sizeof(name));
		if (reg.width == 8)
			printf("  %-18s 0x%04" PRIx32 " = 0x%016" PRIx64 "\n", n ? n : "?", reg.offset, reg.value);
		else
			printf("  %-18s 0x%04" PRIx32 " = 0x%08" PRIx64 "\n", n ? n : "?", reg.offset, reg.value);
	}

	if (d->has_ring) {
		printf("ring %" PRIu32 ": head %" PRIu32 " tail %" PRIu32 " status 0x%" PRIx32 " fence %" PRIu64 "\n",
		       d->ring_state.ring, d->ring_state.head, d->ring_state.tail, d->ring_state.status,
		       d->ring_state.fence);
		for (i = 0; i < d->ring_state.count; i++) {
			struct cd_ring_entry e;
			uint32_t idx = (d->ring_state.first + i) % d->ring_state.entries;

			cd_ring_entry_at(d, i, &e);
			printf("  %c [%3" PRIu32 "] ctx %-4u flags 0x%x cmd_va 0x%" PRIx64 " len %" PRIu32 " seqno %" PRIu64
			       " counters 0x%" PRIx64 "%s\n", idx == d->ring_state.head ? '>' : ' ', idx, e.ctx, e.flags,
			       e.cmd_va, e.cmd_len, e.seqno, e.counters_addr, idx == d->ring_state.head ? "  <- HEAD" : "");
		}
	}

	if (d->has_cmds) {
		printf("commands (buffer offset 0x%" PRIx32 ", VA 0x%" PRIx64 ", %" PRIu32 " bytes):\n", d->cmds.offset,
		       d->cmds.va, d->cmds.len);
		for (off = 0; off < d->cmds.len;) {
			uint32_t at = d->cmds.offset + off, size;
			bool failing = has_off(d) && at == d->err_cmd_offset;

			size = cd_disasm(d->cmds.data + off, d->cmds.len - off, text, sizeof(text));
			printf("  %c 0x%06" PRIx32 "  %s%s\n", failing ? '>' : ' ', at, text,
			       failing ? "  <- failing" : "");
			if (!size || size > d->cmds.len - off)
				break;
			off += size;
		}
	}
}

/* ---- JSON ---- */

static void print_json(struct json_writer *w, const char *src, const struct cd_dump *d)
{
	char name[32], text[512];
	uint32_t i, off;
	size_t r;

	json_begin_object(w, NULL);
	json_str(w, "source", src);
	json_u64(w, "version", d->version);
	json_str(w, "reason", cd_reason_name(d->reason));
	json_str(w, "device", d->device);
	json_u64(w, "timestamp_ns", d->timestamp_ns);
	json_str(w, "kernel", d->kernel_release);
	json_str(w, "driver", d->driver);
	json_u64(w, "timeout_ms", d->timeout_ms);

	json_begin_object(w, "job");
	json_u64(w, "client_id", d->client_id);
	json_u64(w, "seqno", d->job_seqno);
	json_u64(w, "hw_seqno", d->hw_seqno);
	json_u64(w, "ring", d->ring);
	json_u64(w, "ctx", d->ctx);
	json_u64(w, "queue", d->queue);
	json_u64(w, "cmd_va", d->cmd_va);
	json_u64(w, "cmd_len", d->cmd_len);
	json_end_object(w);

	json_begin_object(w, "error");
	json_u64(w, "code", d->err_code);
	json_str(w, "name", err_name(d->err_code));
	json_u64(w, "info", d->err_info);
	if (has_off(d))
		json_u64(w, "cmd_offset", d->err_cmd_offset);
	else
		json_null(w, "cmd_offset");
	if (d->flags & TNPU_COREDUMP_F_ERR_ADDR)
		json_u64(w, "fault_va", d->err_addr);
	else
		json_null(w, "fault_va");
	json_end_object(w);

	json_begin_array(w, "registers");
	for (r = 0; r < d->nregs; r++) {
		struct cd_reg reg;
		const char *n;

		cd_reg_at(d, r, &reg);
		n = cd_reg_name(reg.offset, name, sizeof(name));
		json_begin_object(w, NULL);
		if (n)
			json_str(w, "name", n);
		else
			json_null(w, "name");
		json_u64(w, "offset", reg.offset);
		json_u64(w, "value", reg.value);
		json_end_object(w);
	}
	json_end_array(w);

	if (d->has_ring) {
		json_begin_object(w, "ring");
		json_u64(w, "index", d->ring_state.ring);
		json_u64(w, "head", d->ring_state.head);
		json_u64(w, "tail", d->ring_state.tail);
		json_u64(w, "status", d->ring_state.status);
		json_u64(w, "fence", d->ring_state.fence);
		json_begin_array(w, "entries");
		for (i = 0; i < d->ring_state.count; i++) {
			struct cd_ring_entry e;

			cd_ring_entry_at(d, i, &e);
			json_begin_object(w, NULL);
			json_u64(w, "index", (d->ring_state.first + i) % d->ring_state.entries);
			json_u64(w, "ctx", e.ctx);
			json_u64(w, "flags", e.flags);
			json_u64(w, "cmd_va", e.cmd_va);
			json_u64(w, "cmd_len", e.cmd_len);
			json_u64(w, "seqno", e.seqno);
			json_u64(w, "counters_addr", e.counters_addr);
			json_end_object(w);
		}
		json_end_array(w);
		json_end_object(w);
	} else {
		json_null(w, "ring");
	}

	json_begin_array(w, "commands");
	for (off = 0; d->has_cmds && off < d->cmds.len;) {
		const uint8_t *p = d->cmds.data + off;
		uint32_t at = d->cmds.offset + off, size;

		size = cd_disasm(p, d->cmds.len - off, text, sizeof(text));
		json_begin_object(w, NULL);
		json_u64(w, "offset", at);
		json_u64(w, "va", d->cmds.va + off);
		if (d->cmds.len - off >= 8) {
			json_u64(w, "opcode", p[0]);
			json_str(w, "name", cd_cmd_name(p[0]));
			json_u64(w, "size", size);
		}
		json_bool(w, "failing", has_off(d) && at == d->err_cmd_offset);
		json_str(w, "text", text);
		json_end_object(w);
		if (!size || size > d->cmds.len - off)
			break;
		off += size;
	}
	json_end_array(w);
	json_end_object(w);
}

/* Decodes one dump; 0, or 1 after a message on stderr. */
static int decode(const char *path, const struct opts *o, struct json_writer *w, bool clear)
{
	char err[256];
	struct cd_dump d;
	uint8_t *buf = NULL;
	size_t len = 0;
	int ret = read_all(path, &buf, &len);

	if (ret) {
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(-ret));
		return 1;
	}
	ret = cd_parse(buf, len, &d, err, sizeof(err));
	if (ret) {
		fprintf(stderr, PROG ": %s: %s\n", path, err);
		free(buf);
		return 1;
	}
	if (o->json)
		print_json(w, path, &d);
	else
		print_human(path, &d);
	free(buf);
	if (clear) {
		/* devcoredump: any write to data frees the dump */
		int fd = open(path, O_WRONLY | O_CLOEXEC);

		if (fd < 0 || write(fd, "1", 1) != 1) {
			fprintf(stderr, PROG ": %s: cannot free the dump: %s\n", path, strerror(errno));
			if (fd >= 0)
				close(fd);
			return 1;
		}
		close(fd);
	}
	return 0;
}

/* A devcd whose failing device is bound to tnpu (its data may be gone already: checked on read). */
static bool is_tnpu_devcd(const char *name)
{
	char path[512], target[512];
	ssize_t n;
	const char *base;

	snprintf(path, sizeof(path), DEVCD_DIR "/%s/failing_device/driver", name);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = 0;
	base = strrchr(target, '/');
	return base && !strcmp(base + 1, "tnpu");
}

static int decode_sysfs(const struct opts *o, struct json_writer *w, int *found)
{
	struct dirent **names;
	int i, n, rc = 0;

	n = scandir(DEVCD_DIR, &names, NULL, versionsort);
	if (n < 0)
		return 0;	/* no devcoredump support in this kernel: nothing found */
	for (i = 0; i < n; i++) {
		char path[512];

		if (!strncmp(names[i]->d_name, "devcd", 5) && is_tnpu_devcd(names[i]->d_name)) {
			snprintf(path, sizeof(path), DEVCD_DIR "/%s/data", names[i]->d_name);
			(*found)++;
			if (decode(path, o, w, o->clear))
				rc = 1;
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "clear", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	struct opts o = { 0 };
	struct json_writer w;
	int c, rc, found = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":jchV", long_opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			o.json = true;
			break;
		case 'c':
			o.clear = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			return cli_version(PROG);
		default:
			return cli_usage_error(PROG, "%s: unknown option", argv[optind - 1]);
		}
	}
	if (argc - optind > 1)
		return cli_usage_error(PROG, "%s: one FILE at most", argv[optind + 1]);
	if (optind < argc)
		o.file = argv[optind];
	if (o.file && o.clear && strncmp(o.file, DEVCD_DIR "/", strlen(DEVCD_DIR) + 1))
		return cli_usage_error(PROG, "--clear: only for dumps under " DEVCD_DIR " (FILE is %s)", o.file);

	json_init(&w, stdout);
	if (o.json)
		json_begin_array(&w, NULL);
	if (o.file) {
		found = 1;
		rc = decode(o.file, &o, &w, o.clear);
	} else {
		rc = decode_sysfs(&o, &w, &found);
	}
	if (o.json) {
		json_end_array(&w);
		putchar('\n');
	}
	if (!found) {
		fprintf(stderr, PROG ": no tnpu coredump in " DEVCD_DIR "\n");
		return 3;
	}
	return rc;
}
