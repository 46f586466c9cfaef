/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * The one userspace size parser (size.c), for the library, the tools,
 * the preload shim, the OCI hook and the PyTorch integration (the
 * kernel's sysfs files parse with the kernel's own memparse()).  Two
 * conventions:
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

#endif /* NXQ_SIZE_H */
