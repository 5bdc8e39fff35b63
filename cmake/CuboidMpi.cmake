# MPI is optional: it only splits `cuboid sweep` over the ranks of an mpirun. With
# CUBOID_MPI=AUTO the MPI front end is built when an MPI C++ library is found (Debian:
# libopenmpi-dev); ON makes its absence an error; OFF builds the program without it, and a
# cuboid started under mpirun then says so and stops.
set(CUBOID_MPI_ENABLED OFF)
set(CUBOID_MPI_REASON "CUBOID_MPI=OFF")
if(NOT CUBOID_MPI STREQUAL "OFF")
  find_package(MPI COMPONENTS CXX)
  if(MPI_CXX_FOUND)
    set(CUBOID_MPI_ENABLED ON)
    set(CUBOID_MPI_REASON "MPI ${MPI_CXX_VERSION}, mpiexec ${MPIEXEC_EXECUTABLE}")
  else()
    set(CUBOID_MPI_REASON "no MPI C++ library found (Debian: libopenmpi-dev)")
  endif()
  if(CUBOID_MPI STREQUAL "ON" AND NOT CUBOID_MPI_ENABLED)
    message(FATAL_ERROR "CUBOID_MPI=ON but: ${CUBOID_MPI_REASON}")
  endif()
endif()
