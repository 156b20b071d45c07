! no_target.f90 — must NOT compile: pcm_register_value needs a TARGET variable (libpcm keeps its
! address), and the module's INTENT(IN) pointer dummy makes a variable without one an error.
program no_target
  use, intrinsic :: iso_c_binding
  use pcm
  implicit none
  integer(c_int) :: it = 0
  print *, pcm_register_value('it', it)
end program no_target
