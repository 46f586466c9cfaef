// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota-hook's decisions, setting a plan (hook.h: hook_apply(),
 * hook_undo(), hook_left()): the budgets in the plan's order, each
 * through struct hook_ops (the authority in nxquota-hook, a fake in
 * tests/tools/test_hook.c); on a refusal or a timeout, every step
 * already taken is undone, in reverse, past any undo that fails; what
 * could not be undone is named with the nxquotactl command that clears
 * it.  Owns nothing: the plan's budgets carry their state (applied,
 * maybe), the ops are the caller's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook.h"
#include "fields.h"
#include "hook_int.h"

/* Appends to a buffer of fixed size; "..." where it runs out. */
struct out {
	char *b;
	size_t size, n;
};

static void __attribute__((format(printf, 2, 3)))
outf(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (o->n + 1 >= o->size)
		return;
	va_start(ap, fmt);
	r = vsnprintf(o->b + o->n, o->size - o->n, fmt, ap);
	va_end(ap);
	if (r < 0)
		return;
	o->n += (size_t)r;
	if (o->n >= o->size) {
		o->n = o->size - 1;
		if (o->size > 4)
			strcpy(o->b + o->size - 4, "...");
	}
}

/* s as one shell word: bare when it is plain, else in single quotes. */
static void sh_word(struct out *o, const char *s)
{
	if (*s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789_-./:@+=,") == strlen(s)) {
		outf(o, "%s", s);
		return;
	}
	outf(o, "'");
	for (; *s; s++)
		outf(o, *s == '\'' ? "'\\''" : "%c", *s);
	outf(o, "'");
}

/* The authority's reason in place, as one line: control bytes escaped. */
static void one_line(char *why, size_t size)
{
	char copy[HOOK_WHY_LEN];
	struct out o = { .b = why, .size = size };
	const char *s;

	snprintf(copy, sizeof(copy), "%s", why);
	why[0] = '\0';
	for (s = copy; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			outf(&o, "\\x%02x", (unsigned char)*s);
		else
			outf(&o, "%c", *s);
}

static const char *bpath(const struct hook_budget *b, const char *ctr,
			 const char *pod)
{
	return b->scope == HOOK_POD ? pod : ctr;
}

/*
 * "max=N min=N" of what budget b sets, or of the old values (old): the
 * words nxquotactl reads, as the budget table names them (fields.c).
 */
static void values(struct out *o, const struct hook_budget *b, bool old)
{
	char w[96];

	if (b->has_max)
		outf(o, "%s", field_arg(NXQ_BF_MAX, old ? b->old_max : b->max,
					w, sizeof(w)));
	if (b->has_min)
		outf(o, "%s%s", b->has_max ? " " : "",
		     field_arg(NXQ_BF_MIN, old ? b->old_min : b->min, w,
			       sizeof(w)));
}

/* The command that puts budget b back: clear it, or set the old values. */
static void undo_cmd(struct out *o, const struct hook_budget *b,
		     const struct hook_host *h, const char *ctr, const char *pod,
		     const char *control)
{
	outf(o, "nxquotactl ");
	if (control && control[0]) {
		outf(o, "--control ");
		sh_word(o, control);
		outf(o, " ");
	}
	outf(o, "%s ", b->existed ? "set" : "clear");
	sh_word(o, bpath(b, ctr, pod));
	outf(o, " ");
	sh_word(o, h->devs[b->dev].key);
	if (b->existed) {
		outf(o, " ");
		values(o, b, true);
	}
}

/* One budget left in place, and how to put it back. */
static void left_one(struct out *o, const struct hook_budget *b,
		     const struct hook_host *h, const char *ctr, const char *pod,
		     const char *control)
{
	outf(o, "%s on %s (", bpath(b, ctr, pod), h->devs[b->dev].key);
	values(o, b, false);
	if (b->maybe)
		outf(o, ", maybe set: no answer");
	if (b->why[0])
		outf(o, ", undo failed: %s", b->why);
	outf(o, "; put back with: ");
	undo_cmd(o, b, h, ctr, pod, control);
	outf(o, ")");
}

size_t hook_left(const struct hook_plan *p, const struct hook_host *h,
		 const char *ctr, const char *pod, const char *control,
		 char *buf, size_t size)
{
	struct out o = { .b = buf, .size = size };
	size_t i, n = 0;

	buf[0] = '\0';
	for (i = p->n; i-- > 0;) {
		if (!p->b[i].applied)
			continue;
		outf(&o, "%s", n++ ? "; " : "");
		left_one(&o, &p->b[i], h, ctr, pod, control);
	}
	return n;
}

static void note(const struct hook_plan *p, const struct hook_host *h,
		 const char *ctr, const char *pod, const char *control,
		 const struct hook_ops *ops)
{
	char *buf;

	if (!ops->note)
		return;
	buf = malloc(HOOK_ERR_LEN);
	if (!buf)
		return;
	hook_left(p, h, ctr, pod, control, buf, HOOK_ERR_LEN);
	ops->note(ops->arg, buf);
	free(buf);
}

size_t hook_undo(struct hook_plan *p, const struct hook_host *h,
		 const char *ctr, const char *pod, const char *control,
		 const struct hook_ops *ops, char *msg, size_t size)
{
	struct out o = { .b = msg, .size = size };
	struct hook_budget *b;
	size_t i, done = 0, left;
	int rc;

	if (ops->undo_begin)
		ops->undo_begin(ops->arg);
	/* every step taken, the last first, whatever an undo before says */
	for (i = p->n; i-- > 0;) {
		b = &p->b[i];
		if (!b->applied)
			continue;
		b->why[0] = '\0';
		rc = ops->budget(ops->arg, !b->existed, bpath(b, ctr, pod),
				 h->devs[b->dev].key, b->has_max, b->old_max,
				 b->has_min, b->old_min, b->why, sizeof(b->why));
		one_line(b->why, sizeof(b->why));
		/* a clear finding nothing: the step never took effect */
		if (!rc || (!b->existed && rc == -ENOENT)) {
			b->applied = b->maybe = false;
			b->why[0] = '\0';
			done++;
		} else if (!b->why[0]) {
			snprintf(b->why, sizeof(b->why), "%s", strerror(-rc));
		}
		note(p, h, ctr, pod, control, ops);
	}
	msg[0] = '\0';
	left = 0;
	for (i = 0; i < p->n; i++)
		left += p->b[i].applied;
	if (!left && done == 1)
		outf(&o, "; the budget it set was undone");
	else if (!left && done)
		outf(&o, "; the %zu budgets it set were undone", done);
	if (left) {
		outf(&o, "; undone %zu, LEFT %zu: ", done, left);
		hook_left(p, h, ctr, pod, control, o.b + o.n, o.size - o.n);
	}
	return left;
}

/* What budget b sets, and from where: "max nxquota.io/max="40Gi"". */
static void asks(struct out *o, const struct hook_budget *b)
{
	if (b->has_max)
		outf(o, "max %s=%s", b->max_src, hook_q(b->max_txt));
	if (b->has_min)
		outf(o, "%smin %s=%s", b->has_max ? " and " : "", b->min_src,
		     hook_q(b->min_txt));
}

int hook_apply(struct hook_plan *p, const struct hook_host *h,
	       const char *ctr, const char *pod, const char *control,
	       const struct hook_ops *ops, char *err)
{
	struct out o = { .b = err, .size = HOOK_ERR_LEN };
	char why[HOOK_WHY_LEN];
	struct hook_budget *b;
	const char *path;
	size_t i;
	int rc;

	for (i = 0; i < p->n; i++) {
		b = &p->b[i];
		b->applied = b->maybe = false;
		b->why[0] = '\0';
	}
	for (i = 0; i < p->n; i++) {
		b = &p->b[i];
		if (b->skip)
			continue;
		path = bpath(b, ctr, pod);
		/* in flight: taken if the authority never answers */
		b->applied = b->maybe = true;
		note(p, h, ctr, pod, control, ops);
		why[0] = '\0';
		rc = ops->budget(ops->arg, false, path, h->devs[b->dev].key,
				 b->has_max, b->max, b->has_min, b->min, why,
				 sizeof(why));
		if (!rc) {
			b->maybe = false;
			continue;
		}
		one_line(why, sizeof(why));
		if (rc != -ETIMEDOUT)
			b->applied = b->maybe = false;
		err[0] = '\0';
		if (rc == -ETIMEDOUT)
			outf(&o, "the authority did not answer, setting ");
		else
			outf(&o, "the authority refused ");
		asks(&o, b);
		outf(&o, " for %s on %s: %s", path, h->devs[b->dev].key,
		     why[0] ? why : strerror(-rc));
		hook_undo(p, h, ctr, pod, control, ops, err + o.n,
			  HOOK_ERR_LEN - o.n);
		return rc;
	}
	note(p, h, ctr, pod, control, ops);
	return 0;
}
