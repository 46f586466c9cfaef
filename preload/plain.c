// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Plain wrappers: cuMemAlloc_v2, cuMemAllocPitch_v2, cuMemAllocManaged,
 * cuMemFree_v2, and the VMM calls followed (cuMemCreate, cuMemRelease,
 * cuMemMap, cuMemUnmap): charged before the driver allocates, uncharged
 * after it frees; a handle's charge goes with its release and its last
 * mapping.  While no authority answers (ST_DOWN) the same is followed,
 * not charged: remembered for the catch-up (connect.c), under S.down_rw.
 *
 * Layer 4: calls charge.c, authority.c, track.c, resolve.c, state.c.
 */
#include "shim.h"

/* ---- plain allocations ---- */

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);

static CUresult undo_ptr(uint64_t p)
{
	return ((free_fn)R(R_cuMemFree_v2))((CUdeviceptr)p);
}

static CUresult undo_handle(uint64_t h)
{
	return ((CUresult (*)(CUmemGenericAllocationHandle))R(R_cuMemRelease))(h);
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	REAL_OR_FAIL(alloc_fn, R_cuMemAlloc_v2);
	uint64_t holder;
	CUresult cr;
	int ord;

	if (depth)
		return f(dptr, bytesize);
	ord = authority() != ST_PASS ? cur_dev() : -1;
	if (charge_plain(ord, bytesize, &holder))
		return CUDA_ERROR_OUT_OF_MEMORY;
	depth++;
	cr = f(dptr, bytesize);
	depth--;
	if (cr) {
		plain_undo(ord, holder, bytesize);
		return cr;
	}
	return settle(K_PTR, *dptr, bytesize, ord, holder, undo_ptr);
}

/* The pitch the driver will pick is not known before: charge the width
 * rounded to 512 bytes per row ahead, then settle to pitch * height. */
EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width,
				   size_t height, unsigned int elem)
{
	REAL_OR_FAIL(CUresult (*)(CUdeviceptr *, size_t *, size_t, size_t, unsigned int),
		     R_cuMemAllocPitch_v2);
	uint64_t holder, ahead, bytes;
	CUresult cr;
	int ord;

	if (depth)
		return f(dptr, pitch, width, height, elem);
	ahead = (width + 511) / 512 * 512;
	if (height && ahead > UINT64_MAX / height)
		return CUDA_ERROR_OUT_OF_MEMORY;
	ahead *= height;
	ord = authority() != ST_PASS ? cur_dev() : -1;
	if (charge_plain(ord, ahead, &holder))
		return CUDA_ERROR_OUT_OF_MEMORY;
	depth++;
	cr = f(dptr, pitch, width, height, elem);
	depth--;
	if (cr) {
		plain_undo(ord, holder, ahead);
		return cr;
	}
	bytes = (uint64_t)*pitch * height;
	if (!holder)	/* nothing charged; settle() says if it should have been */
		return settle(K_PTR, *dptr, bytes, ord, holder, undo_ptr);
	if (holder == PENDING)	/* nothing charged: remembered at its size */
		return settle(K_PTR, *dptr, bytes, ord, holder, undo_ptr);
	if (bytes > ahead && plain_take(ord, bytes - ahead)) {
		depth++;
		undo_ptr(*dptr);
		depth--;
		plain_give(ord, ahead);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (bytes < ahead)
		plain_give(ord, ahead - bytes);
	return settle(K_PTR, *dptr, bytes, ord, holder, undo_ptr);
}

/*
 * Managed memory is charged to the current device, as device memory: the
 * driver may place all of it there, and leaving it out would let any
 * process step around its budget with cudaMallocManaged.
 */
EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	REAL_OR_FAIL(CUresult (*)(CUdeviceptr *, size_t, unsigned int), R_cuMemAllocManaged);
	uint64_t holder;
	CUresult cr;
	int ord;

	if (depth)
		return f(dptr, bytesize, flags);
	ord = authority() != ST_PASS ? cur_dev() : -1;
	if (charge_plain(ord, bytesize, &holder))
		return CUDA_ERROR_OUT_OF_MEMORY;
	depth++;
	cr = f(dptr, bytesize, flags);
	depth--;
	if (cr) {
		plain_undo(ord, holder, bytesize);
		return cr;
	}
	return settle(K_PTR, *dptr, bytesize, ord, holder, undo_ptr);
}

/*
 * The entry is taken out before the driver frees, so that the same address
 * handed out again by a concurrent allocation cannot meet a stale entry;
 * put back if the driver refuses the free.
 */
EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	REAL_OR_FAIL(free_fn, R_cuMemFree_v2);
	int st = __atomic_load_n(&S.state, __ATOMIC_ACQUIRE), dn;
	struct ent *e;
	CUresult cr;

	if (depth || !tracking(st))
		return f(dptr);
	dn = st == ST_DOWN && down_begin();
	e = untrack(K_PTR, dptr);
	depth++;
	cr = f(dptr);
	depth--;
	if (e) {
		if (cr)
			retrack(K_PTR, e);
		else
			release_tracked(K_PTR, e);
	}
	if (dn)
		down_end();
	return cr;
}

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
			    const CUmemAllocationProp *prop, unsigned long long flags)
{
	REAL_OR_FAIL(CUresult (*)(CUmemGenericAllocationHandle *, size_t,
				  const CUmemAllocationProp *, unsigned long long), R_cuMemCreate);
	uint64_t holder = 0;
	CUresult cr;
	int ord = -1;

	if (depth)
		return f(handle, size, prop, flags);
	/* host (and host NUMA) locations are not device memory */
	if (prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE_) {
		ord = prop->location.id;
		if (charge_plain(ord, size, &holder))
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	depth++;
	cr = f(handle, size, prop, flags);
	depth--;
	if (cr) {
		plain_undo(ord, holder, size);
		return cr;
	}
	return settle(K_HANDLE, *handle, size, ord, holder, undo_handle);
}

/*
 * A handle's memory lives until it is released AND its last mapping is
 * unmapped (the driver frees it then): cuMemRelease of a mapped handle
 * leaves it charged, and the cuMemUnmap of its last mapping uncharges it
 * -- CUDA's VMM samples create, map and release at once, then use the
 * mapping.  Its entry leaves the handle table at the release (the value
 * may be handed out again) and is then held by its mappings alone.
 */
EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	REAL_OR_FAIL(CUresult (*)(CUmemGenericAllocationHandle), R_cuMemRelease);
	int st = __atomic_load_n(&S.state, __ATOMIC_ACQUIRE), dn;
	struct ent *e;
	CUresult cr;

	if (depth || !tracking(st))
		return f(handle);
	dn = st == ST_DOWN && down_begin();
	e = untrack(K_HANDLE, handle);
	depth++;
	cr = f(handle);
	depth--;
	if (e) {
		if (cr)
			retrack(K_HANDLE, e);
		else if (__atomic_fetch_or(&e->hst, 1, __ATOMIC_ACQ_REL) == 0)
			release_tracked(K_HANDLE, e);	/* not mapped: its memory is gone */
	}
	if (dn)
		down_end();
	return cr;
}

/* A mapping's entry goes: its handle's charge with it if it was the last of a released one. */
static void map_drop(struct ent *m)
{
	struct ent *h = m->h;

	if (__atomic_sub_fetch(&h->hst, 2, __ATOMIC_ACQ_REL) == 1)
		release_tracked(K_HANDLE, h);
	ent_free(m);
}

/* The handle's entry with one more mapping counted, or NULL if not tracked. */
static struct ent *handle_ref(uint64_t key)
{
	unsigned int i = hidx(key);
	struct ent *e;

	pthread_mutex_lock(&shard[i % NSHARD]);
	for (e = tab[K_HANDLE][i]; e; e = e->next)
		if (e->key == key) {
			__atomic_add_fetch(&e->hst, 2, __ATOMIC_RELAXED);
			break;
		}
	pthread_mutex_unlock(&shard[i % NSHARD]);
	return e;
}

EXPORT CUresult cuMemMap(CUdeviceptr va, size_t size, size_t offset,
			 CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	REAL_OR_FAIL(CUresult (*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
				  unsigned long long), R_cuMemMap);
	int st = __atomic_load_n(&S.state, __ATOMIC_ACQUIRE), dn;
	struct ent *h, *old;
	CUresult cr;

	if (depth || !tracking(st))
		return f(va, size, offset, handle, flags);
	dn = st == ST_DOWN && down_begin();
	depth++;
	cr = f(va, size, offset, handle, flags);
	depth--;
	if (cr || !(h = handle_ref(handle)))
		goto out;	/* a handle the shim did not charge: nothing to follow */
	old = untrack(K_MAP, va);	/* one the shim did not see go: it went */
	if (old)
		map_drop(old);
	if (track(K_MAP, va, size, h->dev, h, 0)) {
		SAY_ONCE(S.said_hash, "out of memory tracking a mapping: refused");
		depth++;
		((CUresult (*)(CUdeviceptr, size_t))R(R_cuMemUnmap))(va, size);
		depth--;
		/*
		 * its count back; a release since (it saw this mapping) left
		 * the charge to the last unmap: this one
		 */
		if (__atomic_sub_fetch(&h->hst, 2, __ATOMIC_ACQ_REL) == 1)
			release_tracked(K_HANDLE, h);
		cr = CUDA_ERROR_OUT_OF_MEMORY;
	}
out:
	if (dn)
		down_end();
	return cr;
}

/*
 * The driver unmaps whole mappings, contiguous from va: their entries are
 * found from va on by their sizes, taken out before the driver's call
 * (put back if it refuses), and each lets go of its handle.
 */
EXPORT CUresult cuMemUnmap(CUdeviceptr va, size_t size)
{
	REAL_OR_FAIL(CUresult (*)(CUdeviceptr, size_t), R_cuMemUnmap);
	int st = __atomic_load_n(&S.state, __ATOMIC_ACQUIRE), dn;
	struct ent *list = NULL, *m, *n;
	uint64_t p = va, end = va + size;
	CUresult cr;

	if (depth || !tracking(st))
		return f(va, size);
	dn = st == ST_DOWN && down_begin();
	while (p < end && (m = untrack(K_MAP, p))) {
		m->next = list;
		list = m;
		if (!m->bytes)
			break;
		p += m->bytes;
	}
	depth++;
	cr = f(va, size);
	depth--;
	for (m = list; m; m = n) {
		n = m->next;
		if (cr)
			retrack(K_MAP, m);
		else
			map_drop(m);
	}
	if (dn)
		down_end();
	return cr;
}
