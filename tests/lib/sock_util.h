/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * sock_util.h - what test_sock.c (a fake nxquotad) and test_sock_real.c
 * (the real one) both do with the library: a context that must have found
 * nxquotad, a host arena on device "host0" in granules of G, its stats.
 * Include after <cmocka.h> and "internal.h".
 */
#ifndef NXQ_TEST_SOCK_UTIL_H
#define NXQ_TEST_SOCK_UTIL_H

#define MiB (1ULL << 20)
#define G (2 * MiB)

static struct nxq_ctx *open_ctx(unsigned int flags,
				void (*on_event)(const struct nxq_event *, void *))
{
	struct nxq_ctx_opts co = { .size = sizeof(co), .flags = flags,
				   .report_interval_ms = NXQ_OPT_ZERO, .on_event = on_event };
	struct nxq_ctx *c = NULL;

	assert_int_equal(nxq_ctx_open(&co, &c), 0);
	assert_string_equal(c->kops->name, "nxquotad");
	assert_int_equal(nxq_ctx_is_managed(c), 1);
	return c;
}

static struct nxq_arena *mk(struct nxq_ctx *c, uint64_t retain, uint64_t wait_ms)
{
	struct nxq_arena_opts o = {
		.size = sizeof(o), .backend = NXQ_BACKEND_HOST, .device_key = "host0",
		.granule = G, .grow_batch = G, .va_size = 1ULL << 30,
		.retain_idle = retain ? retain : NXQ_OPT_ZERO,
		.handle_pool = NXQ_OPT_ZERO,
		.grow_timeout_ms = wait_ms ? wait_ms : NXQ_OPT_ZERO,
	};
	struct nxq_arena *a = NULL;

	assert_int_equal(nxq_arena_create(c, &o, &a), 0);
	return a;
}

static void st(struct nxq_arena *a, struct nxq_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	assert_int_equal(nxq_arena_stats(a, s), 0);
}

static uint64_t charged(struct nxq_arena *a)
{
	struct nxq_stats s;

	st(a, &s);
	return s.charged;
}

#endif /* NXQ_TEST_SOCK_UTIL_H */
