! paper_calls.f90 — the module pcm's paper calls without a reconfiguration, on 2 processes:
! pcm_store / pcm_load round trips of every type, scalar and array (every element compared),
! pcm_load_count, pcm_store_dist / pcm_load_dist, pcm_commit; the refusals (a wrong count or
! type, nothing pending for pcm_split_array / pcm_merge_array / pcm_reconfigure_world, an array
! the program re-pointed on one process: PCM_ERR_ARG on both); pcm_halo_entries / pcm_halo_entry
! (a block map's plan exactly, a cyclic map's against the map: every ghost unit from its owner,
! at the owner's offset); PCM_ERR_STATE from pcm_reconfig_last and pcm_reconfig_reason before any
! reconfiguration. Prints "paper calls: ok".
program paper_calls
  use, intrinsic :: iso_c_binding
  use mpi_f08
  use pcm
  implicit none
  type(MPI_Comm) :: world
  type(pcm_dist) :: b, c
  type(pcm_halo) :: h
  integer(c_int) :: rank, nprocs, rc, peer, kind, before, owner, bad, allbad, other
  integer(c_long) :: n, k, ghost, source, units, u, unit, j, first, cnt, off, nseg, s
  real(c_double) :: started, spawn, data, rebuild
  character(len=64) :: why
  integer(c_long), allocatable :: unit_at(:)

  if (mpi_pcm_init() /= PCM_SUCCESS) error stop 1
  world = MPI_COMM_WORLD
  if (pcm_init(world) /= PCM_SUCCESS) error stop 1
  call MPI_Comm_rank(world, rank)
  call MPI_Comm_size(world, nprocs)
  bad = 0
  if (nprocs /= 2) error stop 'run on 2 processes'
  if (pcm_reconfig_last(kind, before, started) /= PCM_ERR_STATE) call wrong('pcm_reconfig_last')
  if (pcm_reconfig_reason(why) /= PCM_ERR_STATE) call wrong('pcm_reconfig_reason')
  if (pcm_reconfig_times(spawn, data, rebuild) /= PCM_SUCCESS) call wrong('pcm_reconfig_times')

  ! block(10) over 2, halo 1: rank 0 = [g][0..4][g] gets unit 5 from rank 1's offset 1 into its
  ! offset 6; rank 1 = [g][5..9][g] gets unit 4 from rank 0's offset 5 into its offset 0.
  if (pcm_dist_create(PCM_BLOCK, 10_c_long, 1_c_long, 1_c_long, 1_c_long, nprocs, b) /= &
      PCM_SUCCESS) error stop 1
  if (pcm_halo_create(b, rank, 1_c_long, PCM_DOUBLE, h) /= PCM_SUCCESS) error stop 1
  if (pcm_halo_entries(h, n) /= PCM_SUCCESS .or. n /= 1) call wrong('block: entries')
  if (pcm_halo_entry(h, 0_c_long, peer, ghost, source, units) /= PCM_SUCCESS) call wrong('entry 0')
  if (rank == 0 .and. (peer /= 1 .or. ghost /= 6 .or. source /= 1 .or. units /= 1)) &
    call wrong('block: rank 0''s entry')
  if (rank == 1 .and. (peer /= 0 .or. ghost /= 0 .or. source /= 5 .or. units /= 1)) &
    call wrong('block: rank 1''s entry')
  if (pcm_halo_entry(h, 1_c_long, peer, ghost, source, units) /= PCM_ERR_ARG) &
    call wrong('an entry out of range')
  rc = pcm_halo_free(h)

  ! cyclic(11) over 2, halo 1: each owned unit u at offset o has ghosts u-1 at o-1, u+1 at o+1.
  if (pcm_dist_create(PCM_CYCLIC, 11_c_long, 1_c_long, 1_c_long, 1_c_long, nprocs, c) /= &
      PCM_SUCCESS) error stop 1
  if (pcm_halo_create(c, rank, 1_c_long, PCM_DOUBLE, h) /= PCM_SUCCESS) error stop 1
  if (pcm_dist_local(c, rank, nseg, cnt, n) /= PCM_SUCCESS) error stop 1
  allocate (unit_at(0:n - 1))
  unit_at = -1 ! the global unit whose ghost each offset is (-1: an owned unit)
  do s = 0, nseg - 1
    if (pcm_dist_segment(c, rank, s, first, cnt, off) /= PCM_SUCCESS) error stop 1
    if (first > 0) unit_at(off - 1) = first - 1
    if (first + cnt < 11) unit_at(off + cnt) = first + cnt
  end do
  if (pcm_halo_entries(h, n) /= PCM_SUCCESS .or. n < 1) call wrong('cyclic: entries')
  do k = 0, n - 1
    if (pcm_halo_entry(h, k, peer, ghost, source, units) /= PCM_SUCCESS) call wrong('entry')
    do j = 0, units - 1
      unit = unit_at(ghost + j)
      if (unit < 0) then
        call wrong('cyclic: an entry fills an owned unit')
        cycle
      end if
      if (pcm_dist_owner(c, unit, owner) /= PCM_SUCCESS .or. owner /= peer) &
        call wrong('cyclic: a ghost unit not from its owner')
      ! In the owner's buffer, unit sits at offset 3 * (its index among the owner's units) + 1.
      u = unit / nprocs
      if (source + j /= 3 * u + 1) call wrong('cyclic: a source offset')
    end do
  end do
  if (count(unit_at >= 0) /= sum_units()) call wrong('cyclic: ghost units not all filled')
  rc = pcm_halo_free(h)
  rc = pcm_dist_free(c)
  call store_load()
  call reshape_refusals()
  rc = pcm_dist_free(b)

  call MPI_Allreduce(bad, allbad, 1, MPI_INTEGER, MPI_SUM, world)
  if (rank == 0 .and. allbad == 0) print '(a)', 'paper calls: ok'
  rc = pcm_finalize(world)
  if (allbad /= 0) error stop 1

contains

  subroutine store_load()
    integer(c_int) :: i4(7), i4s, t
    integer(c_long) :: i8(7), i8s, got
    real(c_double) :: r8(7), r8s, back8(7)
    real(c_float) :: r4(7), r4s, back4(7)
    integer(c_int) :: b4(7)
    integer(c_long) :: b8(7)
    type(pcm_dist) :: d
    integer :: q
    do q = 1, 7
      i4(q) = 100 * rank + q
      i8(q) = 10000000000_c_long * (rank + 1) + q
      r8(q) = rank + q / 3.0d0
      r4(q) = rank + q / 7.0
    end do
    if (pcm_store(rank, 'i4', i4) /= PCM_SUCCESS .or. pcm_store(rank, 'i8', i8) /= PCM_SUCCESS &
        .or. pcm_store(rank, 'r8', r8) /= PCM_SUCCESS .or. pcm_store(rank, 'r4', r4) /= &
        PCM_SUCCESS .or. pcm_store(rank, 's4', 41_c_int + rank) /= PCM_SUCCESS .or. &
        pcm_store(rank, 's8', 9000000000_c_long) /= PCM_SUCCESS .or. &
        pcm_store(rank, 'sd', 0.25d0) /= PCM_SUCCESS .or. pcm_store(rank, 'sf', 0.5) /= &
        PCM_SUCCESS) call wrong('pcm_store')
    call MPI_Barrier(world) ! any process may load any rank's key: load the other's
    other = 1 - rank
    b4 = 0
    b8 = 0
    back8 = 0
    back4 = 0
    if (pcm_load(other, 'i4', b4) /= PCM_SUCCESS .or. pcm_load(other, 'i8', b8) /= PCM_SUCCESS &
        .or. pcm_load(other, 'r8', back8) /= PCM_SUCCESS .or. pcm_load(other, 'r4', back4) /= &
        PCM_SUCCESS) call wrong('pcm_load')
    do q = 1, 7
      if (b4(q) /= 100 * other + q .or. b8(q) /= 10000000000_c_long * (other + 1) + q .or. &
          back8(q) /= other + q / 3.0d0 .or. back4(q) /= other + q / 7.0) &
        call wrong('an element loaded differs from the one stored')
    end do
    i4s = 0
    i8s = 0
    r8s = 0
    r4s = 0
    if (pcm_load(other, 's4', i4s) /= PCM_SUCCESS .or. i4s /= 41 + other) call wrong('scalar int')
    if (pcm_load(other, 's8', i8s) /= PCM_SUCCESS .or. i8s /= 9000000000_c_long) &
      call wrong('scalar long')
    if (pcm_load(other, 'sd', r8s) /= PCM_SUCCESS .or. r8s /= 0.25d0) call wrong('scalar double')
    if (pcm_load(other, 'sf', r4s) /= PCM_SUCCESS .or. r4s /= 0.5) call wrong('scalar float')
    if (pcm_load_count(other, 'i8', t, got) /= PCM_SUCCESS .or. t /= PCM_LONG .or. got /= 7) &
      call wrong('pcm_load_count')
    if (pcm_load(rank, 'r8', back8(1:6)) /= PCM_ERR_COUNT) call wrong('a load of the wrong count')
    if (pcm_load(rank, 'r8', back4) /= PCM_ERR_TYPE) call wrong('a load of the wrong type')
    if (pcm_load(rank, 'never', i4s) /= PCM_ERR_NOT_FOUND) call wrong('a key never stored')
    ! A map stored and loaded back: the same fields and segments.
    if (pcm_store_dist(rank, 'map', b) /= PCM_SUCCESS .or. pcm_load_dist(rank, 'map', d) /= &
        PCM_SUCCESS) call wrong('pcm_store_dist / pcm_load_dist')
    if (pcm_dist_segment(d, rank, 0_c_long, first, cnt, off) /= PCM_SUCCESS .or. &
        first /= 5 * rank .or. cnt /= 5 .or. off /= 1) call wrong('the map loaded back')
    rc = pcm_dist_free(d)
    if (pcm_store(rank, 'x', r8) /= PCM_SUCCESS .or. pcm_commit(world, 5) /= PCM_SUCCESS) &
      call wrong('pcm_commit')
    if (pcm_commit(world, 5) /= PCM_ERR_REFUSED) call wrong('a second commit of iteration 5')
  end subroutine store_load

  ! With nothing pending the reshaping calls are refused (PCM_ERR_STATE), the array left as it
  ! was; an array that one process re-pointed is refused on both (PCM_ERR_ARG).
  subroutine reshape_refusals()
    type(pcm_dist_array) :: a
    type(MPI_Comm) :: w
    integer(c_int) :: it, r, n
    real(c_double), pointer :: mine(:)
    it = 0
    w = world
    if (pcm_array_init(a, PCM_DOUBLE) /= PCM_SUCCESS) call wrong('pcm_array_init')
    if (pcm_dist_create(PCM_BLOCK, 10_c_long, 1_c_long, 1_c_long, 1_c_long, nprocs, a%dist) /= &
        PCM_SUCCESS .or. pcm_dist_alloc(a, rank) /= PCM_SUCCESS) call wrong('pcm_dist_alloc')
    a%d = 7
    if (pcm_split_array(a, it, r, n, w) /= PCM_ERR_STATE) call wrong('a split with none pending')
    if (pcm_merge_array(a, it, r, n, w) /= PCM_ERR_STATE) call wrong('a merge with none pending')
    if (pcm_reconfigure_world(w) /= PCM_ERR_STATE) call wrong('a reconfigure with none pending')
    if (pcm_merge_datacnts(a%dist, cnt, r, w) /= PCM_ERR_STATE) call wrong('pcm_merge_datacnts')
    if (w /= world .or. .not. associated(a%d) .or. any(a%d /= 7)) &
      call wrong('the array or the world after refused calls')
    if (rank == 1) then
      allocate (mine(7))
      a%d => mine ! the mistake, on one process
    end if
    if (pcm_split_array(a, it, r, n, w) /= PCM_ERR_ARG) call wrong('a re-pointed array')
    if (rank == 1) deallocate (mine)
    if (pcm_array_free(a) /= PCM_SUCCESS) call wrong('pcm_array_free')
  end subroutine reshape_refusals

  subroutine wrong(what)
    character(len=*), intent(in) :: what
    print '(a,i0,a,a,a,a)', 'paper calls: rank ', rank, ': ', what, ': ', pcm_last_error()
    bad = bad + 1
  end subroutine wrong

  ! The ghost units the plan's entries fill.
  integer(c_long) function sum_units()
    integer(c_long) :: i, e, g, src, us
    integer(c_int) :: p
    sum_units = 0
    if (pcm_halo_entries(h, e) /= PCM_SUCCESS) return
    do i = 0, e - 1
      if (pcm_halo_entry(h, i, p, g, src, us) == PCM_SUCCESS) sum_units = sum_units + us
    end do
  end function sum_units
end program paper_calls
