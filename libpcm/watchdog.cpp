// watchdog.cpp — the reconfiguration watchdog's thread and scopes, and what it does to a process
// stuck past its deadline (see watchdog.h).
#include "watchdog.h"

#include <signal.h>
#include <unistd.h>

#include <exception>
#include <system_error>
#include <utility>
#include <zmq.hpp>

#include "client.h"
#include "config.h"
#include "ops.h"

namespace pcm::lib {

namespace {
// How long the stuck process waits for pcmd to take its event: it is ending anyway.
constexpr int kTellMs = 2000;

void write_stderr(const std::string& s) {
  const char* p = s.data();
  std::size_t left = s.size();
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n <= 0) return;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}
}  // namespace

Watchdog::Watchdog(Expiry on_expiry) : on_expiry_(std::move(on_expiry)) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

// The thread sleeps until something is armed, then until its deadline; a scope that ends first
// (disarm) or a stop wakes it. The expiry runs without the lock (a test's may call back).
void Watchdog::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (stop_) return;
    if (!armed_) {
      cv_.wait(lock);
      continue;
    }
    if (std::chrono::steady_clock::now() < deadline_) {
      cv_.wait_until(lock, deadline_);
      continue;
    }
    Deadline expired = std::move(*armed_);
    expired.stage = stage_;
    armed_.reset();
    lock.unlock();
    on_expiry_(expired);
    lock.lock();
  }
}

Watchdog::Scope::Scope(Watchdog& w, Deadline d) : w_(w), armed_(false) {
  std::lock_guard<std::mutex> lock(w.mu_);
  if (w.depth_ == 0 && d.seconds > 0) {
    // Without a thread (none can be started) the reconfiguration simply runs unbounded.
    try {
      if (!w.thread_.joinable()) w.thread_ = std::thread(&Watchdog::run, &w);
      w.deadline_ = std::chrono::steady_clock::now() +
                    std::chrono::seconds(d.seconds + (d.tell_pcmd ? 0 : kQuietGraceS));
      w.armed_ = std::move(d);
      armed_ = true;
    } catch (const std::system_error& e) {
      write_stderr(std::string("pcm: the reconfiguration watchdog cannot start: ") + e.what() +
                   "\n");
    }
  }
  ++w.depth_;
  if (armed_) w.cv_.notify_all();
}

Watchdog::Scope::~Scope() {
  std::lock_guard<std::mutex> lock(w_.mu_);
  --w_.depth_;
  if (!armed_) return;
  w_.armed_.reset();
  w_.cv_.notify_all();
}

Watchdog::Stage::Stage(Watchdog& w, std::string name) : w_(w) {
  std::lock_guard<std::mutex> lock(w.mu_);
  previous_ = std::exchange(w.stage_, std::move(name));
}

Watchdog::Stage::~Stage() {
  std::lock_guard<std::mutex> lock(w_.mu_);
  w_.stage_ = std::move(previous_);
}

std::optional<std::chrono::steady_clock::time_point> Watchdog::deadline() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!armed_) return std::nullopt;
  return deadline_;
}

std::optional<std::string> Watchdog::armed_what() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!armed_) return std::nullopt;
  return armed_->what;
}

bool Watchdog::started() const {
  std::lock_guard<std::mutex> lock(mu_);
  return thread_.joinable();
}

std::string expiry_line(const Watchdog::Deadline& d) {
  const std::string who = d.job.empty() ? "of a job it has not learnt yet" : "of job " + d.job;
  return "pcm: rank " + std::to_string(d.rank) + " " + who + ": " + d.what +
         (d.stage.empty() ? "" : " (stuck in " + d.stage + ")") + " did not finish within " +
         std::to_string(d.seconds) +
         " s (PCM_RECONFIG_TIMEOUT_S); ending this process so that the job ends instead of "
         "hanging (pcmctl run relaunches it)";
}

// libpcm's log is stderr (log.h): one write of the line there, whatever PCM_LOG_LEVEL says, and
// without the logger's lock, which the stuck thread could hold. The event goes over a context and
// socket of its own (the main thread's are its alone, and may be in use now).
void end_stuck_process(const Watchdog::Deadline& d) {
  const std::string line = expiry_line(d);
  write_stderr(line + "\n");
  if (d.tell_pcmd && !d.job.empty()) {
    try {
      const Config config = read_config(default_config_path());
      zmq::context_t context;
      Client client(context, config.endpoint, config.secret, config.curve);  // linger 0
      ops::JobEvent event{d.job, line, std::nullopt};
      if (d.command > 0) event.stuck_command = d.command;
      client.request(ops::request(event), nullptr, 0, kTellMs);
    } catch (const std::exception& e) {
      write_stderr(std::string("pcm: could not tell pcmd: ") + e.what() + "\n");
    }
  }
  if (d.kill_self) ::kill(::getpid(), SIGKILL);
  ::_exit(kExitReconfigTimeout);
}

}  // namespace pcm::lib
