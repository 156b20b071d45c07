! pcm.F90 — the Fortran 2008 module pcm: PCM's register-once calls, and the paper's explicit ones, over
! ISO_C_BINDING.
!
! Functions return what the C calls return (PCM_SUCCESS, a state, or a negative PCM_ERR_*), so
! docs/user/fortran.md and include/pcm.h describe them alike. Communicators are mpi_f08's
! type(MPI_Comm) where the MPI has mpi_f08 (PCM_FORTRAN_F08 defined), integer handles otherwise;
! the C shim (pcm_shim.c) converts them. The constants below are pcm.h's values:
! tests/unit/check_fortran_constants.py compares them with the header.
!
! Registered arrays: libpcm replaces a registered buffer in reconfigurations (it frees the old
! one), so the module owns each registration (type(pcm_dist_array), never freed before
! pcm_finalize / pcm_exit) and re-points its array component (d or i) at the library's current
! buffer after every pcm_resume and pcm_adapt. Before the calls that read or replace the buffers
! it checks that the program has not re-pointed or allocated that component itself.
#ifdef PCM_FORTRAN_F08
#define PCM_COMM type(MPI_Comm)
#define CVAL(c) c%MPI_VAL
#else
#define PCM_COMM integer
#define CVAL(c) c
#endif
module pcm
  use, intrinsic :: iso_c_binding
#ifdef PCM_FORTRAN_F08
  use mpi_f08, only: MPI_Comm
#endif
  implicit none
  private

  ! Return codes (pcm_types.h).
  integer(c_int), parameter, public :: PCM_SUCCESS = 0
  integer(c_int), parameter, public :: PCM_ERR_ARG = -1
  integer(c_int), parameter, public :: PCM_ERR_STATE = -2
  integer(c_int), parameter, public :: PCM_ERR_CONFIG = -3
  integer(c_int), parameter, public :: PCM_ERR_DAEMON = -4
  integer(c_int), parameter, public :: PCM_ERR_REFUSED = -5
  integer(c_int), parameter, public :: PCM_ERR_NOT_FOUND = -6
  integer(c_int), parameter, public :: PCM_ERR_TYPE = -7
  integer(c_int), parameter, public :: PCM_ERR_COUNT = -8
  integer(c_int), parameter, public :: PCM_ERR_MPI = -9
  integer(c_int), parameter, public :: PCM_ERR_SPAWN = -10
  integer(c_int), parameter, public :: PCM_ERR_INTERNAL = -11
  integer(c_int), parameter, public :: PCM_ERR_CORRUPT = -12
  integer(c_int), parameter, public :: PCM_ERR_NOSPACE = -13
  ! Process states (pcm_process_status).
  integer(c_int), parameter, public :: PCM_STARTED = 1
  integer(c_int), parameter, public :: PCM_MIGRATED = 2
  integer(c_int), parameter, public :: PCM_SPLITTED = 3
  integer(c_int), parameter, public :: PCM_RETIRED = 4
  integer(c_int), parameter, public :: PCM_RESTARTED = 5
  ! Reconfiguration states (pcm_status) and pcm_adapt's PCM_RESHAPED.
  integer(c_int), parameter, public :: PCM_ERROR = -1
  integer(c_int), parameter, public :: PCM_NONE = 0
  integer(c_int), parameter, public :: PCM_MIGRATE = 1
  integer(c_int), parameter, public :: PCM_RECONFIGURE = 2
  integer(c_int), parameter, public :: PCM_SPLIT = 3
  integer(c_int), parameter, public :: PCM_MERGE = 4
  integer(c_int), parameter, public :: PCM_RESHAPED = 6
  integer(c_int), parameter, public :: PCM_STOP = 7
  integer(c_int), parameter, public :: PCM_NOT_LOCAL = 8
  ! pcm_exit's status in a process whose job a signal or `pcmctl stop` ended (docs/user/preemption.md).
  integer(c_int), parameter, public :: PCM_EXIT_STOPPED = 75
  ! Layouts (pcm_dist_create).
  integer(c_int), parameter, public :: PCM_BLOCK = 1
  integer(c_int), parameter, public :: PCM_CYCLIC = 2
  integer(c_int), parameter, public :: PCM_BLOCK_CYCLIC = 3
  integer(c_int), parameter, public :: PCM_IRREGULAR = 4
  ! Element types.
  integer(c_int), parameter, public :: PCM_CHAR = 1
  integer(c_int), parameter, public :: PCM_INT = 2
  integer(c_int), parameter, public :: PCM_LONG = 3
  integer(c_int), parameter, public :: PCM_FLOAT = 4
  integer(c_int), parameter, public :: PCM_DOUBLE = 5
  integer(c_int), parameter, public :: PCM_LONG_LONG = 6
  integer(c_int), parameter, public :: PCM_BYTE = 7
  integer(c_int), parameter, public :: PCM_MAX_KEY = 64
  ! Topology levels (pcm_topology).
  integer(c_int), parameter, public :: PCM_TOPO_SITE = 0
  integer(c_int), parameter, public :: PCM_TOPO_HOST = 1
  integer(c_int), parameter, public :: PCM_TOPO_LEVELS = 2
  integer(c_int), parameter, public :: PCM_HALO_TAG = 20547

  ! Opaque handles: a PCM_Dist and a PCM_Halo.
  type, public :: pcm_dist
    type(c_ptr) :: p = c_null_ptr
  end type pcm_dist
  type, public :: pcm_halo
    type(c_ptr) :: p = c_null_ptr
  end type pcm_halo

  ! A registered distributed array. Its component of the registered type is this process's
  ! buffer, laid out by dist: d (PCM_DOUBLE, real(c_double)), f (PCM_FLOAT, real(c_float)), i
  ! (PCM_INT, integer(c_int)) or l (PCM_LONG_LONG or PCM_LONG, integer(c_int64_t)); the module
  ! re-points it after pcm_resume and pcm_adapt. Allocate it with pcm_dist_alloc only (libpcm
  ! frees it with free()); never allocate, deallocate or re-point it.
  type, public :: pcm_dist_array
    real(c_double), pointer, contiguous :: d(:) => null()
    real(c_float), pointer, contiguous :: f(:) => null()
    integer(c_int), pointer, contiguous :: i(:) => null()
    integer(c_int64_t), pointer, contiguous :: l(:) => null()
    type(pcm_dist) :: dist
    type(c_ptr), private :: buf = c_null_ptr
    integer(c_long), private :: n = 0
    integer(c_int), private :: type = 0
    character(len=PCM_MAX_KEY), private :: name = ''
  end type pcm_dist_array

  type :: entry_ptr
    type(pcm_dist_array), pointer :: a => null()
  end type entry_ptr

  integer, parameter :: MAX_ARRAYS = 64
  type(entry_ptr), save :: arrays(MAX_ARRAYS)
  integer, save :: narrays = 0
  integer(c_int), save :: world_rank = -1
  ! A failure the module found itself (PCM_Last_error is the library's).
  character(len=:), allocatable, save :: own_error
  logical, save :: own_error_last = .false.

  public :: mpi_pcm_init, pcm_init, pcm_finalize, pcm_exit, pcm_process_status, pcm_comm_rank
  public :: pcm_status, pcm_register_dist, pcm_register_value, pcm_register_local, pcm_resume
  public :: pcm_adapt, pcm_checkpoint, pcm_checkpoint_wait, pcm_restart_info, pcm_dist_alloc
  public :: pcm_dist_create, pcm_dist_free, pcm_dist_local, pcm_dist_segment, pcm_dist_info
  public :: pcm_halo_create, pcm_halo_exchange, pcm_halo_free, pcm_dist_gather, pcm_dist_owner
  public :: pcm_unregister, pcm_topology, pcm_host_comm
  public :: pcm_reconfig_last, pcm_reconfig_reason, pcm_reconfig_times
  public :: pcm_halo_entries, pcm_halo_entry
  public :: pcm_store, pcm_load, pcm_load_count, pcm_store_dist, pcm_load_dist
  public :: pcm_load_redistribute, pcm_commit, pcm_reconfigure_world, pcm_array_init, pcm_array_free
  public :: pcm_split_array, pcm_merge_array, pcm_merge_datacnts
  public :: pcm_last_error, pcm_error_string

  ! pcm_register_value / pcm_register_local: a TARGET variable (the dummy is an INTENT(IN)
  ! pointer, so an actual argument without TARGET is a compile-time error) that libpcm reads and
  ! writes in pcm_resume, pcm_adapt and pcm_checkpoint: it must live as long as the loop.
  interface pcm_register_value
    module procedure reg_value_int, reg_value_long, reg_value_double, reg_value_float
    module procedure reg_value_int1, reg_value_long1, reg_value_double1, reg_value_float1
  end interface pcm_register_value
  interface pcm_register_local
    module procedure reg_local_int, reg_local_long, reg_local_double, reg_local_float
    module procedure reg_local_int1, reg_local_long1, reg_local_double1, reg_local_float1
  end interface pcm_register_local
  ! The paper's calls (pcm_store, pcm_load, pcm_load_redistribute): a scalar or a contiguous 1-D
  ! array of integer(c_int) (PCM_INT), integer(c_long) (PCM_LONG), real(c_double) (PCM_DOUBLE)
  ! or real(c_float) (PCM_FLOAT); its size is the count.
  interface pcm_store
    module procedure store_int, store_int1, store_long, store_long1
    module procedure store_double, store_double1, store_float, store_float1
  end interface pcm_store
  interface pcm_load
    module procedure load_int, load_int1, load_long, load_long1
    module procedure load_double, load_double1, load_float, load_float1
  end interface pcm_load
  interface pcm_load_redistribute
    module procedure redistribute_int, redistribute_long, redistribute_double, redistribute_float
  end interface pcm_load_redistribute
  ! pcm_dist_gather: global's type is the registered array's (PCM_ERR_ARG otherwise).
  interface pcm_dist_gather
    module procedure gather_double, gather_float, gather_int, gather_int64
  end interface pcm_dist_gather

  interface
    integer(c_int) function c_mpi_pcm_init(nargs, args) bind(C, name="pcm_f_mpi_pcm_init")
      import :: c_int, c_ptr
      integer(c_int), value :: nargs
      type(c_ptr), intent(in) :: args(*)
    end function
    integer(c_int) function c_init(comm) bind(C, name="pcm_f_init")
      import :: c_int
      integer(c_int), intent(inout) :: comm
    end function
    integer(c_int) function c_comm_rank(comm, rank) bind(C, name="pcm_f_comm_rank")
      import :: c_int
      integer(c_int), value :: comm
      integer(c_int), intent(out) :: rank
    end function
    integer(c_int) function c_status(comm) bind(C, name="pcm_f_status")
      import :: c_int
      integer(c_int), value :: comm
    end function
    integer(c_int) function c_resume(comm, rank) bind(C, name="pcm_f_resume")
      import :: c_int
      integer(c_int), intent(inout) :: comm
      integer(c_int), intent(inout) :: rank
    end function
    integer(c_int) function c_adapt(comm, rank) bind(C, name="pcm_f_adapt")
      import :: c_int
      integer(c_int), intent(inout) :: comm
      integer(c_int), intent(inout) :: rank
    end function
    integer(c_int) function c_adapt_local(comm) bind(C, name="pcm_f_adapt_local")
      import :: c_int
      integer(c_int), value :: comm
    end function
    integer(c_int) function c_checkpoint(comm, it) bind(C, name="pcm_f_checkpoint")
      import :: c_int
      integer(c_int), value :: comm, it
    end function
    integer(c_int) function c_checkpoint_wait(comm) bind(C, name="pcm_f_checkpoint_wait")
      import :: c_int
      integer(c_int), value :: comm
    end function
    integer(c_int) function c_finalize(comm) bind(C, name="pcm_f_finalize")
      import :: c_int
      integer(c_int), value :: comm
    end function
    integer(c_int) function c_exit() bind(C, name="PCM_Exit")
      import :: c_int
    end function
    integer(c_int) function c_process_status() bind(C, name="PCM_Process_Status")
      import :: c_int
    end function
    integer(c_int) function c_restart_info(it, nprocs) bind(C, name="PCM_Restart_info")
      import :: c_int
      integer(c_int), intent(out) :: it, nprocs
    end function
    integer(c_int) function c_register_dist(name, buf, type, dist) bind(C, name="PCM_Register_dist")
      import :: c_int, c_char, c_ptr
      character(kind=c_char), intent(in) :: name(*)
      type(c_ptr), value :: buf, dist
      integer(c_int), value :: type
    end function
    integer(c_int) function c_register_value(name, value, type, count) &
        bind(C, name="PCM_Register_value")
      import :: c_int, c_char, c_ptr, c_long
      character(kind=c_char), intent(in) :: name(*)
      type(c_ptr), value :: value
      integer(c_int), value :: type
      integer(c_long), value :: count
    end function
    integer(c_int) function c_register_local(name, value, type, count) &
        bind(C, name="PCM_Register_local")
      import :: c_int, c_char, c_ptr, c_long
      character(kind=c_char), intent(in) :: name(*)
      type(c_ptr), value :: value
      integer(c_int), value :: type
      integer(c_long), value :: count
    end function
    integer(c_int) function c_dist_create(layout, units, unit_len, block, halo, size, dist) &
        bind(C, name="PCM_Dist_create")
      import :: c_int, c_long, c_ptr
      integer(c_int), value :: layout, size
      integer(c_long), value :: units, unit_len, block, halo
      type(c_ptr), intent(inout) :: dist
    end function
    integer(c_int) function c_dist_free(dist) bind(C, name="PCM_Dist_free")
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: dist
    end function
    integer(c_int) function c_dist_local(dist, rank, segments, units, elements) &
        bind(C, name="PCM_Dist_local")
      import :: c_int, c_long, c_ptr
      type(c_ptr), value :: dist
      integer(c_int), value :: rank
      integer(c_long), intent(out) :: segments, units, elements
    end function
    integer(c_int) function c_dist_segment(dist, rank, index, first, units, offset) &
        bind(C, name="PCM_Dist_segment")
      import :: c_int, c_long, c_ptr
      type(c_ptr), value :: dist
      integer(c_int), value :: rank
      integer(c_long), value :: index
      integer(c_long), intent(out) :: first, units, offset
    end function
    integer(c_int) function c_dist_owner(dist, unit, rank) bind(C, name="PCM_Dist_owner")
      import :: c_int, c_long, c_ptr
      type(c_ptr), value :: dist
      integer(c_long), value :: unit
      integer(c_int), intent(out) :: rank
    end function
    integer(c_int) function c_unregister(name) bind(C, name="PCM_Unregister")
      import :: c_char, c_int
      character(kind=c_char), intent(in) :: name(*)
    end function
    integer(c_int) function c_topology(comm, nlevels, colors) bind(C, name="pcm_f_topology")
      import :: c_int
      integer(c_int), value :: comm
      integer(c_int), intent(out) :: nlevels, colors(2)
    end function
    integer(c_int) function c_host_comm(comm, host) bind(C, name="pcm_f_host_comm")
      import :: c_int
      integer(c_int), value :: comm
      integer(c_int), intent(out) :: host
    end function
    integer(c_int) function c_dist_info(dist, size, layout, units, unit_len, block, halo) &
        bind(C, name="PCM_Dist_info")
      import :: c_int, c_long, c_ptr
      type(c_ptr), value :: dist
      integer(c_int), intent(out) :: size, layout
      integer(c_long), intent(out) :: units, unit_len, block, halo
    end function
    integer(c_int) function c_halo_create(dist, rank, width, type, halo) &
        bind(C, name="PCM_Halo_create")
      import :: c_int, c_long, c_ptr
      type(c_ptr), value :: dist
      integer(c_int), value :: rank, type
      integer(c_long), value :: width
      type(c_ptr), intent(inout) :: halo
    end function
    integer(c_int) function c_halo_exchange(halo, buf, comm) bind(C, name="pcm_f_halo_exchange")
      import :: c_int, c_ptr
      type(c_ptr), value :: halo, buf
      integer(c_int), value :: comm
    end function
    integer(c_int) function c_halo_free(halo) bind(C, name="PCM_Halo_free")
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: halo
    end function
    integer(c_int) function c_dist_gather(dist, buf, type, root, comm, global) &
        bind(C, name="pcm_f_dist_gather")
      import :: c_int, c_ptr
      type(c_ptr), value :: dist, buf, global
      integer(c_int), value :: type, root, comm
    end function
    integer(c_int) function c_halo_entries(halo, count) bind(C, name="PCM_Halo_entries")
      import :: c_int, c_long, c_ptr
      type(c_ptr), value :: halo
      integer(c_long), intent(out) :: count
    end function
    integer(c_int) function c_halo_entry(halo, index, peer, ghost_offset, source_offset, units) &
        bind(C, name="PCM_Halo_entry")
      import :: c_int, c_long, c_ptr
      type(c_ptr), value :: halo
      integer(c_long), value :: index
      integer(c_int), intent(out) :: peer
      integer(c_long), intent(out) :: ghost_offset, source_offset, units
    end function
    integer(c_int) function c_reconfig_last(kind, size_before, started) &
        bind(C, name="PCM_Reconfig_last")
      import :: c_int, c_double
      integer(c_int), intent(out) :: kind, size_before
      real(c_double), intent(out) :: started
    end function
    integer(c_int) function c_reconfig_reason(reason, len) bind(C, name="PCM_Reconfig_reason")
      import :: c_int, c_char
      character(kind=c_char), intent(out) :: reason(*)
      integer(c_int), value :: len
    end function
    integer(c_int) function c_reconfig_times(spawn, data, rebuild) &
        bind(C, name="PCM_Reconfig_times")
      import :: c_int, c_double
      real(c_double), intent(out) :: spawn, data, rebuild
    end function
    integer(c_int) function c_store(rank, key, buf, type, count) bind(C, name="PCM_Store")
      import :: c_int, c_char, c_ptr, c_long
      integer(c_int), value :: rank, type
      character(kind=c_char), intent(in) :: key(*)
      type(c_ptr), value :: buf
      integer(c_long), value :: count
    end function
    integer(c_int) function c_load(rank, key, buf, type, count) bind(C, name="PCM_Load")
      import :: c_int, c_char, c_ptr, c_long
      integer(c_int), value :: rank, type
      character(kind=c_char), intent(in) :: key(*)
      type(c_ptr), value :: buf
      integer(c_long), value :: count
    end function
    integer(c_int) function c_load_count(rank, key, type, count) bind(C, name="PCM_Load_count")
      import :: c_int, c_char, c_long
      integer(c_int), value :: rank
      character(kind=c_char), intent(in) :: key(*)
      integer(c_int), intent(out) :: type
      integer(c_long), intent(out) :: count
    end function
    integer(c_int) function c_store_dist(rank, key, dist) bind(C, name="PCM_Store_dist")
      import :: c_int, c_char, c_ptr
      integer(c_int), value :: rank
      character(kind=c_char), intent(in) :: key(*)
      type(c_ptr), value :: dist
    end function
    integer(c_int) function c_load_dist(rank, key, dist) bind(C, name="PCM_Load_dist")
      import :: c_int, c_char, c_ptr
      integer(c_int), value :: rank
      character(kind=c_char), intent(in) :: key(*)
      type(c_ptr), intent(inout) :: dist
    end function
    integer(c_int) function c_load_redistribute(key, type, from, to, rank, buf) &
        bind(C, name="PCM_Load_redistribute")
      import :: c_int, c_char, c_ptr
      character(kind=c_char), intent(in) :: key(*)
      integer(c_int), value :: type, rank
      type(c_ptr), value :: from, to, buf
    end function
    integer(c_int) function c_commit(comm, it) bind(C, name="pcm_f_commit")
      import :: c_int
      integer(c_int), value :: comm, it
    end function
    integer(c_int) function c_reconfigure(comm, command) bind(C, name="pcm_f_reconfigure")
      import :: c_int, c_ptr
      integer(c_int), intent(inout) :: comm
      type(c_ptr), value :: command
    end function
    integer(c_int) function c_reshape(merge, buf, type, dist, it, rank, size, comm, command) &
        bind(C, name="pcm_f_reshape")
      import :: c_int, c_ptr
      integer(c_int), value :: merge, type
      type(c_ptr), intent(inout) :: buf, dist
      integer(c_int), intent(inout) :: it, rank, size, comm
      type(c_ptr), value :: command
    end function
    integer(c_int) function c_merge_datacnts(dist, count, merge_rank, comm) &
        bind(C, name="pcm_f_merge_datacnts")
      import :: c_int, c_long, c_ptr
      type(c_ptr), value :: dist
      integer(c_long), intent(out) :: count
      integer(c_int), intent(out) :: merge_rank
      integer(c_int), value :: comm
    end function
    integer(c_int) function c_any(comm, flag) bind(C, name="pcm_f_any")
      import :: c_int
      integer(c_int), value :: comm
      integer(c_int), intent(inout) :: flag
    end function
    subroutine c_abort(comm, code) bind(C, name="pcm_f_abort")
      import :: c_int
      integer(c_int), value :: comm, code
    end subroutine
    type(c_ptr) function c_last_error() bind(C, name="PCM_Last_error")
      import :: c_ptr
    end function
    type(c_ptr) function c_error_string(code) bind(C, name="PCM_Error_string")
      import :: c_ptr, c_int
      integer(c_int), value :: code
    end function
    integer(c_size_t) function c_strlen(s) bind(C, name="pcm_f_strlen")
      import :: c_size_t, c_ptr
      type(c_ptr), value :: s
    end function
    type(c_ptr) function c_calloc(n, size) bind(C, name="calloc")
      import :: c_ptr, c_size_t
      integer(c_size_t), value :: n, size
    end function
    subroutine c_free(p) bind(C, name="free")
      import :: c_ptr
      type(c_ptr), value :: p
    end subroutine
  end interface

contains

  ! --- helpers -----------------------------------------------------------------------------

  function cstr(s) result(c)
    character(len=*), intent(in) :: s
    character(kind=c_char, len=len_trim(s) + 1) :: c
    c = trim(s)//c_null_char
  end function cstr

  function from_c(p) result(s)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: s
    character(kind=c_char), pointer :: chars(:)
    integer :: k, n
    n = 0
    if (c_associated(p)) n = int(c_strlen(p))
    allocate (character(len=n) :: s)
    if (n == 0) return
    call c_f_pointer(p, chars, [n])
    do k = 1, n
      s(k:k) = chars(k)
    end do
  end function from_c

  integer(c_int) function fail(code, message)
    integer(c_int), intent(in) :: code
    character(len=*), intent(in) :: message
    own_error = 'pcm (Fortran): '//message
    own_error_last = .true.
    fail = code
  end function fail

  ! A C call's code; a failure makes PCM_Last_error the message to give.
  integer(c_int) function c_code(rc)
    integer(c_int), intent(in) :: rc
    if (rc < 0) own_error_last = .false.
    c_code = rc
  end function c_code

  ! Points a's array component at the library's buffer, sized by its map for this rank.
  subroutine repoint(a)
    type(pcm_dist_array), intent(inout) :: a
    integer(c_long) :: segments, units, elements
    nullify (a%d, a%f, a%i, a%l)
    a%n = 0
    if (.not. c_associated(a%buf)) return
    elements = 0
    if (world_rank >= 0 .and. c_associated(a%dist%p)) then
      if (c_dist_local(a%dist%p, world_rank, segments, units, elements) /= PCM_SUCCESS) elements = 0
    end if
    a%n = elements
    select case (a%type)
    case (PCM_DOUBLE)
      call c_f_pointer(a%buf, a%d, [elements])
    case (PCM_FLOAT)
      call c_f_pointer(a%buf, a%f, [elements])
    case (PCM_INT)
      call c_f_pointer(a%buf, a%i, [elements])
    case (PCM_LONG, PCM_LONG_LONG)
      call c_f_pointer(a%buf, a%l, [elements])
    end select
  end subroutine repoint

  ! The bytes of one element of an array type the module registers (0: not one of them). A C
  ! long must be 64 bits to be a%l (LP64, as on Linux).
  integer(c_size_t) function elem_bytes(type)
    integer(c_int), intent(in) :: type
    select case (type)
    case (PCM_DOUBLE)
      elem_bytes = c_sizeof(0.0_c_double)
    case (PCM_FLOAT)
      elem_bytes = c_sizeof(0.0_c_float)
    case (PCM_INT)
      elem_bytes = c_sizeof(0_c_int)
    case (PCM_LONG_LONG)
      elem_bytes = c_sizeof(0_c_int64_t)
    case (PCM_LONG)
      elem_bytes = 0
      if (c_sizeof(0_c_long) == c_sizeof(0_c_int64_t)) elem_bytes = c_sizeof(0_c_long)
    case default
      elem_bytes = 0
    end select
  end function elem_bytes

  subroutine repoint_all()
    integer :: k
    do k = 1, narrays
      call repoint(arrays(k)%a)
    end do
  end subroutine repoint_all

  ! Whether a's array component still is what the module last pointed it at.
  logical function intact(a)
    type(pcm_dist_array), intent(in) :: a
    logical :: set
    select case (a%type)
    case (PCM_DOUBLE)
      set = associated(a%d)
      if (set) intact = same(c_loc(a%d), size(a%d, kind=c_long))
    case (PCM_FLOAT)
      set = associated(a%f)
      if (set) intact = same(c_loc(a%f), size(a%f, kind=c_long))
    case (PCM_INT)
      set = associated(a%i)
      if (set) intact = same(c_loc(a%i), size(a%i, kind=c_long))
    case default
      set = associated(a%l)
      if (set) intact = same(c_loc(a%l), size(a%l, kind=c_long))
    end select
    if (.not. set) intact = .not. c_associated(a%buf) ! right only while there is no buffer
  contains
    logical function same(first, n)
      type(c_ptr), intent(in) :: first
      integer(c_long), intent(in) :: n
      same = n == a%n
      if (same .and. n > 0) same = c_associated(first, a%buf)
    end function same
  end function intact

  ! The name of the first registered array whose component the program changed, or ''.
  function changed_array() result(name)
    character(len=:), allocatable :: name
    integer :: k
    name = ''
    do k = 1, narrays
      if (.not. intact(arrays(k)%a)) then
        name = trim(arrays(k)%a%name)
        return
      end if
    end do
  end function changed_array

  function changed_message(name) result(m)
    character(len=*), intent(in) :: name
    character(len=:), allocatable :: m
    m = 'registered array "'//name//'" was allocated, deallocated or re-pointed by the program; '// &
        'its buffer belongs to libpcm: allocate it with pcm_dist_alloc and only index it'
  end function changed_message

  ! Collective: PCM_ERR_ARG on every rank if any rank's registered arrays were changed.
  integer(c_int) function agreed_check(comm)
    integer(c_int), intent(in) :: comm
    integer(c_int) :: bad
    character(len=:), allocatable :: name
    name = changed_array()
    bad = merge(1, 0, len(name) > 0)
    agreed_check = c_code(c_any(comm, bad))
    if (agreed_check /= PCM_SUCCESS) return
    if (len(name) > 0) then
      agreed_check = fail(PCM_ERR_ARG, changed_message(name))
    else if (bad /= 0) then
      agreed_check = fail(PCM_ERR_ARG, 'another process''s registered array was changed by the program')
    end if
  end function agreed_check

  ! Frees the registered arrays' last buffers and maps (pcm_finalize, pcm_exit).
  subroutine release_all()
    integer(c_int) :: rc
    integer :: k
    do k = 1, narrays
      if (c_associated(arrays(k)%a%buf)) call c_free(arrays(k)%a%buf)
      arrays(k)%a%buf = c_null_ptr
      rc = c_dist_free(arrays(k)%a%dist%p)
      call repoint(arrays(k)%a)
    end do
  end subroutine release_all

  ! --- start and end -----------------------------------------------------------------------

  ! MPI_PCM_Init with the program's command line (get_command_argument), which libpcm gives to
  ! the processes it spawns. Collective over MPI_COMM_WORLD.
  integer(c_int) function mpi_pcm_init()
    character(kind=c_char), allocatable, target :: chars(:)
    character(len=:), allocatable :: arg
    type(c_ptr), allocatable :: ptrs(:)
    integer :: k, j, n, total, l, at
    n = command_argument_count()
    total = 0
    do k = 0, n
      call get_command_argument(k, length=l)
      total = total + l + 1
    end do
    allocate (chars(total), ptrs(0:n))
    at = 1
    do k = 0, n
      call get_command_argument(k, length=l)
      allocate (character(len=l) :: arg)
      call get_command_argument(k, arg)
      ptrs(k) = c_loc(chars(at))
      do j = 1, l
        chars(at + j - 1) = arg(j:j)
      end do
      chars(at + l) = c_null_char
      at = at + l + 1
      deallocate (arg)
    end do
    mpi_pcm_init = c_code(c_mpi_pcm_init(int(n + 1, c_int), ptrs))
  end function mpi_pcm_init

  integer(c_int) function pcm_init(comm)
    PCM_COMM, intent(inout) :: comm
    integer(c_int) :: h
    h = CVAL(comm)
    pcm_init = c_code(c_init(h))
    CVAL(comm) = h
  end function pcm_init

  ! Collective over comm; frees the registered arrays' buffers and maps after PCM_Finalize.
  integer(c_int) function pcm_finalize(comm)
    PCM_COMM, intent(in) :: comm
    pcm_finalize = c_code(c_finalize(CVAL(comm)))
    call release_all()
  end function pcm_finalize

  integer(c_int) function pcm_exit()
    call release_all()
    pcm_exit = c_code(c_exit())
  end function pcm_exit

  integer(c_int) function pcm_process_status()
    pcm_process_status = c_process_status()
  end function pcm_process_status

  integer(c_int) function pcm_comm_rank(comm, rank)
    PCM_COMM, intent(in) :: comm
    integer(c_int), intent(out) :: rank
    pcm_comm_rank = c_code(c_comm_rank(CVAL(comm), rank))
  end function pcm_comm_rank

  integer(c_int) function pcm_status(comm)
    PCM_COMM, intent(in) :: comm
    pcm_status = c_status(CVAL(comm))
  end function pcm_status

  integer(c_int) function pcm_restart_info(iteration, nprocs)
    integer(c_int), intent(out) :: iteration, nprocs
    pcm_restart_info = c_code(c_restart_info(iteration, nprocs))
  end function pcm_restart_info

  ! --- register once -----------------------------------------------------------------------

  ! Registers a distributed array of type (PCM_DOUBLE or PCM_INT) under name and points a at the
  ! module's record of it. A started process then sets a%dist (pcm_dist_create) and allocates
  ! the buffer (pcm_dist_alloc) before pcm_resume; a spawned one receives both there. Local.
  integer(c_int) function pcm_register_dist(name, a, type)
    character(len=*), intent(in) :: name
    type(pcm_dist_array), pointer, intent(out) :: a
    integer(c_int), intent(in) :: type
    type(pcm_dist_array), pointer :: e
    nullify (a)
    if (elem_bytes(type) == 0) then
      pcm_register_dist = fail(PCM_ERR_ARG, 'pcm_register_dist: arrays of PCM_DOUBLE, PCM_FLOAT, '// &
                               'PCM_INT, PCM_LONG or PCM_LONG_LONG only')
      return
    end if
    if (narrays == MAX_ARRAYS) then
      pcm_register_dist = fail(PCM_ERR_ARG, 'pcm_register_dist: more than 64 arrays')
      return
    end if
    if (len_trim(name) > PCM_MAX_KEY) then
      pcm_register_dist = fail(PCM_ERR_ARG, 'pcm_register_dist: name too long')
      return
    end if
    allocate (e)
    e%type = type
    e%name = name
    pcm_register_dist = c_code(c_register_dist(cstr(name), c_loc(e%buf), type, c_loc(e%dist%p)))
    if (pcm_register_dist /= PCM_SUCCESS) then
      deallocate (e)
      return
    end if
    narrays = narrays + 1
    arrays(narrays)%a => e
    a => e
  end function pcm_register_dist

  ! A started process's buffer for its part of a%dist (rank: its rank in the world), zeroed,
  ! from calloc as libpcm wants it. Local. PCM_ERR_STATE if a already has one.
  integer(c_int) function pcm_dist_alloc(a, rank)
    type(pcm_dist_array), intent(inout) :: a
    integer(c_int), intent(in) :: rank
    integer(c_long) :: segments, units, elements
    integer(c_size_t) :: bytes
    if (c_associated(a%buf)) then
      pcm_dist_alloc = fail(PCM_ERR_STATE, 'pcm_dist_alloc: "'//trim(a%name)//'" has a buffer')
      return
    end if
    pcm_dist_alloc = c_code(c_dist_local(a%dist%p, rank, segments, units, elements))
    if (pcm_dist_alloc /= PCM_SUCCESS) return
    bytes = elem_bytes(a%type)
    a%buf = c_calloc(int(max(elements, 1_c_long), c_size_t), bytes)
    if (.not. c_associated(a%buf)) then
      pcm_dist_alloc = fail(PCM_ERR_INTERNAL, 'pcm_dist_alloc: out of memory')
      return
    end if
    world_rank = rank
    call repoint(a)
  end function pcm_dist_alloc

  integer(c_int) function reg_value_int(name, value)
    character(len=*), intent(in) :: name
    integer(c_int), pointer, intent(in) :: value
    reg_value_int = c_code(c_register_value(cstr(name), c_loc(value), PCM_INT, 1_c_long))
  end function reg_value_int

  integer(c_int) function reg_value_long(name, value)
    character(len=*), intent(in) :: name
    integer(c_long), pointer, intent(in) :: value
    reg_value_long = c_code(c_register_value(cstr(name), c_loc(value), PCM_LONG, 1_c_long))
  end function reg_value_long

  integer(c_int) function reg_value_double(name, value)
    character(len=*), intent(in) :: name
    real(c_double), pointer, intent(in) :: value
    reg_value_double = c_code(c_register_value(cstr(name), c_loc(value), PCM_DOUBLE, 1_c_long))
  end function reg_value_double

  integer(c_int) function reg_value_int1(name, value)
    character(len=*), intent(in) :: name
    integer(c_int), pointer, contiguous, intent(in) :: value(:)
    reg_value_int1 = c_code(c_register_value(cstr(name), c_loc(value), PCM_INT, size(value, kind=c_long)))
  end function reg_value_int1

  integer(c_int) function reg_value_double1(name, value)
    character(len=*), intent(in) :: name
    real(c_double), pointer, contiguous, intent(in) :: value(:)
    reg_value_double1 = c_code(c_register_value(cstr(name), c_loc(value), PCM_DOUBLE, size(value, kind=c_long)))
  end function reg_value_double1

  integer(c_int) function reg_local_int(name, value)
    character(len=*), intent(in) :: name
    integer(c_int), pointer, intent(in) :: value
    reg_local_int = c_code(c_register_local(cstr(name), c_loc(value), PCM_INT, 1_c_long))
  end function reg_local_int

  integer(c_int) function reg_local_long(name, value)
    character(len=*), intent(in) :: name
    integer(c_long), pointer, intent(in) :: value
    reg_local_long = c_code(c_register_local(cstr(name), c_loc(value), PCM_LONG, 1_c_long))
  end function reg_local_long

  integer(c_int) function reg_local_double(name, value)
    character(len=*), intent(in) :: name
    real(c_double), pointer, intent(in) :: value
    reg_local_double = c_code(c_register_local(cstr(name), c_loc(value), PCM_DOUBLE, 1_c_long))
  end function reg_local_double

  integer(c_int) function reg_local_int1(name, value)
    character(len=*), intent(in) :: name
    integer(c_int), pointer, contiguous, intent(in) :: value(:)
    reg_local_int1 = c_code(c_register_local(cstr(name), c_loc(value), PCM_INT, size(value, kind=c_long)))
  end function reg_local_int1

  integer(c_int) function reg_local_double1(name, value)
    character(len=*), intent(in) :: name
    real(c_double), pointer, contiguous, intent(in) :: value(:)
    reg_local_double1 = c_code(c_register_local(cstr(name), c_loc(value), PCM_DOUBLE, size(value, kind=c_long)))
  end function reg_local_double1

  integer(c_int) function reg_value_float(name, value)
    character(len=*), intent(in) :: name
    real(c_float), pointer, intent(in) :: value
    reg_value_float = c_code(c_register_value(cstr(name), c_loc(value), PCM_FLOAT, 1_c_long))
  end function reg_value_float

  integer(c_int) function reg_value_float1(name, value)
    character(len=*), intent(in) :: name
    real(c_float), pointer, contiguous, intent(in) :: value(:)
    reg_value_float1 = c_code(c_register_value(cstr(name), c_loc(value), PCM_FLOAT, size(value, kind=c_long)))
  end function reg_value_float1

  integer(c_int) function reg_value_long1(name, value)
    character(len=*), intent(in) :: name
    integer(c_long), pointer, contiguous, intent(in) :: value(:)
    reg_value_long1 = c_code(c_register_value(cstr(name), c_loc(value), PCM_LONG, size(value, kind=c_long)))
  end function reg_value_long1

  integer(c_int) function reg_local_float(name, value)
    character(len=*), intent(in) :: name
    real(c_float), pointer, intent(in) :: value
    reg_local_float = c_code(c_register_local(cstr(name), c_loc(value), PCM_FLOAT, 1_c_long))
  end function reg_local_float

  integer(c_int) function reg_local_float1(name, value)
    character(len=*), intent(in) :: name
    real(c_float), pointer, contiguous, intent(in) :: value(:)
    reg_local_float1 = c_code(c_register_local(cstr(name), c_loc(value), PCM_FLOAT, size(value, kind=c_long)))
  end function reg_local_float1

  integer(c_int) function reg_local_long1(name, value)
    character(len=*), intent(in) :: name
    integer(c_long), pointer, contiguous, intent(in) :: value(:)
    reg_local_long1 = c_code(c_register_local(cstr(name), c_loc(value), PCM_LONG, size(value, kind=c_long)))
  end function reg_local_long1

  ! PCM_Resume; then every registered array's component points at its buffer. Collective. In
  ! a started or restarted world every process is here: they check their arrays together first.
  ! A spawned process has no buffer yet (whatever it did with a component is replaced by the one
  ! received), and the survivors it joins are in PCM_Adapt: it must not communicate before.
  integer(c_int) function pcm_resume(comm)
    PCM_COMM, intent(inout) :: comm
    integer(c_int) :: h, origin
    h = CVAL(comm)
    origin = c_process_status()
    if (origin == PCM_STARTED .or. origin == PCM_RESTARTED) then
      pcm_resume = agreed_check(h)
      if (pcm_resume /= PCM_SUCCESS) return
    end if
    pcm_resume = c_code(c_resume(h, world_rank))
    CVAL(comm) = h
    call repoint_all()
  end function pcm_resume

  ! PCM_Adapt; after PCM_RESHAPED the components point at the new buffers (after PCM_RETIRED
  ! they are null). A registered array the program changed ends the job (MPI_Abort, with the
  ! reason on stderr): the other processes are already in the collective call, and checking
  ! together at every iteration would cost a reduction per call. The check comes before the
  ! calls that read or replace the buffers; the common call, inside an agreement window with
  ! nothing pending (PCM_Adapt_if_local), touches neither and costs one C call.
  integer(c_int) function pcm_adapt(comm)
    PCM_COMM, intent(inout) :: comm
    integer(c_int) :: h
    character(len=:), allocatable :: name
    integer :: k
    h = CVAL(comm)
    pcm_adapt = c_adapt_local(h)
    if (pcm_adapt /= PCM_NOT_LOCAL) then
      if (pcm_adapt < 0) own_error_last = .false.
      return
    end if
    do k = 1, narrays ! no allocation here: this runs at every iteration
      if (.not. intact(arrays(k)%a)) then
        name = changed_array()
        write (0, '(a)') 'pcm (Fortran): pcm_adapt: '//changed_message(name)
        flush (0)
        call c_abort(h, 1_c_int)
      end if
    end do
    pcm_adapt = c_adapt(h, world_rank)
    if (pcm_adapt == PCM_NONE) return
    if (pcm_adapt < 0) own_error_last = .false.
    CVAL(comm) = h
    call repoint_all()
  end function pcm_adapt

  ! PCM_Checkpoint. Collective; PCM_ERR_ARG on every process if a registered array was changed.
  integer(c_int) function pcm_checkpoint(comm, iteration)
    PCM_COMM, intent(in) :: comm
    integer(c_int), intent(in) :: iteration
    pcm_checkpoint = agreed_check(CVAL(comm))
    if (pcm_checkpoint /= PCM_SUCCESS) return
    pcm_checkpoint = c_code(c_checkpoint(CVAL(comm), iteration))
  end function pcm_checkpoint

  ! PCM_Checkpoint_wait: the version in flight is committed (or its failure returned). Collective.
  integer(c_int) function pcm_checkpoint_wait(comm)
    PCM_COMM, intent(in) :: comm
    pcm_checkpoint_wait = c_code(c_checkpoint_wait(CVAL(comm)))
  end function pcm_checkpoint_wait

  ! --- maps, halo plans, gather ------------------------------------------------------------

  integer(c_int) function pcm_dist_create(layout, units, unit_len, block, halo, size, dist)
    integer(c_int), intent(in) :: layout, size
    integer(c_long), intent(in) :: units, unit_len, block, halo
    type(pcm_dist), intent(inout) :: dist
    pcm_dist_create = c_code(c_dist_create(layout, units, unit_len, block, halo, size, dist%p))
  end function pcm_dist_create

  ! Not for a registered array's map (pcm_finalize frees those).
  integer(c_int) function pcm_dist_free(dist)
    type(pcm_dist), intent(inout) :: dist
    pcm_dist_free = c_code(c_dist_free(dist%p))
  end function pcm_dist_free

  integer(c_int) function pcm_dist_local(dist, rank, segments, units, elements)
    type(pcm_dist), intent(in) :: dist
    integer(c_int), intent(in) :: rank
    integer(c_long), intent(out) :: segments, units, elements
    pcm_dist_local = c_code(c_dist_local(dist%p, rank, segments, units, elements))
  end function pcm_dist_local

  ! Segment index (from 0, as in C) of rank: first global unit (from 0), units, and the element
  ! offset of its first unit in the buffer (from 0: the Fortran index is offset + 1).
  integer(c_int) function pcm_dist_segment(dist, rank, index, first, units, offset)
    type(pcm_dist), intent(in) :: dist
    integer(c_int), intent(in) :: rank
    integer(c_long), intent(in) :: index
    integer(c_long), intent(out) :: first, units, offset
    pcm_dist_segment = c_code(c_dist_segment(dist%p, rank, index, first, units, offset))
  end function pcm_dist_segment

  integer(c_int) function pcm_dist_info(dist, size, layout, units, unit_len, block, halo)
    type(pcm_dist), intent(in) :: dist
    integer(c_int), intent(out) :: size, layout
    integer(c_long), intent(out) :: units, unit_len, block, halo
    pcm_dist_info = c_code(c_dist_info(dist%p, size, layout, units, unit_len, block, halo))
  end function pcm_dist_info

  ! The rank that owns global unit `unit` (from 0). Local.
  integer(c_int) function pcm_dist_owner(dist, unit, rank)
    type(pcm_dist), intent(in) :: dist
    integer(c_long), intent(in) :: unit
    integer(c_int), intent(out) :: rank
    pcm_dist_owner = c_code(c_dist_owner(dist%p, unit, rank))
  end function pcm_dist_owner

  ! PCM_Unregister: forgets a value or local registered under name (before pcm_resume only; the
  ! module's arrays stay registered until pcm_finalize). Local.
  integer(c_int) function pcm_unregister(name)
    character(len=*), intent(in) :: name
    integer :: k
    do k = 1, narrays
      if (trim(arrays(k)%a%name) == trim(name)) then
        pcm_unregister = fail(PCM_ERR_ARG, 'pcm_unregister: "'//trim(name)// &
                              '" is an array the module owns')
        return
      end if
    end do
    pcm_unregister = c_code(c_unregister(cstr(name)))
  end function pcm_unregister

  ! PCM_Topology: nlevels and colors(PCM_TOPO_SITE + 1), colors(PCM_TOPO_HOST + 1). Collective.
  integer(c_int) function pcm_topology(comm, nlevels, colors)
    PCM_COMM, intent(in) :: comm
    integer(c_int), intent(out) :: nlevels, colors(PCM_TOPO_LEVELS)
    pcm_topology = c_code(c_topology(CVAL(comm), nlevels, colors))
  end function pcm_topology

  ! PCM_Host_comm: the processes of comm on this host (free it with MPI_Comm_free). Collective.
  integer(c_int) function pcm_host_comm(comm, host)
    PCM_COMM, intent(in) :: comm
    PCM_COMM, intent(out) :: host
    integer(c_int) :: h
    pcm_host_comm = c_code(c_host_comm(CVAL(comm), h))
    CVAL(host) = h
  end function pcm_host_comm

  integer(c_int) function pcm_halo_create(dist, rank, width, type, halo)
    type(pcm_dist), intent(in) :: dist
    integer(c_int), intent(in) :: rank, type
    integer(c_long), intent(in) :: width
    type(pcm_halo), intent(inout) :: halo
    pcm_halo_create = c_code(c_halo_create(dist%p, rank, width, type, halo%p))
  end function pcm_halo_create

  ! Fills the ghost units of a registered array's buffer (a%d or a%i). Collective over comm.
  integer(c_int) function pcm_halo_exchange(halo, a, comm)
    type(pcm_halo), intent(in) :: halo
    type(pcm_dist_array), intent(in) :: a
    PCM_COMM, intent(in) :: comm
    pcm_halo_exchange = c_code(c_halo_exchange(halo%p, a%buf, CVAL(comm)))
  end function pcm_halo_exchange

  integer(c_int) function pcm_halo_free(halo)
    type(pcm_halo), intent(inout) :: halo
    pcm_halo_free = c_code(c_halo_free(halo%p))
  end function pcm_halo_free

  ! The plan's receives, for moving ghost data yourself: count entries, numbered from 0 (as
  ! pcm_dist_segment's segments); entry index fills `units` ghost units at element offset
  ! ghost_offset (from 0) of this rank's buffer from peer's buffer at source_offset. Local.
  integer(c_int) function pcm_halo_entries(halo, count)
    type(pcm_halo), intent(in) :: halo
    integer(c_long), intent(out) :: count
    pcm_halo_entries = c_code(c_halo_entries(halo%p, count))
  end function pcm_halo_entries

  integer(c_int) function pcm_halo_entry(halo, index, peer, ghost_offset, source_offset, units)
    type(pcm_halo), intent(in) :: halo
    integer(c_long), intent(in) :: index
    integer(c_int), intent(out) :: peer
    integer(c_long), intent(out) :: ghost_offset, source_offset, units
    pcm_halo_entry = c_code(c_halo_entry(halo%p, index, peer, ghost_offset, source_offset, units))
  end function pcm_halo_entry

  ! pcm_dist_gather: gathers a registered array's owned units into global on root (global order,
  ! no ghosts); global, of the array's type, may be unallocated elsewhere. Collective over comm.
  integer(c_int) function gather_double(a, root, comm, global)
    type(pcm_dist_array), intent(in) :: a
    integer(c_int), intent(in) :: root
    PCM_COMM, intent(in) :: comm
    real(c_double), allocatable, target, intent(inout) :: global(:)
    type(c_ptr) :: g
    g = c_null_ptr
    if (a%type /= PCM_DOUBLE) then ! the same registrations everywhere: every rank returns here
      gather_double = fail(PCM_ERR_ARG, 'pcm_dist_gather: "'//trim(a%name)//'" is not PCM_DOUBLE')
      return
    end if
    if (allocated(global)) then
      if (size(global) > 0) g = c_loc(global(1))
    end if
    gather_double = c_code(c_dist_gather(a%dist%p, a%buf, a%type, root, CVAL(comm), g))
  end function gather_double

  integer(c_int) function gather_float(a, root, comm, global)
    type(pcm_dist_array), intent(in) :: a
    integer(c_int), intent(in) :: root
    PCM_COMM, intent(in) :: comm
    real(c_float), allocatable, target, intent(inout) :: global(:)
    type(c_ptr) :: g
    g = c_null_ptr
    if (a%type /= PCM_FLOAT) then ! the same registrations everywhere: every rank returns here
      gather_float = fail(PCM_ERR_ARG, 'pcm_dist_gather: "'//trim(a%name)//'" is not PCM_FLOAT')
      return
    end if
    if (allocated(global)) then
      if (size(global) > 0) g = c_loc(global(1))
    end if
    gather_float = c_code(c_dist_gather(a%dist%p, a%buf, a%type, root, CVAL(comm), g))
  end function gather_float

  integer(c_int) function gather_int(a, root, comm, global)
    type(pcm_dist_array), intent(in) :: a
    integer(c_int), intent(in) :: root
    PCM_COMM, intent(in) :: comm
    integer(c_int), allocatable, target, intent(inout) :: global(:)
    type(c_ptr) :: g
    g = c_null_ptr
    if (a%type /= PCM_INT) then ! the same registrations everywhere: every rank returns here
      gather_int = fail(PCM_ERR_ARG, 'pcm_dist_gather: "'//trim(a%name)//'" is not PCM_INT')
      return
    end if
    if (allocated(global)) then
      if (size(global) > 0) g = c_loc(global(1))
    end if
    gather_int = c_code(c_dist_gather(a%dist%p, a%buf, a%type, root, CVAL(comm), g))
  end function gather_int

  integer(c_int) function gather_int64(a, root, comm, global)
    type(pcm_dist_array), intent(in) :: a
    integer(c_int), intent(in) :: root
    PCM_COMM, intent(in) :: comm
    integer(c_int64_t), allocatable, target, intent(inout) :: global(:)
    type(c_ptr) :: g
    g = c_null_ptr
    if (a%type /= PCM_LONG .and. a%type /= PCM_LONG_LONG) then ! the same registrations everywhere: every rank returns here
      gather_int64 = fail(PCM_ERR_ARG, 'pcm_dist_gather: "'//trim(a%name)//'" is not PCM_LONG or PCM_LONG_LONG')
      return
    end if
    if (allocated(global)) then
      if (size(global) > 0) g = c_loc(global(1))
    end if
    gather_int64 = c_code(c_dist_gather(a%dist%p, a%buf, a%type, root, CVAL(comm), g))
  end function gather_int64

  ! --- the paper's explicit calls ------------------------------------------------------------

  integer(c_int) function store_int(rank, key, v)
    integer(c_int), intent(in) :: rank
    character(len=*), intent(in) :: key
    integer(c_int), target, intent(in) :: v
    store_int = c_code(c_store(rank, cstr(key), c_loc(v), PCM_INT, 1_c_long))
  end function store_int

  integer(c_int) function load_int(rank, key, v)
    integer(c_int), intent(in) :: rank
    character(len=*), intent(in) :: key
    integer(c_int), target, intent(inout) :: v
    load_int = c_code(c_load(rank, cstr(key), c_loc(v), PCM_INT, 1_c_long))
  end function load_int

  integer(c_int) function store_int1(rank, key, v)
    integer(c_int), intent(in) :: rank
    character(len=*), intent(in) :: key
    integer(c_int), target, contiguous, intent(in) :: v(:)
    store_int1 = c_code(c_store(rank, cstr(key), c_loc(v), PCM_INT, size(v, kind=c_long)))
  end function store_int1

  integer(c_int) function load_int1(rank, key, v)
    integer(c_int), intent(in) :: rank
    character(len=*), intent(in) :: key
    integer(c_int), target, contiguous, intent(inout) :: v(:)
    load_int1 = c_code(c_load(rank, cstr(key), c_loc(v), PCM_INT, size(v, kind=c_long)))
  end function load_int1

  integer(c_int) function redistribute_int(key, from, to, rank, v)
    character(len=*), intent(in) :: key
    type(pcm_dist), intent(in) :: from, to
    integer(c_int), intent(in) :: rank
    integer(c_int), target, contiguous, intent(inout) :: v(:)
    redistribute_int = c_code(c_load_redistribute(cstr(key), PCM_INT, from%p, to%p, rank, c_loc(v)))
  end function redistribute_int

  integer(c_int) function store_long(rank, key, v)
    integer(c_int), intent(in) :: rank
    character(len=*), intent(in) :: key
    integer(c_long), target, intent(in) :: v
    store_long = c_code(c_store(rank, cstr(key), c_loc(v), PCM_LONG, 1_c_long))
  end function store_long

  integer(c_int) function load_long(rank, key, v)
    integer(c_int), intent(in) :: rank
    character(len=*), intent(in) :: key
    integer(c_long), target, intent(inout) :: v
    load_long = c_code(c_load(rank, cstr(key), c_loc(v), PCM_LONG, 1_c_long))
  end function load_long

  integer(c_int) function store_long1(rank, key, v)
    integer(c_int), intent(in) :: rank
    character(len=*), intent(in) :: key
    integer(c_long), target, contiguous, intent(in) :: v(:)
    store_long1 = c_code(c_store(rank, cstr(key), c_loc(v), PCM_LONG, size(v, kind=c_long)))
  end function store_long1

  integer(c_int) function load_long1(rank, key, v)
    integer(c_int), intent(in) :: rank
    character(len=*), intent(in) :: key
    integer(c_long), target, contiguous, intent(inout) :: v(:)
    load_long1 = c_code(c_load(rank, cstr(key), c_loc(v), PCM_LONG, size(v, kind=c_long)))
  end function load_long1

  integer(c_int) function redistribute_long(key, from, to, rank, v)
    character(len=*), intent(in) :: key
    type(pcm_dist), intent(in) :: from, to
    integer(c_int), intent(in) :: rank
    integer(c_long), target, contiguous, intent(inout) :: v(:)
    redistribute_long = c_code(c_load_redistribute(cstr(key), PCM_LONG, from%p, to%p, rank, c_loc(v)))
  end function redistribute_long

  integer(c_int) function store_double(rank, key, v)
    integer(c_int), intent(in) :: rank
    character(len=*), intent(in) :: key
    real(c_double), target, intent(in) :: v
    store_double = c_code(c_store(rank, cstr(key), c_loc(v), PCM_DOUBLE, 1_c_long))
  end function store_double

  integer(c_int) function load_double(rank, key, v)
    integer(c_int), intent(in) :: rank
    character(len=*), intent(in) :: key
    real(c_double), target, intent(inout) :: v
    load_double = c_code(c_load(rank, cstr(key), c_loc(v), PCM_DOUBLE, 1_c_long))
  end function load_double

  integer(c_int) function store_double1(rank, key, v)
    integer(c_int), intent(in) :: rank
    character(len=*), intent(in) :: key
    real(c_double), target, contiguous, intent(in) :: v(:)
    store_double1 = c_code(c_store(rank, cstr(key), c_loc(v), PCM_DOUBLE, size(v, kind=c_long)))
  end function store_double1

  integer(c_int) function load_double1(rank, key, v)
    integer(c_int), intent(in) :: rank
    character(len=*), intent(in) :: key
    real(c_double), target, contiguous, intent(inout) :: v(:)
    load_double1 = c_code(c_load(rank, cstr(key), c_loc(v), PCM_DOUBLE, size(v, kind=c_long)))
  end function load_double1

  integer(c_int) function redistribute_double(key, from, to, rank, v)
    character(len=*), intent(in) :: key
    type(pcm_dist), intent(in) :: from, to
    integer(c_int), intent(in) :: rank
    real(c_double), target, contiguous, intent(inout) :: v(:)
    redistribute_double = c_code(c_load_redistribute(cstr(key), PCM_DOUBLE, from%p, to%p, rank, c_loc(v)))
  end function redistribute_double

  integer(c_int) function store_float(rank, key, v)
    integer(c_int), intent(in) :: rank
    character(len=*), intent(in) :: key
    real(c_float), target, intent(in) :: v
    store_float = c_code(c_store(rank, cstr(key), c_loc(v), PCM_FLOAT, 1_c_long))
  end function store_float

  integer(c_int) function load_float(rank, key, v)
    integer(c_int), intent(in) :: rank
    character(len=*), intent(in) :: key
    real(c_float), target, intent(inout) :: v
    load_float = c_code(c_load(rank, cstr(key), c_loc(v), PCM_FLOAT, 1_c_long))
  end function load_float

  integer(c_int) function store_float1(rank, key, v)
    integer(c_int), intent(in) :: rank
    character(len=*), intent(in) :: key
    real(c_float), target, contiguous, intent(in) :: v(:)
    store_float1 = c_code(c_store(rank, cstr(key), c_loc(v), PCM_FLOAT, size(v, kind=c_long)))
  end function store_float1

  integer(c_int) function load_float1(rank, key, v)
    integer(c_int), intent(in) :: rank
    character(len=*), intent(in) :: key
    real(c_float), target, contiguous, intent(inout) :: v(:)
    load_float1 = c_code(c_load(rank, cstr(key), c_loc(v), PCM_FLOAT, size(v, kind=c_long)))
  end function load_float1

  integer(c_int) function redistribute_float(key, from, to, rank, v)
    character(len=*), intent(in) :: key
    type(pcm_dist), intent(in) :: from, to
    integer(c_int), intent(in) :: rank
    real(c_float), target, contiguous, intent(inout) :: v(:)
    redistribute_float = c_code(c_load_redistribute(cstr(key), PCM_FLOAT, from%p, to%p, rank, c_loc(v)))
  end function redistribute_float

  integer(c_int) function pcm_load_count(rank, key, type, count)
    integer(c_int), intent(in) :: rank
    character(len=*), intent(in) :: key
    integer(c_int), intent(out) :: type
    integer(c_long), intent(out) :: count
    pcm_load_count = c_code(c_load_count(rank, cstr(key), type, count))
  end function pcm_load_count

  integer(c_int) function pcm_store_dist(rank, key, dist)
    integer(c_int), intent(in) :: rank
    character(len=*), intent(in) :: key
    type(pcm_dist), intent(in) :: dist
    pcm_store_dist = c_code(c_store_dist(rank, cstr(key), dist%p))
  end function pcm_store_dist

  ! Loads a map into dist (a new handle: free it with pcm_dist_free). Local.
  integer(c_int) function pcm_load_dist(rank, key, dist)
    integer(c_int), intent(in) :: rank
    character(len=*), intent(in) :: key
    type(pcm_dist), intent(inout) :: dist
    pcm_load_dist = c_code(c_load_dist(rank, cstr(key), dist%p))
  end function pcm_load_dist

  integer(c_int) function pcm_commit(comm, iteration)
    PCM_COMM, intent(in) :: comm
    integer(c_int), intent(in) :: iteration
    pcm_commit = c_code(c_commit(CVAL(comm), iteration))
  end function pcm_commit

  ! PCM_Reconfigure: comm becomes the new world, or MPI_COMM_NULL in the mover (call pcm_exit).
  ! Without command, this program is spawned with its command line. Collective.
  integer(c_int) function pcm_reconfigure_world(comm, command)
    PCM_COMM, intent(inout) :: comm
    character(len=*), intent(in), optional :: command
    character(kind=c_char), allocatable, target :: chars(:)
    integer(c_int) :: c
    c = CVAL(comm)
    if (present(command)) then
      call to_chars(command, chars)
      pcm_reconfigure_world = c_code(c_reconfigure(c, c_loc(chars)))
    else
      pcm_reconfigure_world = c_code(c_reconfigure(c, c_null_ptr))
    end if
    CVAL(comm) = c
  end function pcm_reconfigure_world

  ! An array of the program's own for pcm_split_array and pcm_merge_array (not registered): of type (as
  ! pcm_register_dist's), without a buffer or a map. Set a%dist (pcm_dist_create) and allocate
  ! the buffer with pcm_dist_alloc in a started process; a process spawned by a split receives
  ! both in its first pcm_split_array. Local.
  integer(c_int) function pcm_array_init(a, type)
    type(pcm_dist_array), intent(inout) :: a
    integer(c_int), intent(in) :: type
    if (elem_bytes(type) == 0) then
      pcm_array_init = fail(PCM_ERR_ARG, 'pcm_array_init: arrays of PCM_DOUBLE, PCM_FLOAT, '// &
                            'PCM_INT, PCM_LONG or PCM_LONG_LONG only')
      return
    end if
    if (c_associated(a%buf)) call c_free(a%buf)
    a%buf = c_null_ptr
    a%type = type
    a%name = '(unregistered)'
    pcm_array_init = c_code(c_dist_free(a%dist%p))
    call repoint(a)
  end function pcm_array_init

  ! Frees an array of pcm_array_init's: its buffer and its map. Local.
  integer(c_int) function pcm_array_free(a)
    type(pcm_dist_array), intent(inout) :: a
    if (c_associated(a%buf)) call c_free(a%buf)
    a%buf = c_null_ptr
    pcm_array_free = c_code(c_dist_free(a%dist%p))
    call repoint(a)
  end function pcm_array_free

  ! PCM_Split of an array of pcm_array_init's: in the new processes a's component (a%d, ...)
  ! shows the new buffer and a%dist the new map; in the old ones both are gone and comm is
  ! MPI_COMM_NULL (call pcm_exit). Collective; PCM_ERR_ARG on every process if any process
  ! re-pointed or allocated a's component itself.
  integer(c_int) function pcm_split_array(a, iteration, rank, size, comm, command)
    type(pcm_dist_array), intent(inout) :: a
    integer(c_int), intent(inout) :: iteration
    integer(c_int), intent(out) :: rank, size
    PCM_COMM, intent(inout) :: comm
    character(len=*), intent(in), optional :: command
    character(kind=c_char), allocatable, target :: chars(:)
    type(c_ptr) :: cmd
    cmd = c_null_ptr
    if (present(command)) then
      call to_chars(command, chars)
      cmd = c_loc(chars)
    end if
    pcm_split_array = reshape_array(0, a, iteration, rank, size, comm, cmd)
  end function pcm_split_array

  ! PCM_Merge of an array of pcm_array_init's, as pcm_split_array (a leaver gets MPI_COMM_NULL).
  integer(c_int) function pcm_merge_array(a, iteration, rank, size, comm)
    type(pcm_dist_array), intent(inout) :: a
    integer(c_int), intent(inout) :: iteration
    integer(c_int), intent(out) :: rank, size
    PCM_COMM, intent(inout) :: comm
    pcm_merge_array = reshape_array(1, a, iteration, rank, size, comm, c_null_ptr)
  end function pcm_merge_array

  integer(c_int) function reshape_array(merge, a, iteration, rank, size, comm, cmd)
    integer(c_int), intent(in) :: merge
    type(pcm_dist_array), intent(inout) :: a
    integer(c_int), intent(inout) :: iteration
    integer(c_int), intent(out) :: rank, size
    PCM_COMM, intent(inout) :: comm
    type(c_ptr), intent(in) :: cmd
    integer(c_int) :: c
    rank = -1
    size = 0
    c = CVAL(comm)
    reshape_array = agreed_one(a, c)
    if (reshape_array /= PCM_SUCCESS) return
    reshape_array = c_code(c_reshape(merge, a%buf, a%type, a%dist%p, iteration, rank, size, c, cmd))
    if (reshape_array /= PCM_SUCCESS) return
    CVAL(comm) = c
    world_rank = rank
    call repoint(a)
  end function reshape_array

  ! Collective: PCM_ERR_ARG on every rank if any rank changed a's component (a process spawned
  ! by a split, which has neither buffer nor map yet, only takes part).
  integer(c_int) function agreed_one(a, comm)
    type(pcm_dist_array), intent(in) :: a
    integer(c_int), intent(in) :: comm
    integer(c_int) :: bad
    if (.not. c_associated(a%dist%p) .and. .not. c_associated(a%buf)) then
      agreed_one = PCM_SUCCESS ! a new process: the old world's check is the one that counts
      return
    end if
    bad = merge(0, 1, intact(a))
    agreed_one = c_code(c_any(comm, bad))
    if (agreed_one == PCM_SUCCESS .and. bad /= 0) &
      agreed_one = fail(PCM_ERR_ARG, 'an array given to pcm_split_array or pcm_merge_array was allocated, '// &
                        'deallocated or re-pointed by the program (on this or another process)')
  end function agreed_one

  integer(c_int) function pcm_merge_datacnts(dist, count, merge_rank, comm)
    type(pcm_dist), intent(in) :: dist
    integer(c_long), intent(out) :: count
    integer(c_int), intent(out) :: merge_rank
    PCM_COMM, intent(in) :: comm
    pcm_merge_datacnts = c_code(c_merge_datacnts(dist%p, count, merge_rank, CVAL(comm)))
  end function pcm_merge_datacnts

  subroutine to_chars(s, chars)
    character(len=*), intent(in) :: s
    character(kind=c_char), allocatable, intent(out) :: chars(:)
    integer :: k
    allocate (chars(len_trim(s) + 1))
    do k = 1, len_trim(s)
      chars(k) = s(k:k)
    end do
    chars(len_trim(s) + 1) = c_null_char
  end subroutine to_chars

  ! --- the last reconfiguration --------------------------------------------------------------

  ! Its kind (PCM_MIGRATE, PCM_SPLIT, PCM_MERGE), the world's size before it and when the old
  ! world learnt of it (seconds since the epoch). Local. PCM_ERR_STATE: none yet.
  integer(c_int) function pcm_reconfig_last(kind, size_before, started)
    integer(c_int), intent(out) :: kind, size_before
    real(c_double), intent(out) :: started
    pcm_reconfig_last = c_code(c_reconfig_last(kind, size_before, started))
  end function pcm_reconfig_last

  ! Who asked for it and why, blank-padded into reason (cut, ending in "...", where longer; at
  ! most 400 characters). Local. PCM_ERR_STATE: none yet.
  integer(c_int) function pcm_reconfig_reason(reason)
    character(len=*), intent(out) :: reason
    character(kind=c_char) :: buf(len(reason) + 1)
    integer :: k
    reason = ''
    buf = c_null_char
    pcm_reconfig_reason = c_code(c_reconfig_reason(buf, int(size(buf), c_int)))
    if (pcm_reconfig_reason /= PCM_SUCCESS) return
    do k = 1, len(reason)
      if (buf(k) == c_null_char) exit
      reason(k:k) = buf(k)
    end do
  end function pcm_reconfig_reason

  ! Seconds this process spent spawning, moving data and rebuilding the world in its last split
  ! or merge. Local.
  integer(c_int) function pcm_reconfig_times(spawn, data, rebuild)
    real(c_double), intent(out) :: spawn, data, rebuild
    pcm_reconfig_times = c_code(c_reconfig_times(spawn, data, rebuild))
  end function pcm_reconfig_times

  ! --- errors ------------------------------------------------------------------------------

  ! The message of the last failed call, the library's or the module's ('' if none).
  function pcm_last_error() result(s)
    character(len=:), allocatable :: s
    if (own_error_last) then
      s = own_error
    else
      s = from_c(c_last_error())
    end if
  end function pcm_last_error

  function pcm_error_string(code) result(s)
    integer(c_int), intent(in) :: code
    character(len=:), allocatable :: s
    s = from_c(c_error_string(code))
  end function pcm_error_string

end module pcm
