# Devices of the minimal QEMU built for the APST system test: the two PC
# machines (q35 for the system test, i440fx/PIIX4 for S3 on the "pc" machine),
# virtio-blk for the guest's root disk and the NVMe controller under test.
CONFIG_Q35=y
CONFIG_I440FX=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_BLK=y
CONFIG_NVME_PCI=y
# The HPET: without it the guest's clocksource is acpi_pm with the LAPIC
# timer, and after an S3 resume its clock stands still (jiffies and printk
# time frozen, the first sleep never returns). With it, as in Debian's own
# qemu-system-x86, the guest resumes and runs on.
CONFIG_HPET=y
