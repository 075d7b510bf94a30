/* SPDX-License-Identifier: (GPL-2.0-only WITH Linux-syscall-note) OR MIT */
/*
 * tnpu_accel.h — user-space ABI of the tnpu DRM accel driver (tnpu.ko).
 *
 * Conventions (shared with drivers/accel/ethosu):
 * - ioctl ids are an append-only enum; DRM_IOCTL_TNPU() builds every number;
 * - every struct has explicit padding; pad/reserved fields must be zero (else -EINVAL);
 * - structs may grow at the end: the DRM core zero-extends shorter user structs and truncates the
 *   copy-back, so new fields must treat 0 as "absent";
 * - arrays are passed as struct drm_tnpu_obj_array, whose stride lets the element grow too;
 * - timeouts are absolute CLOCK_MONOTONIC nanoseconds (timeout_ns);
 * - errors are negative errnos returned by ioctl(2) (errno in user space), documented per field.
 *
 * The complete reference, with every errno, is Documentation/uapi.md.
 */
#ifndef _UAPI_TNPU_ACCEL_H_
#define _UAPI_TNPU_ACCEL_H_

#include <drm/drm.h>

#if defined(__cplusplus)
extern "C" {
#endif

/**
 * enum drm_tnpu_ioctl_id - ioctl numbers (offsets from DRM_COMMAND_BASE). Append only.
 *
 * @DRM_TNPU_QUERY: query device or file information (struct drm_tnpu_query).
 * @DRM_TNPU_BO_CREATE: create a buffer object mapped into the file's device address space.
 * @DRM_TNPU_BO_INFO: size, device VA, flags and mmap offset of a buffer object.
 * @DRM_TNPU_BO_WAIT: wait until every job using a buffer object has completed.
 * @DRM_TNPU_QUEUE_CREATE: create a command queue owned by the file.
 * @DRM_TNPU_QUEUE_DESTROY: destroy a command queue.
 * @DRM_TNPU_SUBMIT: submit one job (command buffer) to a queue.
 * @DRM_TNPU_PERFMON_CREATE: create a performance monitor owned by the file.
 * @DRM_TNPU_PERFMON_DESTROY: destroy a performance monitor.
 * @DRM_TNPU_PERFMON_GET_VALUES: read (and optionally reset) a performance monitor's totals.
 */
enum drm_tnpu_ioctl_id {
	DRM_TNPU_QUERY = 0,
	DRM_TNPU_BO_CREATE,
	DRM_TNPU_BO_INFO,
	DRM_TNPU_BO_WAIT,
	DRM_TNPU_QUEUE_CREATE,
	DRM_TNPU_QUEUE_DESTROY,
	DRM_TNPU_SUBMIT,
	DRM_TNPU_PERFMON_CREATE,
	DRM_TNPU_PERFMON_DESTROY,
	DRM_TNPU_PERFMON_GET_VALUES,
};

/**
 * enum drm_tnpu_query_type - what DRM_TNPU_QUERY returns. Append only.
 *
 * @DRM_TNPU_QUERY_CAPS: struct drm_tnpu_caps (device geometry and limits).
 * @DRM_TNPU_QUERY_COUNTERS: struct drm_tnpu_counters (driver statistics + device counter block).
 *	Every tenant's figures: needs CAP_PERFMON or CAP_SYS_ADMIN, else -EPERM.
 * @DRM_TNPU_QUERY_FAULT: struct drm_tnpu_fault (the first MMU fault of the calling file).
 * @DRM_TNPU_QUERY_ISLANDS: struct drm_tnpu_islands (island capability registers).
 * @DRM_TNPU_QUERY_RESERVED_4: never assigned, so that the values stay contiguous; -EINVAL.
 * @DRM_TNPU_QUERY_ROW_BUSY: struct drm_tnpu_row_busy (per-row busy cycles).
 *	Without CAP_PERFMON/CAP_SYS_ADMIN: -EPERM unless the job that completed last was the
 *	caller's and no other file's job is on a ring.
 */
enum drm_tnpu_query_type {
	DRM_TNPU_QUERY_CAPS = 0,
	DRM_TNPU_QUERY_COUNTERS = 1,
	DRM_TNPU_QUERY_FAULT = 2,
	DRM_TNPU_QUERY_ISLANDS = 3,
	DRM_TNPU_QUERY_RESERVED_4 = 4,
	DRM_TNPU_QUERY_ROW_BUSY = 5,
};

/**
 * struct drm_tnpu_query - argument of DRM_IOCTL_TNPU_QUERY.
 *
 * The answer is copied like copy_struct_to_user(): if @size is smaller than the kernel's struct the
 * answer is truncated, if larger the tail is zero-filled. In every case @size is set to the
 * kernel's
 * struct size on return, so a call with @size = 0 and @pointer = 0 asks for the size.
 */
struct drm_tnpu_query {
	/** @type: in, enum drm_tnpu_query_type; unknown value: -EINVAL. */
	__u32 type;
	/** @size: in: bytes at @pointer; out: size of the kernel's answer struct. */
	__u32 size;
	/**
	 * @pointer: in, user pointer to @size bytes; may be 0 only when @size is 0 (else -EFAULT).
	 */
	__u64 pointer;
	/** @flags: in, must be 0 (-EINVAL). */
	__u32 flags;
	/** @pad: must be 0 (-EINVAL). */
	__u32 pad;
};

/** DRM_TNPU_DTYPE_INT8 - CAP_DTYPES bit: int8 x int8 -> int32 accumulate. */
#define DRM_TNPU_DTYPE_INT8		0x00000001u
/** DRM_TNPU_DTYPE_FP32 - CAP_DTYPES bit: fp32. */
#define DRM_TNPU_DTYPE_FP32		0x00000002u
/** DRM_TNPU_DTYPE_BF16 - CAP_DTYPES bit: bf16 x bf16 -> fp32. */
#define DRM_TNPU_DTYPE_BF16		0x00000004u

/**
 * struct drm_tnpu_caps - DRM_TNPU_QUERY_CAPS answer: the capability registers, decoded.
 *
 * All fields are outputs. Raw register values are included so that fields added to the hardware
 * later are visible before this struct grows.
 */
struct drm_tnpu_caps {
	/** @hw_version: VERSION register: [31:24] major, [23:16] minor, [15:8] ISA, [7:0] patch. */
	__u32 hw_version;
	/** @rows: rows of clusters n (one storage unit per row). */
	__u32 rows;
	/** @cols: clusters per row m. */
	__u32 cols;
	/** @pes: PEs per cluster k. */
	__u32 pes;
	/** @accumulators: accumulators per PE. */
	__u32 accumulators;
	/** @acc_elems: 32-bit elements per accumulator. */
	__u32 acc_elems;
	/** @sram_bytes: bytes per storage unit; each half (ping/pong) is sram_bytes / 2. */
	__u32 sram_bytes;
	/** @ibufs: instruction buffers per cluster. */
	__u32 ibufs;
	/** @ibuf_len: instructions per buffer. */
	__u32 ibuf_len;
	/** @rf_entries: register-file entries per cluster. */
	__u32 rf_entries;
	/** @slots: input-buffer / weight-queue slots per PE. */
	__u32 slots;
	/** @dtypes: DRM_TNPU_DTYPE_* bits. */
	__u32 dtypes;
	/** @hw_queues: hardware queues (rings); QUEUE_CREATE queues are mapped onto them. */
	__u32 hw_queues;
	/** @semaphores: semaphores per job. */
	__u32 semaphores;
	/** @features: CAP_FEATURES register (hardware spec, registers.md). */
	__u32 features;
	/** @clock_mhz: clock of the cycle model in MHz. */
	__u32 clock_mhz;
	/**
	 * @rates: CAP_RATES register (MACs/cycle/PE int8 [7:0], fp32 [15:8], DMA [23:16], dist.
	 * [31:24]).
	 */
	__u32 rates;
	/** @max_cmdbuf: maximum command-buffer size in bytes (SUBMIT @cmd_size). */
	__u32 max_cmdbuf;
	/** @page_size: device MMU page size in bytes; BO sizes are rounded up to it. */
	__u32 page_size;
	/** @va_bits: device virtual-address bits. */
	__u32 va_bits;
	/** @va_start: first device VA the driver hands out to buffer objects. */
	__u64 va_start;
	/** @va_end: one past the last device VA the driver hands out. */
	__u64 va_end;
	/** @max_bo_size: largest accepted BO_CREATE @size in bytes. */
	__u64 max_bo_size;
	/**
	 * @counters_size: bytes the driver writes for SUBMIT @counters_bo (struct
	 * drm_tnpu_job_counters).
	 */
	__u32 counters_size;
	/**
	 * @num_counters: meaningful entries of drm_tnpu_job_counters.counter[] and of the
	 * perfmon values (enum tnpu_counter); 0 on a device without per-job counter records
	 * (CAP_FEATURES bit 18), where every counter reads 0 and PERFMON_CREATE fails.
	 */
	__u32 num_counters;
	/** @max_queues: QUEUE_CREATE limit per file. */
	__u32 max_queues;
	/** @pad: 0. */
	__u32 pad;
};

/** DRM_TNPU_MAX_COUNTERS - counter slots in every counter block (hardware reserves 32). */
#define DRM_TNPU_MAX_COUNTERS		32

/** DRM_TNPU_MAX_RINGS - ring slots in struct drm_tnpu_counters (the hardware has at most 16). */
#define DRM_TNPU_MAX_RINGS		16

/**
 * struct drm_tnpu_ring_stats - statistics of one hardware ring (queue), in struct
 * drm_tnpu_counters. All fields are outputs, counted by the driver since it bound the device
 * (device resets do not clear them). The sum over the rings of @jobs_done, @jobs_failed and
 * @jobs_timedout equals the device-wide jobs_completed, jobs_failed and jobs_timedout.
 */
struct drm_tnpu_ring_stats {
	/** @jobs_done: jobs of this ring whose fence signalled without error. */
	__u64 jobs_done;
	/** @jobs_failed: jobs of this ring whose fence signalled with an error (any cause). */
	__u64 jobs_failed;
	/** @jobs_timedout: jobs of this ring that hit the job timeout (also in @jobs_failed). */
	__u64 jobs_timedout;
	/**
	 * @busy_ns: nanoseconds (CLOCK_MONOTONIC) during which the ring held at least one job
	 * handed to the hardware and not yet completed; includes the current busy period.
	 */
	__u64 busy_ns;
};

/**
 * struct drm_tnpu_counters - DRM_TNPU_QUERY_COUNTERS answer. All fields are outputs.
 *
 * Driver statistics are since the driver bound the device; @device are the hardware's global
 * counter
 * block (sum over every job since the last device reset), indexed like
 * drm_tnpu_job_counters.counter.
 */
struct drm_tnpu_counters {
	/** @jobs_submitted: jobs accepted by SUBMIT, all files. */
	__u64 jobs_submitted;
	/** @jobs_completed: jobs whose fence signalled without error. */
	__u64 jobs_completed;
	/** @jobs_failed: jobs whose fence signalled with an error (any cause). */
	__u64 jobs_failed;
	/** @jobs_timedout: jobs that hit the job timeout. */
	__u64 jobs_timedout;
	/** @resets: device resets performed by the driver. */
	__u64 resets;
	/** @mmu_faults: MMU faults reported by the device. */
	__u64 mmu_faults;
	/** @hw_errors: job errors reported by the device (MMU faults included). */
	__u64 hw_errors;
	/** @device: the global counter block, DRM_TNPU_MAX_COUNTERS 64-bit counters. */
	__u64 device[DRM_TNPU_MAX_COUNTERS];
	/*
	 * Optional tail: a driver without per-ring statistics fills only the fields above
	 * (offsetof(struct drm_tnpu_counters, num_rings) bytes); the rest of the caller's copy
	 * stays zero.
	 */
	/**
	 * @num_rings: meaningful entries of @rings (= drm_tnpu_caps.hw_queues); 0 from a driver
	 * without per-ring statistics.
	 */
	__u32 num_rings;
	/** @pad_rings: 0. */
	__u32 pad_rings;
	/**
	 * @rings: per hardware ring, indexed like drm_tnpu_queue_create.hw_queue; entries from
	 * @num_rings on are 0.
	 */
	struct drm_tnpu_ring_stats rings[DRM_TNPU_MAX_RINGS];
};

/** DRM_TNPU_MAX_ROW_BUSY - entries of drm_tnpu_row_busy.busy (the hardware's maximum rows). */
#define DRM_TNPU_MAX_ROW_BUSY		16

/**
 * struct drm_tnpu_row_busy - DRM_TNPU_QUERY_ROW_BUSY answer. All fields are outputs.
 *
 * The ROW_BUSY registers: modeled busy cycles of every PE-array row in the job that completed last
 * on the device (any queue, any file), for load-balance measurements on an otherwise idle device.
 * Per-job aggregates (busiest row, sum, rows used) are counters 18..20 of drm_tnpu_job_counters.
 */
struct drm_tnpu_row_busy {
	/** @rows: meaningful entries of @busy (CAP_GEOM rows). */
	__u32 rows;
	/** @pad: 0. */
	__u32 pad;
	/** @busy: busy cycles per row; entries from @rows on are 0. */
	__u64 busy[DRM_TNPU_MAX_ROW_BUSY];
};

/**
 * struct drm_tnpu_fault - DRM_TNPU_QUERY_FAULT answer: the first MMU fault of the calling file.
 *
 * All fields are outputs; all zero when the file never faulted. Once @faulted is 1 the file is
 * marked: SUBMIT fails with -EBADFD and its queued jobs fail with -ECANCELED
 * (Documentation/uapi.md).
 */
struct drm_tnpu_fault {
	/** @faulted: 1 if a job of this file took an MMU fault, else 0. */
	__u32 faulted;
	/** @error_code: hardware error code (errors.md: 10..14). */
	__u32 error_code;
	/** @error_info: ERR_INFO: bit 0 write, [3:1] walk level, [7:4] engine + 1. */
	__u32 error_info;
	/** @cmd_offset: byte offset of the failing command in the command buffer. */
	__u32 cmd_offset;
	/** @address: the faulting device VA. */
	__u64 address;
	/** @queue: handle of the file's queue that ran the faulting job. */
	__u32 queue;
	/** @pad: 0. */
	__u32 pad;
};

/** DRM_TNPU_MAX_ISLANDS - island slots in struct drm_tnpu_islands (the hardware has at most 8). */
#define DRM_TNPU_MAX_ISLANDS		8

/**
 * struct drm_tnpu_island - one island: a group of consecutive cluster rows with its own data
 * types, clock and SRAM window (Documentation/hardware/islands-and-chaining.md). All outputs.
 */
struct drm_tnpu_island {
	/** @first_row: first cluster row of the island. */
	__u32 first_row;
	/** @rows: cluster rows of the island (>= 1). */
	__u32 rows;
	/** @clkdiv: the island's rows run at CAP_CLOCK / @clkdiv (1..8). */
	__u32 clkdiv;
	/** @dtypes: DRM_TNPU_DTYPE_* bits the island's MACs accept. */
	__u32 dtypes;
	/** @sram_base: first byte of the island's SRAM window (@first_row * sram_bytes). */
	__u32 sram_base;
	/** @sram_bytes: bytes of the island's SRAM window (@rows * sram_bytes). */
	__u32 sram_bytes;
};

/**
 * struct drm_tnpu_islands - DRM_TNPU_QUERY_ISLANDS answer: the island registers (BAR0 0x0200..),
 * decoded. A device without the ISLANDS feature (CAP_FEATURES bit 10) reports one island of every
 * row and data type. All fields are outputs.
 */
struct drm_tnpu_islands {
	/** @count: islands (1..DRM_TNPU_MAX_ISLANDS); entries past it are 0. */
	__u32 count;
	/** @rings: producer-consumer ring descriptors per job (0 without the RINGS feature). */
	__u32 rings;
	/** @ring_mem_bytes: bytes of on-chip ring memory (0 without the RING_DMA feature). */
	__u32 ring_mem_bytes;
	/** @pad: 0. */
	__u32 pad;
	/** @island: one entry per island. */
	struct drm_tnpu_island island[DRM_TNPU_MAX_ISLANDS];
};

/**
 * DRM_TNPU_BO_DEVICE_READ_ONLY - BO_CREATE flag: the device may only read the BO (its PTEs lack
 * WRITE); a device write is an MMU_PERMISSION fault. The CPU mapping stays writable.
 */
#define DRM_TNPU_BO_DEVICE_READ_ONLY	0x00000001u

/**
 * struct drm_tnpu_bo_create - argument of DRM_IOCTL_TNPU_BO_CREATE.
 *
 * Creates a GEM shmem buffer object, maps it into the calling file's device address space and
 * returns its handle, device VA and mmap offset. The BO is zero-filled.
 */
struct drm_tnpu_bo_create {
	/**
	 * @size: in, bytes; 1..caps.max_bo_size, rounded up to caps.page_size. 0 or larger:
	 * -EINVAL. Above half of the RAM: -E2BIG; taking all pinned BOs above it: -ENOMEM.
	 */
	__u64 size;
	/** @flags: in, DRM_TNPU_BO_* flags; unknown bits: -EINVAL. */
	__u32 flags;
	/** @handle: out, GEM handle (file-local, never 0). */
	__u32 handle;
	/** @va: out, device VA of the first byte in the file's address space (page aligned). */
	__u64 va;
	/** @mmap_offset: out, offset to pass to mmap(2) on the device file descriptor. */
	__u64 mmap_offset;
};

/**
 * struct drm_tnpu_bo_info - argument of DRM_IOCTL_TNPU_BO_INFO.
 */
struct drm_tnpu_bo_info {
	/** @handle: in, GEM handle of the calling file; unknown: -ENOENT. */
	__u32 handle;
	/** @flags: out, the BO_CREATE flags. */
	__u32 flags;
	/** @size: out, size in bytes (page multiple). */
	__u64 size;
	/** @va: out, device VA. */
	__u64 va;
	/** @mmap_offset: out, mmap(2) offset. */
	__u64 mmap_offset;
	/** @pad: in, must be 0 (-EINVAL). */
	__u64 pad;
};

/**
 * struct drm_tnpu_bo_wait - argument of DRM_IOCTL_TNPU_BO_WAIT.
 *
 * Waits until every job that reads or writes the BO has completed (its fences in the BO's
 * reservation object signalled). Returns 0, -ETIME when @timeout_ns passed first,
 * -ERESTARTSYS/-EINTR
 * on a signal.
 */
struct drm_tnpu_bo_wait {
	/** @handle: in, GEM handle; unknown: -ENOENT. */
	__u32 handle;
	/** @pad: in, must be 0 (-EINVAL). */
	__u32 pad;
	/** @timeout_ns: in, absolute CLOCK_MONOTONIC deadline in ns; 0 or past = poll once. */
	__s64 timeout_ns;
};

/**
 * enum drm_tnpu_queue_priority - QUEUE_CREATE priorities.
 *
 * @DRM_TNPU_QUEUE_PRIORITY_LOW: background work.
 * @DRM_TNPU_QUEUE_PRIORITY_NORMAL: default.
 * @DRM_TNPU_QUEUE_PRIORITY_HIGH: latency sensitive; needs CAP_SYS_NICE (else -EPERM).
 */
enum drm_tnpu_queue_priority {
	DRM_TNPU_QUEUE_PRIORITY_LOW = 0,
	DRM_TNPU_QUEUE_PRIORITY_NORMAL = 1,
	DRM_TNPU_QUEUE_PRIORITY_HIGH = 2,
};

/**
 * struct drm_tnpu_queue_create - argument of DRM_IOCTL_TNPU_QUEUE_CREATE.
 *
 * A queue is a FIFO of jobs owned by the file; jobs of one queue run in submission order. Each
 * queue
 * is bound at creation to one hardware ring (rings are shared round-robin by all queues of all
 * files); the priority orders the queue against other queues of the same ring.
 */
struct drm_tnpu_queue_create {
	/** @priority: in, enum drm_tnpu_queue_priority; other values: -EINVAL. */
	__u32 priority;
	/** @flags: in, must be 0 (-EINVAL). */
	__u32 flags;
	/** @handle: out, queue handle (file-local, never 0). */
	__u32 handle;
	/** @hw_queue: out, index of the hardware ring the queue is mapped onto. */
	__u32 hw_queue;
};

/**
 * struct drm_tnpu_queue_destroy - argument of DRM_IOCTL_TNPU_QUEUE_DESTROY.
 *
 * The handle is freed at once; jobs already on the hardware complete, jobs still waiting for
 * dependencies after 1 s are cancelled (Documentation/uapi.md).
 */
struct drm_tnpu_queue_destroy {
	/** @handle: in, queue handle; unknown or already destroyed: -ENOENT. */
	__u32 handle;
	/** @pad: in, must be 0 (-EINVAL). */
	__u32 pad;
};

/**
 * DRM_TNPU_MAX_ARRAY_STRIDE - largest drm_tnpu_obj_array.stride: room for elements to grow 32-fold
 * while bounding the bytes SUBMIT reads (4096 BO references x 256 bytes = 1 MiB).
 */
#define DRM_TNPU_MAX_ARRAY_STRIDE	256

/**
 * DRM_TNPU_MAX_SYNCOBJ_HANDLES - largest count_handles the accel node accepts in the DRM core's
 * SYNCOBJ_WAIT, _TIMELINE_WAIT, _RESET, _SIGNAL, _TIMELINE_SIGNAL and _QUERY (else -EINVAL).
 */
#define DRM_TNPU_MAX_SYNCOBJ_HANDLES	4096

/**
 * struct drm_tnpu_obj_array - an array of structs in user memory.
 */
struct drm_tnpu_obj_array {
	/**
	 * @stride: in, bytes per element, from the first published size of the element up to
	 * DRM_TNPU_MAX_ARRAY_STRIDE (else -EINVAL); bytes beyond the size the kernel knows must
	 * be zero (-E2BIG otherwise).
	 */
	__u32 stride;
	/** @count: in, number of elements; 0 means none (then @array is ignored). */
	__u32 count;
	/** @array: in, user pointer to @count elements of @stride bytes. */
	__u64 array;
};

/** DRM_TNPU_BO_REF_READ - SUBMIT BO-list flag: the job reads the BO (waits for earlier writers). */
#define DRM_TNPU_BO_REF_READ		0x00000001u
/**
 * DRM_TNPU_BO_REF_WRITE - SUBMIT BO-list flag: the job writes the BO (waits for every earlier
 * job).
 */
#define DRM_TNPU_BO_REF_WRITE		0x00000002u

/**
 * struct drm_tnpu_bo_ref - element of drm_tnpu_submit.bos (first published size: 8 bytes).
 */
struct drm_tnpu_bo_ref {
	/** @handle: in, GEM handle of the calling file; unknown: -ENOENT. */
	__u32 handle;
	/** @flags: in, DRM_TNPU_BO_REF_READ and/or _WRITE; 0 or unknown bits: -EINVAL. */
	__u32 flags;
};

/**
 * struct drm_tnpu_sync - element of drm_tnpu_submit.in_syncs (first published size: 16 bytes).
 */
struct drm_tnpu_sync {
	/** @handle: in, syncobj handle; unknown: -ENOENT. */
	__u32 handle;
	/** @flags: in, must be 0 (-EINVAL). */
	__u32 flags;
	/** @point: in, timeline point; 0 for a binary syncobj. No fence at that point: -EINVAL. */
	__u64 point;
};

/**
 * struct drm_tnpu_job_counters - what the driver writes at SUBMIT @counters_bo + @counters_offset
 * when the job completes (successfully or not), before its fence signals. The counters are the
 * device's per-job counter record: asking for them does not hold other jobs of the ring back.
 */
struct drm_tnpu_job_counters {
	/**
	 * @status: 0 on success, else the negative errno the job's fence carries: -EIO, -EFAULT,
	 * -ETIMEDOUT for a job that failed on the hardware; -ECANCELED (its file faulted), -ESRCH
	 * (its queue was destroyed or its file closed) or -ENODEV (unplug) for a job that never
	 * reached it. Written for every job before its fence signals (Documentation/uapi.md).
	 */
	__s32 status;
	/** @hw_error: hardware error code (errors.md), 0 if none. */
	__u32 hw_error;
	/**
	 * @counter: the job's counters (enum tnpu_counter of the hardware spec); unused slots 0.
	 */
	__u64 counter[DRM_TNPU_MAX_COUNTERS];
};

/**
 * struct drm_tnpu_submit - argument of DRM_IOCTL_TNPU_SUBMIT.
 *
 * Queues one job: the command buffer is @cmd_size bytes at @cmd_offset in @cmd_bo (device VA
 * = BO va + @cmd_offset). The job waits for the @in_syncs fences and, implicitly, for earlier jobs
 * that write (or, for DRM_TNPU_BO_REF_WRITE, use) a BO of @bos or @cmd_bo. On completion the
 * @out_sync syncobj gets the job's fence.
 */
struct drm_tnpu_submit {
	/** @queue: in, queue handle from QUEUE_CREATE; unknown: -ENOENT. */
	__u32 queue;
	/** @flags: in, must be 0 (-EINVAL). */
	__u32 flags;
	/**
	 * @cmd_bo: in, GEM handle of the command buffer (implicitly read by the job); unknown:
	 * -ENOENT.
	 */
	__u32 cmd_bo;
	/** @cmd_size: in, bytes; multiple of 8, 8..caps.max_cmdbuf (-EINVAL). */
	__u32 cmd_size;
	/**
	 * @cmd_offset: in, byte offset in @cmd_bo; multiple of 8, offset + size <= BO size
	 * (-EINVAL).
	 */
	__u64 cmd_offset;
	/** @bos: in, array of struct drm_tnpu_bo_ref: every other BO the job touches. */
	struct drm_tnpu_obj_array bos;
	/** @in_syncs: in, array of struct drm_tnpu_sync: fences to wait for before the job runs. */
	struct drm_tnpu_obj_array in_syncs;
	/**
	 * @out_sync: in, syncobj handle that receives the job's fence, 0 for none; unknown:
	 * -ENOENT.
	 */
	__u32 out_sync;
	/** @counters_bo: in, GEM handle that receives struct drm_tnpu_job_counters, 0 for none. */
	__u32 counters_bo;
	/** @out_sync_point: in, timeline point for @out_sync, 0 for a binary syncobj. */
	__u64 out_sync_point;
	/** @counters_offset: in, byte offset in @counters_bo; multiple of 8 and
	 * offset + sizeof(struct drm_tnpu_job_counters) <= BO size (-EINVAL).
	 */
	__u64 counters_offset;
	/** @seqno: out, driver-wide job id, increasing (diagnostics: dmesg, debugfs). */
	__u64 seqno;
	/**
	 * @perfmon_id: in, performance monitor of the calling file (PERFMON_CREATE) that adds
	 * this job's counters when it completes, 0 for none; unknown: -ENOENT.
	 */
	__u32 perfmon_id;
	/** @pad: in, must be 0 (-EINVAL). */
	__u32 pad;
};

/** DRM_TNPU_MAX_PERFMONS - performance monitors one file may hold at once. */
#define DRM_TNPU_MAX_PERFMONS		32

/**
 * struct drm_tnpu_perfmon_create - argument of DRM_IOCTL_TNPU_PERFMON_CREATE.
 *
 * A performance monitor sums the counters (enum tnpu_counter) of every job submitted with its id
 * in drm_tnpu_submit.perfmon_id, counted when the job completes (a job that fails adds its
 * counters up to the failure; a job that times out or is cancelled adds nothing). Any number
 * of jobs with and without monitors share a ring: counting never holds other jobs back. More
 * than DRM_TNPU_MAX_PERFMONS per file: -ENOSPC; a device without per-job counter records:
 * -EOPNOTSUPP.
 */
struct drm_tnpu_perfmon_create {
	/** @id: out, monitor id (file-local, never 0). */
	__u32 id;
	/** @flags: in, must be 0 (-EINVAL). */
	__u32 flags;
};

/**
 * struct drm_tnpu_perfmon_destroy - argument of DRM_IOCTL_TNPU_PERFMON_DESTROY.
 *
 * The id is freed at once; jobs already submitted with it still complete normally (their
 * counts go nowhere). Closing the file destroys its monitors.
 */
struct drm_tnpu_perfmon_destroy {
	/** @id: in, monitor id of the calling file; unknown or destroyed: -ENOENT. */
	__u32 id;
	/** @pad: in, must be 0 (-EINVAL). */
	__u32 pad;
};

/**
 * DRM_TNPU_PERFMON_GET_VALUES_RESET - PERFMON_GET_VALUES flag: zero the totals (values and @jobs)
 * in the same step as reading them, so that no completion is lost between a read and a reset.
 */
#define DRM_TNPU_PERFMON_GET_VALUES_RESET	0x00000001u

/**
 * struct drm_tnpu_perfmon_get_values - argument of DRM_IOCTL_TNPU_PERFMON_GET_VALUES.
 *
 * Copies the monitor's totals: DRM_TNPU_MAX_COUNTERS 64-bit values, indexed like
 * drm_tnpu_job_counters.counter, each the sum over the jobs counted so far. Jobs still running
 * are not included yet (wait for their fences first).
 */
struct drm_tnpu_perfmon_get_values {
	/** @id: in, monitor id of the calling file; unknown: -ENOENT. */
	__u32 id;
	/** @flags: in, DRM_TNPU_PERFMON_GET_VALUES_RESET or 0; other bits: -EINVAL. */
	__u32 flags;
	/**
	 * @values_ptr: in, user pointer to DRM_TNPU_MAX_COUNTERS __u64 (256 bytes); 0 or
	 * unwritable: -EFAULT.
	 */
	__u64 values_ptr;
	/** @jobs: out, number of jobs whose counters the values sum. */
	__u64 jobs;
};

/** DRM_IOCTL_TNPU() - build the ioctl number for @id with argument struct @type. */
#define DRM_IOCTL_TNPU(__access, __id, __type) \
	DRM_IO ## __access(DRM_COMMAND_BASE + DRM_TNPU_ ## __id, struct drm_tnpu_ ## __type)

#define DRM_IOCTL_TNPU_QUERY		DRM_IOCTL_TNPU(WR, QUERY, query)
#define DRM_IOCTL_TNPU_BO_CREATE	DRM_IOCTL_TNPU(WR, BO_CREATE, bo_create)
#define DRM_IOCTL_TNPU_BO_INFO		DRM_IOCTL_TNPU(WR, BO_INFO, bo_info)
#define DRM_IOCTL_TNPU_BO_WAIT		DRM_IOCTL_TNPU(W, BO_WAIT, bo_wait)
#define DRM_IOCTL_TNPU_QUEUE_CREATE	DRM_IOCTL_TNPU(WR, QUEUE_CREATE, queue_create)
#define DRM_IOCTL_TNPU_QUEUE_DESTROY	DRM_IOCTL_TNPU(W, QUEUE_DESTROY, queue_destroy)
#define DRM_IOCTL_TNPU_SUBMIT		DRM_IOCTL_TNPU(WR, SUBMIT, submit)
#define DRM_IOCTL_TNPU_PERFMON_CREATE	DRM_IOCTL_TNPU(WR, PERFMON_CREATE, perfmon_create)
#define DRM_IOCTL_TNPU_PERFMON_DESTROY	DRM_IOCTL_TNPU(W, PERFMON_DESTROY, perfmon_destroy)
#define DRM_IOCTL_TNPU_PERFMON_GET_VALUES \
	DRM_IOCTL_TNPU(WR, PERFMON_GET_VALUES, perfmon_get_values)

#if defined(__cplusplus)
}
#endif

#endif /* _UAPI_TNPU_ACCEL_H_ */
