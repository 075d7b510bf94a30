/* SPDX-License-Identifier: MIT */
/*
 * cmdstream.c - programming the device directly: a cluster program (register-file operands, LD, MAC, ST)
 * and a hand-built command stream (CONFIG, DMA in, EXE, DMA out, FENCE) for a small int8 GEMM, the
 * layer libaccel's own operations are built on (Documentation/hardware/, examples/README.md).
 *
 *   cc cmdstream.c $(pkg-config --cflags --libs libaccel) -o cmdstream && ./cmdstream [DEVICE]
 *
 * Every cluster of the array computes 2 rows of C, each PE one column: C (M x N) = A (M x K) x B (K x N)
 * with M = 2 x cols and N = pes. Exact against a CPU reference.
 */
#include <accel.h>
#include <stdio.h>

enum { K = 8 };

static int fail(struct accel_dev *dev, const char *what, int ret)
{
	fprintf(stderr, "cmdstream: %s: %s: %s\n", what, accel_strerror(ret), accel_last_error(dev));
	accel_close(dev);
	return 1;
}

int main(int argc, char **argv)
{
	struct accel_dev *dev;
	struct accel_caps caps;
	struct accel_program *p;
	struct accel_cmdstream *cs;
	struct accel_buffer *ba, *bb, *bc, *bf;
	struct accel_job *job;
	struct accel_counters cnt;
	unsigned rf_a, rf_b, rf_c;
	char msg[256];
	int ret, bad = 0;

	ret = accel_open_msg(argc > 1 ? argv[1] : NULL, msg, sizeof(msg), &dev);
	if (ret) {
		fprintf(stderr, "cmdstream: open: %s: %s\n", accel_strerror(ret), msg);
		return 1;
	}
	accel_query_caps(dev, &caps);
	const uint32_t M = caps.cols * 2, N = caps.pes;

	if ((ret = accel_buffer_alloc(dev, M * K, &ba)) || (ret = accel_buffer_alloc(dev, K * N, &bb)) ||
	    (ret = accel_buffer_alloc(dev, 4 * M * N, &bc)) || (ret = accel_buffer_alloc(dev, 8, &bf)))
		return fail(dev, "alloc", ret);
	int8_t *A = accel_buffer_ptr(ba), *B = accel_buffer_ptr(bb);

	for (uint32_t i = 0; i < M * K; i++)
		A[i] = (int8_t)((i * 31) % 255 - 127);
	for (uint32_t i = 0; i < K * N; i++)
		B[i] = (int8_t)((i * 17) % 255 - 127);

	/* The program every cluster runs: operands at storage-unit offsets, rewritten per cluster column
	 * (col_stride) and per PE (pe_stride). */
	struct accel_operand a = { .addr = 0, .col_stride = 2 * K, .pitch = K, .rows = 2, .cols = K, .dtype = ACCEL_INT8 };
	struct accel_operand b = { .addr = 4096, .pe_stride = 1, .pitch = (uint32_t)N, .rows = K, .cols = 1,
				   .dtype = ACCEL_INT8 };
	struct accel_operand c = { .addr = 8192, .col_stride = 2 * (int32_t)N * 4, .pe_stride = 4, .pitch = N * 4, .rows = 2,
				   .cols = 1, .dtype = ACCEL_INT32 };

	if ((ret = accel_program_new(&p)) || (ret = accel_program_add_operand(p, &a, &rf_a)) ||
	    (ret = accel_program_add_operand(p, &b, &rf_b)) || (ret = accel_program_add_operand(p, &c, &rf_c)) ||
	    (ret = accel_program_ld(p, rf_a, 0, false, false)) ||	/* A tile into input slot 0 */
	    (ret = accel_program_ld(p, rf_b, 0, true, false)) ||	/* B column into the weight queue */
	    (ret = accel_program_mac(p, 0, 0, 0, 0)) ||		/* accumulator 0 += A x B */
	    (ret = accel_program_st(p, 0, rf_c, true))) {		/* raw int32 out */
		fprintf(stderr, "cmdstream: program: %s\n", accel_strerror(ret));	/* no device: errno only */
		return 1;
	}
	/* The command stream: load the program, move A and B in, run, move C out, fence. */
	struct accel_dma la = { .buf = ba, .pitch_y = K, .sram_pitch_y = K, .width = K, .height = M, .depth = 1 };
	struct accel_dma lb = { .buf = bb, .pitch_y = N, .sram_off = 4096, .sram_pitch_y = N, .width = N, .height = K,
				.depth = 1 };
	struct accel_dma st = { .buf = bc, .pitch_y = N * 4, .sram_off = 8192, .sram_pitch_y = N * 4, .width = N * 4,
				.height = M, .depth = 1 };

	if ((ret = accel_cs_new(dev, &cs)) || (ret = accel_cs_config(cs, 0, 0, 0, p)) ||
	    (ret = accel_cs_dma_h2d(cs, 0, &la)) || (ret = accel_cs_dma_h2d(cs, 0, &lb)) ||
	    (ret = accel_cs_exe(cs, 0, 0, 0, 0, ACCEL_EXE_LAST | ACCEL_EXE_SHIFT_OUT, NULL, 0)) ||
	    (ret = accel_cs_dma_d2h(cs, 0, &st)) || (ret = accel_cs_fence(cs, bf, 0, 0x600d)))
		return fail(dev, "command stream", ret);
	printf("cmdstream: %zu bytes of commands\n", accel_cs_size(cs));
	if ((ret = accel_cs_submit(cs, NULL, &job)) || (ret = accel_job_wait(job, -1)) ||
	    (ret = accel_job_counters(job, &cnt)))
		return fail(dev, "run", ret);
	const int32_t *C = accel_buffer_ptr(bc);

	for (uint32_t i = 0; i < M; i++)
		for (uint32_t j = 0; j < N; j++) {
			int32_t ref = 0;

			for (uint32_t k = 0; k < K; k++)
				ref += A[i * K + k] * B[k * N + j];
			bad += C[i * N + j] != ref;
		}
	bad += *(const uint64_t *)accel_buffer_ptr(bf) != 0x600d;	/* the fence wrote its value */
	printf("cmdstream: %ux%ux%u int8 GEMM by hand: %llu cycles, %llu config bytes: %s (%d wrong)\n", M, N, K,
	       (unsigned long long)cnt.total_cycles, (unsigned long long)cnt.bytes_config, bad ? "FAIL" : "ok, exact",
	       bad);
	accel_job_free(job);
	accel_cs_free(cs);
	accel_program_free(p);
	accel_close(dev);
	return bad != 0;
}
