// SPDX-License-Identifier: Apache-2.0
#include "deepflow/lite/model.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>

#include "deepflow/lite/error.h"
#include "deepflow/lite/tensor.h"
#include "schema/tflite_generated.h"

namespace deepflow::lite {

namespace {

// Flatbuffers' verifier bounds: a real model has ~1e4 tables per subgraph; these only stop
// a hostile file from making the check itself slow.
constexpr flatbuffers::uoffset_t kMaxDepth = 64;
constexpr flatbuffers::uoffset_t kMaxTables = 1u << 26;

}  // namespace

std::shared_ptr<const Model> Model::from_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  DF_LITE_CHECK(fd >= 0, "[lite.Model] cannot open '", path, "': ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail("[lite.Model] cannot stat '", path, "': ", std::strerror(err));
  }
  std::shared_ptr<Model> m(new Model());
  m->name_ = path;
  m->size_ = static_cast<size_t>(st.st_size);
  if (m->size_ > 0) {
    void* p = ::mmap(nullptr, m->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    const int err = errno;
    ::close(fd);
    DF_LITE_CHECK(p != MAP_FAILED, "[lite.Model] cannot map '", path, "': ", std::strerror(err));
    m->mapping_ = p;
    m->data_ = static_cast<const std::byte*>(p);
  } else {
    ::close(fd);
  }
  m->verify();
  return m;
}

std::shared_ptr<const Model> Model::from_buffer(std::string_view bytes, const std::string& name) {
  std::shared_ptr<Model> m(new Model());
  m->name_ = name;
  m->owned_.assign(bytes.data(), bytes.size());
  m->data_ = reinterpret_cast<const std::byte*>(m->owned_.data());
  m->size_ = m->owned_.size();
  m->verify();
  return m;
}

Model::~Model() {
  if (mapping_ != nullptr) ::munmap(mapping_, size_);
}

void Model::verify() {
  const auto* bytes = reinterpret_cast<const uint8_t*>(data_);
  DF_LITE_CHECK(size_ >= 8, "[lite.Model] '", name_, "' is ", size_, " bytes: too short for a .tflite file");
  DF_LITE_CHECK(fb::ModelBufferHasIdentifier(bytes), "[lite.Model] '", name_,
                "' is not a .tflite file: bytes 4..7 are not \"TFL3\"");
  flatbuffers::Verifier verifier(bytes, size_, kMaxDepth, kMaxTables);
  DF_LITE_CHECK(fb::VerifyModelBuffer(verifier), "[lite.Model] '", name_,
                "' is corrupt or truncated: the flatbuffer does not verify (", size_, " bytes)");
  root_ = fb::GetModel(bytes);
  const fb::Model& model = *root_;
  DF_LITE_CHECK(model.version() <= 3, "[lite.Model] '", name_, "' has schema version ", model.version(),
                "; this reader knows versions up to 3");
  const auto* subgraphs = model.subgraphs();
  DF_LITE_CHECK(subgraphs && subgraphs->size() > 0, "[lite.Model] '", name_, "' has no subgraph");
  const uint32_t num_buffers = model.buffers() ? model.buffers()->size() : 0;
  const uint32_t num_opcodes = model.operator_codes() ? model.operator_codes()->size() : 0;
  const int num_subgraphs = static_cast<int>(subgraphs->size());

  if (model.buffers()) {
    for (uint32_t b = 0; b < num_buffers; ++b) {
      const fb::Buffer* buf = model.buffers()->Get(b);
      if (buf->offset() > 1) {
        DF_LITE_CHECK(buf->offset() <= size_ && buf->size() <= size_ - buf->offset(), "[lite.Model] '", name_,
                      "': buffer ", b, " points at bytes ", buf->offset(), "..", buf->offset() + buf->size(),
                      " past the end of the file (", size_, " bytes)");
      }
    }
  }
  // Subgraphs called by IF / WHILE / CALL_ONCE, for the cycle check.
  std::vector<std::vector<int>> calls(static_cast<size_t>(num_subgraphs));
  for (int s = 0; s < num_subgraphs; ++s) {
    const fb::SubGraph* sg = subgraphs->Get(static_cast<uint32_t>(s));
    const int num_tensors = sg->tensors() ? static_cast<int>(sg->tensors()->size()) : 0;
    auto check_index = [&](int t, const char* what, bool optional) {
      DF_LITE_CHECK((optional && t == -1) || (t >= 0 && t < num_tensors), "[lite.Model] '", name_, "': subgraph ",
                    s, " ", what, " names tensor ", t, " of ", num_tensors);
    };
    if (sg->inputs())
      for (int t : *sg->inputs()) check_index(t, "input", false);
    if (sg->outputs())
      for (int t : *sg->outputs()) check_index(t, "output", false);
    for (int t = 0; t < num_tensors; ++t) {
      const fb::Tensor* tensor = sg->tensors()->Get(static_cast<uint32_t>(t));
      const auto type = static_cast<DType>(tensor->type());
      DF_LITE_CHECK(static_cast<int>(type) >= 0 && static_cast<int>(type) <= static_cast<int>(DType::kBFloat16),
                    "[lite.Model] '", name_, "': tensor ", t, " of subgraph ", s, " has unknown type ",
                    static_cast<int>(type));
      DF_LITE_CHECK(tensor->buffer() < std::max<uint32_t>(num_buffers, 1), "[lite.Model] '", name_, "': tensor ",
                    t, " of subgraph ", s, " names buffer ", tensor->buffer(), " of ", num_buffers);
      int64_t elements = 1;
      if (tensor->shape()) {
        for (int d : *tensor->shape()) {
          DF_LITE_CHECK(d >= 0 && d <= (1 << 30), "[lite.Model] '", name_, "': tensor ", t, " of subgraph ", s,
                        " has dimension ", d);
          elements *= d;
          DF_LITE_CHECK(elements <= (int64_t{1} << 40), "[lite.Model] '", name_, "': tensor ", t,
                        " is too large");
        }
      }
      const std::string_view data = buffer(tensor->buffer());
      const size_t esize = dtype_size(type);
      if (!data.empty() && esize > 0 && !tensor->sparsity()) {
        DF_LITE_CHECK(static_cast<int64_t>(data.size()) == elements * static_cast<int64_t>(esize), "[lite.Model] '",
                      name_, "': tensor ", t, " '", tensor->name() ? tensor->name()->str() : "", "' (",
                      dtype_name(type), " ", elements, " elements) has a buffer of ", data.size(), " bytes");
      }
      if (const auto* q = tensor->quantization(); q && q->scale() && q->scale()->size() > 1) {
        DF_LITE_CHECK(q->quantized_dimension() >= 0 && tensor->shape() &&
                          q->quantized_dimension() < static_cast<int>(tensor->shape()->size()) &&
                          tensor->shape()->Get(static_cast<uint32_t>(q->quantized_dimension())) ==
                              static_cast<int>(q->scale()->size()),
                      "[lite.Model] '", name_, "': tensor ", t, " has ", q->scale()->size(),
                      " scales along dimension ", q->quantized_dimension());
        DF_LITE_CHECK(!q->zero_point() || q->zero_point()->size() == q->scale()->size(), "[lite.Model] '", name_,
                      "': tensor ", t, " has ", q->scale()->size(), " scales but ", q->zero_point()->size(),
                      " zero points");
      }
    }
    if (!sg->operators()) continue;
    for (uint32_t o = 0; o < sg->operators()->size(); ++o) {
      const fb::Operator* op = sg->operators()->Get(o);
      DF_LITE_CHECK(op->opcode_index() < num_opcodes, "[lite.Model] '", name_, "': operator ", o, " of subgraph ", s,
                    " names opcode ", op->opcode_index(), " of ", num_opcodes);
      if (op->inputs())
        for (int t : *op->inputs()) check_index(t, "operator input", true);
      if (op->outputs())
        for (int t : *op->outputs()) check_index(t, "operator output", false);
      if (op->large_custom_options_offset() > 1) {
        DF_LITE_CHECK(op->large_custom_options_offset() <= size_ &&
                          op->large_custom_options_size() <= size_ - op->large_custom_options_offset(),
                      "[lite.Model] '", name_, "': operator ", o, "'s custom options are past the end of the file");
      }
      auto callee = [&](int index, const char* what) {
        DF_LITE_CHECK(index > 0 && index < num_subgraphs, "[lite.Model] '", name_, "': operator ", o,
                      " of subgraph ", s, " calls subgraph ", index, " (", what, ") of ", num_subgraphs);
        calls[static_cast<size_t>(s)].push_back(index);
      };
      if (const auto* opt = op->builtin_options_as_IfOptions()) {
        callee(opt->then_subgraph_index(), "then");
        callee(opt->else_subgraph_index(), "else");
      } else if (const auto* w = op->builtin_options_as_WhileOptions()) {
        callee(w->cond_subgraph_index(), "cond");
        callee(w->body_subgraph_index(), "body");
      }
    }
  }
  // A subgraph that (indirectly) calls itself would recurse without end when it runs.
  std::vector<int> state(static_cast<size_t>(num_subgraphs), 0);  // 0 new, 1 on the path, 2 done
  std::function<void(int)> visit = [&](int s) {
    state[static_cast<size_t>(s)] = 1;
    for (int c : calls[static_cast<size_t>(s)]) {
      DF_LITE_CHECK(state[static_cast<size_t>(c)] != 1, "[lite.Model] '", name_, "': subgraph ", s,
                    " calls subgraph ", c, ", which calls it back (a cycle)");
      if (state[static_cast<size_t>(c)] == 0) visit(c);
    }
    state[static_cast<size_t>(s)] = 2;
  };
  for (int s = 0; s < num_subgraphs; ++s)
    if (state[static_cast<size_t>(s)] == 0) visit(s);

  if (const auto* sigs = model.signature_defs()) {
    for (uint32_t i = 0; i < sigs->size(); ++i) {
      const fb::SignatureDef* sig = sigs->Get(i);
      DF_LITE_CHECK(static_cast<int>(sig->subgraph_index()) < num_subgraphs, "[lite.Model] '", name_,
                    "': signature ", i, " names subgraph ", sig->subgraph_index(), " of ", num_subgraphs);
      const fb::SubGraph* sg = subgraphs->Get(sig->subgraph_index());
      const uint32_t num_tensors = sg->tensors() ? sg->tensors()->size() : 0;
      for (const auto* maps : {sig->inputs(), sig->outputs()}) {
        if (!maps) continue;
        for (const fb::TensorMap* m : *maps)
          DF_LITE_CHECK(m->tensor_index() < num_tensors, "[lite.Model] '", name_, "': signature ", i,
                        " names tensor ", m->tensor_index(), " of ", num_tensors);
      }
    }
  }
  if (const auto* md = model.metadata()) {
    for (const fb::Metadata* m : *md)
      DF_LITE_CHECK(m->buffer() < num_buffers, "[lite.Model] '", name_, "': metadata names buffer ", m->buffer(),
                    " of ", num_buffers);
  }
}

std::string_view Model::buffer(uint32_t index) const {
  const auto* buffers = root_->buffers();
  if (!buffers || index >= buffers->size()) return {};
  const fb::Buffer* b = buffers->Get(index);
  if (b->offset() > 1) return {reinterpret_cast<const char*>(data_) + b->offset(), static_cast<size_t>(b->size())};
  if (!b->data()) return {};
  return {reinterpret_cast<const char*>(b->data()->data()), b->data()->size()};
}

std::string_view Model::metadata(std::string_view key) const {
  if (const auto* md = root_->metadata()) {
    for (const fb::Metadata* m : *md)
      if (m->name() && m->name()->string_view() == key) return buffer(m->buffer());
  }
  return {};
}

std::string Model::min_runtime_version() const {
  std::string v(metadata("min_runtime_version"));
  v.erase(std::find(v.begin(), v.end(), '\0'), v.end());
  return v;
}

}  // namespace deepflow::lite
