// The datatype and reduction codes the probe records for a collective's
// arguments (see probe_state.hpp and libc3/rank_record.hpp): a predefined
// datatype's index, a derived one's size; a predefined op's index.
#include "probe/probe_state.hpp"

namespace scout::probe {

namespace {
std::uint64_t datatype_code_slow(MPI_Datatype t) noexcept {
  static const MPI_Datatype kTypes[] = {
      MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_BYTE, MPI_SHORT, MPI_UNSIGNED_SHORT,
      MPI_INT, MPI_UNSIGNED, MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_LONG, MPI_UNSIGNED_LONG_LONG,
      MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T,
      MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T, MPI_C_BOOL, MPI_FLOAT_INT,
      MPI_DOUBLE_INT, MPI_LONG_INT, MPI_2INT, MPI_SHORT_INT, MPI_AINT, MPI_OFFSET, MPI_COUNT,
      MPI_WCHAR, MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX};
  for (std::uint64_t i = 0; i < sizeof kTypes / sizeof kTypes[0]; ++i)
    if (kTypes[i] == t) return i + 1;
  int size = 0;  // derived: by size
  if (t != MPI_DATATYPE_NULL) PMPI_Type_size(t, &size);
  return 0x10000000ULL | static_cast<std::uint64_t>(size);
}
}  // namespace

std::uint64_t datatype_code(MPI_Datatype t, std::uint64_t* size) noexcept {
  // Training loops call the same collective over and over: the last, per thread.
  static SCOUT_TLS MPI_Datatype last = MPI_DATATYPE_NULL;
  static SCOUT_TLS std::uint64_t last_code = 0, last_size = 0;
  if (t == last && last_code != 0) return size ? (*size = last_size, last_code) : last_code;
  const std::uint64_t code = datatype_code_slow(t);
  int bytes = 0;
  if (t != MPI_DATATYPE_NULL && PMPI_Type_size(t, &bytes) != MPI_SUCCESS) bytes = 0;
  const std::uint64_t n = static_cast<std::uint64_t>(bytes > 0 ? bytes : 0);
  if (size) *size = n;
  if (code < 0x10000000ULL) last = t, last_size = n, last_code = code;  // predefined: never change
  return code;
}

std::uint64_t op_code(MPI_Op op) noexcept {
  static const MPI_Op kOps[] = {MPI_MAX, MPI_MIN, MPI_SUM, MPI_PROD, MPI_LAND, MPI_BAND,
                                MPI_LOR, MPI_BOR, MPI_LXOR, MPI_BXOR, MPI_MAXLOC, MPI_MINLOC,
                                MPI_REPLACE, MPI_NO_OP};
  if (op == MPI_OP_NULL) return 0;
  for (std::uint64_t i = 0; i < sizeof kOps / sizeof kOps[0]; ++i)
    if (kOps[i] == op) return i + 1;
  return 0xff;  // user-defined
}

}  // namespace scout::probe
