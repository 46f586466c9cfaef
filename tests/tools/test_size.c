// SPDX-License-Identifier: GPL-2.0
/*
 * cmocka tests of lib/size.c: the kernel's sizes (nxq_size_parse, and
 * nxq_size_parse_b with its "B"), Kubernetes quantities
 * (nxq_quantity_parse) and the one formatter (nxq_size_format: its
 * unit boundaries, the decimal rounded down, both spellings).
 *
 * The quantity cases are apimachinery's own (pkg/api/resource/
 * quantity_test.go: TestQuantityParse's table and its invalid list,
 * TestParseQuantity's 18- to 20-digit values), each with the byte count
 * Quantity.Value() gives: the exact value rounded up to a whole byte.
 * Where Kubernetes saturates (binary values past 2^63-1), this parser
 * is exact up to UINT64_MAX; those cases say so.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "size.h"

#define KI (1ULL << 10)
#define MI (1ULL << 20)
#define GI (1ULL << 30)
#define TI (1ULL << 40)
#define PI (1ULL << 50)
#define EI (1ULL << 60)

struct qcase {
	const char *in;
	int err;		/* 0, EINVAL or ERANGE */
	uint64_t want;
};

static void check_quantity(const struct qcase *c)
{
	uint64_t v = 12345;
	int rc = nxq_quantity_parse(c->in, &v);

	if (rc != -c->err)
		fail_msg("quantity \"%s\" -> %d, want %d", c->in, rc, -c->err);
	if (c->err && v != 12345)
		fail_msg("quantity \"%s\": out written on error", c->in);
	if (!c->err && v != c->want)
		fail_msg("quantity \"%s\" -> %llu, want %llu", c->in,
			 (unsigned long long)v, (unsigned long long)c->want);
}

#define CHECK_ALL(tab) do {						\
	size_t i_;							\
	for (i_ = 0; i_ < sizeof(tab) / sizeof(tab[0]); i_++)		\
		check_quantity(&tab[i_]);				\
} while (0)

/* TestQuantityParse: zeros, plain numbers and the suffixes. */
static void test_quantity_k8s_suffixes(void **state)
{
	static const struct qcase tab[] = {
		{ "0", 0, 0 }, { "0n", 0, 0 }, { "0u", 0, 0 }, { "0m", 0, 0 },
		{ "0Ki", 0, 0 }, { "0k", 0, 0 }, { "0Mi", 0, 0 },
		{ "0M", 0, 0 }, { "0Gi", 0, 0 }, { "0G", 0, 0 },
		{ "0Ti", 0, 0 }, { "0T", 0, 0 },
		{ "1", 0, 1 },
		{ "1Ki", 0, KI }, { "8Ki", 0, 8 * KI }, { "7Mi", 0, 7 * MI },
		{ "6Gi", 0, 6 * GI }, { "5Ti", 0, 5 * TI }, { "4Pi", 0, 4 * PI },
		{ "3Ei", 0, 3 * EI }, { "10Ti", 0, 10 * TI },
		{ "100Ti", 0, 100 * TI },
		/* nano, micro, milli: a fraction of a byte is one byte */
		{ "5n", 0, 1 }, { "4u", 0, 1 }, { "3m", 0, 1 }, { "9", 0, 9 },
		{ "8k", 0, 8000 }, { "50k", 0, 50000 }, { "7M", 0, 7000000 },
		{ "6G", 0, 6000000000ULL }, { "5T", 0, 5000000000000ULL },
		{ "40T", 0, 40000000000000ULL },
		{ "300T", 0, 300000000000000ULL },
		{ "2P", 0, 2000000000000000ULL },
		{ "1E", 0, 1000000000000000000ULL },
	};

	(void)state;
	CHECK_ALL(tab);
}

/* TestQuantityParse: decimal exponents and floating-point look-alikes. */
static void test_quantity_k8s_fractions(void **state)
{
	static const struct qcase tab[] = {
		{ "1E-3", 0, 1 }, { "1e3", 0, 1000 }, { "1E6", 0, 1000000 },
		{ "1e9", 0, 1000000000ULL }, { "1E12", 0, 1000000000000ULL },
		{ "1e15", 0, 1000000000000000ULL },
		{ "1E18", 0, 1000000000000000000ULL },
		{ "1e14", 0, 100000000000000ULL }, { "1e13", 0, 10000000000000ULL },
		{ "100.035k", 0, 100035 },
		{ "0.001", 0, 1 }, { "0.0005k", 0, 1 }, { "0.005", 0, 1 },
		{ "0.05", 0, 1 }, { "0.5", 0, 1 }, { "0.00050k", 0, 1 },
		{ "0.00500", 0, 1 }, { "0.05000", 0, 1 }, { "0.50000", 0, 1 },
		{ "0.5e0", 0, 1 }, { "0.5e-1", 0, 1 }, { "0.5e-2", 0, 1 },
		{ "10.035M", 0, 10035000 },
		{ "1.2e3", 0, 1200 }, { "1.3E+6", 0, 1300000 },
		{ "1.40e9", 0, 1400000000ULL }, { "1.53E12", 0, 1530000000000ULL },
		{ "1.6e15", 0, 1600000000000000ULL },
		{ "1.7E18", 0, 1700000000000000000ULL },
		{ "9.01", 0, 10 }, { "8.1k", 0, 8100 },
		{ "7.123456M", 0, 7123456 }, { "6.987654321G", 0, 6987654321ULL },
		{ "5.444T", 0, 5444000000000ULL }, { "40.1T", 0, 40100000000000ULL },
		{ "300.2T", 0, 300200000000000ULL },
		{ "2.5P", 0, 2500000000000000ULL },
		{ "1.01E", 0, 1010000000000000000ULL },
		/* "things that saturate/round" */
		{ "3.001n", 0, 1 }, { "1.1E-9", 0, 1 }, { "0.0000000001", 0, 1 },
		{ "0.0000000005", 0, 1 }, { "0.00000000050", 0, 1 },
		{ "0.5e-9", 0, 1 }, { "0.9n", 0, 1 }, { "0.00000012345", 0, 1 },
		{ "0.00000012354", 0, 1 },
		{ "12E", 0, 12000000000000000000ULL },
		/* "we'll accept fractional binary stuff, too" */
		{ "100.035Ki", 0, 102436 },		/* 102435.84 */
		{ "0.5Mi", 0, 512 * KI },
		{ "0.05Gi", 0, 53687092 },		/* 53687091.2 */
		{ "0.025Ti", 0, 27487790695ULL },	/* 27487790694.4 */
		/* "things written by trolls" */
		{ "0.000000000001Ki", 0, 1 }, { ".001", 0, 1 },
		{ ".0001k", 0, 1 }, { "1.", 0, 1 }, { "1.G", 0, 1000000000ULL },
		/* the same with an explicit "+" */
		{ "+1Ki", 0, KI }, { "+1.5Gi", 0, 1536 * MI }, { "+0", 0, 0 },
	};

	(void)state;
	CHECK_ALL(tab);
}

/*
 * TestQuantityParse: "9Ei" and "9223372036854775807Ki" are capped at
 * 2^63-1 by Kubernetes; here the first is exact, the second past 2^64.
 */
static void test_quantity_k8s_large(void **state)
{
	static const struct qcase tab[] = {
		{ "9Ei", 0, 9 * EI },
		{ "9223372036854775807Ki", ERANGE, 0 },
		/* TestParseQuantity: 18 to 20 digits */
		{ "999999999999999999", 0, 999999999999999999ULL },
		{ "999999999999999999.0", 0, 999999999999999999ULL },
		{ "999999999999999999.1", 0, 1000000000000000000ULL },
		{ "9999999999999999999", 0, 9999999999999999999ULL },
		{ "1000000000000000000", 0, 1000000000000000000ULL },
		{ "1.0E", 0, 1000000000000000000ULL },
		{ "9999999999999999999000m", 0, 9999999999999999999ULL },
		{ "1.0000000000000000001E", 0, 1000000000000000001ULL },
		{ "1.000000000000000001E", 0, 1000000000000000001ULL },
		{ "10E", 0, 10000000000000000000ULL },
		{ "10.0E", 0, 10000000000000000000ULL },
		{ "10000000000000000000000m", 0, 10000000000000000000ULL },
		{ "10000000000000000000.1", 0, 10000000000000000001ULL },
		{ "10.000000000000000001E", 0, 10000000000000000001ULL },
		{ "9223372036854775806", 0, 9223372036854775806ULL },
		{ "9223372036854775807", 0, 9223372036854775807ULL },
		{ "9223372036854775807.1", 0, 9223372036854775808ULL },
		{ "9223372036854775808000m", 0, 9223372036854775808ULL },
		/* where uint64 ends */
		{ "18446744073709551615", 0, UINT64_MAX },
		{ "18.446744073709551615E", 0, UINT64_MAX },
		{ "18446744073709551615000m", 0, UINT64_MAX },
		{ "18446744073709551614.1", 0, UINT64_MAX },
		{ "18446744073709551615.1", ERANGE, 0 },
		{ "18446744073709551616", ERANGE, 0 },
		{ "18.446744073709551616E", ERANGE, 0 },
		{ "15Ei", 0, 15 * EI },
		{ "15.999999999999999999Ei", 0, UINT64_MAX },
		{ "16Ei", ERANGE, 0 },
		{ "1e19", 0, 10000000000000000000ULL },
		{ "1e20", ERANGE, 0 },
		{ "1e9223372036854775807", ERANGE, 0 },
		{ "0e9223372036854775807", 0, 0 },
		{ "1e-9223372036854775808", 0, 1 },
		{ "00000000000000000000000000001Ki", 0, KI },
	};

	(void)state;
	CHECK_ALL(tab);
}

/* The brief's examples and the Kubernetes docs' "about 129 MB" set. */
static void test_quantity_examples(void **state)
{
	static const struct qcase tab[] = {
		{ "4G", 0, 4000000000ULL }, { "4Gi", 0, 4 * GI },
		{ "1.5Gi", 0, 1536 * MI }, { "4e9", 0, 4000000000ULL },
		{ "128974848", 0, 128974848 }, { "129e6", 0, 129000000 },
		{ "129M", 0, 129000000 }, { "128974848000m", 0, 128974848 },
		{ "123Mi", 0, 128974848 },
		{ "0.1Ki", 0, 103 },			/* 102.4 */
		{ "1.000000000000000000000000001", 0, 2 },
		{ "40Gi", 0, 40 * GI }, { "40G", 0, 40000000000ULL },
	};

	(void)state;
	CHECK_ALL(tab);
}

/* Negative values, Kubernetes' invalid list, and digitless numbers. */
static void test_quantity_invalid(void **state)
{
	static const struct qcase tab[] = {
		/* negative: never a budget; "-0" is zero, not negative */
		{ "-1", EINVAL, 0 }, { "-1E", EINVAL, 0 }, { "-1Ki", EINVAL, 0 },
		{ "-999999999999999999", EINVAL, 0 },
		{ "-0.0000000001", EINVAL, 0 }, { "-1n", EINVAL, 0 },
		{ "-0", 0, 0 }, { "-0.0", 0, 0 }, { "-0Gi", 0, 0 },
		/* TestQuantityParse's invalid list */
		{ "1.1.M", EINVAL, 0 }, { "1+1.0M", EINVAL, 0 },
		{ "0.1mi", EINVAL, 0 }, { "0.1am", EINVAL, 0 },
		{ "aoeu", EINVAL, 0 }, { ".5i", EINVAL, 0 }, { "1i", EINVAL, 0 },
		{ "-3.01i", EINVAL, 0 }, { "-3.01e-", EINVAL, 0 },
		{ " 1", EINVAL, 0 }, { "1 ", EINVAL, 0 }, { "", EINVAL, 0 },
		{ "Non-Numeric", EINVAL, 0 },
		/* stricter than ParseQuantity, which reads these as 0 */
		{ "-", EINVAL, 0 }, { "+", EINVAL, 0 }, { ".", EINVAL, 0 },
		{ "-.", EINVAL, 0 }, { "Gi", EINVAL, 0 }, { "e3", EINVAL, 0 },
		/* suffixes Kubernetes does not know */
		{ "1K", EINVAL, 0 }, { "1ki", EINVAL, 0 }, { "1KB", EINVAL, 0 },
		{ "1Gib", EINVAL, 0 }, { "1GI", EINVAL, 0 }, { "1g", EINVAL, 0 },
		{ "1b", EINVAL, 0 }, { "1e", EINVAL, 0 }, { "1e+", EINVAL, 0 },
		{ "1E-", EINVAL, 0 }, { "1ee3", EINVAL, 0 }, { "1e3.5", EINVAL, 0 },
		{ "1Mi3", EINVAL, 0 }, { "0x10", EINVAL, 0 }, { "1,5", EINVAL, 0 },
		{ "max", EINVAL, 0 }, { "1\n", EINVAL, 0 },
		/* an exponent past int64 is ParseInt's error, as in Kubernetes */
		{ "1e9223372036854775808", EINVAL, 0 },
		{ "1e99999999999999999999", EINVAL, 0 },
	};
	uint64_t v = 7;

	(void)state;
	CHECK_ALL(tab);
	assert_int_equal(nxq_quantity_parse(NULL, &v), -EINVAL);
	assert_int_equal(v, 7);
}

/* ---- the kernel's convention -------------------------------------------- */

static void size_ok(const char *s, bool allow_max, uint64_t want)
{
	uint64_t v = 12345;
	int rc = nxq_size_parse(s, allow_max, &v);

	if (rc)
		fail_msg("size \"%s\" -> %d", s, rc);
	if (v != want)
		fail_msg("size \"%s\" -> %llu, want %llu", s,
			 (unsigned long long)v, (unsigned long long)want);
}

static void size_err(const char *s, bool allow_max, int err)
{
	uint64_t v = 12345;
	int rc = nxq_size_parse(s, allow_max, &v);

	if (rc != -err)
		fail_msg("size \"%s\" -> %d, want %d", s, rc, -err);
	assert_int_equal(v, 12345);
}

static void test_size_suffixes(void **state)
{
	(void)state;
	size_ok("0", false, 0);
	size_ok("4096", false, 4096);
	size_ok("4K", false, 4 * KI);
	size_ok("4k", false, 4 * KI);
	size_ok("4Ki", false, 4 * KI);
	size_ok("4kI", false, 4 * KI);
	size_ok("3M", false, 3 * MI);
	size_ok("3Mi", false, 3 * MI);
	size_ok("2g", false, 2 * GI);
	size_ok("40Gi", false, 40 * GI);
	size_ok("1T", false, TI);
	size_ok("1Ti", false, TI);
	size_ok("1P", false, PI);
	size_ok("1pi", false, PI);
	size_ok("1E", false, EI);
	size_ok("1Ei", false, EI);
	size_ok("15E", false, 15 * EI);
	size_ok("007G", false, 7 * GI);
	size_ok("18446744073709551615", false, UINT64_MAX);
	size_ok("17179869183G", false, 17179869183ULL * GI);
}

static void test_size_errors(void **state)
{
	uint64_t v = 1;

	(void)state;
	size_err("16E", false, ERANGE);
	size_err("16Ei", false, ERANGE);
	size_err("17179869184G", false, ERANGE);
	size_err("18446744073709551616", false, ERANGE);
	size_err("99999999999999999999999", false, ERANGE);
	size_err("", false, EINVAL);
	size_err("-1", false, EINVAL);
	size_err("+1", false, EINVAL);
	size_err(" 1", false, EINVAL);
	size_err("1 ", false, EINVAL);
	size_err("1.5G", false, EINVAL);
	size_err("0x10", false, EINVAL);
	size_err("1B", false, EINVAL);
	size_err("1KB", false, EINVAL);
	size_err("1KiB", false, EINVAL);
	size_err("1Kii", false, EINVAL);
	size_err("1KK", false, EINVAL);
	size_err("12Q", false, EINVAL);
	size_err("G", false, EINVAL);
	size_err("1e3", false, EINVAL);
	assert_int_equal(nxq_size_parse(NULL, true, &v), -EINVAL);
	assert_int_equal(v, 1);
}

static void test_size_max(void **state)
{
	(void)state;
	size_ok("max", true, UINT64_MAX);
	size_err("max", false, EINVAL);
	size_err("MAX", true, EINVAL);
	size_err("max ", true, EINVAL);
	size_err("maximum", true, EINVAL);
}

/* nxq_size_parse_b(): nxquotactl's sizes, and the PyTorch integration's */
static void size_b_ok(const char *s, bool allow_max, uint64_t want)
{
	uint64_t v = 12345;

	if (nxq_size_parse_b(s, allow_max, &v) != 0)
		fail_msg("\"%s\" refused", s);
	if (v != want)
		fail_msg("\"%s\" -> %llu, want %llu", s,
			 (unsigned long long)v, (unsigned long long)want);
}

static void size_b_err(const char *s, bool allow_max, int err)
{
	uint64_t v = 12345;
	int rc = nxq_size_parse_b(s, allow_max, &v);

	if (rc != -err)
		fail_msg("\"%s\" -> %d, want %d", s, rc, -err);
	assert_int_equal(v, 12345);	/* untouched on error */
}

static void test_size_b_plain(void **state)
{
	(void)state;
	size_b_ok("0", false, 0);
	size_b_ok("1", false, 1);
	size_b_ok("4096", false, 4096);
	size_b_ok("18446744073709551615", false, UINT64_MAX);
	size_b_err("18446744073709551616", false, ERANGE);
	size_b_err("99999999999999999999999", false, ERANGE);
}

static void test_size_b_suffixes(void **state)
{
	(void)state;
	size_b_ok("512K", false, 512ULL << 10);
	size_b_ok("512k", false, 512ULL << 10);
	size_b_ok("512M", false, 512ULL << 20);
	size_b_ok("8G", false, 8ULL << 30);
	size_b_ok("8g", false, 8ULL << 30);
	size_b_ok("8Gi", false, 8ULL << 30);
	size_b_ok("8GiB", false, 8ULL << 30);
	size_b_ok("8GB", false, 8ULL << 30);
	size_b_ok("2T", false, 2ULL << 40);
	size_b_ok("3P", false, 3ULL << 50);
	size_b_ok("0G", false, 0);
	size_b_ok("16383P", false, 16383ULL << 50);
	size_b_err("16384P", false, ERANGE);
	size_b_ok("17179869183G", false, 17179869183ULL << 30);
	size_b_err("17179869184G", false, ERANGE);
	/* E, and the B forms */
	size_b_ok("15E", false, 15ULL << 60);
	size_b_ok("1Ei", false, 1ULL << 60);
	size_b_ok("2EiB", false, 2ULL << 60);
	size_b_ok("3eb", false, 3ULL << 60);
	size_b_err("16E", false, ERANGE);
	size_b_err("16EB", false, ERANGE);
	size_b_err("8B", false, EINVAL);
	size_b_err("18B", false, EINVAL);
	size_b_err("8iB", false, EINVAL);
	size_b_err("GB", false, EINVAL);
	size_b_err("8GBB", false, EINVAL);
	size_b_err("maxB", true, EINVAL);
}

static void test_size_b_max(void **state)
{
	(void)state;
	size_b_ok("max", true, UINT64_MAX);
	size_b_err("max", false, EINVAL);
	size_b_err("MAX", true, EINVAL);
	size_b_err("max ", true, EINVAL);
}

static void test_size_b_garbage(void **state)
{
	static const char *const bad[] = {
		"", " 1", "1 ", "-1", "+1", "1.5G", "0x10", "G", "1Q", "1GG",
		"1Gx", "1iB", "1Y", "1Z", "1\n", "1G\n", "max=1", "1,000",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		size_b_err(bad[i], true, EINVAL);
}

static void fmt_is(uint64_t v, const char *iec, const char *kern)
{
	char buf[NXQ_SIZE_FMT_LEN];

	assert_string_equal(nxq_size_format(v, NXQ_SIZE_IEC, buf, sizeof(buf)), iec);
	assert_string_equal(nxq_size_format(v, NXQ_SIZE_SHORT, buf, sizeof(buf)), kern);
}

/* The largest unit held at least once; exact as an integer, else one decimal, rounded down. */
static void test_format_boundaries(void **state)
{
	(void)state;
	fmt_is(0, "0 B", "0");
	fmt_is(1, "1 B", "1");
	fmt_is(1000, "1000 B", "1000");
	fmt_is(1023, "1023 B", "1023");
	fmt_is(KI, "1 KiB", "1K");
	fmt_is(KI + 1, "1.0 KiB", "1.0K");		/* not exact: a decimal */
	fmt_is(1536, "1.5 KiB", "1.5K");
	fmt_is(MI - 1, "1023.9 KiB", "1023.9K");	/* rounded up it would be 1024.0 KiB */
	fmt_is(MI - 52, "1023.9 KiB", "1023.9K");	/* 1023.949: %.1f said 1023.9 */
	fmt_is(MI - 51, "1023.9 KiB", "1023.9K");	/* 1023.950: %.1f said 1024.0 */
	fmt_is(MI, "1 MiB", "1M");
	fmt_is(MI + MI / 2, "1.5 MiB", "1.5M");
	fmt_is(4 * MI - 1, "3.9 MiB", "3.9M");		/* %.1f said 4.0 MiB */
	fmt_is(GI - 1, "1023.9 MiB", "1023.9M");
	fmt_is(GI, "1 GiB", "1G");
	fmt_is(4 * GI, "4 GiB", "4G");
	fmt_is(4 * GI - 400 * MI, "3.6 GiB", "3.6G");
	fmt_is(80 * GI + 1, "80.0 GiB", "80.0G");
	fmt_is(141000000000ULL, "131.3 GiB", "131.3G");
	fmt_is(TI - 1, "1023.9 GiB", "1023.9G");
	fmt_is(5 * TI, "5 TiB", "5T");
	fmt_is(PI, "1 PiB", "1P");
	fmt_is(EI, "1024 PiB", "1024P");		/* P is the largest unit */
	fmt_is(UINT64_MAX, "16383.9 PiB", "16383.9P");
}

/* Every value of a unit's range: the integer part below 1024, the tenth never 10. */
static void test_format_sweep(void **state)
{
	char buf[NXQ_SIZE_FMT_LEN];

	(void)state;
	for (uint64_t v = 1; v < 4 * MI; v += v < 4096 ? 1 : 37) {
		unsigned long long q;
		unsigned int t;
		char unit[8];

		nxq_size_format(v, NXQ_SIZE_IEC, buf, sizeof(buf));
		assert_null(strstr(buf, "1024"));
		if (sscanf(buf, "%llu.%u %7s", &q, &t, unit) == 3)
			assert_true(t <= 9 && q >= 1 && q <= 1023);
	}
}

/* A short buffer is cut, NUL-terminated, as snprintf() cuts. */
static void test_format_short_buffer(void **state)
{
	char buf[6];

	(void)state;
	assert_string_equal(nxq_size_format(1536 * MI, NXQ_SIZE_IEC, buf, sizeof(buf)), "1.5 G");
	assert_ptr_equal(nxq_size_format(1, NXQ_SIZE_SHORT, buf, sizeof(buf)), buf);
}

/* What the kernel's spelling writes exactly, nxq_size_parse_b() reads back. */
static void test_format_roundtrip(void **state)
{
	static const uint64_t vals[] = { 0, 1, 1023, KI, 4 * KI, MI, 8 * GI, 5 * TI, 7 * PI };
	char buf[NXQ_SIZE_FMT_LEN];
	uint64_t v;

	(void)state;
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		assert_int_equal(nxq_size_parse_b(nxq_size_format(vals[i], NXQ_SIZE_SHORT, buf,
								  sizeof(buf)), false, &v), 0);
		assert_int_equal(v, vals[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quantity_k8s_suffixes),
		cmocka_unit_test(test_quantity_k8s_fractions),
		cmocka_unit_test(test_quantity_k8s_large),
		cmocka_unit_test(test_quantity_examples),
		cmocka_unit_test(test_quantity_invalid),
		cmocka_unit_test(test_size_suffixes),
		cmocka_unit_test(test_size_errors),
		cmocka_unit_test(test_size_max),
		cmocka_unit_test(test_size_b_plain),
		cmocka_unit_test(test_size_b_suffixes),
		cmocka_unit_test(test_size_b_max),
		cmocka_unit_test(test_size_b_garbage),
		cmocka_unit_test(test_format_boundaries),
		cmocka_unit_test(test_format_sweep),
		cmocka_unit_test(test_format_short_buffer),
		cmocka_unit_test(test_format_roundtrip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
