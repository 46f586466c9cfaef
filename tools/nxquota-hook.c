// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota-hook: an OCI runtime hook that sets a container's GPU memory
 * budgets from its annotations at createRuntime and clears them at
 * poststop, through the authority (the module's generic netlink family,
 * or nxquotad's control socket: ctl.h).
 *
 * The decisions are hook*.c's (hook.h); this file does the I/O around
 * them: the state on stdin and the bundle's config.json (both capped,
 * both through hook_json.c's gate), the container's cgroup from
 * /proc/PID/cgroup, the authority's devices and budgets (hook_auth.c:
 * every wait on it ends at the run's timeout), setting them through
 * hook_apply() (which undoes everything set when a later one fails) and
 * the record of what was set, /run/nxquota/hooks/<id> (hook_state.c:
 * root's, written atomically), which poststop reads back.  No lock is
 * held while the authority is asked, but the pod's own while a container
 * sets its pod's budgets.  Every failure is one line on stderr,
 * "nxquota-hook: container ID: why", and exit status 1, which fails the
 * container's start; nothing is left changed, or the line says what was
 * and the nxquotactl command that puts it back.
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
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <syslog.h>

#include <linux/nxquota.h>

#include "ctl.h"
#include "hook.h"
#include "hook_auth.h"
#include "hook_state.h"
#include "ledger.h"

#define PROC_CGROUP_MAX	(64 << 10)

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

	hook_watchdog_off();	/* one line: this one */
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
	fprintf(f, "usage: %s [--control PATH] [--timeout SECONDS] "
		"[createRuntime|poststop] < OCI-STATE\n"
		"       %s [--control PATH] [--timeout SECONDS] given < CONFIG\n"
		"An OCI hook: sets the container's nxquota budgets from its "
		"annotations\n(nxquota.io/max, min, pod-max, pod-min) and "
		"clears them at poststop.\n'given' prints what a container "
		"of CONFIG (config.json's annotations,\nprocess.env, "
		"linux.devices) was given: {\"given\": [KEY...], "
		"\"budget\": BOOL}.\nSee nxquota-hook(8).\n", prog, prog);
	return rc;
}

/* ---- reading -------------------------------------------------------------- */

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
	     hook_read_all(fd, HOOK_CONFIG_MAX, &buf, &len);
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
	rc = hook_read_all(fd, PROC_CGROUP_MAX, &buf, &len);
	close(fd);
	if (rc)
		return fail_("%s: %s", file, strerror(-rc));
	rc = hook_proc_cgroup(buf, path, size, err);
	free(buf);
	return rc ? fail_("%s", err) : EX_OK;
}

/* ---- createRuntime ------------------------------------------------------------ */

/* What a createRuntime run works with. */
struct run {
	const struct hook_state *st;
	json_object *cfg, *ann;
	struct hook_auth a;
	struct ledger l;
	struct hook_dev devs[HOOK_MAX_DEVS];
	struct hook_host host;
	bool given[HOOK_MAX_DEVS];
	struct hook_plan plan;
	char ctr[HOOK_PATH_MAX], pod[HOOK_PATH_MAX];
	int dfd;
	struct hook_podlock podlock;
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

/*
 * The budgets in place, for hook_reconcile().  With pod budgets, under
 * the pod's lock, read again: a sibling may have set them since.
 */
static int reconcile(struct run *x)
{
	char err[HOOK_ERR_LEN];
	const struct node *nd;
	struct hook_node *hn;
	size_t i;
	int rc;

	if (x->plan.pod) {
		if (hook_pod_lock(x->dfd, x->pod, hook_auth_left_ms(&x->a),
				  &x->podlock, err))
			return fail_("%s; nothing was changed", err);
		ledger_free(&x->l);
		if (hook_auth_ledger(&x->a, &x->l, err))
			return fail_("%s", err);
	}
	nd = x->l.nodes.v;
	hn = calloc(x->l.nodes.n + 1, sizeof(*hn));
	if (!hn)
		return fail_("out of memory");
	for (i = 0; i < x->l.nodes.n; i++)
		hn[i] = (struct hook_node){ .device = nd[i].device,
					    .path = nd[i].path,
					    .max = nd[i].field[NXQ_BF_MAX],
					    .min = nd[i].field[NXQ_BF_MIN] };
	rc = hook_reconcile(&x->plan, &x->host, x->ctr, x->pod, hn,
			    x->l.nodes.n, err);
	free(hn);
	return rc ? fail_("%s", err) : EX_OK;
}

/* The record of a run's plan. */
static void record_fill(const struct run *x, struct hook_record *r)
{
	const struct hook_budget *b;
	size_t i;

	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "%s", x->st->id);
	snprintf(r->control, sizeof(r->control), "%s", x->a.path);
	snprintf(r->cgroup, sizeof(r->cgroup), "%s", x->ctr);
	snprintf(r->pod, sizeof(r->pod), "%s", x->pod);
	hook_record_k8s(x->ann, r);
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

/*
 * A record of this container written before (the same id and cgroup: a
 * runtime plugin's Synchronize after its restart runs createRuntime
 * again) keeps saying which budgets the container's first run created:
 * this run found them in place only because that run set them.
 */
static void record_keep(int dfd, struct hook_record *rec)
{
	char err[HOOK_ERR_LEN];
	struct hook_record *old;
	size_t i, j;

	old = malloc(sizeof(*old));
	if (!old)
		return;
	if (!hook_record_read(dfd, rec->id, old, err) &&
	    !strcmp(old->cgroup, rec->cgroup))
		for (i = 0; i < rec->n; i++)
			for (j = 0; j < old->n; j++)
				if (old->b[j].scope == rec->b[i].scope &&
				    !strcmp(old->b[j].device, rec->b[i].device))
					rec->b[i].created = old->b[j].created;
	free(old);
}

/* Record what was set; if that fails, undo it all. */
static int record(struct run *x, const struct hook_ops *ops)
{
	char err[HOOK_ERR_LEN], msg[HOOK_ERR_LEN];
	struct hook_record *rec;
	int e;

	/* the authority is done with: the directory's lock has its own wait */
	hook_watchdog_off();
	e = hook_dir_lock(x->dfd, x->a.timeout_ms, err);
	if (!e) {
		rec = malloc(sizeof(*rec));
		if (rec) {
			record_fill(x, rec);
			record_keep(x->dfd, rec);
		}
		e = rec ? hook_record_write(x->dfd, rec) : -ENOMEM;
		free(rec);
		hook_dir_unlock(x->dfd);
		if (e)
			snprintf(err, sizeof(err), "writing the record: %s",
				 strerror(-e));
	}
	if (!e)
		return EX_OK;
	hook_undo(&x->plan, &x->host, x->ctr, x->pod, x->a.path, ops, msg,
		  sizeof(msg));
	return fail_("%s%s", err, msg);
}

/* Validate everything, then set, then record: EX_OK or EX_FAIL. */
static int create_plan(struct run *x, const char *control,
		       unsigned int timeout_ms)
{
	const struct hook_ops ops = { .budget = hook_auth_budget,
				      .undo_begin = hook_auth_undo_begin,
				      .note = hook_auth_note, .arg = &x->a };
	char err[HOOK_ERR_LEN];
	int rc;

	x->podlock.fd = -1;
	x->dfd = hook_state_dir(true, err);
	if (x->dfd < 0)
		return fail_("%s", err);
	hook_auth_init(&x->a, control, timeout_ms);
	rc = hook_auth_connect(&x->a, err) ||
	     hook_auth_ledger(&x->a, &x->l, err) ? fail_("%s", err) : 0;
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
	if (!rc && x->plan.n &&
	    hook_apply(&x->plan, &x->host, x->ctr, x->pod, x->a.path, &ops, err))
		rc = fail_("%s", err);
	hook_pod_unlock(x->dfd, &x->podlock);
	if (!rc && x->plan.n)
		rc = record(x, &ops);
	hook_watchdog_off();
	close(x->dfd);
	ledger_free(&x->l);
	hook_auth_close(&x->a);
	return rc;
}

static int create(const struct hook_state *st, const char *control,
		  unsigned int timeout_ms)
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
		rc = create_plan(x, control, timeout_ms);
	json_object_put(x->cfg);
	free(x);
	return rc;
}

/* ---- poststop --------------------------------------------------------------- */

/*
 * Clear the container's budgets of record r (the pod's stay), each one
 * whatever became of the one before: EX_OK, or EX_FAIL naming those left
 * and how to clear them.
 */
static int clear_record(struct hook_auth *a, const struct hook_record *r)
{
	char why[HOOK_WHY_LEN], left[HOOK_ERR_LEN] = "";
	const struct hook_rec_budget *b;
	size_t i, n = 0, nleft = 0;
	int rc;

	for (i = 0; i < r->n; i++) {
		b = &r->b[i];
		if (b->scope != HOOK_CONTAINER)
			continue;
		rc = hook_auth_budget(a, true, r->cgroup, b->device, false, 0,
				      false, 0, why, sizeof(why));
		if (!rc || rc == -ENOENT || rc == -ENODEV)
			continue;	/* cleared, or its cgroup/device is gone */
		nleft++;
		n += (size_t)snprintf(left + n, n < sizeof(left) ?
				      sizeof(left) - n : 0, "%s%s on %s (%s; "
				      "clear it with: nxquotactl%s%s clear %s %s)",
				      n ? "; " : "", r->cgroup, b->device, why,
				      a->path[0] ? " --control " : "", a->path,
				      r->cgroup, b->device);
	}
	if (!nleft)
		return EX_OK;
	return fail_("clearing the container's budgets: %zu left, the record "
		     "kept: %s", nleft, left);
}

static int poststop(const struct hook_state *st, const char *control,
		    unsigned int timeout_ms)
{
	char err[HOOK_ERR_LEN];
	struct hook_record *r;
	struct hook_auth a;
	int dfd, rc;

	dfd = hook_state_dir(false, err);
	if (dfd == -ENOENT)
		return EX_OK;
	if (dfd < 0)
		return fail_("%s", err);
	r = malloc(sizeof(*r));
	rc = r ? hook_record_read(dfd, st->id, r, err) : -ENOMEM;
	if (rc == -ENOENT) {		/* the hook set nothing for it */
		rc = EX_OK;
		goto out;
	}
	if (rc) {
		rc = fail_("%s", r ? err : "out of memory");
		goto out;
	}
	hook_auth_init(&a, r->control[0] ? r->control : control, timeout_ms);
	rc = hook_auth_connect(&a, err) ? fail_("%s", err) : clear_record(&a, r);
	hook_auth_close(&a);
	hook_watchdog_off();
	if (!rc && !hook_dir_lock(dfd, timeout_ms, err)) {
		if (unlinkat(dfd, st->id, 0) && errno != ENOENT)
			rc = fail_("removing the record: %s", strerror(errno));
		hook_dir_unlock(dfd);
	} else if (!rc) {
		rc = fail_("%s", err);
	}
out:
	free(r);
	close(dfd);
	return rc;
}

/* ---- given --------------------------------------------------------------------- */

/*
 * nxquota-hook given: for a runtime plugin that adjusts a container before
 * it exists (nxquota-nri's CreateContainer), what it was given and
 * whether it has a budget (hook_given_report()), from config.json's shape
 * on stdin ({"annotations", "process": {"env"}, "linux": {"devices"}}),
 * against the authority's devices: one JSON object on stdout.  The
 * authority must answer (its devices decide), fail-closed -- but for a
 * container with no device node, no device named in its environment and
 * no budget asked (hook_gpu_hinted()), which is given nothing whatever
 * the authority has: a node's other containers start while it restarts.
 */
static int given_stage(const char *control, unsigned int timeout_ms)
{
	struct hook_state st = { 0 };
	char err[HOOK_ERR_LEN], *buf;
	json_object *report = NULL;
	struct run *x;
	size_t len;
	int rc;

	rc = hook_read_all(STDIN_FILENO, HOOK_CONFIG_MAX, &buf, &len);
	if (rc)
		return fail_("reading the container on stdin: %s", rc == -EFBIG ?
			     "larger than 16 MiB" : strerror(-rc));
	x = calloc(1, sizeof(*x));
	if (!x) {
		free(buf);
		return fail_("out of memory");
	}
	rc = hook_json_parse(buf, len, "the container on stdin", &x->cfg, err);
	free(buf);
	if (!rc && hook_annotations(&st, x->cfg, &x->ann, err))
		rc = -EINVAL;
	if (rc) {
		json_object_put(x->cfg);
		free(x);
		return fail_("%s", err);
	}
	/* nothing that could give it a device: no need of the authority */
	if (!hook_gpu_hinted(x->ann, x->cfg)) {
		json_object_put(x->cfg);
		free(x);
		printf("{\"given\":[],\"budget\":false}\n");
		return fflush(stdout) ? fail_("writing the report: %s",
					      strerror(errno)) : 0;
	}
	hook_auth_init(&x->a, control, timeout_ms);
	rc = hook_auth_connect(&x->a, err) ||
	     hook_auth_ledger(&x->a, &x->l, err) ? fail_("%s", err) : 0;
	if (!rc)
		rc = host_init(x);
	if (!rc && hook_given_report(x->ann, x->cfg, &x->host, &report, err))
		rc = fail_("%s", err);
	hook_watchdog_off();
	if (!rc) {
		printf("%s\n", json_object_to_json_string_ext(report,
				JSON_C_TO_STRING_PLAIN |
				JSON_C_TO_STRING_NOSLASHESCAPE));
		if (fflush(stdout))
			rc = fail_("writing the report: %s", strerror(errno));
	}
	json_object_put(report);
	ledger_free(&x->l);
	hook_auth_close(&x->a);
	json_object_put(x->cfg);
	free(x);
	return rc;
}

/* ---- main ------------------------------------------------------------------- */

/* The timeout: --timeout's, else the hook's environment's (hooks.d, the
 * CDI spec), else HOOK_TIMEOUT_MS.  EX_OK or EX_FAIL. */
static int timeout_of(const char *opt, unsigned int *ms)
{
	const char *env = getenv("NXQUOTA_HOOK_TIMEOUT");
	char err[HOOK_ERR_LEN];

	if (opt)
		return hook_timeout_parse(opt, ms, err) ?
		       fail_("--timeout: %s", err) : EX_OK;
	if (env && env[0])
		return hook_timeout_parse(env, ms, err) ?
		       fail_("NXQUOTA_HOOK_TIMEOUT: %s", err) : EX_OK;
	return EX_OK;
}

int main(int argc, char **argv)
{
	const char *control = NULL, *arg = NULL, *opt_tmo = NULL;
	char err[HOOK_ERR_LEN], *buf, prefix[HOOK_ID_MAX + 32];
	unsigned int timeout_ms = HOOK_TIMEOUT_MS;
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
		if (!strcmp(argv[i], "--control") && i + 1 < argc) {
			control = argv[++i];
		} else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
			opt_tmo = argv[++i];
		} else if (argv[i][0] != '-' && !arg) {
			arg = argv[i];
		} else {
			return usage(stderr, EX_FAIL);
		}
	}
	if (arg && !strcmp(arg, "given")) {
		hook_watchdog_init("");
		rc = timeout_of(opt_tmo, &timeout_ms);
		return rc ? rc : given_stage(control, timeout_ms);
	}
	rc = hook_read_all(STDIN_FILENO, HOOK_STATE_MAX, &buf, &len);
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
	snprintf(prefix, sizeof(prefix), "container %s: ", ctr_id);
	hook_watchdog_init(prefix);
	rc = timeout_of(opt_tmo, &timeout_ms);
	if (!rc && hook_stage(arg, st.status, &stage, err))
		rc = fail_("%s", err);
	else if (!rc)
		rc = stage == HOOK_CREATE ? create(&st, control, timeout_ms) :
					    poststop(&st, control, timeout_ms);
	json_object_put(root);
	return rc;
}
