// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota-hook's files: the directory of records, the records, and the
 * locks (hook_state.h).  Before issue 32 the hook took the directory's
 * lock first and kept it while it waited on the authority: a stopped
 * nxquotad held every container start on the node behind one lock.  Now
 * no lock is held across a wait on the authority but a pod's own, and
 * every lock is waited for at most the run's timeout.
 *
 * A pod's lock is a file in the directory, named by a 64-bit FNV-1a hash
 * of the pod's cgroup path (siblings of one pod agree on it; a collision
 * only makes two pods wait for each other).  It is removed on release;
 * a hook that locked a file already removed (or replaced) finds its inode
 * no longer at the name and starts again.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "hook.h"
#include "hook_int.h"
#include "hook_state.h"

#define RECORD_MAX	(1 << 20)
#define LOCK_POLL_MS	10

/* The next size of a read buffer: doubled, from 4 KiB, at most limit. */
static size_t grow(size_t cap, size_t limit)
{
	cap = cap < 2048 ? 4096 : cap * 2;
	return cap > limit ? limit : cap;
}

int hook_read_all(int fd, size_t max, char **buf, size_t *len)
{
	size_t cap = 0, n = 0;
	char *b = NULL, *nb;
	ssize_t r;

	for (;;) {
		if (n == cap) {
			if (cap == max + 1) {	/* one byte past max: too large */
				free(b);
				return -EFBIG;
			}
			cap = grow(cap, max + 1);
			nb = realloc(b, cap + 1);
			if (!nb) {
				free(b);
				return -ENOMEM;
			}
			b = nb;
		}
		r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			r = -errno;
			free(b);
			return (int)r;
		}
		if (!r)
			break;
		n += (size_t)r;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

static const char *dir_name(void)
{
	const char *dir = getenv("NXQUOTA_HOOK_STATE_DIR");

	return dir && dir[0] ? dir : HOOK_STATE_DIR;
}

int hook_state_dir(bool create, char *err)
{
	const char *dir = dir_name();
	struct stat st;
	char *parent;
	int fd, e;

	if (create && mkdir(dir, 0700) && errno == ENOENT) {
		parent = strdup(dir);
		if (parent && strrchr(parent, '/') && strrchr(parent, '/') != parent)
			*strrchr(parent, '/') = '\0';
		if (parent)
			mkdir(parent, 0755);	/* /run/nxquota */
		free(parent);
		mkdir(dir, 0700);
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && !create)
		return -ENOENT;
	if (fd < 0) {
		e = -errno;
		return hook_fail(err, e, "state directory %s: %s", dir,
				 strerror(-e));
	}
	if (fstat(fd, &st) || st.st_uid != geteuid() ||
	    ((st.st_mode & 077) && fchmod(fd, 0700))) {
		close(fd);
		return hook_fail(err, -EPERM, "state directory %s is not this "
				 "user's (root's) own", dir);
	}
	return fd;
}

/* Milliseconds since start (CLOCK_MONOTONIC). */
static long since_ms(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - start->tv_sec) * 1000L +
	       (now.tv_nsec - start->tv_nsec) / 1000000L;
}

/* flock(fd, LOCK_EX), trying every LOCK_POLL_MS until ms have passed (by
 * the clock: a loaded machine oversleeps): 0, -ETIMEDOUT, -errno. */
static int lock_wait(int fd, long ms)
{
	struct timespec poll = { 0, LOCK_POLL_MS * 1000000L }, start;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		if (!flock(fd, LOCK_EX | LOCK_NB))
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (since_ms(&start) >= ms)
			return -ETIMEDOUT;
		nanosleep(&poll, NULL);
	}
}

int hook_dir_lock(int dfd, long ms, char *err)
{
	int rc = lock_wait(dfd, ms);

	if (rc == -ETIMEDOUT)
		return hook_fail(err, rc, "state directory %s: still locked after "
				 "%ld ms (another hook writing a record)",
				 dir_name(), ms);
	if (rc)
		return hook_fail(err, rc, "state directory %s: lock: %s",
				 dir_name(), strerror(-rc));
	return 0;
}

void hook_dir_unlock(int dfd)
{
	flock(dfd, LOCK_UN);
}

/* 64-bit FNV-1a */
static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

int hook_pod_lock(int dfd, const char *pod, long ms, struct hook_podlock *pl,
		  char *err)
{
	struct timespec start;
	struct stat a, b;
	int fd, rc;

	pl->fd = -1;
	snprintf(pl->name, sizeof(pl->name), ".pod-%016llx.lock",
		 (unsigned long long)fnv1a(pod));
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		fd = openat(dfd, pl->name, O_RDWR | O_CREAT | O_NOFOLLOW |
			    O_CLOEXEC, 0600);
		if (fd < 0) {
			rc = -errno;
			return hook_fail(err, rc, "the lock of pod %s (%s/%s): %s",
					 hook_q(pod), dir_name(), pl->name,
					 strerror(-rc));
		}
		rc = lock_wait(fd, ms - since_ms(&start));
		if (rc) {
			close(fd);
			if (rc == -ETIMEDOUT)
				return hook_fail(err, rc, "gave up after %ld ms "
						 "waiting for the lock of pod %s, "
						 "held by another container's "
						 "hook (%s/%s)", ms, hook_q(pod),
						 dir_name(), pl->name);
			return hook_fail(err, rc, "the lock of pod %s: %s",
					 hook_q(pod), strerror(-rc));
		}
		/* still the file at the name, not one removed on release? */
		if (!fstat(fd, &a) && !fstatat(dfd, pl->name, &b,
						AT_SYMLINK_NOFOLLOW) &&
		    a.st_ino == b.st_ino && a.st_dev == b.st_dev)
			break;
		close(fd);
	}
	pl->fd = fd;
	return 0;
}

void hook_pod_unlock(int dfd, struct hook_podlock *pl)
{
	if (pl->fd < 0)
		return;
	unlinkat(dfd, pl->name, 0);
	close(pl->fd);
	pl->fd = -1;
}

int hook_record_write(int dfd, const struct hook_record *r)
{
	char tmp[HOOK_ID_MAX + 8], *s = hook_record_format(r);
	size_t len = s ? strlen(s) : 0, off = 0;
	ssize_t w = 0;
	int fd, e = 0;

	if (!s)
		return -ENOMEM;
	snprintf(tmp, sizeof(tmp), ".%s.tmp", r->id);	/* no id starts '.' */
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
	if (fd < 0)
		e = -errno;
	while (!e && off < len) {
		w = write(fd, s + off, len - off);
		if (w < 0 && errno != EINTR)
			e = -errno;
		else if (w > 0)
			off += (size_t)w;
	}
	if (!e && fsync(fd))
		e = -errno;
	if (fd >= 0 && close(fd) && !e)
		e = -errno;
	if (!e && renameat(dfd, tmp, dfd, r->id))
		e = -errno;
	if (e && fd >= 0)
		unlinkat(dfd, tmp, 0);
	if (!e)
		fsync(dfd);
	free(s);
	return e;
}

int hook_record_read(int dfd, const char *id, struct hook_record *r,
		     char *err)
{
	char *buf;
	struct stat st;
	size_t len;
	int fd, rc;

	fd = openat(dfd, id, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return -ENOENT;
	rc = fd < 0 ? -errno : fstat(fd, &st) ? -errno :
	     !S_ISREG(st.st_mode) ? -EINVAL : hook_read_all(fd, RECORD_MAX,
							    &buf, &len);
	if (fd >= 0)
		close(fd);
	if (rc)
		return hook_fail(err, -EINVAL, "record: %s", strerror(-rc));
	rc = hook_record_parse(buf, len, r, err);
	free(buf);
	if (rc)
		return rc;
	if (strcmp(r->id, id))
		return hook_fail(err, -EINVAL, "the record is container %s's",
				 hook_q(r->id));
	return 0;
}
