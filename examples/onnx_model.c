/* SPDX-License-Identifier: MIT */
/*
 * onnx_model.c - run an ONNX model on a tnpu with the ONNX runtime (examples/README.md).
 *
 *   cc onnx_model.c $(pkg-config --cflags --libs tnpu-onnx) -o onnx_model
 *   ./onnx_model MODEL.onnx [DEVICE]
 *
 * Feeds every graph input a deterministic tensor of the model's declared shape (symbolic dimensions = 1),
 * runs the graph on the device and on the CPU reference executor, and compares the outputs with the
 * documented tolerances. Works for models with FLOAT inputs, e.g. models/fashion-mnist/fashion-mnist-cnn.onnx.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tnpu_onnx.h>

/* "FLOAT [batch,1,28,28]" -> dims {1,1,28,28}; 0 on success. */
static int parse_shape(const char *desc, int64_t *dims, unsigned *ndim)
{
	const char *p = strchr(desc, '[');

	if (strncmp(desc, "FLOAT ", 6) || !p)
		return -1;
	*ndim = 0;
	for (p++; *p && *p != ']' && *ndim < ONNX_MAX_DIMS; (*ndim)++) {
		char *end;
		long long v = strtoll(p, &end, 10);

		dims[*ndim] = end == p ? 1 : v;	/* a symbolic dimension (batch) is 1 here */
		p = strchr(p, ',');
		if (!p)
			break;
		p++;
	}
	(*ndim)++;
	return 0;
}

int main(int argc, char **argv)
{
	struct onnx_tensor in[8], dev_out[8], cpu_out[8];
	struct onnx_tolerance tol = { ONNX_TOL_ATOL, ONNX_TOL_RTOL, ONNX_TOL_ITOL };
	struct onnx_model *m;
	struct accel_dev *dev;
	struct onnx_run_stats st;
	unsigned n_in, n_out;
	char err[512];
	int ret, bad = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: onnx_model MODEL.onnx [DEVICE]\n");
		return 2;
	}
	ret = onnx_model_load(argv[1], 0, &m, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "onnx_model: %s\n", err);
		return 1;
	}
	n_in = onnx_model_n_inputs(m);
	n_out = onnx_model_n_outputs(m);
	if (n_in > 8 || n_out > 8 || accel_open_msg(argc > 2 ? argv[2] : NULL, err, sizeof(err), &dev)) {
		fprintf(stderr, "onnx_model: too many inputs/outputs, or no device: %s\n", err);
		onnx_model_free(m);
		return 1;
	}
	for (unsigned i = 0; i < n_in; i++) {
		int64_t dims[ONNX_MAX_DIMS];
		unsigned nd;
		char desc[160];

		onnx_model_input_describe(m, i, desc, sizeof(desc));
		if (parse_shape(desc, dims, &nd) || onnx_tensor_alloc(&in[i], ONNX_FLOAT, nd, dims)) {
			fprintf(stderr, "onnx_model: input '%s' is %s: only FLOAT inputs here\n",
				onnx_model_input_name(m, i), desc);
			return 1;
		}
		for (size_t k = 0; k < in[i].count; k++)
			((float *)in[i].data)[k] = (float)((k * 31) % 256) / 255.0f;
		printf("onnx_model: input '%s': %s\n", onnx_model_input_name(m, i), desc);
	}
	ret = onnx_run(m, dev, in, n_in, dev_out, n_out, &st);
	if (!ret)
		ret = onnx_run(m, NULL, in, n_in, cpu_out, n_out, NULL);
	if (ret) {
		fprintf(stderr, "onnx_model: %s\n", onnx_model_error(m));
		return 1;
	}
	printf("onnx_model: %u nodes on the accelerator, %u on the host, %llu device cycles\n", st.accel_nodes,
	       st.host_nodes, (unsigned long long)st.counters.total_cycles);
	for (unsigned i = 0; i < n_out; i++) {
		char desc[96], msg[256];
		double maxe;
		int r = onnx_compare(&dev_out[i], &cpu_out[i], &tol, &maxe, msg, sizeof(msg));

		onnx_tensor_describe(&dev_out[i], desc, sizeof(desc));
		printf("onnx_model: output '%s' %s vs the CPU reference: %s\n", onnx_model_output_name(m, i), desc, msg);
		bad += r != 0;
		onnx_tensor_release(&dev_out[i]);
		onnx_tensor_release(&cpu_out[i]);
	}
	for (unsigned i = 0; i < n_in; i++)
		onnx_tensor_release(&in[i]);
	accel_close(dev);
	onnx_model_free(m);
	return bad != 0;
}
