/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target on the command-stream entry point (tnpu_exec_run_cmdbuf).
 * The input is the command buffer itself; host memory holds a 64 KiB
 * patterned data buffer (VA 0x100000000 + ...) so DMA/IM2COL paths find
 * mapped pages.  Any crash, sanitizer report, hang (libFuzzer -timeout) or an
 * error code outside the documented range is a bug.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tnpu_sim.h"

static struct tsim sim;
static uint64_t data_va, cmd_va;
static int ready;

static void init(void)
{
	struct tnpu_config cfg;

	tnpu_config_default(&cfg);
	cfg.rows = 2;
	cfg.cols = 2;
	cfg.pes = 4;
	cfg.sram = 64 * 1024;
	/* The device's default watchdog (2^32 cycles) and host-work budget: every input ends
	 * quickly because the model bounds a job's host work itself (cycle-model.md "Host-work
	 * budget"), not because the harness shortens the job. */
	if (tsim_init(&sim, &cfg, 8u << 20))
		abort();
	data_va = tsim_buf(&sim, 65536);
	for (unsigned i = 0; i < 65536; i++)
		((uint8_t *)tsim_ptr(&sim, data_va))[i] = (uint8_t)(i * 37 + (i >> 8));
	cmd_va = tsim_buf(&sim, 65536);
	ready = 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tnpu_result res;
	uint32_t len;

	if (!ready)
		init();
	if (size > 65536)
		size = 65536;
	len = (uint32_t)(size & ~7u);
	if (!len)
		return 0;
	memcpy(tsim_ptr(&sim, cmd_va), data, len);
	tnpu_exec_run_cmdbuf(sim.ex, &sim.ops, sim.ctx_table, 2, 0, cmd_va, len, &res);
	if (getenv("TNPU_FUZZ_VERBOSE"))
		fprintf(stderr, "tnpu-fuzz: %s at 0x%x, %llu cycles\n", tnpu_err_name(res.error), res.err_cmd_offset,
			(unsigned long long)res.counters[TNPU_CNT_TOTAL_CYCLES]);
	if (res.error >= TNPU_ERR_COUNT || res.error == TNPU_ERR_NOMEM)
		abort();
	return 0;
}
