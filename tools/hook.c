// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota-hook's decisions (hook.h), first of three files: the input
 * and the container's cgroups here, the GPUs given in hook_dev.c, the
 * plan, what is in place and the record in hook_plan.c (what they share:
 * hook_int.h).  Together they read an OCI state and a bundle's
 * config.json, both written by a tenant, and decide which budgets to set
 * on which devices of the container's cgroup and of its pod's -- or why
 * not.  Pure: the JSON comes parsed (json-c), the host's devices and
 * /dev/nvidiaN come from struct hook_host, nothing here reads a file or
 * talks to the authority.
 *
 * The contract (nxquota-hook(8)):
 *  - annotations nxquota.io/{max,min,pod-max,pod-min}[.<gpu>], values
 *    Kubernetes quantities, per GPU; a per-GPU key beats the all-GPU
 *    one, which beats process.env's NVIDIA_GPU_MEMORY_LIMIT (max) and
 *    NVIDIA_GPU_MEMORY_REQUEST (min), which beat HAMi's
 *    CUDA_DEVICE_MEMORY_LIMIT[_<i>], as its device plugin or its DRA
 *    driver's CDI spec writes them (hook_plan.c);
 *  - the GPUs given: linux.devices' character devices matched by
 *    MAJOR:MINOR against the registered devices; NVIDIA_VISIBLE_DEVICES
 *    (indexes, UUIDs, all, none, void), NXQUOTA_DEVICES and
 *    NXQUOTA_DEVICE_<X> (keys) for devices without a node, and for those
 *    with one only if the operator trusts process.env (a tenant writes
 *    it: naming a GPU there gives no access to it);
 *  - the pod's cgroup is the container's parent, for a container that
 *    Kubernetes or podman put in a pod, and only when the parent is laid
 *    out as kubelet or podman lay out a pod's (hook_pod_cgroup_check()).
 * The JSON itself is hook_json.c's: exactly what the text says, or
 * refused.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook.h"
#include "hook_int.h"
#include "size.h"

int hook_fail(char *err, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, HOOK_ERR_LEN, fmt, ap);
	va_end(ap);
	return rc;
}

const char *hook_q(const char *s)
{
	static char bufs[8][160];
	static unsigned int next;
	char *b = bufs[next++ % 8], *p = b;

	if (!s)
		return "(none)";
	*p++ = '"';
	for (; *s && p - b < 140; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			p += sprintf(p, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			p += sprintf(p, "\\x%02x", c);
		else
			*p++ = (char)c;
	}
	if (*s)
		p += sprintf(p, "...");
	*p++ = '"';
	*p = '\0';
	return b;
}

/* ---- input ------------------------------------------------------------------ */

/* The string member key of o: 0 (*out NULL when absent) or -EINVAL. */
int hook_get_str(json_object *o, const char *key, const char *what,
		 const char **out, char *err)
{
	json_object *v;

	*out = NULL;
	if (!o || !json_object_object_get_ex(o, key, &v) || !v)
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return hook_fail(err, -EINVAL, "%s: %s is not a string", what, key);
	*out = json_object_get_string(v);
	if ((size_t)json_object_get_string_len(v) != strlen(*out))
		return hook_fail(err, -EINVAL, "%s: %s holds a NUL byte", what, key);
	return 0;
}

/* The member key of o if it has type t: 0 (*out NULL when absent), -EINVAL. */
int hook_get_typed(json_object *o, const char *key, enum json_type t,
		   const char *what, json_object **out, char *err)
{
	*out = NULL;
	if (!o || !json_object_object_get_ex(o, key, out) || !*out) {
		*out = NULL;
		return 0;
	}
	if (!json_object_is_type(*out, t))
		return hook_fail(err, -EINVAL, "%s: %s is not %s", what, key,
			    t == json_type_object ? "an object" :
			    t == json_type_array ? "an array" : "a number");
	return 0;
}

int hook_state_parse(json_object *root, struct hook_state *st, char *err)
{
	json_object *pid;
	int rc;

	memset(st, 0, sizeof(*st));
	st->root = root;
	rc = hook_get_str(root, "id", "state", &st->id, err);
	if (!rc && !st->id)
		rc = hook_fail(err, -EINVAL, "state: no id");
	if (!rc)
		rc = hook_get_str(root, "status", "state", &st->status, err);
	if (!rc)
		rc = hook_get_str(root, "bundle", "state", &st->bundle, err);
	if (!rc)
		rc = hook_get_typed(root, "annotations", json_type_object, "state",
			       &st->annotations, err);
	if (!rc)
		rc = hook_get_typed(root, "pid", json_type_int, "state", &pid, err);
	if (rc || !pid)
		return rc;
	st->pid = (long long)json_object_get_int64(pid);
	if (st->pid < 0 || st->pid > INT_MAX)
		return hook_fail(err, -EINVAL, "state: pid %lld is not a process id",
			    st->pid);
	return 0;
}

int hook_id_check(const char *id, char *err)
{
	size_t n = strlen(id);

	if (!n || n > HOOK_ID_MAX || id[0] == '.' ||
	    strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		       "0123456789_.-") != n)
		return hook_fail(err, -EINVAL, "container id %s is not a safe file "
			    "name ([A-Za-z0-9_.-], at most %d bytes, not "
			    "starting with '.')", hook_q(id), HOOK_ID_MAX);
	return 0;
}

int hook_stage(const char *arg, const char *status, enum hook_stage *out,
	       char *err)
{
	const char *s = arg ? arg : status;

	if (!s)
		return hook_fail(err, -EINVAL, "no stage: no argument and no status "
			    "in the state");
	if (arg ? !strcmp(s, "createRuntime") || !strcmp(s, "prestart")
		: !strcmp(s, "creating") || !strcmp(s, "created")) {
		*out = HOOK_CREATE;
		return 0;
	}
	if (!strcmp(s, arg ? "poststop" : "stopped")) {
		*out = HOOK_STOP;
		return 0;
	}
	if (arg)
		return hook_fail(err, -EINVAL, "unknown stage %s (createRuntime, "
			    "prestart or poststop)", hook_q(s));
	return hook_fail(err, -EINVAL, "the state's status %s is no stage of this "
		    "hook (creating, created or stopped); name the stage",
		    hook_q(s));
}

int hook_annotations(const struct hook_state *st, json_object *cfg,
		     json_object **ann, char *err)
{
	*ann = st->annotations;
	if (*ann)
		return 0;
	return hook_get_typed(cfg, "annotations", json_type_object, "config.json",
			 ann, err);
}

int hook_env(json_object *cfg, const char *name, const char **val, char *err)
{
	size_t i, n, len = strlen(name);
	json_object *proc, *env, *e;
	const char *s;
	int rc, found = 0;

	rc = hook_get_typed(cfg, "process", json_type_object, "config.json", &proc,
		       err);
	if (!rc)
		rc = hook_get_typed(proc, "env", json_type_array, "config.json "
			       "process", &env, err);
	if (rc || !proc || !env)
		return rc;
	n = json_object_array_length(env);
	for (i = 0; i < n; i++) {
		e = json_object_array_get_idx(env, i);
		if (!json_object_is_type(e, json_type_string))
			return hook_fail(err, -EINVAL, "config.json: process.env[%zu] "
				    "is not a string", i);
		s = json_object_get_string(e);
		if ((size_t)json_object_get_string_len(e) != strlen(s))
			return hook_fail(err, -EINVAL, "config.json: process.env[%zu] "
				    "%s holds a NUL byte", i, hook_q(s));
		if (strncmp(s, name, len) || s[len] != '=')
			continue;
		if (found++)
			return hook_fail(err, -EINVAL, "config.json: process.env sets "
				    "%s twice", name);
		*val = s + len + 1;
	}
	return found;
}

bool hook_wanted(json_object *ann, json_object *cfg)
{
	json_object *proc = NULL, *env = NULL;
	char err[HOOK_ERR_LEN];
	const char *v, *s;
	size_t i, n;

	if (ann) {
		json_object_object_foreach(ann, key, val) {
			(void)val;
			if (!strncmp(key, ANN_PREFIX, strlen(ANN_PREFIX)))
				return true;
		}
	}
	/* a malformed process.env counts: the plan then says what is wrong */
	if (hook_env(cfg, ENV_LIMIT, &v, err) ||
	    hook_env(cfg, ENV_REQUEST, &v, err) ||
	    hook_env(cfg, ENV_HAMI, &v, err))
		return true;
	/* HAMi's CUDA_DEVICE_MEMORY_LIMIT_<i>: its device plugin's, or its
	 * DRA driver's (NVIDIA_VISIBLE_DEVICES=void), the same names */
	if (json_object_object_get_ex(cfg, "process", &proc) &&
	    json_object_object_get_ex(proc, "env", &env) &&
	    json_object_is_type(env, json_type_array)) {
		n = json_object_array_length(env);
		for (i = 0; i < n; i++) {
			s = json_object_get_string(
				json_object_array_get_idx(env, i));
			if (s && !strncmp(s, ENV_HAMI "_", strlen(ENV_HAMI) + 1))
				return true;
		}
	}
	return false;
}

/* ---- the container's cgroups ---------------------------------------------------- */

/* A cgroup path we may name to the authority: "/a/b", no ".", "..", "//". */
static int cgroup_path_check(const char *p, char *err)
{
	const char *c = p;
	size_t n;

	if (p[0] != '/')
		return hook_fail(err, -EINVAL, "cgroup %s is not a path from the "
			    "cgroup2 root", hook_q(p));
	if (!p[1])
		return hook_fail(err, -EINVAL, "the container is in the root cgroup");
	while (*c == '/') {
		n = strcspn(++c, "/");
		if (!n || (n == 1 && c[0] == '.') ||
		    (n == 2 && c[0] == '.' && c[1] == '.'))
			return hook_fail(err, -EINVAL, "cgroup %s is not a plain path "
				    "(empty, \".\" or \"..\" component; outside "
				    "the hook's cgroup namespace?)", hook_q(p));
		c += n;
	}
	for (c = p; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return hook_fail(err, -EINVAL, "cgroup %s holds a control "
				    "character", hook_q(p));
	return 0;
}

int hook_proc_cgroup(const char *text, char *path, size_t size, char *err)
{
	const char *l, *end;
	size_t n;

	for (l = text; *l; l = end + (*end == '\n')) {
		end = l + strcspn(l, "\n");
		if (strncmp(l, "0::", 3))
			continue;
		l += 3;
		n = (size_t)(end - l);
		if (n >= size)
			return hook_fail(err, -EINVAL, "the cgroup path in "
				    "/proc/PID/cgroup is too long");
		memcpy(path, l, n);
		path[n] = '\0';
		return 0;
	}
	return hook_fail(err, -ENOENT, "no cgroup v2 (\"0::\") line in the "
		    "container's /proc/PID/cgroup: nxquota needs cgroup v2");
}

int hook_cgroup_check(const char *path, char *err)
{
	static const char deleted[] = " (deleted)";
	size_t n = strlen(path);

	if (n > strlen(deleted) && !strcmp(path + n - strlen(deleted), deleted))
		return hook_fail(err, -EINVAL, "the container's cgroup %s was "
			    "removed", hook_q(path));
	return cgroup_path_check(path, err);
}

int hook_cgroup_own(const char *ctr, const char *self, char *err)
{
	size_t n = strlen(ctr);

	if (strncmp(self, ctr, n) || (self[n] && self[n] != '/'))
		return 0;
	return hook_fail(err, -EINVAL, "the container's cgroup v2 %s holds the "
		    "runtime itself (%s): the runtime gave the container no "
		    "cgroup v2 of its own (a cgroup v1 runtime?)", hook_q(ctr),
		    hook_q(self));
}

int hook_cgroup_parent(const char *path, char *out, size_t size, char *err)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;

	if (!n)
		return hook_fail(err, -EINVAL, "the container's cgroup %s is a child "
			    "of the root cgroup, which is no pod's", hook_q(path));
	if (n >= size)
		return hook_fail(err, -EINVAL, "cgroup path too long");
	memcpy(out, path, n);
	out[n] = '\0';
	return 0;
}

/*
 * The annotations that put a container in a pod: containerd's and CRI-O's
 * sandbox ids, the pod's uid, and podman's: libpod (4.3,
 * pkg/specgen/generate/container.go) gives every container of a pod
 * io.kubernetes.cri-o.SandboxID (the infra container's id, or the pod's)
 * with io.kubernetes.cri-o.ContainerType "container".
 */
static const char *const pod_markers[] = {
	"io.kubernetes.cri.sandbox-id",
	"io.kubernetes.cri-o.SandboxID",
	"io.kubernetes.pod.uid",
};

/* The non-empty string annotation key, or NULL. */
static const char *ann_str(json_object *ann, const char *key)
{
	json_object *v;

	if (!ann || !json_object_object_get_ex(ann, key, &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    !json_object_get_string_len(v) ||
	    (size_t)json_object_get_string_len(v) !=
	    strlen(json_object_get_string(v)))
		return NULL;
	return json_object_get_string(v);
}

bool hook_in_pod(json_object *ann)
{
	size_t i;

	for (i = 0; i < sizeof(pod_markers) / sizeof(pod_markers[0]); i++)
		if (ann_str(ann, pod_markers[i]))
			return true;
	return false;
}

/* The length of the run of characters of set at s. */
size_t hook_run_of(const char *s, const char *set)
{
	return strspn(s, set);
}

/*
 * The pod cgroups that mean one.  kubelet (pkg/kubelet/cm: the pod's
 * cgroup is "pod" + its UID under the QoS class's, under "kubepods",
 * below --cgroup-root):
 *   cgroupfs  .../kubepods/pod<uid>
 *             .../kubepods/{burstable,besteffort}/pod<uid>
 *   systemd   .../[R-]kubepods.slice/[R-]kubepods-pod<uid_>.slice
 *             .../[R-]kubepods-burstable.slice/
 *                 [R-]kubepods-burstable-pod<uid_>.slice  (besteffort too)
 * where <uid> is the pod's UID, a lower-case UUID or, for a static pod,
 * 32 hex digits, and <uid_> the same with '_' for '-' (systemd's slice
 * names), and R a --cgroup-root slice (kind's "kubelet").  podman (libpod
 * runtime_pod_linux.go):
 *   systemd   .../[P-]libpod_pod_<id>.slice under [P].slice
 *             (machine.slice/machine-libpod_pod_<id>.slice; rootless,
 *             user.slice/user-libpod_pod_<id>.slice)
 *   cgroupfs  /libpod_parent/<id>
 * with <id> 64 hex digits.  A container's own cgroup is never a pod's:
 * podman's "libpod-<id>.scope", docker's "docker-<id>.scope", whatever
 * sits in machine.slice or system.slice.
 */

/* The last components of a cgroup path: name, its parent's, and its
 * grandparent's ("" where the path is shorter). */
struct pod_names {
	char name[HOOK_PATH_MAX], parent[HOOK_PATH_MAX], gparent[HOOK_PATH_MAX];
};

static void pod_names(const char *path, struct pod_names *pn)
{
	char *dst[3] = { pn->name, pn->parent, pn->gparent };
	const char *end = path + strlen(path), *s;
	int i;

	for (i = 0; i < 3; i++) {
		for (s = end; s > path && s[-1] != '/'; s--)
			;
		snprintf(dst[i], HOOK_PATH_MAX, "%.*s", (int)(end - s), s);
		end = s > path ? s - 1 : path;
	}
}

/* s is a kubelet pod UID (sep between the UUID's groups), all of s. */
static bool pod_uid(const char *s, size_t n, char sep)
{
	static const char hex[] = "0123456789abcdef";
	static const size_t groups[] = { 8, 4, 4, 4, 12 };
	size_t i, off = 0;

	if (n == 32)	/* a static pod's: the hash of its manifest */
		return hook_run_of(s, hex) >= 32;
	if (n != 36)
		return false;
	for (i = 0; i < 5; i++) {
		if (hook_run_of(s + off, hex) < groups[i])
			return false;
		off += groups[i];
		if (i < 4 && s[off++] != sep)
			return false;
	}
	return true;
}

/* s ends with suffix; the length before it, or -1. */
static long ends(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix) ? (long)(n - m) : -1;
}

/* Whether the n bytes of p are "kubepods" or "R-kubepods" with the QoS
 * class qos ("" or "-burstable", "-besteffort") after it. */
static bool kubepods_slice(const char *p, size_t n, const char *qos)
{
	size_t k = strlen("kubepods") + strlen(qos);

	if (n < k || strncmp(p + n - k, "kubepods", 8) ||
	    strncmp(p + n - strlen(qos), qos, strlen(qos)))
		return false;
	return n == k || (n > k + 1 && p[n - k - 1] == '-');
}

/* A kubelet pod cgroup: the UID it names (as cgroupfs writes it), or
 * false. */
static bool kubelet_pod(const struct pod_names *pn, char *uid)
{
	static const char *const qos[] = { "", "-burstable", "-besteffort" };
	const char *name = pn->name, *par = pn->parent;
	size_t i, n;
	long p;

	/* cgroupfs */
	if (!strncmp(name, "pod", 3) && pod_uid(name + 3, strlen(name + 3), '-') &&
	    (!strcmp(par, "kubepods") ||
	     ((!strcmp(par, "burstable") || !strcmp(par, "besteffort")) &&
	      !strcmp(pn->gparent, "kubepods")))) {
		strcpy(uid, name + 3);
		return true;
	}
	/* systemd: "<P>-pod<uid_>.slice" under "<P>.slice" */
	p = ends(par, ".slice");
	if (p <= 0 || strncmp(name, par, (size_t)p) ||
	    strncmp(name + p, "-pod", 4) || ends(name, ".slice") < 0)
		return false;
	n = strlen(name + p + 4) - strlen(".slice");
	if (!pod_uid(name + p + 4, n, '_'))
		return false;
	for (i = 0; i < sizeof(qos) / sizeof(qos[0]); i++) {
		if (!kubepods_slice(par, (size_t)p, qos[i]))
			continue;
		/* a QoS slice sits in its kubepods slice */
		if (i && (ends(pn->gparent, ".slice") !=
			  (long)(p - (long)strlen(qos[i])) ||
			  strncmp(pn->gparent, par, (size_t)p - strlen(qos[i]))))
			return false;
		snprintf(uid, 40, "%.*s", (int)n, name + p + 4);
		for (; *uid; uid++)
			if (*uid == '_')
				*uid = '-';
		return true;
	}
	return false;
}

/* A podman pod cgroup. */
static bool podman_pod(const struct pod_names *pn)
{
	static const char hex[] = "0123456789abcdef";
	const char *name = pn->name, *id = strstr(name, "libpod_pod_");
	long p = ends(pn->parent, ".slice");

	if (!strcmp(pn->parent, "libpod_parent"))	/* cgroupfs */
		return strlen(name) == 64 && hook_run_of(name, hex) == 64;
	if (!id || hook_run_of(id + 11, hex) != 64 || strcmp(id + 75, ".slice"))
		return false;
	/* "libpod_pod_<id>.slice" in "-.slice", or "P-libpod_pod_..." in
	 * "P.slice" */
	if (id == name)
		return !strcmp(pn->parent, "-.slice") || !pn->parent[0];
	return p > 0 && id - name == p + 1 && !strncmp(name, pn->parent, (size_t)p) &&
	       name[p] == '-';
}

int hook_pod_cgroup_check(const char *pod, json_object *ann, char *err)
{
	const char *uid = ann_str(ann, "io.kubernetes.cri.sandbox-uid");
	struct pod_names *pn = malloc(sizeof(*pn));
	char got[48] = "";
	bool kube, podman;

	if (!pn)
		return hook_fail(err, -ENOMEM, "out of memory");
	if (!uid)
		uid = ann_str(ann, "io.kubernetes.pod.uid");
	pod_names(pod, pn);
	kube = kubelet_pod(pn, got);
	podman = !kube && podman_pod(pn);
	free(pn);
	if (kube && uid && strcmp(uid, got))
		return hook_fail(err, -EINVAL, "the container's parent cgroup %s is "
			    "pod %s's, not the pod of its annotations (%s)",
			    hook_q(pod), got, hook_q(uid));
	if (kube || podman)
		return 0;
	return hook_fail(err, -EINVAL, "the container's parent cgroup %s is not a "
		    "pod's: neither kubelet's (.../kubepods/[QOS/]pod<uid>, "
		    ".../kubepods[-QOS]-pod<uid>.slice) nor podman's "
		    "(...-libpod_pod_<id>.slice, /libpod_parent/<id>)",
		    hook_q(pod));
}

/* ---- the timeout ---------------------------------------------------------------- */

int hook_timeout_parse(const char *s, unsigned int *ms, char *err)
{
	unsigned long v = 0, scale = 1000;
	size_t digits = 0, decimals = 0;
	const char *p = s;

	for (; *p >= '0' && *p <= '9' && digits < 5; p++, digits++)
		v = v * 10 + (unsigned long)(*p - '0');
	v *= 1000;
	if (digits && *p == '.') {
		for (p++; *p >= '0' && *p <= '9' && decimals < 4; p++) {
			scale /= 10;
			v += (unsigned long)(*p - '0') * scale;
			decimals++;
		}
		if (!decimals)
			digits = 0;
	}
	if (!digits || digits > 4 || decimals > 3 || *p || !v ||
	    v > HOOK_TIMEOUT_MAX_MS)
		return hook_fail(err, -EINVAL, "timeout %s is not a number of "
			    "seconds above 0 and at most %d, with at most 3 "
			    "decimals (such as 5 or 0.5)", hook_q(s),
			    HOOK_TIMEOUT_MAX_MS / 1000);
	*ms = (unsigned int)v;
	return 0;
}
