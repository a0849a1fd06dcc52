# pgcc -- a plain Makefile: explicit object lists, strict warnings, generated
# parsers built by explicit rules.
#
#   make            build/pgcc
#   make demo       set up a fresh machine, run pgcc on an embedded example
#   make check      set up a fresh machine, run every test (ends "N passed, N failed")
#   make bench      the parse, partition and memory-plan benchmarks (docs/benchmarks.md)
#
# The scanners and parsers generated from grammar/*.l and grammar/*.y are committed
# under grammar/gen/, so pgcc builds where flex and bison are missing (the GPU
# machine); `make check` verifies that they match the grammar.

CC      ?= cc
CUDA_HOME ?= /usr/local/cuda
OPT     ?= -O2 -g
WARN    = -Wall -Wextra -Wpedantic -Wmissing-prototypes -Wshadow -Wstrict-prototypes -Werror
CFLAGS  = -std=c11 -D_DEFAULT_SOURCE $(OPT) $(WARN) $(EXTRA_CFLAGS)
CPPFLAGS = -Icompiler -Igrammar/gen $(CPPFLAGS_LIBCLANG)
# Generated code is not ours to fix: keep -Werror, drop the warnings flex and bison trip.
GENWARN = -Wno-unused-function -Wno-sign-compare -Wno-missing-prototypes -Wno-unused-parameter
LDFLAGS ?=
LDLIBS  = -lm
# libclang, optional: with it pgcc checks CUDA C kernels' layouts against their source
# (loaded with dlopen, only when a CUDA C module is checked).  Looked for when make
# starts: `make demo` and `make check` install it first, then build in a new make.
LIBCLANG_DIR ?= $(firstword $(wildcard /usr/lib/llvm-1[0-9]))
ifneq ($(wildcard $(LIBCLANG_DIR)/include/clang-c/Index.h),)
CPPFLAGS_LIBCLANG = -DPGCC_HAVE_LIBCLANG -isystem $(LIBCLANG_DIR)/include \
	-DPGCC_LIBCLANG='"$(firstword $(wildcard $(LIBCLANG_DIR)/lib/libclang.so.1 $(LIBCLANG_DIR)/lib/libclang.so))"'
LDLIBS += -ldl
endif
BISON   ?= bison
FLEX    ?= flex

B = build
# `make V=1` shows the commands
Q = $(if $(V),,@)

COMPILER_OBJS = \
	$(B)/arena.o $(B)/map.o $(B)/diag.o $(B)/ir.o $(B)/record.o $(B)/sha256.o $(B)/safetensors.o \
	$(B)/detect.o $(B)/dot_read.o $(B)/graph_read.o $(B)/graph_write.o $(B)/dot_write.o \
	$(B)/ir_verify.o $(B)/signatures.o $(B)/arch.o $(B)/stage.o $(B)/classify.o $(B)/rename.o $(B)/schedule.o $(B)/partition.o $(B)/cost.o $(B)/memplan.o $(B)/widen.o $(B)/priority.o $(B)/report.o $(B)/emit_c.o \
	$(B)/driver.o
GEN_OBJS = $(B)/dot.tab.o $(B)/dot.lex.o $(B)/graph.tab.o $(B)/graph.lex.o
LIB_OBJS = $(COMPILER_OBJS) $(GEN_OBJS)

GEN_SRCS = grammar/gen/dot.tab.c grammar/gen/dot.tab.h grammar/gen/dot.lex.c grammar/gen/dot.lex.h \
	grammar/gen/graph.tab.c grammar/gen/graph.tab.h grammar/gen/graph.lex.c grammar/gen/graph.lex.h

HEADERS = compiler/pgcc.h compiler/parse.h runtime/st_header.h runtime/pgrt_relocs.h runtime/half.h

.PHONY: FORCE runtime install all deps demo check check-generated check-names check-clang check-cuda check-asan check-ubsan check-valgrind check-codegen check-fake check-layers check-python check-python-asan test bench clean regen calibrate fuzz
.DELETE_ON_ERROR:
# The generated sources are committed: never delete them as intermediates.
.SECONDARY: $(GEN_SRCS)

all: $(B)/pgcc $(if $(wildcard $(CUDA_HOME)/include/cuda.h),runtime)

$(B):
	@mkdir -p $(B)

# The build's configuration: the compiler and its version, the flags, whether
# libclang was found, the CUDA headers.  When any of it changes, everything built
# with it is rebuilt; the stamp is rewritten only when it differs, so an unchanged
# configuration rebuilds nothing.
CONFIG = $(CC) [$(shell $(CC) --version 2>/dev/null | head -n 1)] $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $(LDLIBS) \
	cuda=$(CUDA_HOME)$(if $(wildcard $(CUDA_HOME)/include/cuda.h),,(none))
$(B)/config.stamp: FORCE | $(B)
	$(file >$@.new,$(CONFIG))
	@if cmp -s $@.new $@; then rm -f $@.new; else \
	  [ ! -f $@ ] || echo "configuration changed: rebuilding $(B)/"; mv $@.new $@; fi
FORCE:

$(B)/%.o: compiler/%.c $(HEADERS) $(GEN_SRCS) $(B)/config.stamp | $(B)
	@$(if $(Q),echo "CC $<")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(B)/%.o: grammar/gen/%.c $(HEADERS) $(GEN_SRCS) $(B)/config.stamp | $(B)
	@$(if $(Q),echo "CC $<")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(GENWARN) -c -o $@ $<

$(B)/libpgcc.a: $(LIB_OBJS)
	$(Q)rm -f $@ && ar rcs $@ $^

$(B)/pgcc: $(B)/main.o $(B)/libpgcc.a
	@$(if $(Q),echo "LD $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)

# ---- generated scanners and parsers (committed; regenerated when flex/bison exist)
# Run from the top directory, so the #line paths inside are the same everywhere.
define have
command -v $(1) >/dev/null 2>&1
endef

grammar/gen/%.tab.c grammar/gen/%.tab.h: grammar/%.y
	@mkdir -p grammar/gen
	@if $(call have,$(BISON)); then \
	  echo "BISON $<"; $(BISON) -Wall -Werror --header=grammar/gen/$*.tab.h -o grammar/gen/$*.tab.c $<; \
	else echo "bison not found: using the committed grammar/gen/$*.tab.c"; touch grammar/gen/$*.tab.c grammar/gen/$*.tab.h; fi

grammar/gen/%.lex.c grammar/gen/%.lex.h: grammar/%.l
	@mkdir -p grammar/gen
	@if $(call have,$(FLEX)); then \
	  echo "FLEX $<"; $(FLEX) --header-file=grammar/gen/$*.lex.h -o grammar/gen/$*.lex.c $<; \
	else echo "flex not found: using the committed grammar/gen/$*.lex.c"; touch grammar/gen/$*.lex.c grammar/gen/$*.lex.h; fi

regen:
	rm -f $(GEN_SRCS) && $(MAKE) $(GEN_SRCS)

# The committed sources must be exactly what flex and bison make of the grammar.
check-generated:
	@rm -rf $(B)/regen && mkdir -p $(B)/regen/grammar/gen
	@cp grammar/*.l grammar/*.y $(B)/regen/grammar/
	@cd $(B)/regen && $(BISON) -Wall -Werror --header=grammar/gen/dot.tab.h -o grammar/gen/dot.tab.c grammar/dot.y \
	  && $(BISON) -Wall -Werror --header=grammar/gen/graph.tab.h -o grammar/gen/graph.tab.c grammar/graph.y \
	  && $(FLEX) --header-file=grammar/gen/dot.lex.h -o grammar/gen/dot.lex.c grammar/dot.l \
	  && $(FLEX) --header-file=grammar/gen/graph.lex.h -o grammar/gen/graph.lex.c grammar/graph.l
	@if diff -r -q $(B)/regen/grammar/gen grammar/gen; then echo "generated sources: up to date"; \
	 else echo "generated sources differ from grammar/: run 'make regen' and commit"; exit 1; fi
	@# a scanner that backs up records its last accepting state on every character
	@for l in dot graph; do \
	  (cd $(B)/regen && $(FLEX) -b -o /dev/null grammar/$$l.l && grep -q "^No backing up" lex.backup) \
	  || { echo "grammar/$$l.l: the scanner backs up (see flex -b)"; exit 1; }; done
	@echo "scanners: no backing up"

# ---- libpgrt: the runtime generated code links against (needs the CUDA headers)
PREFIX ?= /usr/local
DESTDIR ?=
CUDA_INC = -I$(CUDA_HOME)/include
# libpgrt loads the CUDA driver (runtime/cuda_driver.c) and NVRTC (runtime/modules.c) at run
# time: what links it needs neither.  CUDA_LIBS is for the programs that call the driver
# themselves (the GPU tests).
RT_LIBS = -ldl -pthread
CUDA_LIBS = -L$(CUDA_HOME)/lib64/stubs -lcuda $(RT_LIBS)

# libpgrt by lifecycle, a file per job, in the layers runtime/pgrt_impl.h draws
RT_OBJS = $(B)/rt/status.o $(B)/rt/cuda_driver.o $(B)/rt/shlib.o $(B)/rt/scalars.o $(B)/rt/threads.o $(B)/rt/cache.o $(B)/rt/libraries.o $(B)/rt/nccl.o $(B)/rt/weights.o \
	$(B)/rt/modules.o $(B)/rt/params.o $(B)/rt/build.o $(B)/rt/init.o $(B)/rt/run.o $(B)/rt/own_cubins.o
RT_HEADERS = runtime/pgrt.h runtime/pgrt_driver.h runtime/pgrt_relocs.h runtime/pgrt_impl.h runtime/st_header.h runtime/half.h \
	runtime/own_kernels.h

$(B)/rt/%.o: runtime/%.c $(RT_HEADERS) $(B)/config.stamp | $(B)
	@mkdir -p $(B)/rt
	@$(if $(Q),echo "CC $<")
	$(Q)$(CC) $(CFLAGS) -fPIC $(CUDA_INC) -c -o $@ $<

# libpgrt's own kernels, compiled with NVRTC at build time for every architecture it
# knows (runtime/own_kernels.h): a tool run once, whose table is a source of libpgrt.
# Built without the sanitizers of check-asan: NVRTC is not ours to check.
$(B)/rt/prebuild: runtime/tool/prebuild.c runtime/own_kernels.h $(B)/config.stamp | $(B)
	@mkdir -p $(B)/rt
	@$(if $(Q),echo "CC $<")
	$(Q)$(CC) -std=c11 -O2 $(WARN) $(CUDA_INC) -o $@ $< -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lnvrtc

$(B)/rt/own_cubins.c: $(B)/rt/prebuild
	@$(if $(Q),echo "NVRTC runtime/own_kernels.h")
	$(Q)$(B)/rt/prebuild $@

$(B)/rt/own_cubins.o: $(B)/rt/own_cubins.c $(RT_HEADERS)
	@$(if $(Q),echo "CC $<")
	$(Q)$(CC) $(CFLAGS) -fPIC -Iruntime -c -o $@ $<

$(B)/libpgrt.a: $(RT_OBJS)
	$(Q)rm -f $@ && ar rcs $@ $^

$(B)/libpgrt.so: $(RT_OBJS)
	@$(if $(Q),echo "LD $@")
	$(Q)$(CC) -shared -Wl,-soname,libpgrt.so.1 -o $@ $^ $(RT_LIBS)

$(B)/pgrt.pc: runtime/pgrt.pc.in
	@sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@CUDA_HOME@|$(CUDA_HOME)|g' $< > $@

runtime: $(B)/libpgrt.a $(B)/libpgrt.so $(B)/pgrt.pc

install: $(B)/pgcc $(if $(wildcard $(CUDA_HOME)/include/cuda.h),runtime) runtime
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include
	install -m 755 $(B)/pgcc $(DESTDIR)$(PREFIX)/bin/pgcc
	install -m 644 runtime/pgrt.h $(DESTDIR)$(PREFIX)/include/pgrt.h
	install -m 644 runtime/pgrt_relocs.h $(DESTDIR)$(PREFIX)/include/pgrt_relocs.h
	install -m 644 runtime/pgrt_driver.h $(DESTDIR)$(PREFIX)/include/pgrt_driver.h
	install -m 644 $(B)/libpgrt.a $(DESTDIR)$(PREFIX)/lib/libpgrt.a
	install -m 755 $(B)/libpgrt.so $(DESTDIR)$(PREFIX)/lib/libpgrt.so.1
	ln -sf libpgrt.so.1 $(DESTDIR)$(PREFIX)/lib/libpgrt.so
	install -m 644 $(B)/pgrt.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/pgrt.pc

# ---- pgcc-calibrate: measures a machine profile on a GPU (needs nvcc to build)
NVCC ?= $(shell command -v nvcc 2>/dev/null || echo $(CUDA_HOME)/bin/nvcc)
NVCCFLAGS = -O2 -std=c++17 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
	-Xcompiler -Wall,-Wextra,-Werror

$(B)/pgcc-calibrate: calibrate/pgcc-calibrate.cu | $(B)
	@$(if $(Q),echo "NVCC $<")
	$(Q)$(NVCC) $(NVCCFLAGS) -o $@ $<

calibrate: $(B)/pgcc-calibrate

# ---- set-up, demo, tests
deps:
	@bash scripts/install-deps.sh

# Set-up first, then the build in a new make: this one looked for libclang and the
# CUDA headers when it started, before install-deps ran.
demo: deps
	@$(MAKE) --no-print-directory $(B)/pgcc
	@bash examples/demo.sh

include tests/tests.mk

clean:
	rm -rf $(B)

bench: $(B)/pgcc
	@python3 bench/parse.py
	@echo
	@python3 bench/partition.py
	@echo
	@python3 bench/memplan.py
