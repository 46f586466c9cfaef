// SPDX-License-Identifier: GPL-2.0
/*
 * st_timeout: a test past its time limit is killed with its whole process
 * group, fails with "timed out after N s", and the tests after it run.
 *
 * "hangs" (limit 1 s) forks two processes that would outlive it -- one
 * with th_fork() (it dies with its parent), one with a plain fork() (only
 * the process group's kill reaches it) -- writes their pids to
 * $ST_PIDS, and waits forever.  "sleeps" takes 3 s: it passes under the
 * default limit and fails with NXQ_TEST_TIMEOUT=1.  "after" must run, in
 * a process of its own.
 */
#include "harness.h"

static pid_t st_main;

TEST_TIMEOUT(hangs, 1)
{
	const char *path = getenv("ST_PIDS");
	pid_t a, b;
	FILE *f;

	a = th_fork();
	if (a == 0)
		for (;;)
			pause();
	b = fork();
	if (b == 0)
		for (;;)
			pause();
	ASSERT_TRUE(path != NULL);
	f = fopen(path, "w");
	ASSERT_TRUE(f != NULL);
	fprintf(f, "%d %d\n", (int)a, (int)b);
	fclose(f);
	for (;;)
		pause();
}

TEST(sleeps)
{
	sleep(3);
}

TEST(after)
{
	ASSERT_NE(getpid(), st_main);
	th_log("after ran");
}

int main(int argc, char **argv)
{
	st_main = getpid();
	return th_main(argc, argv);
}
