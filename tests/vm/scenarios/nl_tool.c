// SPDX-License-Identifier: GPL-2.0
/*
 * nl_tool: nxquotactl (built static and packed as /tools/nxquotactl)
 * against the real module.  Devices registered and budgets set with the
 * tool read back through sysfs; `--json status` is valid JSON and holds
 * the sysfs numbers; `metrics` passes a Prometheus text-format (0.0.4)
 * check and holds them too; without capabilities `set` is refused with
 * exit status 4 and a clear message; a bad size is a usage error (2).
 * Skipped when the tool was not built (make -C tools static).
 */
#include "scen.h"

#define TOOL	"/tools/nxquotactl"
#define KEY	"t-nlt"
#define CG	"/nlt-a"
#define CG_B	"/nlt-b"

static char out[1 << 16];

/* Run the tool; its stdout and stderr into out; its exit status. */
static int tool(int drop, ...)
{
	const char *argv[16] = { TOOL };
	int p[2], n = 1, status;
	size_t len = 0;
	ssize_t r;
	va_list ap;
	pid_t pid;

	va_start(ap, drop);
	while (n < 15 && (argv[n] = va_arg(ap, const char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	CHECK(pipe(p) == 0);
	pid = sc_fork();
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		if (drop) {	/* an unprivileged process in /nlt-b */
			if (sc_cg_enter(CG_B))
				_exit(126);
			sc_drop_to_nobody();
		}
		execv(TOOL, (char **)argv);
		_exit(127);
	}
	close(p[1]);
	while ((r = read(p[0], out + len, sizeof(out) - 1 - len)) > 0)
		len += r;
	out[len] = 0;
	close(p[0]);
	status = sc_wait(pid);
	return status;
}

#define TOOL_OK(...) do {						\
	int _s = tool(0, __VA_ARGS__, NULL);				\
	if (_s)								\
		FAIL("nxquotactl %s: exit %d: %s", #__VA_ARGS__, _s, out);\
} while (0)

/* ---- a small JSON validator ------------------------------------------- */

static const char *js;

static void ws(void)
{
	while (*js == ' ' || *js == '\n' || *js == '\t' || *js == '\r')
		js++;
}

static int value(int depth);

static int string(void)
{
	if (*js++ != '"')
		return -1;
	while (*js && *js != '"') {
		if ((unsigned char)*js < 0x20)
			return -1;
		if (*js == '\\') {
			js++;
			if (*js == 'u') {
				int i;

				for (i = 1; i <= 4; i++)
					if (!strchr("0123456789abcdefABCDEF", js[i]) || !js[i])
						return -1;
				js += 4;
			} else if (!*js || !strchr("\"\\/bfnrt", *js)) {
				return -1;
			}
		}
		js++;
	}
	return *js++ == '"' ? 0 : -1;
}

static int number(void)
{
	const char *s = js;

	if (*js == '-')
		js++;
	if (*js == '0')
		js++;
	else if (*js >= '1' && *js <= '9')
		while (*js >= '0' && *js <= '9')
			js++;
	else
		return -1;
	if (*js == '.') {
		js++;
		if (*js < '0' || *js > '9')
			return -1;
		while (*js >= '0' && *js <= '9')
			js++;
	}
	return js > s ? 0 : -1;
}

static int members(int depth, char close, int keyed)
{
	ws();
	if (*js == close) {
		js++;
		return 0;
	}
	for (;;) {
		ws();
		if (keyed) {
			if (string())
				return -1;
			ws();
			if (*js++ != ':')
				return -1;
		}
		if (value(depth + 1))
			return -1;
		ws();
		if (*js == ',') {
			js++;
			continue;
		}
		return *js++ == close ? 0 : -1;
	}
}

static int value(int depth)
{
	if (depth > 32)
		return -1;
	ws();
	switch (*js) {
	case '{':
		js++;
		return members(depth, '}', 1);
	case '[':
		js++;
		return members(depth, ']', 0);
	case '"':
		return string();
	case 't':
		return strncmp(js, "true", 4) ? -1 : (js += 4, 0);
	case 'f':
		return strncmp(js, "false", 5) ? -1 : (js += 5, 0);
	case 'n':
		return strncmp(js, "null", 4) ? -1 : (js += 4, 0);
	default:
		return number();
	}
}

static int json_valid(const char *s)
{
	js = s;
	if (value(0))
		return 0;
	ws();
	return *js == 0;
}

/* ---- a Prometheus text exposition (0.0.4) check ------------------------- */

static int name_ok(const char *s, size_t n, int colon)
{
	size_t i;

	if (!n)
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];
		int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    c == '_' || (colon && c == ':');

		if (!alpha && (i == 0 || c < '0' || c > '9'))
			return 0;
	}
	return 1;
}

/* Returns if text passes; else FAIL naming the line. */
static void prom_check(char *text)
{
	static char typed[64][80], series[512][256];
	int ntyped = 0, nseries = 0, i, line = 0;
	char current[80] = "", *l, *next;

	if (!*text || text[strlen(text) - 1] != '\n')
		FAIL("metrics: output does not end with a newline");
	for (l = text; *l; l = next) {
		char *nl = strchr(l, '\n'), *p, *end;
		size_t n;

		*nl = 0;
		next = nl + 1;
		line++;
		if (!strncmp(l, "# TYPE ", 7) || !strncmp(l, "# HELP ", 7)) {
			p = l + 7;
			n = strcspn(p, " ");
			if (!name_ok(p, n, 1) || !p[n])
				FAIL("metrics line %d: bad comment: %s", line, l);
			if (l[2] == 'T') {
				if (strcmp(p + n + 1, "counter") &&
				    strcmp(p + n + 1, "gauge") &&
				    strcmp(p + n + 1, "untyped"))
					FAIL("metrics line %d: type %s", line,
					     p + n + 1);
				for (i = 0; i < ntyped; i++)
					if (!strncmp(typed[i], p, n) && !typed[i][n])
						FAIL("metrics line %d: %.*s typed "
						     "twice", line, (int)n, p);
				if (ntyped == 64)
					FAIL("too many metric families");
				snprintf(typed[ntyped++], 80, "%.*s", (int)n, p);
				snprintf(current, sizeof(current), "%.*s",
					 (int)n, p);
			}
			continue;
		}
		if (l[0] == '#' || !l[0])
			continue;
		n = strcspn(l, "{ ");
		if (!name_ok(l, n, 1))
			FAIL("metrics line %d: bad metric name: %s", line, l);
		if (strncmp(l, current, n) || current[n])
			FAIL("metrics line %d: sample of %.*s outside its "
			     "TYPE'd group (%s)", line, (int)n, l, current);
		p = l + n;
		if (*p == '{') {
			p++;
			while (*p != '}') {
				n = strcspn(p, "=");
				if (!name_ok(p, n, 0) || p[n] != '=' ||
				    p[n + 1] != '"')
					FAIL("metrics line %d: bad label: %s",
					     line, l);
				p += n + 2;
				while (*p && *p != '"') {
					if (*p == '\\') {
						if (!p[1] || !strchr("\\\"n", p[1]))
							FAIL("metrics line %d: bad "
							     "escape", line);
						p++;
					}
					p++;
				}
				if (*p++ != '"')
					FAIL("metrics line %d: open label", line);
				if (*p == ',')
					p++;
				else if (*p != '}')
					FAIL("metrics line %d: after a label: %s",
					     line, p);
			}
			p++;
		}
		if (*p++ != ' ')
			FAIL("metrics line %d: no value: %s", line, l);
		if (strcmp(p, "+Inf") && strcmp(p, "-Inf") && strcmp(p, "NaN")) {
			strtod(p, &end);
			if (end == p || *end)
				FAIL("metrics line %d: bad value: %s", line, p);
		}
		n = p - 1 - l;
		for (i = 0; i < nseries; i++)
			if (!strncmp(series[i], l, n) && !series[i][n])
				FAIL("metrics line %d: duplicate series", line);
		if (nseries < 512)
			snprintf(series[nseries++], 256, "%.*s", (int)n, l);
	}
}

/* ---- the scenario ------------------------------------------------------ */

static int c2p[2], p2c[2];

static int holder(void *arg)
{
	uint64_t h = 0, c = 0;
	int fd;

	(void)arg;
	CHECK_OK(sc_cg_enter(CG));
	fd = sc_open();
	CHECK(fd >= 0);
	CHECK_OK(sc_register(fd, KEY, SC_EFD, 3, &h));
	CHECK_OK(sc_charge(fd, h, SC_MIB, &c));
	CHECK_OK(sc_send(c2p[1], 1));
	RECV(p2c[0]);
	return 0;
}

static void want(const char *what, const char *needle)
{
	if (!strstr(out, needle))
		FAIL("%s lacks %s; got:\n%s", what, needle, out);
}

/* nxquotactl over the kernel's netlink: the module only (sc_module_only[]).
 * Registering and unregistering the device with the tool is part of the
 * test: only the cgroups are the fixture's. */
FIXTURE(nl_tool) {};

FIXTURE_VARIANT(nl_tool) {};

FIXTURE_VARIANT_ADD(nl_tool, module) {};

FIXTURE_SETUP(nl_tool)
{
	if (!sc_exists(TOOL))
		SKIP("%s not packed (build it: make -C tools static)", TOOL);
	CHECK_OK(sc_cg_create(CG));
	CHECK_OK(sc_cg_create(CG_B));
}

FIXTURE_TEARDOWN(nl_tool)
{
	CHECK_OK(sc_cg_remove(CG));
	CHECK_OK(sc_cg_remove(CG_B));
}

TEST_F(nl_tool, set_status_metrics)
{
	char buf[512], copy[sizeof(out)];
	uint64_t a, root;
	pid_t pid;
	int s;

	TOOL_OK("devices", "register", KEY, "8M");
	CHECK_EQ(DEV_U64(KEY, "capacity"), 8 * SC_MIB);
	sc_track_key(KEY);	/* for sc_cleanup() */
	a = CG_ID(CG);
	/* its holder registers with priority 3 */
	CHECK_OK(sc_set_budget(KEY, CG " priority_max=3"));
	root = CG_ID("/");
	TOOL_OK("set", CG, KEY, "max=4M", "min=1M");
	CHECK_EQ(NODE_U64(KEY, a, "max"), 4 * SC_MIB);
	CHECK_EQ(NODE_U64(KEY, a, "min"), SC_MIB);
	CHECK_EQ(tool(0, "set", CG, KEY, "max=4Q", NULL), 2);
	want("a bad size's message", "not a size");

	CHECK(pipe(c2p) == 0 && pipe(p2c) == 0);
	pid = sc_spawn(holder, NULL);
	RECV(c2p[0]);

	TOOL_OK("--json", "status");
	if (!json_valid(out))
		FAIL("status --json is not valid JSON:\n%s", out);
	snprintf(buf, sizeof(buf), "{\"key\":\"%s\",\"capacity\":%" PRIu64
		 ",\"used\":%" PRIu64 ",\"holders\":%" PRIu64 ",\"denials\":%"
		 PRIu64 ",", KEY, DEV_U64(KEY, "capacity"), DEV_U64(KEY, "used"),
		 DEV_U64(KEY, "holders"), DEV_U64(KEY, "denials"));
	want("status --json", buf);
	/* the budget table's fields first (its order), then the rest */
	snprintf(buf, sizeof(buf), "{\"device\":\"%s\",\"path\":\"%s\","
		 "\"cgroup_id\":%" PRIu64 ",\"parent_id\":%" PRIu64 ",\"max\":%"
		 PRIu64 ",\"max_set\":true,\"min\":%" PRIu64 ",", KEY, CG, a,
		 root, NODE_U64(KEY, a, "max"), NODE_U64(KEY, a, "min"));
	want("status --json", buf);
	snprintf(buf, sizeof(buf), "\"effective_max\":%" PRIu64
		 ",\"effective_min\":%" PRIu64
		 ",\"claimed\":%" PRIu64 ",\"overcommitted\":false"
		 ",\"current\":%" PRIu64 ",\"borrowed\":%" PRIu64 ",",
		 NODE_U64(KEY, a, "effective_max"),
		 NODE_U64(KEY, a, "effective_min"),
		 NODE_U64(KEY, a, "claimed"), NODE_U64(KEY, a, "current"),
		 NODE_U64(KEY, a, "borrowed"));
	want("status --json", buf);
	snprintf(buf, sizeof(buf), "\"path\":\"/\",\"cgroup_id\":%" PRIu64
		 ",\"parent_id\":null,\"max\":null,\"max_set\":false,", root);
	want("status --json", buf);
	snprintf(buf, sizeof(buf), "\"cgroup_id\":%" PRIu64 ",\"path\":\"%s\","
		 "\"pid\":%d,\"priority\":3,\"charge\":%llu,", a, CG, (int)pid,
		 SC_MIB);
	want("status --json", buf);

	TOOL_OK("status");
	want("status", "BUDGETS (bytes are charge, not residency;");
	want("status", "nlt-a");

	TOOL_OK("metrics");
	memcpy(copy, out, sizeof(out));
	prom_check(copy);
	snprintf(buf, sizeof(buf), "\nnxquota_budget_current_bytes{device=\"%s\","
		 "cgroup=\"%s\"} %" PRIu64 "\n", KEY, CG,
		 NODE_U64(KEY, a, "current"));
	want("metrics", buf);
	snprintf(buf, sizeof(buf), "\nnxquota_budget_max_bytes{device=\"%s\","
		 "cgroup=\"/\"} +Inf\n", KEY);
	want("metrics", buf);
	snprintf(buf, sizeof(buf), "\nnxquota_device_capacity_bytes{device=\"%s\"}"
		 " %" PRIu64 "\n", KEY, DEV_U64(KEY, "capacity"));
	want("metrics", buf);
	want("metrics", "# TYPE nxquota_device_denials_total counter\n");

	s = tool(1, "set", CG, KEY, "max=1M", NULL);
	if (s != 4)
		FAIL("set as nobody: exit %d, want 4: %s", s, out);
	want("set as nobody", "permission denied");
	CHECK_EQ(NODE_U64(KEY, a, "max"), 4 * SC_MIB);
	s = tool(1, "--json", "status", NULL);
	CHECK_EQ(s, 0);
	CHECK(json_valid(out));
	if (strstr(out, "\"path\":\"" CG "\""))	/* not its subtree */
		FAIL("nobody in " CG_B " sees " CG ": %s", out);

	CHECK_OK(sc_send(p2c[1], 1));
	CHECK_CHILD_OK(pid);
	TOOL_OK("clear", CG, KEY);
	CHECK(!sc_node_exists(KEY, a));
	TOOL_OK("devices", "unregister", KEY);
	CHECK(!sc_dev_exists(KEY));
	sc_untrack_key(KEY);
	CHECK_EQ(tool(0, "devices", "unregister", KEY, NULL), 1);
	want("unregistering twice", "ENODEV");
	sc_log("nxquotactl: set/clear/register read back in sysfs; JSON and "
	       "metrics valid and equal to sysfs; nobody refused (exit 4)");
}

TEST_HARNESS_MAIN
