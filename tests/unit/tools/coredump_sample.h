// SPDX-License-Identifier: MIT
/* A small valid device coredump: header, two registers, two ring entries, a FENCE and a DMA_H2D. */
#ifndef CD_SAMPLE_H
#define CD_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "tnpu_coredump.h"

#define CD_SAMPLE_MAX 4096

/* Writes the dump into buf (zero-filled first); returns its length. */
size_t cd_sample_build(uint8_t buf[CD_SAMPLE_MAX]);

#endif
