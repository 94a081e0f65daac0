// Runs work in a short-lived child process with a deadline. The GPU replay
// runs there: a hung kernel (cudaStreamSynchronize has no deadline) or a
// sticky CUDA error (it poisons the context for good) then costs a child,
// never scoutd's replay thread or its context; and CUDA is never
// initialised in scoutd itself, so every child starts clean.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace scout::replay {

// fork(); the child runs fn and sends its string back through a pipe, then
// _exit(0). The parent waits at most deadline_s: then the child is killed
// (SIGKILL) and reaped. Returns the string, or nullopt with `error` set: the
// deadline passed, the child died (its signal or status), it could not be
// started. Safe to call from any thread of a process that has not
// initialised CUDA.
std::optional<std::string> run_in_child(const std::function<std::string()>& fn, double deadline_s,
                                        std::string& error);

}  // namespace scout::replay
