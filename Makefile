# pmalloc - one plain GNU Makefile.
#
#   make            library, daemon, CLI          make check    unit + integration tests
#   make bench      benchmarks (ratios)           make demo     the whole story, end to end
#   make install DESTDIR=... PREFIX=...           make lint     cppcheck
#
# Build dependencies are Debian packages; a missing one is installed with
# apt-get when run as root, or the exact command is printed (target deps).
# pkg-config flags are recursively expanded variables, so they are read when
# a recipe runs, after deps has had its say.

PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
SYSCONFDIR ?= /etc
UNITDIR ?= $(PREFIX)/lib/systemd/system
CATALOGDIR ?= $(PREFIX)/lib/systemd/catalog
DESTDIR ?=

CC ?= gcc
B := build

DEB_PACKAGES := pkg-config libconfig-dev libsystemd-dev libseccomp-dev check libelf-dev libdw-dev
PC_MODULES := libconfig libsystemd libseccomp check libelf libdw
# What the tests and benchmarks run besides our own programs: real servers and
# allocators, clang for the fuzzers, the journal's remote transport.  Each is
# checked by a file it installs; installing a server never starts it
# system-wide (a policy-rc.d that refuses, for the length of apt's run).
TEST_DEB_PACKAGES := redis-server redis-tools nginx-light memcached curl libjemalloc2 \
	libjemalloc-dev libmimalloc-dev libgoogle-perftools4 clang libclang-rt-14-dev \
	systemd-journal-remote
TEST_DEB_FILES := /usr/bin/redis-server /usr/bin/redis-benchmark /usr/sbin/nginx /usr/bin/memcached \
	/usr/bin/curl /usr/include/jemalloc/jemalloc.h /usr/include/mimalloc.h \
	/usr/bin/clang /lib/systemd/systemd-journal-remote

WARN := -Wall -Wextra -Wmissing-prototypes -Wstrict-prototypes -Wshadow -Wcast-qual \
	-Wwrite-strings -Wundef -Werror
HARDEN := -fstack-protector-strong -fstack-clash-protection -fcf-protection -D_FORTIFY_SOURCE=2
CFLAGS ?= -O2 -g
BASE_CFLAGS = -std=gnu11 $(WARN) $(HARDEN) -Iinclude -Ishim -MMD -MP $(CFLAGS)
LDHARDEN := -Wl,-z,defs,-z,relro,-z,now

pc_cflags = $(shell pkg-config --cflags $(1))
pc_libs = $(shell pkg-config --libs $(1))

# The shim: every shim/*.c, position-independent, only PMALLOC_EXPORT visible.
SHIM_SRCS := $(wildcard shim/*.c)
SHIM_OBJS := $(SHIM_SRCS:%.c=$(B)/pic/%.o)
SHIM_LIB := $(B)/libpmalloc_shim.so
SHIM_CFLAGS = $(BASE_CFLAGS) -fPIC -fvisibility=hidden -fno-plt -DPMALLOC_BUILDING_SHIM \
	$(call pc_cflags,libconfig libelf)
SHIM_LIBS = $(call pc_libs,libconfig libelf) -lgcc_s -ldl -lpthread

# Code the daemon side shares with the shim (policy model, wire format).
SHARED_SRCS := $(wildcard shim/policy*.c)
SHARED_OBJS := $(SHARED_SRCS:%.c=$(B)/pie/%.o)

CTL_SRCS := $(wildcard daemon/ctl*.c)
DAEMON_SRCS := $(filter-out $(CTL_SRCS),$(wildcard daemon/*.c))
DAEMON_OBJS := $(DAEMON_SRCS:%.c=$(B)/pie/%.o)
CTL_OBJS := $(CTL_SRCS:%.c=$(B)/pie/%.o)
PIE_CFLAGS = $(BASE_CFLAGS) -fPIE $(call pc_cflags,libconfig libsystemd libseccomp libdw)
DAEMON_LIBS = $(call pc_libs,libconfig libsystemd libseccomp libdw)

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(B)/tests/%)
# Test programs; tests/progs/libNAME.c are shared libraries they dlopen.
PROG_LIB_SRCS := $(wildcard tests/progs/lib*.c)
PROG_SRCS := $(filter-out $(PROG_LIB_SRCS),$(wildcard tests/progs/*.c))
PROG_BINS := $(PROG_SRCS:tests/progs/%.c=$(B)/progs/%) $(PROG_LIB_SRCS:tests/progs/%.c=$(B)/progs/%.so)
BENCH_SRCS := $(filter-out tests/bench/alloc_cmp.c,$(wildcard tests/bench/*.c))
BENCH_BINS := $(BENCH_SRCS:tests/bench/%.c=$(B)/bench/%)
# One allocation benchmark, built once with the pool API and once linked
# with each malloc it is compared to (glibc alone, jemalloc, mimalloc).
ALLOC_CMP_BINS := $(B)/bench/alloc_pool $(B)/bench/alloc_glibc $(B)/bench/alloc_jemalloc \
	$(B)/bench/alloc_mimalloc

ALL := $(SHIM_LIB) $(B)/pmalloc.pc
ifneq ($(DAEMON_SRCS),)
ALL += $(B)/pmallocd
endif
ifneq ($(CTL_SRCS),)
ALL += $(B)/pmallocctl
endif

.PHONY: all deps test-deps check unit integration bench demo install lint clean
all: $(ALL)

deps: $(B)/.deps
$(B)/.deps:
	@mkdir -p $(B)
	@missing=""; \
	for m in $(PC_MODULES); do pkg-config --exists $$m 2>/dev/null || missing=yes; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "pmalloc: installing build dependencies: $(DEB_PACKAGES)"; \
			DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEB_PACKAGES) >/dev/null || exit 1; \
		else \
			echo "pmalloc: missing build dependencies; run: sudo apt-get install $(DEB_PACKAGES)"; \
			exit 1; \
		fi; \
	fi
	@touch $@

test-deps: $(B)/.test-deps
$(B)/.test-deps:
	@mkdir -p $(B)
	@missing=""; for f in $(TEST_DEB_FILES); do [ -e $$f ] || missing=yes; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "pmalloc: installing test dependencies: $(TEST_DEB_PACKAGES)"; \
			rcd=; if [ ! -e /usr/sbin/policy-rc.d ]; then \
				printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && rcd=1; fi; \
			DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(TEST_DEB_PACKAGES) >/dev/null; r=$$?; \
			[ -n "$$rcd" ] && rm -f /usr/sbin/policy-rc.d; [ $$r = 0 ] || exit 1; \
		else \
			echo "pmalloc: missing test dependencies; run: sudo apt-get install $(TEST_DEB_PACKAGES)"; \
			exit 1; \
		fi; \
	fi
	@touch $@

$(B)/pic/%.o: %.c | $(B)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(SHIM_CFLAGS) -c $< -o $@

$(B)/pie/%.o: %.c | $(B)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(PIE_CFLAGS) -c $< -o $@

$(SHIM_LIB): $(SHIM_OBJS) shim/exports.map
	$(CC) -shared $(LDHARDEN) $(LDFLAGS) -Wl,--version-script=shim/exports.map -Wl,-soname,libpmalloc_shim.so \
		-o $@ $(SHIM_OBJS) $(SHIM_LIBS)

$(B)/pmallocd: $(DAEMON_OBJS) $(SHARED_OBJS)
	$(CC) -pie $(LDHARDEN) $(LDFLAGS) -o $@ $^ $(DAEMON_LIBS)

$(B)/pmallocctl: $(CTL_OBJS) $(SHARED_OBJS)
	$(CC) -pie $(LDHARDEN) $(LDFLAGS) -o $@ $^ $(DAEMON_LIBS)

# pkg-config file for the build tree's prefix; install writes its own from
# the install-time variables.
write_pc = printf 'prefix=%s\nlibdir=%s\nincludedir=%s\n\nName: pmalloc\nDescription: protectable memory pools\nVersion: 0.1\nLibs: -L$${libdir} -lpmalloc_shim\nCflags: -I$${includedir}\n' \
	'$(PREFIX)' '$(LIBDIR)' '$(INCLUDEDIR)'
$(B)/pmalloc.pc: Makefile
	@mkdir -p $(B)
	$(write_pc) > $@

# Unit tests (Check): each tests/unit/test_*.c is one program, linked against
# the shim as a user would, plus the shared objects for white-box tests.
$(B)/tests/%: tests/unit/%.c $(SHIM_LIB) $(SHARED_OBJS) tests/unit/testutil.h
	@mkdir -p $(dir $@)
	$(CC) $(PIE_CFLAGS) -fPIE -pie $(LDFLAGS) $(call pc_cflags,check) -o $@ $< $(SHARED_OBJS) \
		-L$(B) -Wl,-rpath,'$$ORIGIN/..' -lpmalloc_shim $(call pc_libs,check libconfig) -lpthread

# Small programs the tests run, built as someone else would build them:
# no pmalloc headers unless they use the API, symbols kept (not stripped).
$(B)/progs/%: tests/progs/%.c $(SHIM_LIB)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O0 -g -Wall -Werror -Iinclude -o $@ $< -L$(B) -Wl,-rpath,'$$ORIGIN/..' \
		$(if $(findstring api_,$*),-lpmalloc_shim) -ldl -lpthread

$(B)/progs/lib%.so: tests/progs/lib%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g -Wall -Werror -fPIC -shared -o $@ $<

# Benchmarks named bench_* use the API; the others are plain programs that
# the runner preloads the shim into (or not).
$(B)/bench/%: tests/bench/%.c $(SHIM_LIB)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -Wall -Werror -Iinclude -o $@ $< -L$(B) -Wl,-rpath,'$$ORIGIN/..' \
		$(if $(findstring bench_,$*),-lpmalloc_shim) -lpthread

check: all test-deps $(UNIT_BINS) $(PROG_BINS)
	@tests/run-tests $(B) $(UNIT_BINS)

$(B)/bench/alloc_pool: tests/bench/alloc_cmp.c $(SHIM_LIB)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -Wall -Werror -Iinclude -DWITH_POOL -o $@ $< -L$(B) -Wl,-rpath,'$$ORIGIN/..' \
		-lpmalloc_shim

$(B)/bench/alloc_%: tests/bench/alloc_cmp.c | $(B)/.test-deps
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -Wall -Werror -Iinclude -o $@ $< $(if $(filter-out glibc,$*),-l$*)

bench: all test-deps $(BENCH_BINS) $(ALLOC_CMP_BINS) $(PROG_BINS)
	@tests/bench/run $(B)

demo: all $(PROG_BINS)
	@tests/demo $(B)

lint:
	cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
		--std=c11 -Iinclude -Ishim --suppress=missingIncludeSystem shim daemon

install: all
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)
	install -m 0755 $(SHIM_LIB) $(DESTDIR)$(LIBDIR)/
	install -m 0644 include/pmalloc.h $(DESTDIR)$(INCLUDEDIR)/
	$(write_pc) > $(DESTDIR)$(LIBDIR)/pkgconfig/pmalloc.pc
	@if [ -f $(B)/pmallocd ]; then \
		install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(SYSCONFDIR) \
			$(DESTDIR)$(UNITDIR) $(DESTDIR)$(CATALOGDIR) $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(MANDIR)/man5; \
		install -m 0755 $(B)/pmallocd $(DESTDIR)$(SBINDIR)/; \
		install -m 0755 $(B)/pmallocctl $(DESTDIR)$(BINDIR)/; \
		[ -e $(DESTDIR)$(SYSCONFDIR)/pmalloc.conf ] || install -m 0644 conf/pmalloc.conf $(DESTDIR)$(SYSCONFDIR)/; \
		for f in systemd/*.service systemd/*.socket; do [ -f "$$f" ] && sed 's|@SBINDIR@|$(SBINDIR)|g' "$$f" > $(DESTDIR)$(UNITDIR)/$$(basename $$f); done; \
		[ -f systemd/pmalloc.catalog ] && install -m 0644 systemd/pmalloc.catalog $(DESTDIR)$(CATALOGDIR)/; \
		for m in man/*.8; do [ -f "$$m" ] && install -m 0644 "$$m" $(DESTDIR)$(MANDIR)/man8/; done; \
		for m in man/*.5; do [ -f "$$m" ] && install -m 0644 "$$m" $(DESTDIR)$(MANDIR)/man5/; done; \
	fi; true

clean:
	rm -rf $(B)

-include $(shell find $(B) -name '*.d' 2>/dev/null)
