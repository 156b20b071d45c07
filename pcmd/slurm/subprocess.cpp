// subprocess.cpp — running other programs (subprocess.h).
#include "slurm/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

extern char** environ;

namespace pcm::daemon {

namespace {

constexpr std::size_t kMaxOutput = 64 * 1024;

int status_code(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Spawns argv with stdin /dev/null and stdout/stderr into a new pipe (*read_end); 0 or errno.
int spawn_piped(const std::vector<std::string>& argv, char* const* envp, pid_t* pid,
                int* read_end) {
  int out[2];
  if (argv.empty()) return ENOENT;
  if (::pipe2(out, O_CLOEXEC) != 0) return errno;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, out[1], 2);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  // Nothing else of pcmd's: an inherited descriptor of a store file keeps its HDF5 lock (an
  // open file description's flock) while the command runs, and pcmd's next open of that file
  // failed with EAGAIN (slurm.paper_merge_gives_back, once).
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
#endif
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int rc = ::posix_spawnp(pid, args[0], &fa, nullptr, args.data(), envp);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  if (rc != 0) {
    ::close(out[0]);
    return rc;
  }
  *read_end = out[0];
  return 0;
}

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  CommandResult r;
  pid_t pid = 0;
  int out = -1;
  const int rc = spawn_piped(argv, environ, &pid, &out);
  if (rc != 0) {
    r.found = !argv.empty() && rc != ENOENT && rc != EACCES;
    r.exit_code = 127;
    return r;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd p{out, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = ::read(out, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the command (and all that shared its output) closed it
    if (r.output.size() < kMaxOutput) r.output.append(buf, static_cast<std::size_t>(n));
  }
  ::close(out);
  // Its output closed; its end is awaited up to the deadline too.
  int status = 0;
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, r.timed_out ? 0 : WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR)) break;
    if (w == 0 && std::chrono::steady_clock::now() >= deadline) {
      r.timed_out = true;
      ::kill(pid, SIGKILL);
    } else if (w == 0) {
      ::usleep(10000);
    }
  }
  r.exit_code = status_code(status);
  return r;
}

std::vector<std::string> environment_outside_slurm() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view v(*e);
    const bool slurm = v.rfind("SLURM_", 0) == 0 || v.rfind("SALLOC_", 0) == 0 ||
                       v.rfind("SBATCH_", 0) == 0 || v.rfind("SRUN_", 0) == 0;
    if (!slurm || v.rfind("SLURM_CONF=", 0) == 0) env.emplace_back(v);
  }
  return env;
}

Child::~Child() { stop(std::chrono::milliseconds(500)); }

bool Child::start(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  stop();
  output_.clear();
  exit_code_.reset();
  std::vector<char*> envp;
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  if (spawn_piped(argv, envp.data(), &pid_, &out_) != 0) {
    pid_ = 0;
    exit_code_ = 127;
    return false;
  }
  ::fcntl(out_, F_SETFL, ::fcntl(out_, F_GETFL) | O_NONBLOCK);
  return true;
}

void Child::drain() {
  if (out_ < 0) return;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(out_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) {  // closed: by the program and all that shared its output
        ::close(out_);
        out_ = -1;
      }
      return;
    }
    if (output_.size() < kMaxOutput) output_.append(buf, static_cast<std::size_t>(n));
  }
}

bool Child::poll() {
  drain();
  if (pid_ <= 0) return false;
  int status = 0;
  const pid_t w = ::waitpid(pid_, &status, WNOHANG);
  if (w == 0) return true;
  if (w == pid_) exit_code_ = status_code(status);
  pid_ = 0;
  drain();
  if (out_ >= 0) {  // what it left in the pipe is read; a grandchild may keep it open
    ::close(out_);
    out_ = -1;
  }
  return false;
}

void Child::stop(std::chrono::milliseconds grace) {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + grace;
    while (poll() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      exit_code_ = status_code(status);
      pid_ = 0;
    }
  }
  if (out_ >= 0) {
    drain();
    if (out_ >= 0) ::close(out_);
    out_ = -1;
  }
}

void Background::run(const std::vector<std::string>& argv, std::chrono::milliseconds bound,
                     Then then) {
  auto item = std::make_unique<Item>();
  item->deadline = std::chrono::steady_clock::now() + bound;
  item->then = std::move(then);
  item->started = item->child.start(argv, environment_outside_slurm());
  items_.push_back(std::move(item));
}

void Background::poll() {
  std::vector<std::pair<std::unique_ptr<Item>, CommandResult>> done;
  for (auto it = items_.begin(); it != items_.end();) {
    Item& item = **it;
    CommandResult r;
    if (item.started && item.child.poll()) {
      if (std::chrono::steady_clock::now() < item.deadline) {
        ++it;
        continue;
      }
      item.child.stop();
      r.timed_out = true;
    }
    r.exit_code = item.child.exit_code().value_or(127);
    r.found = item.started && r.exit_code != 127;
    r.output = item.child.output();
    done.emplace_back(std::move(*it), std::move(r));
    it = items_.erase(it);
  }
  // Out of the list first: a `then` may run more.
  for (auto& [item, r] : done) item->then(r);
}

}  // namespace pcm::daemon
