// The trainer's own inputs for a config, handed to a Python loop: the
// initial weights its init stream draws, the batches of each epoch in the
// order (and with the augmentation) of its data_order and augment streams,
// and the test set as its evaluation sees it. With them a model written in
// PyTorch-Python starts where `trainscope train CONFIG` starts and sees the
// same data, so that `trainscope diff` compares only the frameworks. Nothing
// is computed here that the trainer does not compute itself: the same
// load_data, make_model, init_weights and EpochLoader.
#include "inputs.h"

#include <ATen/CPUGeneratorImpl.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/config/config.h"
#include "trainscope/config/seeds.h"
#include "trainscope/core/error.h"
#include "trainscope/data/data.h"
#include "trainscope/env/manifest.h"
#include "trainscope/models/models.h"

namespace trainscope::python {
namespace {

namespace py = pybind11;
using core::ErrorKind;
using core::fail;

// One epoch's batches as a Python iterator of (inputs, targets).
class PyEpoch {
 public:
  PyEpoch(std::shared_ptr<const data::DataSplits> data, const data::LoaderOptions& o, int64_t epoch,
          const config::StreamSeeds& seeds)
      : data_(std::move(data)),
        loader_(std::make_unique<data::EpochLoader>(data_->train, o, epoch, seeds.data_order,
                                                    seeds.augment)) {}
  int64_t size() const { return loader_->num_batches(); }
  std::pair<at::Tensor, at::Tensor> next() {
    std::optional<data::Batch> b;
    {
      py::gil_scoped_release unlocked;
      b = loader_->next();
    }
    if (!b) throw py::stop_iteration();
    return {b->x, b->y};
  }

 private:
  std::shared_ptr<const data::DataSplits> data_;  // the loader reads it
  std::unique_ptr<data::EpochLoader> loader_;
};

class TrainerInputs {
 public:
  TrainerInputs(const std::string& path, const std::vector<std::string>& sets)
      : cfg_(config::load_config(path, sets)) {
    config::check_config(cfg_);
    seeds_ = config::derive_seeds(cfg_);
    data_ = std::make_shared<data::DataSplits>(data::load_data(cfg_.data, seeds_.data_order));
    if (cfg_.train.batch_size > data_->train.size())
      fail(ErrorKind::kUsage, "train.batch_size must be at most the {} training samples (got {})",
           data_->train.size(), cfg_.train.batch_size);
    loader_ = data::loader_options(cfg_, *data_, 1);
    loader_.prefetch = 0;  // the batch is made when Python asks for it
  }

  // The model's parameters and buffers after the trainer's initialisation,
  // by name ("features.conv1.weight"), as copies.
  std::vector<std::pair<std::string, at::Tensor>> initial_state() const {
    if (cfg_.model.flip_bit > 0)
      fail(ErrorKind::kUsage, "model.flip_bit needs the trainer: it is not applied here");
    at::Generator dropout = at::detail::createCPUGenerator(seeds_.dropout);
    at::Generator init = at::detail::createCPUGenerator(seeds_.init);
    auto model = models::make_model(cfg_.model, models::shape_of(*data_), dropout);
    models::init_weights(*model, cfg_.model.init, init);
    model->to(data::dtype_of(cfg_));
    std::vector<std::pair<std::string, at::Tensor>> out;
    for (const auto& p : model->named_parameters()) out.emplace_back(p.key(), p.value().clone());
    for (const auto& b : model->named_buffers()) out.emplace_back(b.key(), b.value().clone());
    return out;
  }

  PyEpoch epoch(int64_t e) const {
    if (e < 0) fail(ErrorKind::kUsage, "epoch must be 0 or more (got {})", e);
    return PyEpoch(data_, loader_, e, seeds_);
  }

  // The test set as the trainer's evaluation feeds it (normalised).
  std::pair<at::Tensor, at::Tensor> test() const {
    return {data::to_input(data_->test.images, data_->mean, data_->std, loader_.dtype,
                           loader_.channels_last),
            data_->test.labels};
  }

  std::map<std::string, std::string> params() const { return config::flatten(cfg_); }
  // What a training of this config records of its data: the files read
  // (tags data.file.NAME) and their SHA-256 (environment data.sha256.PATH).
  std::map<std::string, std::string> data_tags() const {
    std::map<std::string, std::string> out;
    for (const auto& f : data_->files) out["data.file." + f.filename().string()] = f.string();
    return out;
  }
  std::map<std::string, std::string> data_environment() const {
    return env::hash_files(data_->files);
  }
  std::string config_text() const { return config::to_yaml(cfg_); }
  int64_t batches_per_epoch() const {
    return (data_->train.size() + cfg_.train.batch_size - 1) / cfg_.train.batch_size;
  }
  int64_t train_size() const { return data_->train.size(); }

 private:
  config::Config cfg_;
  config::StreamSeeds seeds_;
  std::shared_ptr<data::DataSplits> data_;
  data::LoaderOptions loader_;
};

}  // namespace

void bind_inputs(py::module_& m) {
  py::class_<PyEpoch>(m, "Epoch")
      .def("__len__", &PyEpoch::size)
      .def(
          "__iter__", [](PyEpoch& e) -> PyEpoch& { return e; }, py::return_value_policy::reference)
      .def("__next__", &PyEpoch::next);
  py::class_<TrainerInputs>(m, "TrainerInputs")
      .def(py::init<const std::string&, const std::vector<std::string>&>(), py::arg("config"),
           py::arg("sets") = std::vector<std::string>{})
      .def("initial_state", &TrainerInputs::initial_state)
      .def("epoch", &TrainerInputs::epoch, py::arg("epoch"))
      .def("test", &TrainerInputs::test)
      .def_property_readonly("params", &TrainerInputs::params)
      .def_property_readonly("config_text", &TrainerInputs::config_text)
      .def_property_readonly("data_tags", &TrainerInputs::data_tags)
      .def_property_readonly("data_environment", &TrainerInputs::data_environment)
      .def_property_readonly("batches_per_epoch", &TrainerInputs::batches_per_epoch)
      .def_property_readonly("train_size", &TrainerInputs::train_size);
}

}  // namespace trainscope::python
