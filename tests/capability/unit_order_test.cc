// Units come in the order they declare (instrument/unit.h): `after` and
// `before`, "*" for every unit, ties in name order whatever the order of
// registration, names of units not registered ignored, a cycle refused
// with nothing added. The registry is the process's, so these units have
// names of their own and attach nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "trainscope/core/error.h"
#include "trainscope/instrument/unit.h"

namespace {

namespace ts = trainscope;
using ts::instrument::Unit;

Unit unit(std::string name, std::vector<std::string> after = {},
          std::vector<std::string> before = {}) {
  return Unit{.name = std::move(name),
              .after = std::move(after),
              .before = std::move(before),
              .observers = [](const ts::config::Config&) { return ts::instrument::Observers{}; }};
}

// Where `name` is among the registered units; -1 when it is not.
long place(const std::string& name) {
  const auto us = ts::instrument::units();
  for (size_t i = 0; i < us.size(); ++i)
    if (us[i].name == name) return static_cast<long>(i);
  return -1;
}

TEST(UnitOrder, AfterAndBeforeOrderTheUnitsWhateverTheOrderOfRegistration) {
  // Registered last-first: c after b, b after a, d before a.
  ts::instrument::register_unit(unit("order_c", {"order_b"}));
  ts::instrument::register_unit(unit("order_b", {"order_a"}));
  ts::instrument::register_unit(unit("order_a"));
  ts::instrument::register_unit(unit("order_d", {}, {"order_a"}));
  EXPECT_LT(place("order_d"), place("order_a"));
  EXPECT_LT(place("order_a"), place("order_b"));
  EXPECT_LT(place("order_b"), place("order_c"));
}

TEST(UnitOrder, UnitsThatDeclareNothingComeInNameOrder) {
  ts::instrument::register_unit(unit("tie_z"));
  ts::instrument::register_unit(unit("tie_m"));
  ts::instrument::register_unit(unit("tie_a"));
  EXPECT_LT(place("tie_a"), place("tie_m"));
  EXPECT_LT(place("tie_m"), place("tie_z"));
}

TEST(UnitOrder, ProfileComesFirstAndANameNoUnitHasIsIgnored) {
  ts::instrument::register_unit(unit("ignores_missing", {"no_such_unit"}, {"nor_this_one"}));
  ASSERT_GE(place("ignores_missing"), 0);
  ASSERT_GE(place("profile"), 0);
  EXPECT_EQ(place("profile"), 0);
  EXPECT_LT(place("profile"), place("metrics"));
  EXPECT_LT(place("profile"), place("probes"));
}

TEST(UnitOrder, ACycleIsRefusedNamingItsUnitsAndNothingIsAdded) {
  ts::instrument::register_unit(unit("cycle_a", {"cycle_c"}));
  ts::instrument::register_unit(unit("cycle_b", {"cycle_a"}));
  const size_t before = ts::instrument::units().size();
  try {
    ts::instrument::register_unit(unit("cycle_c", {"cycle_b"}));
    FAIL() << "a cycle was taken";
  } catch (const ts::core::Error& e) {
    EXPECT_EQ(e.kind(), ts::core::ErrorKind::kUsage);
    const std::string what = e.what();
    EXPECT_NE(what.find("cycle_a, cycle_b, cycle_c"), std::string::npos) << what;
  }
  EXPECT_EQ(ts::instrument::units().size(), before);
  EXPECT_EQ(place("cycle_c"), -1);
  // The registry still orders what it holds, and takes a unit that closes
  // no cycle.
  ts::instrument::register_unit(unit("cycle_d", {"cycle_b"}));
  EXPECT_LT(place("cycle_b"), place("cycle_d"));
}

}  // namespace
