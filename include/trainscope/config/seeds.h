// Named random streams. One master seed; each source of randomness in
// training draws from its own stream, so varying one source leaves the others
// untouched:
//
//   init        weight initialisation
//   data_order  train/validation split, subsets, and the shuffle of each epoch
//   augment     random crops and flips
//   dropout     dropout masks
//
// A stream's seed is `seeds.<name>` when set (>= 0), else
// splitmix64(master_seed XOR fnv1a64(name)). Per-epoch and per-batch
// randomness (shuffle, augmentation) is derived statelessly from the stream
// seed and the (epoch, batch) position, so a resumed run needs only its
// position; dropout draws from a stateful generator saved in checkpoints.
#pragma once

#include <cstdint>
#include <string_view>

#include "trainscope/config/config.h"

namespace trainscope::config {

// SplitMix64's output function of `x`: pure, the same on every machine
// (a recorded seed stays reproducible).
uint64_t splitmix64(uint64_t x);
// The 64-bit FNV-1a hash of `s`'s bytes: pure, the same on every machine.
uint64_t fnv1a64(std::string_view s);
// Mixes several values into one seed (order matters).
uint64_t mix_seed(uint64_t a, uint64_t b, uint64_t c = 0);

// The seed of each named stream (see the file comment).
struct StreamSeeds {
  uint64_t init = 0;
  uint64_t data_order = 0;
  uint64_t augment = 0;
  uint64_t dropout = 0;
};

// Each stream's seed for `c`: seeds.<name> when >= 0, else derived from
// seeds.master. Pure.
StreamSeeds derive_seeds(const config::Config& c);

}  // namespace trainscope::config
