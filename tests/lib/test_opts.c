// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * cmocka tests of options, environment variables, the version handshake
 * and the statistics struct's size rules.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fake.h"

static const char *envs[] = { "NXQ_VA_SIZE", "NXQ_GROW_BATCH", "NXQ_RETAIN_IDLE",
			      "NXQ_HANDLE_POOL", "NXQ_GRANULE", "NXQ_UNMANAGED_CAP", "NXQ_DEV",
			      "NXQ_GROW_TIMEOUT_MS", "NXQ_REPORT_INTERVAL_MS", "NXQ_GROW_MIN" };

static int clear_env(void **state)
{
	for (size_t i = 0; i < sizeof(envs) / sizeof(envs[0]); i++)
		unsetenv(envs[i]);
	fakes_reset();
	return 0;
}

static struct nxq_ctx *fctx(void)
{
	struct nxq_ctx *c = NULL;

	assert_int_equal(nxq__ctx_open_kops(NULL, &fake_kops, NULL, &c), 0);
	return c;
}

static void test_parse_size(void **state)
{
	uint64_t v = 0;

	assert_int_equal(nxq__parse_size("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(nxq__parse_size("4096", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(nxq__parse_size("4K", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(nxq__parse_size("3M", &v), 0);
	assert_int_equal(v, 3 * MiB);
	assert_int_equal(nxq__parse_size("2g", &v), 0);
	assert_int_equal(v, 2 * GiB);
	assert_int_equal(nxq__parse_size("1T", &v), 0);
	assert_int_equal(v, 1ULL << 40);
	assert_int_equal(nxq__parse_size("", &v), -EINVAL);
	assert_int_equal(nxq__parse_size("-1", &v), -EINVAL);
	assert_int_equal(nxq__parse_size(" 1", &v), -EINVAL);
	assert_int_equal(nxq__parse_size("1MB", &v), -EINVAL);
	assert_int_equal(nxq__parse_size("1.5G", &v), -EINVAL);
	assert_int_equal(nxq__parse_size("12Q", &v), -EINVAL);
	assert_int_equal(nxq__parse_size("99999999999999999999", &v), -ERANGE);
	assert_int_equal(nxq__parse_size("16777216T", &v), -ERANGE);
	/* lib/size.c's additions: P, E and the "i" forms; still no "max" */
	assert_int_equal(nxq__parse_size("4Ki", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(nxq__parse_size("2P", &v), 0);
	assert_int_equal(v, 2ULL << 50);
	assert_int_equal(nxq__parse_size("15E", &v), 0);
	assert_int_equal(v, 15ULL << 60);
	assert_int_equal(nxq__parse_size("16E", &v), -ERANGE);
	assert_int_equal(nxq__parse_size("max", &v), -EINVAL);
	assert_int_equal(nxq__parse_size("1KiB", &v), -EINVAL);
}

static void test_env_applied(void **state)
{
	struct nxq_ctx *c = fctx();
	struct nxq_arena *a;
	struct nxq_stats s = { .size = sizeof(s) };
	void *p;

	setenv("NXQ_GRANULE", "4M", 1);
	setenv("NXQ_VA_SIZE", "1G", 1);
	setenv("NXQ_GROW_BATCH", "8M", 1);
	assert_int_equal(nxq__arena_create_be(c, NULL, &fake_be, &a), 0);
	assert_int_equal(nxq_alloc(a, 1, 0, &p), 0);
	assert_int_equal(nxq_arena_stats(a, &s), 0);
	assert_int_equal(s.granule, 4 * MiB);
	assert_int_equal(s.va_size, GiB);
	assert_int_equal(s.mapped, 4 * MiB);		/* one granule first */
	/* the free tail is extended by what is missing: 64 MiB mapped */
	assert_int_equal(nxq_alloc(a, 60 * MiB, 0, &p), 0);
	assert_int_equal(nxq_arena_stats(a, &s), 0);
	assert_int_equal(s.mapped, 64 * MiB);
	assert_int_equal(nxq_alloc(a, 4 * MiB - 256, 0, &p), 0);	/* fills it */
	/* no free tail: at 64 MiB mapped a growth is a quarter (16 MiB)
	 * capped by grow_batch */
	assert_int_equal(nxq_alloc(a, 4 * MiB, 0, &p), 0);
	assert_int_equal(nxq_arena_stats(a, &s), 0);
	assert_int_equal(s.mapped, 72 * MiB);
	assert_int_equal(nxq_arena_destroy(a), 0);
	/* an option overrides the environment */
	{
		struct nxq_arena_opts o = { .size = sizeof(o), .grow_batch = 16 * MiB };

		assert_int_equal(nxq__arena_create_be(c, &o, &fake_be, &a), 0);
		assert_int_equal(nxq_alloc(a, 1, 0, &p), 0);
		assert_int_equal(nxq_alloc(a, 60 * MiB, 0, &p), 0);
		assert_int_equal(nxq_alloc(a, 4 * MiB - 256, 0, &p), 0);
		assert_int_equal(nxq_alloc(a, 4 * MiB, 0, &p), 0);
		assert_int_equal(nxq_arena_stats(a, &s), 0);
		assert_int_equal(s.mapped, 80 * MiB);
		assert_int_equal(nxq_arena_destroy(a), 0);
	}
	/* NXQ_GROW_MIN: the first growth maps that much (rounded to granules) */
	setenv("NXQ_GROW_MIN", "30M", 1);
	assert_int_equal(nxq__arena_create_be(c, NULL, &fake_be, &a), 0);
	assert_int_equal(nxq_alloc(a, 1, 0, &p), 0);
	assert_int_equal(nxq_arena_stats(a, &s), 0);
	assert_int_equal(s.mapped, 32 * MiB);
	assert_int_equal(s.grows, 1);
	assert_int_equal(nxq_arena_destroy(a), 0);
	unsetenv("NXQ_GROW_MIN");
	assert_int_equal(nxq_ctx_close(c), 0);
}

static void test_env_malformed(void **state)
{
	static const char *bad[][2] = {
		{ "NXQ_VA_SIZE", "lots" }, { "NXQ_GROW_BATCH", "12Q" },
		{ "NXQ_RETAIN_IDLE", "-1" }, { "NXQ_HANDLE_POOL", "1.5M" },
		{ "NXQ_GRANULE", "" }, { "NXQ_VA_SIZE", "0" }, { "NXQ_GROW_BATCH", "0" },
		{ "NXQ_GROW_MIN", "1G2" },
	};
	struct nxq_ctx *c = fctx();

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct nxq_arena *a = (void *)1;

		setenv(bad[i][0], bad[i][1], 1);
		assert_int_equal(nxq__arena_create_be(c, NULL, &fake_be, &a), -EINVAL);
		assert_null(a);
		assert_non_null(strstr(nxq_errmsg(), bad[i][0]));
		unsetenv(bad[i][0]);
	}
	assert_int_equal(fk.register_calls, 0);
	assert_int_equal(nxq_ctx_close(c), 0);
	{
		struct nxq_ctx_opts co = { .size = sizeof(co), .flags = NXQ_CTX_UNMANAGED };
		struct nxq_ctx *u = (void *)1;

		setenv("NXQ_UNMANAGED_CAP", "8X", 1);
		assert_int_equal(nxq_ctx_open(&co, &u), -EINVAL);
		assert_null(u);
		assert_non_null(strstr(nxq_errmsg(), "NXQ_UNMANAGED_CAP"));
	}
}

static void test_env_zero_retention(void **state)
{
	struct nxq_ctx *c = fctx();
	struct nxq_arena *a;
	struct nxq_stats s = { .size = sizeof(s) };
	void *p;

	setenv("NXQ_RETAIN_IDLE", "0", 1);
	setenv("NXQ_HANDLE_POOL", "0", 1);
	assert_int_equal(nxq__arena_create_be(c, NULL, &fake_be, &a), 0);
	assert_int_equal(nxq_alloc(a, MiB, 0, &p), 0);
	assert_int_equal(nxq_free(a, p), 0);
	assert_int_equal(nxq_arena_stats(a, &s), 0);
	assert_int_equal(s.charged, 0);		/* nothing idle kept, nothing pooled */
	assert_int_equal(fk.charged, 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
}

static void test_opts_size_rules(void **state)
{
	struct nxq_ctx *c = fctx();
	struct nxq_arena *a = NULL;
	struct {
		struct nxq_arena_opts o;
		uint64_t future[4];
	} big;

	memset(&big, 0, sizeof(big));
	big.o.size = sizeof(big);
	assert_int_equal(nxq__arena_create_be(c, &big.o, &fake_be, &a), 0);	/* zero tail ok */
	assert_int_equal(nxq_arena_destroy(a), 0);
	big.future[2] = 1;
	assert_int_equal(nxq__arena_create_be(c, &big.o, &fake_be, &a), -E2BIG);
	big.future[2] = 0;
	big.o.size = NXQ_ARENA_OPTS_SIZE_VER0 - 8;
	assert_int_equal(nxq__arena_create_be(c, &big.o, &fake_be, &a), -EINVAL);
	big.o.size = 8192;
	assert_int_equal(nxq__arena_create_be(c, &big.o, &fake_be, &a), -E2BIG);
	big.o.size = sizeof(big.o);
	big.o.flags = 1;
	assert_int_equal(nxq__arena_create_be(c, &big.o, &fake_be, &a), -EINVAL);
	big.o.flags = 0;
	big.o.backend = 7;
	assert_int_equal(nxq__arena_create_be(c, &big.o, &fake_be, &a), -EINVAL);
	big.o.backend = 0;
	big.o.priority = NXQ_PRIORITY_MAX + 1;
	assert_int_equal(nxq__arena_create_be(c, &big.o, &fake_be, &a), -EINVAL);
	big.o.priority = 0;
	big.o.granule = 4097;			/* not a page multiple */
	assert_int_equal(nxq__arena_create_be(c, &big.o, &fake_be, &a), -EINVAL);
	big.o.granule = 0;
	big.o.va_size = NXQ_OPT_ZERO;
	assert_int_equal(nxq__arena_create_be(c, &big.o, &fake_be, &a), -EINVAL);
	big.o.va_size = 0;
	big.o.device_key = "nodev";		/* the module does not know it */
	assert_int_equal(nxq__arena_create_be(c, &big.o, &fake_be, &a), -ENODEV);
	assert_non_null(strstr(nxq_errmsg(), "nodev"));
	assert_int_equal(fb.live_handles, 0);
	assert_int_equal(fk.holders, 0);
	assert_int_equal(nxq_ctx_close(c), 0);
	/* ctx opts */
	{
		struct nxq_ctx_opts co = { .size = 8 };
		struct nxq_ctx *u;

		assert_int_equal(nxq_ctx_open(&co, &u), -EINVAL);
		co.size = sizeof(co);
		co.flags = 0x10;
		assert_int_equal(nxq_ctx_open(&co, &u), -EINVAL);
		co.flags = 0;
		co.unmanaged_cap = MiB;		/* a cap only makes sense unmanaged */
		assert_int_equal(nxq_ctx_open(&co, &u), -EINVAL);
	}
	{
		struct { struct nxq_ctx_opts o; uint64_t tail; } b = {
			.o = { .size = sizeof(b), .flags = NXQ_CTX_UNMANAGED }, .tail = 1 };
		struct nxq_ctx *u;

		assert_int_equal(nxq_ctx_open(&b.o, &u), -E2BIG);
		b.tail = 0;
		assert_int_equal(nxq_ctx_open(&b.o, &u), 0);
		assert_int_equal(nxq_ctx_close(u), 0);
	}
}

/*
 * A caller built against the first version of nxq_arena_opts: nothing
 * past its size is read (here: a grow timeout that is not its own).
 */
static void test_opts_old_size(void **state)
{
	struct nxq_ctx_opts co = { .size = sizeof(co), .flags = NXQ_CTX_NO_THREAD };
	struct nxq_ctx *c;
	struct nxq_arena *a;
	struct nxq_arena_opts o = { .size = NXQ_ARENA_OPTS_SIZE_VER0, .backend = NXQ_BACKEND_HOST,
				    .grow_batch = 2 * MiB, .grow_timeout_ms = 500 };
	void *p;

	assert_int_equal(nxq__ctx_open_kops(&co, &fake_kops, NULL, &c), 0);
	assert_int_equal(nxq__arena_create_be(c, &o, &fake_be, &a), 0);
	fk.cap = 2 * MiB;
	assert_int_equal(nxq_alloc(a, 2 * MiB, 0, &p), 0);
	assert_int_equal(nxq_alloc(a, 2 * MiB, 0, &p), -EDQUOT);	/* no wait */
	assert_int_equal(fk.wait_charges, 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	/* the ctx opts' first version is 24 bytes: the hook past it is not read */
	co.size = NXQ_CTX_OPTS_SIZE_VER0;
	co.report_interval_ms = 12345678901ULL;		/* invalid if it were read */
	assert_int_equal(nxq__ctx_open_kops(&co, &fake_kops, NULL, &c), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
	co.size = sizeof(co);
	assert_int_equal(nxq__ctx_open_kops(&co, &fake_kops, NULL, &c), -EINVAL);
	setenv("NXQ_REPORT_INTERVAL_MS", "10ms", 1);
	co.report_interval_ms = 0;
	assert_int_equal(nxq__ctx_open_kops(&co, &fake_kops, NULL, &c), -EINVAL);
	assert_non_null(strstr(nxq_errmsg(), "NXQ_REPORT_INTERVAL_MS"));
	unsetenv("NXQ_REPORT_INTERVAL_MS");
}

/* mapped bytes and growths of an arena after nxq_alloc(a, 1) */
static uint64_t first_growth(struct nxq_ctx *c, const struct nxq_arena_opts *o,
			     uint64_t *grows)
{
	struct nxq_stats s = { .size = sizeof(s) };
	struct nxq_arena *a;
	void *p;

	assert_int_equal(nxq__arena_create_be(c, o, &fake_be, &a), 0);
	assert_int_equal(nxq_alloc(a, 1, 0, &p), 0);
	assert_int_equal(nxq_arena_stats(a, &s), 0);
	assert_int_equal(s.granule, 2 * MiB);
	assert_int_equal(nxq_arena_destroy(a), 0);
	if (grows)
		*grows = s.grows;
	return s.mapped;
}

/*
 * nxq_arena_opts.grow_min (version 2): the least one growth maps, as
 * $NXQ_GROW_MIN; the field overrides the variable, which fills a 0
 * field; NXQ_OPT_ZERO is 0 whatever the variable says.
 */
static void test_grow_min_field(void **state)
{
	struct nxq_ctx *c = fctx();
	struct nxq_stats s = { .size = sizeof(s) };
	struct nxq_arena_opts o = { .size = sizeof(o), .grow_min = 64 * MiB };
	struct nxq_arena *a;
	uint64_t grows = 0;
	void *p, *q;

	assert_int_equal(sizeof(o), NXQ_ARENA_OPTS_SIZE_VER2);
	/* the field alone: one growth of 64 MiB for one byte */
	assert_int_equal(first_growth(c, &o, &grows), 64 * MiB);
	assert_int_equal(grows, 1);
	/* every growth, not only the first: at 64 MiB mapped the rule alone
	 * would grow by a quarter (16 MiB); grow_min is beyond grow_batch */
	o.grow_min = 96 * MiB;
	assert_int_equal(nxq__arena_create_be(c, &o, &fake_be, &a), 0);
	assert_int_equal(nxq_alloc(a, 96 * MiB, 0, &p), 0);
	assert_int_equal(nxq_alloc(a, 1, 0, &q), 0);
	assert_int_equal(nxq_arena_stats(a, &s), 0);
	assert_int_equal(s.mapped, 192 * MiB);
	assert_int_equal(s.grows, 2);
	assert_int_equal(fk.charged, 192 * MiB);
	assert_int_equal(nxq_arena_destroy(a), 0);
	/* rounded up to the granule */
	o.grow_min = 30 * MiB + 1;
	assert_int_equal(first_growth(c, &o, NULL), 32 * MiB);
	/* the field overrides $NXQ_GROW_MIN, which fills a 0 field */
	setenv("NXQ_GROW_MIN", "31M", 1);
	o.grow_min = 8 * MiB;
	assert_int_equal(first_growth(c, &o, NULL), 8 * MiB);
	o.grow_min = 0;
	assert_int_equal(first_growth(c, &o, NULL), 32 * MiB);
	o.grow_min = NXQ_OPT_ZERO;		/* explicit 0: one granule */
	assert_int_equal(first_growth(c, &o, NULL), 2 * MiB);
	/* a field above va_size: -EINVAL, nothing registered or mapped */
	o.grow_min = GiB + 1;
	o.va_size = GiB;
	a = (void *)1;
	assert_int_equal(nxq__arena_create_be(c, &o, &fake_be, &a), -EINVAL);
	assert_null(a);
	assert_non_null(strstr(nxq_errmsg(), "grow_min"));
	o.grow_min = GiB;			/* all of it is allowed */
	assert_int_equal(first_growth(c, &o, NULL), GiB);
	o.grow_min = 0;
	setenv("NXQ_GROW_MIN", "2G", 1);	/* the variable too, and named */
	assert_int_equal(nxq__arena_create_be(c, &o, &fake_be, &a), -EINVAL);
	assert_non_null(strstr(nxq_errmsg(), "NXQ_GROW_MIN"));
	assert_int_equal(fk.register_calls, 7);
	assert_int_equal(fk.holders, 0);
	assert_int_equal(fb.live_handles, 0);
	unsetenv("NXQ_GROW_MIN");
	assert_int_equal(nxq_ctx_close(c), 0);
}

/*
 * Callers built before grow_min (version 0, 72 bytes; version 1, 80):
 * the field is past their size and never read, whatever lies there; they
 * get $NXQ_GROW_MIN or the default.  Bytes past version 2 must be zero.
 */
static void test_grow_min_old_size(void **state)
{
	static const uint32_t old[] = { NXQ_ARENA_OPTS_SIZE_VER0, NXQ_ARENA_OPTS_SIZE_VER1 };
	struct nxq_ctx *c = fctx();
	struct nxq_arena *a = (void *)1;
	struct {
		struct nxq_arena_opts o;
		uint64_t future;
	} b;

	for (size_t i = 0; i < sizeof(old) / sizeof(old[0]); i++) {
		memset(&b, 0, sizeof(b));
		b.o.size = old[i];
		b.o.grow_min = 64 * MiB;	/* not the caller's: not read */
		assert_int_equal(first_growth(c, &b.o, NULL), 2 * MiB);
		setenv("NXQ_GROW_MIN", "31M", 1);
		assert_int_equal(first_growth(c, &b.o, NULL), 32 * MiB);
		unsetenv("NXQ_GROW_MIN");
		/* nor checked: a value that would be invalid is ignored too */
		b.o.va_size = GiB;
		b.o.grow_min = 2 * GiB;
		assert_int_equal(first_growth(c, &b.o, NULL), 2 * MiB);
	}
	/* 96 bytes: the field is read, the 8 past it must be 0 */
	memset(&b, 0, sizeof(b));
	b.o.size = sizeof(b);
	assert_int_equal(sizeof(b), 96);
	b.o.grow_min = 64 * MiB;
	assert_int_equal(first_growth(c, &b.o, NULL), 64 * MiB);
	b.future = 0x5a;
	assert_int_equal(nxq__arena_create_be(c, &b.o, &fake_be, &a), -E2BIG);
	assert_null(a);
	assert_non_null(strstr(nxq_errmsg(), "offset 88"));
	assert_int_equal(fk.holders, 0);
	assert_int_equal(nxq_ctx_close(c), 0);
}

static void test_version_handshake(void **state)
{
	struct nxq_ctx *c = (void *)1;

	fk.abi_version = NXQ_ABI_VERSION + 1;
	assert_int_equal(nxq__ctx_open_kops(NULL, &fake_kops, NULL, &c), -EPROTO);
	assert_null(c);
	fk.abi_version = 0;
	fk.features = NXQ_FEAT_STATUS;
	assert_int_equal(nxq__ctx_open_kops(NULL, &fake_kops, NULL, &c), -EOPNOTSUPP);
	fk.features = 0;
	assert_int_equal(nxq__ctx_open_kops(NULL, &fake_kops, NULL, &c), 0);
	assert_int_equal(fk.version_calls, 3);
	assert_int_equal(nxq_ctx_close(c), 0);
}

/*
 * nxq__status(): the kernel ops' STATUS where the authority has it
 * (NXQ_FEAT_STATUS), its version 1 fields only with NXQ_FEAT_STATUS_V1
 * (else zeroed, whatever the authority sent), -EOPNOTSUPP without the
 * feature or the op; the unmanaged ledger answers it as one node under
 * its cap, with its last refused charge.
 */
static void test_status(void **state)
{
	struct nxq_ctx_opts uo = { .size = sizeof(uo), .flags = NXQ_CTX_UNMANAGED,
				   .unmanaged_cap = 10 * MiB };
	struct nxq_kops noop = fake_kops;
	struct nxq_holder_reg reg = { .size = sizeof(reg), .device = "host0", .eventfd = -1 };
	struct nxq_status st;
	struct nxq_ctx *c;

	fk.features = NXQ_FEAT_HOLDERS | NXQ_FEAT_CHARGE | NXQ_FEAT_STATUS | NXQ_FEAT_STATUS_V1;
	fk.cap = 64 * MiB;
	c = fctx();
	assert_int_equal(c->kops->holder_register(c, &reg), 0);
	assert_int_equal(c->kops->charge(c, reg.holder_id, 4 * MiB, 0, NULL), 0);
	assert_int_equal(nxq__status(c, reg.holder_id, &st), 0);
	assert_int_equal(fk.status_calls, 1);
	assert_int_equal(st.holder_charge, 4 * MiB);
	assert_int_equal(st.room, 60 * MiB);
	assert_int_equal(st.limit, 64 * MiB);
	assert_int_equal(st.last_error, EDQUOT);
	assert_int_equal(c->kops->uncharge(c, reg.holder_id, 4 * MiB), 0);
	assert_int_equal(nxq_ctx_close(c), 0);

	/* STATUS without version 1: its fields zeroed */
	fk.features = NXQ_FEAT_HOLDERS | NXQ_FEAT_CHARGE | NXQ_FEAT_STATUS;
	c = fctx();
	assert_int_equal(c->kops->holder_register(c, &reg), 0);
	assert_int_equal(nxq__status(c, reg.holder_id, &st), 0);
	assert_int_equal(st.device_capacity, 64 * MiB);
	assert_int_equal(st.room, 0);
	assert_int_equal(st.limit, 0);
	assert_int_equal(st.last_error, 0);
	assert_int_equal(nxq_ctx_close(c), 0);

	/* no STATUS at all: not asked */
	fk.features = NXQ_FEAT_HOLDERS | NXQ_FEAT_CHARGE;
	c = fctx();
	assert_int_equal(nxq__status(c, reg.holder_id, &st), -EOPNOTSUPP);
	assert_int_equal(fk.status_calls, 2);
	assert_int_equal(nxq_ctx_close(c), 0);
	/* kernel ops without the op */
	fk.features = 0;
	noop.status = NULL;
	assert_int_equal(nxq__ctx_open_kops(NULL, &noop, NULL, &c), 0);
	assert_int_equal(nxq__status(c, reg.holder_id, &st), -EOPNOTSUPP);
	assert_int_equal(nxq_ctx_close(c), 0);

	/* the unmanaged ledger: one node under its cap, its last refusal */
	assert_int_equal(nxq_ctx_open(&uo, &c), 0);
	assert_true(c->features & NXQ_FEAT_STATUS_V1);
	assert_int_equal(c->kops->holder_register(c, &reg), 0);
	assert_int_equal(c->kops->charge(c, reg.holder_id, 4 * MiB, 0, NULL), 0);
	assert_int_equal(nxq__status(c, reg.holder_id, &st), 0);
	assert_int_equal(st.node_current, 4 * MiB);
	assert_int_equal(st.room, 6 * MiB);
	assert_int_equal(st.limit, 10 * MiB);
	assert_int_equal(st.last_error, 0);
	assert_int_equal(c->kops->charge(c, reg.holder_id, 8 * MiB, 0, NULL), -EDQUOT);
	assert_int_equal(nxq__status(c, reg.holder_id, &st), 0);
	assert_int_equal(st.last_error, EDQUOT);
	assert_int_equal(st.last_bytes, 8 * MiB);
	assert_int_equal(st.last_usage, 4 * MiB);
	assert_int_equal(st.last_limit, 10 * MiB);
	assert_int_equal(st.last_level, 0);
	assert_int_equal(st.room, 6 * MiB);
	assert_int_equal(c->kops->uncharge(c, reg.holder_id, 4 * MiB), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
	uo.unmanaged_cap = 0;
	assert_int_equal(nxq_ctx_open(&uo, &c), 0);
	assert_int_equal(nxq__status(c, 1, &st), 0);
	assert_int_equal(st.limit, NXQ_UNLIMITED);
	assert_int_equal(st.room, NXQ_UNLIMITED);
	assert_int_equal(nxq_ctx_close(c), 0);
}

static void test_stats_size(void **state)
{
	struct nxq_ctx *c = fctx();
	struct nxq_arena *a;
	struct {
		struct nxq_stats s;
		uint64_t future[2];
	} big;

	assert_int_equal(nxq__arena_create_be(c, NULL, &fake_be, &a), 0);
	memset(&big, 0xff, sizeof(big));
	big.s.size = NXQ_STATS_SIZE_VER0 - 8;
	assert_int_equal(nxq_arena_stats(a, &big.s), -EINVAL);
	big.s.size = sizeof(big);
	assert_int_equal(nxq_arena_stats(a, &big.s), 0);
	assert_int_equal(big.future[0], 0);	/* unknown tail zeroed */
	assert_int_equal(big.s.size, sizeof(big));
	assert_int_equal(big.s.mapped, 0);
	assert_int_equal(nxq_arena_destroy(a), 0);
	assert_int_equal(nxq_ctx_close(c), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_parse_size, clear_env),
		cmocka_unit_test_setup(test_env_applied, clear_env),
		cmocka_unit_test_setup(test_env_malformed, clear_env),
		cmocka_unit_test_setup(test_env_zero_retention, clear_env),
		cmocka_unit_test_setup(test_opts_size_rules, clear_env),
		cmocka_unit_test_setup(test_opts_old_size, clear_env),
		cmocka_unit_test_setup(test_grow_min_field, clear_env),
		cmocka_unit_test_setup(test_grow_min_old_size, clear_env),
		cmocka_unit_test_setup(test_version_handshake, clear_env),
		cmocka_unit_test_setup(test_stats_size, clear_env),
		cmocka_unit_test_setup(test_status, clear_env),
	};

	return cmocka_run_group_tests_name("libnxquota_opts", tests, NULL, NULL);
}
