# tnpu — top-level entry point. Every target installs what it needs first (tools/setup-deps, idempotent).
#
#   make            userspace (meson) + tnpu.ko
#   make demo       build everything, boot the VM, load the driver, run the demo through /dev/accel/accel0
#   make check      unit tests, module build, QEMU qtests, in-VM tests; ends with "N passed, N failed"
#   make qemu       QEMU 10.0 with -device tnpu (cached under $(TNPU_CACHE))
#   make vm         the VM kernel + initramfs;   make vm-test / vm-shell
#   make debug-kernel  the debug test kernel (lockdep, KASAN, kmemleak, ...; cached under $(TNPU_CACHE))
#   make vm-debug   the in-VM suites on the debug kernel;   make fuzz-uapi  the uAPI fuzzer on it
#   make bench-core golden-model GEMM benchmark vs OpenBLAS (JSON lines)
#   make module     tnpu.ko against the installed Debian 6.12 headers
#   make onnx-conformance  ONNX backend tests of the supported ops, on sim and in the VM
#   make model-zoo  torchvision models, a ViT, a transformer encoder and a QDQ CNN vs PyTorch, sim + VM
#   make llm-check  decoder LLMs (GPT-2, Llama; fp32, int8, int4) exported at test time vs PyTorch, sim + VM
#   make train-model  retrain models/fashion-mnist (installs python3-torch; not needed by CI)
#   make install    libraries, headers, pkg-config files, tools, udev rule and tnpu.ko (PREFIX, DESTDIR)
#   make deb        Debian packages (tnpu-dkms, libaccel0, libaccel-dev, ..., python3-tnpu) in build/deb, lintian
# Variables: VM_ACCEL=kvm (opt-in; TCG by default), TNPU_CACHE=dir, BUILD=dir, V=1,
#   PREFIX=/usr/local, DESTDIR= (staging root), UDEVRULESDIR (default /etc/udev/rules.d; /usr/lib/udev/rules.d
#   for PREFIX=/usr).

SHELL := /bin/bash
TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BUILD ?= $(TOP)/build
MESON_BUILD := $(BUILD)/meson
export TNPU_CACHE ?= $(HOME)/.cache/tnpu
export VM_ACCEL ?= tcg
KVER = $(shell $(TOP)/tools/kver)
KDIR = /lib/modules/$(KVER)/build
PREFIX ?= /usr/local
DESTDIR ?=
UDEVRULESDIR ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/udev/rules.d,/etc/udev/rules.d)
# make install uses the main build for the default prefix, else a build directory of its own (the prefix is
# compiled into the pkg-config files).
INSTALL_BUILD = $(if $(filter /usr/local,$(PREFIX)),$(MESON_BUILD),$(BUILD)/meson-prefix$(subst /,-,$(PREFIX)))

.PHONY: all deps build unit module qemu qtest vm vm-test vm-shell check demo bench-core fuzz-core fuzz-qemu \
	checkpatch clean distclean help onnx-conformance train-model debug-kernel vm-debug fuzz-uapi install deb deb-deps model-zoo deps-zoo llm-check

all: build module

help:
	@awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' $(TOP)/Makefile

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

# The debug kernel is off the demo's path: only these targets and `make check` build it.
debug-kernel: deps
	@$(TOP)/tools/build-debug-kernel

vm-debug: qemu build
	@$(TOP)/tests/check-all vm-debug

fuzz-uapi: qemu build
	@$(TOP)/tests/check-all fuzz-uapi

deps-zoo:
	@$(TOP)/tools/setup-deps --zoo

check: deps deb-deps deps-zoo build module qemu vm
	@$(TOP)/tests/check-all

demo: qemu vm
	@$(TOP)/tools/demo

onnx-conformance: build qemu vm
	@$(TOP)/tools/onnx-conformance/run

model-zoo: deps-zoo build qemu vm
	@$(TOP)/tools/model-zoo/run

llm-check: deps-zoo build qemu vm
	@$(TOP)/tools/llm/check

train-model:
	@$(TOP)/tools/setup-deps --train
	@nice /usr/bin/python3 $(TOP)/models/fashion-mnist/train.py

bench-core: build
	@$(MESON_BUILD)/qemu-device/core/bench/bench-core

fuzz-core: deps
	@$(TOP)/qemu-device/core/fuzz/run-fuzz.sh $${FUZZ_SECONDS:-60}

# QEMU's generic-fuzz on the device (clang + ASan QEMU build of its own); make check runs it for 60 s.
fuzz-qemu: qemu
	@$(TOP)/tools/build-qemu-fuzz run $${FUZZ_QEMU_SECONDS:-300}

checkpatch: deps
	@$(TOP)/tools/checkpatch

# Documentation/install.md. Test programs are tagged 'tests' in meson and are not installed here (only into
# the VM image); the module goes to /lib/modules/$(KVER)/updates/ under DESTDIR.
install: build module
	@if [ "$(INSTALL_BUILD)" != "$(MESON_BUILD)" ]; then \
		if [ -f $(INSTALL_BUILD)/build.ninja ]; then meson configure $(INSTALL_BUILD) --prefix=$(PREFIX) >/dev/null; \
		else meson setup $(INSTALL_BUILD) $(TOP) --prefix=$(PREFIX) >/dev/null; fi; \
		ninja -C $(INSTALL_BUILD) $(if $(V),,--quiet); fi
	@echo "[install] userspace into $(DESTDIR)$(PREFIX) (meson install --tags runtime,devel,man)"
	@meson install -C $(INSTALL_BUILD) --no-rebuild --tags runtime,devel,man $(if $(DESTDIR),--destdir $(DESTDIR)) \
		$(if $(V),,--quiet)
	@echo "[install] udev rule $(DESTDIR)$(UDEVRULESDIR)/70-tnpu.rules"
	@install -D -m 644 $(TOP)/tools/udev/70-tnpu.rules $(DESTDIR)$(UDEVRULESDIR)/70-tnpu.rules
	@echo "[install] tnpu.ko into $(DESTDIR)/lib/modules/$(KVER)/updates/"
	@$(MAKE) --no-print-directory -C $(KDIR) M=$(TOP) modules_install INSTALL_MOD_PATH=$(DESTDIR) \
		INSTALL_MOD_DIR=updates CONFIG_MODULE_SIG_ALL= $(if $(V),,>/dev/null 2>&1)
	@$(if $(DESTDIR),true,depmod -a $(KVER))

deb-deps:
	@$(TOP)/tools/setup-deps --deb

# Documentation/packaging.md: dpkg-buildpackage on a copy of the tree (build/deb/src), then lintian.
deb: deps deb-deps
	@$(TOP)/tools/deb/build

clean:
	-@$(MAKE) --no-print-directory -C $(KDIR) M=$(TOP) clean >/dev/null 2>&1
	rm -rf $(MESON_BUILD) $(BUILD)/vm $(BUILD)/meson-prefix-*

distclean: clean
	rm -rf $(BUILD)
