/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquotactl's pure helpers: sizes for people and Prometheus label values
 * (sizes are parsed by lib/size.c, JSON written by json-c: jsonout.c).  No I/O beyond the FILE given, no libnl:
 * tests/tools/ tests them with cmocka.
 */
#ifndef NXQ_TOOLS_FMT_H
#define NXQ_TOOLS_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define NXQ_FMT_SIZE_LEN	32

/*
 * Format bytes for people into buf (NXQ_FMT_SIZE_LEN bytes): "max" for
 * NXQ_UNLIMITED when is_max, else lib/size.c's nxq_size_format() in the
 * kernel's spelling: plain bytes below 1 KiB, an exact "8G" when the
 * value is a multiple of its unit, else one decimal, rounded down
 * ("1.5G", "1023.9K").  Returns buf.
 */
const char *nxq_format_size(uint64_t v, bool is_max, char *buf);

/*
 * The same for a signed byte count: "-" and the magnitude when negative
 * ("-1.5G"), as nxq_format_size() otherwise.  Returns buf.
 */
const char *nxq_format_ssize(int64_t v, char *buf);

/* Write s as a Prometheus label value, quotes included. */
void nxq_prom_label(FILE *f, const char *s);

/* "EDQUOT" for 122 and so on; "errno N" when unknown (static buffer). */
const char *nxq_errno_name(int err);

#endif /* NXQ_TOOLS_FMT_H */
