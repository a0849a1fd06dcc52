/*
 * map.c -- string-keyed hash map (open addressing, linear probing, a word-at-a-time
 * multiplicative hash), kept in the arena.  Used for name lookup in both frontends;
 * parsing stays linear.
 *
 * The table holds 8-byte slots: 32 bits of the key's hash and the position of its
 * entry (key, value) in an array kept in insertion order, and is at most
 * three quarters full (linear probing's runs stay short with 8 slots to a cache
 * line).  A million names then need a 16 MiB table, and a probe that misses the
 * cache costs one line; a name looked up soon after it was added (an edge after its
 * node) finds its entry still in cache.
 */
#include "pgcc.h"

#include <string.h>

typedef struct {
  uint32_t tag;  /* the hash's high 32 bits */
  uint32_t item; /* 1 + the entry's position; 0: empty */
} Slot;

typedef struct { /* 16 bytes: a million names' entries are 16 MiB, not 24 (no length kept) */
  const char *key;
  void *val;
} Entry;

struct PgMap {
  PgArena *arena;
  Slot *slots;
  size_t cap;     /* a power of two */
  PG_VEC(Entry) entries;
};

static uint64_t hash(const char *s, size_t n) {
  /* eight bytes at a time, each word multiplied in and its high bits folded down: a
   * million-name table hashes tens of millions of keys, and FNV's multiply per byte
   * was a chain as long as the key */
  uint64_t h = 0xcbf29ce484222325ull ^ n, w;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    memcpy(&w, s + i, 8);
    h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
  }
  if (i < n) {
    w = 0;
    for (size_t k = 0; i + k < n; k++) w |= (uint64_t)(unsigned char)s[i + k] << (8 * k);
    h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
  }
  /* the high bits mixed down, as the table is indexed by the low ones (names that
   * differ in their last digits: "g1.n123", "g1.n124") */
  h ^= h >> 32;
  h *= 0xd6e8feb86659fd93ull;
  h ^= h >> 32;
  return h;
}

PgMap *pg_map_new(PgArena *a) {
  PgMap *m = pg_arena_alloc(a, sizeof *m);
  m->arena = a;
  m->cap = 64;
  m->slots = pg_arena_alloc(a, m->cap * sizeof *m->slots);
  return m;
}

/* The slot that holds key, or the empty one where it would go. */
static Slot *find(const PgMap *m, const char *key, size_t len, uint64_t h) {
  size_t mask = m->cap - 1;
  uint32_t tag = (uint32_t)(h >> 32);
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    Slot *s = &m->slots[i];
    if (!s->item) return s;
    if (s->tag != tag) continue;
    const Entry *e = &m->entries.v[s->item - 1];
    if (strncmp(e->key, key, len) == 0 && e->key[len] == 0) return s;
  }
}

void *pg_map_getn(const PgMap *m, const char *key, size_t len) {
  const Slot *s = find(m, key, len, hash(key, len));
  return s->item ? m->entries.v[s->item - 1].val : NULL;
}

void *pg_map_get(const PgMap *m, const char *key) { return pg_map_getn(m, key, strlen(key)); }

/* vals[i] = the value of keys[i] (or NULL).  A million-name table is 16 MiB, so a
 * lookup is a cache miss, about 100 ns, most of its cost: here up to AHEAD of them
 * are in flight at once. */
#define AHEAD 16
void pg_map_get_many(const PgMap *m, size_t n, const char *const *keys, const size_t *lens, void **vals) {
  uint64_t h[AHEAD];
  for (size_t i = 0; i < n + AHEAD; i++) {
    if (i >= AHEAD) { /* the lookup whose slot was asked for AHEAD steps ago */
      size_t k = i - AHEAD;
      const Slot *s = find(m, keys[k], lens[k], h[k % AHEAD]);
      vals[k] = s->item ? m->entries.v[s->item - 1].val : NULL;
    }
    if (i < n) {
      h[i % AHEAD] = hash(keys[i], lens[i]);
      __builtin_prefetch(&m->slots[h[i % AHEAD] & (m->cap - 1)]);
    }
  }
}

void pg_map_prefetch(const PgMap *m, const char *key, size_t len) {
  __builtin_prefetch(&m->slots[hash(key, len) & (m->cap - 1)]);
}

void *pg_map_put(PgMap *m, const char *key, void *val) {
  void **slot = pg_map_slot(m, key);
  if (*slot) return *slot;
  *slot = val;
  return NULL;
}

/* Re-places every entry in a fresh table of cap slots (a power of two).  The old
 * table stays in the arena. */
static void rehash(PgMap *m, size_t cap) {
  m->cap = cap;
  m->slots = pg_arena_alloc(m->arena, cap * sizeof *m->slots);
  size_t mask = cap - 1;
  for (size_t k = 0; k < m->entries.n; k++) {
    const Entry *e = &m->entries.v[k];
    uint64_t h = hash(e->key, strlen(e->key)); /* all keys differ: the first empty slot is theirs */
    size_t i = h & mask;
    while (m->slots[i].item) i = (i + 1) & mask;
    m->slots[i] = (Slot){(uint32_t)(h >> 32), (uint32_t)k + 1};
  }
}

/* Room for n entries without growing: a frontend that can count its names first
 * saves the rehashing, and the tables that growing leaves behind in the arena. */
void pg_map_reserve(PgMap *m, size_t n) {
  size_t cap = m->cap;
  while ((n + 1) * 4 > cap * 3) cap *= 2;
  if (cap != m->cap) rehash(m, cap);
  if (n > m->entries.cap) {
    Entry *v = pg_arena_alloc(m->arena, n * sizeof *v);
    if (m->entries.n) memcpy(v, m->entries.v, m->entries.n * sizeof *v);
    m->entries.v = v, m->entries.cap = n;
  }
}

/* The place of key's value, the key added (with a NULL value) if it was not there:
 * a lookup and an insertion in one probe.  Valid until the next insertion. */
void **pg_map_slot(PgMap *m, const char *key) {
  if ((m->entries.n + 1) * 4 > m->cap * 3) rehash(m, m->cap * 2);
  size_t len = strlen(key);
  uint64_t h = hash(key, len);
  Slot *s = find(m, key, len, h);
  if (!s->item) {
    if (m->entries.n >= UINT32_MAX - 1) PG_BUG("a map of more than 4 billion names");
    pg_vec_push(m->arena, m->entries, ((Entry){key, NULL}));
    *s = (Slot){(uint32_t)(h >> 32), (uint32_t)m->entries.n};
  }
  return &m->entries.v[s->item - 1].val;
}
