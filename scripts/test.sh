#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: checks what the suites need, then
# runs formatting and lint checks, unit tests, and the integration suites (real
# kubectl, kube-rs, recorded kube-apiserver conformance cases).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v kubectl >/dev/null 2>&1; then
  echo "test.sh: kubectl is required (expected at /usr/bin/kubectl)" >&2
  exit 1
fi

echo "== format and lints"
cargo fmt --check
cargo clippy --all-targets --locked -- -D warnings

echo "== unit and integration tests"
# Benches are left out here: `cargo bench` runs them (see README).
cargo test --locked --lib --bins --tests
