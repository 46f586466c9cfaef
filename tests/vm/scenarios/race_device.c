// SPDX-License-Identifier: GPL-2.0
/*
 * race_device: a device registered while it is being unregistered, under
 * the same key.
 *
 * For NXQ_RACE_SECS seconds (default 5), at once:
 *  - R registers "t-rd 100M", through sysfs and netlink (DEVICE_ADD) in
 *    turn: 0, or EEXIST -- but never EEXIST when every registration R
 *    made had already been undone before the call began (a spurious
 *    EEXIST: the old directory still there after the ledger let go);
 *  - U unregisters "t-rd", through sysfs and netlink (DEVICE_DEL) in
 *    turn: 0, ENOENT (ENODEV from netlink) or EBUSY;
 *  - H opens /dev/nxquota, registers a holder on "t-rd" (0 or ENODEV),
 *    charges 1M when registered, and closes, in a loop.
 * No "duplicate filename" or other splat (the runner scans the log).
 * Afterwards: the key can be unregistered (or is gone), registered anew
 * with capacity 100M, used 0 and holders 0, and unregistered.
 */
#include "scen.h"
#include "tenant.h"
#include "nl_genl.h"

#define KEY	"t-rd"
#define M	SC_MIB

struct stats {
	volatile int stop;
	uint64_t regs, unregs, eexist, spurious, enoent, ebusy, hreg, hnodev,
		 hcharge;
	int bad_rc;
	char bad_what[64];
};
static struct stats *st;

static void bad(const char *what, int rc)
{
	if (!st->bad_rc) {
		st->bad_rc = rc ? rc : -1;
		snprintf(st->bad_what, sizeof(st->bad_what), "%s", what);
	}
}

static int nl_dev(int fd, uint8_t cmd)
{
	struct nl_msg m;

	nl_init(&m, nl_family_id, 0, cmd);
	nl_put_str(&m, NXQUOTA_A_DEVICE_KEY, KEY);
	if (cmd == NXQUOTA_CMD_DEVICE_ADD)
		nl_put_u64(&m, NXQUOTA_A_DEVICE_CAPACITY, 100 * M);
	return nl_talk(fd, &m, NULL, NULL, NULL);
}

static int registrar(void *arg)
{
	int fd = NL_OPEN(), i = 0, rc;
	uint64_t u0;

	(void)arg;
	while (!st->stop) {
		u0 = __atomic_load_n(&st->unregs, __ATOMIC_SEQ_CST);
		if (i++ & 1)
			rc = nl_dev(fd, NXQUOTA_CMD_DEVICE_ADD);
		else
			rc = sc_write(SC_DEVICES "/register", KEY " 100M");
		if (rc >= 0) {
			__atomic_add_fetch(&st->regs, 1, __ATOMIC_SEQ_CST);
		} else if (rc == -EEXIST) {
			st->eexist++;
			if (u0 == st->regs)
				st->spurious++;
		} else {
			bad(i & 1 ? "sysfs register" : "netlink DEVICE_ADD",
			    rc);
		}
	}
	close(fd);
	return 0;
}

static int unregistrar(void *arg)
{
	int fd = NL_OPEN(), i = 0, rc;

	(void)arg;
	while (!st->stop) {
		if (i++ & 1)
			rc = nl_dev(fd, NXQUOTA_CMD_DEVICE_DEL);
		else
			rc = sc_write(SC_DEVICES "/unregister", KEY);
		if (rc >= 0)
			__atomic_add_fetch(&st->unregs, 1, __ATOMIC_SEQ_CST);
		else if (rc == -ENOENT || rc == -ENODEV)
			st->enoent++;
		else if (rc == -EBUSY)
			st->ebusy++;
		else
			bad(i & 1 ? "sysfs unregister" : "netlink DEVICE_DEL",
			    rc);
	}
	close(fd);
	return 0;
}

static int holder(void *arg)
{
	uint64_t id, c;
	int fd, efd = sc_eventfd();
	long rc;

	(void)arg;
	while (!st->stop) {
		fd = sc_open();
		CHECK_OK(fd);
		rc = sc_register(fd, KEY, efd, 0, &id);
		if (!rc) {
			st->hreg++;
			rc = sc_charge(fd, id, M, &c);
			if (!rc)
				st->hcharge++;
			else if (rc != -ENOENT && rc != -ENODEV &&
				 rc != -EDQUOT)
				bad("holder charge", (int)rc);
		} else if (rc == -ENODEV) {
			st->hnodev++;
		} else {
			bad("holder register", (int)rc);
		}
		close(fd);
	}
	return 0;
}

/* Races sysfs against the kernel's netlink: the module only (sc_module_only[]).
 * The raced key is tracked for scen.h's cleanup from the setup; the
 * teardown unregisters the fresh device the test registers after the
 * race.  No time limit of its own: NXQ_TEST_TIMEOUT goes with NXQ_RACE_SECS. */
FIXTURE(race_device) {};

FIXTURE_VARIANT(race_device) {};

FIXTURE_VARIANT_ADD(race_device, module) {};

FIXTURE_SETUP(race_device)
{
	nl_track_key(KEY);
}

FIXTURE_TEARDOWN(race_device)
{
	CHECK_OK(sc_dev_unregister(KEY));
	nl_untrack_key(KEY);
}

TEST_F(race_device, register_against_unregister)
{
	uint64_t secs = tn_knob("NXQ_RACE_SECS", 5);
	pid_t p[3];
	int i, rc;

	st = sc_shared(sizeof(*st));
	p[0] = sc_spawn(registrar, NULL);
	p[1] = sc_spawn(unregistrar, NULL);
	p[2] = sc_spawn(holder, NULL);
	sleep(secs);
	st->stop = 1;
	for (i = 0; i < 3; i++)
		CHECK_CHILD_OK(p[i]);
	sc_log("%llu s: %llu registered (%llu EEXIST, %llu spurious), %llu "
	       "unregistered (%llu ENOENT, %llu EBUSY); holders: %llu "
	       "registered, %llu ENODEV, %llu charged",
	       (unsigned long long)secs, (unsigned long long)st->regs,
	       (unsigned long long)st->eexist,
	       (unsigned long long)st->spurious,
	       (unsigned long long)st->unregs,
	       (unsigned long long)st->enoent,
	       (unsigned long long)st->ebusy, (unsigned long long)st->hreg,
	       (unsigned long long)st->hnodev,
	       (unsigned long long)st->hcharge);
	if (st->bad_rc)
		FAIL("%s during the race: %s", st->bad_what,
		     sc_errname(-st->bad_rc));
	if (st->spurious)
		FAIL("%llu spurious EEXIST: registering a key whose device "
		     "was already unregistered", (unsigned long long)
		     st->spurious);
	CHECK(st->regs > 5 && st->unregs > 5);
	rc = sc_write(SC_DEVICES "/unregister", KEY);
	if (rc && rc != -ENOENT)
		FAIL("unregister after the race: %s", sc_errname(-rc));
	CHECK(!sc_dev_exists(KEY));
	CHECK_OK(sc_dev_register(KEY, "100M"));
	CHECK_EQ(DEV_U64(KEY, "capacity"), 100 * M);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
}

TEST_HARNESS_MAIN
