// `trainscope serve` over real sockets: the token on a non-loopback bind,
// requests addressed to another host, a port in use, and readers served
// while a run writes.
#include "trainscope/serve/server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/test_util.h"
#include "trainscope/core/error.h"
#include "trainscope/store/store.h"

namespace trainscope::serve {
namespace {

using nlohmann::json;
namespace tst = trainscope::testing;

// A server on a free port, serving on its own thread until destroyed.
class Running {
 public:
  explicit Running(ServerOptions o) : server_(std::move(o)) {
    port_ = server_.bind();
    thread_ = std::thread([this] { server_.run(); });
  }
  ~Running() {
    server_.stop();
    thread_.join();
  }
  httplib::Client client() const { return httplib::Client("127.0.0.1", port_); }
  Server& server() { return server_; }
  int port() const { return port_; }

 private:
  Server server_;
  int port_ = 0;
  std::thread thread_;
};

class ServeHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    uri_ = "sqlite:" + (dir_ / "s.db").string();
    store_ = store::Store::open({.uri = uri_});
    uuid_ = store_->create_run({.name = "writer"}).uuid;
  }
  tst::TempDir dir_;
  std::string uri_, uuid_;
  std::unique_ptr<store::Store> store_;
};

TEST_F(ServeHttpTest, ANonLoopbackBindNeedsItsToken) {
  Running srv({.store_uri = uri_, .bind = "0.0.0.0", .port = 0});
  const std::string token = srv.server().token();
  ASSERT_EQ(token.size(), 32u);  // generated, since none was given
  EXPECT_NE(srv.server().url().find("?token=" + token), std::string::npos);
  auto c = srv.client();
  auto none = c.Get("/api/info");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_NE(json::parse(none->body)["error"].get<std::string>().find("token"), std::string::npos);
  EXPECT_EQ(c.Get("/", {{"Authorization", "Bearer " + std::string(32, '0')}})->status, 401);
  EXPECT_EQ(c.Get("/api/info", {{"Authorization", "Bearer " + token}})->status, 200);
  // Opening the printed URL sets a cookie the page's own requests carry.
  auto first = c.Get("/?token=" + token);
  EXPECT_EQ(first->status, 200);
  const std::string cookie = first->get_header_value("Set-Cookie");
  EXPECT_NE(cookie.find("HttpOnly"), std::string::npos);
  EXPECT_EQ(c.Get("/api/runs", {{"Cookie", cookie.substr(0, cookie.find(';'))}})->status, 200);
}

TEST_F(ServeHttpTest, LoopbackAnswersOnlyRequestsAddressedToThisMachine) {
  Running srv({.store_uri = uri_, .port = 0});
  EXPECT_TRUE(srv.server().token().empty());
  auto c = srv.client();
  auto page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->get_header_value("Content-Type").find("text/html"), std::string::npos);
  EXPECT_NE(page->get_header_value("Content-Security-Policy").find("default-src 'self'"),
            std::string::npos);
  EXPECT_EQ(c.Get("/api/info")->status, 200);
  // A page elsewhere that rebinds its name to 127.0.0.1 still sends its name.
  EXPECT_EQ(c.Get("/api/info", {{"Host", "attacker.example:80"}})->status, 403);
  EXPECT_EQ(c.Put("/api/runs/writer/tags/x", "1", "text/plain")->status, 403);
  EXPECT_EQ(c.Get("/nothing/here")->status, 404);
}

// Issue 29, item 7: a study's children are named "cell/r1"; URL-encoded,
// such a name is one segment of the path (it answered "no run matches
// 'init'"), and so is a name holding '%' or a space.
TEST_F(ServeHttpTest, URLEncodedNamesWithASlashNameTheirRun) {
  store_->create_run({.name = "init"});
  const std::string child = store_->create_run({.name = "init/r1"}).uuid;
  store_->append_metrics(child, {{"train/loss", {{1, 0, 0.5}}}});
  const std::string odd = store_->create_run({.name = "50% done x"}).uuid;
  Running srv({.store_uri = uri_, .port = 0});
  auto c = srv.client();
  auto run = c.Get("/api/runs/init%2Fr1");
  ASSERT_TRUE(run);
  ASSERT_EQ(run->status, 200) << run->body;
  EXPECT_EQ(json::parse(run->body)["run"]["uuid"], child);
  auto chart = c.Get("/api/runs/init%2Fr1/metric?key=train%2Floss");
  ASSERT_EQ(chart->status, 200) << chart->body;
  EXPECT_EQ(json::parse(chart->body)["count"], 1);
  auto pct = c.Get("/api/runs/50%25%20done%20x");
  ASSERT_EQ(pct->status, 200) << pct->body;
  EXPECT_EQ(json::parse(pct->body)["run"]["uuid"], odd);
  EXPECT_EQ(c.Get("/api/runs/init/r1")->status, 404);  // "init" has no page "r1"
}

// Issue 29, item 13: some error bodies were empty or not JSON, and DELETE
// on a run said "to change tags". Every answer that is an error is a JSON
// body {"error": one line, "status": N} with the status of what went wrong.
TEST_F(ServeHttpTest, EveryErrorIsJsonWithTheRightStatus) {
  Running srv({.store_uri = uri_, .port = 0});
  auto c = srv.client();
  struct Case {
    httplib::Result r;
    int status;
  };
  std::vector<Case> cases;
  cases.push_back({c.Delete("/api/runs/writer"), 405});
  cases.push_back({c.Patch("/api/runs/writer", "x", "text/plain"), 405});
  cases.push_back({c.Options("/api/runs"), 405});
  cases.push_back({c.Put("/api/runs/writer/tags/x", "1", "text/plain"), 403});
  cases.push_back({c.Get("/api/runs/nobody"), 404});
  cases.push_back({c.Get("/api/runs/%zz"), 404});
  cases.push_back({c.Get("/api/runs?limit=ten"), 400});
  cases.push_back({c.Get("/no/such/page"), 404});
  cases.push_back({c.Get("/api/runs/writer/metric?key=none"), 404});
  for (size_t i = 0; i < cases.size(); ++i) {
    ASSERT_TRUE(cases[i].r) << i;
    const auto& res = *cases[i].r;
    EXPECT_EQ(res.status, cases[i].status) << i << ": " << res.body;
    ASSERT_FALSE(res.body.empty()) << i;
    const json j = json::parse(res.body);
    EXPECT_EQ(j["status"], cases[i].status) << i;
    const std::string msg = j["error"];
    EXPECT_FALSE(msg.empty()) << i;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    if (cases[i].status == 405) {
      EXPECT_EQ(msg.find("change tags"), std::string::npos) << msg;
    }
  }
  EXPECT_NE(cases[3].r->body.find("--allow-writes"), std::string::npos);  // tags: 403 says how
}

TEST_F(ServeHttpTest, APortInUseAndAMissingStoreAreClearErrors) {
  Running srv({.store_uri = uri_, .port = 0});
  Server second({.store_uri = uri_, .port = srv.port()});
  try {
    second.bind();
    FAIL() << "bound a port in use";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.kind(), core::ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("in use"), std::string::npos) << e.what();
  }
  const std::string missing = (dir_ / "missing.db").string();
  try {
    Server none({.store_uri = "sqlite:" + missing});
    FAIL() << "served a store that does not exist";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.kind(), core::ErrorKind::kNotFound) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(missing));
}

// A run writing batches while four readers poll it, as live pages do: every
// reader sees counts only grow, never an error, and ends at the final count.
TEST_F(ServeHttpTest, ReadersAreServedWhileARunWrites) {
  Running srv({.store_uri = uri_, .port = 0, .threads = 4});
  constexpr int kBatches = 60, kPerBatch = 500;
  std::atomic<bool> done = false;
  std::thread writer([&] {
    for (int b = 0; b < kBatches; ++b) {
      std::vector<store::MetricPoint> pts;
      for (int i = 0; i < kPerBatch; ++i) pts.push_back({b * kPerBatch + i, 0, 1.0 * i});
      store_->append_metrics(uuid_, {{"loss", pts}});
    }
    done = true;
  });
  std::atomic<int> failures = 0, polls = 0;
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t)
    readers.emplace_back([&] {
      auto c = srv.client();
      int64_t have = 0;
      while (true) {
        const bool last = done;
        auto r =
            c.Get("/api/runs/writer/metric?key=loss&width=100000&after=" + std::to_string(have));
        ++polls;
        if (r && r->status == 404 && have == 0 && !last) continue;  // no point yet
        if (!r || r->status != 200) {
          ++failures;
          return;
        }
        json j = json::parse(r->body);
        const int64_t count = j["count"];
        const auto got = static_cast<int64_t>(j["steps"].size());
        if (count < have || (!j["downsampled"] && got != count - have)) ++failures;
        have = count;
        if (last) break;
      }
      if (have != kBatches * kPerBatch) ++failures;
    });
  writer.join();
  for (auto& r : readers) r.join();
  EXPECT_EQ(failures, 0);
  EXPECT_GT(polls, 4);
}

}  // namespace
}  // namespace trainscope::serve
