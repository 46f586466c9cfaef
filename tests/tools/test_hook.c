// SPDX-License-Identifier: GPL-2.0
/*
 * cmocka tests of nxquota-hook's decisions (tools/hook.c): the OCI state,
 * config.json, the GPUs a container was given, the budgets its
 * annotations ask for, its cgroups, what is already in place, and the
 * record -- over a fake list of registered devices and a fake
 * /dev/nvidiaN, with no authority.  Fixtures in tests/tools/hook/.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hook.h"

#ifndef HOOK_FIXTURES
#define HOOK_FIXTURES "tests/tools/hook"
#endif

#define GI (1ULL << 30)
#define MI (1ULL << 20)

#define UUID0 "8f1c2e4a-0d9b-4c1e-9a57-2b6d3f0e1a42"
#define UUID1 "5f2c0b7e-1111-4c1e-9a57-2b6d3f0e1a43"
#define UUID3 "00000000-3333-4444-5555-666666666666"

/* The authority's devices: three GPUs (195:0, 195:1, 195:3) and host0. */
static struct hook_dev devs[4];

/* The host's /dev/nvidiaN: 0, 1, 3 registered; 7 exists, unregistered. */
static int fake_nvidia(unsigned int idx, unsigned int *ma, unsigned int *mi,
		       void *arg)
{
	(void)arg;
	if (idx != 0 && idx != 1 && idx != 3 && idx != 7)
		return -ENOENT;
	*ma = 195;
	*mi = idx;
	return 0;
}

/* Most cases name GPUs in process.env: the operator trusts it here. */
static struct hook_host host = {
	.devs = devs, .ndevs = 4, .nvidia = fake_nvidia, .trust_env = true,
};

static int setup(void **state)
{
	(void)state;
	assert_int_equal(hook_dev_init(&devs[0], "GPU-" UUID0, "195:0"), 0);
	assert_int_equal(hook_dev_init(&devs[1], "GPU-" UUID1, "195:1"), 0);
	assert_int_equal(hook_dev_init(&devs[2], "host0", ""), 0);
	assert_int_equal(hook_dev_init(&devs[3], "GPU-" UUID3, "195:3"), 0);
	return 0;
}

/* JSON text -> object; fails the test if it does not parse. */
static json_object *J(const char *s)
{
	char err[HOOK_ERR_LEN];
	json_object *o = NULL;

	if (hook_json_parse(s, strlen(s), "test", &o, err))
		fail_msg("%s: %s", s, err);
	return o;
}

/* A fixture file's text (free it). */
static char *load(const char *name)
{
	char path[512], *buf = NULL;
	size_t len = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", HOOK_FIXTURES, name);
	f = fopen(path, "r");
	if (!f)
		fail_msg("fixture %s: %s", path, strerror(errno));
	if (getdelim(&buf, &len, '\0', f) < 0)
		fail_msg("fixture %s: empty", path);
	fclose(f);
	return buf;
}

static json_object *loadj(const char *name)
{
	char *s = load(name);
	json_object *o = J(s);

	free(s);
	return o;
}

/* err holds needle, or the test fails showing both. */
#define assert_err(err, needle) do {					\
	if (!strstr((err), (needle)))					\
		fail_msg("error \"%s\" lacks \"%s\"", (err), (needle));	\
} while (0)

/* ---- state, id, stage ---------------------------------------------------- */

static void test_state(void **state)
{
	char err[HOOK_ERR_LEN];
	json_object *o = loadj("state-creating.json");
	struct hook_state st;

	(void)state;
	assert_int_equal(hook_state_parse(o, &st, err), 0);
	assert_string_equal(st.status, "creating");
	assert_int_equal(st.pid, 4242);
	assert_non_null(strstr(st.bundle, "/run/containerd/"));
	assert_non_null(st.annotations);
	assert_int_equal(hook_id_check(st.id, err), 0);
	json_object_put(o);

	o = loadj("state-stopped.json");
	assert_int_equal(hook_state_parse(o, &st, err), 0);
	assert_int_equal(st.pid, 0);		/* podman's poststop: none */
	assert_string_equal(st.status, "stopped");
	json_object_put(o);
}

static void state_bad(const char *text, const char *needle)
{
	char err[HOOK_ERR_LEN] = "";
	json_object *o = NULL;
	struct hook_state st;
	int rc = hook_json_parse(text, strlen(text), "the state", &o, err);

	if (!rc) {
		rc = hook_state_parse(o, &st, err);
		json_object_put(o);
	}
	if (rc != -EINVAL)
		fail_msg("state %s: %d, want -EINVAL", text, rc);
	assert_err(err, needle);
}

static void test_state_errors(void **state)
{
	char err[HOOK_ERR_LEN];
	json_object *o;

	(void)state;
	state_bad("{\"status\":\"creating\"}", "no id");
	state_bad("{\"id\":7}", "id is not a string");
	state_bad("{\"id\":\"a\",\"pid\":-1}", "not a process id");
	state_bad("{\"id\":\"a\",\"pid\":99999999999}", "not a process id");
	state_bad("{\"id\":\"a\",\"pid\":\"42\"}", "pid is not a number");
	state_bad("{\"id\":\"a\",\"annotations\":[]}", "not an object");
	state_bad("{\"id\":\"a\"} {}", "not one JSON object");
	state_bad("[{\"id\":\"a\"}]", "not one JSON object");
	state_bad("{\"id\":\"a\"", "ends early");
	state_bad("{\"id\":\"a\\u0000b\"}", "NUL");
	state_bad("", "not JSON");
	/* a NUL byte in the text itself */
	assert_int_equal(hook_json_parse("{}\0{}", 5, "s", &o, err), -EINVAL);
	assert_err(err, "NUL");
	/* trailing white space is fine */
	o = J("{\"id\":\"a\"}\n\t ");
	json_object_put(o);
}

/*
 * What json-c would read as something else than the text says (issue 32,
 * item 3): before hook_json_exact(), an annotation key
 * "nxquota.io/max\u0000" came out as "nxquota.io/max" and replaced the
 * real one (1Gi became 90Gi), and a second equal key won silently.
 */
static void json_bad(const char *text, size_t len, const char *needle)
{
	char err[HOOK_ERR_LEN] = "";
	json_object *o = NULL;
	int rc = hook_json_parse(text, len, "config.json", &o, err);

	if (rc != -EINVAL) {
		json_object_put(o);
		fail_msg("%s: accepted (%d), want -EINVAL", text, rc);
	}
	assert_null(o);
	assert_err(err, needle);
}
#define JSON_BAD(text, needle) json_bad(text, sizeof(text) - 1, needle)

static void test_json_exact(void **state)
{
	char deep[128] = "{\"a\":", err[HOOK_ERR_LEN];
	size_t values = 0, bytes = 0, i;
	json_object *o;

	(void)state;
	/* a NUL cuts a key: the attack, and one in a nested key */
	JSON_BAD("{\"annotations\":{\"nxquota.io/max\":\"1Gi\","
		 "\"nxquota.io/max\\u0000\":\"90Gi\"}}",
		 "at annotations: the key \"nxquota.io/max\\x00\"... holds a "
		 "NUL byte (\\u0000)");
	JSON_BAD("{\"a\":{\"b\":[{\"nxquota.io/max\\u0000x\":\"1Gi\"}]}}",
		 "at a.b[0]: the key \"nxquota.io/max\\x00\"...");
	/* ... and a value, and an environment entry, naming where */
	JSON_BAD("{\"annotations\":{\"nxquota.io/min\":\"70G\\u0000junk\"}}",
		 "at annotations.\"nxquota.io/min\": a string holds a NUL byte");
	JSON_BAD("{\"process\":{\"env\":[\"PATH=/bin\","
		 "\"NVIDIA_GPU_MEMORY_LIMIT=1Gi\\u0000x\"]}}",
		 "at process.env[1]: a string holds a NUL byte");
	/* a key written twice, at any depth */
	JSON_BAD("{\"annotations\":{\"nxquota.io/max\":\"1Gi\","
		 "\"nxquota.io/max\":\"90Gi\"}}",
		 "the key \"nxquota.io/max\" is written twice");
	JSON_BAD("{\"id\":\"a\",\"x\":1,\"id\":\"b\"}", "\"id\" is written twice");
	JSON_BAD("{\"a\":[{\"k\":1,\"k\":1}]}", "at a[0]: the key \"k\"");
	/* what json-c turns into U+FFFD */
	JSON_BAD("{\"a\":\"\\ud800\"}", "lone UTF-16 surrogate (\\ud800)");
	JSON_BAD("{\"a\":\"\\ud800\\u0041\"}", "lone UTF-16 surrogate");
	JSON_BAD("{\"a\":\"x\\udc00\"}", "lone UTF-16 surrogate (\\udc00)");
	JSON_BAD("{\"a\":\"\xff\"}", "not UTF-8 (0xff)");
	JSON_BAD("{\"a\":\"\xc0\xaf\"}", "not UTF-8");		/* overlong '/' */
	JSON_BAD("{\"a\":\"\xed\xa0\x80\"}", "not UTF-8");	/* a surrogate */
	JSON_BAD("{\"a\":\"\xe2\x82\"}", "not UTF-8");		/* cut short */
	JSON_BAD("{\"a\":\"\xf4\x90\x80\x80\"}", "not UTF-8");	/* > U+10FFFF */
	/* what json-c takes and RFC 8259 does not */
	JSON_BAD("{\"a\":\"x\ty\"}", "control character (0x09)");
	JSON_BAD("{/* c */\"a\":1}", "a key that is not a quoted string");
	JSON_BAD("{\"a\":1 // c\n}", "not separated by ','");
	JSON_BAD("{'a':1}", "a key that is not a quoted string");
	JSON_BAD("{\"a\":'x'}", "unexpected '''");
	JSON_BAD("{\"a\":NaN}", "unexpected 'N'");
	JSON_BAD("{\"a\":Infinity}", "unexpected 'I'");
	JSON_BAD("{\"a\":TRUE}", "unexpected 'T'");
	JSON_BAD("{\"a\":1,}", "a key that is not a quoted string");
	JSON_BAD("{\"a\":[1,]}", "unexpected ']'");
	JSON_BAD("{\"a\":01}", "leading zero");
	JSON_BAD("{\"a\":-}", "without digits");
	JSON_BAD("{\"a\":1.}", "without digits after '.'");
	JSON_BAD("{\"a\":1e}", "without an exponent");
	JSON_BAD("{\"a\":\"\\x41\"}", "unknown escape \"\\x\"");
	/* one line, whatever the text (found by hook_fuzz) */
	JSON_BAD("{\"a\":\"\\\n\"}", "an unknown escape (a backslash, then "
		 "byte 0x0a)");
	JSON_BAD("{\"a\":\"\\u00G0\"}", "bad \\u escape");
	JSON_BAD("{\"a\":\"\\uFFF\"}", "bad \\u escape");
	/* integers json-c would saturate; doubles past DBL_MAX */
	JSON_BAD("{\"pid\":18446744073709551616}", "out of range");
	JSON_BAD("{\"pid\":-9223372036854775809}", "out of range");
	JSON_BAD("{\"pid\":99999999999999999999999999999999999}", "out of range");
	JSON_BAD("{\"a\":1e999}", "out of range");
	JSON_BAD("{\"a\":1} x", "not one JSON object: something follows it");
	JSON_BAD("{\"a\":1", "it ends early");
	JSON_BAD("{\"a\":\"1", "a string ends early");
	JSON_BAD("{\"a\\", "a key ends early");
	JSON_BAD("", "not JSON: it is empty");
	JSON_BAD("  ", "it ends early");
	JSON_BAD("{\"a\"}", "no ':' after the key \"a\"");
	JSON_BAD("{\"a\":1}\0", "holds a NUL byte");
	/* json-c's depth: 32 containers */
	for (i = 1; i < 32; i++)
		strcat(deep, "[");
	for (i = 1; i < 32; i++)
		strcat(deep, "]");
	strcat(deep, "}");
	o = J(deep);
	json_object_put(o);
	memmove(deep + 6, deep + 5, strlen(deep + 5) + 1);
	deep[5] = '[';
	strcpy(deep + strlen(deep) - 1, "]}");
	json_bad(deep, strlen(deep), "nested deeper than 32");

	/* exact JSON: escapes, a surrogate pair, the extremes of 64 bits */
	o = J("{\"k\\\"q\":\"\\u00e9\\/\\b\\ud83d\\ude00\",\"a\":[],\"o\":{},"
	      "\"u\":18446744073709551615,\"i\":-9223372036854775808,"
	      "\"d\":-0.5e-3,\"t\":true,\"f\":false,\"n\":null}\r\n");
	assert_string_equal(json_object_get_string(json_object_object_get(o,
			    "k\"q")), "\xc3\xa9/\b\xf0\x9f\x98\x80");
	assert_true(json_object_get_uint64(json_object_object_get(o, "u")) ==
		    UINT64_MAX);
	json_object_put(o);
	assert_int_equal(hook_json_exact("{\"ab\":[\"c\",1]}", 14, "t", &values,
					 &bytes, err), 0);
	assert_int_equal(values, 4);
	assert_int_equal(bytes, 3);
}

/* The readers refuse a NUL in a value json-c hands them (defence in
 * depth behind hook_json_parse(), which already refuses the text). */
static void test_nul_values(void **state)
{
	char err[HOOK_ERR_LEN] = "";
	static struct hook_plan p;
	bool given[4] = { true, false, false, false };
	json_object *ann = json_object_new_object();
	json_object *cfg = json_object_new_object();
	json_object *proc = json_object_new_object();
	json_object *env = json_object_new_array();
	const char *v;

	(void)state;
	json_object_object_add(ann, "nxquota.io/min",
			       json_object_new_string_len("70G\0junk", 8));
	assert_int_equal(hook_plan_build(ann, NULL, &host, given, &p, err),
			 -EINVAL);
	assert_err(err, "annotation \"nxquota.io/min\"=\"70G\" holds a NUL byte");
	json_object_array_add(env, json_object_new_string_len(
		"NVIDIA_GPU_MEMORY_LIMIT=1Gi\0x", 29));
	json_object_object_add(proc, "env", env);
	json_object_object_add(cfg, "process", proc);
	assert_int_equal(hook_env(cfg, "NVIDIA_GPU_MEMORY_LIMIT", &v, err),
			 -EINVAL);
	assert_err(err, "process.env[0] \"NVIDIA_GPU_MEMORY_LIMIT=1Gi\" holds a "
		   "NUL byte");
	json_object_put(ann);
	json_object_put(cfg);
}

static void test_id(void **state)
{
	char err[HOOK_ERR_LEN], long_id[HOOK_ID_MAX + 2];

	(void)state;
	assert_int_equal(hook_id_check("ctr-1_a.b", err), 0);
	memset(long_id, 'a', sizeof(long_id));
	long_id[HOOK_ID_MAX] = '\0';
	assert_int_equal(hook_id_check(long_id, err), 0);
	long_id[HOOK_ID_MAX] = 'a';
	long_id[HOOK_ID_MAX + 1] = '\0';
	assert_int_equal(hook_id_check(long_id, err), -EINVAL);
	assert_int_equal(hook_id_check("", err), -EINVAL);
	assert_int_equal(hook_id_check(".hidden", err), -EINVAL);
	assert_int_equal(hook_id_check("..", err), -EINVAL);
	assert_int_equal(hook_id_check("a/b", err), -EINVAL);
	assert_int_equal(hook_id_check("../etc", err), -EINVAL);
	assert_int_equal(hook_id_check("a b", err), -EINVAL);
	assert_int_equal(hook_id_check("a\nb", err), -EINVAL);
	assert_err(err, "\"a\\x0ab\"");		/* escaped, one line */
}

static void test_stage(void **state)
{
	char err[HOOK_ERR_LEN];
	enum hook_stage s = HOOK_STOP;

	(void)state;
	assert_int_equal(hook_stage("createRuntime", "stopped", &s, err), 0);
	assert_int_equal(s, HOOK_CREATE);
	assert_int_equal(hook_stage("poststop", "creating", &s, err), 0);
	assert_int_equal(s, HOOK_STOP);
	assert_int_equal(hook_stage("prestart", NULL, &s, err), 0);
	assert_int_equal(s, HOOK_CREATE);
	assert_int_equal(hook_stage(NULL, "creating", &s, err), 0);
	assert_int_equal(s, HOOK_CREATE);
	assert_int_equal(hook_stage(NULL, "created", &s, err), 0);
	assert_int_equal(s, HOOK_CREATE);
	assert_int_equal(hook_stage(NULL, "stopped", &s, err), 0);
	assert_int_equal(s, HOOK_STOP);
	assert_int_equal(hook_stage(NULL, "running", &s, err), -EINVAL);
	assert_int_equal(hook_stage("creating", NULL, &s, err), -EINVAL);
	assert_err(err, "unknown stage");
	assert_int_equal(hook_stage("poststart", NULL, &s, err), -EINVAL);
	assert_int_equal(hook_stage(NULL, NULL, &s, err), -EINVAL);
}

/* ---- config.json ---------------------------------------------------------------- */

static void test_env(void **state)
{
	char err[HOOK_ERR_LEN];
	json_object *c = J("{\"process\":{\"env\":[\"A=1\",\"NVIDIA_VISIBLE_"
			   "DEVICESX=9\",\"NOEQ\",\"NVIDIA_VISIBLE_DEVICES=0,1\","
			   "\"E=\"]}}");
	const char *v = NULL;

	(void)state;
	assert_int_equal(hook_env(c, "NVIDIA_VISIBLE_DEVICES", &v, err), 1);
	assert_string_equal(v, "0,1");
	assert_int_equal(hook_env(c, "E", &v, err), 1);
	assert_string_equal(v, "");
	assert_int_equal(hook_env(c, "NOEQ", &v, err), 0);
	assert_int_equal(hook_env(c, "B", &v, err), 0);
	json_object_put(c);
	c = J("{\"process\":{\"env\":[\"A=1\",\"A=2\"]}}");
	assert_int_equal(hook_env(c, "A", &v, err), -EINVAL);
	assert_err(err, "sets A twice");
	json_object_put(c);
	c = J("{\"process\":{\"env\":[\"A=1\",3]}}");
	assert_int_equal(hook_env(c, "A", &v, err), -EINVAL);
	assert_err(err, "process.env[1] is not a string");
	json_object_put(c);
	c = J("{\"process\":{\"env\":\"A=1\"}}");
	assert_int_equal(hook_env(c, "A", &v, err), -EINVAL);
	json_object_put(c);
	c = J("{}");
	assert_int_equal(hook_env(c, "A", &v, err), 0);
	json_object_put(c);
}

static void test_annotations_source(void **state)
{
	char err[HOOK_ERR_LEN];
	json_object *s = J("{\"id\":\"a\",\"annotations\":{\"x\":\"state\"}}");
	json_object *s2 = J("{\"id\":\"a\"}");
	json_object *c = J("{\"annotations\":{\"x\":\"config\"}}");
	json_object *bad = J("{\"annotations\":[1]}");
	struct hook_state st, st2;
	json_object *a;

	(void)state;
	assert_int_equal(hook_state_parse(s, &st, err), 0);
	assert_int_equal(hook_state_parse(s2, &st2, err), 0);
	assert_int_equal(hook_annotations(&st, c, &a, err), 0);
	assert_string_equal(json_object_get_string(
		json_object_object_get(a, "x")), "state");
	assert_int_equal(hook_annotations(&st2, c, &a, err), 0);
	assert_string_equal(json_object_get_string(
		json_object_object_get(a, "x")), "config");
	assert_int_equal(hook_annotations(&st2, bad, &a, err), -EINVAL);
	json_object_put(s);
	json_object_put(s2);
	json_object_put(c);
	json_object_put(bad);
}

static void test_wanted(void **state)
{
	json_object *none = J("{\"process\":{\"env\":[\"PATH=/bin\"]}}");
	json_object *lim = J("{\"process\":{\"env\":[\"NVIDIA_GPU_MEMORY_LIMIT=1Gi\"]}}");
	json_object *req = J("{\"process\":{\"env\":[\"NVIDIA_GPU_MEMORY_REQUEST=1\"]}}");
	json_object *a0 = J("{\"nxquota.io\":\"1\",\"foo\":\"nxquota.io/max\"}");
	json_object *a1 = J("{\"nxquota.io/whatever\":\"1\"}");

	(void)state;
	assert_false(hook_wanted(NULL, none));
	assert_false(hook_wanted(a0, none));
	assert_false(hook_wanted(NULL, NULL));
	assert_true(hook_wanted(a1, none));
	assert_true(hook_wanted(NULL, lim));
	assert_true(hook_wanted(NULL, req));
	json_object_put(none);
	json_object_put(lim);
	json_object_put(req);
	json_object_put(a0);
	json_object_put(a1);
}

/* ---- cgroups --------------------------------------------------------------------- */

static void test_proc_cgroup(void **state)
{
	char err[HOOK_ERR_LEN], path[HOOK_PATH_MAX], *t;

	(void)state;
	t = load("proc-cgroup-hybrid.txt");
	assert_int_equal(hook_proc_cgroup(t, path, sizeof(path), err), 0);
	assert_string_equal(path, "/kubepods/burstable/"
			    "pod1b4e28ba-2fa1-11d2-883f-0016d3cca427/4f2c0b7e");
	assert_int_equal(hook_cgroup_check(path, err), 0);
	free(t);
	t = load("proc-cgroup-v1.txt");
	assert_int_equal(hook_proc_cgroup(t, path, sizeof(path), err), -ENOENT);
	assert_err(err, "cgroup v2");
	free(t);
	assert_int_equal(hook_proc_cgroup("0::/a/b", path, sizeof(path), err), 0);
	assert_string_equal(path, "/a/b");
	assert_int_equal(hook_proc_cgroup("1:cpu:/x\n0::/ab\n", path, 3, err),
			 -EINVAL);
	assert_int_equal(hook_proc_cgroup("10::/x\n", path, sizeof(path), err),
			 -ENOENT);
}

static void test_cgroup_check(void **state)
{
	static const char *const bad[] = {
		"/", "", "a/b", "/a/../b", "/..", "/../a", "/a/./b", "//a",
		"/a/", "/a//b", "/a/b (deleted)", "/a\nb",
	};
	char err[HOOK_ERR_LEN];
	size_t i;

	(void)state;
	assert_int_equal(hook_cgroup_check("/a", err), 0);
	assert_int_equal(hook_cgroup_check("/a.slice/b-c_d.scope", err), 0);
	assert_int_equal(hook_cgroup_check("/a/...", err), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (hook_cgroup_check(bad[i], err) != -EINVAL)
			fail_msg("cgroup %s accepted", bad[i]);
	hook_cgroup_check("/", err);
	assert_err(err, "root cgroup");
	hook_cgroup_check("/a/b (deleted)", err);
	assert_err(err, "removed");
}

static void test_cgroup_own_parent(void **state)
{
	char err[HOOK_ERR_LEN], pod[HOOK_PATH_MAX];

	(void)state;
	assert_int_equal(hook_cgroup_own("/k/pod1/c", "/system.slice/x", err), 0);
	assert_int_equal(hook_cgroup_own("/a/b", "/a/bc", err), 0);
	assert_int_equal(hook_cgroup_own("/a/b", "/a", err), 0);
	assert_int_equal(hook_cgroup_own("/a/b", "/a/b", err), -EINVAL);
	assert_err(err, "no cgroup v2 of its own");
	assert_int_equal(hook_cgroup_own("/a/b", "/a/b/shim", err), -EINVAL);
	assert_int_equal(hook_cgroup_parent("/k/pod1/c", pod, sizeof(pod), err), 0);
	assert_string_equal(pod, "/k/pod1");
	assert_int_equal(hook_cgroup_parent("/c", pod, sizeof(pod), err), -EINVAL);
	assert_err(err, "root cgroup");
}

static void test_in_pod(void **state)
{
	json_object *k1 = J("{\"io.kubernetes.cri.sandbox-id\":\"abc\"}");
	json_object *k2 = J("{\"io.kubernetes.cri-o.SandboxID\":\"abc\"}");
	json_object *k3 = J("{\"io.kubernetes.pod.uid\":\"abc\"}");
	json_object *no = J("{\"io.kubernetes.cri.sandbox-id\":\"\","
			    "\"io.kubernetes.cri-o.ContainerType\":\"container\","
			    "\"io.kubernetes.pod.uid\":7}");
	json_object *podman = loadj("config-podman-pod.json");

	(void)state;
	assert_true(hook_in_pod(k1));
	assert_true(hook_in_pod(k2));
	assert_true(hook_in_pod(k3));
	assert_false(hook_in_pod(no));
	assert_false(hook_in_pod(NULL));
	assert_true(hook_in_pod(json_object_object_get(podman, "annotations")));
	json_object_put(k1);
	json_object_put(k2);
	json_object_put(k3);
	json_object_put(no);
	json_object_put(podman);
}

/* pod_ok/pod_bad: the parent cgroup path is (not) a pod's, for ann. */
static void pod_ok(const char *path, json_object *ann)
{
	char err[HOOK_ERR_LEN] = "";

	if (hook_pod_cgroup_check(path, ann, err))
		fail_msg("%s refused: %s", path, err);
}

static void pod_bad(const char *path, json_object *ann, const char *needle)
{
	char err[HOOK_ERR_LEN] = "";

	if (hook_pod_cgroup_check(path, ann, err) != -EINVAL)
		fail_msg("%s taken for a pod", path);
	assert_err(err, needle);
}

#define KUID	"1b4e28ba-2fa1-11d2-883f-0016d3cca427"
#define KUID_	"1b4e28ba_2fa1_11d2_883f_0016d3cca427"
#define HEX64	"f3d1c0b2a4e5968778695a4b3c2d1e0f0f1e2d3c4b5a69788796a5b4c3d2e1f0"

/*
 * The layouts that mean a pod, as kubelet and podman write them, and the
 * ones that do not (issue 32, item 3: without a pod-uid annotation, any
 * name with "pod" and 32 hex digits after it passed, so podman's
 * container scope "libpod-<id>.scope" was taken for a pod).
 */
static void test_pod_cgroup(void **state)
{
	json_object *uid = J("{\"io.kubernetes.cri.sandbox-uid\":\"" KUID "\"}");
	json_object *uid2 = J("{\"io.kubernetes.pod.uid\":\"" KUID "\"}");
	json_object *none = J("{\"io.kubernetes.cri-o.SandboxID\":\"x\"}");
	const char *not_pod = "is not a pod's";

	(void)state;
	/* kubelet, cgroupfs driver: guaranteed, burstable, besteffort, a
	 * static pod's UID, a --cgroup-root */
	pod_ok("/kubepods/pod" KUID, none);
	pod_ok("/kubepods/burstable/pod" KUID, uid);
	pod_ok("/kubepods/besteffort/pod" KUID, uid2);
	pod_ok("/kubepods/burstable/pod0123456789abcdef0123456789abcdef", none);
	pod_ok("/k8s/kubepods/burstable/pod" KUID, none);
	/* kubelet, systemd driver; kind's --cgroup-root=/kubelet */
	pod_ok("/kubepods.slice/kubepods-pod" KUID_ ".slice", uid);
	pod_ok("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
	       KUID_ ".slice", uid2);
	pod_ok("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"
	       KUID_ ".slice", none);
	pod_ok("/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-"
	       "besteffort.slice/kubelet-kubepods-besteffort-pod" KUID_ ".slice",
	       none);
	/* podman's pods: systemd (rootful, rootless) and cgroupfs */
	pod_ok("/machine.slice/machine-libpod_pod_" HEX64 ".slice", none);
	pod_ok("/user.slice/user-1000.slice/user@1000.service/user.slice/"
	       "user-libpod_pod_" HEX64 ".slice", none);
	pod_ok("/libpod_parent/" HEX64, none);

	/* podman's and docker's containers are no pods, with or without a
	 * uid annotation */
	pod_bad("/machine.slice/libpod-" HEX64 ".scope", none, not_pod);
	pod_bad("/machine.slice/libpod-" HEX64 ".scope", uid, not_pod);
	pod_bad("/machine.slice/libpod-" HEX64, none, not_pod);
	pod_bad("/libpod_parent/libpod-" HEX64, none, not_pod);
	pod_bad("/machine.slice/machine-libpod_pod_" HEX64 ".slice/libpod-"
		HEX64 ".scope", none, not_pod);
	pod_bad("/system.slice/docker-" HEX64 ".scope", none, not_pod);
	pod_bad("/machine.slice", none, not_pod);
	pod_bad("/system.slice", uid, not_pod);
	/* a container's cgroup below its pod's is not the pod's */
	pod_bad("/kubepods/burstable/pod" KUID "/4f2c0b7e", none, not_pod);
	pod_bad("/kubepods.slice/kubepods-pod" KUID_ ".slice/cri-containerd-"
		HEX64 ".scope", none, not_pod);
	/* kubelet's names, not quite */
	pod_bad("/kubepods", none, not_pod);
	pod_bad("/kubepods/burstable", none, not_pod);
	pod_bad("/kubepods.slice/kubepods-burstable.slice", none, not_pod);
	pod_bad("/kubepods/podcast", none, not_pod);
	pod_bad("/kubepods/pod" KUID "x", none, not_pod);
	pod_bad("/kubepods/pod1B4E28BA-2FA1-11D2-883F-0016D3CCA427", none,
		not_pod);
	pod_bad("/kubepods/pod" KUID_, none, not_pod);
	pod_bad("/pods/pod" KUID, uid, not_pod);
	pod_bad("/x/burstable/pod" KUID, uid, not_pod);
	pod_bad("/kubepods/guaranteed/pod" KUID, uid, not_pod);
	pod_bad("/pod" KUID, uid, not_pod);
	pod_bad("/kubepods.slice/kubepods-burstable.slice/kubepods-besteffort-pod"
		KUID_ ".slice", none, not_pod);
	pod_bad("/kubepods.slice/kubepods-burstable-pod" KUID_ ".slice", none,
		not_pod);
	pod_bad("/kubepods.slice/kubepods-pod" KUID ".slice", none, not_pod);
	pod_bad("/x.slice/x-pod" KUID_ ".slice", none, not_pod);
	pod_bad("/mykubepods.slice/mykubepods-pod" KUID_ ".slice", none, not_pod);
	pod_bad("/machine.slice/libpod_pod_" HEX64 ".slice", none, not_pod);
	pod_bad("/machine.slice/machine-libpod_pod_" HEX64 ".scope", none,
		not_pod);
	pod_bad("/x/" HEX64, none, not_pod);
	pod_bad("/libpod_parent/" HEX64 "0", none, not_pod);
	/* another pod's UID than the annotations' */
	pod_bad("/kubepods/burstable/pod2b4e28ba-2fa1-11d2-883f-0016d3cca427",
		uid, "is pod 2b4e28ba-2fa1-11d2-883f-0016d3cca427's, not the pod "
		"of its annotations");
	pod_bad("/kubepods.slice/kubepods-pod2b4e28ba_2fa1_11d2_883f_"
		"0016d3cca427.slice", uid2, "not the pod of its annotations");
	json_object_put(uid);
	json_object_put(uid2);
	json_object_put(none);
}

/* ---- devices given ------------------------------------------------------------------ */

static void given_is(const char *cfg_text, bool g0, bool g1, bool g2, bool g3)
{
	char err[HOOK_ERR_LEN];
	json_object *c = J(cfg_text);
	bool given[4];

	if (hook_given(c, &host, given, err))
		fail_msg("%s: %s", cfg_text, err);
	if (given[0] != g0 || given[1] != g1 || given[2] != g2 || given[3] != g3)
		fail_msg("%s: given %d%d%d%d, want %d%d%d%d", cfg_text, given[0],
			 given[1], given[2], given[3], g0, g1, g2, g3);
	json_object_put(c);
}

static void given_err(const char *cfg_text, const char *needle)
{
	char err[HOOK_ERR_LEN] = "";
	json_object *c = J(cfg_text);
	bool given[4];

	if (hook_given(c, &host, given, err) != -EINVAL)
		fail_msg("%s: accepted", cfg_text);
	assert_err(err, needle);
	json_object_put(c);
}

#define ENV(x) "{\"process\":{\"env\":[\"" x "\"]}}"
#define ENV2(a, b) ENV(a "\",\"" b)
#define ENV3(a, b, c) ENV(a "\",\"" b "\",\"" c)
#define DEVS(x) "{\"linux\":{\"devices\":[" x "]}}"

static void test_given_fixtures(void **state)
{
	char err[HOOK_ERR_LEN];
	json_object *c;
	bool given[4];

	(void)state;
	c = loadj("config-containerd.json");	/* index 0; 195:0; not 'b' 195:1 */
	assert_int_equal(hook_given(c, &host, given, err), 0);
	assert_true(given[0] && !given[1] && !given[2] && !given[3]);
	json_object_put(c);
	c = loadj("config-podman-pod.json");	/* GPU-UUID1 and index 1 */
	assert_int_equal(hook_given(c, &host, given, err), 0);
	assert_true(!given[0] && given[1] && !given[2] && !given[3]);
	json_object_put(c);
	c = loadj("config-cdi.json");		/* 195:3, NXQUOTA_DEVICES */
	assert_int_equal(hook_given(c, &host, given, err), 0);
	assert_true(given[0] && !given[1] && !given[2] && given[3]);
	json_object_put(c);
}

static void test_given_env(void **state)
{
	(void)state;
	given_is("{}", false, false, false, false);
	given_is(ENV("NVIDIA_VISIBLE_DEVICES=0"), true, false, false, false);
	given_is(ENV("NVIDIA_VISIBLE_DEVICES=3, 1"), false, true, false, true);
	given_is(ENV("NVIDIA_VISIBLE_DEVICES=GPU-" UUID1), false, true, false, false);
	given_is(ENV("NVIDIA_VISIBLE_DEVICES=" UUID3), false, false, false, true);
	given_is(ENV("NVIDIA_VISIBLE_DEVICES=all"), true, true, false, true);
	given_is(ENV("NVIDIA_VISIBLE_DEVICES=none"), false, false, false, false);
	given_is(ENV("NVIDIA_VISIBLE_DEVICES=void"), false, false, false, false);
	given_is(ENV("NVIDIA_VISIBLE_DEVICES="), false, false, false, false);
	given_is(ENV("NXQUOTA_DEVICES=host0,GPU-" UUID0), true, false, true, false);
	given_is(ENV("NXQUOTA_DEVICES=all"), true, true, true, true);
	given_err(ENV("NVIDIA_VISIBLE_DEVICES=2"), "no /dev/nvidia2");
	given_err(ENV("NVIDIA_VISIBLE_DEVICES=7"), "not registered");
	given_err(ENV("NVIDIA_VISIBLE_DEVICES=0,GPU-nope"), "\"GPU-nope\"");
	given_err(ENV("NVIDIA_VISIBLE_DEVICES=MIG-" UUID0), "neither an index");
	given_err(ENV("NVIDIA_VISIBLE_DEVICES=0 1"), "\"0 1\"");
	given_err(ENV("NXQUOTA_DEVICES=" UUID0), "not a device registered");
	given_err(ENV("NXQUOTA_DEVICES=0"), "not a device registered");
}

/*
 * Untrusted process.env (the default): a name there gives a device only
 * without a node; a device with a node needs it in linux.devices.  CDI's
 * NXQUOTA_DEVICE_<X> variables, likewise.
 */
static void test_given_untrusted(void **state)
{
	(void)state;
	host.trust_env = false;
	given_is(ENV("NVIDIA_VISIBLE_DEVICES=0"), false, false, false, false);
	given_is(ENV("NVIDIA_VISIBLE_DEVICES=all"), false, false, false, false);
	given_is(ENV("NXQUOTA_DEVICES=all"), false, false, true, false);
	given_is(ENV("NXQUOTA_DEVICES=host0,GPU-" UUID0), false, false, true,
		 false);
	given_is("{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=all\"]},"
		 "\"linux\":{\"devices\":[{\"type\":\"c\",\"major\":195,"
		 "\"minor\":1}]}}", false, true, false, false);
	given_is(ENV("NXQUOTA_DEVICE_HOST0=host0"), false, false, true, false);
	given_is(ENV("NXQUOTA_DEVICE_GPU_X=GPU-" UUID3), false, false, false,
		 false);
	given_err(ENV("NXQUOTA_DEVICE_GPU_X=GPU-nope"), "not a device registered");
	host.trust_env = true;
	given_is(ENV("NXQUOTA_DEVICE_GPU_X=GPU-" UUID3), false, false, false,
		 true);
	given_is("{\"process\":{\"env\":[\"NXQUOTA_DEVICE_A=host0\","
		 "\"NXQUOTA_DEVICE_B=GPU-" UUID1 "\"]}}", false, true, true,
		 false);
}

static void test_given_linux_devices(void **state)
{
	(void)state;
	given_is(DEVS("{\"type\":\"c\",\"major\":195,\"minor\":1}"),
		 false, true, false, false);
	given_is(DEVS("{\"type\":\"u\",\"major\":195,\"minor\":3}"),
		 false, false, false, true);
	given_is(DEVS("{\"type\":\"b\",\"major\":195,\"minor\":1},"
		      "{\"type\":\"p\"},{\"type\":\"c\",\"major\":195,"
		      "\"minor\":255},{\"type\":\"c\",\"major\":1,\"minor\":3}"),
		 false, false, false, false);
	given_err(DEVS("{\"type\":\"c\",\"major\":\"195\",\"minor\":1}"),
		  "major is not a number");
	given_err(DEVS("{\"type\":\"c\",\"minor\":1}"), "no valid major");
	given_err(DEVS("{\"type\":\"c\",\"major\":-1,\"minor\":1}"),
		  "no valid major");
	given_err(DEVS("7"), "is not an object");
	given_err("{\"linux\":{\"devices\":{}}}", "not an array");
}

/*
 * nxquota-hook given (hook_given_report()): cfg_text's keys given, whether
 * it has a budget (a refused one counts: createRuntime says why), and
 * "unresolved" only when it asks for none.
 */
static void report_is(const char *ann_text, const char *cfg_text,
		      const char *want)
{
	json_object *a = ann_text ? J(ann_text) : NULL, *c = J(cfg_text), *o;
	char err[HOOK_ERR_LEN];
	const char *got;

	if (hook_given_report(a, c, &host, &o, err))
		fail_msg("%s / %s: %s", ann_text, cfg_text, err);
	got = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
					     JSON_C_TO_STRING_NOSLASHESCAPE);
	if (strcmp(got, want))
		fail_msg("%s / %s: %s, want %s", ann_text, cfg_text, got, want);
	json_object_put(o);
	json_object_put(a);
	json_object_put(c);
}

static void test_given_report(void **state)
{
	char err[HOOK_ERR_LEN] = "";
	json_object *a, *c, *o = (json_object *)&o;

	(void)state;
	host.trust_env = false;
	report_is(NULL, "{}", "{\"given\":[],\"budget\":false}");
	/* no budget: given all the same (the shim, the authority) */
	report_is(NULL, DEVS("{\"type\":\"c\",\"major\":195,\"minor\":3},"
			     "{\"type\":\"c\",\"major\":195,\"minor\":1}"),
		  "{\"given\":[\"GPU-" UUID1 "\",\"GPU-" UUID3 "\"],"
		  "\"budget\":false}");
	/* untrusted process.env names a device with a node: not given */
	report_is("{\"nxquota.io/max\":\"1Gi\"}", ENV("NVIDIA_VISIBLE_DEVICES=0"),
		  "{\"given\":[],\"budget\":true}");
	report_is("{\"nxquota.io/max\":\"1Gi\",\"x\":\"y\"}",
		  ENV("NXQUOTA_DEVICES=host0"),
		  "{\"given\":[\"host0\"],\"budget\":true}");
	/* asked through the environment, or refused (min above max) */
	report_is(NULL, ENV2("NXQUOTA_DEVICE_HOST0=host0",
			     "NVIDIA_GPU_MEMORY_LIMIT=1Gi"),
		  "{\"given\":[\"host0\"],\"budget\":true}");
	report_is("{\"nxquota.io/max\":\"1Mi\",\"nxquota.io/min\":\"2Mi\"}",
		  ENV("NXQUOTA_DEVICES=host0"),
		  "{\"given\":[\"host0\"],\"budget\":true}");
	/* NVIDIA_GPU_MEMORY_LIMIT without a GPU: no budget to set */
	report_is(NULL, ENV("NVIDIA_GPU_MEMORY_LIMIT=1Gi"),
		  "{\"given\":[],\"budget\":false}");
	/* cannot be decided: said, without a budget; refused with one */
	report_is(NULL, ENV("NXQUOTA_DEVICES=nope"),
		  "{\"given\":[],\"budget\":false,\"unresolved\":\"process.env "
		  "NXQUOTA_DEVICES names \\\"nope\\\", which is not a device "
		  "registered with the authority\"}");
	a = J("{\"nxquota.io/pod-max\":\"1Gi\"}");
	c = J(ENV2("NXQUOTA_DEVICES=host0", "NVIDIA_VISIBLE_DEVICES=7"));
	assert_int_equal(hook_given_report(a, c, &host, &o, err), -EINVAL);
	assert_null(o);
	assert_err(err, "(/dev/nvidia7, 195:7), which is not registered");
	json_object_put(a);
	json_object_put(c);
	host.trust_env = true;
	report_is(NULL, ENV("NVIDIA_VISIBLE_DEVICES=all"),
		  "{\"given\":[\"GPU-" UUID0 "\",\"GPU-" UUID1 "\",\"GPU-"
		  UUID3 "\"],\"budget\":false}");
}

/* ---- the plan ---------------------------------------------------------------- */

/* Build the plan of annotations ann_text and config cfg_text. */
static int plan(const char *ann_text, const char *cfg_text,
		struct hook_plan *p, char *err)
{
	json_object *a = ann_text ? J(ann_text) : NULL, *c = J(cfg_text);
	bool given[4];
	int rc;

	rc = hook_given(c, &host, given, err);
	if (!rc)
		rc = hook_plan_build(a, c, &host, given, p, err);
	/* the budgets point into the JSON: keep it for the test's life */
	return rc;
}

static void plan_err(const char *ann_text, const char *cfg_text,
		     const char *needle)
{
	char err[HOOK_ERR_LEN] = "";
	static struct hook_plan p;

	if (plan(ann_text, cfg_text, &p, err) != -EINVAL)
		fail_msg("%s / %s: accepted", ann_text, cfg_text);
	assert_err(err, needle);
}

/* Budget i of p is (scope, dev, max or -1, min or -1). */
static void budget_is(const struct hook_plan *p, size_t i,
		      enum hook_scope scope, size_t dev, int64_t max,
		      int64_t min)
{
	const struct hook_budget *b = &p->b[i];

	if (i >= p->n)
		fail_msg("budget %zu of %zu", i, p->n);
	assert_int_equal(b->scope, scope);
	assert_int_equal(b->dev, dev);
	assert_int_equal(b->has_max, max >= 0);
	if (max >= 0)
		assert_int_equal(b->max, (uint64_t)max);
	assert_int_equal(b->has_min, min >= 0);
	if (min >= 0)
		assert_int_equal(b->min, (uint64_t)min);
}

static void test_plan_fixtures(void **state)
{
	char err[HOOK_ERR_LEN];
	static struct hook_plan p;
	json_object *c, *s;
	struct hook_state st;
	json_object *ann;
	bool given[4];

	(void)state;
	/* containerd: the state's annotations, index 0 given */
	s = loadj("state-creating.json");
	c = loadj("config-containerd.json");
	assert_int_equal(hook_state_parse(s, &st, err), 0);
	assert_int_equal(hook_annotations(&st, c, &ann, err), 0);
	assert_true(hook_wanted(ann, c));
	assert_int_equal(hook_given(c, &host, given, err), 0);
	assert_int_equal(hook_plan_build(ann, c, &host, given, &p, err), 0);
	assert_int_equal(p.n, 2);
	assert_true(p.pod);
	budget_is(&p, 0, HOOK_POD, 0, 60 * GI, -1);	/* the parent first */
	budget_is(&p, 1, HOOK_CONTAINER, 0, 40 * GI, 16 * GI);
	assert_string_equal(p.b[1].min_src, "nxquota.io/min.0");
	assert_string_equal(p.b[1].min_txt, "16Gi");
	json_object_put(s);
	json_object_put(c);

	/* podman's pod: a decimal G, a per-GPU pod guarantee by UUID */
	c = loadj("config-podman-pod.json");
	assert_int_equal(hook_annotations(&(struct hook_state){ 0 }, c, &ann,
					  err), 0);
	assert_int_equal(hook_given(c, &host, given, err), 0);
	assert_int_equal(hook_plan_build(ann, c, &host, given, &p, err), 0);
	assert_int_equal(p.n, 2);
	budget_is(&p, 0, HOOK_POD, 1, -1, 8 * GI);
	budget_is(&p, 1, HOOK_CONTAINER, 1, 24000000000LL, -1);
	json_object_put(c);

	/* CDI: NVIDIA_GPU_MEMORY_* on both GPUs given, no annotation */
	c = loadj("config-cdi.json");
	assert_true(hook_wanted(NULL, c));
	assert_int_equal(hook_given(c, &host, given, err), 0);
	assert_int_equal(hook_plan_build(NULL, c, &host, given, &p, err), 0);
	assert_int_equal(p.n, 2);
	assert_false(p.pod);
	budget_is(&p, 0, HOOK_CONTAINER, 0, 24 * GI, 8 * GI);
	budget_is(&p, 1, HOOK_CONTAINER, 3, 24 * GI, 8 * GI);
	assert_string_equal(p.b[0].max_src, "NVIDIA_GPU_MEMORY_LIMIT");
	json_object_put(c);
}

/*
 * HAMi's contract (hook_plan.c, plan_hami()): CUDA_DEVICE_MEMORY_LIMIT_<i>
 * for the i-th GPU of NVIDIA_VISIBLE_DEVICES, in HAMi's order; min = max
 * unless CUDA_OVERSUBSCRIBE=true; below NVIDIA's variables and
 * annotations; what cannot be mapped is refused, naming it.
 */
static void test_plan_hami(void **state)
{
	char err[HOOK_ERR_LEN];
	static struct hook_plan p;
	json_object *c;
	bool given[4];

	(void)state;
	c = loadj("config-hami.json");
	assert_true(hook_wanted(NULL, c));
	assert_int_equal(hook_given(c, &host, given, err), 0);
	assert_int_equal(hook_plan_build(NULL, c, &host, given, &p, err), 0);
	assert_int_equal(p.n, 2);
	/* index 0 is GPU-UUID3 (listed first), index 1 GPU-UUID0 */
	budget_is(&p, 0, HOOK_CONTAINER, 0, 2048 * MI, 2048 * MI);
	budget_is(&p, 1, HOOK_CONTAINER, 3, 4096 * MI, 4096 * MI);
	assert_string_equal(p.b[1].max_src, "CUDA_DEVICE_MEMORY_LIMIT_0");
	assert_string_equal(p.b[1].max_txt, "4096m");
	json_object_put(c);

	/* oversubscribed: the max only */
	assert_int_equal(plan(NULL, ENV3("NVIDIA_VISIBLE_DEVICES=GPU-" UUID1,
					"CUDA_DEVICE_MEMORY_LIMIT_0=1g",
					"CUDA_OVERSUBSCRIBE=true"), &p, err), 0);
	assert_int_equal(p.n, 1);
	budget_is(&p, 0, HOOK_CONTAINER, 1, GI, -1);
	/* ... the unindexed one too (it once made the plan return 1) */
	assert_int_equal(plan(NULL, ENV3("NVIDIA_VISIBLE_DEVICES=0",
					"CUDA_OVERSUBSCRIBE=true",
					"CUDA_DEVICE_MEMORY_LIMIT=512m"), &p, err),
			 0);
	assert_int_equal(p.n, 1);
	budget_is(&p, 0, HOOK_CONTAINER, 0, 512 * MI, -1);
	/* HAMi-core's unindexed one: every GPU; the indexed one beats it */
	assert_int_equal(plan(NULL, ENV3("NVIDIA_VISIBLE_DEVICES=0,1",
					"CUDA_DEVICE_MEMORY_LIMIT=512m",
					"CUDA_DEVICE_MEMORY_LIMIT_1=1024k"), &p,
			      err), 0);
	assert_int_equal(p.n, 2);
	budget_is(&p, 0, HOOK_CONTAINER, 0, 512 * MI, 512 * MI);
	budget_is(&p, 1, HOOK_CONTAINER, 1, MI, MI);
	/* NVIDIA's variables and annotations beat HAMi's, field by field */
	assert_int_equal(plan("{\"nxquota.io/max\":\"3Gi\"}",
			      ENV3("NVIDIA_VISIBLE_DEVICES=0",
				  "NVIDIA_GPU_MEMORY_REQUEST=1Gi",
				  "CUDA_DEVICE_MEMORY_LIMIT_0=2048m"), &p, err),
			 0);
	budget_is(&p, 0, HOOK_CONTAINER, 0, 3 * GI, GI);
	/* bytes without a suffix */
	assert_int_equal(plan(NULL, ENV2("NVIDIA_VISIBLE_DEVICES=0",
					"CUDA_DEVICE_MEMORY_LIMIT_0=1048576"), &p,
			      err), 0);
	budget_is(&p, 0, HOOK_CONTAINER, 0, MI, MI);

	/* what cannot be mapped or read exactly */
	plan_err(NULL, ENV2("NVIDIA_VISIBLE_DEVICES=0",
			   "CUDA_DEVICE_MEMORY_LIMIT_1=1g"),
		 "CUDA_DEVICE_MEMORY_LIMIT_1: NVIDIA_VISIBLE_DEVICES lists 1 GPU");
	plan_err(NULL, ENV2("NVIDIA_VISIBLE_DEVICES=all",
			   "CUDA_DEVICE_MEMORY_LIMIT_0=1g"),
		 "needs the GPUs listed one by one");
	plan_err(NULL, ENV2("NXQUOTA_DEVICES=host0",
			   "CUDA_DEVICE_MEMORY_LIMIT_0=1g"),
		 "without NVIDIA_VISIBLE_DEVICES");
	plan_err(NULL, ENV2("NVIDIA_VISIBLE_DEVICES=0",
			   "CUDA_DEVICE_MEMORY_LIMIT_0=1Gi"),
		 "is not a size as HAMi writes one");
	plan_err(NULL, ENV2("NVIDIA_VISIBLE_DEVICES=0",
			   "CUDA_DEVICE_MEMORY_LIMIT_0=0x10m"),
		 "is not a size as HAMi writes one");
	plan_err(NULL, ENV2("NVIDIA_VISIBLE_DEVICES=0",
			   "CUDA_DEVICE_MEMORY_LIMIT_0=99999999999999g"),
		 "is too large");
	plan_err(NULL, ENV2("NVIDIA_VISIBLE_DEVICES=0",
			   "CUDA_DEVICE_MEMORY_LIMIT_X=1g"),
		 "is not CUDA_DEVICE_MEMORY_LIMIT_<i>=SIZE");
}

/* A config: process.env's entries (quoted, comma-separated) and GPUs. */
#define DRA(env, devs)							\
	"{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=void\"," env "]},"	\
	"\"linux\":{\"devices\":[" devs "]}}"
/* /dev/nvidiaN, 195:N */
#define NODE(n)								\
	"{\"path\":\"/dev/nvidia" #n "\",\"type\":\"c\",\"major\":195,"	\
	"\"minor\":" #n "}"
#define NODE0 NODE(0)
#define NODE1 NODE(1)
#define NODE3 NODE(3)

/*
 * HAMi's DRA driver (hook_plan.c, plan_hami_dra()): the same variables
 * with NVIDIA_VISIBLE_DEVICES=void and the GPUs in linux.devices; its
 * <i> is in Go's map order, so one GPU, or one size on every GPU, maps;
 * anything else is refused unless annotations cover every GPU.
 */
static void test_plan_hami_dra(void **state)
{
	char err[HOOK_ERR_LEN];
	static struct hook_plan p;
	json_object *c;
	bool given[4];

	(void)state;
	/* a claim of two GPUs, 4Gi consumed on each */
	c = loadj("config-hami-dra.json");
	assert_true(hook_wanted(NULL, c));
	assert_int_equal(hook_given(c, &host, given, err), 0);
	assert_int_equal(hook_plan_build(NULL, c, &host, given, &p, err), 0);
	assert_int_equal(p.n, 2);
	budget_is(&p, 0, HOOK_CONTAINER, 0, 4096 * MI, 4096 * MI);
	budget_is(&p, 1, HOOK_CONTAINER, 3, 4096 * MI, 4096 * MI);
	assert_string_equal(p.b[1].min_src, "CUDA_DEVICE_MEMORY_LIMIT_0");
	assert_string_equal(p.b[1].min_txt, "4096m");
	json_object_put(c);

	/* one GPU: its 0 is that GPU, whichever node it is */
	assert_int_equal(plan(NULL, DRA("\"CUDA_DEVICE_MEMORY_LIMIT_0=1536m\"",
					NODE3), &p, err), 0);
	assert_int_equal(p.n, 1);
	budget_is(&p, 0, HOOK_CONTAINER, 3, 1536 * MI, 1536 * MI);
	/* oversubscribed: the max only; the unindexed one loses */
	assert_int_equal(plan(NULL, DRA("\"CUDA_DEVICE_MEMORY_LIMIT=1g\","
					"\"CUDA_OVERSUBSCRIBE=true\","
					"\"CUDA_DEVICE_MEMORY_LIMIT_0=2g\"",
					NODE1), &p, err), 0);
	budget_is(&p, 0, HOOK_CONTAINER, 1, 2 * GI, -1);
	/* a node the authority does not know is no GPU of the container */
	assert_int_equal(plan(NULL, DRA("\"CUDA_DEVICE_MEMORY_LIMIT_0=1g\"",
					NODE0 "," NODE(7)), &p, err), 0);
	assert_int_equal(p.n, 1);
	budget_is(&p, 0, HOOK_CONTAINER, 0, GI, GI);

	/* two sizes: which GPU has which is unknown */
	plan_err(NULL, DRA("\"CUDA_DEVICE_MEMORY_LIMIT_0=4096m\","
			   "\"CUDA_DEVICE_MEMORY_LIMIT_1=2048m\"",
			   NODE0 "," NODE3),
		 "CUDA_DEVICE_MEMORY_LIMIT_0=\"4096m\" and "
		 "CUDA_DEVICE_MEMORY_LIMIT_1=\"2048m\" differ");
	/* ... unless annotations set both fields of every GPU */
	assert_int_equal(plan("{\"nxquota.io/max.0\":\"3Gi\",\"nxquota.io/min.0\":"
			      "\"3Gi\",\"nxquota.io/max.3\":\"1Gi\","
			      "\"nxquota.io/min.3\":\"1Gi\"}",
			      DRA("\"CUDA_DEVICE_MEMORY_LIMIT_0=4096m\","
				  "\"CUDA_DEVICE_MEMORY_LIMIT_1=2048m\"",
				  NODE0 "," NODE3), &p, err), 0);
	assert_int_equal(p.n, 2);
	budget_is(&p, 0, HOOK_CONTAINER, 0, 3 * GI, 3 * GI);
	budget_is(&p, 1, HOOK_CONTAINER, 3, GI, GI);
	/* ... not just the max */
	plan_err("{\"nxquota.io/max\":\"3Gi\"}",
		 DRA("\"CUDA_DEVICE_MEMORY_LIMIT_0=4096m\","
		     "\"CUDA_DEVICE_MEMORY_LIMIT_1=2048m\"", NODE0 "," NODE3),
		 "differ");
	/* two claims of one GPU each: both wrote _0, the runtime kept one */
	plan_err(NULL, DRA("\"CUDA_DEVICE_MEMORY_LIMIT_0=4096m\"",
			   NODE0 "," NODE1),
		 "CUDA_DEVICE_MEMORY_LIMIT_1 is unset, and the container has "
		 "2 GPUs");
	/* more numbers than GPUs */
	plan_err(NULL, DRA("\"CUDA_DEVICE_MEMORY_LIMIT_0=1g\","
			   "\"CUDA_DEVICE_MEMORY_LIMIT_1=1g\"", NODE0),
		 "CUDA_DEVICE_MEMORY_LIMIT_1: the container has 1 GPU");
	plan_err(NULL, DRA("\"CUDA_DEVICE_MEMORY_LIMIT_0=1g\"", ""),
		 "with NVIDIA_VISIBLE_DEVICES=void and no GPU given");
	/* sizes are read exactly, even where the mapping fails */
	plan_err(NULL, DRA("\"CUDA_DEVICE_MEMORY_LIMIT_0=1Gi\"", NODE0),
		 "is not a size as HAMi writes one");
	plan_err(NULL, DRA("\"CUDA_DEVICE_MEMORY_LIMIT_0=1g\","
			   "\"CUDA_DEVICE_MEMORY_LIMIT_1=4q\"", NODE0 "," NODE1),
		 "CUDA_DEVICE_MEMORY_LIMIT_1=\"4q\" is not a size");
	plan_err(NULL, DRA("\"CUDA_DEVICE_MEMORY_LIMIT_00=1g\"", NODE0),
		 "is not CUDA_DEVICE_MEMORY_LIMIT_<i>=SIZE");
}

static void test_plan_precedence(void **state)
{
	char err[HOOK_ERR_LEN];
	static struct hook_plan p;
	const char *two = ENV("NVIDIA_VISIBLE_DEVICES=0,1");

	(void)state;
	/* per GPU beats all GPUs, in either order of the keys */
	assert_int_equal(plan("{\"nxquota.io/max\":\"10Gi\",\"nxquota.io/max.1\":"
			      "\"20Gi\"}", two, &p, err), 0);
	assert_int_equal(p.n, 2);
	budget_is(&p, 0, HOOK_CONTAINER, 0, 10 * GI, -1);
	budget_is(&p, 1, HOOK_CONTAINER, 1, 20 * GI, -1);
	assert_int_equal(plan("{\"nxquota.io/max.1\":\"20Gi\",\"nxquota.io/max\":"
			      "\"10Gi\"}", two, &p, err), 0);
	budget_is(&p, 0, HOOK_CONTAINER, 0, 10 * GI, -1);
	budget_is(&p, 1, HOOK_CONTAINER, 1, 20 * GI, -1);
	/* an annotation beats NVIDIA_GPU_MEMORY_*, field by field */
	assert_int_equal(plan("{\"nxquota.io/max\":\"10Gi\"}",
			      "{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=0\","
			      "\"NVIDIA_GPU_MEMORY_LIMIT=30Gi\","
			      "\"NVIDIA_GPU_MEMORY_REQUEST=5Gi\"]}}", &p, err), 0);
	assert_int_equal(p.n, 1);
	budget_is(&p, 0, HOOK_CONTAINER, 0, 10 * GI, 5 * GI);
	assert_string_equal(p.b[0].max_src, "nxquota.io/max");
	assert_string_equal(p.b[0].min_src, "NVIDIA_GPU_MEMORY_REQUEST");
	/* a per-GPU annotation beats the environment on its GPU only */
	assert_int_equal(plan("{\"nxquota.io/min.GPU-" UUID1 "\":\"1Gi\"}",
			      "{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=0,1\","
			      "\"NVIDIA_GPU_MEMORY_REQUEST=5Gi\"]}}", &p, err), 0);
	budget_is(&p, 0, HOOK_CONTAINER, 0, -1, 5 * GI);
	budget_is(&p, 1, HOOK_CONTAINER, 1, -1, 1 * GI);
	/* pod and container, both GPUs: the pod's first */
	assert_int_equal(plan("{\"nxquota.io/pod-max\":\"80Gi\",\"nxquota.io/"
			      "pod-min." UUID1 "\":\"4Gi\",\"nxquota.io/min\":"
			      "\"2Gi\"}", two, &p, err), 0);
	assert_int_equal(p.n, 4);
	budget_is(&p, 0, HOOK_POD, 0, 80 * GI, -1);
	budget_is(&p, 1, HOOK_POD, 1, 80 * GI, 4 * GI);
	budget_is(&p, 2, HOOK_CONTAINER, 0, -1, 2 * GI);
	budget_is(&p, 3, HOOK_CONTAINER, 1, -1, 2 * GI);
	/* min == max is fine; 0 is a value */
	assert_int_equal(plan("{\"nxquota.io/max\":\"1Gi\",\"nxquota.io/min\":"
			      "\"1073741824\",\"nxquota.io/pod-min\":\"0\","
			      "\"foo\":\"bar\"}", ENV("NVIDIA_VISIBLE_DEVICES=0"),
			      &p, err), 0);
	budget_is(&p, 0, HOOK_POD, 0, -1, 0);
	budget_is(&p, 1, HOOK_CONTAINER, 0, GI, GI);
}

static void test_plan_nothing(void **state)
{
	char err[HOOK_ERR_LEN];
	static struct hook_plan p;

	(void)state;
	/* the environment alone, no GPU given: nothing to do */
	assert_int_equal(plan(NULL, ENV("NVIDIA_GPU_MEMORY_LIMIT=1Gi"), &p, err),
			 0);
	assert_int_equal(p.n, 0);
	assert_int_equal(plan("{\"foo\":\"1\"}", ENV("NVIDIA_VISIBLE_DEVICES=0"),
			      &p, err), 0);
	assert_int_equal(p.n, 0);
}

static void test_plan_errors(void **state)
{
	const char *g0 = ENV("NVIDIA_VISIBLE_DEVICES=0");

	(void)state;
	plan_err("{\"nxquota.io/max\":\"40Gx\"}", g0,
		 "nxquota.io/max=\"40Gx\" is not a Kubernetes quantity");
	plan_err("{\"nxquota.io/max\":\"-1Gi\"}", g0, "is negative");
	plan_err("{\"nxquota.io/min\":\"20Ei\"}", g0, "above 2^64-1");
	plan_err("{\"nxquota.io/max\":40}", g0, "is not a string");
	plan_err("{\"nxquota.io/max\":\"1Gi\\n\"}", g0, "\"1Gi\\x0a\"");
	plan_err("{\"nxquota.io/max\":\"1Gi\",\"nxquota.io/min\":\"2Gi\"}", g0,
		 "min 2147483648 (nxquota.io/min=\"2Gi\") is above max "
		 "1073741824 (nxquota.io/max=\"1Gi\") for the container's");
	plan_err("{\"nxquota.io/pod-max\":\"1G\",\"nxquota.io/pod-min.0\":"
		 "\"1Gi\"}", g0, "for the pod's cgroup on GPU-" UUID0);
	plan_err("{\"nxquota.io/max\":\"1Gi\"}", "{\"process\":{\"env\":["
		 "\"NVIDIA_VISIBLE_DEVICES=0\",\"NVIDIA_GPU_MEMORY_REQUEST=2Gi\"]}}",
		 "(NVIDIA_GPU_MEMORY_REQUEST=\"2Gi\") is above max");
	plan_err(NULL, "{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=0\","
		 "\"NVIDIA_GPU_MEMORY_LIMIT=lots\"]}}",
		 "NVIDIA_GPU_MEMORY_LIMIT=\"lots\" is not");
	/* a GPU not given, named every way */
	plan_err("{\"nxquota.io/max.1\":\"1Gi\"}", g0,
		 "GPU-" UUID1 " was not given to the container");
	plan_err("{\"nxquota.io/pod-min.GPU-" UUID3 "\":\"1Gi\"}", g0,
		 "was not given");
	plan_err("{\"nxquota.io/max." UUID1 "\":\"1Gi\"}", g0, "was not given");
	plan_err("{\"nxquota.io/max.2\":\"1Gi\"}", g0, "no /dev/nvidia2");
	plan_err("{\"nxquota.io/max.host0\":\"1Gi\"}", g0, "neither an index");
	plan_err("{\"nxquota.io/max\":\"1Gi\"}", "{}", "given no GPU");
	plan_err("{\"nxquota.io/pod-min\":\"1Gi\"}", "{}", "given no GPU");
	/* one GPU named twice */
	plan_err("{\"nxquota.io/max.0\":\"1Gi\",\"nxquota.io/max." UUID0 "\":"
		 "\"2Gi\"}", g0, "both name GPU-" UUID0);
	/* keys nxquota.io/ does not know */
	plan_err("{\"nxquota.io/maximum\":\"1Gi\"}", g0, "unknown annotation");
	plan_err("{\"nxquota.io/max.\":\"1Gi\"}", g0, "unknown annotation");
	plan_err("{\"nxquota.io/Max\":\"1Gi\"}", g0, "unknown annotation");
	plan_err("{\"nxquota.io/pod-\":\"1Gi\"}", g0, "unknown annotation");
	plan_err("{\"nxquota.io/pod-pod-max\":\"1Gi\"}", g0, "unknown annotation");
	plan_err("{\"nxquota.io/kill-on-ignore\":\"1\"}", g0,
		 "unknown annotation \"nxquota.io/kill-on-ignore\"");
}

/* ---- what is in place ------------------------------------------------------------ */

static void test_reconcile(void **state)
{
	char err[HOOK_ERR_LEN];
	static struct hook_plan p;
	const char *ctr = "/k/pod1/c", *pod = "/k/pod1";
	struct hook_node nodes[] = {
		/* ancestors set_budget created: no budget of their own */
		{ "GPU-" UUID0, "/k", HOOK_NO_MAX, 0 },
		{ "GPU-" UUID0, "/k/pod1", 80 * GI, 0 },	/* a sibling's */
		{ "GPU-" UUID1, "/k/pod1", HOOK_NO_MAX, 0 },
		{ "GPU-" UUID0, "/k/pod1/c", 5 * GI, 1 * GI },
		{ "GPU-" UUID1, "/k/pod1/other", 1 * GI, 0 },
	};

	(void)state;
	assert_int_equal(plan("{\"nxquota.io/pod-max\":\"80Gi\",\"nxquota.io/"
			      "max\":\"10Gi\"}", ENV("NVIDIA_VISIBLE_DEVICES=0,1"),
			      &p, err), 0);
	assert_int_equal(p.n, 4);
	assert_int_equal(hook_reconcile(&p, &host, ctr, pod, nodes, 5, err), 0);
	/* pod, GPU 0: there already, the same: left alone */
	assert_true(p.b[0].existed && p.b[0].skip);
	/* pod, GPU 1: a node without a budget: created */
	assert_true(!p.b[1].existed && !p.b[1].skip);
	/* container, GPU 0: replaced, the old values kept for an undo */
	assert_true(p.b[2].existed && !p.b[2].skip);
	assert_int_equal(p.b[2].old_max, 5 * GI);
	assert_int_equal(p.b[2].old_min, 1 * GI);
	/* container, GPU 1: /k/pod1/other is not it */
	assert_true(!p.b[3].existed && !p.b[3].skip);
	assert_int_equal(p.b[3].old_max, HOOK_NO_MAX);

	/* the pod's budget with other values: refused, and says which */
	assert_int_equal(plan("{\"nxquota.io/pod-max\":\"60Gi\"}",
			      ENV("NVIDIA_VISIBLE_DEVICES=0"), &p, err), 0);
	assert_int_equal(hook_reconcile(&p, &host, ctr, pod, nodes, 5, err),
			 -EEXIST);
	assert_err(err, "the pod's budget is already max=85899345920 min=0");
	assert_err(err, "this container asks max=64424509440");
	/* a field the pod's budget has and the annotations leave: fine */
	assert_int_equal(plan("{\"nxquota.io/pod-min\":\"0\"}",
			      ENV("NVIDIA_VISIBLE_DEVICES=0"), &p, err), 0);
	assert_int_equal(hook_reconcile(&p, &host, ctr, pod, nodes, 5, err), 0);
	assert_true(p.b[0].skip);
	assert_int_equal(plan("{\"nxquota.io/pod-min\":\"1\"}",
			      ENV("NVIDIA_VISIBLE_DEVICES=0"), &p, err), 0);
	assert_int_equal(hook_reconcile(&p, &host, ctr, pod, nodes, 5, err),
			 -EEXIST);
	assert_err(err, "asks min=1");
}

/* ---- setting the plan, undoing it ------------------------------------------------ */

/*
 * A fake authority: every call is logged ("set PATH KEY max=N min=N;",
 * "clear PATH KEY;"), and the n-th call (from 1) answers rc[n] with why
 * "fake<n>"; the watchdog's last word at each call is kept.
 */
struct fake_auth {
	char log[4096];
	int calls, undo_begins;
	int rc[16];
	char note[HOOK_ERR_LEN];
	char note_at[16][HOOK_ERR_LEN];
};

static int fake_budget(void *arg, bool clear, const char *path,
		       const char *key, bool has_max, uint64_t max, bool has_min,
		       uint64_t min, char *why, size_t size)
{
	struct fake_auth *f = arg;
	size_t n = strlen(f->log);
	int call = ++f->calls;

	n += (size_t)snprintf(f->log + n, sizeof(f->log) - n, "%s %s %s",
			      clear ? "clear" : "set", path, key);
	if (has_max && !clear)
		n += (size_t)snprintf(f->log + n, sizeof(f->log) - n, " max=%llu",
				      (unsigned long long)max);
	if (has_min && !clear)
		n += (size_t)snprintf(f->log + n, sizeof(f->log) - n, " min=%llu",
				      (unsigned long long)min);
	snprintf(f->log + n, sizeof(f->log) - n, "; ");
	assert_true(call < 16);
	snprintf(f->note_at[call], sizeof(f->note_at[call]), "%s", f->note);
	if (f->rc[call])
		snprintf(why, size, "fake%d", call);
	return f->rc[call];
}

static void fake_undo_begin(void *arg)
{
	((struct fake_auth *)arg)->undo_begins++;
}

static void fake_note(void *arg, const char *left)
{
	struct fake_auth *f = arg;

	snprintf(f->note, sizeof(f->note), "%s", left);
}

#define G0 "GPU-" UUID0
#define G1 "GPU-" UUID1

/* pod G0, pod G1 (both new), container G0 (5Gi/1Gi before), container G1 */
static void apply_plan(struct hook_plan *p, const char *ctr)
{
	char err[HOOK_ERR_LEN];
	struct hook_node nodes[] = {
		{ G0, "/k/pod1/c", 5 * GI, 1 * GI },
		{ G0, "/k/pod1/it's", 5 * GI, 1 * GI },
	};

	assert_int_equal(plan("{\"nxquota.io/pod-max\":\"80Gi\",\"nxquota.io/"
			      "max\":\"10Gi\"}", ENV("NVIDIA_VISIBLE_DEVICES=0,1"),
			      p, err), 0);
	assert_int_equal(p->n, 4);
	assert_int_equal(hook_reconcile(p, &host, ctr, "/k/pod1", nodes, 2, err),
			 0);
	assert_true(!p->b[0].existed && !p->b[1].existed && p->b[2].existed &&
		    !p->b[3].existed);
}

/*
 * Issue 32, item 3: when one budget was refused, the undo stopped at the
 * first undo that failed and left the rest applied, unsaid.  Now every
 * step is undone past a failure, and what is left is named with the
 * command that puts it back.
 */
static void test_apply_undo_in_full(void **state)
{
	static struct fake_auth f;
	static struct hook_plan p;
	const struct hook_ops ops = { .budget = fake_budget,
				      .undo_begin = fake_undo_begin,
				      .note = fake_note, .arg = &f };
	char err[HOOK_ERR_LEN] = "";

	(void)state;
	apply_plan(&p, "/k/pod1/c");
	memset(&f, 0, sizeof(f));
	f.rc[4] = -EDQUOT;	/* the last budget is refused */
	f.rc[5] = -EIO;		/* undoing the third fails */
	f.rc[7] = -ENODEV;	/* and undoing the first */
	assert_int_equal(hook_apply(&p, &host, "/k/pod1/c", "/k/pod1",
				    "/run/x.sock", &ops, err), -EDQUOT);
	assert_string_equal(f.log,
		"set /k/pod1 " G0 " max=85899345920; "
		"set /k/pod1 " G1 " max=85899345920; "
		"set /k/pod1/c " G0 " max=10737418240; "
		"set /k/pod1/c " G1 " max=10737418240; "
		/* the undo, the last first, past the one that fails */
		"set /k/pod1/c " G0 " max=5368709120; "
		"clear /k/pod1 " G1 "; "
		"clear /k/pod1 " G0 "; ");
	assert_int_equal(f.undo_begins, 1);
	assert_err(err, "the authority refused max nxquota.io/max=\"10Gi\" for "
		   "/k/pod1/c on " G1 ": fake4; undone 1, LEFT 2: ");
	assert_err(err, "/k/pod1/c on " G0 " (max=10737418240, undo failed: "
		   "fake5; put back with: nxquotactl --control /run/x.sock set "
		   "/k/pod1/c " G0 " max=5368709120)");
	assert_err(err, "/k/pod1 on " G0 " (max=85899345920, undo failed: "
		   "fake7; put back with: nxquotactl --control /run/x.sock "
		   "clear /k/pod1 " G0 ")");
	assert_null(strstr(err, "/k/pod1 on " G1));	/* undone */
	assert_true(p.b[0].applied && !p.b[1].applied && p.b[2].applied &&
		    !p.b[3].applied);
	/* the watchdog's last word: what is left */
	assert_non_null(strstr(f.note, "clear /k/pod1 " G0));
	assert_null(strstr(f.note, "clear /k/pod1 " G1));

	/* all undone: said so; the module: no --control */
	memset(&f, 0, sizeof(f));
	f.rc[3] = -EINVAL;
	assert_int_equal(hook_apply(&p, &host, "/k/pod1/c", "/k/pod1", "", &ops,
				    err), -EINVAL);
	assert_err(err, "refused max nxquota.io/max=\"10Gi\" for /k/pod1/c on "
		   G0 ": fake3; the 2 budgets it set were undone");
	assert_int_equal(f.calls, 5);
	assert_null(strstr(err, "LEFT"));
}

/* A step not answered may still take effect: it is undone with the rest,
 * on a deadline of the undo's own; a clear that finds nothing is done. */
static void test_apply_timeout(void **state)
{
	static struct fake_auth f;
	static struct hook_plan p;
	const struct hook_ops ops = { .budget = fake_budget,
				      .undo_begin = fake_undo_begin,
				      .note = fake_note, .arg = &f };
	char err[HOOK_ERR_LEN] = "";

	(void)state;
	apply_plan(&p, "/k/pod1/c");
	memset(&f, 0, sizeof(f));
	f.rc[2] = -ETIMEDOUT;
	f.rc[3] = -ENOENT;	/* it never took effect */
	assert_int_equal(hook_apply(&p, &host, "/k/pod1/c", "/k/pod1", "",
				    &ops, err), -ETIMEDOUT);
	assert_string_equal(f.log,
		"set /k/pod1 " G0 " max=85899345920; "
		"set /k/pod1 " G1 " max=85899345920; "
		"clear /k/pod1 " G1 "; "
		"clear /k/pod1 " G0 "; ");
	assert_int_equal(f.undo_begins, 1);
	assert_err(err, "the authority did not answer, setting max "
		   "nxquota.io/pod-max=\"80Gi\" for /k/pod1 on " G1 ": fake2; the 2 "
		   "budgets it set were undone");
	/* while the second was asked, the watchdog would have named it */
	assert_err(f.note_at[2], "/k/pod1 on " G1 " (max=85899345920, maybe "
		   "set: no answer; put back with: nxquotactl clear /k/pod1 " G1
		   ")");
	assert_err(f.note_at[2], "/k/pod1 on " G0 " (max=85899345920; put back "
		   "with: nxquotactl clear /k/pod1 " G0 ")");

	/* the unanswered one left: named as maybe set */
	memset(&f, 0, sizeof(f));
	f.rc[2] = -ETIMEDOUT;
	f.rc[3] = -ETIMEDOUT;
	assert_int_equal(hook_apply(&p, &host, "/k/pod1/c", "/k/pod1", "",
				    &ops, err), -ETIMEDOUT);
	assert_err(err, "undone 1, LEFT 1: /k/pod1 on " G1 " (max=85899345920, "
		   "maybe set: no answer, undo failed: fake3; put back with: "
		   "nxquotactl clear /k/pod1 " G1 ")");
}

/* Success: every step once, the skipped pod budget not at all; a path
 * a shell would split is quoted in the command. */
static void test_apply_ok(void **state)
{
	static struct fake_auth f;
	static struct hook_plan p;
	const struct hook_ops ops = { .budget = fake_budget, .arg = &f };
	char err[HOOK_ERR_LEN] = "", left[HOOK_ERR_LEN];

	(void)state;
	apply_plan(&p, "/k/pod1/it's");
	p.b[1].skip = true;
	memset(&f, 0, sizeof(f));
	assert_int_equal(hook_apply(&p, &host, "/k/pod1/it's", "/k/pod1", "",
				    &ops, err), 0);
	assert_int_equal(f.calls, 3);
	assert_null(strstr(f.log, "/k/pod1 " G1));
	assert_int_equal(hook_left(&p, &host, "/k/pod1/it's", "/k/pod1",
				   "/a b", left, sizeof(left)), 3);
	assert_err(left, "put back with: nxquotactl --control '/a b' set "
		   "'/k/pod1/it'\\''s' " G0 " max=5368709120)");
	/* the record could not be written: undo it all */
	assert_int_equal(hook_undo(&p, &host, "/k/pod1/it's", "/k/pod1", "",
				   &ops, err, sizeof(err)), 0);
	assert_int_equal(f.calls, 6);
	assert_string_equal(err, "; the 3 budgets it set were undone");
	assert_int_equal(hook_left(&p, &host, "/k/pod1/it's", "/k/pod1", "",
				   left, sizeof(left)), 0);
	/* a long list ends in "...", inside the buffer */
	assert_int_equal(hook_apply(&p, &host, "/k/pod1/it's", "/k/pod1", "",
				    &ops, err), 0);
	assert_int_equal(hook_left(&p, &host, "/k/pod1/it's", "/k/pod1", "",
				   left, 100), 3);
	assert_int_equal(strlen(left), 99);
	assert_string_equal(left + 96, "...");
}

static void test_timeout_parse(void **state)
{
	static const char *const bad[] = {
		"", "0", "0.0", "0.0001", "601", "600.001", "1.2345", "-1", "1e3",
		" 5", "5 ", "5s", ".5", "5.", "99999", "0x10", "1..2",
	};
	char err[HOOK_ERR_LEN];
	unsigned int ms = 7;
	size_t i;

	(void)state;
	assert_int_equal(hook_timeout_parse("5", &ms, err), 0);
	assert_int_equal(ms, 5000);
	assert_int_equal(hook_timeout_parse("0.5", &ms, err), 0);
	assert_int_equal(ms, 500);
	assert_int_equal(hook_timeout_parse("2.25", &ms, err), 0);
	assert_int_equal(ms, 2250);
	assert_int_equal(hook_timeout_parse("0.001", &ms, err), 0);
	assert_int_equal(ms, 1);
	assert_int_equal(hook_timeout_parse("600", &ms, err), 0);
	assert_int_equal(ms, 600000);
	assert_int_equal(hook_timeout_parse("0600.000", &ms, err), 0);
	assert_int_equal(ms, 600000);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ms = 7;
		if (hook_timeout_parse(bad[i], &ms, err) != -EINVAL || ms != 7)
			fail_msg("timeout \"%s\" taken: %u", bad[i], ms);
	}
	assert_err(err, "timeout \"1..2\" is not a number of seconds");
}

/* ---- the record ------------------------------------------------------------------- */

static void test_record(void **state)
{
	char err[HOOK_ERR_LEN], *s;
	static struct hook_record r, back;

	(void)state;
	snprintf(r.id, sizeof(r.id), "ctr-1");
	snprintf(r.control, sizeof(r.control), "/run/nxquota/control.sock");
	snprintf(r.cgroup, sizeof(r.cgroup), "/k/pod1/c");
	snprintf(r.pod, sizeof(r.pod), "/k/pod1");
	r.n = 2;
	r.b[0] = (struct hook_rec_budget){ .scope = HOOK_POD, .created = true,
					   .has_max = true, .max = UINT64_MAX - 1 };
	snprintf(r.b[0].device, sizeof(r.b[0].device), "GPU-" UUID0);
	r.b[1] = (struct hook_rec_budget){ .scope = HOOK_CONTAINER,
					   .has_min = true, .min = 0 };
	snprintf(r.b[1].device, sizeof(r.b[1].device), "host0");
	s = hook_record_format(&r);
	assert_non_null(s);
	assert_non_null(strstr(s, "\"authority\":\"nxquotad\""));
	assert_non_null(strstr(s, "\"scope\":\"pod\""));
	assert_non_null(strstr(s, "\"cgroup\":\"/k/pod1\""));
	assert_int_equal(hook_record_parse(s, strlen(s), &back, err), 0);
	free(s);
	assert_string_equal(back.id, "ctr-1");
	assert_string_equal(back.control, r.control);
	assert_string_equal(back.cgroup, r.cgroup);
	assert_string_equal(back.pod, r.pod);
	assert_int_equal(back.n, 2);
	assert_string_equal(back.b[0].device, "GPU-" UUID0);
	assert_int_equal(back.b[0].scope, HOOK_POD);
	assert_true(back.b[0].created && back.b[0].has_max && !back.b[0].has_min);
	assert_int_equal(back.b[0].max, UINT64_MAX - 1);
	assert_int_equal(back.b[1].scope, HOOK_CONTAINER);
	assert_true(!back.b[1].created && back.b[1].has_min && !back.b[1].has_max);

	/* the module: no control socket */
	r.control[0] = '\0';
	s = hook_record_format(&r);
	assert_non_null(strstr(s, "\"authority\":\"module\""));
	assert_null(strstr(s, "control"));
	assert_int_equal(hook_record_parse(s, strlen(s), &back, err), 0);
	assert_string_equal(back.control, "");
	assert_null(strstr(s, "kubernetes"));
	assert_string_equal(back.k8s_pod, "");
	free(s);
}

/* The Kubernetes names: from the CRI's annotations, kept, read back. */
static void test_record_k8s(void **state)
{
	static const char ann_text[] =
		"{\"io.kubernetes.pod.namespace\":\"team-a\","
		"\"io.kubernetes.pod.name\":\"llm-0\","
		"\"io.kubernetes.container.name\":\"Bad Name\"}";
	char err[HOOK_ERR_LEN], *s;
	static struct hook_record r, back;
	json_object *ann = json_tokener_parse(ann_text);

	(void)state;
	memset(&r, 0, sizeof(r));
	snprintf(r.id, sizeof(r.id), "ctr-1");
	snprintf(r.cgroup, sizeof(r.cgroup), "/k/pod1/c");
	hook_record_k8s(ann, &r);
	json_object_put(ann);
	assert_string_equal(r.k8s_namespace, "team-a");
	assert_string_equal(r.k8s_pod, "llm-0");
	assert_string_equal(r.k8s_container, "");	/* not a name: unknown */
	s = hook_record_format(&r);
	assert_non_null(strstr(s, "\"kubernetes\""));
	assert_int_equal(hook_record_parse(s, strlen(s), &back, err), 0);
	free(s);
	assert_string_equal(back.k8s_namespace, "team-a");
	assert_string_equal(back.k8s_pod, "llm-0");
	assert_string_equal(back.k8s_container, "");
	hook_record_k8s(NULL, &r);
	assert_string_equal(r.k8s_pod, "");
}

static void record_bad(const char *text, const char *needle)
{
	char err[HOOK_ERR_LEN] = "";
	static struct hook_record r;

	if (hook_record_parse(text, strlen(text), &r, err) != -EINVAL)
		fail_msg("record %s accepted", text);
	assert_err(err, needle);
}

static void test_record_errors(void **state)
{
	(void)state;
	record_bad("{\"version\":2,\"id\":\"a\",\"authority\":\"module\","
		   "\"cgroup\":\"/a\"}", "not version 1");
	record_bad("{\"version\":1,\"id\":\"a\",\"authority\":\"nxquotad\","
		   "\"cgroup\":\"/a\"}", "unknown authority");
	record_bad("{\"version\":1,\"id\":\"a\",\"authority\":\"x\","
		   "\"cgroup\":\"/a\"}", "unknown authority");
	record_bad("{\"version\":1,\"id\":\"a\",\"authority\":\"module\"}",
		   "no cgroup");
	record_bad("{\"version\":1,\"id\":\"a\",\"authority\":\"module\","
		   "\"cgroup\":\"/a\",\"budgets\":[{\"device\":\"d\","
		   "\"scope\":\"node\"}]}", "unknown scope");
	record_bad("{\"version\":1,\"id\":\"a\",\"authority\":\"module\","
		   "\"cgroup\":\"/a\",\"budgets\":[{\"scope\":\"pod\"}]}",
		   "no device");
	record_bad("{\"version\":1,\"id\":\"a\",\"authority\":\"module\","
		   "\"cgroup\":\"/a\",\"budgets\":[{\"device\":\"d\","
		   "\"scope\":\"pod\",\"max\":\"1\"}]}", "max is not a number");
	record_bad("{\"version\":1,\"id\":\"a\",\"authority\":\"module\","
		   "\"cgroup\":\"/a\",\"kubernetes\":{\"pod\":\"a\\\"b\"}}",
		   "kubernetes.pod");
	record_bad("{\"version\":1,\"id\":\"a\",\"authority\":\"module\","
		   "\"cgroup\":\"/a\",\"kubernetes\":[]}",
		   "kubernetes is not an object");
}

/* ---- messages ------------------------------------------------------------------------ */

static void test_quote(void **state)
{
	char big[400];

	(void)state;
	assert_string_equal(hook_q("a\"b\\c\n\x7f"), "\"a\\\"b\\\\c\\x0a\\x7f\"");
	assert_string_equal(hook_q(NULL), "(none)");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_true(strlen(hook_q(big)) < 160);
	assert_non_null(strstr(hook_q(big), "...\""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state),
		cmocka_unit_test(test_state_errors),
		cmocka_unit_test(test_json_exact),
		cmocka_unit_test(test_nul_values),
		cmocka_unit_test(test_id),
		cmocka_unit_test(test_stage),
		cmocka_unit_test(test_env),
		cmocka_unit_test(test_annotations_source),
		cmocka_unit_test(test_wanted),
		cmocka_unit_test(test_proc_cgroup),
		cmocka_unit_test(test_cgroup_check),
		cmocka_unit_test(test_cgroup_own_parent),
		cmocka_unit_test(test_in_pod),
		cmocka_unit_test(test_pod_cgroup),
		cmocka_unit_test(test_given_fixtures),
		cmocka_unit_test(test_given_env),
		cmocka_unit_test(test_given_untrusted),
		cmocka_unit_test(test_given_linux_devices),
		cmocka_unit_test(test_given_report),
		cmocka_unit_test(test_plan_fixtures),
		cmocka_unit_test(test_plan_hami),
		cmocka_unit_test(test_plan_hami_dra),
		cmocka_unit_test(test_plan_precedence),
		cmocka_unit_test(test_plan_nothing),
		cmocka_unit_test(test_plan_errors),
		cmocka_unit_test(test_reconcile),
		cmocka_unit_test(test_apply_undo_in_full),
		cmocka_unit_test(test_apply_timeout),
		cmocka_unit_test(test_apply_ok),
		cmocka_unit_test(test_timeout_parse),
		cmocka_unit_test(test_record),
		cmocka_unit_test(test_record_k8s),
		cmocka_unit_test(test_record_errors),
		cmocka_unit_test(test_quote),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
