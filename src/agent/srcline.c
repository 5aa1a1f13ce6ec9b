/* srcline.c: DWARF lines and inlined calls through libdw (see srcline.h).
 *
 * For an address: the unit that holds it (dwarf_addrdie), the line table row (file:line of the
 * innermost code), and the nest of functions holding it (find_nest(), innermost first). Each
 * DW_TAG_inlined_subroutine scope is a frame whose position is the current one; its
 * DW_AT_call_file / DW_AT_call_line give the position in the next scope out, up to the
 * DW_TAG_subprogram, the physical function. */
#include "agent/srcline.h"
#include "agent/elf.h"
#include "lib/alloc.h"
#include "lib/log.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_POOL 16384 /* joined paths of one lookup */

struct srcline {
	Elf *elf;
	Dwarf *dw;
	uint64_t cost;
	char *pool;       /* PATH_POOL bytes, allocated on first use */
	size_t pool_used;
};

/* Sum of the sizes of the DWARF sections (the uncompressed size of compressed ones); 0 when
 * the file has no line table. */
static uint64_t dwarf_bytes(Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	uint64_t sum = 0;
	int has_line = 0;

	if (elf_getshdrstrndx(elf, &shstrndx) < 0)
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		uint64_t size;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || (strncmp(name, ".debug_", 7) && strncmp(name, ".zdebug_", 8)))
			continue;
		size = sh.sh_size;
		if (sh.sh_flags & SHF_COMPRESSED) {
			Elf64_Chdr *ch = elf64_getchdr(scn);

			if (ch)
				size = ch->ch_size;
		}
		if (!strcmp(name, ".debug_line") || !strcmp(name, ".zdebug_line"))
			has_line = 1;
		sum += size;
	}
	return has_line ? sum : 0;
}

int srcline_open(int fd, const char *name, struct srcline **out, struct errmsg *err)
{
	struct srcline *s;
	Elf *elf;
	Dwarf *dw;
	uint64_t cost;

	*out = NULL;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		return errmsg_set(err, -ENOEXEC, "'%s': not an ELF file libdw reads", name);
	}
	cost = dwarf_bytes(elf);
	if (!cost) {
		elf_end(elf);
		return errmsg_set(err, -ENOENT, "'%s' has no DWARF line table", name);
	}
	dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (!dw) {
		elf_end(elf);
		return errmsg_set(err, -ENOENT, "'%s': unreadable DWARF: %s", name, dwarf_errmsg(-1));
	}
	s = xcalloc(1, sizeof(*s));
	s->elf = elf;
	s->dw = dw;
	s->cost = cost;
	*out = s;
	return 0;
}

void srcline_free(struct srcline *s)
{
	if (!s)
		return;
	dwarf_end(s->dw);
	elf_end(s->elf);
	xfree(s->pool);
	xfree(s);
}

uint64_t srcline_cost(const struct srcline *s)
{
	return s->cost;
}

uint64_t srcline_estimate(struct elf_file *e)
{
	size_t i, n = elf_section_count(e);
	uint64_t sum = 0;
	int has_line = 0;

	for (i = 1; i < n; i++) {
		struct elf_section_info si;
		const char *name;
		uint64_t size;

		if (elf_section_info_at(e, i, &name, &si) < 0 || si.type == SHT_NOBITS ||
		    (strncmp(name, ".debug_", 7) && strncmp(name, ".zdebug_", 8)))
			continue;
		size = si.size;
		if (si.flags & SHF_COMPRESSED) {
			Elf64_Chdr ch;

			if (elf_read(e, si.offset, &ch, sizeof(ch)) == 0)
				size = ch.ch_size;
		}
		if (!strcmp(name, ".debug_line") || !strcmp(name, ".zdebug_line"))
			has_line = 1;
		sum += size;
	}
	return has_line ? sum : 0;
}

/* The name of a subprogram or inlined subroutine: its linkage name (qualified, mangled) when
 * it has one, else its plain name, looking through DW_AT_abstract_origin/specification. */
static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *n;

	n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (!n)
		n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	if (!n)
		n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
	return n;
}

/* A relative source path joined to the unit's compilation directory, "x/../" and "./" taken
 * out: what a user can open. Written into the lookup's pool; the path as is when it does not
 * fit or is absolute already. */
static const char *full_path(struct srcline *s, Dwarf_Die *cu, const char *file)
{
	Dwarf_Attribute a;
	const char *dir;
	char *out, *p;
	size_t room, n;

	if (!file || file[0] == '/' || !(dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &a))) ||
	    dir[0] != '/')
		return file;
	if (!s->pool)
		s->pool = xmalloc(PATH_POOL);
	room = PATH_POOL - s->pool_used;
	n = strlen(dir) + strlen(file) + 2;
	if (n > room)
		return file;
	out = s->pool + s->pool_used;
	snprintf(out, n, "%s/%s", dir, file);
	/* lexical clean-up: "/./" -> "/", "/x/../" -> "/" */
	for (p = out; (p = strstr(p, "/./"));)
		memmove(p, p + 2, strlen(p + 2) + 1);
	while ((p = strstr(out, "/../")) && p > out) {
		char *q = p - 1;

		while (q > out && *q != '/')
			q--;
		if (!strncmp(q, "/../", 4))
			break;
		memmove(q, p + 3, strlen(p + 3) + 1);
	}
	s->pool_used += strlen(out) + 1;
	return out;
}

/* The subprogram and inlined subroutines holding addr, walked down from the unit: DIEs whose
 * ranges hold addr are entered, and so are the containers of function definitions that have no
 * code of their own (namespaces, Rust's modules, C++ classes: dwarf_getscopes() does not enter
 * them, and finds nothing for Rust). *out (malloc'd, innermost first) gets the nest; returns its
 * length, 0 when no function holds addr. */
#define NEST_MAX (SRCLINE_MAX_INLINE + 8)
static int nest_walk(Dwarf_Die *parent, Dwarf_Addr addr, Dwarf_Die *nest, int *n, int depth)
{
	Dwarf_Die child;

	if (depth > 64 || dwarf_child(parent, &child) != 0)
		return 0;
	do {
		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
		case DW_TAG_inlined_subroutine:
		case DW_TAG_lexical_block:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
		case DW_TAG_with_stmt:
			if (dwarf_haspc(&child, addr) == 1) {
				int tag = dwarf_tag(&child);

				if ((tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) &&
				    *n < NEST_MAX)
					nest[(*n)++] = child;
				nest_walk(&child, addr, nest, n, depth + 1);
				return 1;
			}
			break;
		case DW_TAG_namespace:
		case DW_TAG_module:
		case DW_TAG_structure_type:
		case DW_TAG_class_type:
		case DW_TAG_union_type:
			if (nest_walk(&child, addr, nest, n, depth + 1))
				return 1;
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

static int find_nest(Dwarf_Die *cu, uint64_t addr, Dwarf_Die **out)
{
	Dwarf_Die *nest = malloc(NEST_MAX * sizeof(*nest)), tmp;
	int n = 0, i;

	*out = nest;
	if (!nest)
		return 0;
	nest_walk(cu, (Dwarf_Addr)addr, nest, &n, 0);
	for (i = 0; i < n / 2; i++) { /* outermost first -> innermost first */
		tmp = nest[i];
		nest[i] = nest[n - 1 - i];
		nest[n - 1 - i] = tmp;
	}
	return n;
}

size_t srcline_lookup(struct srcline *s, uint64_t addr, struct srcline_frame *out, size_t max)
{
	Dwarf_Die cu, *scopes = NULL;
	Dwarf_Line *row;
	Dwarf_Files *files = NULL;
	size_t nfiles = 0, k = 0;
	const char *file = NULL;
	int line = 0, n, i;

	s->pool_used = 0;
	if (!max || !dwarf_addrdie(s->dw, (Dwarf_Addr)addr, &cu))
		return 0;
	if (max > SRCLINE_MAX_INLINE + 1)
		max = SRCLINE_MAX_INLINE + 1;
	row = dwarf_getsrc_die(&cu, (Dwarf_Addr)addr);
	if (row) {
		file = full_path(s, &cu, dwarf_linesrc(row, NULL, NULL));
		if (dwarf_lineno(row, &line) < 0 || line < 0)
			line = 0;
	}
	n = find_nest(&cu, addr, &scopes);
	if (n > 0 && dwarf_getsrcfiles(&cu, &files, &nfiles) < 0)
		files = NULL;
	for (i = 0; i < n && k < max; i++) {
		int tag = dwarf_tag(&scopes[i]);
		Dwarf_Attribute a;
		Dwarf_Word v;

		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue;
		out[k].name = die_name(&scopes[i]);
		out[k].file = file;
		out[k].line = line;
		out[k].inlined = tag == DW_TAG_inlined_subroutine;
		k++;
		if (tag == DW_TAG_subprogram)
			break;
		/* the position of the call, in the scope it was inlined into */
		file = NULL;
		line = 0;
		if (files && dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &a), &v) == 0 &&
		    v < nfiles)
			file = full_path(s, &cu, dwarf_filesrc(files, (size_t)v, NULL, NULL));
		if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &a), &v) == 0 &&
		    v <= INT32_MAX)
			line = (int)v;
	}
	/* No subprogram scope (or the cap was hit inside inlined frames): the physical function
	 * is still the last frame, nameless (its name comes from the symbol table). */
	if ((k == 0 && (file || line)) || (k > 0 && out[k - 1].inlined)) {
		if (k == max)
			k--;
		out[k].name = NULL;
		out[k].file = file;
		out[k].line = line;
		out[k].inlined = 0;
		k++;
	}
	free(scopes);
	return k;
}
