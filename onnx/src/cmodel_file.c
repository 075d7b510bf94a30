#include "compile.h"
int onnx_compiled_save(const struct onnx_compiled *cm, const char *path, char *err, size_t errlen)
{ (void)cm; (void)path; (void)err; (void)errlen; return -EOPNOTSUPP; }
int onnx_compiled_load(struct onnx_model *m, struct accel_dev *dev, const struct onnx_tensor *shapes,
		       unsigned n_shapes, const char *path, struct onnx_compiled **out, char *err, size_t errlen)
{ (void)m; (void)dev; (void)shapes; (void)n_shapes; (void)path; (void)out; (void)err; (void)errlen; return -EOPNOTSUPP; }
