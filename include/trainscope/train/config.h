// The training configuration lives in the config component
// (trainscope/config/config.h); these names keep code written against
// train::Config working.
#pragma once

#include "trainscope/config/config.h"

namespace trainscope::train {

using config::AllocatorConfig;
using config::CheckpointConfig;
using config::ComputeConfig;
using config::Config;
using config::DataConfig;
using config::DeterminismConfig;
using config::EvalConfig;
using config::ModelConfig;
using config::OptimizerConfig;
using config::RunConfig;
using config::ScheduleConfig;
using config::SeedConfig;
using config::SyntheticDataConfig;
using config::TrainLoopConfig;

using config::check_config;
using config::config_keys;
using config::flatten;
using config::load_config;
using config::parse_config;
using config::parse_recorded_config;
using config::renamed_config_keys;
using config::to_yaml;

}  // namespace trainscope::train
