! types.f90 — registered arrays of every type the module pcm takes (real(c_double),
! real(c_float), integer(c_int), integer(c_int64_t)) and scalars of each keep their values through
! the reconfigurations pcmctl asks for, and pcm_dist_gather gathers each in global order.
! Usage: types ITERATIONS SLOW_FILE (each iteration sleeps 2 ms while SLOW_FILE exists). Prints
! "types: ok: ..." from rank 0 at the end. Run by tests/integration/fortran_types.sh.
program types
  use, intrinsic :: iso_c_binding
  use mpi_f08
  use pcm
  implicit none
  interface
    integer(c_int) function usleep(us) bind(C, name="usleep")
      import :: c_int
      integer(c_int), value :: us
    end function usleep
  end interface
  integer(c_long), parameter :: units = 41, ulen = 3
  type(MPI_Comm) :: world
  type(pcm_dist_array), pointer :: ad, af, ai, al
  integer(c_int), pointer :: it
  real(c_float), pointer :: fs
  integer(c_long), pointer, contiguous :: ls(:)
  integer(c_int) :: rank, nprocs, rc, iters, reshapes, owner, nlevels, colors(PCM_TOPO_LEVELS)
  integer(c_int), pointer :: scratch
  type(MPI_Comm) :: host
  character(len=256) :: arg, slow
  logical :: slowing

  call get_command_argument(1, arg)
  read (arg, *) iters
  call get_command_argument(2, slow)
  call check(mpi_pcm_init(), 'mpi_pcm_init')
  world = MPI_COMM_WORLD
  call check(pcm_init(world), 'pcm_init')
  allocate (it, fs, ls(2))
  it = 0
  fs = 0.5_c_float
  ls = [2_c_long**40, -7_c_long]
  call check(pcm_register_dist('d', ad, PCM_DOUBLE), 'register d')
  call check(pcm_register_dist('f', af, PCM_FLOAT), 'register f')
  call check(pcm_register_dist('i', ai, PCM_INT), 'register i')
  call check(pcm_register_dist('l', al, PCM_LONG_LONG), 'register l')
  call check(pcm_register_value('it', it), 'register it')
  call check(pcm_register_value('fs', fs), 'register fs')
  call check(pcm_register_value('ls', ls), 'register ls')
  ! A registration forgotten before pcm_resume; an array's name is refused.
  allocate (scratch)
  call check(pcm_register_value('scratch', scratch), 'register scratch')
  call check(pcm_unregister('scratch'), 'pcm_unregister')
  if (pcm_unregister('d') /= PCM_ERR_ARG) error stop 'pcm_unregister of an array accepted'
  if (pcm_process_status() == PCM_STARTED) then
    call MPI_Comm_rank(world, rank)
    call MPI_Comm_size(world, nprocs)
    call start(ad, PCM_DOUBLE)
    call start(af, PCM_FLOAT)
    call start(ai, PCM_INT)
    call start(al, PCM_LONG_LONG)
  end if
  call check(pcm_resume(world), 'pcm_resume')
  call check(pcm_comm_rank(world, rank), 'pcm_comm_rank')
  call verify()
  reshapes = 0
  do while (it < iters)
    rc = pcm_adapt(world)
    if (rc == PCM_RETIRED) then
      rc = pcm_exit()
      stop
    end if
    if (rc < 0) call check(rc, 'pcm_adapt')
    if (rc == PCM_RESHAPED) then
      reshapes = reshapes + 1
      call check(pcm_comm_rank(world, rank), 'pcm_comm_rank')
      call verify()
    end if
    it = it + 1
    fs = fs + 1.0_c_float
    ls(2) = ls(2) - 1
    inquire (file=trim(slow), exist=slowing)
    if (slowing) rc = usleep(2000_c_int)
  end do
  if (fs /= 0.5_c_float + real(iters, c_float) .or. ls(1) /= 2_c_long**40 .or. &
      ls(2) /= -7_c_long - iters) error stop 'a registered value is wrong'
  call gathered()
  call MPI_Comm_size(world, nprocs)
  ! Who owns what, and the topology: every process on this one host.
  call check(pcm_dist_owner(ad%dist, 0_c_long, owner), 'pcm_dist_owner')
  if (owner /= 0) error stop 'unit 0 is not rank 0''s'
  call check(pcm_dist_owner(ad%dist, units - 1, owner), 'pcm_dist_owner')
  if (owner /= nprocs - 1) error stop 'the last unit is not the last rank''s'
  call check(pcm_topology(world, nlevels, colors), 'pcm_topology')
  if (nlevels /= PCM_TOPO_LEVELS) error stop 'pcm_topology: not 2 levels'
  call check(pcm_host_comm(world, host), 'pcm_host_comm')
  call MPI_Comm_size(host, owner)
  if (owner /= nprocs) error stop 'pcm_host_comm: not every process of this host'
  call MPI_Comm_free(host)
  if (rank == 0) print '(a,i0,a,i0,a)', 'types: ok: ', nprocs, ' processes at the end, ', &
    reshapes, ' reshapes seen by this rank 0, every element and value right'
  call check(pcm_finalize(world), 'pcm_finalize')

contains

  subroutine check(rc, what)
    integer(c_int), intent(in) :: rc
    character(len=*), intent(in) :: what
    if (rc /= PCM_SUCCESS) then
      write (0, '(a,i0,a)') 'types: '//what//' failed (', rc, '): '//pcm_last_error()
      error stop 1
    end if
  end subroutine check

  ! Element g (from 0) of the global array of a's type.
  real(c_double) function expected(t, g)
    integer(c_int), intent(in) :: t
    integer(c_long), intent(in) :: g
    select case (t)
    case (PCM_DOUBLE)
      expected = real(g, c_double) + 0.5_c_double
    case (PCM_FLOAT)
      expected = real(g, c_double) + 0.25_c_double
    case (PCM_INT)
      expected = -real(g, c_double)
    case default
      expected = real(g, c_double) * 3.0_c_double
    end select
  end function expected

  ! The value of a's local element k (from 1), as a double (exact for these values).
  real(c_double) function local(a, t, k)
    type(pcm_dist_array), intent(in) :: a
    integer(c_int), intent(in) :: t
    integer(c_long), intent(in) :: k
    select case (t)
    case (PCM_DOUBLE)
      local = a%d(k)
    case (PCM_FLOAT)
      local = real(a%f(k), c_double)
    case (PCM_INT)
      local = real(a%i(k), c_double)
    case default
      local = real(a%l(k) - 2_c_int64_t**40, c_double)
    end select
  end function local

  subroutine start(a, t)
    type(pcm_dist_array), intent(inout) :: a
    integer(c_int), intent(in) :: t
    integer(c_long) :: s, segments, n, elements, first, offset, u, k, g
    call check(pcm_dist_create(PCM_BLOCK, units, ulen, 1_c_long, 0_c_long, nprocs, a%dist), 'create')
    call check(pcm_dist_alloc(a, rank), 'pcm_dist_alloc')
    call check(pcm_dist_local(a%dist, rank, segments, n, elements), 'pcm_dist_local')
    do s = 0, segments - 1
      call check(pcm_dist_segment(a%dist, rank, s, first, n, offset), 'pcm_dist_segment')
      do u = 0, n - 1
        do k = 1, ulen
          g = (first + u) * ulen + k - 1
          select case (t)
          case (PCM_DOUBLE)
            a%d(offset + u * ulen + k) = real(g, c_double) + 0.5_c_double
          case (PCM_FLOAT)
            a%f(offset + u * ulen + k) = real(g, c_float) + 0.25_c_float
          case (PCM_INT)
            a%i(offset + u * ulen + k) = -int(g, c_int)
          case default
            a%l(offset + u * ulen + k) = g * 3_c_int64_t + 2_c_int64_t**40
          end select
        end do
      end do
    end do
  end subroutine start

  subroutine verify_one(a, t)
    type(pcm_dist_array), intent(in) :: a
    integer(c_int), intent(in) :: t
    integer(c_long) :: s, segments, n, elements, first, offset, u, k, g
    call check(pcm_dist_local(a%dist, rank, segments, n, elements), 'pcm_dist_local')
    do s = 0, segments - 1
      call check(pcm_dist_segment(a%dist, rank, s, first, n, offset), 'pcm_dist_segment')
      do u = 0, n - 1
        do k = 1, ulen
          g = (first + u) * ulen + k - 1
          if (local(a, t, offset + u * ulen + k) /= expected(t, g)) then
            write (0, '(a,i0,a,i0)') 'types: wrong element ', g, ' on rank ', rank
            error stop 1
          end if
        end do
      end do
    end do
  end subroutine verify_one

  subroutine verify()
    call verify_one(ad, PCM_DOUBLE)
    call verify_one(af, PCM_FLOAT)
    call verify_one(ai, PCM_INT)
    call verify_one(al, PCM_LONG_LONG)
  end subroutine verify

  subroutine gathered()
    real(c_double), allocatable :: gd(:)
    real(c_float), allocatable :: gf(:)
    integer(c_int), allocatable :: gi(:)
    integer(c_int64_t), allocatable :: gl(:)
    integer(c_long) :: g
    if (rank == 0) allocate (gd(units * ulen), gf(units * ulen), gi(units * ulen), gl(units * ulen))
    call check(pcm_dist_gather(ad, 0_c_int, world, gd), 'gather d')
    call check(pcm_dist_gather(af, 0_c_int, world, gf), 'gather f')
    call check(pcm_dist_gather(ai, 0_c_int, world, gi), 'gather i')
    call check(pcm_dist_gather(al, 0_c_int, world, gl), 'gather l')
    ! A gather into an array of another type is refused on every rank.
    if (pcm_dist_gather(ai, 0_c_int, world, gd) /= PCM_ERR_ARG) error stop 'gather of i into real(8)'
    if (rank /= 0) return
    do g = 0, units * ulen - 1
      if (gd(g + 1) /= expected(PCM_DOUBLE, g) .or. &
          real(gf(g + 1), c_double) /= expected(PCM_FLOAT, g) .or. &
          real(gi(g + 1), c_double) /= expected(PCM_INT, g) .or. &
          real(gl(g + 1) - 2_c_int64_t**40, c_double) /= expected(PCM_LONG_LONG, g)) then
        write (0, '(a,i0)') 'types: gathered element wrong: ', g
        error stop 1
      end if
    end do
  end subroutine gathered

end program types
