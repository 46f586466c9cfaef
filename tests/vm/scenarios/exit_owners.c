// SPDX-License-Identifier: GPL-2.0
/*
 * exit_owners: the module's record of a process that registered on a file
 * (struct nxq_owner) goes when the process exits, not at the file's last
 * close (issue 22, item 6a).
 *
 * A supervisor (root) opens /dev/nxquota, registers a holder of its own
 * and keeps the file open while NCHILD short-lived children register on
 * it, one at a time, each charging 1M, and end three ways in turn:
 *  - 0: _exit() with the file still open (ended by ->flush at exit);
 *  - 1: close() the descriptor first, then _exit() (the file is no longer
 *    in their files table at exit: ended by the exit work);
 *  - 2: SIGKILLed by the supervisor with the file open.
 * After each reap, /sys/kernel/nxquota/owners must be 1 (the supervisor)
 * and the device's used its own 1M: at once for 0 and 2, within 5 s for
 * 1.  Before this, every child left its record until the close: owners
 * grew by one per child.  At the end the supervisor's holder still
 * works, and its close takes owners to 0.
 */
#include "scen.h"

#define KEY	"t-exo"
#define M	SC_MIB
#define NCHILD	1000
#define OWNERS	SC_SYSFS "/owners"	/* module only (authority.h) */

static int c2s[2];

static int child(void *arg)
{
	int fd = (int)(uintptr_t)arg, how;
	uint64_t id = 0, c = 0;

	how = (int)RECV(c2s[0]);
	CHECK_OK(sc_register(fd, KEY, SC_EFD, 0, &id));
	CHECK_OK(sc_charge(fd, id, M, &c));
	CHECK_EQ(c, M);
	if (how == 1)
		CHECK(close(fd) == 0);
	CHECK_OK(sc_send(c2s[1], 1));
	if (how == 2)
		for (;;)
			pause();
	return 0;
}

static int reap(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			FAIL("waitpid %d: %s", (int)pid, sc_errname(errno));
	sc_untrack(pid);
	return status;
}

/* The module's exit records (sysfs owners): the module only (sc_module_only[]). */
FIXTURE(exit_owners) {};

FIXTURE_VARIANT(exit_owners) {};

FIXTURE_VARIANT_ADD(exit_owners, module) {};

FIXTURE_SETUP(exit_owners)
{
	CHECK_OK(sc_dev_register_open(KEY, "1G"));
}

FIXTURE_TEARDOWN(exit_owners)
{
	CHECK_OK(sc_dev_unregister(KEY));
}

TEST_F_TIMEOUT(exit_owners, owners_after_each_reap, 55)
{
	uint64_t id = 0, c = 0, owners, used, last, max_owners = 0;
	uint64_t t0, t_start = sc_now_us(), late_us = 0;
	int fd, i, how, status, c2s_child[2], s2c[2];
	pid_t pid;

	fd = sc_open();
	if (fd < 0)
		FAIL("open: %s", sc_errname(-fd));
	CHECK_EQ(sc_get_u64_at(__FILE__, __LINE__, OWNERS), 0);
	CHECK_OK(sc_register(fd, KEY, SC_EFD, 0, &id));
	CHECK_OK(sc_charge(fd, id, M, &c));
	CHECK_EQ(sc_get_u64_at(__FILE__, __LINE__, OWNERS), 1);

	for (i = 0; i < NCHILD; i++) {
		how = i % 3;
		CHECK(pipe(s2c) == 0 && pipe(c2s_child) == 0);
		/* the child reads its way from c2s[0], answers on c2s[1] */
		c2s[0] = s2c[0];
		c2s[1] = c2s_child[1];
		pid = sc_spawn(child, (void *)(uintptr_t)fd);
		close(s2c[0]);
		close(c2s_child[1]);
		CHECK_OK(sc_send(s2c[1], how));
		RECV(c2s_child[0]);
		close(s2c[1]);
		close(c2s_child[0]);
		if (how == 2)
			CHECK(kill(pid, SIGKILL) == 0);
		status = reap(pid);
		if (how == 2)
			CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
		else if (!WIFEXITED(status) || WEXITSTATUS(status))
			FAIL("child %d (way %d) failed: status 0x%x", i, how,
			     status);
		t0 = sc_now_us();
		if (how == 1 &&
		    sc_wait_u64(OWNERS, 1, 5000, &last) < 0)
			FAIL("child %d closed its descriptor and exited: "
			     "owners stays %llu 5 s after the reap", i,
			     (unsigned long long)last);
		if (how == 1)
			late_us += sc_now_us() - t0;
		owners = sc_get_u64_at(__FILE__, __LINE__, OWNERS);
		used = DEV_U64(KEY, "used");
		if (owners > max_owners)
			max_owners = owners;
		if (owners != 1 || used != M)
			FAIL("after child %d (way %d) was reaped: owners %llu, "
			     "used %llu (expected 1 and 1M: the supervisor's "
			     "alone)", i, how, (unsigned long long)owners,
			     (unsigned long long)used);
	}
	sc_log("%d children in %llu ms: owners at most %llu; those that "
	       "closed the file first were ended by the exit work %llu us "
	       "after the reap on average", NCHILD,
	       (unsigned long long)((sc_now_us() - t_start) / 1000),
	       (unsigned long long)max_owners,
	       (unsigned long long)(late_us / ((NCHILD + 2) / 3)));
	CHECK_EQ(DEV_U64(KEY, "holders"), 1);
	CHECK_EQ(HOLDER_CHARGE(fd, id), M);
	CHECK_OK(sc_close(fd));
	CHECK_EQ(sc_get_u64_at(__FILE__, __LINE__, OWNERS), 0);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
}

TEST_HARNESS_MAIN
