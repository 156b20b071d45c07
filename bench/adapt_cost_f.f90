! adapt_cost_f.f90 — benchmark: the cost per call of pcm_adapt from Fortran (the module pcm)
! against PCM_Adapt called from C (adapt_cost_c.c), in the same run and the same world, with
! one distributed array and one value registered (so the module's check of its arrays runs).
! Usage: mpiexec -n N adapt_cost_f [CALLS [REPS]] under a pcmd; one line per variant and rep.
program adapt_cost_f
  use, intrinsic :: iso_c_binding
  use mpi_f08
  use pcm
  implicit none
  interface
    real(c_double) function c_loop(comm, calls) bind(C, name="adapt_cost_c_loop")
      import :: c_int, c_long, c_double
      integer(c_int), intent(in) :: comm
      integer(c_long), value :: calls
    end function
  end interface
  type(MPI_Comm) :: world
  type(pcm_dist_array), pointer :: a
  integer(c_int), target :: it = 0
  integer(c_long) :: calls = 200000, i
  integer :: rank, nprocs, rep, reps = 5, v
  character(len=32) :: arg
  double precision :: t(2), t0
  character(len=*), parameter :: names(2) = ['pcm_adapt (Fortran)', 'PCM_Adapt (C)      ']
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) calls
  end if
  if (command_argument_count() >= 2) then
    call get_command_argument(2, arg)
    read (arg, *) reps
  end if
  world = MPI_COMM_WORLD
  if (mpi_pcm_init() /= PCM_SUCCESS .or. pcm_init(world) /= PCM_SUCCESS) then
    write (0, '(a)') 'adapt_cost_f: '//pcm_last_error()
    error stop 1
  end if
  call MPI_Comm_rank(world, rank)
  call MPI_Comm_size(world, nprocs)
  if (pcm_register_dist('a', a, PCM_DOUBLE) /= PCM_SUCCESS .or. &
      pcm_dist_create(PCM_BLOCK, 64_c_long, 8_c_long, 1_c_long, 1_c_long, nprocs, a%dist) /= &
      PCM_SUCCESS .or. pcm_dist_alloc(a, rank) /= PCM_SUCCESS .or. &
      pcm_register_value('it', it) /= PCM_SUCCESS .or. pcm_resume(world) /= PCM_SUCCESS) then
    write (0, '(a)') 'adapt_cost_f: '//pcm_last_error()
    error stop 1
  end if
  do rep = 0, reps - 1
    call MPI_Barrier(world)
    t0 = MPI_Wtime()
    do i = 1, calls
      if (pcm_adapt(world) /= PCM_NONE) error stop 'unexpected reconfiguration'
    end do
    t(1) = MPI_Wtime() - t0
    call MPI_Barrier(world)
    t(2) = c_loop(world%MPI_VAL, calls)
    if (t(2) < 0) error stop 'unexpected reconfiguration'
    call MPI_Allreduce(MPI_IN_PLACE, t, 2, MPI_DOUBLE_PRECISION, MPI_MAX, world)
    if (rank == 0) then
      do v = 1, 2
        write (*, '(a,i0,a,i0,1x,a,1x,f6.3,a)') 'adapt_cost: rep ', rep, ' procs ', nprocs, &
          names(v), t(v) / calls * 1d6, ' us/call'
      end do
      flush (6)
    end if
  end do
  if (pcm_finalize(world) /= PCM_SUCCESS) error stop 1
end program adapt_cost_f
