/*
 * tnpu — PCIe neural-network accelerator (walking-skeleton stub).
 *
 * Exposes the PCI identity and BAR0 with the ID/VERSION registers so that the VM, the driver build and the
 * test runner can be brought up; the command processor, MMU and PE array arrive with the golden model.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/module.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/pcie.h"
#include "qom/object.h"

#define TYPE_TNPU "tnpu"
OBJECT_DECLARE_SIMPLE_TYPE(TnpuState, TNPU)

#define TNPU_VENDOR_ID   0x1234
#define TNPU_DEVICE_ID   0x4e50
#define TNPU_CLASS       0x1200 /* processing accelerator */
#define TNPU_REVISION    0x01
#define TNPU_BAR0_SIZE   0x10000

#define TNPU_REG_ID      0x0000
#define TNPU_REG_VERSION 0x0004
#define TNPU_ID_VALUE    0x554E5054 /* "TNPU" */
#define TNPU_VERSION     0x00000100

struct TnpuState {
    PCIDevice parent_obj;
    MemoryRegion mmio;
};

static uint64_t tnpu_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    switch (addr) {
    case TNPU_REG_ID:
        return TNPU_ID_VALUE;
    case TNPU_REG_VERSION:
        return TNPU_VERSION;
    default:
        return 0;
    }
}

static void tnpu_mmio_write(void *opaque, hwaddr addr, uint64_t val,
                            unsigned size)
{
    qemu_log_mask(LOG_GUEST_ERROR, "tnpu: write to 0x%" HWADDR_PRIx
                  " ignored (stub device)\n", addr);
}

static const MemoryRegionOps tnpu_mmio_ops = {
    .read = tnpu_mmio_read,
    .write = tnpu_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 8 },
    .impl = { .min_access_size = 4, .max_access_size = 4 },
};

static void tnpu_realize(PCIDevice *pdev, Error **errp)
{
    TnpuState *s = TNPU(pdev);

    if (pcie_endpoint_cap_init(pdev, 0x80) < 0) {
        error_setg(errp, "tnpu: cannot add the PCIe endpoint capability");
        return;
    }
    memory_region_init_io(&s->mmio, OBJECT(s), &tnpu_mmio_ops, s,
                          "tnpu-mmio", TNPU_BAR0_SIZE);
    pci_register_bar(pdev, 0, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->mmio);
}

static void tnpu_exit(PCIDevice *pdev)
{
    pcie_cap_exit(pdev);
}

static void tnpu_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = tnpu_realize;
    k->exit = tnpu_exit;
    k->vendor_id = TNPU_VENDOR_ID;
    k->device_id = TNPU_DEVICE_ID;
    k->class_id = TNPU_CLASS;
    k->revision = TNPU_REVISION;
    dc->desc = "tnpu neural-network accelerator";
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
}

static const TypeInfo tnpu_info = {
    .name = TYPE_TNPU,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(TnpuState),
    .class_init = tnpu_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { }
    },
};

static void tnpu_register_types(void)
{
    type_register_static(&tnpu_info);
}

type_init(tnpu_register_types)
