#!/usr/bin/env bash
# run-fuzz-cmodel.sh SECONDS BUILD_DIR
# Runs the compiled-model reader's libFuzzer target (onnx/fuzz/fuzz_cmodel.c) for a bounded time in the
# fuzz build directory that qemu-device/core/fuzz/run-fuzz.sh configured (clang, ASan+UBSan).  Prints
# executions and crashes; exits non-zero on a crash, leak, timeout or out-of-memory.
set -euo pipefail
secs=${1:-10}
bdir=$2
ninja -C "$bdir" -j2 onnx/fuzz/fuzz-cmodel >/dev/null
artifacts="$bdir/fuzz-cmodel-artifacts/"
corpus="$bdir/fuzz-cmodel-corpus"
rm -rf "$artifacts"
mkdir -p "$artifacts" "$corpus"
log="$bdir/fuzz-cmodel.log"
set +e
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=0 \
	"$bdir/onnx/fuzz/fuzz-cmodel" "$corpus" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	-max_len=256 -artifact_prefix="$artifacts" -print_final_stats=1 >"$log" 2>&1
rc=$?
set -e
execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo 0)
crashes=$(find "$artifacts" -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) | wc -l)
echo "fuzz-cmodel: ${secs}s, executions: ${execs}, crashes: ${crashes}, exit: ${rc}"
if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
	tail -40 "$log"
	exit 1
fi
