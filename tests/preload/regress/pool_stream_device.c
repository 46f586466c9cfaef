// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Regression (issue 30, smaller defects; HAMi-core had the same, #310): a
 * stream-ordered allocation was charged to the calling thread's current
 * device, not to the device of the stream it was made on.
 *
 * cuMemAllocAsync(p, n, s) takes its memory from the current pool of s's
 * device.  A thread whose current context is device 0 allocating on a
 * stream of device 1 used device 1's memory, and preload/pool.c charged
 * device 0 (it asked cur_dev()): device 0's budget paid for device 1,
 * and device 1's was never asked.
 *
 * How to see it fail: in preload/pool.c's pool_alloc(), take the device
 * from the current context again (the code before the fix):
 *	ord = cur_dev();
 * and the charge lands on DEV0's holder, none on DEV1's.
 *
 * The fake driver's streams carry their device (a stream is created on
 * the current context's), and its cuMemAllocAsync takes the stream's
 * device's pool, as the driver's.
 * Included by test_preload.c.
 */

static uint64_t rg_charged_on(const char *dev)
{
	uint64_t n = 0;

	for (int i = 0; i < KH; i++)
		if (K.h[i].live && !strcmp(K.h[i].dev, dev))
			n += K.h[i].charged;
	return n;
}

static void test_regress_pool_stream_device(void **st)
{
	unsigned long long p;
	CUmemoryPool pool1 = NULL;
	CUstream s1 = NULL;
	uint64_t res, used;

	d_setdev(1);
	assert_int_equal(d_stream(&s1, 0), 0);	/* a stream of device 1 */
	assert_int_equal(d_getpool(&pool1, 1), 0);
	d_setdev(0);			/* the thread's current device: 0 */
	assert_int_equal(cuMemAllocAsync(&p, 64 * MiB, s1), 0);
	/* the driver took it from device 1's pool ... */
	d_pool(pool1, &res, &used);
	assert_int_equal(used, 64 * MiB);
	/* ... and the shim charged device 1, not device 0 */
	assert_int_equal(rg_charged_on(DEV0), 0);
	assert_true(rg_charged_on(DEV1) >= 64 * MiB);
	assert_int_equal(d_freeasync(p, s1), 0);
	d_sync();
	assert_int_equal(cuMemPoolTrimTo(pool1, 0), 0);
	assert_int_equal(K.charged, 0);
}
