# X_AC_BOOST_ASIO: require Boost.Asio headers (header-only use).
AC_DEFUN([X_AC_BOOST_ASIO], [
  AC_CHECK_HEADER([boost/asio.hpp], [],
    [AC_MSG_ERROR([Boost.Asio headers not found: install libboost-dev (scripts/install-deps)])])
])
