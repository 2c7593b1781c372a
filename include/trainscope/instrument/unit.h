// A capability is a unit: it brings, in its own folder, its config section
// (config/section.h), the observers it attaches to a run (here) and the
// records it writes (its own kinds of store records). Units register
// themselves with one line in their own file, and every event source (the
// Trainer, a user's loop, the Python package, a data-parallel rank) gets
// every registered unit through its Instrumentation (instrumentation.h):
//
//   TRAINSCOPE_UNIT(fingerprint, instrument::Unit{
//       .name = "fingerprint",
//       .observers = [](const config::Config& c) -> instrument::Observers {
//         if (c.section<FingerprintConfig>().every_steps == 0) return {};
//         return {std::make_shared<FingerprintObserver>()};
//       }});
//
// Thread-safety: units register while their library or program loads;
// reading the list is safe from any thread afterwards.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/core/at_load.h"
#include "trainscope/core/error.h"
#include "trainscope/instrument/events.h"

namespace trainscope::instrument {

// Observers in calling order, held shared (a unit's may keep state across
// a run's events).
using Observers = std::vector<std::shared_ptr<TrainObserver>>;

// A capability's registration: its name, its place among the units, what
// it attaches to a run and what it refuses. Copied into the registry by
// register_unit; units() returns copies.
struct Unit {
  std::string name;  // the capability: "probes"
  // Where its observers come among the units': after those of the units
  // named in `after`, before those named in `before` ("*": every unit not
  // itself naming "*"). A name no registered unit has is ignored (a unit
  // may be left out of a build). Units that declare nothing between them
  // come in the order of their names, so the order never depends on which
  // library loaded first. A run's own observers come after every unit's.
  std::vector<std::string> after;
  std::vector<std::string> before;
  // The observers it attaches to a run of this config: none when the
  // config turns it off.
  std::function<Observers(const Config&)> observers;
  // Optional: refuses (Error kUsage, one line) a config it cannot serve on
  // this source, before the run is created (probes that select no layer).
  std::function<void(const Config&, Source&)> check;
  // Whether it attaches to a source that records its own metrics
  // (Source::records_own_metrics: a Python script's): false for a unit
  // that records the loop's loss and evaluation, which the script already
  // logs. Every other unit, this program's or one loaded from a library,
  // attaches to every source.
  bool with_own_metrics = true;
};

// Runs every unit's check on a run of `config` from `source`.
void check_units(const Config& config, Source& source);

// Refuses (Error kUsage, one line naming `what` and the key) a setting
// ("key=value", or a section's shorthand "probes=full") that no unit
// attached to a source whose metrics are its own reads: a key of the loop
// (optimizer.lr) or of a section no such unit has (dist.*). Python's
// watch(settings=...) sets units only; the script's own settings go to
// trainscope.config().
void check_unit_settings(const std::vector<std::string>& sets, std::string_view what);

// Adds a unit. Throws Error(kUsage), and adds nothing, when its name is
// taken or its `after`/`before` close a cycle with the registered units'
// (the message names the units of the cycle).
void register_unit(Unit unit);
// Every registered unit, in the order their declarations give.
std::vector<Unit> units();

// Loads the units built outside trainscope: each shared library named in
// `paths` (separated by ':'; `source` names where the list came from, for
// messages), whose TRAINSCOPE_UNIT and TRAINSCOPE_CONFIG_SECTION lines
// register while it loads. A library already loaded is skipped. Throws
// Error(kUsage), one line naming the source and the library, when a path
// is not a regular file, dlopen refuses it (an undefined symbol: built
// against another trainscope or torch), a registration fails (a name
// taken) or it registers nothing. Returns the names of the units it added.
// Never unloads (libtorch does not support it). Thread-safe.
std::vector<std::string> load_units(const std::string& paths, const std::string& source);
// load_units on $TRAINSCOPE_UNITS, if set: what the CLI (before it reads a
// config) and the Python package call. Loads each library once per process.
std::vector<std::string> load_units_from_environment();

// Registers a unit while the library or program that defines it loads (in
// a library that load_units loads, a failure is kept for it to report:
// nothing may throw through dlopen).
#define TRAINSCOPE_UNIT(ID, ...) \
  TRAINSCOPE_AT_LOAD(trainscope_unit_##ID, ::trainscope::instrument::register_unit(__VA_ARGS__))

}  // namespace trainscope::instrument
