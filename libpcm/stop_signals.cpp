// stop_signals.cpp — see stop_signals.h.
#include "stop_signals.h"

#include <signal.h>
#include <string.h>
#include <time.h>

#include <cctype>
#include <sstream>

#include "error.h"
#include "mpi_util.h"
#include "pcm_types.h"

namespace pcm::lib {

namespace {

struct Known {
  const char* name;
  int sig;
};
const Known kKnown[] = {{"TERM", SIGTERM}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2},
                        {"INT", SIGINT},   {"HUP", SIGHUP},   {"XCPU", SIGXCPU}};

volatile sig_atomic_t g_pending = 0;  // the signal not yet taken up
volatile sig_atomic_t g_taken = 0;    // a stop is being carried out
volatile sig_atomic_t g_first_s = 0;  // CLOCK_MONOTONIC seconds of the pending signal

// A second signal 10 s or more after one that was never taken up (the process does not reach
// PCM_Status: stuck, or computing without calling it) ends the process as it would have ended
// without PCM. Slurm's and the launcher's copies of one signal come within milliseconds.
constexpr long kGiveUpS = 10;

void on_stop_signal(int sig) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe
  if (g_pending != 0 && !g_taken && now.tv_sec - g_first_s >= kGiveUpS) {
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  if (g_pending == 0) {
    g_first_s = static_cast<sig_atomic_t>(now.tv_sec);
    g_pending = sig;
  }
}

}  // namespace

std::vector<int> parse_stop_signals(const std::string& text) {
  std::vector<int> out;
  if (text == "none" || text.empty()) return out;
  std::stringstream in(text);
  std::string word;
  while (std::getline(in, word, ',')) {
    std::string w;
    for (char c : word)
      if (!std::isspace(static_cast<unsigned char>(c)))
        w += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (w.rfind("SIG", 0) == 0) w = w.substr(3);
    int sig = 0;
    for (const Known& k : kKnown)
      if (w == k.name) sig = k.sig;
    if (sig == 0)
      fail(PCM_ERR_ARG,
           "PCM_STOP_SIGNALS: '{}' is not one of TERM, USR1, USR2, INT, HUP, XCPU (or none)", word);
    out.push_back(sig);
  }
  return out;
}

std::string signal_name(int sig) {
  for (const Known& k : kKnown)
    if (k.sig == sig) return std::string("SIG") + k.name;
  return "signal " + std::to_string(sig);
}

namespace stop_signals {

void install(const std::vector<int>& signals) {
  static bool done = false;
  if (done) return;
  done = true;
  for (int sig : signals) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0) continue;
    if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) {
      plog()->debug("{} is handled or ignored already: PCM leaves it alone", signal_name(sig));
      continue;
    }
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(sig, &sa, nullptr);
  }
}

int pending() { return g_pending; }

void taken_up() { g_taken = 1; }

void default_action(int sig) {
  g_pending = 0;
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace stop_signals

}  // namespace pcm::lib
