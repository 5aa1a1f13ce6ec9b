/* profile.c: the profile model (see profile.h). Functions, locations and samples are interned
 * through hash -> first id maps with collision chains in parallel "next" arrays. */
#include "profile/profile.h"
#include "lib/alloc.h"
#include "lib/hash.h"
#include "lib/log.h"
#include "lib/strtab.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

struct chain {
	struct u64map first; /* hash key -> first id */
	uint32_t *next;      /* next[id - 1] */
	size_t cap;
};

struct profile_priv {
	struct chain functions, locations, samples;
};

static uint64_t key_fix(uint64_t h)
{
	return h == ~0ULL ? 2 : h | 1;
}

static uint32_t chain_first(struct chain *c, uint64_t key)
{
	uint64_t *v = u64map_get(&c->first, key);

	return v ? (uint32_t)*v : 0;
}

static void chain_push(struct chain *c, uint64_t key, uint32_t id)
{
	ALLOC_GROW(c->next, id, c->cap);
	c->next[id - 1] = chain_first(c, key);
	u64map_put(&c->first, key, id);
}

static void chain_release(struct chain *c)
{
	u64map_release(&c->first);
	xfree(c->next);
}

struct profile *profile_new(void)
{
	struct profile *p = xcalloc(1, sizeof(*p));
	struct profile_priv *priv = xcalloc(1, sizeof(*priv));

	p->priv = priv;
	p->strings = strtab_new();
	profile_set_type(p, "cpu", "nanoseconds", 0);
	return p;
}

void profile_free(struct profile *p)
{
	struct profile_priv *priv;

	if (!p)
		return;
	priv = p->priv;
	chain_release(&priv->functions);
	chain_release(&priv->locations);
	chain_release(&priv->samples);
	xfree(priv);
	strtab_free(p->strings);
	xfree(p->mappings);
	xfree(p->functions);
	xfree(p->locations);
	xfree(p->samples);
	xfree(p->loc_pool);
	xfree(p->label_pool);
	xfree(p->value_types);
	xfree(p->value_units);
	xfree(p->values);
	xfree(p);
}

uint32_t profile_str(struct profile *p, const char *s)
{
	return strtab_intern(p->strings, s ? s : "");
}

const char *profile_get_str(const struct profile *p, uint32_t id)
{
	return strtab_get(p->strings, id);
}

void profile_set_type(struct profile *p, const char *type, const char *unit, int64_t period)
{
	p->sample_type = profile_str(p, type);
	p->sample_unit = profile_str(p, unit);
	p->period_type = p->sample_type;
	p->period_unit = p->sample_unit;
	p->period = period;
}

void profile_set_period_type(struct profile *p, const char *type, const char *unit)
{
	p->period_type = profile_str(p, type);
	p->period_unit = profile_str(p, unit);
}

uint32_t profile_add_mapping(struct profile *p, uint64_t start, uint64_t limit, uint64_t offset,
			     const char *file, const char *build_id)
{
	struct profile_mapping *m;

	ALLOC_GROW(p->mappings, p->nmappings + 1, p->mappings_cap);
	m = &p->mappings[p->nmappings++];
	m->start = start;
	m->limit = limit;
	m->offset = offset;
	m->file = profile_str(p, file);
	m->build_id = build_id && *build_id ? profile_str(p, build_id) : 0;
	m->main_exe = 0;
	return (uint32_t)p->nmappings;
}

uint32_t profile_intern_function(struct profile *p, enum frame_kind kind, const char *name,
				 const char *system_name, const char *filename, int64_t start_line)
{
	struct profile_priv *priv = p->priv;
	struct profile_function f = {
		.name = profile_str(p, name),
		.system_name = profile_str(p, system_name ? system_name : name),
		.filename = profile_str(p, filename),
		.start_line = start_line,
		.kind = (uint8_t)kind,
	};
	uint64_t key = key_fix(hash_combine(hash_combine(hash_combine(hash_combine(
		f.name, f.system_name), f.filename), (uint64_t)f.start_line), f.kind));
	uint32_t id;

	for (id = chain_first(&priv->functions, key); id; id = priv->functions.next[id - 1]) {
		const struct profile_function *g = &p->functions[id - 1];

		if (g->name == f.name && g->system_name == f.system_name &&
		    g->filename == f.filename && g->start_line == f.start_line && g->kind == f.kind)
			return id;
	}
	ALLOC_GROW(p->functions, p->nfunctions + 1, p->functions_cap);
	p->functions[p->nfunctions++] = f;
	id = (uint32_t)p->nfunctions;
	chain_push(&priv->functions, key, id);
	return id;
}

static uint64_t location_key(const struct profile_location *l)
{
	return key_fix(hash_combine(hash_combine(hash_combine(hash_combine(l->address, l->mapping),
							       l->function),
					      (uint64_t)l->line),
				 l->inlined));
}

uint32_t profile_intern_location_inl(struct profile *p, uint32_t mapping, uint64_t address,
				     uint32_t function, int64_t line, int inlined)
{
	struct profile_priv *priv = p->priv;
	uint8_t inl = inlined ? 1 : 0;
	struct profile_location want = {
		.address = address, .mapping = mapping, .function = function, .line = line,
		.inlined = inl,
	};
	uint64_t key = location_key(&want);
	uint32_t id;

	for (id = chain_first(&priv->locations, key); id; id = priv->locations.next[id - 1]) {
		const struct profile_location *l = &p->locations[id - 1];

		if (l->address == address && l->mapping == mapping && l->function == function &&
		    l->line == line && l->inlined == inl)
			return id;
	}
	ALLOC_GROW(p->locations, p->nlocations + 1, p->locations_cap);
	p->locations[p->nlocations++] = (struct profile_location){
		.address = address, .mapping = mapping, .function = function, .line = line,
		.inlined = inl,
	};
	id = (uint32_t)p->nlocations;
	chain_push(&priv->locations, key, id);
	return id;
}

uint32_t profile_intern_location(struct profile *p, uint32_t mapping, uint64_t address,
				 uint32_t function, int64_t line)
{
	return profile_intern_location_inl(p, mapping, address, function, line, 0);
}

static int labels_equal(const struct profile_label *a, const struct profile_label *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (a[i].key != b[i].key || a[i].str != b[i].str || a[i].num != b[i].num)
			return 0;
	}
	return 1;
}

static void add_sample(struct profile *p, const uint32_t *locs, size_t nlocs,
		       const struct profile_label *labels, size_t nlabels, int64_t value,
		       const int64_t *values)
{
	struct profile_priv *priv = p->priv;
	uint64_t h = hash_bytes(locs, nlocs * sizeof(*locs), nlocs);
	struct profile_sample *s;
	uint32_t id, k;
	size_t i;

	for (i = 0; i < nlabels; i++)
		h = hash_combine(hash_combine(hash_combine(h, labels[i].key), labels[i].str),
				 (uint64_t)labels[i].num);
	h = key_fix(h);
	for (id = chain_first(&priv->samples, h); id; id = priv->samples.next[id - 1]) {
		s = &p->samples[id - 1];
		if (s->nlocs == nlocs && s->nlabels == nlabels &&
		    (!nlocs || !memcmp(profile_sample_locs(p, s), locs, nlocs * sizeof(*locs))) &&
		    labels_equal(profile_sample_labels(p, s), labels, nlabels)) {
			s->value += value;
			for (k = 0; values && k < p->nvalues; k++)
				p->values[(size_t)(id - 1) * p->nvalues + k] += values[k];
			return;
		}
	}
	if (p->loc_pool_len + nlocs > UINT32_MAX || p->label_pool_len + nlabels > UINT32_MAX)
		BUG("profile pools overflow");
	ALLOC_GROW(p->loc_pool, p->loc_pool_len + nlocs, p->loc_pool_cap);
	ALLOC_GROW(p->label_pool, p->label_pool_len + nlabels, p->label_pool_cap);
	ALLOC_GROW(p->samples, p->nsamples + 1, p->samples_cap);
	if (p->nvalues) {
		int64_t *v;

		ALLOC_GROW(p->values, (p->nsamples + 1) * p->nvalues, p->values_cap);
		v = p->values + p->nsamples * p->nvalues;
		for (k = 0; k < p->nvalues; k++)
			v[k] = values ? values[k] : (k == p->value_index ? value : 0);
	}
	s = &p->samples[p->nsamples++];
	s->locs_first = (uint32_t)p->loc_pool_len;
	s->nlocs = (uint32_t)nlocs;
	s->labels_first = (uint32_t)p->label_pool_len;
	s->nlabels = (uint32_t)nlabels;
	s->value = value;
	if (nlocs)
		memcpy(p->loc_pool + p->loc_pool_len, locs, nlocs * sizeof(*locs));
	if (nlabels)
		memcpy(p->label_pool + p->label_pool_len, labels, nlabels * sizeof(*labels));
	p->loc_pool_len += nlocs;
	p->label_pool_len += nlabels;
	chain_push(&priv->samples, h, (uint32_t)p->nsamples);
}

void profile_add_sample(struct profile *p, const uint32_t *locs, size_t nlocs,
			const struct profile_label *labels, size_t nlabels, int64_t value)
{
	add_sample(p, locs, nlocs, labels, nlabels, value, NULL);
}

void profile_set_value_types(struct profile *p, size_t n, const uint32_t *types,
			     const uint32_t *units, uint32_t index)
{
	if (p->nsamples || !n || index >= n)
		BUG("profile_set_value_types: %zu columns, index %u, %zu samples", n, index,
		    p->nsamples);
	xfree(p->value_types);
	xfree(p->value_units);
	p->value_types = xmalloc(n * sizeof(*p->value_types));
	p->value_units = xmalloc(n * sizeof(*p->value_units));
	memcpy(p->value_types, types, n * sizeof(*types));
	memcpy(p->value_units, units, n * sizeof(*units));
	p->nvalues = (uint32_t)n;
	p->value_index = index;
}

void profile_add_sample_values(struct profile *p, const uint32_t *locs, size_t nlocs,
			       const struct profile_label *labels, size_t nlabels,
			       const int64_t *values)
{
	add_sample(p, locs, nlocs, labels, nlabels, values[p->value_index], values);
}

int64_t profile_sample_value(const struct profile *p, const struct profile_sample *s, uint32_t k)
{
	if (!p->nvalues || k >= p->nvalues)
		return s->value;
	return p->values[(size_t)(s - p->samples) * p->nvalues + k];
}

const char *profile_sample_label_str(const struct profile *p, const struct profile_sample *s,
				     const char *key)
{
	const struct profile_label *l = profile_sample_labels(p, s);
	uint32_t i, kid = strtab_find(p->strings, key, strlen(key));

	if (kid == UINT32_MAX)
		return NULL;
	for (i = 0; i < s->nlabels; i++) {
		if (l[i].key == kid && l[i].str)
			return profile_get_str(p, l[i].str);
	}
	return NULL;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

size_t profile_frame_name_flags(const struct profile *p, uint32_t loc, unsigned flags, char *out,
				size_t outlen)
{
	const struct profile_location *l;
	const struct profile_function *f;
	const char *name;
	int n;

	if (!outlen)
		return 0;
	if (!loc || loc > p->nlocations) {
		n = snprintf(out, outlen, "[unknown]");
		goto done;
	}
	l = &p->locations[loc - 1];
	if (l->function && l->function <= p->nfunctions) {
		f = &p->functions[l->function - 1];
		name = profile_get_str(p, f->name);
		switch (f->kind) {
		case FRAME_KERNEL:
			n = snprintf(out, outlen, "%s_[k]", name);
			break;
		case FRAME_PYTHON:
			if (f->filename && l->line > 0 && (flags & PROFILE_NAME_LINES))
				n = snprintf(out, outlen, "%s (%s:%" PRId64 ")", name,
					     profile_get_str(p, f->filename), l->line);
			else if (f->filename)
				n = snprintf(out, outlen, "%s (%s)", name,
					     profile_get_str(p, f->filename));
			else
				n = snprintf(out, outlen, "%s", name);
			break;
		case FRAME_NATIVE:
			if (f->filename && l->line > 0 && (flags & PROFILE_NAME_LINES))
				n = snprintf(out, outlen, "%s (%s:%" PRId64 ")", name,
					     profile_get_str(p, f->filename), l->line);
			else
				n = snprintf(out, outlen, "%s", name);
			break;
		default:
			n = snprintf(out, outlen, "%s", name);
			break;
		}
		goto done;
	}
	if (l->mapping && l->mapping <= p->nmappings) {
		const struct profile_mapping *m = &p->mappings[l->mapping - 1];

		/* An address below its mapping's start is a file offset already (OTel's eBPF
		 * profiler sends native frames so). */
		n = snprintf(out, outlen, "%s+0x%" PRIx64, base_name(profile_get_str(p, m->file)),
			     l->address >= m->start ? l->address - m->start + m->offset : l->address);
		goto done;
	}
	n = snprintf(out, outlen, "[unknown]");
done:
	if (n < 0)
		n = 0;
	return (size_t)n < outlen ? (size_t)n : outlen - 1;
}

size_t profile_frame_name(const struct profile *p, uint32_t loc, char *out, size_t outlen)
{
	return profile_frame_name_flags(p, loc, p->show_lines ? PROFILE_NAME_LINES : 0, out, outlen);
}

static int has_suffix(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len > n && !memcmp(s + len - n, suffix, n);
}

static int has_prefix(const char *s, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);

	return len >= n && !memcmp(s, prefix, n);
}

enum profile_lang profile_file_lang(const char *file, size_t len)
{
	static const struct {
		const char *suffix;
		enum profile_lang lang;
	} ext[] = {
		{ ".py", PROFILE_LANG_PYTHON },  { ".pyw", PROFILE_LANG_PYTHON },
		{ ".js", PROFILE_LANG_JS },      { ".mjs", PROFILE_LANG_JS },
		{ ".cjs", PROFILE_LANG_JS },     { ".ts", PROFILE_LANG_JS },
		{ ".mts", PROFILE_LANG_JS },     { ".cts", PROFILE_LANG_JS },
		{ ".jsx", PROFILE_LANG_JS },     { ".tsx", PROFILE_LANG_JS },
		{ ".java", PROFILE_LANG_JAVA },  { ".kt", PROFILE_LANG_JAVA },
		{ ".scala", PROFILE_LANG_JAVA }, { ".groovy", PROFILE_LANG_JAVA },
		{ ".clj", PROFILE_LANG_JAVA },   { ".rb", PROFILE_LANG_RUBY },
		{ ".php", PROFILE_LANG_PHP },    { ".phtml", PROFILE_LANG_PHP },
		{ ".pl", PROFILE_LANG_PERL },    { ".pm", PROFILE_LANG_PERL },
		{ ".t", PROFILE_LANG_PERL },
	};
	size_t i;

	if (!file || !len)
		return PROFILE_LANG_NONE;
	for (i = 0; i < sizeof(ext) / sizeof(ext[0]); i++)
		if (has_suffix(file, len, ext[i].suffix))
			return ext[i].lang;
	if (has_prefix(file, len, "node:"))
		return PROFILE_LANG_JS;    /* Node's own modules: "node:internal/main/..." */
	if (has_prefix(file, len, "<internal:"))
		return PROFILE_LANG_RUBY;  /* Ruby's prelude: "<internal:kernel>" */
	if (has_prefix(file, len, "(eval "))
		return PROFILE_LANG_PERL;  /* a string eval: "(eval 12)" */
	if (file[0] == '<')
		return PROFILE_LANG_PYTHON; /* "<frozen importlib._bootstrap>", "<string>" */
	return PROFILE_LANG_NONE;
}

int profile_is_runtime_file(const char *file, size_t len)
{
	return profile_file_lang(file, len) != PROFILE_LANG_NONE;
}

int profile_frame_split(const char *s, size_t n, size_t *name_len, size_t *file_off,
			size_t *file_len, int64_t *line)
{
	size_t open, i, colon = 0;
	int64_t v = 0;

	*line = 0;
	if (n < 4 || s[n - 1] != ')')
		return 0;
	for (open = n - 1; open > 0; open--) {
		if (s[open] == '(' && s[open - 1] == ' ')
			break;
	}
	if (!open)
		return 0;
	for (i = n - 2; i > open; i--) {
		if (s[i] == ':') {
			colon = i;
			break;
		}
	}
	if (colon) {
		if (colon + 2 > n - 1 || s[colon + 1] < '1' || s[colon + 1] > '9')
			colon = 0;
		for (i = colon + 1; colon && i < n - 1; i++) {
			if (s[i] < '0' || s[i] > '9' || v > (INT64_MAX - 9) / 10)
				colon = 0;
			else
				v = v * 10 + (s[i] - '0');
		}
	}
	*file_off = open + 1;
	*file_len = (colon ? colon : n - 1) - *file_off;
	if (!*file_len)
		return 0;
	/* Without a line, only a runtime's source file makes a file part: "f (anything)" is a
	 * name (C++: "f(int, (anonymous namespace)::X)"). */
	if (!colon && !profile_is_runtime_file(s + *file_off, *file_len))
		return 0;
	*name_len = open - 1;
	*line = colon ? v : 0;
	return 1;
}

size_t profile_frame_strip_line(const char *s, char *out, size_t outlen)
{
	size_t n = strlen(s), name_len, file_off, file_len, len;
	int64_t line;
	int w;

	if (!outlen)
		return 0;
	if (!profile_frame_split(s, n, &name_len, &file_off, &file_len, &line) || !line)
		w = snprintf(out, outlen, "%s", s);
	else if (profile_is_runtime_file(s + file_off, file_len))
		w = snprintf(out, outlen, "%.*s (%.*s)", (int)name_len, s, (int)file_len, s + file_off);
	else
		w = snprintf(out, outlen, "%.*s", (int)name_len, s);
	len = w < 0 ? 0 : (size_t)w;
	return len < outlen ? len : outlen - 1;
}

void profile_mappings_main_first(struct profile *p)
{
	struct profile_priv *priv = p->priv;
	struct profile_mapping *sorted;
	uint32_t *new_id;
	size_t i, n = 0;
	int pass, moved = 0;

	for (i = 0; i < p->nmappings && !moved; i++)
		moved = p->mappings[i].main_exe && i > 0 && !p->mappings[i - 1].main_exe;
	if (!moved)
		return;
	sorted = xmalloc(p->nmappings * sizeof(*sorted));
	new_id = xcalloc(p->nmappings + 1, sizeof(*new_id));
	for (pass = 1; pass >= 0; pass--) {
		for (i = 0; i < p->nmappings; i++) {
			if (!!p->mappings[i].main_exe != pass)
				continue;
			sorted[n] = p->mappings[i];
			new_id[i + 1] = (uint32_t)++n;
		}
	}
	memcpy(p->mappings, sorted, n * sizeof(*sorted));
	xfree(sorted);
	/* the locations' keys include their mapping: index them again */
	u64map_release(&priv->locations.first);
	u64map_init(&priv->locations.first);
	for (i = 0; i < p->nlocations; i++) {
		struct profile_location *l = &p->locations[i];

		if (l->mapping && l->mapping <= p->nmappings)
			l->mapping = new_id[l->mapping];
		chain_push(&priv->locations, location_key(l), (uint32_t)i + 1);
	}
	xfree(new_id);
}

int64_t profile_total(const struct profile *p)
{
	int64_t t = 0;
	size_t i;

	for (i = 0; i < p->nsamples; i++)
		t += p->samples[i].value;
	return t;
}

void profile_merge(struct profile *dst, const struct profile *src)
{
	uint32_t *map_ids = xcalloc(src->nmappings + 1, sizeof(uint32_t));
	uint32_t *fn_ids = xcalloc(src->nfunctions + 1, sizeof(uint32_t));
	uint32_t *loc_ids = xcalloc(src->nlocations + 1, sizeof(uint32_t));
	uint32_t *stack = NULL;
	struct profile_label *labels = NULL;
	size_t stack_cap = 0, labels_cap = 0, i, j;

	for (i = 0; i < src->nmappings; i++) {
		const struct profile_mapping *m = &src->mappings[i];

		map_ids[i + 1] = profile_add_mapping(dst, m->start, m->limit, m->offset,
						     profile_get_str(src, m->file),
						     profile_get_str(src, m->build_id));
		dst->mappings[map_ids[i + 1] - 1].main_exe = m->main_exe;
	}
	for (i = 0; i < src->nfunctions; i++) {
		const struct profile_function *f = &src->functions[i];

		fn_ids[i + 1] = profile_intern_function(dst, f->kind, profile_get_str(src, f->name),
							profile_get_str(src, f->system_name),
							profile_get_str(src, f->filename), f->start_line);
	}
	for (i = 0; i < src->nlocations; i++) {
		const struct profile_location *l = &src->locations[i];

		loc_ids[i + 1] = profile_intern_location_inl(
			dst, l->mapping <= src->nmappings ? map_ids[l->mapping] : 0, l->address,
			l->function <= src->nfunctions ? fn_ids[l->function] : 0, l->line, l->inlined);
	}
	for (i = 0; i < src->nsamples; i++) {
		const struct profile_sample *s = &src->samples[i];
		const uint32_t *sl = profile_sample_locs(src, s);
		const struct profile_label *ll = profile_sample_labels(src, s);

		ALLOC_GROW(stack, s->nlocs, stack_cap);
		ALLOC_GROW(labels, s->nlabels, labels_cap);
		for (j = 0; j < s->nlocs; j++)
			stack[j] = sl[j] <= src->nlocations ? loc_ids[sl[j]] : 0;
		for (j = 0; j < s->nlabels; j++) {
			labels[j].key = profile_str(dst, profile_get_str(src, ll[j].key));
			labels[j].str = ll[j].str ? profile_str(dst, profile_get_str(src, ll[j].str)) : 0;
			labels[j].num = ll[j].num;
		}
		profile_add_sample(dst, stack, s->nlocs, labels, s->nlabels, s->value);
	}
	xfree(map_ids);
	xfree(fn_ids);
	xfree(loc_ids);
	xfree(stack);
	xfree(labels);
}

void profile_set_label(struct profile *p, const char *key, const char *value)
{
	struct profile_priv *priv = p->priv;
	struct profile_sample *samples = p->samples;
	uint32_t *locs = p->loc_pool;
	struct profile_label *labels = p->label_pool, *tmp = NULL;
	size_t n = p->nsamples, tmp_cap = 0, i, j, k;
	uint32_t kid = profile_str(p, key), vid = profile_str(p, value);

	/* Rebuild the samples from the old arrays: the sample index hashes the labels. */
	chain_release(&priv->samples);
	memset(&priv->samples, 0, sizeof(priv->samples));
	p->samples = NULL;
	p->nsamples = p->samples_cap = 0;
	p->loc_pool = NULL;
	p->loc_pool_len = p->loc_pool_cap = 0;
	p->label_pool = NULL;
	p->label_pool_len = p->label_pool_cap = 0;
	for (i = 0; i < n; i++) {
		const struct profile_sample *s = &samples[i];
		const struct profile_label *l = labels ? labels + s->labels_first : NULL;

		ALLOC_GROW(tmp, s->nlabels + 1, tmp_cap);
		for (j = 0, k = 0; j < s->nlabels; j++)
			if (l[j].key != kid)
				tmp[k++] = l[j];
		tmp[k].key = kid;
		tmp[k].str = vid;
		tmp[k].num = 0;
		k++;
		profile_add_sample(p, locs ? locs + s->locs_first : NULL, s->nlocs, tmp, k, s->value);
	}
	xfree(tmp);
	xfree(samples);
	xfree(locs);
	xfree(labels);
}
