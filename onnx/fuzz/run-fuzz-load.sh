#!/usr/bin/env bash
# run-fuzz-load.sh SECONDS BUILD_DIR
# Runs the ONNX loader's libFuzzer target (onnx/fuzz/fuzz_load.c) for a bounded time in the fuzz build
# directory that qemu-device/core/fuzz/run-fuzz.sh configured (clang, ASan+UBSan), seeded with the ONNX
# backend node tests' models of Debian's libonnx-testdata (the smallest 300).  Prints executions and
# crashes; exits non-zero on a crash, leak, timeout or out-of-memory.
set -euo pipefail
secs=${1:-10}
bdir=$2
ninja -C "$bdir" -j2 onnx/fuzz/fuzz-load >/dev/null
artifacts="$bdir/fuzz-load-artifacts/"
corpus="$bdir/fuzz-load-corpus"
seeds="$bdir/fuzz-load-seeds"
rm -rf "$artifacts" "$seeds"
mkdir -p "$artifacts" "$corpus" "$seeds"
data=/usr/share/libonnx-testdata/data/node
if [ -d "$data" ]; then
	# (process substitution: head closing the pipe early is not an error under pipefail)
	mapfile -t models < <(find "$data" -name model.onnx -size -4k -printf '%s %p\n' | sort -n | head -300)
	for m in "${models[@]}"; do
		p=${m#* }
		cp "$p" "$seeds/$(basename "$(dirname "$p")").onnx"
	done
fi
log="$bdir/fuzz-load.log"
set +e
# malloc limit above the loader's own 2 GiB tensor cap (ONNX_MAX_TENSOR_BYTES): a refused shape is the
# loader's error, a larger allocation is the fuzzer's report
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
	"$bdir/onnx/fuzz/fuzz-load" "$corpus" "$seeds" -max_total_time="$secs" -timeout=20 -rss_limit_mb=3072 \
	-malloc_limit_mb=2200 -max_len=8192 -artifact_prefix="$artifacts" -print_final_stats=1 >"$log" 2>&1
rc=$?
set -e
execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo 0)
crashes=$(find "$artifacts" -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) | wc -l)
echo "fuzz-load: ${secs}s, executions: ${execs}, crashes: ${crashes}, exit: ${rc}"
if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
	tail -40 "$log"
	exit 1
fi
