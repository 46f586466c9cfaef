// SPDX-License-Identifier: GPL-2.0
/*
 * st_skip: a test that SKIPs skips the program (exit 77, its "SKIP:" line
 * the reason); the tests after it are reported as not run.  A failure
 * before it still fails the program ($ST_FAIL_FIRST).
 */
#include "harness.h"

TEST(first)
{
	if (getenv("ST_FAIL_FIRST"))
		FAIL("failed on purpose");
}

TEST(skips)
{
	SKIP("no widget here");
}

TEST(not_run)
{
	FAIL("ran after a skip");
}

TEST_HARNESS_MAIN
