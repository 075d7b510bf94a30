// SPDX-License-Identifier: MIT
/*
 * libFuzzer target on accel-coredump's parser and command decoder (tools/accel-coredump/coredump.c): a
 * dump comes from a file the user names, so any bytes must give a clear error or a decode, never a read
 * outside the buffer.  Odd first bytes feed the rest as a dump as it is; even ones edit a valid sample
 * dump (tests/unit/tools/coredump_sample.c) with (offset, byte) triples and cut it to a length, which
 * reaches the sections, ring entries and commands that random bytes rarely get past the header for.
 * Every input is copied to a buffer of its exact size so that ASan sees any over-read.
 */
#include <stdlib.h>
#include <string.h>

#include "coredump.h"
#include "coredump_sample.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void exercise(const uint8_t *in, size_t len)
{
	uint8_t *buf = malloc(len ? len : 1);
	char err[256], name[32], text[512];
	struct cd_dump d;

	if (!buf)
		return;
	memcpy(buf, in, len);
	if (cd_parse(buf, len, &d, err, sizeof(err)) == 0) {
		(void)cd_reason_name(d.reason);
		for (size_t i = 0; i < d.nregs; i++) {
			struct cd_reg r;

			cd_reg_at(&d, i, &r);
			(void)cd_reg_name(r.offset, name, sizeof(name));
		}
		if (d.has_ring)
			for (uint32_t i = 0; i < d.ring_state.count; i++) {
				struct cd_ring_entry e;

				cd_ring_entry_at(&d, i, &e);
			}
		if (d.has_cmds) {
			const uint8_t *p = d.cmds.data;
			size_t avail = d.cmds.len;

			while (avail) {
				uint32_t n = cd_disasm(p, avail, text, sizeof(text));

				if (!n || n > avail)
					break;
				p += n;
				avail -= n;
			}
		}
	}
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t sample[CD_SAMPLE_MAX];
	size_t len, cut;

	if (!size)
		return 0;
	if (data[0] & 1) {
		exercise(data + 1, size - 1);
		return 0;
	}
	len = cd_sample_build(sample);
	cut = size >= 3 ? ((size_t)data[1] | (size_t)data[2] << 8) % (len + 1) : len;
	for (size_t i = 3; i + 3 <= size; i += 3)
		sample[((size_t)data[i] | (size_t)data[i + 1] << 8) % len] = data[i + 2];
	exercise(sample, cut);
	return 0;
}
