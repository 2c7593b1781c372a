#include "trainscope/probes/hub.h"

#include <mutex>

#include "trainscope/core/log.h"
#include "trainscope/core/util.h"

namespace trainscope::probes {

// The Sink every subscriber publishes into: records to each output, then
// hands a scalar to the subscribers of that series (which may publish
// again: the lock is recursive). One publication at a time, so outputs and
// series subscribers need no locks of their own.
class Hub::Dispatch : public Sink {
 public:
  Dispatch(const std::vector<std::shared_ptr<Subscriber>>& subs,
           std::vector<std::shared_ptr<Output>> outputs)
      : subscribers_(subs), outputs_(std::move(outputs)) {}

  // One reading of the clock per publication, which every output records
  // (the store and the TensorBoard file disagreed by microseconds).
  void scalar(const SeriesPoint& published) override {
    SeriesPoint p = published;
    if (p.wall_time == 0) p.wall_time = core::unix_now();
    std::lock_guard lock(mu_);
    for (auto& o : outputs_) o->scalar(p);
    if (++depth_ <= 8)  // a cycle of derived series stops here
      for (auto& s : subscribers_)
        if (s->wants_series(p)) s->on_series(p, *this);
    --depth_;
  }
  void histogram(const std::string& layer, Kind kind, const Position& at,
                 const Histogram& h) override {
    const double now = core::unix_now();
    std::lock_guard lock(mu_);
    for (auto& o : outputs_) o->histogram(layer, kind, at, h, now);
  }
  void alert(const Alert& a) override {
    std::lock_guard lock(mu_);
    for (auto& o : outputs_) o->alert(a);
  }
  void close() {
    std::lock_guard lock(mu_);
    for (auto& o : outputs_) o->close();
  }

 private:
  std::recursive_mutex mu_;
  int depth_ = 0;
  const std::vector<std::shared_ptr<Subscriber>>& subscribers_;
  std::vector<std::shared_ptr<Output>> outputs_;
};

struct Hub::Worker {
  std::mutex mu;
  std::condition_variable changed;
  std::deque<Item> queue;
  bool stopping = false;
  std::thread thread;
};

Hub::Hub(std::vector<std::shared_ptr<Subscriber>> subscribers,
         std::vector<std::shared_ptr<Output>> outputs, HubOptions options)
    : subscribers_(std::move(subscribers)),
      dispatch_(std::make_unique<Dispatch>(subscribers_, std::move(outputs))),
      options_(options) {
  for (const auto& s : subscribers_) {
    wants_meta_ |= s->wants_meta();
    wants_batch_tensors_ |= s->wants_batch_tensors();
  }
  int n = std::max(1, options_.workers);
  for (int i = 0; i < n; ++i) workers_.push_back(std::make_unique<Worker>());
  for (auto& w : workers_) w->thread = std::thread([this, wp = w.get()] { run(*wp); });
}

Hub::~Hub() { close(); }

bool Hub::due(const Subscriber& s, int64_t step) const {
  int64_t e = s.every() > 0 ? s.every() : std::max<int64_t>(1, options_.every);
  return step <= s.warmup_steps() || step % e == 0;
}

std::set<Kind> Hub::kinds_due(int64_t step) const {
  std::set<Kind> out;
  for (const auto& s : subscribers_) {
    if (!due(*s, step)) continue;
    auto k = s->kinds();
    out.insert(k.begin(), k.end());
  }
  return out;
}

void Hub::publish(LayerPacket packet) {
  size_t w = static_cast<size_t>(packet.layer->index) % workers_.size();
  enqueue(w, std::move(packet));
}

void Hub::publish(std::vector<MetaPacket> packets) {
  if (!packets.empty()) enqueue(0, std::move(packets));
}

Sink& Hub::sink() { return *dispatch_; }

void Hub::enqueue(size_t i, Item item) {
  Worker& w = *workers_[i];
  std::unique_lock lock(w.mu);
  if (w.queue.size() >= options_.queue_capacity) {
    if (!options_.block_when_full) {
      dropped_.fetch_add(1);
      return;
    }
    w.changed.wait(lock, [&] { return w.queue.size() < options_.queue_capacity; });
  }
  w.queue.push_back(std::move(item));
  w.changed.notify_all();
}

void Hub::run(Worker& w) {
  for (;;) {
    Item item;
    {
      std::unique_lock lock(w.mu);
      w.changed.wait(lock, [&] { return w.stopping || !w.queue.empty(); });
      if (w.queue.empty()) return;  // stopping and drained
      item = std::move(w.queue.front());
      w.queue.pop_front();
      w.changed.notify_all();  // room for a blocked publisher
    }
    try {
      deliver(item);
    } catch (const std::exception& e) {
      core::log_warn("probes: a subscriber failed: {}", e.what());
    }
  }
}

void Hub::deliver(const Item& item) {
  if (const auto* lp = std::get_if<LayerPacket>(&item)) {
    for (auto& s : subscribers_)
      if (!s->kinds().empty() && due(*s, lp->at.step)) s->on_layer(*lp, *dispatch_);
    return;
  }
  for (const auto& mp : std::get<std::vector<MetaPacket>>(item))
    for (auto& s : subscribers_)
      if (s->wants_meta()) s->on_meta(mp, *dispatch_);
}

void Hub::close() {
  if (closed_) return;
  closed_ = true;
  for (auto& w : workers_) {
    {
      std::lock_guard lock(w->mu);
      w->stopping = true;
    }
    w->changed.notify_all();
  }
  for (auto& w : workers_)
    if (w->thread.joinable()) w->thread.join();
  for (auto& s : subscribers_) s->on_end(*dispatch_);
  dispatch_->close();
}

}  // namespace trainscope::probes
