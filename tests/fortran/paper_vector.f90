! paper_vector.f90 — tests/python/paper_vector.py in Fortran: a vector in a block-distributed
! array made malleable with the paper's explicit calls of the module pcm (pcm_status, pcm_store /
! pcm_load, pcm_reconfigure_world, pcm_split_array, pcm_merge_array, pcm_commit), the program
! moving its own data. Element g (one per unit, one ghost unit each side) holds g * 1000 + it at
! the top of iteration it; after every reconfiguration and a restart every process checks every
! element it holds, and its ghosts after every exchange. The same options and lines as the Python
! program (tests/integration/paper_vector.sh runs both):
!   paper_vector_f [--units N] [--iters N] [--commit-every K] [--throttle-us US]
!                  [--throttle-while FILE]
program paper_vector
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: output_unit
  use mpi_f08
  use pcm
  implicit none
  interface
    integer(c_int) function usleep(us) bind(C, name="usleep")
      import :: c_int
      integer(c_int), value :: us
    end function
  end interface
  type(MPI_Comm) :: world
  type(pcm_dist_array) :: x
  type(pcm_dist) :: old
  type(pcm_halo) :: halo
  integer(c_long) :: units = 1001, count, elements, seg, first, cnt, off, u, j
  integer(c_int) :: iters = 600, every = 0, throttle = 0, it = 0, reconfigs = 0, restarted = -1
  integer(c_int) :: rank, nprocs, origin, s, rc, then, kind, before, mrank, bad, allbad
  integer(c_int), target :: it_store(1), reconfigs_store(1)
  character(len=400) :: slow = '', why
  real(c_double) :: started, total, want
  logical :: exists

  if (mpi_pcm_init() /= PCM_SUCCESS) error stop 1
  world = MPI_COMM_WORLD
  if (pcm_init(world) /= PCM_SUCCESS) error stop 1
  call options()
  call MPI_Comm_rank(world, rank)
  call MPI_Comm_size(world, nprocs)
  rc = pcm_array_init(x, PCM_DOUBLE)
  origin = pcm_process_status()
  select case (origin)
  case (PCM_STARTED)
    call check(pcm_dist_create(PCM_BLOCK, units, 1_c_long, 1_c_long, 1_c_long, nprocs, x%dist), &
               'pcm_dist_create')
    call check(pcm_dist_alloc(x, rank), 'pcm_dist_alloc')
    call walk(.true.)
  case (PCM_SPLITTED) ! receive this process's part, the map and the iteration
    call check(pcm_split_array(x, it, rank, nprocs, world), 'pcm_split_array (new process)')
    call check(pcm_load(0, 'reconfigs', reconfigs), 'load reconfigs')
  case (PCM_MIGRATED) ! take over the mover's state
    call check(pcm_load_dist(rank, 'dist', x%dist), 'pcm_load_dist')
    call check(pcm_dist_alloc(x, rank), 'pcm_dist_alloc')
    call check(pcm_load(rank, 'x', x%d), 'load x')
    call check(pcm_load(rank, 'it', it), 'load it')
    call check(pcm_load(rank, 'reconfigs', reconfigs), 'load reconfigs')
    call check(pcm_load_count(rank, 'x', kind, count), 'pcm_load_count')
    if (kind /= PCM_DOUBLE .or. count /= size(x%d)) call die('pcm_load_count: not x''s type and count')
  case (PCM_RESTARTED) ! the newest version, at this run's process count
    call check(pcm_restart_info(it, then), 'pcm_restart_info')
    restarted = it
    call check(pcm_load_dist(0, 'dist', old), 'pcm_load_dist')
    call check(pcm_dist_create(PCM_BLOCK, units, 1_c_long, 1_c_long, 1_c_long, nprocs, x%dist), &
               'pcm_dist_create')
    call check(pcm_dist_alloc(x, rank), 'pcm_dist_alloc')
    call check(pcm_load_redistribute('x', old, x%dist, rank, x%d), 'pcm_load_redistribute')
    rc = pcm_dist_free(old)
    if (rank == 0) write (output_unit, '(a,i0,a,i0,a,i0,a)') 'paper: restarted from iteration ', &
      it, ' (', then, ' -> ', nprocs, ' processes)'
  case default
    call die('unknown process status')
  end select
  call verify('at start')
  call plan()
  if (origin == PCM_SPLITTED .or. origin == PCM_MIGRATED) call report()

  do while (it < iters)
    s = pcm_status(world)
    if (s == PCM_ERROR) call die('pcm_status')
    if (s == PCM_STOP) exit
    before = nprocs
    if (s == PCM_MIGRATE) then ! this process moves: leave its state behind
      it_store(1) = it
      reconfigs_store(1) = reconfigs + 1
      call check(pcm_store_dist(rank, 'dist', x%dist), 'pcm_store_dist')
      call check(pcm_store(rank, 'x', x%d), 'store x')
      call check(pcm_store(rank, 'it', it_store), 'store it')
      call check(pcm_store(rank, 'reconfigs', reconfigs_store(1)), 'store reconfigs')
    end if
    if (s == PCM_MIGRATE .or. s == PCM_RECONFIGURE) then
      call check(pcm_reconfigure_world(world), 'pcm_reconfigure_world')
    else if (s == PCM_SPLIT) then
      if (rank == 0) call check(pcm_store(0, 'reconfigs', reconfigs + 1), 'store reconfigs')
      call check(pcm_split_array(x, it, rank, nprocs, world), 'pcm_split_array')
    else if (s == PCM_MERGE) then
      call check(pcm_merge_datacnts(x%dist, count, mrank, world), 'pcm_merge_datacnts')
      call check(pcm_merge_array(x, it, rank, nprocs, world), 'pcm_merge_array')
      if (world /= MPI_COMM_NULL .and. (size(x%d, kind=c_long) /= count .or. rank /= mrank)) &
        call die('pcm_merge_datacnts said otherwise')
    end if
    if (world == MPI_COMM_NULL) then ! this process left the world
      rc = pcm_array_free(x)
      rc = pcm_exit()
      stop
    end if
    if (s /= PCM_NONE) then
      reconfigs = reconfigs + 1
      call MPI_Comm_rank(world, rank)
      call MPI_Comm_size(world, nprocs)
      call verify('after a reconfiguration')
      call plan()
      call report()
    end if
    if (every > 0 .and. mod(it, max(every, 1)) == 0 .and. it /= restarted) then
      if (rank == 0) call check(pcm_store_dist(0, 'dist', x%dist), 'pcm_store_dist')
      call check(pcm_store(rank, 'x', x%d), 'store x')
      call check(pcm_commit(world, it), 'pcm_commit')
    end if
    call walk(.false., add=.true.)
    call check(pcm_halo_exchange(halo, x, world), 'pcm_halo_exchange')
    it = it + 1
    call ghosts()
    if (throttle > 0) then
      exists = len_trim(slow) == 0
      if (.not. exists) inquire (file=trim(slow), exist=exists)
      if (exists) rc = usleep(throttle)
    end if
  end do

  call verify('at the end')
  total = 0
  call walk(.false., sum=total)
  call MPI_Allreduce(MPI_IN_PLACE, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, world)
  want = 1000.0d0 * real(units, c_double) * real(units - 1, c_double) / 2 + &
         real(it, c_double) * real(units, c_double)
  if (rank == 0) then
    write (output_unit, '(a,f0.1,a,f0.1)') 'paper: sum ', total, ', expected ', want
    if (total == want) write (output_unit, '(a,i0,a,i0,a)') 'paper: ok: ', reconfigs, &
      ' reconfigurations, ', nprocs, ' processes, 0 wrong'
  end if
  rc = pcm_halo_free(halo)
  rc = pcm_array_free(x)
  rc = pcm_finalize(world)
  if (total /= want) error stop 1

contains

  ! Every owned element: fill it (start), add 1 (add), add it up (sum) or count the wrong ones.
  subroutine walk(fill, add, sum)
    logical, intent(in) :: fill
    logical, intent(in), optional :: add
    real(c_double), intent(inout), optional :: sum
    integer(c_long) :: nseg
    real(c_double) :: v
    call check(pcm_dist_local(x%dist, rank, nseg, cnt, elements), 'pcm_dist_local')
    bad = 0
    do seg = 0, nseg - 1
      call check(pcm_dist_segment(x%dist, rank, seg, first, cnt, off), 'pcm_dist_segment')
      do u = 0, cnt - 1
        v = real(first + u, c_double) * 1000 + it
        j = off + u + 1
        if (fill) then
          x%d(j) = v
        else if (present(add)) then
          x%d(j) = x%d(j) + 1
        else if (present(sum)) then
          sum = sum + x%d(j)
        else if (x%d(j) /= v) then
          bad = bad + 1
        end if
      end do
    end do
  end subroutine walk

  subroutine verify(what)
    character(len=*), intent(in) :: what
    call walk(.false.)
    if (.not. associated(x%d)) call die(what//': x%d shows no buffer')
    if (size(x%d, kind=c_long) /= elements) call die(what//': x%d''s size is not its map''s')
    call MPI_Allreduce(bad, allbad, 1, MPI_INTEGER, MPI_SUM, world)
    if (allbad /= 0) call die(what//': wrong elements')
  end subroutine verify

  ! The ghost units inside [0, units) after an exchange: their owners' values.
  subroutine ghosts()
    integer(c_long) :: nseg
    call check(pcm_dist_local(x%dist, rank, nseg, cnt, elements), 'pcm_dist_local')
    do seg = 0, nseg - 1
      call check(pcm_dist_segment(x%dist, rank, seg, first, cnt, off), 'pcm_dist_segment')
      if (first > 0) then
        if (x%d(off) /= real(first - 1, c_double) * 1000 + it) call die('a ghost before')
      end if
      if (first + cnt < units) then
        if (x%d(off + cnt + 1) /= real(first + cnt, c_double) * 1000 + it) call die('a ghost after')
      end if
    end do
  end subroutine ghosts

  subroutine plan()
    rc = pcm_halo_free(halo)
    call check(pcm_halo_create(x%dist, rank, 1_c_long, PCM_DOUBLE, halo), 'pcm_halo_create')
  end subroutine plan

  subroutine report()
    if (rank /= 0) return
    call check(pcm_reconfig_last(kind, before, started), 'pcm_reconfig_last')
    call check(pcm_reconfig_reason(why), 'pcm_reconfig_reason')
    write (output_unit, '(a,i0,a,i0,a,i0,a,i0,a,i0,a,a,a)') 'paper: reconfiguration ', reconfigs, &
      ' at iteration ', it, ': kind ', kind, ', ', before, ' -> ', nprocs, &
      ' processes, reason ''', trim(why), ''': every element right'
    flush (output_unit)
  end subroutine report

  subroutine check(rc, what)
    integer(c_int), intent(in) :: rc
    character(len=*), intent(in) :: what
    if (rc /= PCM_SUCCESS) call die(what//': '//pcm_last_error())
  end subroutine check

  subroutine die(what)
    character(len=*), intent(in) :: what
    write (output_unit, '(a,i0,a,a)') 'paper: FAIL: rank ', rank, ': ', what
    flush (output_unit)
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end subroutine die

  subroutine options()
    integer :: k, n
    character(len=400) :: a, v
    n = command_argument_count()
    k = 1
    do while (k < n)
      call get_command_argument(k, a)
      call get_command_argument(k + 1, v)
      select case (trim(a))
      case ('--units')
        read (v, *) units
      case ('--iters')
        read (v, *) iters
      case ('--commit-every')
        read (v, *) every
      case ('--throttle-us')
        read (v, *) throttle
      case ('--throttle-while')
        slow = v
      end select
      k = k + 2
    end do
  end subroutine options
end program paper_vector
