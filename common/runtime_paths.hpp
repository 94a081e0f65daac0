// Where scout keeps things by default: the ledger and the per-job runtime
// directory that holds the scoutds' control sockets; how root (the SPANK
// plugin in slurmstepd) makes a job's directory for the job's user in a
// directory other users may write, and the LD_PRELOAD a watched step gets.
// No libfmt and no Slurm calls: the SPANK plugin compiles this too.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace scout::common {

// --ledger > $SCOUT_LEDGER > ${XDG_STATE_HOME:-$HOME/.local/state}/scout/ledger.db
std::string default_ledger_path();
// $SCOUT_RUNTIME_DIR > $XDG_RUNTIME_DIR/scout > /tmp/scout-<uid>
std::string default_runtime_root();
// scoutctl's runtime root when no --runtime-dir names one: as above for an
// ordinary user; root has no /tmp default (any user can make /tmp/scout-0
// first and answer there), so for uid 0 only $SCOUT_RUNTIME_DIR or
// $XDG_RUNTIME_DIR/scout, else nullopt with `why` naming what was expected.
std::optional<std::string> control_runtime_root(std::string* why = nullptr);
std::string job_runtime_dir(const std::string& root, const std::string& job_id);
std::string control_socket_path(const std::string& job_dir, const std::string& node);
// Whether a file name is a scoutd control socket's (scoutd.<node>.sock).
bool is_control_socket_name(const std::string& name);
// The control sockets in a job's runtime directory, sorted (none if absent).
std::vector<std::string> list_control_sockets(const std::string& job_dir);

// Opens the absolute `path` as a directory only root controls: each
// component opened without following a link (O_NOFOLLOW|O_DIRECTORY, from
// "/"), owned by root, and writable by no one else unless sticky (1777: no
// one else may then move or replace root's entries). With `create_last` a
// missing last component is made root's 0755. Returns the open descriptor
// (O_CLOEXEC), or -1 with `why` naming the component and what was expected.
int open_trusted_dir(const std::string& path, bool create_last, std::string* why = nullptr);

// Root: makes `parent`/`name` (the job's runtime or spool directory) a
// directory of uid:gid, mode 0700, that no other user made or can have
// swapped in. `parent` is opened with open_trusted_dir (made 0755 when
// absent) and everything after is relative to that descriptor. A directory
// already there that is uid's, 0700 (another step of the job made it) is
// kept. Otherwise a fresh one is made under a random name (getrandom),
// checked on its own descriptor, given to uid:gid, and put in place in one
// rename: RENAME_NOREPLACE when the name is free, RENAME_EXCHANGE over
// whatever else is there (a link, a file, another user's directory), so no
// moment exists in which someone else's name stands there and root's does
// not. What was exchanged away is removed (not a directory) or left beside,
// under a random name (.scout-refused.NAME.UID.RANDOM), and said in `note`
// ("PATH was created by uid U before this job (of uid J; ...) and ...").
// Returns false with `why` when the directory could not be made.
bool make_job_directory(const std::string& parent, const std::string& name, uid_t uid, gid_t gid,
                        std::string* note = nullptr, std::string* why = nullptr);

// The longest LD_PRELOAD value Slurm sets in a step's environment
// (spank_setenv: the name, '=', the value and its NUL under 32 pages;
// a longer one is silently not set) and an exec'd program could receive.
inline constexpr std::size_t kMaxLdPreloadBytes = 32 * 4096 - sizeof("LD_PRELOAD=") - 1;
// LD_PRELOAD for a watched step's tasks: each of `probes` that `user` does
// not already name (ld.so separates entries by ':' or ' '), first, so that
// the probe's MPI functions are the ones the program calls, then the user's
// value kept whole, of any length. nullopt with `why` when the result would
// be longer than kMaxLdPreloadBytes (the user's value is then not touched).
std::optional<std::string> compose_ld_preload(const std::string& user, const std::vector<std::string>& probes,
                                              std::string* why = nullptr);

}  // namespace scout::common
