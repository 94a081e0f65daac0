# X_AC_SLURM: SPANK headers, and where scout.so is installed.
# --with-slurm-plugindir=DIR overrides the default, which is the directory
# Slurm loads plugins from: <dir of libslurm.so>/slurm-wlm (Debian) or
# <dir of libslurm.so>/slurm.
AC_DEFUN([X_AC_SLURM], [
  AC_CHECK_HEADER([slurm/spank.h], [],
    [AC_MSG_ERROR([Slurm SPANK headers not found: install libslurm-dev (scripts/install-deps)])])
  AC_ARG_WITH([slurm-plugindir],
    [AS_HELP_STRING([--with-slurm-plugindir=DIR], [install scout.so here (default: from libslurm)])],
    [SLURM_PLUGINDIR="$withval"],
    [libslurm=`$CXX -print-file-name=libslurm.so`
     sdir=$(cd "$(dirname "$libslurm")" 2>/dev/null && pwd)
     if test -d "$sdir/slurm-wlm"; then SLURM_PLUGINDIR="$sdir/slurm-wlm"
     elif test -d "$sdir/slurm"; then SLURM_PLUGINDIR="$sdir/slurm"
     else SLURM_PLUGINDIR='${libdir}/slurm'; fi])
  AC_MSG_CHECKING([where to install the SPANK plugin])
  AC_MSG_RESULT([$SLURM_PLUGINDIR])
  AC_SUBST([SLURM_PLUGINDIR])
])
