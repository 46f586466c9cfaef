// SPDX-License-Identifier: GPL-2.0
/* nxquotactl's pure helpers; see fmt.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/nxquota.h>

#include "fmt.h"
#include "size.h"

_Static_assert(NXQ_FMT_SIZE_LEN >= NXQ_SIZE_FMT_LEN, "room for any size");

const char *nxq_format_size(uint64_t v, bool is_max, char *buf)
{
	if (is_max && v == NXQ_UNLIMITED) {
		snprintf(buf, NXQ_FMT_SIZE_LEN, "max");
		return buf;
	}
	return nxq_size_format(v, NXQ_SIZE_SHORT, buf, NXQ_FMT_SIZE_LEN);
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
