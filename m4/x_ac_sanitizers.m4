# X_AC_SANITIZERS: --enable-sanitizers builds everything with ASan + UBSan.
AC_DEFUN([X_AC_SANITIZERS], [
  AC_ARG_ENABLE([sanitizers],
    [AS_HELP_STRING([--enable-sanitizers], [build with AddressSanitizer and UndefinedBehaviorSanitizer])],
    [], [enable_sanitizers=no])
  SANITIZER_FLAGS=
  AS_IF([test "x$enable_sanitizers" = xyes],
    [SANITIZER_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"])
  AC_SUBST([SANITIZER_FLAGS])
  AM_CONDITIONAL([SANITIZERS], [test "x$enable_sanitizers" = xyes])
])
