/* SPDX-License-Identifier: GPL-2.0 */
/*
 * <kunit/test.h> for userspace: the subset of KUnit the nxquota suites use,
 * with KUnit's semantics: a case runs in its own thread; a failed EXPECT
 * marks the case failed and goes on; a failed ASSERT also ends the thread
 * it happened in (as kunit_try_catch_throw() ends the kthread).  Memory
 * from kunit_kzalloc() is freed when the case ends.  Output is KTAP.
 * Written for this project; see daemon/README.md.
 */
#ifndef _UK_KUNIT_TEST_H
#define _UK_KUNIT_TEST_H

#include <uk/uk.h>

struct kunit_resource;

struct kunit {
	const char *name;		/* the case's */
	pthread_mutex_t lock;		/* @failed, @res */
	bool failed;
	bool skipped;
	struct kunit_resource *res;
	pthread_t thread;		/* the case's own */
	unsigned long warn_base;	/* uk_warn_count() at start */
	unsigned long warn_expected;	/* UK_EXPECT_WARNS()'s */
};

struct kunit_case {
	void (*run_case)(struct kunit *test);
	const char *name;
	/* set by the harness */
	int status;
};

struct kunit_suite {
	const char name[256];
	int (*suite_init)(struct kunit_suite *suite);
	void (*suite_exit)(struct kunit_suite *suite);
	int (*init)(struct kunit *test);
	void (*exit)(struct kunit *test);
	struct kunit_case *test_cases;
};

#define KUNIT_CASE(fn)		{ .run_case = fn, .name = #fn }

void uk_kunit_register(struct kunit_suite **suites, size_t n);

#define UK_CAT_(a, b)	a##b
#define UK_CAT(a, b)	UK_CAT_(a, b)
#define kunit_test_suites(...)						\
	static struct kunit_suite *UK_CAT(uk_suites_, __LINE__)[] =	\
		{ __VA_ARGS__ };					\
	static void __attribute__((constructor))			\
	UK_CAT(uk_suites_reg_, __LINE__)(void)				\
	{								\
		uk_kunit_register(UK_CAT(uk_suites_, __LINE__),		\
				  ARRAY_SIZE(UK_CAT(uk_suites_, __LINE__))); \
	}
#define kunit_test_suite(suite)	kunit_test_suites(&suite)

void *kunit_kmalloc(struct kunit *test, size_t n, gfp_t gfp);
static inline void *kunit_kzalloc(struct kunit *test, size_t n, gfp_t gfp)
{
	return kunit_kmalloc(test, n, gfp | __GFP_ZERO);
}
#define kunit_kcalloc(test, n, s, gfp) kunit_kzalloc(test, size_mul(n, s), gfp)
void kunit_kfree(struct kunit *test, const void *p);

void uk_kunit_log(struct kunit *test, const char *fmt, ...) __printf(2, 3);
#define kunit_info(test, fmt, ...)	uk_kunit_log(test, fmt, ##__VA_ARGS__)
#define kunit_warn(test, fmt, ...)	uk_kunit_log(test, fmt, ##__VA_ARGS__)
#define kunit_err(test, fmt, ...)	uk_kunit_log(test, fmt, ##__VA_ARGS__)
#define kunit_log(lvl, test, fmt, ...)	uk_kunit_log(test, fmt, ##__VA_ARGS__)

/* End the calling thread after a failed assertion. */
void uk_kunit_abort(struct kunit *test) __attribute__((noreturn));
/* Record a failure; with @fatal, end the calling thread. */
void uk_kunit_fail(struct kunit *test, bool fatal, const char *file, int line,
		   const char *fmt, ...) __printf(5, 6);
void uk_kunit_skip(struct kunit *test, const char *fmt, ...) __printf(2, 3)
	__attribute__((noreturn));
#define kunit_skip(test, fmt, ...)	uk_kunit_skip(test, fmt, ##__VA_ARGS__)
#define kunit_mark_skipped(test, fmt, ...) \
	do { (test)->skipped = true; uk_kunit_log(test, fmt, ##__VA_ARGS__); } while (0)

#define UK_MSG(fmt, ...)	"" fmt, ##__VA_ARGS__

/* Record a failure, labelled as an assertion if @fatal; do not end. */
void uk_kunit_report(struct kunit *test, bool fatal, const char *file,
		     int line, const char *fmt, ...) __printf(5, 6);
#define UK_KUNIT_FAIL(test, fatal, ...) \
	uk_kunit_report(test, fatal, __FILE__, __LINE__, __VA_ARGS__)

#define UK_INT_ASSERT(test, fatal, left, op, right, ...) do {		\
	__typeof__(left) __left = (left);				\
	__typeof__(right) __right = (right);				\
	if (!(__left op __right)) {					\
		UK_KUNIT_FAIL(test, fatal,				\
			"Expected %s %s %s, but\n        %s == %lld (0x%llx)\n        %s == %lld (0x%llx)%s", \
			#left, #op, #right, #left, (long long)__left,	\
			(unsigned long long)__left, #right,		\
			(long long)__right, (unsigned long long)__right, \
			"");						\
		__VA_OPT__(uk_kunit_log(test, __VA_ARGS__);)		\
		if (fatal)						\
			uk_kunit_abort(test);				\
	}								\
} while (0)

#define UK_PTR_ASSERT(test, fatal, left, op, right, ...) do {		\
	const void *__left = (left);					\
	const void *__right = (right);					\
	if (!(__left op __right)) {					\
		UK_KUNIT_FAIL(test, fatal,				\
			"Expected %s %s %s, but\n        %s == %p\n        %s == %p", \
			#left, #op, #right, #left, __left, #right, __right); \
		__VA_OPT__(uk_kunit_log(test, __VA_ARGS__);)		\
		if (fatal)						\
			uk_kunit_abort(test);				\
	}								\
} while (0)

#define UK_BOOL_ASSERT(test, fatal, cond, want, ...) do {		\
	if ((bool)(cond) != (bool)(want)) {				\
		UK_KUNIT_FAIL(test, fatal, "Expected %s to be %s, but is %s", \
			      #cond, (want) ? "true" : "false",		\
			      (want) ? "false" : "true");		\
		__VA_OPT__(uk_kunit_log(test, __VA_ARGS__);)		\
		if (fatal)						\
			uk_kunit_abort(test);				\
	}								\
} while (0)

#define UK_ERRNULL_ASSERT(test, fatal, ptr, ...) do {			\
	const void *__p = (ptr);					\
	if (IS_ERR_OR_NULL(__p)) {					\
		UK_KUNIT_FAIL(test, fatal,				\
			"Expected %s is not null and not error, but is %p", \
			#ptr, __p);					\
		__VA_OPT__(uk_kunit_log(test, __VA_ARGS__);)		\
		if (fatal)						\
			uk_kunit_abort(test);				\
	}								\
} while (0)

#define UK_STR_ASSERT(test, fatal, left, op, right, ...) do {		\
	const char *__left = (left), *__right = (right);		\
	if (!(strcmp(__left, __right) op 0)) {				\
		UK_KUNIT_FAIL(test, fatal,				\
			"Expected %s %s %s, but\n        %s == \"%s\"\n        %s == \"%s\"", \
			#left, #op, #right, #left, __left, #right, __right); \
		__VA_OPT__(uk_kunit_log(test, __VA_ARGS__);)		\
		if (fatal)						\
			uk_kunit_abort(test);				\
	}								\
} while (0)

/*
 * Not KUnit: run @stmt and expect exactly @n WARNINGs from it, which then
 * do not fail the case (for the compat layer's own tests).
 */
#define UK_EXPECT_WARNS(test, n, stmt) do {				\
	unsigned long __w0 = uk_warn_count();				\
	uk_warn_quiet = true;						\
	stmt;								\
	uk_warn_quiet = false;						\
	KUNIT_EXPECT_EQ(test, uk_warn_count() - __w0, (unsigned long)(n)); \
	__atomic_add_fetch(&(test)->warn_expected, uk_warn_count() - __w0,	\
			   __ATOMIC_SEQ_CST);				\
} while (0)

#define KUNIT_FAIL(test, fmt, ...) \
	UK_KUNIT_FAIL(test, false, fmt, ##__VA_ARGS__)

#define KUNIT_EXPECT_EQ(t, l, r)	UK_INT_ASSERT(t, false, l, ==, r)
#define KUNIT_EXPECT_NE(t, l, r)	UK_INT_ASSERT(t, false, l, !=, r)
#define KUNIT_EXPECT_LT(t, l, r)	UK_INT_ASSERT(t, false, l, <, r)
#define KUNIT_EXPECT_LE(t, l, r)	UK_INT_ASSERT(t, false, l, <=, r)
#define KUNIT_EXPECT_GT(t, l, r)	UK_INT_ASSERT(t, false, l, >, r)
#define KUNIT_EXPECT_GE(t, l, r)	UK_INT_ASSERT(t, false, l, >=, r)
#define KUNIT_ASSERT_EQ(t, l, r)	UK_INT_ASSERT(t, true, l, ==, r)
#define KUNIT_ASSERT_NE(t, l, r)	UK_INT_ASSERT(t, true, l, !=, r)
#define KUNIT_ASSERT_LT(t, l, r)	UK_INT_ASSERT(t, true, l, <, r)
#define KUNIT_ASSERT_LE(t, l, r)	UK_INT_ASSERT(t, true, l, <=, r)
#define KUNIT_ASSERT_GT(t, l, r)	UK_INT_ASSERT(t, true, l, >, r)
#define KUNIT_ASSERT_GE(t, l, r)	UK_INT_ASSERT(t, true, l, >=, r)
#define KUNIT_EXPECT_EQ_MSG(t, l, r, ...)	UK_INT_ASSERT(t, false, l, ==, r, __VA_ARGS__)
#define KUNIT_EXPECT_NE_MSG(t, l, r, ...)	UK_INT_ASSERT(t, false, l, !=, r, __VA_ARGS__)
#define KUNIT_EXPECT_LE_MSG(t, l, r, ...)	UK_INT_ASSERT(t, false, l, <=, r, __VA_ARGS__)
#define KUNIT_EXPECT_GE_MSG(t, l, r, ...)	UK_INT_ASSERT(t, false, l, >=, r, __VA_ARGS__)
#define KUNIT_EXPECT_LT_MSG(t, l, r, ...)	UK_INT_ASSERT(t, false, l, <, r, __VA_ARGS__)
#define KUNIT_EXPECT_GT_MSG(t, l, r, ...)	UK_INT_ASSERT(t, false, l, >, r, __VA_ARGS__)
#define KUNIT_ASSERT_EQ_MSG(t, l, r, ...)	UK_INT_ASSERT(t, true, l, ==, r, __VA_ARGS__)

#define KUNIT_EXPECT_PTR_EQ(t, l, r)	UK_PTR_ASSERT(t, false, l, ==, r)
#define KUNIT_EXPECT_PTR_NE(t, l, r)	UK_PTR_ASSERT(t, false, l, !=, r)
#define KUNIT_ASSERT_PTR_EQ(t, l, r)	UK_PTR_ASSERT(t, true, l, ==, r)
#define KUNIT_ASSERT_PTR_NE(t, l, r)	UK_PTR_ASSERT(t, true, l, !=, r)
#define KUNIT_EXPECT_NULL(t, p)		UK_PTR_ASSERT(t, false, p, ==, NULL)
#define KUNIT_EXPECT_NOT_NULL(t, p)	UK_PTR_ASSERT(t, false, p, !=, NULL)
#define KUNIT_ASSERT_NULL(t, p)		UK_PTR_ASSERT(t, true, p, ==, NULL)
#define KUNIT_ASSERT_NOT_NULL(t, p)	UK_PTR_ASSERT(t, true, p, !=, NULL)
#define KUNIT_EXPECT_NOT_ERR_OR_NULL(t, p)	UK_ERRNULL_ASSERT(t, false, p)
#define KUNIT_ASSERT_NOT_ERR_OR_NULL(t, p)	UK_ERRNULL_ASSERT(t, true, p)

#define KUNIT_EXPECT_TRUE(t, c)		UK_BOOL_ASSERT(t, false, c, true)
#define KUNIT_EXPECT_FALSE(t, c)	UK_BOOL_ASSERT(t, false, c, false)
#define KUNIT_ASSERT_TRUE(t, c)		UK_BOOL_ASSERT(t, true, c, true)
#define KUNIT_ASSERT_FALSE(t, c)	UK_BOOL_ASSERT(t, true, c, false)
#define KUNIT_EXPECT_TRUE_MSG(t, c, ...)	UK_BOOL_ASSERT(t, false, c, true, __VA_ARGS__)
#define KUNIT_EXPECT_FALSE_MSG(t, c, ...)	UK_BOOL_ASSERT(t, false, c, false, __VA_ARGS__)

#define KUNIT_EXPECT_STREQ(t, l, r)	UK_STR_ASSERT(t, false, l, ==, r)
#define KUNIT_EXPECT_STRNEQ(t, l, r)	UK_STR_ASSERT(t, false, l, !=, r)
#define KUNIT_ASSERT_STREQ(t, l, r)	UK_STR_ASSERT(t, true, l, ==, r)

#endif /* _UK_KUNIT_TEST_H */
