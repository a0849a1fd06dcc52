# tests/tests.mk -- `make check`: set-up, then every check, ending "N passed, N failed".
#
#   check-generated   the committed scanners/parsers match grammar/
#   check-clang       the compiler builds warning-free with clang too
#   test              the Check suites (tests/run.c): unit, golden, malformed, CLI

TEST_SRCS = tests/run.c tests/helpers.c \
	tests/unit/test_arena.c tests/unit/test_record.c tests/unit/test_diag.c tests/unit/test_dot.c \
	tests/unit/test_graph.c tests/unit/test_verify.c tests/unit/test_cli.c tests/unit/test_partition.c \
	tests/golden/test_corpus.c tests/golden/test_malformed.c
TEST_LIBS = $(shell pkg-config --libs check jansson 2>/dev/null || echo -lcheck -ljansson)
TEST_CFLAGS = $(shell pkg-config --cflags check jansson 2>/dev/null)

$(B)/tests/run: $(TEST_SRCS) tests/helpers.h $(B)/libpgcc.a $(HEADERS)
	@mkdir -p $(B)/tests
	@$(if $(Q),echo "LD $@")
	$(Q)$(CC) $(CPPFLAGS) $(TEST_CFLAGS) $(CFLAGS) -Wno-missing-prototypes -o $@ $(TEST_SRCS) $(B)/libpgcc.a $(TEST_LIBS) -lm

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

check: deps
	@$(MAKE) --no-print-directory check-generated
	@$(MAKE) --no-print-directory check-clang
	@$(MAKE) --no-print-directory check-cuda
	@$(MAKE) --no-print-directory test
