// SPDX-License-Identifier: GPL-2.0
/*
 * A fuzz target for nxquota-hook's input: the OCI state, config.json, the
 * hook's own records and /proc/PID/cgroup, through every decision the
 * hook takes on them (tools/hook*.c: the JSON gate, the state, the
 * annotations, the GPUs given, the plan, what is in place, setting and
 * undoing the plan against a fake authority that fails where the input
 * says, the cgroups, the pod's layout, the record's round trip).
 *
 * One input is a target byte (0 config.json, 1 state, 2 record, 3
 * /proc/PID/cgroup) and the text.  Besides the sanitizers (built with
 * ASan and UBSan, -fno-sanitize-recover), it checks what must hold of
 * whatever the hook accepts:
 *  - JSON hook_json_parse() takes holds no NUL in any key or string, and
 *    json-c's own rendering of it is taken again, equal;
 *  - hook_json_exact() and hook_json_parse() agree;
 *  - every message is one line, within HOOK_ERR_LEN;
 *  - a plan names given devices only, no min above its max;
 *  - after hook_apply() fails, the budgets left are exactly those whose
 *    undo failed; after it succeeds, all but the skipped are set;
 *  - a record parses back to what was formatted;
 *  - a pod's cgroup is the container's parent and a kubelet or podman
 *    layout (no ".scope" name).
 *
 * Two ways to run it:
 *  - `make -C tools check` (hook-fuzz): this file's main(), no libFuzzer:
 *    a seed corpus (the fixtures of tests/tools/hook/ and the seeds
 *    below), mutated by a fixed xorshift sequence (HOOK_FUZZ_SEED,
 *    default 1) for HOOK_FUZZ_RUNS inputs (default 200000) or at most
 *    HOOK_FUZZ_SECONDS (default 20): the same inputs every run, bounded;
 *    a failing input is written to hook-fuzz-crash.bin (HOOK_FUZZ_CRASH),
 *    and `hook_fuzz FILE` runs one input again; `hook_fuzz --write-corpus
 *    DIR` writes the seeds, each with its target byte;
 *  - `make -C tools fuzz-libfuzzer`: clang -fsanitize=fuzzer over
 *    LLVMFuzzerTestOneInput() (HOOK_FUZZ_LIBFUZZER), coverage-guided, for
 *    as long as one likes.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hook.h"

#if defined(__SANITIZE_ADDRESS__)
#define HAVE_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_SANITIZER 1
#endif
#endif
#ifdef HAVE_SANITIZER
#include <sanitizer/common_interface_defs.h>
#endif

#ifndef HOOK_FIXTURES
#define HOOK_FIXTURES "tests/tools/hook"
#endif

enum { T_CONFIG, T_STATE, T_RECORD, T_PROC, T_N };

#define FUZZ_MAX_INPUT	(64 << 10)

static void bad(const char *what, const char *detail)
{
	fprintf(stderr, "hook_fuzz: FAIL: %s: %s\n", what, detail ? detail : "");
	abort();
}

/* ---- the host ------------------------------------------------------------------ */

static struct hook_dev devs[4];

static int fake_nvidia(unsigned int idx, unsigned int *ma, unsigned int *mi,
		       void *arg)
{
	(void)arg;
	if (idx != 0 && idx != 1 && idx != 3)
		return -ENOENT;
	*ma = 195;
	*mi = idx;
	return 0;
}

static struct hook_host host = { .devs = devs, .ndevs = 4,
				 .nvidia = fake_nvidia };

static void host_init(void)
{
	static int done;

	if (done++)
		return;
	hook_dev_init(&devs[0], "GPU-8f1c2e4a-0d9b-4c1e-9a57-2b6d3f0e1a42", "195:0");
	hook_dev_init(&devs[1], "GPU-5f2c0b7e-1111-4c1e-9a57-2b6d3f0e1a43", "195:1");
	hook_dev_init(&devs[2], "host0", "");
	hook_dev_init(&devs[3], "GPU-00000000-3333-4444-5555-666666666666",
		      "195:3");
}

/* ---- checks -------------------------------------------------------------------- */

static void check_err(const char *err)
{
	size_t n = strnlen(err, HOOK_ERR_LEN);

	if (n == HOOK_ERR_LEN)
		bad("a message without its end", NULL);
	if (memchr(err, '\n', n))
		bad("a message of more than one line", err);
}

/* No NUL in any key or string of o. */
static void check_tree(json_object *o)
{
	size_t i, n;

	switch (json_object_get_type(o)) {
	case json_type_object: {
		json_object_object_foreach(o, key, val) {
			(void)key;
			check_tree(val);
		}
		break;
	}
	case json_type_array:
		n = json_object_array_length(o);
		for (i = 0; i < n; i++)
			check_tree(json_object_array_get_idx(o, i));
		break;
	case json_type_string:
		if ((size_t)json_object_get_string_len(o) !=
		    strlen(json_object_get_string(o)))
			bad("an accepted string holds a NUL",
			    json_object_get_string(o));
		break;
	default:
		break;
	}
}

/* Parse through the gate; check what it accepts. */
static json_object *parse(const char *buf, size_t len, const char *what)
{
	char err[HOOK_ERR_LEN];
	json_object *o = NULL, *again = NULL;
	const char *text;
	int rc = hook_json_parse(buf, len, what, &o, err);
	int exact = hook_json_exact(buf, len, what, NULL, NULL, err);

	if (rc) {
		check_err(err);
		if (!exact && !memchr(buf, '\0', len) && buf[0] == '{')
			bad("hook_json_exact() takes what hook_json_parse() "
			    "refuses", err);
		return NULL;
	}
	if (exact)
		bad("hook_json_parse() takes what hook_json_exact() refuses",
		    err);
	check_tree(o);
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	if (hook_json_parse(text, strlen(text), what, &again, err))
		bad("json-c's rendering of an accepted text is refused", err);
	if (!json_object_equal(o, again))
		bad("json-c's rendering reads back different", text);
	json_object_put(again);
	return o;
}

/* ---- the plan, against a fake authority -------------------------------------------- */

struct fake {
	uint64_t rng;
	int calls;
};

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int fake_budget(void *arg, bool clear, const char *path,
		       const char *key, bool has_max, uint64_t max, bool has_min,
		       uint64_t min, char *why, size_t size)
{
	static const int rcs[] = { -EDQUOT, -EINVAL, -ENOENT, -ETIMEDOUT, -EIO };
	struct fake *f = arg;
	uint64_t r = next(&f->rng);

	(void)clear, (void)path, (void)key, (void)has_max, (void)max;
	(void)has_min, (void)min;
	f->calls++;
	if (r % 4)
		return 0;
	snprintf(why, size, "refused\n%s", path);	/* a newline: escaped? */
	return rcs[(r >> 8) % 5];
}

static void check_plan(struct hook_plan *p, const bool *given, uint64_t seed)
{
	static const char *const ctrs[] = {
		"/kubepods/burstable/pod1b4e28ba-2fa1-11d2-883f-0016d3cca427/c1",
		"/machine.slice/libpod-f3d1c0b2a4e5968778695a4b3c2d1e0f0f1e2d3c"
		"4b5a69788796a5b4c3d2e1f0.scope/container",
		"/a b/it's/c",
	};
	const char *ctr = ctrs[seed % 3];
	struct hook_node nodes[2] = {
		{ devs[0].key, ctrs[0], 5ULL << 30, 1ULL << 30 },
		{ devs[1].key, "/kubepods/burstable/pod1b4e28ba-2fa1-11d2-883f-"
			       "0016d3cca427", 80ULL << 30, 0 },
	};
	char err[HOOK_ERR_LEN], pod[HOOK_PATH_MAX], *left;
	struct fake f = { .rng = seed | 1 };
	const struct hook_ops ops = { .budget = fake_budget, .arg = &f };
	size_t i, nleft = 0;
	int rc;

	for (i = 0; i < p->n; i++) {
		if (p->b[i].dev >= host.ndevs || !given[p->b[i].dev])
			bad("a plan for a device not given", NULL);
		if (p->b[i].has_max && p->b[i].has_min &&
		    p->b[i].min > p->b[i].max)
			bad("a plan with min above max", NULL);
	}
	if (hook_cgroup_parent(ctr, pod, sizeof(pod), err))
		bad("no parent", err);
	rc = hook_reconcile(p, &host, ctr, pod, nodes, 2, err);
	if (rc) {
		check_err(err);
		return;
	}
	rc = hook_apply(p, &host, ctr, pod, seed & 2 ? "/run/c.sock" : "",
			&ops, err);
	if (rc)
		check_err(err);
	for (i = 0; i < p->n; i++) {
		if (!rc && p->b[i].applied != !p->b[i].skip)
			bad("a plan set, a budget not", NULL);
		if (rc && p->b[i].applied && !p->b[i].why[0])
			bad("a budget left without its reason", NULL);
		nleft += p->b[i].applied;
	}
	left = malloc(HOOK_ERR_LEN);
	if (!left)
		abort();
	if (hook_left(p, &host, ctr, pod, "", left, HOOK_ERR_LEN) != nleft)
		bad("hook_left() counts another number", left);
	if (rc && nleft && !strstr(err, "LEFT"))
		bad("budgets left, unsaid", err);
	free(left);
}

/* ---- the targets ----------------------------------------------------------------------- */

static void one_config(const char *buf, size_t len, uint64_t seed)
{
	static const char state_text[] =
		"{\"id\":\"c\",\"status\":\"creating\",\"pid\":1}";
	static struct hook_plan p;
	char err[HOOK_ERR_LEN];
	json_object *cfg = parse(buf, len, "config.json"), *st_root, *ann;
	struct hook_state st;
	bool given[4];
	const char *v;

	if (!cfg)
		return;
	st_root = parse(state_text, sizeof(state_text) - 1, "state");
	if (!st_root || hook_state_parse(st_root, &st, err))
		bad("the fixed state", err);
	if (hook_annotations(&st, cfg, &ann, err)) {
		check_err(err);
		goto out;
	}
	(void)hook_wanted(ann, cfg);
	if (hook_env(cfg, "NVIDIA_GPU_MEMORY_LIMIT", &v, err) < 0)
		check_err(err);
	host.trust_env = seed & 1;
	if (hook_given(cfg, &host, given, err)) {
		check_err(err);
		goto out;
	}
	if (hook_plan_build(ann, cfg, &host, given, &p, err)) {
		check_err(err);
		goto out;
	}
	check_plan(&p, given, seed);
	if (hook_in_pod(ann))
		(void)hook_pod_cgroup_check("/kubepods/pod1b4e28ba-2fa1-11d2-"
					    "883f-0016d3cca427", ann, err);
out:
	json_object_put(st_root);
	json_object_put(cfg);
}

static void one_state(const char *buf, size_t len)
{
	char err[HOOK_ERR_LEN];
	json_object *root = parse(buf, len, "the state"), *ann;
	struct hook_state st;
	enum hook_stage stage;

	if (!root)
		return;
	if (hook_state_parse(root, &st, err) || hook_id_check(st.id, err)) {
		check_err(err);
		json_object_put(root);
		return;
	}
	if (hook_stage(NULL, st.status, &stage, err))
		check_err(err);
	if (!hook_annotations(&st, NULL, &ann, err) && ann) {
		(void)hook_in_pod(ann);
		if (hook_pod_cgroup_check("/kubepods.slice/kubepods-pod1b4e28ba_"
					  "2fa1_11d2_883f_0016d3cca427.slice", ann,
					  err))
			check_err(err);
	}
	json_object_put(root);
}

static void one_record(const char *buf, size_t len)
{
	static struct hook_record r, back;
	char err[HOOK_ERR_LEN], *s;
	size_t i;

	if (hook_record_parse(buf, len, &r, err)) {
		check_err(err);
		return;
	}
	s = hook_record_format(&r);
	if (!s)
		abort();
	if (hook_record_parse(s, strlen(s), &back, err))
		bad("a record formatted is refused", err);
	free(s);
	if (strcmp(r.id, back.id) || strcmp(r.control, back.control) ||
	    strcmp(r.cgroup, back.cgroup) || strcmp(r.pod, back.pod) ||
	    r.n != back.n)
		bad("a record reads back different", r.id);
	for (i = 0; i < r.n; i++)
		if (strcmp(r.b[i].device, back.b[i].device) ||
		    r.b[i].scope != back.b[i].scope ||
		    r.b[i].created != back.b[i].created ||
		    r.b[i].has_max != back.b[i].has_max ||
		    r.b[i].has_min != back.b[i].has_min ||
		    (r.b[i].has_max && r.b[i].max != back.b[i].max) ||
		    (r.b[i].has_min && r.b[i].min != back.b[i].min))
			bad("a record's budget reads back different",
			    r.b[i].device);
}

static void one_proc(const char *buf, size_t len)
{
	char err[HOOK_ERR_LEN], path[HOOK_PATH_MAX], pod[HOOK_PATH_MAX];
	char *text = strndup(buf, len);
	json_object *ann = json_object_new_object();

	if (!text || !ann)
		abort();
	if (hook_proc_cgroup(text, path, sizeof(path), err) ||
	    hook_cgroup_check(path, err) ||
	    hook_cgroup_parent(path, pod, sizeof(pod), err)) {
		check_err(err);
		goto out;
	}
	if (strncmp(path, pod, strlen(pod)) || path[strlen(pod)] != '/')
		bad("a parent that is not the path's", path);
	if (!hook_pod_cgroup_check(pod, ann, err)) {
		const char *name = strrchr(pod, '/') + 1;

		if (strstr(name, ".scope") || (!strstr(pod, "kubepods") &&
					       !strstr(pod, "libpod")))
			bad("a pod that is no kubelet's nor podman's", pod);
	} else {
		check_err(err);
	}
out:
	json_object_put(ann);
	free(text);
}

/* The last input, for a crash report. */
static const uint8_t *cur_data;
static size_t cur_size;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data + 1;
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	size_t i;

	if (!size || size > FUZZ_MAX_INPUT)
		return 0;
	host_init();
	cur_data = data;
	cur_size = size;
	for (i = 0; i < size; i++)
		seed = (seed ^ data[i]) * 0x100000001b3ULL;
	switch (data[0] % T_N) {
	case T_CONFIG:
		one_config(buf, size - 1, seed);
		break;
	case T_STATE:
		one_state(buf, size - 1);
		break;
	case T_RECORD:
		one_record(buf, size - 1);
		break;
	default:
		one_proc(buf, size - 1);
		break;
	}
	return 0;
}

#ifndef HOOK_FUZZ_LIBFUZZER
/* ---- the bounded driver ------------------------------------------------------------------- */

struct input {
	uint8_t *d;
	size_t n;
};

static struct input corpus[64];
static size_t ncorpus;

static void add(int target, const char *text, size_t n)
{
	struct input *in;

	if (ncorpus == sizeof(corpus) / sizeof(corpus[0]))
		return;
	in = &corpus[ncorpus++];
	in->d = malloc(n + 1);
	if (!in->d)
		abort();
	in->d[0] = (uint8_t)target;
	memcpy(in->d + 1, text, n);
	in->n = n + 1;
}

static const char *const seeds[][2] = {
	{ "0", "{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=0,1\","
	       "\"NVIDIA_GPU_MEMORY_LIMIT=8Gi\",\"NVIDIA_GPU_MEMORY_REQUEST=1Gi\","
	       "\"NXQUOTA_DEVICES=host0\",\"NXQUOTA_DEVICE_A=host0\"]},"
	       "\"linux\":{\"devices\":[{\"type\":\"c\",\"major\":195,\"minor\":3}]},"
	       "\"annotations\":{\"io.kubernetes.pod.uid\":\"1b4e28ba-2fa1-11d2-"
	       "883f-0016d3cca427\",\"nxquota.io/max\":\"40Gi\",\"nxquota.io/"
	       "min.1\":\"1.5Gi\",\"nxquota.io/pod-max\":\"60G\",\"nxquota.io/"
	       "pod-min.host0\":\"4e9\",\"x\":[1,-2.5e3,true,null,{}]}}" },
	{ "0", "{\"annotations\":{\"nxquota.io/max\":\"1Gi\",\"nxquota.io/max"
	       "\\u0000\":\"90Gi\",\"k\\u00e9\\ud83d\\ude00\":\"\\/\\b\"}}" },
	{ "1", "{\"ociVersion\":\"1.0.2\",\"id\":\"ctr-1\",\"status\":\"creating\","
	       "\"pid\":42,\"bundle\":\"/b\",\"annotations\":{\"io.kubernetes.cri"
	       ".sandbox-uid\":\"1b4e28ba-2fa1-11d2-883f-0016d3cca427\"}}" },
	{ "2", "{\"version\":1,\"id\":\"ctr1\",\"authority\":\"nxquotad\","
	       "\"control\":\"/run/nxquota/control.sock\",\"cgroup\":\"/k/pod1/c\","
	       "\"pod_cgroup\":\"/k/pod1\",\"budgets\":[{\"device\":\"GPU-1\","
	       "\"scope\":\"pod\",\"cgroup\":\"/k/pod1\",\"max\":18446744073709551615,"
	       "\"created\":true},{\"device\":\"host0\",\"scope\":\"container\","
	       "\"min\":0,\"created\":false}]}" },
	{ "3", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-"
	       "pod1b4e28ba_2fa1_11d2_883f_0016d3cca427.slice/cri-containerd-"
	       "4f2c.scope\n" },
	{ "3", "1:cpu:/x\n0::/machine.slice/machine-libpod_pod_f3d1c0b2a4e596877869"
	       "5a4b3c2d1e0f0f1e2d3c4b5a69788796a5b4c3d2e1f0.slice/libpod-ab.scope\n" },
	{ "3", "0::/machine.slice/libpod-f3d1c0b2a4e5968778695a4b3c2d1e0f0f1e2d3c"
	       "4b5a69788796a5b4c3d2e1f0.scope/container\n" },
	{ "3", "0::/libpod_parent/f3d1c0b2a4e5968778695a4b3c2d1e0f0f1e2d3c4b5a6978"
	       "8796a5b4c3d2e1f0/libpod-ab\n" },
};

/* The fixtures of tests/tools/hook/, by name: state-*, config-*, proc-*. */
static void load_fixtures(void)
{
	DIR *d = opendir(HOOK_FIXTURES);
	char path[1024], *buf;
	struct dirent *e;
	size_t len;
	FILE *f;
	int t;

	if (!d) {
		fprintf(stderr, "hook_fuzz: %s: %s\n", HOOK_FIXTURES,
			strerror(errno));
		exit(1);
	}
	while ((e = readdir(d))) {
		t = !strncmp(e->d_name, "config-", 7) ? T_CONFIG :
		    !strncmp(e->d_name, "state-", 6) ? T_STATE :
		    !strncmp(e->d_name, "proc-", 5) ? T_PROC : -1;
		if (t < 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", HOOK_FIXTURES, e->d_name);
		f = fopen(path, "r");
		buf = NULL;
		len = 0;
		if (f && getdelim(&buf, &len, '\0', f) > 0)
			add(t, buf, strlen(buf));
		free(buf);
		if (f)
			fclose(f);
	}
	closedir(d);
}

static const char *const dict[] = {
	"\"", "\\", "\\u0000", "\\ud800", "\\udc00", "\\ud83d\\ude00", "\\u00",
	"{", "}", "[", "]", ",", ":", "\"nxquota.io/max\":", "nxquota.io/pod-min.",
	"nxquota.io/max.0", "io.kubernetes.pod.uid", "io.kubernetes.cri-o.SandboxID",
	"NVIDIA_VISIBLE_DEVICES=", "NVIDIA_GPU_MEMORY_LIMIT=", "NXQUOTA_DEVICE_X=",
	"18446744073709551616", "-9223372036854775809", "1e999", "-0", "01",
	"0.5", "17Ei", "-1Gi", "all", "none", "GPU-", "/kubepods/burstable/pod",
	"kubepods-besteffort-pod", ".slice", ".scope", "libpod-", "libpod_pod_",
	"\xff", "\xed\xa0\x80", "\xc0\xaf", "\t", "\n", "/*", "'", "NaN", "true",
	"null", "\"budgets\":", "\"scope\":\"pod\"", "\"created\":", " (deleted)",
	"/..", "//", "0::",
};

static uint64_t rng;

static size_t mutate(uint8_t *d, size_t n, size_t cap)
{
	size_t k = 1 + next(&rng) % 6, i, at, len;
	const struct input *o;
	const char *w;

	while (k--) {
		at = n > 1 ? 1 + next(&rng) % (n - 1) : 1;
		switch (next(&rng) % 7) {
		case 0:		/* flip a bit */
			if (n > 1)
				d[at] ^= (uint8_t)(1 << (next(&rng) % 8));
			break;
		case 1:		/* a byte */
			if (n > 1)
				d[at] = (uint8_t)next(&rng);
			break;
		case 2:		/* delete a run */
			len = n > at ? next(&rng) % (n - at) % 16 : 0;
			memmove(d + at, d + at + len, n - at - len);
			n -= len;
			break;
		case 3:		/* repeat a run */
			len = n > at ? 1 + next(&rng) % (n - at) % 32 : 0;
			if (len && n + len <= cap) {
				memmove(d + at + len, d + at, n - at);
				n += len;
			}
			break;
		case 4:		/* splice another input's tail */
			o = &corpus[next(&rng) % ncorpus];
			i = o->n > 1 ? 1 + next(&rng) % (o->n - 1) : 1;
			len = o->n - i;
			if (at + len <= cap) {
				memcpy(d + at, o->d + i, len);
				n = at + len;
			}
			break;
		default:	/* a token */
			w = dict[next(&rng) % (sizeof(dict) / sizeof(dict[0]))];
			len = strlen(w);
			if (n + len <= cap) {
				memmove(d + at + len, d + at, n - at);
				memcpy(d + at, w, len);
				n += len;
			}
			break;
		}
	}
	return n;
}

static const char *crash_file(void)
{
	const char *f = getenv("HOOK_FUZZ_CRASH");

	return f && f[0] ? f : "hook-fuzz-crash.bin";
}

/* Keep the input that failed (abort(), or a sanitizer's report). */
static void save(void)
{
	FILE *f = fopen(crash_file(), "w");

	if (f) {
		fwrite(cur_data, 1, cur_size, f);
		fclose(f);
		fprintf(stderr, "hook_fuzz: the input is in %s (run it again: "
			"hook_fuzz %s)\n", crash_file(), crash_file());
	}
}

static void on_abort(int sig)
{
	(void)sig;
	save();
	signal(SIGABRT, SIG_DFL);
	abort();
}

static unsigned long env_ul(const char *name, unsigned long def)
{
	const char *s = getenv(name);

	return s && s[0] ? strtoul(s, NULL, 0) : def;
}

int main(int argc, char **argv)
{
	unsigned long runs = env_ul("HOOK_FUZZ_RUNS", 200000);
	unsigned long secs = env_ul("HOOK_FUZZ_SECONDS", 20);
	static uint8_t buf[FUZZ_MAX_INPUT];
	struct timespec t0, t;
	unsigned long r;
	double el = 0;
	size_t i, n;

	signal(SIGABRT, on_abort);
#ifdef HAVE_SANITIZER
	__sanitizer_set_death_callback(save);
#endif
	rng = env_ul("HOOK_FUZZ_SEED", 1) * 0x9e3779b97f4a7c15ULL | 1;
	load_fixtures();
	for (i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
		add(seeds[i][0][0] - '0', seeds[i][1], strlen(seeds[i][1]));
	if (argc == 3 && !strcmp(argv[1], "--write-corpus")) {
		/* the seeds, each with its target byte: libFuzzer's corpus */
		for (i = 0; i < ncorpus; i++) {
			char path[1024];
			FILE *f;

			snprintf(path, sizeof(path), "%s/seed-%02zu", argv[2], i);
			f = fopen(path, "w");
			if (!f || fwrite(corpus[i].d, 1, corpus[i].n, f) !=
			    corpus[i].n) {
				perror(path);
				return 1;
			}
			fclose(f);
		}
		return 0;
	}
	if (argc == 2) {	/* one input again */
		FILE *f = fopen(argv[1], "r");

		if (!f) {
			perror(argv[1]);
			return 1;
		}
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, n);
		printf("hook_fuzz: %s: ok\n", argv[1]);
		return 0;
	}
	for (i = 0; i < ncorpus; i++)
		LLVMFuzzerTestOneInput(corpus[i].d, corpus[i].n);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (r = 0; r < runs; r++) {
		const struct input *in = &corpus[next(&rng) % ncorpus];

		memcpy(buf, in->d, in->n);
		n = mutate(buf, in->n, sizeof(buf));
		LLVMFuzzerTestOneInput(buf, n);
		if (r % 1024 == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			el = (double)(t.tv_sec - t0.tv_sec) +
			     (double)(t.tv_nsec - t0.tv_nsec) / 1e9;
			if (el > (double)secs)
				break;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t);
	el = (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9;
	printf("hook_fuzz: ok: %lu inputs from %zu seeds (seed %lu) in %.1f s%s\n",
	       r < runs ? r + 1 : r, ncorpus, env_ul("HOOK_FUZZ_SEED", 1), el,
	       r < runs ? " (stopped at HOOK_FUZZ_SECONDS)" : "");
	for (i = 0; i < ncorpus; i++)
		free(corpus[i].d);
	return 0;
}
#endif
