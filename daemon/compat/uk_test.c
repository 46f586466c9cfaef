#include <kunit/test.h>
static void t(struct kunit *test) { KUNIT_EXPECT_EQ(test, 1, 1); }
static struct kunit_case c[] = { KUNIT_CASE(t), {} };
static struct kunit_suite s = { .name = "x", .test_cases = c };
kunit_test_suite(s);
