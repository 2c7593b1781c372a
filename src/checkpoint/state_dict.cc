// PyTorch state dicts in and out of trainscope's models (state_dict.h): the
// archive torch.save writes, its pickle read and written by our own machine
// (state_dict_pickle.h), its zip by caffe2's writer and our zip checks.
#include "trainscope/checkpoint/state_dict.h"

#include <ATen/CPUGeneratorImpl.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/serialize.h>
#include <torch/torch.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "checkpoint_code.h"
#include "state_dict_pickle.h"
#include "trainscope/checkpoint/checkpoint.h"
#include "trainscope/config/config.h"
#include "trainscope/config/seeds.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/regular_file.h"
#include "trainscope/core/util.h"
#include "trainscope/data/data.h"

namespace fs = std::filesystem;

namespace trainscope::checkpoint {
using core::ErrorKind;
using core::fail;
using models::Classifier;

namespace {

// Every parameter and buffer of the model by its full name, in the model's
// order (parameters first), as PyTorch's state_dict() names them.
std::vector<std::pair<std::string, torch::Tensor>> named_tensors(Classifier& model) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& p : model.named_parameters(true)) out.emplace_back(p.key(), p.value());
  for (const auto& b : model.named_buffers(true)) out.emplace_back(b.key(), b.value());
  return out;
}

std::string tensor_text(const torch::Tensor& t) {
  std::string s = std::string(c10::toString(t.scalar_type())) + " [";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

std::string read_bytes(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    fail(ErrorKind::kNotFound, "state dict '{}' does not exist", path.string());
  if (!fs::is_regular_file(path, ec))
    fail(ErrorKind::kUsage, "state dict '{}' is not a regular file; give the file torch.save wrote",
         path.string());
  // Opened so that what replaced the file since (a FIFO) is refused, not waited on.
  std::optional<std::string> bytes = core::read_regular_file(path, "state dict");
  if (!bytes)
    fail(ErrorKind::kUsage, "state dict '{}' cannot be read: {}", path.string(),
         std::strerror(errno));
  return std::move(*bytes);
}

// The archive's root folder: what its data.pkl is in ("<root>/data.pkl").
std::string archive_root(const std::vector<ZipEntry>& entries) {
  for (const auto& e : entries) {
    const auto slash = e.name.find('/');
    if (slash != std::string::npos && e.name.substr(slash) == "/data.pkl")
      return e.name.substr(0, slash);
  }
  return "";
}

// The file's tensors by name; one line when it is not a dict of tensors.
std::map<std::string, torch::Tensor> load_tensors(const fs::path& path) {
  const std::string file = read_bytes(path);
  const std::string_view archive(file);
  const std::string name = path.string();
  const auto refuse = [&](const std::string& why) {
    fail(ErrorKind::kUsage,
         "'{}' cannot be read as a state dict ({}); save one with "
         "torch.save(model.state_dict(), path)",
         name, why);
  };
  if (const auto why = archive_problem(archive)) refuse(*why);
  const auto entries = zip_entries(archive);
  const std::string root = archive_root(entries);
  std::map<std::string, const ZipEntry*> by_name;
  for (const auto& e : entries) by_name[e.name] = &e;
  const auto content = [&](const std::string& entry) -> std::string {
    auto it = by_name.find(root + "/" + entry);
    const auto bytes = it == by_name.end() ? std::nullopt : zip_content(archive, *it->second);
    if (!bytes) throw std::runtime_error("it has no entry " + root + "/" + entry);
    return *bytes;
  };
  std::map<std::string, torch::Tensor> out;
  try {
    if (root.empty()) throw std::runtime_error("it holds no data.pkl");
    if (by_name.count(root + "/byteorder") && content("byteorder") != "little")
      throw std::runtime_error("its tensors are big-endian");
    for (auto& [key, t] :
         unpickle_state_dict(content("data.pkl"),
                             [&](const std::string&k, size_t) { return content("data/" + k); }))
      if (!out.emplace(key, t).second)
        throw std::runtime_error("it holds '" + core::escape_cut(key, 80) + "' twice");
  } catch (const std::exception& e) {  // the machine's one line, or (a defect) libtorch's first
    const std::string what = e.what();
    refuse(what.substr(0, what.find('\n')));
  }
  return out;
}

}  // namespace

void write_state_dict(const fs::path& path, Classifier& model) {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& [name, t] : named_tensors(model))
    tensors.emplace_back(name, t.detach().cpu().contiguous());
  const std::string pickle = pickle_state_dict(tensors);
  // The zip torch.save writes (caffe2's writer: records aligned to 64 bytes,
  // its version and serialization id added at the end), built in memory: the
  // writer throws on a short write and again from its noexcept destructor
  // (std::terminate), so only the checked writer below meets the disk.
  std::string bytes;
  {
    caffe2::serialize::PyTorchStreamWriter zip([&](const void* data, size_t n) {
      bytes.append(static_cast<const char*>(data), n);
      return n;
    });
    zip.writeRecord("data.pkl", pickle.data(), pickle.size());
    zip.writeRecord(".format_version", "1", 1);
    zip.writeRecord(".storage_alignment", "64", 2);
    zip.writeRecord("byteorder", "little", 6);
    for (size_t k = 0; k < tensors.size(); ++k) {
      const torch::Tensor& t = tensors[k].second;
      zip.writeRecord("data/" + std::to_string(k), t.data_ptr(), t.nbytes());
    }
    zip.writeEndOfFile();
  }
  const auto body = [&](std::ostream& o) {
    o.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  };
  if (path != "-") return core::write_file_atomically(path, body);
  body(std::cout);  // `-o -`; a stdout that fails is said at the end (core/output.h)
  std::cout.flush();
}

void read_state_dict(const fs::path& path, Classifier& model) {
  std::map<std::string, torch::Tensor> given = load_tensors(path);
  const std::string name = path.string();
  std::vector<std::pair<torch::Tensor, torch::Tensor>> staged;  // into, from
  for (const auto& [key, t] : named_tensors(model)) {
    auto it = given.find(key);
    if (it == given.end())
      fail(ErrorKind::kUsage,
           "state dict '{}' has no '{}' ({} in this model): it is another model's", name, key,
           tensor_text(t));
    if (it->second.scalar_type() != t.scalar_type() || it->second.sizes() != t.sizes())
      fail(ErrorKind::kUsage, "state dict '{}' holds '{}' as {}, this model as {}", name, key,
           tensor_text(it->second), tensor_text(t));
    staged.emplace_back(t, it->second);
    given.erase(it);
  }
  if (!given.empty())
    fail(ErrorKind::kUsage, "state dict '{}' holds '{}', which this model does not have", name,
         core::escape_cut(given.begin()->first, 80));
  torch::NoGradGuard no_grad;
  for (auto& [into, from] : staged) into.copy_(from);
}

std::string export_state_dict(store::Store& store, const store::RunInfo& run,
                              const std::string& checkpoint, const fs::path& out) {
  if (run.config_text.empty())
    fail(ErrorKind::kUsage, "run {} was not recorded by the trainer (it has no model to export)",
         core::short_uuid(run.uuid));
  store::verify_config(run);  // the model is built from it
  const auto ck = require_checkpoint(store, run, checkpoint);
  const config::Config cfg =
      config::parse_trained_config(run.config_text, "run " + core::short_uuid(run.uuid));
  at::Generator g = at::detail::createCPUGenerator(config::derive_seeds(cfg).dropout);
  auto model = models::make_model(cfg.model, models::shape_of(cfg.data), g);
  model->to(data::dtype_of(cfg));
  read_checkpoint(ck.path, *model, nullptr, nullptr);
  write_state_dict(out, *model);
  return ck.name;
}

}  // namespace trainscope::checkpoint
