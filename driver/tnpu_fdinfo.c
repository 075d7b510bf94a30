// SPDX-License-Identifier: GPL-2.0-only
/*
 * tnpu fdinfo (Documentation/gpu/drm-usage-stats.rst): the DRM core prints drm-driver,
 * drm-client-id and drm-pdev, this adds per ring the file has used
 *
 *   drm-engine-ring<N>:  <ns> ns	device time of the file's jobs on ring N
 *   drm-cycles-ring<N>:  <cycles>	their TOTAL_CYCLES counters (per-job counter records)
 *   drm-maxfreq-ring<N>: <MHz> MHz	the cycle model's clock (CAP_CLOCK)
 *
 * and the memory keys of drm_show_memory_stats(). A job's device time runs from the later of its
 * hand-over to the ring and the completion of the job before it on that ring (jobs of a ring run
 * one at a time, in order) to its own completion, so the times of all files on a ring add up to at
 * most the wall time; the job running now counts up to the moment fdinfo is read.
 */
#include <linux/ktime.h>

#include <drm/drm_file.h>
#include <drm/drm_print.h>

#include "tnpu_drv.h"

void tnpu_show_fdinfo(struct drm_printer *p, struct drm_file *file)
{
	struct tnpu_file *tfile = file->driver_priv;
	struct tnpu_device *tdev = tfile->tdev;
	struct tnpu_ctx *ctx = tfile->ctx;
	struct tnpu_usage usage;
	bool cycles = tdev->caps.features & TNPU_FEAT_COUNTERS;
	u64 now;
	u32 q;

	spin_lock(&tdev->lock);
	usage = ctx->usage;
	now = ktime_get_ns();
	for (q = 0; q < tdev->num_rings; q++) {
		struct tnpu_ring *ring = &tdev->rings[q];
		struct tnpu_job *job;
		u64 start;

		job = list_first_entry_or_null(&ring->inflight, struct tnpu_job, node);
		if (!job || job->ctx != ctx)
			continue;
		start = max(job->run_ns, ring->last_done_ns);
		usage.busy_ns[q] += now > start ? now - start : 0;
		usage.rings_used |= BIT(q);
	}
	spin_unlock(&tdev->lock);

	for (q = 0; q < tdev->num_rings; q++) {
		if (!(usage.rings_used & BIT(q)))
			continue;
		drm_printf(p, "drm-engine-ring%u:\t%llu ns\n", q, usage.busy_ns[q]);
		if (cycles)
			drm_printf(p, "drm-cycles-ring%u:\t%llu\n", q, usage.cycles[q]);
		drm_printf(p, "drm-maxfreq-ring%u:\t%u MHz\n", q, tdev->caps.clock);
	}
	drm_show_memory_stats(p, file);
}
