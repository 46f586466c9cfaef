// SPDX-License-Identifier: GPL-2.0
/*
 * abi: the handshake a library does first.  /dev/nxquota is a misc
 * character device the module creates root-only (0600; the udev rule
 * gives it a group); sysfs abi_version and NXQ_IOC_VERSION agree with the
 * header; the features cover what this ABI version defines and nothing
 * unknown; the size bits of the command number are ignored; a larger
 * caller's zero tail is accepted and left alone.
 *
 * Written with the harness's fixtures (harness.h): each TEST_F gets a
 * fresh file of its own, closed (and the close checked) by the teardown.
 * About the module's own node and ioctl: its only variant is the
 * module's (against nxquotad every test is reported skipped, and so is
 * the program).
 */
#include "scen.h"

/* Every feature bit the header defines; a new one must be added here. */
#define FEAT_KNOWN (NXQ_FEAT_HOLDERS | NXQ_FEAT_CHARGE | NXQ_FEAT_STATUS | \
		    NXQ_FEAT_CHARGE_WAIT | NXQ_FEAT_TICKETS | \
		    NXQ_FEAT_STATUS_V1 | NXQ_FEAT_CHARGE_PROBE | \
		    NXQ_FEAT_CHARGE_V1)

FIXTURE(abi) {
	int fd;
	struct nxq_version v;
};

FIXTURE_VARIANT(abi) {};

FIXTURE_VARIANT_ADD(abi, module) {};

FIXTURE_SETUP(abi)
{
	self->fd = sc_open();
	ASSERT_OK(self->fd);
}

FIXTURE_TEARDOWN(abi)
{
	ASSERT_OK(sc_close(self->fd));
}

TEST_F(abi, devnode_and_sysfs)
{
	struct stat st;

	ASSERT_EQ(stat(SC_DEVNODE, &st), 0);
	ASSERT_TRUE(S_ISCHR(st.st_mode));
	ASSERT_EQ(st.st_mode & 07777, 0600);
	ASSERT_EQ(sc_get_u64_at(__FILE__, __LINE__, SC_SYSFS "/abi_version"),
		  NXQ_ABI_VERSION);
	ASSERT_TRUE(sc_exists(SC_DEVICES "/register"));
	ASSERT_TRUE(sc_exists(SC_DEVICES "/unregister"));
}

TEST_F(abi, version)
{
	struct nxq_version *v = &self->v;

	ASSERT_OK(sc_version(self->fd, v));
	ASSERT_EQ(v->size, sizeof(*v));
	ASSERT_EQ(v->abi_version, NXQ_ABI_VERSION);
	ASSERT_EQ(v->features & (NXQ_FEAT_HOLDERS | NXQ_FEAT_CHARGE |
				 NXQ_FEAT_STATUS),
		  NXQ_FEAT_HOLDERS | NXQ_FEAT_CHARGE | NXQ_FEAT_STATUS);
	ASSERT_EQ(v->features & ~FEAT_KNOWN, 0);
	sc_log("abi %u features %#llx", v->abi_version,
	       (unsigned long long)v->features);
}

/* The size bits of the command are ignored: the size field rules. */
TEST_F(abi, size_bits_ignored)
{
	struct nxq_version *v = &self->v;

	v->size = sizeof(*v);
	ASSERT_OK(sc_ioctl(self->fd, _IOC(_IOC_READ | _IOC_WRITE,
					  NXQ_IOC_MAGIC, 0x00, 0), v));
	ASSERT_EQ(v->abi_version, NXQ_ABI_VERSION);
	memset(v, 0, sizeof(*v));
	v->size = sizeof(*v);
	ASSERT_OK(sc_ioctl(self->fd, _IOC(_IOC_READ | _IOC_WRITE,
					  NXQ_IOC_MAGIC, 0x00, 200), v));
	ASSERT_EQ(v->abi_version, NXQ_ABI_VERSION);
}

/* A caller built with a bigger struct: zero tail accepted, untouched. */
TEST_F(abi, larger_struct)
{
	static unsigned char big[4096];
	struct nxq_version *bv = (struct nxq_version *)big;
	size_t i;

	bv->size = sizeof(big);
	ASSERT_OK(sc_ioctl(self->fd, NXQ_IOC_VERSION, big));
	ASSERT_EQ(bv->abi_version, NXQ_ABI_VERSION);
	ASSERT_EQ(bv->size, sizeof(big));
	for (i = sizeof(self->v); i < sizeof(big); i++)
		if (big[i])
			FAIL("byte %zu past the kernel's struct written: %#x",
			     i, big[i]);
}

/* Two opens are two independent files. */
TEST_F(abi, two_files)
{
	struct nxq_version v2;
	int fd2;

	ASSERT_OK(sc_version(self->fd, &self->v));
	fd2 = sc_open();
	ASSERT_OK(fd2);
	ASSERT_OK(sc_version(fd2, &v2));
	ASSERT_EQ(v2.abi_version, self->v.abi_version);
	ASSERT_OK(sc_close(fd2));
	ASSERT_OK(sc_version(self->fd, &self->v));
	ASSERT_EQ(self->v.abi_version, NXQ_ABI_VERSION);
}

TEST_HARNESS_MAIN
