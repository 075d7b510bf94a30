/* SPDX-License-Identifier: MIT */
/*
 * accel_tools.h — internal interfaces of accel-info and accel-top (tools/accel-info/).
 *
 *   pci_enum.c    libpci enumeration of tnpu functions (ids, class, BARs, MSI-X, PCIe link)
 *   accel_node.c  sysfs join PCI function <-> /dev/accel/accelN, bound driver and module state
 *   query.c       DRM_IOCTL_TNPU_QUERY (CAPS, COUNTERS) through libdrm's drmIoctl
 *   islands.c     DRM_TNPU_QUERY_ISLANDS and the island table (text, JSON)
 *   format.c      pure helpers: sizes, link speeds, data types, counter deltas -> rates
 *   clients.c     per-client usage from /proc/<pid>/fdinfo (the DRM fdinfo keys)
 *   json.c        the JSON writer (json.h)
 *
 * Everything that parses sysfs takes the sysfs root as a parameter so the unit tests can point it at a
 * fake tree. Strings are fixed-size and always NUL-terminated; odd or missing sysfs/PCI contents give
 * "unknown" values, never a crash.
 */
#ifndef ACCEL_TOOLS_H
#define ACCEL_TOOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tnpu_accel.h"

#define TNPU_PCI_VENDOR_ID	0x1234
#define TNPU_PCI_DEVICE_ID	0x4e50
#define ACCEL_TOOLS_SYSFS	"/sys"
#define ACCEL_TOOLS_DEV		"/dev"

/* ---- pci_enum.c ---------------------------------------------------------------------------- */

#define AI_NUM_BARS 6

struct ai_bar {
	bool present;
	bool io;		/* I/O space rather than memory */
	bool mem64;		/* 64-bit memory BAR */
	bool prefetch;
	uint64_t addr;		/* without the flag bits */
	uint64_t size;		/* 0 if unknown */
};

struct ai_link {
	bool known;		/* false: no PCIe capability readable (non-root) and no sysfs attributes */
	bool integrated;	/* root-complex integrated endpoint: no link at all */
	unsigned int cur_speed;	/* PCIe speed code 1..6 (2.5..64 GT/s), 0 unknown */
	unsigned int cur_width;
	unsigned int max_speed;
	unsigned int max_width;
};

struct ai_pci_dev {
	char bdf[32];		/* "0000:00:01.0" */
	uint16_t vendor_id, device_id;
	uint16_t subsys_vendor_id, subsys_id;
	uint32_t class_code;	/* 24-bit: class, subclass, prog-if (0x120000) */
	uint8_t revision;
	struct ai_bar bar[AI_NUM_BARS];
	int msix_vectors;	/* table size; -1 if the capability could not be read (needs root) */
	int msix_bar;		/* BAR holding the MSI-X table, -1 if unknown */
	bool msix_enabled;
	struct ai_link link;
	bool config_full;	/* extended config space was readable (root) */
};

/*
 * Lists every function with the tnpu vendor/device id, sorted by BDF. *devs is malloc'ed (free() it),
 * possibly NULL with *count 0. Returns 0 or a negative errno; err gets a message on failure.
 */
int ai_pci_enumerate(struct ai_pci_dev **devs, size_t *count, char *err, size_t errlen);

/* ---- accel_node.c -------------------------------------------------------------------------- */

struct ai_node {
	bool found;		/* an accel minor is attached to the PCI function */
	int minor;		/* N of accelN, -1 if none */
	char name[32];		/* "accel0" */
	char dev_path[128];	/* "/dev/accel/accel0" (built from the dev root) */
	char driver[64];	/* bound driver name, "" if not bound */
	char module[64];	/* module of the bound driver ("" if built in or unknown) */
	char module_version[64];/* /sys/module/M/version, else srcversion, else "" */
	char module_state[32];	/* /sys/module/M/initstate ("live", "coming", "going"), "" if unknown */
	bool tnpu_loaded;	/* <sysfs>/module/tnpu exists (tells "not loaded" from "probe failed") */
};

/*
 * Fills node for the PCI function bdf ("0000:00:01.0"), reading under sysfs_root (normally "/sys") and
 * naming the device node under dev_root (normally "/dev"). Returns 0 (even when no driver is bound or no
 * accel node exists: see node->driver and node->found) or -EINVAL for a malformed bdf.
 */
int ai_node_lookup(const char *sysfs_root, const char *dev_root, const char *bdf, struct ai_node *node);

/*
 * The geometry tnpu.ko publishes as sysfs attributes of the PCI device (Documentation/driver.md): readable
 * by every user, so accel-info can show it when /dev/accel/accelN cannot be opened.
 */
struct ai_sysfs_caps {
	bool present;		/* the driver exposes the attributes (rows at least) */
	uint32_t rows, cols, pes, accumulators, hw_queues, clock_mhz, isa_version;
	uint32_t hw_version;	/* VERSION register */
	uint64_t sram_bytes;
};

/* Fills c from <sysfs_root>/bus/pci/devices/<bdf>/; missing or malformed attributes read as 0. */
void ai_sysfs_caps_read(const char *sysfs_root, const char *bdf, struct ai_sysfs_caps *c);

/*
 * Maps a device path ("/dev/accel/accel0", "/dev/accel0" symlinks resolved by the caller, or "accel0")
 * to the PCI BDF through <sysfs_root>/class/accel/accelN/device. Returns 0 and fills bdf, -ENOENT if there
 * is no such accel device, -ENODEV if it is not a PCI device, -EINVAL for a name that is not accelN.
 */
int ai_node_to_bdf(const char *sysfs_root, const char *accel_name, char *bdf, size_t len);

/* True if s looks like a PCI address "DDDD:BB:DD.F" (domain optional, as lspci accepts). */
bool ai_is_bdf(const char *s);
/* Normalises "00:01.0" to "0000:00:01.0" in out; returns false if s is not a BDF. */
bool ai_normalise_bdf(const char *s, char *out, size_t len);

/*
 * Picks the device named by spec among devs: a PCI address ("0000:00:01.0" or "00:01.0"), an accel
 * device path ("/dev/accel/accel0", symlinks such as /dev/accel0 are resolved) or a bare "accel0".
 * Returns the index, or -ENOENT (no such tnpu device) / -EINVAL (spec is neither) with err filled.
 */
int ai_select_device(const char *sysfs_root, const char *spec, const struct ai_pci_dev *devs, size_t n,
		     char *err, size_t errlen);

/* ---- query.c ------------------------------------------------------------------------------- */

/* Opens path read-write (O_CLOEXEC); returns the fd or a negative errno. */
int ai_open_accel(const char *path);
/* DRM_TNPU_QUERY_CAPS into caps (zero-filled first). Returns 0 or a negative errno. */
int ai_query_caps(int fd, struct drm_tnpu_caps *caps);
/*
 * DRM_TNPU_QUERY_COUNTERS into c (zero-filled first). Returns 0 or a negative errno; *answer_size
 * (may be NULL) gets the size of the kernel's answer struct (shorter from older drivers).
 */
int ai_query_counters(int fd, struct drm_tnpu_counters *c, uint32_t *answer_size);
/* Driver name and version from DRM_IOCTL_VERSION ("tnpu", "1.0.0 20261121"); 0 or -errno. */
int ai_drm_version(int fd, char *name, size_t name_len, char *version, size_t version_len);

/* ---- format.c ------------------------------------------------------------------------------ */

/* "16 KiB", "1 MiB", "1.5 GiB", "512 B": binary units, at most one decimal, exact values unadorned. */
void ai_format_size(uint64_t bytes, char *out, size_t len);
/* PCIe speed code -> "2.5 GT/s" .. "64 GT/s"; "unknown" for other codes. */
const char *ai_link_speed_str(unsigned int code);
/* Parses a sysfs link speed ("8.0 GT/s PCIe", "2.5 GT/s") into a speed code, 0 if unknown. */
unsigned int ai_link_speed_code(const char *sysfs_text);
/* "int8 fp32" (space separated, known DRM_TNPU_DTYPE_* bits, unknown bits as "0x..."), "none" if 0. */
void ai_format_dtypes(uint32_t dtypes, char *out, size_t len);
/* "zero-skip sparse ..." for CAP_FEATURES bits (unknown bits as "0x..."), "none" if 0. */
void ai_format_features(uint32_t features, char *out, size_t len);
/*
 * 4.096e12, "MAC/s" -> "4.1 TMAC/s"; 12, "" -> "12" (SI prefixes k..E, one decimal below 100, integers
 * below 1000 without decimals); "-" for NAN.
 */
void ai_format_si(double v, const char *unit, char *out, size_t len);
/* snake_case name of device counter i (enum tnpu_counter: "total_cycles", ...), NULL if unnamed. */
const char *ai_counter_name(unsigned int i);
/* "processing accelerator" for class 0x12, else "class 0xCC". */
const char *ai_class_name(uint32_t class_code);

/* One QUERY_COUNTERS sample and the monotonic time it was taken at. */
struct ai_sample {
	double t;			/* seconds, CLOCK_MONOTONIC */
	struct drm_tnpu_counters c;
	unsigned int num_rings;		/* valid c.rings[] entries: ai_counters_rings() */
};

/*
 * Entries of c->rings the kernel filled in, given the size of its answer: 0 for a driver older than
 * per-ring statistics (short answer), else c->num_rings capped by the answer and DRM_TNPU_MAX_RINGS.
 */
unsigned int ai_counters_rings(const struct drm_tnpu_counters *c, uint32_t answer_size);

/* Per-ring rates over an interval (struct drm_tnpu_ring_stats deltas). */
struct ai_ring_rates {
	double jobs_per_s;		/* completed (ok) jobs of the ring per second */
	double failed_per_s;
	uint64_t done;			/* deltas over the interval */
	uint64_t failed;
	uint64_t timedout;
	double busy;			/* delta busy_ns / interval: 0..1, share of wall time the ring had work */
};

/* Rates over the interval between two samples; fields are NAN when not computable. */
struct ai_rates {
	double dt;			/* seconds between the samples */
	double jobs_per_s;		/* completed (ok) jobs per second */
	double submitted_per_s;
	double failed_per_s;
	uint64_t failed;		/* deltas over the interval */
	uint64_t timedout;
	uint64_t hw_errors;
	uint64_t mmu_faults;
	uint64_t resets;
	double busy;			/* device cycles / (clock_mhz * 1e6 * dt): model time per wall time */
	double compute_util;		/* COMPUTE_CYCLES / TOTAL_CYCLES of the jobs that completed */
	double load_util;		/* LOAD_CYCLES / TOTAL_CYCLES */
	double store_util;		/* STORE_CYCLES / TOTAL_CYCLES */
	double macs_per_s;		/* effective MACs per wall second */
	double h2d_bytes_per_s;
	double d2h_bytes_per_s;
	bool reset_seen;		/* a device counter went backwards (device reset): deltas restarted */
	unsigned int num_rings;		/* rows in ring[]: rings in both samples, 0 on older drivers */
	struct ai_ring_rates ring[DRM_TNPU_MAX_RINGS];
};

/*
 * Computes rates from prev to cur. clock_mhz may be 0 (busy is then NAN). A driver counter that went
 * backwards (the driver was reloaded) or a device counter that went backwards (device reset / PERF_CTRL
 * clear) is treated as restarted from 0, and reset_seen is set. Per-ring rates cover the rings both
 * samples have (prev->num_rings, cur->num_rings).
 */
void ai_compute_rates(const struct ai_sample *prev, const struct ai_sample *cur, uint32_t clock_mhz,
		      struct ai_rates *r);

/* Copies src into dst (size len), always NUL-terminated; stops at the first newline. */
void ai_strlcpy_line(char *dst, const char *src, size_t len);

/* ---- islands.c ----------------------------------------------------------------------------- */

struct json_writer;

/*
 * DRM_TNPU_QUERY_ISLANDS into isl (zero-filled first). Returns 0, a negative errno from the ioctl
 * (-EINVAL from a driver without islands support), or -EPROTO for an answer with no island.
 */
int ai_query_islands(int fd, struct drm_tnpu_islands *isl);
/* isl->count capped at DRM_TNPU_MAX_ISLANDS (the entries the struct can hold). */
unsigned int ai_islands_count(const struct drm_tnpu_islands *isl);
/* "2 islands, 4 rings per job, ring memory 64 KiB" */
void ai_format_islands_summary(const struct drm_tnpu_islands *isl, char *out, size_t len);
/* "rows 0-1 (2), int8 fp32, clock /2 (250 MHz), SRAM 0x00000000 + 512 KiB"; clock_mhz 0 omits the MHz. */
void ai_format_island(const struct drm_tnpu_island *is, uint32_t clock_mhz, char *out, size_t len);
/*
 * Writes the members "islands" (array of {first_row, rows, dtypes, clkdiv, sram_base, sram_bytes}),
 * "rings" and "ring_mem_bytes" into the current JSON object; all three null when isl is NULL.
 */
void ai_json_islands(struct json_writer *w, const struct drm_tnpu_islands *isl);

/* ---- clients.c ----------------------------------------------------------------------------- */

#define AI_MAX_CLIENTS 256

/* One open file of the device (a DRM client), from the fdinfo of one of the fds that hold it. */
struct ai_client {
	uint64_t id;			/* drm-client-id */
	int pid;			/* first process found holding it */
	char comm[32];			/* /proc/<pid>/comm */
	uint32_t rings;			/* bit q: drm-engine-ring<q> present */
	uint64_t busy_ns[DRM_TNPU_MAX_RINGS];
	uint64_t cycles[DRM_TNPU_MAX_RINGS];
	uint64_t mem_total, mem_resident;	/* bytes (drm-total-memory, drm-resident-memory) */
};

/* Parses one fdinfo text; 0 if it is a tnpu DRM client (drm-driver: tnpu), else -ENOENT. */
int ai_fdinfo_parse(const char *text, struct ai_client *c);
/*
 * Every client of the character device @rdev: scans <proc_root>/<pid>/fd/ (skipping @skip_pid),
 * one entry per drm-client-id. Returns the number found (at most @max) or -errno.
 */
int ai_clients_scan(const char *proc_root, unsigned long long rdev, int skip_pid, struct ai_client *out,
		    size_t max);
/* The entry of @id in @list, or NULL. */
const struct ai_client *ai_client_find(const struct ai_client *list, size_t n, uint64_t id);

#endif
