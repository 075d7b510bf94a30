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

# the seeds go into the target's corpus directory (tools/fuzz/run-libfuzzer: BUILD_DIR/NAME-corpus)
mkdir -p "$bdir/fuzz-cmdstream-corpus"
"$bdir/qemu-device/core/fuzz/gen-fuzz-seeds" "$bdir/fuzz-cmdstream-corpus"
exec "$root/tools/fuzz/run-libfuzzer" fuzz-cmdstream "$bdir/qemu-device/core/fuzz/fuzz-cmdstream" "$secs" "$bdir" \
	-timeout=10 -rss_limit_mb=2048 -max_len=4096
