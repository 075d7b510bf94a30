/* SPDX-License-Identifier: MIT */
/* Writes valid command streams (GEMM int8/fp32, DMA, semaphores) as fuzzing seeds into argv[1]. */
#include <stdio.h>
#include <string.h>

#include "tnpu_sim.h"

static void save(const char *dir, const char *name, const struct tcb *cb)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f)
		return;
	fwrite(cb->buf, 1, cb->len, f);
	fclose(f);
}

int main(int argc, char **argv)
{
	struct tnpu_config cfg;
	struct tcb cb;
	const uint64_t va = 0x100000000ull;	/* the fuzz target's data buffer */

	if (argc < 2)
		return 2;
	tnpu_config_default(&cfg);
	cfg.rows = 2;
	cfg.cols = 2;
	cfg.pes = 4;
	cfg.sram = 64 * 1024;
	for (int f32 = 0; f32 < 2; f32++) {
		for (int piped = 0; piped < 2; piped++) {
			struct tgemm g = { .m = 32, .n = 16, .k = 32, .f32 = f32, .tm = 8, .tn = 4, .kt = 16,
					   .pipelined = piped, .a = va, .b = va + 8192, .c = va + 16384 };
			char name[64];

			tcb_init(&cb);
			if (tgemm_build(&g, &cfg, &cb) == 0) {
				snprintf(name, sizeof(name), "gemm-%s-%s", f32 ? "fp32" : "int8", piped ? "piped" : "serial");
				save(argv[1], name, &cb);
			}
			tcb_free(&cb);
		}
	}
	tcb_init(&cb);
	tcb_dma(&cb, true, 0, va, 64, 512, 0, 1, 0, 16, 256, 16, 4, 2);
	tcb_sem(&cb, true, 1, 0, 3, 1);
	tcb_sem(&cb, false, 1, 2, 3, 1);
	tcb_dma(&cb, false, 1, va + 32768, 64, 512, 0, 1, 0, 16, 256, 16, 4, 2);
	tcb_fence(&cb, va + 60000, 7);
	save(argv[1], "dma-sem-fence", &cb);
	tcb_free(&cb);
	return 0;
}
