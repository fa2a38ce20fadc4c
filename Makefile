# tinspect - see README.md. Targets: all test conformance asan fuzz bench man install uninstall clean run deps
# The folders of src/ depend on each other one way only, as LAYERS lists (tests/layers/run.sh).
.DELETE_ON_ERROR:
.SUFFIXES:

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
PYLIBDIR ?= $(PREFIX)/lib/tinspect/python
DESTDIR ?=
CC ?= cc
PYTHON ?= /usr/bin/python3
PKG_CONFIG ?= pkg-config

DEPS_CFLAGS := $(shell $(PKG_CONFIG) --cflags libzip libcjson 2>/dev/null)
# libzip: its header only. The library is not linked: src/format/zip_lazy.c opens it
# when a command first inflates or opens an archive with it, so the others do not map
# it and what it links (libcrypto, libbz2, libz).
DEPS_LIBS := $(shell $(PKG_CONFIG) --libs libcjson 2>/dev/null) -lm -ldl -lpthread
# libcurl (URLs, src/io/http.c): its header only. The library is not linked: http.c opens it with
# dlopen when a command first reads a URL, so commands on local files never map it and its TLS stack.
DEPS_CFLAGS += $(shell $(PKG_CONFIG) --cflags libcurl 2>/dev/null)
# The unit tests build zips with libzip's writing functions, so they link it.
TEST_LIBS := $(shell $(PKG_CONFIG) --libs criterion libzip 2>/dev/null)
# OpenBLAS (tinspect run): its header only. The library is not linked: run opens it
# with dlopen (src/run/kernels/linalg.c), so no other command loads it or its threads.
# Debian's .pc points at the pthread variant's cblas.h.
DEPS_CFLAGS += $(shell $(PKG_CONFIG) --cflags openblas 2>/dev/null)

# Ours first, the user's CFLAGS last so they can override.
BASE_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L -D_FILE_OFFSET_BITS=64 -Wall -Wextra -Werror -O2 -g
CPPFLAGS_ALL = -Iinclude -Isrc $(DEPS_CFLAGS)
SAN_FLAGS = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# The test programs and the sanitized builds are linked as fixed-address executables: Criterion
# starts the unit tests' program once per test (fork and exec), and a position-independent one
# first writes its ~40,000 (465,000 under ASan) relative relocations, page by page; the sanitized
# program starts ~25 % sooner. The program users run stays position-independent.
TEST_LINK = -no-pie

LIB_SRC := $(wildcard src/util/*.c src/io/*.c src/core/*.c src/format/*.c src/source/*.c src/shapes/*.c src/ops/*.c src/nn/*.c src/model/*.c src/memory/*.c src/materialize/*.c src/convert/*.c src/scan/*.c src/check/*.c src/diff/*.c src/stats/*.c src/run/*.c src/run/kernels/*.c)
CLI_SRC := $(wildcard src/cli/*.c)
TEST_SRC := $(wildcard tests/unit/*.c)

# The Hugging Face templates (src/model/hf/*.json, docs/huggingface.md), built into the program
# as one generated C file: adding a model_type is adding its template.
HF_TEMPLATES := $(sort $(wildcard src/model/hf/*.json))
HF_GEN := build/gen/hf_templates.c

LIB_OBJ := $(LIB_SRC:%.c=build/%.o) build/gen/hf_templates.o
CLI_OBJ := $(CLI_SRC:%.c=build/%.o)
TEST_OBJ := $(TEST_SRC:%.c=build/%.o)
ASAN_LIB_OBJ := $(LIB_SRC:%.c=build/asan/%.o) build/asan/gen/hf_templates.o
ASAN_CLI_OBJ := $(CLI_SRC:%.c=build/asan/%.o)
ASAN_TEST_OBJ := $(TEST_SRC:%.c=build/asan/%.o)

all: tinspect

# Relative relocations packed (DT_RELR: binutils 2.38, glibc 2.36) where the
# toolchain links a program with them: the loader reads 1 KiB of them instead
# of 120 KiB at every start, a quarter of a megabyte less resident for inspect.
# (Probed when the program is linked, in build/.)
RELR_LDFLAGS = $(shell printf 'int main(void){return 0;}\n' >build/relr-probe.c 2>/dev/null && \
	$(CC) -o build/relr-probe build/relr-probe.c -Wl,-z,pack-relative-relocs >/dev/null 2>&1 && \
	build/relr-probe && echo -Wl,-z,pack-relative-relocs; rm -f build/relr-probe build/relr-probe.c)

# Link-time optimisation for the program: what one file calls in another (the arena, the value
# constructors, the pickle machine's hooks) is inlined as calls within a file are; inspect of
# 20,000 tensors takes 3 % less. Fat objects: the unit tests link the same objects without it
# (-fno-lto), as quickly as before.
# `make LTO=` builds without. Each file is compiled with every warning as before; the link's
# whole-program inlining makes gcc guess "may be used uninitialized" of an out-parameter that
# its callee sets on success (a different few with each partitioning), so the link leaves that
# one out.
LTO ?= -flto=auto -ffat-lto-objects
LTO_LINK = $(if $(LTO),-Wno-maybe-uninitialized)

# Profile-guided optimisation (gcc): the program is first built instrumented (build/pgo/, without
# LTO), runs tools/pgo-train.sh (inspect and scan of the bundled fixtures, never the benchmark's
# files), and each object is then compiled with the counts it left: what inspect runs is tuned to
# how it runs and laid out together (.text.hot), what the training never ran is compiled as
# without a profile (-fprofile-partial-training). inspect of 20,000 tensors takes about 6 % less
# time, and its code touches half the pages it did (vit_l_16's peak resident set 0.3 MB less).
# `make PGO=` builds without (a quicker build while editing); with a compiler that lacks the
# options, it is off. An edit retrains, then recompiles the objects whose counts changed: both
# compiles of a file name its counts build/prof/FILE.gcda (-dumpbase, which also names its static
# functions' counts, so the two must agree), and its stamp build/FILE.prof changes only with them.
PGO ?= $(shell printf 'int main(void){return 0;}\n' | $(CC) -x c -fprofile-use -fprofile-partial-training \
	-fprofile-update=single -Wno-missing-profile -o /dev/null - >/dev/null 2>&1 && echo 1)
# Instrumented code and code compiled from counts inline differently from plain -O2, and gcc then
# guesses "may be used uninitialized" of out-parameters (as the LTO link does, above); the plain
# build (make PGO= LTO=), make asan and the unit tests' own files keep every warning.
PGO_GEN = -fprofile-generate -fprofile-update=single -Wno-maybe-uninitialized
PGO_USE = $(if $(PGO),-fprofile-use -fprofile-partial-training -Wno-missing-profile -Wno-maybe-uninitialized)
PGO_OBJ := $(patsubst build/%,build/pgo/%,$(CLI_OBJ) $(filter-out build/gen/%,$(LIB_OBJ)))

tinspect: $(LIB_OBJ) $(CLI_OBJ)
	$(CC) $(BASE_CFLAGS) $(LTO) $(LTO_LINK) $(PGO_USE) $(CFLAGS) -o $@ $(CLI_OBJ) $(LIB_OBJ) $(DEPS_LIBS) $(RELR_LDFLAGS) $(LDFLAGS)

build/pgo/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(PGO_GEN) -dumpbase build/prof/$* $(CPPFLAGS_ALL) $(CFLAGS) -MMD -MP -c -o $@ $<

# The templates are data: one object, with no profile, serves both programs.
build/pgo/tinspect: $(PGO_OBJ) build/gen/hf_templates.o
	$(CC) $(BASE_CFLAGS) $(PGO_GEN) $(CFLAGS) -o $@ $(PGO_OBJ) build/gen/hf_templates.o $(DEPS_LIBS) $(LDFLAGS)

build/pgo/trained: build/pgo/tinspect tools/pgo-train.sh
	rm -rf build/prof
	sh tools/pgo-train.sh build/pgo/tinspect
	@touch $@

PGO_PROF := $(patsubst %.o,%.prof,$(CLI_OBJ) $(filter-out build/gen/%,$(LIB_OBJ)))
$(PGO_PROF): build/%.prof: build/pgo/trained
	@mkdir -p $(@D) && \
	if [ -f build/prof/$*.gcda ]; then sum=$$(cksum <build/prof/$*.gcda); else sum=untrained; fi && \
	{ [ "$$(cat $@ 2>/dev/null)" = "$$sum" ] || echo "$$sum" >$@; }

build/%.o: %.c $(if $(PGO),build/%.prof)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(LTO) $(PGO_USE) $(if $(PGO),-dumpbase build/prof/$*) $(CPPFLAGS_ALL) $(CFLAGS) -MMD -MP -c -o $@ $<

# The unit tests' own files: no profile (the training runs none of them), every warning.
build/tests/%.o: tests/%.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(LTO) $(CPPFLAGS_ALL) $(CFLAGS) -MMD -MP -c -o $@ $<

build/asan/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) $(CPPFLAGS_ALL) $(CFLAGS) -MMD -MP -c -o $@ $<

$(HF_GEN): $(HF_TEMPLATES) tools/embed-templates.sh
	@mkdir -p $(@D)
	sh tools/embed-templates.sh $(HF_TEMPLATES) >$@

build/gen/hf_templates.o: $(HF_GEN)
	$(CC) $(BASE_CFLAGS) $(LTO) $(CPPFLAGS_ALL) $(CFLAGS) -c -o $@ $<

build/asan/gen/hf_templates.o: $(HF_GEN)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) $(CPPFLAGS_ALL) $(CFLAGS) -c -o $@ $<

build/fuzz/gen/hf_templates.o: $(HF_GEN)
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(CPPFLAGS_ALL) $(CFLAGS) -c -o $@ $<

# The random draw loops call sqrtf: without errno to set, gcc -O2 vectorises them (src/materialize/draw.h);
# the values are the same, sqrt being correctly rounded either way.
build/src/materialize/draw.o build/asan/src/materialize/draw.o build/pgo/src/materialize/draw.o: BASE_CFLAGS += -fno-math-errno
# The CPU kernels' loops: -O2's cost model vectorises none that needs an aliasing check at run time
# (a kernel's input and output are separate buffers it cannot prove so); the dynamic one does.
build/src/run/%.o build/asan/src/run/%.o build/pgo/src/run/%.o: BASE_CFLAGS += -fvect-cost-model=dynamic

# The CLI's progress bar, output helpers, memory chart and CI reports are tested as units (the chart
# writes through outfile.c, which reports through common.c); the fake CUDA driver lets the
# CUDA code run its whole path without a GPU (tests/unit/fake/).
UNIT_CLI_OBJ := build/src/cli/progress.o build/src/cli/output.o build/src/cli/memory_plot.o \
	build/src/cli/outfile.o build/src/cli/common.o build/src/cli/ci_report.o build/src/cli/json_pool.o
ASAN_UNIT_CLI_OBJ := $(UNIT_CLI_OBJ:build/%=build/asan/%)

build/unit-tests: $(TEST_OBJ) $(LIB_OBJ) $(UNIT_CLI_OBJ) build/fake_libcuda.so
	$(CC) $(BASE_CFLAGS) $(if $(LTO),-fno-lto) $(CFLAGS) $(TEST_LINK) -o $@ $(TEST_OBJ) $(LIB_OBJ) $(UNIT_CLI_OBJ) $(DEPS_LIBS) $(TEST_LIBS) $(LDFLAGS)

build/fake_libcuda.so: tests/unit/fake/fake_libcuda.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) -shared -fPIC -o $@ $<

build/asan/tinspect: $(ASAN_LIB_OBJ) $(ASAN_CLI_OBJ)
	$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) $(CFLAGS) $(TEST_LINK) -o $@ $(ASAN_CLI_OBJ) $(ASAN_LIB_OBJ) $(DEPS_LIBS) $(LDFLAGS)

build/asan/unit-tests: $(ASAN_TEST_OBJ) $(ASAN_LIB_OBJ) $(ASAN_UNIT_CLI_OBJ) build/fake_libcuda.so
	$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) $(CFLAGS) $(TEST_LINK) -o $@ $(ASAN_TEST_OBJ) $(ASAN_LIB_OBJ) $(ASAN_UNIT_CLI_OBJ) $(DEPS_LIBS) $(TEST_LIBS) $(LDFLAGS)

# Installs missing Debian packages when run as root; otherwise prints the apt-get line and stops.
deps:
	@sh tools/install-deps.sh build

deps-test:
	@sh tools/install-deps.sh test

# The main job on a bundled fixture.
run: deps
	@$(MAKE) --no-print-directory all
	./tinspect fixtures/resnet18_small.pt --device meta

# Unit tests (Criterion), CLI tests (expected output files), the man page's,
# README's and docs/*.md's examples run as shown (tests/docs/), the JUnit XML against its schema
# (tests/ci/), no BLAS and no thread in the commands that need neither (tests/threads/), then, when python3-torch is installed, the conformance suites that
# take seconds to a minute or two each: about 10 minutes on two cores in all.
# The long PyTorch suites are `make conformance`'s.
test: deps-test
	@$(MAKE) --no-print-directory all build/unit-tests
	./build/unit-tests --jobs 2
	sh tests/cli/run.sh ./tinspect
	sh tests/scan/run.sh ./tinspect
	$(PYTHON) tests/scan/differential.py ./tinspect
	sh tests/torture/run.sh ./tinspect
	$(PYTHON) tests/conformance/inspect_formats.py ./tinspect
	$(PYTHON) tests/conformance/npy_conformance.py ./tinspect
	@if command -v node >/dev/null && command -v npm >/dev/null; then $(PYTHON) tests/conformance/gguf_conformance.py ./tinspect; \
	else echo "gguf conformance: skipped (node and npm are not installed)"; fi
	$(PYTHON) tools/export/check_known.py ./tinspect
	sh tests/docs/run.sh ./tinspect
	PYTHON=$(PYTHON) sh tests/remote/run.sh ./tinspect
	sh tests/ci/run.sh ./tinspect
	sh tests/threads/run.sh ./tinspect
	PYTHON=$(PYTHON) sh tests/layers/run.sh
	@if $(PYTHON) -c 'import torch' 2>/dev/null; then \
		$(PYTHON) tests/conformance/conformance.py ./tinspect && \
		$(PYTHON) tests/conformance/shapes_conformance.py ./tinspect && \
		$(PYTHON) tests/conformance/safetensors_conformance.py && \
		$(PYTHON) tests/conformance/writer_conformance.py ./build/unit-tests && \
		$(PYTHON) tests/conformance/cast_conformance.py && \
		$(PYTHON) tests/conformance/convert_conformance.py ./tinspect && \
		$(PYTHON) tests/conformance/roundtrip_conformance.py ./tinspect && \
		$(PYTHON) tests/conformance/state_dict_conformance.py ./tinspect && \
		$(PYTHON) tests/conformance/scan_conformance.py ./tinspect && \
		$(PYTHON) tests/conformance/memory_checkpoint.py ./tinspect && \
		$(PYTHON) tests/conformance/memory_recompute.py ./tinspect && \
		$(PYTHON) tests/conformance/memory_rnn.py ./tinspect && \
		$(PYTHON) -m doctest tests/conformance/memory_judge.py && \
		$(PYTHON) tests/conformance/memory_random.py ./tinspect --compare tests/conformance/memory_models/measured_random_cpu.json --misses tests/conformance/memory_models/random_misses.json --remeasure 20 --check-readme README.md && \
		$(PYTHON) tests/conformance/memory_random.py ./tinspect --compare tests/conformance/memory_models/measured_random_cpu_seed11.json --remeasure 0 && \
		$(PYTHON) tests/conformance/hf_memory_moe.py ./tinspect --compare tests/conformance/memory_models/measured_hf_moe_cpu.json --misses tests/conformance/memory_models/hf_moe_misses.json && \
		$(PYTHON) tests/conformance/memory_lora.py ./tinspect --compare tests/conformance/memory_models/measured_lora_cpu.json && \
		$(PYTHON) tests/conformance/hf_memory.py ./tinspect --compare tests/conformance/memory_models/measured_hf_cpu.json --check-doc docs/huggingface.md && \
		$(PYTHON) tests/conformance/memory_conformance.py ./tinspect --measured tests/conformance/memory_models/measured_cuda_h200.json --check-table docs/memory.md && \
		$(PYTHON) tests/conformance/memory_conformance.py ./tinspect --measured tests/conformance/memory_models/measured_cuda_h200_full.json --check-table README.md && \
		$(PYTHON) tests/conformance/memory_random.py ./tinspect --compare tests/conformance/memory_models/measured_random_cuda_h200.json --misses tests/conformance/memory_models/random_misses_cuda.json && \
		(cd tools/export/tests && TINSPECT=$(CURDIR)/tinspect $(PYTHON) -m unittest -q test_export) && \
		$(PYTHON) tests/conformance/check_conformance.py ./tinspect && \
		$(PYTHON) tests/conformance/diff_conformance.py ./tinspect && \
		$(PYTHON) tests/conformance/legacy_conformance.py ./tinspect && \
		$(PYTHON) tests/conformance/dcp_conformance.py ./tinspect && \
		$(PYTHON) tests/conformance/stats_conformance.py ./tinspect && \
		$(PYTHON) tests/conformance/run_conformance.py ./tinspect --no-shapes-corpus && \
		$(PYTHON) tests/conformance/jit_conformance.py ./tinspect; \
	else echo "conformance: skipped (python3-torch is not installed)"; fi

# The long PyTorch suites, each minutes on two cores: the memory corpus measured live
# (memory_conformance.py), the export corpus (export_conformance.py: shapes, state dicts,
# MACs and the memory of 42 models; its table in docs/shapes-and-export.md is one machine's run, regenerated
# with --regen-readme), the run corpus at full size (run_conformance.py's 300 random chains,
# run_export_conformance.py's 88 models). Memory is measured on this machine's CPU, whose
# instruction set picks oneDNN's kernels; tinspect assumes the same one (cpuid, at most
# $$ONEDNN_MAX_CPU_ISA), so both pass on any x86-64 machine and at any ONEDNN_MAX_CPU_ISA.
# run_export_conformance.py runs every model of the export corpus up to this many G multiply-adds
# at batch 1 (200: all of them); .ci/run gives 50, which leaves out ViT-L/16 and ViT-H/14 (61 and
# 167 G: half the suite's time, with the kernels and shapes of ViT-B/16 and ViT-L/32 at larger sizes).
RUN_EXPORT_MAX_MACS ?= 200

conformance: deps-test
	@$(MAKE) --no-print-directory all build/unit-tests
	@if $(PYTHON) -c 'import torch' 2>/dev/null; then \
		$(PYTHON) tests/conformance/memory_conformance.py ./tinspect && \
		$(PYTHON) tests/conformance/export_conformance.py ./tinspect --check-readme docs/shapes-and-export.md && \
		$(PYTHON) tests/conformance/run_conformance.py ./tinspect --shapes-corpus-only && \
		$(PYTHON) tests/conformance/run_export_conformance.py ./tinspect --max-macs $(RUN_EXPORT_MAX_MACS); \
	else echo "conformance: skipped (python3-torch is not installed)"; fi

# Everything measured again, hours on two cores: the long suites above, the memory corpus at
# its realistic sizes, and every case of the random memory corpus re-measured (make test
# compares all of them with the committed measurements and re-measures 20).
conformance-full: conformance
	@if $(PYTHON) -c 'import torch' 2>/dev/null; then \
		$(PYTHON) tests/conformance/memory_conformance.py ./tinspect --full && \
		$(PYTHON) tests/conformance/memory_random.py ./tinspect --compare tests/conformance/memory_models/measured_random_cpu.json --misses tests/conformance/memory_models/random_misses.json --remeasure all; \
	else echo "conformance-full: skipped (python3-torch is not installed)"; fi

# The whole suite under AddressSanitizer and UndefinedBehaviorSanitizer.
asan: deps-test
	@$(MAKE) --no-print-directory build/asan/tinspect build/asan/unit-tests $(FUZZ_REPLAY_BIN)
	@# Criterion counts a test that leaks as passed: the log is searched for sanitizer reports too.
	ASAN_OPTIONS=detect_leaks=1 ./build/asan/unit-tests --jobs 2 >build/asan/unit.log 2>&1; \
		rc=$$?; cat build/asan/unit.log; test $$rc = 0 && ! grep -qE 'Sanitizer|runtime error' build/asan/unit.log
	ASAN_OPTIONS=detect_leaks=1 sh tests/cli/run.sh ./build/asan/tinspect
	ASAN_OPTIONS=detect_leaks=1 sh tests/scan/run.sh ./build/asan/tinspect
	ASAN_OPTIONS=detect_leaks=1 $(PYTHON) tests/scan/differential.py ./build/asan/tinspect --mutations 1000
	@# The sanitized program starts in ~50-100 ms: the CLI runs on one damaged copy's run in 8
	@# (every copy's runs went through the plain build in make test), and every copy goes
	@# through the in-process harnesses under the sanitizers.
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 TORTURE_SAMPLE=8 \
		TORTURE_REPLAY=$(CURDIR)/build/asan/fuzz-replay- sh tests/torture/run.sh ./build/asan/tinspect
	ASAN_OPTIONS=detect_leaks=1 sh tests/docs/run.sh ./build/asan/tinspect
	ASAN_OPTIONS=detect_leaks=1 UNIT_TESTS=./build/asan/unit-tests sh tests/ci/run.sh ./build/asan/tinspect
	@$(MAKE) --no-print-directory fuzz-replay

bench: deps
	@$(MAKE) --no-print-directory all
	bash bench/bench.sh ./tinspect

# ---- fuzzing (fuzz/README.md) ----
# One libFuzzer harness per reader, built with clang: the library with
# coverage, ASan and UBSan in build/fuzz/. `make fuzz` replays
# fixtures/crashes/ first, then runs each harness for FUZZ_SECONDS on a corpus
# seeded from the fixtures; a crash leaves its input in build/fuzz/crashes/
# and fails the target. `make fuzz-replay` runs the same harnesses without
# libFuzzer (gcc, ASan, UBSan) on the crash fixtures and on the fixtures.
CLANG ?= clang
FUZZ_SECONDS ?= 60
FUZZ_HARNESSES ?= pickle checkpoint safetensors model scan dcp gguf npy
FUZZ_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L -D_FILE_OFFSET_BITS=64 -Wall -Wextra -Werror -O1 -g \
	-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_ALL := pickle checkpoint safetensors model scan dcp gguf npy http
FUZZ_LIB_OBJ := $(LIB_SRC:%.c=build/fuzz/%.o) build/fuzz/gen/hf_templates.o
FUZZ_BIN := $(FUZZ_ALL:%=build/fuzz/fuzz_%)
FUZZ_REPLAY_BIN := $(FUZZ_ALL:%=build/asan/fuzz-replay-%)
# Made by pattern rules alone, they would be deleted as intermediates after each build.
.SECONDARY: $(FUZZ_LIB_OBJ) $(FUZZ_ALL:%=build/fuzz/fuzz/fuzz_%.o) $(FUZZ_ALL:%=build/asan/fuzz/fuzz_%.o) build/asan/fuzz/replay.o

build/fuzz/%.o: %.c
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(CPPFLAGS_ALL) $(CFLAGS) -MMD -MP -c -o $@ $<

build/fuzz/fuzz_%: build/fuzz/fuzz/fuzz_%.o $(FUZZ_LIB_OBJ)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIB_OBJ) $(DEPS_LIBS) $(LDFLAGS)

build/asan/fuzz-replay-%: build/asan/fuzz/replay.o build/asan/fuzz/fuzz_%.o $(ASAN_LIB_OBJ)
	$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) $(CFLAGS) $(TEST_LINK) -o $@ build/asan/fuzz/replay.o build/asan/fuzz/fuzz_$*.o $(ASAN_LIB_OBJ) $(DEPS_LIBS) $(LDFLAGS)

deps-fuzz:
	@sh tools/install-deps.sh fuzz

# The scan's differential test (tests/scan/differential.py) runs last, on the grown
# pickle and scan corpora and DIFF_MUTATIONS mutations of everything.
DIFF_MUTATIONS ?= 30000
fuzz: deps-fuzz
	@$(MAKE) --no-print-directory $(FUZZ_BIN) all
	$(PYTHON) fuzz/seeds.py build/fuzz
	FUZZ_SECONDS=$(FUZZ_SECONDS) sh fuzz/run.sh $(FUZZ_HARNESSES)
	$(PYTHON) tests/scan/differential.py ./tinspect --mutations $(DIFF_MUTATIONS) \
		--corpus build/fuzz/corpus/pickle --corpus build/fuzz/corpus/scan

# For `make asan`: no libFuzzer, no clang.
fuzz-replay:
	@$(MAKE) --no-print-directory $(FUZZ_REPLAY_BIN)
	ASAN_OPTIONS=detect_leaks=1 sh fuzz/replay.sh build/asan/fuzz-replay-

-include $(FUZZ_LIB_OBJ:.o=.d) $(FUZZ_ALL:%=build/fuzz/fuzz/fuzz_%.d) $(FUZZ_ALL:%=build/asan/fuzz/fuzz_%.d) build/asan/fuzz/replay.d

# The CLI and scan-corpus tests with the release binary under valgrind (memcheck): any error,
# or a definite leak, is exit 99 and fails its case.
valgrind: deps-test
	@$(MAKE) --no-print-directory all
	sh tests/cli/run.sh tools/valgrind-tinspect
	sh tests/scan/run.sh tools/valgrind-tinspect

# Renders the man page, as a check that it is well formed.
man:
	MANWIDTH=80 man -l man/tinspect.1 >/dev/null
	MANWIDTH=80 man -l man/tinspect-export.1 >/dev/null

install: tinspect
	mkdir -p $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1
	cp tinspect $(DESTDIR)$(BINDIR)/tinspect
	chmod 755 $(DESTDIR)$(BINDIR)/tinspect
	cp man/tinspect.1 man/tinspect-export.1 $(DESTDIR)$(MANDIR)/man1/
	chmod 644 $(DESTDIR)$(MANDIR)/man1/tinspect.1 $(DESTDIR)$(MANDIR)/man1/tinspect-export.1
	mkdir -p $(DESTDIR)$(PYLIBDIR)/tinspect_export
	cp tools/export/tinspect_export/*.py $(DESTDIR)$(PYLIBDIR)/tinspect_export/
	chmod 644 $(DESTDIR)$(PYLIBDIR)/tinspect_export/*.py
	sed 's|^_LIBDIR = ""|_LIBDIR = "$(PYLIBDIR)"|' tools/export/tinspect-export > $(DESTDIR)$(BINDIR)/tinspect-export
	chmod 755 $(DESTDIR)$(BINDIR)/tinspect-export

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/tinspect $(DESTDIR)$(MANDIR)/man1/tinspect.1 $(DESTDIR)$(MANDIR)/man1/tinspect-export.1
	rm -f $(DESTDIR)$(BINDIR)/tinspect-export
	rm -rf $(DESTDIR)$(PYLIBDIR)/tinspect_export
	-rmdir $(DESTDIR)$(PYLIBDIR) $(DESTDIR)$(PREFIX)/lib/tinspect 2>/dev/null

clean:
	rm -rf build tinspect

.PHONY: conformance-full all deps deps-test deps-fuzz run test conformance asan bench fuzz fuzz-replay valgrind man install uninstall clean

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(PGO_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(ASAN_LIB_OBJ:.o=.d) $(ASAN_CLI_OBJ:.o=.d) $(ASAN_TEST_OBJ:.o=.d)
