/*
 * map.c -- string-keyed hash map (open addressing, linear probing, FNV-1a), kept
 * in the arena.  Used for name lookup in both frontends; parsing stays linear.
 */
#include "pgcc.h"

#include <string.h>

typedef struct {
  const char *key;
  size_t len;
  uint64_t hash;
  void *val;
} Slot;

struct PgMap {
  PgArena *arena;
  Slot *slots;
  size_t cap, n; /* cap is a power of two */
};

static uint64_t hash(const char *s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= 0x100000001b3ull;
  }
  /* FNV's low bits are weak for names that differ in their last digits ("g1.n123",
   * "g1.n124"), and the table is indexed by them: mix the high bits down */
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

static Slot *find(const PgMap *m, const char *key, size_t len, uint64_t h) {
  size_t mask = m->cap - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    Slot *s = &m->slots[i];
    if (!s->key) return s;
    if (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0) return s;
  }
}

void *pg_map_getn(const PgMap *m, const char *key, size_t len) {
  return find(m, key, len, hash(key, len))->val;
}

void *pg_map_get(const PgMap *m, const char *key) { return pg_map_getn(m, key, strlen(key)); }

void *pg_map_put(PgMap *m, const char *key, void *val) {
  void **slot = pg_map_slot(m, key);
  if (*slot) return *slot;
  *slot = val;
  return NULL;
}

/* Moves every entry into a fresh table of cap slots (a power of two).  The old table
 * stays in the arena. */
static void rehash(PgMap *m, size_t cap) {
  Slot *old = m->slots;
  size_t ocap = m->cap;
  m->cap = cap;
  m->slots = pg_arena_alloc(m->arena, cap * sizeof *m->slots);
  for (size_t i = 0; i < ocap; i++)
    if (old[i].key) *find(m, old[i].key, old[i].len, old[i].hash) = old[i];
}

/* Room for n entries without growing: a frontend that can count its names first
 * saves the rehashing, and the tables that growing leaves behind in the arena. */
void pg_map_reserve(PgMap *m, size_t n) {
  size_t cap = m->cap;
  while ((n + 1) * 2 > cap) cap *= 2;
  if (cap != m->cap) rehash(m, cap);
}

/* The place of key's value, the key added (with a NULL value) if it was not there:
 * a lookup and an insertion in one probe.  Valid until the next insertion. */
void **pg_map_slot(PgMap *m, const char *key) {
  if ((m->n + 1) * 2 > m->cap) rehash(m, m->cap * 2);
  size_t len = strlen(key);
  uint64_t h = hash(key, len);
  Slot *s = find(m, key, len, h);
  if (!s->key) {
    *s = (Slot){key, len, h, NULL};
    m->n++;
  }
  return &s->val;
}
