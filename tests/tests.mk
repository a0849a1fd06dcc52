# tests/tests.mk -- `make check`: set-up, then every check, ending "N passed, N failed".
#
#   check-generated   the committed scanners/parsers match grammar/
#   check-names       no sys.path edits in tests/, bench/, tools/; no two *.py or *.c files of one name
#   check-clang       the compiler builds warning-free with clang too
#   check-asan        every test under gcc's ASan, LSan and UBSan
#   check-ubsan       every test under clang's UBSan
#   check-codegen     generated C compiles warning-free and links against libpgrt
#   check-info        NAME_info()'s tables match the generated structs and the .graph; NCCL against nccl.h;
#                     libpgrt's CPU-side pieces (tensors, conversions, cache, shared libraries, pgcc's enums)
#   check-deploy      examples/deploy builds through pkg-config and runs dry
#   check-fake        libpgrt and generated C run the GPU code-generation tests over a CPU double of the driver
#   check-valgrind    pgcc under memcheck on every real dump and malformed input
#   check-python      the Python package's CPU tests (pytest)
#   check-python-asan pgcc.load's call in C (python/pgcc/_fastcall.c) under ASan and UBSan
#   check-layers      libpgrt's files: at most 700 lines each, calls only down pgrt_impl.h's layers
#   test              the Check suites (tests/check_suites.c): unit, golden, malformed, CLI

TEST_SRCS = tests/check_suites.c tests/helpers.c \
	tests/unit/test_arena.c tests/unit/test_record.c tests/unit/test_diag.c tests/unit/test_dot.c \
	tests/unit/test_graph.c tests/unit/test_verify.c tests/unit/test_cli.c tests/unit/test_partition.c tests/unit/test_signatures.c tests/unit/test_safetensors.c tests/unit/test_half.c tests/unit/test_widen.c \
	tests/golden/test_corpus.c tests/golden/test_malformed.c tests/golden/test_fuzz.c fuzz/fuzz_pipeline.c
TEST_LIBS = $(shell pkg-config --libs check jansson 2>/dev/null || echo -lcheck -ljansson)
TEST_CFLAGS = $(shell pkg-config --cflags check jansson 2>/dev/null)

$(B)/tests/run: $(TEST_SRCS) fuzz/fuzz_passes.h tests/helpers.h $(B)/libpgcc.a $(HEADERS)
	@mkdir -p $(B)/tests
	@$(if $(Q),echo "LD $@")
	$(Q)$(CC) $(CPPFLAGS) $(TEST_CFLAGS) $(CFLAGS) -Wno-missing-prototypes -o $@ $(TEST_SRCS) $(B)/libpgcc.a $(TEST_LIBS) $(LDLIBS) $(LDFLAGS)

check-clang:
	@$(if $(Q),echo "CLANG build/clang/pgcc")
	$(Q)$(MAKE) --no-print-directory CC=clang B=build/clang build/clang/pgcc >/dev/null

test: $(B)/tests/run $(B)/pgcc
	@$(B)/tests/run

# The GPU programs compile here too (they run only on a GPU: tests/gpu/run.sh).
check-cuda:
	@if [ -x "$(NVCC)" ] || command -v "$(NVCC)" >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory $(B)/pgcc-calibrate && \
	  $(CC) -O2 -Wall -Wextra -Werror -shared -fPIC -I$(CUDA_HOME)/include tests/gpu/graphwalk.c \
	    -o $(B)/graphwalk.so -L$(CUDA_HOME)/lib64/stubs -lcuda && echo "GPU programs: build"; \
	else echo "nvcc not found: GPU programs not built"; fi

# Every test again under AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer
# (gcc).  The run's status is make's: a failure here fails `make check`.  use_tls=0:
# LeakSanitizer's tracer crashed now and then ("Tracer caught signal 11", in glibc's
# thread-local storage) at the exit of a test that had loaded libclang, depending on
# the memory layout; without thread-local storage as a root it does not, and pgcc
# keeps nothing there (a leak it would root is reported, never hidden).
SANITIZE = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
check-asan:
	@$(if $(Q),echo "ASAN build/asan/tests/run")
	$(Q)$(MAKE) --no-print-directory B=build/asan OPT="-O1 -g" EXTRA_CFLAGS="$(SANITIZE)" LDFLAGS="$(SANITIZE)" \
	  build/asan/tests/run build/asan/pgcc >/dev/null
	@ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=use_tls=0 UBSAN_OPTIONS=print_stacktrace=1 build/asan/tests/run >build/asan/tests.log 2>&1; \
	  s=$$?; sed 's/^/asan: /' build/asan/tests.log; exit $$s

# And once more under clang's UndefinedBehaviorSanitizer alone, which also flags
# arithmetic on null pointers (gcc's does not; docs/fuzzing.md, finding 3).  Not with
# clang's LeakSanitizer: its tracer crashes now and then beside the dlopen'ed libclang.
UBSAN = -fsanitize=undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
check-ubsan:
	@if command -v clang >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory B=build/ubsan CC=clang OPT="-O1 -g" EXTRA_CFLAGS="$(UBSAN)" LDFLAGS="$(UBSAN)" \
	    build/ubsan/tests/run >/dev/null || exit 1; \
	  UBSAN_OPTIONS=print_stacktrace=1 build/ubsan/tests/run >build/ubsan/tests.log 2>&1; \
	  s=$$?; sed 's/^/ubsan: /' build/ubsan/tests.log; exit $$s; \
	else echo "clang not found: check-ubsan not run"; fi

check: deps
	@$(MAKE) --no-print-directory check-generated
	@$(MAKE) --no-print-directory check-names
	@$(MAKE) --no-print-directory check-clang
	@$(MAKE) --no-print-directory check-cuda
	@$(MAKE) --no-print-directory check-codegen
	@$(MAKE) --no-print-directory check-info
	@$(MAKE) --no-print-directory check-deploy
	@$(MAKE) --no-print-directory check-fake
	@$(MAKE) --no-print-directory check-asan
	@$(MAKE) --no-print-directory check-ubsan
	@$(MAKE) --no-print-directory check-fuzz-pgrt
	@$(MAKE) --no-print-directory check-fuzz-c
	@$(MAKE) --no-print-directory check-valgrind
	@$(MAKE) --no-print-directory check-python
	@$(MAKE) --no-print-directory check-python-asan
	@$(MAKE) --no-print-directory check-layers
	@$(MAKE) --no-print-directory test

# Names and imports across the tree (tests/check_names.py, which first checks itself on
# a made-up tree): the scripts import pgcc and tests.models by name, never by editing
# sys.path, and no two *.py or *.c files share a name.
check-names:
	@python3 tests/check_names.py

# The Python package's CPU tests (pytest; tests/python/run.sh installs pytest, numpy
# and safetensors with pip where they are missing).  Before `test`, whose line ends
# the run.
check-python: $(B)/pgcc
	@bash tests/python/run.sh

# The Python extension of pgcc.load's call (python/pgcc/_fastcall.c), built with gcc's
# ASan and UBSan, its CPU tests run with their runtimes preloaded (after check-python,
# which installs pytest).
check-python-asan:
	@bash tests/python/asan_fastcall.sh

# libpgrt's layout (tests/runtime_layers.py): no runtime C file over 700 lines, every call
# between them down the layers runtime/pgrt_impl.h draws, no #include cycle; and, in a
# copy of runtime/, each such violation is reported.
check-layers:
	@python3 tests/runtime_layers.py

# ---- fuzzing: `make fuzz` runs each target for FUZZ_SECONDS from seeds made of the
# real dumps; findings land in build/fuzz/artifacts (docs/fuzzing.md)
FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang
FUZZ_CFLAGS = -std=c11 -D_DEFAULT_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_LIB_SRCS = $(patsubst $(B)/%.o,compiler/%.c,$(COMPILER_OBJS)) \
	grammar/gen/dot.tab.c grammar/gen/dot.lex.c grammar/gen/graph.tab.c grammar/gen/graph.lex.c
FUZZ_TARGETS = build/fuzz/fuzz_dot build/fuzz/fuzz_graph build/fuzz/fuzz_pipeline
FUZZ_SEEDS = $(wildcard tests/corpus/*/*.dot tests/malformed/*.dot tests/malformed/*.graph tests/partition/*.graph tests/fuzz/* \
	examples/*.dot examples/*.graph tests/golden/*.graph tests/gpu/codegen/reuse.graph)

build/fuzz/fuzz_dot: FUZZ_DIALECT = 1
build/fuzz/fuzz_graph: FUZZ_DIALECT = 2
build/fuzz/fuzz_pipeline: FUZZ_DIALECT = 0
$(FUZZ_TARGETS): fuzz/fuzz_pipeline.c fuzz/fuzz_passes.h $(FUZZ_LIB_SRCS) $(HEADERS) $(GEN_SRCS)
	@mkdir -p build/fuzz
	@$(if $(Q),echo "FUZZ $@")
	$(Q)$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -DFUZZ_DIALECT=$(FUZZ_DIALECT) -o $@ fuzz/fuzz_pipeline.c $(FUZZ_LIB_SRCS) $(LDLIBS)

build/fuzz/seeds.stamp: $(FUZZ_SEEDS) $(B)/pgcc
	@rm -rf build/fuzz/seeds && mkdir -p build/fuzz/seeds build/fuzz/artifacts
	@for f in $(FUZZ_SEEDS); do cp $$f build/fuzz/seeds/$$(echo $$f | tr / _); done
	@for f in tests/corpus/*/*.dot; do $(B)/pgcc --emit=graph -o build/fuzz/seeds/$$(basename $$f .dot).graph $$f; done
	@touch $@

# fuzz_pgrt (fuzz/fuzz_pgrt.c): libpgrt's host side, built with the sanitizers, over the
# tables of chain.graph's generated C, edited as each input says, run against the CPU
# double of the driver (tests/fakecuda), which it loads through PGRT_LIBCUDA; campaigns
# give the double a 16 MiB device, so that a table's huge size fails at once instead of
# being allocated and poisoned (the kept inputs replay on the usual 80 GiB)
.PHONY: fuzz-pgrt check-fuzz-pgrt
FUZZ_RT_SRCS = $(patsubst $(B)/rt/%.o,runtime/%.c,$(filter-out $(B)/rt/own_cubins.o,$(RT_OBJS))) $(B)/rt/own_cubins.c
build/fuzz/chain.c: tests/gpu/codegen/chain.graph tests/gpu/codegen/chain.cu $(B)/pgcc
	@mkdir -p build/fuzz
	$(Q)$(B)/pgcc $< -o $@
build/fuzz/libcuda.so.1: tests/fakecuda/fakecuda.c tests/fakecuda/kernels.c tests/fakecuda/fakecuda.h
	@mkdir -p build/fuzz
	$(Q)$(CC) -std=c11 -O1 -g -fPIC -shared $(CUDA_INC) -Iruntime -Wl,-soname,libcuda.so.1 -Wl,--no-undefined \
	  tests/fakecuda/fakecuda.c tests/fakecuda/kernels.c -lm -o $@
build/fuzz/fuzz_pgrt: fuzz/fuzz_pgrt.c build/fuzz/chain.c build/fuzz/libcuda.so.1 $(FUZZ_RT_SRCS) $(RT_HEADERS)
	@$(if $(Q),echo "FUZZ $@")
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) $(CUDA_INC) -Iruntime -Ibuild/fuzz -DFUZZ_PROGRAM_C='"chain.c"' -o $@ \
	  fuzz/fuzz_pgrt.c $(FUZZ_RT_SRCS) -Lbuild/fuzz -Wl,-rpath,'$$ORIGIN' -lcuda -ldl -lm -pthread
# its seeds: the unedited tables, and every input it was ever broken with
build/fuzz/pgrt_seeds.stamp: $(wildcard tests/fuzz/pgrt_*)
	@rm -rf build/fuzz/pgrt_seeds && mkdir -p build/fuzz/pgrt_seeds build/fuzz/artifacts
	@cp tests/fuzz/pgrt_* build/fuzz/pgrt_seeds/
	@touch $@
fuzz-pgrt: build/fuzz/fuzz_pgrt build/fuzz/pgrt_seeds.stamp
	@mkdir -p build/fuzz/corpus/fuzz_pgrt build/fuzz/pgrt_cache
	@echo "== fuzz_pgrt for $(FUZZ_SECONDS) s"
	@FAKECUDA_DEVICE_MEMORY=16777216 PGRT_LIBCUDA=$$PWD/build/fuzz/libcuda.so.1 PGRT_CACHE=$$PWD/build/fuzz/pgrt_cache \
	  build/fuzz/fuzz_pgrt -max_total_time=$(FUZZ_SECONDS) -max_len=512 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	    -artifact_prefix=build/fuzz/artifacts/fuzz_pgrt- build/fuzz/corpus/fuzz_pgrt build/fuzz/pgrt_seeds 2>&1 \
	    | grep -E "^(stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added|Done|==[0-9]+==ERROR|SUMMARY)" || true
# the unedited tables (tests/fuzz/pgrt_unedited: every call must succeed) and every input
# fuzz_pgrt was broken with (tests/fuzz/pgrt_*), replayed through it (part of make check)
check-fuzz-pgrt: build/fuzz/fuzz_pgrt
	@mkdir -p build/fuzz/pgrt_cache
	@PGRT_LIBCUDA=$$PWD/build/fuzz/libcuda.so.1 PGRT_CACHE=$$PWD/build/fuzz/pgrt_cache \
	  build/fuzz/fuzz_pgrt tests/fuzz/pgrt_* >build/fuzz/pgrt_replay.log 2>&1 \
	  || { cat build/fuzz/pgrt_replay.log; echo "FAIL: fuzz_pgrt on tests/fuzz/pgrt_*"; exit 1; }
	@n=$$(ls tests/fuzz/pgrt_* | wc -l); echo "fuzz_pgrt: $$n kept inputs replayed, no finding"

# fuzz_c (fuzz/fuzz_c.c): .graph text through pgcc's C path, the C compiled in process by
# libtcc (Debian's libtcc-dev and tcc), then init, two calls and destroy in libpgrt over
# the CPU double of the driver running only libpgrt's own kernels (docs/fuzzing.md)
.PHONY: fuzz-c check-fuzz-c
build/fuzz/fuzz_c: fuzz/fuzz_c.c fuzz/fuzz_passes.h build/fuzz/libcuda.so.1 $(FUZZ_LIB_SRCS) $(FUZZ_RT_SRCS) $(HEADERS) $(RT_HEADERS) $(GEN_SRCS)
	@mkdir -p build/fuzz
	@$(if $(Q),echo "FUZZ $@")
	$(Q)$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) $(CUDA_INC) -Iruntime -DFUZZ_RUNTIME_INCLUDE='"$(abspath runtime)"' \
	  -DFUZZ_CUDA_INCLUDE='"$(CUDA_HOME)/include"' -o $@ fuzz/fuzz_c.c $(FUZZ_LIB_SRCS) $(FUZZ_RT_SRCS) \
	  -Lbuild/fuzz -Wl,-rpath,'$$ORIGIN' -ltcc -lcuda $(LDLIBS) -ldl -lm -pthread
# its seeds: every .graph that has a C program in it, its module paths made relative to
# the repository root (where the target reads them from), and every input it broke on
FUZZ_C_SEEDS = $(wildcard tests/gpu/codegen/*.graph tests/partition/*.graph examples/*.graph tests/golden/*.graph)
build/fuzz/c_seeds.stamp: $(FUZZ_C_SEEDS) $(wildcard tests/fuzz/c_* tests/fuzz/graph_*)
	@rm -rf build/fuzz/c_seeds && mkdir -p build/fuzz/c_seeds build/fuzz/artifacts
	@for f in $(FUZZ_C_SEEDS); do d=$$(dirname $$f); \
	  sed -E 's#( file ")([^/"][^"]*")#\1'"$$d"'/\2#' $$f >build/fuzz/c_seeds/$$(echo $$f | tr / _); done
	@cp tests/fuzz/graph_* build/fuzz/c_seeds/ && for f in $(wildcard tests/fuzz/c_*); do cp $$f build/fuzz/c_seeds/; done
	@touch $@
fuzz-c: build/fuzz/fuzz_c build/fuzz/c_seeds.stamp
	@mkdir -p build/fuzz/corpus/fuzz_c build/fuzz/pgrt_cache
	@echo "== fuzz_c for $(FUZZ_SECONDS) s"
	@PGRT_LIBCUDA=$$PWD/build/fuzz/libcuda.so.1 PGRT_CACHE=$$PWD/build/fuzz/pgrt_cache \
	  build/fuzz/fuzz_c -max_total_time=$(FUZZ_SECONDS) -dict=fuzz/graph.dict -max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	    -artifact_prefix=build/fuzz/artifacts/fuzz_c- build/fuzz/corpus/fuzz_c build/fuzz/c_seeds 2>&1 \
	    | grep -E "^(stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added|Done|==[0-9]+==ERROR|SUMMARY|fuzz_c:)" || true
# the code-generation programs and the example, which must generate, compile, init and
# run both calls (FUZZ_C_EXPECT_OK), and every input fuzz_c was broken with
# (tests/fuzz/c_*), replayed through it (part of make check)
FUZZ_C_RUN = $(patsubst %,build/fuzz/c_seeds/tests_gpu_codegen_%.graph,chain buckets globals pdl relocs shapes) \
	build/fuzz/c_seeds/examples_saxpy.graph
check-fuzz-c: build/fuzz/fuzz_c build/fuzz/c_seeds.stamp
	@mkdir -p build/fuzz/pgrt_cache
	@FUZZ_C_EXPECT_OK=1 PGRT_LIBCUDA=$$PWD/build/fuzz/libcuda.so.1 PGRT_CACHE=$$PWD/build/fuzz/pgrt_cache \
	  build/fuzz/fuzz_c $(FUZZ_C_RUN) >build/fuzz/c_run.log 2>&1 \
	  || { cat build/fuzz/c_run.log; echo "FAIL: fuzz_c on the programs that must run"; exit 1; }
	@awk '/^fuzz_c: [0-9]+ inputs generated C/ { ok = $$2 >= $(words $(FUZZ_C_RUN)) && $$2 == $$8 && $$2 == $$12 && $$2 == $$14 } END { exit !ok }' build/fuzz/c_run.log \
	  || { cat build/fuzz/c_run.log; echo "FAIL: fuzz_c: not every program that must run ran"; exit 1; }
	@set -- $(wildcard tests/fuzz/c_*); [ $$# -eq 0 ] || PGRT_LIBCUDA=$$PWD/build/fuzz/libcuda.so.1 \
	  PGRT_CACHE=$$PWD/build/fuzz/pgrt_cache build/fuzz/fuzz_c "$$@" >build/fuzz/c_replay.log 2>&1 \
	  || { cat build/fuzz/c_replay.log; echo "FAIL: fuzz_c on tests/fuzz/c_*"; exit 1; }
	@echo "fuzz_c: $(words $(FUZZ_C_RUN)) programs generated, compiled, inited and run; $(words $(wildcard tests/fuzz/c_*)) kept inputs replayed, no finding"

fuzz: $(FUZZ_TARGETS) build/fuzz/seeds.stamp fuzz-pgrt fuzz-c
	@for t in $(FUZZ_TARGETS); do \
	  name=$$(basename $$t); mkdir -p build/fuzz/corpus/$$name; \
	  echo "== $$name for $(FUZZ_SECONDS) s"; \
	  $$t -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	    -artifact_prefix=build/fuzz/artifacts/$$name- build/fuzz/corpus/$$name build/fuzz/seeds 2>&1 \
	    | grep -E "^(stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added|Done|==[0-9]+==ERROR|SUMMARY)" || true; \
	done
	@ls build/fuzz/artifacts | sed 's/^/finding: /' || true

# valgrind memcheck over every real dump, example and malformed input: no errors and
# no leaks, definite, indirect or possible (libclang, when linked, keeps reachable
# static allocations of its own).  pgcc's exit status 1 on malformed input is
# expected; valgrind's is 99.
VALGRIND_INPUTS = $(wildcard tests/corpus/*/*.dot examples/*.dot examples/*.graph tests/partition/*.graph \
	tests/malformed/*.dot tests/malformed/*.graph)
check-valgrind: $(B)/pgcc
	@fail=0; for f in $(VALGRIND_INPUTS); do \
	  valgrind -q --error-exitcode=99 --suppressions=tests/valgrind.supp --leak-check=full \
	    --errors-for-leak-kinds=definite,indirect,possible \
	    $(B)/pgcc --report=json -o /dev/null $$f >/dev/null 2>build/valgrind.log; \
	  if [ $$? -eq 99 ]; then echo "valgrind: $$f"; cat build/valgrind.log; fail=1; fi; \
	done; \
	if [ $$fail -eq 0 ]; then echo "valgrind: $(words $(VALGRIND_INPUTS)) inputs clean"; else exit 1; fi

# Generated C compiles warning-free with gcc and clang (-std=c11 -pedantic -Werror)
# and links against libpgrt alone (-Wl,--no-undefined, no libcuda, no NVRTC: libpgrt
# loads both at run time); the same input gives the same bytes.  (It runs only on a GPU: tests/gpu/run_codegen.sh.)
CODEGEN_INPUTS = examples/saxpy.graph tests/gpu/codegen/chain.graph tests/gpu/codegen/loops.graph tests/gpu/codegen/shapes.graph \
	tests/gpu/codegen/relocs.graph tests/gpu/codegen/hostread.graph tests/gpu/codegen/buckets.graph \
	tests/gpu/codegen/globals.graph tests/gpu/codegen/allreduce.graph tests/gpu/codegen/allreduce_io.graph \
	tests/golden/module_globals.graph $(wildcard tests/codegen/*.graph) $(wildcard tests/corpus/export/*/*.graph) \
	$(wildcard tests/gpu/faults/*.graph) $(wildcard tests/corpus/torch/*.dot)
# The GPU test programs that run this C compile against its headers here too;
# allreduce_main.c also against allreduce_io.graph's, generated as `allreduce` (its
# variant with the all-reduce on the input and output), and links into the program
# tests/gpu/run_nccl.sh runs.
GPU_TEST_MAINS = tests/gpu/codegen/chain_main.c tests/gpu/codegen/loops_main.c tests/gpu/codegen/shapes_main.c \
	tests/gpu/codegen/relocs_main.c tests/gpu/codegen/hostread_main.c tests/gpu/codegen/buckets_main.c \
	tests/gpu/codegen/globals_main.c tests/gpu/codegen/allreduce_main.c tests/gpu/faults/faults_main.c \
	tests/gpu/e2e_bench.c
check-codegen: $(B)/pgcc
	@if [ ! -f $(CUDA_HOME)/include/cuda.h ]; then echo "CUDA headers not found: generated C not compiled"; exit 0; fi; \
	$(MAKE) --no-print-directory runtime >/dev/null && mkdir -p $(B)/gen && \
	for f in $(CODEGEN_INPUTS); do \
	  n=$$(basename $$(basename $$f .graph) .dot); \
	  $(B)/pgcc $$f -o $(B)/gen/$$n.c 2>/dev/null && $(B)/pgcc $$f -o $(B)/gen/$$n.again.c --name=$$n 2>/dev/null && \
	  cmp -s $(B)/gen/$$n.c $(B)/gen/$$n.again.c || { echo "codegen: $$f: output differs between runs"; exit 1; }; \
	  for cc in gcc clang; do \
	    $$cc -std=c11 -Wall -Wextra -Werror -pedantic -fPIC -Iruntime $(CUDA_INC) -c $(B)/gen/$$n.c -o $(B)/gen/$$n.$$cc.o && \
	    $$cc -shared -Wl,--no-undefined -o $(B)/gen/$$n.$$cc.so $(B)/gen/$$n.$$cc.o $(B)/libpgrt.a $(RT_LIBS) || exit 1; \
	  done; \
	done && for m in $(GPU_TEST_MAINS); do \
	  gcc -std=c11 -Wall -Wextra -Werror -pedantic -I$(B)/gen -Iruntime -Itests/gpu $(CUDA_INC) -c $$m -o $(B)/gen/main.o \
	    || exit 1; \
	done && mkdir -p $(B)/gen/io && \
	$(B)/pgcc tests/gpu/codegen/allreduce_io.graph --name=allreduce -o $(B)/gen/io/allreduce.c && \
	gcc -std=c11 -O2 -Wall -Wextra -Werror -pedantic -I$(B)/gen/io -Iruntime -Itests/gpu $(CUDA_INC) \
	  tests/gpu/codegen/allreduce_main.c $(B)/gen/io/allreduce.c $(B)/libpgrt.a $(CUDA_LIBS) -lm -o $(B)/gen/io/allreduce \
	  && echo "codegen: $(words $(CODEGEN_INPUTS)) programs compile with gcc and clang and link; \
	$(words $(GPU_TEST_MAINS)) GPU test programs compile against them, allreduce_main against allreduce_io too"

# Programs that make no CUDA call run with no driver at all: libpgrt would load it from
# PGRT_LIBCUDA, which names no file, so one that tried would fail, saying so.
NO_DRIVER = LD_LIBRARY_PATH=$(CUDA_HOME)/lib64 PGRT_LIBCUDA=/nonexistent/libcuda.so.1

# NAME_info()'s tables, compiled from the C generated for mlp_small,
# tests/codegen/info_roles.graph and tests/golden/buckets.graph (as buckets_golden: its
# basename is the GPU bucket test's) and checked against the structs and the .graph
# (tests/codegen/info_main.c); libpgrt's safetensors reader and writer in host memory
# (tests/codegen/tensors_main.c); the conversions of scalars read from host buffers
# (tests/codegen/convert_main.c); libpgrt's cache of compiled cubins (tests/codegen/cache_main.c); the cubins of
# libpgrt's own kernels its build compiled, against NVRTC (tests/codegen/prebuilt_main.c); which file libpgrt opens
# for a library it opens by soname, a copy already in the process first (tests/codegen/shlib_main.c, over copies
# of tests/codegen/shlib_fake.c); libpgrt without the CUDA driver, PGRT_ERR_DRIVER from 8 threads at once
# (tests/codegen/driver_main.c); pgcc's and libpgrt's enums that are not one table yet, against each other
# (tests/codegen/tables_main.c); libpgrt's NCCL declarations against nccl.h, and a program
# with a comm whose NCCL is missing failing init before any CUDA call
# (tests/codegen/nccl_main.c, over tests/gpu/codegen/allreduce.graph).  No GPU, no
# driver: none calls CUDA, and none links libcuda.
check-info: $(B)/pgcc
	@if [ ! -f $(CUDA_HOME)/include/cuda.h ]; then echo "CUDA headers not found: check-info not run"; exit 0; fi; \
	$(MAKE) --no-print-directory runtime >/dev/null && mkdir -p $(B)/gen && \
	$(B)/pgcc tests/corpus/export/mlp_small/mlp_small.graph -o $(B)/gen/mlp_small.c && \
	$(B)/pgcc tests/codegen/info_roles.graph -o $(B)/gen/info_roles.c && \
	$(B)/pgcc tests/golden/buckets.graph --name=buckets_golden -o $(B)/gen/buckets_golden.c 2>/dev/null && \
	$(B)/pgcc tests/gpu/codegen/allreduce.graph -o $(B)/gen/allreduce.c && \
	rm -rf $(B)/gen/shlib && mkdir -p $(B)/gen/shlib/a $(B)/gen/shlib/b && \
	for lib in a/libpgfake_beside.so.1:1 b/libpgfake_beside.so.1:2 a/libpgfake_beside_extra.so.1:3 \
	    a/libpgfakeother.so.1:4 a/libnccl.so.2:5 b/libnccl.so.2:6; do \
	  gcc -std=c11 -Wall -Wextra -Werror -shared -fPIC -DWHICH=$${lib#*:} -Wl,-soname,$$(basename $${lib%:*}) \
	    tests/codegen/shlib_fake.c -o $(B)/gen/shlib/$${lib%:*} || exit 1; \
	done && \
	for cc in gcc clang; do \
	  $$cc -std=c11 -Wall -Wextra -Werror -pedantic -I$(B)/gen -Iruntime $(CUDA_INC) -o $(B)/gen/info_main \
	    tests/codegen/info_main.c $(B)/gen/mlp_small.c $(B)/gen/info_roles.c $(B)/gen/buckets_golden.c \
	    $(B)/libpgrt.a $(RT_LIBS) && \
	  $(NO_DRIVER) $(B)/gen/info_main && \
	  $$cc -std=c11 -Wall -Wextra -Werror -pedantic -Iruntime $(CUDA_INC) -o $(B)/gen/tensors_main \
	    tests/codegen/tensors_main.c $(B)/libpgrt.a $(RT_LIBS) && \
	  $(NO_DRIVER) $(B)/gen/tensors_main $(B)/gen/tensors_test.safetensors && \
	  $$cc -std=c11 -Wall -Wextra -Werror -pedantic -Iruntime $(CUDA_INC) -o $(B)/gen/convert_main \
	    tests/codegen/convert_main.c $(B)/libpgrt.a $(RT_LIBS) && \
	  $(NO_DRIVER) $(B)/gen/convert_main && \
	  $$cc -std=c11 -Wall -Wextra -Werror -pedantic -Iruntime $(CUDA_INC) -o $(B)/gen/cache_main \
	    tests/codegen/cache_main.c $(B)/libpgrt.a $(RT_LIBS) && \
	  $(NO_DRIVER) $(B)/gen/cache_main && \
	  $$cc -std=c11 -Wall -Wextra -Werror -pedantic -Iruntime $(CUDA_INC) -o $(B)/gen/prebuilt_main \
	    tests/codegen/prebuilt_main.c $(B)/libpgrt.a $(RT_LIBS) -L$(CUDA_HOME)/lib64 -lnvrtc && \
	  $(NO_DRIVER) $(B)/gen/prebuilt_main && \
	  $$cc -std=c11 -Wall -Wextra -Werror -pedantic -Iruntime $(CUDA_INC) -o $(B)/gen/shlib_main \
	    tests/codegen/shlib_main.c $(B)/libpgrt.a $(RT_LIBS) && \
	  $(NO_DRIVER) $(B)/gen/shlib_main $(B)/gen/shlib/a $(B)/gen/shlib/b && \
	  $$cc -std=c11 -Wall -Wextra -Werror -pedantic -Iruntime $(CUDA_INC) -o $(B)/gen/driver_main \
	    tests/codegen/driver_main.c $(B)/libpgrt.a $(RT_LIBS) && \
	  ! ldd $(B)/gen/driver_main | grep -q libcuda && \
	  $(NO_DRIVER) $(B)/gen/driver_main tests/corpus/export/mlp_small/mlp_small.safetensors && \
	  $$cc -std=c11 -Wall -Wextra -Werror -pedantic -Icompiler -Iruntime $(CUDA_INC) -o $(B)/gen/tables_main \
	    tests/codegen/tables_main.c && $(B)/gen/tables_main && \
	  $$cc -std=c11 -Wall -Wextra -Werror -pedantic -I$(B)/gen -Iruntime $(CUDA_INC) -o $(B)/gen/nccl_main \
	    tests/codegen/nccl_main.c $(B)/gen/allreduce.c $(B)/libpgrt.a $(RT_LIBS) && \
	  $(NO_DRIVER) $(B)/gen/nccl_main >$(B)/gen/nccl.log || { cat $(B)/gen/nccl.log; exit 1; }; \
	done

# The code-generation test programs of tests/gpu/codegen run over a CPU double of the
# CUDA driver (tests/fakecuda): libpgrt's host side, what it writes into each node and
# when, on every update path; libpgrt from threads (tests/codegen/threads_main.c, also
# under ThreadSanitizer); then again under check-asan's sanitizers (build/asan).
# Not a GPU test: tests/gpu/run_codegen.sh is.
check-fake: $(B)/pgcc
	@if [ ! -f $(CUDA_HOME)/include/cuda.h ]; then echo "CUDA headers not found: check-fake not run"; exit 0; fi; \
	B=$(B) CUDA_HOME=$(CUDA_HOME) bash tests/fakecuda/run.sh && \
	B=build/asan SAN_FLAGS="$(SANITIZE)" CUDA_HOME=$(CUDA_HOME) bash tests/fakecuda/run.sh

# examples/deploy builds warning-free with gcc and clang against libpgrt, through
# pkg-config and runtime/pgrt-uninstalled.pc, with no driver stub on the linker's path
# (libpgrt loads the driver at run time), and links no libcuda; then its README's
# commands run as the README writes them and print what it shows
# (tests/deploy_readme.py): the build, the GPU run (here, without the driver, it stops
# at loading it) and the dry run.  (On a GPU: tests/gpu/run_deploy.sh.)
DEPLOY_EXPORT = tests/corpus/export/mlp_small
check-deploy: $(B)/pgcc
	@if [ ! -f $(CUDA_HOME)/include/cuda.h ]; then echo "CUDA headers not found: check-deploy not run"; exit 0; fi; \
	$(MAKE) --no-print-directory runtime >/dev/null && \
	rm -rf examples/deploy/gen examples/deploy/deploy && \
	for cc in gcc clang; do \
	  env -u LIBRARY_PATH $(MAKE) --no-print-directory -s -C examples/deploy EXPORT=$(CURDIR)/$(DEPLOY_EXPORT) \
	    NAME=mlp_small CC=$$cc PGCC=$(CURDIR)/$(B)/pgcc PKG_CONFIG_PATH=$(CURDIR)/runtime \
	    EXTRA_CFLAGS="-Werror -pedantic" deploy >/dev/null && \
	  ! ldd examples/deploy/deploy | grep -q libcuda && \
	  rm -rf examples/deploy/gen examples/deploy/deploy || { echo "deploy ($$cc): does not build, or links libcuda"; exit 1; }; \
	done && python3 tests/deploy_readme.py
