/* SPDX-License-Identifier: MIT */
/* tensor.c - host tensors and their TensorProto form (initializers, Constant, test-data .pb files). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Element count; SIZE_MAX when a dimension is negative or the product overflows (never wraps to a
 * small count that a later allocation would believe). */
size_t tensor_count(unsigned ndim, const int64_t *dims)
{
	size_t n = 1;
	bool zero = false;

	for (unsigned i = 0; i < ndim; i++) {
		if (dims[i] < 0)
			return SIZE_MAX;
		if (!dims[i])
			zero = true;
		else if (__builtin_mul_overflow(n, (size_t)dims[i], &n))
			n = SIZE_MAX;
	}
	return zero ? 0 : n;
}

int onnx_shape_check(unsigned ndim, const int64_t *dims, unsigned *bad)
{
	int64_t prod = 1;

	for (unsigned i = 0; i < ndim; i++) {
		if (dims[i] < 0 || dims[i] > ONNX_MAX_DIM_SIZE) {
			if (bad)
				*bad = i;
			return -EINVAL;
		}
		/* both factors are below 2^32 here: no overflow */
		if (dims[i] > 1 && (prod *= dims[i]) > ONNX_MAX_SHAPE_ELEMS) {
			if (bad)
				*bad = ndim;
			return -E2BIG;
		}
	}
	return 0;
}

int onnx_tensor_alloc(struct onnx_tensor *t, enum onnx_dtype dt, unsigned ndim, const int64_t *dims)
{
	size_t es = onnx_dtype_size(dt);
	int ret;

	memset(t, 0, sizeof(*t));
	if (!es || ndim > ONNX_MAX_DIMS)
		return -EINVAL;
	if ((ret = onnx_shape_check(ndim, dims, NULL)))
		return ret;
	for (unsigned i = 0; i < ndim; i++)
		t->dims[i] = dims[i];
	t->dtype = dt;
	t->ndim = ndim;
	t->count = tensor_count(ndim, dims);
	if (t->count > ((size_t)1 << 32) || t->count * es > ONNX_MAX_TENSOR_BYTES) {
		t->count = 0;
		return -E2BIG;	/* a declared or computed shape of terabytes: refused, never attempted */
	}
	t->data = calloc(t->count ? t->count : 1, es);
	return t->data ? 0 : -ENOMEM;
}

void onnx_tensor_release(struct onnx_tensor *t)
{
	if (!t)
		return;
	free(t->data);
	t->data = NULL;
	t->count = 0;
}

int tensor_copy(struct onnx_tensor *dst, const struct onnx_tensor *src)
{
	int ret = onnx_tensor_alloc(dst, src->dtype, src->ndim, src->dims);

	if (!ret)
		memcpy(dst->data, src->data, src->count * onnx_dtype_size(src->dtype));
	return ret;
}

double tensor_get(const struct onnx_tensor *t, size_t i)
{
	switch (t->dtype) {
	case ONNX_FLOAT:
		return ((const float *)t->data)[i];
	case ONNX_DOUBLE:
		return ((const double *)t->data)[i];
	case ONNX_FLOAT16:
		return onnx_f16_to_f32(((const uint16_t *)t->data)[i]);
	case ONNX_BFLOAT16:
		return onnx_bf16_to_f32(((const uint16_t *)t->data)[i]);
	case ONNX_UINT64:
		return (double)((const uint64_t *)t->data)[i];
	default:
		return (double)tensor_get_i(t, i);
	}
}

/* double -> element: floating-point types round to nearest; integer types truncate toward zero and
 * saturate (NaN -> 0), so an out-of-range value never reaches C's undefined float-to-int conversion;
 * BOOL is v != 0. */
void tensor_set(struct onnx_tensor *t, size_t i, double v)
{
	static const double lo[] = { [ONNX_UINT8] = 0, [ONNX_INT8] = -128, [ONNX_UINT16] = 0,
				     [ONNX_INT16] = -32768, [ONNX_INT32] = -2147483648.0,
				     [ONNX_INT64] = -9223372036854775808.0, [ONNX_UINT32] = 0, [ONNX_UINT64] = 0 };
	static const double hi[] = { [ONNX_UINT8] = 255, [ONNX_INT8] = 127, [ONNX_UINT16] = 65535,
				     [ONNX_INT16] = 32767, [ONNX_INT32] = 2147483647.0,
				     [ONNX_INT64] = 9223372036854774784.0, [ONNX_UINT32] = 4294967295.0,
				     [ONNX_UINT64] = 18446744073709549568.0 };

	switch (t->dtype) {
	case ONNX_FLOAT:
		((float *)t->data)[i] = (float)v;
		return;
	case ONNX_DOUBLE:
		((double *)t->data)[i] = v;
		return;
	case ONNX_FLOAT16:
		((uint16_t *)t->data)[i] = onnx_f32_to_f16((float)v);
		return;
	case ONNX_BFLOAT16:
		((uint16_t *)t->data)[i] = onnx_f32_to_bf16((float)v);
		return;
	case ONNX_BOOL:
		((uint8_t *)t->data)[i] = v != 0;
		return;
	default:
		break;
	}
	if (v != v)
		v = 0;
	v = v < lo[t->dtype] ? lo[t->dtype] : v > hi[t->dtype] ? hi[t->dtype] : v;
	if (t->dtype == ONNX_UINT64)
		((uint64_t *)t->data)[i] = (uint64_t)v;
	else
		tensor_set_i(t, i, (int64_t)v);
}

/* int64 -> element: integer types wrap (two's complement, as numpy), BOOL is v != 0. */
void tensor_set_i(struct onnx_tensor *t, size_t i, int64_t v)
{
	switch (t->dtype) {
	case ONNX_FLOAT:
	case ONNX_DOUBLE:
	case ONNX_FLOAT16:
	case ONNX_BFLOAT16:
		tensor_set(t, i, (double)v);
		break;
	case ONNX_UINT8:
		((uint8_t *)t->data)[i] = (uint8_t)v;
		break;
	case ONNX_BOOL:
		((uint8_t *)t->data)[i] = v != 0;
		break;
	case ONNX_INT8:
		((int8_t *)t->data)[i] = (int8_t)(uint8_t)v;
		break;
	case ONNX_UINT16:
		((uint16_t *)t->data)[i] = (uint16_t)v;
		break;
	case ONNX_INT16:
		((int16_t *)t->data)[i] = (int16_t)(uint16_t)v;
		break;
	case ONNX_INT32:
		((int32_t *)t->data)[i] = (int32_t)(uint32_t)v;
		break;
	case ONNX_UINT32:
		((uint32_t *)t->data)[i] = (uint32_t)v;
		break;
	case ONNX_INT64:
	case ONNX_UINT64:
		((int64_t *)t->data)[i] = v;
		break;
	}
}

/* element -> int64: floating-point types truncate toward zero and saturate (NaN -> 0); UINT64 keeps its
 * bits (values above INT64_MAX read negative, as a wrapped int64). */
int64_t tensor_get_i(const struct onnx_tensor *t, size_t i)
{
	switch (t->dtype) {
	case ONNX_FLOAT:
	case ONNX_DOUBLE:
	case ONNX_FLOAT16:
	case ONNX_BFLOAT16: {
		double f = tensor_get(t, i);

		return f != f ? 0 : f >= 9.2e18 ? INT64_MAX : f <= -9.2e18 ? INT64_MIN : (int64_t)f;
	}
	case ONNX_UINT8:
	case ONNX_BOOL:
		return ((const uint8_t *)t->data)[i];
	case ONNX_INT8:
		return ((const int8_t *)t->data)[i];
	case ONNX_UINT16:
		return ((const uint16_t *)t->data)[i];
	case ONNX_INT16:
		return ((const int16_t *)t->data)[i];
	case ONNX_INT32:
		return ((const int32_t *)t->data)[i];
	case ONNX_UINT32:
		return ((const uint32_t *)t->data)[i];
	case ONNX_INT64:
	case ONNX_UINT64:
		return ((const int64_t *)t->data)[i];
	}
	return 0;
}

int tensor_from_proto(const Onnx__TensorProto *p, struct onnx_tensor *t, char *err, size_t errlen)
{
	int dt = p->has_data_type ? p->data_type : 0;
	size_t es, n;
	int ret;

	memset(t, 0, sizeof(*t));
	if (p->has_data_location && p->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
		snprintf(err, errlen, "external data is not supported");
		return -EOPNOTSUPP;
	}
	if (p->segment) {
		snprintf(err, errlen, "segmented tensors are not supported");
		return -EOPNOTSUPP;
	}
	if (!onnx_dtype_size((enum onnx_dtype)dt)) {
		snprintf(err, errlen, "element type %s is not supported (%s)", onnx_dtype_name(dt), ONNX_DTYPES_SUPPORTED);
		return -EOPNOTSUPP;
	}
	if (p->n_dims > ONNX_MAX_DIMS) {
		snprintf(err, errlen, "%zu dimensions (at most %d)", p->n_dims, ONNX_MAX_DIMS);
		return -EOPNOTSUPP;
	}
	{
		unsigned bad = 0;

		ret = onnx_shape_check((unsigned)p->n_dims, p->dims, &bad);
		if (ret == -EINVAL)
			snprintf(err, errlen, "dimension %u is %lld (0 to %d)", bad, (long long)p->dims[bad], ONNX_MAX_DIM_SIZE);
		else if (ret)
			snprintf(err, errlen, "its dimensions multiply to more than %lld elements",
				 (long long)ONNX_MAX_SHAPE_ELEMS);
		if (ret)
			return -EINVAL;
	}
	ret = onnx_tensor_alloc(t, (enum onnx_dtype)dt, (unsigned)p->n_dims, p->dims);
	if (ret) {
		snprintf(err, errlen, "cannot allocate the tensor (%d)", ret);
		return ret;
	}
	es = onnx_dtype_size(t->dtype);
	n = t->count;
	if (!n)
		return 0;	/* an empty tensor: nothing to copy (and the protobuf arrays are NULL) */
	if (p->has_raw_data) {
		if (p->raw_data.len != n * es) {
			snprintf(err, errlen, "raw_data has %zu bytes, the shape needs %zu", p->raw_data.len, n * es);
			goto bad;
		}
		memcpy(t->data, p->raw_data.data, n * es);	/* little-endian, as the host */
		return 0;
	}
	switch (t->dtype) {
	case ONNX_FLOAT:
		if (p->n_float_data != n)
			goto count;
		memcpy(t->data, p->float_data, n * 4);
		return 0;
	case ONNX_INT64:
		if (p->n_int64_data != n)
			goto count;
		memcpy(t->data, p->int64_data, n * 8);
		return 0;
	case ONNX_INT32:
		if (p->n_int32_data != n)
			goto count;
		memcpy(t->data, p->int32_data, n * 4);
		return 0;
	case ONNX_DOUBLE:
		if (p->n_double_data != n)
			goto count;
		memcpy(t->data, p->double_data, n * 8);
		return 0;
	case ONNX_UINT32:
	case ONNX_UINT64:
		if (p->n_uint64_data != n)
			goto count;
		for (size_t i = 0; i < n; i++)
			tensor_set_i(t, i, (int64_t)p->uint64_data[i]);
		return 0;
	case ONNX_UINT8:
	case ONNX_INT8:
	case ONNX_BOOL:
	case ONNX_UINT16:
	case ONNX_INT16:
	case ONNX_FLOAT16:
	case ONNX_BFLOAT16:
		/* int32_data holds these types' bits (FLOAT16/BFLOAT16: the uint16 pattern) */
		if (p->n_int32_data != n)
			goto count;
		for (size_t i = 0; i < n; i++) {
			if (es == 2)
				((uint16_t *)t->data)[i] = (uint16_t)p->int32_data[i];
			else
				((uint8_t *)t->data)[i] = (uint8_t)p->int32_data[i];
		}
		return 0;
	}
count:
	snprintf(err, errlen, "holds a different number of elements than its shape (%zu)", n);
bad:
	onnx_tensor_release(t);
	return -EINVAL;
}

static int read_file(const char *path, uint8_t **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	long l;
	int ret = 0;

	if (!f)
		return -errno;
	if (fseek(f, 0, SEEK_END) || (l = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		fclose(f);
		return -EIO;
	}
	*buf = malloc(l ? (size_t)l : 1);
	if (!*buf)
		ret = -ENOMEM;
	else if (fread(*buf, 1, (size_t)l, f) != (size_t)l)
		ret = -EIO;
	fclose(f);
	if (ret) {
		free(*buf);
		*buf = NULL;
	}
	*len = (size_t)l;
	return ret;
}

int onnx_tensor_load_pb(const char *path, struct onnx_tensor *out, char *name, size_t namelen, char *err,
			size_t errlen)
{
	Onnx__TensorProto *p;
	char msg[256];
	uint8_t *buf = NULL;
	size_t len = 0;
	int ret = read_file(path, &buf, &len);

	memset(out, 0, sizeof(*out));
	if (ret) {
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	p = onnx__tensor_proto__unpack(NULL, len, buf);
	free(buf);
	if (!p) {
		snprintf(err, errlen, "%s: not a TensorProto (protobuf parse failed)", path);
		return -EBADMSG;
	}
	ret = tensor_from_proto(p, out, msg, sizeof(msg));
	if (ret)
		snprintf(err, errlen, "%s: %s", path, msg);
	if (name && namelen)
		snprintf(name, namelen, "%s", p->name ? p->name : "");
	onnx__tensor_proto__free_unpacked(p, NULL);
	return ret;
}

int onnx_tensor_save_pb(const char *path, const struct onnx_tensor *t, const char *name, char *err, size_t errlen)
{
	Onnx__TensorProto p = ONNX__TENSOR_PROTO__INIT;
	int64_t dims[ONNX_MAX_DIMS];
	uint8_t *buf;
	size_t len;
	FILE *f;
	int ret = 0;

	for (unsigned i = 0; i < t->ndim; i++)
		dims[i] = t->dims[i];
	p.n_dims = t->ndim;
	p.dims = dims;
	p.has_data_type = 1;
	p.data_type = (int32_t)t->dtype;
	p.name = (char *)(name ? name : "");
	p.has_raw_data = 1;
	p.raw_data.len = t->count * onnx_dtype_size(t->dtype);
	p.raw_data.data = t->data;
	len = onnx__tensor_proto__get_packed_size(&p);
	buf = malloc(len ? len : 1);
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	onnx__tensor_proto__pack(&p, buf);
	f = fopen(path, "wb");
	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
	} else {
		if (fwrite(buf, 1, len, f) != len)
			ret = -EIO;
		if (fclose(f) && !ret)
			ret = -EIO;
		if (ret)
			snprintf(err, errlen, "%s: write error", path);
	}
	free(buf);
	return ret;
}
