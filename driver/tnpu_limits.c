// SPDX-License-Identifier: GPL-2.0-only
/*
 * tnpu per-tenant limits (issue #28, Documentation/driver.md "Per-tenant limits"): contexts and
 * pinned memory (tnpu_gem.c) are counted per user (the real uid of the process that opened the
 * file, over all tnpu devices), queued jobs per file (tnpu_submit.c). Without them one unprivileged
 * user could take every hardware context or the whole pin budget and lock every other user out.
 *
 * Openers with CAP_SYS_ADMIN (checked at open, so a passed file keeps its opener's standing) are
 * counted but not limited; the device's context pool and the global pin budget still apply.
 */
#include <linux/cred.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/xarray.h>

#include "tnpu_drv.h"

unsigned int tnpu_max_contexts_per_user = 128;
module_param_named(max_contexts_per_user, tnpu_max_contexts_per_user, uint, 0644);
MODULE_PARM_DESC(max_contexts_per_user,
		 "open files (device contexts) one uid may hold, CAP_SYS_ADMIN exempt (128)");

unsigned int tnpu_max_pinned_mb_per_user;
module_param_named(max_pinned_mb_per_user, tnpu_max_pinned_mb_per_user, uint, 0644);
MODULE_PARM_DESC(max_pinned_mb_per_user,
		 "MiB of BOs one uid may pin, CAP_SYS_ADMIN exempt (0: a quarter of the global pin budget, half the RAM)");

unsigned int tnpu_max_jobs_per_file = 1024;
module_param_named(max_jobs_per_file, tnpu_max_jobs_per_file, uint, 0644);
MODULE_PARM_DESC(max_jobs_per_file,
		 "jobs one file may have submitted and not yet completed, CAP_SYS_ADMIN exempt (1024)");

unsigned int tnpu_coredump_interval_s = 1800;
module_param_named(coredump_interval_s, tnpu_coredump_interval_s, uint, 0644);
MODULE_PARM_DESC(coredump_interval_s,
		 "seconds before one uid's failing jobs may leave another device coredump, CAP_SYS_ADMIN exempt (1800; 0: no limit)");

/*
 * When each uid last left a device coredump (jiffies as an xarray value). Kept apart from the
 * per-uid accounting record, which goes with the uid's last context: closing and reopening the
 * device must not reset the interval. One entry per uid that ever dumped; freed at module exit.
 */
static DEFINE_XARRAY(tnpu_dump_times);

/*
 * May a failure of @ctx's job leave a device coredump now? The kernel keeps one dump per device
 * until it is read or expires (five minutes) and drops new ones meanwhile, so one uid's failures
 * must not keep that slot: at most one dump per uid every coredump_interval_s (driver.md "Device
 * coredump"). Called with tdev->lock held (never sleeps); records the dump when it answers yes.
 */
bool tnpu_user_may_dump(struct tnpu_ctx *ctx)
{
	unsigned long interval = (unsigned long)READ_ONCE(tnpu_coredump_interval_s) * HZ;
	unsigned long now = jiffies & LONG_MAX;	/* an xarray value is a non-negative long */
	void *last;

	if (!ctx->user || ctx->limits_exempt || !interval)
		return true;
	last = xa_load(&tnpu_dump_times, ctx->user->uid);
	if (last && time_before(now, xa_to_value(last) + interval))
		return false;
	/* without memory for the record, the dump still goes ahead */
	xa_store(&tnpu_dump_times, ctx->user->uid, xa_mk_value(now), GFP_NOWAIT | __GFP_NOWARN);
	return true;
}

void tnpu_limits_exit(void)
{
	xa_destroy(&tnpu_dump_times);
}

/* contexts, BOs and jobs hold users; the xarray finds the one of a uid */
static DEFINE_XARRAY(tnpu_users);
static DEFINE_MUTEX(tnpu_users_lock);

/* The accounting record of the current task's real uid, referenced; NULL without memory. */
struct tnpu_user *tnpu_user_get_current(void)
{
	unsigned long uid = from_kuid(&init_user_ns, current_uid());
	struct tnpu_user *user;

	mutex_lock(&tnpu_users_lock);
	user = xa_load(&tnpu_users, uid);
	if (user) {
		refcount_inc(&user->ref);
		goto out;
	}
	user = kzalloc(sizeof(*user), GFP_KERNEL_ACCOUNT);
	if (!user)
		goto out;
	refcount_set(&user->ref, 1);
	user->uid = uid;
	if (xa_err(xa_store(&tnpu_users, uid, user, GFP_KERNEL_ACCOUNT))) {
		kfree(user);
		user = NULL;
	}
out:
	mutex_unlock(&tnpu_users_lock);
	return user;
}

void tnpu_user_put(struct tnpu_user *user)
{
	if (!user || !refcount_dec_and_mutex_lock(&user->ref, &tnpu_users_lock))
		return;
	xa_erase(&tnpu_users, user->uid);
	mutex_unlock(&tnpu_users_lock);
	WARN_ON(atomic_read(&user->contexts) || atomic64_read(&user->pinned));
	kfree(user);
}

/* Charges one context to @user: 0, or -EMFILE when the user holds its limit already. */
int tnpu_user_charge_context(struct tnpu_user *user, bool exempt)
{
	if (atomic_inc_return(&user->contexts) > READ_ONCE(tnpu_max_contexts_per_user) &&
	    !exempt) {
		atomic_dec(&user->contexts);
		return -EMFILE;
	}
	return 0;
}

void tnpu_user_uncharge_context(struct tnpu_user *user)
{
	atomic_dec(&user->contexts);
}
