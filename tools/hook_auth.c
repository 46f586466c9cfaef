// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota-hook's authority, with a deadline (hook_auth.h).  A stopped
 * nxquotad (SIGSTOP, a debugger, a hung host) answers nothing: before
 * this, the hook waited for it forever, holding its state directory's
 * lock, and every container start on the node hung behind it.  Now:
 *  - each phase of a run (setting, undoing) has a deadline, the
 *    timeout from now (NXQUOTA_HOOK_TIMEOUT or --timeout, 5 s);
 *  - on nxquotad's socket every request's send and receive time out at
 *    the deadline (SO_SNDTIMEO, SO_RCVTIMEO); a request not answered by
 *    then is -ETIMEDOUT, and the connection is not used again (a late
 *    answer would be taken for the next request's): an undo connects
 *    anew;
 *  - what a socket timeout cannot bound -- connect() to a daemon whose
 *    backlog is full, the module's requests (answered in the sending
 *    call, and libnl retries a timed-out receive) -- is bounded by a
 *    watchdog: SIGALRM, HOOK_WATCHDOG_GRACE_MS past the deadline, writes
 *    the line the run last prepared (what is set and how to put it back)
 *    and exits 1.
 * The handler only write()s and send()s what was formatted before, into
 * one of two buffers, switched with one store.  ctl.c reports on stderr;
 * those lines are caught in a memfd and handed back as one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <syslog.h>

#include <netlink/netlink.h>
#include <netlink/attr.h>

#include <linux/nxquota.h>

#include "fmt.h"
#include "hook_auth.h"
#include "hook_int.h"

/* ---- the watchdog --------------------------------------------------------- */

#define WD_LINE		(HOOK_ERR_LEN + 256)

/* The last word, twice: for stderr ("prog: container ID: ...\n") and for
 * /dev/log ("<27>prog[PID]: container ID: ..."). */
struct wd_line {
	char err[WD_LINE], log[WD_LINE];
};

static struct {
	struct wd_line l[2];
	volatile sig_atomic_t cur;
	int err_fd;		/* stderr as it was (ctl_connect() is quiet) */
	int log_fd;		/* /dev/log, connected, or -1 */
	char prefix[HOOK_ID_MAX + 64];
} wd = { .err_fd = STDERR_FILENO, .log_fd = -1 };

static void wd_fire(int sig)
{
	const struct wd_line *l = &wd.l[wd.cur];

	(void)sig;
	if (write(wd.err_fd, l->err, strlen(l->err)) < 0)
		sig = 0;
	/* syslog(3) is no signal handler's: send the prepared datagram */
	if (wd.log_fd >= 0)
		send(wd.log_fd, l->log, strlen(l->log), MSG_DONTWAIT |
		     MSG_NOSIGNAL);
	_exit(EX_FAIL);
}

void hook_watchdog_init(const char *prefix)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX,
				  .sun_path = "/dev/log" };
	struct sigaction act = { .sa_handler = wd_fire };

	snprintf(wd.prefix, sizeof(wd.prefix), "%s", prefix);
	wd.err_fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	if (wd.err_fd < 0)
		wd.err_fd = STDERR_FILENO;
	wd.log_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (wd.log_fd >= 0 && connect(wd.log_fd, (struct sockaddr *)&sa,
				      sizeof(sa))) {
		close(wd.log_fd);
		wd.log_fd = -1;
	}
	sigemptyset(&act.sa_mask);
	sigaction(SIGALRM, &act, NULL);
	hook_watchdog_line("the authority did not answer in time");
}

void hook_watchdog_line(const char *fmt, ...)
{
	int next = !wd.cur;
	struct wd_line *l = &wd.l[next];
	char msg[WD_LINE];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (snprintf(l->err, WD_LINE, "%s: %s%s\n", prog, wd.prefix, msg) >=
	    WD_LINE)
		strcpy(l->err + WD_LINE - 5, "...\n");
	if (snprintf(l->log, WD_LINE, "<%d>%s[%d]: %s%s", LOG_DAEMON | LOG_ERR,
		     prog, (int)getpid(), wd.prefix, msg) >= WD_LINE)
		strcpy(l->log + WD_LINE - 4, "...");
	wd.cur = next;
}

void hook_watchdog_arm(const struct timespec *deadline)
{
	struct itimerval it = { { 0, 0 }, { 0, 0 } };
	struct timespec now;
	long long us;

	clock_gettime(CLOCK_MONOTONIC, &now);
	us = (deadline->tv_sec - now.tv_sec) * 1000000LL +
	     (deadline->tv_nsec - now.tv_nsec) / 1000 +
	     HOOK_WATCHDOG_GRACE_MS * 1000LL;
	if (us < 1000)
		us = 1000;
	it.it_value.tv_sec = us / 1000000;
	it.it_value.tv_usec = us % 1000000;
	setitimer(ITIMER_REAL, &it, NULL);
}

void hook_watchdog_off(void)
{
	struct itimerval it = { { 0, 0 }, { 0, 0 } };

	setitimer(ITIMER_REAL, &it, NULL);
}

/* ---- stderr, quietly ----------------------------------------------------- */

struct quiet {
	int saved, fd;
};

static void quiet_begin(struct quiet *q)
{
	fflush(stderr);
	q->saved = -1;
	q->fd = memfd_create("nxquota-hook", MFD_CLOEXEC);
	if (q->fd >= 0)
		q->saved = dup(STDERR_FILENO);
	if (q->saved >= 0 && dup2(q->fd, STDERR_FILENO) < 0) {
		close(q->saved);
		q->saved = -1;
	}
}

static void quiet_end(struct quiet *q, char *buf, size_t size)
{
	char raw[HOOK_ERR_LEN], *l, *save;
	size_t pre = strlen(prog) + 2, n = 0;
	ssize_t r = 0;

	buf[0] = '\0';
	fflush(stderr);
	if (q->saved >= 0) {
		dup2(q->saved, STDERR_FILENO);
		close(q->saved);
		r = pread(q->fd, raw, sizeof(raw) - 1, 0);
	}
	if (q->fd >= 0)
		close(q->fd);
	raw[r > 0 ? r : 0] = '\0';
	for (l = strtok_r(raw, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(l, prog, pre - 2) && !strncmp(l + pre - 2, ": ", 2))
			l += pre;
		n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "%s%s",
				      n ? "; " : "", l);
		if (n >= size)
			break;
	}
}

/* ---- the deadline ---------------------------------------------------------- */

void hook_auth_init(struct hook_auth *a, const char *control,
		    unsigned int timeout_ms)
{
	memset(a, 0, sizeof(*a));
	a->n.ufd = -1;
	a->control = control;
	a->timeout_ms = timeout_ms;
	snprintf(a->who, sizeof(a->who), "the authority");
}

void hook_auth_phase(struct hook_auth *a)
{
	clock_gettime(CLOCK_MONOTONIC, &a->deadline);
	a->deadline.tv_sec += a->timeout_ms / 1000;
	a->deadline.tv_nsec += (long)(a->timeout_ms % 1000) * 1000000L;
	if (a->deadline.tv_nsec >= 1000000000L) {
		a->deadline.tv_sec++;
		a->deadline.tv_nsec -= 1000000000L;
	}
	hook_watchdog_arm(&a->deadline);
}

long hook_auth_left_ms(const struct hook_auth *a)
{
	struct timespec now;
	long long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (a->deadline.tv_sec - now.tv_sec) * 1000LL +
	     (a->deadline.tv_nsec - now.tv_nsec) / 1000000;
	return ms > 0 ? (long)ms : 0;
}

/* "5s", "0.5s": the timeout as the operator wrote it. */
static const char *secs(const struct hook_auth *a)
{
	static char buf[32];

	if (a->timeout_ms % 1000)
		snprintf(buf, sizeof(buf), "%u.%03us", a->timeout_ms / 1000,
			 a->timeout_ms % 1000);
	else
		snprintf(buf, sizeof(buf), "%us", a->timeout_ms / 1000);
	return buf;
}

/* "no answer within 5s from nxquotad at PATH (stopped or hung?)" */
static void no_answer(const struct hook_auth *a, char *buf, size_t size)
{
	if (snprintf(buf, size, "no answer within %s from %s (stopped or hung? "
		     "NXQUOTA_HOOK_TIMEOUT sets the wait)", secs(a), a->who) >=
	    (int)size && size > 4)
		strcpy(buf + size - 4, "...");
}

/* The socket's sends and receives end at the deadline; false if it is
 * past.  The module answers in the sending call: only the watchdog
 * bounds it. */
static bool sock_deadline(struct hook_auth *a)
{
	long ms = hook_auth_left_ms(a);
	struct timeval tv = { .tv_sec = ms / 1000,
			      .tv_usec = (ms % 1000) * 1000 };

	if (ms <= 0)
		return false;
	if (a->n.ufd >= 0) {
		setsockopt(a->n.ufd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(a->n.ufd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	return true;
}

/* ---- requests --------------------------------------------------------------- */

int hook_auth_connect(struct hook_auth *a, char *err)
{
	const char *env = getenv("NXQUOTA_CONTROL");
	char msg[HOOK_ERR_LEN];
	struct quiet q;
	int rc;

	hook_auth_close(a);
	hook_auth_phase(a);
	if (a->control)
		snprintf(a->who, sizeof(a->who), "nxquotad at %s", a->control);
	hook_auth_note(a, a->left);
	a->n.ufd = -1;
	a->n.control = a->control;
	quiet_begin(&q);
	rc = ctl_connect(&a->n);
	quiet_end(&q, msg, sizeof(msg));
	if (rc) {
		hook_auth_close(a);
		return hook_fail(err, -ENOTCONN, "%s",
				 msg[0] ? msg : "no nxquota authority");
	}
	a->up = true;
	a->dead = false;
	if (a->n.ufd < 0)
		a->path[0] = '\0';
	else
		snprintf(a->path, sizeof(a->path), "%s", a->control ? a->control :
			 env && env[0] ? env : NXQD_CONTROL_PATH);
	if (a->path[0])
		snprintf(a->who, sizeof(a->who), "nxquotad at %s", a->path);
	else
		snprintf(a->who, sizeof(a->who), "the nxquota module");
	hook_auth_note(a, a->left);
	return 0;
}

/* Connected, with time left: 0, or -ETIMEDOUT / the connection's errno. */
static int ready(struct hook_auth *a, char *why, size_t size)
{
	char err[HOOK_ERR_LEN];
	int rc;

	if (!a->up || a->dead) {
		struct timespec keep = a->deadline;

		rc = hook_auth_connect(a, err);
		a->deadline = keep;		/* the phase's, not a new one */
		hook_watchdog_arm(&a->deadline);
		if (rc) {
			snprintf(why, size, "%s", err);
			return rc;
		}
	}
	if (!sock_deadline(a)) {
		no_answer(a, why, size);
		a->dead = true;
		return -ETIMEDOUT;
	}
	return 0;
}

int hook_auth_ledger(struct hook_auth *a, struct ledger *l, char *err)
{
	char msg[HOOK_ERR_LEN];
	struct quiet q;
	int rc;

	rc = ready(a, msg, sizeof(msg));
	if (rc)
		return hook_fail(err, rc, "reading the authority's devices and "
				 "budgets: %s", msg);
	quiet_begin(&q);
	rc = read_ledger(&a->n, NULL, l);
	quiet_end(&q, msg, sizeof(msg));
	if (rc && hook_auth_left_ms(a) <= 1) {
		a->dead = true;
		no_answer(a, msg, sizeof(msg));
		return hook_fail(err, -ETIMEDOUT, "reading the authority's devices "
				 "and budgets: %s; nothing was changed", msg);
	}
	if (rc)
		return hook_fail(err, -EIO, "reading the authority's devices and "
				 "budgets: %s", msg[0] ? msg : "failed");
	return 0;
}

int hook_auth_budget(void *arg, bool clear, const char *path, const char *key,
		     bool has_max, uint64_t max, bool has_min, uint64_t min,
		     char *why, size_t size)
{
	struct hook_auth *a = arg;
	struct nl_msg *msg;
	struct reply r;
	int rc;

	rc = ready(a, why, size);
	if (rc)
		return rc;
	msg = ctl_new(&a->n, clear ? NXQUOTA_CMD_BUDGET_CLEAR :
		      NXQUOTA_CMD_BUDGET_SET, 0);
	memset(&r, 0, sizeof(r));
	nla_put_string(msg, NXQUOTA_A_BUDGET_CGROUP_PATH, path);
	nla_put_string(msg, NXQUOTA_A_BUDGET_DEVICE, key);
	if (has_max && !clear)
		nla_put_u64(msg, NXQUOTA_A_BUDGET_MAX, max);
	if (has_min && !clear)
		nla_put_u64(msg, NXQUOTA_A_BUDGET_MIN, min);
	rc = ctl_request(&a->n, msg, &r);
	if (rc && hook_auth_left_ms(a) <= 1) {
		a->dead = true;
		no_answer(a, why, size);
		return -ETIMEDOUT;
	}
	if (rc)	/* "EDQUOT (Disk quota exceeded): the authority's message" */
		snprintf(why, size, "%s (%s)%s%s", nxq_errno_name(-rc),
			 strerror(-rc), r.msg[0] ? ": " : "", r.msg);
	return rc;
}

void hook_auth_undo_begin(void *arg)
{
	struct hook_auth *a = arg;

	hook_auth_phase(a);
}

void hook_auth_note(void *arg, const char *left)
{
	struct hook_auth *a = arg;

	if (left != a->left)
		snprintf(a->left, sizeof(a->left), "%s", left ? left : "");
	if (left && left[0])
		hook_watchdog_line("%s did not answer within %s; LEFT: %s",
				   a->who, secs(a), left);
	else
		hook_watchdog_line("%s did not answer within %s; nothing was "
				   "changed", a->who, secs(a));
}

void hook_auth_close(struct hook_auth *a)
{
	if (a->n.sk || a->n.ufd >= 0)
		ctl_close(&a->n);
	a->up = false;
}
