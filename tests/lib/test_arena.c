// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * cmocka tests of the allocator against a fake kernel and a counting
 * backend over real host memory: invariants under random sequences,
 * batching, failure injection with rollback checks, stream-ordered frees,
 * trim, retention, unmanaged contexts, threads.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>

#include "fake.h"

#define G (2 * MiB)

static struct nxq_ctx *ctx;

static struct nxq_arena *mk(uint64_t batch, uint64_t retain, uint64_t pool, uint64_t va)
{
	/* The caller drives everything: no pressure thread touching the fakes. */
	struct nxq_ctx_opts co = { .size = sizeof(co), .flags = NXQ_CTX_NO_THREAD };
	struct nxq_arena_opts o = {
		.size = sizeof(o), .backend = NXQ_BACKEND_HOST, .device_key = "host0",
		.granule = G, .grow_batch = batch,
		.retain_idle = retain ? retain : NXQ_OPT_ZERO,
		.handle_pool = pool ? pool : NXQ_OPT_ZERO, .va_size = va ? va : 4 * GiB,
	};
	struct nxq_arena *a = NULL;

	fakes_reset();
	assert_int_equal(nxq__ctx_open_kops(&co, &fake_kops, NULL, &ctx), 0);
	assert_int_equal(nxq__arena_create_be(ctx, &o, &fake_be, &a), 0);
	assert_non_null(a);
	return a;
}

static void st(struct nxq_arena *a, struct nxq_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	assert_int_equal(nxq_arena_stats(a, s), 0);
}

/* Accounting invariants that must hold after every public call. */
static void check_acct(struct nxq_arena *a)
{
	struct nxq_stats s;

	st(a, &s);
	assert_int_equal(s.mapped, s.in_use + s.pending + s.free);
	assert_int_equal(s.charged, s.mapped + s.retained);
	assert_int_equal(fk.charged, s.charged);
	assert_true(s.idle <= s.free);
	assert_int_equal(s.mapped % s.granule, 0);
	assert_int_equal(s.mapped, fb.map_bytes);
	assert_int_equal(s.mapped + s.retained, fb.handle_bytes);
	assert_true(fb.live_maps <= fb.live_handles);	/* one mapping per handle */
	assert_true(fk.reclaimable <= fk.charged);
	assert_int_equal(fk.errors, 0);
}

static void teardown_checks(struct nxq_arena *a)
{
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(fk.charged, 0);
	assert_int_equal(fk.holders, 0);
	assert_int_equal(fb.live_handles, 0);
	assert_int_equal(fb.live_maps, 0);
	assert_int_equal(fb.nfences, 0);
	assert_int_equal(fk.errors, 0);
	assert_int_equal(nxq_ctx_close(ctx), 0);
}

static void test_basic(void **state)
{
	struct nxq_arena *a = mk(8 * MiB, 64 * MiB, 64 * MiB, 0);
	struct nxq_stats s;
	void *p = NULL;

	assert_int_equal(nxq_ctx_is_managed(ctx), 1);
	assert_int_equal(nxq_alloc(a, 1000, 0, &p), 0);
	assert_non_null(p);
	assert_int_equal((uintptr_t)p % 256, 0);
	memset(p, 0xab, 1000);
	st(a, &s);
	assert_int_equal(s.in_use, 1024);
	assert_int_equal(s.mapped, G);		/* an empty arena grows by one granule */
	assert_int_equal(s.charged, G);
	assert_int_equal(s.flags & NXQ_STATS_UNMANAGED, 0);
	assert_int_equal(s.unattributed, NXQ_UNKNOWN);
	assert_int_equal(fk.charge_calls, 1);
	check_acct(a);
	assert_int_equal(nxq_free(a, p), 0);
	st(a, &s);
	assert_int_equal(s.in_use, 0);
	assert_int_equal(s.idle, G);
	check_acct(a);
	teardown_checks(a);
}

/* Free neighbours merge both ways: two halves of a granule become one idle granule. */
static void test_coalescing(void **state)
{
	struct nxq_arena *a = mk(G, 64 * MiB, 0, 0);
	struct nxq_stats s;
	void *x, *y, *z;

	for (int order = 0; order < 2; order++) {
		assert_int_equal(nxq_alloc(a, MiB, 0, &x), 0);
		assert_int_equal(nxq_alloc(a, MiB, 0, &y), 0);
		assert_ptr_equal((char *)x + MiB, y);
		assert_int_equal(nxq_free(a, order ? y : x), 0);
		st(a, &s);
		assert_int_equal(s.idle, 0);
		assert_int_equal(nxq_free(a, order ? x : y), 0);
		st(a, &s);
		assert_int_equal(s.idle, G);		/* one block, one whole granule */
		assert_int_equal(nxq_alloc(a, G, 0, &z), 0);
		assert_ptr_equal(z, x);
		assert_int_equal(s.grows, 1);		/* reused, no growth */
		assert_int_equal(nxq_free(a, z), 0);
		check_acct(a);
	}
	teardown_checks(a);
}

/* Warm path: no kernel call and no backend call. */
static void test_warm_path_no_calls(void **state)
{
	static const size_t sizes[] = { 256, 4096, 100000, 1 << 20, 3 << 20, 777 };
	struct nxq_arena *a = mk(32 * MiB, 64 * MiB, 64 * MiB, 0);
	struct fake_kernel k0;
	struct fake_backend b0;
	void *p[64];

	/* warm: the workload once through, every rotation of the sizes */
	for (int round = 0; round < 6; round++) {
		for (int i = 0; i < 64; i++)
			assert_int_equal(nxq_alloc(a, sizes[(i + round) % 6], 0, &p[i]), 0);
		for (int i = 0; i < 64; i++)
			assert_int_equal(nxq_free(a, p[i]), 0);
	}
	k0 = fk;
	b0 = fb;
	for (int round = 0; round < 1000; round++) {
		for (int i = 0; i < 64; i++)
			assert_int_equal(nxq_alloc(a, sizes[(i + round) % 6], 0, &p[i]), 0);
		for (int i = 0; i < 64; i++)
			assert_int_equal(nxq_free(a, p[i]), 0);
	}
	assert_int_equal(fk.charge_calls, k0.charge_calls);
	assert_int_equal(fk.uncharge_calls, k0.uncharge_calls);
	assert_int_equal(fk.reclaim_calls, k0.reclaim_calls);
	assert_memory_equal(fb.calls, b0.calls, sizeof(fb.calls));
	check_acct(a);
	teardown_checks(a);
}

/*
 * Growth by handles sized to the arena: one handle, one charge, one map
 * and one set_access per growth; a quarter of what is mapped (a power of
 * two, one granule to grow_batch), never one per granule.
 */
static void test_batching(void **state)
{
	struct nxq_arena *a = mk(32 * MiB, 2 * GiB, 0, 0);
	struct nxq_stats s;
	void *p;

	for (int i = 0; i < 1024; i++)		/* 1 GiB in 1 MiB pieces */
		assert_int_equal(nxq_alloc(a, MiB, 0, &p), 0);
	st(a, &s);
	assert_int_equal(s.mapped, GiB);
	/* 8 x 2 MiB, 4 x 4, 4 x 8, 4 x 16, then 32 x 32 MiB: 48, not 512 granules */
	assert_int_equal(fk.charge_calls, 48);
	assert_int_equal(s.charge_calls, 48);
	assert_int_equal(s.grows, 48);
	assert_int_equal(fb.calls[OP_CREATE], 48);
	assert_int_equal(fb.calls[OP_MAP], 48);
	assert_int_equal(fb.calls[OP_ACCESS], 48);
	assert_int_equal(fb.live_handles, 48);
	check_acct(a);
	/* A single large allocation is one handle and one charge of what it needs. */
	assert_int_equal(nxq_alloc(a, 100 * MiB, 0, &p), 0);
	assert_int_equal(fk.charge_calls, 49);
	assert_int_equal(fb.calls[OP_CREATE], 49);
	st(a, &s);
	assert_int_equal(s.mapped, GiB + 100 * MiB);
	check_acct(a);
	teardown_checks(a);
}

/*
 * Growth at the top: a request that fits nowhere starts in the free block
 * at the top of what is mapped and maps only what is missing above it (at
 * least a handle of the grow target: 2 MiB here), as expandable segments
 * grow; a block the allocating stream owns counts too.  A refused
 * extension fails with nothing changed.
 */
static void test_tail_growth(void **state)
{
	struct nxq_arena *a = mk(2 * MiB, GiB, 0, 0);
	struct nxq_stats s, s0;
	void *p, *q, *r, *x;
	int stream;

	assert_int_equal(nxq_alloc(a, 10 * MiB, 0, &p), 0);
	assert_int_equal(nxq_alloc(a, 4 * MiB, 0, &q), 0);	/* a fresh 4 MiB handle */
	assert_int_equal(nxq_free(a, q), 0);			/* the top 4 MiB are free */
	assert_int_equal(nxq_alloc(a, 9 * MiB, 0, &r), 0);
	assert_ptr_equal(r, q);					/* started in them */
	st(a, &s);
	assert_int_equal(s.mapped, 20 * MiB);			/* + 6, not + 9 or 10 */
	assert_int_equal(s.grows, 3);
	check_acct(a);
	/* freed on a stream: that stream's larger request extends it */
	assert_int_equal(nxq_free_async(a, r, &stream), 0);
	assert_int_equal(nxq_alloc_async(a, 12 * MiB, 0, &stream, &x), 0);
	assert_ptr_equal(x, r);
	st(a, &s);
	assert_int_equal(s.mapped, 22 * MiB);
	assert_int_equal(s.grows, 4);
	check_acct(a);
	/* refused: nothing mapped, charged or handed out */
	assert_int_equal(nxq_free(a, x), 0);
	st(a, &s0);
	fk.cap = s0.charged + MiB;
	assert_int_equal(nxq_alloc(a, 14 * MiB, 0, &x), -EDQUOT);
	st(a, &s);
	assert_int_equal(s.mapped, s0.mapped);
	assert_int_equal(s.charged, s0.charged);
	assert_int_equal(s.in_use, s0.in_use);
	check_acct(a);
	fk.cap = s0.charged + 2 * MiB;
	assert_int_equal(nxq_alloc(a, 14 * MiB, 0, &x), 0);	/* exactly what is missing */
	assert_ptr_equal(x, r);
	check_acct(a);
	assert_int_equal(nxq_free(a, x), 0);
	assert_int_equal(nxq_free(a, p), 0);
	teardown_checks(a);
}

/*
 * Two equal FREE holes larger than a request of 1 MiB or more: it splits
 * the lower one (PyTorch's order: size, then address), not the one freed
 * last, which the bin's LIFO order lists first.
 */
static void test_equal_holes(void **state)
{
	struct nxq_arena *a = mk(2 * MiB, GiB, 0, 0);
	void *x[6], *p, *q;

	for (int i = 0; i < 6; i++)
		assert_int_equal(nxq_alloc(a, 3 * MiB / 2, 0, &x[i]), 0);
	for (int i = 1; i < 6; i++)
		assert_ptr_equal(x[i], (char *)x[i - 1] + 3 * MiB / 2);
	assert_int_equal(nxq_free(a, x[1]), 0);
	assert_int_equal(nxq_free(a, x[3]), 0);		/* freed last: first in its bin */
	assert_int_equal(nxq_alloc(a, 5 * MiB / 4, 0, &p), 0);
	assert_ptr_equal(p, x[1]);			/* the lower hole, not x[3] */
	assert_int_equal(nxq_alloc(a, MiB / 4, 0, &q), 0);
	assert_ptr_equal(q, (char *)x[1] + 5 * MiB / 4);	/* what is left of x[1]: exact */
	assert_int_equal(nxq_free(a, q), 0);
	assert_int_equal(nxq_free(a, p), 0);
	check_acct(a);
	for (int i = 0; i < 6; i++)
		if (i != 1 && i != 3)
			assert_int_equal(nxq_free(a, x[i]), 0);
	teardown_checks(a);
}

/* A refused handle falls back to exactly what the allocation needs. */
static void test_batch_fallback_and_refusal(void **state)
{
	struct nxq_arena *a = mk(32 * MiB, 64 * MiB, 64 * MiB, 0);
	struct nxq_stats s0, s;
	void *p, *q, *big;

	assert_int_equal(nxq_alloc(a, 32 * MiB, 0, &big), 0);	/* one 32 MiB handle */
	fk.cap = 38 * MiB;
	fk.charge_calls = 0;
	/* an 8 MiB handle (a quarter of 32) is refused; 4 MiB are granted */
	assert_int_equal(nxq_alloc(a, 3 * MiB, 0, &p), 0);
	assert_int_equal(fk.charge_calls, 2);
	st(a, &s);
	assert_int_equal(s.mapped, 36 * MiB);
	assert_int_equal(s.charge_denied, 1);
	check_acct(a);
	st(a, &s0);
	assert_int_equal(nxq_alloc(a, 7 * MiB, 0, &q), -EDQUOT);
	assert_non_null(strstr(nxq_errmsg(), "refused"));
	st(a, &s);
	assert_int_equal(s.mapped, s0.mapped);
	assert_int_equal(s.charged, s0.charged);
	assert_int_equal(s.in_use, s0.in_use);
	check_acct(a);
	assert_int_equal(nxq_free(a, p), 0);
	assert_int_equal(nxq_free(a, big), 0);
	teardown_checks(a);
}

/* Every step of a growth fails once: nothing leaks, counters restored. */
static void test_failure_injection(void **state)
{
	static const int ops[] = { OP_CREATE, OP_MAP, OP_ACCESS };
	const int n = 4;	/* granules in the growth */

	for (int k = 1; k <= 2; k++) {	/* charge refused with EDQUOT, ENOSPC */
		struct nxq_arena *a = mk(n * G, 64 * MiB, 64 * MiB, 0);
		struct nxq_stats s;
		void *p;

		fk.fail_charge_at = 1;
		fk.fail_err = k == 1 ? -EDQUOT : -ENOSPC;
		assert_int_equal(nxq_alloc(a, n * G, 0, &p), fk.fail_err);
		st(a, &s);
		assert_int_equal(s.mapped, 0);
		assert_int_equal(s.charge_denied, 1);
		check_acct(a);
		assert_int_equal(fb.calls[OP_CREATE], 0);	/* asked before creating */
		assert_int_equal(nxq_alloc(a, n * G, 0, &p), 0);
		check_acct(a);
		teardown_checks(a);
	}
	for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
		/* pool 0 and pool > 0 (a handle taken from the pool must go back) */
		for (int pooled = 0; pooled < 2; pooled++) {
			/* one create, map, set_access per growth; a pooled handle is not created */
			int steps = ops[o] == OP_CREATE && pooled ? 0 : 1;

			for (int at = 1; at <= steps; at++) {
				struct nxq_arena *a = mk(n * G, 0, pooled ? 64 * MiB : 0, 0);
				struct nxq_stats s0, s;
				void *p, *q;
				int base_calls;

				if (pooled) {	/* put one handle of n granules in the pool */
					assert_int_equal(nxq_alloc(a, n * G, 0, &p), 0);
					assert_int_equal(nxq_free(a, p), 0);	/* retain 0 */
				}
				st(a, &s0);
				if (pooled)
					assert_int_equal(s0.retained, n * G);
				base_calls = fb.calls[ops[o]];
				fb.fail_op = ops[o];
				fb.fail_at = base_calls + at;
				fb.fail_err = -ENOMEM;
				fk.charge_calls = 0;
				if (pooled) {
					/* the pooled handle goes back; a new one is made */
					assert_int_equal(nxq_alloc(a, n * G, 0, &q), 0);
					st(a, &s);
					assert_int_equal(s.retained, s0.retained);
					assert_int_equal(s.mapped, s0.mapped + n * G);
					assert_int_equal(fk.charge_calls, 1);
					check_acct(a);
					assert_int_equal(nxq_free(a, q), 0);
					fb.fail_at = 0;
					teardown_checks(a);
					continue;
				}
				assert_int_equal(nxq_alloc(a, n * G, 0, &q), -ENOMEM);
				st(a, &s);
				assert_int_equal(s.mapped, s0.mapped);
				assert_int_equal(s.charged, s0.charged);
				assert_int_equal(s.retained, s0.retained);
				assert_int_equal(s.in_use, s0.in_use);
				check_acct(a);
				fb.fail_at = 0;
				assert_int_equal(nxq_alloc(a, n * G, 0, &q), 0);
				memset(q, 1, n * G);
				check_acct(a);
				teardown_checks(a);
			}
		}
	}
}

/*
 * Fence recording fails: the stream keeps what it owns (never handed to
 * anyone else unfenced); the allocation that asked grows instead; a
 * later fence works.
 */
static void test_fence_failure(void **state)
{
	struct nxq_arena *a = mk(8 * MiB, 64 * MiB, 0, 0);
	struct nxq_stats s;
	void *p, *q;

	assert_int_equal(nxq_alloc(a, 2 * MiB, 0, &p), 0);
	assert_int_equal(nxq_free_async(a, p, (void *)1), 0);
	assert_int_equal(fb.calls[OP_FENCE], 0);	/* no fence per free */
	fb.fail_op = OP_FENCE;
	fb.fail_at = 1;
	assert_int_equal(nxq_alloc(a, 2 * MiB, 0, &q), 0);
	assert_int_equal(fb.calls[OP_FENCE], 1);
	assert_ptr_not_equal(p, q);
	st(a, &s);
	assert_int_equal(s.pending, 2 * MiB);
	assert_int_equal(s.grows, 2);
	check_acct(a);
	assert_int_equal(nxq_free(a, q), 0);
	assert_true(nxq_arena_trim(a, 0, NXQ_TRIM_WAIT) >= 0);
	st(a, &s);
	assert_int_equal(s.pending, 0);
	assert_int_equal(s.mapped, 0);
	check_acct(a);
	teardown_checks(a);
}

/* Stream-ordered free: not reused until the stream's work is done. */
static void test_free_async(void **state)
{
	struct nxq_arena *a = mk(2 * MiB, 64 * MiB, 64 * MiB, 0);
	struct nxq_stats s;
	void *p, *q, *r;

	assert_int_equal(nxq_alloc(a, 2 * MiB, 0, &p), 0);
	assert_int_equal(nxq_free_async(a, p, (void *)0x1234), 0);
	st(a, &s);
	assert_int_equal(s.pending, 2 * MiB);
	assert_int_equal(s.in_use, 0);
	check_acct(a);
	/* the same stream reuses it at once: no fence, no wait */
	assert_int_equal(nxq_alloc_async(a, 2 * MiB, 0, (void *)0x1234, &q), 0);
	assert_ptr_equal(p, q);
	assert_int_equal(fb.calls[OP_FENCE], 0);
	assert_int_equal(nxq_free_async(a, q, (void *)0x1234), 0);
	/* a plain allocation (or another stream) does not, before the fence is done */
	assert_int_equal(nxq_alloc(a, 2 * MiB, 0, &q), 0);
	assert_ptr_not_equal(p, q);		/* pending memory was not reused */
	assert_int_equal(fb.calls[OP_FENCE], 1);	/* fenced before growing */
	assert_int_equal(fb.waits, 0);		/* nor waited for */
	assert_int_equal(nxq_alloc_async(a, 2 * MiB, 0, (void *)0x5678, &r), 0);
	assert_ptr_not_equal(p, r);
	assert_int_equal(nxq_free(a, r), 0);
	fb_complete_all();
	assert_int_equal(nxq_free(a, q), 0);
	/* once done, it is FREE: a report polls the fence (no allocation needed) */
	assert_int_equal(nxq_arena_report(a), 0);
	st(a, &s);
	assert_int_equal(s.pending, 0);
	assert_int_equal(nxq_alloc_async(a, 2 * MiB, 0, (void *)0x5678, &r), 0);
	assert_int_equal(nxq_alloc_async(a, 2 * MiB, 0, (void *)0x5678, &q), 0);
	assert_true(r == p || q == p);		/* the other stream got it, no growth */
	st(a, &s);
	assert_int_equal(s.grows, 3);
	check_acct(a);
	assert_int_equal(nxq_free(a, r), 0);
	assert_int_equal(nxq_free(a, q), 0);
	/* Destroy waits for what is still pending. */
	assert_int_equal(nxq_alloc(a, 2 * MiB, 0, &p), 0);
	assert_int_equal(nxq_free_async(a, p, (void *)0x1234), 0);
	teardown_checks(a);
	assert_int_equal(fb.waits, 1);
}

/* Refused growth waits for pending stream frees instead of failing. */
static void test_async_refusal_waits(void **state)
{
	struct nxq_arena *a = mk(2 * MiB, 64 * MiB, 0, 0);
	void *p, *q;

	fk.cap = 4 * MiB;
	assert_int_equal(nxq_alloc(a, 4 * MiB, 0, &p), 0);
	assert_int_equal(nxq_free_async(a, p, (void *)1), 0);
	assert_int_equal(nxq_alloc(a, 4 * MiB, 0, &q), 0);
	assert_ptr_equal(p, q);
	assert_int_equal(fb.waits, 1);
	check_acct(a);
	assert_int_equal(nxq_free(a, q), 0);
	teardown_checks(a);
}

/* Idle retention and the handle pool are bounded. */
static void test_retention_and_pool(void **state)
{
	struct nxq_arena *a = mk(2 * MiB, 8 * MiB, 4 * MiB, 0);
	struct nxq_stats s;
	void *p[16];
	int creates;

	for (int i = 0; i < 16; i++)
		assert_int_equal(nxq_alloc(a, 2 * MiB, 0, &p[i]), 0);
	for (int i = 0; i < 16; i++) {
		assert_int_equal(nxq_free(a, p[i]), 0);
		st(a, &s);
		assert_true(s.idle <= 8 * MiB);
		assert_true(s.retained <= 4 * MiB);
		check_acct(a);
	}
	st(a, &s);
	assert_true(fb.calls[OP_QUIESCE] >= 1);	/* device work waited for before unmaps */
	assert_int_equal(s.idle, 8 * MiB);
	assert_int_equal(s.retained, 4 * MiB);
	assert_int_equal(s.charged, 12 * MiB);
	assert_true(fk.uncharge_calls >= 1);
	assert_int_equal(fk.reclaimable, 12 * MiB);	/* idle + pool reported */
	/* growth takes pooled handles first: no create, no charge */
	creates = fb.calls[OP_CREATE];
	for (int i = 0; i < 6; i++)
		assert_int_equal(nxq_alloc(a, 2 * MiB, 0, &p[i]), 0);
	assert_int_equal(fb.calls[OP_CREATE], creates);
	check_acct(a);
	teardown_checks(a);
}

static void test_trim(void **state)
{
	struct nxq_arena *a = mk(16 * MiB, 64 * MiB, 64 * MiB, 0);
	struct nxq_stats s;
	void *p, *q, *x[4];
	int64_t r;

	assert_int_equal(nxq_alloc(a, MiB, 0, &p), 0);		/* a 2 MiB handle */
	for (int i = 0; i < 4; i++)				/* four 2 MiB handles */
		assert_int_equal(nxq_alloc(a, 2 * MiB, 0, &x[i]), 0);
	assert_int_equal(nxq_alloc(a, 20 * MiB, 0, &q), 0);	/* a 20 MiB handle */
	for (int i = 0; i < 4; i++)
		assert_int_equal(nxq_free(a, x[i]), 0);
	assert_int_equal(nxq_free(a, q), 0);
	st(a, &s);
	assert_int_equal(s.charged, 30 * MiB);
	assert_int_equal(s.idle, 28 * MiB);
	fb.calls[OP_QUIESCE] = 0;
	/* whole handles, highest first: the 20 MiB one, then 2 MiB ones */
	r = nxq_arena_trim(a, 7 * MiB, 0);
	assert_int_equal(fb.calls[OP_QUIESCE], 1);	/* once per unmap pass */
	st(a, &s);
	assert_int_equal(r, 24 * MiB);			/* within one handle of 23 MiB */
	assert_int_equal(s.charged, 6 * MiB);
	check_acct(a);
	memset(p, 7, MiB);			/* the live allocation survived */
	r = nxq_arena_trim(a, 0, 0);
	st(a, &s);
	assert_int_equal(s.mapped, 2 * MiB);	/* only the handle in use remains */
	assert_int_equal(s.charged, 2 * MiB);
	assert_int_equal(r, 4 * MiB);
	check_acct(a);
	assert_int_equal(nxq_free(a, p), 0);
	assert_int_equal(nxq_arena_trim(a, 0, 0), 2 * MiB);
	st(a, &s);
	assert_int_equal(s.charged, 0);
	assert_int_equal(fk.charged, 0);
	assert_int_equal(nxq_arena_trim(a, 0, 0x80), -EINVAL);
	teardown_checks(a);
}

static void test_bad_free(void **state)
{
	struct nxq_arena *a = mk(8 * MiB, 64 * MiB, 0, 0);
	void *p;
	int x;

	assert_int_equal(nxq_alloc(a, 4096, 0, &p), 0);
	assert_int_equal(nxq_free(a, &x), -EINVAL);
	assert_int_equal(nxq_free(a, (char *)p + 256), -EINVAL);
	assert_int_equal(nxq_free(a, p), 0);
	assert_int_equal(nxq_free(a, p), -EINVAL);
	assert_non_null(strstr(nxq_errmsg(), "already freed"));
	assert_int_equal(nxq_free_async(a, p, NULL), -EINVAL);
	assert_int_equal(nxq_alloc(a, 0, 0, &p), -EINVAL);
	assert_int_equal(nxq_alloc(a, 10, 3, &p), -EINVAL);
	assert_int_equal(nxq_alloc(a, 8 * GiB, 0, &p), -ENOMEM);
	/* ctx cannot close under a live arena */
	assert_int_equal(nxq_ctx_close(ctx), -EBUSY);
	teardown_checks(a);
}

/* Random sequences checked against a reference model. */
struct ref { char *p; uint64_t size, align; unsigned char pat; };

static int cmp_ref(const void *x, const void *y)
{
	const struct ref *a = x, *b = y;

	return a->p < b->p ? -1 : a->p > b->p;
}

static void model_check(struct nxq_arena *a, struct ref *live, int n)
{
	struct ref sorted[512];
	struct nxq_stats s;
	uint64_t sum = 0;

	memcpy(sorted, live, n * sizeof(*live));
	qsort(sorted, n, sizeof(*sorted), cmp_ref);
	for (int i = 0; i < n; i++) {
		sum += (sorted[i].size + 255) & ~255ULL;
		assert_int_equal((uintptr_t)sorted[i].p % sorted[i].align, 0);
		if (i)
			assert_true(sorted[i - 1].p + sorted[i - 1].size <= sorted[i].p);
	}
	st(a, &s);
	assert_int_equal(s.in_use, sum);
	check_acct(a);
}

static void random_run(unsigned int seed, uint64_t batch, uint64_t retain, uint64_t pool)
{
	static const uint64_t sizes[] = { 1, 200, 256, 4096, 5000, 65536, 1 << 20,
					  (1 << 20) + 7, 3 << 20, 9 << 20 };
	static const uint64_t aligns[] = { 0, 256, 512, 4096, 1 << 16, 2 << 20, 4 << 20 };
	struct nxq_arena *a = mk(batch, retain, pool, 2 * GiB);
	struct ref live[512];
	int n = 0;

	srand(seed);
	for (int step = 0; step < 3000; step++) {
		int op = rand() % 100;

		if (op < 50 && n < 512) {
			struct ref r;
			void *p;

			r.size = sizes[rand() % 10] + (uint64_t)(rand() % 3000);
			r.align = aligns[rand() % 7];
			assert_int_equal(nxq_alloc(a, r.size, r.align, &p), 0);
			r.p = p;
			if (!r.align)
				r.align = 256;
			r.pat = (unsigned char)rand();
			memset(r.p, r.pat, r.size);
			live[n++] = r;
		} else if (op < 90 && n) {
			int i = rand() % n;
			struct ref r = live[i];

			/* contents intact: no other allocation overlapped it */
			for (uint64_t k = 0; k < r.size; k += 61)
				assert_int_equal((unsigned char)r.p[k], r.pat);
			assert_int_equal((unsigned char)r.p[r.size - 1], r.pat);
			if (op < 75)
				assert_int_equal(nxq_free(a, r.p), 0);
			else
				assert_int_equal(nxq_free_async(a, r.p, (void *)(uintptr_t)(1 + op % 3)), 0);
			live[i] = live[--n];
		} else if (op < 95) {
			fb_complete_all();
		} else {
			uint64_t target = (uint64_t)(rand() % 64) * MiB;

			assert_true(nxq_arena_trim(a, target, op & 1 ? NXQ_TRIM_WAIT : 0) >= 0);
		}
		model_check(a, live, n);
	}
	teardown_checks(a);
}

static void test_random_model(void **state)
{
	random_run(1, 2 * MiB, 0, 0);
	random_run(2, 32 * MiB, 64 * MiB, 64 * MiB);
	random_run(3, 8 * MiB, 8 * MiB, 4 * MiB);
	random_run(4, 4 * MiB, NXQ_OPT_ZERO, 16 * MiB);
}

static void test_unmanaged(void **state)
{
	struct nxq_ctx_opts co = { .size = sizeof(co), .dev_path = "/nonexistent/nxquota" };
	struct nxq_arena_opts o = { .size = sizeof(o), .backend = NXQ_BACKEND_HOST,
				    .grow_batch = 2 * MiB };
	struct nxq_ctx *c = NULL;
	struct nxq_arena *a;
	struct nxq_stats s;
	void *p, *q;

	setenv("NXQUOTA_SOCKET", "", 1);	/* nor a daemon, wherever this runs */
	assert_int_equal(nxq_ctx_open(&co, &c), -ENOENT);
	unsetenv("NXQUOTA_SOCKET");
	assert_null(c);
	assert_non_null(strstr(nxq_errmsg(), "module loaded"));
	assert_non_null(strstr(nxq_errmsg(), "NXQ_CTX_UNMANAGED"));
	co.flags = NXQ_CTX_UNMANAGED;
	co.unmanaged_cap = 8 * MiB;
	assert_int_equal(nxq_ctx_open(&co, &c), 0);
	assert_int_equal(nxq_ctx_is_managed(c), 0);
	assert_int_equal(nxq_arena_create(c, &o, &a), 0);
	assert_int_equal(nxq_alloc(a, 6 * MiB, 0, &p), 0);
	memset(p, 1, 6 * MiB);
	assert_int_equal(nxq_alloc(a, 4 * MiB, 0, &q), -EDQUOT);
	memset(&s, 0, sizeof(s));
	s.size = sizeof(s);
	assert_int_equal(nxq_arena_stats(a, &s), 0);
	assert_true(s.flags & NXQ_STATS_UNMANAGED);
	assert_int_equal(s.charged, 6 * MiB);
	assert_int_equal(nxq_free(a, p), 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
}

struct thr { struct nxq_arena *a; unsigned int seed, tag; };

static void *thr_fn(void *arg)
{
	struct thr *t = arg;
	void *p[32] = { 0 };

	for (int i = 0; i < 20000; i++) {
		int k = rand_r(&t->seed) % 32;

		if (p[k]) {
			if (*(unsigned int *)p[k] != t->tag + (unsigned int)k)
				return (void *)1;
			if (nxq_free(t->a, p[k]))
				return (void *)1;
			p[k] = NULL;
		} else {
			if (nxq_alloc(t->a, 256 + (size_t)(rand_r(&t->seed) % 200000), 0, &p[k]))
				return (void *)1;
			*(unsigned int *)p[k] = t->tag + (unsigned int)k;
		}
	}
	for (int k = 0; k < 32; k++)
		if (p[k] && nxq_free(t->a, p[k]))
			return (void *)1;
	return NULL;
}

static void test_threads(void **state)
{
	struct nxq_arena *a = mk(8 * MiB, 16 * MiB, 8 * MiB, 0);
	pthread_t th[4];
	struct thr t[4];
	struct nxq_stats s;
	void *ret;

	for (int i = 0; i < 4; i++) {
		t[i].a = a;
		t[i].seed = 17 + (unsigned int)i * 1000;
		t[i].tag = (unsigned int)i << 16;
		assert_int_equal(pthread_create(&th[i], NULL, thr_fn, &t[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(th[i], &ret), 0);
		assert_null(ret);
	}
	st(a, &s);
	assert_int_equal(s.in_use, 0);
	assert_int_equal(s.allocs, s.frees);
	check_acct(a);
	teardown_checks(a);
}

/*
 * The arena's one 2 MiB granule, all FREE or owned by stream 7, serves 2
 * MiB on stream 7 at p without growing or fencing; then a is torn down.
 */
static void granule_on_stream_7(struct nxq_arena *a, void *p)
{
	struct nxq_stats s;
	void *r;

	assert_int_equal(nxq_alloc_async(a, 2 * MiB, 0, (void *)7, &r), 0);
	assert_ptr_equal(r, p);
	st(a, &s);
	assert_int_equal(s.grows, 1);
	assert_int_equal(fb.calls[OP_FENCE], 0);
	check_acct(a);
	assert_int_equal(nxq_free(a, r), 0);
	teardown_checks(a);
}

/* A stream that misses takes the FREE memory next to what it owns, not a new handle. */
static void test_async_absorb(void **state)
{
	struct nxq_arena *a = mk(2 * MiB, 64 * MiB, 0, 0);
	void *p, *q;

	assert_int_equal(nxq_alloc(a, MiB, 0, &p), 0);		/* one 2 MiB handle */
	assert_int_equal(nxq_alloc(a, MiB, 0, &q), 0);
	assert_int_equal(nxq_free_async(a, p, (void *)7), 0);	/* owned by stream 7 */
	assert_int_equal(nxq_free(a, q), 0);			/* FREE, next to it */
	granule_on_stream_7(a, p);
}

#define PLAIN ((void *)-1)	/* not a stream: nxq_alloc() */

/*
 * [x 512K, on sx or PLAIN][y 512K, on sy][FREE 1M]; y freed plainly
 * ([x][FREE 1.5M]), then x on sf: the FREE memory stays FREE.
 */
static void merge_stays_off(void *sx, void *sy, void *sf)
{
	struct nxq_arena *a = mk(2 * MiB, 64 * MiB, 0, 0);
	struct nxq_stats s;
	void *x, *y;

	if (sx == PLAIN)
		assert_int_equal(nxq_alloc(a, 512 * 1024, 0, &x), 0);
	else
		assert_int_equal(nxq_alloc_async(a, 512 * 1024, 0, sx, &x), 0);
	assert_int_equal(nxq_alloc_async(a, 512 * 1024, 0, sy, &y), 0);
	assert_int_equal(nxq_free(a, y), 0);
	assert_int_equal(nxq_free_async(a, x, sf), 0);
	st(a, &s);
	assert_int_equal(s.pending, 512 * 1024);
	assert_int_equal(s.free, 3 * MiB / 2);
	check_acct(a);
	teardown_checks(a);
}

/*
 * A free on the stream of every allocation so far takes the FREE memory
 * next to it at once, as a plain free merges it; after an allocation on
 * a second stream or a plain one, or on another stream, the FREE memory
 * stays FREE for the others.
 */
static void test_async_merge_on_free(void **state)
{
	struct nxq_arena *a = mk(2 * MiB, 64 * MiB, 0, 0);
	struct nxq_stats s;
	void *p, *q;

	/* one stream: [p 512K][q 512K][FREE 1M] -> one OWNED block of 2 MiB */
	assert_int_equal(nxq_alloc_async(a, 512 * 1024, 0, (void *)7, &p), 0);
	assert_int_equal(nxq_alloc_async(a, 512 * 1024, 0, (void *)7, &q), 0);
	assert_int_equal(nxq_free_async(a, q, (void *)7), 0);
	assert_int_equal(nxq_free_async(a, p, (void *)7), 0);
	st(a, &s);
	assert_int_equal(s.pending, 2 * MiB);
	assert_int_equal(s.free, 0);
	granule_on_stream_7(a, p);

	/* two streams allocated: freed on the first, on the last */
	merge_stays_off((void *)7, (void *)8, (void *)7);
	merge_stays_off((void *)7, (void *)8, (void *)8);
	/* a plain allocation, then one stream (also the default one, NULL) */
	merge_stays_off(PLAIN, (void *)7, (void *)7);
	merge_stays_off(PLAIN, NULL, NULL);
	/* one stream allocated, freed on another */
	merge_stays_off((void *)7, (void *)7, (void *)8);
}

/*
 * Stream-ordered frees do not inflate memory: one random workload (sizes
 * 256 B to 8 MiB, up to 96 live), run with plain frees (the reference) and
 * with nxq_alloc_async/nxq_free_async on one stream whose fences never
 * complete: the same stream reuses its frees at once, so the peak mapped
 * must stay within 5% of the reference.  A second stream is then served
 * only once its fences completed.
 */
/*
 * async 0: plain; 1: nxq_alloc_async + nxq_free_async on one stream; 2:
 * plain nxq_alloc + nxq_free_async (a runtime that does not pass the
 * stream to allocations), with the device 8 operations behind.
 */
static uint64_t peak_workload(int async, unsigned int seed)
{
	struct nxq_arena *a = mk(64 * MiB, 32 * MiB, 32 * MiB, 0);
	void *live[96] = { 0 };
	uint64_t peak = 0;
	struct nxq_stats s;

	srand(seed);
	for (int i = 0; i < 6000; i++) {
		int k = rand() % 96;
		uint64_t size = 256ULL << (rand() % 16);

		size += (uint64_t)(rand() % 4096);
		fb.now = i;
		if (async == 2)
			fb_complete_before(i - 8);
		if (live[k]) {
			if (async)
				assert_int_equal(nxq_free_async(a, live[k], (void *)0x51), 0);
			else
				assert_int_equal(nxq_free(a, live[k]), 0);
		}
		if (async == 1)
			assert_int_equal(nxq_alloc_async(a, size, 0, (void *)0x51, &live[k]), 0);
		else
			assert_int_equal(nxq_alloc(a, size, 0, &live[k]), 0);
		memset(live[k], i, size < 512 ? size : 512);
		st(a, &s);
		if (s.mapped > peak)
			peak = s.mapped;
	}
	check_acct(a);
	if (async)
		assert_int_equal(fb.waits, 0);		/* never waited for the stream */
	if (async == 1)
		assert_int_equal(fb.calls[OP_FENCE], 0);	/* nor fenced it: one stream */
	for (int k = 0; k < 96; k++)
		if (live[k])
			assert_int_equal(nxq_free(a, live[k]), 0);
	teardown_checks(a);
	return peak;
}

static void test_async_peak(void **state)
{
	for (unsigned int seed = 1; seed <= 3; seed++) {
		uint64_t ref = peak_workload(0, seed), async = peak_workload(1, seed);
		uint64_t mixed = peak_workload(2, seed);

		print_message("seed %u: peak mapped plain %llu MiB, stream-ordered %llu MiB, plain "
			      "allocations with stream frees (device lagging) %llu MiB\n", seed,
			      (unsigned long long)(ref >> 20), (unsigned long long)(async >> 20),
			      (unsigned long long)(mixed >> 20));
		assert_true(async * 100 <= ref * 105);
		assert_true(mixed * 100 <= ref * 120);
	}
}

static void test_cuda_absent(void **state)
{
	struct nxq_ctx_opts co = { .size = sizeof(co), .flags = NXQ_CTX_UNMANAGED };
	struct nxq_arena_opts o = { .size = sizeof(o), .backend = NXQ_BACKEND_CUDA };
	struct nxq_ctx *c;
	struct nxq_arena *a = NULL;
	int r;

	assert_int_equal(nxq_ctx_open(&co, &c), 0);
	r = nxq_arena_create(c, &o, &a);
	if (r == 0) {
		nxq_arena_destroy(a);
		nxq_ctx_close(c);
		skip();		/* a real GPU: covered by make check-gpu */
	}
	assert_null(a);
	assert_true(r == -ENOENT || r == -ENODEV || r == -EOPNOTSUPP || r == -EIO);
	assert_true(strstr(nxq_errmsg(), "libcuda.so.1") || strstr(nxq_errmsg(), "cuda"));
	/* AUTO picks CUDA for a GPU key */
	o.backend = NXQ_BACKEND_AUTO;
	o.device_key = "GPU-00000000-0000-0000-0000-000000000000";
	assert_int_equal(nxq_arena_create(c, &o, &a), r);
	assert_int_equal(nxq_ctx_close(c), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_coalescing),
		cmocka_unit_test(test_warm_path_no_calls),
		cmocka_unit_test(test_batching),
		cmocka_unit_test(test_tail_growth),
		cmocka_unit_test(test_equal_holes),
		cmocka_unit_test(test_batch_fallback_and_refusal),
		cmocka_unit_test(test_failure_injection),
		cmocka_unit_test(test_fence_failure),
		cmocka_unit_test(test_free_async),
		cmocka_unit_test(test_async_refusal_waits),
		cmocka_unit_test(test_retention_and_pool),
		cmocka_unit_test(test_trim),
		cmocka_unit_test(test_bad_free),
		cmocka_unit_test(test_random_model),
		cmocka_unit_test(test_unmanaged),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_async_absorb),
		cmocka_unit_test(test_async_merge_on_free),
		cmocka_unit_test(test_async_peak),
		cmocka_unit_test(test_cuda_absent),
	};

	return cmocka_run_group_tests_name("libnxquota_arena", tests, NULL, NULL);
}
