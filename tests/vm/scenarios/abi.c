// SPDX-License-Identifier: GPL-2.0
/*
 * abi: the handshake a library does first.  /dev/nxquota is a misc
 * character device the module creates root-only (0600; the udev rule
 * gives it a group); sysfs abi_version and NXQ_IOC_VERSION agree with the
 * header; the features cover what this ABI version defines and nothing
 * unknown; the size bits of the command number are ignored; a larger
 * caller's zero tail is accepted and left alone.
 */
#include "scen.h"

/* Every feature bit the header defines; a new one must be added here. */
#define FEAT_KNOWN (NXQ_FEAT_HOLDERS | NXQ_FEAT_CHARGE | NXQ_FEAT_STATUS | \
		    NXQ_FEAT_CHARGE_WAIT | NXQ_FEAT_TICKETS | \
		    NXQ_FEAT_STATUS_V1 | NXQ_FEAT_CHARGE_PROBE)

int main(int argc, char **argv)
{
	static unsigned char big[4096];
	struct nxq_version v, *bv = (struct nxq_version *)big;
	struct stat st;
	uint64_t abi;
	size_t i;
	int fd;

	sc_init(argc, argv);
	CHECK(stat(SC_DEVNODE, &st) == 0);
	CHECK(S_ISCHR(st.st_mode));
	CHECK_EQ(st.st_mode & 07777, 0600);
	CHECK_EQ(sc_get_u64_at(__FILE__, __LINE__, SC_SYSFS "/abi_version"),
		 NXQ_ABI_VERSION);
	CHECK(sc_exists(SC_DEVICES "/register"));
	CHECK(sc_exists(SC_DEVICES "/unregister"));

	fd = sc_open();
	CHECK_OK(fd);
	CHECK_OK(sc_version(fd, &v));
	CHECK_EQ(v.size, sizeof(v));
	CHECK_EQ(v.abi_version, NXQ_ABI_VERSION);
	CHECK_EQ(v.features & (NXQ_FEAT_HOLDERS | NXQ_FEAT_CHARGE |
			       NXQ_FEAT_STATUS),
		 NXQ_FEAT_HOLDERS | NXQ_FEAT_CHARGE | NXQ_FEAT_STATUS);
	CHECK_EQ(v.features & ~FEAT_KNOWN, 0);
	sc_log("abi %u features %#llx", v.abi_version,
	       (unsigned long long)v.features);

	/* The size bits of the command are ignored: the size field rules. */
	memset(&v, 0, sizeof(v));
	v.size = sizeof(v);
	CHECK_OK(sc_ioctl(fd, _IOC(_IOC_READ | _IOC_WRITE, NXQ_IOC_MAGIC, 0x00, 0),
			  &v));
	CHECK_EQ(v.abi_version, NXQ_ABI_VERSION);
	memset(&v, 0, sizeof(v));
	v.size = sizeof(v);
	CHECK_OK(sc_ioctl(fd, _IOC(_IOC_READ | _IOC_WRITE, NXQ_IOC_MAGIC, 0x00,
				   200), &v));
	CHECK_EQ(v.abi_version, NXQ_ABI_VERSION);

	/* A caller built with a bigger struct: zero tail accepted, untouched. */
	memset(big, 0, sizeof(big));
	bv->size = sizeof(big);
	CHECK_OK(sc_ioctl(fd, NXQ_IOC_VERSION, big));
	CHECK_EQ(bv->abi_version, NXQ_ABI_VERSION);
	CHECK_EQ(bv->size, sizeof(big));
	for (i = sizeof(v); i < sizeof(big); i++)
		if (big[i])
			FAIL("byte %zu past the kernel's struct written: %#x",
			     i, big[i]);

	/* Two opens are two independent files. */
	abi = v.abi_version;
	CHECK_OK(sc_close(fd));
	fd = sc_open();
	CHECK_OK(fd);
	CHECK_OK(sc_version(fd, &v));
	CHECK_EQ(v.abi_version, abi);
	CHECK_OK(sc_close(fd));
	PASS();
}
