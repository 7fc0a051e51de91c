#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: checks what the suites need (installing
# Debian's etcd-server when etcd is missing, the Python kubernetes client and the pytest
# plugin in python/), then runs formatting and lint checks, unit tests, the integration
# suites (real kubectl, kube-rs, the Python client, recorded kube-apiserver conformance
# cases) on the embedded store, the pytest plugin's suite, and the integration suites
# again with every server on its own etcd.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v kubectl >/dev/null 2>&1; then
  echo "test.sh: kubectl is required (expected at /usr/bin/kubectl)" >&2
  exit 1
fi

# The etcd suites start real etcd members: ETCD_BIN, else Debian's /usr/bin/etcd.
if [ -n "${ETCD_BIN:-}" ]; then
  if [ ! -x "$ETCD_BIN" ]; then
    echo "test.sh: ETCD_BIN=$ETCD_BIN is not an executable" >&2
    exit 1
  fi
elif [ ! -x /usr/bin/etcd ]; then
  echo "== installing etcd-server (/usr/bin/etcd is missing)"
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "test.sh: /usr/bin/etcd is missing and installing etcd-server needs root (no sudo)" >&2
      exit 1
    fi
    sudo=(sudo)
  fi
  if ! ${sudo[@]+"${sudo[@]}"} apt-get update ||
    ! ${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get install -y etcd-server; then
    echo "test.sh: installing Debian's etcd-server failed; the etcd suites need /usr/bin/etcd" >&2
    exit 1
  fi
  if [ ! -x /usr/bin/etcd ]; then
    echo "test.sh: etcd-server is installed but /usr/bin/etcd is still missing" >&2
    exit 1
  fi
fi

# The Python client suite (integration/client.rs) drives the `kubernetes` package.
if ! python3 -c 'import kubernetes' >/dev/null 2>&1; then
  echo "== installing the Python kubernetes client (python3 -m pip install kubernetes)"
  if ! python3 -m pip install --quiet kubernetes; then
    echo "test.sh: installing the Python kubernetes client failed; integration/client.rs needs it" >&2
    exit 1
  fi
fi

# The pytest plugin's suite (python/tests) runs the plugin as users install it; pip brings
# pytest along when it is missing. Installed every run, so it is this checkout's code.
echo "== installing the pytest plugin (python3 -m pip install ./python)"
if ! python3 -m pip install --quiet ./python; then
  echo "test.sh: installing the pytest plugin from python/ failed; its suite (python/tests) needs it" >&2
  exit 1
fi

echo "== format and lints"
cargo fmt --all --check
# `--features kube`: the harness's kube client (its suite and example need it).
cargo clippy --workspace --all-targets --locked --features kube -- -D warnings

echo "== unit and integration tests (the etcd suites and conformance's etcd:: cases on etcd)"
# Benches are left out here: `cargo bench` runs them (see README).
cargo test --workspace --locked --features kube --lib --bins --tests

echo "== the pytest plugin's suite (python/tests) against the debug binary"
# The binary `cargo test` just built for the integration suites (`cargo build --features
# kube` alone cannot build: k8s-openapi's version feature comes from the dev-dependencies).
if [ ! -x target/debug/crd-apiserver ]; then
  echo "test.sh: target/debug/crd-apiserver is missing after cargo test" >&2
  exit 1
fi
CRD_APISERVER_BIN=target/debug/crd-apiserver python3 -m pytest python/tests -q -p no:cacheprovider

echo "== integration suites again, every server on its own etcd (TEST_BACKEND=etcd)"
# Every [[test]] target except those that pick their backends themselves: the etcd
# suites, conformance (each case is a test on both backends), envtest (each run on
# both) and snapshots (embedded store only; etcd's refusal is in etcd_server).
suites=()
while read -r name; do
  case "$name" in
    etcd | etcd_server | conformance | envtest | snapshots) ;;
    *) suites+=(--test "$name") ;;
  esac
done < <(awk '/^\[\[test\]\]/ { in_test = 1; next }
              /^\[/ { in_test = 0 }
              in_test && $1 == "name" { gsub(/"/, "", $3); print $3 }' Cargo.toml)
TEST_BACKEND=etcd cargo test --locked --features kube "${suites[@]}"

echo "== fuzzing: every target in fuzz/ for a bounded time (scripts/fuzz.sh)"
./scripts/fuzz.sh
