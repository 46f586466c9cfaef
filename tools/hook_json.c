// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota-hook's JSON gate (hook.h: hook_json_exact(), hook_json_parse()):
 * a tenant writes the OCI state's annotations and the bundle's
 * config.json, and json-c reads more than RFC 8259 and keeps less than
 * the text says.  json-c cuts a key at a NUL ("nxquota.io/max\u0000"
 * becomes "nxquota.io/max" and replaces the real one), keeps the last of
 * two equal keys, turns a lone UTF-16 surrogate or a byte that is not
 * UTF-8 into U+FFFD, and takes comments, single quotes, NaN, a trailing
 * comma, a leading zero, an integer past 64 bits (saturated) and garbage
 * after the value.  Every text the hook reads passes through
 * hook_json_exact() first, a strict RFC 8259 reader that refuses all of
 * that, and NUL anywhere in a key or a string (no runtime can pass one
 * to a process, and the hook's own reading stops there); only then does
 * json-c parse it, and hook_json_parse() checks that json-c's tree has
 * exactly the values and the string bytes the text has.
 *
 * Pure: no I/O.  Each object's keys are held (decoded, malloc()ed) until
 * its closing brace, then sorted to find a key written twice.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook.h"
#include "hook_int.h"

#define JX_DEPTH	32	/* json-c's JSON_TOKENER_DEFAULT_DEPTH */
#define JX_WHERE	200	/* bytes of the path named in messages */

/* A decoded string (a key): its bytes, which may hold a NUL. */
struct jstr {
	char *s;
	size_t n, cap;
};

/* The reader's position and what it has counted. */
struct jx {
	const char *s, *p, *end;
	const char *what;
	char *err;
	int depth;
	size_t values, bytes;	/* values read; bytes of decoded strings */
	char where[JX_WHERE + 8];	/* "annotations.\"nxquota.io/max\"" */
	size_t wlen;
};

/* s[0..n) escaped into out (size bytes): "\x00" for a NUL, as hook_q(). */
static const char *qn(char *out, size_t size, const char *s, size_t n)
{
	size_t i, o = 0;

	out[o++] = '"';
	for (i = 0; i < n && o + 8 < size; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			o += (size_t)snprintf(out + o, size - o, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			o += (size_t)snprintf(out + o, size - o, "\\x%02x", c);
		else
			out[o++] = (char)c;
	}
	if (i < n)
		o += (size_t)snprintf(out + o, size - o, "...");
	out[o++] = '"';
	out[o] = '\0';
	return out;
}

/* "WHAT: at WHERE: ..." or "WHAT: ...": -EINVAL. */
static int __attribute__((format(printf, 2, 3)))
jx_fail(struct jx *x, const char *fmt, ...)
{
	char msg[HOOK_ERR_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (x->wlen)
		return hook_fail(x->err, -EINVAL, "%s: at %s: %s (byte %zu)", x->what,
				 x->where, msg, (size_t)(x->p - x->s));
	return hook_fail(x->err, -EINVAL, "%s: %s (byte %zu)", x->what, msg,
			 (size_t)(x->p - x->s));
}

/* Append ".key" or "[i]" to the path; the old length, to go back to. */
static size_t where_push(struct jx *x, const struct jstr *key, size_t idx)
{
	size_t old = x->wlen, room = JX_WHERE - x->wlen, i;
	char buf[JX_WHERE + 8];
	bool plain = key && key->n;

	if (x->wlen >= JX_WHERE)
		return old;
	for (i = 0; key && i < key->n; i++)
		plain &= !!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
				  "QRSTUVWXYZ0123456789_-", key->s[i]) &&
			 key->s[i];
	if (!key)
		snprintf(buf, sizeof(buf), "[%zu]", idx);
	else if (plain)
		snprintf(buf, sizeof(buf), "%s%.*s", old ? "." : "",
			 (int)key->n, key->s);
	else {
		char q[JX_WHERE];

		snprintf(buf, sizeof(buf), "%s%s", old ? "." : "",
			 qn(q, sizeof(q), key->s, key->n));
	}
	if (strlen(buf) >= room)
		snprintf(buf, sizeof(buf), "...");
	memcpy(x->where + x->wlen, buf, strlen(buf) + 1);
	x->wlen += strlen(buf);
	return old;
}

static void where_pop(struct jx *x, size_t old)
{
	x->wlen = old;
	x->where[old] = '\0';
}

static void ws(struct jx *x)
{
	while (x->p < x->end && (*x->p == ' ' || *x->p == '\t' ||
				 *x->p == '\n' || *x->p == '\r'))
		x->p++;
}

static int put(struct jstr *o, const char *b, size_t n)
{
	char *ns;

	if (!o)
		return 0;
	if (o->n + n > o->cap) {
		o->cap = (o->n + n) * 2 + 16;
		ns = realloc(o->s, o->cap);
		if (!ns)
			return -ENOMEM;
		o->s = ns;
	}
	memcpy(o->s + o->n, b, n);
	o->n += n;
	return 0;
}

/* 4 hex digits at p: the value, or -1. */
static long hex4(const char *p, const char *end)
{
	long v = 0;
	int i;

	if (end - p < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		char c = p[i];

		if (c >= '0' && c <= '9')
			v = v * 16 + c - '0';
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v = v * 16 + c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/* The length of the UTF-8 sequence at p (RFC 3629: no overlong form, no
 * surrogate, at most U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
	size_t n, i;
	unsigned int cp;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4, cp = p[0] & 0x07;
	else
		return 0;
	if ((size_t)(end - p) < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* A string at x->p ('"'), decoded into out when out. */
static int jx_string(struct jx *x, struct jstr *out, bool key)
{
	const char *kind = key ? "a key" : "a string";
	unsigned char u8[4];
	long cp, lo;
	size_t n;

	x->p++;
	for (;;) {
		if (x->p >= x->end)
			return jx_fail(x, "%s ends early", kind);
		if (*x->p == '"')
			break;
		if ((unsigned char)*x->p < 0x20)
			return jx_fail(x, "%s holds a control character (0x%02x) "
				       "that is not escaped", kind,
				       (unsigned char)*x->p);
		if (*x->p != '\\') {
			n = utf8_len((const unsigned char *)x->p,
				     (const unsigned char *)x->end);
			if (!n)
				return jx_fail(x, "%s holds a byte that is not "
					       "UTF-8 (0x%02x)", kind,
					       (unsigned char)*x->p);
			if (put(out, x->p, n))
				return hook_fail(x->err, -ENOMEM, "out of memory");
			x->bytes += n;
			x->p += n;
			continue;
		}
		if (x->end - x->p < 2)
			return jx_fail(x, "%s ends early", kind);
		x->p++;
		if (*x->p != 'u') {
			const char *e = strchr("\"\\/bfnrt", *x->p);
			static const char to[] = "\"\\/\b\f\n\r\t";

			if ((!*x->p || !e) && (unsigned char)*x->p > 0x20 &&
			    (unsigned char)*x->p < 0x7f)
				return jx_fail(x, "%s holds an unknown escape "
					       "\"\\%c\"", kind, *x->p);
			if (!*x->p || !e)
				return jx_fail(x, "%s holds an unknown escape "
					       "(a backslash, then byte 0x%02x)",
					       kind, (unsigned char)*x->p);
			if (put(out, &to[e - "\"\\/bfnrt"], 1))
				return hook_fail(x->err, -ENOMEM, "out of memory");
			x->bytes++;
			x->p++;
			continue;
		}
		cp = hex4(x->p + 1, x->end);
		if (cp < 0)
			return jx_fail(x, "%s holds a bad \\u escape", kind);
		x->p += 5;
		if (cp == 0 && key && out) {
			char q[160];

			put(out, "", 1);
			return jx_fail(x, "the key %s... holds a NUL byte "
				       "(\\u0000)", qn(q, sizeof(q), out->s,
							out->n));
		}
		if (cp == 0)
			return jx_fail(x, "%s holds a NUL byte (\\u0000)", kind);
		if (cp >= 0xdc00 && cp <= 0xdfff)
			return jx_fail(x, "%s holds a lone UTF-16 surrogate "
				       "(\\u%04lx)", kind, cp);
		if (cp >= 0xd800 && cp <= 0xdbff) {
			lo = x->end - x->p >= 6 && x->p[0] == '\\' &&
			     x->p[1] == 'u' ? hex4(x->p + 2, x->end) : -1;
			if (lo < 0xdc00 || lo > 0xdfff)
				return jx_fail(x, "%s holds a lone UTF-16 "
					       "surrogate (\\u%04lx)", kind, cp);
			cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			x->p += 6;
		}
		n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
		if (n == 1)
			u8[0] = (unsigned char)cp;
		else if (n == 2)
			u8[0] = (unsigned char)(0xc0 | cp >> 6);
		else if (n == 3)
			u8[0] = (unsigned char)(0xe0 | cp >> 12);
		else
			u8[0] = (unsigned char)(0xf0 | cp >> 18);
		for (size_t i = 1; i < n; i++)
			u8[i] = (unsigned char)(0x80 |
						((cp >> (6 * (n - 1 - i))) & 0x3f));
		if (put(out, (const char *)u8, n))
			return hook_fail(x->err, -ENOMEM, "out of memory");
		x->bytes += n;
	}
	x->p++;
	return 0;
}

static bool digit(const struct jx *x)
{
	return x->p < x->end && *x->p >= '0' && *x->p <= '9';
}

/* A number: RFC 8259's grammar; an integer within int64 or uint64. */
static int jx_number(struct jx *x)
{
	const char *start = x->p;
	bool neg = *x->p == '-', integer = true;
	char buf[32], *endp;
	size_t n;

	if (neg)
		x->p++;
	if (!digit(x))
		return jx_fail(x, "a number without digits");
	if (*x->p == '0' && x->p + 1 < x->end && x->p[1] >= '0' &&
	    x->p[1] <= '9')
		return jx_fail(x, "a number with a leading zero");
	while (digit(x))
		x->p++;
	if (x->p < x->end && *x->p == '.') {
		integer = false;
		x->p++;
		if (!digit(x))
			return jx_fail(x, "a number without digits after '.'");
		while (digit(x))
			x->p++;
	}
	if (x->p < x->end && (*x->p == 'e' || *x->p == 'E')) {
		integer = false;
		x->p++;
		if (x->p < x->end && (*x->p == '+' || *x->p == '-'))
			x->p++;
		if (!digit(x))
			return jx_fail(x, "a number without an exponent");
		while (digit(x))
			x->p++;
	}
	n = (size_t)(x->p - start);
	if (!integer) {
		/* json-c keeps a double's text; one past DBL_MAX it reads as
		 * infinity */
		char *t = strndup(start, n);
		double d;

		if (!t)
			return hook_fail(x->err, -ENOMEM, "out of memory");
		errno = 0;
		d = strtod(t, NULL);
		free(t);
		if (errno == ERANGE && (d > 1 || d < -1))
			return jx_fail(x, "the number %.*s is out of range",
				       (int)(n > 40 ? 40 : n), start);
		return 0;
	}
	if (n >= sizeof(buf))
		return jx_fail(x, "the integer %.24s... is out of range", start);
	memcpy(buf, start, n);
	buf[n] = '\0';
	errno = 0;
	if (neg)
		(void)strtoll(buf, &endp, 10);
	else
		(void)strtoull(buf, &endp, 10);
	if (errno == ERANGE)
		return jx_fail(x, "the integer %s is out of range (json-c would "
			       "read another)", buf);
	return 0;
}

static int jx_value(struct jx *x);

static int key_cmp(const void *a, const void *b)
{
	const struct jstr *ka = a, *kb = b;
	size_t n = ka->n < kb->n ? ka->n : kb->n;
	int c = n ? memcmp(ka->s, kb->s, n) : 0;	/* "" has no buffer */

	return c ? c : ka->n < kb->n ? -1 : ka->n > kb->n;
}

/* An object at x->p ('{'): its keys unique and free of NUL. */
static int jx_object(struct jx *x)
{
	struct jstr *keys = NULL, *nk;
	size_t nkeys = 0, cap = 0, i, old;
	char q[160];
	int rc = 0;

	x->p++;
	ws(x);
	if (x->p < x->end && *x->p == '}') {
		x->p++;
		return 0;
	}
	for (;;) {
		ws(x);
		if (x->p >= x->end) {
			rc = jx_fail(x, "it ends early");
			break;
		}
		if (*x->p != '"') {
			rc = jx_fail(x, "a key that is not a quoted string");
			break;
		}
		if (nkeys == cap) {
			cap = cap ? cap * 2 : 8;
			nk = realloc(keys, cap * sizeof(*keys));
			if (!nk) {
				rc = hook_fail(x->err, -ENOMEM, "out of memory");
				break;
			}
			keys = nk;
		}
		memset(&keys[nkeys], 0, sizeof(keys[0]));
		rc = jx_string(x, &keys[nkeys++], true);
		if (rc)
			break;
		ws(x);
		if (x->p >= x->end || *x->p != ':') {
			rc = jx_fail(x, x->p >= x->end ? "it ends early" :
				     "no ':' after the key %s",
				     qn(q, sizeof(q), keys[nkeys - 1].s,
					keys[nkeys - 1].n));
			break;
		}
		x->p++;
		old = where_push(x, &keys[nkeys - 1], 0);
		rc = jx_value(x);
		where_pop(x, old);
		if (rc)
			break;
		ws(x);
		if (x->p < x->end && *x->p == ',') {
			x->p++;
			continue;
		}
		if (x->p < x->end && *x->p == '}') {
			x->p++;
			break;
		}
		rc = jx_fail(x, x->p >= x->end ? "it ends early" :
			     "an object's members not separated by ','");
		break;
	}
	if (!rc && nkeys > 1) {
		qsort(keys, nkeys, sizeof(*keys), key_cmp);
		for (i = 1; i < nkeys && !rc; i++)
			if (!key_cmp(&keys[i - 1], &keys[i]))
				rc = jx_fail(x, "the key %s is written twice",
					     qn(q, sizeof(q), keys[i].s,
						keys[i].n));
	}
	for (i = 0; i < nkeys; i++)
		free(keys[i].s);
	free(keys);
	return rc;
}

static int jx_array(struct jx *x)
{
	size_t i, old;
	int rc;

	x->p++;
	ws(x);
	if (x->p < x->end && *x->p == ']') {
		x->p++;
		return 0;
	}
	for (i = 0;; i++) {
		old = where_push(x, NULL, i);
		rc = jx_value(x);
		where_pop(x, old);
		if (rc)
			return rc;
		ws(x);
		if (x->p < x->end && *x->p == ',') {
			x->p++;
			continue;
		}
		if (x->p < x->end && *x->p == ']') {
			x->p++;
			return 0;
		}
		return jx_fail(x, x->p >= x->end ? "it ends early" :
			       "an array's elements not separated by ','");
	}
}

static int jx_value(struct jx *x)
{
	static const char *const lits[] = { "true", "false", "null" };
	size_t i, n;
	int rc;

	ws(x);
	if (x->p >= x->end && x->p == x->s)
		return hook_fail(x->err, -EINVAL, "%s is not JSON: it is empty",
				 x->what);
	if (x->p >= x->end)
		return jx_fail(x, "it ends early");
	x->values++;
	switch (*x->p) {
	case '{':
	case '[':
		if (++x->depth > JX_DEPTH)
			return jx_fail(x, "nested deeper than %d", JX_DEPTH);
		rc = *x->p == '{' ? jx_object(x) : jx_array(x);
		x->depth--;
		return rc;
	case '"':
		return jx_string(x, NULL, false);
	case '-':
	case '0' ... '9':
		return jx_number(x);
	}
	for (i = 0; i < sizeof(lits) / sizeof(lits[0]); i++) {
		n = strlen(lits[i]);
		if ((size_t)(x->end - x->p) >= n && !memcmp(x->p, lits[i], n)) {
			x->p += n;
			return 0;
		}
	}
	return jx_fail(x, "unexpected %s", (unsigned char)*x->p >= 0x20 &&
		       (unsigned char)*x->p < 0x7f ? (char[]){ '\'', *x->p,
		       '\'', 0 } : "byte");
}

/* What json-c's tree holds: its values and the bytes of its strings. */
static void tree_count(json_object *o, size_t *values, size_t *bytes)
{
	size_t i, n;

	(*values)++;
	switch (json_object_get_type(o)) {
	case json_type_object: {
		json_object_object_foreach(o, key, val) {
			*bytes += strlen(key);
			tree_count(val, values, bytes);
		}
		break;
	}
	case json_type_array:
		n = json_object_array_length(o);
		for (i = 0; i < n; i++)
			tree_count(json_object_array_get_idx(o, i), values, bytes);
		break;
	case json_type_string:
		*bytes += (size_t)json_object_get_string_len(o);
		break;
	default:
		break;
	}
}

int hook_json_exact(const char *buf, size_t len, const char *what,
		    size_t *values, size_t *bytes, char *err)
{
	struct jx x = { .s = buf, .p = buf, .end = buf + len, .what = what,
			.err = err };
	int rc;

	if (memchr(buf, '\0', len))
		return hook_fail(err, -EINVAL, "%s holds a NUL byte", what);
	rc = jx_value(&x);
	if (rc)
		return rc;
	ws(&x);
	if (x.p < x.end)
		return jx_fail(&x, "not one JSON object: something follows it");
	if (values)
		*values = x.values;
	if (bytes)
		*bytes = x.bytes;
	return 0;
}

int hook_json_parse(const char *buf, size_t len, const char *what,
		    json_object **out, char *err)
{
	struct json_tokener *tok;
	enum json_tokener_error e;
	size_t values, bytes, tv = 0, tb = 0;
	json_object *o;
	int rc;

	if (len > INT_MAX)
		return hook_fail(err, -EINVAL, "%s is too large", what);
	rc = hook_json_exact(buf, len, what, &values, &bytes, err);
	if (rc)
		return rc;
	tok = json_tokener_new();
	if (!tok)
		return hook_fail(err, -ENOMEM, "out of memory");
	o = json_tokener_parse_ex(tok, buf, (int)len);
	e = json_tokener_get_error(tok);
	json_tokener_free(tok);
	if (!o || e != json_tokener_success) {
		json_object_put(o);
		return hook_fail(err, -EINVAL, "%s is not JSON: %s", what,
				 json_tokener_error_desc(e));
	}
	if (!json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return hook_fail(err, -EINVAL, "%s is not one JSON object", what);
	}
	tree_count(o, &tv, &tb);
	if (tv != values || tb != bytes) {
		json_object_put(o);
		return hook_fail(err, -EINVAL, "%s: json-c read %zu values and "
				 "%zu string bytes where the text has %zu and "
				 "%zu", what, tv, tb, values, bytes);
	}
	*out = o;
	return 0;
}
