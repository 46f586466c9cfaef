// SPDX-License-Identifier: GPL-2.0
/*
 * uk: what runs later, off the caller's thread -- the workqueue (one
 * kworker thread, delayed works on its timer list) and RCU (a grace-period
 * thread running call_rcu() callbacks).  See include/uk/uk.h.
 */
#include <uk/uk.h>
#include <uk/internal.h>

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
