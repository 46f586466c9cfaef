// SPDX-License-Identifier: GPL-2.0
/*
 * cmocka tests of nxquotactl's pure helpers (tools/fmt.c): size formatting
 * (what it prints, lib/size.c's nxq_size_parse_b() reads back) and
 * Prometheus label values.  The parser's own tests: test_size.c; JSON:
 * test_jsonout.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <linux/nxquota.h>

#include "fmt.h"
#include "size.h"

static void fmt_is(uint64_t v, bool is_max, const char *want)
{
	char buf[NXQ_FMT_SIZE_LEN];

	assert_string_equal(nxq_format_size(v, is_max, buf), want);
}

static void test_format(void **state)
{
	(void)state;
	fmt_is(0, false, "0");
	fmt_is(1023, false, "1023");
	fmt_is(1024, false, "1K");
	fmt_is(1536, false, "1.5K");
	fmt_is(1024 * 1024 - 1, false, "1023.9K");
	fmt_is(8ULL << 30, false, "8G");
	fmt_is((8ULL << 30) + (1ULL << 29), false, "8.5G");
	fmt_is((80ULL << 30) + 1, false, "80.0G");	/* not exact: a decimal */
	fmt_is(141ULL * 1000 * 1000 * 1000, false, "131.3G");
	fmt_is(3ULL << 50, false, "3P");
	fmt_is(UINT64_MAX, false, "16383.9P");
	fmt_is(NXQ_UNLIMITED, true, "max");
	fmt_is(2048, true, "2K");
}

/* Signed: unattributed bytes may be negative (charged ahead of mapping). */
static void test_format_signed(void **state)
{
	char buf[NXQ_FMT_SIZE_LEN];

	(void)state;
	assert_string_equal(nxq_format_ssize(0, buf), "0");
	assert_string_equal(nxq_format_ssize(545259520, buf), "520M");
	assert_string_equal(nxq_format_ssize(-545259520, buf), "-520M");
	assert_string_equal(nxq_format_ssize(-1536, buf), "-1.5K");
	assert_string_equal(nxq_format_ssize(-1, buf), "-1");
	assert_string_equal(nxq_format_ssize(INT64_MIN, buf), "-8192P");
	assert_string_equal(nxq_format_ssize(INT64_MAX, buf), "8191.9P");
}

/* What format prints, parse reads back when it is exact. */
static void test_roundtrip(void **state)
{
	static const uint64_t vals[] = { 0, 1, 1023, 1024, 4096, 1ULL << 20,
		8ULL << 30, 5ULL << 40, 7ULL << 50 };
	char buf[NXQ_FMT_SIZE_LEN];
	uint64_t v;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		nxq_format_size(vals[i], false, buf);
		assert_int_equal(nxq_size_parse_b(buf, false, &v), 0);
		assert_int_equal(v, vals[i]);
	}
	nxq_format_size(NXQ_UNLIMITED, true, buf);
	assert_int_equal(nxq_size_parse_b(buf, true, &v), 0);
	assert_true(v == NXQ_UNLIMITED);
}

static char *capture(void (*fn)(FILE *, const char *), const char *s)
{
	static char out[512];
	FILE *f = fmemopen(out, sizeof(out), "w");

	assert_non_null(f);
	fn(f, s);
	fclose(f);
	return out;
}

static void test_prom_label(void **state)
{
	(void)state;
	assert_string_equal(capture(nxq_prom_label, "/kubepods/pod1"),
			    "\"/kubepods/pod1\"");
	assert_string_equal(capture(nxq_prom_label, "a\"b\\c\nd"),
			    "\"a\\\"b\\\\c\\nd\"");
	assert_string_equal(capture(nxq_prom_label, "tab\there"),
			    "\"tab\there\"");
}

static void test_errno_name(void **state)
{
	(void)state;
	assert_string_equal(nxq_errno_name(EDQUOT), "EDQUOT");
	assert_string_equal(nxq_errno_name(ENOSPC), "ENOSPC");
	assert_string_equal(nxq_errno_name(0), "errno 0");
	assert_string_equal(nxq_errno_name(9999), "errno 9999");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_format_signed),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_prom_label),
		cmocka_unit_test(test_errno_name),
	};

	return cmocka_run_group_tests_name("nxquotactl-fmt", tests, NULL, NULL);
}
