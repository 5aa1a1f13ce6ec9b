/* otlp_json.c: OTLP/JSON to protobuf (see otlp_json.h). A recursive-descent JSON reader walks
 * the schema below (the messages of ExportProfilesServiceRequest with their field numbers, as
 * in otlp.c) and writes each value as the wire field it stands for; nested messages are written
 * in place with protobuf_begin()/protobuf_end(). */
#include "profile/otlp_json.h"
#include "lib/utf8.h"
#include "profile/protobuf.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

enum ftype {
	T_MSG,     /* nested message (msg) */
	T_STRING,  /* JSON string -> bytes */
	T_INT,     /* int32/int64/uint32/uint64: number or decimal string -> varint */
	T_FIXED64, /* number or decimal string -> fixed64 */
	T_BOOL,
	T_DOUBLE,  /* number, or "NaN"/"Infinity"/"-Infinity" -> fixed64 bits */
	T_SKIP,    /* known but not needed (bytes fields): the value is skipped */
};

struct jmsg;

struct jfield {
	const char *name; /* lowerCamelCase */
	uint32_t num;
	uint8_t type;     /* enum ftype */
	uint8_t repeated;
	const struct jmsg *msg;
};

struct jmsg {
	const struct jfield *fields;
	size_t n;
};

#define MSG_OF(arr) { arr, sizeof(arr) / sizeof(arr[0]) }

static const struct jmsg m_anyvalue, m_keyvalue;

static const struct jfield f_arrayvalue[] = { { "values", 1, T_MSG, 1, &m_anyvalue } };
static const struct jmsg m_arrayvalue = MSG_OF(f_arrayvalue);
static const struct jfield f_kvlist[] = { { "values", 1, T_MSG, 1, &m_keyvalue } };
static const struct jmsg m_kvlist = MSG_OF(f_kvlist);
static const struct jfield f_anyvalue[] = {
	{ "stringValue", 1, T_STRING, 0, NULL },
	{ "boolValue", 2, T_BOOL, 0, NULL },
	{ "intValue", 3, T_INT, 0, NULL },
	{ "doubleValue", 4, T_DOUBLE, 0, NULL },
	{ "arrayValue", 5, T_MSG, 0, &m_arrayvalue },
	{ "kvlistValue", 6, T_MSG, 0, &m_kvlist },
	{ "bytesValue", 7, T_SKIP, 0, NULL },
	{ "stringValueStrindex", 8, T_INT, 0, NULL },
};
static const struct jmsg m_anyvalue = MSG_OF(f_anyvalue);
static const struct jfield f_keyvalue[] = {
	{ "key", 1, T_STRING, 0, NULL },
	{ "value", 2, T_MSG, 0, &m_anyvalue },
	{ "keyStrindex", 3, T_INT, 0, NULL },
};
static const struct jmsg m_keyvalue = MSG_OF(f_keyvalue);
static const struct jfield f_resource[] = {
	{ "attributes", 1, T_MSG, 1, &m_keyvalue },
	{ "droppedAttributesCount", 2, T_INT, 0, NULL },
};
static const struct jmsg m_resource = MSG_OF(f_resource);
static const struct jfield f_scope[] = {
	{ "name", 1, T_STRING, 0, NULL },
	{ "version", 2, T_STRING, 0, NULL },
	{ "attributes", 3, T_MSG, 1, &m_keyvalue },
	{ "droppedAttributesCount", 4, T_INT, 0, NULL },
};
static const struct jmsg m_scope = MSG_OF(f_scope);
static const struct jfield f_valuetype[] = {
	{ "typeStrindex", 1, T_INT, 0, NULL },
	{ "unitStrindex", 2, T_INT, 0, NULL },
};
static const struct jmsg m_valuetype = MSG_OF(f_valuetype);
static const struct jfield f_sample[] = {
	{ "stackIndex", 1, T_INT, 0, NULL },
	{ "attributeIndices", 2, T_INT, 1, NULL },
	{ "linkIndex", 3, T_INT, 0, NULL },
	{ "values", 4, T_INT, 1, NULL },
	{ "timestampsUnixNano", 5, T_FIXED64, 1, NULL },
};
static const struct jmsg m_sample = MSG_OF(f_sample);
static const struct jfield f_profile[] = {
	{ "sampleType", 1, T_MSG, 0, &m_valuetype },
	{ "samples", 2, T_MSG, 1, &m_sample },
	{ "timeUnixNano", 3, T_FIXED64, 0, NULL },
	{ "durationNano", 4, T_INT, 0, NULL },
	{ "periodType", 5, T_MSG, 0, &m_valuetype },
	{ "period", 6, T_INT, 0, NULL },
	{ "profileId", 7, T_SKIP, 0, NULL },
	{ "droppedAttributesCount", 8, T_INT, 0, NULL },
	{ "originalPayloadFormat", 9, T_STRING, 0, NULL },
	{ "originalPayload", 10, T_SKIP, 0, NULL },
	{ "attributeIndices", 11, T_INT, 1, NULL },
};
static const struct jmsg m_profile = MSG_OF(f_profile);
static const struct jfield f_scopeprofiles[] = {
	{ "scope", 1, T_MSG, 0, &m_scope },
	{ "profiles", 2, T_MSG, 1, &m_profile },
	{ "schemaUrl", 3, T_STRING, 0, NULL },
};
static const struct jmsg m_scopeprofiles = MSG_OF(f_scopeprofiles);
static const struct jfield f_resourceprofiles[] = {
	{ "resource", 1, T_MSG, 0, &m_resource },
	{ "scopeProfiles", 2, T_MSG, 1, &m_scopeprofiles },
	{ "schemaUrl", 3, T_STRING, 0, NULL },
};
static const struct jmsg m_resourceprofiles = MSG_OF(f_resourceprofiles);
static const struct jfield f_mapping[] = {
	{ "memoryStart", 1, T_INT, 0, NULL },
	{ "memoryLimit", 2, T_INT, 0, NULL },
	{ "fileOffset", 3, T_INT, 0, NULL },
	{ "filenameStrindex", 4, T_INT, 0, NULL },
	{ "attributeIndices", 5, T_INT, 1, NULL },
};
static const struct jmsg m_mapping = MSG_OF(f_mapping);
static const struct jfield f_line[] = {
	{ "functionIndex", 1, T_INT, 0, NULL },
	{ "line", 2, T_INT, 0, NULL },
	{ "column", 3, T_INT, 0, NULL },
};
static const struct jmsg m_line = MSG_OF(f_line);
static const struct jfield f_location[] = {
	{ "mappingIndex", 1, T_INT, 0, NULL },
	{ "address", 2, T_INT, 0, NULL },
	{ "lines", 3, T_MSG, 1, &m_line },
	{ "attributeIndices", 4, T_INT, 1, NULL },
};
static const struct jmsg m_location = MSG_OF(f_location);
static const struct jfield f_function[] = {
	{ "nameStrindex", 1, T_INT, 0, NULL },
	{ "systemNameStrindex", 2, T_INT, 0, NULL },
	{ "filenameStrindex", 3, T_INT, 0, NULL },
	{ "startLine", 4, T_INT, 0, NULL },
};
static const struct jmsg m_function = MSG_OF(f_function);
static const struct jfield f_kvu[] = {
	{ "keyStrindex", 1, T_INT, 0, NULL },
	{ "value", 2, T_MSG, 0, &m_anyvalue },
	{ "unitStrindex", 3, T_INT, 0, NULL },
};
static const struct jmsg m_kvu = MSG_OF(f_kvu);
static const struct jfield f_stack[] = { { "locationIndices", 1, T_INT, 1, NULL } };
static const struct jmsg m_stack = MSG_OF(f_stack);
static const struct jfield f_dictionary[] = {
	{ "mappingTable", 1, T_MSG, 1, &m_mapping },
	{ "locationTable", 2, T_MSG, 1, &m_location },
	{ "functionTable", 3, T_MSG, 1, &m_function },
	{ "linkTable", 4, T_SKIP, 0, NULL },
	{ "stringTable", 5, T_STRING, 1, NULL },
	{ "attributeTable", 6, T_MSG, 1, &m_kvu },
	{ "stackTable", 7, T_MSG, 1, &m_stack },
};
static const struct jmsg m_dictionary = MSG_OF(f_dictionary);
static const struct jfield f_request[] = {
	{ "resourceProfiles", 1, T_MSG, 1, &m_resourceprofiles },
	{ "dictionary", 2, T_MSG, 0, &m_dictionary },
};
static const struct jmsg m_request = MSG_OF(f_request);

struct jr {
	const char *s, *p, *end;
	struct protobuf_writer w;
	struct errmsg *err;
	int depth;
	struct buf str; /* the last string read, unescaped */
};

static int jerr(struct jr *r, const char *what)
{
	return errmsg_set(r->err, -EBADMSG, "otlp json: %s at offset %zu", what, (size_t)(r->p - r->s));
}

static void ws(struct jr *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
		r->p++;
}

static int lit(struct jr *r, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n))
		return 0;
	r->p += n;
	return 1;
}

static int hex4(const char *p, uint32_t *out)
{
	uint32_t v = 0;
	int i;

	for (i = 0; i < 4; i++) {
		char c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (uint32_t)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static int put_utf8(struct buf *b, uint32_t c)
{
	char u[4];
	size_t n = utf8_encode(c, u);

	return buf_append(b, u, n);
}

/* A JSON string into r->str. */
static int read_string(struct jr *r)
{
	buf_reset(&r->str);
	if (r->p >= r->end || *r->p != '"')
		return jerr(r, "expected a string");
	r->p++;
	while (r->p < r->end && *r->p != '"') {
		const char *run = r->p;
		int rc = 0;

		while (r->p < r->end && *r->p != '"' && *r->p != '\\' && (unsigned char)*r->p >= 0x20)
			r->p++;
		if (r->p > run && buf_append(&r->str, run, (size_t)(r->p - run)) < 0)
			return errmsg_set(r->err, -E2BIG, "otlp json: string too long");
		if (r->p >= r->end || *r->p == '"')
			break;
		if ((unsigned char)*r->p < 0x20)
			return jerr(r, "control character in a string");
		r->p++; /* backslash */
		if (r->p >= r->end)
			return jerr(r, "truncated escape");
		switch (*r->p++) {
		case '"': rc = buf_putc(&r->str, '"'); break;
		case '\\': rc = buf_putc(&r->str, '\\'); break;
		case '/': rc = buf_putc(&r->str, '/'); break;
		case 'b': rc = buf_putc(&r->str, '\b'); break;
		case 'f': rc = buf_putc(&r->str, '\f'); break;
		case 'n': rc = buf_putc(&r->str, '\n'); break;
		case 'r': rc = buf_putc(&r->str, '\r'); break;
		case 't': rc = buf_putc(&r->str, '\t'); break;
		case 'u': {
			uint32_t c, lo;

			if (r->end - r->p < 4 || hex4(r->p, &c) < 0)
				return jerr(r, "bad \\u escape");
			r->p += 4;
			if (c >= 0xd800 && c < 0xdc00) {
				if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u' ||
				    hex4(r->p + 2, &lo) < 0 || lo < 0xdc00 || lo > 0xdfff)
					return jerr(r, "unpaired surrogate");
				r->p += 6;
				c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
			} else if (c >= 0xdc00 && c < 0xe000) {
				return jerr(r, "unpaired surrogate");
			}
			rc = put_utf8(&r->str, c);
			break;
		}
		default:
			return jerr(r, "bad escape");
		}
		if (rc < 0)
			return errmsg_set(r->err, -E2BIG, "otlp json: string too long");
	}
	if (r->p >= r->end)
		return jerr(r, "unterminated string");
	r->p++;
	return 0;
}

/* The extent of a JSON number token at r->p (not consumed). */
static size_t number_len(const struct jr *r)
{
	const char *q = r->p;

	while (q < r->end && ((*q >= '0' && *q <= '9') || *q == '-' || *q == '+' || *q == '.' ||
			      *q == 'e' || *q == 'E'))
		q++;
	return (size_t)(q - r->p);
}

/* An integer: a number token or a string holding one, without fraction or exponent. */
static int read_int(struct jr *r, uint64_t *out)
{
	char tmp[32];
	const char *s;
	size_t n;
	int neg;
	uint64_t v = 0;

	if (r->p < r->end && *r->p == '"') {
		if (read_string(r) < 0)
			return -EBADMSG;
		s = r->str.data ? r->str.data : "";
		n = r->str.len;
	} else {
		s = r->p;
		n = number_len(r);
		r->p += n;
	}
	if (!n || n >= sizeof(tmp))
		return jerr(r, "expected an integer");
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	neg = tmp[0] == '-';
	s = tmp + neg;
	if (!*s)
		return jerr(r, "expected an integer");
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return jerr(r, "expected an integer");
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return jerr(r, "integer out of range");
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (neg) {
		if (v > (uint64_t)INT64_MAX + 1)
			return jerr(r, "integer out of range");
		v = (uint64_t)0 - v;
	}
	*out = v;
	return 0;
}

static int read_double(struct jr *r, double *out)
{
	char tmp[64], *e;
	size_t n;

	if (r->p < r->end && *r->p == '"') {
		if (read_string(r) < 0)
			return -EBADMSG;
		n = r->str.len;
		if (n >= sizeof(tmp))
			return jerr(r, "expected a number");
		memcpy(tmp, r->str.data ? r->str.data : "", n);
	} else {
		n = number_len(r);
		if (!n || n >= sizeof(tmp))
			return jerr(r, "expected a number");
		memcpy(tmp, r->p, n);
		r->p += n;
	}
	tmp[n] = '\0';
	if (!strcmp(tmp, "NaN") || !strcmp(tmp, "Infinity") || !strcmp(tmp, "-Infinity")) {
		*out = strtod(tmp[0] == 'N' ? "nan" : tmp[0] == '-' ? "-inf" : "inf", NULL);
		return 0;
	}
	*out = strtod(tmp, &e);
	if (e == tmp || *e)
		return jerr(r, "expected a number");
	return 0;
}

static int skip_value(struct jr *r);

static int skip_container(struct jr *r, char close)
{
	int first = 1;

	if (++r->depth > MAX_DEPTH)
		return jerr(r, "nested too deeply");
	r->p++;
	for (;;) {
		ws(r);
		if (r->p < r->end && *r->p == close) {
			r->p++;
			break;
		}
		if (!first) {
			if (r->p >= r->end || *r->p != ',')
				return jerr(r, "expected ','");
			r->p++;
			ws(r);
		}
		first = 0;
		if (close == '}') {
			if (read_string(r) < 0)
				return -EBADMSG;
			ws(r);
			if (r->p >= r->end || *r->p != ':')
				return jerr(r, "expected ':'");
			r->p++;
			ws(r);
		}
		if (skip_value(r) < 0)
			return -EBADMSG;
	}
	r->depth--;
	return 0;
}

static int skip_value(struct jr *r)
{
	ws(r);
	if (r->p >= r->end)
		return jerr(r, "truncated");
	switch (*r->p) {
	case '{': return skip_container(r, '}');
	case '[': return skip_container(r, ']');
	case '"': return read_string(r);
	case 't': return lit(r, "true") ? 0 : jerr(r, "bad literal");
	case 'f': return lit(r, "false") ? 0 : jerr(r, "bad literal");
	case 'n': return lit(r, "null") ? 0 : jerr(r, "bad literal");
	default: {
		double d;

		return read_double(r, &d);
	}
	}
}

/* Does JSON key k name field f (lowerCamelCase, or the proto name in snake_case)? */
static int key_is(const struct buf *k, const char *camel)
{
	const char *a = k->data ? k->data : "", *b = camel;
	size_t i = 0;

	if (!strcmp(a, camel))
		return 1;
	for (; *b; b++) {
		if (*b >= 'A' && *b <= 'Z') {
			if (i + 2 > k->len || a[i] != '_' || a[i + 1] != *b - 'A' + 'a')
				return 0;
			i += 2;
		} else {
			if (i >= k->len || a[i] != *b)
				return 0;
			i++;
		}
	}
	return i == k->len;
}

static int read_message(struct jr *r, const struct jmsg *m);

/* One value of field f (an element, when f is repeated). */
static int read_one(struct jr *r, const struct jfield *f)
{
	uint64_t v;
	double d;

	ws(r);
	if (r->p >= r->end)
		return jerr(r, "truncated");
	if (lit(r, "null"))
		return 0;
	switch (f->type) {
	case T_MSG: {
		size_t mark = protobuf_begin(&r->w, f->num);

		if (read_message(r, f->msg) < 0)
			return -EBADMSG;
		protobuf_end(&r->w, mark);
		return 0;
	}
	case T_STRING:
		if (read_string(r) < 0)
			return -EBADMSG;
		protobuf_put_bytes(&r->w, f->num, r->str.data ? r->str.data : "", r->str.len);
		return 0;
	case T_INT:
		if (read_int(r, &v) < 0)
			return -EBADMSG;
		protobuf_put_uint64(&r->w, f->num, v);
		return 0;
	case T_FIXED64:
		if (read_int(r, &v) < 0)
			return -EBADMSG;
		protobuf_put_fixed64(&r->w, f->num, v);
		return 0;
	case T_BOOL:
		if (lit(r, "true"))
			protobuf_put_uint64(&r->w, f->num, 1);
		else if (lit(r, "false"))
			protobuf_put_uint64(&r->w, f->num, 0);
		else
			return jerr(r, "expected true or false");
		return 0;
	case T_DOUBLE:
		if (read_double(r, &d) < 0)
			return -EBADMSG;
		memcpy(&v, &d, sizeof(v));
		protobuf_put_fixed64(&r->w, f->num, v);
		return 0;
	default:
		return skip_value(r);
	}
}

static int read_field(struct jr *r, const struct jfield *f)
{
	int first = 1;

	ws(r);
	if (!f->repeated || f->type == T_SKIP || (r->p < r->end && *r->p == 'n'))
		return read_one(r, f);
	if (r->p >= r->end || *r->p != '[')
		return jerr(r, "expected an array");
	if (++r->depth > MAX_DEPTH)
		return jerr(r, "nested too deeply");
	r->p++;
	for (;;) {
		ws(r);
		if (r->p < r->end && *r->p == ']') {
			r->p++;
			break;
		}
		if (!first) {
			if (r->p >= r->end || *r->p != ',')
				return jerr(r, "expected ',' or ']'");
			r->p++;
		}
		first = 0;
		if (read_one(r, f) < 0)
			return -EBADMSG;
		if (r->w.err)
			return errmsg_set(r->err, r->w.err, "otlp json: request too large");
	}
	r->depth--;
	return 0;
}

static int read_message(struct jr *r, const struct jmsg *m)
{
	int first = 1;
	size_t i;

	ws(r);
	if (r->p >= r->end || *r->p != '{')
		return jerr(r, "expected an object");
	if (++r->depth > MAX_DEPTH)
		return jerr(r, "nested too deeply");
	r->p++;
	for (;;) {
		const struct jfield *f = NULL;

		ws(r);
		if (r->p < r->end && *r->p == '}') {
			r->p++;
			break;
		}
		if (!first) {
			if (r->p >= r->end || *r->p != ',')
				return jerr(r, "expected ',' or '}'");
			r->p++;
			ws(r);
		}
		first = 0;
		if (read_string(r) < 0)
			return -EBADMSG;
		for (i = 0; i < m->n && !f; i++) {
			if (key_is(&r->str, m->fields[i].name))
				f = &m->fields[i];
		}
		ws(r);
		if (r->p >= r->end || *r->p != ':')
			return jerr(r, "expected ':'");
		r->p++;
		if ((f ? read_field(r, f) : skip_value(r)) < 0)
			return -EBADMSG;
		if (r->w.err)
			return errmsg_set(r->err, r->w.err, "otlp json: request too large");
	}
	r->depth--;
	return 0;
}

int otlp_json_to_protobuf(const char *json, size_t len, size_t max_out, struct buf *out,
			  struct errmsg *err)
{
	struct buf tmp = BUF_INIT(max_out);
	struct jr r;
	int rc;

	memset(&r, 0, sizeof(r));
	r.s = r.p = json;
	r.end = json + len;
	r.err = err;
	r.w = (struct protobuf_writer)PROTOBUF_WRITER(&tmp);
	buf_init(&r.str, len + 1);
	rc = read_message(&r, &m_request);
	if (!rc) {
		ws(&r);
		if (r.p != r.end)
			rc = jerr(&r, "trailing data");
	}
	if (!rc && r.w.err)
		rc = errmsg_set(err, r.w.err, "otlp json: request too large");
	if (!rc && tmp.len && buf_append(out, tmp.data, tmp.len) < 0)
		rc = errmsg_set(err, -E2BIG, "otlp json: request too large");
	buf_release(&tmp);
	buf_release(&r.str);
	return rc;
}
