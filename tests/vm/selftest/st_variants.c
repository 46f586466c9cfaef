// SPDX-License-Identifier: GPL-2.0
/*
 * st_variants: FIXTURE_VARIANT / FIXTURE_VARIANT_ADD.  Each TEST_F runs
 * once per variant, named fixture.variant.test, with the variant's
 * fields in the setup, the test and the teardown.  th_hooks.variant_skip
 * rules out the variant "other" ($ST_RULE_OUT=all: every variant): a
 * variant ruled out is reported, never run, and neither passes nor skips
 * the program -- unless no test at all ran, when the program skips.
 */
#include "harness.h"

FIXTURE(fx) {
	int n;
};

FIXTURE_VARIANT(fx) {
	int n;
	const char *tag;
};

FIXTURE_VARIANT_ADD(fx, one) {
	.n = 1, .tag = "one",
};

FIXTURE_VARIANT_ADD(fx, two) {
	.n = 2, .tag = "two",
};

FIXTURE_VARIANT_ADD(fx, other) {
	.n = 3, .tag = "other",
};

FIXTURE_SETUP(fx)
{
	self->n = variant->n;
}

FIXTURE_TEARDOWN(fx)
{
	ASSERT_EQ(self->n, variant->n);
}

TEST_F(fx, sees_its_variant)
{
	ASSERT_EQ(self->n, variant->n);
	ASSERT_NE(variant->n, 3);	/* "other" never runs */
	th_log("variant %s n=%d", variant->tag, variant->n);
}

TEST_F(fx, second)
{
	th_log("second %s", variant->tag);
}

static const char *st_rule_out(const char *variant)
{
	const char *all = getenv("ST_RULE_OUT");

	if ((all && !strcmp(all, "all")) || !strcmp(variant, "other"))
		return "not this run's";
	return NULL;
}

int main(int argc, char **argv)
{
	th_hooks.variant_skip = st_rule_out;
	return th_main(argc, argv);
}
