# tnpu — top-level entry point. Every target installs what it needs first (tools/setup-deps, idempotent).
#
#   make            userspace (meson) + tnpu.ko
#   make demo       build everything, boot the VM, load the driver, run the demo through /dev/accel/accel0
#   make check      unit tests, module build, QEMU qtests, in-VM tests; ends with "N passed, N failed"
#   make qemu       QEMU 10.0 with -device tnpu (cached under $(TNPU_CACHE))
#   make vm         the VM kernel + initramfs;   make vm-test / vm-shell
#   make bench-core golden-model GEMM benchmark vs OpenBLAS (JSON lines)
#   make module     tnpu.ko against the installed Debian 6.12 headers
#   make onnx-conformance  ONNX backend tests of the supported ops, on sim and in the VM
#   make model-zoo  torchvision models, a ViT, a transformer encoder and a QDQ CNN vs PyTorch, sim + VM
#   make train-model  retrain models/fashion-mnist (installs python3-torch; not needed by CI)
# Variables: VM_ACCEL=kvm (opt-in; TCG by default), TNPU_CACHE=dir, BUILD=dir, V=1.

SHELL := /bin/bash
TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BUILD ?= $(TOP)/build
MESON_BUILD := $(BUILD)/meson
export TNPU_CACHE ?= $(HOME)/.cache/tnpu
export VM_ACCEL ?= tcg
KVER = $(shell $(TOP)/tools/kver)
KDIR = /lib/modules/$(KVER)/build

.PHONY: all deps build unit module qemu qtest vm vm-test vm-shell check demo bench-core fuzz-core \
	checkpatch clean distclean help onnx-conformance train-model model-zoo deps-zoo

all: build module

help:
	@sed -n '2,15p' $(TOP)/Makefile | sed 's/^# \{0,1\}//'

deps:
	@$(TOP)/tools/setup-deps

$(MESON_BUILD)/build.ninja: | deps
	@echo "[build] meson setup $(MESON_BUILD)"
	@meson setup $(MESON_BUILD) $(TOP) --prefix=/usr/local >/dev/null

build: deps $(MESON_BUILD)/build.ninja
	@echo "[build] userspace (meson + ninja)"
	@ninja -C $(MESON_BUILD) $(if $(V),,--quiet)

unit: build
	@echo "[unit] criterion unit tests (meson test)"
	@meson test -C $(MESON_BUILD) --print-errorlogs

module: deps
	@echo "[module] tnpu.ko for $(KVER)"
	@$(MAKE) --no-print-directory -C $(KDIR) M=$(TOP) modules $(if $(V),,>/dev/null)
	@echo "[module] built driver/tnpu.ko"

qemu: deps
	@$(TOP)/tools/build-qemu

qtest: qemu
	@if [ -x $(BUILD)/qemu-build/tests/qtest/tnpu-test ]; then \
		echo "[qtest] tnpu-test"; \
		cd $(BUILD)/qemu-build && QTEST_QEMU_BINARY=./qemu-system-x86_64 ./tests/qtest/tnpu-test --tap -k; \
	else echo "[qtest] no tnpu qtest built yet"; fi

vm: build module
	@$(TOP)/tools/vm/build-image

vm-test: qemu vm
	@$(TOP)/tests/vm/run-vm-tests

vm-shell: qemu vm
	@$(TOP)/tools/accel-vm shell

deps-zoo:
	@$(TOP)/tools/setup-deps --zoo

check: deps deps-zoo build module qemu vm
	@$(TOP)/tests/check-all

demo: qemu vm
	@$(TOP)/tools/demo

onnx-conformance: build qemu vm
	@$(TOP)/tools/onnx-conformance/run

model-zoo: deps-zoo build qemu vm
	@$(TOP)/tools/model-zoo/run

train-model:
	@$(TOP)/tools/setup-deps --train
	@nice /usr/bin/python3 $(TOP)/models/fashion-mnist/train.py

bench-core: build
	@$(MESON_BUILD)/qemu-device/core/bench/bench-core

fuzz-core: deps
	@$(TOP)/qemu-device/core/fuzz/run-fuzz.sh $${FUZZ_SECONDS:-60}

checkpatch: deps
	@$(TOP)/tools/checkpatch

clean:
	-@$(MAKE) --no-print-directory -C $(KDIR) M=$(TOP) clean >/dev/null 2>&1
	rm -rf $(MESON_BUILD) $(BUILD)/vm

distclean: clean
	rm -rf $(BUILD)
