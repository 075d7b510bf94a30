// SPDX-License-Identifier: MIT
/*
 * pci_enum.c — find tnpu functions with libpci and decode what software needs to see of them.
 *
 * libpci reports fatal problems (no access method, an unreadable sysfs file) through pacc->error, which
 * must not return; its default handler exits the process. We turn them into an error return with a
 * setjmp/longjmp pair instead — the only file-scope mutable state of the tools, used by one call at a
 * time (the tools are single-threaded).
 * Without root, Linux exposes only the first 64 bytes of config space: capabilities (MSI-X, PCIe) are then
 * unreadable, so MSI-X is reported as unknown and the link comes from the sysfs link attributes.
 * Only the sysfs access method is used: libpci's fallbacks include raw port I/O (intel-conf1), which a tool
 * that merely lists devices has no business doing as root. No /sys/bus/pci (a container) = no devices.
 */
#include "accel_tools.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pci/pci.h>

#define MSIX_FLAGS_OFF 2	/* Message Control, PCI spec 6.8.2.3 */

static jmp_buf pci_fatal_jmp;
static char pci_fatal_msg[256];

static void PCI_NONRET pci_fatal(char *msg, ...)
{
	va_list ap;

	va_start(ap, msg);
	vsnprintf(pci_fatal_msg, sizeof(pci_fatal_msg), msg, ap);
	va_end(ap);
	longjmp(pci_fatal_jmp, 1);
}

static void pci_quiet(char *msg, ...)
{
	(void)msg;	/* short config reads of non-root users land here: expected, not news */
}

static void decode_bars(struct pci_dev *d, struct ai_pci_dev *out)
{
	for (int i = 0; i < AI_NUM_BARS; i++) {
		pciaddr_t raw = d->base_addr[i];
		struct ai_bar *b = &out->bar[i];

		b->size = (d->known_fields & PCI_FILL_SIZES) ? d->size[i] : 0;
		if (!raw && !b->size)
			continue;
		b->present = true;
		b->io = raw & PCI_BASE_ADDRESS_SPACE_IO;
		if (b->io) {
			b->addr = raw & PCI_ADDR_IO_MASK;
		} else {
			b->addr = raw & PCI_ADDR_MEM_MASK;
			b->mem64 = (raw & 0x6) == PCI_BASE_ADDRESS_MEM_TYPE_64;
			b->prefetch = raw & PCI_BASE_ADDRESS_MEM_PREFETCH;
		}
	}
}

static unsigned int sysfs_uint(const char *bdf, const char *attr)
{
	char path[256], buf[64];
	FILE *f;
	unsigned int v = 0;

	snprintf(path, sizeof(path), "%s/bus/pci/devices/%s/%s", ACCEL_TOOLS_SYSFS, bdf, attr);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f) && sscanf(buf, "%u", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

static unsigned int sysfs_speed(const char *bdf, const char *attr)
{
	char path[256], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/bus/pci/devices/%s/%s", ACCEL_TOOLS_SYSFS, bdf, attr);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return ai_link_speed_code(buf);
}

static void decode_caps(struct pci_dev *d, struct ai_pci_dev *out)
{
	struct pci_cap *cap;

	out->msix_vectors = -1;
	out->msix_bar = -1;
	out->link.known = false;
	if (out->config_full) {
		cap = pci_find_cap(d, PCI_CAP_ID_MSIX, PCI_CAP_NORMAL);
		if (cap) {
			u16 flags = pci_read_word(d, cap->addr + MSIX_FLAGS_OFF);

			out->msix_vectors = (flags & PCI_MSIX_TABSIZE) + 1;
			out->msix_enabled = flags & PCI_MSIX_ENABLE;
			out->msix_bar = pci_read_long(d, cap->addr + PCI_MSIX_TABLE) & PCI_MSIX_BIR;
		} else {
			out->msix_vectors = 0;
		}
		cap = pci_find_cap(d, PCI_CAP_ID_EXP, PCI_CAP_NORMAL);
		if (cap) {
			u16 flags = pci_read_word(d, cap->addr + PCI_EXP_FLAGS);
			u32 lnkcap = pci_read_long(d, cap->addr + PCI_EXP_LNKCAP);
			u16 lnksta = pci_read_word(d, cap->addr + PCI_EXP_LNKSTA);

			out->link.known = true;
			/* RCiEPs have no link: their link registers are reserved (PCIe 6.0 §7.5.3). */
			out->link.integrated = ((flags & PCI_EXP_FLAGS_TYPE) >> 4) == PCI_EXP_TYPE_ROOT_INT_EP;
			if (!out->link.integrated) {
				out->link.max_speed = lnkcap & PCI_EXP_LNKCAP_SPEED;
				out->link.max_width = (lnkcap & PCI_EXP_LNKCAP_WIDTH) >> 4;
				out->link.cur_speed = lnksta & PCI_EXP_LNKSTA_SPEED;
				out->link.cur_width = (lnksta & PCI_EXP_LNKSTA_WIDTH) >> 4;
			}
			return;
		}
	}
	/* Not root, or no PCIe capability: the kernel's own reading of the link, if it has one. */
	out->link.cur_speed = sysfs_speed(out->bdf, "current_link_speed");
	out->link.max_speed = sysfs_speed(out->bdf, "max_link_speed");
	out->link.cur_width = sysfs_uint(out->bdf, "current_link_width");
	out->link.max_width = sysfs_uint(out->bdf, "max_link_width");
	out->link.known = out->link.cur_speed || out->link.cur_width;
}

static int bdf_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ai_pci_dev *)a)->bdf, ((const struct ai_pci_dev *)b)->bdf);
}

static void fill_one(struct pci_dev *d, struct ai_pci_dev *out)
{
	u8 probe[4];

	memset(out, 0, sizeof(*out));
	snprintf(out->bdf, sizeof(out->bdf), "%04x:%02x:%02x.%x", (unsigned int)d->domain & 0xffff,
		 d->bus, d->dev, d->func);
	/* Capabilities live above the 64 bytes every user may read. */
	out->config_full = pci_read_block(d, 0x40, probe, sizeof(probe));
	pci_fill_info(d, PCI_FILL_IDENT | PCI_FILL_CLASS | PCI_FILL_CLASS_EXT | PCI_FILL_SUBSYS |
			 PCI_FILL_BASES | PCI_FILL_SIZES |
			 (out->config_full ? PCI_FILL_CAPS | PCI_FILL_EXT_CAPS : 0));
	out->vendor_id = d->vendor_id;
	out->device_id = d->device_id;
	out->subsys_vendor_id = d->subsys_vendor_id;
	out->subsys_id = d->subsys_id;
	out->class_code = ((uint32_t)d->device_class << 8) | d->prog_if;
	out->revision = d->rev_id;
	decode_bars(d, out);
	decode_caps(d, out);
}

int ai_pci_enumerate(struct ai_pci_dev **devs, size_t *count, char *err, size_t errlen)
{
	struct pci_access *volatile pacc = NULL;
	struct ai_pci_dev *volatile list = NULL;
	volatile size_t n = 0;

	*devs = NULL;
	*count = 0;
	if (access(ACCEL_TOOLS_SYSFS "/bus/pci/devices", F_OK))
		return 0;
	if (setjmp(pci_fatal_jmp)) {
		/* libpci's state is unknown after a fatal error: leak it rather than touch it. */
		snprintf(err, errlen, "libpci: %s", pci_fatal_msg);
		free(list);
		return -EIO;
	}
	pacc = pci_alloc();
	if (!pacc) {
		snprintf(err, errlen, "libpci: out of memory");
		return -ENOMEM;
	}
	pacc->error = pci_fatal;
	pacc->warning = pci_quiet;
	pacc->debug = pci_quiet;
	pacc->method = PCI_ACCESS_SYS_BUS_PCI;
	pci_init(pacc);
	pci_scan_bus(pacc);
	for (struct pci_dev *d = pacc->devices; d; d = d->next) {
		pci_fill_info(d, PCI_FILL_IDENT);
		if (d->vendor_id != TNPU_PCI_VENDOR_ID || d->device_id != TNPU_PCI_DEVICE_ID)
			continue;
		struct ai_pci_dev *grown = realloc(list, (n + 1) * sizeof(*grown));

		if (!grown) {
			free(list);
			pci_cleanup(pacc);
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		list = grown;
		fill_one(d, &list[n]);
		n++;
	}
	pci_cleanup(pacc);
	if (n > 1)
		qsort(list, n, sizeof(*list), bdf_cmp);
	*devs = list;
	*count = n;
	return 0;
}
