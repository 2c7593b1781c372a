// The PostgreSQL backend where it differs from a file: many processes and
// hosts writing into one server, connections the server breaks, clocks that
// disagree, where artifact files go, and the bad inputs of a server URI.
// The contract itself is checked by conformance_test.cc, on this backend too.
#include "support/postgres_test.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "support/test_util.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/store/registry.h"
#include "trainscope/store/run_recorder.h"
#include "trainscope/store/store.h"

namespace trainscope::store {
using core::Error;
using core::ErrorKind;
using testing::run_command;
using testing::shell_quote;

namespace {

// A process running `argv`, its stdout readable through `out` when asked.
struct Child {
  pid_t pid = -1;
  FILE* out = nullptr;
};

Child spawn(const std::vector<std::string>& argv, bool capture) {
  int fds[2] = {-1, -1};
  if (capture && pipe(fds) != 0) return {};
  Child c;
  c.pid = fork();
  if (c.pid == 0) {
    if (capture) dup2(fds[1], 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  if (capture) {
    close(fds[1]);
    c.out = fdopen(fds[0], "r");
  }
  return c;
}

// Reads the writer's "flushed UUID N" line, waiting at most a minute: a
// writer that hangs before it writes fails the test with a message instead
// of blocking it until ctest's timeout (and is killed, so that it does not
// outlive the test).
bool read_flushed(const Child& c, char (&uuid)[64], long& flushed) {
  pollfd p{.fd = fileno(c.out), .events = POLLIN, .revents = 0};
  if (poll(&p, 1, 60'000) == 1 && std::fscanf(c.out, "flushed %63s %ld", uuid, &flushed) == 2)
    return true;
  kill(c.pid, SIGKILL);
  waitpid(c.pid, nullptr, 0);
  return false;
}

// libfaketime's preload and AddressSanitizer's interceptors can deadlock at
// start-up (libfaketime: "Unexpected recursive calls to clock_gettime()"):
// the sanitizer build's writer keeps the true clock.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kFakeClock = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kFakeClock = false;
#else
constexpr bool kFakeClock = true;
#endif
#else
constexpr bool kFakeClock = true;
#endif

int wait_exit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

class PostgresTest : public ::testing::Test {
 protected:
  void SetUp() override {
    uri_ = testing::fresh_postgres_store(dir_ / "artifacts");
    ASSERT_FALSE(uri_.empty());
  }
  std::unique_ptr<Store> open(StoreOptions o = {}) {
    if (o.uri.empty()) o.uri = uri_;
    return Store::open(o);
  }
  // The database's URI as psql takes it (without trainscope's options).
  std::string server_uri() const { return uri_.substr(0, uri_.find('?')); }
  std::string psql(const std::string& sql) {
    auto r = run_command("psql -X -q -At " + shell_quote(server_uri()) + " -c " + shell_quote(sql));
    EXPECT_EQ(r.exit_code, 0) << sql << ": " << r.out;
    return r.out;
  }
  // The server process that serves this test's store (its only trainscope
  // connection to this test's database), or "" if there is none.
  std::string backend_pid() {
    const std::string pid = psql(
        "SELECT pid FROM pg_stat_activity WHERE application_name = 'trainscope' AND "
        "datname = current_database()");
    return pid.substr(0, pid.find('\n'));
  }
  // The message of the Error `f` throws, checked to be one line of `kind`.
  static std::string error_of(const std::function<void()>& f, ErrorKind kind) {
    try {
      f();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), kind) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      return e.what();
    }
    ADD_FAILURE() << "no error";
    return {};
  }

  testing::TempDir dir_;
  std::string uri_;
};

// Issue 19: 8 processes x 100,000 points into one PostgreSQL store, all
// starting at once on a database that has no store yet (so they also race
// to create it): nothing lost, no error.
TEST_F(PostgresTest, EightWritersOfAHundredThousandPointsLoseNothing) {
  constexpr int kWriters = 8, kKeys = 4;
  constexpr long kSteps = 25000;  // x 4 keys = 100,000 points per writer
  std::vector<pid_t> pids;
  for (int w = 0; w < kWriters; ++w)
    pids.push_back(spawn({TS_WRITER_BIN, uri_, "w" + std::to_string(w), std::to_string(kSteps),
                          std::to_string(kKeys)},
                         false)
                       .pid);
  for (pid_t pid : pids) EXPECT_EQ(wait_exit(pid), 0) << "a writer failed; see its stderr above";
  auto store = open();
  auto runs = store->list_runs();
  ASSERT_EQ(runs.size(), static_cast<size_t>(kWriters));
  std::set<std::string> names;
  int64_t total = 0;
  for (const auto& r : runs) {
    names.insert(r.name);
    EXPECT_EQ(r.status, RunStatus::kFinished);
    EXPECT_EQ(store->params(r.uuid).at("writer"), r.name);
    for (int k = 0; k < kKeys; ++k) {
      auto pts = store->metric(r.uuid, "key" + std::to_string(k));
      ASSERT_EQ(pts.size(), static_cast<size_t>(kSteps)) << r.name << " key" << k;
      for (long i = 0; i < kSteps; ++i) ASSERT_EQ(pts[i].step, i);
      total += std::ssize(pts);
    }
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(kWriters));
  EXPECT_EQ(total, 800'000);
}

TEST_F(PostgresTest, SigkilledWriterLosesNothingFlushedAndBecomesKilled) {
  Child c = spawn({TS_WRITER_BIN, uri_, "victim", "5000", "2", "--hang"}, true);
  char uuid[64] = {0};
  long flushed = 0;
  ASSERT_TRUE(read_flushed(c, uuid, flushed)) << "the writer printed nothing in 60 s";
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  ASSERT_EQ(kill(c.pid, SIGKILL), 0);
  EXPECT_EQ(wait_exit(c.pid), 128 + SIGKILL);
  fclose(c.out);
  auto store = open();  // reaps: the writer ran on this host and is gone
  auto r = store->find_run(uuid);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, RunStatus::kKilled);
  EXPECT_EQ(r->end_time, r->heartbeat);
  for (int k = 0; k < 2; ++k) {
    auto pts = store->metric(uuid, "key" + std::to_string(k));
    ASSERT_GE(pts.size(), static_cast<size_t>(flushed));
    for (size_t i = 0; i < pts.size(); ++i) ASSERT_EQ(pts[i].step, static_cast<int64_t>(i));
  }
}

// A writer on another host whose wall clock is an hour behind: its
// heartbeats carry the server's time, so the reaper here leaves it alone
// while it lives (and does not judge it by a PID of this host); once it is
// gone and silent for longer than stale_after_seconds, it is marked killed
// at its last heartbeat. The other host is a UTS namespace with its own
// host name; its clock, libfaketime (wall clock only, as on a host without
// NTP; the Release build's test only, see kFakeClock).
TEST_F(PostgresTest, ARunOnAnotherHostIsJudgedByTheServersClock) {
  if (run_command("unshare --uts true").exit_code != 0)
    GTEST_SKIP() << "this machine gives no UTS namespace (unshare --uts; needs root)";
  const std::string fake_clock =
      kFakeClock ? "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 "
                   "FAKETIME=-1h DONT_FAKE_MONOTONIC=1 "
                 : "";
  const std::string script = "hostname other-host && " + fake_clock + "exec \"$@\"";
  Child c = spawn({"unshare", "--uts", "sh", "-c", script, "sh", TS_WRITER_BIN, uri_, "remote",
                   "2000", "1", "--hang"},
                  true);
  char uuid[64] = {0};
  long flushed = 0;
  ASSERT_TRUE(read_flushed(c, uuid, flushed)) << "the writer printed nothing in 60 s; see stderr";
  auto store = open();
  const RunInfo first = *store->find_run(uuid);
  EXPECT_EQ(first.host, "other-host");
  EXPECT_EQ(store->params(uuid).at("writer"), "remote");
  // The writer's own clock is an hour off; the run's times are not.
  if (kFakeClock) {
    EXPECT_LT(store->metric(uuid, "key0").at(0).wall_time, store->now() - 3000);
  }
  EXPECT_NEAR(first.start_time, store->now(), 60.0);
  // Its recorder beats every 5 s: a second beat, stamped by the server.
  double beat = first.heartbeat;
  for (int i = 0; i < 100 && beat == first.heartbeat; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    beat = store->find_run(uuid)->heartbeat;
  }
  EXPECT_GT(beat, first.heartbeat);
  EXPECT_NEAR(beat, store->now(), 2.0);
  EXPECT_EQ(store->reap_stale_runs(), 0);
  EXPECT_EQ(store->find_run(uuid)->status, RunStatus::kRunning);

  ASSERT_EQ(kill(c.pid, SIGKILL), 0);
  ASSERT_EQ(wait_exit(c.pid), 128 + SIGKILL);  // the writer itself (exec all the way down)
  fclose(c.out);
  // Its PID is gone here too, but it ran on another host: only silence counts.
  EXPECT_EQ(open()->find_run(uuid)->status, RunStatus::kRunning);
  const double last = store->find_run(uuid)->heartbeat;
  while (store->now() - last < 2.5) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto reaper = open({.stale_after_seconds = 2.0});
  auto killed = reaper->find_run(uuid);
  EXPECT_EQ(killed->status, RunStatus::kKilled);
  EXPECT_EQ(killed->end_time, last);
  EXPECT_GE(reaper->metric(uuid, "key0").size(), static_cast<size_t>(flushed));
}

// The server ends the store's connection (a restart, an idle timeout, an
// administrator) while it is idle: the next call opens a new one, and a
// recorder loses nothing.
TEST_F(PostgresTest, ConnectionsTheServerEndsAreOpenedAgain) {
  auto terminate = [&] {
    // This test's database only: other tests share the server. The call
    // waits until the server process has exited, so that its end has
    // reached the store's socket before the store's next statement (the
    // case of a statement already on its way is the next test's).
    EXPECT_EQ(psql("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 60000)) FROM "
                   "pg_stat_activity WHERE application_name = 'trainscope' AND "
                   "datname = current_database()"),
              "1\n");
  };
  std::shared_ptr<Store> store = open();
  RunInfo r = store->create_run({});
  terminate();
  store->set_tag(r.uuid, "after", "reconnect");
  EXPECT_EQ(store->tags(r.uuid).at("after"), "reconnect");

  auto rec = RunRecorder::start(store, {.name = "recorded"});
  for (int i = 0; i < 3000; ++i) {
    rec->log_metric("loss", 1.0 / (i + 1), i);
    if (i % 1000 == 999) {
      rec->flush();
      terminate();
    }
  }
  rec->end(RunStatus::kFinished);
  auto pts = store->metric(rec->uuid(), "loss");
  ASSERT_EQ(pts.size(), 3000u);
  for (int i = 0; i < 3000; ++i) ASSERT_EQ(pts[i].step, i);
}

namespace {
// Bytes that process `pid` has received on its TCP sockets and not yet
// read (its /proc/PID/fd sockets, looked up in /proc/net/tcp and tcp6).
long unread_bytes(const std::string& pid) {
  std::set<std::string> inodes;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/" + pid + "/fd", ec)) {
    const std::string target = std::filesystem::read_symlink(e.path(), ec).string();
    if (target.starts_with("socket:[")) inodes.insert(target.substr(8, target.size() - 9));
  }
  long unread = 0;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line, slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    std::getline(in, line);  // the header
    while (in >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
           timeout >> inode) {
      std::getline(in, line);  // the rest of the row
      if (inodes.contains(inode))
        unread += std::stol(queues.substr(queues.find(':') + 1), nullptr, 16);
    }
  }
  return unread;
}
}  // namespace

// The server ends the connection while a statement is on its way: its
// process is stopped, told to terminate, and let go only once the store's
// next statement has reached it. The store opens a new connection and runs
// the work once more: the points land once. (libpqxx 6.4 leaks the failed
// statement's result here, 2 KB: tests/lsan.supp.)
TEST_F(PostgresTest, AConnectionEndedWhileAStatementIsOnItsWayIsOpenedAgain) {
  auto store = open();
  RunInfo r = store->create_run({});
  const std::string pid = backend_pid();
  ASSERT_FALSE(pid.empty());
  ASSERT_EQ(kill(std::stoi(pid), SIGSTOP), 0) << "cannot stop the server process " << pid;
  psql("SELECT pg_terminate_backend(" + pid + ")");
  std::atomic<bool> reached{false};
  std::jthread release([&] {  // joined also if the store throws
    for (int i = 0; i < 600 && !reached; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      reached = unread_bytes(pid) > 0;
    }
    kill(std::stoi(pid), SIGCONT);
  });
  store->append_metrics(r.uuid, {{"loss", {{0, 1.0, 2.0}, {1, 3.0, 4.0}}}});
  release.join();
  EXPECT_TRUE(reached) << "the statement never reached the stopped server process";
  const auto pts = store->metric(r.uuid, "loss");
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_EQ(pts[1].step, 1);
  const std::string now = backend_pid();
  EXPECT_FALSE(now.empty());
  EXPECT_NE(now, pid);
}

// Artifact files go where the store says, for every host that opens it.
// Twenty-second hunt, A-D1: a chunk copied after the last one holds the
// row's last point, so only the key's count tells: `metrics` listed 8
// points where the count and every summary said 4.
TEST_F(PostgresTest, AChunkCopiedAfterTheLastIsADamagedStore) {
  auto store = open();
  const std::string uuid = store->create_run({}).uuid;
  store->append_metrics(uuid, {{"loss", {{1, 1.0, 2.5}, {2, 1.0, 2.0}}}});
  store->append_metrics(uuid, {{"loss", {{3, 2.0, 0.5}, {4, 2.0, 0.25}}}});
  psql(
      "INSERT INTO metric_chunks SELECT key_id, seq + 1, n, first_step, last_step, points FROM "
      "metric_chunks WHERE seq = 1");
  const std::string damaged = "metric 'loss' of run " + uuid.substr(0, 8) +
                              ": its chunks count 6 points where its row counts 4; the store is "
                              "damaged";
  EXPECT_EQ(error_of([&] { store->metric(uuid, "loss"); }, ErrorKind::kStore), damaged);
  EXPECT_EQ(error_of([&] { store->metric_from(uuid, "loss", 3); }, ErrorKind::kStore), damaged);
  EXPECT_EQ(error_of([&] { store->scan_metric(uuid, "loss", 0, [](const auto&) { return true; }); },
                     ErrorKind::kStore),
            damaged);
}

TEST_F(PostgresTest, TheArtifactFolderIsRecordedInTheStore) {
  std::ofstream(dir_ / "f.txt") << "bytes";
  RunInfo r;
  {
    auto store = open();  // the URI names dir_/artifacts
    r = store->create_run({});
    auto a = store->add_artifact(r.uuid, dir_ / "f.txt", "file");
    EXPECT_EQ(a.path, dir_ / "artifacts" / r.uuid / "f.txt");
  }
  EXPECT_EQ(psql("SELECT value FROM settings WHERE key = 'artifact_root'"),
            (dir_ / "artifacts").string() + "\n");
  // Opened without ?artifacts=: the recorded folder.
  auto plain = open({.uri = server_uri()});
  auto list = plain->artifacts(r.uuid);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].path, dir_ / "artifacts" / r.uuid / "f.txt");
  EXPECT_NO_THROW(verify_artifact(list[0]));
  // $TRAINSCOPE_ARTIFACTS (another mount point, say) wins over the record.
  setenv("TRAINSCOPE_ARTIFACTS", (dir_ / "elsewhere").c_str(), 1);
  auto moved = open({.uri = server_uri()});
  unsetenv("TRAINSCOPE_ARTIFACTS");
  EXPECT_EQ(moved->artifacts(r.uuid).at(0).path, dir_ / "elsewhere" / r.uuid / "f.txt");
  EXPECT_EQ(psql("SELECT value FROM settings WHERE key = 'artifact_root'"),
            (dir_ / "artifacts").string() + "\n");
}

TEST_F(PostgresTest, AnUnreachableServerOrAWrongPasswordIsOneLineWithoutThePassword) {
  const std::string password = "trainscope-test-password";  // tests/support/pg_server.py
  ASSERT_NE(uri_.find(password), std::string::npos);
  std::string wrong = uri_;
  wrong.replace(wrong.find(password), password.size(), "not-the-password");
  std::string msg = error_of([&] { open({.uri = wrong}); }, ErrorKind::kStore);
  EXPECT_NE(msg.find("password authentication failed"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("not-the-password"), std::string::npos) << msg;
  EXPECT_NE(msg.find("postgresql://trainscope@127.0.0.1:"), std::string::npos) << msg;

  msg = error_of([&] { open({.uri = "postgresql://trainscope:" + password + "@127.0.0.1:1/x"}); },
                 ErrorKind::kStore);
  EXPECT_NE(msg.find("store 'postgresql://trainscope@127.0.0.1:1/x': cannot connect"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("Connection refused"), std::string::npos) << msg;
  EXPECT_EQ(msg.find(password), std::string::npos) << msg;

  std::string missing = server_uri();
  missing = missing.substr(0, missing.rfind('/')) + "/no_such_database";
  msg = error_of([&] { open({.uri = missing}); }, ErrorKind::kStore);
  EXPECT_NE(msg.find("database \"no_such_database\" does not exist"), std::string::npos) << msg;
  EXPECT_EQ(msg.find(password), std::string::npos) << msg;
}

// A store written by a newer trainscope, or a database that holds something
// else, is refused before anything is written.
TEST_F(PostgresTest, ANewerSchemaOrAForeignDatabaseIsRefusedUntouched) {
  open()->create_run({.name = "before"});
  psql("INSERT INTO schema_migrations VALUES (99, 'from the future', 0)");
  psql("UPDATE runs SET heartbeat = 0");  // stale: a reaper would mark it killed
  const std::string msg = error_of([&] { open(); }, ErrorKind::kStore);
  EXPECT_NE(msg.find("schema version 99, newer than this trainscope"), std::string::npos) << msg;
  EXPECT_EQ(psql("SELECT name, status FROM runs"), "before|running\n");
  EXPECT_EQ(psql("SELECT max(version) FROM schema_migrations"), "99\n");

  const std::string other = testing::fresh_postgres_store(dir_ / "other");
  const std::string other_server = other.substr(0, other.find('?'));
  run_command("psql -X -q " + shell_quote(other_server) + " -c 'CREATE TABLE orders (id int)'");
  const std::string foreign = error_of([&] { open({.uri = other}); }, ErrorKind::kStore);
  EXPECT_NE(foreign.find("holds other tables but no trainscope store"), std::string::npos)
      << foreign;
  EXPECT_EQ(run_command("psql -X -At " + shell_quote(other_server) +
                        " -c \"SELECT count(*) FROM pg_tables WHERE schemaname = 'public'\"")
                .out,
            "1\n");
}

TEST_F(PostgresTest, ReadOnlyOpensNeitherCreateNorWrite) {
  const std::string empty = error_of([&] { open({.read_only = true}); }, ErrorKind::kNotFound);
  EXPECT_NE(empty.find("holds no trainscope store yet"), std::string::npos) << empty;
  EXPECT_EQ(psql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"), "0\n");
  RunInfo r = open()->create_run({.name = "kept"});
  auto reader = open({.read_only = true});
  EXPECT_EQ(reader->resolve_run("kept").uuid, r.uuid);
  const std::string write = error_of([&] { reader->set_tag(r.uuid, "k", "v"); }, ErrorKind::kStore);
  EXPECT_NE(write.find("read-only"), std::string::npos) << write;
  EXPECT_TRUE(open()->tags(r.uuid).empty());
}

// What is written to disk (an sbatch script) or shown carries no password.
TEST(StoreUriTest, PasswordsAreSplitFromUris) {
  auto s = split_password("postgresql://ann:s%40cret@db.lab:5433/ts?artifacts=/shared/a");
  EXPECT_EQ(s.uri, "postgresql://ann@db.lab:5433/ts?artifacts=/shared/a");
  EXPECT_EQ(s.password, "s@cret");
  s = split_password("postgres://ann@db/ts?password=p%26w&sslmode=require");
  EXPECT_EQ(s.uri, "postgres://ann@db/ts?sslmode=require");
  EXPECT_EQ(s.password, "p&w");
  s = split_password("postgresql://ann@db/ts");
  EXPECT_EQ(s.uri, "postgresql://ann@db/ts");
  EXPECT_EQ(s.password, "");
  EXPECT_EQ(split_password("sqlite:a:b@c.db").uri, "sqlite:a:b@c.db");
  EXPECT_EQ(split_password("postgresql://db.lab:5433/ts").uri, "postgresql://db.lab:5433/ts");
}

}  // namespace
}  // namespace trainscope::store
