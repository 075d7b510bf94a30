/* SPDX-License-Identifier: MIT */
/*
 * classify.c - accel-run --mnist: the `make demo` accuracy run.  Images are scaled to [0, 1] (what
 * models/fashion-mnist/train.py trains on), batched into one {B, 1, H, W} input per run; the class is
 * the argmax of the first output.  The CPU reference runs the same model file, loaded without
 * BatchNormalization folding or Relu fusion, on the plain-C executor — here, or (ref_preds) earlier on
 * another machine: `make demo` runs it natively on the host, because under TCG the guest's
 * floating point is emulated and the reference would dominate the demo's time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "classify.h"

static uint8_t *read_idx(const char *path, uint32_t magic, uint32_t *n, uint32_t *h, uint32_t *w)
{
	FILE *f = fopen(path, "rb");
	uint8_t hdr[16];
	size_t hl = magic == 0x803 ? 16 : 8, sz;
	uint8_t *data = NULL;

	if (!f) {
		fprintf(stderr, "accel-run: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	if (fread(hdr, 1, hl, f) != hl || ((uint32_t)hdr[2] << 8 | hdr[3]) != magic) {
		fprintf(stderr, "accel-run: %s: not an uncompressed idx file of type 0x%x\n", path, magic);
		fclose(f);
		return NULL;
	}
	*n = (uint32_t)hdr[4] << 24 | (uint32_t)hdr[5] << 16 | (uint32_t)hdr[6] << 8 | hdr[7];
	*h = hl == 16 ? ((uint32_t)hdr[10] << 8 | hdr[11]) : 1;
	*w = hl == 16 ? ((uint32_t)hdr[14] << 8 | hdr[15]) : 1;
	sz = (size_t)*n * *h * *w;
	if (*n > 1000000 || *h > 1024 || *w > 1024 || !(data = malloc(sz ? sz : 1)) || fread(data, 1, sz, f) != sz) {
		fprintf(stderr, "accel-run: %s: truncated or too large\n", path);
		free(data);
		data = NULL;
	}
	fclose(f);
	return data;
}

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The compiled form of the model for the current batch shape (recompiled when the last, shorter batch
 * arrives); NULL: node by node. */
static struct onnx_compiled *batch_cm;
static int64_t batch_cm_n = -1;
static unsigned batch_cflags;	/* onnx_compile flags (--no-replay) */

static int run_batch(struct onnx_model *m, struct accel_dev *dev, bool compile, const struct onnx_tensor *in,
		     struct onnx_tensor *out)
{
	char err[512];
	int ret;

	if (!dev || !compile)
		return onnx_run(m, dev, in, 1, out, 1, NULL);
	if (batch_cm_n != in->dims[0]) {
		onnx_compiled_free(batch_cm);
		batch_cm = NULL;
		batch_cm_n = -1;
		ret = onnx_compile(m, dev, in, 1, batch_cflags, &batch_cm, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "accel-run: compile: %s\n", err);
			return ret;
		}
		batch_cm_n = in->dims[0];
	}
	ret = onnx_compiled_run(batch_cm, in, 1, out, 1, NULL);
	if (ret)
		fprintf(stderr, "accel-run: %s\n", onnx_compiled_error(batch_cm));
	return ret;
}

static int argmax_batch(struct onnx_model *m, struct accel_dev *dev, bool compile, const struct onnx_tensor *in,
			int *pred)
{
	struct onnx_tensor out;
	size_t classes;
	int ret = run_batch(m, dev, compile, in, &out);

	if (ret) {
		if (!dev || !compile)
			fprintf(stderr, "accel-run: %s\n", onnx_model_error(m));
		return ret;
	}
	classes = out.count / (size_t)in->dims[0];
	if (out.dtype != ONNX_FLOAT || !classes) {
		fprintf(stderr, "accel-run: the model's first output is not float scores per image\n");
		onnx_tensor_release(&out);
		return -EINVAL;
	}
	for (int64_t b = 0; b < in->dims[0]; b++) {
		const float *s = (const float *)out.data + (size_t)b * classes;
		size_t best = 0;

		for (size_t k = 1; k < classes; k++)
			best = s[k] > s[best] ? k : best;
		pred[b] = (int)best;
	}
	onnx_tensor_release(&out);
	return 0;
}

static uint8_t *read_preds(const char *path, uint32_t n)
{
	FILE *f = fopen(path, "rb");
	uint8_t *p = malloc(n ? n : 1);

	if (!f || !p || fread(p, 1, n, f) != n) {
		fprintf(stderr, "accel-run: %s: cannot read %u predictions\n", path, n);
		free(p);
		p = NULL;
	}
	if (f)
		fclose(f);
	return p;
}

int classify_mnist(struct onnx_model *m, const char *model_path, struct accel_dev *dev, bool compile, unsigned cflags,
		   const char *images, const char *labels, unsigned batch, const char *ref_preds, const char *save_preds)
{
	uint8_t *given = NULL, *saved = NULL;
	uint32_t n, h, w, nl, one, one2;
	uint8_t *img = read_idx(images, 0x803, &n, &h, &w), *lbl = read_idx(labels, 0x801, &nl, &one, &one2);
	struct onnx_model *ref = NULL;
	unsigned ok_acc = 0, ok_cpu = 0, agree = 0;
	double t_acc = 0, t_cpu = 0, t, c_acc = 0, c_cpu = 0, c;
	int *pa = NULL, *pc = NULL, ret = 1;
	struct onnx_tensor in;
	char err[512];

	batch_cflags = cflags;
	if (!img || !lbl)
		goto out;
	if (nl != n) {
		fprintf(stderr, "accel-run: %u images but %u labels\n", n, nl);
		goto out;
	}
	if (ref_preds && dev) {
		given = read_preds(ref_preds, n);
		if (!given)
			goto out;
	} else if (onnx_model_load(model_path, ONNX_LOAD_NO_FOLD, &ref, err, sizeof(err))) {
		fprintf(stderr, "accel-run: %s\n", err);
		goto out;
	}
	pa = calloc(batch, sizeof(int));
	pc = calloc(batch, sizeof(int));
	saved = malloc(n ? n : 1);
	if (!pa || !pc || !saved)
		goto out;
	printf("classifying %u images of %ux%u from %s in batches of %u\n", n, h, w, images, batch);
	for (uint32_t b0 = 0; b0 < n; b0 += batch) {
		int64_t dims[4] = { n - b0 < batch ? n - b0 : batch, 1, h, w };

		if (onnx_tensor_alloc(&in, ONNX_FLOAT, 4, dims))
			goto out;
		for (size_t i = 0; i < in.count; i++)
			((float *)in.data)[i] = img[(size_t)b0 * h * w + i] / 255.0f;
		t = now_s();
		c = cpu_s();
		ret = dev ? argmax_batch(m, dev, compile, &in, pa) : 0;
		t_acc += now_s() - t;
		c_acc += cpu_s() - c;
		t = now_s();
		c = cpu_s();
		if (!ret && given)
			for (int64_t i = 0; i < dims[0]; i++)
				pc[i] = given[b0 + i];
		else if (!ret)
			ret = argmax_batch(ref, NULL, false, &in, pc);
		t_cpu += now_s() - t;
		c_cpu += cpu_s() - c;
		onnx_tensor_release(&in);
		if (ret) {
			ret = 1;
			goto out;
		}
		for (int64_t i = 0; i < dims[0]; i++) {
			saved[b0 + i] = (uint8_t)(dev ? pa[i] : pc[i]);
			ok_acc += dev && pa[i] == lbl[b0 + i];
			ok_cpu += pc[i] == lbl[b0 + i];
			agree += dev && pa[i] == pc[i];
		}
	}
	if (dev)
		printf("accelerator accuracy:   %6.2f%% (%u/%u) in %.2f s\n", 100.0 * ok_acc / n, ok_acc, n, t_acc);
	if (given)
		printf("CPU reference accuracy: %6.2f%% (%u/%u) (predictions of a CPU-reference run on the host: %s)\n",
		       100.0 * ok_cpu / n, ok_cpu, n, ref_preds);
	else
		printf("CPU reference accuracy: %6.2f%% (%u/%u) in %.2f s\n", 100.0 * ok_cpu / n, ok_cpu, n, t_cpu);
	/* process CPU time: wall time on a machine shared with other jobs counts their share too */
	if (dev && !given)
		printf("CPU time: accelerator %.2f s, CPU reference %.2f s\n", c_acc, c_cpu);
	if (save_preds) {
		FILE *f = fopen(save_preds, "wb");

		if (!f || fwrite(saved, 1, n, f) != n) {
			fprintf(stderr, "accel-run: %s: cannot write the predictions\n", save_preds);
			ret = 1;
		}
		if (f && fclose(f))
			ret = 1;
		if (ret)
			goto out;
	}
	if (dev) {
		printf("predictions agree on %u/%u images; accuracies %s\n", agree, n, ok_acc == ok_cpu ? "match" : "DIFFER");
		ret = ok_acc == ok_cpu ? 0 : 1;
	} else {
		ret = 0;
	}
out:
	onnx_compiled_free(batch_cm);
	batch_cm = NULL;
	batch_cm_n = -1;
	onnx_model_free(ref);
	free(pa);
	free(pc);
	free(img);
	free(lbl);
	free(given);
	free(saved);
	return ret;
}
