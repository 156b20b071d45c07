! heat2d_common.f90 — options, Jacobi kernel, checksum and output shared by the Fortran heat2d.
! The numerics are heat2d_common.c's: the same initial grid, the same expression order in the
! step and the same FNV-1a over the same bytes, so both languages print the same checksum.
module heat2d_f
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int8, int64, output_unit, error_unit
  implicit none
  private
  public :: heat2d_options, parse_options, block_cols, step_columns, grid_checksum, print_result
  public :: throttle

  type :: heat2d_options
    integer :: nx = 512, ny = 512, iters = 2000, throttle_us = 0, commit_every = 0
    integer :: layout = 1, block = 4 ! layout: 1 block, 2 cyclic, 3 block-cyclic (PCM's values)
    character(len=:), allocatable :: throttle_while ! sleep only while this file exists
  end type heat2d_options

  interface
    integer(c_int) function c_usleep(us) bind(C, name="usleep")
      import :: c_int
      integer(c_int), value :: us
    end function
  end interface

contains

  ! Parses the command line as heat2d_parse_options does (a subset: --nx --ny --iters
  ! --throttle-us --throttle-while --commit-every --layout --block; NAME VALUE or NAME=VALUE). status: 0, 1 for
  ! --help, -1 after a message (printed when report is true).
  subroutine parse_options(opt, report, status)
    type(heat2d_options), intent(out) :: opt
    logical, intent(in) :: report
    integer, intent(out) :: status
    character(len=256) :: arg, name, value
    integer :: k, n, eq, ios, v
    logical :: bad
    status = 0
    bad = .false.
    n = command_argument_count()
    k = 1
    do while (k <= n .and. .not. bad)
      call get_command_argument(k, arg)
      k = k + 1
      if (arg == '--help' .or. arg == '-h') then
        if (report) write (output_unit, '(a)') 'usage: heat2d [--nx N] [--ny N] [--iters N] '// &
          '[--throttle-us N] [--throttle-while FILE] [--commit-every N] '// &
          '[--layout block|cyclic|block-cyclic] [--block B]'
        status = 1
        return
      end if
      eq = index(arg, '=')
      if (eq > 0) then
        name = arg(:eq - 1)
        value = arg(eq + 1:)
      else if (k <= n) then
        name = arg
        call get_command_argument(k, value)
        k = k + 1
      else
        bad = .true.
        exit
      end if
      if (name == '--throttle-while') then
        opt%throttle_while = trim(value)
        cycle
      end if
      if (name == '--layout') then
        select case (value)
        case ('block'); opt%layout = 1
        case ('cyclic'); opt%layout = 2
        case ('block-cyclic'); opt%layout = 3
        case default; bad = .true.
        end select
        cycle
      end if
      read (value, *, iostat=ios) v
      bad = ios /= 0 .or. v < 0 .or. verify(trim(value), '0123456789') /= 0
      if (bad) exit
      select case (name)
      case ('--nx'); opt%nx = v
      case ('--ny'); opt%ny = v
      case ('--iters'); opt%iters = v
      case ('--throttle-us'); opt%throttle_us = v
      case ('--commit-every'); opt%commit_every = v
      case ('--block'); opt%block = v
      case default; bad = .true.
      end select
    end do
    if (bad .or. opt%nx < 1 .or. opt%ny < 1 .or. opt%block < 1) then
      if (report) write (error_unit, '(a)') 'heat2d: bad or unknown argument '//trim(arg)
      status = -1
    end if
  end subroutine parse_options

  ! The columns rank owns out of nx over nprocs ranks (heat2d_block).
  subroutine block_cols(rank, nprocs, nx, first, ncols)
    integer, intent(in) :: rank, nprocs, nx
    integer, intent(out) :: first, ncols
    integer :: base, extra
    base = nx / nprocs
    extra = mod(nx, nprocs)
    ncols = base + merge(1, 0, rank < extra)
    first = rank * base + min(rank, extra)
  end subroutine block_cols

  ! The Jacobi update of global columns first .. first+count-1, local columns 1..count of cur
  ! (columns 0 and count+1 are readable neighbours); results into the same places of next.
  ! Global columns 0 and nx-1 and rows 0 and ny-1 are fixed. heat2d_step_columns's expression.
  subroutine step_columns(cur, next, ny, nx, first, count)
    integer, intent(in) :: ny, nx
    integer(c_long), intent(in) :: first, count
    real(c_double), intent(in) :: cur(0:ny - 1, 0:count + 1)
    real(c_double), intent(inout) :: next(0:ny - 1, 0:count + 1)
    integer(c_long) :: g, j
    integer :: i
    do g = max(first, 1_c_long), min(first + count - 1, int(nx - 2, c_long))
      j = g - first + 1
      do i = 1, ny - 2
        next(i, j) = 0.25d0 * (((cur(i - 1, j) + cur(i + 1, j)) + cur(i, j - 1)) + cur(i, j + 1))
      end do
    end do
  end subroutine step_columns

  ! FNV-1a 64-bit over the bytes of the grid (column-major, global order), kept as two 32-bit
  ! halves so that no signed 64-bit product overflows: the prime is 2**40 + 435.
  subroutine grid_checksum(all, hi, lo)
    real(c_double), intent(in), target, contiguous :: all(:)
    integer(int64), intent(out) :: hi, lo
    integer(int8), pointer :: bytes(:)
    integer(int64), parameter :: mask = int(z'FFFFFFFF', int64)
    integer(int64) :: t
    integer(c_size_t) :: k
    call c_f_pointer(c_loc(all), bytes, [size(all, kind=c_size_t) * 8])
    hi = int(z'CBF29CE4', int64)
    lo = int(z'84222325', int64)
    do k = 1, size(bytes, kind=c_size_t)
      lo = ieor(lo, iand(int(bytes(k), int64), 255_int64))
      t = lo * 435_int64
      hi = iand(hi * 435_int64 + shiftr(t, 32) + shiftl(iand(lo, 16777215_int64), 8), mask)
      lo = iand(t, mask)
    end do
  end subroutine grid_checksum

  ! heat2d_print_result's two lines.
  subroutine print_result(iters, nprocs, seconds, computed, hi, lo)
    integer, intent(in) :: iters, nprocs, computed
    double precision, intent(in) :: seconds
    integer(int64), intent(in) :: hi, lo
    character(len=16) :: hex
    character(len=24) :: t, ms
    write (t, '(f24.3)') seconds ! not f0.3: gfortran leaves out the leading 0 that C prints
    write (ms, '(f24.4)') seconds * 1d3 / max(computed, 1)
    write (output_unit, '(a,i0,a,i0,a)') 'heat2d: done iters ', iters, ' procs ', nprocs, &
      ' time '//trim(adjustl(t))//' s '//trim(adjustl(ms))//' ms/iter'
    write (hex, '(z8.8,z8.8)') hi, lo
    write (output_unit, '(a)') 'checksum '//lower(hex)
    flush (output_unit)
  end subroutine print_result

  function lower(s) result(r)
    character(len=*), intent(in) :: s
    character(len=len(s)) :: r
    integer :: k
    r = s
    do k = 1, len(s)
      if (r(k:k) >= 'A' .and. r(k:k) <= 'F') r(k:k) = achar(iachar(r(k:k)) + 32)
    end do
  end function lower

  subroutine throttle(opt)
    type(heat2d_options), intent(in) :: opt
    integer(c_int) :: rc
    logical :: exists
    if (opt%throttle_us <= 0) return
    if (allocated(opt%throttle_while)) then
      inquire (file=opt%throttle_while, exist=exists)
      if (.not. exists) return
    end if
    rc = c_usleep(int(opt%throttle_us, c_int))
  end subroutine throttle

end module heat2d_f
