// One way to register something while the library or program that holds it
// loads (a unit, a config section, a view): a static initializer that runs
// the registration and, inside a library that instrument::load_units loads,
// keeps a failure for the loader to report (core::LoadErrors) instead of
// throwing through dlopen. In a program's own start-up a failure throws as
// usual (a name taken twice is a bug that must not go unnoticed).
//
//   TRAINSCOPE_AT_LOAD(trainscope_view_drift, store::register_view(view()));
#pragma once

#include <exception>

#include "trainscope/core/error.h"

// Defines `NAME`, a static bool set once `...` (a statement) has run.
#define TRAINSCOPE_AT_LOAD(NAME, ...)                            \
  static const bool NAME [[maybe_unused]] = [] {                 \
    try {                                                        \
      __VA_ARGS__;                                               \
    } catch (const std::exception& e) {                          \
      if (!::trainscope::core::keep_load_error(e.what())) throw; \
    }                                                            \
    return true;                                                 \
  }()
