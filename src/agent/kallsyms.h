/* kallsyms.h: kernel symbols from /proc/kallsyms, for symbolizing kernel stack addresses.
 *
 * Only text symbols (types T, t, W, w) are kept, sorted by address, one name per address (a
 * global, non-underscored name is preferred among aliases). Module symbols keep their module
 * name ("[ext4]"). A symbol covers the addresses up to the next symbol, but not further than
 * KALLSYMS_MAX_SIZE (so the gaps between kernel text, modules and BPF programs stay unknown).
 *
 * When the kernel hides addresses (kernel.kptr_restrict, or not root) every address reads as
 * 0: loading then fails with -EPERM and a message that says so.
 *
 * Ownership: struct kallsyms owns all names; kallsyms_free() releases them. */
#ifndef SCORCH_AGENT_KALLSYMS_H
#define SCORCH_AGENT_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

struct errmsg;
struct kallsyms;

#define KALLSYMS_MAX_BYTES (256u << 20) /* of text */
#define KALLSYMS_MAX_SIZE (256u << 10)  /* bytes covered by one symbol at most */

/* Read path (NULL: /proc/kallsyms). -EPERM when addresses are hidden, -ENOENT when there are
 * no text symbols. */
int kallsyms_load(const char *path, struct kallsyms **out, struct errmsg *err);
/* Parse kallsyms text (need not be NUL-terminated); same errors. */
int kallsyms_parse(const char *text, size_t len, struct kallsyms **out, struct errmsg *err);
void kallsyms_free(struct kallsyms *k); /* NULL ok */

/* The name of the symbol covering addr, or NULL. sym_addr (may be NULL) receives the symbol's
 * start, module (may be NULL) the module name without brackets or NULL for the core kernel. */
const char *kallsyms_lookup(const struct kallsyms *k, uint64_t addr, uint64_t *sym_addr,
			    const char **module);
/* Address of a symbol by exact name (linear; for tests and rare lookups): 0 or -ENOENT. */
int kallsyms_find(const struct kallsyms *k, const char *name, uint64_t *addr);
size_t kallsyms_count(const struct kallsyms *k);

#endif
