/* SPDX-License-Identifier: MIT */
/* classify.h - accel-run --mnist: image classification accuracy on the device vs the CPU reference. */
#ifndef ACCEL_RUN_CLASSIFY_H
#define ACCEL_RUN_CLASSIFY_H

#include "tnpu_onnx.h"

/* Classify the idx3 images (uncompressed) against the idx1 labels, batch images per run, on dev and
 * on the CPU reference executor (the model re-loaded without folding or fusion); prints both
 * accuracies.  ref_preds: instead of running the CPU reference here, read its predictions (one byte
 * per image, written by a --cpu run with save_preds elsewhere, e.g. natively on the host while this
 * runs in the VM).  save_preds: write this run's predictions (device, or CPU with dev == NULL).
 * compile: run the device's batches through onnx_compile()/onnx_compiled_run() (else node by node).
 * Returns 0 when the accuracies match (or only the CPU ran), 1 otherwise. */
int classify_mnist(struct onnx_model *m, const char *model_path, struct accel_dev *dev, bool compile, unsigned cflags,
		   const char *images, const char *labels, unsigned batch, const char *ref_preds, const char *save_preds);

#endif
