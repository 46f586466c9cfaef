// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota-hook: an OCI runtime hook that sets a container's GPU memory
 * budgets from its annotations at createRuntime and clears them at
 * poststop, through the authority (the module's generic netlink family,
 * or nxquotad's control socket: ctl.h).
 *
 * The decisions are hook.c's; this file does the I/O around them: the
 * state on stdin and the bundle's config.json (both capped), the
 * container's cgroup from /proc/PID/cgroup, the authority's devices and
 * budgets, setting them (undoing what was set when a later one fails) and
 * the record of what was set, /run/nxquota/hooks/<id> (root's, written
 * atomically), which poststop reads back.  Every failure is one line on
 * stderr, "nxquota-hook: container ID: why", and exit status 1, which
 * fails the container's start; nothing is left changed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <syslog.h>

#include <netlink/netlink.h>
#include <netlink/attr.h>

#include <linux/nxquota.h>

#include "ctl.h"
#include "fmt.h"
#include "hook.h"
#include "ledger.h"

#define STATE_DIR	"/run/nxquota/hooks"
#define PROC_CGROUP_MAX	(64 << 10)
#define RECORD_MAX	(1 << 20)

/* The container the messages name, once the state gave a safe id. */
static const char *ctr_id;

/*
 * The one line of a failure, "nxquota-hook: container ID: ...": 1.  It
 * goes to stderr and to syslog (LOG_DAEMON, LOG_ERR): crun gives hooks
 * /dev/null as stderr unless the container has the annotation
 * run.oci.hooks.stderr, and prints only "error executing hook"; the
 * journal is where an operator finds why.  Values from the container's
 * annotations reach the line only through hook_q(), escaped.
 */
static int __attribute__((format(printf, 1, 2))) fail_(const char *fmt, ...)
{
	char line[HOOK_ERR_LEN + 160];
	va_list ap;
	int n = 0;

	if (ctr_id)	/* hook_id_check(): at most HOOK_ID_MAX bytes */
		n = snprintf(line, sizeof(line), "container %s: ", ctr_id);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s\n", prog, line);
	openlog(prog, LOG_PID, LOG_DAEMON);
	syslog(LOG_ERR, "%s", line);
	closelog();
	return EX_FAIL;
}

static int usage(FILE *f, int rc)
{
	fprintf(f, "usage: %s [--control PATH] [createRuntime|poststop] "
		"< OCI-STATE\n"
		"An OCI hook: sets the container's nxquota budgets from its "
		"annotations\n(nxquota.io/max, min, pod-max, pod-min) and "
		"clears them at poststop.\nSee nxquota-hook(8).\n", prog);
	return rc;
}

/* ---- reading -------------------------------------------------------------- */

/* The next size of a read buffer: doubled, from 4 KiB, at most limit. */
static size_t grow(size_t cap, size_t limit)
{
	cap = cap < 2048 ? 4096 : cap * 2;
	return cap > limit ? limit : cap;
}

/* Read fd to its end, at most max bytes: 0 and a NUL-terminated *buf,
 * -EFBIG past max, or -errno. */
static int read_all(int fd, size_t max, char **buf, size_t *len)
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

/*
 * <bundle>/config.json, a regular file of at most HOOK_CONFIG_MAX bytes:
 * not a link (O_NOFOLLOW), and not a FIFO to block on (O_NONBLOCK, then
 * S_ISREG).
 */
static int read_config(const char *bundle, json_object **cfg)
{
	char err[HOOK_ERR_LEN], *path, *buf;
	struct stat st;
	size_t len;
	int fd, rc;

	if (!bundle || bundle[0] != '/')
		return fail_("the state's bundle %s is not an absolute path",
			     hook_q(bundle));
	if (asprintf(&path, "%s/config.json", bundle) < 0)
		return fail_("out of memory");
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	rc = fd < 0 ? -errno : fstat(fd, &st) ? -errno :
	     !S_ISREG(st.st_mode) ? -EINVAL :
	     st.st_size > HOOK_CONFIG_MAX ? -EFBIG :
	     read_all(fd, HOOK_CONFIG_MAX, &buf, &len);
	if (fd >= 0)
		close(fd);
	if (rc) {
		fail_("%s: %s", hook_q(path), rc == -EINVAL ?
		      "not a regular file" : rc == -EFBIG ?
		      "larger than 16 MiB" : strerror(-rc));
		free(path);
		return EX_FAIL;
	}
	free(path);
	rc = hook_json_parse(buf, len, "config.json", cfg, err);
	free(buf);
	return rc ? fail_("%s", err) : EX_OK;
}

/* The cgroup v2 path of /proc/<pid>/cgroup ("self" for pid 0). */
static int proc_cgroup(long long pid, char *path, size_t size)
{
	char err[HOOK_ERR_LEN], file[64], *buf;
	size_t len;
	int fd, rc;

	if (pid)
		snprintf(file, sizeof(file), "/proc/%lld/cgroup", pid);
	else
		snprintf(file, sizeof(file), "/proc/self/cgroup");
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail_("%s: %s (the container's process is gone?)", file,
			     strerror(errno));
	rc = read_all(fd, PROC_CGROUP_MAX, &buf, &len);
	close(fd);
	if (rc)
		return fail_("%s: %s", file, strerror(-rc));
	rc = hook_proc_cgroup(buf, path, size, err);
	free(buf);
	return rc ? fail_("%s", err) : EX_OK;
}

/* ---- the authority, quietly ----------------------------------------------- */

/*
 * ctl.c reports on stderr, in lines of its own; the hook's answer is
 * one line naming the container.  quiet_begin() sends stderr to a memfd
 * and quiet_end() brings back what was written, as one line.
 */
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

/* Connect to the authority (control: nxquotad's socket, or NULL). */
static int authority(struct ctl *n, const char *control)
{
	char msg[HOOK_ERR_LEN];
	struct quiet q;
	int rc;

	memset(n, 0, sizeof(*n));
	n->ufd = -1;
	n->control = control;
	quiet_begin(&q);
	rc = ctl_connect(n);
	quiet_end(&q, msg, sizeof(msg));
	if (rc)
		return fail_("%s", msg[0] ? msg : "no nxquota authority");
	return EX_OK;
}

/* The daemon's socket n talks to, or "" for the module. */
static const char *authority_path(const struct ctl *n)
{
	const char *env = getenv("NXQUOTA_CONTROL");

	if (n->ufd < 0)
		return "";
	if (n->control)
		return n->control;
	return env && env[0] ? env : NXQD_CONTROL_PATH;
}

static int ledger(struct ctl *n, struct ledger *l)
{
	char msg[HOOK_ERR_LEN];
	struct quiet q;
	int rc;

	quiet_begin(&q);
	rc = read_ledger(n, NULL, l);
	quiet_end(&q, msg, sizeof(msg));
	if (rc)
		return fail_("reading the authority's devices and budgets: %s",
			     msg[0] ? msg : "failed");
	return EX_OK;
}

/* One BUDGET_SET (clear: BUDGET_CLEAR) of path on key: r->error. */
static int budget_cmd(struct ctl *n, bool clear, const char *path,
		      const char *key, bool has_max, uint64_t max,
		      bool has_min, uint64_t min, struct reply *r)
{
	struct nl_msg *msg = ctl_new(n, clear ? NXQUOTA_CMD_BUDGET_CLEAR :
				     NXQUOTA_CMD_BUDGET_SET, 0);

	memset(r, 0, sizeof(*r));
	nla_put_string(msg, NXQUOTA_A_BUDGET_CGROUP_PATH, path);
	nla_put_string(msg, NXQUOTA_A_BUDGET_DEVICE, key);
	if (has_max && !clear)
		nla_put_u64(msg, NXQUOTA_A_BUDGET_MAX, max);
	if (has_min && !clear)
		nla_put_u64(msg, NXQUOTA_A_BUDGET_MIN, min);
	return ctl_request(n, msg, r);
}

/* "EDQUOT (Disk quota exceeded): the authority's message" */
static const char *why(const struct reply *r)
{
	static char buf[512];

	snprintf(buf, sizeof(buf), "%s (%s)%s%s", nxq_errno_name(-r->error),
		 strerror(-r->error), r->msg[0] ? ": " : "", r->msg);
	return buf;
}

/* ---- the state directory and the record -------------------------------------- */

/*
 * The directory of records (NXQUOTA_HOOK_STATE_DIR, else STATE_DIR),
 * made root's 0700 when create; its fd, -ENOENT when absent and not
 * create, or EX_FAIL's negation after saying why.
 */
static int state_dir(bool create)
{
	const char *dir = getenv("NXQUOTA_HOOK_STATE_DIR");
	struct stat st;
	char *parent;
	int fd;

	if (!dir || !dir[0])
		dir = STATE_DIR;
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
	if (fd < 0)
		return -fail_("state directory %s: %s", dir, strerror(errno));
	if (fstat(fd, &st) || st.st_uid != geteuid() ||
	    ((st.st_mode & 077) && fchmod(fd, 0700))) {
		close(fd);
		return -fail_("state directory %s is not this user's (root's) "
			      "own", dir);
	}
	if (flock(fd, LOCK_EX)) {
		close(fd);
		return -fail_("state directory %s: lock: %s", dir,
			      strerror(errno));
	}
	return fd;
}

/* Write the record as <id>, atomically (a temporary file, renamed). */
static int record_write(int dfd, const struct hook_record *r)
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

/* Read the record of id: 0, -ENOENT when there is none, EX_FAIL's negation. */
static int record_read(int dfd, const char *id, struct hook_record *r)
{
	char err[HOOK_ERR_LEN], *buf;
	struct stat st;
	size_t len;
	int fd, rc;

	fd = openat(dfd, id, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return -ENOENT;
	rc = fd < 0 ? -errno : fstat(fd, &st) ? -errno :
	     !S_ISREG(st.st_mode) ? -EINVAL : read_all(fd, RECORD_MAX, &buf,
						      &len);
	if (fd >= 0)
		close(fd);
	if (rc)
		return -fail_("record: %s", strerror(-rc));
	rc = hook_record_parse(buf, len, r, err);
	free(buf);
	if (rc)
		return -fail_("%s", err);
	if (strcmp(r->id, id))
		return -fail_("the record is container %s's", hook_q(r->id));
	return 0;
}

/* ---- createRuntime ------------------------------------------------------------ */

/* What a createRuntime run works with. */
struct run {
	const struct hook_state *st;
	json_object *cfg, *ann;
	struct ctl n;
	struct ledger l;
	struct hook_dev devs[HOOK_MAX_DEVS];
	struct hook_host host;
	bool given[HOOK_MAX_DEVS];
	struct hook_plan plan;
	char ctr[HOOK_PATH_MAX], pod[HOOK_PATH_MAX];
};

/* /dev/nvidia<index>'s MAJOR:MINOR (NXQUOTA_HOOK_DEV_DIR for tests). */
static int nvidia_devt(unsigned int index, unsigned int *ma, unsigned int *mi,
		       void *arg)
{
	const char *dir = getenv("NXQUOTA_HOOK_DEV_DIR");
	char path[HOOK_PATH_MAX];
	struct stat st;

	(void)arg;
	snprintf(path, sizeof(path), "%s/nvidia%u", dir && dir[0] ? dir : "/dev",
		 index);
	if (stat(path, &st))
		return -errno;
	if (!S_ISCHR(st.st_mode))
		return -ENODEV;
	*ma = major(st.st_rdev);
	*mi = minor(st.st_rdev);
	return 0;
}

/* The registered devices, as hook.c sees them. */
static int host_init(struct run *x)
{
	const struct dev *d = x->l.devs.v;
	const char *env;
	size_t i;

	if (x->l.devs.n > HOOK_MAX_DEVS)
		return fail_("the authority has %zu devices; this hook handles "
			     "%d", x->l.devs.n, HOOK_MAX_DEVS);
	for (i = 0; i < x->l.devs.n; i++)
		if (hook_dev_init(&x->devs[i], d[i].key, d[i].devt))
			return fail_("the authority's device %s has a bad devt "
				     "%s", hook_q(d[i].key), hook_q(d[i].devt));
	x->host = (struct hook_host){ .devs = x->devs, .ndevs = x->l.devs.n,
				      .nvidia = nvidia_devt };
	/* the operator's choice, in the hook's own environment (hooks.d) */
	env = getenv("NXQUOTA_HOOK_TRUST_ENV");
	x->host.trust_env = env && !strcmp(env, "1");
	return EX_OK;
}

/* The container's cgroup (and its pod's, when the plan has pod budgets). */
static int cgroups(struct run *x)
{
	char err[HOOK_ERR_LEN], self[HOOK_PATH_MAX];
	int rc;

	if (x->st->pid <= 0)
		return fail_("the state has no pid");
	rc = proc_cgroup(x->st->pid, x->ctr, sizeof(x->ctr));
	if (!rc)
		rc = proc_cgroup(0, self, sizeof(self));
	if (rc)
		return rc;
	if (hook_cgroup_check(x->ctr, err) || hook_cgroup_own(x->ctr, self, err))
		return fail_("%s", err);
	if (!x->plan.pod)
		return EX_OK;
	if (!hook_in_pod(x->ann) && !hook_in_pod(json_object_object_get(
			x->cfg, "annotations")))
		return fail_("pod-scope annotations (nxquota.io/pod-*), but the "
			     "container is not in a pod (no "
			     "io.kubernetes.cri.sandbox-id, "
			     "io.kubernetes.cri-o.SandboxID or "
			     "io.kubernetes.pod.uid annotation)");
	if (hook_cgroup_parent(x->ctr, x->pod, sizeof(x->pod), err) ||
	    hook_pod_cgroup_check(x->pod, x->ann, err))
		return fail_("%s", err);
	return EX_OK;
}

/* The budgets the authority has, for hook_reconcile(). */
static int reconcile(struct run *x)
{
	const struct node *nd = x->l.nodes.v;
	char err[HOOK_ERR_LEN];
	struct hook_node *hn;
	size_t i;
	int rc;

	hn = calloc(x->l.nodes.n + 1, sizeof(*hn));
	if (!hn)
		return fail_("out of memory");
	for (i = 0; i < x->l.nodes.n; i++)
		hn[i] = (struct hook_node){ .device = nd[i].device,
					    .path = nd[i].path,
					    .max = nd[i].max, .min = nd[i].min };
	rc = hook_reconcile(&x->plan, &x->host, x->ctr, x->pod, hn,
			    x->l.nodes.n, err);
	free(hn);
	return rc ? fail_("%s", err) : EX_OK;
}

/* Put back what budget b changed (its old values, or no budget). */
static int undo_one(struct run *x, const struct hook_budget *b, char *msg,
		    size_t size)
{
	const char *path = b->scope == HOOK_POD ? x->pod : x->ctr;
	const char *key = x->devs[b->dev].key;
	struct reply r;

	if (!budget_cmd(&x->n, !b->existed, path, key, b->has_max, b->old_max,
			b->has_min, b->old_min, &r))
		return 0;
	if (snprintf(msg, size, "; undoing it on %s %s failed too: %s", path,
		     key, why(&r)) >= (int)size)
		strcpy(msg + size - 4, "...");
	return -1;
}

/* What budget b sets, and from where: "max nxquota.io/max="40Gi"". */
static const char *asks(const struct hook_budget *b)
{
	static char buf[512];
	int n = 0;

	buf[0] = '\0';
	if (b->has_max)
		n = snprintf(buf, sizeof(buf), "max %s=%s", b->max_src,
			     hook_q(b->max_txt));
	if (b->has_min && n >= 0 && (size_t)n < sizeof(buf))
		snprintf(buf + n, sizeof(buf) - (size_t)n, "%smin %s=%s",
			 n ? " and " : "", b->min_src, hook_q(b->min_txt));
	return buf;
}

/* Set the plan's budgets; on a refusal, undo those set and say why. */
static int apply(struct run *x)
{
	char undo[512] = "";
	struct hook_budget *b;
	const char *path;
	struct reply r;
	size_t i, j;

	for (i = 0; i < x->plan.n; i++) {
		b = &x->plan.b[i];
		path = b->scope == HOOK_POD ? x->pod : x->ctr;
		if (b->skip || !budget_cmd(&x->n, false, path,
					   x->devs[b->dev].key, b->has_max,
					   b->max, b->has_min, b->min, &r))
			continue;
		for (j = i; j-- > 0;)
			if (!x->plan.b[j].skip && !undo[0])
				undo_one(x, &x->plan.b[j], undo, sizeof(undo));
		return fail_("the authority refused %s for %s on %s: %s%s",
			     asks(b), path, x->devs[b->dev].key, why(&r), undo);
	}
	return EX_OK;
}

/* Undo the whole plan (the record could not be written). */
static void undo_all(struct run *x)
{
	char msg[512];
	size_t i;

	for (i = x->plan.n; i-- > 0;)
		if (!x->plan.b[i].skip)
			undo_one(x, &x->plan.b[i], msg, sizeof(msg));
}

/* The record of a run's plan. */
static void record_fill(const struct run *x, struct hook_record *r)
{
	const struct hook_budget *b;
	size_t i;

	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "%s", x->st->id);
	snprintf(r->control, sizeof(r->control), "%s", authority_path(&x->n));
	snprintf(r->cgroup, sizeof(r->cgroup), "%s", x->ctr);
	snprintf(r->pod, sizeof(r->pod), "%s", x->pod);
	for (i = 0; i < x->plan.n; i++) {
		b = &x->plan.b[i];
		r->b[r->n++] = (struct hook_rec_budget){
			.scope = b->scope, .created = !b->existed,
			.has_max = b->has_max, .max = b->max,
			.has_min = b->has_min, .min = b->min,
		};
		snprintf(r->b[r->n - 1].device, sizeof(r->b[0].device), "%s",
			 x->devs[b->dev].key);
	}
}

/* Validate everything, then set, then record: EX_OK or EX_FAIL. */
static int create_plan(struct run *x, const char *control)
{
	char err[HOOK_ERR_LEN];
	struct hook_record *rec;
	int rc, dfd, e;

	rc = authority(&x->n, control);
	if (rc)
		return rc;
	dfd = state_dir(true);
	if (dfd < 0)
		return -dfd;
	rc = ledger(&x->n, &x->l);
	if (!rc)
		rc = host_init(x);
	if (!rc && (hook_given(x->cfg, &x->host, x->given, err) ||
		    hook_plan_build(x->ann, x->cfg, &x->host, x->given,
				    &x->plan, err)))
		rc = fail_("%s", err);
	if (!rc && x->plan.n)
		rc = cgroups(x);
	if (!rc && x->plan.n)
		rc = reconcile(x);
	if (!rc && x->plan.n)
		rc = apply(x);
	if (!rc && x->plan.n) {
		rec = malloc(sizeof(*rec));
		if (rec)
			record_fill(x, rec);
		e = rec ? record_write(dfd, rec) : -ENOMEM;
		free(rec);
		if (e) {
			undo_all(x);
			rc = fail_("writing the record: %s (budgets undone)",
				   strerror(-e));
		}
	}
	close(dfd);
	ledger_free(&x->l);
	ctl_close(&x->n);
	return rc;
}

static int create(const struct hook_state *st, const char *control)
{
	char err[HOOK_ERR_LEN];
	struct run *x;
	int rc;

	x = calloc(1, sizeof(*x));
	if (!x)
		return fail_("out of memory");
	x->st = st;
	rc = read_config(st->bundle, &x->cfg);
	if (!rc && hook_annotations(st, x->cfg, &x->ann, err))
		rc = fail_("%s", err);
	/* nothing asked: nothing to do, with or without an authority */
	if (!rc && hook_wanted(x->ann, x->cfg))
		rc = create_plan(x, control);
	json_object_put(x->cfg);
	free(x);
	return rc;
}

/* ---- poststop --------------------------------------------------------------- */

/* Clear the container's budgets of record r; the pod's stay. */
static int clear_record(struct ctl *n, const struct hook_record *r)
{
	const struct hook_rec_budget *b;
	struct reply rep;
	size_t i;

	for (i = 0; i < r->n; i++) {
		b = &r->b[i];
		if (b->scope != HOOK_CONTAINER)
			continue;
		if (!budget_cmd(n, true, r->cgroup, b->device, false, 0, false,
				0, &rep) || rep.error == -ENOENT ||
		    rep.error == -ENODEV)
			continue;	/* cleared, or its cgroup/device is gone */
		return fail_("clearing the budget of %s on %s: %s", r->cgroup,
			     b->device, why(&rep));
	}
	return EX_OK;
}

static int poststop(const struct hook_state *st, const char *control)
{
	struct hook_record *r;
	struct ctl n;
	int dfd, rc;

	dfd = state_dir(false);
	if (dfd == -ENOENT)
		return EX_OK;
	if (dfd < 0)
		return -dfd;
	r = malloc(sizeof(*r));
	rc = r ? record_read(dfd, st->id, r) : -fail_("out of memory");
	if (rc == -ENOENT) {		/* the hook set nothing for it */
		rc = 0;
		goto out;
	}
	if (rc)
		goto out;
	rc = authority(&n, r->control[0] ? r->control : control);
	if (!rc) {
		rc = clear_record(&n, r);
		ctl_close(&n);
	}
	if (!rc && unlinkat(dfd, st->id, 0) && errno != ENOENT)
		rc = fail_("removing the record: %s", strerror(errno));
out:
	free(r);
	close(dfd);
	return rc < 0 ? -rc : rc;
}

/* ---- main ------------------------------------------------------------------- */

int main(int argc, char **argv)
{
	const char *control = NULL, *arg = NULL;
	char err[HOOK_ERR_LEN], *buf;
	struct hook_state st;
	enum hook_stage stage;
	json_object *root;
	size_t len;
	int i, rc;

	prog = "nxquota-hook";
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return usage(stdout, EX_OK);
		if (!strcmp(argv[i], "--version")) {
			printf("nxquota-hook %s\n", NXQ_VERSION);
			return EX_OK;
		}
		if (!strcmp(argv[i], "--control") && i + 1 < argc)
			control = argv[++i];
		else if (argv[i][0] != '-' && !arg)
			arg = argv[i];
		else
			return usage(stderr, EX_FAIL);
	}
	rc = read_all(STDIN_FILENO, HOOK_STATE_MAX, &buf, &len);
	if (rc)
		return fail_("reading the state on stdin: %s", rc == -EFBIG ?
			     "larger than 1 MiB" : strerror(-rc));
	rc = hook_json_parse(buf, len, "the state on stdin", &root, err);
	free(buf);
	if (rc)
		return fail_("%s", err);
	if (hook_state_parse(root, &st, err) || hook_id_check(st.id, err)) {
		json_object_put(root);
		return fail_("%s", err);
	}
	ctr_id = st.id;
	if (hook_stage(arg, st.status, &stage, err))
		rc = fail_("%s", err);
	else
		rc = stage == HOOK_CREATE ? create(&st, control) :
					    poststop(&st, control);
	json_object_put(root);
	return rc;
}
