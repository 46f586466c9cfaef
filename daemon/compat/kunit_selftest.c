// SPDX-License-Identifier: GPL-2.0
/*
 * The KUnit runner's own semantics, checked by mutants.sh (this suite is
 * meant to fail, as it says): a failed ASSERT ends the case and is
 * reported as one; a failed EXPECT does not end it; an ASSERT in a thread
 * the case started ends that thread only; a skip is not a failure; a later
 * case still runs.
 */
#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/kthread.h>

static int reached;

static void selftest_assert_ends_case(struct kunit *test)
{
	KUNIT_ASSERT_EQ(test, 1, 2);
	reached = 1;
}

static void selftest_expect_goes_on(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, reached, 0);	/* passes */
	KUNIT_EXPECT_PTR_EQ(test, (void *)&reached, NULL);	/* fails */
	reached = 2;
}

static struct completion thread_done;

static int asserting_thread(void *arg)
{
	struct kunit *test = arg;

	KUNIT_ASSERT_TRUE(test, false);
	complete(&thread_done);
	return 0;
}

static void selftest_thread_assert(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, reached, 2);	/* passes */
	init_completion(&thread_done);
	KUNIT_ASSERT_FALSE(test, IS_ERR(kthread_run(asserting_thread, test,
						    "asserter")));
	/* the thread ended at its assertion: no completion */
	KUNIT_EXPECT_EQ(test, wait_for_completion_timeout(&thread_done, HZ / 5),
			0UL);
	reached = 3;
}

static void selftest_skip(struct kunit *test)
{
	kunit_skip(test, "skipped on purpose");
}

static void selftest_last_runs(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, reached, 3);	/* passes */
}

static struct kunit_case selftest_cases[] = {
	KUNIT_CASE(selftest_assert_ends_case),
	KUNIT_CASE(selftest_expect_goes_on),
	KUNIT_CASE(selftest_thread_assert),
	KUNIT_CASE(selftest_skip),
	KUNIT_CASE(selftest_last_runs),
	{}
};

static struct kunit_suite selftest_suite = {
	.name = "uk-kunit-selftest",
	.test_cases = selftest_cases,
};

kunit_test_suite(selftest_suite);
