// The progress rules behind detect_progress and detect_crash, one unit each,
// and what they share (internal to scoutd/detect/). Each rule reads the live
// ranks' evidence and returns drafts; none touches MPI, SQLite or a thread.
//   rule_end.cpp           crash and abort: end events, first deaths
//   rule_gpu.cpp           gpu_hang: a GPU that has not begun what the others wait inside
//   rule_wait_for.cpp      the wait-for graph: sinks (stall, hang, I/O, GPU) and deadlock cycles
//   rule_consensus.cpp     collective positions: behind, divergence, inconclusive hangs
//   rule_direct_stall.cpp  a process stopped for the threshold, on direct evidence
//   rule_threads.cpp       threaded programs: a hang or divergence in one communicator
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "scoutd/detect/progress_detector.hpp"

namespace scout::scoutd::rules {

// --- the rules ---------------------------------------------------------------
std::optional<VerdictDraft> detect_end_event(const std::vector<RankEvidence>& ranks, const DetectorOptions& opt);
// A rank that exited (exit() or a return from main) before MPI_Finalize
// while other ranks waited in MPI for it: `abort` (the application ended
// the job, so no drain), at any number of ranks, two included. Decided once
// the exit is death_margin_s old and a rank it left waiting was killed since
// (the launcher's teardown), or kExitWait_s old and one is still stuck
// there; at the observers' stop on what there is. Every rank exiting names
// nobody. *pending while it may still come.
std::optional<VerdictDraft> detect_exit(const std::vector<RankEvidence>& ranks, const DetectorOptions& opt,
                                        bool* pending);
inline constexpr double kExitWait_s = 1.0;
// Deaths this soon after an exit are the teardown's, never a crash.
inline constexpr double kExitTeardown_s = 5.0;
// pending: a GPU holds the majority's operation unbegun, its own clock still
// under the threshold (no host rule may name it first).
std::vector<VerdictDraft> detect_gpu(const std::vector<const RankEvidence*>& live, const DetectorOptions& opt,
                                     bool& pending);
// GPU ranks: a GPU that holds work (issued, not begun, the process running),
// and one that did so for the threshold; whether the host rules may still
// wait for a held GPU's own clock (the waiting hosts stuck under twice the
// threshold).
bool gpu_holding(const RankEvidence& e);
bool gpu_stopped(const RankEvidence& e, const DetectorOptions& opt);
bool may_defer(const std::vector<const RankEvidence*>& waiting, const DetectorOptions& opt);
// pending: a sink is a GPU holding work, its own clock under the threshold
// (the consensus rule must not name it `hang` either).
std::vector<VerdictDraft> detect_wait_for(const std::vector<const RankEvidence*>& live, const DetectorOptions& opt,
                                          bool& pending);
std::vector<VerdictDraft> detect_consensus(const std::vector<const RankEvidence*>& live, const DetectorOptions& opt);
// Threaded programs (record version 8): each communicator orders its own
// collectives, so one thread that never enters its communicator's collective
// k hangs the members waiting inside k while the rank's other threads keep
// it moving (the rules above see progress and say nothing). Per
// communicator: when a strict majority of its members wait inside its
// collective k (their counts still for the threshold), a member whose
// process runs and that has not entered k is named `hang`; with none
// behind, a member inside k with a fingerprint the majority does not share
// is named `divergence`. The verdict says what each thread is in.
std::vector<VerdictDraft> detect_threads(const std::vector<const RankEvidence*>& live, const DetectorOptions& opt);
// A rank that waits, for the threshold, in a point-to-point call whose
// every named peer has finalized (not an any-source wait): no message can
// come. Named `hang`, the waiting ranks attributed, whatever
// the number of ranks left (one rank left has no majority to ask).
std::vector<VerdictDraft> detect_left_peers(const std::vector<RankEvidence>& ranks,
                                            const std::vector<const RankEvidence*>& live, const DetectorOptions& opt);
// Appends a stall for each stopped process no draft in `out` names yet.
void add_direct_stalls(const std::vector<const RankEvidence*>& live, const DetectorOptions& opt,
                       std::vector<VerdictDraft>& out);

// --- what they share -----------------------------------------------------------
// A verdict names its culprits in full; the ranks around them (those that
// wait, their wait lines, their positions) are bounded, so that a verdict at
// 100,000 ranks is a ledger row of kilobytes: at most kListMax of them, and
// `<name>_count` says how many there were.
constexpr std::size_t kListMax = 64;

nlohmann::json rank_brief(const RankEvidence& e);
nlohmann::json gpu_brief(const RankEvidence& e);  // rank_brief and its GPU's counters
std::vector<std::string> hosts_of(const std::vector<const RankEvidence*>& v);
std::vector<int> ranks_of(const std::vector<const RankEvidence*>& v);
bool is_stalled_state(char s);  // T, t, D or Z
void put_list(nlohmann::json& ev, const std::string& name, std::vector<int> ranks);
// Wait lines, in rank order; when they must be cut, the culprits' lines
// (first = true) are kept before the others.
void put_lines(nlohmann::json& ev, const std::string& name, std::vector<std::pair<bool, std::string>> lines);
// A stall's incident: the culprits and where each stopped.
std::string stall_key(const std::vector<const RankEvidence*>& group);
std::string peers_text(const std::vector<int>& peers, bool more);
// "rank 0 waits in MPI_Recv for 1 (12.3 s)"; "rank 1 is outside MPI, process stopped (T)".
std::string wait_line(const RankEvidence& e);
std::string key_of(const std::string& kind, const std::vector<int>& ranks, std::uint64_t pos);
const char* signal_name(long long sig);
// The one way a rule starts a draft: kind and status, the culprits' ranks
// (sorted) and hosts; the rule adds the evidence and the incident key.
VerdictDraft draft(c3::VerdictKind kind, c3::VerdictStatus status, const std::vector<const RankEvidence*>& culprits,
                   std::string key = {}, nlohmann::json evidence = nlohmann::json::object());

}  // namespace scout::scoutd::rules
