// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota-hook's decisions, the GPUs a container was given (hook.h:
 * hook_dev_init(), hook_given(), and for a runtime plugin hook_gpu_hinted()
 * and hook_given_report()): linux.devices' character devices
 * matched by MAJOR:MINOR against the registered devices, and the
 * environment's names (NVIDIA_VISIBLE_DEVICES, NXQUOTA_DEVICES,
 * NXQUOTA_DEVICE_<X>) only where the operator trusts process.env.  Pure,
 * as hook.c: the host's devices come in struct hook_host.
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
int hook_gpu_resolve(const char *spec, const struct hook_host *h,
		     const char *where, size_t *dev, char *err)
{
	char key[NXQ_DEVICE_KEY_MAX];
	unsigned int ma, mi;
	size_t n = strlen(spec);
	long d;

	if (n && n <= 6 && hook_run_of(spec, "0123456789") == n) {
		unsigned int idx = (unsigned int)strtoul(spec, NULL, 10);

		if (!h->nvidia || h->nvidia(idx, &ma, &mi, h->arg))
			return hook_fail(err, -EINVAL, "%s names GPU %u, but the host "
				    "has no /dev/nvidia%u", where, idx, idx);
		d = dev_by_devt(h, ma, mi);
		if (d < 0)
			return hook_fail(err, -EINVAL, "%s names GPU %u (/dev/nvidia%u, "
				    "%u:%u), which is not registered with the "
				    "authority", where, idx, idx, ma, mi);
		*dev = (size_t)d;
		return 0;
	}
	snprintf(key, sizeof(key), "%s%s", strncmp(spec, "GPU-", 4) ? "GPU-" :
		 "", spec);
	d = n && n < sizeof(key) - 4 ? dev_by_key(h, key) : -1;
	if (d < 0)
		return hook_fail(err, -EINVAL, "%s names %s, which is neither an index "
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

	rc = hook_get_typed(cfg, "linux", json_type_object, "config.json", &linux_,
		       err);
	if (!rc)
		rc = hook_get_typed(linux_, "devices", json_type_array,
			       "config.json linux", &devs, err);
	if (rc || !linux_ || !devs)
		return rc;
	n = json_object_array_length(devs);
	for (i = 0; i < n; i++) {
		e = json_object_array_get_idx(devs, i);
		if (!json_object_is_type(e, json_type_object))
			return hook_fail(err, -EINVAL, "config.json: linux.devices[%zu] "
				    "is not an object", i);
		rc = hook_get_str(e, "type", "config.json linux.devices[]", &type,
			     err);
		if (rc || !type || (strcmp(type, "c") && strcmp(type, "u")))
			continue;
		rc = hook_get_typed(e, "major", json_type_int, "config.json "
			       "linux.devices[]", &ma, err);
		if (!rc)
			rc = hook_get_typed(e, "minor", json_type_int, "config.json "
				       "linux.devices[]", &mi, err);
		if (rc)
			return rc;
		a = ma ? json_object_get_int64(ma) : -1;
		b = mi ? json_object_get_int64(mi) : -1;
		if (a < 0 || b < 0 || a > UINT_MAX || b > UINT_MAX)
			return hook_fail(err, -EINVAL, "config.json: linux.devices[%zu]"
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
		return hook_fail(err, -ENOMEM, "out of memory");
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
			rc = hook_gpu_resolve(tok, h, where, &dev, err);
			if (!rc)
				given[dev] = true;
			continue;
		}
		d = dev_by_key(h, tok);
		if (d < 0)
			rc = hook_fail(err, -EINVAL, "%s names %s, which is not a "
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
		json_object *e = json_object_array_get_idx(env, i);

		s = json_object_get_string(e);
		if (s && (size_t)json_object_get_string_len(e) != strlen(s))
			return hook_fail(err, -EINVAL, "config.json: process.env"
				    "[%zu] %s holds a NUL byte", i, hook_q(s));
		if (!s || strncmp(s, ENV_NXQUOTA_ONE, len))
			continue;
		eq = strchr(s, '=');
		if (!eq || eq == s + len)
			continue;
		d = dev_by_key(h, eq + 1);
		if (d < 0)
			return hook_fail(err, -EINVAL, "process.env %.*s names %s, "
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

/*
 * Could anything in cfg give the container an nxquota device, or ask for a
 * budget?  Not when it has no character device in linux.devices (a GPU's
 * node comes there: device plugins, CDI, a privileged container's "all"),
 * names none in process.env (NVIDIA_VISIBLE_DEVICES, NXQUOTA_DEVICES,
 * NXQUOTA_DEVICE_<X>) and hook_wanted() is false: such a container is
 * given nothing whatever the authority has registered, and `nxquota-hook
 * given` answers for it without asking (a node's other containers start
 * while nxquotad restarts).  A malformed linux.devices or process.env
 * counts as a hint: hook_given() then says what is wrong.
 */
bool hook_gpu_hinted(json_object *ann, json_object *cfg)
{
	json_object *o = NULL, *a = NULL, *e, *t;
	const char *s;
	size_t i, n;

	if (hook_wanted(ann, cfg))
		return true;
	if (json_object_object_get_ex(cfg, "linux", &o) && o &&
	    json_object_object_get_ex(o, "devices", &a) && a) {
		if (!json_object_is_type(a, json_type_array))
			return true;
		n = json_object_array_length(a);
		for (i = 0; i < n; i++) {
			e = json_object_array_get_idx(a, i);
			if (!json_object_is_type(e, json_type_object) ||
			    !json_object_object_get_ex(e, "type", &t) ||
			    !json_object_is_type(t, json_type_string))
				return true;
			s = json_object_get_string(t);
			if (!strcmp(s, "c") || !strcmp(s, "u"))
				return true;
		}
	}
	o = a = NULL;
	if (json_object_object_get_ex(cfg, "process", &o) && o &&
	    json_object_object_get_ex(o, "env", &a) && a) {
		if (!json_object_is_type(a, json_type_array))
			return true;
		n = json_object_array_length(a);
		for (i = 0; i < n; i++) {
			s = json_object_get_string(json_object_array_get_idx(a, i));
			if (!s)
				return true;
			if (!strncmp(s, ENV_NVIDIA "=", strlen(ENV_NVIDIA) + 1) ||
			    !strncmp(s, ENV_NXQUOTA "=", strlen(ENV_NXQUOTA) + 1) ||
			    !strncmp(s, ENV_NXQUOTA_ONE, strlen(ENV_NXQUOTA_ONE)))
				return true;
		}
	}
	return false;
}

/* ---- what a container was given, for a runtime plugin ------------------------ */

static int report_add(json_object *o, const char *key, json_object *v,
		      char *err)
{
	if (!v || json_object_object_add(o, key, v)) {
		json_object_put(v);
		return hook_fail(err, -ENOMEM, "out of memory");
	}
	return 0;
}

int hook_given_report(json_object *ann, json_object *cfg,
		      const struct hook_host *host, json_object **out,
		      char *err)
{
	bool given[HOOK_MAX_DEVS], budget = false, unresolved;
	char why[HOOK_ERR_LEN] = "", refusal[HOOK_ERR_LEN];
	struct hook_plan *p;
	json_object *o, *keys;
	size_t i;
	int rc;

	*out = NULL;
	if (host->ndevs > HOOK_MAX_DEVS)
		return hook_fail(err, -E2BIG, "the authority has %zu devices; this "
			    "hook handles %d", host->ndevs, HOOK_MAX_DEVS);
	unresolved = hook_given(cfg, host, given, why) != 0;
	if (unresolved && hook_wanted(ann, cfg))
		return hook_fail(err, -EINVAL, "%s", why);
	if (!unresolved && hook_wanted(ann, cfg)) {
		p = malloc(sizeof(*p));
		if (!p)
			return hook_fail(err, -ENOMEM, "out of memory");
		/* refused or not, it asked: createRuntime says why */
		budget = hook_plan_build(ann, cfg, host, given, p, refusal) ||
			 p->n;
		free(p);
	}
	o = json_object_new_object();
	keys = json_object_new_array();
	if (!o || !keys) {
		json_object_put(o);
		json_object_put(keys);
		return hook_fail(err, -ENOMEM, "out of memory");
	}
	rc = report_add(o, "given", keys, err);
	for (i = 0; !rc && !unresolved && i < host->ndevs; i++)
		if (given[i] && json_object_array_add(keys,
				json_object_new_string(host->devs[i].key)))
			rc = hook_fail(err, -ENOMEM, "out of memory");
	if (!rc)
		rc = report_add(o, "budget", json_object_new_boolean(budget),
				err);
	if (!rc && unresolved)
		rc = report_add(o, "unresolved", json_object_new_string(why),
				err);
	if (rc) {
		json_object_put(o);
		return rc;
	}
	*out = o;
	return 0;
}
