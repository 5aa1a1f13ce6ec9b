/* tls.c: thread-local variables and pthread keys of another process (tls.h). */
#include "runtime/tls.h"
#include "agent/elf.h"
#include "agent/procmaps.h"
#include "lib/log.h"
#include "runtime/code.h"
#include "runtime/procmem.h"

#include <elf.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

/* The symbol table index and value of TLS symbol name in one table, or -ENOENT. */
static int find_in_table(struct elf_file *e, const char *symtab, const char *strtab,
			 const char *name, size_t *index, uint64_t *value)
{
	const Elf64_Sym *syms;
	const char *strs;
	size_t nbytes, slen, i, n, len = strlen(name);

	if (elf_section(e, symtab, (const void **)&syms, &nbytes, NULL) < 0 ||
	    elf_section(e, strtab, (const void **)&strs, &slen, NULL) < 0)
		return -ENOENT;
	n = nbytes / sizeof(Elf64_Sym);
	for (i = 1; i < n; i++) {
		const Elf64_Sym *s = &syms[i];

		if (ELF64_ST_TYPE(s->st_info) != STT_TLS || s->st_shndx == SHN_UNDEF ||
		    s->st_name >= slen || slen - s->st_name <= len)
			continue;
		if (memcmp(strs + s->st_name, name, len + 1))
			continue;
		*index = i;
		*value = s->st_value;
		return 0;
	}
	return -ENOENT;
}

int tls_symbol_find(struct elf_file *e, const char *name, struct tls_symbol *out)
{
	const Elf64_Rela *rela;
	size_t idx, nbytes, i;

	memset(out, 0, sizeof(*out));
	if (find_in_table(e, ".dynsym", ".dynstr", name, &idx, &out->value) < 0)
		return -ENOENT; /* a static binary reaches it local-exec: not supported */
	if (elf_section(e, ".rela.dyn", (const void **)&rela, &nbytes, NULL) < 0)
		return -ENOENT;
	for (i = 0; i < nbytes / sizeof(Elf64_Rela); i++) {
		if (ELF64_R_SYM(rela[i].r_info) != idx)
			continue;
		if (ELF64_R_TYPE(rela[i].r_info) == R_X86_64_DTPMOD64 && !out->got_module)
			out->got_module = rela[i].r_offset;
		else if (ELF64_R_TYPE(rela[i].r_info) == R_X86_64_TPOFF64 && !out->got_tpoff)
			out->got_tpoff = rela[i].r_offset;
	}
	return out->got_module || out->got_tpoff ? 0 : -ENOENT;
}

int tls_resolve(struct procmem *m, const struct tls_symbol *s, uint64_t bias, struct rt_tls *out)
{
	uint64_t v;

	memset(out, 0, sizeof(*out));
	if (s->got_tpoff) {
		if (procmem_u64(m, s->got_tpoff + bias, &v) < 0)
			return -EFAULT;
		/* variant II: the block is below the thread pointer; 0 is the unrelocated slot */
		if (v == 0 || (int64_t)v >= 0 || (int64_t)v < -(1LL << 32))
			return -EAGAIN;
		out->mode = RT_TLS_TPOFF;
		out->tpoff = (int64_t)v;
		return 0;
	}
	if (procmem_u64(m, s->got_module + bias, &v) < 0)
		return -EFAULT;
	if (v == 0 || v > 4096)
		return -EAGAIN;
	out->mode = RT_TLS_DTV;
	out->dtv_offset = 8;  /* tcbhead_t.dtv (glibc x86-64) */
	out->dtv_stride = 16; /* dtv_t: { void *val; void *to_free; } */
	out->module = v;
	out->offset = s->value;
	return 0;
}

/* glibc's pthread_getspecific, x86-64 (2.26 - 2.40):
 *   cmp $0x1f,%edi              83 ff 1f                       keys below 32 are direct
 *   ...
 *   add $0x31,%rax              48 83 c0 31   (or 48 05 imm32)  key + index of the array
 *   shl $0x4,%rax               48 c1 e0 04                    * entry size
 *   add %fs:0x10,%rax           64 48 03 04 25 10 00 00 00     + THREAD_SELF (== fs base)
 *   mov 0x8(%rax),%rdx          48 8b 50 08                    .data of the entry */
int tls_tsd_decode(struct elf_file *libc, struct rt_tsd *out)
{
	static const uint8_t self[] = { 0x64, 0x48, 0x03, 0x04, 0x25, 0x10, 0x00, 0x00, 0x00 };
	uint8_t code[96];
	uint64_t addr, size, add = 0, shift = 0;
	size_t i;
	int have_add = 0, have_shl = 0, have_self = 0;

	memset(out, 0, sizeof(*out));
	if (elf_symbols_load(libc, NULL) < 0)
		return -EIO;
	if (elf_find_symbol(libc, "pthread_getspecific", &addr, &size) < 0 &&
	    elf_find_symbol(libc, "__pthread_getspecific", &addr, &size) < 0)
		return -ENOENT;
	if (code_read(libc, addr, code, sizeof(code)) < 0)
		return -EIO;
	out->direct = 32;
	for (i = 0; i + 9 <= sizeof(code); i++) {
		if (code[i] == 0x83 && code[i + 1] == 0xff && i < 16)
			out->direct = (uint32_t)code[i + 2] + 1;
		if (!have_add && code[i] == 0x48 && code[i + 1] == 0x83 && code[i + 2] == 0xc0) {
			add = code[i + 3];
			have_add = 1;
		} else if (!have_add && code[i] == 0x48 && code[i + 1] == 0x05) {
			add = (uint32_t)code[i + 2] | (uint32_t)code[i + 3] << 8 |
			      (uint32_t)code[i + 4] << 16 | (uint32_t)code[i + 5] << 24;
			have_add = 1;
		} else if (have_add && !have_shl && code[i] == 0x48 && code[i + 1] == 0xc1 &&
			   code[i + 2] == 0xe0) {
			shift = code[i + 3];
			have_shl = 1;
		} else if (have_shl && !have_self && !memcmp(code + i, self, sizeof(self))) {
			have_self = 1;
		} else if (have_self && code[i] == 0x48 && code[i + 1] == 0x8b &&
			   (code[i + 2] & 0xc7) == 0x40) {
			/* mov disp8(%rax), reg */
			if (shift < 3 || shift > 6 || add > 1024)
				return -ENOENT;
			out->stride = 1u << shift;
			out->base = (uint32_t)(add << shift);
			out->data = code[i + 3];
			if (out->data >= out->stride || out->direct > 1024)
				return -ENOENT;
			return 0;
		}
	}
	return -ENOENT;
}

#define TSD_CACHE 16

static struct {
	uint64_t dev, ino;
	int rc;
	struct rt_tsd tsd;
} tsd_cache[TSD_CACHE];
static unsigned tsd_next;

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

int tls_tsd_of_process(int pid, const struct procmaps *maps, struct rt_tsd *out,
		       struct errmsg *err)
{
	const struct procmaps_entry *libc = NULL;
	struct elf_file *e = NULL;
	uint64_t dev;
	unsigned i;
	int fd, rc;

	for (i = 0; i < maps->n; i++)
		if (maps->v[i].kind == PROCMAPS_FILE &&
		    !strncmp(base_name(maps->v[i].path), "libc.so", 7)) {
			libc = &maps->v[i];
			break;
		}
	if (!libc)
		return errmsg_set(err, -ENOENT, "no libc.so mapped (a static or musl program)");
	dev = (uint64_t)libc->dev_major << 32 | libc->dev_minor;
	for (i = 0; i < TSD_CACHE; i++)
		if (tsd_cache[i].ino && tsd_cache[i].ino == libc->inode && tsd_cache[i].dev == dev)
			goto found;
	fd = procmaps_open(pid, libc, err);
	if (fd < 0)
		return fd;
	rc = elf_open_fd(fd, libc->path, &e, err);
	if (rc < 0)
		return rc;
	rc = tls_tsd_decode(e, out);
	elf_close(e);
	i = tsd_next++ % TSD_CACHE;
	tsd_cache[i].dev = dev;
	tsd_cache[i].ino = libc->inode;
	tsd_cache[i].rc = rc;
	tsd_cache[i].tsd = *out;
found:
	if (tsd_cache[i].rc < 0)
		return errmsg_set(err, -ENOENT,
				  "cannot tell where '%s' keeps pthread keys (pthread_getspecific is not the code we know)",
				  libc->path);
	*out = tsd_cache[i].tsd;
	return 0;
}
