// SPDX-License-Identifier: Apache-2.0
// lite::Model: a .tflite file, memory-mapped (or held) and checked before anything reads it.
//
//   auto model = lite::Model::from_file("mobilenet_v2.tflite");
//   lite::Interpreter interpreter(model, /*num_threads=*/2);
//
// Loading verifies the flatbuffer (every offset and size in range, nesting bounded) and
// then what the format leaves to the reader: tensor, buffer, opcode and subgraph indices,
// constant sizes against shapes, external buffers against the file size, and that IF /
// WHILE / CALL_ONCE subgraph references form no cycle. A model is immutable and may be
// shared by several interpreters; it outlives them through shared_ptr.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace deepflow::lite {

namespace fb {
struct Model;
}

class Model {
 public:
  /// Maps the file read-only. Throws lite::Error naming the path on I/O errors or a bad file.
  static std::shared_ptr<const Model> from_file(const std::string& path);
  /// Copies the bytes (TFLite's BuildFromBuffer keeps a pointer; a copy is safer from Python).
  static std::shared_ptr<const Model> from_buffer(std::string_view bytes, const std::string& name = "<buffer>");

  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  /// The root table (valid as long as the Model).
  const fb::Model* fb() const { return root_; }
  const std::byte* bytes() const { return data_; }
  size_t size() const { return size_; }
  /// The path, or "<buffer>": for messages.
  const std::string& name() const { return name_; }

  /// Bytes of buffer i (data inline or after the flatbuffer); empty for none.
  std::string_view buffer(uint32_t index) const;
  /// Metadata entries by name ("min_runtime_version", ...): their buffer's bytes.
  std::string_view metadata(std::string_view key) const;
  /// min_runtime_version metadata without its NUL padding; "" when absent.
  std::string min_runtime_version() const;

 private:
  Model() = default;
  void verify();

  std::string name_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
  std::string owned_;         // from_buffer
  void* mapping_ = nullptr;   // from_file
  const fb::Model* root_ = nullptr;
};

}  // namespace deepflow::lite
