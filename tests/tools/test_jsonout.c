// SPDX-License-Identifier: GPL-2.0
/*
 * cmocka tests of nxquotactl's --json documents (tools/jsonout.c, json-c):
 * the exact bytes of devices, status and events, strings escaped as the
 * hand-written writer before it did (quotes, backslashes, control bytes;
 * "/" and UTF-8 as they are), unlimited as null, a denial's refused_by.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <linux/nxquota.h>

#include "fields.h"
#include "jsonout.h"

/* What jsonout.c takes from the rest of the tool. */
const char *prog = "test_jsonout";
void warnx_(const char *fmt, ...)
{
	(void)fmt;
	fail_msg("warnx_ called");
}
const char *node_path(struct ledger *l, const char *device, uint64_t id)
{
	(void)l;
	(void)device;
	return id == 7 ? "/a/b" : NULL;
}

/* Run fn with stdout in a buffer; returns what it wrote. */
static char out[8192];
#define CAPTURE(call) do {						\
	FILE *f_ = tmpfile();						\
	int save_ = dup(1);						\
	size_t n_;							\
	assert_non_null(f_);						\
	fflush(stdout);							\
	dup2(fileno(f_), 1);						\
	call;								\
	fflush(stdout);							\
	dup2(save_, 1);							\
	close(save_);							\
	rewind(f_);							\
	n_ = fread(out, 1, sizeof(out) - 1, f_);			\
	out[n_] = 0;							\
	fclose(f_);							\
} while (0)

static const char *devices_of(const char *key)
{
	struct dev d = { .capacity = 1, .used = 2, .holders = 3 };
	struct ledger l = { .devs = { .v = &d, .n = 1, .size = sizeof(d) } };

	strncpy(d.key, key, sizeof(d.key) - 1);
	CAPTURE(json_devices(&l));
	return out;
}

static void test_strings(void **state)
{
	(void)state;
	assert_string_equal(devices_of("GPU-1"),
		"[{\"key\":\"GPU-1\",\"capacity\":1,\"used\":2,\"holders\":3}]\n");
	assert_string_equal(devices_of("a\"b\\c"),
		"[{\"key\":\"a\\\"b\\\\c\",\"capacity\":1,\"used\":2,\"holders\":3}]\n");
	assert_string_equal(devices_of("x\ny\tz\r"),
		"[{\"key\":\"x\\ny\\tz\\r\",\"capacity\":1,\"used\":2,\"holders\":3}]\n");
	assert_string_equal(devices_of("\x01\x1f"),
		"[{\"key\":\"\\u0001\\u001f\",\"capacity\":1,\"used\":2,\"holders\":3}]\n");
	assert_string_equal(devices_of("/caf\xc3\xa9"),
		"[{\"key\":\"/caf\xc3\xa9\",\"capacity\":1,\"used\":2,\"holders\":3}]\n");
	assert_string_equal(devices_of(""),
		"[{\"key\":\"\",\"capacity\":1,\"used\":2,\"holders\":3}]\n");
}

static void test_no_devices(void **state)
{
	struct ledger l = { .devs = { .size = sizeof(struct dev) } };

	(void)state;
	CAPTURE(json_devices(&l));
	assert_string_equal(out, "[]\n");
}

/*
 * The budget table's members of a budget's JSON, in its order, for node n
 * (none named here: max null and NAME_set false, min 2^64-2, the rest 0).
 */
static const char *fields_json(const struct node *n, char *buf, size_t size)
{
	size_t len = 0;
	int f;

	buf[0] = 0;
	for (f = 0; f < NXQ_NR_BUDGET_FIELDS; f++) {
		const struct field_def *d = &field_defs[f];

		if (!d->kept)
			continue;
		if (d->parse == NXQ_PARSE_SIZE_MAX)
			len += snprintf(buf + len, size - len,
					"\"%s\":null,\"%s_set\":false,", d->name,
					d->name);
		else if (d->unit == NXQ_UNIT_BOOL)
			len += snprintf(buf + len, size - len, "\"%s\":false,",
					d->name);
		else
			len += snprintf(buf + len, size - len, "\"%s\":%llu,",
					d->name, (unsigned long long)n->field[f]);
	}
	return buf;
}

static void test_status(void **state)
{
	char fields[1024], want[4096];
	struct dev d = { .key = "G", .capacity = 8, .default_max = NXQ_UNLIMITED,
			 .devt = "195:0" };
	struct node n = { .device = "G", .path = "/a/b", .id = 7, .parent = 1,
			  .has_parent = true, .emax = 4,
			  .field = { [NXQ_BF_MAX] = NXQ_UNLIMITED,
				     [NXQ_BF_MIN] = UINT64_MAX - 1 },
			  .overcommitted = 1 };
	struct holder h[2] = {
		{ .device = "G", .cgroup = 7, .pid = 9, .topen = true,
		  .tgen = 2, .tbytes = 5, .treason = 1, .tlevel = 3,
		  .tdeadline = 6 },
		{ .device = "G", .cgroup = 8, .pid = 10 },
	};
	struct ledger l = {
		.devs = { .v = &d, .n = 1, .size = sizeof(d) },
		.nodes = { .v = &n, .n = 1, .size = sizeof(n) },
		.holders = { .v = h, .n = 2, .size = sizeof(h[0]) },
	};
	struct attribution at = { .shown = false, .why = "not root" };

	(void)state;
	CAPTURE(json_status(&l, &at));
	snprintf(want, sizeof(want), /* the budget table's part: fields_json() */
		"{\"devices\":[{\"key\":\"G\",\"capacity\":8,\"used\":0,\"holders\":0,"
		"\"denials\":0,\"capacity_hits\":0,\"tickets\":0,\"bytes_asked\":0,"
		"\"bytes_released\":0,\"kills\":0,\"waits\":0,\"timeouts\":0,"
		"\"ticket_timeout_ms\":0,\"devt\":\"195:0\",\"default_max\":null,"
		"\"events_dropped\":0,\"events_dropped_type\":{"
		"\"device-added\":0,\"device-removed\":0,\"budget-changed\":0,"
		"\"denied\":0,\"ticket-issued\":0,\"ticket-answered\":0,"
		"\"killed\":0}}],"
		"\"budgets\":[{\"device\":\"G\",\"path\":\"/a/b\",\"cgroup_id\":7,"
		"\"parent_id\":1,%s\"effective_max\":4,\"effective_min\":0,"
		"\"claimed\":0,\"overcommitted\":true,\"current\":0,\"borrowed\":0,"
		"\"headroom\":0,\"max_hits\":0,\"denials\":0,\"holders\":0,"
		"\"tickets\":0,\"bytes_asked\":0,\"bytes_released\":0,\"kills\":0}],"
		"\"holders\":[{\"device\":\"G\",\"cgroup_id\":7,\"path\":\"/a/b\","
		"\"pid\":9,\"priority\":0,\"charge\":0,\"reclaimable\":0,"
		"\"ticket\":{\"open\":true,\"generation\":2,\"bytes\":5,\"reason\":1,"
		"\"level\":3,\"deadline_ns\":6}},"
		"{\"device\":\"G\",\"cgroup_id\":8,\"path\":null,\"pid\":10,"
		"\"priority\":0,\"charge\":0,\"reclaimable\":0,"
		"\"ticket\":{\"open\":false,\"generation\":0}}],"
		"\"nvml\":{\"available\":false,\"reason\":\"not root\"}}\n",
		fields_json(&n, fields, sizeof(fields)));
	assert_string_equal(out, want);
}

static void test_attribution(void **state)
{
	struct arow r[2] = {
		{ .device = "G", .cgroup = "/a", .cg_source = "ledger", .pid = 5,
		  .listed = true, .nvml = 100, .charged = 150, .holders = 1 },
		{ .device = "G", .pid = 6, .nvml = NXQ_NVML_NA, .charged = 3 },
	};
	struct asum c = { .device = "G", .cgroup = "", .procs = 2, .na = 1,
			  .nvml = 100, .charged = 153, .unattributed = -50 };
	struct asum d = { .device = "G", .error = "lost", .procs = 2 };
	struct attribution at = {
		.shown = true, .api = "v3",
		.rows = { .v = r, .n = 2, .size = sizeof(r[0]) },
		.cgroups = { .v = &c, .n = 1, .size = sizeof(c) },
		.devices = { .v = &d, .n = 1, .size = sizeof(d) },
	};
	struct ledger l = { .devs = { .size = sizeof(struct dev) } };

	(void)state;
	CAPTURE(json_status(&l, &at));
	assert_string_equal(out,
		"{\"devices\":[],\"budgets\":[],\"holders\":[],"
		"\"nvml\":{\"available\":true,\"api\":\"v3\",\"processes\":["
		"{\"device\":\"G\",\"pid\":5,\"cgroup\":\"/a\",\"cgroup_source\":\"ledger\","
		"\"listed\":true,\"nvml_bytes\":100,\"charged\":150,\"holders\":1,"
		"\"unattributed\":-50},"
		"{\"device\":\"G\",\"pid\":6,\"cgroup\":null,\"cgroup_source\":null,"
		"\"listed\":false,\"nvml_bytes\":null,\"charged\":3,\"holders\":0,"
		"\"unattributed\":null}],"
		"\"cgroups\":[{\"device\":\"G\",\"cgroup\":null,\"processes\":2,"
		"\"not_available\":1,\"nvml_bytes\":100,\"charged\":153,"
		"\"unattributed\":-50}],"
		"\"devices\":[{\"key\":\"G\",\"error\":\"lost\",\"processes\":2,"
		"\"not_available\":0,\"nvml_bytes\":0,\"charged\":0,"
		"\"unattributed\":0}]}}\n");
}

/*
 * Every field of the budget table a node keeps (none named here) is in a
 * budget's JSON under the table's name, with its value: a size that reads
 * "max" is null for none and has NAME_set, a boolean is true or false,
 * the rest numbers.  A modifier of a request is not there.
 */
static void test_budget_fields(void **state)
{
	struct node n = { .device = "G", .path = "/f", .id = 9 };
	struct ledger l = {
		.devs = { .size = sizeof(struct dev) },
		.nodes = { .v = &n, .n = 1, .size = sizeof(n) },
		.holders = { .size = sizeof(struct holder) },
	};
	struct attribution at = { .shown = false, .why = "x" };
	char want[128];
	int f;

	(void)state;
	for (f = 0; f < NXQ_NR_BUDGET_FIELDS; f++) {
		n.field[f] = field_defs[f].unit == NXQ_UNIT_BOOL ? 1 : 1000 + f;
		n.has_field[f] = field_defs[f].kept;
	}
	CAPTURE(json_status(&l, &at));
	for (f = 0; f < NXQ_NR_BUDGET_FIELDS; f++) {
		const struct field_def *d = &field_defs[f];

		if (!d->kept) {
			snprintf(want, sizeof(want), "\"%s\":", d->name);
			assert_null(strstr(out, want));
			continue;
		}
		if (d->unit == NXQ_UNIT_BOOL)
			snprintf(want, sizeof(want), "\"%s\":true,", d->name);
		else
			snprintf(want, sizeof(want), "\"%s\":%d,", d->name,
				 1000 + f);
		if (!strstr(out, want))
			fail_msg("no %s in %s", want, out);
		if (d->parse == NXQ_PARSE_SIZE_MAX) {
			snprintf(want, sizeof(want), "\"%s_set\":true,", d->name);
			assert_non_null(strstr(out, want));
		}
	}
}

static void test_events(void **state)
{
	struct json_event e = { .time = "T", .type = "denied", .device = "G",
				.cgroup_id = 7, .path = "/a", .denied = true,
				.count = 6, .refused_by = "/", .pid = 1, .bytes = 2,
				.value = 3, .reason = 4, .timestamp_ns = 5 };

	(void)state;
	CAPTURE(json_event(&e));
	assert_string_equal(out,
		"{\"time\":\"T\",\"type\":\"denied\",\"device\":\"G\",\"cgroup_id\":7,"
		"\"path\":\"/a\",\"count\":6,\"refused_by\":\"/\",\"pid\":1,\"bytes\":2,"
		"\"value\":3,\"reason\":4,\"timestamp_ns\":5}\n");
	e.refused_by = NULL;	/* a limit the caller may not see */
	CAPTURE(json_event(&e));
	assert_non_null(strstr(out, ",\"refused_by\":null,"));
	e.by_device = true;	/* value 0: the device was full */
	CAPTURE(json_event(&e));
	assert_non_null(strstr(out, ",\"refused_by\":\"device\","));
	e.denied = false;
	e.path = NULL;
	CAPTURE(json_event(&e));
	assert_string_equal(out,
		"{\"time\":\"T\",\"type\":\"denied\",\"device\":\"G\",\"cgroup_id\":7,"
		"\"path\":null,\"pid\":1,\"bytes\":2,\"value\":3,\"reason\":4,"
		"\"timestamp_ns\":5}\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_no_devices),
		cmocka_unit_test(test_status),
		cmocka_unit_test(test_budget_fields),
		cmocka_unit_test(test_attribution),
		cmocka_unit_test(test_events),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
