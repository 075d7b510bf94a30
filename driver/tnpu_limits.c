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
