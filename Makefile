# logshipd — run it, test it, measure it.

SWIFT ?= swift
# Where `make run` puts its sockets and spool: a directory of the checkout's own, never the service's
# /run/logshipd and /var/lib/logshipd (which root's files would leave unusable to the logshipd user), and never
# a shared one another user could have made first.
RUN_DIR ?= $(CURDIR)/.run
RECEIVER ?= 127.0.0.1:8514
# Release binaries carry the Swift runtime and Foundation in themselves: they run on a server without a Swift
# toolchain, and the linker keeps only the parts of them the daemon uses. Every release build passes the same flags,
# or SwiftPM builds everything again. lld packs the relative relocations (`-z pack-relative-relocs`: 22 KiB of them
# instead of 2.6 MiB; the binary then needs glibc 2.36, Debian 12), and our functions stay out of the dynamic symbol
# table (nothing looks them up; only dladdr-based stack traces lose their names, the symbol table and debug
# information keep them). The installed (stripped) logshipd, relinked each way on 2026-11-27: 68.7 MiB with both,
# 71.3 without the packing, 71.6 without --no-export-dynamic, 74.4 with the default linker (gold) and neither.
RELEASE = -c release --static-swift-stdlib -Xswiftc -use-ld=lld \
	-Xlinker -z -Xlinker pack-relative-relocs -Xlinker --no-export-dynamic
RELEASE_BIN = $$($(SWIFT) build $(RELEASE) --show-bin-path)

.PHONY: deps test-deps build release run test bench bench-peers fuzz fuzz-build install deb man clean

deps:
	@scripts/install-deps.sh

# What the tests need besides: also the private Python that checks OTLP bodies (.build-python, from PyPI).
test-deps:
	@scripts/install-deps.sh --test

build: deps
	$(SWIFT) build

# The release daemon and logctl, which bench and install use, built by product: building every product
# of the graph links GRDB's dynamic library, which lld refuses with the static Foundation.
release: deps
	$(SWIFT) build $(RELEASE) --product logshipd
	$(SWIFT) build $(RELEASE) --product logctl

# Starts `logctl receive` on $(RECEIVER) and logshipd in the foreground with config/logshipd.yaml; Ctrl-C stops both.
# RUN_DIR is made private (0700) and must be this user's: its sockets take whatever anyone who can reach them sends.
# Builds only the two products it runs (`make build` builds every product, the bench and the test kit too).
run: deps
	$(SWIFT) build --product logshipd
	$(SWIFT) build --product logctl
	@mkdir -p -m 0700 "$(RUN_DIR)"
	@[ ! -L "$(RUN_DIR)" ] && [ "$$(stat -c %u "$(RUN_DIR)")" = "$$(id -u)" ] || { \
		echo "run: $(RUN_DIR) is a link or belongs to another user; remove it or set RUN_DIR" >&2; exit 1; }
	@chmod 0700 "$(RUN_DIR)"
	@[ $$(printf '%s' "$(RUN_DIR)/ingest.dgram" | wc -c) -lt 108 ] || { \
		echo "run: $(RUN_DIR) is too long a path for a Unix socket (107 bytes); set RUN_DIR to a shorter one" >&2; exit 1; }
	@bin=$$($(SWIFT) build --show-bin-path); \
	$$bin/logctl receive --listen $(RECEIVER) & receiver=$$!; \
	trap 'kill $$receiver 2>/dev/null' EXIT INT TERM; \
	echo "receiver: logctl receive on $(RECEIVER) (pid $$receiver) prints what arrives; Ctrl-C stops it and logshipd"; \
	echo "sockets in $(RUN_DIR): logger -u $(RUN_DIR)/ingest.sock \"hello\"; $$bin/logctl send --socket $(RUN_DIR)/control.sock --priority crash \"segfault\""; \
	LOGSHIPD_INGEST_STREAM=$(RUN_DIR)/ingest.sock \
	LOGSHIPD_INGEST_DATAGRAM=$(RUN_DIR)/ingest.dgram \
	LOGSHIPD_INGEST_CONTROL=$(RUN_DIR)/control.sock \
	LOGSHIPD_SPOOL_PATH=$(RUN_DIR)/spool.db \
	LOGSHIPD_UPLOAD_URL=http://$(RECEIVER)/ingest \
	$$bin/logshipd --config config/logshipd.yaml

# A crash of the test process prints the runtime's one line (the failed check, its file and line) and ends the
# run at once: Swift's backtracer spent over eight minutes here symbolicating the crashed thread of the debug
# test binary, and a CI run timed out in it. For frames, run with TEST_BACKTRACE=enable=yes,threads=crashed.
TEST_BACKTRACE ?= enable=no
# The tests are Swift Testing's alone: --disable-xctest spares XCTest's empty run ("Executed 0 tests").
test: test-deps fuzz-build
	$(SWIFT) build --build-tests
	SWIFT_BACKTRACE=$(TEST_BACKTRACE) $(SWIFT) test --skip-build --disable-xctest

# The libFuzzer target over the record parsers, the stream framing and the journal entry mapping, in a build of its
# own (the sanitizers instrument only what it depends on). The test suite runs it briefly; `make fuzz` runs it for
# FUZZ_RUNS inputs.
FUZZER = .build-fuzz/debug/logship-fuzz
FUZZ_RUNS ?= 300000

# Linked by lld: gold warns of every __asan_ symbol it cannot export (141 lines of them).
fuzz-build: deps
	$(SWIFT) build --product logship-fuzz --scratch-path .build-fuzz \
		-Xswiftc -sanitize=fuzzer,address -Xswiftc -D -Xswiftc FUZZING -Xswiftc -use-ld=lld

# A crash stops the run and leaves its input in .build-fuzz/crash-*; `.build/debug/logship-fuzz FILE` replays it.
fuzz: fuzz-build
	@mkdir -p .build-fuzz/corpus
	$(FUZZER) -runs=$(FUZZ_RUNS) -artifact_prefix=.build-fuzz/ -print_final_stats=1 .build-fuzz/corpus Tests/FuzzCorpus

# Where bench-peers extracts rsyslog (PeerComparison's ExtractedRsyslog looks there); git ignores .build*/.
RSYSLOG_DIR = .build-peers/rsyslog
SUDO = $(if $(filter 0,$(shell id -u)),,sudo)

# The peers bench compares with, when missing. syslog-ng is installed from Debian (it starts no system daemon
# without systemd). rsyslog's package conflicts with syslog-ng's and would become the system's syslog daemon, so
# Debian's rsyslog and rsyslog-elasticsearch are extracted into RSYSLOG_DIR instead, never installed; the libraries
# they need are (libcurl4, which omelasticsearch links, is usually there already: --no-upgrade leaves it as it is).
bench-peers:
	@command -v syslog-ng >/dev/null 2>&1 && [ -f /usr/lib/syslog-ng/3.38/libhttp.so ] || { \
		echo "bench: installing syslog-ng-core and syslog-ng-mod-http, a peer it compares with" >&2; \
		$(SUDO) apt-get install -y --no-install-recommends syslog-ng-core syslog-ng-mod-http >/dev/null; }
	@[ -x $(RSYSLOG_DIR)/root/usr/sbin/rsyslogd ] && ls $(RSYSLOG_DIR)/root/usr/lib/*/rsyslog/omelasticsearch.so \
		>/dev/null 2>&1 || { \
		echo "bench: fetching rsyslog and rsyslog-elasticsearch into $(RSYSLOG_DIR) (extracted, not installed)," \
			"a peer it compares with; installing libestr0, libfastjson4 and liblognorm5 for it" >&2; \
		$(SUDO) apt-get install -y --no-install-recommends --no-upgrade libestr0 libfastjson4 liblognorm5 libcurl4 \
			>/dev/null && \
		rm -rf $(RSYSLOG_DIR) && mkdir -p $(RSYSLOG_DIR)/debs && \
		{ out=$$(cd $(RSYSLOG_DIR)/debs && apt-get download rsyslog rsyslog-elasticsearch 2>&1) || \
			{ echo "$$out" >&2; exit 1; }; } && \
		for deb in $(RSYSLOG_DIR)/debs/*.deb; do dpkg -x "$$deb" $(RSYSLOG_DIR)/root || exit 1; done; }

# Throughput and latency figures, with syslog-ng and rsyslog side by side (bench-peers); builds release binaries,
# writes BENCHMARKS.md.
bench: release bench-peers
	$(SWIFT) build $(RELEASE) --product logshipd-bench
	$(RELEASE_BIN)/logshipd-bench

# Release binaries, systemd units, sysusers.d/tmpfiles.d entries and the packaged configuration, under PREFIX
# (default /usr/local) and SYSCONFDIR (default /etc), staged in DESTDIR if set; see scripts/install.sh.
install: release
	BIN_PATH=$(RELEASE_BIN) scripts/install.sh

# logshipd_<version>_<arch>.deb and its -dbgsym package in .build/deb, from the same staging as install (the
# release binaries, units, sysusers.d/tmpfiles.d entries, configuration, completions and manual pages), with
# Depends from dpkg-shlibdeps and maintainer scripts from deploy/debian; see scripts/build-deb.sh.
deb: release
	BIN_PATH=$(RELEASE_BIN) scripts/build-deb.sh

# The manual pages logshipd(8), logctl(1) and logshipd.yaml(5) in .build/man, from the debug binaries' own help and
# config/logshipd.yaml (install and deb generate them from the release binaries); `man -l .build/man/logctl.1`.
man:
	$(SWIFT) build --product logshipd
	$(SWIFT) build --product logctl
	python3 scripts/generate-manpages.py $$($(SWIFT) build --show-bin-path) .build/man

clean:
	$(SWIFT) package clean
