/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * tnpu tracepoints (events/tnpu/ in tracefs): a job's submit, run (handed to its ring), complete
 * (with its status), timeout, and device resets. Every job event carries the DRM client id (the
 * fdinfo drm-client-id of the submitting file), the hardware ring, the device context, the file's
 * queue handle, SUBMIT's seqno and the ring's sequence number. Usage: Documentation/driver.md,
 * "Tracepoints".
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM tnpu

#if !defined(__TNPU_TRACE_H__) || defined(TRACE_HEADER_MULTI_READ)
#define __TNPU_TRACE_H__

#include <linux/tracepoint.h>

#include "tnpu_drv.h"

DECLARE_EVENT_CLASS(tnpu_job,
		    TP_PROTO(struct tnpu_job *job),
		    TP_ARGS(job),
		    TP_STRUCT__entry(__string(dev, dev_name(job->tdev->drm.dev))
				     __field(u64, client_id)
				     __field(u32, ring)
				     __field(u32, ctx)
				     __field(u32, queue)
				     __field(u64, seqno)
				     __field(u64, hw_seqno)),
		    TP_fast_assign(__assign_str(dev);
				   __entry->client_id = job->client_id;
				   __entry->ring = job->ring->idx;
				   __entry->ctx = job->ctx->id;
				   __entry->queue = job->queue_handle;
				   __entry->seqno = job->id;
				   __entry->hw_seqno = job->hw_seqno;),
		    TP_printk("dev=%s client=%llu ring=%u ctx=%u queue=%u seqno=%llu hw_seqno=%llu",
			      __get_str(dev), __entry->client_id, __entry->ring, __entry->ctx,
			      __entry->queue, __entry->seqno, __entry->hw_seqno));

/* SUBMIT pushed the job to its queue's scheduler entity (hw_seqno is 0 until it runs) */
DEFINE_EVENT(tnpu_job, tnpu_job_submit,
	     TP_PROTO(struct tnpu_job *job),
	     TP_ARGS(job));

/* the scheduler handed the job to its ring (hw_seqno assigned) */
DEFINE_EVENT(tnpu_job, tnpu_job_run,
	     TP_PROTO(struct tnpu_job *job),
	     TP_ARGS(job));

/* the job made no progress for timeout_ms: the device is reset next */
DEFINE_EVENT(tnpu_job, tnpu_job_timeout,
	     TP_PROTO(struct tnpu_job *job),
	     TP_ARGS(job));

/* the job's hardware fence signalled: status 0, or -EIO, -EFAULT, -ETIMEDOUT, -ENODEV */
TRACE_EVENT(tnpu_job_complete,
	    TP_PROTO(struct tnpu_job *job, int status),
	    TP_ARGS(job, status),
	    TP_STRUCT__entry(__string(dev, dev_name(job->tdev->drm.dev))
			     __field(u64, client_id)
			     __field(u32, ring)
			     __field(u32, ctx)
			     __field(u32, queue)
			     __field(u64, seqno)
			     __field(u64, hw_seqno)
			     __field(int, status)),
	    TP_fast_assign(__assign_str(dev);
			   __entry->client_id = job->client_id;
			   __entry->ring = job->ring->idx;
			   __entry->ctx = job->ctx->id;
			   __entry->queue = job->queue_handle;
			   __entry->seqno = job->id;
			   __entry->hw_seqno = job->hw_seqno;
			   __entry->status = status;),
	    TP_printk("dev=%s client=%llu ring=%u ctx=%u queue=%u seqno=%llu hw_seqno=%llu status=%d",
		      __get_str(dev), __entry->client_id, __entry->ring, __entry->ctx,
		      __entry->queue, __entry->seqno, __entry->hw_seqno, __entry->status));

/* the device was reset: after a timeout (ring of the guilty job) or a PCI function reset (-1) */
TRACE_EVENT(tnpu_reset,
	    TP_PROTO(struct tnpu_device *tdev, int ring, const char *reason),
	    TP_ARGS(tdev, ring, reason),
	    TP_STRUCT__entry(__string(dev, dev_name(tdev->drm.dev))
			     __field(int, ring)
			     __string(reason, reason)),
	    TP_fast_assign(__assign_str(dev);
			   __entry->ring = ring;
			   __assign_str(reason);),
	    TP_printk("dev=%s ring=%d reason=%s", __get_str(dev), __entry->ring,
		      __get_str(reason)));

#endif /* __TNPU_TRACE_H__ */

/* out-of-tree module: define_trace.h finds this header through the Kbuild include path */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE tnpu_trace
#include <trace/define_trace.h>
