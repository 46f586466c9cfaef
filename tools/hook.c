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
 *    NVIDIA_GPU_MEMORY_REQUEST (min);
 *  - the GPUs given: linux.devices' character devices matched by
 *    MAJOR:MINOR against the registered devices; NVIDIA_VISIBLE_DEVICES
 *    (indexes, UUIDs, all, none, void), NXQUOTA_DEVICES and
 *    NXQUOTA_DEVICE_<X> (keys) for devices without a node, and for those
 *    with one only if the operator trusts process.env (a tenant writes
 *    it: naming a GPU there gives no access to it);
 *  - the pod's cgroup is the container's parent, for a container that
 *    Kubernetes or podman put in a pod, and only when the parent's name
 *    carries the pod's identity.
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

int hook_json_parse(const char *buf, size_t len, const char *what,
		    json_object **out, char *err)
{
	struct json_tokener *tok;
	enum json_tokener_error e;
	json_object *o;
	size_t end;

	if (len > INT_MAX || memchr(buf, '\0', len))
		return hook_fail(err, -EINVAL, "%s holds a NUL byte", what);
	tok = json_tokener_new();
	if (!tok)
		return hook_fail(err, -ENOMEM, "out of memory");
	o = json_tokener_parse_ex(tok, buf, (int)len);
	e = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (!o || e != json_tokener_success) {
		json_object_put(o);
		return hook_fail(err, -EINVAL, "%s is not JSON: %s", what,
			    e == json_tokener_continue ? "it ends early" :
			    json_tokener_error_desc(e));
	}
	while (end < len && isspace((unsigned char)buf[end]))
		end++;
	if (end < len || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return hook_fail(err, -EINVAL, "%s is not one JSON object", what);
	}
	*out = o;
	return 0;
}

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
	char err[HOOK_ERR_LEN];
	const char *v;

	if (ann) {
		json_object_object_foreach(ann, key, val) {
			(void)val;
			if (!strncmp(key, ANN_PREFIX, strlen(ANN_PREFIX)))
				return true;
		}
	}
	/* a malformed process.env counts: the plan then says what is wrong */
	return hook_env(cfg, ENV_LIMIT, &v, err) ||
	       hook_env(cfg, ENV_REQUEST, &v, err);
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
	    !json_object_get_string_len(v))
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

/* name holds "pod" + uid, with uid's '-' as '-' or '_' (kubelet's
 * cgroupfs and systemd drivers). */
static bool has_pod_uid(const char *name, const char *uid)
{
	size_t n = strlen(uid), i;
	const char *p;

	if (n < 8 || hook_run_of(uid, "0123456789abcdefABCDEF-") != n)
		return false;
	for (p = strstr(name, "pod"); p; p = strstr(p + 1, "pod")) {
		for (i = 0; i < n; i++) {
			char c = p[3 + i];

			if (c != uid[i] && !(uid[i] == '-' && c == '_'))
				break;
		}
		if (i == n)
			return true;
	}
	return false;
}

/* name holds "pod" and a uid-like run (32 hex digits, or a UUID). */
static bool has_pod_any(const char *name)
{
	const char *p;

	for (p = strstr(name, "pod"); p; p = strstr(p + 1, "pod"))
		if (hook_run_of(p + 3, "0123456789abcdef-_") >= 32)
			return true;
	return false;
}

/* name is podman's pod cgroup: "<64 hex>" (cgroupfs) or holds
 * "libpod_pod_<64 hex>" (systemd). */
static bool is_podman_pod(const char *name)
{
	static const char hex[] = "0123456789abcdef";
	const char *p = strstr(name, "libpod_pod_");

	if (strlen(name) == 64 && hook_run_of(name, hex) == 64)
		return true;
	return p && hook_run_of(p + 11, hex) == 64;
}

int hook_pod_cgroup_check(const char *pod, json_object *ann, char *err)
{
	const char *name = strrchr(pod, '/') ? strrchr(pod, '/') + 1 : pod;
	const char *uid = ann_str(ann, "io.kubernetes.cri.sandbox-uid");

	if (!uid)
		uid = ann_str(ann, "io.kubernetes.pod.uid");
	if (is_podman_pod(name) ||
	    (uid ? has_pod_uid(name, uid) : has_pod_any(name)))
		return 0;
	return hook_fail(err, -EINVAL, "the container's parent cgroup %s is not a "
		    "pod's: its name carries neither \"pod<uid>\"%s%s nor "
		    "podman's \"libpod_pod_<id>\"", hook_q(pod),
		    uid ? " of the pod's uid " : "", uid ? hook_q(uid) : "");
}
