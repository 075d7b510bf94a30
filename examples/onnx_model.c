/* SPDX-License-Identifier: MIT */
/*
 * onnx_model.c - run an ONNX model on a tnpu with the ONNX runtime (examples/README.md).
 *
 *   cc onnx_model.c $(pkg-config --cflags --libs tnpu-onnx) -o onnx_model
 *   ./onnx_model MODEL.onnx [DEVICE]
 *
 * Reads the model into memory and loads it from there, feeds every graph input a deterministic tensor of
 * the model's declared shape (symbolic dimensions = 1), runs the graph on the device and on the CPU
 * reference executor, compares the outputs with the documented tolerances, and round-trips the first
 * output through a TensorProto file (the format of ONNX's test data). Works for models with FLOAT inputs, e.g. models/fashion-mnist/fashion-mnist-cnn.onnx.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tnpu_onnx.h>
#include <unistd.h>

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
	struct onnx_tolerance tol = { ONNX_MODEL_ATOL, ONNX_MODEL_RTOL, ONNX_TOL_ITOL };
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
	/* onnx_model_load(path, ...) does the same from a file; here the bytes come from memory. */
	FILE *f = fopen(argv[1], "rb");
	long size = f && !fseek(f, 0, SEEK_END) ? ftell(f) : -1;
	unsigned char *bytes = size > 0 ? malloc((size_t)size) : NULL;
	size_t len = bytes && !fseek(f, 0, SEEK_SET) ? fread(bytes, 1, (size_t)size, f) : 0;

	if (f)
		fclose(f);
	ret = onnx_model_load_mem(bytes, len, 0, &m, err, sizeof(err));	/* the model keeps no pointer to bytes */
	free(bytes);
	if (ret) {
		fprintf(stderr, "onnx_model: %s\n", err);
		return 1;
	}
	printf("onnx_model: %u nodes after folding %u BatchNormalization node(s) into convolutions\n",
	       onnx_model_n_nodes(m), onnx_model_n_folded(m));
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
		int r = onnx_compare_scaled(&dev_out[i], &cpu_out[i], &tol, &maxe, msg, sizeof(msg));

		onnx_tensor_describe(&dev_out[i], desc, sizeof(desc));
		printf("onnx_model: output '%s' %s vs the CPU reference: %s\n", onnx_model_output_name(m, i), desc, msg);
		bad += r != 0;
		if (i == 0) {	/* save as a TensorProto and read it back */
			struct onnx_tensor back;
			char path[] = "/tmp/onnx_model-out-XXXXXX", name[64];
			int fd = mkstemp(path);

			if (fd >= 0)
				close(fd);
			if (fd < 0 || onnx_tensor_save_pb(path, &dev_out[0], onnx_model_output_name(m, 0), err, sizeof(err)) ||
			    onnx_tensor_load_pb(path, &back, name, sizeof(name), err, sizeof(err))) {
				fprintf(stderr, "onnx_model: TensorProto round trip: %s\n", err);
				bad++;
			} else {
				bad += back.count != dev_out[0].count ||
				       memcmp(back.data, dev_out[0].data, back.count * onnx_dtype_size(back.dtype)) != 0;
				printf("onnx_model: '%s' saved and reloaded as %s, %zu elements of %zu bytes\n", name,
				       onnx_dtype_name(back.dtype), back.count, onnx_dtype_size(back.dtype));
				onnx_tensor_release(&back);
			}
			unlink(path);
		}
		onnx_tensor_release(&dev_out[i]);
		onnx_tensor_release(&cpu_out[i]);
	}
	for (unsigned i = 0; i < n_in; i++)
		onnx_tensor_release(&in[i]);
	accel_close(dev);
	onnx_model_free(m);
	return bad != 0;
}
