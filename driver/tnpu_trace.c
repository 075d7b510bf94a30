// SPDX-License-Identifier: GPL-2.0-only
/* tnpu tracepoints: the one translation unit that defines them (tnpu_trace.h). */
#define CREATE_TRACE_POINTS
#include "tnpu_trace.h"
