// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota-hook's decisions (hook.h): read an OCI state and a bundle's
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
#include "size.h"

#define ANN_PREFIX	"nxquota.io/"
#define ENV_LIMIT	"NVIDIA_GPU_MEMORY_LIMIT"
#define ENV_REQUEST	"NVIDIA_GPU_MEMORY_REQUEST"
#define ENV_NVIDIA	"NVIDIA_VISIBLE_DEVICES"
#define ENV_NXQUOTA	"NXQUOTA_DEVICES"
#define ENV_NXQUOTA_ONE	"NXQUOTA_DEVICE_"	/* ...<X>=KEY, CDI's */

enum { F_MAX, F_MIN };
static const char *const scope_name[] = { "container", "pod" };

/* Write a message into err (HOOK_ERR_LEN bytes) and return rc. */
static int __attribute__((format(printf, 3, 4)))
fail(char *err, int rc, const char *fmt, ...)
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
		return fail(err, -EINVAL, "%s holds a NUL byte", what);
	tok = json_tokener_new();
	if (!tok)
		return fail(err, -ENOMEM, "out of memory");
	o = json_tokener_parse_ex(tok, buf, (int)len);
	e = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (!o || e != json_tokener_success) {
		json_object_put(o);
		return fail(err, -EINVAL, "%s is not JSON: %s", what,
			    e == json_tokener_continue ? "it ends early" :
			    json_tokener_error_desc(e));
	}
	while (end < len && isspace((unsigned char)buf[end]))
		end++;
	if (end < len || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return fail(err, -EINVAL, "%s is not one JSON object", what);
	}
	*out = o;
	return 0;
}

/* The string member key of o: 0 (*out NULL when absent) or -EINVAL. */
static int get_str(json_object *o, const char *key, const char *what,
		   const char **out, char *err)
{
	json_object *v;

	*out = NULL;
	if (!o || !json_object_object_get_ex(o, key, &v) || !v)
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return fail(err, -EINVAL, "%s: %s is not a string", what, key);
	*out = json_object_get_string(v);
	if ((size_t)json_object_get_string_len(v) != strlen(*out))
		return fail(err, -EINVAL, "%s: %s holds a NUL byte", what, key);
	return 0;
}

/* The member key of o if it has type t: 0 (*out NULL when absent), -EINVAL. */
static int get_typed(json_object *o, const char *key, enum json_type t,
		     const char *what, json_object **out, char *err)
{
	*out = NULL;
	if (!o || !json_object_object_get_ex(o, key, out) || !*out) {
		*out = NULL;
		return 0;
	}
	if (!json_object_is_type(*out, t))
		return fail(err, -EINVAL, "%s: %s is not %s", what, key,
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
	rc = get_str(root, "id", "state", &st->id, err);
	if (!rc && !st->id)
		rc = fail(err, -EINVAL, "state: no id");
	if (!rc)
		rc = get_str(root, "status", "state", &st->status, err);
	if (!rc)
		rc = get_str(root, "bundle", "state", &st->bundle, err);
	if (!rc)
		rc = get_typed(root, "annotations", json_type_object, "state",
			       &st->annotations, err);
	if (!rc)
		rc = get_typed(root, "pid", json_type_int, "state", &pid, err);
	if (rc || !pid)
		return rc;
	st->pid = (long long)json_object_get_int64(pid);
	if (st->pid < 0 || st->pid > INT_MAX)
		return fail(err, -EINVAL, "state: pid %lld is not a process id",
			    st->pid);
	return 0;
}

int hook_id_check(const char *id, char *err)
{
	size_t n = strlen(id);

	if (!n || n > HOOK_ID_MAX || id[0] == '.' ||
	    strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		       "0123456789_.-") != n)
		return fail(err, -EINVAL, "container id %s is not a safe file "
			    "name ([A-Za-z0-9_.-], at most %d bytes, not "
			    "starting with '.')", hook_q(id), HOOK_ID_MAX);
	return 0;
}

int hook_stage(const char *arg, const char *status, enum hook_stage *out,
	       char *err)
{
	const char *s = arg ? arg : status;

	if (!s)
		return fail(err, -EINVAL, "no stage: no argument and no status "
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
		return fail(err, -EINVAL, "unknown stage %s (createRuntime, "
			    "prestart or poststop)", hook_q(s));
	return fail(err, -EINVAL, "the state's status %s is no stage of this "
		    "hook (creating, created or stopped); name the stage",
		    hook_q(s));
}

int hook_annotations(const struct hook_state *st, json_object *cfg,
		     json_object **ann, char *err)
{
	*ann = st->annotations;
	if (*ann)
		return 0;
	return get_typed(cfg, "annotations", json_type_object, "config.json",
			 ann, err);
}

int hook_env(json_object *cfg, const char *name, const char **val, char *err)
{
	size_t i, n, len = strlen(name);
	json_object *proc, *env, *e;
	const char *s;
	int rc, found = 0;

	rc = get_typed(cfg, "process", json_type_object, "config.json", &proc,
		       err);
	if (!rc)
		rc = get_typed(proc, "env", json_type_array, "config.json "
			       "process", &env, err);
	if (rc || !proc || !env)
		return rc;
	n = json_object_array_length(env);
	for (i = 0; i < n; i++) {
		e = json_object_array_get_idx(env, i);
		if (!json_object_is_type(e, json_type_string))
			return fail(err, -EINVAL, "config.json: process.env[%zu] "
				    "is not a string", i);
		s = json_object_get_string(e);
		if (strncmp(s, name, len) || s[len] != '=')
			continue;
		if (found++)
			return fail(err, -EINVAL, "config.json: process.env sets "
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
		return fail(err, -EINVAL, "cgroup %s is not a path from the "
			    "cgroup2 root", hook_q(p));
	if (!p[1])
		return fail(err, -EINVAL, "the container is in the root cgroup");
	while (*c == '/') {
		n = strcspn(++c, "/");
		if (!n || (n == 1 && c[0] == '.') ||
		    (n == 2 && c[0] == '.' && c[1] == '.'))
			return fail(err, -EINVAL, "cgroup %s is not a plain path "
				    "(empty, \".\" or \"..\" component; outside "
				    "the hook's cgroup namespace?)", hook_q(p));
		c += n;
	}
	for (c = p; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return fail(err, -EINVAL, "cgroup %s holds a control "
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
			return fail(err, -EINVAL, "the cgroup path in "
				    "/proc/PID/cgroup is too long");
		memcpy(path, l, n);
		path[n] = '\0';
		return 0;
	}
	return fail(err, -ENOENT, "no cgroup v2 (\"0::\") line in the "
		    "container's /proc/PID/cgroup: nxquota needs cgroup v2");
}

int hook_cgroup_check(const char *path, char *err)
{
	static const char deleted[] = " (deleted)";
	size_t n = strlen(path);

	if (n > strlen(deleted) && !strcmp(path + n - strlen(deleted), deleted))
		return fail(err, -EINVAL, "the container's cgroup %s was "
			    "removed", hook_q(path));
	return cgroup_path_check(path, err);
}

int hook_cgroup_own(const char *ctr, const char *self, char *err)
{
	size_t n = strlen(ctr);

	if (strncmp(self, ctr, n) || (self[n] && self[n] != '/'))
		return 0;
	return fail(err, -EINVAL, "the container's cgroup v2 %s holds the "
		    "runtime itself (%s): the runtime gave the container no "
		    "cgroup v2 of its own (a cgroup v1 runtime?)", hook_q(ctr),
		    hook_q(self));
}

int hook_cgroup_parent(const char *path, char *out, size_t size, char *err)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;

	if (!n)
		return fail(err, -EINVAL, "the container's cgroup %s is a child "
			    "of the root cgroup, which is no pod's", hook_q(path));
	if (n >= size)
		return fail(err, -EINVAL, "cgroup path too long");
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
static size_t run_of(const char *s, const char *set)
{
	return strspn(s, set);
}

/* name holds "pod" + uid, with uid's '-' as '-' or '_' (kubelet's
 * cgroupfs and systemd drivers). */
static bool has_pod_uid(const char *name, const char *uid)
{
	size_t n = strlen(uid), i;
	const char *p;

	if (n < 8 || run_of(uid, "0123456789abcdefABCDEF-") != n)
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
		if (run_of(p + 3, "0123456789abcdef-_") >= 32)
			return true;
	return false;
}

/* name is podman's pod cgroup: "<64 hex>" (cgroupfs) or holds
 * "libpod_pod_<64 hex>" (systemd). */
static bool is_podman_pod(const char *name)
{
	static const char hex[] = "0123456789abcdef";
	const char *p = strstr(name, "libpod_pod_");

	if (strlen(name) == 64 && run_of(name, hex) == 64)
		return true;
	return p && run_of(p + 11, hex) == 64;
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
	return fail(err, -EINVAL, "the container's parent cgroup %s is not a "
		    "pod's: its name carries neither \"pod<uid>\"%s%s nor "
		    "podman's \"libpod_pod_<id>\"", hook_q(pod),
		    uid ? " of the pod's uid " : "", uid ? hook_q(uid) : "");
}

/* ---- devices ---------------------------------------------------------------- */

int hook_dev_init(struct hook_dev *d, const char *key, const char *devt)
{
	unsigned long ma, mi;
	char *end;

	memset(d, 0, sizeof(*d));
	if (strlen(key) >= sizeof(d->key))
		return -EINVAL;
	strcpy(d->key, key);
	if (!devt || !devt[0])
		return 0;
	if (!isdigit((unsigned char)devt[0]))
		return -EINVAL;
	ma = strtoul(devt, &end, 10);
	if (*end != ':' || !isdigit((unsigned char)end[1]))
		return -EINVAL;
	mi = strtoul(end + 1, &end, 10);
	if (*end || ma > UINT_MAX || mi > UINT_MAX)
		return -EINVAL;
	d->has_devt = true;
	d->major = (unsigned int)ma;
	d->minor = (unsigned int)mi;
	return 0;
}

/* The index of the device registered as key, or -1. */
static long dev_by_key(const struct hook_host *h, const char *key)
{
	size_t i;

	for (i = 0; i < h->ndevs; i++)
		if (!strcmp(h->devs[i].key, key))
			return (long)i;
	return -1;
}

/* The index of the device registered with MAJOR:MINOR, or -1. */
static long dev_by_devt(const struct hook_host *h, unsigned int ma,
			unsigned int mi)
{
	size_t i;

	for (i = 0; i < h->ndevs; i++)
		if (h->devs[i].has_devt && h->devs[i].major == ma &&
		    h->devs[i].minor == mi)
			return (long)i;
	return -1;
}

/*
 * The device a GPU is named by in an annotation or NVIDIA_VISIBLE_DEVICES
 * (where names it, for messages): an index N (the device registered with
 * /dev/nvidiaN's MAJOR:MINOR) or a UUID, with or without "GPU-".
 */
static int gpu_resolve(const char *spec, const struct hook_host *h,
		       const char *where, size_t *dev, char *err)
{
	char key[NXQ_DEVICE_KEY_MAX];
	unsigned int ma, mi;
	size_t n = strlen(spec);
	long d;

	if (n && n <= 6 && run_of(spec, "0123456789") == n) {
		unsigned int idx = (unsigned int)strtoul(spec, NULL, 10);

		if (!h->nvidia || h->nvidia(idx, &ma, &mi, h->arg))
			return fail(err, -EINVAL, "%s names GPU %u, but the host "
				    "has no /dev/nvidia%u", where, idx, idx);
		d = dev_by_devt(h, ma, mi);
		if (d < 0)
			return fail(err, -EINVAL, "%s names GPU %u (/dev/nvidia%u, "
				    "%u:%u), which is not registered with the "
				    "authority", where, idx, idx, ma, mi);
		*dev = (size_t)d;
		return 0;
	}
	snprintf(key, sizeof(key), "%s%s", strncmp(spec, "GPU-", 4) ? "GPU-" :
		 "", spec);
	d = n && n < sizeof(key) - 4 ? dev_by_key(h, key) : -1;
	if (d < 0)
		return fail(err, -EINVAL, "%s names %s, which is neither an index "
			    "nor a GPU registered with the authority", where,
			    hook_q(spec));
	*dev = (size_t)d;
	return 0;
}

/* linux.devices: its character devices registered with the authority. */
static int given_linux_devices(json_object *cfg, const struct hook_host *h,
			       bool *given, char *err)
{
	json_object *linux_, *devs, *e, *ma, *mi;
	const char *type;
	size_t i, n;
	int64_t a, b;
	long d;
	int rc;

	rc = get_typed(cfg, "linux", json_type_object, "config.json", &linux_,
		       err);
	if (!rc)
		rc = get_typed(linux_, "devices", json_type_array,
			       "config.json linux", &devs, err);
	if (rc || !linux_ || !devs)
		return rc;
	n = json_object_array_length(devs);
	for (i = 0; i < n; i++) {
		e = json_object_array_get_idx(devs, i);
		if (!json_object_is_type(e, json_type_object))
			return fail(err, -EINVAL, "config.json: linux.devices[%zu] "
				    "is not an object", i);
		rc = get_str(e, "type", "config.json linux.devices[]", &type,
			     err);
		if (rc || !type || (strcmp(type, "c") && strcmp(type, "u")))
			continue;
		rc = get_typed(e, "major", json_type_int, "config.json "
			       "linux.devices[]", &ma, err);
		if (!rc)
			rc = get_typed(e, "minor", json_type_int, "config.json "
				       "linux.devices[]", &mi, err);
		if (rc)
			return rc;
		a = ma ? json_object_get_int64(ma) : -1;
		b = mi ? json_object_get_int64(mi) : -1;
		if (a < 0 || b < 0 || a > UINT_MAX || b > UINT_MAX)
			return fail(err, -EINVAL, "config.json: linux.devices[%zu]"
				    " has no valid major and minor", i);
		d = dev_by_devt(h, (unsigned int)a, (unsigned int)b);
		if (d >= 0)
			given[d] = true;
	}
	return 0;
}

/*
 * A list of devices in process.env: NVIDIA_VISIBLE_DEVICES (indexes or
 * UUIDs) or, keys_only, NXQUOTA_DEVICES (device keys); "all", "none",
 * "void" as the NVIDIA container toolkit reads them.
 */
static int given_env(json_object *cfg, const struct hook_host *h,
		     const char *name, bool keys_only, bool *given, char *err)
{
	char where[128], *copy, *tok, *save, *end;
	const char *val;
	size_t i, dev;
	long d;
	int rc;

	rc = hook_env(cfg, name, &val, err);
	if (rc <= 0)
		return rc;
	rc = 0;
	copy = strdup(val);
	if (!copy)
		return fail(err, -ENOMEM, "out of memory");
	snprintf(where, sizeof(where), "process.env %s", name);
	for (tok = strtok_r(copy, ",", &save); tok && !rc;
	     tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		end = tok + strlen(tok);
		while (end > tok && end[-1] == ' ')
			*--end = '\0';
		if (!*tok || !strcmp(tok, "none") || !strcmp(tok, "void"))
			continue;
		if (!strcmp(tok, "all")) {
			for (i = 0; i < h->ndevs; i++)
				given[i] |= keys_only ||
					    !strncmp(h->devs[i].key, "GPU-", 4);
			continue;
		}
		if (!keys_only) {
			rc = gpu_resolve(tok, h, where, &dev, err);
			if (!rc)
				given[dev] = true;
			continue;
		}
		d = dev_by_key(h, tok);
		if (d < 0)
			rc = fail(err, -EINVAL, "%s names %s, which is not a "
				  "device registered with the authority", where,
				  hook_q(tok));
		else
			given[d] = true;
	}
	free(copy);
	return rc;
}

/* NXQUOTA_DEVICE_<X>=KEY entries of process.env (any number). */
static int given_env_each(json_object *cfg, const struct hook_host *h,
			  bool *given, char *err)
{
	size_t i, n, len = strlen(ENV_NXQUOTA_ONE);
	json_object *proc = NULL, *env = NULL;
	const char *s, *eq;
	long d;

	if (!json_object_object_get_ex(cfg, "process", &proc) ||
	    !json_object_object_get_ex(proc, "env", &env) ||
	    !json_object_is_type(env, json_type_array))
		return 0;	/* hook_env() already said what is wrong */
	n = json_object_array_length(env);
	for (i = 0; i < n; i++) {
		s = json_object_get_string(json_object_array_get_idx(env, i));
		if (!s || strncmp(s, ENV_NXQUOTA_ONE, len))
			continue;
		eq = strchr(s, '=');
		if (!eq || eq == s + len)
			continue;
		d = dev_by_key(h, eq + 1);
		if (d < 0)
			return fail(err, -EINVAL, "process.env %.*s names %s, "
				    "which is not a device registered with the "
				    "authority", (int)(eq - s), s,
				    hook_q(eq + 1));
		given[d] = true;
	}
	return 0;
}

int hook_given(json_object *cfg, const struct hook_host *host, bool *given,
	       char *err)
{
	bool env[HOOK_MAX_DEVS] = { false };
	size_t i;
	int rc;

	memset(given, 0, host->ndevs * sizeof(*given));
	rc = given_linux_devices(cfg, host, given, err);
	if (!rc)
		rc = given_env(cfg, host, ENV_NVIDIA, false, env, err);
	if (!rc)
		rc = given_env(cfg, host, ENV_NXQUOTA, true, env, err);
	if (!rc)
		rc = given_env_each(cfg, host, env, err);
	/* A name in process.env gives no node: it counts only without one. */
	for (i = 0; !rc && i < host->ndevs; i++)
		if (env[i] && (host->trust_env || !host->devs[i].has_devt))
			given[i] = true;
	return rc;
}

/* ---- the plan ----------------------------------------------------------------- */

/* One field of one (scope, device): its value and who set it. */
struct want {
	bool set;
	int prio;		/* 3 per-GPU annotation, 2 all-GPU, 1 env */
	uint64_t v;
	const char *src, *txt;
};

struct wants {
	struct want w[2][HOOK_MAX_DEVS][2];	/* [scope][dev][field] */
};

/* Parse "nxquota.io/[pod-](max|min)[.GPU]": 0 or -EINVAL. */
static int ann_key(const char *key, enum hook_scope *scope, int *field,
		   const char **gpu)
{
	const char *k = key + strlen(ANN_PREFIX);

	*scope = HOOK_CONTAINER;
	if (!strncmp(k, "pod-", 4)) {
		*scope = HOOK_POD;
		k += 4;
	}
	if (strncmp(k, "max", 3) && strncmp(k, "min", 3))
		return -EINVAL;
	*field = k[1] == 'a' ? F_MAX : F_MIN;
	k += 3;
	*gpu = NULL;
	if (!*k)
		return 0;
	if (*k != '.' || !k[1])
		return -EINVAL;
	*gpu = k + 1;
	return 0;
}

/* A value (a Kubernetes quantity) from src: 0 or -EINVAL with the reason. */
static int quantity(const char *src, const char *txt, uint64_t *v, char *err)
{
	uint64_t dummy;
	int rc = nxq_quantity_parse(txt, v);

	if (!rc)
		return 0;
	if (rc == -ERANGE)
		return fail(err, -EINVAL, "%s=%s is above 2^64-1 bytes", src,
			    hook_q(txt));
	if (txt[0] == '-' && nxq_quantity_parse(txt + 1, &dummy) != -EINVAL)
		return fail(err, -EINVAL, "%s=%s is negative", src, hook_q(txt));
	return fail(err, -EINVAL, "%s=%s is not a Kubernetes quantity (such as "
		    "40Gi, 40G or 4e10)", src, hook_q(txt));
}

/* Set one field unless a more specific source already did. */
static int want_set(struct want *w, int prio, uint64_t v, const char *src,
		    const char *txt, const char *dev, char *err)
{
	if (w->set && w->prio == prio && prio == 3)
		return fail(err, -EINVAL, "annotations %s and %s both name %s",
			    src, w->src, dev);
	if (w->set && w->prio > prio)
		return 0;
	*w = (struct want){ .set = true, .prio = prio, .v = v, .src = src,
			    .txt = txt };
	return 0;
}

/* One nxquota.io/ annotation into the wants. */
static int plan_annotation(const char *key, json_object *val,
			   const struct hook_host *h, const bool *given,
			   struct wants *ws, char *err)
{
	enum hook_scope scope;
	const char *gpu, *txt;
	char where[160];
	int field, rc;
	size_t i, dev = 0;
	uint64_t v;

	if (ann_key(key, &scope, &field, &gpu))
		return fail(err, -EINVAL, "unknown annotation %s (nxquota.io/ "
			    "knows max, min, pod-max and pod-min, each alone or "
			    "with .<gpu>)", hook_q(key));
	if (!json_object_is_type(val, json_type_string))
		return fail(err, -EINVAL, "annotation %s is not a string",
			    hook_q(key));
	txt = json_object_get_string(val);
	rc = quantity(key, txt, &v, err);
	if (rc)
		return rc;
	if (gpu) {
		snprintf(where, sizeof(where), "annotation %s", key);
		rc = gpu_resolve(gpu, h, where, &dev, err);
		if (rc)
			return rc;
		if (!given[dev])
			return fail(err, -EINVAL, "annotation %s: %s was not given "
				    "to the container", key, h->devs[dev].key);
		return want_set(&ws->w[scope][dev][field], 3, v, key, txt,
				h->devs[dev].key, err);
	}
	for (i = 0, dev = 0; i < h->ndevs; i++) {
		if (!given[i])
			continue;
		dev++;		/* an all-GPU value never beats a per-GPU one */
		want_set(&ws->w[scope][i][field], 2, v, key, txt, NULL, err);
	}
	if (!dev)
		return fail(err, -EINVAL, "annotation %s: the container was "
			    "given no GPU", key);
	return 0;
}

/* NVIDIA's NVIDIA_GPU_MEMORY_LIMIT / _REQUEST: container scope, every GPU. */
static int plan_env(json_object *cfg, const char *name, int field,
		    const struct hook_host *h, const bool *given,
		    struct wants *ws, char *err)
{
	const char *txt;
	uint64_t v;
	size_t i;
	int rc;

	rc = hook_env(cfg, name, &txt, err);
	if (rc <= 0)
		return rc;
	rc = quantity(name, txt, &v, err);
	for (i = 0; !rc && i < h->ndevs; i++)
		if (given[i])
			rc = want_set(&ws->w[HOOK_CONTAINER][i][field], 1, v,
				      name, txt, NULL, err);
	return rc;
}

/* The wants of one (scope, device) as a budget, checked: 0 or -EINVAL. */
static int plan_add(struct hook_plan *p, const struct want *w,
		    enum hook_scope scope, size_t dev,
		    const struct hook_host *h, char *err)
{
	struct hook_budget *b;

	if (!w[F_MAX].set && !w[F_MIN].set)
		return 0;
	if (w[F_MAX].set && w[F_MIN].set && w[F_MIN].v > w[F_MAX].v)
		return fail(err, -EINVAL, "min %llu (%s=%s) is above max %llu "
			    "(%s=%s) for the %s's cgroup on %s",
			    (unsigned long long)w[F_MIN].v, w[F_MIN].src,
			    hook_q(w[F_MIN].txt), (unsigned long long)w[F_MAX].v,
			    w[F_MAX].src, hook_q(w[F_MAX].txt), scope_name[scope],
			    h->devs[dev].key);
	b = &p->b[p->n++];
	memset(b, 0, sizeof(*b));
	b->scope = scope;
	b->dev = dev;
	b->has_max = w[F_MAX].set;
	b->max = w[F_MAX].v;
	b->max_src = w[F_MAX].src;
	b->max_txt = w[F_MAX].txt;
	b->has_min = w[F_MIN].set;
	b->min = w[F_MIN].v;
	b->min_src = w[F_MIN].src;
	b->min_txt = w[F_MIN].txt;
	p->pod |= scope == HOOK_POD;
	return 0;
}

int hook_plan_build(json_object *ann, json_object *cfg,
		    const struct hook_host *host, const bool *given,
		    struct hook_plan *p, char *err)
{
	struct wants *ws;
	size_t i;
	int s, rc = 0;

	memset(p, 0, sizeof(*p));
	if (host->ndevs > HOOK_MAX_DEVS)
		return fail(err, -E2BIG, "the authority has %zu devices; this "
			    "hook handles %d", host->ndevs, HOOK_MAX_DEVS);
	ws = calloc(1, sizeof(*ws));
	if (!ws)
		return fail(err, -ENOMEM, "out of memory");
	if (ann) {
		json_object_object_foreach(ann, key, val) {
			if (strncmp(key, ANN_PREFIX, strlen(ANN_PREFIX)))
				continue;
			rc = plan_annotation(key, val, host, given, ws, err);
			if (rc)
				goto out;
		}
	}
	rc = plan_env(cfg, ENV_LIMIT, F_MAX, host, given, ws, err);
	if (!rc)
		rc = plan_env(cfg, ENV_REQUEST, F_MIN, host, given, ws, err);
	/* the pod's budgets first: a parent before its child */
	for (s = HOOK_POD; !rc && s >= HOOK_CONTAINER; s--)
		for (i = 0; !rc && i < host->ndevs; i++)
			rc = plan_add(p, ws->w[s][i], (enum hook_scope)s, i,
				      host, err);
out:
	free(ws);
	return rc;
}

/* ---- what is in place ------------------------------------------------------------ */

/* "max=N min=N" of a budget (what it sets, or all of an old one). */
static const char *fields(bool has_max, uint64_t max, bool has_min,
			  uint64_t min)
{
	static char bufs[2][64];
	static unsigned int next;
	char *b = bufs[next++ % 2];
	int n = 0;

	b[0] = '\0';
	if (has_max && max == HOOK_NO_MAX)
		n = snprintf(b, 64, "max=none");
	else if (has_max)
		n = snprintf(b, 64, "max=%llu", (unsigned long long)max);
	if (has_min)
		snprintf(b + n, (size_t)(64 - n), "%smin=%llu", n ? " " : "",
			 (unsigned long long)min);
	return b;
}

int hook_reconcile(struct hook_plan *p, const struct hook_host *host,
		   const char *ctr, const char *pod,
		   const struct hook_node *nodes, size_t nnodes, char *err)
{
	struct hook_budget *b;
	const struct hook_node *nd;
	const char *key, *path;
	size_t i, j;

	for (i = 0; i < p->n; i++) {
		b = &p->b[i];
		key = host->devs[b->dev].key;
		path = b->scope == HOOK_POD ? pod : ctr;
		for (j = 0, nd = NULL; j < nnodes && !nd; j++)
			if (!strcmp(nodes[j].device, key) &&
			    !strcmp(nodes[j].path, path))
				nd = &nodes[j];
		b->old_max = nd ? nd->max : HOOK_NO_MAX;
		b->old_min = nd ? nd->min : 0;
		b->existed = b->old_max != HOOK_NO_MAX || b->old_min;
		if (b->scope != HOOK_POD || !b->existed)
			continue;
		if ((b->has_max && b->max != b->old_max) ||
		    (b->has_min && b->min != b->old_min))
			return fail(err, -EEXIST, "the pod's budget is already "
				    "%s on %s %s; this container asks %s",
				    fields(true, b->old_max, true, b->old_min),
				    hook_q(pod), key,
				    fields(b->has_max, b->max, b->has_min,
					   b->min));
		b->skip = true;		/* a sibling set it: the same values */
	}
	return 0;
}

/* ---- the record ------------------------------------------------------------------ */

static void add_str(json_object *o, const char *key, const char *s)
{
	json_object_object_add(o, key, json_object_new_string(s));
}

char *hook_record_format(const struct hook_record *r)
{
	json_object *o = json_object_new_object(), *a = json_object_new_array();
	const struct hook_rec_budget *rb;
	char *s = NULL;
	size_t i;

	if (!o || !a)
		goto out;
	json_object_object_add(o, "version", json_object_new_int(1));
	add_str(o, "id", r->id);
	add_str(o, "authority", r->control[0] ? "nxquotad" : "module");
	if (r->control[0])
		add_str(o, "control", r->control);
	add_str(o, "cgroup", r->cgroup);
	if (r->pod[0])
		add_str(o, "pod_cgroup", r->pod);
	for (i = 0; i < r->n; i++) {
		json_object *e = json_object_new_object();

		rb = &r->b[i];
		add_str(e, "device", rb->device);
		add_str(e, "scope", scope_name[rb->scope]);
		add_str(e, "cgroup", rb->scope == HOOK_POD ? r->pod : r->cgroup);
		if (rb->has_max)
			json_object_object_add(e, "max",
					       json_object_new_uint64(rb->max));
		if (rb->has_min)
			json_object_object_add(e, "min",
					       json_object_new_uint64(rb->min));
		json_object_object_add(e, "created",
				       json_object_new_boolean(rb->created));
		json_object_array_add(a, e);
	}
	json_object_object_add(o, "budgets", a);
	a = NULL;
	if (asprintf(&s, "%s\n", json_object_to_json_string_ext(o,
			JSON_C_TO_STRING_PRETTY |
			JSON_C_TO_STRING_NOSLASHESCAPE)) < 0)
		s = NULL;
out:
	json_object_put(a);
	json_object_put(o);
	return s;
}

/* A string member that fits size bytes, into dst: 0 or -EINVAL. */
static int rec_str(json_object *o, const char *key, bool required,
		   char *dst, size_t size, char *err)
{
	const char *s;
	int rc = get_str(o, key, "record", &s, err);

	if (rc)
		return rc;
	if (!s && required)
		return fail(err, -EINVAL, "record: no %s", key);
	if (s && strlen(s) >= size)
		return fail(err, -EINVAL, "record: %s too long", key);
	snprintf(dst, size, "%s", s ? s : "");
	return 0;
}

/* One budget of the record's "budgets". */
static int rec_budget(json_object *e, struct hook_rec_budget *rb, char *err)
{
	json_object *max, *min, *created;
	char scope[16];
	int rc;

	if (!json_object_is_type(e, json_type_object))
		return fail(err, -EINVAL, "record: a budget is not an object");
	rc = rec_str(e, "device", true, rb->device, sizeof(rb->device), err);
	if (!rc)
		rc = rec_str(e, "scope", true, scope, sizeof(scope), err);
	if (!rc)
		rc = get_typed(e, "max", json_type_int, "record", &max, err);
	if (!rc)
		rc = get_typed(e, "min", json_type_int, "record", &min, err);
	if (!rc)
		rc = get_typed(e, "created", json_type_boolean, "record",
			       &created, err);
	if (rc)
		return rc;
	if (strcmp(scope, "container") && strcmp(scope, "pod"))
		return fail(err, -EINVAL, "record: unknown scope %s",
			    hook_q(scope));
	rb->scope = strcmp(scope, "pod") ? HOOK_CONTAINER : HOOK_POD;
	rb->has_max = max;
	rb->max = max ? json_object_get_uint64(max) : 0;
	rb->has_min = min;
	rb->min = min ? json_object_get_uint64(min) : 0;
	rb->created = created && json_object_get_boolean(created);
	return 0;
}

int hook_record_parse(const char *buf, size_t len, struct hook_record *r,
		      char *err)
{
	json_object *o, *v, *a;
	char auth[16];
	size_t i;
	int rc;

	memset(r, 0, sizeof(*r));
	rc = hook_json_parse(buf, len, "the record", &o, err);
	if (rc)
		return rc;
	rc = get_typed(o, "version", json_type_int, "record", &v, err);
	if (!rc && (!v || json_object_get_int(v) != 1))
		rc = fail(err, -EINVAL, "record: not version 1");
	if (!rc)
		rc = rec_str(o, "id", true, r->id, sizeof(r->id), err);
	if (!rc)
		rc = rec_str(o, "authority", true, auth, sizeof(auth), err);
	if (!rc)
		rc = rec_str(o, "control", false, r->control, sizeof(r->control),
			     err);
	if (!rc && strcmp(auth, "module") &&
	    (strcmp(auth, "nxquotad") || !r->control[0]))
		rc = fail(err, -EINVAL, "record: unknown authority %s",
			  hook_q(auth));
	if (!rc && !strcmp(auth, "module"))
		r->control[0] = '\0';
	if (!rc)
		rc = rec_str(o, "cgroup", true, r->cgroup, sizeof(r->cgroup), err);
	if (!rc)
		rc = rec_str(o, "pod_cgroup", false, r->pod, sizeof(r->pod), err);
	if (!rc)
		rc = get_typed(o, "budgets", json_type_array, "record", &a, err);
	if (!rc && a && json_object_array_length(a) > HOOK_MAX_BUDGETS)
		rc = fail(err, -EINVAL, "record: too many budgets");
	for (i = 0; !rc && a && i < json_object_array_length(a); i++)
		rc = rec_budget(json_object_array_get_idx(a, i), &r->b[r->n++],
				err);
	json_object_put(o);
	return rc;
}
