// Where scout keeps things by default: the ledger and the per-job runtime
// directory that holds the scoutds' control sockets.
#pragma once

#include <string>
#include <vector>

namespace scout::common {

// --ledger > $SCOUT_LEDGER > ${XDG_STATE_HOME:-$HOME/.local/state}/scout/ledger.db
std::string default_ledger_path();
// $SCOUT_RUNTIME_DIR > $XDG_RUNTIME_DIR/scout > /tmp/scout-<uid>
std::string default_runtime_root();
std::string job_runtime_dir(const std::string& root, const std::string& job_id);
std::string control_socket_path(const std::string& job_dir, const std::string& node);
// Whether a file name is a scoutd control socket's (scoutd.<node>.sock).
bool is_control_socket_name(const std::string& name);
// The control sockets in a job's runtime directory, sorted (none if absent).
std::vector<std::string> list_control_sockets(const std::string& job_dir);

}  // namespace scout::common
