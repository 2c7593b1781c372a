#include "trainscope/config/seeds.h"

namespace trainscope::config {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

uint64_t mix_seed(uint64_t a, uint64_t b, uint64_t c) {
  return splitmix64(splitmix64(splitmix64(a) ^ b) ^ c);
}

StreamSeeds derive_seeds(const config::Config& c) {
  auto pick = [&](int64_t explicit_seed, std::string_view name) {
    if (explicit_seed >= 0) return static_cast<uint64_t>(explicit_seed);
    return splitmix64(static_cast<uint64_t>(c.seeds.master) ^ fnv1a64(name));
  };
  return {pick(c.seeds.init, "init"), pick(c.seeds.data_order, "data_order"),
          pick(c.seeds.augment, "augment"), pick(c.seeds.dropout, "dropout")};
}

}  // namespace trainscope::config
