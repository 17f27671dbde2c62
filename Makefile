# SPDX-License-Identifier: GPL-2.0-or-later
# pmalloc - one plain GNU Makefile.
#
#   make            library, daemon, CLI          make check    unit + integration tests
#   make bench      benchmarks (ratios)           make demo     the whole story, end to end
#   make install DESTDIR=... PREFIX=...           make lint     cppcheck
#   make deb        Debian packages, lintian      make deb-install-check (root)
#   make deb-boot-check (root) the packages on a booted Debian container
#
# Build dependencies are Debian packages; a missing one is installed with
# apt-get when run as root, or the exact command is printed (target deps).
# pkg-config flags are recursively expanded variables, so they are read when
# a recipe runs, after deps has had its say.

# Install layout.  Each is overridable (make install PREFIX=/usr DESTDIR=...);
# the library goes to the multiarch directory where the compiler names one
# (Debian: lib/x86_64-linux-gnu), systemd's directories are asked of
# systemd.pc (as a distribution package installs them), bash completions of
# bash-completion.pc, with fallbacks under PREFIX where those are missing.
PREFIX ?= /usr/local
MULTIARCH := $(shell $(or $(CC),cc) -print-multiarch 2>/dev/null)
LIBDIR ?= $(PREFIX)/lib$(if $(MULTIARCH),/$(MULTIARCH))
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
SYSCONFDIR ?= /etc
pc_var = $(shell pkg-config --variable=$(2) $(1) 2>/dev/null)
UNITDIR ?= $(or $(call pc_var,systemd,systemdsystemunitdir),$(PREFIX)/lib/systemd/system)
CATALOGDIR ?= $(or $(call pc_var,systemd,catalogdir),$(PREFIX)/lib/systemd/catalog)
BASHCOMPDIR ?= $(or $(call pc_var,bash-completion,completionsdir),$(PREFIX)/share/bash-completion/completions)
DESTDIR ?=

# The release; the libraries' SONAME carries its major number.
VERSION := 0.1
SOVERSION := 0

CC ?= gcc
B := build

DEB_PACKAGES := pkg-config libconfig-dev libsystemd-dev libseccomp-dev check libelf-dev libdw-dev
PC_MODULES := libconfig libsystemd libseccomp check libelf libdw
# What the tests and benchmarks run besides our own programs: real servers and
# allocators, clang for the fuzzers, the journal's remote transport.  Each is
# checked by a file it installs; installing a server never starts it
# system-wide (a policy-rc.d that refuses, for the length of apt's run).
TEST_DEB_PACKAGES := redis-server redis-tools nginx-light memcached lighttpd curl libjemalloc2 \
	libjemalloc-dev libmimalloc-dev libgoogle-perftools4 clang libclang-rt-14-dev \
	systemd-journal-remote strace bash-completion haproxy g++ libssl-dev apache2 unbound bind9-dnsutils
TEST_DEB_FILES := /usr/bin/redis-server /usr/bin/redis-benchmark /usr/sbin/nginx /usr/bin/memcached /usr/sbin/lighttpd \
	/usr/bin/curl /usr/include/jemalloc/jemalloc.h /usr/include/mimalloc.h \
	/usr/bin/clang /lib/systemd/systemd-journal-remote /usr/bin/strace \
	/usr/share/bash-completion/bash_completion /usr/sbin/haproxy /usr/bin/g++ /usr/include/openssl/ssl.h \
	/usr/sbin/apache2 /usr/sbin/unbound /usr/bin/dig

# Warnings are errors only when asked (make WERROR=1; CI does): a newer
# compiler's new warning must not break a distribution's build.  CPPFLAGS,
# CFLAGS and LDFLAGS from the command line or the environment are honoured;
# _FORTIFY_SOURCE=2 is only the default, so a distribution's
# -D_FORTIFY_SOURCE=3 (in CPPFLAGS or CFLAGS) wins.
WERROR ?=
WERROR_FLAG = $(if $(filter 1 yes,$(WERROR)),-Werror)
WARN = -Wall -Wextra -Wmissing-prototypes -Wstrict-prototypes -Wshadow -Wcast-qual \
	-Wwrite-strings -Wundef $(WERROR_FLAG)
FORTIFY := $(if $(findstring _FORTIFY_SOURCE,$(CPPFLAGS) $(CFLAGS)),,-D_FORTIFY_SOURCE=2)
HARDEN := -fstack-protector-strong -fstack-clash-protection -fcf-protection $(FORTIFY)
CFLAGS ?= -O2 -g
BASE_CFLAGS = -std=gnu11 $(WARN) $(HARDEN) -Iinclude $(LAYER_INC) -I$(B) -MMD -MP $(CPPFLAGS) $(CFLAGS)

# The layers, low to high, are mk/layers.mk's two lists (make check-layers
# checks the calls and the #include lines against the same lists): each
# folder sees its own headers (a quoted #include finds those first) and the
# folders below it in its list, never one above, so an upward #include does
# not compile.  The programs see only what they share with the shim
# (common/).  The policy model is written against plain libc for the
# programs; in the shim, sys/glue.h sends its malloc and read to the shim's
# own doors.
include mk/layers.mk
# $(call layers_upto,FOLDER,LIST): the ranks of LIST up to FOLDER's, FOLDER's
# own rank reduced to FOLDER (a folder never sees its rank's siblings).
layers_upto = $(if $(2),$(if $(filter $(1),$(subst +, ,$(firstword $(2)))),$(1),$(subst +, ,$(firstword \
	$(2))) $(call layers_upto,$(1),$(wordlist 2,$(words $(2)),$(2)))))
layer_inc = $(patsubst %,-I%,$(call layers_upto,$(1),$(2)))
SHIM_DIRS := $(SHIM_LAYERS)
PROGRAM_DIRS := $(subst +, ,$(PROGRAM_LAYERS))
SHIM_INC := $(SHIM_DIRS:%=-I%)
LAYER_INC = $(SHIM_INC)
$(foreach d,$(SHIM_DIRS),$(eval $(B)/pic/$(d)/%.o: LAYER_INC = $(call layer_inc,$(d),$(SHIM_LAYERS))))
$(B)/pic/common/policy/%.o: LAYER_INC += -include shim/sys/glue.h
$(foreach d,$(PROGRAM_DIRS),$(eval $(B)/pie/$(d)/%.o: LAYER_INC = $(call layer_inc,$(d),$(PROGRAM_LAYERS))))
PROGRAM_INC := $(call layer_inc,common/policy,$(PROGRAM_LAYERS))
LDHARDEN := -Wl,-z,defs,-z,relro,-z,now

pc_cflags = $(shell pkg-config --cflags $(1))
pc_libs = $(shell pkg-config --libs $(1))

# The shim: every .c of its folders, position-independent, only
# PMALLOC_EXPORT visible.
# policy_lint.c is the programs' alone (stdio, no glue): not in the shim.
PROGRAM_ONLY_SRCS := common/policy/policy_lint.c
# Linked first: the core's read-only pages that are frozen before arming (the
# program's symbols, the hooks, the process's role).  Pages lie in link
# order (SHIM_LAYOUT), and these lay between those arming freezes together
# (the arena's map, the fault handler's two, the pools' table, the filter,
# the rules, the state, the learn and reload pages): one mprotect for all of
# those where three were (startup_cost.sh counts them).
SHIM_EARLY_SRCS := shim/core/dynsym.c shim/core/hooks.c shim/core/life.c
SHIM_SRCS := $(SHIM_EARLY_SRCS) $(filter-out $(PROGRAM_ONLY_SRCS) $(SHIM_EARLY_SRCS),$(foreach d,$(SHIM_DIRS),$(wildcard $(d)/*.c)))
SHIM_OBJS := $(SHIM_SRCS:%.c=$(B)/pic/%.o)
SHIM_LIB := $(B)/libpmalloc_shim.so
# libpmalloc.so: the pool API alone, for programs that link it and want no
# interposition (no malloc, fork, execve, listen, sigaction... exported):
# the pool core's folder, and the doors and formatters below it that it
# uses (a write to a protected pool is still reported on stderr by the
# SIGSEGV handler; no hook is set, hooks.h).  Preloading the shim into
# such a program replaces all of it: the preload's definitions come first.
POOL_SRCS := $(wildcard shim/core/*.c) shim/sys/os.c shim/sys/ro.c shim/sys/stderr.c shim/sys/guard.c common/proto/fmt.c \
	common/proto/violation_fmt.c
POOL_OBJS := $(POOL_SRCS:%.c=$(B)/pic/%.o)
POOL_LIB := $(B)/libpmalloc.so
SHIM_CFLAGS = $(BASE_CFLAGS) -fPIC -fvisibility=hidden -fno-plt -fdata-sections $(SHIM_ALIGN) -DPMALLOC_BUILDING_SHIM \
	$(call pc_cflags,libconfig)
# The shim binds to nothing of its host.  A program's own definitions come
# first in the global scope, unversioned ones even before a versioned
# reference's library: lighttpd exports a config_init of its own, another
# program may export _Unwind_Backtrace or strbuf_append.  So besides libc the
# shim links only private copies with their symbols hidden (--exclude-libs;
# the exports map keeps them local too), bound at link time, calls between
# their own functions included: libconfig from its static archive, the
# unwinder from libgcc_eh (-static-libgcc).  Debian's libconfig.a is built
# for executables and reads stdin, stdout and stderr PC-relative, which a
# shared object cannot: objcopy renames those three to the shim's own, and
# its allocator to the shim's own allocations (shim/sys/libconfig_private.c:
# a policy file's parse never in the program's heap).
# tests/integration/host_symbols.sh checks it.
OBJCOPY ?= objcopy
LIBCONFIG_PRIVATE := $(B)/libconfig_private.a
HIDE_LIBS := -Wl,--exclude-libs,libconfig_private.a:libgcc_eh.a:libgcc.a
SHIM_LIBS = $(LIBCONFIG_PRIVATE) -static-libgcc $(HIDE_LIBS) -ldl -lpthread
# Each variable in a section of its own (-fdata-sections), laid out by
# alignment: the read-only pages (RO_PAGE-aligned) side by side, the small
# writable words packed into a few pages after them, instead of one run of
# words beside each file's page (each a first touch at start-up).
SHIM_LAYOUT := -Wl,--sort-section=alignment
# And each variable at its type's alignment only: gcc gives any object of
# 32 bytes or more 32 (for vector loads), which sorted the locks (40 bytes)
# among the large tables, a page of their own each: python3's start-up under
# a policy touched 8 pages of the shim's data fewer with it (48 -> 40 first
# touches).  A compiler without the option lays it out as before.
SHIM_ALIGN := $(shell $(CC) -malign-data=abi -E -x c /dev/null >/dev/null 2>&1 && echo -malign-data=abi)

# Code the daemon side shares with the shim (policy model, wire format, the
# violation record's formatter), and the code pmallocd and pmallocctl share.
SHARED_SRCS := $(wildcard common/proto/*.c common/policy/*.c)
SHARED_OBJS := $(SHARED_SRCS:%.c=$(B)/pie/%.o)

CTL_SRCS := $(wildcard daemon/pmallocctl/*.c)
DAEMON_SRCS := $(wildcard daemon/pmallocd/*.c)
DAEMON_OBJS := $(DAEMON_SRCS:%.c=$(B)/pie/%.o)
CTL_OBJS := $(CTL_SRCS:%.c=$(B)/pie/%.o)
PIE_CFLAGS = $(BASE_CFLAGS) -fPIE $(call pc_cflags,libconfig libsystemd libseccomp libdw)
DAEMON_LIBS = $(call pc_libs,libconfig libsystemd libseccomp libdw)

# libFuzzer harnesses (see "Fuzzing" below); set here, before check names them.
FUZZ_NAMES := policy daemon_wire shim_wire policy_image
FUZZ_BINS := $(FUZZ_NAMES:%=$(B)/fuzz/%)

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(B)/tests/%)
# Test programs; tests/progs/libNAME.c are shared libraries they dlopen.
PROG_LIB_SRCS := $(wildcard tests/progs/lib*.c)
PROG_SRCS := $(filter-out $(PROG_LIB_SRCS),$(wildcard tests/progs/*.c))
# tests/progs/*.cpp: C++ programs (static destructors at exit), built with g++.
PROG_CXX_SRCS := $(wildcard tests/progs/*.cpp)
PROG_BINS := $(PROG_SRCS:tests/progs/%.c=$(B)/progs/%) $(PROG_LIB_SRCS:tests/progs/%.c=$(B)/progs/%.so) \
	$(PROG_CXX_SRCS:tests/progs/%.cpp=$(B)/progs/%)
BENCH_SRCS := $(filter-out tests/bench/alloc_cmp.c,$(wildcard tests/bench/*.c))
BENCH_BINS := $(BENCH_SRCS:tests/bench/%.c=$(B)/bench/%)
# One allocation benchmark, built once with the pool API and once linked
# with each malloc it is compared to (glibc alone, jemalloc, mimalloc).
ALLOC_CMP_BINS := $(B)/bench/alloc_pool $(B)/bench/alloc_glibc $(B)/bench/alloc_jemalloc \
	$(B)/bench/alloc_mimalloc

ALL := $(SHIM_LIB) $(SHIM_LIB).$(SOVERSION) $(POOL_LIB) $(POOL_LIB).$(SOVERSION) $(B)/pmalloc.pc
ifneq ($(DAEMON_SRCS),)
ALL += $(B)/pmallocd
endif
ifneq ($(CTL_SRCS),)
ALL += $(B)/pmallocctl
endif

.PHONY: all deps test-deps check check-layers print-layers unit integration bench demo install uninstall lint clean FORCE check-status-500 check-lifecycle soak
all: $(ALL)

deps: $(B)/.deps
$(B)/.deps:
	@mkdir -p $(B)
	@missing=""; \
	for m in $(PC_MODULES); do pkg-config --exists $$m 2>/dev/null || missing=yes; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "pmalloc: installing build dependencies: $(DEB_PACKAGES)"; \
			DEBIAN_FRONTEND=noninteractive apt-get $(APT_LOCK) update -qq && \
			DEBIAN_FRONTEND=noninteractive apt-get $(APT_LOCK) install -y -qq $(DEB_PACKAGES) >/dev/null || exit 1; \
		else \
			echo "pmalloc: missing build dependencies; run: sudo apt-get install $(DEB_PACKAGES)"; \
			exit 1; \
		fi; \
	fi
	@touch $@

# After deps: two apt-get runs at once (make -j) would fight over apt's lock.
test-deps: $(B)/.test-deps
$(B)/.test-deps: | $(B)/.deps
	@mkdir -p $(B)
	@missing=""; for f in $(TEST_DEB_FILES); do [ -e $$f ] || missing=yes; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "pmalloc: installing test dependencies: $(TEST_DEB_PACKAGES)"; \
			rcd=; if [ ! -e /usr/sbin/policy-rc.d ]; then \
				printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && rcd=1; fi; \
			DEBIAN_FRONTEND=noninteractive apt-get $(APT_LOCK) update -qq && \
			DEBIAN_FRONTEND=noninteractive apt-get $(APT_LOCK) install -y -qq $(TEST_DEB_PACKAGES) >/dev/null; r=$$?; \
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

# Each library carries a versioned SONAME (libNAME.so.$(SOVERSION)); the
# build tree has that name as a link too, for the programs linked here.
$(LIBCONFIG_PRIVATE): Makefile | $(B)/.deps
	$(OBJCOPY) --redefine-sym stdin=pmalloc_libconfig_stdin --redefine-sym stdout=pmalloc_libconfig_stdout \
		--redefine-sym stderr=pmalloc_libconfig_stderr --redefine-sym malloc=pmalloc_libconfig_malloc \
		--redefine-sym calloc=pmalloc_libconfig_calloc --redefine-sym realloc=pmalloc_libconfig_realloc \
		--redefine-sym free=pmalloc_libconfig_free --redefine-sym __strdup=pmalloc_libconfig_strdup \
		$(call pc_var,libconfig,libdir)/libconfig.a $@

$(SHIM_LIB): $(SHIM_OBJS) shim/preload/exports.map $(LIBCONFIG_PRIVATE)
	$(CC) -shared $(LDHARDEN) $(LDFLAGS) $(SHIM_LAYOUT) -Wl,--version-script=shim/preload/exports.map \
		-Wl,-soname,libpmalloc_shim.so.$(SOVERSION) -o $@ $(SHIM_OBJS) $(SHIM_LIBS)

$(POOL_LIB): $(POOL_OBJS) shim/core/exports.map
	$(CC) -shared $(LDHARDEN) $(LDFLAGS) -Wl,--version-script=shim/core/exports.map \
		-Wl,-soname,libpmalloc.so.$(SOVERSION) -o $@ $(POOL_OBJS) -static-libgcc $(HIDE_LIBS) -ldl -lpthread

$(B)/%.so.$(SOVERSION): $(B)/%.so
	ln -sf $(notdir $<) $@

$(B)/pmallocd: $(DAEMON_OBJS) $(SHARED_OBJS)
	$(CC) -pie $(LDHARDEN) $(LDFLAGS) -o $@ $^ $(DAEMON_LIBS)

$(B)/pmallocctl: $(CTL_OBJS) $(SHARED_OBJS)
	$(CC) -pie $(LDHARDEN) $(LDFLAGS) -o $@ $^ $(DAEMON_LIBS) $(call pc_libs,libelf)

# Install-time paths compiled into the programs (pmallocctl preload names
# the installed shim); rewritten only when they change.
$(B)/paths.h: FORCE
	@mkdir -p $(B)
	@printf '#define PMALLOC_VERSION "%s"\n#define PMALLOC_SHIM_PATH "%s"\n' \
		'$(VERSION)' '$(LIBDIR)/libpmalloc_shim.so.$(SOVERSION)' > $@.tmp
	@cmp -s $@.tmp $@ && rm -f $@.tmp || mv -f $@.tmp $@
$(CTL_OBJS) $(DAEMON_OBJS): $(B)/paths.h

# pkg-config file for the build tree's prefix; install writes its own from
# the install-time variables.  Libs: the pool API alone (libpmalloc);
# "pkg-config --variable=shim pmalloc" names the library to preload.
write_pc = printf 'prefix=%s\nlibdir=%s\nincludedir=%s\nshim=$${libdir}/libpmalloc_shim.so.$(SOVERSION)\n\nName: pmalloc\nDescription: protectable memory pools\nVersion: %s\nLibs: -L$${libdir} -lpmalloc\nCflags: -I$${includedir}\n' \
	'$(PREFIX)' '$(LIBDIR)' '$(INCLUDEDIR)' '$(VERSION)'
$(B)/pmalloc.pc: Makefile
	@mkdir -p $(B)
	$(write_pc) > $@

# Unit tests (Check): each tests/unit/test_*.c is one program, linked against
# the shim as a user would, plus the shared objects for white-box tests.
$(B)/tests/%: tests/unit/%.c $(SHIM_LIB) $(SHIM_LIB).$(SOVERSION) $(SHARED_OBJS) tests/unit/testutil.h
	@mkdir -p $(dir $@)
	$(CC) $(PIE_CFLAGS) -fPIE -pie $(LDFLAGS) $(call pc_cflags,check) -o $@ $< $(SHARED_OBJS) \
		$(filter-out $(SHARED_OBJS),$(filter $(B)/pie/daemon/%.o,$^)) -L$(B) -Wl,-rpath,'$$ORIGIN/..' -lpmalloc_shim \
		$(call pc_libs,check libconfig) -lpthread
# White-box tests of pmallocd's parts link the objects they test.
$(B)/tests/test_identify: $(B)/pie/daemon/pmallocd/identify.o $(B)/pie/daemon/pmallocd/proc.o \
	$(B)/pie/daemon/pmallocd/strbuf.o $(B)/pie/daemon/pmallocd/cgroup_cache.o
$(B)/tests/test_identify: PIE_CFLAGS += -Idaemon/pmallocd
# The policy cache, against the matcher, over configs read as pmallocd reads them.
$(B)/tests/test_match_cache: $(B)/pie/daemon/pmallocd/match_cache.o $(B)/pie/daemon/pmallocd/config.o
$(B)/tests/test_match_cache: PIE_CFLAGS += -Idaemon/pmallocd
# propose's counting and choice, with the one quoting function it writes through.
$(B)/tests/test_propose: $(B)/pie/daemon/pmallocctl/ctl_propose_chain.o $(B)/pie/daemon/pmallocctl/ctl_propose_set.o \
	$(B)/pie/daemon/pmallocctl/ctl_quote.o
$(B)/tests/test_propose: PIE_CFLAGS += -Idaemon/pmallocctl

# The read-only list with the real kernel door, outside the shim (whose
# copy is hidden): its own list, frozen once per test (Check forks each).
$(B)/tests/test_ro: tests/unit/test_ro.c shim/sys/ro.c shim/sys/os.c shim/sys/guard.c tests/unit/testutil.h | $(B)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(PIE_CFLAGS) -fPIE -pie $(LDFLAGS) $(call pc_cflags,check) $(call layer_inc,shim/sys,$(SHIM_LAYERS)) \
		-o $@ $(filter %.c,$^) $(call pc_libs,check)

# Small programs the tests run, built as someone else would build them:
# no pmalloc headers unless they use the API, symbols kept (not stripped).
# wire_client and image_probe read policy images as the shim does.
$(B)/progs/wire_client $(B)/progs/image_probe: common/policy/policy_image.c common/policy/policy_image.h
# host_names exports its functions, as nginx-style programs do.
$(B)/progs/host_names: PROG_LDFLAGS := -rdynamic
# What the programs share (prog.h, e2e_victim.h, tamper.h): a change rebuilds them all.
$(filter-out %.so,$(PROG_BINS)): $(wildcard tests/progs/*.h)
# exit_openssl: OpenSSL's atexit clean-up, as a TLS server has it.
$(B)/progs/exit_openssl: PROG_LIBS := -lssl -lcrypto
# api_sig_c99 is built as strict C99 (signal() is __sysv_signal there).
PROG_STD = -std=gnu11
$(B)/progs/api_sig_c99: PROG_STD = -std=c99
# relro_host is a full-RELRO program, as the servers the shim goes into.
$(B)/progs/relro_host: PROG_LDFLAGS := -fPIE -pie -Wl,-z,relro,-z,now
# ip_wrapframes optimised as the servers are (no frame pointer): its fixed
# wrapper's unwind rule is the stack pointer's, which frames.c reads.
$(B)/progs/ip_wrapframes: PROG_LDFLAGS := -O2 -fomit-frame-pointer
$(B)/progs/%: tests/progs/%.c $(SHIM_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(PROG_STD) -O0 -g -Wall -Wextra $(WERROR_FLAG) -Iinclude $(PROG_LDFLAGS) -o $@ $(filter %.c,$^) -L$(B) \
		-Wl,-rpath,'$$ORIGIN/..' $(if $(findstring api_,$*),-lpmalloc_shim) -ldl -lpthread $(PROG_LIBS)

$(B)/progs/%: tests/progs/%.cpp $(SHIM_LIB)
	@mkdir -p $(dir $@)
	$(CXX) -std=gnu++17 -O0 -g -Wall -Wextra $(WERROR_FLAG) -o $@ $(filter %.cpp,$^)

$(B)/progs/lib%.so: tests/progs/lib%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra $(WERROR_FLAG) -fPIC -shared -o $@ $<

# Benchmarks named bench_* use the API; the others are plain programs that
# the runner preloads the shim into (or not).
$(B)/bench/%: tests/bench/%.c $(SHIM_LIB)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra $(WERROR_FLAG) -Iinclude -o $@ $< -L$(B) -Wl,-rpath,'$$ORIGIN/..' \
		$(if $(findstring bench_,$*),-lpmalloc_shim) -lpthread

# make check TESTS="tests/integration/NAME.sh ...": the unit tests and those scripts only.
# The layers are checked first: a call up a layer or a circle of files fails.
check: all check-layers test-deps $(UNIT_BINS) $(PROG_BINS) $(FUZZ_BINS)
	@tests/run-tests $(B) $(UNIT_BINS) $(TESTS)

# No call from a file to a layer above it, no circle of files, no call of
# the shim's own interposers (tests/check-layers, over nm of the objects
# the libraries and programs are linked from).
check-layers: all
	@tests/check-layers --layers mk/layers.mk $(B) $(SHIM_OBJS) $(SHARED_OBJS) $(DAEMON_OBJS) $(CTL_OBJS)

# The layer table as make reads it (mk/layers.mk), for scripts and documents.
print-layers:
	@echo 'SHIM_LAYERS := $(SHIM_LAYERS)'
	@echo 'PROGRAM_LAYERS := $(PROGRAM_LAYERS)'

$(B)/bench/alloc_pool: tests/bench/alloc_cmp.c $(SHIM_LIB)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -Werror -Iinclude -DWITH_POOL -o $@ $< -L$(B) -Wl,-rpath,'$$ORIGIN/..' \
		-lpmalloc_shim

$(B)/bench/alloc_%: tests/bench/alloc_cmp.c | $(B)/.test-deps
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -Werror -Iinclude -o $@ $< $(if $(filter-out glibc,$*),-l$*)

bench: all test-deps $(BENCH_BINS) $(ALLOC_CMP_BINS) $(PROG_BINS)
	@tests/bench/run $(B)

demo: all $(PROG_BINS)
	@tests/demo $(B)

# ---- Sanitizers: make check-sanitize builds everything again (gcc) and
# runs the unit and integration tests on that build.
#   $(B)/sanitize        pmallocd, pmallocctl and test_policy with ASan+UBSan;
#                        the shim with UBSan only: ASan owns malloc and must
#                        be the first library loaded, so it cannot share a
#                        process with the interposing shim.  (The shim is
#                        built first; the second pass finds it up to date.)
#   $(B)/sanitize/ubsan  the unit tests that host the shim in their own
#                        process (all but test_policy), for the same reason
#                        with UBSan only, and without its null check: they
#                        store through NULL on purpose.
# Integration tests run with detect_leaks=0: LeakSanitizer's exit-time scan
# calls prctl and ptrace, which pmallocd's seccomp sandbox kills (SIGSYS);
# the parser's leaks are LeakSanitizer's in test_policy and in the fuzzers.
# The programs under tests/progs stay plain: they stand for other people's
# programs, into which the shim is preloaded.  UBSan stops at the first error.
SAN_B := $(B)/sanitize
SAN_UBSAN := -fsanitize=undefined -fno-sanitize-recover=all
SAN_ASAN := -fsanitize=address $(SAN_UBSAN) -fno-omit-frame-pointer
SAN_ASAN_UNITS := test_policy
SAN_UNIT_BINS := $(patsubst %,$(SAN_B)/tests/%,$(SAN_ASAN_UNITS)) \
	$(patsubst $(B)/tests/%,$(SAN_B)/ubsan/tests/%,$(filter-out $(SAN_ASAN_UNITS:%=$(B)/tests/%),$(UNIT_BINS)))
SAN_OPTS := UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
check-sanitize: test-deps
	$(MAKE) --no-print-directory B=$(SAN_B) CFLAGS="-O1 -g $(SAN_UBSAN)" LDFLAGS="$(SAN_UBSAN)" \
		$(SAN_B)/libpmalloc_shim.so
	$(MAKE) --no-print-directory B=$(SAN_B) CFLAGS="-O1 -g $(SAN_ASAN)" LDFLAGS="$(SAN_ASAN)" all \
		$(filter $(SAN_B)/tests/%,$(SAN_UNIT_BINS)) $(patsubst $(B)/%,$(SAN_B)/%,$(PROG_BINS) $(FUZZ_BINS))
	$(MAKE) --no-print-directory B=$(SAN_B)/ubsan CFLAGS="-O1 -g $(SAN_UBSAN) -fno-sanitize=null" \
		LDFLAGS="$(SAN_UBSAN) -fno-sanitize=null" $(filter $(SAN_B)/ubsan/%,$(SAN_UNIT_BINS)) \
		$(patsubst $(B)/%,$(SAN_B)/ubsan/%,$(PROG_BINS))
	@fail=0; for t in $(SAN_UNIT_BINS); do \
		b=$$(cd $$(dirname $$t)/.. && pwd); \
		if PMALLOC_BUILD=$$b PMALLOC_SRC=$(CURDIR) PMALLOC_CONF=/nonexistent/pmalloc-test.conf \
			PMALLOC_SOCKET=/nonexistent/pmalloc-test.sock $(SAN_OPTS) ASAN_OPTIONS=detect_leaks=1 \
			$$t >$(SAN_B)/unit.log 2>&1; then echo "PASS sanitize/$$(basename $$t)"; \
		else echo "FAIL sanitize/$$(basename $$t)"; tail -n 40 $(SAN_B)/unit.log; fail=1; fi; \
	done; [ $$fail = 0 ]
	@$(SAN_OPTS) ASAN_OPTIONS=detect_leaks=0 tests/run-tests $(SAN_B)

# ---- Stress: tests/integration/stress_*.sh run in make check (a few
# seconds in all); make stress STRESS_N=20 repeats them, for a race that
# shows only sometimes.
STRESS_N ?= 10
stress: all test-deps $(PROG_BINS)
	@export PMALLOC_BUILD=$(CURDIR)/$(B) PMALLOC_SRC=$(CURDIR) PMALLOC_CONF=/nonexistent/pmalloc-test.conf \
		PMALLOC_SOCKET=/nonexistent/pmalloc-test.sock; \
	for t in tests/integration/stress_*.sh; do \
		i=0; while [ $$i -lt $(STRESS_N) ]; do i=$$((i + 1)); \
			out=$$(bash $$t 2>&1) || { echo "FAIL $$t (round $$i)"; echo "$$out"; exit 1; }; \
		done; echo "PASS $$t x $(STRESS_N)"; \
	done

# ---- Tamper sweep: make check overwrites a sample of the shim's writable
# words (tests/integration/tamper.sh); make tamper every one of them, each
# set to what an attacker would try (0, 1, all-ones, addresses, small
# indexes, the shim's own values of other states: tests/progs/
# api_tamper_reload.c's header), one forked run each (a long run: some
# 200,000 runs, split over TAMPER_SHARDS processes), and prints the
# outcomes per class and per value.
TAMPER_SHARDS ?= 2
tamper: all test-deps $(PROG_BINS)
	@PMALLOC_BUILD=$(CURDIR)/$(B) PMALLOC_SRC=$(CURDIR) PMALLOC_CONF=/nonexistent/pmalloc-test.conf \
		PMALLOC_SOCKET=/nonexistent/pmalloc-test.sock TAMPER_FULL=1 TAMPER_SHARDS=$(TAMPER_SHARDS) \
		bash tests/integration/tamper.sh

# ---- Fuzzing: libFuzzer harnesses (clang), tests/fuzz/NAME.c with its
# seed corpus tests/fuzz/NAME/ (and tests/fuzz/NAME.dict where there is one).
# Each harness is compiled from the sources it tests, with ASan and UBSan.
# make check replays every corpus file once (tests/integration/fuzz_corpus.sh);
# make fuzz FUZZ_S=60 runs each harness that many seconds, new inputs kept
# in $(B)/fuzz/NAME.corpus, a crashing one in $(B)/fuzz/NAME.crash/.
FUZZ_CC := clang
FUZZ_S ?= 60
# FUZZ_NAMES and FUZZ_BINS are set near the top: check names them.
FUZZ_CFLAGS = -std=gnu11 $(WARN) -g -O1 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=all -Iinclude $(PROGRAM_INC) -Ishim/preload/uplink $(call pc_cflags,libconfig)
.PHONY: fuzz check-sanitize stress tamper
# What each harness is built from besides itself.  The policy file's
# parser (policy.h) is these files:
POLICY_PARSER_SRCS := common/policy/policy.c common/policy/policy_load.c common/policy/policy_parse.c \
	common/policy/policy_scan.c common/policy/policy_setting.c
$(B)/fuzz/policy: $(POLICY_PARSER_SRCS) common/policy/policy_image.c
$(B)/fuzz/daemon_wire: daemon/pmallocd/wire_decode.c daemon/pmallocd/wire_decode.h common/proto/fmt.c \
	common/proto/violation_fmt.c
$(B)/fuzz/shim_wire: shim/preload/uplink/client_decode.c shim/preload/uplink/client_decode.h \
	common/policy/policy_image.c $(POLICY_PARSER_SRCS)
$(B)/fuzz/policy_image: common/policy/policy_image.c $(POLICY_PARSER_SRCS)
$(B)/fuzz/%: tests/fuzz/%.c common/proto/wire.h $(wildcard common/policy/*.h) | $(B)/.deps $(B)/.test-deps
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Idaemon/pmallocd -o $@ $(filter %.c,$^) $(call pc_libs,libconfig)

fuzz: $(FUZZ_BINS)
	@for n in $(FUZZ_NAMES); do \
		mkdir -p $(B)/fuzz/$$n.corpus $(B)/fuzz/$$n.crash; \
		dict=; [ -f tests/fuzz/$$n.dict ] && dict=-dict=tests/fuzz/$$n.dict; \
		echo "fuzz: $$n, $(FUZZ_S) s"; \
		$(B)/fuzz/$$n -max_total_time=$(FUZZ_S) -print_final_stats=1 $$dict \
			-artifact_prefix=$(B)/fuzz/$$n.crash/ $(B)/fuzz/$$n.corpus tests/fuzz/$$n \
			>$(B)/fuzz/$$n.log 2>&1 || { tail -n 60 $(B)/fuzz/$$n.log; \
			echo "fuzz: $$n FAILED, input in $(B)/fuzz/$$n.crash/"; exit 1; }; \
		grep -E '^stat::number_of_executed_units|^stat::new_units_added' $(B)/fuzz/$$n.log | sed 's/^/  /'; \
	done

# The tests' and benchmarks' programs too: they run under the shim as users'
# programs do, and a leak or a bad variadic call there is a wrong result.
lint:
	cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
		--std=c11 -Iinclude $(SHIM_INC) --suppress=missingIncludeSystem common shim daemon tests

# Every step fails the install when it fails.  The policy file is never
# overwritten: an edited /etc/pmalloc.conf stays, and uninstall removes it
# only when it is still the one shipped.  Run ldconfig afterwards (package
# managers do) when installing to the system without DESTDIR.
INSTALLED_FILES = $(LIBDIR)/libpmalloc_shim.so.$(VERSION) $(LIBDIR)/libpmalloc_shim.so.$(SOVERSION) \
	$(LIBDIR)/libpmalloc_shim.so $(LIBDIR)/libpmalloc.so.$(VERSION) \
	$(LIBDIR)/libpmalloc.so.$(SOVERSION) $(LIBDIR)/libpmalloc.so $(LIBDIR)/pkgconfig/pmalloc.pc \
	$(INCLUDEDIR)/pmalloc.h $(SBINDIR)/pmallocd $(BINDIR)/pmallocctl \
	$(UNITDIR)/pmallocd.service $(UNITDIR)/pmallocd.socket $(CATALOGDIR)/pmalloc.catalog \
	$(addprefix $(MANDIR)/man8/,$(notdir $(wildcard man/*.8))) \
	$(addprefix $(MANDIR)/man5/,$(notdir $(wildcard man/*.5))) \
	$(addprefix $(MANDIR)/man3/,$(notdir $(wildcard man/*.3))) \
	$(addprefix $(MANDIR)/man7/,$(notdir $(wildcard man/*.7))) \
	$(BASHCOMPDIR)/pmallocctl $(BASHCOMPDIR)/pmallocd
install: all
	set -e; \
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(SBINDIR) \
		$(DESTDIR)$(BINDIR) $(DESTDIR)$(SYSCONFDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(CATALOGDIR) \
		$(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man3 \
		$(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(BASHCOMPDIR); \
	for l in libpmalloc_shim libpmalloc; do \
		install -m 0755 $(B)/$$l.so $(DESTDIR)$(LIBDIR)/$$l.so.$(VERSION); \
		ln -sfn $$l.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$$l.so.$(SOVERSION); \
		ln -sfn $$l.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/$$l.so; \
	done; \
	install -m 0644 include/pmalloc.h $(DESTDIR)$(INCLUDEDIR)/; \
	$(write_pc) > $(DESTDIR)$(LIBDIR)/pkgconfig/pmalloc.pc; \
	install -m 0755 $(B)/pmallocd $(DESTDIR)$(SBINDIR)/; \
	install -m 0755 $(B)/pmallocctl $(DESTDIR)$(BINDIR)/; \
	[ -e $(DESTDIR)$(SYSCONFDIR)/pmalloc.conf ] || install -m 0644 conf/pmalloc.conf $(DESTDIR)$(SYSCONFDIR)/; \
	for f in systemd/pmallocd.service systemd/pmallocd.socket; do \
		sed 's|@SBINDIR@|$(SBINDIR)|g' $$f > $(DESTDIR)$(UNITDIR)/$${f#systemd/}; \
		chmod 0644 $(DESTDIR)$(UNITDIR)/$${f#systemd/}; \
	done; \
	install -m 0644 systemd/pmalloc.catalog $(DESTDIR)$(CATALOGDIR)/; \
	install -m 0644 man/*.8 $(DESTDIR)$(MANDIR)/man8/; \
	install -m 0644 man/*.5 $(DESTDIR)$(MANDIR)/man5/; \
	install -m 0644 man/*.3 $(DESTDIR)$(MANDIR)/man3/; \
	install -m 0644 man/*.7 $(DESTDIR)$(MANDIR)/man7/; \
	install -m 0644 completion/pmallocctl.bash $(DESTDIR)$(BASHCOMPDIR)/pmallocctl; \
	install -m 0644 completion/pmallocd.bash $(DESTDIR)$(BASHCOMPDIR)/pmallocd

# ---- Debian packages: make deb builds them from a copy of the tracked tree
# in $(B)/deb (dpkg-buildpackage -us -uc -b, about a minute on 2 cores) and
# runs lintian, which must report no error; make deb-install-check (root)
# installs the runtime and daemon packages, preloads a test unit, shows its
# program protected and purges them (tests/deb/install.sh); make
# deb-boot-check (root) does it on a clean Debian booted with systemd in a
# container (tests/deb/boot.sh: debootstrap once into $(B)/boot, about 4
# minutes and 250 MB, from DEB_BOOT_MIRROR or debootstrap's default; then
# 10 to 20 s a run).  None is part of make check: they take minutes and
# change the machine's packages.
DEB_DIR := $(B)/deb
DEB_BOOT_MIRROR ?=
# apt_need FILES,PACKAGES: when one of FILES is missing, PACKAGES are
# installed only on an explicit opt-in (make deb INSTALL_DEPS=1, as root:
# these targets are for a packager's machine, and apt-get would also pull
# a newer dpkg and friends onto it), waiting at most 120 s for apt's lock;
# otherwise the exact command is printed and the target fails.
INSTALL_DEPS ?=
APT_LOCK = -o DPkg::Lock::Timeout=120
DEB_TOOL_FILES ?= /usr/bin/dpkg-buildpackage /usr/bin/dh /usr/bin/lintian /usr/share/pkgconfig/systemd.pc \
	/usr/share/pkgconfig/bash-completion.pc
apt_need = missing=; for f in $(1); do [ -e $$f ] || missing=yes; done; \
	if [ -n "$$missing" ]; then \
		if [ "$(INSTALL_DEPS)" = 1 ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "pmalloc: installing $(2)"; \
			DEBIAN_FRONTEND=noninteractive apt-get $(APT_LOCK) update -qq && \
			DEBIAN_FRONTEND=noninteractive apt-get $(APT_LOCK) install -y -qq $(2) >/dev/null || exit 1; \
		else \
			echo "pmalloc: missing $(2); run: sudo apt-get install $(2)"; \
			echo "pmalloc: (or, as root: make $@ INSTALL_DEPS=1, which runs that for you)"; exit 1; \
		fi; \
	fi
.PHONY: deb deb-install-check deb-boot-check
deb: | $(B)/.deps
	@$(call apt_need,$(DEB_TOOL_FILES),dpkg-dev debhelper lintian systemd bash-completion)
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/pmalloc-$(VERSION)
	if git rev-parse --git-dir >/dev/null 2>&1; then git ls-files -co --exclude-standard; \
	else find . -path ./$(B) -prune -o -path ./.git -prune -o -type f -print; fi | \
		tar -cf - -T - | tar -xf - -C $(DEB_DIR)/pmalloc-$(VERSION)
	cd $(DEB_DIR)/pmalloc-$(VERSION) && dpkg-buildpackage -us -uc -b >../build.log 2>&1 || \
		{ tail -n 40 ../build.log; exit 1; }
	lintian --fail-on error $(DEB_DIR)/pmalloc_$(VERSION)-*_*.changes
	@ls $(DEB_DIR)/*.deb

deb-install-check: $(B)/progs/pmalloc-demo
	@ls $(DEB_DIR)/pmalloc_*.deb >/dev/null 2>&1 || $(MAKE) --no-print-directory deb
	tests/deb/install.sh $(DEB_DIR)

deb-boot-check: $(B)/progs/pmalloc-demo
	@$(call apt_need,/usr/sbin/debootstrap /usr/bin/systemd-nspawn /usr/bin/nsenter,debootstrap systemd-container util-linux)
	@ls $(DEB_DIR)/pmalloc_*.deb >/dev/null 2>&1 || $(MAKE) --no-print-directory deb
	DEB_BOOT_MIRROR=$(DEB_BOOT_MIRROR) tests/deb/boot.sh $(DEB_DIR) $(B)/boot

# uninstall stops and disables the daemon's units on a running system
# first, and removes the enable links systemctl left for them (a link to
# a unit file that is gone makes every boot complain), saying each.
uninstall:
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then \
		systemctl disable --now pmallocd.socket pmallocd.service 2>/dev/null || true; \
	fi
	@for l in $(DESTDIR)$(SYSCONFDIR)/systemd/system/*.wants/pmallocd.socket \
		  $(DESTDIR)$(SYSCONFDIR)/systemd/system/*.wants/pmallocd.service; do \
		[ -L "$$l" ] || continue; rm -f "$$l"; echo "pmalloc: removed the enable link $$l"; \
	done
	rm -f $(addprefix $(DESTDIR),$(INSTALLED_FILES))
	@if cmp -s conf/pmalloc.conf $(DESTDIR)$(SYSCONFDIR)/pmalloc.conf; then \
		rm -f $(DESTDIR)$(SYSCONFDIR)/pmalloc.conf; \
	elif [ -e $(DESTDIR)$(SYSCONFDIR)/pmalloc.conf ]; then \
		echo "pmalloc: kept $(DESTDIR)$(SYSCONFDIR)/pmalloc.conf (edited since install)"; \
	fi

clean:
	rm -rf $(B)

-include $(shell find $(B) -path $(B)/boot -prune -o -path $(B)/deb -prune -o -name '*.d' -type f -print 2>/dev/null)

# A service's day for all five servers in one script (make check runs
# nginx and lighttpd there, and redis, memcached and haproxy through
# lifecycle_redis.sh, lifecycle_memcached.sh, lifecycle_haproxy.sh).
check-lifecycle:
	LIFECYCLE_SERVERS="nginx redis lighttpd memcached haproxy" \
		$(MAKE) check TESTS="tests/integration/lifecycle_servers.sh tests/integration/reload_generations.sh"

# ---- Soak: what is too long for make check.  memcached learned 10 times
# (the proposals within 5% of each other) and 50 enforce starts of one
# proposal (tests/integration/repeat_memcached.sh; make check: 3 and 4),
# then a service's day for apache2 (mpm_event) and unbound (4 threads)
# (tests/integration/lifecycle_servers.sh; make check runs five others).
# Figures: doc/figures.md.
soak:
	REPEAT_LEARN_RUNS=10 REPEAT_STARTS=50 LIFECYCLE_SERVERS="apache2 unbound" \
		$(MAKE) check TESTS="tests/integration/repeat_memcached.sh tests/integration/lifecycle_servers.sh"

# pmallocctl status --json of 500 served processes (ctl_status_json.sh, which
# make check runs with 60): whole and valid against its schema.  Minutes
# on 2 busy cores, hence not in check.
check-status-500:
	PMALLOC_STATUS_N=500 $(MAKE) check TESTS=tests/integration/ctl_status_json.sh
