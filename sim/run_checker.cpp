// Invariants on every simulated run (see run_checker.hpp).
#include "sim/run_checker.hpp"

#include <fmt/format.h>

namespace scout::sim {

void RunChecker::fail(std::string what) {
  if (violations_.size() < 100) violations_.push_back(std::move(what));
}

void RunChecker::commit(double t, int member, bool own, const std::string& vkey, const std::string& key,
                        const std::string& kind, std::size_t side_alive, double side_changed_at, double round_began) {
  ++checks_;
  if (own && 2 * side_alive <= static_cast<std::size_t>(members_) && side_changed_at < round_began)
    fail(fmt::format("majority: member {} committed {} ({}) at {:.3f} s on a side of {} of {} members since {:.3f} s",
                     member, vkey, key, t, side_alive, members_, side_changed_at));
  holders_[vkey].insert(member);
  if (!seen_.insert(vkey).second) return;  // a replica of a verdict already checked
  if (kind != "observer_lost" && (first_fault_s_ < 0 || t < first_fault_s_))
    fail(fmt::format("healthy: {} ({}) committed at {:.3f} s by member {}, before any fault of the job", kind, key, t,
                     member));
  key_of_[vkey] = key;
  auto it = open_by_key_.find(key);
  bool knowable = false;
  if (it != open_by_key_.end())
    for (int h : holders_[it->second]) knowable = knowable || h == member || !reachable || reachable(member, h);
  if (knowable)
    fail(fmt::format("once: {} committed again at {:.3f} s by member {} as {} while {} is open", key, t, member, vkey,
                     it->second));
  open_by_key_[key] = vkey;
}

void RunChecker::resolution(const std::string& vkey) {
  auto k = key_of_.find(vkey);
  if (k == key_of_.end()) return;
  auto it = open_by_key_.find(k->second);
  if (it != open_by_key_.end() && it->second == vkey) open_by_key_.erase(it);
}

void RunChecker::round(double t, int member, bool root, bool gather, const Book& book) {
  ++checks_;
  if (root) {
    if (!have_root_ || !(book == root_book_)) root_book_before_ = have_root_ ? root_book_ : book;
    root_book_ = book;
    have_root_ = true;
    behind_[member] = 0;
    return;
  }
  if (!have_root_) return;
  if (book == root_book_ || book == root_book_before_) {
    behind_[member] = 0;
    return;
  }
  if (gather) return;  // behind since a trigger round at most: counted there
  if (++behind_[member] == kPeriodsBehind)
    fail(fmt::format("books: member {} at {:.3f} s holds {} verdicts ({} resolved), the root {} ({}), "
                     "for {} periods",
                     member, t, book.verdicts, book.resolved, root_book_.verdicts, root_book_.resolved,
                     behind_[member]));
}

}  // namespace scout::sim
