/* SPDX-License-Identifier: MIT */
/* An application of the installed ONNX runtime (pkg-config tnpu-onnx): runs MODEL on the device and on
 * the CPU reference executor with the same input and compares the outputs. */
#include <stdio.h>
#include <tnpu_onnx.h>

int main(int argc, char **argv)
{
	struct onnx_model *m;
	struct accel_dev *dev;
	struct onnx_tensor in, out_dev, out_cpu;
	int64_t dims[4] = { 1, 1, 28, 28 };
	char err[512];
	double maxe;
	int ret;

	if (argc != 2 || onnx_model_load(argv[1], 0, &m, err, sizeof(err)) || accel_open(NULL, &dev)) {
		fprintf(stderr, "onnx-app: cannot load %s or open the device\n", argc > 1 ? argv[1] : "(no model)");
		return 1;
	}
	if (onnx_tensor_alloc(&in, ONNX_FLOAT, 4, dims))
		return 1;
	for (size_t i = 0; i < in.count; i++)
		((float *)in.data)[i] = (float)(i % 29) / 29.0f;
	if ((ret = onnx_run(m, dev, &in, 1, &out_dev, 1, NULL)) || (ret = onnx_run(m, NULL, &in, 1, &out_cpu, 1, NULL))) {
		fprintf(stderr, "onnx_run: %s\n", onnx_model_error(m));
		return 1;
	}
	struct onnx_tolerance tol = { ONNX_TOL_ATOL, ONNX_TOL_RTOL, ONNX_TOL_ITOL };

	ret = onnx_compare(&out_dev, &out_cpu, &tol, &maxe, err, sizeof(err));
	printf("onnx-app: %s on the device vs the CPU reference: %s\n", argv[1], err);
	onnx_tensor_release(&in);
	onnx_tensor_release(&out_dev);
	onnx_tensor_release(&out_cpu);
	accel_close(dev);
	onnx_model_free(m);
	return ret ? 1 : 0;
}
