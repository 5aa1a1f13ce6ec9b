# scorch build. Quiet by default; `make V=1` shows commands.
#
#   make            build ./scorch
#   make test       install missing packages, build, run every test (unit, fuzz replay, integration)
#   make run        install missing packages, build, profile the whole machine
#   make fuzz       build libFuzzer targets with clang into build/fuzz/
#   make SANITIZE=address,undefined   build everything with sanitizers
#
# Every source is found by pattern: a new src/**/x.c joins the binary, a new
# tests/unit/test_x.c becomes a unit test, a new tests/fuzz/fuzz_x.c a fuzz target
# (corpus in tests/fuzz/corpus/x/), a new src/bpf/x.bpf.c a skeleton build/bpf/x.skel.h.

.DELETE_ON_ERROR:
.SUFFIXES:

V ?= 0
ifeq ($(V),0)
Q = @
say = @printf '  %-7s %s\n' $(1) $(2)
else
Q =
say =
endif

CC       ?= gcc
CLANG    ?= clang
BPFTOOL  ?= bpftool
B        ?= build
ARCH     := x86

WARN     := -Wall -Wextra -Werror -Wmissing-prototypes -Wstrict-prototypes -Wshadow \
            -Wno-unused-parameter -Wformat=2 -Wvla
CFLAGS   ?= -O2 -g
CPPFLAGS += -D_GNU_SOURCE -Isrc -I$(B)/bpf -include src/lib/banned.h
LDLIBS   := -lbpf -lelf -ldw -ldebuginfod -llzma -lz -lzstd -lsqlite3 -lcurl -liberty -lpthread -lm

ifneq ($(SANITIZE),)
CFLAGS  += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SANITIZE)
endif

SRCS      := $(sort $(shell find src -name '*.c' ! -name '*.bpf.c'))
MAIN_SRC  := src/cli/main.c
LIB_SRCS  := $(filter-out $(MAIN_SRC),$(SRCS))
BPF_SRCS  := $(sort $(wildcard src/bpf/*.bpf.c))
SKELS     := $(patsubst src/bpf/%.bpf.c,$(B)/bpf/%.skel.h,$(BPF_SRCS))
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))
HELPER_SRCS := $(sort $(wildcard tests/helpers/*.c))
STORE_TEST_SRCS := $(sort $(wildcard tests/store/*.c))

# Objects for the shipped binary and, separately, a sanitized copy for the unit tests.
OBJS      := $(patsubst %.c,$(B)/obj/%.o,$(LIB_SRCS))
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
SAN_OBJS  := $(patsubst %.c,$(B)/san/%.o,$(LIB_SRCS))
UNITS     := $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRCS))
REPLAYS   := $(patsubst tests/fuzz/%.c,$(B)/replay/%,$(FUZZ_SRCS))
FUZZERS   := $(patsubst tests/fuzz/%.c,$(B)/fuzz/%,$(FUZZ_SRCS))
HELPERS   := $(patsubst tests/helpers/%.c,$(B)/helpers/%,$(HELPER_SRCS))
STORE_TESTS := $(patsubst tests/store/%.c,$(B)/tests-store/%,$(STORE_TEST_SRCS))

all: scorch

scorch: $(B)/obj/$(MAIN_SRC:.c=.o) $(B)/libscorch.a
	$(call say,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(B)/libscorch.a: $(OBJS)
	$(call say,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# Tools and headers are checked once, before anything is built (scripts/check-deps.sh): a
# machine without them gets one message naming what is missing and `make deps`.
$(B)/.deps-ok: scripts/check-deps.sh
	$(Q)mkdir -p $(@D)
	$(Q)sh scripts/check-deps.sh "$(CC)" "$(CLANG)" "$(BPFTOOL)"
	$(Q)touch $@

$(B)/obj/%.o: %.c $(SKELS) $(B)/web_assets.h | $(B)/.deps-ok
	$(call say,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -I$(B) $(CFLAGS) $(WARN) -MMD -MP -c -o $@ $<

$(B)/san/%.o: %.c $(SKELS) $(B)/web_assets.h | $(B)/.deps-ok
	$(call say,CC-SAN,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -I$(B) -O1 -g $(SAN_FLAGS) $(WARN) -MMD -MP -c -o $@ $<

$(B)/libscorch-san.a: $(SAN_OBJS)
	$(call say,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# --- BPF: vmlinux.h from the running kernel's BTF, objects with clang, skeletons with bpftool.
# Generated headers are written to a temporary file and renamed once complete, so a failed or
# interrupted step never leaves a partial file that later builds would take as up to date.
$(B)/bpf/vmlinux.h: | $(B)/.deps-ok
	$(call say,BTF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)test -r /sys/kernel/btf/vmlinux || { echo "error: /sys/kernel/btf/vmlinux is missing: this kernel has no BTF (CONFIG_DEBUG_INFO_BTF)" >&2; exit 1; }
	$(Q)rm -f $@.tmp
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && grep -q 'struct task_struct {' $@.tmp || \
		{ rm -f $@.tmp; echo "error: '$(BPFTOOL) btf dump' failed: cannot write $@ (run 'make deps' to install bpftool)" >&2; exit 1; }
	$(Q)mv $@.tmp $@

# The sampler includes the runtimes' walkers (src/runtime/*/NAME.bpf.h) and their contracts.
BPF_HDRS  := $(wildcard src/bpf/*.h src/runtime/*.h src/runtime/*/*.h)
$(B)/bpf/%.bpf.o: src/bpf/%.bpf.c $(B)/bpf/vmlinux.h $(BPF_HDRS)
	$(call say,BPF,$<)
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -I$(B)/bpf -Isrc/bpf -Isrc \
		-Wall -Werror -Wno-unused-function -c $< -o $@

$(B)/bpf/%.skel.h: $(B)/bpf/%.bpf.o
	$(call say,SKEL,$@)
	$(Q)rm -f $@.tmp
	$(Q)$(BPFTOOL) gen skeleton $< > $@.tmp && test -s $@.tmp || \
		{ rm -f $@.tmp; echo "error: '$(BPFTOOL) gen skeleton' failed for $<" >&2; exit 1; }
	$(Q)mv $@.tmp $@

# --- Web assets embedded in the binary (the standalone flame graph page and, later, the UI)
WEB_FILES := $(sort $(wildcard web/static/*))
$(B)/web_assets.h: $(WEB_FILES) scripts/embed.sh
	$(call say,EMBED,$@)
	$(Q)mkdir -p $(@D)
	$(Q)sh scripts/embed.sh $(WEB_FILES) > $@

# --- Web UI (web/ui/, TypeScript + Vite; docs/ui.md): built into $(B)/web-ui/ when a file of
# web/ui/ changed and embedded as $(B)/web_ui_assets.h (an empty table when npm is missing).
UI_SRCS := $(sort $(shell find web/ui -name node_modules -prune -o -type f ! -name .build.lock -print 2>/dev/null))
$(B)/web-ui/.built: $(UI_SRCS) scripts/build-ui.sh
	$(call say,VITE,$(B)/web-ui)
	$(Q)sh scripts/build-ui.sh $(B)/web-ui
	$(Q)touch $@
$(B)/web_ui_assets.h: $(B)/web-ui/.built scripts/embed.sh
	$(call say,EMBED,$@)
	$(Q)sh scripts/embed.sh -r $(B)/web-ui $$(find $(B)/web-ui -type f ! -name .built | sort) > $@
$(B)/obj/src/server/ui.o $(B)/san/src/server/ui.o: $(B)/web_ui_assets.h

# --- Tests
$(B)/tests/%: tests/unit/%.c tests/unit/test.h $(B)/libscorch-san.a
	$(call say,TEST-CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -I$(B) -Itests/unit -O1 -g $(SAN_FLAGS) $(WARN) -o $@ $< $(B)/libscorch-san.a $(SAN_FLAGS) $(LDLIBS)

# Store tests that need a running backend (ClickHouse): run by the integration test that
# starts it (tests/integration/store_clickhouse.sh), not as unit tests.
$(B)/tests-store/%: tests/store/%.c tests/unit/test.h $(B)/libscorch-san.a
	$(call say,TEST-CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -I$(B) -Itests/unit -O1 -g $(SAN_FLAGS) $(WARN) -o $@ $< $(B)/libscorch-san.a $(SAN_FLAGS) $(LDLIBS)

$(B)/replay/%: tests/fuzz/%.c tests/fuzz/replay_main.c $(B)/libscorch-san.a
	$(call say,REPLAY,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -I$(B) -O1 -g $(SAN_FLAGS) $(WARN) -o $@ $< tests/fuzz/replay_main.c $(B)/libscorch-san.a $(SAN_FLAGS) $(LDLIBS)

$(B)/fuzz/%: tests/fuzz/%.c $(LIB_SRCS) $(SKELS) $(B)/web_assets.h $(B)/web_ui_assets.h
	$(call say,FUZZ,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(CPPFLAGS) -I$(B) -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Wno-unused-command-line-argument \
		-o $@ $< $(LIB_SRCS) $(LDLIBS)

# Helper programs the integration tests and benchmarks profile. Built without frame pointers
# unless their name says otherwise; -O1 keeps the known call chains from being inlined away.
$(B)/helpers/%: tests/helpers/%.c
	$(call say,HELPER,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O1 -g -fomit-frame-pointer -fno-inline -fno-optimize-sibling-calls $(WARN) -o $@ $< -ldl -lz -lpthread -lm

$(B)/helpers/fp_%: tests/helpers/fp_%.c
	$(call say,HELPER,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-inline -fno-optimize-sibling-calls $(WARN) -o $@ $< -ldl -lz -lpthread -lm

# The regressed build of ci_work (checksum does twice the work), same file name as the base
# build so that both runs look alike: what `scorch diff` is tested and measured on.
HELPERS += $(B)/helpers/ci_slow/ci_work
$(B)/helpers/ci_slow/ci_work: tests/helpers/ci_work.c
	$(call say,HELPER,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -DCI_WORK_SLOW -O1 -g -fomit-frame-pointer -fno-inline -fno-optimize-sibling-calls $(WARN) -o $@ $<

# Benchmarks written in C: bench/x.c becomes $(B)/bench/x (optimized, linked with libscorch).
BENCH_SRCS := $(sort $(wildcard bench/*.c))
BENCHES    := $(patsubst bench/%.c,$(B)/bench/%,$(BENCH_SRCS))
$(B)/bench/%: bench/%.c $(B)/libscorch.a
	$(call say,BENCH,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -I$(B) $(CFLAGS) $(WARN) -o $@ $< $(B)/libscorch.a $(LDLIBS)

bench: $(BENCHES)

deps:
	$(Q)sh scripts/install-deps.sh

test-build: scorch $(UNITS) $(REPLAYS) $(HELPERS) $(STORE_TESTS)

test: deps
	$(Q)$(MAKE) --no-print-directory test-build
	$(Q)sh tests/run.sh

fuzz: $(FUZZERS)

run: deps
	$(Q)$(MAKE) --no-print-directory scorch
	$(Q)sh scripts/run.sh

clean:
	rm -rf $(B) scorch

.PHONY: all bench deps test test-build fuzz run clean
.PRECIOUS: $(B)/bpf/%.bpf.o $(B)/bpf/%.skel.h $(B)/bpf/vmlinux.h $(B)/web_assets.h $(B)/web_ui_assets.h

-include $(OBJS:.o=.d) $(SAN_OBJS:.o=.d)
