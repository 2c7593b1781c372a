// The PostgreSQL server that ctest starts for the tests that need one
// (fixture "postgres", tests/support/pg_server.py), and fresh databases on
// it. A test run outside ctest points TRAINSCOPE_TEST_POSTGRES_DIR at a
// server started by hand: `tests/support/pg_server.py start DIR`.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "support/test_util.h"

namespace trainscope::testing {

// The server's folder; a failed test (not a skipped one) without it.
inline std::filesystem::path postgres_dir() {
  const char* dir = std::getenv("TRAINSCOPE_TEST_POSTGRES_DIR");
  if (!dir || !std::filesystem::exists(std::filesystem::path(dir) / "uri")) {
    ADD_FAILURE() << "no PostgreSQL test server: run through ctest (fixture 'postgres'), or start "
                     "one with tests/support/pg_server.py start DIR and set "
                     "TRAINSCOPE_TEST_POSTGRES_DIR=DIR";
    return {};
  }
  return dir;
}

// A URI's query value: '%', '&', '#', '?', '+' and spaces escaped.
inline std::string uri_value(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '%' || c == '&' || c == '#' || c == '?' || c == '+' || c == ' ' || c == '=') {
      static const char* hex = "0123456789ABCDEF";
      out += '%';
      out += hex[(c >> 4) & 15];
      out += hex[c & 15];
    } else {
      out += c;
    }
  }
  return out;
}

// The URI of a new, empty database on the test server, its artifact files
// in `artifacts`.
inline std::string fresh_postgres_store(const std::filesystem::path& artifacts) {
  const auto dir = postgres_dir();
  if (dir.empty()) return {};
  static std::atomic<int> counter{0};
  std::random_device rd;
  const std::string name = "t_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + "_" +
                           std::to_string(rd() % 100000);
  const auto r =
      run_command("python3 " TS_PG_SERVER " createdb " + shell_quote(dir.string()) + " " + name);
  if (r.exit_code != 0) {
    ADD_FAILURE() << "could not create database " << name << ": " << r.out;
    return {};
  }
  std::string uri = r.out.substr(0, r.out.find('\n'));
  return uri + "?artifacts=" + uri_value(artifacts.string());
}

}  // namespace trainscope::testing
