#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the npm test material into data/node_modules:
#   @roboflow/tfrecords  tests/data/tfrecord_node_test.cpp cross-checks our TFRecord and
#                        tf.train.Example bytes against it;
#   onnxruntime-node     tests/onnx/export_test.cpp runs our exported ONNX models in ONNX
#                        Runtime (its CPU binaries ship in the package; ONNXRUNTIME_NODE_INSTALL
#                        =skip skips the optional CUDA download), and bench/peers/onnx_ort.js.
# Then exports the torchvision models of tests/onnx/torchvision_test.cpp and
# bench/bench_onnx.cpp into data/onnx_models (scripts/make-onnx-models.py; Debian's
# python3-torch and python3-torchvision, from scripts/install-deps.sh).
# Install time only: the tests never fetch anything, and skip (saying why) when a package,
# node or the models are missing. Idempotent; offline-tolerant: when npm is missing or fails it warns
# and exits 0, except with CI set, where a missing oracle fails the run (as the tests do). Both packages go in one npm call (a later --no-save install would prune
# the other).
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="$repo/data"
packages=("@roboflow/tfrecords@1.0.4" "onnxruntime-node@1.30.0")

installed() {  # name@version
  local name="${1%@*}" version="${1##*@}"
  local pj="$prefix/node_modules/$name/package.json"
  [[ -f "$pj" ]] && grep -q "\"version\": \"$version\"" "$pj"
}

failed=0
missing=0
for p in "${packages[@]}"; do installed "$p" || missing=1; done
if ((missing)) && ! command -v npm >/dev/null; then
  echo "fetch-test-deps: npm not found; the TFRecord and ONNX Runtime cross-checks will be skipped" >&2
  failed=1
elif ((missing)); then
  mkdir -p "$prefix"
  echo "fetch-test-deps: installing ${packages[*]} into $prefix/node_modules"
  if ! (cd "$prefix" && ONNXRUNTIME_NODE_INSTALL=skip npm install --prefix "$prefix" --no-save --no-audit \
          --no-fund --loglevel=error "${packages[@]}" >/dev/null); then
    echo "fetch-test-deps: npm install failed; the TFRecord and ONNX Runtime cross-checks will be skipped" >&2
    failed=1
  fi
fi

# The script returns at once when every model is present (it imports torch only to export).
if ! /usr/bin/python3 "$repo/scripts/make-onnx-models.py" "$prefix/onnx_models" >"$prefix/onnx_models.log" 2>&1; then
  echo "fetch-test-deps: exporting the torchvision models failed (needs Debian's python3-torch and" \
       "python3-torchvision); the torchvision ONNX tests will be skipped. $prefix/onnx_models.log:" >&2
  tail -3 "$prefix/onnx_models.log" >&2
  failed=1
fi
grep -v ": present, skipped$" "$prefix/onnx_models.log" || true
if ((failed)) && [[ -n "${CI:-}" ]]; then
  echo "fetch-test-deps: CI is set, so a missing oracle is a failure" >&2
  exit 1
fi
exit 0
