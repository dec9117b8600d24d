# tailcc — set-up, demo and tests. Everything installs itself on a fresh Debian 12 machine.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
# Debian packages the project and its tests need (cpp: P4 preprocessing as p4c does it;
# gcc, python3-dev: softswitch compiles each pipeline to C, softswitch/fastpath/;
# g++: libstdc++ headers, which ns-3's Python bindings (cppyy) parse at run time for the
# lab's ns-3 cross-check).
APT_PKGS := cpp python3-venv python3-pip iproute2 mininet iputils-ping ethtool procps libjemalloc2 \
	gcc libc6-dev python3-dev g++
CONFORMANCE ?= $(abspath ../shared/conformance)
# The reference p4lang tools (real p4c + BMv2), prebuilt beside the checkout: when the
# bundle is here, `make test` installs it and cross-runs every suite on BMv2 too.
P4LANG_INSTALL ?= $(abspath ../shared/p4lang/install.sh)

.PHONY: setup demo test lint conformance bench clean reference-tools

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml setup.py
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "apt-get install:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; fi
	/usr/bin/python3 -m venv --system-site-packages $(VENV)
	$(PY) -m pip install -q --upgrade pip
# The same package `pip install .` gives a user (its P4Runtime bindings for protobuf's upb
# runtime and the P4 programs included: setup.py), editable, with the test and shell extras.
	$(PY) -m pip install -q -e '.[test,shell]'
# p4runtime-shell without its pins (protobuf < 3.21, PyPI's p4runtime): it runs on the stubs
# above (tests/test_p4runtime_shell.py); its other dependencies are the `shell` extra.
	$(PY) -m pip install -q --no-deps 'p4runtime-shell==0.0.4'
# BMv2's Python Thrift modules (bm_runtime, sswitch_runtime: controlplane/reconcile/
# bmv2_thrift.py) sit in <prefix>/lib/python3 beside simple_switch_CLI, not in a package:
# this .pth puts that folder on the venv's path (Python adds it once it exists).
	echo "$${P4LANG_PREFIX:-/opt/p4lang}/lib/python3" > \
	  "$$($(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/p4lang-bmv2.pth"
	touch $@

# The main job: the P/D cascade on a leaf-spine fabric (every switch runs tailcc.p4 on
# softswitch), baseline / priority-only / tailcc / tailcc-nic (tailcc_nic.p4 in every host
# NIC) on identical traffic, per-class slowdown with 95% CIs over 3 seeds, PFC/ECN/CNP
# figures, plots under out/demo/ (3 ms x 3 seeds, ~240 hot KV blocks per scheme: 74 CPU-s,
# 45 s on 2 cores at load average 2, about what 3 schemes x 5 ms took, 67 CPU-s: the P4
# NIC costs a switch-only cell again; `tailcc lab pd_cascade` is the full one, make bench).
demo: setup
	$(VENV)/bin/softswitch compile p4src/tailcc.p4 --p4runtime-files out/tailcc.p4info.txtpb
	$(VENV)/bin/tailcc lab pd_cascade --duration-us 3000 --seeds 1,2,3 --out out/demo --fresh

# Real p4c/BMv2 from ../shared/p4lang when the bundle is there (seconds when installed).
reference-tools:
	@if [ -f "$(P4LANG_INSTALL)" ]; then bash "$(P4LANG_INSTALL)"; \
	else echo "reference p4c/BMv2: no bundle at $(P4LANG_INSTALL); BMv2 legs will skip"; fi

test: setup reference-tools
	$(VENV)/bin/ruff check softswitch controlplane taillab tests bench topologies ptf_tests
	$(PY) -m mypy
	P4_CONFORMANCE_DIR=$(CONFORMANCE) $(PY) -m pytest -q -p no:cacheprovider tests

# p4c's corpus on softswitch; then every STF program compiled by real p4c-bm2-ss, run from
# its BMv2 JSON and from source, compared (softswitch/bmv2json/differential.py).
conformance: setup reference-tools
	P4_CONFORMANCE_DIR=$(CONFORMANCE) $(PY) -m softswitch.devtools.conformance $(CONFORMANCE)
	$(PY) -m softswitch.bmv2json.differential $(CONFORMANCE) --jobs 2

# Every benchmark, softswitch beside BMv2 (when the reference tools are installed) in one
# run, one ratio table, JSON in out/bench/ (bench/run_all.py); the lab at full size
# (out/lab/: >= 10,000 messages per mouse class and scheme over 3 seeds), its speed against issue 45's baseline commit (bench/lab_speed.py), its
# ns-3 cross-check, and the Mininet mix on one softswitch, FIFO vs tailcc,
# 20 s each (out/mix/). Then bench/performance_doc.py writes the figures into
# docs/performance.md and docs/lab.md (between their `make bench` markers) and the two
# CDFs into docs/img/. Needs root (veth, Mininet). A failing step stops the run, the docs
# unchanged. BENCH_ARGS e.g. "--quick", "--latency-seconds 10", "--skip p4runtime apply".
bench: setup reference-tools
	$(PY) bench/run_all.py $(BENCH_ARGS)
	$(VENV)/bin/tailcc lab pd_cascade --out out/lab/pd_cascade
	$(VENV)/bin/tailcc lab moe --duration-us 270000 --out out/lab/moe
	$(VENV)/bin/tailcc lab moe --sweep 0.3,0.5,0.7,0.9 --duration-us 3000 --seeds 1,2 \
		--out out/lab/moe-sweep
	$(PY) bench/lab_speed.py --json out/bench/lab_speed.json
	$(PY) -m taillab.ns3_check --packets 200000
	$(PY) -m topologies.mix --topology single --switch softswitch --duration 20 --out out/mix
	$(PY) bench/performance_doc.py

clean:
	rm -rf $(VENV) out .pytest_cache

# PTF suites (ptf_tests/) on softswitch in a private netns; PTF_ARGS e.g.
# "--target bmv2" (p4c-bm2-ss compiles tailcc.p4), "--config json" / "--config
# json-wrapped" (softswitch from p4c's BMv2 JSON and P4Info, bare or in PI's
# p4.tmp.P4DeviceConfig) or "-- fast_cnp_test".
.PHONY: ptf
ptf: setup
	$(PY) ptf_tests/run.py $(PTF_ARGS)

# The PTF suites on softswitch (from its artifact, then from p4c's BMv2 JSON) and on
# BMv2 (real p4c + simple_switch_grpc), one row per test with every outcome; fails on a
# difference ptf_tests/README.md does not explain. COMPARE_ARGS e.g. "--keep /tmp/cmp",
# "--alone" (each test also run on its own), "--no-json" or "-- ecn_test".
.PHONY: ptf-compare
ptf-compare: setup reference-tools
	$(PY) ptf_tests/compare.py $(COMPARE_ARGS)

# Mice and elephants through a Mininet topology, FIFO vs tailcc intent: per-class
# P50/P99/P999/max, loss and goodput, out/mix/mix-TOPO-SWITCH.{json,png}. Needs root.
# MIX_ARGS e.g. "--topology leaf-spine", "--switch bmv2", "--duration 60", "--out DIR".
.PHONY: mininet-mix
MIX_ARGS ?=
mininet-mix: setup reference-tools
	$(PY) -m topologies.mix $(MIX_ARGS)

# Mininet topologies (topologies/*.yaml), one softswitch per switch: up, ping every
# host pair, down. TOPO=topologies/leaf_spine.yaml, TOPO_ARGS e.g. "--cli",
# "--switch bmv2" or "--backend netns" (no Mininet: ip netns + veth pairs). Needs root.
.PHONY: topo
TOPO ?= topologies/single.yaml
topo: setup
	$(PY) -m topologies $(TOPO) $(TOPO_ARGS)
