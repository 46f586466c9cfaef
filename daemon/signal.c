// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad's tickets: how a holder that can be asked is told that the
 * ledger opened or raised its ticket (the holder_signal hook; in the
 * module, eventfd_signal(), which never blocks).  A holder's signal is a
 * struct nxqd_tsig, the ledger's priv of the holder, of one of two kinds:
 *
 *  - a notice on its connection (protocol version 2, NXQD_REQ_NOTIFY):
 *    the hook only marks it queued (once, while queued) and wakes the
 *    loop through an eventfd of the daemon's own; the loop hands it to
 *    the client socket (the tell function given to nxqd_notice_start(),
 *    client_obj.c), which sends a small message on the holder's
 *    registering connection with MSG_DONTWAIT, coalesced per holder, and
 *    keeps it for when the socket has room.  No tenant file is written,
 *    nothing is sent under a ledger lock, nothing blocks, no thread is
 *    spent.
 *
 *  - the eventfd a registration without NXQD_REQ_NOTIFY passed (legacy:
 *    clients of the protocols before version 2; this file's thread is
 *    reached by nothing else).  The file is the tenant's too: it may
 *    clear O_NONBLOCK on it and fill its counter, and a write would then
 *    wait.  So the hook queues the holder's tsig
 *    (once, while queued) and this file's thread writes it, with
 *    O_NONBLOCK set again and POLLOUT checked first; a write that waits
 *    all the same (the tenant won the race between the check and the
 *    write) is cut short by a timer signal after NXQD_SIGNAL_US, and that
 *    file is never written again (its tickets stay readable:
 *    NXQ_IOC_TICKET_READ).  What a tenant can cost the others is then one
 *    cut-short write per holder it registered.  The thread starts with
 *    the first such registration: a daemon whose clients all speak
 *    version 2 runs none.
 *
 * The cut is short (1 ms; 5 ms before issue 32) because it costs no honest
 * tenant anything: an eventfd write sleeps only when the counter cannot
 * take the 1 (full, and O_NONBLOCK cleared -- the tenant's doing), so the
 * timer interrupts nothing else; a write that is merely slow (the thread
 * preempted on a busy host) is not sleeping and finishes.  The timer
 * repeats until it is disarmed, so that one that fired before the write
 * began (the thread preempted between arming it and writing) still cuts
 * the write: a single shot would have been spent, and the thread would
 * wait for as long as the tenant liked.
 *
 * Lifetimes: a tsig is referenced by its holder (freed after an RCU grace
 * period, nxqd_free_priv() in client_obj.c, on whatever thread runs the
 * callback) and by a queue while queued.  sig.m guards both queues and
 * every tsig's queued and refused flags; a notice's owner (what the tell
 * function is given: the holder's hent) is the loop's, set and cleared
 * there (nxqd_tsig_own()), and read only there.
 */
#include <linux/types.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nxqd.h"

/* The longest an eventfd write may wait before it is cut short. */
#define NXQD_SIGNAL_US		1000

struct nxqd_tsig {
	int fd;				/* the legacy eventfd; -1: a notice */
	int refs;			/* atomic: the holder's, a queue's */
	bool queued;			/* sig.m: on sig.queue or sig.notes */
	bool refused;			/* sig.m: never written again */
	struct list_head link;		/* sig.m */
	void *owner;			/* the loop's: whom a notice is for */
};

static struct {
	pthread_mutex_t m;
	pthread_cond_t more, drained;
	struct list_head queue;		/* eventfds for the thread */
	bool stop, running;
	pthread_t thread;
	unsigned long refused;
	u64 added, done;		/* queued, and written (or dropped) */
	/* notices: the hook queues, the loop tells */
	struct list_head notes;
	unsigned int nr_notes;
	bool notes_on;
	struct nxqd_watch wake;		/* an eventfd: notes is not empty */
	void (*tell)(void *owner);
} sig = {
	.m = PTHREAD_MUTEX_INITIALIZER,
	.more = PTHREAD_COND_INITIALIZER,
	.drained = PTHREAD_COND_INITIALIZER,
	.queue = LIST_HEAD_INIT(sig.queue),
	.notes = LIST_HEAD_INIT(sig.notes),
	.wake.fd = -1,
};

static int nxqd_signal_thread(void);

struct nxqd_tsig *nxqd_tsig_new(int fd)
{
	struct nxqd_tsig *t;

	/* the first eventfd starts the thread that writes them */
	if (fd >= 0 && nxqd_signal_thread())
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->fd = fd;
	t->refs = 1;
	INIT_LIST_HEAD(&t->link);
	return t;
}

void nxqd_tsig_put(struct nxqd_tsig *t)
{
	if (__atomic_sub_fetch(&t->refs, 1, __ATOMIC_SEQ_CST))
		return;
	if (t->fd >= 0)
		close(t->fd);
	free(t);
}

void nxqd_tsig_own(struct nxqd_tsig *t, void *owner)
{
	t->owner = owner;
}

/* Wake the loop for the notices: the daemon's own eventfd, which cannot wait. */
static void nxqd_notes_wake(void)
{
	u64 one = 1;

	if (write(sig.wake.fd, &one, sizeof(one)) < 0 && nxqd_verbose)
		fprintf(stderr, "nxquotad: notice wake-up: %s\n",
			strerror(errno));
}

void nxqd_tsig_signal(struct nxqd_tsig *t)
{
	bool wake = false;

	pthread_mutex_lock(&sig.m);
	if (t->fd < 0) {
		/* a notice: the loop tells its owner (once while queued) */
		if (!t->queued && sig.notes_on) {
			t->queued = true;
			__atomic_add_fetch(&t->refs, 1, __ATOMIC_SEQ_CST);
			wake = list_empty(&sig.notes);
			list_add_tail(&t->link, &sig.notes);
			sig.nr_notes++;
		}
	} else if (!t->queued && !t->refused && !sig.stop) {
		t->queued = true;
		__atomic_add_fetch(&t->refs, 1, __ATOMIC_SEQ_CST);
		list_add_tail(&t->link, &sig.queue);
		sig.added++;
		pthread_cond_signal(&sig.more);
	}
	pthread_mutex_unlock(&sig.m);
	if (wake)
		nxqd_notes_wake();
}

/*
 * On the loop: tell the owner of each notice queued so far.  The wake-up
 * is read before the queue: one that comes after it is seen next turn.
 * Each is taken off the queue (and may be queued again) before it is
 * told; those queued meanwhile (from another thread: the queue was not
 * empty, so nobody woke the loop for them) wait for the next turn, for
 * which the loop is woken again.
 */
static void nxqd_notes_run(void)
{
	struct nxqd_tsig *t;
	unsigned int n;
	bool more;
	u64 cnt;

	if (read(sig.wake.fd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN &&
	    nxqd_verbose)
		fprintf(stderr, "nxquotad: notice wake-up: %s\n",
			strerror(errno));
	pthread_mutex_lock(&sig.m);
	for (n = sig.nr_notes; n && !list_empty(&sig.notes); n--) {
		t = list_first_entry(&sig.notes, struct nxqd_tsig, link);
		list_del_init(&t->link);
		t->queued = false;
		sig.nr_notes--;
		pthread_mutex_unlock(&sig.m);
		if (t->owner)	/* NULL: its holder ended meanwhile */
			sig.tell(t->owner);
		nxqd_tsig_put(t);
		pthread_mutex_lock(&sig.m);
	}
	more = !list_empty(&sig.notes);
	pthread_mutex_unlock(&sig.m);
	if (more)
		nxqd_notes_wake();
}

static void nxqd_notes_event(struct nxqd_watch *w, u32 revents)
{
	nxqd_notes_run();
}

int nxqd_notice_start(void (*tell)(void *owner))
{
	int err;

	sig.wake.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (sig.wake.fd < 0)
		return -errno;
	sig.wake.events = EPOLLIN;
	sig.wake.fn = nxqd_notes_event;
	err = nxqd_watch_add(&sig.wake);
	if (err) {
		close(sig.wake.fd);
		sig.wake.fd = -1;
		return err;
	}
	sig.tell = tell;
	pthread_mutex_lock(&sig.m);
	sig.notes_on = true;
	pthread_mutex_unlock(&sig.m);
	return 0;
}

void nxqd_notice_stop(void)
{
	struct nxqd_tsig *t, *tmp;
	LIST_HEAD(left);

	if (sig.wake.fd < 0)
		return;
	pthread_mutex_lock(&sig.m);
	sig.notes_on = false;
	list_splice_init(&sig.notes, &left);
	list_for_each_entry(t, &left, link)
		t->queued = false;
	sig.nr_notes = 0;
	pthread_mutex_unlock(&sig.m);
	list_for_each_entry_safe(t, tmp, &left, link) {
		list_del_init(&t->link);
		nxqd_tsig_put(t);
	}
	nxqd_watch_del(&sig.wake);
	close(sig.wake.fd);
	sig.wake.fd = -1;
}

/*
 * Tell every notice queued so far (on the loop), then wait until every
 * eventfd queued so far is written: an answer that follows (a budget
 * change's ack) comes after the tickets it caused, as the module's
 * eventfd_signal() does before its write returns.  A notice is then sent,
 * or kept for when its connection has room (its tenant is not reading).
 * Each write is cut short after NXQD_SIGNAL_US, so this waits at most
 * that long for each queued holder; a holder's eventfd is queued once at
 * a time.
 */
void nxqd_signal_flush(void)
{
	u64 want;

	if (sig.wake.fd >= 0)
		nxqd_notes_run();
	pthread_mutex_lock(&sig.m);
	want = sig.added;
	while (sig.running && sig.done < want)
		pthread_cond_wait(&sig.drained, &sig.m);
	pthread_mutex_unlock(&sig.m);
}

unsigned long nxqd_signal_refused(void)
{
	unsigned long n;

	pthread_mutex_lock(&sig.m);
	n = sig.refused;
	pthread_mutex_unlock(&sig.m);
	return n;
}

static void nxqd_signal_alarm(int signo)
{
	/* only to end a write with EINTR */
}

/* Add 1; false if the write had to be cut short. */
static bool nxqd_efd_write(struct nxqd_tsig *e, timer_t timer)
{
	struct itimerspec arm = {
		.it_value.tv_nsec = NXQD_SIGNAL_US * NSEC_PER_USEC,
		.it_interval.tv_nsec = NXQD_SIGNAL_US * NSEC_PER_USEC,
	}, off = { 0 };
	struct pollfd pf = { .fd = e->fd, .events = POLLOUT };
	u64 one = 1;
	ssize_t n;
	int fl;

	fl = fcntl(e->fd, F_GETFL);
	if (fl < 0)
		return true;
	if (!(fl & O_NONBLOCK))
		fcntl(e->fd, F_SETFL, fl | O_NONBLOCK);
	/* a full counter: a signal is pending there already */
	if (poll(&pf, 1, 0) != 1 || !(pf.revents & POLLOUT))
		return true;
	timer_settime(timer, 0, &arm, NULL);
	n = write(e->fd, &one, sizeof(one));
	timer_settime(timer, 0, &off, NULL);
	if (n < 0 && errno == EINTR)
		return false;
	if (n < 0 && errno != EAGAIN && nxqd_verbose)
		fprintf(stderr, "nxquotad: eventfd write: %s\n",
			strerror(errno));
	return true;
}

static void *nxqd_signal_main(void *unused)
{
	struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID,
				.sigev_signo = SIGRTMIN };
	struct sigaction sa = { .sa_handler = nxqd_signal_alarm };
	struct nxqd_tsig *e;
	sigset_t set;
	timer_t timer;
	bool ok, skip;

	/* SIGRTMIN, not restarted, for this thread only */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGRTMIN, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer))
		abort();
	pthread_mutex_lock(&sig.m);
	for (;;) {
		while (list_empty(&sig.queue) && !sig.stop)
			pthread_cond_wait(&sig.more, &sig.m);
		if (list_empty(&sig.queue))
			break;
		e = list_first_entry(&sig.queue, struct nxqd_tsig, link);
		list_del_init(&e->link);
		/*
		 * Unqueued before the write, not after: a ticket opened while
		 * it is written (the tenant already woken, drained and gone
		 * back to sleep) queues it again.  Marked after the write, that
		 * signal was skipped and the ticket never read (bench/serve's
		 * lost RECALL ticket).
		 */
		e->queued = false;
		skip = e->refused;	/* queued again before its cut */
		pthread_mutex_unlock(&sig.m);
		ok = skip || nxqd_efd_write(e, timer);
		pthread_mutex_lock(&sig.m);
		sig.done++;
		pthread_cond_broadcast(&sig.drained);
		if (!ok) {
			e->refused = true;
			sig.refused++;
			if (nxqd_verbose)
				fprintf(stderr,
					"nxquotad: an eventfd write waited: that file is not written again\n");
		}
		pthread_mutex_unlock(&sig.m);
		nxqd_tsig_put(e);
		pthread_mutex_lock(&sig.m);
	}
	pthread_mutex_unlock(&sig.m);
	timer_delete(timer);
	return NULL;
}

/*
 * Block SIGRTMIN, the cut's signal, in every thread made from now on:
 * only the writer unblocks it.  The writer itself starts with the first
 * eventfd (nxqd_signal_thread()).
 */
int nxqd_signal_start(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN);
	return -pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* The eventfd writer, started once (on the loop).  0 or -errno. */
static int nxqd_signal_thread(void)
{
	int err = 0;

	pthread_mutex_lock(&sig.m);
	if (!sig.running && !sig.stop) {
		err = -pthread_create(&sig.thread, NULL, nxqd_signal_main,
				      NULL);
		sig.running = !err;
	}
	pthread_mutex_unlock(&sig.m);
	return err;
}

void nxqd_signal_stop(void)
{
	struct nxqd_tsig *e, *tmp;
	LIST_HEAD(left);

	pthread_mutex_lock(&sig.m);
	sig.stop = true;
	if (!sig.running) {
		pthread_mutex_unlock(&sig.m);
		return;
	}
	/* what is still queued is not written */
	list_splice_init(&sig.queue, &left);
	list_for_each_entry(e, &left, link) {
		e->queued = false;
		sig.done++;
	}
	pthread_cond_broadcast(&sig.drained);
	pthread_cond_signal(&sig.more);
	pthread_mutex_unlock(&sig.m);
	pthread_join(sig.thread, NULL);
	pthread_mutex_lock(&sig.m);
	sig.running = false;
	pthread_mutex_unlock(&sig.m);
	list_for_each_entry_safe(e, tmp, &left, link) {
		list_del_init(&e->link);
		nxqd_tsig_put(e);
	}
}
