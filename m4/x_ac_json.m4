# X_AC_JSON: require nlohmann/json (header-only) for scoutd, scoutctl and the ledger.
AC_DEFUN([X_AC_JSON], [
  AC_CHECK_HEADER([nlohmann/json.hpp], [],
    [AC_MSG_ERROR([nlohmann/json not found: install nlohmann-json3-dev (scripts/install-deps)])])
])
