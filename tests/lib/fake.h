/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * A fake kernel (struct nxq_kops) and a fake backend (struct nxq_be_ops)
 * for the cmocka tests.  The fake backend wraps the real host backend, so
 * allocations are real memory, and counts every call; either fake can be
 * told to fail its n-th call of one kind.  One global state: the tests are
 * single-threaded around these counters.
 */
#ifndef NXQ_TEST_FAKE_H
#define NXQ_TEST_FAKE_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/* ---- fake kernel ---- */

struct fake_kernel {
	uint64_t charged;		/* sum over holders */
	uint64_t cap;			/* 0 = none; EDQUOT above it */
	uint64_t reclaimable;
	int holders;
	int version_calls, register_calls, unregister_calls;
	int charge_calls, uncharge_calls, reclaim_calls;
	int fail_charge_at;		/* n-th charge call fails (1-based), 0 = never */
	int fail_err;
	int abi_version;		/* 0 = NXQ_ABI_VERSION */
	uint64_t features;		/* 0 = all */
	int errors;			/* ABI misuse seen */
};

static struct fake_kernel fk;

static int fk_version(struct nxq_ctx *ctx, struct nxq_version *v)
{
	fk.version_calls++;
	v->abi_version = fk.abi_version ? (uint32_t)fk.abi_version : NXQ_ABI_VERSION;
	v->features = fk.features ? fk.features : 0xf;
	return 0;
}

static int fk_register(struct nxq_ctx *ctx, struct nxq_holder_reg *reg)
{
	fk.register_calls++;
	if (reg->size != sizeof(*reg) || reg->flags || !reg->device[0] || reg->eventfd != -1)
		fk.errors++;
	if (!strcmp(reg->device, "nodev"))
		return -ENODEV;
	fk.holders++;
	reg->holder_id = 100 + (uint64_t)fk.register_calls;
	return 0;
}

static int fk_unregister(struct nxq_ctx *ctx, uint64_t h)
{
	fk.unregister_calls++;
	fk.holders--;
	return 0;
}

static int fk_charge(struct nxq_ctx *ctx, uint64_t h, uint64_t bytes)
{
	fk.charge_calls++;
	if (!bytes)
		fk.errors++;
	if (fk.fail_charge_at && fk.charge_calls == fk.fail_charge_at)
		return fk.fail_err ? fk.fail_err : -EDQUOT;
	if (fk.cap && fk.charged + bytes > fk.cap)
		return -EDQUOT;
	fk.charged += bytes;
	return 0;
}

static int fk_uncharge(struct nxq_ctx *ctx, uint64_t h, uint64_t bytes)
{
	fk.uncharge_calls++;
	if (!bytes || bytes > fk.charged) {
		fk.errors++;
		return -EINVAL;
	}
	fk.charged -= bytes;
	if (fk.reclaimable > fk.charged)
		fk.reclaimable = fk.charged;
	return 0;
}

static int fk_set_reclaimable(struct nxq_ctx *ctx, uint64_t h, uint64_t bytes)
{
	fk.reclaim_calls++;
	if (bytes > fk.charged) {
		fk.errors++;
		return -EINVAL;
	}
	fk.reclaimable = bytes;
	return 0;
}

static void fk_close(struct nxq_ctx *ctx) { }

static const struct nxq_kops fake_kops = {
	.name = "fake",
	.version = fk_version,
	.holder_register = fk_register,
	.holder_unregister = fk_unregister,
	.charge = fk_charge,
	.uncharge = fk_uncharge,
	.set_reclaimable = fk_set_reclaimable,
	.close = fk_close,
};

/* ---- fake backend over the host backend ---- */

enum fb_op { OP_CREATE, OP_MAP, OP_ACCESS, OP_UNMAP, OP_RELEASE, OP_FENCE, OP_RESERVE,
	     OP_OPEN, OP_QUIESCE, OP_N };

struct fake_fence {
	int done;
	struct fake_fence *next;
};

struct fake_backend {
	int calls[OP_N];
	int fail_op, fail_at;		/* fail the fail_at-th call of fail_op */
	int fail_err;
	long live_handles, live_maps;
	int queries, waits;
	struct fake_fence *fences;	/* all outstanding */
	int nfences;
};

static struct fake_backend fb;

static int fb_fail(enum fb_op op)
{
	fb.calls[op]++;
	if (fb.fail_at && fb.fail_op == (int)op && fb.calls[op] == fb.fail_at)
		return fb.fail_err ? fb.fail_err : -ENOMEM;
	return 0;
}

#define HOST nxq__host_be_ops

static int fb_open(const struct nxq_be_cfg *cfg, void **bep, uint64_t *g, char key[64])
{
	int r = fb_fail(OP_OPEN);

	return r ? r : HOST.open(cfg, bep, g, key);
}
static void fb_close(void *be) { HOST.close(be); }
static int fb_reserve(void *be, uint64_t s, uint64_t a, uint64_t *b)
{
	int r = fb_fail(OP_RESERVE);

	return r ? r : HOST.reserve(be, s, a, b);
}
static int fb_unreserve(void *be, uint64_t b, uint64_t s) { return HOST.unreserve(be, b, s); }
static int fb_create(void *be, uint64_t s, uint64_t *h)
{
	int r = fb_fail(OP_CREATE);

	if (!r && !(r = HOST.create(be, s, h)))
		fb.live_handles++;
	return r;
}
static int fb_release(void *be, uint64_t h)
{
	int r = fb_fail(OP_RELEASE);

	if (!r && !(r = HOST.release(be, h)))
		fb.live_handles--;
	return r;
}
static int fb_map(void *be, uint64_t va, uint64_t s, uint64_t h)
{
	int r = fb_fail(OP_MAP);

	if (!r && !(r = HOST.map(be, va, s, h)))
		fb.live_maps++;
	return r;
}
static int fb_access(void *be, uint64_t va, uint64_t s)
{
	int r = fb_fail(OP_ACCESS);

	return r ? r : HOST.set_access(be, va, s);
}
static int fb_unmap(void *be, uint64_t va, uint64_t s)
{
	int r = fb_fail(OP_UNMAP);

	if (!r && !(r = HOST.unmap(be, va, s)))
		fb.live_maps--;
	return r;
}
static int fb_quiesce(void *be)
{
	return fb_fail(OP_QUIESCE);
}
static int fb_fence_record(void *be, void *stream, void **fence)
{
	struct fake_fence *f;
	int r = fb_fail(OP_FENCE);

	if (r)
		return r;
	f = calloc(1, sizeof(*f));
	f->done = stream == NULL;	/* NULL stream: already complete */
	f->next = fb.fences;
	fb.fences = f;
	fb.nfences++;
	*fence = f;
	return 0;
}
static int fb_fence_query(void *be, void *fence)
{
	fb.queries++;
	return ((struct fake_fence *)fence)->done;
}
static int fb_fence_wait(void *be, void *fence)
{
	fb.waits++;
	((struct fake_fence *)fence)->done = 1;
	return 0;
}
static void fb_fence_free(void *be, void *fence)
{
	struct fake_fence **pp;

	for (pp = &fb.fences; *pp; pp = &(*pp)->next)
		if (*pp == fence) {
			*pp = ((struct fake_fence *)fence)->next;
			break;
		}
	fb.nfences--;
	free(fence);
}

/* Complete every outstanding fence (the stream's work has finished). */
static inline void fb_complete_all(void)
{
	for (struct fake_fence *f = fb.fences; f; f = f->next)
		f->done = 1;
}

static const struct nxq_be_ops fake_be = {
	.name = "fake",
	.open = fb_open,
	.close = fb_close,
	.reserve = fb_reserve,
	.unreserve = fb_unreserve,
	.create = fb_create,
	.release = fb_release,
	.map = fb_map,
	.set_access = fb_access,
	.unmap = fb_unmap,
	.quiesce = fb_quiesce,
	.fence_record = fb_fence_record,
	.fence_query = fb_fence_query,
	.fence_wait = fb_fence_wait,
	.fence_free = fb_fence_free,
};

static void fakes_reset(void)
{
	memset(&fk, 0, sizeof(fk));
	memset(&fb, 0, sizeof(fb));
}

#define MiB (1ULL << 20)
#define GiB (1ULL << 30)

#endif /* NXQ_TEST_FAKE_H */
