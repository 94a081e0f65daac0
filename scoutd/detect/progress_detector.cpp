// Progress and crash detectors (see progress_detector.hpp): the rules run in
// order, each in its own unit (progress_rules.hpp).
#include "scoutd/detect/progress_detector.hpp"

#include <algorithm>

#include "scoutd/detect/progress_rules.hpp"

namespace scout::scoutd {

std::vector<VerdictDraft> detect_progress(const std::vector<RankEvidence>& ranks,
                                          const DetectorOptions& opt) {
  using namespace rules;
  std::vector<const RankEvidence*> live;
  for (auto& e : ranks)
    if (e.attached && e.alive && !e.finalized) live.push_back(&e);
  std::vector<VerdictDraft> out = detect_left_peers(ranks, live, opt);
  if (out.empty() && live.size() >= 2) {
    bool gpu_pending = false;
    out = detect_gpu(live, opt, gpu_pending);
    if (out.empty() && !gpu_pending) out = detect_wait_for(live, opt, gpu_pending);
    if (out.empty() && !gpu_pending) out = detect_consensus(live, opt);
    if (out.empty() && !gpu_pending) out = detect_threads(live, opt);
  }
  bool inconclusive_only = std::all_of(out.begin(), out.end(), [](auto& d) {
    return d.status == c3::VerdictStatus::kInconclusive;
  });
  if (inconclusive_only) {
    std::vector<VerdictDraft> direct;
    add_direct_stalls(live, opt, direct);
    if (!direct.empty()) return direct;  // a named rank beats "nobody stands out"
  } else {
    add_direct_stalls(live, opt, out);
  }
  return out;
}

}  // namespace scout::scoutd
