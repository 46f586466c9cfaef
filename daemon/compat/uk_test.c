// SPDX-License-Identifier: GPL-2.0
/*
 * The compat layer's own KUnit suite: each primitive behaves as the
 * ledger relies on it behaving in the kernel, and the checks that stand in
 * for lockdep and might_sleep() do fire.
 */
#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/lockdep.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <net/netlink.h>
#include <poll.h>

#define MS NSEC_PER_MSEC

struct holder_thread {
	struct mutex *m;
	struct completion locked, release, done;
};

static int hold_fn(void *arg)
{
	struct holder_thread *ht = arg;

	mutex_lock(ht->m);
	complete(&ht->locked);
	wait_for_completion(&ht->release);
	mutex_unlock(ht->m);
	complete(&ht->done);
	return 0;
}

/* lockdep_assert_held() passes for the holder only. */
static void uk_test_lockdep(struct kunit *test)
{
	struct holder_thread ht;
	struct mutex m;
	spinlock_t s;

	mutex_init(&m);
	spin_lock_init(&s);
	UK_EXPECT_WARNS(test, 1, lockdep_assert_held(&m));
	UK_EXPECT_WARNS(test, 1, lockdep_assert_held(&s));
	mutex_lock(&m);
	spin_lock(&s);
	UK_EXPECT_WARNS(test, 0, lockdep_assert_held(&m));
	UK_EXPECT_WARNS(test, 0, lockdep_assert_held(&s));
	spin_unlock(&s);
	mutex_unlock(&m);
	UK_EXPECT_WARNS(test, 1, lockdep_assert_held(&s));

	/* Held, but by another task. */
	ht.m = &m;
	init_completion(&ht.locked);
	init_completion(&ht.release);
	init_completion(&ht.done);
	KUNIT_ASSERT_FALSE(test, IS_ERR(kthread_run(hold_fn, &ht, "holder")));
	wait_for_completion(&ht.locked);
	KUNIT_EXPECT_TRUE(test, mutex_is_locked(&m));
	UK_EXPECT_WARNS(test, 1, lockdep_assert_held(&m));
	KUNIT_EXPECT_FALSE(test, mutex_trylock(&m));
	complete(&ht.release);
	wait_for_completion(&ht.done);
	KUNIT_EXPECT_FALSE(test, mutex_is_locked(&m));
	mutex_destroy(&m);
}

/* Sleeping or a sleeping allocation under a spinlock WARNs; not outside. */
static void uk_test_might_sleep(struct kunit *test)
{
	spinlock_t s, inner;
	void *p = NULL;

	spin_lock_init(&s);
	spin_lock_init(&inner);
	UK_EXPECT_WARNS(test, 0, p = kzalloc(16, GFP_KERNEL));
	kfree(p);
	spin_lock(&s);
	spin_lock(&inner);		/* nesting spinlocks is fine */
	spin_unlock(&inner);
	UK_EXPECT_WARNS(test, 0, p = kzalloc(16, GFP_ATOMIC));
	kfree(p);
	UK_EXPECT_WARNS(test, 1, p = kzalloc(16, GFP_KERNEL_ACCOUNT));
	kfree(p);
	UK_EXPECT_WARNS(test, 1, msleep(1));
	UK_EXPECT_WARNS(test, 1, cond_resched());
	spin_unlock(&s);
	UK_EXPECT_WARNS(test, 0, msleep(1));
	KUNIT_EXPECT_EQ(test, current->atomic_depth, 0);
}

struct sleeper {
	wait_queue_head_t *wq;
	bool *cond;
	u64 deadline_ns;
	int rc;			/* schedule_hrtimeout_range()'s last */
	bool saw_cond, saw_signal;
	u64 slept_ns, end_ns;
	struct task_struct *task;
	struct completion started, done;
};

/* charge.c's loop: prepare, check, sleep until the deadline, finish. */
static int sleeper_fn(void *arg)
{
	struct sleeper *s = arg;
	u64 t0 = ktime_get_ns();
	ktime_t expires;
	DEFINE_WAIT(wait);

	s->task = current;
	complete(&s->started);
	for (;;) {
		prepare_to_wait(s->wq, &wait, TASK_INTERRUPTIBLE);
		if (READ_ONCE(*s->cond)) {
			s->saw_cond = true;
			break;
		}
		if (signal_pending(current)) {
			s->saw_signal = true;
			break;
		}
		if (ktime_get_ns() >= s->deadline_ns)
			break;
		expires = ns_to_ktime(s->deadline_ns);
		s->rc = schedule_hrtimeout_range(&expires, 0, HRTIMER_MODE_ABS);
	}
	finish_wait(s->wq, &wait);
	s->end_ns = ktime_get_ns();
	s->slept_ns = s->end_ns - t0;
	complete(&s->done);
	return 0;
}

static void sleeper_start(struct kunit *test, struct sleeper *s,
			  wait_queue_head_t *wq, bool *cond, u64 timeout_ns)
{
	s->wq = wq;
	s->cond = cond;
	s->deadline_ns = ktime_get_ns() + timeout_ns;
	s->rc = 0;
	s->saw_cond = s->saw_signal = false;
	init_completion(&s->started);
	init_completion(&s->done);
	KUNIT_ASSERT_FALSE(test, IS_ERR(kthread_run(sleeper_fn, s, "sleeper")));
	wait_for_completion(&s->started);
}

/* A wake-up ends the sleep long before its deadline; none: the deadline. */
static void uk_test_waitqueue(struct kunit *test)
{
	wait_queue_head_t wq;
	struct sleeper s;
	bool cond = false;

	init_waitqueue_head(&wq);
	sleeper_start(test, &s, &wq, &cond, 10000 * MS);
	msleep(20);
	KUNIT_EXPECT_FALSE(test, completion_done(&s.done));
	WRITE_ONCE(cond, true);
	wake_up_all(&wq);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&s.done, 5 * HZ), 0UL);
	KUNIT_EXPECT_TRUE(test, s.saw_cond);
	KUNIT_EXPECT_LT(test, s.slept_ns, 5000ULL * MS);

	cond = false;
	sleeper_start(test, &s, &wq, &cond, 50 * MS);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&s.done, 5 * HZ), 0UL);
	KUNIT_EXPECT_FALSE(test, s.saw_cond);
	KUNIT_EXPECT_EQ(test, s.rc, 0);		/* the timer expired */
	KUNIT_EXPECT_GE(test, s.end_ns, s.deadline_ns);
}

/* A wake-up between prepare_to_wait() and the sleep is not lost. */
static void uk_test_no_lost_wakeup(struct kunit *test)
{
	wait_queue_head_t wq;
	ktime_t expires;
	DEFINE_WAIT(wait);
	u64 t0;
	int rc;

	init_waitqueue_head(&wq);
	prepare_to_wait(&wq, &wait, TASK_INTERRUPTIBLE);
	wake_up_all(&wq);
	t0 = ktime_get_ns();
	expires = ns_to_ktime(t0 + 5000 * MS);
	rc = schedule_hrtimeout_range(&expires, 0, HRTIMER_MODE_ABS);
	finish_wait(&wq, &wait);
	KUNIT_EXPECT_EQ(test, rc, -EINTR);
	KUNIT_EXPECT_LT(test, ktime_get_ns() - t0, 1000ULL * MS);
}

/* uk_signal_task() interrupts an interruptible sleep. */
static void uk_test_signal(struct kunit *test)
{
	wait_queue_head_t wq;
	struct sleeper s;
	bool cond = false;

	init_waitqueue_head(&wq);
	sleeper_start(test, &s, &wq, &cond, 10000 * MS);
	msleep(20);
	uk_signal_task(s.task);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&s.done, 5 * HZ), 0UL);
	KUNIT_EXPECT_TRUE(test, s.saw_signal);
	KUNIT_EXPECT_FALSE(test, s.saw_cond);
	KUNIT_EXPECT_LT(test, s.slept_ns, 5000ULL * MS);
}

static void uk_test_completion(struct kunit *test)
{
	struct completion c;
	u64 t0;

	init_completion(&c);
	t0 = ktime_get_ns();
	KUNIT_EXPECT_EQ(test, wait_for_completion_timeout(&c, 30), 0UL);
	KUNIT_EXPECT_GE(test, ktime_get_ns() - t0, 30ULL * NSEC_PER_SEC / HZ);
	KUNIT_EXPECT_FALSE(test, completion_done(&c));
	complete(&c);
	KUNIT_EXPECT_TRUE(test, completion_done(&c));
	KUNIT_EXPECT_GT(test, wait_for_completion_timeout(&c, HZ), 0UL);
	KUNIT_EXPECT_FALSE(test, completion_done(&c));	/* consumed */
}

static void uk_test_xarray(struct kunit *test)
{
	unsigned long ids[] = { 7, 3, ULONG_MAX, 0, 1000000, 4 };
	unsigned long sorted[] = { 0, 3, 4, 7, 1000000, ULONG_MAX };
	unsigned long index, seen[8];
	struct xarray xa;
	void *entry;
	int vals[6];
	size_t i, n;

	xa_init(&xa);
	KUNIT_EXPECT_TRUE(test, xa_empty(&xa));
	KUNIT_EXPECT_NULL(test, xa_load(&xa, 7));
	for (i = 0; i < ARRAY_SIZE(ids); i++)
		KUNIT_EXPECT_EQ(test, xa_insert(&xa, ids[i], &vals[i],
						GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, xa_insert(&xa, 7, &vals[1], GFP_KERNEL), -EBUSY);
	KUNIT_EXPECT_PTR_EQ(test, xa_load(&xa, 7), (void *)&vals[0]);
	KUNIT_EXPECT_PTR_EQ(test, xa_load(&xa, ULONG_MAX), (void *)&vals[2]);
	KUNIT_EXPECT_NULL(test, xa_load(&xa, 5));
	n = 0;
	xa_for_each(&xa, index, entry) {
		if (n < ARRAY_SIZE(seen))
			seen[n] = index;
		n++;
		if (index == 4)		/* erasing while walking is allowed */
			KUNIT_EXPECT_PTR_EQ(test, xa_erase(&xa, 4), entry);
	}
	KUNIT_ASSERT_EQ(test, n, ARRAY_SIZE(sorted));
	for (i = 0; i < n; i++)
		KUNIT_EXPECT_EQ(test, seen[i], sorted[i]);
	KUNIT_EXPECT_NULL(test, xa_load(&xa, 4));
	KUNIT_EXPECT_NULL(test, xa_erase(&xa, 4));
	for (i = 0; i < ARRAY_SIZE(ids); i++)
		xa_erase(&xa, ids[i]);
	KUNIT_EXPECT_TRUE(test, xa_empty(&xa));
	/* Growing the array fails cleanly. */
	for (i = 0; i < 16; i++)
		KUNIT_EXPECT_EQ(test, xa_insert(&xa, i, &vals[0], GFP_KERNEL), 0);
	uk_fail_allocs(1);
	KUNIT_EXPECT_EQ(test, xa_insert(&xa, 100, &vals[0], GFP_KERNEL), -ENOMEM);
	uk_fail_allocs(0);
	KUNIT_EXPECT_NULL(test, xa_load(&xa, 100));
	KUNIT_EXPECT_EQ(test, xa_insert(&xa, 100, &vals[0], GFP_KERNEL), 0);
	xa_destroy(&xa);
	KUNIT_EXPECT_TRUE(test, xa_empty(&xa));
}

struct slow_work {
	struct work_struct work;
	int runs;
	bool finished;
};

static void slow_work_fn(struct work_struct *w)
{
	struct slow_work *sw = container_of(w, struct slow_work, work);

	msleep(50);
	sw->runs++;
	WRITE_ONCE(sw->finished, true);
}

/* Queued once while pending; flush_work() waits for it to finish. */
static void uk_test_workqueue(struct kunit *test)
{
	struct slow_work sw = { .runs = 0 };

	INIT_WORK(&sw.work, slow_work_fn);
	KUNIT_EXPECT_FALSE(test, flush_work(&sw.work));
	KUNIT_EXPECT_TRUE(test, schedule_work(&sw.work) |
				schedule_work(&sw.work));
	flush_work(&sw.work);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(sw.finished));
	KUNIT_EXPECT_GE(test, sw.runs, 1);
	KUNIT_EXPECT_LE(test, sw.runs, 2);
	sw.runs = 0;
	sw.finished = false;
	KUNIT_EXPECT_TRUE(test, schedule_work(&sw.work));
	flush_work(&sw.work);
	KUNIT_EXPECT_EQ(test, sw.runs, 1);
}

struct timed_work {
	struct delayed_work dw;
	int runs;
	u64 at;
};

static void timed_work_fn(struct work_struct *w)
{
	struct timed_work *tw = container_of(to_delayed_work(w),
					     struct timed_work, dw);

	WRITE_ONCE(tw->at, ktime_get_ns());
	WRITE_ONCE(tw->runs, tw->runs + 1);
}

/*
 * Delayed work runs no sooner than its delay; queueing an armed one is a
 * no-op; mod_delayed_work(0) runs it now; flush_delayed_work() runs an
 * armed one now and waits; cancel_delayed_work_sync() disarms.
 */
static void uk_test_delayed_work(struct kunit *test)
{
	struct timed_work tw = { .runs = 0 };
	u64 t0 = ktime_get_ns();
	int i;

	INIT_DELAYED_WORK(&tw.dw, timed_work_fn);
	KUNIT_EXPECT_TRUE(test, schedule_delayed_work(&tw.dw,
						      msecs_to_jiffies(30)));
	KUNIT_EXPECT_FALSE(test, schedule_delayed_work(&tw.dw, 0));
	for (i = 0; i < 3000 && !READ_ONCE(tw.runs); i++)
		usleep_range(1000, 2000);
	KUNIT_ASSERT_EQ(test, READ_ONCE(tw.runs), 1);
	KUNIT_EXPECT_GE(test, tw.at - t0, 30ULL * NSEC_PER_MSEC);

	/* moved from 10 s to now */
	t0 = ktime_get_ns();
	KUNIT_EXPECT_TRUE(test, schedule_delayed_work(&tw.dw,
						      msecs_to_jiffies(10000)));
	KUNIT_EXPECT_TRUE(test, mod_delayed_work(system_wq, &tw.dw, 0));
	for (i = 0; i < 3000 && READ_ONCE(tw.runs) < 2; i++)
		usleep_range(1000, 2000);
	KUNIT_ASSERT_EQ(test, READ_ONCE(tw.runs), 2);
	KUNIT_EXPECT_LT(test, tw.at - t0, 5ULL * NSEC_PER_SEC);

	/* armed for 10 s: the flush runs it now */
	t0 = ktime_get_ns();
	schedule_delayed_work(&tw.dw, msecs_to_jiffies(10000));
	flush_delayed_work(&tw.dw);
	KUNIT_EXPECT_EQ(test, READ_ONCE(tw.runs), 3);
	KUNIT_EXPECT_LT(test, ktime_get_ns() - t0, 5ULL * NSEC_PER_SEC);

	/* cancelled: never runs */
	schedule_delayed_work(&tw.dw, msecs_to_jiffies(20));
	KUNIT_EXPECT_TRUE(test, cancel_delayed_work_sync(&tw.dw));
	msleep(60);
	KUNIT_EXPECT_EQ(test, READ_ONCE(tw.runs), 3);
	KUNIT_EXPECT_FALSE(test, cancel_delayed_work_sync(&tw.dw));
}

static void uk_test_refcount(struct kunit *test)
{
	struct mutex m;
	struct kref k;

	mutex_init(&m);
	kref_init(&k);
	kref_get(&k);
	KUNIT_EXPECT_EQ(test, kref_read(&k), 2U);
	/* Not the last: no lock taken. */
	KUNIT_EXPECT_FALSE(test, refcount_dec_and_mutex_lock(&k.refcount, &m));
	KUNIT_EXPECT_FALSE(test, mutex_is_locked(&m));
	/* The last: returns with the lock held. */
	KUNIT_EXPECT_TRUE(test, refcount_dec_and_mutex_lock(&k.refcount, &m));
	UK_EXPECT_WARNS(test, 0, lockdep_assert_held(&m));
	mutex_unlock(&m);
	UK_EXPECT_WARNS(test, 1, refcount_dec_and_test(&k.refcount));
	UK_EXPECT_WARNS(test, 1, kref_get(&k));
	mutex_destroy(&m);
}

static void uk_test_helpers(struct kunit *test)
{
	char buf[4];
	u64 r;

	KUNIT_EXPECT_EQ(test, strscpy(buf, "abc", sizeof(buf)), 3L);
	KUNIT_EXPECT_STREQ(test, buf, "abc");
	KUNIT_EXPECT_EQ(test, strscpy(buf, "abcd", sizeof(buf)), (ssize_t)-E2BIG);
	KUNIT_EXPECT_STREQ(test, buf, "abc");
	KUNIT_EXPECT_EQ(test, mul_u64_u64_div_u64(U64_MAX, 3, 4),
			U64_MAX / 4 * 3 + 2);
	KUNIT_EXPECT_TRUE(test, check_add_overflow(U64_MAX, (u64)1, &r));
	KUNIT_EXPECT_FALSE(test, check_add_overflow(U64_MAX - 1, (u64)1, &r));
	KUNIT_EXPECT_EQ(test, r, U64_MAX);
	KUNIT_EXPECT_EQ(test, size_add(SIZE_MAX, 1), SIZE_MAX);
	KUNIT_EXPECT_NULL(test, kcalloc(SIZE_MAX / 2, 4, GFP_KERNEL));
	KUNIT_EXPECT_TRUE(test, IS_ERR(ERR_PTR(-ENOMEM)));
	KUNIT_EXPECT_EQ(test, PTR_ERR(ERR_PTR(-ENOMEM)), (long)-ENOMEM);
	KUNIT_EXPECT_FALSE(test, IS_ERR(buf));
}

struct item {
	struct list_head link;
	int v;
};

static void list_expect(struct kunit *test, struct list_head *head,
			const int *want, int n)
{
	struct item *it;
	int i = 0;

	list_for_each_entry(it, head, link) {
		if (i < n)
			KUNIT_EXPECT_EQ(test, it->v, want[i]);
		i++;
	}
	KUNIT_EXPECT_EQ(test, i, n);
	i = n;
	list_for_each_entry_reverse(it, head, link)	/* back links too */
		if (--i >= 0)
			KUNIT_EXPECT_EQ(test, it->v, want[i]);
}

static void uk_test_list(struct kunit *test)
{
	static const int rot[] = { 3, 4, 0, 1, 2 }, spl[] = { 3, 4, 0, 1, 2, 9 };
	static const int del[] = { 3, 0, 1, 2, 9 };
	struct item it[6];
	LIST_HEAD(head);
	LIST_HEAD(other);
	int i;

	for (i = 0; i < 5; i++) {
		it[i].v = i;
		list_add_tail(&it[i].link, &head);
	}
	/* the ledger's rotation: [0, 2] to the tail */
	list_bulk_move_tail(&head, &it[0].link, &it[2].link);
	list_expect(test, &head, rot, 5);
	it[5].v = 9;
	list_add(&it[5].link, &other);
	list_splice_tail_init(&other, &head);
	KUNIT_EXPECT_TRUE(test, list_empty(&other));
	list_expect(test, &head, spl, 6);
	list_del(&it[4].link);
	KUNIT_EXPECT_PTR_EQ(test, it[4].link.next, LIST_POISON1);
	list_expect(test, &head, del, 5);
	/* CONFIG_DEBUG_LIST: deleting twice WARNs and changes nothing */
	UK_EXPECT_WARNS(test, 1, list_del(&it[4].link));
	list_expect(test, &head, del, 5);
}

struct rcu_reader {
	struct completion in, leave, out;
};

static int rcu_reader_fn(void *arg)
{
	struct rcu_reader *r = arg;

	rcu_read_lock();
	rcu_read_lock();		/* nested */
	rcu_read_unlock();
	complete(&r->in);
	while (!completion_done(&r->leave))	/* a reader must not sleep */
		sched_yield();
	rcu_read_unlock();
	complete(&r->out);
	return 0;
}

struct rcu_obj {
	int v;
	bool *freed;
	struct rcu_head rcu;
};

static void rcu_obj_cb(struct rcu_head *head)
{
	struct rcu_obj *o = container_of(head, struct rcu_obj, rcu);

	WRITE_ONCE(*o->freed, true);
	kfree(o);
}

struct gp_waiter {
	struct completion done;
};

static int gp_fn(void *arg)
{
	struct gp_waiter *g = arg;

	synchronize_rcu();
	complete(&g->done);
	return 0;
}

/* A grace period waits for readers that started before it; no sooner. */
static void uk_test_rcu(struct kunit *test)
{
	struct rcu_obj *o = kzalloc(sizeof(*o), GFP_KERNEL);
	struct rcu_obj *o2 = kzalloc(sizeof(*o2), GFP_KERNEL);
	struct rcu_reader r;
	struct gp_waiter g;
	bool freed = false;

	KUNIT_ASSERT_NOT_NULL(test, o);
	KUNIT_ASSERT_NOT_NULL(test, o2);
	init_completion(&r.in);
	init_completion(&r.leave);
	init_completion(&r.out);
	init_completion(&g.done);
	KUNIT_ASSERT_FALSE(test, IS_ERR(kthread_run(rcu_reader_fn, &r, "reader")));
	wait_for_completion(&r.in);
	o->freed = &freed;
	call_rcu(&o->rcu, rcu_obj_cb);
	kfree_rcu(o2, rcu);		/* ASan reports it if never freed */
	KUNIT_ASSERT_FALSE(test, IS_ERR(kthread_run(gp_fn, &g, "gp")));
	msleep(50);
	KUNIT_EXPECT_FALSE(test, completion_done(&g.done));
	KUNIT_EXPECT_FALSE(test, READ_ONCE(freed));
	complete(&r.leave);
	KUNIT_EXPECT_NE(test, wait_for_completion_timeout(&g.done, 5 * HZ), 0UL);
	rcu_barrier();
	KUNIT_EXPECT_TRUE(test, READ_ONCE(freed));
	wait_for_completion(&r.out);
	/* Sleeping inside a read-side section WARNs. */
	rcu_read_lock();
	KUNIT_EXPECT_TRUE(test, rcu_read_lock_held());
	UK_EXPECT_WARNS(test, 1, msleep(1));
	rcu_read_unlock();
	KUNIT_EXPECT_FALSE(test, rcu_read_lock_held());
	UK_EXPECT_WARNS(test, 1, rcu_read_unlock());
}

/* ---- nla_parse(): the kernel's strict validation (compat/nlattr.c) ---- */

enum { T_U32 = 1, T_STR, T_SMALL, T_FLAG, T_MAX = T_FLAG };

/* (one entry past T_MAX: a parse that ignored maxtype reads no further) */
static const struct nla_policy t_policy[T_MAX + 2] = {
	[T_U32] = { .type = NLA_U32 },
	[T_STR] = { .type = NLA_NUL_STRING, .len = 7 },
	[T_SMALL] = NLA_POLICY_MAX(NLA_U8, 3),
	[T_FLAG] = { .type = NLA_FLAG },
	[T_MAX + 1] = { .type = NLA_U32 },
};

/* Append attribute @type with @len bytes of @data to @buf at @off. */
static int t_put(unsigned char *buf, int off, u16 type, const void *data,
		 int len)
{
	struct nlattr a = { .nla_len = NLA_HDRLEN + len, .nla_type = type };

	memset(buf + off, 0, NLA_ALIGN(NLA_HDRLEN + len));
	memcpy(buf + off, &a, sizeof(a));
	if (len)
		memcpy(buf + off + NLA_HDRLEN, data, len);
	return off + NLA_ALIGN(NLA_HDRLEN + len);
}

static int t_parse(unsigned char *buf, int len, struct nlattr **tb,
		   const char **msg)
{
	struct netlink_ext_ack ext = { 0 };
	int err = nla_parse(tb, T_MAX, (struct nlattr *)buf, len, t_policy,
			    &ext);

	*msg = ext._msg ? ext._msg : "";
	return err;
}

static void uk_test_nla(struct kunit *test)
{
	unsigned char buf[256] __aligned(4);
	struct nlattr *tb[T_MAX + 2];
	u32 v = 7, bad16 = 0;
	u8 small = 3, big = 4;
	const char *msg;
	int n;

	/* a request that follows the policy */
	n = t_put(buf, 0, T_U32, &v, sizeof(v));
	n = t_put(buf, n, T_STR, "abc", 4);
	n = t_put(buf, n, T_SMALL, &small, 1);
	n = t_put(buf, n, T_FLAG, NULL, 0);
	KUNIT_EXPECT_EQ(test, t_parse(buf, n, tb, &msg), 0);
	KUNIT_ASSERT_NOT_NULL(test, tb[T_U32]);
	KUNIT_EXPECT_EQ(test, nla_get_u32(tb[T_U32]), 7U);
	KUNIT_EXPECT_STREQ(test, (char *)nla_data(tb[T_STR]), "abc");
	KUNIT_EXPECT_TRUE(test, nla_get_flag(tb[T_FLAG]));
	/* strict: a type above the policy's, or 0, is refused */
	n = t_put(buf, 0, T_MAX + 1, &v, sizeof(v));
	KUNIT_EXPECT_EQ(test, t_parse(buf, n, tb, &msg), -EINVAL);
	KUNIT_EXPECT_STREQ(test, msg, "Unknown attribute type");
	n = t_put(buf, 0, 0, &v, sizeof(v));
	KUNIT_EXPECT_EQ(test, t_parse(buf, n, tb, &msg), -EINVAL);
	/* a fixed-size integer of another size */
	n = t_put(buf, 0, T_U32, &bad16, 2);
	KUNIT_EXPECT_EQ(test, t_parse(buf, n, tb, &msg), -EINVAL);
	KUNIT_EXPECT_STREQ(test, msg, "invalid attribute length");
	/* a string without its NUL, or longer than the policy's len */
	n = t_put(buf, 0, T_STR, "abc", 3);
	KUNIT_EXPECT_EQ(test, t_parse(buf, n, tb, &msg), -EINVAL);
	n = t_put(buf, 0, T_STR, "abcdefgh", 9);	/* no NUL in len + 1 */
	KUNIT_EXPECT_EQ(test, t_parse(buf, n, tb, &msg), -EINVAL);
	/* NLA_POLICY_MAX */
	n = t_put(buf, 0, T_SMALL, &big, 1);
	KUNIT_EXPECT_EQ(test, t_parse(buf, n, tb, &msg), -ERANGE);
	KUNIT_EXPECT_STREQ(test, msg, "integer out of range");
	/* a flag with a payload */
	n = t_put(buf, 0, T_FLAG, &v, sizeof(v));
	KUNIT_EXPECT_EQ(test, t_parse(buf, n, tb, &msg), -ERANGE);
	/* bytes after the last attribute */
	n = t_put(buf, 0, T_U32, &v, sizeof(v));
	memset(buf + n, 0, 2);
	KUNIT_EXPECT_EQ(test, t_parse(buf, n + 2, tb, &msg), -EINVAL);
	KUNIT_EXPECT_STREQ(test, msg, "bytes leftover after parsing attributes");
}

static struct kunit_case uk_cases[] = {
	KUNIT_CASE(uk_test_rcu),
	KUNIT_CASE(uk_test_list),
	KUNIT_CASE(uk_test_lockdep),
	KUNIT_CASE(uk_test_might_sleep),
	KUNIT_CASE(uk_test_waitqueue),
	KUNIT_CASE(uk_test_no_lost_wakeup),
	KUNIT_CASE(uk_test_signal),
	KUNIT_CASE(uk_test_completion),
	KUNIT_CASE(uk_test_xarray),
	KUNIT_CASE(uk_test_workqueue),
	KUNIT_CASE(uk_test_delayed_work),
	KUNIT_CASE(uk_test_refcount),
	KUNIT_CASE(uk_test_helpers),
	KUNIT_CASE(uk_test_nla),
	{}
};

static struct kunit_suite uk_suite = {
	.name = "uk-compat",
	.test_cases = uk_cases,
};

kunit_test_suite(uk_suite);
