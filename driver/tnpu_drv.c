// SPDX-License-Identifier: GPL-2.0-only
/*
 * tnpu — PCIe neural-network accelerator: walking-skeleton driver.
 *
 * Binds to the device, maps BAR0 and checks the identification register. The DRM accel device, memory
 * management and job submission arrive with the full driver.
 */
#include <linux/module.h>
#include <linux/pci.h>

#define TNPU_PCI_VENDOR_ID	0x1234
#define TNPU_PCI_DEVICE_ID	0x4e50
#define TNPU_REG_ID		0x0000
#define TNPU_REG_VERSION	0x0004
#define TNPU_ID_VALUE		0x554e5054	/* "TNPU" */

static int tnpu_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	void __iomem *regs;
	u32 ident, version;
	int ret;

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	regs = pcim_iomap(pdev, 0, 0);
	if (!regs)
		return -ENOMEM;
	ident = ioread32(regs + TNPU_REG_ID);
	version = ioread32(regs + TNPU_REG_VERSION);
	if (ident != TNPU_ID_VALUE) {
		dev_err(&pdev->dev, "unexpected ID register 0x%08x\n", ident);
		return -ENODEV;
	}
	dev_info(&pdev->dev, "tnpu version 0x%08x\n", version);
	return 0;
}

static const struct pci_device_id tnpu_pci_ids[] = {
	{ PCI_DEVICE(TNPU_PCI_VENDOR_ID, TNPU_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, tnpu_pci_ids);

static struct pci_driver tnpu_pci_driver = {
	.name = "tnpu",
	.id_table = tnpu_pci_ids,
	.probe = tnpu_probe,
};
module_pci_driver(tnpu_pci_driver);

MODULE_DESCRIPTION("tnpu neural-network accelerator");
MODULE_LICENSE("GPL");
