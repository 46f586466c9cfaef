// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Size parsers (size.h): the kernel's convention (memparse: "40G" is
 * 40 GiB) and Kubernetes' resource.Quantity ("40G" is 40 * 10^9 bytes,
 * "40Gi" 40 GiB); and the formatter, nxq_size_format().  No state, no
 * allocation: every caller owns its string and its result.
 *
 * A quantity is exact: its digits are read as a decimal string, never as
 * a double, so "1.000000000000000000001" rounds up to 2 and "0.1Ki" is
 * ceil(102.4) = 103 bytes, as apimachinery's Quantity.Value() gives.
 *
 * Layer 0: calls nothing in lib/ (tools/ build it on its own).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "size.h"

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* *v = *v * 10 + d; false (and *v unchanged) when that overflows. */
static bool mul10_add(uint64_t *v, unsigned int d)
{
	if (*v > (UINT64_MAX - d) / 10)
		return false;
	*v = *v * 10 + d;
	return true;
}

/* *v += a; false (and *v unchanged) when that overflows. */
static bool add_u64(uint64_t *v, uint64_t a)
{
	if (*v > UINT64_MAX - a)
		return false;
	*v += a;
	return true;
}

/* The shift of a memparse suffix letter, any case (K 10 ... E 60), or 0. */
static unsigned int memparse_shift(char c)
{
	static const char units[] = "KMGTPE";
	const char *u;

	if (c >= 'a' && c <= 'z')
		c = (char)(c - 'a' + 'A');
	u = c ? strchr(units, c) : NULL;
	return u ? 10 * (unsigned int)(u - units + 1) : 0;
}

/* The kernel's sizes; with b, a "B" may follow the suffix. */
static int memparse(const char *s, bool allow_max, bool b, uint64_t *out)
{
	unsigned int shift = 0;
	const char *p = s;
	uint64_t v = 0;

	if (!s)
		return -EINVAL;
	if (allow_max && !strcmp(s, "max")) {
		*out = UINT64_MAX;
		return 0;
	}
	if (!is_digit(*p))
		return -EINVAL;
	for (; is_digit(*p); p++)
		if (!mul10_add(&v, (unsigned int)(*p - '0')))
			return -ERANGE;
	if (*p) {
		shift = memparse_shift(*p++);
		if (!shift)
			return -EINVAL;
		if (*p == 'i' || *p == 'I')
			p++;
		if (b && (*p == 'B' || *p == 'b'))
			p++;
		if (*p)
			return -EINVAL;
	}
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = v << shift;
	return 0;
}

int nxq_size_parse(const char *s, bool allow_max, uint64_t *out)
{
	return memparse(s, allow_max, false, out);
}

int nxq_size_parse_b(const char *s, bool allow_max, uint64_t *out)
{
	return memparse(s, allow_max, true, out);
}

/* ---- Kubernetes quantities --------------------------------------------- */

/*
 * A quantity taken apart: [+-] INT [. FRAC] SUFFIX.  Its value is
 * INT.FRAC * 2^shift (binary suffixes) or INT.FRAC * 10^exp (the rest).
 */
struct qty {
	bool neg;
	const char *ip, *fp;	/* the integer's and the fraction's digits */
	size_t ni, nf;
	bool binary;
	unsigned int shift;	/* binary: 10 (Ki) ... 60 (Ei) */
	int64_t exp;		/* decimal: -9 (n) ... 18 (E), or e<exp> */
};

/* Digit i of INT followed by FRAC. */
static unsigned int qty_digit(const struct qty *q, size_t i)
{
	return (unsigned int)((i < q->ni ? q->ip[i] : q->fp[i - q->ni]) - '0');
}

/* apimachinery's decimalExponent: "e" or "E", then strconv.ParseInt. */
static int parse_exponent(const char *s, int64_t *exp)
{
	bool neg = *s == '-';
	uint64_t v = 0;

	if (*s == '+' || *s == '-')
		s++;
	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (!is_digit(*s) || !mul10_add(&v, (unsigned int)(*s - '0')))
			return -EINVAL;		/* ParseInt's syntax or range */
		if (v > (uint64_t)INT64_MAX + neg)
			return -EINVAL;
	}
	*exp = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

/* apimachinery's suffix table (suffix.go), or an exponent. */
static int parse_suffix(const char *s, struct qty *q)
{
	static const struct {
		char name[3];
		bool binary;
		int exp;	/* a power of 2 when binary, else of 10 */
	} tab[] = {
		{ "", false, 0 },
		{ "n", false, -9 }, { "u", false, -6 }, { "m", false, -3 },
		{ "k", false, 3 }, { "M", false, 6 }, { "G", false, 9 },
		{ "T", false, 12 }, { "P", false, 15 }, { "E", false, 18 },
		{ "Ki", true, 10 }, { "Mi", true, 20 }, { "Gi", true, 30 },
		{ "Ti", true, 40 }, { "Pi", true, 50 }, { "Ei", true, 60 },
	};
	size_t i;

	for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		if (strcmp(s, tab[i].name))
			continue;
		q->binary = tab[i].binary;
		if (q->binary)
			q->shift = (unsigned int)tab[i].exp;
		else
			q->exp = tab[i].exp;
		return 0;
	}
	if ((s[0] == 'e' || s[0] == 'E') && s[1])
		return parse_exponent(s + 1, &q->exp);
	return -EINVAL;
}

/* Take s apart into q: -EINVAL unless it is a well-formed quantity. */
static int qty_split(const char *s, struct qty *q)
{
	memset(q, 0, sizeof(*q));
	if (*s == '+' || *s == '-')
		q->neg = *s++ == '-';
	q->ip = s;
	while (is_digit(*s))
		s++;
	q->ni = (size_t)(s - q->ip);
	q->fp = s;
	if (*s == '.') {
		q->fp = ++s;
		while (is_digit(*s))
			s++;
		q->nf = (size_t)(s - q->fp);
	}
	if (!q->ni && !q->nf)	/* stricter than Kubernetes: "-", ".", "Gi" */
		return -EINVAL;
	return parse_suffix(s, q);
}

/*
 * INT.FRAC * 2^shift, rounded up.  INT << shift, plus the fraction's
 * share, which Horner's rule builds from the last digit up: with
 * y = FRAC's value * 2^shift, y_i = (d_i * 2^shift + y_i+1) / 10, and
 * floor(y_i) only needs floor(y_i+1); y < 2^shift at every step, so
 * d_i * 2^shift + floor(y) < 10 * 2^60 fits 64 bits.
 */
static int qty_binary(const struct qty *q, uint64_t *out)
{
	uint64_t v = 0, fl = 0, t;
	bool exact = true;
	size_t i;

	for (i = 0; i < q->ni; i++)
		if (!mul10_add(&v, qty_digit(q, i)))
			return -ERANGE;
	if (v > (UINT64_MAX >> q->shift))
		return -ERANGE;
	v <<= q->shift;
	for (i = q->nf; i-- > 0;) {
		t = ((uint64_t)(q->fp[i] - '0') << q->shift) + fl;
		exact &= t % 10 == 0;
		fl = t / 10;
	}
	if (!add_u64(&v, fl) || !add_u64(&v, !exact))
		return -ERANGE;
	*out = v;
	return 0;
}

/*
 * INT.FRAC * 10^exp, rounded up: the decimal point moves to P = ni + exp
 * over the digits INT FRAC; the digits before P (zeros past the end) are
 * the integer, any non-zero digit after it rounds up.
 */
static int qty_decimal(const struct qty *q, uint64_t *out)
{
	int64_t n = (int64_t)(q->ni + q->nf), p, i;
	bool frac = false;
	uint64_t v = 0;

	/* a non-zero digit 10^21 or more: past 2^64 (the caller checked) */
	if (q->exp > n + 20 - (int64_t)q->ni)
		return -ERANGE;
	p = q->exp < -n ? -1 : (int64_t)q->ni + q->exp;
	for (i = 0; i < p; i++)
		if (!mul10_add(&v, i < n ? qty_digit(q, (size_t)i) : 0))
			return -ERANGE;
	for (i = p < 0 ? 0 : p; i < n; i++)
		frac |= qty_digit(q, (size_t)i) != 0;
	if (!add_u64(&v, frac))
		return -ERANGE;
	*out = v;
	return 0;
}

int nxq_quantity_parse(const char *s, uint64_t *out)
{
	bool zero = true;
	struct qty q;
	size_t i;
	int err;

	if (!s)
		return -EINVAL;
	err = qty_split(s, &q);
	if (err)
		return err;
	for (i = 0; i < q.ni + q.nf; i++)
		zero &= qty_digit(&q, i) == 0;
	if (zero) {		/* "-0", "0.000Ei", "0e99999" */
		*out = 0;
		return 0;
	}
	if (q.neg)
		return -EINVAL;
	return q.binary ? qty_binary(&q, out) : qty_decimal(&q, out);
}

const char *nxq_size_format(uint64_t v, enum nxq_size_style style, char *buf, size_t n)
{
	static const char *const iec[] = { " B", " KiB", " MiB", " GiB", " TiB", " PiB" };
	static const char *const kern[] = { "", "K", "M", "G", "T", "P" };
	const char *unit;
	unsigned int u = 0, shift = 0;
	uint64_t r;

	while (u + 1 < sizeof(iec) / sizeof(iec[0]) && v >> (shift + 10)) {
		shift += 10;
		u++;
	}
	unit = style == NXQ_SIZE_SHORT ? kern[u] : iec[u];
	r = v & ((1ULL << shift) - 1);
	if (!r)
		snprintf(buf, n, "%llu%s", (unsigned long long)(v >> shift), unit);
	else	/* r < 2^50: r * 10 fits */
		snprintf(buf, n, "%llu.%u%s", (unsigned long long)(v >> shift),
			 (unsigned int)((r * 10) >> shift), unit);
	return buf;
}
