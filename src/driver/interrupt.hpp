// SIGINT / SIGTERM during a sweep: the first signal asks the sweep to stop after the
// current point; a second abandons the point at once (exit 130), except while a
// WriteSection is open, which is let finish first, so that files never hold half a point.
#pragma once

namespace attnbench {

// Exit code of a sweep stopped by a signal.
inline constexpr int kExitInterrupted = 130;

// Installs the handlers and clears any earlier request.
void install_interrupt_handlers();

// True once a first signal has arrived.
bool stop_requested();

// While alive, a second signal does not end the process; it ends when the section closes.
// Works whichever thread (e.g. an OpenMP worker) the signal is delivered to.
class WriteSection {
 public:
  WriteSection();
  ~WriteSection();
  WriteSection(const WriteSection&) = delete;
  WriteSection& operator=(const WriteSection&) = delete;
};

}  // namespace attnbench
