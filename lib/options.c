// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Options: the one validator of options structs (size, zero tail) and
 * the environment variables that fill fields left 0.
 *
 * Layer 1: calls only err.c and size.c.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "size.h"

/*
 * The published sizes of nxq_arena_opts: each version ends at its last
 * field (LP64, where the sizes were taken), and a field added later
 * lies past every earlier size, so an old caller never supplies it.
 */
#if UINTPTR_MAX == UINT64_MAX
_Static_assert(offsetof(struct nxq_arena_opts, grow_timeout_ms) == NXQ_ARENA_OPTS_SIZE_VER0,
	       "nxq_arena_opts version 0 ends at handle_pool");
_Static_assert(offsetof(struct nxq_arena_opts, grow_min) == NXQ_ARENA_OPTS_SIZE_VER1,
	       "nxq_arena_opts version 1 ends at grow_timeout_ms");
_Static_assert(sizeof(struct nxq_arena_opts) == NXQ_ARENA_OPTS_SIZE_VER2,
	       "nxq_arena_opts is version 2 (grow_min): update NXQ_ARENA_OPTS_SIZE_VER*");
#endif

/*
 * Copy an options struct of in_size bytes (its first field) into out
 * (out_size bytes, zeroed first): in_size at least ver0 and at most 4096;
 * bytes past the fields this library knows must be zero.  0, or -EINVAL /
 * -E2BIG with the message set; out untouched on failure.
 */
int nxq__opts_copy(void *out, size_t out_size, const void *in, uint32_t in_size, uint32_t ver0,
		   const char *what)
{
	const unsigned char *p = in;

	if (in_size < ver0)
		return nxq__err(-EINVAL, "nxquota: %s.size %u is below the first version (%u)",
				what, in_size, ver0);
	if (in_size > 4096)
		return nxq__err(-E2BIG, "nxquota: %s.size %u is above 4096", what, in_size);
	for (uint32_t i = (uint32_t)out_size; i < in_size; i++)
		if (p[i])
			return nxq__err(-E2BIG, "nxquota: %s has non-zero bytes past the fields "
					"this library knows (offset %u)", what, i);
	memset(out, 0, out_size);
	memcpy(out, in, in_size < out_size ? in_size : out_size);
	return 0;
}

/* lib/size.h's kernel convention, without "max". */
int nxq__parse_size(const char *s, uint64_t *out)
{
	return nxq_size_parse(s, false, out);
}

int nxq__env_size(const char *name, uint64_t *out)
{
	const char *s = getenv(name);
	int r;

	if (!s)
		return 0;
	r = nxq__parse_size(s, out);
	if (r < 0)
		return nxq__err(-EINVAL, "nxquota: environment %s=\"%s\" is not a size "
				"(bytes, optional K/M/G/T/P/E suffix)", name, s);
	return 1;
}

int nxq__env_ms(const char *name, uint64_t *out)
{
	const char *s = getenv(name);
	unsigned long long v;
	char *end;

	if (!s)
		return 0;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*s < '0' || *s > '9' || *end || errno || v > 86400000ULL)
		return nxq__err(-EINVAL, "nxquota: environment %s=\"%s\" is not a number of "
				"milliseconds (digits, at most 86400000)", name, s);
	*out = v;
	return 1;
}

static int opt_size(uint64_t opt, const char *env, uint64_t def, int zero_ok,
		    const char *what, uint64_t *out)
{
	int r;

	if (opt == NXQ_OPT_ZERO) {
		if (!zero_ok)
			return nxq__err(-EINVAL, "nxquota: %s cannot be 0", what);
		*out = 0;
		return 0;
	}
	if (opt) {
		*out = opt;
		return 0;
	}
	r = nxq__env_size(env, out);
	if (r < 0)
		return r;
	if (r == 0)
		*out = def;
	else if (!*out && !zero_ok)
		return nxq__err(-EINVAL, "nxquota: environment %s cannot be 0", env);
	return 0;
}

int nxq__read_arena_opts(const struct nxq_arena_opts *in, struct nxq_arena_opts *o,
			   uint64_t *va, uint64_t *batch, uint64_t *retain, uint64_t *pool,
			   uint64_t *gran, uint64_t *wait_ms, uint64_t *gmin)
{
	int r;

	memset(o, 0, sizeof(*o));
	if (in) {
		r = nxq__opts_copy(o, sizeof(*o), in, in->size, NXQ_ARENA_OPTS_SIZE_VER0,
				   "nxq_arena_opts");
		if (r)
			return r;
	}
	if (o->flags || o->pad)
		return nxq__err(-EINVAL, "nxquota: nxq_arena_opts.flags/pad must be 0");
	if (o->backend > NXQ_BACKEND_CUDA)
		return nxq__err(-EINVAL, "nxquota: unknown backend %u", o->backend);
	if (o->priority > NXQ_PRIORITY_MAX)
		return nxq__err(-EINVAL, "nxquota: priority %u above %u", o->priority,
				NXQ_PRIORITY_MAX);
	if (o->device_key && (!*o->device_key ||
			      strlen(o->device_key) >= NXQ_DEVICE_KEY_MAX))
		return nxq__err(-EINVAL, "nxquota: device key must be 1..%d characters",
				NXQ_DEVICE_KEY_MAX - 1);
	if ((r = opt_size(o->va_size, "NXQ_VA_SIZE", 64 * GiB, 0, "va_size", va)) ||
	    (r = opt_size(o->grow_batch, "NXQ_GROW_BATCH", 64 * MiB, 0, "grow_batch", batch)) ||
	    (r = opt_size(o->retain_idle, "NXQ_RETAIN_IDLE", 64 * MiB, 1, "retain_idle", retain)) ||
	    (r = opt_size(o->handle_pool, "NXQ_HANDLE_POOL", 64 * MiB, 1, "handle_pool", pool)) ||
	    (r = opt_size(o->granule, "NXQ_GRANULE", 0, 0, "granule", gran)) ||
	    /* 0 is one granule (grow_batch's rule alone); absent below VER2 */
	    (r = opt_size(o->grow_min, "NXQ_GROW_MIN", 0, 1, "grow_min", gmin)))
		return r;
	if (*gmin > *va)
		return nxq__err(-EINVAL, "nxquota: grow_min (%s) %llu is above va_size %llu",
				o->grow_min ? "nxq_arena_opts.grow_min" : "NXQ_GROW_MIN",
				(unsigned long long)*gmin, (unsigned long long)*va);
	if (o->grow_timeout_ms == NXQ_OPT_ZERO) {
		*wait_ms = 0;
	} else if (o->grow_timeout_ms) {
		if (o->grow_timeout_ms > 86400000ULL)
			return nxq__err(-EINVAL, "nxquota: grow_timeout_ms above a day");
		*wait_ms = o->grow_timeout_ms;
	} else {
		*wait_ms = 0;
		r = nxq__env_ms("NXQ_GROW_TIMEOUT_MS", wait_ms);
		if (r < 0)
			return r;
	}
	return 0;
}

