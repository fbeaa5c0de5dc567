/* MPI constants whose Rust bindings depend on how an implementation's mpi.h declares them
 * (Open MPI in an anonymous enum, MPICH in a named one), read here through the compiler. */
#include <mpi.h>

int lgate_mpi_t_bind_no_object(void) { return MPI_T_BIND_NO_OBJECT; }

/* The MPI implementation and version the program was compiled against. */
#define LGATE_STR2(x) #x
#define LGATE_STR(x) LGATE_STR2(x)
const char *lgate_mpi_built_with(void) {
#if defined(OPEN_MPI) && defined(OMPI_MAJOR_VERSION)
    return "Open MPI " LGATE_STR(OMPI_MAJOR_VERSION) "." LGATE_STR(OMPI_MINOR_VERSION) "." LGATE_STR(OMPI_RELEASE_VERSION);
#elif defined(I_MPI_VERSION)
    return "Intel MPI " I_MPI_VERSION;
#elif defined(MVAPICH2_VERSION)
    return "MVAPICH2 " MVAPICH2_VERSION;
#elif defined(CRAY_MPICH_VERSION)
    return "Cray MPICH " LGATE_STR(CRAY_MPICH_VERSION);
#elif defined(MPICH_VERSION)
    return "MPICH " MPICH_VERSION;
#else
    return "MPI " LGATE_STR(MPI_VERSION) "." LGATE_STR(MPI_SUBVERSION);
#endif
}
