// SPDX-License-Identifier: GPL-2.0
/*
 * cmocka tests of the budget table as the tools read it (tools/fields.c,
 * NXQ_BUDGET_FIELDS of the uapi header): every field, none named here,
 * through nxquotactl's words -- found by its name ('-' for '_'), its
 * largest value read back, one above refused before anything is sent, a
 * flag only alone -- and the words the hook prints for nxquotactl
 * (field_arg()) read back as what they say; and the device table's
 * fields through nxquotactl devices's words.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "fields.h"

/* The field's word with its value, as an operator types it. */
static const char *word(int f, const char *val, char *buf, size_t n)
{
	char w[64];

	if (val)
		snprintf(buf, n, "%s=%s", field_word(f, w, sizeof(w)), val);
	else
		snprintf(buf, n, "%s", field_word(f, w, sizeof(w)));
	return buf;
}

static void test_words(void **state)
{
	char buf[128], num[32], why[256], *p;
	const char *val;
	uint64_t v;
	int f, lims = 0;

	(void)state;
	for (f = 0; f < NXQ_NR_BUDGET_FIELDS; f++) {
		const struct field_def *d = &field_defs[f];

		/* the word is the spec's name with '-' */
		word(f, d->parse == NXQ_PARSE_FLAG ? NULL : "1", buf,
		     sizeof(buf));
		for (p = buf; *p && *p != '='; p++)
			assert_int_not_equal(*p, '_');
		assert_int_equal(field_of_word(buf, &val), f);
		lims += d->lim >= 0;
		if (d->parse == NXQ_PARSE_FLAG) {
			assert_null(val);
			word(f, "1", buf, sizeof(buf));
			assert_int_equal(field_of_word(buf, &val), -1);
			assert_null(field_value_hint(f));
			continue;
		}
		assert_non_null(field_value_hint(f));
		/* no value: not this field's word */
		word(f, NULL, buf, sizeof(buf));
		assert_int_equal(field_of_word(buf, &val), -1);
		/* the largest value it takes, and one above */
		if (d->unit == NXQ_UNIT_BYTES) {
			assert_int_equal(field_parse(f, "4Gi", &v, why,
						     sizeof(why)), 0);
			assert_int_equal(v, 4ULL << 30);
			assert_int_equal(field_parse(f, "max", &v, why,
						     sizeof(why)) == 0,
					 d->parse == NXQ_PARSE_SIZE_MAX);
			assert_int_equal(field_parse(f, "4X", &v, why,
						     sizeof(why)), -EINVAL);
			assert_non_null(strstr(why, "not a size"));
			continue;
		}
		snprintf(num, sizeof(num), "%llu", (unsigned long long)d->hi);
		assert_int_equal(field_parse(f, num, &v, why, sizeof(why)), 0);
		assert_int_equal(v, d->hi);
		snprintf(num, sizeof(num), "%llu",
			 (unsigned long long)d->hi + 1);
		assert_int_equal(field_parse(f, num, &v, why, sizeof(why)),
				 -EINVAL);
		assert_int_equal(field_parse(f, "x", &v, why, sizeof(why)),
				 -EINVAL);
		/* its default is a value it takes */
		snprintf(num, sizeof(num), "%llu", (unsigned long long)d->dflt);
		assert_int_equal(field_parse(f, num, &v, why, sizeof(why)), 0);
	}
	assert_int_equal(lims, NXQ_NR_LIMITS);
	assert_int_equal(field_of_word("nope=1", &val), -1);
}

/* What the hook prints for nxquotactl reads back as what it says. */
static void test_args(void **state)
{
	static const uint64_t vals[] = { 0, 1, 4096, 3ULL << 30, UINT64_MAX };
	char buf[128], why[256];
	const char *val;
	unsigned int i;
	uint64_t v;
	int f;

	(void)state;
	for (f = 0; f < NXQ_NR_BUDGET_FIELDS; f++) {
		if (field_defs[f].unit != NXQ_UNIT_BYTES)
			continue;
		for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
			field_arg(f, vals[i], buf, sizeof(buf));
			assert_int_equal(field_of_word(buf, &val), f);
			if (vals[i] == UINT64_MAX &&
			    field_defs[f].parse != NXQ_PARSE_SIZE_MAX)
				continue;	/* bytes, not "max" */
			assert_int_equal(field_parse(f, val, &v, why,
						     sizeof(why)), 0);
			assert_int_equal(v, vals[i]);
		}
	}
}

/*
 * The device table likewise (NXQ_DEVICE_FIELDS, nxquotactl devices FIELD
 * KEY VALUE): every field found by its word, its largest value read back,
 * one past either bound refused before anything is sent.
 */
static void test_dfields(void **state)
{
	char num[32], why[256], w[64];
	uint64_t v;
	int f;

	(void)state;
	for (f = 0; f < NXQ_NR_DEVICE_FIELDS; f++) {
		const struct field_def *d = &dfield_defs[f].d;

		assert_int_equal(dfield_of_name(dfield_word(f, w, sizeof(w))), f);
		assert_null(strchr(w, '_'));
		assert_non_null(dfield_value_hint(f));
		assert_true(d->lo <= d->hi);
		assert_true(dfield_defs[f].set);
		assert_int_equal(dfield_parse(f, "x", &v, why, sizeof(why)),
				 -EINVAL);
		if (d->unit == NXQ_UNIT_BYTES) {
			assert_int_equal(dfield_parse(f, "4Gi", &v, why,
						      sizeof(why)), 0);
			assert_int_equal(v, 4ULL << 30);
			assert_int_equal(dfield_parse(f, "max", &v, why,
						      sizeof(why)),
					 d->parse == NXQ_PARSE_SIZE_MAX ? 0 :
					 -EINVAL);
			continue;
		}
		snprintf(num, sizeof(num), "%" PRIu64, d->hi);
		assert_int_equal(dfield_parse(f, num, &v, why, sizeof(why)), 0);
		assert_int_equal(v, d->hi);
		assert_true(d->dflt >= d->lo && d->dflt <= d->hi);
		snprintf(num, sizeof(num), "%" PRIu64, d->hi + 1);
		assert_int_equal(dfield_parse(f, num, &v, why, sizeof(why)),
				 -EINVAL);
		if (d->lo) {
			snprintf(num, sizeof(num), "%" PRIu64, d->lo - 1);
			assert_int_equal(dfield_parse(f, num, &v, why,
						      sizeof(why)), -EINVAL);
		}
	}
	assert_int_equal(dfield_of_name("key"), -1);
	assert_int_equal(dfield_of_name("default_max"), -1);	/* '-' */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_words),
		cmocka_unit_test(test_args),
		cmocka_unit_test(test_dfields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
