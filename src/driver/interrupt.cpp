#include "driver/interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace attnbench {

namespace {

std::atomic<int> g_signals{0};
std::atomic<bool> g_abandon{false};
std::atomic<bool> g_writing{false};

// Dekker-style hand-off with WriteSection: whichever side sees the other's flag defers,
// so a process never exits in the middle of a section.
void on_signal(int) {
  if (g_signals.fetch_add(1) == 0) {
    const char note[] = "\nattnbench: stopping after the current point (signal again to abandon it)\n";
    (void)!::write(STDERR_FILENO, note, sizeof note - 1);
    return;
  }
  g_abandon = true;
  if (!g_writing) _exit(kExitInterrupted);
}

}  // namespace

void install_interrupt_handlers() {
  g_signals = 0;
  g_abandon = false;
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool stop_requested() { return g_signals != 0; }

WriteSection::WriteSection() {
  g_writing = true;
  if (g_abandon) _exit(kExitInterrupted);
}

WriteSection::~WriteSection() {
  g_writing = false;
  if (g_abandon) _exit(kExitInterrupted);
}

}  // namespace attnbench
