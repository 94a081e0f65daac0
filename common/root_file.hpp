// Reading a small file that only root may have written (root's own records
// next to the site ledger, test-only fault files): opened without following
// a link and without blocking (a FIFO planted there never hangs root),
// taken only when it is a regular file owned by root and smaller than
// `max_bytes`. nullopt otherwise, with `why`. Trailing blanks and newlines
// are dropped.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace scout::common {

std::optional<std::string> read_root_file(const std::string& path, std::size_t max_bytes, std::string* why = nullptr);

}  // namespace scout::common
