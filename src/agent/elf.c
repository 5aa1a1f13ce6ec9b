/* elf.c: the bounds-checked ELF64 reader (see elf.h). Every read goes through elf_read(), which
 * checks the range against the file size and treats a short pread (file truncated under us) as
 * -EIO. Every size taken from the file is checked against the file size before it is used to
 * allocate, so a lying header cannot make us allocate more than the file holds. */
#include "agent/elf.h"
#include "lib/alloc.h"
#include "lib/hash.h"
#include "lib/log.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#ifndef ELFCOMPRESS_ZSTD
#define ELFCOMPRESS_ZSTD 2
#endif

#define ELF_MAX_MEM_IMAGE (1ull << 30)
#define ELF_MAX_SHSTRTAB (16u << 20)
#define ELF_MAX_NAME_LEN (64u << 10)
#define ELF_MAX_NAME_POOL (1u << 30)
#define SYM_MAX_TABLES 16 /* symbol tables read from one file */
/* A decompressed section may not exceed this ratio to its compressed bytes (zlib's best ratio
 * is about 1032:1); stops decompression bombs early. */
#define ELF_MAX_COMPRESS_RATIO 1100u

struct elf_file {
	int fd;          /* -1 for memory images */
	uint8_t *mem;    /* memory image copy, or NULL */
	uint64_t size;   /* bytes in the file at open */
	char *name;      /* for messages */
	Elf64_Ehdr eh;

	Elf64_Shdr *shdrs;
	size_t nshdrs;
	char *shstrtab; /* NUL-terminated copy, or NULL */
	size_t shstrtab_len;
	void **sec_data;  /* per-section cache for elf_section() */
	size_t *sec_len;

	struct elf_segment *segs;
	size_t nsegs;

	uint8_t build_id[64];
	size_t build_id_len;
	char build_id_hex[129];

	char *debuglink;
	uint32_t debuglink_crc;

	int syms_loaded; /* 0 not yet, 1 done, <0 the error */
	struct elf_symbol *syms;
	size_t nsyms;
	char *names;     /* the kept names in memory, or NULL while they are read from the file */
	size_t names_len;
	uint32_t name_tabs[SYM_MAX_TABLES]; /* string table section of each symbol table */
	size_t nname_tabs;
	char *namebuf;   /* elf_symbol_name() of a name read from the file */
	size_t namebuf_cap;
};

static int range_ok(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

int elf_read(struct elf_file *e, uint64_t off, void *buf, size_t len)
{
	uint8_t *p = buf;

	if (!range_ok(off, len, e->size) || (e->fd < 0 && !e->mem))
		return -EIO;
	if (e->mem) {
		memcpy(buf, e->mem + off, len);
		return 0;
	}
	while (len) {
		ssize_t n = pread(e->fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read [off, off+len) into a new buffer with one extra NUL byte; NULL on failure (*rc set). */
static void *read_alloc(struct elf_file *e, uint64_t off, uint64_t len, uint64_t cap, int *rc)
{
	uint8_t *p;

	if (len > cap) {
		*rc = -E2BIG;
		return NULL;
	}
	if (!range_ok(off, len, e->size)) {
		*rc = -EIO;
		return NULL;
	}
	p = try_malloc((size_t)len + 1);
	if (!p) {
		*rc = -ENOMEM;
		return NULL;
	}
	*rc = elf_read(e, off, p, (size_t)len);
	if (*rc < 0) {
		xfree(p);
		return NULL;
	}
	p[len] = 0;
	return p;
}

static const char *section_name(const struct elf_file *e, const Elf64_Shdr *sh)
{
	if (!e->shstrtab || sh->sh_name >= e->shstrtab_len)
		return "";
	return e->shstrtab + sh->sh_name;
}

static int find_section(const struct elf_file *e, const char *name)
{
	size_t i;

	for (i = 1; i < e->nshdrs; i++) {
		if (!strcmp(section_name(e, &e->shdrs[i]), name))
			return (int)i;
	}
	return -1;
}

/* Parse a note area; records NT_GNU_BUILD_ID. Returns 1 if found. */
static int parse_notes(struct elf_file *e, const uint8_t *p, size_t len, uint64_t align)
{
	size_t off = 0;

	if (align != 8)
		align = 4;
	while (len - off >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr nh;
		size_t name_off, desc_off, namesz, descsz;

		memcpy(&nh, p + off, sizeof(nh));
		namesz = nh.n_namesz;
		descsz = nh.n_descsz;
		name_off = off + sizeof(nh);
		if (namesz > len - name_off)
			return 0;
		desc_off = name_off + ((namesz + align - 1) & ~(align - 1));
		if (desc_off > len || descsz > len - desc_off)
			return 0;
		if (nh.n_type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(p + name_off, "GNU", 4) &&
		    descsz > 0 && descsz <= sizeof(e->build_id)) {
			size_t i;

			memcpy(e->build_id, p + desc_off, descsz);
			e->build_id_len = descsz;
			for (i = 0; i < descsz; i++) {
				static const char hex[] = "0123456789abcdef";

				e->build_id_hex[2 * i] = hex[e->build_id[i] >> 4];
				e->build_id_hex[2 * i + 1] = hex[e->build_id[i] & 15];
			}
			e->build_id_hex[2 * descsz] = 0;
			return 1;
		}
		off = desc_off + ((descsz + align - 1) & ~(align - 1));
		if (off > len)
			return 0;
	}
	return 0;
}

static void read_note_area(struct elf_file *e, uint64_t off, uint64_t len, uint64_t align,
			   int *found)
{
	uint8_t *p;
	int rc;

	if (*found || len == 0 || len > ELF_MAX_NOTE_BYTES)
		return;
	p = read_alloc(e, off, len, ELF_MAX_NOTE_BYTES, &rc);
	if (!p)
		return;
	*found = parse_notes(e, p, (size_t)len, align);
	xfree(p);
}

static int read_phdrs(struct elf_file *e, size_t phnum, struct errmsg *err)
{
	size_t i, cap = 0;
	int found = 0;

	if (!phnum)
		return 0;
	if (e->eh.e_phentsize < sizeof(Elf64_Phdr) || phnum > ELF_MAX_SEGMENTS ||
	    !range_ok(e->eh.e_phoff, (uint64_t)phnum * e->eh.e_phentsize, e->size))
		return errmsg_set(err, -ENOEXEC, "bad program headers in '%s'", e->name);
	for (i = 0; i < phnum; i++) {
		Elf64_Phdr ph;
		struct elf_segment *s;

		if (elf_read(e, e->eh.e_phoff + i * e->eh.e_phentsize, &ph, sizeof(ph)) < 0)
			return errmsg_set(err, -EIO, "cannot read program headers of '%s'", e->name);
		if (ph.p_type == PT_NOTE)
			read_note_area(e, ph.p_offset, ph.p_filesz, ph.p_align, &found);
		if (ph.p_type != PT_LOAD)
			continue;
		ALLOC_GROW(e->segs, e->nsegs + 1, cap);
		s = &e->segs[e->nsegs++];
		s->vaddr = ph.p_vaddr;
		s->memsz = ph.p_memsz;
		s->offset = ph.p_offset;
		s->filesz = ph.p_filesz;
		s->flags = ph.p_flags;
	}
	return 0;
}

/* Section headers are optional for loading, so a file whose section headers are out of range
 * is kept with no sections (like sstrip'ed binaries) instead of rejected. */
static void read_shdrs(struct elf_file *e)
{
	Elf64_Shdr sh0;
	uint64_t shnum = e->eh.e_shnum;
	size_t shstrndx = e->eh.e_shstrndx;
	size_t i;
	int rc;

	if (!e->eh.e_shoff || e->eh.e_shentsize < sizeof(Elf64_Shdr))
		return;
	if (elf_read(e, e->eh.e_shoff, &sh0, sizeof(sh0)) < 0)
		return;
	if (shnum == 0)
		shnum = sh0.sh_size;
	if (shstrndx == SHN_XINDEX)
		shstrndx = sh0.sh_link;
	if (shnum == 0 || shnum > ELF_MAX_SECTIONS ||
	    !range_ok(e->eh.e_shoff, shnum * e->eh.e_shentsize, e->size))
		return;
	e->shdrs = try_malloc((size_t)shnum * sizeof(Elf64_Shdr));
	if (!e->shdrs)
		return;
	for (i = 0; i < shnum; i++) {
		if (elf_read(e, e->eh.e_shoff + i * e->eh.e_shentsize, &e->shdrs[i],
			     sizeof(Elf64_Shdr)) < 0) {
			xfree(e->shdrs);
			e->shdrs = NULL;
			return;
		}
	}
	e->nshdrs = (size_t)shnum;
	e->sec_data = xcalloc(e->nshdrs, sizeof(void *));
	e->sec_len = xcalloc(e->nshdrs, sizeof(size_t));
	if (shstrndx > 0 && shstrndx < e->nshdrs && e->shdrs[shstrndx].sh_type != SHT_NOBITS) {
		const Elf64_Shdr *s = &e->shdrs[shstrndx];

		e->shstrtab = read_alloc(e, s->sh_offset, s->sh_size, ELF_MAX_SHSTRTAB, &rc);
		if (e->shstrtab)
			e->shstrtab_len = (size_t)s->sh_size;
	}
}

/* .gnu_debuglink: a NUL-terminated file name, padding to 4 bytes, then the CRC32. */
static void read_debuglink(struct elf_file *e)
{
	int i = find_section(e, ".gnu_debuglink");
	const Elf64_Shdr *s;
	char *data;
	size_t n, crc_off;
	int rc;

	if (i < 0 || e->shdrs[i].sh_type == SHT_NOBITS || e->shdrs[i].sh_size > 4096)
		return;
	s = &e->shdrs[i];
	data = read_alloc(e, s->sh_offset, s->sh_size, 4096, &rc);
	if (!data)
		return;
	n = strnlen(data, (size_t)s->sh_size);
	crc_off = (n + 4) & ~(size_t)3;
	if (n > 0 && n < s->sh_size && crc_off + 4 <= s->sh_size && !memchr(data, '/', n)) {
		e->debuglink = xstrndup(data, n);
		memcpy(&e->debuglink_crc, data + crc_off, 4);
	}
	xfree(data);
}

static int elf_open_common(struct elf_file *e, struct elf_file **out, struct errmsg *err)
{
	size_t phnum;
	int rc;

	*out = NULL;
	if (e->size < sizeof(Elf64_Ehdr)) {
		rc = errmsg_set(err, -ENOEXEC, "'%s' is too small for an ELF file", e->name);
		goto fail;
	}
	rc = elf_read(e, 0, &e->eh, sizeof(e->eh));
	if (rc < 0) {
		errmsg_set(err, rc, "cannot read ELF header of '%s'", e->name);
		goto fail;
	}
	if (memcmp(e->eh.e_ident, ELFMAG, SELFMAG)) {
		rc = errmsg_set(err, -ENOEXEC, "'%s' is not an ELF file", e->name);
		goto fail;
	}
	if (e->eh.e_ident[EI_CLASS] != ELFCLASS64 || e->eh.e_ident[EI_DATA] != ELFDATA2LSB) {
		rc = errmsg_set(err, -ENOEXEC, "'%s' is not a 64-bit little-endian ELF file", e->name);
		goto fail;
	}
	read_shdrs(e);
	phnum = e->eh.e_phnum;
	if (phnum == PN_XNUM && e->nshdrs > 0)
		phnum = e->shdrs[0].sh_info;
	rc = read_phdrs(e, phnum, err);
	if (rc < 0)
		goto fail;
	if (!e->build_id_len) {
		int found = 0;
		size_t i;

		for (i = 1; i < e->nshdrs && !found; i++) {
			if (e->shdrs[i].sh_type == SHT_NOTE)
				read_note_area(e, e->shdrs[i].sh_offset, e->shdrs[i].sh_size,
					       e->shdrs[i].sh_addralign, &found);
		}
	}
	read_debuglink(e);
	*out = e;
	return 0;
fail:
	elf_close(e);
	return rc;
}

int elf_open_fd(int fd, const char *name, struct elf_file **out, struct errmsg *err)
{
	struct elf_file *e;
	struct stat st;

	*out = NULL;
	if (fstat(fd, &st) < 0) {
		int rc = -errno;

		close(fd);
		return errmsg_set(err, rc, "cannot stat '%s': %s", name ? name : "?", strerror(-rc));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return errmsg_set(err, -ENOEXEC, "'%s' is not a regular file", name ? name : "?");
	}
	e = xcalloc(1, sizeof(*e));
	e->fd = fd;
	e->size = (uint64_t)st.st_size;
	e->name = xstrdup(name ? name : "?");
	return elf_open_common(e, out, err);
}

int elf_open(const char *path, struct elf_file **out, struct errmsg *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	*out = NULL;
	if (fd < 0)
		return errmsg_set(err, -errno, "cannot open '%s': %s", path, strerror(errno));
	return elf_open_fd(fd, path, out, err);
}

int elf_open_mem(const void *data, size_t len, struct elf_file **out, struct errmsg *err)
{
	struct elf_file *e;

	*out = NULL;
	if (len > ELF_MAX_MEM_IMAGE)
		return errmsg_set(err, -E2BIG, "ELF image of %zu bytes is too large", len);
	e = xcalloc(1, sizeof(*e));
	e->fd = -1;
	e->mem = try_malloc(len);
	if (!e->mem) {
		xfree(e);
		return errmsg_set(err, -ENOMEM, "out of memory for an ELF image of %zu bytes", len);
	}
	memcpy(e->mem, data, len);
	e->size = len;
	e->name = xstrdup("<memory>");
	return elf_open_common(e, out, err);
}

void elf_close(struct elf_file *e)
{
	size_t i;

	if (!e)
		return;
	if (e->fd >= 0)
		close(e->fd);
	for (i = 0; i < e->nshdrs; i++)
		xfree(e->sec_data[i]);
	xfree(e->sec_data);
	xfree(e->sec_len);
	xfree(e->shdrs);
	xfree(e->shstrtab);
	xfree(e->segs);
	xfree(e->debuglink);
	xfree(e->syms);
	xfree(e->names);
	xfree(e->namebuf);
	xfree(e->mem);
	xfree(e->name);
	xfree(e);
}

void elf_detach_file(struct elf_file *e)
{
	/* names read on demand must not be lost with the descriptor */
	if ((e->fd >= 0 || e->mem) && e->syms)
		elf_symbols_hold_names(e);
	if (e->fd >= 0)
		close(e->fd);
	e->fd = -1;
	xfree(e->mem);
	e->mem = NULL;
}

int elf_fd(const struct elf_file *e)
{
	return e->fd;
}

uint16_t elf_type(const struct elf_file *e)
{
	return e->eh.e_type;
}

uint16_t elf_machine(const struct elf_file *e)
{
	return e->eh.e_machine;
}

uint64_t elf_entry(const struct elf_file *e)
{
	return e->eh.e_entry;
}

uint64_t elf_size(const struct elf_file *e)
{
	return e->size;
}

const char *elf_build_id(const struct elf_file *e)
{
	return e->build_id_len ? e->build_id_hex : NULL;
}

const uint8_t *elf_build_id_raw(const struct elf_file *e, size_t *len)
{
	*len = e->build_id_len;
	return e->build_id_len ? e->build_id : NULL;
}

size_t elf_section_count(const struct elf_file *e)
{
	return e->nshdrs;
}

int elf_section_info_at(const struct elf_file *e, size_t i, const char **name,
			struct elf_section_info *out)
{
	const Elf64_Shdr *s;

	if (i >= e->nshdrs)
		return -ENOENT;
	s = &e->shdrs[i];
	if (name)
		*name = section_name(e, s);
	out->addr = s->sh_addr;
	out->offset = s->sh_offset;
	out->size = s->sh_size;
	out->flags = s->sh_flags;
	out->type = s->sh_type;
	return 0;
}

int elf_section_info(const struct elf_file *e, const char *name, struct elf_section_info *out)
{
	int i = find_section(e, name);

	if (i < 0)
		return -ENOENT;
	return elf_section_info_at(e, (size_t)i, NULL, out);
}

/* Decompress a SHF_COMPRESSED section held in raw[0..len). */
static int decompress(const uint8_t *raw, size_t len, void **data, size_t *size)
{
	Elf64_Chdr ch;
	uint8_t *out;
	uint64_t max;

	if (len < sizeof(ch))
		return -EIO;
	memcpy(&ch, raw, sizeof(ch));
	max = (uint64_t)(len - sizeof(ch)) * ELF_MAX_COMPRESS_RATIO + 4096;
	if (ch.ch_size > ELF_MAX_SECTION_BYTES || ch.ch_size > max)
		return -E2BIG;
	out = try_malloc((size_t)ch.ch_size + 1);
	if (!out)
		return -ENOMEM;
	if (ch.ch_type == ELFCOMPRESS_ZLIB) {
		uLongf n = (uLongf)ch.ch_size;

		if (uncompress(out, &n, raw + sizeof(ch), (uLong)(len - sizeof(ch))) != Z_OK ||
		    n != ch.ch_size)
			goto bad;
	} else if (ch.ch_type == ELFCOMPRESS_ZSTD) {
		size_t n = ZSTD_decompress(out, (size_t)ch.ch_size, raw + sizeof(ch), len - sizeof(ch));

		if (ZSTD_isError(n) || n != ch.ch_size)
			goto bad;
	} else {
		goto bad;
	}
	out[ch.ch_size] = 0;
	*data = out;
	*size = (size_t)ch.ch_size;
	return 0;
bad:
	xfree(out);
	return -EIO;
}

int elf_section(struct elf_file *e, const char *name, const void **data, size_t *size,
		uint64_t *vaddr)
{
	int i = find_section(e, name);
	int rc;

	if (i < 0)
		return -ENOENT;
	rc = elf_section_at(e, (size_t)i, data, size);
	if (rc == 0 && vaddr)
		*vaddr = e->shdrs[i].sh_addr;
	return rc;
}

int elf_section_at(struct elf_file *e, size_t i, const void **data, size_t *size)
{
	const Elf64_Shdr *s;
	void *raw;
	int rc;

	if (i == 0 || i >= e->nshdrs || e->shdrs[i].sh_type == SHT_NOBITS)
		return -ENOENT;
	s = &e->shdrs[i];
	if (!e->sec_data[i]) {
		raw = read_alloc(e, s->sh_offset, s->sh_size, ELF_MAX_SECTION_BYTES, &rc);
		if (!raw)
			return rc;
		if (s->sh_flags & SHF_COMPRESSED) {
			void *plain = NULL;
			size_t n = 0;

			rc = decompress(raw, (size_t)s->sh_size, &plain, &n);
			xfree(raw);
			if (rc < 0)
				return rc;
			e->sec_data[i] = plain;
			e->sec_len[i] = n;
		} else {
			e->sec_data[i] = raw;
			e->sec_len[i] = (size_t)s->sh_size;
		}
	}
	*data = e->sec_data[i];
	*size = e->sec_len[i];
	return 0;
}

const char *elf_debuglink(const struct elf_file *e, uint32_t *crc)
{
	if (crc)
		*crc = e->debuglink_crc;
	return e->debuglink;
}

const struct elf_segment *elf_segments(const struct elf_file *e, size_t *count)
{
	*count = e->nsegs;
	return e->segs;
}

int elf_vaddr_of_offset(const struct elf_file *e, uint64_t off, uint64_t *vaddr)
{
	size_t i;

	for (i = 0; i < e->nsegs; i++) {
		const struct elf_segment *s = &e->segs[i];

		if (off >= s->offset && off - s->offset < s->filesz) {
			*vaddr = s->vaddr + (off - s->offset);
			return 0;
		}
	}
	/* A mapping starts at the page boundary below its segment's offset. */
	for (i = 0; i < e->nsegs; i++) {
		const struct elf_segment *s = &e->segs[i];

		if ((s->offset & ~0xfffULL) == off && s->offset >= off) {
			*vaddr = s->vaddr - (s->offset - off);
			return 0;
		}
	}
	return -ENOENT;
}

int elf_offset_of_vaddr(const struct elf_file *e, uint64_t vaddr, uint64_t *off)
{
	size_t i;

	for (i = 0; i < e->nsegs; i++) {
		const struct elf_segment *s = &e->segs[i];

		if (vaddr >= s->vaddr && vaddr - s->vaddr < s->filesz) {
			*off = s->offset + (vaddr - s->vaddr);
			return 0;
		}
	}
	return -ENOENT;
}

/* The bias that maps segment s at a mapping of start with file offset off. Offset and vaddr of
 * a segment agree modulo the page, so the page below p_vaddr is mapped from the page below
 * p_offset, and so on page by page. */
static uint64_t segment_bias(const struct elf_segment *s, uint64_t start, uint64_t off)
{
	const uint64_t mask = ~(uint64_t)(ELF_PAGE_SIZE - 1);

	return start - ((s->vaddr & mask) + (off - (s->offset & mask)));
}

int elf_segments_bias(const struct elf_segment *segs, size_t nsegs, const struct elf_mapping *m,
		      const uint64_t *hint, uint64_t *bias)
{
	const uint64_t page = ELF_PAGE_SIZE;
	uint64_t len = m->end > m->start ? m->end - m->start : 0;
	int best = -1, best_score = -1;
	size_t i;

	for (i = 0; i < nsegs; i++) {
		const struct elf_segment *s = &segs[i];
		uint64_t lo = s->offset & ~(page - 1), hi;
		int score = 0;

		if (!s->filesz || s->offset > UINT64_MAX - 2 * page ||
		    s->filesz > UINT64_MAX - 2 * page - s->offset)
			continue; /* nothing of it is mapped from the file (or a lying header) */
		hi = (s->offset + s->filesz + page - 1) & ~(page - 1);
		if (m->offset < lo || m->offset >= hi)
			continue;
		if (hint && segment_bias(s, m->start, m->offset) == *hint)
			score += 16;
		if (m->prot != ELF_MAP_ANY_PROT) {
			if (!(m->prot & PF_X) == !(s->flags & PF_X))
				score += 8;
			if (!(m->prot & PF_W) == !(s->flags & PF_W))
				score += 1;
		}
		if (m->offset == lo)
			score += 4;
		if (len <= hi - m->offset)
			score += 2;
		if (score > best_score) {
			best = (int)i;
			best_score = score;
		}
	}
	if (best < 0)
		return -ENOENT;
	*bias = segment_bias(&segs[best], m->start, m->offset);
	return 0;
}

int elf_mapping_bias(const struct elf_file *e, const struct elf_mapping *m, const uint64_t *hint,
		     uint64_t *bias)
{
	return elf_segments_bias(e->segs, e->nsegs, m, hint, bias);
}

uint64_t elf_load_bias(const struct elf_file *e, uint64_t map_start, uint64_t map_offset)
{
	struct elf_mapping m = { map_start, map_start, map_offset, ELF_MAP_ANY_PROT };
	uint64_t bias;

	if (elf_mapping_bias(e, &m, NULL, &bias) == 0)
		return bias;
	return map_start - map_offset;
}

/* --- symbols
 *
 * Loading is bounded by what is kept, not by what the file holds: a symbol table is read in
 * blocks, each candidate becomes a 32-byte record that refers to its name in the file (no
 * copy), and the records are sorted and the aliases dropped. The names stay in the file:
 * elf_symbol_name() reads the one asked for (a symbolizer asks once per function it meets, a
 * large C++ binary holds 8 MB of names of which a profile needs a few hundred). Before the
 * descriptor goes (elf_detach_file()), the kept names are copied, one string table at a time,
 * into a pool of the exact size. Loading holds one string table, the records and the result
 * at once. */

#define SYM_READ_BLOCK 1024 /* symbols read from a table at once (24 KiB) */

struct sym_tmp {
	uint64_t addr;
	uint64_t size;
	uint32_t name;    /* st_name: offset in its table's strings; later, in the packed pool */
	uint32_t rank;    /* lower is a better name for an address */
	uint16_t shndx;   /* its section, which bounds an inferred size */
	uint8_t type, bind;
	uint8_t table;    /* which symbol table (index in tabs[] of elf_symbols_load) */
};

static uint32_t sym_rank(const Elf64_Sym *sym, const char *name, size_t len)
{
	uint32_t r = 0, us = 0;

	if (ELF64_ST_TYPE(sym->st_info) == STT_OBJECT)
		r += 1u << 28;
	if (sym->st_size == 0)
		r += 1u << 27;
	if (ELF64_ST_BIND(sym->st_info) == STB_WEAK)
		r += 1u << 24;
	else if (ELF64_ST_BIND(sym->st_info) != STB_GLOBAL)
		r += 2u << 24;
	while (us < len && name[us] == '_' && us < 15)
		us++;
	r += us << 20;
	r += len < 0xfffff ? (uint32_t)len : 0xfffff;
	return r;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct sym_tmp *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return 0;
}

/* The string table of symbol table section idx: 0 and its section index, or -EINVAL. */
static int symtab_strings(const struct elf_file *e, size_t idx, size_t *stridx)
{
	const Elf64_Shdr *s = &e->shdrs[idx];

	if (s->sh_entsize && s->sh_entsize != sizeof(Elf64_Sym))
		return -EINVAL;
	if (s->sh_link == 0 || s->sh_link >= e->nshdrs)
		return -EINVAL;
	if (e->shdrs[s->sh_link].sh_type != SHT_STRTAB)
		return -EINVAL;
	*stridx = s->sh_link;
	return 0;
}

/* A string table section in memory (freed by the caller), NUL-terminated past its end. */
static char *read_strings(struct elf_file *e, size_t stridx, size_t *len, int *rc)
{
	const Elf64_Shdr *str = &e->shdrs[stridx];
	char *p = read_alloc(e, str->sh_offset, str->sh_size, ELF_MAX_SECTION_BYTES, rc);

	if (p)
		*len = (size_t)str->sh_size;
	return p;
}

static int keep_symbol(const struct elf_file *e, const Elf64_Sym *sym)
{
	int type = ELF64_ST_TYPE(sym->st_info);

	if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_OBJECT)
		return 0;
	if (sym->st_shndx == SHN_UNDEF || sym->st_value == 0 || sym->st_name == 0)
		return 0;
	if (sym->st_shndx >= SHN_LORESERVE && sym->st_shndx != SHN_ABS)
		return 0;
	return 1;
}

/* Add the candidates of symbol table section idx (table number tab) to *tmp. */
static int collect_symbols(struct elf_file *e, size_t idx, uint8_t tab, struct sym_tmp **tmp,
			   size_t *n, size_t *cap)
{
	const Elf64_Shdr *s = &e->shdrs[idx];
	Elf64_Sym *block = NULL;
	char *strs;
	size_t stridx, strs_len, nsyms, at, i;
	int rc;

	if (symtab_strings(e, idx, &stridx))
		return 0; /* a malformed table is ignored, not fatal */
	if (s->sh_size > ELF_MAX_SECTION_BYTES)
		return -E2BIG;
	if (!range_ok(s->sh_offset, s->sh_size, e->size))
		return -EIO;
	strs = read_strings(e, stridx, &strs_len, &rc);
	if (!strs)
		return rc == -EINVAL ? 0 : rc;
	block = try_malloc(SYM_READ_BLOCK * sizeof(*block));
	if (!block) {
		rc = -ENOMEM;
		goto cleanup;
	}
	nsyms = (size_t)(s->sh_size / sizeof(Elf64_Sym));
	rc = 0;
	for (at = 0; at < nsyms && *n < ELF_MAX_SYMBOLS; at += SYM_READ_BLOCK) {
		size_t nb = nsyms - at < SYM_READ_BLOCK ? nsyms - at : SYM_READ_BLOCK;

		rc = elf_read(e, s->sh_offset + at * sizeof(Elf64_Sym), block, nb * sizeof(*block));
		if (rc < 0)
			goto cleanup;
		for (i = 0; i < nb; i++) {
			const Elf64_Sym *sym = &block[i];
			const char *name;
			struct sym_tmp *t;
			size_t len;

			if (!keep_symbol(e, sym) || sym->st_name >= strs_len)
				continue;
			name = strs + sym->st_name;
			/* "memcpy@@GLIBC_2.14" in a .symtab: the version is not part of the name */
			len = strcspn(name, "@");
			if (len == 0 || len > ELF_MAX_NAME_LEN)
				continue;
			if (*n >= ELF_MAX_SYMBOLS)
				break;
			if (*n >= *cap) {
				/* large vectors come from mmap: growing them copies nothing and
				 * their unused tail costs no memory */
				size_t ncap = *cap ? *cap * 2 : 256;
				struct sym_tmp *q = try_realloc(*tmp, ncap * sizeof(**tmp));

				if (!q) {
					rc = -ENOMEM;
					goto cleanup;
				}
				*tmp = q;
				*cap = ncap;
			}
			t = &(*tmp)[(*n)++];
			t->addr = sym->st_value;
			t->size = sym->st_size;
			t->name = sym->st_name;
			t->rank = sym_rank(sym, name, len);
			t->shndx = sym->st_shndx;
			t->type = ELF64_ST_TYPE(sym->st_info);
			t->bind = ELF64_ST_BIND(sym->st_info);
			t->table = tab;
		}
	}
	rc = 0;
cleanup:
	xfree(block);
	xfree(strs);
	return rc;
}

/* Sort, drop aliases (keep the best-ranked name per address) and infer missing sizes; the
 * names stay in the file (tabs[t]: the symbol table section of table number t). */
static int finish_symbols(struct elf_file *e, struct sym_tmp *tmp, size_t n,
			  const size_t *tabs, size_t ntabs)
{
	size_t i, out = 0;

	if (n)
		qsort(tmp, n, sizeof(*tmp), sym_cmp);
	for (i = 0; i < n; i++) {
		if (out && tmp[out - 1].addr == tmp[i].addr) {
			if (!tmp[out - 1].size)
				tmp[out - 1].size = tmp[i].size;
			continue;
		}
		tmp[out++] = tmp[i];
	}
	for (i = 0; i < ntabs; i++) {
		size_t stridx;

		if (symtab_strings(e, tabs[i], &stridx))
			return -EIO; /* it was valid when collected */
		e->name_tabs[i] = (uint32_t)stridx;
	}
	e->nname_tabs = ntabs;
	e->syms = try_malloc((out ? out : 1) * sizeof(*e->syms));
	if (!e->syms)
		return -ENOMEM;
	for (i = 0; i < out; i++) {
		struct elf_symbol *s = &e->syms[i];

		memset(s, 0, sizeof(*s));
		s->addr = tmp[i].addr;
		s->size = tmp[i].size;
		s->name = tmp[i].name;
		s->table = tmp[i].table;
		s->type = tmp[i].type;
		s->bind = tmp[i].bind;
		if (!s->size) {
			uint64_t end = i + 1 < out ? tmp[i + 1].addr : UINT64_MAX;

			if (tmp[i].shndx < e->nshdrs) {
				const Elf64_Shdr *sh = &e->shdrs[tmp[i].shndx];

				if (sh->sh_addr <= s->addr && sh->sh_size <= UINT64_MAX - sh->sh_addr &&
				    sh->sh_addr + sh->sh_size < end)
					end = sh->sh_addr + sh->sh_size;
			}
			if (end == UINT64_MAX || end <= s->addr)
				end = s->addr + 1;
			s->size = end - s->addr;
			s->inferred = 1;
		}
	}
	e->nsyms = out;
	e->names = NULL;
	e->names_len = 0;
	return 0;
}

/* The length of the name at off in a string table of len bytes (up to '@' or its end), or
 * -1 when it does not end inside the table. */
static ssize_t name_len(const char *strs, size_t len, uint32_t off)
{
	const char *end;

	if (off >= len)
		return -1;
	end = memchr(strs + off, 0, len - off);
	if (!end)
		return -1;
	return (ssize_t)strcspn(strs + off, "@");
}

int elf_symbols_hold_names(struct elf_file *e)
{
	size_t i, t, total = 0, at;
	char *pool = NULL;
	int rc = 0;

	if (!e->syms || e->names)
		return 0;
	/* two passes over the string tables: the sizes, then the copy into a pool of that size */
	for (t = 0; t < e->nname_tabs; t++) {
		size_t strs_len;
		char *strs = read_strings(e, e->name_tabs[t], &strs_len, &rc);

		if (!strs)
			goto fail;
		for (i = 0; i < e->nsyms; i++) {
			ssize_t len;

			if (e->syms[i].table != t)
				continue;
			len = name_len(strs, strs_len, e->syms[i].name);
			total += (len > 0 ? (size_t)len : 0) + 1;
		}
		xfree(strs);
	}
	if (total > ELF_MAX_NAME_POOL) {
		rc = -E2BIG;
		goto fail;
	}
	pool = try_malloc(total ? total : 1);
	if (!pool) {
		rc = -ENOMEM;
		goto fail;
	}
	at = 0;
	for (t = 0; t < e->nname_tabs; t++) {
		size_t strs_len;
		char *strs = read_strings(e, e->name_tabs[t], &strs_len, &rc);

		if (!strs)
			goto fail;
		for (i = 0; i < e->nsyms; i++) {
			ssize_t len;

			if (e->syms[i].table != t)
				continue;
			len = name_len(strs, strs_len, e->syms[i].name);
			if (len < 0)
				len = 0;
			if (at + (size_t)len + 1 > total) { /* the file changed between the passes */
				xfree(strs);
				rc = -EIO;
				goto fail;
			}
			memcpy(pool + at, strs + e->syms[i].name, (size_t)len);
			pool[at + (size_t)len] = 0;
			e->syms[i].name = (uint32_t)at;
			at += (size_t)len + 1;
		}
		xfree(strs);
	}
	e->names = pool;
	e->names_len = at;
	xfree(e->namebuf);
	e->namebuf = NULL;
	e->namebuf_cap = 0;
	return 0;
fail:
	/* names half moved cannot be told apart: every name reads as "" from now on */
	xfree(pool);
	e->names = xstrdup("");
	e->names_len = 1;
	for (i = 0; i < e->nsyms; i++)
		e->syms[i].name = 0;
	return rc;
}

int elf_symbols_load(struct elf_file *e, struct errmsg *err)
{
	struct sym_tmp *tmp = NULL;
	size_t n = 0, cap = 0, i, tabs[SYM_MAX_TABLES], ntabs = 0;
	int rc = 0;

	if (e->syms_loaded)
		return e->syms_loaded < 0 ? e->syms_loaded : 0;
	for (i = 1; i < e->nshdrs && rc == 0 && ntabs < SYM_MAX_TABLES; i++) {
		if (e->shdrs[i].sh_type == SHT_SYMTAB || e->shdrs[i].sh_type == SHT_DYNSYM) {
			size_t before = n;

			rc = collect_symbols(e, i, (uint8_t)ntabs, &tmp, &n, &cap);
			if (n > before)
				tabs[ntabs++] = i;
		}
	}
	if (rc == 0)
		rc = finish_symbols(e, tmp, n, tabs, ntabs);
	xfree(tmp);
	e->syms_loaded = rc < 0 ? rc : 1;
	if (rc < 0)
		return errmsg_set(err, rc, "cannot read symbols of '%s': %s", e->name, strerror(-rc));
	return 0;
}

size_t elf_symbols_bytes(const struct elf_file *e)
{
	return e->syms ? e->nsyms * sizeof(*e->syms) + e->names_len + e->namebuf_cap : 0;
}

void elf_symbols_release(struct elf_file *e)
{
	xfree(e->syms);
	xfree(e->names);
	xfree(e->namebuf);
	e->syms = NULL;
	e->names = NULL;
	e->namebuf = NULL;
	e->nsyms = 0;
	e->names_len = 0;
	e->namebuf_cap = 0;
	e->nname_tabs = 0;
	e->syms_loaded = 0;
}

int elf_has_symtab(const struct elf_file *e)
{
	size_t i;

	for (i = 1; i < e->nshdrs; i++) {
		if (e->shdrs[i].sh_type == SHT_SYMTAB)
			return 1;
	}
	return 0;
}

const struct elf_symbol *elf_symbols(const struct elf_file *e, size_t *count)
{
	*count = e->nsyms;
	return e->syms;
}

/* Read the name at off of string table section stridx into e->namebuf, in growing reads
 * until its NUL (at most ELF_MAX_NAME_LEN bytes). */
static const char *read_name(struct elf_file *e, size_t stridx, uint32_t off)
{
	const Elf64_Shdr *str = &e->shdrs[stridx];
	size_t have = 0, want = 128;

	if (off >= str->sh_size)
		return "";
	for (;;) {
		size_t avail = (size_t)(str->sh_size - off), n;
		char *nul;

		if (want > ELF_MAX_NAME_LEN + 1)
			want = ELF_MAX_NAME_LEN + 1;
		if (want > avail)
			want = avail;
		if (want + 1 > e->namebuf_cap) {
			char *q = try_realloc(e->namebuf, want + 1);

			if (!q)
				return "";
			e->namebuf = q;
			e->namebuf_cap = want + 1;
		}
		n = want - have;
		if (!n || elf_read(e, str->sh_offset + off + have, e->namebuf + have, n) < 0)
			return "";
		nul = memchr(e->namebuf + have, 0, n);
		have = want;
		if (nul)
			break;
		if (have == avail || have > ELF_MAX_NAME_LEN)
			return ""; /* runs past its table, or longer than any name kept */
		want *= 4;
	}
	e->namebuf[strcspn(e->namebuf, "@")] = 0;
	return e->namebuf;
}

const char *elf_symbol_name(struct elf_file *e, const struct elf_symbol *s)
{
	if (e->names)
		return s->name < e->names_len ? e->names + s->name : "";
	if (s->table >= e->nname_tabs)
		return "";
	return read_name(e, e->name_tabs[s->table], s->name);
}

const struct elf_symbol *elf_symbol_lookup(struct elf_file *e, uint64_t addr)
{
	size_t lo = 0, hi, i, steps;

	if (!e->syms_loaded)
		elf_symbols_load(e, NULL);
	hi = e->nsyms;
	/* Find the last symbol with s.addr <= addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (e->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* An enclosing symbol may start before a smaller one that ends before addr; look back a
	 * bounded number of entries. */
	for (i = lo, steps = 0; i > 0 && steps < 16; i--, steps++) {
		const struct elf_symbol *s = &e->syms[i - 1];

		if (addr - s->addr < s->size)
			return s;
	}
	return NULL;
}

int elf_find_symbol(struct elf_file *e, const char *name, uint64_t *value, uint64_t *size)
{
	Elf64_Sym *block = try_malloc(SYM_READ_BLOCK * sizeof(*block));
	int pass, found = 0;

	if (!block)
		return -ENOMEM;
	for (pass = 0; pass < 2 && !found; pass++) {
		size_t i;

		for (i = 1; i < e->nshdrs && !found; i++) {
			const Elf64_Shdr *s = &e->shdrs[i];
			size_t stridx, strs_len, nsyms, at, j;
			char *strs;
			int rc;

			if (s->sh_type != (pass == 0 ? SHT_SYMTAB : SHT_DYNSYM))
				continue;
			if (symtab_strings(e, i, &stridx) || s->sh_size > ELF_MAX_SECTION_BYTES ||
			    !range_ok(s->sh_offset, s->sh_size, e->size))
				continue;
			strs = read_strings(e, stridx, &strs_len, &rc);
			if (!strs)
				continue;
			nsyms = (size_t)(s->sh_size / sizeof(Elf64_Sym));
			for (at = 0; at < nsyms && !found; at += SYM_READ_BLOCK) {
				size_t nb = nsyms - at < SYM_READ_BLOCK ? nsyms - at : SYM_READ_BLOCK;

				if (elf_read(e, s->sh_offset + at * sizeof(Elf64_Sym), block,
					     nb * sizeof(*block)) < 0)
					break;
				for (j = 0; j < nb; j++) {
					if (block[j].st_shndx == SHN_UNDEF ||
					    block[j].st_name >= strs_len ||
					    strcmp(strs + block[j].st_name, name))
						continue;
					*value = block[j].st_value;
					if (size)
						*size = block[j].st_size;
					found = 1;
					break;
				}
			}
			xfree(strs);
		}
	}
	xfree(block);
	return found ? 0 : -ENOENT;
}

/* --- identity and debug files */

int elf_file_id(struct elf_file *e, uint64_t *id)
{
	uint8_t buf[4096];
	size_t n = e->size < sizeof(buf) ? (size_t)e->size : sizeof(buf);
	uint64_t h = hash_u64(e->size ^ 0x5c0dc0de);
	int rc;

	rc = elf_read(e, 0, buf, n);
	if (rc < 0)
		return rc;
	h = hash_bytes(buf, n, h);
	rc = elf_read(e, e->size - n, buf, n);
	if (rc < 0)
		return rc;
	h = hash_bytes(buf, n, h);
	*id = h ? h : 1;
	return 0;
}

int elf_crc32_file(int fd, uint32_t *crc)
{
	uint8_t *buf = xmalloc(1 << 16);
	uLong c = crc32(0, NULL, 0);
	off_t off = 0;
	int rc = 0;

	for (;;) {
		ssize_t n = pread(fd, buf, 1 << 16, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			break;
		}
		if (n == 0)
			break;
		c = crc32(c, buf, (uInt)n);
		off += n;
		if ((uint64_t)off > ELF_MAX_DEBUG_FILE) {
			rc = -E2BIG;
			break;
		}
	}
	xfree(buf);
	*crc = (uint32_t)c;
	return rc;
}

static int try_debug_candidate(const struct elf_file *e, const char *path, int check_crc,
			       uint32_t crc, struct elf_file **out)
{
	struct elf_file *d;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	uint32_t c;
	int rc;

	if (fd < 0)
		return -ENOENT;
	/* Candidates may sit in a container's tree and be links to anything (/dev/zero,
	 * /proc/kcore): only reasonably sized regular files are read in full. */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > ELF_MAX_DEBUG_FILE) {
		close(fd);
		return -ENOENT;
	}
	if (check_crc && (elf_crc32_file(fd, &c) < 0 || c != crc)) {
		close(fd);
		return -ENOENT;
	}
	rc = elf_open_fd(fd, path, &d, NULL);
	if (rc < 0)
		return -ENOENT;
	if (e->build_id_len && d->build_id_len &&
	    (e->build_id_len != d->build_id_len || memcmp(e->build_id, d->build_id, e->build_id_len))) {
		elf_close(d);
		return -ENOENT;
	}
	if (!check_crc && (!d->build_id_len || d->build_id_len != e->build_id_len)) {
		elf_close(d);
		return -ENOENT;
	}
	*out = d;
	return 0;
}

int elf_open_debug_file(const struct elf_file *e, const char *path, const char *root,
			const char *debug_dir, struct elf_file **out)
{
	char cand[PATH_MAX], dir[PATH_MAX];
	const char *link, *slash;
	uint32_t crc = 0;
	int n;

	*out = NULL;
	if (!root)
		root = "";
	if (!debug_dir)
		debug_dir = "/usr/lib/debug";
	if (e->build_id_len >= 2) {
		n = snprintf(cand, sizeof(cand), "%s%s/.build-id/%.2s/%s.debug", root, debug_dir,
			     e->build_id_hex, e->build_id_hex + 2);
		if (n > 0 && (size_t)n < sizeof(cand) && try_debug_candidate(e, cand, 0, 0, out) == 0)
			return 0;
	}
	link = elf_debuglink(e, &crc);
	if (!link || !path || !(slash = strrchr(path, '/')))
		return -ENOENT;
	n = snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (n < 0 || (size_t)n >= sizeof(dir))
		return -ENOENT;
	/* A debuglink naming the file itself would just reopen it. */
	if (strcmp(slash + 1, link)) {
		n = snprintf(cand, sizeof(cand), "%s%s/%s", root, dir, link);
		if (n > 0 && (size_t)n < sizeof(cand) && try_debug_candidate(e, cand, 1, crc, out) == 0)
			return 0;
	}
	n = snprintf(cand, sizeof(cand), "%s%s/.debug/%s", root, dir, link);
	if (n > 0 && (size_t)n < sizeof(cand) && try_debug_candidate(e, cand, 1, crc, out) == 0)
		return 0;
	n = snprintf(cand, sizeof(cand), "%s%s%s/%s", root, debug_dir, dir, link);
	if (n > 0 && (size_t)n < sizeof(cand) && try_debug_candidate(e, cand, 1, crc, out) == 0)
		return 0;
	return -ENOENT;
}
