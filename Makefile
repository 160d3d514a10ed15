# dracpu: the README's commands. `make demo` and `make test` do everything on a fresh Debian 12
# machine: they install what is missing (deps), configure and build, then run.
SHELL := /bin/bash
BUILD ?= build
ASAN_BUILD ?= build-asan
MESON_FLAGS ?=
# Debian 12 packages the build, the tests and the demo need. Nothing else is downloaded.
DEB_PACKAGES := g++ meson ninja-build pkg-config python3 python3-yaml \
  protobuf-compiler protobuf-compiler-grpc libprotobuf-dev libgrpc++-dev \
  libboost-dev rapidjson-dev libgoogle-glog-dev libsystemd-dev libcurl4-openssl-dev \
  libyaml-cpp-dev libgtest-dev libgmock-dev libbenchmark-dev libssl-dev
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps build test asan fuzz tsan tsan-ci bench demo soak e2e-real format format-check tidy clean

all: build

# Idempotent; silent when every package is already installed.
deps:
	@missing=$$(dpkg-query -W -f='$${Package} $${Status}\n' $(DEB_PACKAGES) 2>/dev/null \
	    | awk '$$NF=="installed"{print $$1}' | sort -u | comm -13 - <(tr ' ' '\n' <<<"$(DEB_PACKAGES)" | sed '/^$$/d' | sort -u)); \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing" $$missing; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_FLAGS)

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

# All tests (unit, integration, e2e) of the normal build; ends with "N passed, N failed".
test: build
	@rm -f $(BUILD)/meson-logs/testlog.junit.xml
	@meson test -C $(BUILD) --print-errorlogs --num-processes 2; rc=$$?; \
	  python3 tests/junit_summary.py $(BUILD)/meson-logs/testlog.junit.xml; exit $$rc

# ASan + UBSan build in its own directory, halting on the first error, running all tests.
# At -O0; ASAN_DEBUG=false (.ci/run) leaves out debug info: a cold build compiles about a third
# faster, and a report still names every frame's function (the symbol table) and UBSan's its
# file and line (compiled into the check); rebuild with the default for file and line in ASan's.
# Set when build-asan is first configured.
ASAN_DEBUG ?= true
$(ASAN_BUILD)/build.ninja:
	meson setup $(ASAN_BUILD) -Db_sanitize=address,undefined -Db_lundef=false \
	  -Doptimization=0 -Ddebug=$(ASAN_DEBUG) -Dbenchmarks=false $(MESON_FLAGS)

asan: deps $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD)
	@rm -f $(ASAN_BUILD)/meson-logs/testlog.junit.xml
	@meson test -C $(ASAN_BUILD) --print-errorlogs --num-processes 2 --timeout-multiplier 3; rc=$$?; \
	  python3 tests/junit_summary.py $(ASAN_BUILD)/meson-logs/testlog.junit.xml; exit $$rc

# libFuzzer targets (tests/fuzz, docs/security.md): clang with ASan + UBSan in its own build
# directory, building only the fuzzers and what they link; each runs FUZZ_SECONDS (FUZZ_JOBS at
# a time) and the table gives executions, coverage and crashes. Fails on any crash, leak,
# timeout or sanitizer report, and names the input to keep in tests/fuzz/regressions/.
# Built at -O0 (buildtype debug): a cold build of it takes a third of the CPU time of -O2, which
# is most of what .ci/run's short fuzz step costs; the fuzzers run about half as fast.
# FUZZ_JUNIT gets one test case per target (.ci/run counts them).
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 30
FUZZ_JOBS ?= 1
FUZZ_ONLY ?=
FUZZ_JUNIT ?= $(FUZZ_BUILD)/meson-logs/fuzz.junit.xml
FUZZ_PACKAGES := clang libclang-rt-14-dev
$(FUZZ_BUILD)/build.ninja:
	CC=clang CXX=clang++ meson setup $(FUZZ_BUILD) -Dfuzzing=true -Dtests=false -Dbenchmarks=false \
	  -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug $(MESON_FLAGS)

fuzz: deps
	@$(MAKE) --no-print-directory DEB_PACKAGES="$(FUZZ_PACKAGES)" deps
	@$(MAKE) --no-print-directory $(FUZZ_BUILD)/build.ninja
	ninja -C $(FUZZ_BUILD) fuzzers
	python3 tests/fuzz/run_fuzz.py $(FUZZ_BUILD) --seconds $(FUZZ_SECONDS) --jobs $(FUZZ_JOBS) \
	  --junit $(FUZZ_JUNIT) $(if $(FUZZ_ONLY),--only $(FUZZ_ONLY))

# ThreadSanitizer build in its own directory (g++ -fsanitize=thread at -O1, libtsan2 from Debian's
# g++), running the unit, integration and e2e tests (not the corpus replays, soak or demo): a data
# race, lock-order inversion or other TSan report in a test process, or in an agent or simulator
# a test starts, halts that process and fails the test. tests/tsan.supp holds the suppressions,
# each justified there. tests/tsan_aslr.sh checks first that TSan programs start on this kernel
# and runs the tests under `setarch -R` when they need ASLR off. TSAN_TESTS=<names> runs only
# those tests, building only what they need; `make tsan-ci` (.ci/run) runs TSAN_CI_TESTS, the
# threaded subset (docs/security.md, "ThreadSanitizer"). Neither runs shm_hammer (suite
# no_tsan): its writer and reader are separate processes synchronised through the shared
# segment, which TSan does not model, and its instrumented reader is too slow for its seqlock
# retry budget (the ASan run keeps it). The programs that run gRPC (Debian's gRPC is not built with TSan) check our code, not gRPC's:
# common/thread_sanitizer.h. The e2e tests in TSAN_CI_TESTS run the TSan-built agents and
# simulators: concurrent Prepares from parallel kubelets, the health stream, hotplug, both agents.
TSAN_BUILD ?= build-tsan
TSAN_TESTS ?=
TSAN_CI_TESTS := http_server http_connection concurrent_fsync dra_agent nri_agent_unit claim_status \
  kube_kube_client kube_hostile_apiserver cpu_claim_preparer claim_fetch device_health_monitor \
  event_loop lingering_threads posix_file_system \
  ttrpc_server_client mux_multiplexer mux_ttrpc_peer nri_plugin sim_reconnect shm_segment shm_crash \
  slices_publisher slices_publisher_topology_watcher nri_agent \
  kubelet_plugin_server serial_event_engine sleeping_grpc_timers kubelet_simulator \
  dra_agent_e2e dra_agent_scale_e2e whole_node_e2e node_claims_e2e node_health_e2e \
  node_hotplug_e2e
TSAN_ENV := TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 history_size=4 \
  suppressions=$(CURDIR)/tests/tsan.supp"
# -Wno-tsan: g++ 12 warns (an error under -Werror) that TSan does not model the standalone
# std::atomic_thread_fence in Boost.Asio's fenced blocks; the handler hand-off those fences order
# is also ordered by the scheduler's mutex, which TSan does see.
$(TSAN_BUILD)/build.ninja:
	meson setup $(TSAN_BUILD) -Db_sanitize=thread -Db_lundef=false -Doptimization=1 -Ddebug=true \
	  -Dbenchmarks=false -Dcpp_args=-Wno-tsan $(MESON_FLAGS)

tsan: deps $(TSAN_BUILD)/build.ninja
	@targets=$$(python3 tests/meson_test_targets.py $(TSAN_BUILD) $(TSAN_TESTS)) && ninja -C $(TSAN_BUILD) $$targets
	@wrap=$$(tests/tsan_aslr.sh $(TSAN_BUILD)) || exit 1; \
	  rm -f $(TSAN_BUILD)/meson-logs/testlog.junit.xml; \
	  $(TSAN_ENV) $$wrap meson test -C $(TSAN_BUILD) --no-rebuild --print-errorlogs --num-processes 2 \
	  --timeout-multiplier 4 $(if $(TSAN_TESTS),$(TSAN_TESTS),--no-suite fuzz --no-suite soak --no-suite demo --no-suite no_tsan); rc=$$?; \
	  python3 tests/junit_summary.py $(TSAN_BUILD)/meson-logs/testlog.junit.xml; exit $$rc

tsan-ci:
	@$(MAKE) --no-print-directory tsan TSAN_TESTS="$(TSAN_CI_TESTS)"

# Benchmarks (Google Benchmark), each printing ratios against a baseline measured in the same run.
bench: build
	meson test -C $(BUILD) --benchmark --verbose

# MACHINE=<corpus machine> shows a real machine of ../shared/sysfs-corpus; SYSFS_ROOT=<dir> any tree.
# RUNTIME=containerd: the story on real containerd from the real-runtime suite's chroot (root).
demo: build
	@$(if $(filter containerd,$(RUNTIME)),$(MAKE) --no-print-directory DEB_PACKAGES="$(REALRT_PACKAGES)" deps)
	@MACHINE="$(MACHINE)" SYSFS_ROOT="$(SYSFS_ROOT)" RUNTIME="$(RUNTIME)" tests/demo/demo.sh $(BUILD)

# The fault-injection soak (docs/soak.md): a seeded random walk on one simulated node with both
# agents; on a failure it prints the seed, the step and the replay command. MACHINE as for demo;
# RUNTIME=legacy: a runtime that allows no unsolicited updates.
SEED ?= 1
STEPS ?= 5000
soak: build
	@DRACPU_SHARED_DIR="$${DRACPU_SHARED_DIR:-$(CURDIR)/../shared}" python3 tests/soak/soak.py $(BUILD) \
	  --seed $(SEED) --steps $(STEPS) $(if $(MACHINE),--machine $(MACHINE)) $(if $(RUNTIME),--runtime $(RUNTIME)) \
	  || { rc=$$?; [ $$rc = 77 ] || echo "make soak: FAILED with SEED=$(SEED) STEPS=$(STEPS)"; exit $$rc; }

# The real-runtime suite (tests/realrt, docs/real-runtimes.md): containerd 1.7.24 (trixie) and
# 2.1.9 (sid) from Debian chroots in $DRACPU_REALRT_CACHE (default /var/cache/dracpu-realrt,
# made by debootstrap on the first run, reused after), driven through CRI. Root; needs Debian's
# mirror the first time. SUITE=trixie|sid runs one.
REALRT_PACKAGES := debootstrap python3-grpcio python3-grpc-tools
e2e-real: build
	@$(MAKE) --no-print-directory DEB_PACKAGES="$(REALRT_PACKAGES)" deps
	@/usr/bin/python3 tests/realrt/realrt.py $(BUILD) --junit $(BUILD)/meson-logs/realrt.junit.xml \
	  $(if $(SUITE),--suite $(SUITE))

# clang-format (the tree's .clang-format, Google base) over every tracked C++ file: `format`
# rewrites them, `format-check` fails on the first file it would change (run by .ci/run).
CXX_SOURCES = $(shell git ls-files '*.cc' '*.h')
format:
	@command -v clang-format >/dev/null || $(MAKE) --no-print-directory DEB_PACKAGES=clang-format deps
	clang-format -i $(CXX_SOURCES)
format-check:
	@command -v clang-format >/dev/null || $(MAKE) --no-print-directory DEB_PACKAGES=clang-format deps
	@clang-format --dry-run -Werror $(CXX_SOURCES) && echo "format-check: $(words $(CXX_SOURCES)) files clean"

# clang-tidy (the tree's .clang-tidy) over the daemons' .cc files, with the normal build's
# compile commands; every finding fails (.ci/run runs it after the tests). The gcc-only warning
# flags and a C++20 operator-reversal warning inside RapidJSON's own headers are not ours to fix.
TIDY_SOURCES = $(shell git ls-files 'common/*.cc' 'shm-schema/*.cc' 'dra-agent/*.cc' 'nri-agent/*.cc' | grep -v '_test\.cc$$')
tidy: build
	@command -v run-clang-tidy >/dev/null || $(MAKE) --no-print-directory DEB_PACKAGES=clang-tidy deps
	@run-clang-tidy -quiet -p $(BUILD) -j $$(nproc) -extra-arg=-Wno-unknown-warning-option \
	  -extra-arg=-Wno-ambiguous-reversed-operator $(TIDY_SOURCES) 2>&1 \
	  | grep -vE '^(clang-tidy|[0-9]+ warnings? (and [0-9]+ errors? )?generated|Suppressed [0-9]+ warnings|Use -header-filter)' ; \
	  rc=$${PIPESTATUS[0]}; [ $$rc = 0 ] && echo "tidy: $(words $(TIDY_SOURCES)) files clean"; exit $$rc

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(TSAN_BUILD)

# The image (deploy/image, docs/operations.md "Image"): the three binaries of the normal build,
# on a Debian 12 base that deploy/image/base.sh makes with debootstrap from Debian's mirror
# (cached in $DRACPU_IMAGE_CACHE, default /var/cache/dracpu-image) with exactly the Debian
# packages of the libraries they link; built with buildah (root, chroot isolation), checked
# inside (--version, ldd, gatherinfo), tagged with the chart's default image reference
# (localhost/dracpu:<appVersion>), its size printed. IMAGE=<ref> tags another name;
# IMAGE_BASE=<registry image> uses a registry's Debian 12 instead of debootstrap;
# IMAGE_ALLOW_SUBSET=1 (.ci/run) runs the documented subset where buildah cannot run.
# `image-context` only makes build/image-context, for docker or podman (see the Dockerfile).
IMAGE_PACKAGES := buildah debootstrap
.PHONY: image image-context
image: build
	@$(MAKE) --no-print-directory DEB_PACKAGES="$(IMAGE_PACKAGES)" deps
	@IMAGE="$(IMAGE)" IMAGE_BASE="$(IMAGE_BASE)" IMAGE_ALLOW_SUBSET="$(IMAGE_ALLOW_SUBSET)" \
	  deploy/image/build.sh $(BUILD)
image-context: build
	@deploy/image/build.sh $(BUILD) --context-only

# The pictures of `dracpu-shm map` in README.md and docs/operations.md (docs/images/node-map-*.png):
# make demo's node on a synthetic 2-socket 96-CPU tree, the map with both claims pinned as a
# terminal shows it (docs/images/ansi2svg.py) and as its SVG, both rendered to PNG by
# rsvg-convert (Debian's librsvg2-bin, installed here only).
.PHONY: screenshots
screenshots: build
	@$(MAKE) --no-print-directory DEB_PACKAGES=librsvg2-bin deps
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && mkdir "$$tmp/maps" && \
	  python3 tests/e2e/synthetic_sysfs.py "$$tmp/node" 2 24 2 1 >/dev/null && \
	  { DRACPU_DEMO_MAP_DIR="$$tmp/maps" SYSFS_ROOT="$$tmp/node" tests/demo/demo.sh $(BUILD) \
	      >"$$tmp/demo.log" 2>&1 || { tail -40 "$$tmp/demo.log"; exit 1; }; } && \
	  [ -s "$$tmp/maps/map.svg" ] || { echo "make screenshots: the demo drew no map"; exit 1; } && \
	  python3 docs/images/ansi2svg.py <"$$tmp/maps/map.ansi" >"$$tmp/text.svg" && \
	  rsvg-convert "$$tmp/text.svg" -o docs/images/node-map-text.png && \
	  rsvg-convert "$$tmp/maps/map.svg" -o docs/images/node-map-svg.png && \
	  echo "make screenshots: wrote docs/images/node-map-text.png and node-map-svg.png"
