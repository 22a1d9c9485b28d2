#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the npm package @roboflow/tfrecords (and its dependencies) into
# data/node_modules for tests/data/tfrecord_node_test.cpp, which cross-checks our
# TFRecord and tf.train.Example bytes against it. Install time only: the test never
# fetches anything, and skips (saying why) when the package or node is missing.
# Idempotent; offline-tolerant: when npm is missing or fails it warns and exits 0.
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="$repo/data"
package="@roboflow/tfrecords"
version="1.0.4"
installed="$prefix/node_modules/$package/package.json"

if [[ -f "$installed" ]] && grep -q "\"version\": \"$version\"" "$installed"; then
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "fetch-test-deps: npm not found; the TFRecord cross-check test will be skipped" >&2
  exit 0
fi
mkdir -p "$prefix"
echo "fetch-test-deps: installing $package@$version into $prefix/node_modules"
if ! (cd "$prefix" && npm install --prefix "$prefix" --no-save --no-audit --no-fund --loglevel=error \
        "$package@$version" >/dev/null); then
  echo "fetch-test-deps: npm install $package@$version failed; the TFRecord cross-check test will be skipped" >&2
fi
exit 0
