! halo_entries.f90 — the module pcm's pcm_halo_entries / pcm_halo_entry and the pcm_reconfig_*
! calls on 2 processes: a block map's plan exactly, a cyclic map's against the map (every ghost
! unit from its owner, at the owner's offset), and PCM_ERR_STATE from pcm_reconfig_last and
! pcm_reconfig_reason before any reconfiguration. Prints "halo entries: ok".
program halo_entries
  use, intrinsic :: iso_c_binding
  use mpi_f08
  use pcm
  implicit none
  type(MPI_Comm) :: world
  type(pcm_dist) :: b, c
  type(pcm_halo) :: h
  integer(c_int) :: rank, nprocs, rc, peer, kind, before, owner, bad, allbad
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
  rc = pcm_dist_free(b)
  rc = pcm_dist_free(c)

  call MPI_Allreduce(bad, allbad, 1, MPI_INTEGER, MPI_SUM, world)
  if (rank == 0 .and. allbad == 0) print '(a)', 'halo entries: ok'
  rc = pcm_finalize(world)
  if (allbad /= 0) error stop 1

contains

  subroutine wrong(what)
    character(len=*), intent(in) :: what
    print '(a,i0,a,a,a,a)', 'halo entries: rank ', rank, ': ', what, ': ', pcm_last_error()
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
end program halo_entries
