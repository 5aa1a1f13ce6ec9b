/* name_cache.h: the cache of names that interpreters' frames point to, read from a process's
 * memory and kept by identity. Python's code objects, Ruby's iseqs and method entries, Perl's
 * subs and statements and PHP's functions are kept here; each runtime brings its value type,
 * its reader and its identity check, and keeps its own API over this one.
 *
 * A key is (pid, address, tag, ident): tag tells apart what the runtime reads differently at
 * one address (Ruby: iseq or method entry; Perl: sub or statement; PHP: the call info bits that
 * name file-level code), ident is what the sample saw of the object's identity (a checksum the
 * walker computed, a line's low byte). A lookup hits only an entry whose key is equal in every
 * field: two keys with the same hash never give each other's value (a wrong name is worse than
 * none). On a miss the value is read through the caller's reader, checked against the key with
 * ops.same (the address may hold another object now: that is a miss, counted in
 * checksum_mismatches, and the value read is released), and stored:
 *   - in place of the entry whose key has the same hash (the same key put again, or a
 *     collision), releasing the value there;
 *   - else as a new entry, after dropping every entry when max_entries are held.
 * With the default hash (every key field), an address reused by another object (a new ident)
 * gets an entry of its own next to the old one, whose samples may still wait for their names.
 * A runtime that wants one entry per address replaces the hash by one that leaves ident out;
 * a lookup that finds there an entry of the same (pid, address, tag) with another ident counts
 * a checksum mismatch before it reads.
 *
 * Entries stay after their process exits (its last samples still need them) until
 * name_cache_forget_pid() or eviction.
 *
 * Ownership: the cache owns its values from the moment a read succeeds or name_cache_put() is
 * called; ops.release frees what a value holds (called exactly once per value: on eviction,
 * replacement, forget_pid, free, or when the value read fails ops.same). A value returned is
 * valid until the next name_cache_get() / name_cache_put() (which may evict or grow the entry
 * array), name_cache_forget_pid() or name_cache_free(). Not thread-safe. */
#ifndef SCORCH_RUNTIME_NAME_CACHE_H
#define SCORCH_RUNTIME_NAME_CACHE_H

#include <stddef.h>
#include <stdint.h>

struct name_cache_key {
	uint32_t pid;
	uint32_t tag;    /* the runtime's kind of entry (0 when it has one) */
	uint64_t addr;
	uint64_t ident;  /* the identity the sample saw (checksum, line byte, ...) */
};

struct name_cache_ops {
	size_t value_size;   /* bytes of one value (a runtime's struct) */
	/* Frees what value holds (not value itself). key: the entry's key. NULL: nothing. */
	void (*release)(const struct name_cache_key *key, void *value);
	/* 1 when value, just read for key, is the object the key names (its identity matches),
	 * 0 when the address holds another object now. NULL: every value read is. */
	int (*same)(const struct name_cache_key *key, const void *value);
	/* The index's hash of a key. NULL: name_cache_hash(). */
	uint64_t (*hash)(const struct name_cache_key *key);
};

/* Reads the object of key from its process into value (value_size bytes, zeroed). 0, or a
 * negative errno, with nothing left in value to release. */
typedef int (*name_cache_read_fn)(void *arg, const struct name_cache_key *key, void *value);

struct name_cache_stats {
	uint64_t lookups, hits, reads, read_errors, checksum_mismatches, evictions;
	uint64_t puts;   /* entries stored by name_cache_put() */
	size_t entries;
};

struct name_cache;

/* A cache of at most max_entries values (0: 65536); ops is copied. Free with
 * name_cache_free() (NULL ok). */
struct name_cache *name_cache_new(const struct name_cache_ops *ops, size_t max_entries);
void name_cache_free(struct name_cache *c);

/* The value of key: cached, or read through reader(arg, ...) and cached. reader NULL: cached
 * entries only (the process is gone). NULL when it cannot be had: not cached and no reader,
 * a read error, or what is at the address now is not the key's object. */
const void *name_cache_get(struct name_cache *c, const struct name_cache_key *key,
			   name_cache_read_fn reader, void *arg);
/* Stores value (value_size bytes, taken over and zeroed) as the entry of key, replacing the
 * entry of the same hash. Counted in puts, not in lookups. Returns the stored value. */
const void *name_cache_put(struct name_cache *c, const struct name_cache_key *key, void *value);
/* Drop every entry of pid (e.g. when the pid is reused by a new process). */
void name_cache_forget_pid(struct name_cache *c, uint32_t pid);
void name_cache_stats(const struct name_cache *c, struct name_cache_stats *st);

/* The default hash: every field of the key. Never 0 or ~0. */
uint64_t name_cache_hash(const struct name_cache_key *key);

#endif
