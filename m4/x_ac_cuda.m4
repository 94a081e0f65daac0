# X_AC_CUDA: GPU replay recipes, built when nvcc is found.
#   --with-cuda[=DIR]  require CUDA (DIR: toolkit root, default /usr/local/cuda)
#   --without-cuda     do not build them
# Default: build them when DIR/bin/nvcc exists. Sets NVCC, CUDA_CPPFLAGS,
# CUDA_LIBS (static cudart: no run-time path to get right), NVCC_GENCODE,
# CUDA_LIBDIR, the HAVE_CUDA conditional and define, and HAVE_NCCL.
AC_DEFUN([X_AC_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@], [build the GPU replay recipes (default: if nvcc is found)])],
    [], [with_cuda=check])
  AC_ARG_VAR([NVCC_GENCODE], [nvcc -gencode flags for the GPU recipes])
  have_cuda=no
  have_nccl=no
  if test "x$with_cuda" != xno; then
    cuda_dir=/usr/local/cuda
    if test "x$with_cuda" != xyes && test "x$with_cuda" != xcheck; then cuda_dir=$with_cuda; fi
    AC_MSG_CHECKING([for nvcc in $cuda_dir])
    if test -x "$cuda_dir/bin/nvcc" && test -f "$cuda_dir/include/cuda_runtime.h"; then
      have_cuda=yes
      NVCC="$cuda_dir/bin/nvcc"
      CUDA_CPPFLAGS="-I$cuda_dir/include"
      cuda_lib=$cuda_dir/lib64
      test -d "$cuda_lib" || cuda_lib=$cuda_dir/lib
      CUDA_LIBS="-L$cuda_lib -lcudart_static -ldl -lrt -lpthread"
      CUDA_LIBDIR=$cuda_lib
      if test -f "$cuda_dir/include/nccl.h" && test -f "$cuda_lib/libnccl.so" && test -f "$cuda_lib/stubs/libcuda.so"; then
        have_nccl=yes
      fi
      if test -z "$NVCC_GENCODE"; then
        NVCC_GENCODE="-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90"
      fi
    fi
    AC_MSG_RESULT([$have_cuda])
    if test "x$have_cuda" = xno && test "x$with_cuda" != xcheck; then
      AC_MSG_ERROR([--with-cuda: no nvcc and cuda_runtime.h under $cuda_dir; give --with-cuda=DIR or --without-cuda])
    fi
  fi
  if test "x$have_cuda" = xyes; then
    AC_DEFINE([HAVE_CUDA], [1], [GPU replay recipes are built])
  fi
  AM_CONDITIONAL([HAVE_CUDA], [test "x$have_cuda" = xyes])
  # The NCCL probe, nccl_train and the test stand-ins: nccl.h, libnccl.so
  # and the driver stub beside the toolkit.
  AC_MSG_CHECKING([for NCCL headers and libraries in the CUDA toolkit])
  AC_MSG_RESULT([$have_nccl])
  AM_CONDITIONAL([HAVE_NCCL], [test "x$have_nccl" = xyes])
  AC_SUBST([CUDA_LIBDIR])
  AC_SUBST([NVCC])
  AC_SUBST([CUDA_CPPFLAGS])
  AC_SUBST([CUDA_LIBS])
])
