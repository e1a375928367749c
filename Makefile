# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# xfrag build.  `make` builds everything into build/; `make test` and
# `make demo` first install missing Debian packages (scripts/deps.sh).

CLANG   ?= clang
BPFTOOL ?= bpftool
CC      ?= gcc
PREFIX  ?= /usr/local
DESTDIR ?=
SYSCONFDIR ?= /etc
ifeq ($(PREFIX),/usr)
UNITDIR ?= /lib/systemd/system
else
UNITDIR ?= /etc/systemd/system
endif
OUT     := build

ifeq ($(V),1)
Q :=
else
Q := @
endif

BPF_CFLAGS := -O2 -g -target bpf -mcpu=v3 -Wall -Werror -Iinclude -Ibpf -I.
CFLAGS  ?= -O2 -g
CFLAGS  += -Wall -Wextra -Werror -Iinclude -I$(OUT) -Iuser
LDLIBS  := -lxdp -lbpf -lelf -lz -lmicrohttpd

BPF_SRC  := bpf/xfrag.bpf.c
BPF_HDRS := $(wildcard bpf/*.h) include/xfrag.h vmlinux.h
USER_SRC := $(wildcard user/*.c)
USER_HDR := $(wildcard user/*.h) include/xfrag.h

TEST_BINS := $(OUT)/test_prog $(OUT)/fuzz_prog $(OUT)/fragsend \
	     $(OUT)/udpcheck $(OUT)/gen $(OUT)/sink $(OUT)/diffgen \
	     $(OUT)/diffrecv $(OUT)/xdp_count.bpf.o $(OUT)/progstats \
	     $(OUT)/xfcheck

.PHONY: all clean test demo deps install vmlinux bench bench-bin soak fuzz lint FORCE \
	fuzz-bin fuzz-diff test-vm deb

all: $(OUT)/xfrag.bpf.o $(OUT)/xfrag $(OUT)/xfrag.8 $(TEST_BINS)

$(OUT):
	$(Q)mkdir -p $@

$(OUT)/xfrag.bpf.o: $(BPF_SRC) $(BPF_HDRS) | $(OUT)
	@echo "  BPF     $@"
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUT)/xdp_count.bpf.o: tests/xdp_count.bpf.c vmlinux.h | $(OUT)
	@echo "  BPF     $@"
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUT)/xfrag.skel.h: $(OUT)/xfrag.bpf.o
	@echo "  SKEL    $@"
	$(Q)$(BPFTOOL) gen skeleton $< name xfrag_bpf > $@

$(OUT)/xfrag: $(USER_SRC) $(USER_HDR) $(OUT)/xfrag.skel.h
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $(USER_SRC) -o $@ $(LDLIBS)

# test_prog and fuzz_prog: one program each, its parts by concern.
$(OUT)/test_prog: $(wildcard tests/test_prog/*.c tests/test_prog/*.h) tests/counters.h tests/frame.h include/xfrag.h user/probe.h $(OUT)/xfrag.skel.h
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) -Itests $(wildcard tests/test_prog/*.c) -o $@ $(LDLIBS)

$(OUT)/xfcheck: tests/xfcheck.c tests/counters.h include/xfrag.h
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $< -o $@

$(OUT)/progstats: tests/progstats.c include/xfrag.h user/probe.h $(OUT)/xfrag.skel.h
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $< -o $@ $(LDLIBS)

# xfrag(8), written by the program from its own tables (user/man.c).
$(OUT)/xfrag.8: $(OUT)/xfrag
	@echo "  MAN     $@"
	$(Q)$< --man > $@

$(OUT)/fuzz_prog: $(wildcard tests/fuzz_prog/*.c tests/fuzz_prog/*.h) tests/counters.h tests/frame.h include/xfrag.h user/probe.h $(OUT)/xfrag.skel.h
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) -Itests $(wildcard tests/fuzz_prog/*.c) -o $@ $(LDLIBS)

$(OUT)/fragsend: tests/fragsend.c tests/frame.h tests/payload.h
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $< -o $@

$(OUT)/udpcheck: tests/udpcheck.c tests/payload.h tests/frame.h
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $< -o $@

$(OUT)/diffgen: tests/diffgen.c tests/diffcommon.h tests/frame.h include/xfrag.h | $(OUT)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $< -o $@

$(OUT)/diffrecv: tests/diffrecv.c tests/diffcommon.h | $(OUT)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $< -o $@

# ---- libFuzzer targets (tests/fuzz/): the user-space parsers ---------------
# tests/fuzz_test.sh (in `make test`) builds them and runs each briefly;
# `make fuzz [FUZZ_TIME=600]` runs each for FUZZ_TIME seconds.
FUZZ_CC      ?= clang
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS  := -g -O1 $(FUZZ_SAN) -Wall -Wextra -Werror -Iinclude -Iuser \
		-I$(OUT) -Itests/fuzz
FUZZ_TARGETS := num args config render path conffile
FUZZ_BINS    := $(addprefix $(OUT)/fuzz_,$(FUZZ_TARGETS))
FUZZ_OBJS    := $(patsubst user/%.c,$(OUT)/fuzz/%.o,\
		$(filter-out user/xfrag.c,$(USER_SRC)))
FUZZ_TIME    ?= 600

fuzz-bin: $(FUZZ_BINS)

# Objects shared by every target: keep them.
.SECONDARY: $(FUZZ_OBJS)

$(OUT)/fuzz/%.o: user/%.c $(USER_HDR) $(OUT)/xfrag.skel.h
	@echo "  FUZZCC  $@"
	$(Q)mkdir -p $(OUT)/fuzz
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(OUT)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h tests/fuzz/json.h $(FUZZ_OBJS)
	@echo "  FUZZCC  $@"
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $< $(FUZZ_OBJS) -o $@ \
		$(LDLIBS)

fuzz: deps
	$(Q)$(MAKE) --no-print-directory fuzz-bin
	$(Q)tests/fuzz_test.sh --time $(FUZZ_TIME)

# ---- Benchmark (bench/): never part of `make test` -------------------------
BENCH_BINS := $(OUT)/micro

bench-bin: all $(BENCH_BINS)

$(OUT)/floors.bpf.o: bench/floors.bpf.c bpf/siphash.h include/xfrag.h vmlinux.h | $(OUT)
	@echo "  BPF     $@"
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUT)/floors.skel.h: $(OUT)/floors.bpf.o
	@echo "  SKEL    $@"
	$(Q)$(BPFTOOL) gen skeleton $< name floors_bpf > $@

$(OUT)/micro: bench/micro.c include/xfrag.h $(OUT)/xfrag.skel.h $(OUT)/floors.skel.h
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $< -o $@ $(LDLIBS)

$(OUT)/gen: bench/gen.c tests/frame.h tests/payload.h | $(OUT)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $< -o $@ -lm

$(OUT)/sink: bench/sink.c tests/payload.h tests/frame.h | $(OUT)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $< -o $@

# make bench [BENCH_ARGS=--quick]
bench: deps
	$(Q)$(MAKE) --no-print-directory bench-bin
	$(Q)bench/run.sh $(BENCH_ARGS)

# ---- Soak (tests/soak.sh): never part of `make test` ------------------------
# make soak [SOAK_SECS=600] [SOAK_ARGS="--attach-args '--buckets 512'"]
SOAK_SECS ?= 600

soak: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/soak.sh --duration $(SOAK_SECS) $(SOAK_ARGS)

# vmlinux.h is committed; regenerate it from the running kernel's BTF.
vmlinux:
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux.h

deps:
	$(Q)scripts/deps.sh

test: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/run.sh

# make test-vm [KERNEL=6.1|6.12] [SUITES="unit ns ..."]: the suites inside a
# qemu guest on Debian 12's own kernel (tests/vm.sh).
test-vm: deps
	$(Q)scripts/deps.sh vm
	$(Q)$(MAKE) --no-print-directory all
	$(Q)KERNEL=$(or $(KERNEL),6.1) SUITES="$(SUITES)" tests/vm.sh

# make fuzz-diff [SEED=S] [BATCHES=N]: the long differential test
fuzz-diff: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/diff_test.sh --long $(if $(SEED),--seed $(SEED)) \
		$(if $(BATCHES),--batches $(BATCHES))

# Shell scripts through shellcheck (warnings and errors); also a suite of
# `make test`.
lint:
	$(Q)tests/lint.sh

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/demo.sh

# systemd units, with the paths of this install in them.
UNITS := $(OUT)/units/xfrag@.service $(OUT)/units/xfrag-exporter.service

$(OUT)/units/%.service: scripts/systemd/%.service.in FORCE
	$(Q)mkdir -p $(@D)
	$(Q)sed -e 's|@SBINDIR@|$(PREFIX)/sbin|g' \
		-e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' $< >$@

FORCE:

install: $(OUT)/xfrag $(OUT)/xfrag.bpf.o $(OUT)/xfrag.8 $(UNITS)
	install -D -m 0755 $(OUT)/xfrag $(DESTDIR)$(PREFIX)/sbin/xfrag
	install -D -m 0644 $(OUT)/xfrag.8 $(DESTDIR)$(PREFIX)/share/man/man8/xfrag.8
	install -D -m 0644 $(OUT)/xfrag.bpf.o $(DESTDIR)$(PREFIX)/lib/bpf/xfrag.bpf.o
	install -D -m 0644 $(OUT)/units/xfrag@.service $(DESTDIR)$(UNITDIR)/xfrag@.service
	install -D -m 0644 $(OUT)/units/xfrag-exporter.service $(DESTDIR)$(UNITDIR)/xfrag-exporter.service
	install -D -m 0644 scripts/xfrag.conf.example $(DESTDIR)$(SYSCONFDIR)/xfrag/xfrag.conf.example

# make deb: the Debian package (debian/), built from a copy of the tracked
# files in $(OUT)/deb; the .deb lands there.
DEB_VERSION := $(shell sed -n '1s/.*(\(.*\)).*/\1/p' debian/changelog)
deb:
	$(Q)rm -rf $(OUT)/deb && mkdir -p $(OUT)/deb/xfrag-$(DEB_VERSION)
	$(Q)git ls-files -z | xargs -0 cp --parents -t $(OUT)/deb/xfrag-$(DEB_VERSION)
	$(Q)cd $(OUT)/deb/xfrag-$(DEB_VERSION) && \
		env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS dpkg-buildpackage -us -uc -b \
		>../build.log 2>&1 || \
		{ tail -20 ../build.log; exit 1; }
	$(Q)ls $(OUT)/deb/*.deb

clean:
	rm -rf $(OUT)
