/* speedscope.c: speedscope's JSON file format, one "sampled" profile
 * (schema: https://www.speedscope.app/file-format-schema.json; notes in docs/formats.md).
 *
 * Frames are shared by display name (the folded name), so a function seen at several addresses
 * (or, unless p->show_lines, on several lines) is one frame, whose line is where the function
 * starts (the sampled line with show_lines); the sample's "comm" label is the outermost frame, as in the folded output. */
#include "lib/alloc.h"
#include "lib/json.h"
#include "lib/strtab.h"
#include "profile/output.h"

#include <inttypes.h>
#include <string.h>

#define NAME_MAX_LEN 4096

struct frame_info {
	uint32_t file; /* profile string id or 0 */
	int64_t line;
};

struct sframes {
	struct strtab *names; /* display name -> id; frame index = id - 1 */
	struct frame_info *info;
	size_t info_cap;
	uint32_t *of_loc;     /* location id -> frame index + 1 (0: not yet) */
};

static uint32_t frame_of_name(struct sframes *sf, const char *name, uint32_t file, int64_t line)
{
	uint32_t known = strtab_count(sf->names), id;

	if (!*name)
		name = "[unknown]";
	id = strtab_intern(sf->names, name);
	if (id >= known) {
		ALLOC_GROW(sf->info, id, sf->info_cap);
		sf->info[id - 1].file = file;
		sf->info[id - 1].line = line;
	}
	return id - 1;
}

static uint32_t frame_of_loc(struct sframes *sf, const struct profile *p, uint32_t loc, char *name)
{
	const struct profile_location *l;
	uint32_t file = 0;
	int64_t line = 0;

	if (loc > p->nlocations)
		loc = 0;
	if (sf->of_loc[loc])
		return sf->of_loc[loc] - 1;
	profile_frame_name(p, loc, name, NAME_MAX_LEN);
	l = loc ? &p->locations[loc - 1] : NULL;
	if (l && l->function && l->function <= p->nfunctions) {
		file = p->functions[l->function - 1].filename;
		/* By function, a frame stands for all its lines: give where it starts. */
		line = p->show_lines ? l->line : p->functions[l->function - 1].start_line;
	}
	sf->of_loc[loc] = frame_of_name(sf, name, file, line) + 1;
	return sf->of_loc[loc] - 1;
}

static const char *speedscope_unit(const char *unit)
{
	static const char *const known[] = {
		"nanoseconds", "microseconds", "milliseconds", "seconds", "bytes",
	};
	size_t i;

	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		if (!strcmp(unit, known[i]))
			return known[i];
	}
	return "none";
}

/* The comm label of s, or NULL. */
static const char *comm_of(const struct profile *p, const struct profile_sample *s, uint32_t key)
{
	const struct profile_label *labels = profile_sample_labels(p, s);
	size_t j;

	for (j = 0; key != UINT32_MAX && j < s->nlabels; j++) {
		if (labels[j].key == key && labels[j].str)
			return profile_get_str(p, labels[j].str);
	}
	return NULL;
}

int speedscope_write(const struct profile *p, const char *title, struct buf *out)
{
	struct sframes sf;
	uint32_t comm_key = strtab_find(p->strings, "comm", 4);
	char *name = xmalloc(NAME_MAX_LEN);
	size_t start_len = out->len, i, j, nframes;
	int64_t total = 0;
	int err = 0;

	memset(&sf, 0, sizeof(sf));
	sf.names = strtab_new();
	sf.of_loc = xcalloc(p->nlocations + 1, sizeof(*sf.of_loc));
	if (!title || !*title)
		title = "scorch profile";

	/* Number the frames first: they precede the samples in the file. */
	for (i = 0; i < p->nsamples; i++) {
		const struct profile_sample *s = &p->samples[i];
		const uint32_t *locs = profile_sample_locs(p, s);
		const char *comm;

		if (s->value <= 0)
			continue;
		if (__builtin_add_overflow(total, s->value, &total))
			total = INT64_MAX;
		comm = comm_of(p, s, comm_key);
		if (comm)
			frame_of_name(&sf, comm, 0, 0);
		for (j = s->nlocs; j-- > 0;)
			frame_of_loc(&sf, p, locs[j], name);
	}
	nframes = strtab_count(sf.names) - 1;

	err = buf_puts(out, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
			    "\"shared\":{\"frames\":[");
	for (i = 0; i < nframes && !err; i++) {
		const struct frame_info *fi = &sf.info[i];

		err = buf_puts(out, i ? ",{\"name\":" : "{\"name\":");
		if (!err)
			err = json_str_len(out, strtab_get(sf.names, (uint32_t)i + 1),
					   strtab_len(sf.names, (uint32_t)i + 1));
		if (!err && fi->file) {
			err = buf_puts(out, ",\"file\":");
			if (!err)
				err = json_str(out, profile_get_str(p, fi->file));
			if (!err && fi->line > 0)
				err = buf_printf(out, ",\"line\":%" PRId64, fi->line);
		}
		if (!err)
			err = buf_putc(out, '}');
	}
	if (!err)
		err = buf_puts(out, "]},\"profiles\":[{\"type\":\"sampled\",\"name\":");
	if (!err)
		err = json_str(out, title);
	if (!err)
		err = buf_printf(out, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%" PRId64
				 ",\"samples\":[",
				 speedscope_unit(profile_get_str(p, p->sample_unit)), total);
	for (i = 0, j = 0; i < p->nsamples && !err; i++) {
		const struct profile_sample *s = &p->samples[i];
		const uint32_t *locs = profile_sample_locs(p, s);
		const char *comm;
		size_t k;
		int first = 1;

		if (s->value <= 0)
			continue;
		err = buf_puts(out, j++ ? ",[" : "[");
		comm = comm_of(p, s, comm_key);
		if (comm && !err) {
			err = buf_printf(out, "%u", frame_of_name(&sf, comm, 0, 0));
			first = 0;
		}
		/* Root first, as speedscope wants. */
		for (k = s->nlocs; k-- > 0 && !err; first = 0)
			err = buf_printf(out, first ? "%u" : ",%u", frame_of_loc(&sf, p, locs[k], name));
		if (!err)
			err = buf_putc(out, ']');
	}
	if (!err)
		err = buf_puts(out, "],\"weights\":[");
	for (i = 0, j = 0; i < p->nsamples && !err; i++) {
		if (p->samples[i].value > 0)
			err = buf_printf(out, j++ ? ",%" PRId64 : "%" PRId64, p->samples[i].value);
	}
	if (!err)
		err = buf_puts(out, "]}],\"name\":");
	if (!err)
		err = json_str(out, title);
	if (!err)
		err = buf_puts(out, ",\"activeProfileIndex\":0,\"exporter\":\"scorch\"}\n");

	if (err && out->data) {
		out->len = start_len;
		out->data[start_len] = '\0';
	}
	strtab_free(sf.names);
	xfree(sf.info);
	xfree(sf.of_loc);
	xfree(name);
	return err;
}
