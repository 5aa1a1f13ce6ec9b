/* strtab.h: a string interner. Each distinct string gets a dense uint32 id, in order of first
 * appearance; id 0 is always "". Strings are copied into the table, which owns them until
 * strtab_free(). Lookups by id are O(1); interning is O(length). */
#ifndef SCORCH_STRTAB_H
#define SCORCH_STRTAB_H

#include <stddef.h>
#include <stdint.h>

struct strtab;

struct strtab *strtab_new(void);
void strtab_free(struct strtab *t);
uint32_t strtab_intern(struct strtab *t, const char *s);
uint32_t strtab_intern_len(struct strtab *t, const char *s, size_t len);
/* Returns the id of s, or UINT32_MAX when s was never interned. */
uint32_t strtab_find(const struct strtab *t, const char *s, size_t len);
/* The string for id; "" for an unknown id. */
const char *strtab_get(const struct strtab *t, uint32_t id);
size_t strtab_len(const struct strtab *t, uint32_t id);
uint32_t strtab_count(const struct strtab *t);
/* Bytes held by the table (strings + index). */
size_t strtab_bytes(const struct strtab *t);

#endif
