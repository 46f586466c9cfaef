/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquotad internals shared by its files.  The daemon plays the part of
 * the module's shells (kmod/cdev.c, kmod/cgroup.c, kmod/netlink.c,
 * kmod/sysfs.c) around the unchanged ledger layers (kmod/ledger.h) and the
 * ABI both authorities share (kmod/abi.c).  Its files, lowest first; a
 * file calls only those above it in this list (where one must reach down
 * to one below, it takes an ops struct):
 *
 *   loop.c      the event loop: descriptors and timers (one thread)
 *   dcgroup.c   cgroup2 directories as node keys (kmod/cgroup.c's part)
 *   proc.c      client processes: pidfd, start time, cgroup
 *   conns.c     the bounds on client connections (per subtree, uid, process)
 *   signal.c    how a holder is told of a ticket: a notice queued for
 *               the loop, or (before version 2) its eventfd, written by
 *               a thread of its own
 *   state.c     devices and budgets on disk
 *   restart.c   what each holder held (the record) and the grace window
 *   client_obj.c  the client socket: its holders' table, replies
 *   client_cmd.c  its handlers: kmod/cdev.c's commands
 *   client.c    its transport, identity, connections (client.h between)
 *   ctl.c       the control socket: kmod/netlink.c's family (transport,
 *               who may speak, dispatch, events)
 *   ctl_ops.c   its operations: devices, budgets, holders (ctl.h between)
 *   backstop.c  NVML's measure of each process against the ledger
 *   nxquotad.c  main(), the options, the ledger's hooks
 *
 * Threads: the loop runs every socket, every ledger call and every
 * waiting charge's timer (client_cmd.c); besides it there are
 * only the eventfd writer (signal.c; only once a client before protocol
 * version 2 passed an eventfd), the compat layer's workqueue (the
 * ledger's event work: ctl.c's nxqd_ctl_event()) and its RCU callbacks
 * (frees), and the backstop's NVML reader (backstop.c).  Nothing of the
 * daemon's is taken under a ledger lock but the signal queues' lock
 * (nxqd_tsig_signal()).
 *
 * Keys and identities:
 *  - node keys are struct nxqd_cg (opaque here): a cgroup2 directory,
 *    by its path relative to the cgroup2 mount and its inode number (the
 *    cgroup id the kernel gives the same directory); key_dead is "the
 *    directory is gone or its inode changed";
 *  - a holder's owner (struct pid * in the ledger, opaque to it) is the
 *    struct pid inside a struct nxqd_proc (proc.c): the process that made
 *    the connection it was registered on, found back with container_of()
 *    (nxqd_proc_of_owner()), never by a cast between unrelated types;
 *  - dev->devt is the userspace encoding of the device number, as
 *    makedev(major, minor) and fstat()'s st_rdev give it (the module keeps
 *    the kernel's MKDEV()); 0 is no device node.
 */
#ifndef _NXQD_H
#define _NXQD_H

#include "ledger.h"
#include <linux/nxquotad.h>

/* Deepest cgroup level a holder or budget may name (as the module). */
#define NXQD_MAX_DEPTH		64

/*
 * Bounds on connections (nxquotad -N, -K, -U, -P, -Q; conns.c): in all,
 * per tenant subtree (the connecting process's cgroup, or the top of the
 * delegated subtree it is in), per uid, per process; a subtree's first -Q
 * pass the bounds per uid and in all.  One over is closed at once and
 * counted (the device dump's conns-refused).
 */
#define NXQD_CONNS_MAX		8192
#define NXQD_CONN_PER_CGROUP	1024
#define NXQD_CONN_PER_UID	4096
#define NXQD_CONN_PER_PROC	1024
#define NXQD_CONN_RESERVE	32
extern unsigned int nxqd_conns_max, nxqd_conn_per_cgroup;
extern unsigned int nxqd_conn_per_uid, nxqd_conn_per_proc, nxqd_conn_reserve;

/* Default grace window after a restart that found a record (-G). */
#define NXQD_GRACE_MS		5000
/* The record's log is compacted at most this often (-R). */
#define NXQD_RECORD_MS		50
/*
 * After a turn that served something, the loop polls (epoll_wait() with no
 * timeout) this long before it sleeps (-B, 0: never): a client's next
 * request, a few us away, is then not a wake-up away.  It costs CPU only
 * while requests come.
 */
#define NXQD_BUSY_US		20
extern unsigned int nxqd_busy_us;

extern struct nxq_ledger nxqd_ledger;
extern const struct nxq_ledger_ops nxqd_ledger_ops;
extern int nxqd_verbose;

/* ---- loop.c: the event loop ---- */

/*
 * A descriptor the loop polls (level-triggered).  @fn runs on the loop
 * with the events that came.  Whatever embeds a watch is freed through
 * nxqd_loop_defer_free() once its watch is deleted: an event already
 * collected for it may still be looked at in the same turn.
 */
struct nxqd_watch {
	int fd;
	u32 events;
	bool dead;
	void (*fn)(struct nxqd_watch *w, u32 revents);
};

/* A deadline on the loop's clock (CLOCK_MONOTONIC, as ktime_get_ns()). */
struct nxqd_timer {
	u64 at;
	u64 seq;			/* arming order, for equal deadlines */
	struct rb_node rb;		/* in the loop's tree while armed */
	void (*fn)(struct nxqd_timer *t);
};

int nxqd_loop_init(void);
void nxqd_loop_exit(void);
int nxqd_watch_add(struct nxqd_watch *w);
int nxqd_watch_mod(struct nxqd_watch *w, u32 events);
void nxqd_watch_del(struct nxqd_watch *w);
void nxqd_timer_init(struct nxqd_timer *t, void (*fn)(struct nxqd_timer *t));
void nxqd_timer_arm(struct nxqd_timer *t, u64 at);
void nxqd_timer_cancel(struct nxqd_timer *t);
bool nxqd_timer_armed(const struct nxqd_timer *t);
void nxqd_loop_defer_free(void *p, void (*fn)(void *p));
/* Run until nxqd_loop_stop(); SIGTERM and SIGINT call @on_signal. */
void nxqd_loop_run(void (*on_signal)(int sig));
void nxqd_loop_stop(void);
/* Which turn of the loop this is (each epoll_wait() starts one). */
u64 nxqd_loop_turn(void);
static inline u64 nxqd_now(void)
{
	return ktime_get_ns();
}
/*
 * A socket systemd passed (sd_listen_fds_with_names(3)'s protocol,
 * LISTEN_PID/LISTEN_FDS/LISTEN_FDNAMES) named @name, made close-on-exec,
 * or -1.
 */
int nxqd_listen_fds(const char *name);
/*
 * Bind a SOCK_SEQPACKET socket at @path with @mode (and group @gid if
 * >= 0), taking over a socket file no daemon answers on.  Return: the
 * listening socket, or -errno (-EADDRINUSE: one answers).
 */
int nxqd_bind(const char *path, mode_t mode, long gid, int backlog);
/* sd_notify(3)'s protocol: @state to $NOTIFY_SOCKET, if set. */
void nxqd_notify(const char *state);

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
/* dcgroup.c's part of nxqd_ledger_ops: node keys are cgroup2 directories. */
#define NXQD_CGROUP_KEY_OPS						\
	.key_put = nxqd_cgroup_key_put,					\
	.key_dead = nxqd_cgroup_key_dead,				\
	.key_path = nxqd_cgroup_key_name
/* The id (inode) of the cgroup2 directory @path, 0 if there is none. */
u64 nxqd_cgroup_id(const char *path);

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

/* The cgroup2 path in an open /proc/PID/cgroup (read from its start). */
int nxqd_cgroup_read(int fd, char *buf, size_t len);
/*
 * @path (as the daemon sees it) as a process whose cgroup namespace is
 * rooted at @root sees it, into @out.  Return: 0, -ENOENT for a path
 * outside that namespace (above its root), -ENAMETOOLONG.
 */
int nxqd_cgroup_view(const char *path, const char *root, char *out,
		     size_t len);

/* ---- proc.c: client processes ---- */

/*
 * A process that made a connection, found by its pid and start time; the
 * loop watches its pidfd (through proc.c's epoll set) and calls the exit
 * hook once it is gone.  Fields
 * are the loop's.
 */
/* The ledger's owner of a holder: in the daemon, a member of its process. */
struct pid {
	pid_t nr;			/* the process's tgid */
};

struct nxqd_proc {
	pid_t tgid;
	struct pid owner;		/* what the ledger names as owner */
	u64 start;			/* /proc/PID/stat field 22 */
	int pidfd;
	int cgfd;			/* its /proc/PID/cgroup, or -1 */
	unsigned int refs;		/* connections, holders */
	unsigned int nr_conns;
	bool dead;			/* its exit was seen */
	bool watched;			/* its pidfd is in proc.c's epoll set */
	char *cgns_root;		/* nxqd_proc_cgns_root()'s, or NULL */
	u64 cgns_ino;			/* the namespace it was read in */
	struct nxqd_proc *hnext;	/* proc.c's table */
	struct list_head holders;	/* client.c's: its holders */
};

/*
 * Called on the loop when a watched process exits (after it is marked
 * dead): client.c ends its holders.
 */
int nxqd_proc_init(void (*on_exit)(struct nxqd_proc *p));

/* The process a holder's owner (the ledger's struct pid) is. */
static inline struct nxqd_proc *nxqd_proc_of_owner(struct pid *owner)
{
	return container_of(owner, struct nxqd_proc, owner);
}
/*
 * The process @pid that made a connection accepted at @ticks
 * (nxqd_proc_ticks()), with a reference; @pidfd is the connection's
 * SO_PEERPIDFD (consumed) or -1.  Return: it, or ERR_PTR(-ESRCH: gone or
 * the pid was reused, -ENOMEM, ...).
 */
struct nxqd_proc *nxqd_proc_get(pid_t pid, int pidfd, u64 ticks);
/*
 * Handle now every listed process whose pidfd says it exited (before a
 * dump, before a refusal).  Return: how many.  O(exited).
 */
unsigned int nxqd_proc_reap(void);
void nxqd_proc_hold(struct nxqd_proc *p);
void nxqd_proc_put(struct nxqd_proc *p);
/*
 * The root of @p's cgroup namespace, as the daemon sees paths ("/" when
 * it shares the daemon's), in *@root (valid until the next call for @p).
 * Refusal path only: a process in a namespace of its own costs a setns()
 * there and back, once per namespace it is seen in.  Return: 0, or
 * -ENOENT (its cgroup lies outside its own namespace's root), -EAGAIN
 * (it moved meanwhile), -errno.
 */
int nxqd_proc_cgns_root(struct nxqd_proc *p, const char **root);
/*
 * A pidfd of the process @pid that made a connection accepted at @ticks
 * (@pidfd: the connection's SO_PEERPIDFD, consumed, or -1), and its start
 * time in *@start.  Return: the pidfd, or -ESRCH (gone, or the pid is
 * another process's: it started after @ticks), -errno.
 */
int nxqd_proc_pin(pid_t pid, int pidfd, u64 ticks, u64 *start);
/* The process of @pidfd has not exited (a zombie has). */
bool nxqd_proc_alive(int pidfd);
/*
 * Has the process @pid, pinned by @pidfd, CAP_SYS_ADMIN in the initial
 * user namespace now (the module's capable())?  Read from /proc and
 * checked against the pidfd after.  Return: 1 yes, 0 no, -ESRCH gone.
 */
int nxqd_proc_admin(pid_t pid, int pidfd);
/* Now, in /proc/PID/stat's start-time ticks (CLOCK_BOOTTIME). */
u64 nxqd_proc_ticks(void);
/* The start time of @pid (/proc/PID/stat field 22), 0 if none. */
u64 nxqd_proc_start_time(pid_t pid);
/* A pidfd of @pid if it is still the process started at @start, or -1. */
int nxqd_proc_pidfd(pid_t pid, u64 start);
/*
 * The process's cgroup2 id now: 0 and *@id through the pidfd
 * (PIDFD_GET_INFO, Linux 6.13), or -EOPNOTSUPP where the kernel cannot
 * say so (read the path then), -ESRCH if it is gone.
 */
int nxqd_proc_cgroup_id(struct nxqd_proc *p, u64 *id);
/* Its cgroup2 path now, from /proc/PID/cgroup.  0 or -errno. */
int nxqd_proc_cgroup_path(struct nxqd_proc *p, char *buf, size_t len);
/* SIGKILL it, through its pidfd. */
void nxqd_proc_kill(struct nxqd_proc *p);
/*
 * May a request's SCM_CREDENTIALS naming @pid, which is not the
 * connection's process, be believed?  The kernel lets a sender name
 * another process only with CAP_SYS_ADMIN in the user namespace that owns
 * its pid namespace; when @pid's pid namespace and every one above it are
 * owned by the daemon's user namespace, only a root that can do anything
 * could have named it.  False (refuse) for any other, e.g. a process in a
 * container with a user namespace, whose root could name a decoy.
 */
bool nxqd_proc_cred_trusted(pid_t pid);

/* ---- conns.c: the bounds on client connections ---- */

/* What a connection holds in the counts (conns.c's, opaque here). */
struct nxqd_count;
struct nxqd_slot {
	struct nxqd_count *uid, *tree;
	struct list_head park;		/* on its subtree's parked list */
	struct nxqd_watch *w;		/* its connection's, while parked */
};

/*
 * Admit a connection of @p (peer uid @uid) under the bounds: NULL with
 * @s holding its place in the counts, or which bound refused it (for the
 * log; nothing held).
 */
const char *nxqd_conn_admit(struct nxqd_slot *s, struct nxqd_proc *p, uid_t uid);
/* The connection that holds @s (of @p) is closed: its place given back. */
void nxqd_conn_release(struct nxqd_slot *s, struct nxqd_proc *p);
/*
 * One request per tenant subtree per turn of the loop: true (and the
 * turn taken) if @s's subtree was not served in this turn yet.  False
 * also while the subtree is penalized: then @w (@s's connection's) is
 * not polled for reading until the penalty ends.
 */
bool nxqd_conn_turn(struct nxqd_slot *s, struct nxqd_watch *w);
/*
 * A request of @s's came with descriptors no command takes: nothing is
 * read from its subtree for NXQD_PENALTY_US.
 */
#define NXQD_PENALTY_US		1000
void nxqd_conn_penalize(struct nxqd_slot *s);

/* ---- signal.c: how a holder is told of its tickets ---- */

/*
 * A holder's signal (its priv, for a holder that can be asked): a notice
 * on its registering connection (version 2), or the eventfd a
 * registration before version 2 passed, shared with the tenant.
 * nxqd_tsig_signal() may be called under the device lock, from any
 * thread: it queues.  A notice is told on the loop by the function given
 * to nxqd_notice_start() (the client socket sends it without blocking);
 * an eventfd is written by a thread of its own, started with the first
 * one, so no tenant's file is written under a ledger lock or on the loop,
 * and a write that would wait (the tenant filled the counter and cleared
 * O_NONBLOCK) is cut short and the file never written again.
 */
struct nxqd_tsig;
/* Block the writer's signal in the threads to come (before any). */
int nxqd_signal_start(void);
void nxqd_signal_stop(void);
/*
 * A holder's signal: @fd its eventfd (legacy: starts the writer), or -1,
 * a notice.  NULL: out of memory (or no writer could start).
 */
struct nxqd_tsig *nxqd_tsig_new(int fd);
void nxqd_tsig_put(struct nxqd_tsig *t);
void nxqd_tsig_signal(struct nxqd_tsig *t);
/* On the loop: whom its notices are told to (NULL: nobody, it ended). */
void nxqd_tsig_own(struct nxqd_tsig *t, void *owner);
/* On the loop: notices queued from now on are told to @tell(owner). */
int nxqd_notice_start(void (*tell)(void *owner));
void nxqd_notice_stop(void);
/*
 * On the loop: tell every notice queued so far, and wait until every
 * eventfd queued so far is written (or dropped).
 */
void nxqd_signal_flush(void);
/* Writes cut short so far (files that will not be signalled again). */
unsigned long nxqd_signal_refused(void);

/* ---- state.c: devices and budgets on disk ---- */

/* Load @dir/state at start (before any socket); remember @dir. */
int nxqd_state_load(const char *dir);
/*
 * Write the devices and budgets (tmp, fsync, rename, fsync of the
 * directory), leaving out device @skip if not NULL (a removal about to
 * happen).  Return: 0, or the write's -errno (nothing replaced).
 */
int nxqd_state_save(const char *skip);
/* The directory, or NULL when nothing is persisted. */
const char *nxqd_state_dir(void);

/* ---- restart.c: the record and the grace window ---- */

/* One holder as the record keeps it. */
struct nxqd_rec_line {
	pid_t pid;
	u64 start;
	u64 id;
	const char *device;
	u64 charge;
};

struct nxqd_restart_ops {
	/* Every live holder, for the record, through @emit. */
	void (*list)(void (*emit)(void *ctx, const struct nxqd_rec_line *l),
		     void *ctx);
};

int nxqd_restart_init(const char *dir, unsigned int grace_ms,
		      unsigned int record_ms,
		      const struct nxqd_restart_ops *ops);
/* The log is long: it is compacted within record_ms. */
void nxqd_record_dirty(void);
/* Compact it now: 0, or the write's -errno. */
int nxqd_record_write(void);
/* Compact it a last time (at stop, before the connections end). */
int nxqd_record_final(void);
void nxqd_restart_exit(void);
/* The largest holder id the record had at start (new ids go above). */
u64 nxqd_record_max_id(void);

/* A claim on what a holder held before the restart. */
struct nxqd_rec_holder;
/*
 * A holder's charge is now @l->charge: appended to the record before it
 * is answered (and @old, the claim it restored, ended with it).  Return:
 * 0, or the write's -errno: growth must then be undone and refused.
 */
int nxqd_record_note(const struct nxqd_rec_line *l, struct nxqd_rec_holder *old);

/* A charge held by the grace window until it closes. */
struct nxqd_rs_proc;
struct nxqd_held {
	struct list_head link;
	struct nxqd_rs_proc *proc;	/* a listed process blocked on it */
	struct nxqd_timer timer;	/* its own timeout, if it has one */
	/* run when released: 0 go on, -ETIMEDOUT its timeout ran out */
	void (*release)(struct nxqd_held *held, int err);
};

bool nxqd_grace_open(void);
/*
 * Registration: a v1 restore claims the holder @old_id that process
 * (@pid, @start) had on @device; NULL if the record has none for it.
 */
struct nxqd_rec_holder *nxqd_grace_claim(pid_t pid, u64 start, u64 old_id,
					 const char *device);
/* NXQD_REQ_RESTORED: the process restored all it will. */
void nxqd_grace_done(pid_t pid, u64 start);

/* What a charge asks of the window. */
struct nxqd_grace_ask {
	pid_t pid;
	u64 start;
	const char *device;
	u64 bytes;
	bool v1;			/* version 1 request */
	bool restore;			/* v1: NXQD_REQ_RESTORE */
	bool first;			/* v0: the first charge on its holder */
	struct nxqd_rec_holder *rec;	/* v1: the holder's claim */
	u64 timeout_ns;			/* 0: no wait */
};

enum nxqd_verdict {
	NXQD_PASS,		/* charge now */
	NXQD_PASS_RESTORE,	/* charge now: a restore within the record */
	NXQD_HOLD,		/* nxqd_grace_hold() it */
	NXQD_AGAIN,		/* v0, no wait: -EAGAIN */
	NXQD_BEYOND,		/* v1: a restore beyond the record: -ERANGE */
};

/* The window's verdict; a v0 restore's claim in *@claim. */
enum nxqd_verdict nxqd_grace_charge(const struct nxqd_grace_ask *ask,
				    struct nxqd_held *held,
				    struct nxqd_rec_holder **claim);
/* Keep @held until the window closes (or its timeout, @timeout_ns). */
void nxqd_grace_hold(struct nxqd_held *held, u64 timeout_ns);
/* Its connection went: forget it. */
void nxqd_grace_unhold(struct nxqd_held *held);
/* A restore's outcome. */
void nxqd_grace_restore_result(const char *device, u64 bytes, int err);
/* The device's restore counts (bytes restored, bytes refused). */
void nxqd_grace_stats(const char *device, u64 *restored, u64 *refused);

/* ---- client.c: the client socket ---- */

/*
 * Listen on @path (mode 0660 and group @group if it exists, else 0600;
 * @group NULL: "nxquota" if it exists), unless systemd passed a socket
 * named "client".  Return: 0 or -errno (-EADDRINUSE: a daemon answers
 * there).
 */
int nxqd_client_start(const char *path, const char *group);
/* Stop: every waiting charge ends, every connection and holder. */
void nxqd_client_stop(void);
/* The ledger's holder_signal and holder_kill hooks (device lock held). */
void nxqd_holder_signal(struct nxq_holder *h);
void nxqd_holder_kill(struct nxq_holder *h);
/* The ledger's holder_follow hook (no lock held; a waiting charge's). */
int nxqd_holder_follow(struct nxq_holder *h);
/* The authority's counts for the device dump (the module's zeros). */
void nxqd_client_refusals(const char *device, struct nxq_abi_refusals *r);
/* What restart.c calls back for the record: the live holders. */
const struct nxqd_restart_ops *nxqd_client_restart(void);

/* ---- ctl.c: the control socket ---- */

int nxqd_ctl_start(const char *path);
void nxqd_ctl_stop(void);
/* The ledger's event hook: to the control socket's subscribers. */
void nxqd_ctl_event(const struct nxq_event *ev);
/* The ledger's listening hook: has any connection subscribed? */
bool nxqd_ctl_listening(void);
/*
 * Send an event the daemon makes (backstop.c's) to every subscriber, from
 * any thread.  Return: true if a full socket refused it (lost to it).
 */
bool nxqd_ctl_send(const struct nxq_abi_msg *m);

/* ---- backstop.c: NVML's measure against the ledger ---- */

/* Default poll period (-b, 0: off) and allowance per process (-x). */
#define NXQD_BACKSTOP_MS	1000
#define NXQD_BACKSTOP_ALLOW	(256ULL << 20)
extern unsigned int nxqd_backstop_ms;
extern u64 nxqd_backstop_allow;
extern bool nxqd_backstop_kill;		/* -k: kill what is named */

/*
 * What the backstop's last poll measured in one group: a budget node
 * with a max of its own (@cgroup_id its cgroup's), or a top-level cgroup
 * of processes with no budget, under the device's default_max
 * (@cgroup_id 0).  Bytes are NVML's usedGpuMemory, residency as the
 * driver counts it, summed over the processes of the subtree.
 */
struct nxqd_backstop_use {
	char device[NXQ_DEVICE_KEY_MAX];
	char *path;			/* the cgroup2 path */
	u64 cgroup_id;
	u64 limit;			/* its max (or default_max) */
	u64 charged;			/* what the ledger charged it */
	u64 measured;			/* what NVML measured under it */
	u64 allowed;			/* max(limit, charged) + allowance each */
	u32 processes;			/* NVML's processes under it */
	u64 flagged;			/* processes named, so far */
	u64 killed;			/* of them, killed (-k) */
	bool unnamed;			/* over with none to name (said) */
};

int nxqd_backstop_start(void);
void nxqd_backstop_stop(void);
/* Each group of the last poll (on the loop); Return: polls so far. */
u64 nxqd_backstop_each(void (*fn)(void *ctx,
				  const struct nxqd_backstop_use *u),
		       void *ctx);
/* One budget node's (on the loop): 0, or -ENOENT if not measured. */
int nxqd_backstop_measured(const char *device, u64 cgroup_id,
			   struct nxqd_backstop_use *out);
/* Its measured and escaped attributes, added to a budget dump's @m. */
void nxqd_backstop_budget_msg(const char *device, u64 cgroup_id,
			      struct nxq_abi_msg *m);

#endif /* _NXQD_H */
