/* SPDX-License-Identifier: MIT */
/*
 * tnpu_uninit.h - TNPU_UNINIT: a scratch array on the stack that is written before it is read, exempt
 * from QEMU's -ftrivial-auto-var-init=zero (which would clear kilobytes on every call of a hot path).
 * Shared by the core (src/internal.h) and its GEMM kernels (kernels/kern_internal.h).
 */
#ifndef TNPU_UNINIT_H
#define TNPU_UNINIT_H

#if defined(__has_attribute)
#if __has_attribute(uninitialized)
#define TNPU_UNINIT __attribute__((uninitialized))
#endif
#endif
#ifndef TNPU_UNINIT
#define TNPU_UNINIT
#endif

#endif
