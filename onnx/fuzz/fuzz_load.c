/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target on the ONNX loader (onnx_model_load_mem: protobuf parsing, graph building, load-time
 * folding) and on what it accepts: the placement/description calls, a run on the CPU reference
 * executor and a compile + compiled run on a small sim, with inputs made from the declared shapes when
 * they are static and small.  Seeds: the ONNX backend node tests' models (run-fuzz-load.sh).  A load
 * must fail with a negative errno and a message, or succeed; a run may fail (negative errno + message);
 * any crash, sanitizer report, hang or unbounded allocation is a bug.  The graph verifier runs after
 * every load-time pass (ONNX_VERIFY=1 unless the environment says otherwise): a graph that passed the
 * check after the load itself and fails it after a pass is a bug in that pass, never a bad input, and
 * aborts too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tnpu_onnx.h"

#define MAX_RUN_ELEMS 4096	/* inputs larger than this (all together) are not run: keeps runs short */

static struct accel_dev *dev;

/*
 * An input's bytes: a fixed pattern, except that an integer input's elements are small (1..13): integer
 * inputs are sizes, counts, indices and shapes (HannWindow's size, Range's limit, ConstantOfShape),
 * and the byte pattern made them hundreds of millions (a 369 M-element window: 20 s per run under ASan),
 * which tests the host's speed, not the loader's checks.
 */
static void fill_input(struct onnx_tensor *t)
{
	size_t es = onnx_dtype_size(t->dtype);
	uint8_t *p = t->data;

	switch (t->dtype) {
	case ONNX_UINT8: case ONNX_INT8: case ONNX_UINT16: case ONNX_INT16: case ONNX_INT32: case ONNX_INT64:
	case ONNX_UINT32: case ONNX_UINT64:
		memset(p, 0, t->count * es);
		for (size_t i = 0; i < t->count; i++)
			p[i * es] = (uint8_t)(i * 7 % 13 + 1);	/* little-endian: the low byte */
		break;
	default:
		for (size_t b = 0; b < t->count * es; b++)
			p[b] = (uint8_t)(b * 7 + 1);
		break;
	}
}

static void exercise(struct onnx_model *m)
{
	unsigned ni = onnx_model_n_inputs(m), no = onnx_model_n_outputs(m);
	struct onnx_tensor in[8], out[8];
	struct onnx_compiled *cm = NULL;
	struct onnx_node_info info;
	struct onnx_value_desc d;
	size_t total = 0;
	char err[512];
	unsigned made = 0;

	for (unsigned i = 0; i < onnx_model_n_graph_nodes(m); i++)
		(void)onnx_model_node_info(m, i, &info);
	for (unsigned i = 0; i < no; i++)
		(void)onnx_model_output_desc(m, i, &d);
	if (ni > 8 || no > 8)
		return;
	for (; made < ni; made++) {
		size_t n = 1;

		if (onnx_model_input_desc(m, made, &d) || d.ndim < 0 || d.ndim > ONNX_MAX_DIMS)
			break;
		for (int k = 0; k < d.ndim; k++)
			n = d.dims[k] < 0 || d.dims[k] > MAX_RUN_ELEMS ? MAX_RUN_ELEMS + 1 : n * (size_t)d.dims[k];
		total += n;
		if (n > MAX_RUN_ELEMS || total > MAX_RUN_ELEMS ||
		    onnx_tensor_alloc(&in[made], (enum onnx_dtype)d.dtype, (unsigned)d.ndim, d.dims))
			break;
		fill_input(&in[made]);
	}
	if (made == ni) {
		if (!onnx_run(m, NULL, in, ni, out, no, NULL))
			for (unsigned i = 0; i < no; i++)
				onnx_tensor_release(&out[i]);
		if (!onnx_compile(m, dev, in, ni, 0, &cm, err, sizeof(err))) {
			if (!onnx_compiled_run(cm, in, ni, out, no, NULL))
				for (unsigned i = 0; i < no; i++)
					onnx_tensor_release(&out[i]);
			onnx_compiled_free(cm);
		}
	}
	for (unsigned i = 0; i < made && i < ni; i++)
		onnx_tensor_release(&in[i]);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	setenv("ONNX_VERIFY", "1", 0);	/* opt-in outside the tests (Documentation/onnx.md) */
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (unsigned flags = 0; flags < 2; flags++) {	/* folded, and ONNX_LOAD_NO_FOLD */
		struct onnx_model *m = NULL;
		char err[512] = "";
		int ret;

		if (!dev && accel_open("sim:rows=2,cols=2", &dev))
			abort();
		ret = onnx_model_load_mem(data, size, flags ? ONNX_LOAD_NO_FOLD : 0, &m, err, sizeof(err));
		if (ret > 0 || (ret && (!err[0] || m)) || (!ret && !m))
			abort();	/* the contract: negative errno + message, or a model */
		/* the verifier's own messages begin so (graph_index.c); a name holding the words is not one */
		if (ret && !strncmp(err, "graph check after ", 18) && strncmp(err, "graph check after the load", 26)) {
			fprintf(stderr, "fuzz-load: a load-time pass broke the graph: %s\n", err);
			abort();
		}
		if (!ret) {
			exercise(m);
			onnx_model_free(m);
		}
	}
	return 0;
}
