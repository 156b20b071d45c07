! readme_loop.f90 — readme_loop.c through the module pcm (in docs/user/fortran.md; built and run as a test).
program readme_loop
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: error_unit
  use mpi_f08
  use pcm
  implicit none
  type(MPI_Comm) :: world
  type(pcm_dist_array), pointer :: x ! x%d: this process's units (of 1000, 4 doubles each)
  integer(c_int), target :: it = 0   ! TARGET: libpcm keeps its address
  integer(c_int) :: rank, nprocs, s
  integer(c_long) :: first = -1, units, off

  world = MPI_COMM_WORLD
  s = mpi_pcm_init()
  if (s == PCM_SUCCESS) s = pcm_init(world)
  if (s /= PCM_SUCCESS) then
    write (error_unit, '(2a)') 'pcm: ', pcm_last_error()
    s = pcm_finalize(MPI_COMM_NULL)
    error stop 1
  end if
  call MPI_Comm_rank(world, rank)
  call MPI_Comm_size(world, nprocs)
  s = pcm_register_dist('x', x, PCM_DOUBLE)    ! moved by every reconfiguration
  s = pcm_register_value('it', it)             ! the same on every process
  if (pcm_process_status() == PCM_STARTED) then ! spawned processes receive theirs
    s = pcm_dist_create(PCM_BLOCK, 1000_c_long, 4_c_long, 0_c_long, 0_c_long, nprocs, x%dist)
    s = pcm_dist_alloc(x, rank)
    x%d = 1
  end if
  if (pcm_resume(world) /= PCM_SUCCESS) error stop 1
  do while (it < 100)
    s = pcm_adapt(world) ! collective; cheap when nothing is pending
    if (s == PCM_RETIRED) then
      s = pcm_exit()
      stop
    end if
    if (s < 0) exit      ! the same error on every process
    x%d = x%d / 2        ! x%d follows every reconfiguration; compute and communicate on world
    it = it + 1
  end do
  call MPI_Comm_rank(world, rank)
  s = pcm_dist_segment(x%dist, rank, 0_c_long, first, units, off)
  if (first == 0) print '(a, es11.5)', 'x[0] = ', x%d(off + 1)
  if (pcm_finalize(world) /= PCM_SUCCESS) error stop 1
end program readme_loop
