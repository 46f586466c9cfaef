// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Pool wrappers: stream-ordered allocation (cuMemAllocAsync,
 * cuMemAllocFromPoolAsync and their _ptsz forms) charged by what each
 * pool reserves, not per block; cuMemPoolTrimTo, cuMemPoolCreate and
 * cuMemPoolDestroy settle it.  Owns the pool slots (S.pool[], each under
 * its mutex).  While no authority answers (ST_DOWN) pools are known, not
 * charged; connect.c's catch-up charges what they reserve.
 *
 * Layer 4: calls charge.c, authority.c, resolve.c, state.c.
 */
#include "shim.h"

/* ---- stream-ordered pools ---- */

int pool_attr(CUmemoryPool pool, int attr, uint64_t *v)
{
	CUresult (*f)(CUmemoryPool, int, void *) =
		(CUresult (*)(CUmemoryPool, int, void *))R(R_cuMemPoolGetAttribute);

	if (!f || f(pool, attr, v))
		return -1;
	return 0;
}

/* The slot of pool (created with dev if absent and dev is given); NULL if none. */
static struct pool *pool_slot(CUmemoryPool pool, int dev, int create)
{
	static __thread struct pool *last __attribute__((tls_model("initial-exec")));
	struct pool *p = NULL;

	/* this thread's last pool first: a warm loop does not scan the slots */
	if (last && __atomic_load_n(&last->pool, __ATOMIC_ACQUIRE) == pool)
		return last;
	for (int i = 0; i < MAXPOOL; i++)
		if (__atomic_load_n(&S.pool[i].pool, __ATOMIC_ACQUIRE) == pool)
			return last = &S.pool[i];
	if (!create)
		return NULL;
	pthread_mutex_lock(&S.lock);
	for (int i = 0; i < MAXPOOL; i++) {
		if (S.pool[i].pool == pool) {
			p = &S.pool[i];
			break;
		}
		if (!p && !S.pool[i].pool)
			p = &S.pool[i];
	}
	if (p && p->pool != pool) {
		p->dev = dev;
		p->charged = 0;
		p->reserved = 0;
		p->used_ub = 0;
		__atomic_store_n(&p->pool, pool, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&S.lock);
	if (!p)
		SAY_ONCE(S.said_pool, "more than %d memory pools: allocations from the others "
			 "are refused", MAXPOOL);
	return p;
}

/*
 * Bring a pool's charge to what it reserves (p->mu held); up only when
 * may_grow (the charge may be refused: -1).  Down, up to keep bytes above
 * the reservation stay charged: after an allocation, the charge ahead of
 * its size, so that the next pair of the same size needs no authority
 * (the pool's "used" counts a stream-ordered free until the driver has
 * seen it done, though the same stream reuses the block at once; without
 * this each such pair would charge ahead and settle back: two trips).  An
 * overcharge, never an undercharge; a trim, a ticket or a destroy settle
 * it exactly.
 */
int pool_settle(struct pool *p, int may_grow, uint64_t keep)
{
	uint64_t res, h = S.dev[p->dev].pholder;

	if (pool_attr(p->pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT_, &res))
		return 0;	/* cannot tell: keep the charge */
	p->reserved = res;
	if (res > p->charged) {
		if (!may_grow || charge(p->dev, H_POOL, h, res - p->charged, res - p->charged))
			return -1;
		p->charged = res;
	} else if (res + keep < p->charged && res + keep >= res) {
		uncharge(h, p->charged - res - keep);
		p->charged = res + keep;
	}
	return 0;
}

/*
 * The device a stream-ordered allocation on s takes its memory from: the
 * stream's (cuStreamGetDevice, CUDA 12.8), not the calling thread's
 * current one -- a stream of another device allocates there (HAMi-core's
 * #310).  The default streams (NULL, legacy, per-thread) are the current
 * context's; a process that sees one device asks nothing; without the
 * entry point (an older driver), the current device.
 */
static int stream_dev(CUstream s)
{
	CUresult (*f)(CUstream, CUdevice *) =
		(CUresult (*)(CUstream, CUdevice *))R(R_cuStreamGetDevice);
	CUdevice d;

	if ((uintptr_t)s <= 2 || __atomic_load_n(&S.one_dev, __ATOMIC_RELAXED) == 1 || !f ||
	    f(s, &d) || d < 0 || d >= MAXDEV)
		return cur_dev();
	return d;
}

typedef CUresult (*pool_alloc_fn)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
typedef CUresult (*async_alloc_fn)(CUdeviceptr *, size_t, CUstream);

/*
 * One stream-ordered allocation: pool is NULL for cuMemAllocAsync (the
 * current pool of the stream's device).  Charged ahead by the growth it may
 * cause (used + size above the charge, in 2 MiB steps), settled to the
 * pool's reservation after.  A growth beyond the charge that is refused
 * frees the block back and trims the pool to the charge.
 */
static CUresult pool_alloc(int ri, int fri, CUdeviceptr *dptr, size_t size, CUmemoryPool pool,
			   CUstream s)
{
	void *f = R(ri);
	struct pool *p;
	uint64_t used, need;
	CUresult cr;
	int ord, st;

	if (!f)
		return CUDA_ERROR_NOT_INITIALIZED;
#define CALL() (pool && (ri == R_cuMemAllocFromPoolAsync || ri == R_cuMemAllocFromPoolAsync_ptsz) \
		? ((pool_alloc_fn)f)(dptr, size, pool, s) : ((async_alloc_fn)f)(dptr, size, s))
	if (depth || !size)
		return CALL();
	st = authority();
	if (__builtin_expect(st == ST_DOWN, 0) && S.require) {
		CNT(refused);	/* NXQUOTA_REQUIRE and no authority */
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (st == ST_PASS)
		return CALL();
	ord = stream_dev(s);
	if (ord < 0)
		return CALL();
	if (!pool) {
		CUresult (*gp)(CUmemoryPool *, CUdevice) =
			(CUresult (*)(CUmemoryPool *, CUdevice))R(R_cuDeviceGetMemPool);

		if (!gp || gp(&pool, ord) || !pool)
			return CALL();
		p = pool_slot(pool, ord, 1);
		pool = NULL;	/* the call itself takes no pool */
	} else {
		p = pool_slot(pool, ord, 1);
	}
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (p->dev < 0 || p->dev >= MAXDEV)
		return CALL();
	/*
	 * No authority yet: the pool is known (its slot), not charged; when
	 * one comes, what it reserves is (connect.c, or this wrapper's next
	 * call: its charge is then below its reservation).
	 */
	if (__atomic_load_n(&S.state, __ATOMIC_ACQUIRE) == ST_DOWN)
		return CALL();
	st = dev_state(p->dev, H_POOL);
	if (st == DS_PASS)
		return CALL();
	if (st == DS_REFUSE || owed_first(p->dev)) {	/* what it owes on the device first */
		CNT(refused);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_lock(&p->mu);
	/*
	 * What the pool uses is at most what it used when last asked plus
	 * what this wrapper allocated from it since (frees only lower it), and
	 * at most what it reserved when last asked (pool_settle() after each
	 * allocation; a reservation only shrinks by itself): while that bound
	 * leaves room under the charge, no driver call to ask (a warm loop of
	 * small pairs asks once per charge's worth); else the pool is asked.
	 * An allocation this wrapper did not see (the driver's own) can make
	 * the bound low: the growth is then charged after, as any growth
	 * beyond the charge ahead is (pool_settle()).
	 */
	used = p->used_ub < p->reserved ? p->used_ub : p->reserved;
	if (used + size > p->charged &&
	    pool_attr(p->pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT_, &used))
		used = p->charged;
	need = 0;
	if (used + size > p->charged)
		need = (used + size - p->charged + POOL_STEP - 1) / POOL_STEP * POOL_STEP;
	if (need && charge(p->dev, H_POOL, S.dev[p->dev].pholder, need, need)) {
		pthread_mutex_unlock(&p->mu);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	p->charged += need;
	depth++;
	cr = CALL();
	depth--;
	if (!cr)
		p->used_ub = used + size > used ? used + size : UINT64_MAX;
	if (pool_settle(p, 1, cr ? 0 : (size + POOL_STEP - 1) / POOL_STEP * POOL_STEP)) {
		/* grew past its charge and the rest was refused: give it back */
		CUresult (*fr)(CUdeviceptr, CUstream) =
			(CUresult (*)(CUdeviceptr, CUstream))R(fri);
		CUresult (*trim)(CUmemoryPool, size_t) =
			(CUresult (*)(CUmemoryPool, size_t))R(R_cuMemPoolTrimTo);

		int si = fri == R_cuMemFreeAsync_ptsz && R(R_cuStreamSynchronize_ptsz)
			 ? R_cuStreamSynchronize_ptsz : R_cuStreamSynchronize;
		CUresult (*sync)(CUstream) = (CUresult (*)(CUstream))R(si);

		depth++;
		if (!cr && fr)
			fr(*dptr, s);
		if (!cr && sync)
			sync(s);	/* a trim gives back only frees the host saw complete */
		if (trim)
			trim(p->pool, 0);
		depth--;
		pool_settle(p, 0, 0);
		cr = CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&p->mu);
	return cr;
#undef CALL
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream s)
{
	return pool_alloc(R_cuMemAllocAsync, R_cuMemFreeAsync, dptr, size, NULL, s);
}

EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t size, CUstream s)
{
	return pool_alloc(R_cuMemAllocAsync_ptsz, R_cuMemFreeAsync_ptsz, dptr, size, NULL, s);
}

EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t size, CUmemoryPool pool,
					CUstream s)
{
	if (!pool) {
		REAL_OR_FAIL(pool_alloc_fn, R_cuMemAllocFromPoolAsync);
		return f(dptr, size, pool, s);
	}
	return pool_alloc(R_cuMemAllocFromPoolAsync, R_cuMemFreeAsync, dptr, size, pool, s);
}

EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t size,
					     CUmemoryPool pool, CUstream s)
{
	if (!pool) {
		REAL_OR_FAIL(pool_alloc_fn, R_cuMemAllocFromPoolAsync_ptsz);
		return f(dptr, size, pool, s);
	}
	return pool_alloc(R_cuMemAllocFromPoolAsync_ptsz, R_cuMemFreeAsync_ptsz, dptr, size,
			  pool, s);
}

EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep)
{
	REAL_OR_FAIL(CUresult (*)(CUmemoryPool, size_t), R_cuMemPoolTrimTo);
	struct pool *p;
	CUresult cr;

	if (depth || !tracking(__atomic_load_n(&S.state, __ATOMIC_ACQUIRE)))
		return f(pool, keep);
	p = pool_slot(pool, -1, 0);
	if (!p || p->dev < 0)
		return f(pool, keep);
	pthread_mutex_lock(&p->mu);
	depth++;
	cr = f(pool, keep);
	depth--;
	if (!cr)
		pool_settle(p, 0, 0);
	pthread_mutex_unlock(&p->mu);
	return cr;
}

/* A pool created on a host location is not charged: its slot says dev -1. */
EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const nxqp_pool_props_head *props)
{
	REAL_OR_FAIL(CUresult (*)(CUmemoryPool *, const nxqp_pool_props_head *), R_cuMemPoolCreate);
	CUresult cr;
	int dev = -1;

	if (depth || authority_nowait() == ST_PASS)
		return f(pool, props);
	depth++;
	cr = f(pool, props);
	depth--;
	if (!cr && props && props->location.type == CU_MEM_LOCATION_TYPE_DEVICE_)
		dev = props->location.id;
	if (!cr)
		pool_slot(*pool, dev, 1);	/* no slot: said once, its allocations refused */
	return cr;
}

EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
	REAL_OR_FAIL(CUresult (*)(CUmemoryPool), R_cuMemPoolDestroy);
	struct pool *p;
	CUresult cr;

	if (depth || !tracking(__atomic_load_n(&S.state, __ATOMIC_ACQUIRE)))
		return f(pool);
	p = pool_slot(pool, -1, 0);
	if (!p)
		return f(pool);
	pthread_mutex_lock(&p->mu);
	depth++;
	cr = f(pool);
	depth--;
	if (!cr) {
		if (p->dev >= 0 && p->dev < MAXDEV)
			uncharge(S.dev[p->dev].pholder, p->charged);
		p->charged = 0;
		__atomic_store_n(&p->pool, NULL, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&p->mu);
	return cr;
}
