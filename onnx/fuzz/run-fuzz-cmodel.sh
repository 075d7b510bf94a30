#!/usr/bin/env bash
# run-fuzz-cmodel.sh SECONDS BUILD_DIR
# Runs the compiled-model reader's libFuzzer target (onnx/fuzz/fuzz_cmodel.c) for a bounded time in the
# fuzz build directory that qemu-device/core/fuzz/run-fuzz.sh configured (clang, ASan+UBSan).  Prints
# executions and crashes; exits non-zero on a crash, leak, timeout or out-of-memory.
set -euo pipefail
secs=${1:-10}
bdir=$2
ninja -C "$bdir" -j2 onnx/fuzz/fuzz-cmodel >/dev/null
exec "$(dirname "$0")/../../tools/fuzz/run-libfuzzer" fuzz-cmodel "$bdir/onnx/fuzz/fuzz-cmodel" "$secs" "$bdir" \
	-timeout=10 -rss_limit_mb=2048 -max_len=256
