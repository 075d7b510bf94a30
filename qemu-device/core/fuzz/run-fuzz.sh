#!/usr/bin/env bash
# run-fuzz.sh SECONDS [BUILD_DIR]
# Builds the libFuzzer target of the tnpu core (clang, ASan+UBSan, coverage on the whole core) in its own
# build directory and runs it for a bounded time. Prints executions and crashes; exits non-zero on a crash.
set -euo pipefail
secs=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
bdir=${2:-$root/build-fuzz}

if [ ! -f "$bdir/build.ninja" ]; then
	CC=clang CFLAGS="-fsanitize=fuzzer-no-link -fno-omit-frame-pointer -g" \
		meson setup "$bdir" "$root" -Db_sanitize=address,undefined -Db_lundef=false \
		-Dbuildtype=debugoptimized >/dev/null
fi
ninja -C "$bdir" -j2 qemu-device/core/fuzz/fuzz-cmdstream qemu-device/core/fuzz/gen-fuzz-seeds >/dev/null

corpus="$bdir/fuzz-corpus"
artifacts="$bdir/fuzz-artifacts/"
rm -rf "$artifacts"
mkdir -p "$corpus" "$artifacts"
"$bdir/qemu-device/core/fuzz/gen-fuzz-seeds" "$corpus"

log="$bdir/fuzz.log"
set +e
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=0 \
	"$bdir/qemu-device/core/fuzz/fuzz-cmdstream" "$corpus" -max_total_time="$secs" -timeout=10 \
	-rss_limit_mb=2048 -max_len=4096 -artifact_prefix="$artifacts" -print_final_stats=1 >"$log" 2>&1
rc=$?
set -e
execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo 0)
crashes=$(find "$artifacts" -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) | wc -l)
echo "fuzz-cmdstream: ${secs}s, executions: ${execs}, crashes: ${crashes}, exit: ${rc}"
if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
	tail -40 "$log"
	exit 1
fi
