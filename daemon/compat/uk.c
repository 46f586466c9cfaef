// SPDX-License-Identifier: GPL-2.0
/*
 * uk: the userspace rendition of the kernel primitives declared in
 * include/uk/uk.h.  See daemon/README.md for what is modelled.
 */
#include <uk/uk.h>
#include <uk/internal.h>
#include <sys/syscall.h>
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

void uk_signal_task(struct task_struct *t)
{
	struct wait_queue_head *wq = NULL;

	pthread_mutex_lock(&t->lock);
	__atomic_store_n(&t->sigpending, true, __ATOMIC_SEQ_CST);
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

struct timespec uk_ts(u64 ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / NSEC_PER_SEC),
		.tv_nsec = (long)(ns % NSEC_PER_SEC),
	};

	return ts;
}

void uk_sleep_until(u64 deadline)
{
	struct timespec ts = uk_ts(deadline);

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

void msleep(unsigned int ms)
{
	might_sleep();
	uk_sleep_until(ktime_get_ns() + (u64)ms * NSEC_PER_MSEC);
}

void usleep_range(unsigned long min_us, unsigned long max_us)
{
	might_sleep();
	(void)max_us;
	uk_sleep_until(ktime_get_ns() + (u64)min_us * NSEC_PER_USEC);
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

void uk_cond_init(pthread_cond_t *c)
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

void wake_up_all(struct wait_queue_head *wq)
{
	pthread_mutex_lock(&wq->m);
	wq->seq++;
	pthread_cond_broadcast(&wq->c);
	pthread_mutex_unlock(&wq->m);
}

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
