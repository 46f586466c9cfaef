// SPDX-License-Identifier: GPL-2.0
/* nxquotactl's pure helpers; see fmt.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <strings.h>

#include <linux/nxquota.h>

#include "fmt.h"

static const char units[] = "KMGTP";

int nxq_parse_size(const char *s, bool allow_max, uint64_t *out)
{
	unsigned int shift = 0;
	const char *p = s, *u;
	uint64_t v = 0;

	if (allow_max && !strcmp(s, "max")) {
		*out = NXQ_UNLIMITED;
		return 0;
	}
	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (*p) {
		u = strchr(units, *p >= 'a' ? *p - 'a' + 'A' : *p);
		if (!u || !*u)
			return -EINVAL;
		shift = 10 * (unsigned int)(u - units + 1);
		p++;
		if (!strcasecmp(p, "i") || !strcasecmp(p, "ib") ||
		    !strcasecmp(p, "b"))
			p += strlen(p);
		if (*p)
			return -EINVAL;
	}
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = v << shift;
	return 0;
}

const char *nxq_format_size(uint64_t v, bool is_max, char *buf)
{
	unsigned int i = 0;
	uint64_t unit = 1024;

	if (is_max && v == NXQ_UNLIMITED) {
		snprintf(buf, NXQ_FMT_SIZE_LEN, "max");
		return buf;
	}
	if (v < 1024) {
		snprintf(buf, NXQ_FMT_SIZE_LEN, "%llu", (unsigned long long)v);
		return buf;
	}
	while (i + 1 < sizeof(units) - 1 && v / unit >= 1024) {
		unit <<= 10;
		i++;
	}
	if (v % unit == 0)
		snprintf(buf, NXQ_FMT_SIZE_LEN, "%llu%c",
			 (unsigned long long)(v / unit), units[i]);
	else
		snprintf(buf, NXQ_FMT_SIZE_LEN, "%llu.%u%c",
			 (unsigned long long)(v / unit),
			 (unsigned int)((v % unit) * 10 / unit), units[i]);
	return buf;
}

const char *nxq_format_ssize(int64_t v, char *buf)
{
	char abs[NXQ_FMT_SIZE_LEN];
	uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	nxq_format_size(m, false, abs);
	/* "16383.9P" at most: the precision only quiets the compiler */
	snprintf(buf, NXQ_FMT_SIZE_LEN, "%s%.30s", v < 0 ? "-" : "", abs);
	return buf;
}

void nxq_json_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	for (; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		default:
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

void nxq_prom_label(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '"')
			fputs("\\\"", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

const char *nxq_errno_name(int err)
{
	static char other[32];
	const char *s = err > 0 ? strerrorname_np(err) : NULL;

	if (s)
		return s;
	snprintf(other, sizeof(other), "errno %d", err);
	return other;
}
