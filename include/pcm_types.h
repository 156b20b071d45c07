/* pcm_types.h — PCM's return codes, states and element types; no MPI needed to include it. */
#ifndef PCM_TYPES_H
#define PCM_TYPES_H

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes. */
#define PCM_SUCCESS 0
#define PCM_ERR_ARG (-1)       /* an argument is invalid (null pointer, bad key, bad count) */
#define PCM_ERR_STATE (-2)     /* the call is not allowed now (not initialised, retired, ...) */
#define PCM_ERR_CONFIG (-3)    /* the configuration file is missing or invalid */
#define PCM_ERR_DAEMON (-4)    /* pcmd could not be reached or did not answer in time */
#define PCM_ERR_REFUSED (-5)   /* pcmd refused the request (bad secret, unknown job, ...) */
#define PCM_ERR_NOT_FOUND (-6) /* no data under that rank and key; a restart: no version */
#define PCM_ERR_TYPE (-7)      /* PCM_Load: the stored type differs from the requested one */
#define PCM_ERR_COUNT (-8)     /* PCM_Load: the stored count differs from the requested one */
#define PCM_ERR_MPI (-9)       /* an MPI call failed */
#define PCM_ERR_SPAWN (-10)    /* MPI_Comm_spawn failed; the old world is intact */
#define PCM_ERR_INTERNAL (-11) /* a bug in PCM; the message says where */
#define PCM_ERR_CORRUPT (-12)  /* checkpoint data failed verification (a checksum, a size) */
#define PCM_ERR_NOSPACE (-13)  /* the disk is full; data stored before is kept */

/* Process states, from PCM_Process_Status. */
#define PCM_STARTED 1   /* started by mpiexec */
#define PCM_MIGRATED 2  /* spawned to replace a process that migrated */
#define PCM_SPLITTED 3  /* spawned by a split: call PCM_Split to receive data */
#define PCM_RETIRED 4   /* left the world in a reconfiguration; call PCM_Exit (or PCM_Finalize) */
#define PCM_RESTARTED 5 /* started with PCM_RESTART=1: PCM_Load reads the newest valid version */

/* Reconfiguration states, from PCM_Status. */
#define PCM_ERROR (-1)    /* PCM_Status failed; see PCM_Last_error */
#define PCM_NONE 0        /* nothing to do */
#define PCM_MIGRATE 1     /* this process moves: store its state, then PCM_Reconfigure */
#define PCM_RECONFIGURE 2 /* another process moves: call PCM_Reconfigure */
#define PCM_SPLIT 3       /* the world grows: call PCM_Split (or PCM_Split_Collective) */
#define PCM_MERGE 4       /* the world shrinks: call PCM_Merge (or PCM_Merge_Collective) */
#define PCM_STOP 7        /* the job is asked to end (a signal, pcmctl stop): save, PCM_Finalize */

/* PCM_Exit's return in a process whose job a signal or `pcmctl stop` ended after writing its last
 * version (PCM_Adapt returned PCM_RETIRED): returned from main, the exit status (EX_TEMPFAIL)
 * tells pcmctl run and batch scripts that the job resumes with PCM_RESTART=1. */
#define PCM_EXIT_STOPPED 75

/* Layouts of distributed data (PCM_Dist_create). */
#define PCM_BLOCK 1        /* near-equal contiguous ranges, in rank order */
#define PCM_CYCLIC 2       /* unit u on rank u % size */
#define PCM_BLOCK_CYCLIC 3 /* blocks of `block` units dealt round-robin */
#define PCM_IRREGULAR 4    /* what a 1->N split or N->1 merge leaves (PCM_Dist_layout only) */

/* Element types of stored data. */
typedef enum PCM_Datatype {
  PCM_CHAR = 1,
  PCM_INT = 2,
  PCM_LONG = 3,
  PCM_FLOAT = 4,
  PCM_DOUBLE = 5,
  PCM_LONG_LONG = 6,
  PCM_BYTE = 7 /* unsigned char */
} PCM_Datatype;

/* Longest key accepted by PCM_Store and PCM_Load, without the terminating NUL. Keys use the
 * characters A-Z a-z 0-9 . _ - only. */
#define PCM_MAX_KEY 64

/* PCM_Error_string — a static description of an error code (never NULL). */
const char *PCM_Error_string(int code);

#ifdef __cplusplus
}
#endif

#endif /* PCM_TYPES_H */
