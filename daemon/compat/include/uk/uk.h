/* SPDX-License-Identifier: GPL-2.0 */
/*
 * uk: a userspace rendition of the kernel primitives that the nxquota
 * ledger layers (kmod/ledger.c, kmod/charge.c) and their KUnit suite use,
 * over libc and pthreads, so that those files compile unchanged into the
 * daemon and into a userspace test binary.  Written for this project, in
 * the spirit of the kernel's tools/include and tools/testing; nothing here
 * is copied from the kernel.
 *
 * Every <linux/...> header under daemon/compat/include includes this one
 * file; the split exists only so that the kernel sources' #include lines
 * resolve.  What is rendered, and how faithfully, is in daemon/README.md.
 */
#ifndef _UK_UK_H
#define _UK_UK_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <sys/types.h>
#include <sys/sysmacros.h>
#include <asm/types.h>		/* __u8 .. __u64, as the uapi header has them */

/*
 * <linux/kdev_t.h>: a dev_t as this side keeps it -- userspace's encoding,
 * the one fstat() gives in st_rdev, which the device proof compares.
 */
#define MKDEV(ma, mi)	makedev(ma, mi)

/* ------------------------------------------------------------------ types */

typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s8 s8;
typedef __s16 s16;
typedef __s32 s32;
typedef __s64 s64;
typedef s64 ktime_t;
typedef unsigned int gfp_t;

#define U8_MAX		((u8)~0U)
#define U16_MAX		((u16)~0U)
#define U32_MAX		((u32)~0U)
#define U64_MAX		((u64)~0ULL)
#define S32_MAX		((s32)(U32_MAX >> 1))
#define S64_MAX		((s64)(U64_MAX >> 1))
#define S64_MIN		(-S64_MAX - 1)

/* ---------------------------------------------------- compiler and macros */

#define __user
#define __kernel
#define __iomem
#define __rcu
#define __force
#define __must_hold(x)
#define __acquires(x)
#define __releases(x)
#define __init
#define __exit
#ifndef __always_inline
#define __always_inline		inline __attribute__((always_inline))
#endif
#define __maybe_unused		__attribute__((unused))
#define __must_check		__attribute__((warn_unused_result))
#define __printf(a, b)		__attribute__((format(printf, a, b)))
#define __packed		__attribute__((packed))
#define __aligned(n)		__attribute__((aligned(n)))
#define noinline		__attribute__((noinline))
#ifndef fallthrough
#define fallthrough		__attribute__((fallthrough))
#endif
#define likely(x)		__builtin_expect(!!(x), 1)
#define unlikely(x)		__builtin_expect(!!(x), 0)
#define EXPORT_SYMBOL(s)
#define EXPORT_SYMBOL_GPL(s)
#define MODULE_LICENSE(s)
#define MODULE_DESCRIPTION(s)
#define MODULE_AUTHOR(s)

#define READ_ONCE(x)		(*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v)	(*(volatile __typeof__(x) *)&(x) = (v))
#define barrier()		__asm__ __volatile__("" ::: "memory")
#define smp_mb()		__atomic_thread_fence(__ATOMIC_SEQ_CST)

#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#define BIT(n)			(1UL << (n))
#define BIT_ULL(n)		(1ULL << (n))
#define BUILD_BUG_ON(c)		_Static_assert(!(c), #c)
#define GENMASK(h, l) \
	(((~0UL) << (l)) & (~0UL >> (8 * sizeof(long) - 1 - (h))))
#ifndef PAGE_SIZE
#define PAGE_SIZE		4096UL
#endif
/* An indirect call is a plain one here (no retpolines to avoid). */
#define INDIRECT_CALL_2(f, f2, f1, ...)	(f)(__VA_ARGS__)

/*
 * Kconfig, as IS_ENABLED() sees it: what the daemon's build of kmod/ has.
 * CONFIG_NXQUOTA_KUNIT_TEST is defined by the Makefile for the objects
 * linked into the KUnit runner only.
 */
#define CONFIG_NET		1
#define __UK_ARG_1		0,
#define __uk_second(ignored, val, ...)	val
#define __uk_defined(x)		___uk_defined(x)
#define ___uk_defined(val)	____uk_defined(__UK_ARG_##val)
#define ____uk_defined(junk)	__uk_second(junk 1, 0)
#define IS_ENABLED(option)	__uk_defined(option)
#ifndef container_of
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#endif
#define DIV_ROUND_UP(n, d)	(((n) + (d) - 1) / (d))

#define min(a, b)	({ __typeof__(a) _a = (a); __typeof__(b) _b = (b); \
			   _a < _b ? _a : _b; })
#define max(a, b)	({ __typeof__(a) _a = (a); __typeof__(b) _b = (b); \
			   _a > _b ? _a : _b; })
#define min_t(t, a, b)	({ t _a = (a); t _b = (b); _a < _b ? _a : _b; })
#define max_t(t, a, b)	({ t _a = (a); t _b = (b); _a > _b ? _a : _b; })
#define clamp(v, lo, hi)	min(max(v, lo), hi)
#define swap(a, b)	do { __typeof__(a) _t = (a); (a) = (b); (b) = _t; } while (0)

#define pr_fmt(fmt) fmt
#define pr_err(fmt, ...)	fprintf(stderr, pr_fmt(fmt), ##__VA_ARGS__)
#define pr_warn(fmt, ...)	fprintf(stderr, pr_fmt(fmt), ##__VA_ARGS__)
#define pr_info(fmt, ...)	fprintf(stderr, pr_fmt(fmt), ##__VA_ARGS__)
#define pr_debug(fmt, ...)	do { } while (0)

/* --------------------------------------------------------------- WARN, BUG */

/*
 * A WARN prints "WARNING:" and a stack trace (with the sanitizers) and is
 * counted; the KUnit harness fails the case it happened in, as
 * tests/kunit/run.sh fails a run whose log has a WARNING.
 */
void uk_warn(const char *file, int line, const char *fmt, ...) __printf(3, 4);
unsigned long uk_warn_count(void);
extern __thread bool uk_warn_quiet;	/* expected: one line, no trace */
void uk_bug(const char *file, int line, const char *what) __attribute__((noreturn));

#define WARN(cond, fmt, ...) ({						\
	int __w = !!(cond);						\
	if (unlikely(__w))						\
		uk_warn(__FILE__, __LINE__, fmt, ##__VA_ARGS__);	\
	unlikely(__w); })
#define WARN_ON(cond)	WARN(cond, "%s", "WARN_ON(" #cond ")")
#define WARN_ONCE(cond, fmt, ...) ({					\
	static bool __warned;						\
	int __w = !!(cond);						\
	if (unlikely(__w) && !__atomic_exchange_n(&__warned, true,	\
						 __ATOMIC_RELAXED))	\
		uk_warn(__FILE__, __LINE__, fmt, ##__VA_ARGS__);	\
	unlikely(__w); })
#define WARN_ON_ONCE(cond) WARN_ONCE(cond, "%s", "WARN_ON_ONCE(" #cond ")")
#define BUG()		uk_bug(__FILE__, __LINE__, "BUG()")
#define BUG_ON(cond)	do { if (unlikely(cond)) uk_bug(__FILE__, __LINE__, #cond); } while (0)

/* ------------------------------------------------------------------ err.h */

#define MAX_ERRNO	4095
#define IS_ERR_VALUE(x)	unlikely((unsigned long)(void *)(x) >= (unsigned long)-MAX_ERRNO)
static inline void *ERR_PTR(long error) { return (void *)error; }
static inline long PTR_ERR(const void *ptr) { return (long)ptr; }
static inline bool IS_ERR(const void *ptr) { return IS_ERR_VALUE((unsigned long)ptr); }
static inline bool IS_ERR_OR_NULL(const void *ptr) { return !ptr || IS_ERR(ptr); }
static inline void *ERR_CAST(const void *ptr) { return (void *)ptr; }
static inline int PTR_ERR_OR_ZERO(const void *ptr) { return IS_ERR(ptr) ? (int)PTR_ERR(ptr) : 0; }

/* --------------------------------------------------------- string, overflow */

ssize_t strscpy(char *dst, const char *src, size_t size);
static inline void memset32(u32 *s, u32 v, size_t n)
{
	while (n--)
		*s++ = v;
}

#define check_add_overflow(a, b, d)	__builtin_add_overflow(a, b, d)
#define check_sub_overflow(a, b, d)	__builtin_sub_overflow(a, b, d)
#define check_mul_overflow(a, b, d)	__builtin_mul_overflow(a, b, d)
static inline size_t size_add(size_t a, size_t b)
{
	size_t r;

	return __builtin_add_overflow(a, b, &r) ? SIZE_MAX : r;
}
static inline size_t size_mul(size_t a, size_t b)
{
	size_t r;

	return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}
#define array_size(a, b)	size_mul(a, b)

/* math64: x86's mul/div faults when the quotient overflows; here it WARNs. */
static inline u64 mul_u64_u64_div_u64(u64 a, u64 b, u64 c)
{
	unsigned __int128 q = (unsigned __int128)a * b / c;

	WARN_ON_ONCE(q > U64_MAX);
	return (u64)q;
}
static inline u64 div_u64(u64 a, u32 b) { return a / b; }
static inline u64 div64_u64(u64 a, u64 b) { return a / b; }
static inline s64 div_s64(s64 a, s32 b) { return a / b; }

/* ---------------------------------------------------------------- atomics */

typedef struct { int counter; } atomic_t;
typedef struct { s64 counter; } atomic64_t;
#define ATOMIC_INIT(i)		{ (i) }
#define ATOMIC64_INIT(i)	{ (i) }
#define atomic_read(v)		__atomic_load_n(&(v)->counter, __ATOMIC_RELAXED)
#define atomic_set(v, i)	__atomic_store_n(&(v)->counter, (i), __ATOMIC_RELAXED)
#define atomic_inc(v)		((void)__atomic_add_fetch(&(v)->counter, 1, __ATOMIC_SEQ_CST))
#define atomic_dec(v)		((void)__atomic_sub_fetch(&(v)->counter, 1, __ATOMIC_SEQ_CST))
#define atomic_add(i, v)	((void)__atomic_add_fetch(&(v)->counter, (i), __ATOMIC_SEQ_CST))
#define atomic_inc_return(v)	__atomic_add_fetch(&(v)->counter, 1, __ATOMIC_SEQ_CST)
#define atomic_dec_and_test(v)	(__atomic_sub_fetch(&(v)->counter, 1, __ATOMIC_SEQ_CST) == 0)
#define atomic64_read		atomic_read
#define atomic64_set		atomic_set
#define atomic64_inc		atomic_inc
#define atomic64_dec		atomic_dec
#define atomic64_add		atomic_add
#define atomic64_inc_return	atomic_inc_return

/* ----------------------------------------------------------------- tasks */

/*
 * A task is a thread: kthread_run() makes a pthread, and any other thread
 * gets a task on its first use of current.  The fields that matter to the
 * ledger: the locks it holds (for lockdep_assert_held() and for sleeping
 * in atomic context), the wait it is preparing, and a pending signal.
 */
struct wait_queue_entry;
struct task_struct {
	pid_t pid;			/* the thread's tid */
	char comm[16];
	int atomic_depth;		/* spinlocks held */
	pthread_mutex_t lock;		/* @wait and @sigpending */
	struct wait_queue_entry *wait;	/* between prepare and finish */
	bool sigpending;
	bool kthread;			/* made by kthread_run() */
	int rcu_depth;			/* rcu_read_lock() nesting */
};
struct pid;

struct task_struct *uk_current(void);
#define current uk_current()
#define TASK_RUNNING		0
#define TASK_INTERRUPTIBLE	1
#define TASK_UNINTERRUPTIBLE	2
#define TASK_KILLABLE		(TASK_UNINTERRUPTIBLE | 0x100)

bool signal_pending(struct task_struct *t);
static inline bool fatal_signal_pending(struct task_struct *t) { return signal_pending(t); }
/* The daemon's way to interrupt a task's sleep (a client went away). */
void uk_signal_task(struct task_struct *t);
void uk_clear_signal(struct task_struct *t);

/* Sleeping while holding a spinlock: "BUG: sleeping function called..." */
void uk_might_sleep(const char *file, int line);
#define might_sleep()	uk_might_sleep(__FILE__, __LINE__)
void uk_cond_resched(void);
#define cond_resched()	uk_cond_resched()

struct task_struct *uk_kthread_run(int (*fn)(void *data), void *data,
				   const char *fmt, ...) __printf(3, 4);
#define kthread_run(fn, data, fmt, ...)	uk_kthread_run(fn, data, fmt, ##__VA_ARGS__)

/* ------------------------------------------------------------------- time */

#define MSEC_PER_SEC	1000L
#define USEC_PER_MSEC	1000L
#define USEC_PER_SEC	1000000L
#define NSEC_PER_USEC	1000L
#define NSEC_PER_MSEC	1000000L
#define NSEC_PER_SEC	1000000000L
#define HZ		1000
#define KTIME_MAX	S64_MAX

u64 ktime_get_ns(void);
static inline ktime_t ktime_get(void) { return (ktime_t)ktime_get_ns(); }
static inline ktime_t ns_to_ktime(u64 ns) { return (ktime_t)ns; }
static inline s64 ktime_to_ns(ktime_t kt) { return kt; }
static inline ktime_t ktime_add_ns(ktime_t kt, u64 ns) { return kt + (s64)ns; }
static inline unsigned long msecs_to_jiffies(unsigned int ms) { return ms * HZ / 1000; }

enum hrtimer_mode { HRTIMER_MODE_ABS = 0, HRTIMER_MODE_REL = 1 };
int schedule_hrtimeout_range(ktime_t *expires, u64 delta, enum hrtimer_mode mode);
static inline int schedule_hrtimeout(ktime_t *expires, enum hrtimer_mode mode)
{
	return schedule_hrtimeout_range(expires, 0, mode);
}
void msleep(unsigned int ms);
void usleep_range(unsigned long min_us, unsigned long max_us);
static inline void ssleep(unsigned int s) { msleep(s * 1000); }

/* ---------------------------------------------------------------- memory */

/* Flags are kept only to tell whether an allocation may sleep. */
#define __GFP_RECLAIM		0x1u
#define __GFP_ACCOUNT		0x2u	/* memcg charging: not modelled */
#define __GFP_ZERO		0x4u
#define __GFP_NOWARN		0x8u
#define GFP_ATOMIC		0x0u
#define GFP_NOWAIT		0x0u
#define GFP_KERNEL		__GFP_RECLAIM
#define GFP_KERNEL_ACCOUNT	(GFP_KERNEL | __GFP_ACCOUNT)

void *uk_kmalloc(size_t n, gfp_t gfp, const char *file, int line);
#define kmalloc(n, gfp)		uk_kmalloc(n, gfp, __FILE__, __LINE__)
#define kzalloc(n, gfp)		uk_kmalloc(n, (gfp) | __GFP_ZERO, __FILE__, __LINE__)
#define kmalloc_array(n, s, gfp) uk_kmalloc(size_mul(n, s), gfp, __FILE__, __LINE__)
#define kcalloc(n, s, gfp)	uk_kmalloc(size_mul(n, s), (gfp) | __GFP_ZERO, __FILE__, __LINE__)
#define kvzalloc		kzalloc
#define kvcalloc		kcalloc
static inline void kfree(const void *p) { free((void *)p); }
#define kvfree			kfree
/* Make the next @n allocations fail (0: none); for fault tests. */
void uk_fail_allocs(unsigned int n);

/* ---------------------------------------------------------------- lists */

struct list_head {
	struct list_head *next, *prev;
};
#define LIST_POISON1	((void *)0x100)
#define LIST_POISON2	((void *)0x122)
#define LIST_HEAD_INIT(name)	{ &(name), &(name) }
#define LIST_HEAD(name)		struct list_head name = LIST_HEAD_INIT(name)

static inline void INIT_LIST_HEAD(struct list_head *l)
{
	l->next = l;
	l->prev = l;
}

/* CONFIG_DEBUG_LIST's checks: a corrupt link WARNs and is not changed. */
static inline bool uk_list_add_ok(struct list_head *n, struct list_head *prev,
				  struct list_head *next)
{
	return !WARN(next->prev != prev || prev->next != next || n == prev ||
		     n == next, "list_add corruption: %p between %p and %p",
		     (void *)n, (void *)prev, (void *)next);
}

static inline void __list_add(struct list_head *n, struct list_head *prev,
			      struct list_head *next)
{
	if (!uk_list_add_ok(n, prev, next))
		return;
	next->prev = n;
	n->next = next;
	n->prev = prev;
	prev->next = n;
}

static inline void list_add(struct list_head *n, struct list_head *head)
{
	__list_add(n, head, head->next);
}

static inline void list_add_tail(struct list_head *n, struct list_head *head)
{
	__list_add(n, head->prev, head);
}

static inline bool uk_list_del_ok(struct list_head *e)
{
	return !WARN(e->next == LIST_POISON1 || e->prev == LIST_POISON2 ||
		     e->prev->next != e || e->next->prev != e,
		     "list_del corruption: %p", (void *)e);
}

static inline void __list_del_entry(struct list_head *e)
{
	if (!uk_list_del_ok(e))
		return;
	e->next->prev = e->prev;
	e->prev->next = e->next;
}

static inline void list_del(struct list_head *e)
{
	__list_del_entry(e);
	e->next = LIST_POISON1;
	e->prev = LIST_POISON2;
}

static inline void list_del_init(struct list_head *e)
{
	__list_del_entry(e);
	INIT_LIST_HEAD(e);
}

static inline void list_move_tail(struct list_head *e, struct list_head *head)
{
	__list_del_entry(e);
	list_add_tail(e, head);
}

static inline void list_rotate_left(struct list_head *head)
{
	if (head->next != head)
		list_move_tail(head->next, head);
}

static inline void list_move(struct list_head *e, struct list_head *head)
{
	__list_del_entry(e);
	list_add(e, head);
}

/* Move [first, last], a run of entries of one list, to the tail of @head. */
static inline void list_bulk_move_tail(struct list_head *head,
				       struct list_head *first,
				       struct list_head *last)
{
	first->prev->next = last->next;
	last->next->prev = first->prev;
	head->prev->next = first;
	first->prev = head->prev;
	last->next = head;
	head->prev = last;
}

static inline void __list_splice(const struct list_head *list,
				 struct list_head *prev, struct list_head *next)
{
	struct list_head *first = list->next, *last = list->prev;

	first->prev = prev;
	prev->next = first;
	last->next = next;
	next->prev = last;
}

static inline void list_splice_init(struct list_head *list,
				    struct list_head *head)
{
	if (list->next != list) {
		__list_splice(list, head, head->next);
		INIT_LIST_HEAD(list);
	}
}

static inline void list_splice_tail_init(struct list_head *list,
					 struct list_head *head)
{
	if (list->next != list) {
		__list_splice(list, head->prev, head);
		INIT_LIST_HEAD(list);
	}
}

static inline bool list_empty(const struct list_head *head)
{
	return READ_ONCE(head->next) == head;
}

static inline bool list_is_last(const struct list_head *e,
				const struct list_head *head)
{
	return e->next == head;
}

static inline bool list_is_head(const struct list_head *e,
				const struct list_head *head)
{
	return e == head;
}

#define list_entry(ptr, type, member)	container_of(ptr, type, member)
#define list_first_entry(head, type, member) \
	list_entry((head)->next, type, member)
#define list_last_entry(head, type, member) \
	list_entry((head)->prev, type, member)
#define list_first_entry_or_null(head, type, member) ({			\
	struct list_head *__h = (head), *__p = READ_ONCE(__h->next);	\
	__p != __h ? list_entry(__p, type, member) : NULL; })
#define list_next_entry(pos, member) \
	list_entry((pos)->member.next, __typeof__(*(pos)), member)
#define list_prev_entry(pos, member) \
	list_entry((pos)->member.prev, __typeof__(*(pos)), member)
#define list_entry_is_head(pos, head, member)	(&(pos)->member == (head))
#define list_for_each(pos, head) \
	for (pos = (head)->next; pos != (head); pos = pos->next)
#define list_for_each_safe(pos, n, head) \
	for (pos = (head)->next, n = pos->next; pos != (head); \
	     pos = n, n = pos->next)
#define list_for_each_entry(pos, head, member)				\
	for (pos = list_first_entry(head, __typeof__(*pos), member);	\
	     !list_entry_is_head(pos, head, member);			\
	     pos = list_next_entry(pos, member))
#define list_for_each_entry_reverse(pos, head, member)			\
	for (pos = list_last_entry(head, __typeof__(*pos), member);	\
	     !list_entry_is_head(pos, head, member);			\
	     pos = list_prev_entry(pos, member))
#define list_for_each_entry_safe(pos, n, head, member)			\
	for (pos = list_first_entry(head, __typeof__(*pos), member),	\
	     n = list_next_entry(pos, member);				\
	     !list_entry_is_head(pos, head, member);			\
	     pos = n, n = list_next_entry(n, member))
#define list_for_each_entry_continue(pos, head, member)			\
	for (pos = list_next_entry(pos, member);			\
	     !list_entry_is_head(pos, head, member);			\
	     pos = list_next_entry(pos, member))
#define list_for_each_entry_from(pos, head, member)			\
	for (; !list_entry_is_head(pos, head, member);			\
	     pos = list_next_entry(pos, member))

/* ----------------------------------------------------------------- locks */

/*
 * spinlock_t and struct mutex are both a pthread mutex with an owner.
 * lockdep_assert_held() checks that the calling task is the owner (not
 * only that someone holds it, as lockdep does not either); taking a lock
 * the task already holds WARNs before it would deadlock; a sleeping call
 * while a spinlock is held WARNs as might_sleep() does.  Lock order is
 * not checked.
 */
struct uk_lock {
	pthread_mutex_t m;
	struct task_struct *owner;	/* atomic accesses */
	const char *name;
	bool spin;
	bool inited;
};

void uk_lock_init(struct uk_lock *l, const char *name, bool spin);
void uk_lock_destroy(struct uk_lock *l);
void uk_lock(struct uk_lock *l, const char *file, int line);
int uk_trylock(struct uk_lock *l);
void uk_unlock(struct uk_lock *l, const char *file, int line);
bool uk_lock_held_by_me(struct uk_lock *l);
bool uk_lock_is_locked(struct uk_lock *l);

typedef struct { struct uk_lock l; } spinlock_t;
struct mutex { struct uk_lock l; };

#define spin_lock_init(s)	uk_lock_init(&(s)->l, #s, true)
#define spin_lock(s)		uk_lock(&(s)->l, __FILE__, __LINE__)
#define spin_unlock(s)		uk_unlock(&(s)->l, __FILE__, __LINE__)
#define spin_trylock(s)		uk_trylock(&(s)->l)
#define spin_lock_irq		spin_lock
#define spin_unlock_irq		spin_unlock
#define spin_lock_bh		spin_lock
#define spin_unlock_bh		spin_unlock
#define spin_lock_irqsave(s, f)	do { (f) = 0; spin_lock(s); } while (0)
#define spin_unlock_irqrestore(s, f) do { (void)(f); spin_unlock(s); } while (0)
#define spin_is_locked(s)	uk_lock_is_locked(&(s)->l)

#define mutex_init(m)		uk_lock_init(&(m)->l, #m, false)
#define mutex_destroy(m)	uk_lock_destroy(&(m)->l)
#define mutex_lock(m)		uk_lock(&(m)->l, __FILE__, __LINE__)
#define mutex_lock_interruptible(m) (mutex_lock(m), 0)
#define mutex_trylock(m)	uk_trylock(&(m)->l)
#define mutex_unlock(m)		uk_unlock(&(m)->l, __FILE__, __LINE__)
#define mutex_is_locked(m)	uk_lock_is_locked(&(m)->l)

void uk_assert_held(struct uk_lock *l, const char *what, const char *file,
		    int line);
#define lockdep_assert_held(x)	uk_assert_held(&(x)->l, #x, __FILE__, __LINE__)
#define lockdep_assert_not_held(x) \
	WARN(uk_lock_held_by_me(&(x)->l), "lock %s held", #x)

/* ------------------------------------------------------ refcount and kref */

typedef struct { int refs; } refcount_t;
#define REFCOUNT_INIT(n)	{ (n) }
void refcount_set(refcount_t *r, int n);
unsigned int refcount_read(const refcount_t *r);
void refcount_inc(refcount_t *r);
bool refcount_dec_and_test(refcount_t *r);
bool refcount_dec_not_one(refcount_t *r);
bool refcount_dec_and_mutex_lock(refcount_t *r, struct mutex *lock);
bool refcount_dec_and_lock(refcount_t *r, spinlock_t *lock);

struct kref { refcount_t refcount; };
static inline void kref_init(struct kref *k) { refcount_set(&k->refcount, 1); }
static inline void kref_get(struct kref *k) { refcount_inc(&k->refcount); }
static inline unsigned int kref_read(const struct kref *k)
{
	return refcount_read(&k->refcount);
}
static inline int kref_put(struct kref *k, void (*release)(struct kref *k))
{
	if (refcount_dec_and_test(&k->refcount)) {
		release(k);
		return 1;
	}
	return 0;
}

/* ----------------------------------------------------------- wait queues */

/*
 * A wait queue is a condition variable (CLOCK_MONOTONIC) and a wake-up
 * sequence.  prepare_to_wait() records the sequence; a sleep (the
 * schedule_*() calls) returns at once if a wake-up came since, as the
 * kernel's task state does, so the prepare/check/sleep loop loses none.
 */
struct wait_queue_head {
	pthread_mutex_t m;
	pthread_cond_t c;
	unsigned long seq;
};
typedef struct wait_queue_head wait_queue_head_t;

struct wait_queue_entry {
	struct wait_queue_head *wq;
	unsigned long seq;
	int state;
};
typedef struct wait_queue_entry wait_queue_entry_t;
#define DEFINE_WAIT(name)	struct wait_queue_entry name = { NULL, 0, 0 }

void init_waitqueue_head(struct wait_queue_head *wq);
void prepare_to_wait(struct wait_queue_head *wq, struct wait_queue_entry *e,
		     int state);
void finish_wait(struct wait_queue_head *wq, struct wait_queue_entry *e);
void wake_up_all(struct wait_queue_head *wq);
#define wake_up(wq)			wake_up_all(wq)
#define wake_up_interruptible(wq)	wake_up_all(wq)
#define wake_up_interruptible_all(wq)	wake_up_all(wq)
long schedule_timeout(long jiffies);

/* ----------------------------------------------------------- completions */

struct completion {
	pthread_mutex_t m;
	pthread_cond_t c;
	unsigned int done;
};
void init_completion(struct completion *x);
#define reinit_completion(x)	((x)->done = 0)
void complete(struct completion *x);
void complete_all(struct completion *x);
void wait_for_completion(struct completion *x);
unsigned long wait_for_completion_timeout(struct completion *x,
					  unsigned long jiffies);
bool completion_done(struct completion *x);

/* ------------------------------------------------------------ workqueues */

/*
 * schedule_work() queues on one worker thread (system_wq, in order);
 * flush_work() waits until the item is neither queued nor running.
 */
struct work_struct;
typedef void (*work_func_t)(struct work_struct *work);
struct work_struct {
	struct list_head entry;
	work_func_t func;
	bool pending;
	unsigned int running;
};
#define INIT_WORK(w, f) do {				\
	INIT_LIST_HEAD(&(w)->entry);			\
	(w)->func = (f);				\
	(w)->pending = false;				\
	(w)->running = 0;				\
} while (0)
bool schedule_work(struct work_struct *w);
bool flush_work(struct work_struct *w);
bool cancel_work_sync(struct work_struct *w);

/*
 * Delayed work: the worker thread keeps the armed ones on a list and
 * queues each when its time comes (CLOCK_MONOTONIC, jiffies of 1 ms).
 * The kernel's rules hold: queueing an armed or queued item is a no-op,
 * mod_delayed_work() moves it, flush_delayed_work() runs an armed one
 * now; all but the flush and the cancel may be called under a spinlock.
 */
struct workqueue_struct;
#define system_wq	((struct workqueue_struct *)NULL)
struct delayed_work {
	struct work_struct work;
	struct list_head timer;		/* uk_wq.timers while armed */
	u64 due_ns;
	bool armed;
};
#define INIT_DELAYED_WORK(dw, f) do {			\
	INIT_WORK(&(dw)->work, (f));			\
	INIT_LIST_HEAD(&(dw)->timer);			\
	(dw)->armed = false;				\
} while (0)
#define to_delayed_work(w)	container_of(w, struct delayed_work, work)
bool schedule_delayed_work(struct delayed_work *dw, unsigned long delay);
bool mod_delayed_work(struct workqueue_struct *wq, struct delayed_work *dw,
		      unsigned long delay);
bool flush_delayed_work(struct delayed_work *dw);
bool cancel_delayed_work_sync(struct delayed_work *dw);

/* ------------------------------------------------------------------- RCU */

/*
 * Readers hold a process-wide rwlock for reading (the outermost
 * rcu_read_lock() of a task takes it); synchronize_rcu() takes it for
 * writing, so it returns only once every reader that started before it has
 * finished: a grace period.  call_rcu()/kfree_rcu() queue the callback for
 * one thread that runs a grace period, then the callbacks.  Sleeping in a
 * read-side section WARNs (might_sleep); synchronize_rcu() inside one is a
 * BUG here (it would deadlock; lockdep reports it in the kernel).  Readers
 * are not lock-free: they only exclude grace periods, not each other.
 */
struct rcu_head {
	struct rcu_head *next;
	void (*func)(struct rcu_head *head);
	void *uk_obj;			/* kfree_rcu()'s object */
};
void rcu_read_lock(void);
void rcu_read_unlock(void);
bool rcu_read_lock_held(void);
void synchronize_rcu(void);
void call_rcu(struct rcu_head *head, void (*func)(struct rcu_head *head));
void rcu_barrier(void);
void uk_kfree_rcu(struct rcu_head *head, void *obj);
#define kfree_rcu(ptr, rhf)	uk_kfree_rcu(&(ptr)->rhf, (void *)(ptr))
#define kvfree_rcu		kfree_rcu
#define rcu_dereference(p)	READ_ONCE(p)
#define rcu_dereference_raw(p)	READ_ONCE(p)
#define rcu_dereference_check(p, c)	READ_ONCE(p)
#define rcu_dereference_protected(p, c)	(p)
#define rcu_access_pointer(p)	READ_ONCE(p)
#define rcu_assign_pointer(p, v) __atomic_store_n(&(p), (v), __ATOMIC_RELEASE)
#define RCU_INIT_POINTER(p, v)	((p) = (v))
#define lockdep_assert_in_rcu_read_lock() \
	WARN(!rcu_read_lock_held(), "not in an RCU read-side section")
#define list_for_each_entry_rcu(pos, head, member, ...) \
	list_for_each_entry(pos, head, member)
#define list_add_rcu		list_add
#define list_add_tail_rcu	list_add_tail
static inline void list_del_rcu(struct list_head *e)
{
	__list_del_entry(e);
	e->prev = LIST_POISON2;	/* ->next stays for readers */
}

/* ---------------------------------------------------------------- xarray */

/*
 * A stand-in for the xarray subset the ledger uses: a sorted array of
 * (index, entry) under its own lock, searched by bisection.  Same API and
 * errors (xa_insert: -EBUSY if taken, -ENOMEM); O(n) insertion and removal
 * instead of the radix tree's O(log n).  NULL entries are not stored.
 */
struct xarray {
	pthread_mutex_t lock;
	unsigned long *idx;
	void **ent;
	size_t n, cap;
};
#define XA_FLAGS_ALLOC	0
void xa_init(struct xarray *xa);
#define xa_init_flags(xa, f)	xa_init(xa)
void xa_destroy(struct xarray *xa);
void *xa_load(struct xarray *xa, unsigned long index);
int xa_insert(struct xarray *xa, unsigned long index, void *entry, gfp_t gfp);
void *xa_store(struct xarray *xa, unsigned long index, void *entry, gfp_t gfp);
void *xa_erase(struct xarray *xa, unsigned long index);
bool xa_empty(struct xarray *xa);
void *xa_find(struct xarray *xa, unsigned long *index, unsigned long max,
	      unsigned int filter);
void *xa_find_after(struct xarray *xa, unsigned long *index,
		    unsigned long max, unsigned int filter);
#define XA_PRESENT	0
#define xa_for_each(xa, index, entry)					\
	for (index = 0, entry = xa_find(xa, &(index), ULONG_MAX, XA_PRESENT); \
	     entry; entry = xa_find_after(xa, &(index), ULONG_MAX, XA_PRESENT))

#endif /* _UK_UK_H */
