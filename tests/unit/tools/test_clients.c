// SPDX-License-Identifier: MIT
/* accel-top's clients (clients.c): the DRM fdinfo keys, and the /proc scan on a fake tree. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accel_tools.h"

/* what tnpu.ko prints (drm_show_fdinfo + tnpu_show_fdinfo + drm_show_memory_stats) */
static const char *const tnpu_fdinfo =
	"pos:\t0\nflags:\t02100002\nmnt_id:\t25\nino:\t123\n"
	"drm-driver:\ttnpu\ndrm-client-id:\t17\ndrm-pdev:\t0000:00:03.0\n"
	"drm-engine-ring0:\t1500 ns\ndrm-cycles-ring0:\t4000\ndrm-maxfreq-ring0:\t1000 MHz\n"
	"drm-engine-ring3:\t2500 ns\ndrm-cycles-ring3:\t6000\ndrm-maxfreq-ring3:\t1000 MHz\n"
	"drm-total-memory:\t128 KiB\ndrm-shared-memory:\t0\ndrm-active-memory:\t0\n"
	"drm-resident-memory:\t2 MiB\ndrm-purgeable-memory:\t0\n";

Test(clients, fdinfo_keys_are_parsed)
{
	struct ai_client c;

	cr_assert_eq(ai_fdinfo_parse(tnpu_fdinfo, &c), 0);
	cr_assert_eq(c.id, 17);
	cr_assert_eq(c.rings, (1u << 0) | (1u << 3));
	cr_assert_eq(c.busy_ns[0], 1500);
	cr_assert_eq(c.busy_ns[3], 2500);
	cr_assert_eq(c.cycles[0], 4000);
	cr_assert_eq(c.cycles[3], 6000);
	cr_assert_eq(c.busy_ns[1], 0);
	cr_assert_eq(c.mem_total, 128 << 10);
	cr_assert_eq(c.mem_resident, 2 << 20);
}

Test(clients, other_drivers_and_plain_files_are_not_clients)
{
	struct ai_client c;

	cr_assert_eq(ai_fdinfo_parse("pos:\t0\nflags:\t02\n", &c), -ENOENT);
	cr_assert_eq(ai_fdinfo_parse("drm-driver:\ti915\ndrm-client-id:\t3\n", &c), -ENOENT);
	cr_assert_eq(ai_fdinfo_parse("drm-driver:\ttnpux\ndrm-client-id:\t3\n", &c), -ENOENT);
	cr_assert_eq(ai_fdinfo_parse("drm-driver:\ttnpu\n", &c), -ENOENT);
	cr_assert_eq(ai_fdinfo_parse("", &c), -ENOENT);
	/* odd lines: no crash, known keys still read */
	cr_assert_eq(ai_fdinfo_parse("garbage\n:\n" "drm-engine-ring99:\t5 ns\ndrm-driver:\ttnpu\n"
				     "drm-client-id:\t4", &c), 0);
	cr_assert_eq(c.id, 4);
	cr_assert_eq(c.rings, 0);
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

Test(clients, proc_scan_finds_each_client_once_and_skips_itself)
{
	char root[] = "/tmp/tnpu-proc-XXXXXX", p[512];
	struct ai_client out[8];
	struct stat st;
	int n;

	cr_assert(mkdtemp(root));
	cr_assert_eq(stat("/dev/null", &st), 0);
	/* pid 10: two fds on the device (dup), one file elsewhere; pid 11: the same client (fork);
	 * pid 12: another client; pid 13: ourselves */
	for (int pid = 10; pid <= 13; pid++) {
		snprintf(p, sizeof(p), "%s/%d", root, pid);
		mkdir(p, 0755);
		snprintf(p, sizeof(p), "%s/%d/fd", root, pid);
		mkdir(p, 0755);
		snprintf(p, sizeof(p), "%s/%d/fdinfo", root, pid);
		mkdir(p, 0755);
		snprintf(p, sizeof(p), "%s/%d/comm", root, pid);
		put(p, pid == 12 ? "accel-bench\n" : "python3\n");
	}
	snprintf(p, sizeof(p), "%s/10/fd/3", root);
	cr_assert_eq(symlink("/dev/null", p), 0);
	snprintf(p, sizeof(p), "%s/10/fd/4", root);
	cr_assert_eq(symlink("/dev/null", p), 0);
	snprintf(p, sizeof(p), "%s/10/fd/5", root);
	cr_assert_eq(symlink("/", p), 0);
	snprintf(p, sizeof(p), "%s/11/fd/7", root);
	cr_assert_eq(symlink("/dev/null", p), 0);
	snprintf(p, sizeof(p), "%s/12/fd/3", root);
	cr_assert_eq(symlink("/dev/null", p), 0);
	snprintf(p, sizeof(p), "%s/13/fd/3", root);
	cr_assert_eq(symlink("/dev/null", p), 0);
	snprintf(p, sizeof(p), "%s/10/fdinfo/3", root);
	put(p, tnpu_fdinfo);
	snprintf(p, sizeof(p), "%s/10/fdinfo/4", root);
	put(p, tnpu_fdinfo);
	snprintf(p, sizeof(p), "%s/10/fdinfo/5", root);
	put(p, "pos:\t0\n");
	snprintf(p, sizeof(p), "%s/11/fdinfo/7", root);
	put(p, tnpu_fdinfo);
	snprintf(p, sizeof(p), "%s/12/fdinfo/3", root);
	put(p, "drm-driver:\ttnpu\ndrm-client-id:\t18\ndrm-total-memory:\t4096\n");
	snprintf(p, sizeof(p), "%s/13/fdinfo/3", root);
	put(p, "drm-driver:\ttnpu\ndrm-client-id:\t19\n");

	n = ai_clients_scan(root, (unsigned long long)st.st_rdev, 13, out, 8);
	cr_assert_eq(n, 2);
	cr_assert_not_null(ai_client_find(out, 2, 17));
	cr_assert_not_null(ai_client_find(out, 2, 18));
	cr_assert_null(ai_client_find(out, 2, 19));
	cr_assert_str_eq(ai_client_find(out, 2, 18)->comm, "accel-bench");
	cr_assert_eq(ai_client_find(out, 2, 18)->pid, 12);
	cr_assert_eq(ai_client_find(out, 2, 18)->mem_total, 4096);
	/* a bound on the output is respected */
	cr_assert_eq(ai_clients_scan(root, (unsigned long long)st.st_rdev, 13, out, 1), 1);
	cr_assert_eq(ai_clients_scan("/nonexistent-proc", 0, 0, out, 8), -ENOENT);
	snprintf(p, sizeof(p), "rm -rf %s", root);
	cr_assert_eq(system(p), 0);
}
