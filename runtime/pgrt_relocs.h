/*
 * pgrt_relocs.h -- relocation kinds, listed once: what of an address a relocation
 * writes into a by-value kernel parameter, as a linker's relocation types say it.
 * The one table pgcc (compiler/pgcc.h: PgRelocKind, pg_relocs) and libpgrt (pgrt.h:
 * pgrt_reloc_kind) expand; installed with pgrt.h, which includes it.  The exporter's
 * names (python/pgcc) are the same strings: tests/python/test_shared_tables.py checks
 * them against this table.
 *
 * The value is the argument's address (buffer + offset: the addend is the argument's
 * offset), then truncated by the kind: shifted right by `shift`, its low `size` bytes
 * written (little-endian).
 *
 *   X(ENUM, "name in .graph", bytes written, shift)
 *
 *   abs64: the whole 64-bit address (8 bytes; the only kind of format version 1);
 *   lo32:  its low 32 bits (4 bytes);  hi32: its high 32 bits (4 bytes).
 *
 * New kinds go at the end: the enums' values are in .graph order and in generated C.
 */
#ifndef PGRT_RELOCS_H
#define PGRT_RELOCS_H

#define PG_RELOC_KINDS(X)    \
  X(ABS64, "abs64", 8, 0)    \
  X(LO32,  "lo32",  4, 0)    \
  X(HI32,  "hi32",  4, 32)

#endif
