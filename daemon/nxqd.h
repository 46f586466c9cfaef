/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquotad internals shared by its files: the one ledger, the cgroup glue
 * (dcgroup.c), the client socket (client.c), the restart list
 * (restart.c), the control socket and the state file (ctl.c, state.c).
 *
 * The daemon plays the part of the module's shells (kmod/cdev.c,
 * kmod/cgroup.c, kmod/netlink.c, kmod/sysfs.c) around the unchanged
 * ledger layers (kmod/ledger.c, kmod/charge.c):
 *
 *  - node keys are struct nxqd_cg (opaque here): a cgroup2 directory,
 *    by its path relative to the cgroup2 mount and its inode number (the
 *    cgroup id the kernel gives the same directory); key_dead is "the
 *    directory is gone or its inode changed";
 *  - a holder's owner (struct pid * in the ledger) is a struct nxqd_proc
 *    (client.c): the registering process, by pidfd and start time;
 *  - dev->devt is the userspace encoding of the device number, as
 *    makedev(major, minor) and fstat()'s st_rdev give it (the module keeps
 *    the kernel's MKDEV()); 0 is no device node.
 *
 * Lock order: the ledger's (ledger.h), then nothing of the daemon's is
 * taken under the device lock except what the hooks below say.
 */
#ifndef _NXQD_H
#define _NXQD_H

#include "ledger.h"
#include "proto.h"

/* Deepest cgroup level a holder or budget may name (as the module). */
#define NXQD_MAX_DEPTH		64

/*
 * Connections one process (its tgid) and one uid may have open, by
 * default (nxquotad -P, -U): each is a thread of the daemon.
 */
#define NXQD_CONN_PER_PROC	1024
#define NXQD_CONN_PER_UID	4096
extern unsigned int nxqd_conn_per_proc, nxqd_conn_per_uid;

/* Default grace window after a restart that found a client list (-G). */
#define NXQD_GRACE_MS		5000

extern struct nxq_ledger nxqd_ledger;
extern const struct nxq_ledger_ops nxqd_ledger_ops;
extern int nxqd_verbose;

/* ---- dcgroup.c: cgroup2 directories as node keys ---- */

/*
 * Find the cgroup2 mount (first cgroup2 entry of /proc/self/mountinfo),
 * or use @dir if not NULL (nxquotad -C).  Return: 0 or -errno.
 */
int nxqd_cgroup_init(const char *dir);
const char *nxqd_cgroup_root(void);

/*
 * A key for the cgroup2 directory @path ("/" is the root; "/a/b" or
 * "a/b"; no "." or ".." components, no empty ones except a trailing
 * slash).  *@key is the caller's: give it to a new node (which frees it
 * through the key_put hook) or drop it with nxqd_cgroup_key_put().
 * Return: 0, -ENOENT (no such directory), -EINVAL (bad path), -E2BIG
 * (deeper than NXQD_MAX_DEPTH), -ENOMEM.
 */
int nxqd_cgroup_key(const char *path, void **key);
void nxqd_cgroup_key_put(void *key);
/* The key_dead hook: the directory is gone or is another cgroup now. */
bool nxqd_cgroup_key_dead(void *key);
u64 nxqd_cgroup_key_id(const void *key);
/* "/" for the root, else "/a/b"; valid while the key is. */
const char *nxqd_cgroup_key_path(const void *key);
int nxqd_cgroup_key_name(void *key, char *buf, size_t size);

/*
 * The node chain for @path on @dev, as the module's
 * nxq_node_for_cgroup(): each missing ancestor node is created.
 * Context: the ledger lock is held.
 * Return: the node with a reference (nxq_node_put()), or ERR_PTR(-ENOENT,
 * -EINVAL, -E2BIG, -ENOMEM).
 */
struct nxq_node *nxqd_node_for_path(struct nxq_device *dev, const char *path);

/*
 * The module's nxq_budget_set(): set (@r) or clear (@r NULL) the budget
 * of the cgroup @path on the device @key.  Takes the ledger lock.
 * Return: 0, -ENODEV, -ENOENT, -EINVAL, -E2BIG, -ENOMEM.
 */
int nxqd_budget_set(const char *key, const char *path,
		    const struct nxq_budget_req *r, char *msg, size_t msg_size);

/*
 * The cgroup2 path of process @pid from /proc/PID/cgroup ("0::PATH").
 * Return: 0 or -errno (-ESRCH: no such process).
 */
int nxqd_cgroup_of_pid(pid_t pid, char *buf, size_t len);
/* The same from an open /proc/PID/cgroup (read again from its start). */
int nxqd_cgroup_read(int fd, char *buf, size_t len);

/* ---- client.c: the client socket ---- */

/*
 * Listen on @path (mode 0660 and group @group if it exists, else 0600;
 * @group NULL: "nxquota" if it exists) and serve clients from a thread.
 * Return: 0 or -errno (-EADDRINUSE: another daemon answers there).
 */
int nxqd_client_start(const char *path, const char *group);
/* Stop serving: end every connection, detach every holder. */
void nxqd_client_stop(void);
/* End the holders of every listed process that has exited (before a dump). */
void nxqd_client_reap(void);
/* The ledger's holder_signal and holder_kill hooks (device lock held). */
void nxqd_holder_signal(struct nxq_holder *h);
void nxqd_holder_kill(struct nxq_holder *h);

/* ---- restart.c: the client list and the grace window ---- */

/*
 * Read the client list left in @dir (pid, start time and number of
 * holders of the processes that had holders), keep the living ones, and open the grace window of
 * @grace_ms if any.  Return: 0 or -errno.
 */
int nxqd_restart_init(const char *dir, unsigned int grace_ms);
/* The holders of a process changed: rewrite the list. */
void nxqd_restart_save(void);
/*
 * May the process @tgid (started at @start, /proc/PID/stat ticks) charge
 * now?  0 outside the grace window, or for a listed process's restore
 * (@first: the first charge on a holder it registered); in it, for any
 * other charge: -EAGAIN if @timeout_ns is 0, else waits until the window
 * ends (0, *@timeout_ns reduced by the wait), *@timeout_ns runs out
 * (-ETIMEDOUT) or the calling task is signalled (-EINTR).
 */
int nxqd_restart_gate(pid_t tgid, u64 start, bool first, u64 *timeout_ns);
/*
 * A process registered a holder, or a charge of it is done: a listed
 * process is restored once it registered as many holders as it had and
 * charged after the last (or NXQD_RESTORE_SETTLE_MS passed after it: its
 * last holder had nothing to charge).
 */
void nxqd_restart_registered(pid_t tgid, u64 start);
void nxqd_restart_charged(pid_t tgid, u64 start);
#define NXQD_RESTORE_SETTLE_MS	200
/* Stop: the list on disk stays as it is (a restart finds it). */
void nxqd_restart_exit(void);

/* client.c: the processes that hold holders now (for the list). */
struct nxqd_client_id {
	pid_t pid;
	u64 start;
	unsigned int holders;
};
/* The start time of @pid (/proc/PID/stat field 22), 0 if none. */
u64 nxqd_proc_start_time(pid_t pid);
/* Fill up to @max entries; return how many there are. */
size_t nxqd_client_list(struct nxqd_client_id *ids, size_t max);

/* ---- ctl.c, state.c (H-D2) ---- */

/* Listen on @path (root only) and serve from a thread.  0 or -errno. */
int nxqd_ctl_start(const char *path);
/* The ledger's event hook: to the control socket's subscribers. */
void nxqd_ctl_event(const struct nxq_event *ev);
/* Devices and budgets: load from @dir/state at start, save on change. */
int nxqd_state_load(const char *dir);
int nxqd_state_save(void);

#endif /* _NXQD_H */
