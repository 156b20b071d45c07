// stop_signals.h — the signals that ask a job to end with a last version (a preemption's SIGTERM,
// a warning's SIGUSR1: docs/user/preemption.md). The handler only records the signal; PCM_Status
// takes it up at its next agreement, where the ranks agree on it (one rank's signal is enough).
#pragma once

#include <string>
#include <vector>

namespace pcm::lib {

// PCM_STOP_SIGNALS: a comma-separated list of TERM, USR1, USR2, INT, HUP, XCPU (with or without
// SIG), or "none". Throws pcm::Error(PCM_ERR_ARG) on anything else.
std::vector<int> parse_stop_signals(const std::string& text);

// The name of a signal as a user writes it ("SIGTERM").
std::string signal_name(int sig);

namespace stop_signals {
// Installs the handler for each of these signals whose disposition is still the default (one
// the application or the MPI handles, or ignores, is left alone). Once per process.
void install(const std::vector<int>& signals);
// The signal received and not yet taken up (0: none). Async-signal-safe reads only.
int pending();
// The stop it asked for is being carried out: a later signal is only recorded.
void taken_up();
// The signal is not a stop: what it does without PCM's handler (the process usually ends).
void default_action(int sig);
}  // namespace stop_signals

}  // namespace pcm::lib
