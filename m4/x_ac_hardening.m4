# X_AC_HARDENING: warnings and hardening flags used for every target;
# --enable-werror turns warnings into errors (CI uses it).
AC_DEFUN([X_AC_HARDENING], [
  AC_ARG_ENABLE([werror],
    [AS_HELP_STRING([--enable-werror], [treat compiler warnings as errors])],
    [], [enable_werror=no])
  WARN_FLAGS="-Wall -Wextra"
  AS_IF([test "x$enable_werror" = xyes], [WARN_FLAGS="$WARN_FLAGS -Werror"])
  HARDEN_CPPFLAGS="-D_FORTIFY_SOURCE=2"
  HARDEN_CXXFLAGS="-fstack-protector-strong"
  HARDEN_LDFLAGS="-Wl,-z,relro,-z,now"
  AC_SUBST([WARN_FLAGS])
  AC_SUBST([HARDEN_CPPFLAGS])
  AC_SUBST([HARDEN_CXXFLAGS])
  AC_SUBST([HARDEN_LDFLAGS])
])
