/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquota-hook's files (hook_state.c): the directory of records
 * (/run/nxquota/hooks, root's 0700), a record per container, and two
 * locks, each taken with a bounded wait and never held while the
 * authority is asked for anything but a pod's budgets:
 *  - the directory's flock(), around writing or removing a record;
 *  - a pod's lock file, ".pod-<hash>.lock", while a container's hook
 *    reads, compares and sets its pod's budgets (hook_reconcile() and
 *    hook_apply() against a sibling's), removed when released.
 */
#ifndef NXQ_TOOLS_HOOK_STATE_H
#define NXQ_TOOLS_HOOK_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include "hook.h"

#define HOOK_STATE_DIR		"/run/nxquota/hooks"

/* Read fd to its end, at most max bytes: 0 and a NUL-terminated *buf
 * (free() it), -EFBIG past max, or -errno. */
int hook_read_all(int fd, size_t max, char **buf, size_t *len);
/*
 * The directory of records (NXQUOTA_HOOK_STATE_DIR, else
 * HOOK_STATE_DIR), made root's 0700 when create, not locked: its fd,
 * -ENOENT when absent and not create, or another negative errno and err.
 */
int hook_state_dir(bool create, char *err);
/* flock() the directory, waiting at most ms: 0, -ETIMEDOUT or -errno,
 * and err. */
int hook_dir_lock(int dfd, long ms, char *err);
void hook_dir_unlock(int dfd);

/* A pod's lock, held. */
struct hook_podlock {
	int fd;				/* -1: none */
	char name[48];			/* ".pod-<16 hex>.lock" in the directory */
};

/* The lock of pod (a cgroup path), waiting at most ms: 0, -ETIMEDOUT or
 * -errno, and err. */
int hook_pod_lock(int dfd, const char *pod, long ms, struct hook_podlock *pl,
		  char *err);
/* Release it, removing its file. */
void hook_pod_unlock(int dfd, struct hook_podlock *pl);

/* Write the record as <id>, atomically (a temporary file, renamed):
 * 0 or -errno. */
int hook_record_write(int dfd, const struct hook_record *r);
/* Read the record of id: 0, -ENOENT when there is none, or -EINVAL and
 * err. */
int hook_record_read(int dfd, const char *id, struct hook_record *r,
		     char *err);

#endif /* NXQ_TOOLS_HOOK_STATE_H */
