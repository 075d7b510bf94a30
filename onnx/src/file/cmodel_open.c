/* SPDX-License-Identifier: MIT */
/*
 * cmodel_open.c - compiled-model files from disk (onnx_compiled_load) and self-contained ones
 * (onnx_compiled_open: the model the file carries, loaded with its recorded flags, then the plan
 * against it and its recorded input shapes).  Documentation/onnx.md, "Compiled-model files".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmodel_file.h"

/* The whole file into *buf (the caller frees it), at most CM_MAX_FILE bytes. */
static int read_file(const char *path, uint8_t **buf, size_t *lenp, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	long len;

	*buf = NULL;
	if (!f) {
		int ret = -errno;

		snprintf(err, errlen, "cannot open: %s", strerror(errno));
		return ret;
	}
	if (fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		fclose(f);
		snprintf(err, errlen, "cannot read its size");
		return -EIO;
	}
	if ((uint64_t)len > CM_MAX_FILE) {
		fclose(f);
		snprintf(err, errlen, "%ld bytes: larger than any compiled model (%llu)", len,
			 (unsigned long long)CM_MAX_FILE);
		return -EFBIG;
	}
	*buf = malloc(len ? (size_t)len : 1);
	if (!*buf || fread(*buf, 1, (size_t)len, f) != (size_t)len) {
		int ret = *buf ? -EIO : -ENOMEM;

		fclose(f);
		free(*buf);
		*buf = NULL;
		snprintf(err, errlen, "cannot read");
		return ret;
	}
	fclose(f);
	*lenp = (size_t)len;
	return 0;
}

int onnx_compiled_load(struct onnx_model *m, struct accel_dev *dev, const struct onnx_tensor *shapes,
		       unsigned n_shapes, const char *path, struct onnx_compiled **out, char *err, size_t errlen)
{
	uint8_t *buf;
	size_t len = 0;
	int ret;

	*out = NULL;
	ret = read_file(path, &buf, &len, err, errlen);
	if (!ret)
		ret = onnx_compiled_load_mem(m, dev, shapes, n_shapes, buf, len, out, err, errlen);
	free(buf);
	return ret;
}

int onnx_compiled_open_mem(struct accel_dev *dev, const void *buf, size_t len, struct onnx_compiled **out,
			   char *err, size_t errlen)
{
	struct cm_file_head h = { 0 };
	struct onnx_model *m = NULL;
	char msg[512];
	int ret;

	*out = NULL;
	if (!dev || !buf) {
		snprintf(err, errlen, "needs a device and the file's bytes");
		return -EINVAL;
	}
	if ((ret = cm_file_head(buf, len, &h, err, errlen)))
		goto out;
	ret = onnx_model_load_mem(h.model, h.model_bytes, h.load_flags, &m, msg, sizeof(msg));
	if (ret) {
		snprintf(err, errlen, "field 'model': %s", msg);
		goto out;
	}
	ret = onnx_compiled_load_mem(m, dev, h.shapes, h.n_shapes, buf, len, out, err, errlen);
	if (ret) {
		onnx_model_free(m);
		goto out;
	}
	(*out)->own_m = m;	/* freed with the compiled form */
out:
	free(h.shapes);
	return ret;
}

int onnx_compiled_open(struct accel_dev *dev, const char *path, struct onnx_compiled **out, char *err,
		       size_t errlen)
{
	uint8_t *buf;
	size_t len = 0;
	int ret;

	*out = NULL;
	ret = read_file(path, &buf, &len, err, errlen);
	if (!ret)
		ret = onnx_compiled_open_mem(dev, buf, len, out, err, errlen);
	free(buf);
	return ret;
}
