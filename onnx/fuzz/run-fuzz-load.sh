#!/usr/bin/env bash
# run-fuzz-load.sh SECONDS BUILD_DIR
# Runs the ONNX loader's libFuzzer target (onnx/fuzz/fuzz_load.c) for a bounded time in the fuzz build
# directory that qemu-device/core/fuzz/run-fuzz.sh configured (clang, ASan+UBSan), seeded with the ONNX
# backend node tests' models of Debian's libonnx-testdata (the smallest 300, and those of issue 30's
# host operators).  Prints executions and crashes; exits non-zero on a crash, leak, timeout or
# out-of-memory.
set -euo pipefail
secs=${1:-10}
bdir=$2
ninja -C "$bdir" -j2 onnx/fuzz/fuzz-load >/dev/null
seeds="$bdir/fuzz-load-seeds"
rm -rf "$seeds"
mkdir -p "$seeds"
data=/usr/share/libonnx-testdata/data/node
if [ -d "$data" ]; then
	# (process substitution: head closing the pipe early is not an error under pipefail)
	mapfile -t models < <(find "$data" -name model.onnx -size -4k -printf '%s %p\n' | sort -n | head -300)
	for m in "${models[@]}"; do
		p=${m#* }
		cp "$p" "$seeds/$(basename "$(dirname "$p")").onnx"
	done
	# issue 30's host operators (index-checked kernels: the fuzzer's best targets), whatever their size
	for p in "$data"/test_{mod,bitshift,tril,triu,cumsum,depthtospace,spacetodepth,gather_elements,onehot,scatter,eyelike,hardmax,shrink,thresholdedrelu,nllloss,sce,topk,gathernd,compress,nonzero,reversesequence,einsum,lrn,instancenorm,dynamicquantizelinear,det,unique,nonmaxsuppression,gridsample,rnn,simple_rnn,gru,lstm,hannwindow,cast_FLOAT_to_FLOAT16,maxpool_3d,averagepool_3d,maxpool_with_argmax,maxunpool,roialign}*/model.onnx; do
		if [ -f "$p" ]; then cp "$p" "$seeds/$(basename "$(dirname "$p")").onnx"; fi
	done
fi
# malloc limit above the loader's own 2 GiB tensor cap (ONNX_MAX_TENSOR_BYTES): a refused shape is the
# loader's error, a larger allocation is the fuzzer's report
FUZZ_LEAKS=1 exec "$(dirname "$0")/../../tools/fuzz/run-libfuzzer" fuzz-load "$bdir/onnx/fuzz/fuzz-load" "$secs" \
	"$bdir" "$seeds" -timeout=20 -rss_limit_mb=3072 -malloc_limit_mb=2200 -max_len=8192
