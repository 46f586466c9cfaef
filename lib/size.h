/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * The one userspace size parser and the one size formatter (size.c),
 * for the library, the tools, the preload shim, the OCI hook and the
 * PyTorch integration (the kernel's sysfs files parse with the kernel's
 * own memparse()).  Two conventions to parse:
 *
 *  - the kernel's (memparse, cgroupfs, sysfs and nxquotactl): digits and
 *    a binary suffix, "40G" = 40 * 2^30 (nxq_size_parse_b() also takes
 *    "40GB" and "40GiB", for what people type);
 *  - Kubernetes' resource.Quantity (what a container runtime hands over):
 *    "40G" = 40 * 10^9, "40Gi" = 40 * 2^30, "1.5Gi", "4e9".
 *
 * Pure functions over a C string: no allocation, no locale, libc only.
 */
#ifndef NXQ_SIZE_H
#define NXQ_SIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * nxq_size_parse() - parse a size the way the kernel and cgroupfs write it
 * @s:		decimal digits, then optionally one of K, M, G, T, P, E (any
 *		case; powers of 1024, as memparse()), which may be followed
 *		by "i" ("Ki" ... "Ei", the same powers); or, with
 *		@allow_max, exactly "max"
 * @allow_max:	accept "max", which gives UINT64_MAX
 * @out:	the value in bytes; untouched on failure
 *
 * Return: 0; -ERANGE when the value does not fit 64 bits; -EINVAL for
 * anything else (NULL, empty, a sign, a space, a fraction, hex, an unknown
 * or repeated suffix, "B").
 */
int nxq_size_parse(const char *s, bool allow_max, uint64_t *out);

/**
 * nxq_size_parse_b() - nxq_size_parse(), and people's "B" after a suffix
 * @s:		as nxq_size_parse(), and a suffix may end in "B" or "b":
 *		"8GB", "8GiB" and "8gib" are "8G" (powers of 1024 all the
 *		same); "8B" is not a size (bytes are plain digits)
 * @allow_max:	accept "max", which gives UINT64_MAX
 * @out:	the value in bytes; untouched on failure
 *
 * For what operators and applications type: nxquotactl's sizes and the
 * PyTorch integration's environment.  The library's own environment and
 * sysfs keep nxq_size_parse(), as the kernel's memparse() has no "B".
 *
 * Return: as nxq_size_parse().
 */
int nxq_size_parse_b(const char *s, bool allow_max, uint64_t *out);

/**
 * nxq_quantity_parse() - parse a Kubernetes quantity as a number of bytes
 * @s:		a resource.Quantity as apimachinery's ParseQuantity() reads
 *		it: an optional sign, digits with an optional fraction
 *		("1.5", "1.", ".5"), then nothing, a binary suffix (Ki Mi Gi
 *		Ti Pi Ei), a decimal suffix (n u m k M G T P E) or a decimal
 *		exponent (e or E, an optional sign and digits: "4e9",
 *		"1E-3")
 * @out:	the value in bytes, rounded up to a whole byte as
 *		Quantity.Value() does ("1.5" -> 2, "1m" -> 1); untouched on
 *		failure
 *
 * Where this differs from Kubernetes, it is stricter, never different in
 * value: the number needs at least one digit (ParseQuantity reads "-",
 * "." and "Gi" as 0), and values are exact up to UINT64_MAX
 * (Kubernetes caps binary values at 2^63-1 and wraps huge exponents).
 *
 * Return: 0; -EINVAL for a negative value ("-0" is 0), garbage or NULL;
 * -ERANGE when the value is above UINT64_MAX.
 */
int nxq_quantity_parse(const char *s, uint64_t *out);

/* nxq_size_format()'s spellings of one rule. */
enum nxq_size_style {
	NXQ_SIZE_IEC,	/* for people: "8 GiB", "1.5 MiB", "1000 B" (the shim's messages) */
	NXQ_SIZE_SHORT,	/* the kernel's: "8G", "1.5M", "1000" (nxquotactl, nxquota-hook) */
};

/* Room for any value in either style, the terminating NUL included. */
#define NXQ_SIZE_FMT_LEN	32

/**
 * nxq_size_format() - write a size in bytes for people
 * @v:		the size in bytes
 * @style:	NXQ_SIZE_IEC or NXQ_SIZE_SHORT: the unit's spelling
 * @buf:	where to write it, NUL-terminated
 * @n:		@buf's size (NXQ_SIZE_FMT_LEN holds any value)
 *
 * One rule for every userspace writer: the largest unit of K, M, G, T,
 * P (powers of 1024) that @v holds at least one of, plain bytes below
 * 1 KiB; the count of that unit as an integer when @v is an exact
 * multiple of it, else with one decimal, rounded down.  So 1023 is
 * "1023 B", 1024 "1 KiB", 1536 "1.5 KiB", 1048576 "1 MiB", 4294967296
 * "4 GiB", 1000 "1000 B"; 1048575 is "1023.9 KiB", never "1024.0 KiB"
 * nor "1.0 MiB": a size said is never more than the value (a room or a
 * limit in a refusal, next to the size that was refused).  A decimal
 * thus says the value is not exact ("80.0G" is a little over 80 GiB).
 * Values of 1024 PiB and more stay in PiB.  NXQ_SIZE_SHORT's exact
 * values read back with nxq_size_parse_b().
 *
 * Return: @buf.
 */
const char *nxq_size_format(uint64_t v, enum nxq_size_style style, char *buf, size_t n);

#endif /* NXQ_SIZE_H */
