! heat2d_plain.f90 — 2-D heat diffusion in plain MPI (Fortran); heat2d_plain.c's result bit for bit.
program heat2d_plain
  use, intrinsic :: iso_c_binding, only: c_double, c_long
  use, intrinsic :: iso_fortran_env, only: int64
  use mpi_f08
  use heat2d_f
  implicit none
  type(heat2d_options) :: opt
  real(c_double), allocatable :: u(:, :), unew(:, :), all(:)
  integer, allocatable :: counts(:), displs(:)
  type(MPI_Request) :: req(4)
  integer :: rank, nprocs, first, ncols, left, right, it, status, r, f, c
  integer(int64) :: hi, lo
  double precision :: t0, seconds

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  call parse_options(opt, rank == 0, status)
  if (status /= 0) then
    call MPI_Finalize()
    if (status < 0) error stop 2
    stop
  end if

  ! Columns first .. first+ncols-1 and a ghost column on each side, column-major; row 0 hot.
  call block_cols(rank, nprocs, opt%nx, first, ncols)
  allocate (u(0:opt%ny - 1, 0:ncols + 1), unew(0:opt%ny - 1, 0:ncols + 1))
  u = 0
  u(0, :) = 100
  unew = u
  left = MPI_PROC_NULL
  right = MPI_PROC_NULL
  if (ncols > 0 .and. first > 0 .and. rank > 0) left = rank - 1
  if (ncols > 0 .and. first + ncols < opt%nx .and. rank + 1 < nprocs) right = rank + 1

  t0 = MPI_Wtime()
  do it = 1, opt%iters
    call MPI_Irecv(u(:, ncols + 1), opt%ny, MPI_DOUBLE_PRECISION, right, 0, MPI_COMM_WORLD, req(1))
    call MPI_Irecv(u(:, 0), opt%ny, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, req(2))
    call MPI_Isend(u(:, 1), opt%ny, MPI_DOUBLE_PRECISION, left, 0, MPI_COMM_WORLD, req(3))
    call MPI_Isend(u(:, ncols), opt%ny, MPI_DOUBLE_PRECISION, right, 1, MPI_COMM_WORLD, req(4))
    call MPI_Waitall(4, req, MPI_STATUSES_IGNORE)
    call step_columns(u, unew, opt%ny, opt%nx, int(first, c_long), int(ncols, c_long))
    call swap(u, unew)
    call throttle(opt)
  end do
  seconds = MPI_Wtime() - t0

  ! Rank 0 gathers the owned columns in global order and hashes them.
  allocate (counts(nprocs), displs(nprocs), all(merge(opt%nx * opt%ny, 1, rank == 0)))
  do r = 0, nprocs - 1
    call block_cols(r, nprocs, opt%nx, f, c)
    counts(r + 1) = c * opt%ny
    displs(r + 1) = f * opt%ny
  end do
  call MPI_Gatherv(u(:, 1:max(ncols, 1)), ncols * opt%ny, MPI_DOUBLE_PRECISION, all, counts, &
                   displs, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD)
  if (rank == 0) then
    call grid_checksum(all, hi, lo)
    call print_result(opt%iters, nprocs, seconds, opt%iters, hi, lo)
  end if
  call MPI_Finalize()

contains

  subroutine swap(a, b)
    real(c_double), allocatable, intent(inout) :: a(:, :), b(:, :)
    real(c_double), allocatable :: t(:, :)
    call move_alloc(a, t)
    call move_alloc(b, a)
    call move_alloc(t, b)
  end subroutine swap

end program heat2d_plain
