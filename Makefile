# tailcc — set-up, demo and tests. Everything installs itself on a fresh Debian 12 machine.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
# Debian packages the project and its tests need (cpp: P4 preprocessing as p4c does it).
APT_PKGS := cpp python3-venv python3-pip iproute2 mininet iputils-ping ethtool procps
CONFORMANCE ?= $(abspath ../shared/conformance)

.PHONY: setup demo test lint conformance bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "apt-get install:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; fi
	/usr/bin/python3 -m venv --system-site-packages $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

# The main job: tailcc's pipeline on softswitch under mixed mouse/elephant inference
# traffic, training-era vs tailcc configuration, per-class P50/P99/P999 and a plot.
demo: setup
	$(VENV)/bin/softswitch compile p4src/tailcc.p4 --p4runtime-files out/tailcc.p4info.txtpb
	$(PY) bench/tail_latency.py --duration-us 20000 --plot out/tail_latency.png

test: setup
	$(VENV)/bin/ruff check softswitch controlplane tests bench topologies ptf_tests
	P4_CONFORMANCE_DIR=$(CONFORMANCE) $(PY) -m pytest -q -p no:cacheprovider tests

conformance: setup
	P4_CONFORMANCE_DIR=$(CONFORMANCE) $(PY) -m softswitch.conformance $(CONFORMANCE)

bench: setup
	$(PY) bench/pps.py

clean:
	rm -rf $(VENV) out .pytest_cache

# PTF suites (ptf_tests/) on softswitch in a private netns; PTF_ARGS e.g.
# "--target bmv2 --bmv2-json build/tailcc.json" or "-- fast_cnp_test".
.PHONY: ptf
ptf: setup
	$(PY) ptf_tests/run.py $(PTF_ARGS)

# Mininet topologies (topologies/*.yaml), one softswitch per switch: up, ping every
# host pair, down. TOPO=topologies/leaf_spine.yaml, TOPO_ARGS e.g. "--cli",
# "--switch bmv2" or "--backend netns" (no Mininet: ip netns + veth pairs). Needs root.
.PHONY: topo
TOPO ?= topologies/single.yaml
topo: setup
	$(PY) -m topologies $(TOPO) $(TOPO_ARGS)
