#!/usr/bin/env bash
# run-fuzz-coredump.sh SECONDS BUILD_DIR
# Runs the coredump parser's libFuzzer target (fuzz_coredump.c) for a bounded time in the fuzz build
# directory that qemu-device/core/fuzz/run-fuzz.sh configured (clang, ASan+UBSan); exits non-zero on a
# crash, leak, timeout or out-of-memory.
set -euo pipefail
secs=${1:-10}
bdir=$2
ninja -C "$bdir" -j2 tools/accel-coredump/fuzz/fuzz-coredump >/dev/null
FUZZ_LEAKS=1 exec "$(dirname "$0")/../../fuzz/run-libfuzzer" fuzz-coredump \
	"$bdir/tools/accel-coredump/fuzz/fuzz-coredump" "$secs" "$bdir" -timeout=10 -rss_limit_mb=1024 -max_len=4096
