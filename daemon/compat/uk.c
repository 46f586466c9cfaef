// SPDX-License-Identifier: GPL-2.0
/*
 * uk: the userspace rendition of the kernel primitives declared in
 * include/uk/uk.h.  See daemon/README.md for what is modelled.
 */
#include <uk/uk.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

/* ------------------------------------------------------------ WARN, BUG */

void __sanitizer_print_stack_trace(void) __attribute__((weak));

static unsigned long uk_warnings;
__thread bool uk_warn_quiet;

static void uk_trace(void)
{
	if (__sanitizer_print_stack_trace)
		__sanitizer_print_stack_trace();
}

void uk_warn(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	__atomic_add_fetch(&uk_warnings, 1, __ATOMIC_SEQ_CST);
	flockfile(stderr);
	fprintf(stderr, "%sWARNING: %s:%d (task %s/%d): ",
		uk_warn_quiet ? "(expected) " : "", file, line,
		current->comm, current->pid);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (!uk_warn_quiet)
		uk_trace();
	funlockfile(stderr);
}

unsigned long uk_warn_count(void)
{
	return __atomic_load_n(&uk_warnings, __ATOMIC_SEQ_CST);
}

void uk_bug(const char *file, int line, const char *what)
{
	fprintf(stderr, "BUG: %s:%d: %s\n", file, line, what);
	uk_trace();
	abort();
}

/* ---------------------------------------------------------------- tasks */

static __thread struct task_struct *uk_task;

static struct task_struct *uk_task_new(const char *comm)
{
	struct task_struct *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	pthread_mutex_init(&t->lock, NULL);
	snprintf(t->comm, sizeof(t->comm), "%s", comm);
	return t;
}

static void uk_task_free(void *p)
{
	struct task_struct *t = p;

	pthread_mutex_destroy(&t->lock);
	free(t);
}

static pthread_key_t uk_task_key;
static pthread_once_t uk_task_once = PTHREAD_ONCE_INIT;

static void uk_task_key_init(void)
{
	if (pthread_key_create(&uk_task_key, uk_task_free))
		abort();
}

static void uk_task_attach(struct task_struct *t)
{
	pthread_once(&uk_task_once, uk_task_key_init);
	t->pid = (pid_t)syscall(SYS_gettid);
	uk_task = t;
	pthread_setspecific(uk_task_key, t);	/* freed when the thread ends */
}

struct task_struct *uk_current(void)
{
	if (!uk_task) {
		struct task_struct *t = uk_task_new("user");

		if (!t)
			abort();
		uk_task_attach(t);
	}
	return uk_task;
}

bool signal_pending(struct task_struct *t)
{
	bool p;

	p = __atomic_load_n(&t->sigpending, __ATOMIC_SEQ_CST);
	return p;
}

static void uk_fiber_signal(struct uk_fiber *f);

void uk_signal_task(struct task_struct *t)
{
	struct wait_queue_head *wq = NULL;

	pthread_mutex_lock(&t->lock);
	__atomic_store_n(&t->sigpending, true, __ATOMIC_SEQ_CST);
	if (t->fiber) {
		/* a parked fiber is run again; its queue's others are not */
		uk_fiber_signal(t->fiber);
		pthread_mutex_unlock(&t->lock);
		return;
	}
	if (t->wait)
		wq = t->wait->wq;
	if (wq) {
		/* as a signal does: wakes the task, whatever it waits on */
		pthread_mutex_lock(&wq->m);
		wq->seq++;
		pthread_cond_broadcast(&wq->c);
		pthread_mutex_unlock(&wq->m);
	}
	pthread_mutex_unlock(&t->lock);
}

void uk_clear_signal(struct task_struct *t)
{
	__atomic_store_n(&t->sigpending, false, __ATOMIC_SEQ_CST);
}

void uk_might_sleep(const char *file, int line)
{
	struct task_struct *t = current;

	WARN(t->atomic_depth || t->rcu_depth,
	     "BUG: sleeping function called from invalid context at %s:%d (%d spinlocks held, rcu depth %d)",
	     file, line, t->atomic_depth, t->rcu_depth);
}

void uk_cond_resched(void)
{
	might_sleep();
	sched_yield();
}

struct uk_kthread {
	int (*fn)(void *data);
	void *data;
	struct task_struct *task;
};

static void *uk_kthread_main(void *arg)
{
	struct uk_kthread k = *(struct uk_kthread *)arg;

	free(arg);
	uk_task_attach(k.task);
	k.fn(k.data);
	return NULL;
}

struct task_struct *uk_kthread_run(int (*fn)(void *data), void *data,
				   const char *fmt, ...)
{
	struct uk_kthread *k = malloc(sizeof(*k));
	struct task_struct *task;
	pthread_attr_t attr;
	pthread_t tid;
	char comm[16];
	va_list ap;
	int err;

	if (!k)
		return ERR_PTR(-ENOMEM);
	va_start(ap, fmt);
	vsnprintf(comm, sizeof(comm), fmt, ap);
	va_end(ap);
	k->fn = fn;
	k->data = data;
	k->task = uk_task_new(comm);
	if (!k->task) {
		free(k);
		return ERR_PTR(-ENOMEM);
	}
	k->task->kthread = true;
	task = k->task;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&tid, &attr, uk_kthread_main, k);
	pthread_attr_destroy(&attr);
	if (err) {
		uk_task_free(k->task);
		free(k);
		return ERR_PTR(-err);
	}
	/* like the kernel's, the pointer is only good while the thread runs */
	return task;
}

/* ----------------------------------------------------------------- time */

u64 ktime_get_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * NSEC_PER_SEC + (u64)ts.tv_nsec;
}

static struct timespec uk_ts(u64 ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / NSEC_PER_SEC),
		.tv_nsec = (long)(ns % NSEC_PER_SEC),
	};

	return ts;
}

static void uk_sleep_until(u64 deadline)
{
	struct timespec ts = uk_ts(deadline);

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

static bool uk_fiber_sleep(struct uk_fiber *f, struct wait_queue_entry *e,
			   u64 deadline_ns);

/* A thread sleeps; a fiber parks until then. */
static void uk_nap_until(u64 deadline)
{
	struct task_struct *t = current;

	if (t->fiber)
		uk_fiber_sleep(t->fiber, NULL, deadline);
	else
		uk_sleep_until(deadline);
}

void msleep(unsigned int ms)
{
	might_sleep();
	uk_nap_until(ktime_get_ns() + (u64)ms * NSEC_PER_MSEC);
}

void usleep_range(unsigned long min_us, unsigned long max_us)
{
	might_sleep();
	(void)max_us;
	uk_nap_until(ktime_get_ns() + (u64)min_us * NSEC_PER_USEC);
}

/* --------------------------------------------------------------- memory */

static unsigned int uk_alloc_failures;

void uk_fail_allocs(unsigned int n)
{
	__atomic_store_n(&uk_alloc_failures, n, __ATOMIC_SEQ_CST);
}

void *uk_kmalloc(size_t n, gfp_t gfp, const char *file, int line)
{
	unsigned int f;

	if (gfp & __GFP_RECLAIM)
		uk_might_sleep(file, line);
	f = __atomic_load_n(&uk_alloc_failures, __ATOMIC_SEQ_CST);
	while (f && !__atomic_compare_exchange_n(&uk_alloc_failures, &f, f - 1,
						 false, __ATOMIC_SEQ_CST,
						 __ATOMIC_SEQ_CST))
		;
	if (f)
		return NULL;
	if (n == SIZE_MAX)	/* size_mul()/size_add() saturated */
		return NULL;
	return (gfp & __GFP_ZERO) ? calloc(1, n ? n : 1) : malloc(n ? n : 1);
}

ssize_t strscpy(char *dst, const char *src, size_t size)
{
	size_t len;

	if (!size || size > INT_MAX)
		return -E2BIG;
	len = strnlen(src, size);
	if (len == size) {
		memcpy(dst, src, size - 1);
		dst[size - 1] = '\0';
		return -E2BIG;
	}
	memcpy(dst, src, len + 1);
	return (ssize_t)len;
}

/* ---------------------------------------------------------------- locks */

void uk_lock_init(struct uk_lock *l, const char *name, bool spin)
{
	pthread_mutex_init(&l->m, NULL);
	l->owner = NULL;
	l->name = name;
	l->spin = spin;
	l->inited = true;
}

void uk_lock_destroy(struct uk_lock *l)
{
	WARN(uk_lock_is_locked(l), "mutex_destroy(%s) while locked", l->name);
	pthread_mutex_destroy(&l->m);
	l->inited = false;
}

static struct task_struct *uk_owner(struct uk_lock *l)
{
	return __atomic_load_n(&l->owner, __ATOMIC_SEQ_CST);
}

void uk_lock(struct uk_lock *l, const char *file, int line)
{
	struct task_struct *me = current;

	if (!l->inited)
		uk_bug(file, line, "lock used before its init");
	if (!l->spin)
		uk_might_sleep(file, line);
	if (uk_owner(l) == me)
		uk_bug(file, line, "possible recursive locking detected");
	pthread_mutex_lock(&l->m);
	__atomic_store_n(&l->owner, me, __ATOMIC_SEQ_CST);
	if (l->spin)
		me->atomic_depth++;
}

int uk_trylock(struct uk_lock *l)
{
	struct task_struct *me = current;

	if (pthread_mutex_trylock(&l->m))
		return 0;
	__atomic_store_n(&l->owner, me, __ATOMIC_SEQ_CST);
	if (l->spin)
		me->atomic_depth++;
	return 1;
}

void uk_unlock(struct uk_lock *l, const char *file, int line)
{
	struct task_struct *me = current;

	if (uk_owner(l) != me)
		uk_bug(file, line, "unlocking a lock this task does not hold");
	__atomic_store_n(&l->owner, NULL, __ATOMIC_SEQ_CST);
	if (l->spin)
		me->atomic_depth--;
	pthread_mutex_unlock(&l->m);
}

bool uk_lock_held_by_me(struct uk_lock *l)
{
	return uk_owner(l) == current;
}

bool uk_lock_is_locked(struct uk_lock *l)
{
	return uk_owner(l) != NULL;
}

void uk_assert_held(struct uk_lock *l, const char *what, const char *file,
		    int line)
{
	if (!uk_lock_held_by_me(l))
		uk_warn(file, line, "lockdep_assert_held(%s): %s", what,
			uk_lock_is_locked(l) ? "held by another task" :
					       "not held");
}

/* ------------------------------------------------------------- refcount */

void refcount_set(refcount_t *r, int n)
{
	__atomic_store_n(&r->refs, n, __ATOMIC_SEQ_CST);
}

unsigned int refcount_read(const refcount_t *r)
{
	return (unsigned int)__atomic_load_n(&r->refs, __ATOMIC_SEQ_CST);
}

void refcount_inc(refcount_t *r)
{
	int old = __atomic_fetch_add(&r->refs, 1, __ATOMIC_SEQ_CST);

	WARN(old <= 0, "refcount_t: %s", old ? "saturated" :
		       "addition on 0; use-after-free");
}

bool refcount_dec_and_test(refcount_t *r)
{
	int old = __atomic_fetch_sub(&r->refs, 1, __ATOMIC_SEQ_CST);

	if (WARN(old <= 0, "refcount_t: underflow; use-after-free"))
		return false;
	return old == 1;
}

bool refcount_dec_not_one(refcount_t *r)
{
	int v = __atomic_load_n(&r->refs, __ATOMIC_SEQ_CST);

	do {
		if (v == 1)
			return false;
		if (WARN(v <= 0, "refcount_t: underflow; use-after-free"))
			return true;
	} while (!__atomic_compare_exchange_n(&r->refs, &v, v - 1, false,
					      __ATOMIC_SEQ_CST,
					      __ATOMIC_SEQ_CST));
	return true;
}

bool refcount_dec_and_mutex_lock(refcount_t *r, struct mutex *lock)
{
	if (refcount_dec_not_one(r))
		return false;
	mutex_lock(lock);
	if (!refcount_dec_and_test(r)) {
		mutex_unlock(lock);
		return false;
	}
	return true;
}

bool refcount_dec_and_lock(refcount_t *r, spinlock_t *lock)
{
	if (refcount_dec_not_one(r))
		return false;
	spin_lock(lock);
	if (!refcount_dec_and_test(r)) {
		spin_unlock(lock);
		return false;
	}
	return true;
}

/* ---------------------------------------------------------- wait queues */

static void uk_cond_init(pthread_cond_t *c)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
}

void init_waitqueue_head(struct wait_queue_head *wq)
{
	pthread_mutex_init(&wq->m, NULL);
	uk_cond_init(&wq->c);
	wq->seq = 0;
	INIT_LIST_HEAD(&wq->fibers);
}

void prepare_to_wait(struct wait_queue_head *wq, struct wait_queue_entry *e,
		     int state)
{
	struct task_struct *t = current;

	pthread_mutex_lock(&wq->m);
	e->wq = wq;
	e->seq = wq->seq;
	e->state = state;
	pthread_mutex_unlock(&wq->m);
	pthread_mutex_lock(&t->lock);
	t->wait = e;
	pthread_mutex_unlock(&t->lock);
}

void finish_wait(struct wait_queue_head *wq, struct wait_queue_entry *e)
{
	struct task_struct *t = current;

	WARN_ON(e->wq && e->wq != wq);
	pthread_mutex_lock(&t->lock);
	t->wait = NULL;
	pthread_mutex_unlock(&t->lock);
	e->wq = NULL;
	e->state = TASK_RUNNING;
}

static void uk_fibers_wake(struct wait_queue_head *wq);

void wake_up_all(struct wait_queue_head *wq)
{
	pthread_mutex_lock(&wq->m);
	wq->seq++;
	pthread_cond_broadcast(&wq->c);
	uk_fibers_wake(wq);
	pthread_mutex_unlock(&wq->m);
}

static bool uk_fiber_sleep(struct uk_fiber *f, struct wait_queue_entry *e,
			   u64 deadline_ns);

/*
 * Sleep until @deadline_ns (0: none), a wake-up of the prepared wait, or a
 * signal (interruptible waits).  Returns true if woken before the deadline.
 */
static bool uk_sleep(u64 deadline_ns)
{
	struct task_struct *t = current;
	struct wait_queue_entry *e;
	struct wait_queue_head *wq;
	bool woken = false;

	might_sleep();
	pthread_mutex_lock(&t->lock);
	e = t->wait;
	pthread_mutex_unlock(&t->lock);
	if (t->fiber)
		return uk_fiber_sleep(t->fiber, e && e->wq ? e : NULL,
				      deadline_ns);
	if (!e || !e->wq) {
		if (deadline_ns)
			uk_sleep_until(deadline_ns);
		return false;
	}
	wq = e->wq;
	pthread_mutex_lock(&wq->m);
	for (;;) {
		if (wq->seq != e->seq) {
			woken = true;
			break;
		}
		if (e->state == TASK_INTERRUPTIBLE &&
		    __atomic_load_n(&t->sigpending, __ATOMIC_SEQ_CST)) {
			woken = true;
			break;
		}
		if (deadline_ns) {
			struct timespec ts = uk_ts(deadline_ns);

			if (pthread_cond_timedwait(&wq->c, &wq->m, &ts) ==
			    ETIMEDOUT)
				break;
		} else {
			pthread_cond_wait(&wq->c, &wq->m);
		}
	}
	e->seq = wq->seq;
	pthread_mutex_unlock(&wq->m);
	return woken;
}

int schedule_hrtimeout_range(ktime_t *expires, u64 delta, enum hrtimer_mode mode)
{
	u64 deadline;

	(void)delta;
	if (*expires == KTIME_MAX)
		deadline = 0;
	else if (mode == HRTIMER_MODE_REL)
		deadline = ktime_get_ns() + (u64)*expires;
	else
		deadline = (u64)*expires;
	if (deadline && deadline <= ktime_get_ns())
		return 0;
	return uk_sleep(deadline) ? -EINTR : 0;
}

long schedule_timeout(long jiffies)
{
	u64 start = ktime_get_ns(), left;
	u64 span = (u64)jiffies * (NSEC_PER_SEC / HZ);

	uk_sleep(start + span);
	left = ktime_get_ns() - start;
	return left >= span ? 0 : (long)((span - left) / (NSEC_PER_SEC / HZ));
}

/* --------------------------------------------------------------- fibers */

/*
 * A fiber runs on the scheduler thread, on its own stack (mmap()ed, a
 * guard page below, cached for reuse), with its own task.  Its states:
 * RUNNING (the scheduler switched to it), PARKED (in uk_sched.parked, by
 * deadline, and on its wait queue's fibers list if it waits on one),
 * READY (in uk_sched.ready) and DONE (its function returned; freed by the
 * scheduler).  Lock order: the task's lock, a wait queue's m, uk_sched.m.
 * ASan is told of each stack switch, so that its view of the stack stays
 * right (the sanitizer's fiber interface; absent in the static build).
 */
enum { UK_FIBER_RUNNING, UK_FIBER_PARKED, UK_FIBER_READY, UK_FIBER_DONE };

#define UK_FIBER_STACK		(256 * 1024)
#define UK_FIBER_STACKS_KEPT	32

struct uk_fiber {
	ucontext_t ctx;
	void *stack;			/* its lowest page is the guard */
	void (*fn)(void *arg);
	void *arg;
	struct task_struct *task;
	int state;			/* uk_sched.m */
	u64 deadline;			/* uk_sched.m; 0 none */
	struct list_head link;		/* uk_sched.m: parked or ready */
	struct wait_queue_head *wq;	/* wq->m: parked on it */
	struct list_head wq_link;	/* wq->m: in wq->fibers */
	void *fake_stack;		/* ASan's, while switched out */
};

void __sanitizer_start_switch_fiber(void **fake_stack_save,
				    const void *bottom, size_t size)
	__attribute__((weak));
void __sanitizer_finish_switch_fiber(void *fake_stack_save,
				     const void **bottom_old, size_t *size_old)
	__attribute__((weak));

static struct {
	pthread_mutex_t m;
	struct list_head parked;	/* by deadline, none (0) last */
	struct list_head ready;
	unsigned int alive;
	pthread_t thread;		/* the scheduler, once one ran */
	bool have_thread;
	int efd;
	bool efd_set;			/* m: efd was written */
	pthread_once_t once;
	ucontext_t ctx;			/* the scheduler's, while a fiber runs */
	struct uk_fiber *cur;		/* the one running */
	const void *stack_bottom;	/* the scheduler's stack, for ASan */
	size_t stack_size;
	void *fake_stack;
	void *stacks[UK_FIBER_STACKS_KEPT];
	int nr_stacks;
} uk_sched = {
	.m = PTHREAD_MUTEX_INITIALIZER,
	.parked = LIST_HEAD_INIT(uk_sched.parked),
	.ready = LIST_HEAD_INIT(uk_sched.ready),
	.efd = -1,
	.once = PTHREAD_ONCE_INIT,
};

static void uk_sched_init(void)
{
	uk_sched.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (uk_sched.efd < 0)
		abort();
}

int uk_fibers_fd(void)
{
	pthread_once(&uk_sched.once, uk_sched_init);
	return uk_sched.efd;
}

unsigned int uk_fibers_alive(void)
{
	unsigned int n;

	pthread_mutex_lock(&uk_sched.m);
	n = uk_sched.alive;
	pthread_mutex_unlock(&uk_sched.m);
	return n;
}

static bool uk_on_scheduler(void)
{
	return uk_sched.have_thread &&
	       pthread_equal(uk_sched.thread, pthread_self());
}

/* Make a parked fiber ready (uk_sched.m held). */
static void uk_fiber_ready_locked(struct uk_fiber *f)
{
	u64 one = 1;

	if (f->state != UK_FIBER_PARKED)
		return;
	list_del(&f->link);
	f->state = UK_FIBER_READY;
	list_add_tail(&f->link, &uk_sched.ready);
	if (!uk_on_scheduler() && !uk_sched.efd_set) {
		uk_sched.efd_set = true;
		if (write(uk_sched.efd, &one, sizeof(one)) < 0)
			;	/* the counter is non-zero: it is readable */
	}
}

/* wake_up_all()'s part: every fiber parked on @wq is ready (wq->m held). */
static void uk_fibers_wake(struct wait_queue_head *wq)
{
	struct uk_fiber *f, *tmp;

	if (!wq->fibers.next || list_empty(&wq->fibers))
		return;
	pthread_mutex_lock(&uk_sched.m);
	list_for_each_entry_safe(f, tmp, &wq->fibers, wq_link) {
		list_del_init(&f->wq_link);
		f->wq = NULL;
		uk_fiber_ready_locked(f);
	}
	pthread_mutex_unlock(&uk_sched.m);
}

/* uk_signal_task()'s part for a fiber (its task's lock held). */
static void uk_fiber_signal(struct uk_fiber *f)
{
	struct wait_queue_head *wq;

	/* f->wq changes only under its m; take it, then check again */
	for (;;) {
		wq = __atomic_load_n(&f->wq, __ATOMIC_SEQ_CST);
		if (!wq)
			break;
		pthread_mutex_lock(&wq->m);
		if (f->wq == wq) {
			list_del_init(&f->wq_link);
			f->wq = NULL;
			pthread_mutex_lock(&uk_sched.m);
			uk_fiber_ready_locked(f);
			pthread_mutex_unlock(&uk_sched.m);
			pthread_mutex_unlock(&wq->m);
			return;
		}
		pthread_mutex_unlock(&wq->m);
	}
	pthread_mutex_lock(&uk_sched.m);
	uk_fiber_ready_locked(f);
	pthread_mutex_unlock(&uk_sched.m);
}

void __asan_unpoison_memory_region(void const volatile *addr, size_t size)
	__attribute__((weak));

/*
 * Switch contexts: getcontext() and setcontext(), not swapcontext(),
 * which ASan intercepts only to warn that it cannot follow it -- the
 * fiber annotations below tell it what it needs.
 */
static void uk_ctx_switch(ucontext_t *from, const ucontext_t *to)
{
	volatile bool resumed = false;

	getcontext(from);
	if (!resumed) {
		resumed = true;
		setcontext(to);
	}
}

static void uk_asan_start(void **save, const void *bottom, size_t size)
{
	if (__sanitizer_start_switch_fiber)
		__sanitizer_start_switch_fiber(save, bottom, size);
}

static void uk_asan_finish(void *save, const void **bottom, size_t *size)
{
	if (__sanitizer_finish_switch_fiber)
		__sanitizer_finish_switch_fiber(save, bottom, size);
}

/* In the fiber: give the thread back to the scheduler until run again. */
static void uk_fiber_yield(struct uk_fiber *f)
{
	uk_asan_start(&f->fake_stack, uk_sched.stack_bottom,
		      uk_sched.stack_size);
	uk_ctx_switch(&f->ctx, &uk_sched.ctx);
	uk_asan_finish(f->fake_stack, &uk_sched.stack_bottom,
		       &uk_sched.stack_size);
}

/*
 * uk_sleep() in a fiber: park until @e's queue is woken (if @e), a signal
 * (if interruptible) or @deadline_ns (if not 0).  Returns true if woken
 * before the deadline, as uk_sleep().
 */
static bool uk_fiber_sleep(struct uk_fiber *f, struct wait_queue_entry *e,
			   u64 deadline_ns)
{
	struct wait_queue_head *wq = e ? e->wq : NULL;
	struct task_struct *t = f->task;
	struct uk_fiber *pos;
	bool woken = false;

	for (;;) {
		if (wq)
			pthread_mutex_lock(&wq->m);
		if (wq && wq->seq != e->seq) {
			e->seq = wq->seq;
			woken = true;
		} else if (e && e->state == TASK_INTERRUPTIBLE &&
			   __atomic_load_n(&t->sigpending, __ATOMIC_SEQ_CST)) {
			woken = true;
		} else if (deadline_ns && ktime_get_ns() >= deadline_ns) {
			woken = false;
		} else {
			/* park: on the queue, then on the scheduler's list */
			if (wq) {
				list_add_tail(&f->wq_link, &wq->fibers);
				__atomic_store_n(&f->wq, wq, __ATOMIC_SEQ_CST);
			}
			pthread_mutex_lock(&uk_sched.m);
			f->state = UK_FIBER_PARKED;
			f->deadline = deadline_ns;
			list_for_each_entry(pos, &uk_sched.parked, link)
				if (deadline_ns && (!pos->deadline ||
						    pos->deadline > deadline_ns))
					break;
			list_add_tail(&f->link, &pos->link);
			pthread_mutex_unlock(&uk_sched.m);
			if (wq)
				pthread_mutex_unlock(&wq->m);
			uk_fiber_yield(f);
			/* run again: off the lists, unless a deadline did it */
			if (wq) {
				pthread_mutex_lock(&wq->m);
				if (f->wq == wq) {
					list_del_init(&f->wq_link);
					f->wq = NULL;
				}
				pthread_mutex_unlock(&wq->m);
			}
			continue;
		}
		if (wq)
			pthread_mutex_unlock(&wq->m);
		return woken;
	}
}

static void *uk_stack_get(void)
{
	void *p = NULL;

	pthread_mutex_lock(&uk_sched.m);
	if (uk_sched.nr_stacks)
		p = uk_sched.stacks[--uk_sched.nr_stacks];
	pthread_mutex_unlock(&uk_sched.m);
	if (p) {
		/* what its last fiber's frames left poisoned goes */
		if (__asan_unpoison_memory_region)
			__asan_unpoison_memory_region((char *)p + 4096,
						      UK_FIBER_STACK - 4096);
		return p;
	}
	p = mmap(NULL, UK_FIBER_STACK, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
		 -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (mprotect(p, 4096, PROT_NONE)) {
		munmap(p, UK_FIBER_STACK);
		return NULL;
	}
	return p;
}

/* uk_sched.m held. */
static void uk_stack_put_locked(void *p)
{
	if (uk_sched.nr_stacks < UK_FIBER_STACKS_KEPT)
		uk_sched.stacks[uk_sched.nr_stacks++] = p;
	else
		munmap(p, UK_FIBER_STACK);
}

static void uk_fiber_main(void)
{
	struct uk_fiber *f = uk_sched.cur;

	uk_asan_finish(NULL, &uk_sched.stack_bottom, &uk_sched.stack_size);
	f->fn(f->arg);
	WARN(f->task->atomic_depth || f->task->rcu_depth,
	     "fiber %s returned holding a spinlock or in an RCU section",
	     f->task->comm);
	pthread_mutex_lock(&uk_sched.m);
	f->state = UK_FIBER_DONE;
	pthread_mutex_unlock(&uk_sched.m);
	/* this stack is going away: no fake stack to keep */
	uk_asan_start(NULL, uk_sched.stack_bottom, uk_sched.stack_size);
	setcontext(&uk_sched.ctx);
	abort();	/* a DONE fiber is never run again */
}

/*
 * On the scheduler: run @f until it parks or returns; free it if done.
 * Return: true if it returned (and is freed).
 */
static bool uk_fiber_switch(struct uk_fiber *f)
{
	struct task_struct *me = current;

	uk_sched.cur = f;
	f->state = UK_FIBER_RUNNING;
	uk_task = f->task;
	uk_asan_start(&uk_sched.fake_stack, (char *)f->stack + 4096,
		      UK_FIBER_STACK - 4096);
	uk_ctx_switch(&uk_sched.ctx, &f->ctx);
	uk_asan_finish(uk_sched.fake_stack, NULL, NULL);
	uk_task = me;
	uk_sched.cur = NULL;
	pthread_mutex_lock(&uk_sched.m);
	if (f->state == UK_FIBER_DONE) {
		uk_sched.alive--;
		uk_stack_put_locked(f->stack);
		pthread_mutex_unlock(&uk_sched.m);
		uk_task_free(f->task);
		free(f);
		return true;
	}
	pthread_mutex_unlock(&uk_sched.m);
	return false;
}

int uk_fiber_run(void (*fn)(void *arg), void *arg, const char *comm,
		 struct task_struct **task)
{
	struct uk_fiber *f = calloc(1, sizeof(*f));
	struct task_struct *me = current;

	pthread_once(&uk_sched.once, uk_sched_init);
	/* the scheduler is the thread that runs fibers, one at a time */
	pthread_mutex_lock(&uk_sched.m);
	if (!uk_sched.alive) {
		uk_sched.thread = pthread_self();
		uk_sched.have_thread = true;
	}
	pthread_mutex_unlock(&uk_sched.m);
	if (WARN(!uk_on_scheduler() || me->fiber,
		 "a fiber started off the scheduler thread")) {
		free(f);
		return -EINVAL;
	}
	if (!f)
		return -ENOMEM;
	f->stack = uk_stack_get();
	f->task = uk_task_new(comm);
	if (!f->stack || !f->task || getcontext(&f->ctx)) {
		if (f->stack) {
			pthread_mutex_lock(&uk_sched.m);
			uk_stack_put_locked(f->stack);
			pthread_mutex_unlock(&uk_sched.m);
		}
		if (f->task)
			uk_task_free(f->task);
		free(f);
		return -ENOMEM;
	}
	f->task->fiber = f;
	f->task->pid = me->pid;
	f->fn = fn;
	f->arg = arg;
	INIT_LIST_HEAD(&f->link);
	INIT_LIST_HEAD(&f->wq_link);
	f->ctx.uc_stack.ss_sp = (char *)f->stack + 4096;
	f->ctx.uc_stack.ss_size = UK_FIBER_STACK - 4096;
	f->ctx.uc_link = NULL;
	makecontext(&f->ctx, uk_fiber_main, 0);
	pthread_mutex_lock(&uk_sched.m);
	uk_sched.alive++;
	pthread_mutex_unlock(&uk_sched.m);
	/* set before it runs: @fn may clear it if it does not outlive it */
	*task = f->task;
	/* it parks (its task lives on) or returns (and is freed) */
	return uk_fiber_switch(f) ? 0 : 1;
}

u64 uk_fibers_schedule(void)
{
	struct uk_fiber *f, *tmp;
	u64 now, next = 0, v;

	pthread_once(&uk_sched.once, uk_sched_init);
	pthread_mutex_lock(&uk_sched.m);
	if (uk_sched.efd_set) {
		uk_sched.efd_set = false;
		if (read(uk_sched.efd, &v, sizeof(v)) < 0)
			;	/* read already */
	}
	for (;;) {
		now = ktime_get_ns();
		list_for_each_entry_safe(f, tmp, &uk_sched.parked, link) {
			if (!f->deadline || f->deadline > now)
				break;
			uk_fiber_ready_locked(f);
		}
		if (list_empty(&uk_sched.ready))
			break;
		f = list_first_entry(&uk_sched.ready, struct uk_fiber, link);
		list_del_init(&f->link);
		pthread_mutex_unlock(&uk_sched.m);
		uk_fiber_switch(f);
		pthread_mutex_lock(&uk_sched.m);
	}
	if (!list_empty(&uk_sched.parked)) {
		f = list_first_entry(&uk_sched.parked, struct uk_fiber, link);
		next = f->deadline;
	}
	pthread_mutex_unlock(&uk_sched.m);
	return next;
}

/* ---------------------------------------------------------- completions */

void init_completion(struct completion *x)
{
	pthread_mutex_init(&x->m, NULL);
	uk_cond_init(&x->c);
	x->done = 0;
}

void complete(struct completion *x)
{
	pthread_mutex_lock(&x->m);
	if (x->done != UINT_MAX)
		x->done++;
	pthread_cond_broadcast(&x->c);
	pthread_mutex_unlock(&x->m);
}

void complete_all(struct completion *x)
{
	pthread_mutex_lock(&x->m);
	x->done = UINT_MAX;
	pthread_cond_broadcast(&x->c);
	pthread_mutex_unlock(&x->m);
}

void wait_for_completion(struct completion *x)
{
	might_sleep();
	pthread_mutex_lock(&x->m);
	while (!x->done)
		pthread_cond_wait(&x->c, &x->m);
	if (x->done != UINT_MAX)
		x->done--;
	pthread_mutex_unlock(&x->m);
}

unsigned long wait_for_completion_timeout(struct completion *x,
					  unsigned long jiffies)
{
	u64 deadline = ktime_get_ns() + (u64)jiffies * (NSEC_PER_SEC / HZ);
	struct timespec ts = uk_ts(deadline);
	unsigned long left = 0;
	u64 now;

	might_sleep();
	pthread_mutex_lock(&x->m);
	while (!x->done &&
	       pthread_cond_timedwait(&x->c, &x->m, &ts) != ETIMEDOUT)
		;
	if (x->done) {
		if (x->done != UINT_MAX)
			x->done--;
		now = ktime_get_ns();
		left = now >= deadline ? 1 :
		       (unsigned long)((deadline - now) / (NSEC_PER_SEC / HZ)) + 1;
	}
	pthread_mutex_unlock(&x->m);
	return left;
}

bool completion_done(struct completion *x)
{
	bool d;

	pthread_mutex_lock(&x->m);
	d = x->done != 0;
	pthread_mutex_unlock(&x->m);
	return d;
}

/* ----------------------------------------------------------- workqueues */

static struct {
	pthread_mutex_t m;
	pthread_cond_t more;	/* an item was queued, or a timer armed */
	pthread_cond_t idle;	/* an item finished */
	struct list_head items;
	struct list_head timers;	/* armed delayed work */
	pthread_once_t once;
} uk_wq = {
	.m = PTHREAD_MUTEX_INITIALIZER,
	.more = PTHREAD_COND_INITIALIZER,
	.idle = PTHREAD_COND_INITIALIZER,
	.items = LIST_HEAD_INIT(uk_wq.items),
	.timers = LIST_HEAD_INIT(uk_wq.timers),
	.once = PTHREAD_ONCE_INIT,
};

/* Queue @w at the tail (uk_wq.m held); false if it is queued already. */
static bool uk_queue(struct work_struct *w)
{
	if (w->pending)
		return false;
	w->pending = true;
	list_add_tail(&w->entry, &uk_wq.items);
	pthread_cond_signal(&uk_wq.more);
	return true;
}

/*
 * Queue the delayed work whose time has come; the earliest time still to
 * come, or 0 if none is armed (uk_wq.m held).
 */
static u64 uk_timers_run(void)
{
	struct delayed_work *dw, *tmp;
	u64 now = ktime_get_ns(), next = 0;

	list_for_each_entry_safe(dw, tmp, &uk_wq.timers, timer) {
		if (dw->due_ns <= now) {
			list_del_init(&dw->timer);
			dw->armed = false;
			uk_queue(&dw->work);
		} else if (!next || dw->due_ns < next) {
			next = dw->due_ns;
		}
	}
	return next;
}

static int uk_worker(void *unused)
{
	struct work_struct *w;
	struct timespec ts;
	u64 next;

	(void)unused;
	pthread_mutex_lock(&uk_wq.m);
	for (;;) {
		for (;;) {
			next = uk_timers_run();
			if (!list_empty(&uk_wq.items))
				break;
			if (!next) {
				pthread_cond_wait(&uk_wq.more, &uk_wq.m);
				continue;
			}
			ts.tv_sec = next / NSEC_PER_SEC;
			ts.tv_nsec = next % NSEC_PER_SEC;
			pthread_cond_timedwait(&uk_wq.more, &uk_wq.m, &ts);
		}
		w = list_first_entry(&uk_wq.items, struct work_struct, entry);
		list_del_init(&w->entry);
		w->pending = false;
		w->running++;
		pthread_mutex_unlock(&uk_wq.m);
		w->func(w);
		pthread_mutex_lock(&uk_wq.m);
		w->running--;	/* the item may be freed once we unlock */
		pthread_cond_broadcast(&uk_wq.idle);
	}
	return 0;
}

static void uk_worker_start(void)
{
	pthread_condattr_t a;

	/* the timers' waits are on CLOCK_MONOTONIC, as ktime_get_ns() */
	if (pthread_condattr_init(&a) ||
	    pthread_condattr_setclock(&a, CLOCK_MONOTONIC) ||
	    pthread_cond_destroy(&uk_wq.more) ||
	    pthread_cond_init(&uk_wq.more, &a))
		abort();
	pthread_condattr_destroy(&a);
	if (IS_ERR(kthread_run(uk_worker, NULL, "kworker")))
		abort();
}

bool schedule_work(struct work_struct *w)
{
	bool queued;

	pthread_once(&uk_wq.once, uk_worker_start);
	pthread_mutex_lock(&uk_wq.m);
	queued = uk_queue(w);
	pthread_mutex_unlock(&uk_wq.m);
	return queued;
}

/* Arm @dw for @delay jiffies from now, or queue it (uk_wq.m held). */
static void uk_arm(struct delayed_work *dw, unsigned long delay)
{
	if (!delay) {
		uk_queue(&dw->work);
		return;
	}
	dw->due_ns = ktime_get_ns() + (u64)delay * (NSEC_PER_SEC / HZ);
	dw->armed = true;
	list_add_tail(&dw->timer, &uk_wq.timers);
	pthread_cond_signal(&uk_wq.more);
}

/* Disarm and unqueue @dw (uk_wq.m held); was it either? */
static bool uk_grab(struct delayed_work *dw)
{
	bool was = dw->armed || dw->work.pending;

	if (dw->armed) {
		list_del_init(&dw->timer);
		dw->armed = false;
	}
	if (dw->work.pending) {
		list_del_init(&dw->work.entry);
		dw->work.pending = false;
	}
	return was;
}

bool schedule_delayed_work(struct delayed_work *dw, unsigned long delay)
{
	bool queued = false;

	pthread_once(&uk_wq.once, uk_worker_start);
	pthread_mutex_lock(&uk_wq.m);
	if (!dw->armed && !dw->work.pending) {
		uk_arm(dw, delay);
		queued = true;
	}
	pthread_mutex_unlock(&uk_wq.m);
	return queued;
}

bool mod_delayed_work(struct workqueue_struct *wq, struct delayed_work *dw,
		      unsigned long delay)
{
	bool was;

	(void)wq;
	pthread_once(&uk_wq.once, uk_worker_start);
	pthread_mutex_lock(&uk_wq.m);
	was = uk_grab(dw);
	uk_arm(dw, delay);
	pthread_mutex_unlock(&uk_wq.m);
	return was;
}

bool flush_delayed_work(struct delayed_work *dw)
{
	might_sleep();
	pthread_mutex_lock(&uk_wq.m);
	if (dw->armed) {
		list_del_init(&dw->timer);
		dw->armed = false;
		uk_queue(&dw->work);
	}
	pthread_mutex_unlock(&uk_wq.m);
	return flush_work(&dw->work);
}

bool cancel_delayed_work_sync(struct delayed_work *dw)
{
	bool was;

	might_sleep();
	pthread_mutex_lock(&uk_wq.m);
	was = uk_grab(dw);
	while (dw->work.running)
		pthread_cond_wait(&uk_wq.idle, &uk_wq.m);
	pthread_mutex_unlock(&uk_wq.m);
	return was;
}

bool flush_work(struct work_struct *w)
{
	bool waited = false;

	might_sleep();
	pthread_mutex_lock(&uk_wq.m);
	while (w->pending || w->running) {
		waited = true;
		pthread_cond_wait(&uk_wq.idle, &uk_wq.m);
	}
	pthread_mutex_unlock(&uk_wq.m);
	return waited;
}

bool cancel_work_sync(struct work_struct *w)
{
	bool was = false;

	might_sleep();
	pthread_mutex_lock(&uk_wq.m);
	if (w->pending) {
		list_del_init(&w->entry);
		w->pending = false;
		was = true;
	}
	while (w->running)
		pthread_cond_wait(&uk_wq.idle, &uk_wq.m);
	pthread_mutex_unlock(&uk_wq.m);
	return was;
}

/* --------------------------------------------------------------- xarray */

void xa_init(struct xarray *xa)
{
	pthread_mutex_init(&xa->lock, NULL);
	xa->idx = NULL;
	xa->ent = NULL;
	xa->n = 0;
	xa->cap = 0;
}

void xa_destroy(struct xarray *xa)
{
	pthread_mutex_lock(&xa->lock);
	free(xa->idx);
	free(xa->ent);
	xa->idx = NULL;
	xa->ent = NULL;
	xa->n = 0;
	xa->cap = 0;
	pthread_mutex_unlock(&xa->lock);
}

/* The first slot whose index is >= @index (xa->lock held). */
static size_t uk_xa_pos(struct xarray *xa, unsigned long index)
{
	size_t lo = 0, hi = xa->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (xa->idx[mid] < index)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void *xa_load(struct xarray *xa, unsigned long index)
{
	void *e = NULL;
	size_t p;

	pthread_mutex_lock(&xa->lock);
	p = uk_xa_pos(xa, index);
	if (p < xa->n && xa->idx[p] == index)
		e = xa->ent[p];
	pthread_mutex_unlock(&xa->lock);
	return e;
}

static int uk_xa_put(struct xarray *xa, unsigned long index, void *entry,
		     gfp_t gfp, bool replace, void **old)
{
	size_t p;

	*old = NULL;
	pthread_mutex_lock(&xa->lock);
	p = uk_xa_pos(xa, index);
	if (p < xa->n && xa->idx[p] == index) {
		*old = xa->ent[p];
		if (!replace) {
			pthread_mutex_unlock(&xa->lock);
			return -EBUSY;
		}
		xa->ent[p] = entry;
		pthread_mutex_unlock(&xa->lock);
		return 0;
	}
	if (xa->n == xa->cap) {
		size_t cap = xa->cap ? 2 * xa->cap : 16;
		unsigned long *idx;
		void **ent;

		pthread_mutex_unlock(&xa->lock);
		idx = uk_kmalloc(cap * sizeof(*idx), gfp, __FILE__, __LINE__);
		ent = uk_kmalloc(cap * sizeof(*ent), gfp, __FILE__, __LINE__);
		if (!idx || !ent) {
			free(idx);
			free(ent);
			return -ENOMEM;
		}
		pthread_mutex_lock(&xa->lock);
		if (xa->cap >= cap) {	/* grown meanwhile */
			free(idx);
			free(ent);
		} else {
			if (xa->n) {
				memcpy(idx, xa->idx, xa->n * sizeof(*idx));
				memcpy(ent, xa->ent, xa->n * sizeof(*ent));
			}
			free(xa->idx);
			free(xa->ent);
			xa->idx = idx;
			xa->ent = ent;
			xa->cap = cap;
		}
		pthread_mutex_unlock(&xa->lock);
		return uk_xa_put(xa, index, entry, gfp, replace, old);
	}
	memmove(&xa->idx[p + 1], &xa->idx[p], (xa->n - p) * sizeof(*xa->idx));
	memmove(&xa->ent[p + 1], &xa->ent[p], (xa->n - p) * sizeof(*xa->ent));
	xa->idx[p] = index;
	xa->ent[p] = entry;
	xa->n++;
	pthread_mutex_unlock(&xa->lock);
	return 0;
}

int xa_insert(struct xarray *xa, unsigned long index, void *entry, gfp_t gfp)
{
	void *old;

	if (!entry)
		return -EINVAL;	/* reserving an index is not modelled */
	return uk_xa_put(xa, index, entry, gfp, false, &old);
}

void *xa_store(struct xarray *xa, unsigned long index, void *entry, gfp_t gfp)
{
	void *old;
	int err;

	if (!entry)
		return xa_erase(xa, index);
	err = uk_xa_put(xa, index, entry, gfp, true, &old);
	return err ? ERR_PTR(err) : old;	/* xa_err() is not modelled */
}

void *xa_erase(struct xarray *xa, unsigned long index)
{
	void *e = NULL;
	size_t p;

	pthread_mutex_lock(&xa->lock);
	p = uk_xa_pos(xa, index);
	if (p < xa->n && xa->idx[p] == index) {
		e = xa->ent[p];
		xa->n--;
		memmove(&xa->idx[p], &xa->idx[p + 1],
			(xa->n - p) * sizeof(*xa->idx));
		memmove(&xa->ent[p], &xa->ent[p + 1],
			(xa->n - p) * sizeof(*xa->ent));
	}
	pthread_mutex_unlock(&xa->lock);
	return e;
}

bool xa_empty(struct xarray *xa)
{
	bool e;

	pthread_mutex_lock(&xa->lock);
	e = !xa->n;
	pthread_mutex_unlock(&xa->lock);
	return e;
}

static void *uk_xa_find(struct xarray *xa, unsigned long *index,
			unsigned long max, bool after)
{
	void *e = NULL;
	size_t p;

	if (after && *index == ULONG_MAX)
		return NULL;
	pthread_mutex_lock(&xa->lock);
	p = uk_xa_pos(xa, after ? *index + 1 : *index);
	if (p < xa->n && xa->idx[p] <= max) {
		*index = xa->idx[p];
		e = xa->ent[p];
	}
	pthread_mutex_unlock(&xa->lock);
	return e;
}

void *xa_find(struct xarray *xa, unsigned long *index, unsigned long max,
	      unsigned int filter)
{
	(void)filter;
	return uk_xa_find(xa, index, max, false);
}

void *xa_find_after(struct xarray *xa, unsigned long *index,
		    unsigned long max, unsigned int filter)
{
	(void)filter;
	return uk_xa_find(xa, index, max, true);
}

/* ------------------------------------------------------------------ RCU */

static pthread_rwlock_t uk_rcu_gp = PTHREAD_RWLOCK_INITIALIZER;

void rcu_read_lock(void)
{
	struct task_struct *t = current;

	if (!t->rcu_depth++)
		pthread_rwlock_rdlock(&uk_rcu_gp);
}

void rcu_read_unlock(void)
{
	struct task_struct *t = current;

	if (WARN(t->rcu_depth <= 0, "rcu_read_unlock() without a lock"))
		return;
	if (!--t->rcu_depth)
		pthread_rwlock_unlock(&uk_rcu_gp);
}

bool rcu_read_lock_held(void)
{
	return current->rcu_depth > 0;
}

void synchronize_rcu(void)
{
	if (current->rcu_depth)
		uk_bug(__FILE__, __LINE__,
		       "synchronize_rcu() in an RCU read-side section");
	might_sleep();
	pthread_rwlock_wrlock(&uk_rcu_gp);
	pthread_rwlock_unlock(&uk_rcu_gp);
}

/*
 * Callbacks run in batches: the worker, woken by the first callback of a
 * batch, gathers for UK_RCU_BATCH_MS (unless rcu_barrier() waits), then
 * waits for a grace period and runs them -- one wake-up and one grace
 * period per batch, as the kernel's callbacks come ms after call_rcu(),
 * not one per callback (a register/unregister loop would make a context
 * switch and a write lock of each).
 */
#define UK_RCU_BATCH_MS		2

static struct {
	pthread_mutex_t m;
	pthread_cond_t more;	/* callbacks queued */
	pthread_cond_t done;	/* a batch ran */
	struct rcu_head *head, **tail;
	unsigned long queued, ran;
	bool idle;		/* the worker waits for a first callback */
	unsigned int barriers;	/* rcu_barrier()s waiting */
	pthread_once_t once;
} uk_rcu = {
	.m = PTHREAD_MUTEX_INITIALIZER,
	.more = PTHREAD_COND_INITIALIZER,
	.done = PTHREAD_COND_INITIALIZER,
	.tail = &uk_rcu.head,
	.once = PTHREAD_ONCE_INIT,
};

static int uk_rcu_worker(void *unused)
{
	struct rcu_head *batch, *h;
	unsigned long n;

	(void)unused;
	pthread_mutex_lock(&uk_rcu.m);
	for (;;) {
		uk_rcu.idle = true;
		while (!uk_rcu.head)
			pthread_cond_wait(&uk_rcu.more, &uk_rcu.m);
		uk_rcu.idle = false;
		if (!uk_rcu.barriers) {
			struct timespec ts;

			/* gather a batch (the condvar's clock: realtime) */
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += UK_RCU_BATCH_MS * NSEC_PER_MSEC;
			if (ts.tv_nsec >= NSEC_PER_SEC) {
				ts.tv_sec++;
				ts.tv_nsec -= NSEC_PER_SEC;
			}
			while (!uk_rcu.barriers &&
			       pthread_cond_timedwait(&uk_rcu.more, &uk_rcu.m,
						      &ts) != ETIMEDOUT)
				;
		}
		batch = uk_rcu.head;
		uk_rcu.head = NULL;
		uk_rcu.tail = &uk_rcu.head;
		pthread_mutex_unlock(&uk_rcu.m);
		synchronize_rcu();	/* readers of the batch are gone */
		for (n = 0; (h = batch); n++) {
			batch = h->next;
			h->func(h);
		}
		pthread_mutex_lock(&uk_rcu.m);
		uk_rcu.ran += n;
		pthread_cond_broadcast(&uk_rcu.done);
	}
	return 0;
}

static void uk_rcu_start(void)
{
	if (IS_ERR(kthread_run(uk_rcu_worker, NULL, "rcu_gp")))
		abort();
}

void call_rcu(struct rcu_head *head, void (*func)(struct rcu_head *head))
{
	pthread_once(&uk_rcu.once, uk_rcu_start);
	head->func = func;
	head->next = NULL;
	pthread_mutex_lock(&uk_rcu.m);
	*uk_rcu.tail = head;
	uk_rcu.tail = &head->next;
	uk_rcu.queued++;
	if (uk_rcu.idle) {
		uk_rcu.idle = false;
		pthread_cond_signal(&uk_rcu.more);
	}
	pthread_mutex_unlock(&uk_rcu.m);
}

static void uk_kfree_rcu_cb(struct rcu_head *head)
{
	free(head->uk_obj);
}

void uk_kfree_rcu(struct rcu_head *head, void *obj)
{
	head->uk_obj = obj;
	call_rcu(head, uk_kfree_rcu_cb);
}

void rcu_barrier(void)
{
	unsigned long target;

	might_sleep();
	pthread_mutex_lock(&uk_rcu.m);
	target = uk_rcu.queued;
	uk_rcu.barriers++;
	pthread_cond_signal(&uk_rcu.more);	/* no gathering now */
	while (uk_rcu.ran < target)
		pthread_cond_wait(&uk_rcu.done, &uk_rcu.m);
	uk_rcu.barriers--;
	pthread_mutex_unlock(&uk_rcu.m);
}
