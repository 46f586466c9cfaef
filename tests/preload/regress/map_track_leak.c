// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Regression (issue 30, smaller defects): a charge leaked when tracking a
 * mapping failed in cuMemMap while its handle was being released.
 *
 * cuMemMap counts one more mapping on the handle's entry (handle_ref()),
 * then tracks the mapping.  When tracking fails (out of memory) it unmaps
 * and takes its count back.  A cuMemRelease of the handle in between sees
 * a mapping and leaves the handle's charge to the last unmap -- which was
 * this failed one: the count went back to "released, unmapped" and
 * nobody gave the charge back (preload/plain.c took the count back
 * without looking at what was left).
 *
 * How to see it fail: in preload/plain.c's cuMemMap, take the count back
 * without release_tracked() (the code before the fix):
 *	__atomic_sub_fetch(&h->hst, 2, __ATOMIC_RELAXED);
 * and K.charged stays at 4 MiB after the release.
 *
 * The failure is this program's malloc() (it interposes the shim's, as
 * -rdynamic exports it): armed on one thread, it fails that thread's next
 * allocation -- the mapping's entry (a fresh thread has no spare one) --
 * and, before it returns, has another thread release the handle, in the
 * window between the count and the failure.  Included by test_preload.c.
 */

extern void *__libc_malloc(size_t n);

static __thread int rg_malloc_fail;
static __thread void (*rg_malloc_fail_cb)(void);

void *malloc(size_t n)
{
	if (__builtin_expect(rg_malloc_fail, 0)) {
		void (*cb)(void) = rg_malloc_fail_cb;

		rg_malloc_fail = 0;
		rg_malloc_fail_cb = NULL;
		if (cb)
			cb();
		errno = ENOMEM;
		return NULL;
	}
	return __libc_malloc(n);
}

static unsigned long long rg_handle;
static CUresult rg_release_cr = -1;

static void *rg_release_thread(void *arg)
{
	d_setdev(0);	/* a thread of its own has no context */
	rg_release_cr = cuMemRelease(rg_handle);
	return NULL;
}

/* In the failing malloc: the handle is released by another thread, now. */
static void rg_release_now(void)
{
	pthread_t t;

	if (!pthread_create(&t, NULL, rg_release_thread, NULL))
		pthread_join(t, NULL);
}

static void *rg_map_thread(void *arg)
{
	CUresult *cr = arg;

	d_setdev(0);
	rg_malloc_fail_cb = rg_release_now;
	rg_malloc_fail = 1;
	*cr = cuMemMap(vmm_va, 4 * MiB, 0, rg_handle, 0);
	rg_malloc_fail = 0;
	return NULL;
}

static void test_regress_map_track_leak(void **st)
{
	CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
				     .location = { CU_MEM_LOCATION_TYPE_DEVICE, 0 } };
	CUresult cr = CUDA_SUCCESS;
	pthread_t t;
	long unmaps = d_calls("cuMemUnmap");

	assert_int_equal(cuMemCreate(&rg_handle, 4 * MiB, &prop, 0), 0);
	assert_int_equal(K.charged, 4 * MiB);
	rg_release_cr = -1;
	assert_int_equal(pthread_create(&t, NULL, rg_map_thread, &cr), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	/*
	 * the window was hit: the driver mapped (it was not told to fail),
	 * tracking failed, the release ran inside it
	 */
	assert_int_equal(cr, CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(d_calls("cuMemUnmap"), unmaps + 1);
	assert_int_equal(rg_release_cr, 0);
	/* released and not mapped: the memory and its charge are gone */
	assert_int_equal(d_stat("maps"), 0);
	assert_int_equal(d_stat("used"), 0);
	assert_int_equal(K.charged, 0);
	assert_int_equal(counters().tracked, 0);
}
