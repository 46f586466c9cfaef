// SPDX-License-Identifier: GPL-2.0
/*
 * st_isolation: each test runs in a process of its own.
 *
 * "sets_state" changes a global and the fixture-less state a test could
 * leak; "sees_none" must find them as the program started (fails if the
 * tests share a process).  "crashes" dies of SIGSEGV and "fails" of an
 * ASSERT: each is failed, the program goes on.  The fixture's teardown
 * runs after its test's ASSERT (in the test's process: it writes
 * $ST_MARK).  "leaves_process" passes but leaves a process behind in its
 * process group: it fails, and the process is killed.  "last" runs.
 */
#include "harness.h"

static int st_global;
static pid_t st_main;

TEST(sets_state)
{
	st_global = 1;
	ASSERT_EQ(setenv("ST_LEAK", "1", 1), 0);
	ASSERT_EQ(st_global, 1);
}

TEST(sees_none)
{
	ASSERT_EQ(st_global, 0);
	ASSERT_TRUE(getenv("ST_LEAK") == NULL);
	ASSERT_NE(getpid(), st_main);
	ASSERT_EQ(getpgrp(), getpid());	/* a process group of its own */
}

TEST(crashes)
{
	raise(SIGSEGV);
}

FIXTURE(fx) {
	int set_up;
};

FIXTURE_SETUP(fx)
{
	self->set_up = 1;
}

FIXTURE_TEARDOWN(fx)
{
	const char *path = getenv("ST_MARK");
	FILE *f;

	ASSERT_EQ(self->set_up, 1);
	f = path ? fopen(path, "w") : NULL;
	ASSERT_TRUE(f != NULL);
	fprintf(f, "teardown %d\n", (int)getpid());
	fclose(f);
}

TEST_F(fx, fails)
{
	ASSERT_EQ(self->set_up, 2);
}

TEST(leaves_process)
{
	if (fork() == 0) {
		sleep(60);
		_exit(0);
	}
}

TEST(last)
{
	th_log("last ran");
}

int main(int argc, char **argv)
{
	st_main = getpid();
	return th_main(argc, argv);
}
