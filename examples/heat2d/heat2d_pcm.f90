! heat2d_pcm.f90 — heat2d_plain.f90 made malleable with the module pcm's register-once calls.
program heat2d_pcm
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int64, output_unit, error_unit
  use mpi_f08
  use pcm
  use heat2d_f
  implicit none
  type(heat2d_options) :: opt
  type(MPI_Comm) :: world
  type(pcm_dist_array), pointer :: grid
  type(pcm_halo) :: halo
  integer(c_int), target :: it = 0, reconfigs = 0
  integer(c_long), allocatable :: seg(:, :) ! per segment: first column, columns, offset
  real(c_double), allocatable :: next(:), all(:)
  integer(c_int) :: rank, nprocs, origin, s, then, before, start_it, kind, kind_before
  character(len=400) :: why
  real(c_double) :: started
  integer(c_long) :: k, nseg, units, unit_len, owned, elements, blk, hw
  integer :: status
  integer(int64) :: hi, lo
  double precision :: t0, seconds

  if (mpi_pcm_init() /= PCM_SUCCESS) call quit('mpi_pcm_init', MPI_COMM_NULL)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call parse_options(opt, rank == 0, status)
  if (status /= 0) then
    s = pcm_finalize(MPI_COMM_NULL)
    if (status < 0) error stop 2
    stop
  end if
  world = MPI_COMM_WORLD
  if (pcm_init(world) /= PCM_SUCCESS) call quit('pcm_init', MPI_COMM_NULL)
  call MPI_Comm_rank(world, rank)
  call MPI_Comm_size(world, nprocs)
  origin = pcm_process_status()
  if (pcm_register_dist('grid', grid, PCM_DOUBLE) /= PCM_SUCCESS) call quit('registering', world)
  ! A started process lays out and fills its grid; a restarted one lays it out for this world
  ! and pcm_resume fills it; a spawned one receives both.
  if (origin == PCM_STARTED .or. origin == PCM_RESTARTED) then
    if (pcm_dist_create(opt%layout, int(opt%nx, c_long), int(opt%ny, c_long), &
                        int(opt%block, c_long), 1_c_long, nprocs, grid%dist) /= PCM_SUCCESS) &
      call quit('laying out the grid', world)
  end if
  if (origin == PCM_STARTED) then
    if (pcm_dist_alloc(grid, rank) /= PCM_SUCCESS) call quit('allocating the grid', world)
    grid%d(1::opt%ny) = 100 ! row 0 of every column, ghosts included
  end if
  if (pcm_register_value('it', it) /= PCM_SUCCESS .or. &
      pcm_register_value('reconfigs', reconfigs) /= PCM_SUCCESS .or. &
      pcm_resume(world) /= PCM_SUCCESS) call quit('registering the state', world)
  if (origin == PCM_MIGRATED .or. origin == PCM_SPLITTED) reconfigs = reconfigs + 1
  call adopt()
  if ((origin == PCM_MIGRATED .or. origin == PCM_SPLITTED) .and. rank == 0) call report()
  if (origin == PCM_RESTARTED .and. rank == 0) then
    s = pcm_restart_info(then, before)
    write (output_unit, '(a,i0,a,i0,a,i0,a)') 'heat2d: restarted from iteration ', it, ' (', &
      before, ' -> ', nprocs, ' processes)'
  end if

  start_it = it
  t0 = MPI_Wtime()
  do while (it < opt%iters)
    before = nprocs
    s = pcm_adapt(world)
    if (s == PCM_RETIRED) call retire()
    if (s < 0) call quit('pcm_adapt', world)
    if (s == PCM_RESHAPED) then
      reconfigs = reconfigs + 1
      call adopt()
      if (rank == 0) call report()
    end if
    if (opt%commit_every > 0 .and. it > 0 .and. mod(it, max(opt%commit_every, 1)) == 0) then
      if (pcm_checkpoint(world, it) /= PCM_SUCCESS) call quit('pcm_checkpoint', world)
    end if
    if (pcm_halo_exchange(halo, grid, world) /= PCM_SUCCESS) then
      write (error_unit, '(a)') 'heat2d: halo exchange failed: '//pcm_last_error()
      call MPI_Abort(world, 1)
    end if
    ! Each segment [ghost][columns][ghost] from the registered buffer into next, then back.
    do k = 1, nseg
      associate (first => seg(1, k), n => seg(2, k), off => seg(3, k))
        call step_columns(grid%d(off - opt%ny + 1:), next(off - opt%ny + 1:), opt%ny, opt%nx, &
                          first, n)
        grid%d(off + 1:off + n * opt%ny) = next(off + 1:off + n * opt%ny)
      end associate
    end do
    call throttle(opt)
    it = it + 1
  end do
  ! The last version is committed in the background: known to be there before the results.
  if (pcm_checkpoint_wait(world) /= PCM_SUCCESS) call quit('pcm_checkpoint_wait', world)
  seconds = MPI_Wtime() - t0

  if (rank == 0) allocate (all(int(opt%nx, c_long) * opt%ny))
  if (pcm_dist_gather(grid, 0, world, all) /= PCM_SUCCESS) call quit('gathering the grid', world)
  if (rank == 0) then
    call grid_checksum(all, hi, lo)
    call print_result(opt%iters, nprocs, seconds, opt%iters - start_it, hi, lo)
    write (output_unit, '(a,i0)') 'reconfigurations ', reconfigs
    flush (output_unit)
  end if
  s = pcm_halo_free(halo)
  if (pcm_finalize(world) /= PCM_SUCCESS) error stop 1

contains

  ! After a start, pcm_resume or a reconfiguration: the rank, the segments, the halo plan and
  ! the step's second buffer (a copy: the step never writes the fixed boundary).
  subroutine adopt()
    integer(c_int) :: size, layout
    call MPI_Comm_rank(world, rank)
    call MPI_Comm_size(world, nprocs)
    if (pcm_dist_info(grid%dist, size, layout, units, unit_len, blk, hw) /= PCM_SUCCESS .or. &
        pcm_dist_local(grid%dist, rank, nseg, owned, elements) /= PCM_SUCCESS) &
      call quit('reading the map', world)
    opt%nx = int(units) ! a spawned process learns the grid from the map
    opt%ny = int(unit_len)
    if (allocated(seg)) deallocate (seg)
    allocate (seg(3, nseg))
    do k = 1, nseg
      if (pcm_dist_segment(grid%dist, rank, k - 1, seg(1, k), seg(2, k), seg(3, k)) /= &
          PCM_SUCCESS) call quit('reading the map', world)
    end do
    if (allocated(next)) deallocate (next)
    if (associated(grid%d)) then
      next = grid%d
    else
      allocate (next(0))
    end if
    s = pcm_halo_free(halo)
    if (pcm_halo_create(grid%dist, rank, 1_c_long, PCM_DOUBLE, halo) /= PCM_SUCCESS) &
      call quit('planning the halo exchange', world)
  end subroutine adopt

  ! Rank 0 of the world after a reconfiguration (a survivor's or a new process's): what it was
  ! (pcm_reconfig_last: its kind, the world's size before it) and who asked (pcm_reconfig_reason).
  subroutine report()
    character(len=*), parameter :: words(4) = [character(len=9) :: 'migration', '?', 'split', &
                                               'merge']
    character(len=9) :: what
    what = 'unknown'
    kind_before = -1
    if (pcm_reconfig_last(kind, kind_before, started) == PCM_SUCCESS .and. kind >= 1 .and. &
        kind <= 4) what = words(kind)
    if (pcm_reconfig_reason(why) /= PCM_SUCCESS) why = ''
    write (output_unit, '(a,i0,a,i0,a,a,a,i0,a,i0,a,a,a)') 'heat2d: reconfiguration ', &
      reconfigs, ' at iter ', it, ': ', trim(what), ' (procs ', kind_before, ' -> ', nprocs, &
      '), asked by "', trim(why), '"'
  end subroutine report

  ! A retired process: its data lives on elsewhere; it parks until the job ends.
  subroutine retire()
    s = pcm_halo_free(halo)
    write (output_unit, '(a)') 'heat2d: retired'
    flush (output_unit)
    if (pcm_exit() /= PCM_SUCCESS) error stop 1
    stop
  end subroutine retire

  subroutine quit(what, comm)
    character(len=*), intent(in) :: what
    type(MPI_Comm), intent(in) :: comm
    write (error_unit, '(a)') 'heat2d: '//what//': '//pcm_last_error()
    s = pcm_finalize(comm)
    error stop 1
  end subroutine quit

end program heat2d_pcm
