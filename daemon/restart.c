// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad's restart: the client list and the grace window.
 *
 * The daemon keeps, in its state directory, the list of the processes
 * that have holders ("clients": one "PID START HOLDERS" line each, START
 * the process's start time from /proc/PID/stat, HOLDERS how many it has),
 * rewritten (tmp, fsync, rename) whenever a registration or a holder's end
 * changes it.  A daemon that starts and finds such a list keeps the
 * processes still alive (same pid, same start time) and opens a grace
 * window of grace_ms.  Until it ends, charges get -EAGAIN (no wait) or
 * wait for its end, but for the restores of listed processes (the first
 * charge on each holder they register), so that the listed clients
 * re-charge what they held first and what fit before fits again.  The
 * window closes early once every listed process still alive is restored:
 * it registered HOLDERS holders again and a charge of it completed after
 * the last of them -- or NXQD_RESTORE_SETTLE_MS passed after it, for a
 * last holder that had nothing to charge.  (libnxquota restores holder by
 * holder: register, then charge what it held.)
 */
#include <linux/types.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nxqd.h"

/* The most processes the list keeps. */
#define NXQD_LIST_MAX	65536

static pthread_mutex_t nxqd_rs_lock = PTHREAD_MUTEX_INITIALIZER;
static char nxqd_rs_file[PATH_MAX];
static struct nxqd_rs_ent {
	pid_t pid;
	u64 start;
	unsigned int holders;		/* it had */
	unsigned int seen;		/* registered again */
	u64 last_ns;			/* when the last of them came */
	bool restored;
} *nxqd_rs_list;			/* nxqd_rs_lock */
static size_t nxqd_rs_n;		/* nxqd_rs_lock */
static u64 nxqd_rs_end_ns;		/* nxqd_rs_lock: 0 no window */

static u64 nxqd_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static bool nxqd_rs_alive(const struct nxqd_rs_ent *e)
{
	return !kill(e->pid, 0) || errno == EPERM ?
	       nxqd_proc_start_time(e->pid) == e->start : false;
}

/* Is the window open?  Closes it when over or all restored.  Locked. */
static bool nxqd_rs_open_locked(void)
{
	size_t i;

	if (!nxqd_rs_end_ns)
		return false;
	if (nxqd_mono_ns() < nxqd_rs_end_ns) {
		for (i = 0; i < nxqd_rs_n; i++) {
			struct nxqd_rs_ent *e = &nxqd_rs_list[i];

			if (!e->restored && e->seen >= e->holders &&
			    nxqd_mono_ns() - e->last_ns >=
			    NXQD_RESTORE_SETTLE_MS * NSEC_PER_MSEC)
				e->restored = true;
			if (!e->restored && nxqd_rs_alive(e))
				return true;
		}
	}
	nxqd_rs_end_ns = 0;
	if (nxqd_verbose)
		fprintf(stderr, "nxquotad: grace window closed\n");
	return false;
}

int nxqd_restart_init(const char *dir, unsigned int grace_ms)
{
	unsigned long long start;
	struct nxqd_rs_ent *m;
	size_t cap = 0, alive = 0;
	unsigned int holders;
	char line[128];
	FILE *f;
	int pid;

	if (snprintf(nxqd_rs_file, sizeof(nxqd_rs_file), "%s/clients", dir) >=
	    (int)sizeof(nxqd_rs_file))
		return -ENAMETOOLONG;
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	f = fopen(nxqd_rs_file, "re");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (fgets(line, sizeof(line), f) && nxqd_rs_n < NXQD_LIST_MAX) {
		holders = 1;
		if (sscanf(line, "%d %llu %u", &pid, &start, &holders) < 2 ||
		    pid <= 0 || !holders)
			continue;
		if (nxqd_rs_n == cap) {
			cap = cap ? 2 * cap : 64;
			m = realloc(nxqd_rs_list, cap * sizeof(*m));
			if (!m)
				break;
			nxqd_rs_list = m;
		}
		m = &nxqd_rs_list[nxqd_rs_n];
		memset(m, 0, sizeof(*m));
		m->pid = pid;
		m->start = start;
		m->holders = holders;
		if (nxqd_rs_alive(m)) {
			nxqd_rs_n++;
			alive++;
		}
	}
	fclose(f);
	if (alive && grace_ms)
		nxqd_rs_end_ns = nxqd_mono_ns() + grace_ms * NSEC_PER_MSEC;
	if (nxqd_verbose)
		fprintf(stderr,
			"nxquotad: %zu listed client(s) alive, grace %u ms\n",
			alive, nxqd_rs_end_ns ? grace_ms : 0);
	return 0;
}

void nxqd_restart_exit(void)
{
	pthread_mutex_lock(&nxqd_rs_lock);
	/* the list stays as it is: the clients of a stopped daemon */
	nxqd_rs_file[0] = '\0';
	free(nxqd_rs_list);
	nxqd_rs_list = NULL;
	nxqd_rs_n = 0;
	nxqd_rs_end_ns = 0;
	pthread_mutex_unlock(&nxqd_rs_lock);
}


void nxqd_restart_save(void)
{
	struct nxqd_client_id *ids = NULL;
	size_t n, got, i;
	char tmp[PATH_MAX + 8];
	FILE *f;
	int fd;

	/* the set may grow between the count and the copy: retry */
	n = nxqd_client_list(NULL, 0);
	for (;;) {
		struct nxqd_client_id *m = realloc(ids, (n + 1) * sizeof(*ids));

		if (!m) {
			free(ids);
			return;
		}
		ids = m;
		got = nxqd_client_list(ids, n + 1);
		if (got <= n + 1)
			break;
		n = got;
	}
	pthread_mutex_lock(&nxqd_rs_lock);
	if (!nxqd_rs_file[0])
		goto out;
	snprintf(tmp, sizeof(tmp), "%s.tmp", nxqd_rs_file);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		goto out;
	}
	for (i = 0; i < got; i++)
		fprintf(f, "%d %llu %u\n", ids[i].pid,
			(unsigned long long)ids[i].start, ids[i].holders);
	/* listed clients not back yet stay listed while the window is open */
	if (nxqd_rs_open_locked()) {
		for (i = 0; i < nxqd_rs_n; i++) {
			struct nxqd_rs_ent *e = &nxqd_rs_list[i];
			size_t k;
			bool dup = false;

			for (k = 0; k < got; k++)
				dup |= ids[k].pid == e->pid &&
				       ids[k].start == e->start;
			if (!dup && !e->restored)
				fprintf(f, "%d %llu %u\n", e->pid,
					(unsigned long long)e->start,
					e->holders);
		}
	}
	if (fflush(f) || fsync(fileno(f))) {
		fclose(f);
		unlink(tmp);
		goto out;
	}
	fclose(f);
	if (rename(tmp, nxqd_rs_file))
		unlink(tmp);
out:
	pthread_mutex_unlock(&nxqd_rs_lock);
	free(ids);
}

static struct nxqd_rs_ent *nxqd_rs_find(pid_t tgid, u64 start)
{
	size_t i;

	for (i = 0; i < nxqd_rs_n; i++)
		if (nxqd_rs_list[i].pid == tgid &&
		    nxqd_rs_list[i].start == start)
			return &nxqd_rs_list[i];
	return NULL;
}

void nxqd_restart_registered(pid_t tgid, u64 start)
{
	struct nxqd_rs_ent *e;

	pthread_mutex_lock(&nxqd_rs_lock);
	e = nxqd_rs_end_ns ? nxqd_rs_find(tgid, start) : NULL;
	if (e) {
		e->seen++;
		e->last_ns = nxqd_mono_ns();
	}
	pthread_mutex_unlock(&nxqd_rs_lock);
}

void nxqd_restart_charged(pid_t tgid, u64 start)
{
	struct nxqd_rs_ent *e;

	pthread_mutex_lock(&nxqd_rs_lock);
	e = nxqd_rs_end_ns ? nxqd_rs_find(tgid, start) : NULL;
	if (e && e->seen >= e->holders && !e->restored) {
		e->restored = true;
		nxqd_rs_open_locked();
	}
	pthread_mutex_unlock(&nxqd_rs_lock);
}

int nxqd_restart_gate(pid_t tgid, u64 start, bool first, u64 *timeout_ns)
{
	u64 t0 = nxqd_mono_ns(), now;
	bool waited = false;
	int err = 0;

	pthread_mutex_lock(&nxqd_rs_lock);
	/*
	 * A listed process's restore passes; its new charges wait with the
	 * others', so that every listed process restores before any grows.
	 */
	while (nxqd_rs_open_locked() && !(first && nxqd_rs_find(tgid, start))) {
		if (!*timeout_ns) {
			err = -EAGAIN;
			break;
		}
		now = nxqd_mono_ns();
		if (now - t0 >= *timeout_ns) {
			err = -ETIMEDOUT;
			break;
		}
		if (signal_pending(current)) {
			err = -EINTR;
			break;
		}
		/* a short sleep: the window ends by time or by registrations */
		pthread_mutex_unlock(&nxqd_rs_lock);
		usleep(10000);
		waited = true;
		pthread_mutex_lock(&nxqd_rs_lock);
	}
	pthread_mutex_unlock(&nxqd_rs_lock);
	/*
	 * Only a wait here shortens the charge's timeout: the ledger treats
	 * a charge that will not wait a whole ticket_timeout_ms differently
	 * (charge.c's "impatient"), so an unchanged one must reach it whole.
	 */
	if (!err && waited) {
		now = nxqd_mono_ns() - t0;
		*timeout_ns = now >= *timeout_ns ? 0 : *timeout_ns - now;
	}
	return err;
}
