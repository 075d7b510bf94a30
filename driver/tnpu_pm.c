// SPDX-License-Identifier: GPL-2.0-only
/*
 * tnpu power management: system sleep and runtime PM with autosuspend.
 *
 * Runtime PM: every path that needs the hardware holds a usage reference while it does: a job
 * from SUBMIT (before it is pushed to the scheduler) until its release, so run_job, completion,
 * timeout and recovery always see a powered device; QUERY and the debugfs register dumps for their
 * duration. When the last reference goes, the device is suspended after autosuspend_ms without one
 * (the PCI core then puts it in D3hot). Runtime suspend holds off hardware access like a PCI
 * function reset's prepare; runtime resume programs the device again (context table, rings,
 * fences, interrupt masks) through the same path as a system resume. A BO freed while the device
 * is suspended skips the MMU invalidate: no job runs, and resume invalidates anyway.
 */
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/pm_runtime.h>

#include "tnpu_drv.h"

static int tnpu_autosuspend_ms = 1000;
module_param_named(autosuspend_ms, tnpu_autosuspend_ms, int, 0444);
MODULE_PARM_DESC(autosuspend_ms,
		 "idle time before runtime suspend, ms (default 1000; < 0 keeps the device powered; per device: power/autosuspend_delay_ms)");

/* End of probe: the PCI core's probe reference is dropped here, so an idle device suspends. */
void tnpu_pm_init(struct tnpu_device *tdev)
{
	struct device *dev = tdev->drm.dev;

	pm_runtime_set_autosuspend_delay(dev, tnpu_autosuspend_ms);
	pm_runtime_use_autosuspend(dev);
	/* PCI devices start with runtime PM forbidden (power/control "on") */
	pm_runtime_allow(dev);
	pm_runtime_mark_last_busy(dev);
	pm_runtime_put_autosuspend(dev);
}

/* Start of remove (the PCI core resumed the device before calling it): undo tnpu_pm_init(). */
void tnpu_pm_fini(struct tnpu_device *tdev)
{
	struct device *dev = tdev->drm.dev;

	pm_runtime_forbid(dev);
	pm_runtime_get_noresume(dev);
	pm_runtime_dont_use_autosuspend(dev);
}

/* The device powered for register access, until tnpu_pm_put(). Process context. */
int tnpu_pm_get(struct tnpu_device *tdev)
{
	return pm_runtime_resume_and_get(tdev->drm.dev);
}

void tnpu_pm_put(struct tnpu_device *tdev)
{
	pm_runtime_mark_last_busy(tdev->drm.dev);
	pm_runtime_put_autosuspend(tdev->drm.dev);
}

/*
 * Drops a reference without counting as activity: the autosuspend delay still runs from the last
 * real use (the completion poll takes a reference every tick).
 */
void tnpu_pm_put_quiet(struct tnpu_device *tdev)
{
	pm_runtime_put_autosuspend(tdev->drm.dev);
}

/* A reference only if the device is powered now (> 0); never resumes it. */
int tnpu_pm_get_if_active(struct tnpu_device *tdev)
{
	return pm_runtime_get_if_active(tdev->drm.dev);
}

static struct tnpu_device *tnpu_pm_tdev(struct device *dev)
{
	return pci_get_drvdata(to_pci_dev(dev));
}

static int tnpu_pm_suspend(struct device *dev)
{
	tnpu_jobs_suspend(tnpu_pm_tdev(dev));
	return 0;
}

static int tnpu_pm_resume(struct device *dev)
{
	tnpu_jobs_resume(tnpu_pm_tdev(dev));
	return 0;
}

static int tnpu_pm_runtime_suspend(struct device *dev)
{
	return tnpu_jobs_runtime_suspend(tnpu_pm_tdev(dev));
}

static int tnpu_pm_runtime_resume(struct device *dev)
{
	tnpu_jobs_runtime_resume(tnpu_pm_tdev(dev));
	return 0;
}

/* the PCI core saves and restores config space (MSI-X included) around these */
const struct dev_pm_ops tnpu_pm_ops = {
	SYSTEM_SLEEP_PM_OPS(tnpu_pm_suspend, tnpu_pm_resume)
	RUNTIME_PM_OPS(tnpu_pm_runtime_suspend, tnpu_pm_runtime_resume, NULL)
};
