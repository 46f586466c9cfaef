// SPDX-License-Identifier: GPL-2.0
/*
 * A KUnit runner for userspace: runs every registered suite's cases, each
 * in its own thread, and prints KTAP, then "N passed, M failed".  A WARNING
 * (a lock assertion, sleeping under a spinlock, a refcount or list error)
 * during a case fails that case, as tests/kunit/run.sh fails a kernel run.
 *
 * Usage: <binary> [GLOB ...]  runs the cases whose "suite.case" matches one
 * of the globs (all when none).  UK_KUNIT_TIMEOUT: seconds per case (300).
 */
#include <kunit/test.h>
#include <fnmatch.h>
#include <unistd.h>

struct kunit_resource {
	struct kunit_resource *next;
	void *p;
};

#define UK_MAX_SUITES 64
static struct kunit_suite *uk_suites[UK_MAX_SUITES];
static size_t uk_nr_suites;

void uk_kunit_register(struct kunit_suite **suites, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (uk_nr_suites == UK_MAX_SUITES)
			uk_bug(__FILE__, __LINE__, "too many suites");
		uk_suites[uk_nr_suites++] = suites[i];
	}
}

void *kunit_kmalloc(struct kunit *test, size_t n, gfp_t gfp)
{
	struct kunit_resource *r = malloc(sizeof(*r));
	void *p = uk_kmalloc(n, gfp, __FILE__, __LINE__);

	if (!r || !p) {
		free(r);
		free(p);
		return NULL;
	}
	r->p = p;
	pthread_mutex_lock(&test->lock);
	r->next = test->res;
	test->res = r;
	pthread_mutex_unlock(&test->lock);
	return p;
}

void kunit_kfree(struct kunit *test, const void *p)
{
	struct kunit_resource **pp, *r;

	pthread_mutex_lock(&test->lock);
	for (pp = &test->res; (r = *pp); pp = &r->next) {
		if (r->p == p) {
			*pp = r->next;
			free(r->p);
			free(r);
			break;
		}
	}
	pthread_mutex_unlock(&test->lock);
	WARN(!r && p, "kunit_kfree(%p): not a kunit allocation", p);
}

static void uk_kunit_free_all(struct kunit *test)
{
	struct kunit_resource *r;

	while ((r = test->res)) {
		test->res = r->next;
		free(r->p);
		free(r);
	}
}

static void uk_kunit_vlog(struct kunit *test, const char *fmt, va_list ap)
{
	char buf[2048];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	flockfile(stdout);
	printf("    # %s: %s\n", test->name, buf);
	funlockfile(stdout);
}

void uk_kunit_log(struct kunit *test, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	uk_kunit_vlog(test, fmt, ap);
	va_end(ap);
}

void uk_kunit_abort(struct kunit *test)
{
	(void)test;
	pthread_exit(NULL);
}

static void uk_kunit_vreport(struct kunit *test, bool fatal, const char *file,
			     int line, const char *fmt, va_list ap)
{
	char buf[2048];

	pthread_mutex_lock(&test->lock);
	test->failed = true;
	pthread_mutex_unlock(&test->lock);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	flockfile(stdout);
	printf("    # %s: %s FAILED at %s:%d\n        %s\n", test->name,
	       fatal ? "ASSERTION" : "EXPECTATION", file, line, buf);
	funlockfile(stdout);
}

void uk_kunit_report(struct kunit *test, bool fatal, const char *file,
		     int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	uk_kunit_vreport(test, fatal, file, line, fmt, ap);
	va_end(ap);
}

void uk_kunit_fail(struct kunit *test, bool fatal, const char *file, int line,
		   const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	uk_kunit_vreport(test, fatal, file, line, fmt, ap);
	va_end(ap);
	if (fatal)
		uk_kunit_abort(test);
}

void uk_kunit_skip(struct kunit *test, const char *fmt, ...)
{
	va_list ap;

	test->skipped = true;
	va_start(ap, fmt);
	uk_kunit_vlog(test, fmt, ap);
	va_end(ap);
	uk_kunit_abort(test);
}

struct uk_case_run {
	struct kunit *test;
	struct kunit_suite *suite;
	struct kunit_case *c;
	pthread_mutex_t m;
	pthread_cond_t cv;
	bool done;
};

static void uk_case_done(void *arg)
{
	struct uk_case_run *r = arg;

	pthread_mutex_lock(&r->m);
	r->done = true;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->m);
}

static void *uk_case_main(void *arg)
{
	struct uk_case_run *r = arg;

	pthread_cleanup_push(uk_case_done, r);
	snprintf(current->comm, sizeof(current->comm), "kunit_try_catch");
	if (r->suite->init && r->suite->init(r->test))
		uk_kunit_fail(r->test, true, __FILE__, __LINE__,
			      "suite init failed");
	r->c->run_case(r->test);
	pthread_cleanup_pop(1);
	return NULL;
}

static unsigned long uk_case_warns;	/* WARNINGs inside cases */

static unsigned int uk_timeout_s(void)
{
	const char *s = getenv("UK_KUNIT_TIMEOUT");
	long v = s ? strtol(s, NULL, 10) : 0;

	return v > 0 ? (unsigned int)v : 300;
}

/* Returns 0 passed, 1 failed, 2 skipped. */
static int uk_run_case(struct kunit_suite *suite, struct kunit_case *c)
{
	struct kunit test = { .name = c->name };
	struct uk_case_run r = {
		.test = &test, .suite = suite, .c = c,
	};
	u64 deadline = ktime_get_ns() + uk_timeout_s() * (u64)NSEC_PER_SEC;
	struct timespec ts = {
		.tv_sec = (time_t)(deadline / NSEC_PER_SEC),
		.tv_nsec = (long)(deadline % NSEC_PER_SEC),
	};
	pthread_condattr_t ca;
	unsigned long warns;
	int err = 0;

	pthread_mutex_init(&test.lock, NULL);
	pthread_mutex_init(&r.m, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r.cv, &ca);
	pthread_condattr_destroy(&ca);
	test.warn_base = uk_warn_count();
	if (pthread_create(&test.thread, NULL, uk_case_main, &r)) {
		uk_kunit_log(&test, "cannot start the case's thread");
		return 1;
	}
	pthread_mutex_lock(&r.m);
	while (!r.done && err != ETIMEDOUT)
		err = pthread_cond_timedwait(&r.cv, &r.m, &ts);
	pthread_mutex_unlock(&r.m);
	if (!r.done) {
		printf("    # %s: timed out after %us\n    not ok - %s\n",
		       c->name, uk_timeout_s(), c->name);
		fflush(stdout);
		_exit(1);	/* its threads cannot be stopped safely */
	}
	pthread_join(test.thread, NULL);
	if (suite->exit)
		suite->exit(&test);
	rcu_barrier();	/* kfree_rcu()s of the case, before the leak check */
	warns = uk_warn_count() - test.warn_base;
	uk_case_warns += warns;
	warns -= test.warn_expected;
	if (warns) {
		uk_kunit_log(&test, "%lu WARNING(s) during the case (see above)",
			     warns);
		test.failed = true;
	}
	uk_kunit_free_all(&test);
	pthread_mutex_destroy(&test.lock);
	pthread_cond_destroy(&r.cv);
	pthread_mutex_destroy(&r.m);
	if (test.failed)
		return 1;
	return test.skipped ? 2 : 0;
}

static bool uk_selected(int argc, char **argv, const char *suite,
			const char *name)
{
	char full[512];
	int i;

	if (argc < 2)
		return true;
	snprintf(full, sizeof(full), "%s.%s", suite, name);
	for (i = 1; i < argc; i++)
		if (!fnmatch(argv[i], full, 0))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	unsigned int passed = 0, failed = 0, skipped = 0;
	unsigned long warn0;
	size_t s;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("KTAP version 1\n1..%zu\n", uk_nr_suites);
	for (s = 0; s < uk_nr_suites; s++) {
		struct kunit_suite *suite = uk_suites[s];
		unsigned int sp = 0, sf = 0, ss = 0, n = 0, total = 0;
		struct kunit_case *c;

		for (c = suite->test_cases; c->run_case; c++)
			if (uk_selected(argc, argv, suite->name, c->name))
				total++;
		printf("    KTAP version 1\n    # Subtest: %s\n    1..%u\n",
		       suite->name, total);
		if (suite->suite_init && suite->suite_init(suite)) {
			printf("not ok %zu %s # suite_init failed\n", s + 1,
			       suite->name);
			failed += total;
			continue;
		}
		for (c = suite->test_cases; c->run_case; c++) {
			u64 t0;
			int st;

			if (!uk_selected(argc, argv, suite->name, c->name))
				continue;
			t0 = ktime_get_ns();
			st = uk_run_case(suite, c);
			c->status = st;
			n++;
			printf("    %s %u %s%s # %llu ms\n", st == 1 ? "not ok" : "ok",
			       n, c->name, st == 2 ? " # SKIP" : "",
			       (unsigned long long)((ktime_get_ns() - t0) /
						    NSEC_PER_MSEC));
			if (st == 0)
				sp++;
			else if (st == 1)
				sf++;
			else
				ss++;
		}
		if (suite->suite_exit)
			suite->suite_exit(suite);
		printf("# %s: pass:%u fail:%u skip:%u total:%u\n", suite->name,
		       sp, sf, ss, total);
		printf("%s %zu %s\n", sf ? "not ok" : "ok", s + 1, suite->name);
		passed += sp;
		failed += sf;
		skipped += ss;
	}
	warn0 = uk_warn_count() - uk_case_warns;
	if (warn0)
		printf("# %lu WARNING(s) outside the cases (see above)\n", warn0);
	if (skipped)
		printf("%u skipped\n", skipped);
	printf("%u passed, %u failed\n", passed, failed);
	if (!passed && !failed)
		printf("# no case ran\n");
	return failed || warn0 || !passed ? 1 : 0;
}
