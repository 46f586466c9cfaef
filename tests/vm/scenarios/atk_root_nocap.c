// SPDX-License-Identifier: GPL-2.0
/*
 * atk_root_nocap: uid 0 without CAP_SYS_ADMIN -- a container's root whose
 * runtime dropped it, with /sys writable -- changes nothing through the
 * module's sysfs files.
 *
 * The writable files are root's, mode 0200 or 0600, so uid 0 passes the
 * mode check with no capability at all: only each store's
 * capable(CAP_SYS_ADMIN) stands between it and the ledger.  A process
 * that stays uid 0 and drops CAP_SYS_ADMIN (bounding, effective,
 * permitted, inheritable) writes every file that changes something:
 * devices/register and unregister; the device's capacity,
 * ticket_timeout_ms, default_max, set_budget and clear_budget; a node's
 * max, min and kill_on_ignore.  Each write gets EPERM, and the device,
 * its settings and the node read as before.  Root, with every
 * capability, writes the same files.
 */
#include "scen.h"
#include "tenant.h"

#define KEY	"t-arn"
#define EVIL	"t-arn-evil"
#define CG	"/atk-rn"
#define M	SC_MIB

struct nocap_file {
	const char *what;	/* path: "dev:ATTR", "node:ATTR" or a full path */
	const char *text;
};

static const struct nocap_file nocap_files[] = {
	{ SC_DEVICES "/register", EVIL " 1M" },
	{ SC_DEVICES "/unregister", KEY },
	{ "dev:capacity", "1G" },
	{ "dev:ticket_timeout_ms", "5000" },
	{ "dev:default_max", "1G" },
	{ "dev:set_budget", CG " max=1G min=0" },
	{ "dev:clear_budget", CG },
	{ "node:max", "1G" },
	{ "node:min", "0" },
	{ "node:kill_on_ignore", "1" },
};

static const char *nocap_path(const struct nocap_file *f, uint64_t id)
{
	if (!strncmp(f->what, "dev:", 4))
		return sc_dev_path(KEY, f->what + 4);
	if (!strncmp(f->what, "node:", 5))
		return sc_node_path(KEY, id, f->what + 5);
	return f->what;
}

/* What a refused write must leave as it was. */
struct nocap_state {
	uint64_t capacity, timeout, default_max, max, min, kill;
};

static struct nocap_state nocap_read(uint64_t id)
{
	struct nocap_state s = {
		.capacity = DEV_U64(KEY, "capacity"),
		.timeout = DEV_U64(KEY, "ticket_timeout_ms"),
		.default_max = DEV_U64(KEY, "default_max"),
		.max = NODE_U64(KEY, id, "max"),
		.min = NODE_U64(KEY, id, "min"),
		.kill = NODE_U64(KEY, id, "kill_on_ignore"),
	};

	return s;
}

FIXTURE(nocap) {
	uint64_t id;			/* CG's node */
	struct nocap_state before;
};

/* The module's sysfs files: the module's variant only. */
FIXTURE_VARIANT(nocap) {};

FIXTURE_VARIANT_ADD(nocap, module) {};

FIXTURE_SETUP(nocap)
{
	ASSERT_OK(sc_dev_register(KEY, "100M"));
	ASSERT_OK(sc_write(sc_dev_path(KEY, "default_max"), "0"));
	ASSERT_OK(sc_cg_create(CG));
	ASSERT_OK(sc_set_budget(KEY, CG " max=10M min=2M"));
	self->id = CG_ID(CG);
	self->before = nocap_read(self->id);
}

FIXTURE_TEARDOWN(nocap)
{
	if (sc_dev_exists(EVIL))
		ASSERT_OK(sc_dev_unregister(EVIL));
	if (sc_dev_exists(KEY))
		ASSERT_OK(sc_dev_unregister(KEY));
	ASSERT_OK(sc_cg_remove(CG));
}

/* Stay uid 0, lose CAP_SYS_ADMIN for good, write each file: EPERM. */
static int nocap_writer(void *arg)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	uint64_t id = *(uint64_t *)arg;
	int i = CAP_TO_INDEX(CAP_SYS_ADMIN);
	uint32_t bit = CAP_TO_MASK(CAP_SYS_ADMIN);
	size_t k;

	if (prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0) < 0)
		FAIL("PR_CAPBSET_DROP: %s", sc_errname(errno));
	if (syscall(SYS_capget, &h, d) < 0)
		FAIL("capget: %s", sc_errname(errno));
	d[i].effective &= ~bit;
	d[i].permitted &= ~bit;
	d[i].inheritable &= ~bit;
	if (syscall(SYS_capset, &h, d) < 0)
		FAIL("capset: %s", sc_errname(errno));
	ASSERT_EQ(geteuid(), 0);
	for (k = 0; k < sizeof(nocap_files) / sizeof(nocap_files[0]); k++) {
		const char *p = nocap_path(&nocap_files[k], id);
		int rc = sc_write(p, nocap_files[k].text);

		if (rc != -EPERM)
			FAIL("uid 0 without CAP_SYS_ADMIN writing \"%s\" to %s: "
			     "%s (expected EPERM)", nocap_files[k].text, p,
			     sc_rcname(rc));
	}
	return 0;
}

TEST_F(nocap, every_write_refused_nothing_changed)
{
	struct nocap_state now;

	TN_RUN(nocap_writer, &self->id);
	ASSERT_TRUE(sc_dev_exists(KEY));
	ASSERT_FALSE(sc_dev_exists(EVIL));
	ASSERT_TRUE(sc_node_exists(KEY, self->id));
	now = nocap_read(self->id);
	ASSERT_EQ(now.capacity, self->before.capacity);
	ASSERT_EQ(now.timeout, self->before.timeout);
	ASSERT_EQ(now.default_max, self->before.default_max);
	ASSERT_EQ(now.max, self->before.max);
	ASSERT_EQ(now.min, self->before.min);
	ASSERT_EQ(now.kill, self->before.kill);
	sc_log("uid 0 without CAP_SYS_ADMIN: EPERM from %zu files, nothing "
	       "changed", sizeof(nocap_files) / sizeof(nocap_files[0]));
}

/* The same writes as root succeed: the refusals above are the capability's. */
TEST_F(nocap, root_writes_each)
{
	size_t k;

	for (k = 0; k < sizeof(nocap_files) / sizeof(nocap_files[0]); k++) {
		const struct nocap_file *f = &nocap_files[k];

		if (!strcmp(f->what, SC_DEVICES "/unregister"))
			continue;	/* last, below: it takes the node too */
		ASSERT_OK(sc_write(nocap_path(f, self->id), f->text));
		if (!strcmp(f->what, SC_DEVICES "/register"))
			ASSERT_TRUE(sc_dev_exists(EVIL));
		if (!strcmp(f->what, "dev:clear_budget")) {
			ASSERT_FALSE(sc_node_exists(KEY, self->id));
			ASSERT_OK(sc_set_budget(KEY, CG " max=10M"));
		}
	}
	ASSERT_EQ(DEV_U64(KEY, "capacity"), SC_GIB);
	ASSERT_EQ(DEV_U64(KEY, "ticket_timeout_ms"), 5000);
	ASSERT_EQ(NODE_U64(KEY, self->id, "max"), SC_GIB);
	ASSERT_EQ(NODE_U64(KEY, self->id, "kill_on_ignore"), 1);
	ASSERT_OK(sc_write(SC_DEVICES "/unregister", KEY));
	ASSERT_FALSE(sc_dev_exists(KEY));
}

TEST_HARNESS_MAIN
