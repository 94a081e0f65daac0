# X_AC_DOCTEST: require doctest for the unit tests.
AC_DEFUN([X_AC_DOCTEST], [
  AC_CHECK_HEADER([doctest/doctest.h], [],
    [AC_MSG_ERROR([doctest not found: install doctest-dev (scripts/install-deps)])])
])
