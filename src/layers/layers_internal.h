// Between layers.cc and instrument.cc; private to the layers component.
#pragma once

#include <string>

namespace trainscope::layers::detail {

// Makes `name` the thread's current layer; returns the one it replaces.
const std::string* swap_layer(const std::string* name);
// Installs or removes this thread's operator callback for instrumented
// models: installed while the thread has a subscriber or a Watch and some
// model is instrumented.
void update_callback();

}  // namespace trainscope::layers::detail
