# X_AC_CXX20: the compiler must accept -std=c++20 (g++ 12 or newer).
AC_DEFUN([X_AC_CXX20], [
  AC_MSG_CHECKING([whether $CXX accepts -std=c++20])
  save_CXXFLAGS="$CXXFLAGS"
  CXXFLAGS="$CXXFLAGS -std=c++20"
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <span>
#include <concepts>]], [[std::span<int> s; return (int)s.size();]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no]); AC_MSG_ERROR([a C++20 compiler is required (g++ 12)])])
  CXXFLAGS="$save_CXXFLAGS"
  CXX_STD="-std=c++20"
  AC_SUBST([CXX_STD])
])
