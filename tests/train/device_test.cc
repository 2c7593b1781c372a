// compute.device: what the CPU can check of the device path everywhere,
// and, where a CUDA GPU is usable (scripts/gpu-check.sh on a lent machine),
// training, fingerprints, checkpoints and determinism on it. The GPU tests
// skip, saying so, on a machine without one.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "support/test_util.h"
#include "trainscope/checkpoint/checkpoint.h"
#include "trainscope/config/seeds.h"
#include "trainscope/core/error.h"
#include "trainscope/env/torch.h"
#include "trainscope/fingerprint/fingerprint.h"
#include "trainscope/fingerprint/records.h"
#include "trainscope/optim/loss_scaler.h"
#include "trainscope/train/torch_env.h"
#include "trainscope/train/trainer.h"

namespace trainscope::train {
namespace {

using store::Store;
using store::StoreOptions;
using testing::TempDir;

std::shared_ptr<Store> temp_store(const TempDir& dir) {
  StoreOptions o;
  o.uri = "sqlite:" + (dir / "t.db").string();
  return Store::open(o);
}

config::Config small(const std::string& device, const std::vector<std::string>& more = {}) {
  std::vector<std::string> o = {"data.dataset=synthetic",    "data.synthetic.size=512",
                                "train.batch_size=32",       "train.epochs=2",
                                "compute.threads=1",         "checkpoint.every_steps=8",
                                "fingerprint.every_steps=1", "compute.device=" + device};
  o.insert(o.end(), more.begin(), more.end());
  return config::parse_config("", o);
}

// The hash of a tensor's bytes in plain C++, from a CPU copy.
uint64_t reference_hash(const torch::Tensor& t) {
  auto c = t.detach().to(torch::kCPU).contiguous();
  return fingerprint::device_hash_of_bytes(c.data_ptr(), c.numel() * c.element_size());
}

std::vector<torch::Tensor> assorted_tensors(const torch::Device& device) {
  torch::manual_seed(3);
  return {torch::randn({7, 3}),
          torch::randn({5}, torch::kFloat64),
          torch::randint(0, 200, {13}, torch::kUInt8),  // 13 bytes: a padded word
          torch::randn({3}).to(torch::kBFloat16),       // 6 bytes
          torch::tensor({true, false, true}),
          torch::empty({0}),
          torch::randn({4, 6}).t(),  // not contiguous
          torch::tensor(2.5f)};      // a scalar, as a loss is
}

std::vector<torch::Tensor> on(const std::vector<torch::Tensor>& ts, const torch::Device& device) {
  std::vector<torch::Tensor> out;
  for (const auto& t : ts) out.push_back(t.to(device));
  return out;
}

// Does `act` after step `step`.
struct AtStep : instrument::TrainObserver {
  AtStep(int64_t s, std::function<void(const instrument::RunContext&)> a)
      : step(s), act(std::move(a)) {}
  int64_t step;
  std::function<void(const instrument::RunContext&)> act;
  void on_after_step(const instrument::RunContext& ctx, const instrument::Step& st) override {
    if (st.number == step) act(ctx);
  }
};

// Stops the run after `step` steps, as a user's Ctrl-C would.
std::shared_ptr<AtStep> stop_at(int64_t step) {
  return std::make_shared<AtStep>(step,
                                  [](const instrument::RunContext& ctx) { ctx.request_stop(); });
}

// Where a GPU is, torch's CUDA half is mapped before the first test: the
// CPU tests' at::manual_seed asks libtorch about CUDA, which fixes its CUDA
// hooks for the rest of the process (as the CLI does before any command).
class CudaHalf : public ::testing::Environment {
 public:
  void SetUp() override { (void)env::load_torch_cuda_where_a_driver_is(); }
};
[[maybe_unused]] const auto* const kCudaHalf = ::testing::AddGlobalTestEnvironment(new CudaHalf);

// A run of small(device) stopped by its user after 12 of its 32 steps.
instrument::TrainResult stopped_at_12(const std::string& device,
                                      const std::shared_ptr<Store>& store) {
  Trainer t(small(device), store);
  t.add_observer(stop_at(12));
  auto r = t.run();
  EXPECT_EQ(r.status, store::RunStatus::kStopped);
  return r;
}

bool gpu_usable() {
  return env::nvidia_driver_present() && env::torch_cuda_loaded() && torch::cuda::is_available();
}

#define SKIP_WITHOUT_GPU() \
  if (!gpu_usable()) GTEST_SKIP() << "no CUDA GPU here (scripts/gpu-check.sh runs this on one)"

TEST(DeviceHashTest, TorchOpsOnTheCpuGiveThePlainReferenceForEveryDtypeAndShape) {
  const auto ts = assorted_tensors(torch::kCPU);
  fingerprint::DeviceHasher hash;
  const auto got = hash(ts);
  ASSERT_EQ(got.size(), ts.size());
  for (size_t i = 0; i < ts.size(); ++i) EXPECT_EQ(got[i], reference_hash(ts[i])) << i;
  // Another call with other values in the same layout: still the reference.
  auto changed = ts;
  changed[0] = changed[0] + 1;
  EXPECT_EQ(hash(changed)[0], reference_hash(changed[0]));
  EXPECT_NE(hash(changed)[0], got[0]);
  // A different layout is followed, not assumed.
  const auto fewer = std::vector<torch::Tensor>(ts.begin() + 1, ts.end());
  EXPECT_EQ(hash(fewer)[0], reference_hash(ts[1]));
}

TEST(DeviceHashTest, OneFlippedBitAndTheOrderOfWordsChangeTheHash) {
  auto t = torch::zeros({64}, torch::kInt32);
  const uint64_t zero = reference_hash(t);
  t[17] = 1;
  EXPECT_NE(reference_hash(t), zero);
  auto u = torch::zeros({64}, torch::kInt32);
  u[18] = 1;
  EXPECT_NE(reference_hash(t), reference_hash(u));  // the position is hashed
  EXPECT_NE(reference_hash(torch::zeros({64}, torch::kInt32)),
            reference_hash(torch::zeros({65}, torch::kInt32)));  // and the length
}

TEST(DeviceTest, BadDeviceNamesAreRefusedByTheConfigNamingTheKey) {
  for (const char* bad :
       {"gpu", "cuda:", "cuda:01", "cuda:-1", "cuda:1024", "CUDA", "cuda:0 ", "mps"}) {
    try {
      (void)small(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const core::Error& e) {
      EXPECT_EQ(e.kind(), core::ErrorKind::kUsage);
      EXPECT_NE(std::string(e.what()).find("compute.device must be cpu, cuda or cuda:N"),
                std::string::npos)
          << e.what();
    }
  }
  for (const char* good : {"cpu", "cuda", "cuda:0", "cuda:7", "cuda:1023"})
    EXPECT_EQ(small(good).compute.device, good);
}

TEST(DeviceTest, AGpuThatIsNotThereFailsBeforeAnythingIsRecorded) {
  if (gpu_usable()) GTEST_SKIP() << "a GPU is usable here";
  TempDir dir;
  auto store = temp_store(dir);
  Trainer t(small("cuda"), store);
  try {
    t.run();
    FAIL() << "trained on a GPU that is not there";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.kind(), core::ErrorKind::kUsage);
    const std::string what = e.what();
    EXPECT_NE(what.find("compute.device is cuda but "), std::string::npos) << what;
    EXPECT_NE(what.find("compute.device: cpu"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  EXPECT_TRUE(store->list_runs({}).empty());
}

// A run resumed on another kind of device goes on with the hash it began
// with (a GPU run resumed on a CPU: the device hash of CPU tensors).
TEST(DeviceTest, AResumedRunKeepsTheHashItBeganWith) {
  TempDir dir;
  auto store = temp_store(dir);
  const auto a = stopped_at_12("cpu", store);
  store->set_tag(a.run_uuid, "fingerprint.hash", fingerprint::kDeviceHash);  // as a GPU run's
  TrainOptions o;
  o.resume = a.run_uuid;
  Trainer again(small("cpu"), store, o);
  again.run();
  std::vector<torch::Tensor> ts;
  for (const auto& [name, t] : fingerprint::tensors(*again.model())) ts.push_back(t);
  const auto expected = fingerprint::DeviceHasher()(ts);
  const auto last = fingerprint::read(*store, a.run_uuid).steps.back();
  ASSERT_EQ(last.step, 32);
  ASSERT_EQ(last.hashes.size(), expected.size() + 1);  // and the loss
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(last.hashes[i], expected[i]) << i;
}

TEST(DeviceTest, ACpuRunRecordsHowItsTorchStandsWithCuda) {
  TempDir dir;
  auto store = temp_store(dir);
  Trainer t(small("cpu", {"train.epochs=1"}), store);
  const auto r = t.run();
  const auto env = store->environment(r.run_uuid);
  ASSERT_TRUE(env.count("libraries.cuda.built_with"));
  EXPECT_FALSE(env.at("libraries.cuda.built_with").empty());
  EXPECT_EQ(env.at("flags.tf32_cublas"), "false");  // PyTorch's default, compute.tf32: cudnn
  EXPECT_EQ(env.at("flags.tf32_cudnn"), "true");
  EXPECT_FALSE(store->tags(r.run_uuid).count("fingerprint.hash"));  // xxh3-64, as always
}

TEST(DeviceTest, AllocationFailuresOfTheCpuAndOfCudaAreSaidInAFewWords) {
  EXPECT_EQ(allocation_failure("DefaultCPUAllocator: can't allocate memory: you tried to allocate "
                               "210453397504 bytes. Error code 12 (Cannot allocate memory)"),
            "210 GB at once, more than this process may use");
  // CUDA's caching allocator's message, as PyTorch 2.x words it.
  EXPECT_EQ(allocation_failure(
                "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
                "79.19 GiB of which 1.50 GiB is free. Including non-PyTorch memory, this process "
                "has 77.68 GiB memory in use. Of the allocated memory 76.10 GiB is allocated by "
                "PyTorch, and 1.07 GiB is reserved by PyTorch but unallocated."),
            "2.00 GiB at once on GPU 0, which had 1.50 GiB free of 79.19 GiB");
  EXPECT_EQ(allocation_failure("CUDA out of memory (worded otherwise)"),
            "more memory than the GPU has free");
  EXPECT_EQ(allocation_failure("mat1 and mat2 shapes cannot be multiplied"), "");
}

TEST(MixedPrecisionTest, TheLossScaleSkipsOverflowsHalvesAndGrowsAfterGoodSteps) {
  optim::LossScaler scaler(torch::kCPU, /*init=*/1024, /*growth=*/2, /*backoff=*/0.5,
                           /*interval=*/2);
  auto w = torch::ones({3}).requires_grad_();
  scaler.scale(w.sum()).backward();  // d/dw of 1024 * sum(w) = 1024
  EXPECT_TRUE(scaler.unscale({w}));
  EXPECT_TRUE(torch::equal(w.grad(), torch::ones({3})));  // unscaled
  scaler.update();
  EXPECT_EQ(scaler.value(), 1024);
  EXPECT_EQ(scaler.good_steps(), 1);
  w.mutable_grad() = torch::tensor({1.0f, INFINITY, 0.0f});
  EXPECT_FALSE(scaler.unscale({w}));  // skip this update
  scaler.update();
  EXPECT_EQ(scaler.value(), 512);
  EXPECT_EQ(scaler.good_steps(), 0);
  for (int i = 0; i < 2; ++i) {
    w.mutable_grad() = torch::ones({3});
    EXPECT_TRUE(scaler.unscale({w}));
    scaler.update();
  }
  EXPECT_EQ(scaler.value(), 1024);  // two good steps in a row: grown
  scaler.restore(8, 1);
  EXPECT_EQ(scaler.value(), 8);
  EXPECT_EQ(scaler.good_steps(), 1);
}

TEST(MixedPrecisionTest, Bf16TrainsWithFloat32WeightsAndDiffersFromFloat32) {
  TempDir dir;
  auto store = temp_store(dir);
  Trainer full(small("cpu", {"model.name=demo_cnn"}), store);
  const auto a = full.run();
  Trainer mixed(small("cpu", {"model.name=demo_cnn", "compute.autocast=bf16"}), store);
  const auto b = mixed.run();
  EXPECT_EQ(b.status, store::RunStatus::kFinished);
  for (const auto& p : mixed.model()->parameters()) EXPECT_EQ(p.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(std::isfinite(store->metric(b.run_uuid, "train/loss").back().value));
  const auto fa = fingerprint::read(*store, a.run_uuid), fb = fingerprint::read(*store, b.run_uuid);
  ASSERT_FALSE(fa.steps.empty());
  EXPECT_NE(fa.steps.front().hashes, fb.steps.front().hashes);  // lowered from the first step
  EXPECT_TRUE(store->metric(b.run_uuid, "train/loss_scale").empty());  // no scale for bf16
}

TEST(MixedPrecisionTest, Fp16RecordsItsLossScaleAndACheckpointKeepsIt) {
  TempDir dir;
  auto store = temp_store(dir);
  Trainer t(small("cpu", {"model.name=demo_cnn", "compute.autocast=fp16"}), store);
  const auto r = t.run();
  const auto scales = store->metric(r.run_uuid, "train/loss_scale");
  ASSERT_EQ(scales.size(), 32u);
  EXPECT_EQ(scales.front().value, 65536);  // torch.amp.GradScaler's first scale
  auto ck = checkpoint::find_checkpoint(*store, r.run_uuid);
  ASSERT_TRUE(ck);
  const auto pos = checkpoint::read_checkpoint(ck->path, *t.model(), nullptr, nullptr);
  ASSERT_EQ(pos.step, 32);
  // The scale after step 32's update: halved if that step overflowed; the
  // good steps counted since the last overflow.
  const auto skipped = store->metric(r.run_uuid, "train/skipped_step");
  const int64_t last_skip = skipped.empty() ? 0 : skipped.back().step;
  EXPECT_EQ(pos.loss_scale, scales.back().value * (last_skip == 32 ? 0.5 : 1.0));
  EXPECT_EQ(pos.scale_growth, 32 - last_skip);
}

TEST(MixedPrecisionTest, AutocastNeedsFloat32) {
  try {
    (void)small("cpu", {"compute.autocast=bf16", "compute.dtype=float64"});
    FAIL() << "accepted";
  } catch (const core::Error& e) {
    EXPECT_NE(std::string(e.what()).find("compute.autocast needs compute.dtype: float32"),
              std::string::npos)
        << e.what();
  }
}

// ---- on a GPU ---------------------------------------------------------------

TEST(GpuTest, TheDeviceHashIsTheCpusForTheSameBytes) {
  SKIP_WITHOUT_GPU();
  const auto ts = assorted_tensors(torch::kCPU);
  fingerprint::DeviceHasher on_gpu, on_cpu;
  EXPECT_EQ(on_gpu(on(ts, torch::kCUDA)), on_cpu(ts));
}

TEST(GpuTest, TrainsOnTheGpuAndItsCheckpointLoadsOnTheCpuBitForBit) {
  SKIP_WITHOUT_GPU();
  TempDir dir;
  auto store = temp_store(dir);
  Trainer t(small("cuda"), store);
  const auto r = t.run();
  EXPECT_GT(r.test.accuracy, 0.0);
  EXPECT_EQ(store->tags(r.run_uuid).at("fingerprint.hash"), fingerprint::kDeviceHash);
  for (const auto& p : t.model()->parameters()) EXPECT_TRUE(p.is_cuda());
  auto ck = checkpoint::find_checkpoint(*store, r.run_uuid);
  ASSERT_TRUE(ck);
  const auto cfg = small("cpu");
  auto data = data::load_data(cfg.data, config::derive_seeds(cfg).data_order);
  auto gen = make_generator(torch::kCPU, 1);
  auto model = models::make_model(cfg.model, models::shape_of(data), gen);
  checkpoint::read_checkpoint(ck->path, *model, nullptr, nullptr);
  const auto gpu_params = t.model()->parameters();
  const auto cpu_params = model->parameters();
  ASSERT_EQ(gpu_params.size(), cpu_params.size());
  for (size_t i = 0; i < cpu_params.size(); ++i)
    EXPECT_TRUE(torch::equal(cpu_params[i], gpu_params[i].to(torch::kCPU))) << i;
}

TEST(GpuTest, AGpuRunStoppedMidwayGoesOnOnTheCpuFromItsCheckpoint) {
  SKIP_WITHOUT_GPU();
  TempDir dir;
  auto store = temp_store(dir);
  const auto a = stopped_at_12("cuda", store);
  TrainOptions o;
  o.resume = a.run_uuid;
  Trainer cpu(small("cpu"), store, o);
  const auto b = cpu.run();
  EXPECT_EQ(b.status, store::RunStatus::kFinished);
  EXPECT_EQ(b.steps, 32);  // 2 epochs of 16 batches in all
  EXPECT_EQ(store->tags(a.run_uuid).at("compute.device.resumed_on"), "cpu");
  for (const auto& p : cpu.model()->parameters()) EXPECT_TRUE(p.is_cpu());
}

TEST(GpuTest, OutOfMemoryMidRunEndsTheRunFailedWithItsCheckpointIntact) {
  SKIP_WITHOUT_GPU();
  TempDir dir;
  auto store = temp_store(dir);
  Trainer t(small("cuda"), store);
  // Asks the GPU for far more than it has, as a batch too big for what is
  // left would.
  t.add_observer(std::make_shared<AtStep>(12, [](const instrument::RunContext&) {
    (void)torch::empty({int64_t{1} << 42}, torch::kCUDA);  // 16 TiB
  }));
  std::string what;
  try {
    t.run();
  } catch (const c10::Error& e) {
    what = e.what_without_backtrace();
  }
  EXPECT_NE(allocation_failure(what).find("at once on GPU"), std::string::npos) << what;
  const auto runs = store->list_runs({});
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, store::RunStatus::kFailed);
  auto ck = checkpoint::find_checkpoint(*store, runs[0].uuid);
  ASSERT_TRUE(ck);
  EXPECT_EQ(ck->name, checkpoint::checkpoint_name(8));
  auto model = t.model();
  EXPECT_EQ(checkpoint::read_checkpoint(ck->path, *model, nullptr, nullptr).step, 8);
}

TEST(GpuTest, DeterministicRunsAreBitIdenticalStepByStep) {
  SKIP_WITHOUT_GPU();
  TempDir dir;
  auto store = temp_store(dir);
  const auto cfg = small("cuda", {"determinism.deterministic_algorithms=true",
                                  "determinism.cudnn_deterministic=true", "model.name=demo_cnn"});
  const auto a = Trainer(cfg, store).run();
  const auto b = Trainer(cfg, store).run();
  const auto fa = fingerprint::read(*store, a.run_uuid), fb = fingerprint::read(*store, b.run_uuid);
  ASSERT_FALSE(fa.steps.empty());
  ASSERT_EQ(fa.steps.size(), fb.steps.size());
  for (size_t i = 0; i < fa.steps.size(); ++i)
    ASSERT_EQ(fa.steps[i].hashes, fb.steps[i].hashes) << "step " << fa.steps[i].step;
  EXPECT_STREQ(std::getenv("CUBLAS_WORKSPACE_CONFIG"), ":4096:8");
}

TEST(GpuTest, ACudaIndexPastTheGpusIsRefusedNamingThoseThere) {
  SKIP_WITHOUT_GPU();
  TempDir dir;
  auto store = temp_store(dir);
  try {
    Trainer(small("cuda:1023"), store).run();
    FAIL() << "trained on cuda:1023";
  } catch (const core::Error& e) {
    EXPECT_NE(std::string(e.what()).find("compute.device is cuda:1023 but this machine has"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(store->list_runs({}).empty());
}

}  // namespace
}  // namespace trainscope::train
