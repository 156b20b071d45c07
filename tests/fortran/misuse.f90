! misuse.f90 — the module pcm refuses a registered array that the program allocated itself: its
! pcm_resume returns PCM_ERR_ARG on every process, with a message naming the array.
program misuse
  use, intrinsic :: iso_c_binding
  use mpi_f08
  use pcm
  implicit none
  type(MPI_Comm) :: world
  type(pcm_dist_array), pointer :: a
  integer(c_int) :: rank, nprocs, rc
  if (mpi_pcm_init() /= PCM_SUCCESS) error stop 1
  world = MPI_COMM_WORLD
  if (pcm_init(world) /= PCM_SUCCESS) error stop 1
  call MPI_Comm_rank(world, rank)
  call MPI_Comm_size(world, nprocs)
  if (pcm_register_dist('a', a, PCM_DOUBLE) /= PCM_SUCCESS) error stop 1
  if (pcm_dist_create(PCM_BLOCK, 40_c_long, 3_c_long, 1_c_long, 0_c_long, nprocs, a%dist) /= &
      PCM_SUCCESS) error stop 1
  if (pcm_dist_alloc(a, rank) /= PCM_SUCCESS) error stop 1
  if (pcm_dist_alloc(a, rank) /= PCM_ERR_STATE) error stop 'a second pcm_dist_alloc was accepted'
  ! The mistake, on rank 1 only: the other processes must learn of it too.
  if (rank == 1 .or. nprocs == 1) allocate (a%d(60))
  rc = pcm_resume(world)
  if (rc /= PCM_ERR_ARG) error stop 'pcm_resume accepted a re-allocated registered array'
  if (rank == 1 .and. index(pcm_last_error(), 'registered array "a"') == 0) &
    error stop 'no message naming the array'
  if (rank == 0) print '(a)', 'misuse: ok: '//pcm_last_error()
  rc = pcm_finalize(world)
end program misuse
