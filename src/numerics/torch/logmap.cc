#include <torch/torch.h>

#include <cstdlib>

#include "trainscope/env/torch.h"
#include "trainscope/numerics/logmap_torch.h"

namespace trainscope::numerics {

std::vector<Variant> torch_variants() {
  std::vector<Variant> out;
  std::vector<std::string> devices = {"cpu"};
  // torch's CUDA half is loaded only where an NVIDIA driver is (its device
  // node), not on every CPU machine that has a CUDA build of torch.
  if (env::load_torch_cuda_where_a_driver_is() && torch::cuda::is_available())
    devices.push_back("cuda");
  for (const auto& dev : devices)
    for (auto [id, name, format] : {std::tuple{"f32", "float32", Format::kFloat32},
                                    std::tuple{"f64", "float64", Format::kFloat64}}) {
      Variant v;
      v.id = std::string("torch.") + dev + "." + id;
      v.name = std::string("libtorch ") + dev + " " + name + " (r*x)*(1-x)";
      v.format = format;
      v.torch = true;
      v.device = dev;
      out.push_back(v);
    }
  return out;
}

std::vector<double> iterate_torch(const Variant& v, const std::string& x0s, const std::string& rs,
                                  int64_t steps) {
  torch::NoGradGuard ng;
  auto dtype = v.format == Format::kFloat32 ? torch::kFloat32 : torch::kFloat64;
  auto opts =
      torch::TensorOptions().dtype(dtype).device(v.device == "cuda" ? torch::kCUDA : torch::kCPU);
  // Values rounded from decimal by the C library, as the other variants.
  double x0 = std::strtod(x0s.c_str(), nullptr), r = std::strtod(rs.c_str(), nullptr);
  auto x = v.format == Format::kFloat32 ? torch::full({1}, std::strtof(x0s.c_str(), nullptr), opts)
                                        : torch::full({1}, x0, opts);
  auto rt = v.format == Format::kFloat32 ? torch::full({1}, std::strtof(rs.c_str(), nullptr), opts)
                                         : torch::full({1}, r, opts);
  std::vector<double> out;
  out.reserve(static_cast<size_t>(steps) + 1);
  auto x_cpu = x.to(torch::kCPU, torch::kFloat64);
  out.push_back(x_cpu.item<double>());
  // One tensor op per arithmetic operation, as written: (r*x)*(1-x).
  std::vector<torch::Tensor> history;
  history.reserve(static_cast<size_t>(steps));
  for (int64_t n = 0; n < steps; ++n) {
    x = (rt * x) * (1 - x);
    history.push_back(x);
  }
  for (const auto& h : history) out.push_back(h.to(torch::kCPU, torch::kFloat64).item<double>());
  return out;
}

}  // namespace trainscope::numerics
