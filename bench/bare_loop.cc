// The physical baseline for `trainscope train configs/demo.yaml`: the same
// model, data, batch, optimizer and threads in a hand-written libtorch loop
// with nothing of trainscope. Reads Fashion-MNIST itself (IDX, gzip), keeps
// images as uint8 and converts each batch, shuffles every epoch, steps with
// Adam, reads the loss back every step (as a loop that logs it does) and
// evaluates on the test set after every epoch in batches of 1000.
//
//   build/bench/bare_loop [--epochs N] [--steps N] [--threads N] [--blas-threads N]
//                         [--device cpu|cuda|cuda:N] [--data FASHION_MNIST_DIR]
//
// On a GPU it does what a hand-written loop does: model and optimizer on
// the device, each batch made on the CPU and copied with .to(device).
//
// Prints one line "bench: step_ms=<median> epoch_s=<first epoch> accuracy=<last>".
#include <dlfcn.h>
#include <torch/torch.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace nn = torch::nn;

namespace {

std::string g_dir = "/usr/share/datasets/fashion-mnist/";

std::vector<uint8_t> gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + path);
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
  gzclose(f);
  return out;
}

// IDX images [N, 1, H, W] uint8, labels [N] int64.
std::pair<torch::Tensor, torch::Tensor> read_split(const std::string& prefix) {
  auto img = gunzip(g_dir + prefix + "-images-idx3-ubyte.gz");
  auto lab = gunzip(g_dir + prefix + "-labels-idx1-ubyte.gz");
  auto be32 = [](const uint8_t* p) { return (p[0] << 24) | (p[1] << 16) | (p[2] << 8) | p[3]; };
  const int64_t n = be32(&img[4]), h = be32(&img[8]), w = be32(&img[12]);
  auto x = torch::from_blob(img.data() + 16, {n, 1, h, w}, torch::kUInt8).clone();
  auto y = torch::from_blob(lab.data() + 8, {n}, torch::kUInt8).to(torch::kInt64);
  return {x, y};
}

struct Net : nn::Module {
  nn::Conv2d conv1{register_module("conv1", nn::Conv2d(nn::Conv2dOptions(1, 16, 3).padding(1)))};
  nn::Conv2d conv2{register_module("conv2", nn::Conv2d(nn::Conv2dOptions(16, 32, 3).padding(1)))};
  nn::Linear fc1{register_module("fc1", nn::Linear(32 * 7 * 7, 128))};
  nn::Linear fc2{register_module("fc2", nn::Linear(128, 10))};
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2(x)), 2);
    return fc2(torch::relu(fc1(x.flatten(1))));
  }
};

struct Options {
  int64_t epochs = 1, steps = 0, batch = 128;
  int threads = 0, blas_threads = -1;
  std::string device = "cpu";
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--device") o.device = argv[i + 1];
    if (a == "--data") g_dir = std::string(argv[i + 1]) + "/";
    const long v = std::atol(argv[i + 1]);
    if (a == "--epochs") o.epochs = v;
    if (a == "--steps") o.steps = v;
    if (a == "--threads") o.threads = static_cast<int>(v);
    if (a == "--blas-threads") o.blas_threads = static_cast<int>(v);
  }
  return o;
}

// A libtorch program linked the usual way (libtorch.so) maps torch's CUDA
// half at start; this one links the CPU half, as trainscope does, and maps
// the CUDA half beside it before the first CUDA call.
void load_cuda_half() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&at::show_config), &info) == 0 || !info.dli_fname) return;
  std::string dir = info.dli_fname;
  dir = dir.substr(0, dir.rfind('/') + 1);
  if (!dlopen((dir + "libtorch_cuda.so").c_str(), RTLD_NOW | RTLD_GLOBAL))
    throw std::runtime_error(std::string("cannot load libtorch_cuda.so: ") + dlerror());
}

void set_threads(const Options& o) {
  if (o.threads > 0) torch::set_num_threads(o.threads);
  using SetThreads = void (*)(int);
  if (o.blas_threads < 0) return;
  if (auto f = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    f(o.blas_threads);
}

double evaluate(Net& net, const torch::Tensor& x8, const torch::Tensor& y, double mean, double std,
                const torch::Device& device) {
  torch::NoGradGuard ng;
  net.eval();
  int64_t correct = 0;
  for (int64_t b = 0; b < x8.size(0); b += 1000) {
    const int64_t len = std::min<int64_t>(1000, x8.size(0) - b);
    auto x = (x8.narrow(0, b, len).to(torch::kFloat32).div_(255) - mean) / std;
    correct += net.forward(x.to(device))
                   .argmax(1)
                   .eq(y.narrow(0, b, len).to(device))
                   .sum()
                   .item<int64_t>();
  }
  net.train();
  return static_cast<double>(correct) / static_cast<double>(x8.size(0));
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (o.device != "cpu") load_cuda_half();  // before anything asks libtorch about CUDA
  set_threads(o);
  torch::manual_seed(42);
  auto [train_x, train_y] = read_split("train");
  auto [test_x, test_y] = read_split("t10k");
  // Mean and std of the training pixels, a chunk at a time (a float64 copy
  // of the whole set would be 376 MB).
  double sum = 0, sum2 = 0;
  for (int64_t b = 0; b < train_x.size(0); b += 10000) {
    auto chunk = train_x.narrow(0, b, std::min<int64_t>(10000, train_x.size(0) - b))
                     .to(torch::kFloat64)
                     .div_(255);
    sum += chunk.sum().item<double>();
    sum2 += chunk.square().sum().item<double>();
  }
  const double count = static_cast<double>(train_x.numel());
  const double mean = sum / count, std = std::sqrt((sum2 - sum * sum / count) / (count - 1));
  const torch::Device device(o.device);
  Net net;
  net.to(device);
  torch::optim::Adam opt(net.parameters(), torch::optim::AdamOptions(0.002));
  std::vector<double> step_ms;
  double first_epoch_s = 0, accuracy = 0;
  int64_t step = 0;
  using Clock = std::chrono::steady_clock;
  for (int64_t e = 0; e < o.epochs && (o.steps == 0 || step < o.steps); ++e) {
    const auto t_epoch = Clock::now();
    auto order = torch::randperm(train_x.size(0));
    for (int64_t b = 0; b < train_x.size(0) && (o.steps == 0 || step < o.steps); b += o.batch) {
      const auto t0 = Clock::now();
      auto idx = order.narrow(0, b, std::min(o.batch, train_x.size(0) - b));
      auto x =
          ((train_x.index_select(0, idx).to(torch::kFloat32).div_(255) - mean) / std).to(device);
      auto y = train_y.index_select(0, idx).to(device);
      opt.zero_grad();
      auto loss = torch::nn::functional::cross_entropy(net.forward(x), y);
      loss.backward();
      opt.step();
      (void)loss.item<double>();
      // The first steps warm caches and allocators up: the median is taken
      // over the rest, as bench/interleave.py does for the trainer.
      if (++step > 10)
        step_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    if (e == 0) first_epoch_s = std::chrono::duration<double>(Clock::now() - t_epoch).count();
    accuracy = evaluate(net, test_x, test_y, mean, std, device);
  }
  std::nth_element(step_ms.begin(), step_ms.begin() + step_ms.size() / 2, step_ms.end());
  std::printf("bench: step_ms=%.4f epoch_s=%.3f accuracy=%.4f steps=%lld\n",
              step_ms[step_ms.size() / 2], first_epoch_s, accuracy, static_cast<long long>(step));
  return 0;
}
