! consumer.f90 — a Fortran program using an installed PCM's module pcm: calls that need no pcmd.
program consumer
  use, intrinsic :: iso_c_binding
  use mpi_f08
  use pcm
  implicit none
  type(pcm_dist) :: dist
  integer(c_long) :: segments, units, elements
  integer :: failures = 0
  call MPI_Init()
  call check(pcm_dist_create(PCM_BLOCK, 10_c_long, 4_c_long, 0_c_long, 1_c_long, 3, dist) == &
             PCM_SUCCESS, 'pcm_dist_create')
  call check(pcm_dist_local(dist, 0, segments, units, elements) == PCM_SUCCESS, 'pcm_dist_local')
  call check(segments == 1 .and. units == 4 .and. elements == 24, 'block rank 0: 4 units')
  call check(pcm_dist_local(dist, 3, segments, units, elements) == PCM_ERR_ARG, 'rank 3 refused')
  call check(len(pcm_last_error()) > 0, 'pcm_last_error says why')
  call check(pcm_dist_free(dist) == PCM_SUCCESS, 'pcm_dist_free')
  call check(pcm_error_string(PCM_SUCCESS) == 'success', 'pcm_error_string')
  call MPI_Finalize()
  if (failures /= 0) error stop 1
  print '(a)', 'consumer: ok'
contains
  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      write (0, '(a)') 'consumer: FAILED: '//what
      failures = failures + 1
    end if
  end subroutine check
end program consumer
